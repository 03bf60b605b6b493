// HIP's hip/hip_runtime.h for the backends without ROCm. The backend's prelude already gives
// the kernel dialect (threadIdx and friends, __syncthreads, shuffles, atomics, the float
// math, __launch_bounds__, warpSize); this adds what kernels of other engines use beyond it:
// the vector types, bit counting, __ldg, the
// nontemporal builtins, and the host-side names a library's launcher in the same file needs
// to compile (the harness launches kernels itself, from the contract's [kernel]: a launcher
// is compiled, never called).
#pragma once
#include "kernel_contracts_detail.h"
#include "hip_vector_types.h"

#if !defined(KC_HIP_NVRTC)
// CUDA has these built in; HIP's headers define them over the compiler's builtins (the fast
// and the rounding-spelled float intrinsics are every prelude's own)
KC_HIP_FN int __popc(unsigned x) { return __builtin_popcount(x); }
KC_HIP_FN int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
KC_HIP_FN int __ffs(int x) { return __builtin_ffs(x); }
KC_HIP_FN int __ffsll(long long x) { return __builtin_ffsll(x); }
KC_HIP_FN int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
KC_HIP_FN int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
template <class T>
KC_HIP_FN T __ldg(const T* p) {
  return *p;
}
#endif

#if defined(KC_HIP_HOST)
// the lane of the calling thread: its linear index in the block, modulo the warp
KC_HIP_FN int __lane_id() {
  return (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % (unsigned)warpSize);
}
#elif defined(KC_HIP_NVRTC)
KC_HIP_FN int __lane_id() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return (int)lane;
}
#endif

#if !defined(KC_HIP_AMDGCN)
// clang's AMDGPU builtins that GCC and NVRTC lack: a plain load or store
#define __builtin_nontemporal_load(p) (*(p))
#define __builtin_nontemporal_store(v, p) ((void)(*(p) = (v)))
#endif

// ---------------------------------------------------------------- host-side names
typedef struct ihipStream_t* hipStream_t;
typedef enum hipError_t { hipSuccess = 0, hipErrorInvalidValue = 1 } hipError_t;
// a launcher in the kernel's own file compiles; it is never called under the harness
#define hipLaunchKernelGGL(...) ((void)0)
#define HIP_KERNEL_NAME(...) __VA_ARGS__
