// Barriers that not every thread of a block reaches: each must come back as an error.
#include "common.h"

// Half of warp 0 waits at a barrier the rest of the block never reaches.
extern "C" __global__ void divergent_barrier(float* x) {
  if (threadIdx.x < 16) __syncthreads();
  x[(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

// Two different barriers on the two sides of a branch.
extern "C" __global__ void divergent_sites(float* x) {
  if (threadIdx.x & 1) { x[threadIdx.x] = 1.0f; __syncthreads(); }
  else { __syncthreads(); x[threadIdx.x] = 2.0f; }
}
