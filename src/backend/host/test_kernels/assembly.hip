// A kernel whose host build holds x86 inline assembly (a store no memory check sees), beside a
// compiler barrier, which builds for every backend and passes.
#include "common.h"

extern "C" __global__ void stores_in_assembly(const float* x, float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  asm volatile("" ::: "memory");
#if defined(__x86_64__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  asm volatile("movl %1, %0" : "=m"(*(unsigned*)&y[i]) : "r"(__float_as_uint(x[i])));
#else
  y[i] = x[i];
#endif
}
