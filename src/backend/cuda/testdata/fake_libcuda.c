// A stand-in for libcuda.so.1 that runs on a machine without a GPU, built by the cuda
// backend's tests (gcc -shared). "Device memory" is host memory, modules are checked to be
// CUDA ELF images, launches record their dimensions and parameter bytes instead of running,
// and a fault can be planted for the next launch. Counters of live handles show that every
// owning type gives its handle back. Built with -DFAKE_OMIT_LAUNCH it lacks cuLaunchKernel,
// to test the missing-symbol error.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int live_contexts, live_allocations, live_modules, live_streams;
static int pending_error;      // returned by the next cuCtxSynchronize (and after, if sticky)
static int fault_next;         // planted by fake_fault_next for the next launch
static int sticky;
static unsigned last_dims[7];
static unsigned long long last_params[32];
static int param_count = 0;
static char last_function[128];
static int set_attribute_calls, last_set_attribute_value;

// ------------------------------------------------------------------ test controls
void fake_set_param_count(int n) { param_count = n < 32 ? n : 32; }
void fake_fault_next(int code) { fault_next = code; }
int fake_live(void) { return live_contexts + live_allocations + live_modules + live_streams; }
int fake_live_allocations(void) { return live_allocations; }
static int memsets;
int fake_memsets(void) { return memsets; }
const unsigned* fake_last_dims(void) { return last_dims; }
const unsigned long long* fake_last_params(void) { return last_params; }
const char* fake_last_function(void) { return last_function; }
int fake_set_attribute_value(void) { return set_attribute_calls ? last_set_attribute_value : -1; }

// ------------------------------------------------------------------ errors
static const char* error_name(CUresult e) {
  switch (e) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    default: return 0;
  }
}
static const char* error_text(CUresult e) {
  switch (e) {
    case 0: return "no error";
    case 1: return "invalid argument";
    case 2: return "out of memory";
    case 100: return "no CUDA-capable device is detected";
    case 200: return "device kernel image is invalid";
    case 700: return "an illegal memory access was encountered";
    case 701: return "too many resources requested for launch";
    default: return 0;
  }
}
CUresult cuGetErrorName(CUresult e, const char** s) { *s = error_name(e); return *s ? 0 : 1; }
CUresult cuGetErrorString(CUresult e, const char** s) { *s = error_text(e); return *s ? 0 : 1; }

// ------------------------------------------------------------------ device
#ifdef FAKE_NO_DEVICE
CUresult cuInit(unsigned flags) { (void)flags; return 100; }
#else
CUresult cuInit(unsigned flags) { (void)flags; return 0; }
#endif
CUresult cuDriverGetVersion(int* v) { *v = 13000; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int ordinal) { if (ordinal != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char* name, int len, int d) { (void)d; strncpy(name, "Fake H200", len); return 0; }
CUresult cuDeviceGetAttribute(int* v, int attribute, int d) {
  (void)d;
  *v = attribute == 75 ? 9 : attribute == 76 ? 0 : attribute == 1 ? 1024 : 0;
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int d) { (void)d; *bytes = (size_t)1 << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) { (void)d; *ctx = (void*)0x1234; live_contexts++; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { (void)d; live_contexts--; return 0; }
CUresult cuCtxSetCurrent(void* ctx) { (void)ctx; return 0; }
CUresult cuCtxSynchronize(void) {
  CUresult e = pending_error;
  if (!sticky) pending_error = 0;
  return e;
}

// ------------------------------------------------------------------ memory
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  if (bytes == 0) return 1;
  if (sticky) return pending_error;
  void* m = malloc(bytes);
  if (!m) return 2;
  live_allocations++;
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void*)(uintptr_t)p); live_allocations--; return 0; }
static int live_pinned;
int fake_live_pinned(void) { return live_pinned; }
CUresult cuMemAllocHost_v2(void** p, size_t bytes) {
  if (sticky) return pending_error;
  *p = malloc(bytes);
  if (!*p) return 2;
  live_pinned++;
  return 0;
}
CUresult cuMemFreeHost(void* p) { free(p); live_pinned--; return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { if (sticky) return pending_error; memcpy((void*)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { if (sticky) return pending_error; memcpy(d, (void*)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { if (sticky) return pending_error; memcpy((void*)(uintptr_t)d, (void*)(uintptr_t)s, n); return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { memset((void*)(uintptr_t)d, v, n); memsets++; return 0; }
CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { for (size_t i = 0; i < n; i++) ((unsigned short*)(uintptr_t)d)[i] = v; memsets++; return 0; }
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) { for (size_t i = 0; i < n; i++) ((unsigned int*)(uintptr_t)d)[i] = v; memsets++; return 0; }

// ------------------------------------------------------------------ modules
CUresult cuModuleLoadData(void** m, const void* image) {
  const unsigned char* e = (const unsigned char*)image;
  if (memcmp(e, "\x7f" "ELF", 4) != 0 || e[18] != 190) return 200;   // EM_CUDA
  *m = malloc(1);
  live_modules++;
  return 0;
}
CUresult cuModuleUnload(void* m) { free(m); live_modules--; return 0; }
CUresult cuModuleGetFunction(void** f, void* m, const char* name) { (void)m; *f = strdup(name); return 0; }
CUresult cuFuncGetAttribute(int* v, int attribute, void* f) {
  (void)f;
  switch (attribute) {
    case 0: *v = 1024; break;   // MAX_THREADS_PER_BLOCK
    case 4: *v = 22; break;     // NUM_REGS
    case 6: *v = 90; break;     // BINARY_VERSION
    default: *v = 0;
  }
  return 0;
}
CUresult cuFuncSetAttribute(void* f, int attribute, int value) {
  (void)f;
  if (attribute != 8) return 1;
  set_attribute_calls++;
  last_set_attribute_value = value;
  return 0;
}

// ------------------------------------------------------------------ launches and streams
#ifndef FAKE_OMIT_LAUNCH
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void* stream, void** params, void** extra) {
  (void)stream;
  if (extra) return 1;
  if (sticky) return pending_error;
  unsigned dims[7] = {gx, gy, gz, bx, by, bz, shared};
  memcpy(last_dims, dims, sizeof dims);
  strncpy(last_function, (const char*)f, sizeof last_function - 1);
  for (int i = 0; i < param_count; i++) memcpy(&last_params[i], params[i], 8);
  if (fault_next) {
    pending_error = fault_next;
    sticky = fault_next == 700;
    fault_next = 0;
  }
  return 0;
}
#endif
CUresult cuStreamCreate(void** s, unsigned flags) { (void)flags; *s = malloc(1); live_streams++; return 0; }
CUresult cuStreamDestroy_v2(void* s) { free(s); live_streams--; return 0; }
CUresult cuStreamSynchronize(void* s) { (void)s; return 0; }
