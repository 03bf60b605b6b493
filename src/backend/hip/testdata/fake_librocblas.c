// A stand-in for librocblas, built by the hip backend's tests (gcc -shared), for use with
// the fake libamdhip64 (device memory is host memory, so the GEMM really runs, column-major,
// as rocBLAS would). It has the product calls; the three workspace calls only with
// -DFAKE_WORKSPACE, so the lazy resolution of rocblas_set_workspace can be tested.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

static int live_handles, atomics_mode = -1, stream_set;
static size_t workspace_size;
int fake_live_handles(void) { return live_handles; }
int fake_atomics_mode(void) { return atomics_mode; }
size_t fake_workspace_size(void) { return workspace_size; }

int rocblas_create_handle(void** h) { *h = malloc(1); live_handles++; return 0; }
int rocblas_destroy_handle(void* h) { free(h); live_handles--; return 0; }
int rocblas_set_stream(void* h, void* s) { (void)h; stream_set = s != 0; return 0; }
int rocblas_set_atomics_mode(void* h, int mode) { (void)h; atomics_mode = mode; return 0; }

static float load(const void* p, int type, long i) {
  if (type == 151) return ((const float*)p)[i];
  uint32_t u = (uint32_t)((const uint16_t*)p)[i] << 16; float f; memcpy(&f, &u, 4); return f;
}
static void store(void* p, int type, long i, float v) {
  if (type == 151) { ((float*)p)[i] = v; return; }
  uint32_t u; memcpy(&u, &v, 4); u = (u + 0x7fff + ((u >> 16) & 1)) >> 16; ((uint16_t*)p)[i] = (uint16_t)u;
}
int rocblas_gemm_ex(void* h, int ta, int tb, int m, int n, int k, const void* alpha, const void* a, int at, int lda,
                    const void* b, int bt, int ldb, const void* beta, const void* c, int ct, int ldc, void* d, int dt,
                    int ldd, int compute, int algo, int32_t sol, uint32_t flags) {
  (void)h; (void)c; (void)algo; (void)sol; (void)flags; (void)ldc; (void)ct;
  if (compute != 151 || at != 168 || bt != 168) return 2;
  if (stream_set == 0) return 1;
  float al = *(const float*)alpha, be = *(const float*)beta;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) {
      float acc = 0;
      for (int l = 0; l < k; l++) {
        float x = ta == 111 ? load(a, at, i + (long)l * lda) : load(a, at, l + (long)i * lda);
        float y = tb == 111 ? load(b, bt, l + (long)j * ldb) : load(b, bt, j + (long)l * ldb);
        acc += x * y;
      }
      float prior = be != 0 ? load(d, dt, i + (long)j * ldd) : 0;
      store(d, dt, i + (long)j * ldd, al * acc + be * prior);
    }
  return 0;
}
#ifdef FAKE_WORKSPACE
int rocblas_set_workspace(void* h, void* addr, size_t size) { (void)h; workspace_size = addr ? size : 0; return 0; }
int rocblas_get_device_memory_size(void* h, size_t* size) { (void)h; *size = workspace_size; return 0; }
bool rocblas_is_managing_device_memory(void* h) { (void)h; return workspace_size == 0; }
#endif
