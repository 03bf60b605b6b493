// CUDA backend prelude: maps the engine's HIP kernel dialect onto CUDA for NVRTC.
// Pre-included (--pre-include) ahead of every kernel source by the engine's cuda backend
// (src/backend/cuda/nvrtc.rs); the kernel then includes "common.h" itself. NVRTC compiles
// without system headers: the CUDA device builtins (threadIdx, __syncthreads, atomics, the
// float math functions, min/max overloads, __trap) are built in, so only the HIP names that
// CUDA spells differently are defined here.
#pragma once

// <cmath> is not available under NVRTC.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif

// HIP's warp operations act on every active lane; on sm_70+ CUDA spells them with an
// explicit member mask. Warps are 32 lanes on every NVIDIA GPU, so the full mask is the
// whole warp (lanes that have exited count as arrived on sm_70+).
#define TF_CUDA_FULL_MASK 0xffffffffu

template <class T>
static __device__ __forceinline__ T tf_cuda_shfl_xor(T v, int lane_mask, int width = 32) {
  return __shfl_xor_sync(TF_CUDA_FULL_MASK, v, lane_mask, width);
}
template <class T>
static __device__ __forceinline__ T tf_cuda_shfl_down(T v, unsigned delta, int width = 32) {
  return __shfl_down_sync(TF_CUDA_FULL_MASK, v, delta, width);
}
template <class T>
static __device__ __forceinline__ T tf_cuda_shfl_up(T v, unsigned delta, int width = 32) {
  return __shfl_up_sync(TF_CUDA_FULL_MASK, v, delta, width);
}
template <class T>
static __device__ __forceinline__ T tf_cuda_shfl(T v, int source_lane, int width = 32) {
  return __shfl_sync(TF_CUDA_FULL_MASK, v, source_lane, width);
}
// HIP's __ballot returns a 64-bit mask (wave64 hardware); a CUDA warp fills the low 32 bits.
static __device__ __forceinline__ unsigned long long tf_cuda_ballot(int predicate) {
  return (unsigned long long)__ballot_sync(TF_CUDA_FULL_MASK, predicate);
}
static __device__ __forceinline__ int tf_cuda_any(int predicate) { return __any_sync(TF_CUDA_FULL_MASK, predicate); }
static __device__ __forceinline__ int tf_cuda_all(int predicate) { return __all_sync(TF_CUDA_FULL_MASK, predicate); }

#define __shfl_xor tf_cuda_shfl_xor
#define __shfl_down tf_cuda_shfl_down
#define __shfl_up tf_cuda_shfl_up
#define __shfl tf_cuda_shfl
#define __ballot tf_cuda_ballot
#define __any tf_cuda_any
#define __all tf_cuda_all
