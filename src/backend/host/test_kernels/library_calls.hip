// A kernel whose host build stores through a C library routine that no GPU compiler provides
// (a store no memory check sees), beside math routines device code has.
#include "common.h"
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#include <wchar.h>   // the host build alone has it
#endif

extern "C" __global__ void stores_through_the_c_library(const float* x, float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  float v = x[i] * expf(0.0f) + sqrtf(0.0f);
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  wmemcpy((wchar_t*)&y[i], (const wchar_t*)&v, 1);
#else
  y[i] = v;
#endif
}
