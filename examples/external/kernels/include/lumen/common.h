// lumen: device helpers every lumen kernel shares (warp and block sums).
#pragma once
#include <hip/hip_runtime.h>

namespace lumen {

constexpr int kWarp = 32;

// The sum of v over a warp, every lane getting it.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor(v, offset);
  return v;
}

// The sum of v over a block of blockDim.x threads (a multiple of the warp), every thread
// getting it. `scratch` holds one float per warp.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}

}  // namespace lumen
