// hiprtc prelude: what the kernels' dialect needs beyond the HIP headers that hiprtc
// includes implicitly (threadIdx/blockIdx/blockDim/gridDim, __syncthreads, __shfl*,
// atomics, math, min/max, __float_as_uint come from HIP itself). Included by the engine's
// hip backend (src/backend/hip/hiprtc.rs) as the first line of every source, from memory.
// The header-free kernels/hip/prelude.h is for clang -nogpuinc builds only: with hiprtc its
// definitions would collide with HIP's.
#pragma once

// common.h and the kernels use INFINITY; HIP's device headers do not always define it.
#ifndef INFINITY
#define INFINITY __builtin_inff()
#endif

// The kernels assume warpSize 32; the engine also checks `.wavefront_size` in the note.
#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE != 32
#error "kernel-contracts kernels assume wave32 (warpSize 32)"
#endif
