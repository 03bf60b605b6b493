// Copies whose size is known only at run time go through the C library's routines on the host
// (GCC calls memcpy, memset and memmove; clang the instrumentation's): each thread copies a row of k
// elements, and the last row's copy reads and writes `extra` elements past both tensors' ends.
#include "common.h"

extern "C" __global__ void copies_rows(const float* x, float* y, int rows, int k, int extra) {
  int row = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= rows) return;
  size_t count = (size_t)(k + (row == rows - 1 ? extra : 0));
  memcpy(y + (size_t)row * k, x + (size_t)row * k, count * sizeof(float));
}

extern "C" __global__ void clears_rows(float* y, int rows, int k, int extra) {
  int row = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= rows) return;
  size_t count = (size_t)(k + (row == rows - 1 ? extra : 0));
  memset(y + (size_t)row * k, 0, count * sizeof(float));
}

extern "C" __global__ void moves_rows(const float* x, float* y, int rows, int k, int extra) {
  int row = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (row >= rows) return;
  size_t count = (size_t)(k + (row == rows - 1 ? extra : 0));
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  memmove(y + (size_t)row * k, x + (size_t)row * k, count * sizeof(float));   // no GPU's device code has it
#else
  memcpy(y + (size_t)row * k, x + (size_t)row * k, count * sizeof(float));
#endif
}
