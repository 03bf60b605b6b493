// gfx1201 device prelude: the HIP dialect for clang's HIP device-only compile with no ROCm
// install (-nogpuinc -nogpulib). Force-included (-include) ahead of every kernel source by
// the engine's static gfx1201 build (src/amdgpu/static_build.rs). Header-free: it uses only
// clang builtins, so Debian's clang-22 (or clang-19) builds gfx1201 code objects on CI.
//
// Semantics follow HIP's own headers (amd_hip_runtime.h, amd_warp_functions.h,
// amd_hip_atomic.h, amd_device_functions.h): the same builtins, the same index formulas.
// Where this prelude differs from HIP, a comment says how and why. Measured facts behind it:
// wave32 is the default for HIP compute kernels on gfx1201 (`.wavefront_size: 32`); clang's
// HIP default is -ffp-contract=fast-honor-pragmas, so the build passes -ffp-contract=off for
// bit-exact checks; f32 denormals are preserved on gfx1201 (`.amdhsa_float_denorm_mode_32 3`).
#pragma once

#if !defined(__HIP__) || !defined(__AMDGCN__)
#error "kernels/hip/prelude.h is for clang -x hip device compiles for an amdgcn target"
#endif

// ---------------------------------------------------------------- dialect
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
// HIP maps the optional second argument (CUDA's minBlocksPerMultiprocessor) straight to
// amdgpu_waves_per_eu, as hip_runtime.h does.
#define __tf_launch_bounds_1(max_threads) __attribute__((amdgpu_flat_work_group_size(1, max_threads)))
#define __tf_launch_bounds_2(max_threads, min_blocks) \
  __attribute__((amdgpu_flat_work_group_size(1, max_threads), amdgpu_waves_per_eu(min_blocks)))
#define __tf_launch_bounds_pick(_1, _2, name, ...) name
#define __launch_bounds__(...) __tf_launch_bounds_pick(__VA_ARGS__, __tf_launch_bounds_2, __tf_launch_bounds_1, )(__VA_ARGS__)

#define __TF_DEVICE static __device__ __forceinline__

typedef __SIZE_TYPE__ size_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;

// warpSize is 32: gfx1201 compute kernels are wave32 by default (the code object's
// .wavefront_size says so, and the engine checks it). A constant, as on the host backend,
// so it may size arrays. A -mwavefrontsize64 build is refused by the engine's metadata check.
static constexpr int warpSize = 32;

// ---------------------------------------------------------------- built-in variables
// __declspec(property) members, as clang's own CUDA builtin-vars header does them.
// blockDim reads the COV5 implicit kernarg group size (clang folds HIP's uniform work-group
// size, so it is one 16-bit load); gridDim is ockl's COV5 formula over the implicit
// arguments: block_count (u32 at 0/4/8) plus one if the remainder (u16 at 18/20/22) is not 0.
struct __tf_thread_idx {
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
  __TF_DEVICE unsigned __get_x() { return __builtin_amdgcn_workitem_id_x(); }
  __TF_DEVICE unsigned __get_y() { return __builtin_amdgcn_workitem_id_y(); }
  __TF_DEVICE unsigned __get_z() { return __builtin_amdgcn_workitem_id_z(); }
};
struct __tf_block_idx {
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
  __TF_DEVICE unsigned __get_x() { return __builtin_amdgcn_workgroup_id_x(); }
  __TF_DEVICE unsigned __get_y() { return __builtin_amdgcn_workgroup_id_y(); }
  __TF_DEVICE unsigned __get_z() { return __builtin_amdgcn_workgroup_id_z(); }
};
struct __tf_block_dim {
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
  __TF_DEVICE unsigned __get_x() { return __builtin_amdgcn_workgroup_size_x(); }
  __TF_DEVICE unsigned __get_y() { return __builtin_amdgcn_workgroup_size_y(); }
  __TF_DEVICE unsigned __get_z() { return __builtin_amdgcn_workgroup_size_z(); }
};
__TF_DEVICE unsigned __tf_num_groups(int dim) {
  const __attribute__((address_space(4))) char* implicit = (const __attribute__((address_space(4))) char*)__builtin_amdgcn_implicitarg_ptr();
  unsigned count = *(const __attribute__((address_space(4))) unsigned*)(implicit + 4 * dim);
  unsigned short remainder = *(const __attribute__((address_space(4))) unsigned short*)(implicit + 18 + 2 * dim);
  return count + (remainder != 0);
}
struct __tf_grid_dim {
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
  __TF_DEVICE unsigned __get_x() { return __tf_num_groups(0); }
  __TF_DEVICE unsigned __get_y() { return __tf_num_groups(1); }
  __TF_DEVICE unsigned __get_z() { return __tf_num_groups(2); }
};
extern const __device__ __attribute__((weak)) __tf_thread_idx threadIdx;
extern const __device__ __attribute__((weak)) __tf_block_idx blockIdx;
extern const __device__ __attribute__((weak)) __tf_block_dim blockDim;
extern const __device__ __attribute__((weak)) __tf_grid_dim gridDim;

// ---------------------------------------------------------------- barriers, fences, trap
__TF_DEVICE void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__TF_DEVICE void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
__TF_DEVICE void __threadfence_block() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup"); }
__TF_DEVICE void __threadfence_system() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, ""); }
[[noreturn]] __TF_DEVICE void __trap() { __builtin_trap(); }

// ---------------------------------------------------------------- memory
// Device code's memcpy and memset (HIP's amd_device_functions.h declares them extern "C" for
// device code; CUDA has the same two): clang's builtins, which the AMDGPU backend expands in
// place, as it has no C library to call.
extern "C" __device__ __forceinline__ void* memcpy(void* dst, const void* src, size_t bytes) {
  return __builtin_memcpy(dst, src, bytes);
}
extern "C" __device__ __forceinline__ void* memset(void* dst, int value, size_t bytes) {
  return __builtin_memset(dst, value, bytes);
}

// ---------------------------------------------------------------- bit casts
__TF_DEVICE unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
__TF_DEVICE float __uint_as_float(unsigned u) { return __builtin_bit_cast(float, u); }
__TF_DEVICE int __float_as_int(float f) { return __builtin_bit_cast(int, f); }
__TF_DEVICE float __int_as_float(int i) { return __builtin_bit_cast(float, i); }
__TF_DEVICE long long __double_as_longlong(double d) { return __builtin_bit_cast(long long, d); }
__TF_DEVICE double __longlong_as_double(long long i) { return __builtin_bit_cast(double, i); }

// ---------------------------------------------------------------- warp operations
// HIP's formulas over ds_bpermute (amd_warp_functions.h). Two places where the host
// prelude (kernels/host/prelude.h) answers differently, so kernels must avoid both:
// - a lane that reads an inactive lane gets what ds_bpermute gives (0, per the ISA manuals),
//   where the host returns the reader's own value;
// - __shfl_xor with mask >= width: HIP's formula (kept here) only bounds the index from
//   above, so a lane may read below its segment; the host returns the lane's own value.
__TF_DEVICE int __lane_id() { return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
__TF_DEVICE int __tf_bpermute(int lane, int bits) { return __builtin_amdgcn_ds_bpermute(lane << 2, bits); }

__TF_DEVICE int __shfl(int v, int source_lane, int width = warpSize) {
  int self = __lane_id();
  return __tf_bpermute((source_lane & (width - 1)) + (self & ~(width - 1)), v);
}
__TF_DEVICE int __shfl_up(int v, unsigned delta, int width = warpSize) {
  int self = __lane_id();
  int index = self - (int)delta;
  index = index < (self & ~(width - 1)) ? self : index;
  return __tf_bpermute(index, v);
}
__TF_DEVICE int __shfl_down(int v, unsigned delta, int width = warpSize) {
  int self = __lane_id();
  int index = self + (int)delta;
  index = (int)((self & (width - 1)) + delta) >= width ? self : index;
  return __tf_bpermute(index, v);
}
__TF_DEVICE int __shfl_xor(int v, int mask, int width = warpSize) {
  int self = __lane_id();
  int index = self ^ mask;
  index = index >= ((self + width) & ~(width - 1)) ? self : index;
  return __tf_bpermute(index, v);
}

// Other 32-bit types through the int forms; 64-bit types in two halves.
#define __TF_SHFL_32(T, OP, ARG)                                                            \
  __TF_DEVICE T OP(T v, ARG a, int width = warpSize) {                                      \
    return __builtin_bit_cast(T, OP(__builtin_bit_cast(int, v), a, width));                 \
  }
#define __TF_SHFL_64(T, OP, ARG)                                                            \
  __TF_DEVICE T OP(T v, ARG a, int width = warpSize) {                                      \
    unsigned long long bits = __builtin_bit_cast(unsigned long long, v);                    \
    int lo = OP((int)(unsigned)bits, a, width), hi = OP((int)(unsigned)(bits >> 32), a, width); \
    return __builtin_bit_cast(T, ((unsigned long long)(unsigned)hi << 32) | (unsigned)lo); \
  }
#define __TF_SHFL_ALL(OP, ARG) \
  __TF_SHFL_32(unsigned, OP, ARG) __TF_SHFL_32(float, OP, ARG) \
  __TF_SHFL_64(long long, OP, ARG) __TF_SHFL_64(unsigned long long, OP, ARG) __TF_SHFL_64(double, OP, ARG)
__TF_SHFL_ALL(__shfl, int)
__TF_SHFL_ALL(__shfl_up, unsigned)
__TF_SHFL_ALL(__shfl_down, unsigned)
__TF_SHFL_ALL(__shfl_xor, int)
#undef __TF_SHFL_ALL
#undef __TF_SHFL_64
#undef __TF_SHFL_32

// Over the active lanes, as HIP's: bit i of the ballot is lane i (upper 32 bits 0 on wave32).
__TF_DEVICE unsigned long long __ballot(int predicate) { return __builtin_amdgcn_ballot_w64(predicate != 0); }
__TF_DEVICE int __any(int predicate) { return __ballot(predicate) != 0; }
__TF_DEVICE int __all(int predicate) { return __ballot(!predicate) == 0; }

// ---------------------------------------------------------------- atomics
// Relaxed, agent (device) scope, as HIP's atomic functions are.
#define __TF_ATOMIC_RMW(NAME, BUILTIN, T)                                                   \
  __TF_DEVICE T NAME(T* p, T v) { return BUILTIN(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
#define __TF_ATOMIC_INT(T)                                                                  \
  __TF_ATOMIC_RMW(atomicAdd, __hip_atomic_fetch_add, T)                                     \
  __TF_ATOMIC_RMW(atomicSub, __hip_atomic_fetch_sub, T)                                     \
  __TF_ATOMIC_RMW(atomicMax, __hip_atomic_fetch_max, T)                                     \
  __TF_ATOMIC_RMW(atomicMin, __hip_atomic_fetch_min, T)                                     \
  __TF_ATOMIC_RMW(atomicAnd, __hip_atomic_fetch_and, T)                                     \
  __TF_ATOMIC_RMW(atomicOr, __hip_atomic_fetch_or, T)                                       \
  __TF_ATOMIC_RMW(atomicXor, __hip_atomic_fetch_xor, T)                                     \
  __TF_ATOMIC_RMW(atomicExch, __hip_atomic_exchange, T)                                     \
  __TF_DEVICE T atomicCAS(T* p, T compare, T v) {                                           \
    __hip_atomic_compare_exchange_strong(p, &compare, v, __ATOMIC_RELAXED, __ATOMIC_RELAXED, \
                                         __HIP_MEMORY_SCOPE_AGENT);                         \
    return compare;                                                                         \
  }
__TF_ATOMIC_INT(int)
__TF_ATOMIC_INT(unsigned)
__TF_ATOMIC_INT(long long)
__TF_ATOMIC_INT(unsigned long long)
__TF_ATOMIC_RMW(atomicAdd, __hip_atomic_fetch_add, float)
__TF_ATOMIC_RMW(atomicSub, __hip_atomic_fetch_sub, float)
__TF_ATOMIC_RMW(atomicExch, __hip_atomic_exchange, float)
__TF_DEVICE float atomicCAS(float* p, float compare, float v) {
  return __uint_as_float(atomicCAS((unsigned*)p, __float_as_uint(compare), __float_as_uint(v)));
}
// float max/min: a compare-and-swap loop that replaces the stored value only while
// `stored < v` (or `v < stored`) holds, bit-compared, as HIP's safe (non unsafe-fp-atomics)
// path and the host prelude do. A NaN never replaces and is never replaced, and -0 vs +0
// keeps what is stored. (An atomicrmw fmax would follow maxNum: a stored NaN is replaced.)
__TF_DEVICE float atomicMax(float* p, float v) {
  unsigned* bits = (unsigned*)p;
  unsigned old = __hip_atomic_load(bits, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  while (__uint_as_float(old) < v) {
    unsigned seen = atomicCAS(bits, old, __float_as_uint(v));
    if (seen == old) break;
    old = seen;
  }
  return __uint_as_float(old);
}
__TF_DEVICE float atomicMin(float* p, float v) {
  unsigned* bits = (unsigned*)p;
  unsigned old = __hip_atomic_load(bits, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  while (v < __uint_as_float(old)) {
    unsigned seen = atomicCAS(bits, old, __float_as_uint(v));
    if (seen == old) break;
    old = seen;
  }
  return __uint_as_float(old);
}
#undef __TF_ATOMIC_INT
#undef __TF_ATOMIC_RMW

// ---------------------------------------------------------------- math
// -nogpulib: there is no ocml, so math is what the AMDGPU backend lowers the LLVM
// intrinsics to. Measured with clang-22 for gfx1201 at -O3 (disassembly read):
// - exact: fabsf, floorf, ceilf, truncf, rintf, roundf, fmaxf, fminf (v_max_num/v_min_num,
//   IEEE maxNum: a NaN operand gives the other one), sqrtf (correctly rounded: v_sqrt plus a
//   fix-up, HIP's default -fhip-fp32-correctly-rounded-divide-sqrt), division (likewise).
// - expf, logf, exp2f, log2f: the backend's accurate expansions (range reduction, the
//   hardware exp/log, fma corrections; about 1 ulp, like ocml's non-native versions). Not
//   bit-identical to glibc: cross-backend results of these need a tolerance.
// - NOT provided (a call is a compile error naming the reason, never a silent approximation):
//   sinf, cosf: llvm.sin/llvm.cos lower to v_sin_f32/v_cos_f32 of x * 1/(2 pi), a native
//     approximation with no real range reduction (ocml's sinf is accurate; it is absent).
//   powf: llvm.pow lowers to v_exp_f32(y * v_log_f32(x)) with no handling of x < 0,
//     zero, denormals or the accuracy loss of the product: powf(-2, 2) is NaN.
//   tanhf ("no libcall available for ftanh"), erff, expm1f, log1pf (undefined symbols at
//     the lld step): no lowering without ocml.
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
__TF_DEVICE float expf(float x) { return __builtin_expf(x); }
__TF_DEVICE float logf(float x) { return __builtin_logf(x); }
__TF_DEVICE float exp2f(float x) { return __builtin_exp2f(x); }
__TF_DEVICE float log2f(float x) { return __builtin_log2f(x); }
__TF_DEVICE float sqrtf(float x) { return __builtin_sqrtf(x); }
// HIP's rsqrtf is ocml's v_rsq_f32-based rsqrt (about 1 ulp). Here it is 1 / sqrtf(x), both
// correctly rounded: the same bits as the host prelude's rsqrtf, and possibly 1 ulp from HIP.
__TF_DEVICE float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
// The fast intrinsics as HIP lowers them (ocml's native_* functions): the hardware's
// v_exp_f32 / v_log_f32 (base 2), v_sin_f32 / v_cos_f32 (of turns), v_rcp_f32, with no range
// reduction or special-case handling. The host prelude emulates NVIDIA's versions instead;
// this build is compiled for its resource usage, never run.
__TF_DEVICE float __expf(float x) { return __builtin_amdgcn_exp2f(x * 1.44269504f); }
__TF_DEVICE float __exp10f(float x) { return __builtin_amdgcn_exp2f(x * 3.32192802f); }
__TF_DEVICE float __log2f(float x) { return __builtin_amdgcn_logf(x); }
__TF_DEVICE float __logf(float x) { return __builtin_amdgcn_logf(x) * 0.693147182f; }
__TF_DEVICE float __log10f(float x) { return __builtin_amdgcn_logf(x) * 0.301029996f; }
__TF_DEVICE float __sinf(float x) { return __builtin_amdgcn_sinf(x * 0.159154943f); }
__TF_DEVICE float __cosf(float x) { return __builtin_amdgcn_cosf(x * 0.159154943f); }
__TF_DEVICE void __sincosf(float x, float* s, float* c) { *s = __sinf(x); *c = __cosf(x); }
__TF_DEVICE float __tanf(float x) { return __sinf(x) * __builtin_amdgcn_rcpf(__cosf(x)); }
__TF_DEVICE float __powf(float x, float y) { return __builtin_amdgcn_exp2f(y * __builtin_amdgcn_logf(x)); }
__TF_DEVICE float __fdividef(float x, float y) { return x * __builtin_amdgcn_rcpf(y); }
__TF_DEVICE float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
// the ones spelled with their rounding are correctly rounded, as on every backend
__TF_DEVICE float __frsqrt_rn(float x) { return 1.0f / __builtin_sqrtf(x); }
__TF_DEVICE float __fsqrt_rn(float x) { return __builtin_sqrtf(x); }
__TF_DEVICE float __frcp_rn(float x) { return 1.0f / x; }
__TF_DEVICE float __fdiv_rn(float x, float y) { return x / y; }
__TF_DEVICE float __fmul_rn(float x, float y) { return x * y; }
__TF_DEVICE float __fadd_rn(float x, float y) { return x + y; }
__TF_DEVICE float __fsub_rn(float x, float y) { return x - y; }
__TF_DEVICE float __fmaf_rn(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
__TF_DEVICE float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__TF_DEVICE float fminf(float a, float b) { return __builtin_fminf(a, b); }
__TF_DEVICE float fabsf(float x) { return __builtin_fabsf(x); }
__TF_DEVICE float floorf(float x) { return __builtin_floorf(x); }
__TF_DEVICE float ceilf(float x) { return __builtin_ceilf(x); }
__TF_DEVICE float truncf(float x) { return __builtin_truncf(x); }
__TF_DEVICE float rintf(float x) { return __builtin_rintf(x); }
__TF_DEVICE float roundf(float x) { return __builtin_roundf(x); }
__TF_DEVICE float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__TF_DEVICE float frexpf(float x, int* e) { return __builtin_frexpf(x, e); }
// the fraction keeps x's sign (-0 for -2), and an infinity's is 0 (AMDGPU selects no modf)
__TF_DEVICE float modff(float x, float* i) {
  float whole = __builtin_truncf(x);
  *i = whole;
  return __builtin_copysignf(__builtin_isinf(x) ? 0.0f : x - whole, x);
}
#define __TF_NO_MATH(F, WHY) \
  __device__ float F(float) __attribute__((unavailable("gfx1201 static prelude (-nogpulib, no ocml): " WHY)));
__TF_NO_MATH(sinf, "llvm.sin lowers to the native v_sin_f32 approximation; write it in the kernel")
__TF_NO_MATH(cosf, "llvm.cos lowers to the native v_cos_f32 approximation; write it in the kernel")
__TF_NO_MATH(tanhf, "no lowering (no libcall available for ftanh); write it in the kernel")
__TF_NO_MATH(erff, "no lowering (undefined symbol erff at link); write it in the kernel")
__TF_NO_MATH(expm1f, "no lowering (undefined symbol expm1f at link); write it in the kernel")
__TF_NO_MATH(log1pf, "no lowering (undefined symbol log1pf at link); write it in the kernel")
__device__ float powf(float, float) __attribute__((unavailable(
    "gfx1201 static prelude (-nogpulib, no ocml): llvm.pow lowers to exp2(y * log2(x)), NaN for x < 0; write it in the kernel")));
#undef __TF_NO_MATH

// min/max: the host prelude's overload set (float forms are fminf/fmaxf).
__TF_DEVICE int min(int a, int b) { return a < b ? a : b; }
__TF_DEVICE int max(int a, int b) { return a > b ? a : b; }
__TF_DEVICE unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
__TF_DEVICE unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
__TF_DEVICE long long min(long long a, long long b) { return a < b ? a : b; }
__TF_DEVICE long long max(long long a, long long b) { return a > b ? a : b; }
__TF_DEVICE float min(float a, float b) { return __builtin_fminf(a, b); }
__TF_DEVICE float max(float a, float b) { return __builtin_fmaxf(a, b); }
