// A stand-in for libamdhip64 on a machine without a GPU, built by the hip backend's tests
// (gcc -shared). One "gfx1201" device whose memory is host memory; modules must be AMDGPU
// ELF images (EM_AMDGPU = 224); launches record their dimensions instead of running. It
// carries hiprtc* symbols as ROCm 5.x's libamdhip64 does: a compile returns the code object
// in the file named by FAKE_HIPRTC_CODE_OBJECT, or fails with a log when the source
// contains `undefined_name`. -DFAKE_NO_DEVICE: hipInit fails with hipErrorNoDevice.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
static int live_allocations, live_modules, live_streams;
static unsigned last_dims[7];
static int func_attr[10] = {1024, 0, 0, 0, 0};
static char last_options[4096];

void fake_set_func_attr(int attr, int value) { if (attr >= 0 && attr < 10) func_attr[attr] = value; }
int fake_live(void) { return live_allocations + live_modules + live_streams; }
const unsigned* fake_last_dims(void) { return last_dims; }
const char* fake_last_options(void) { return last_options; }

static const char* names[][2] = {
  {"hipSuccess", "no error"}, {"hipErrorInvalidValue", "invalid argument"}, {"hipErrorOutOfMemory", "out of memory"},
};
const char* hipGetErrorName(hipError_t e) {
  switch (e) {
    case 0: case 1: case 2: return names[e][0];
    case 100: return "hipErrorNoDevice";
    case 101: return "hipErrorInvalidDevice";
    case 200: return "hipErrorInvalidImage";
    case 500: return "hipErrorNotFound";
    default: return "hipErrorUnknown";
  }
}
const char* hipGetErrorString(hipError_t e) {
  switch (e) {
    case 0: case 1: case 2: return names[e][1];
    case 100: return "no ROCm-capable device is detected";
    case 200: return "device kernel image is invalid";
    case 500: return "named symbol not found";
    default: return "unknown error";
  }
}
#ifdef FAKE_NO_DEVICE
hipError_t hipInit(unsigned flags) { (void)flags; return 100; }
hipError_t hipGetDeviceCount(int* n) { *n = 0; return 100; }
#else
hipError_t hipInit(unsigned flags) { (void)flags; return 0; }
hipError_t hipGetDeviceCount(int* n) { *n = 1; return 0; }
#endif
hipError_t hipDriverGetVersion(int* v) { *v = 60443483; return 0; }
hipError_t hipRuntimeGetVersion(int* v) { *v = 60443483; return 0; }
hipError_t hipSetDevice(int d) { return d == 0 ? 0 : 101; }
/* an RX 9070's 16 GiB */
hipError_t hipDeviceTotalMem(size_t* bytes, int d) { if (d != 0) return 101; *bytes = (size_t)16 << 30; return 0; }
hipError_t hipGetDevicePropertiesR0600(void* prop, int d) {
  if (d != 0) return 101;
  memset(prop, 0, 1472);
  strcpy((char*)prop, "Fake Radeon RX 9070");
  strcpy((char*)prop + 1160, "gfx1201:sramecc-:xnack-");
  return 0;
}
hipError_t hipMalloc(void** p, size_t n) { *p = calloc(1, n); if (!*p) return 2; live_allocations++; return 0; }
hipError_t hipFree(void* p) { if (p) { free(p); live_allocations--; } return 0; }
static int memsets;
int fake_memsets(void) { return memsets; }
hipError_t hipMemset(void* p, int v, size_t n) { memset(p, v, n); memsets++; return 0; }
hipError_t hipMemsetD16(void* p, unsigned short v, size_t n) { for (size_t i = 0; i < n; i++) ((unsigned short*)p)[i] = v; memsets++; return 0; }
hipError_t hipMemsetD32(void* p, int v, size_t n) { for (size_t i = 0; i < n; i++) ((int*)p)[i] = v; memsets++; return 0; }
static int live_pinned;
int fake_live_pinned(void) { return live_pinned; }
#ifndef FAKE_OMIT_HOST_MALLOC
hipError_t hipHostMalloc(void** p, size_t n, unsigned flags) { if (flags) return 1; *p = malloc(n); if (!*p) return 2; live_pinned++; return 0; }
#endif
hipError_t hipHostFree(void* p) { if (p) { free(p); live_pinned--; } return 0; }
hipError_t hipMemcpyHtoD(void* dst, void* src, size_t n) { memcpy(dst, src, n); return 0; }
hipError_t hipMemcpyDtoH(void* dst, void* src, size_t n) { memcpy(dst, src, n); return 0; }
hipError_t hipMemcpyDtoD(void* dst, void* src, size_t n) { memcpy(dst, src, n); return 0; }
hipError_t hipModuleLoadData(void** m, const void* image) {
  const unsigned char* e = image;
  if (memcmp(e, "\x7f" "ELF", 4) != 0 || (e[18] | e[19] << 8) != 224) return 200;
  *m = malloc(1); live_modules++; return 0;
}
hipError_t hipModuleUnload(void* m) { free(m); live_modules--; return 0; }
hipError_t hipModuleGetFunction(void** f, void* m, const char* name) { (void)m; *f = strdup(name); return 0; }
hipError_t hipFuncGetAttribute(int* v, int attr, void* f) { (void)f; if (attr < 0 || attr >= 10) return 1; *v = func_attr[attr]; return 0; }
hipError_t hipModuleLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned shared, void* stream, void** params, void** extra) {
  (void)f; (void)stream; (void)params; (void)extra;
  unsigned d[7] = {gx, gy, gz, bx, by, bz, shared};
  memcpy(last_dims, d, sizeof d);
  return 0;
}
hipError_t hipDeviceSynchronize(void) { return 0; }
hipError_t hipStreamCreate(void** s) { *s = malloc(1); live_streams++; return 0; }
hipError_t hipStreamDestroy(void* s) { free(s); live_streams--; return 0; }

// ------------------------------------------------------------------ hiprtc (ROCm 5.x style)
typedef struct { char* source; char* log; unsigned char* code; size_t size; } program;
const char* hiprtcGetErrorString(int r) { return r == 0 ? "HIPRTC_SUCCESS" : r == 6 ? "HIPRTC_ERROR_COMPILATION" : "HIPRTC_ERROR_INTERNAL_ERROR"; }
int hiprtcVersion(int* major, int* minor) { *major = 6; *minor = 4; return 0; }
int hiprtcCreateProgram(void** p, const char* src, const char* name, int n, const char** h, const char** names_) {
  (void)name; (void)n; (void)h; (void)names_;
  program* q = calloc(1, sizeof *q); q->source = strdup(src); q->log = strdup(""); *p = q; return 0;
}
int hiprtcDestroyProgram(void** p) { program* q = *p; free(q->source); free(q->log); free(q->code); free(q); *p = 0; return 0; }
int hiprtcCompileProgram(void* p, int n, const char** options) {
  program* q = p;
  last_options[0] = 0;
  for (int i = 0; i < n; i++) { strncat(last_options, options[i], sizeof last_options - strlen(last_options) - 2); strcat(last_options, " "); }
  if (strstr(q->source, "undefined_name")) {
    free(q->log);
    q->log = strdup("kernels/broken.hip:2:50: error: use of undeclared identifier 'undefined_name'\n");
    return 6;
  }
  const char* path = getenv("FAKE_HIPRTC_CODE_OBJECT");
  FILE* f = path ? fopen(path, "rb") : 0;
  if (!f) return 11;
  fseek(f, 0, SEEK_END); q->size = ftell(f); fseek(f, 0, SEEK_SET);
  q->code = malloc(q->size); if (fread(q->code, 1, q->size, f) != q->size) q->size = 0; fclose(f);
  return 0;
}
int hiprtcGetCodeSize(void* p, size_t* n) { *n = ((program*)p)->size; return 0; }
int hiprtcGetCode(void* p, char* out) { memcpy(out, ((program*)p)->code, ((program*)p)->size); return 0; }
int hiprtcGetProgramLogSize(void* p, size_t* n) { *n = strlen(((program*)p)->log) + 1; return 0; }
int hiprtcGetProgramLog(void* p, char* out) { strcpy(out, ((program*)p)->log); return 0; }
// a name expression lowers to itself (the fake's code objects hold extern "C" kernels)
int hiprtcAddNameExpression(void* p, const char* name) { (void)p; (void)name; return 0; }
int hiprtcGetLoweredName(void* p, const char* name, const char** lowered) { (void)p; *lowered = name; return 0; }
