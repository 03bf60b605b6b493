// Kernels whose resource figures are known by construction, to test the cuda backend's
// static reading of a cubin (registers, static shared memory, local memory, launch bounds)
// against the ptxas report, and live against cuFuncGetAttribute on a GPU.
#include "common.h"

// No shared memory, no stack: y = 2x + 1.
extern "C" __global__ void plain(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * 2.0f + 1.0f;
}

// 4 KiB of static shared memory in two arrays (3 KiB + 1 KiB).
extern "C" __global__ void shared_4k(const float* x, float* y) {
  __shared__ float a[768];
  __shared__ float b[256];
  unsigned t = threadIdx.x;
  for (unsigned i = t; i < 768; i += blockDim.x) a[i] = x[i];
  if (t < 256) b[t] = x[768 + t];
  __syncthreads();
  y[t] = a[(t * 7) % 768] + b[(t * 3) % 256];
}

// Only dynamic shared memory: no static bytes.
extern "C" __global__ void dynamic_only(const float* x, float* y) {
  extern __shared__ float stage[];
  unsigned t = threadIdx.x;
  stage[t] = x[t];
  __syncthreads();
  y[t] = stage[blockDim.x - 1 - t];
}

// A private histogram indexed by data: lives in local memory (a 256-byte stack frame).
extern "C" __global__ void stack_array(const int* bins, float* y) {
  float v[64];
  unsigned t = threadIdx.x;
  for (int i = 0; i < 64; i++) v[i] = 0.0f;
  for (int i = 0; i < 64; i++) v[bins[t * 64 + i] & 63] += 1.0f;
  for (int i = 0; i < 64; i++) y[t * 64 + i] = v[i];
}

// Launch bounds of 1024 threads and 2 blocks per SM cap registers at 32; 48 live values
// then spill to local memory.
extern "C" __global__ void __launch_bounds__(1024, 2) spills(const float* x, float* y, int n) {
  float v[48];
  unsigned t = threadIdx.x;
  for (int i = 0; i < 48; i++) v[i] = x[(t + i * 131) % n];
  float acc = 0.0f;
  for (int r = 0; r < 8; r++)
    for (int i = 0; i < 48; i++) acc = acc * v[(i + r) % 48] + v[(i * 5 + r) % 48];
  for (int i = 0; i < 48; i++) y[t * 48 + i] = v[i] * acc;
}
