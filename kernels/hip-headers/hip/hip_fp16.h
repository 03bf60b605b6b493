// HIP's hip/hip_fp16.h, the part LLM-engine kernels use, for the backends without ROCm (the
// host, the static gfx1201 build, NVRTC): __half and __half2 held as their bits (ROCm's
// __half_raw), conversions rounding to nearest even, arithmetic rounded once per operation
// as f16 hardware rounds it (computed in f32, whose 24 bits make that one rounding exact for
// + - * / and sqrt; __hfma in f64), the __h* intrinsics, comparisons, half shuffles, and the
// packed dot product (__builtin_amdgcn_fdot2, __ockl_fdot2, amd_mixed_dot).
//
// Every backend computes the same bits, with one exception: on gfx1201 the packed dot product
// is the hardware's v_dot2_f32_f16; elsewhere it is ockl's software definition,
// fma(a.y, b.y, fma(a.x, b.x, c)) in f32 (each f16 product is exact in f32), which no AMD
// GPU has been compared with here.
#pragma once
#include "kernel_contracts_detail.h"
#include "hip_vector_types.h"

struct __half_raw {
  unsigned short x;
};
struct __half2_raw {
  unsigned short x, y;
};

struct __half {
  unsigned short __x;

  __half() = default;
  KC_HIP_FN __half(const __half_raw& r) : __x(r.x) {}
  KC_HIP_FN __half(float f) : __x(__kc_f32_to_f16(f)) {}
  KC_HIP_FN __half(double d) : __x(__kc_f32_to_f16(__kc_f64_to_f32_odd(d))) {}
  // whole numbers through f32: exact below 2^24, and every larger one is infinite in f16
  KC_HIP_FN __half(int i) : __x(__kc_f32_to_f16((float)i)) {}
  KC_HIP_FN __half(unsigned i) : __x(__kc_f32_to_f16((float)i)) {}
  KC_HIP_FN __half(short i) : __x(__kc_f32_to_f16((float)i)) {}
  KC_HIP_FN __half(unsigned short i) : __x(__kc_f32_to_f16((float)i)) {}
  KC_HIP_FN __half(long long i) : __x(__kc_f32_to_f16((float)i)) {}
  KC_HIP_FN __half(unsigned long long i) : __x(__kc_f32_to_f16((float)i)) {}

  KC_HIP_FN operator float() const { return __kc_f16_to_f32(__x); }
  KC_HIP_FN operator __half_raw() const { return __half_raw{__x}; }
};

#if defined(KC_HIP_AMDGCN)
// the vector type the AMDGPU builtins take (`__builtin_amdgcn_fdot2`), as HIP's __half2
// converts to it
typedef _Float16 __kc_f16x2 __attribute__((ext_vector_type(2)));
#endif

// 4-byte aligned, as HIP's: a __half2 load or store is one 32-bit access
struct alignas(4) __half2 {
  __half x, y;

  __half2() = default;
  KC_HIP_FN __half2(__half a, __half b) : x(a), y(b) {}
  KC_HIP_FN __half2(const __half2_raw& r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
  KC_HIP_FN operator __half2_raw() const { return __half2_raw{x.__x, y.__x}; }
#if defined(KC_HIP_AMDGCN)
  KC_HIP_FN __half2(__kc_f16x2 v) : __half2(__builtin_bit_cast(__half2_raw, v)) {}
  KC_HIP_FN operator __kc_f16x2() const { return __builtin_bit_cast(__kc_f16x2, __half2_raw{x.__x, y.__x}); }
#endif
};

// both halves as one 32-bit word, x in the low half (as in memory)
KC_HIP_FN unsigned __kc_half2_bits(__half2 h) { return (unsigned)h.x.__x | ((unsigned)h.y.__x << 16); }
KC_HIP_FN __half2 __kc_half2_from_bits(unsigned u) { return __half2_raw{(unsigned short)u, (unsigned short)(u >> 16)}; }

// ---------------------------------------------------------------- conversions
KC_HIP_FN __half __float2half(float f) { return __half(f); }
KC_HIP_FN __half __float2half_rn(float f) { return __half(f); }
KC_HIP_FN __half __float2half_rz(float f) { return __half_raw{__kc_f32_to_f16_rz(f)}; }
KC_HIP_FN __half __double2half(double d) { return __half(d); }
KC_HIP_FN float __half2float(__half h) { return (float)h; }
KC_HIP_FN __half __int2half_rn(int i) { return __half(i); }
KC_HIP_FN int __half2int_rz(__half h) { return (int)(float)h; }
KC_HIP_FN unsigned short __half_as_ushort(__half h) { return h.__x; }
KC_HIP_FN short __half_as_short(__half h) { return (short)h.__x; }
KC_HIP_FN __half __ushort_as_half(unsigned short u) { return __half_raw{u}; }
KC_HIP_FN __half __short_as_half(short s) { return __half_raw{(unsigned short)s}; }

KC_HIP_FN __half2 make_half2(__half a, __half b) { return __half2(a, b); }
KC_HIP_FN __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
KC_HIP_FN __half2 __half2half2(__half a) { return __half2(a, a); }
KC_HIP_FN __half2 __float2half2_rn(float f) { return __half2(__half(f), __half(f)); }
KC_HIP_FN __half2 __floats2half2_rn(float a, float b) { return __half2(__half(a), __half(b)); }
KC_HIP_FN __half2 __float22half2_rn(float2 f) { return __half2(__half(f.x), __half(f.y)); }
KC_HIP_FN float2 __half22float2(__half2 h) { return make_float2((float)h.x, (float)h.y); }
KC_HIP_FN float __low2float(__half2 h) { return (float)h.x; }
KC_HIP_FN float __high2float(__half2 h) { return (float)h.y; }
KC_HIP_FN __half __low2half(__half2 h) { return h.x; }
KC_HIP_FN __half __high2half(__half2 h) { return h.y; }
KC_HIP_FN __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
KC_HIP_FN __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
KC_HIP_FN __half2 __lowhigh2highlow(__half2 h) { return __half2(h.y, h.x); }

// ---------------------------------------------------------------- arithmetic (one rounding each)
KC_HIP_FN __half __hadd(__half a, __half b) { return __half((float)a + (float)b); }
KC_HIP_FN __half __hsub(__half a, __half b) { return __half((float)a - (float)b); }
KC_HIP_FN __half __hmul(__half a, __half b) { return __half((float)a * (float)b); }
KC_HIP_FN __half __hdiv(__half a, __half b) { return __half((float)a / (float)b); }
// a * b is exact in f64, and the f64 sum's one rounding cannot move a value onto an f16
// rounding boundary (each f16 product has at most 22 significant bits): one rounding in all
KC_HIP_FN __half __hfma(__half a, __half b, __half c) {
  return __half(__kc_fma64((double)(float)a, (double)(float)b, (double)(float)c));
}
KC_HIP_FN __half __hneg(__half a) { return __half_raw{(unsigned short)(a.__x ^ 0x8000u)}; }
KC_HIP_FN __half __habs(__half a) { return __half_raw{(unsigned short)(a.__x & 0x7fffu)}; }
KC_HIP_FN __half hsqrt(__half a) { return __half(__kc_sqrtf((float)a)); }

KC_HIP_FN bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
KC_HIP_FN bool __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u; }
KC_HIP_FN bool __heq(__half a, __half b) { return (float)a == (float)b; }
KC_HIP_FN bool __hne(__half a, __half b) { return (float)a != (float)b; }
KC_HIP_FN bool __hlt(__half a, __half b) { return (float)a < (float)b; }
KC_HIP_FN bool __hle(__half a, __half b) { return (float)a <= (float)b; }
KC_HIP_FN bool __hgt(__half a, __half b) { return (float)a > (float)b; }
KC_HIP_FN bool __hge(__half a, __half b) { return (float)a >= (float)b; }
// as fmaxf / fminf: a NaN gives the other operand
KC_HIP_FN __half __hmax(__half a, __half b) { return __hisnan(a) ? b : (__hisnan(b) ? a : ((float)a < (float)b ? b : a)); }
KC_HIP_FN __half __hmin(__half a, __half b) { return __hisnan(a) ? b : (__hisnan(b) ? a : ((float)b < (float)a ? b : a)); }

KC_HIP_FN __half2 __hadd2(__half2 a, __half2 b) { return __half2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
KC_HIP_FN __half2 __hsub2(__half2 a, __half2 b) { return __half2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
KC_HIP_FN __half2 __hmul2(__half2 a, __half2 b) { return __half2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
KC_HIP_FN __half2 __h2div(__half2 a, __half2 b) { return __half2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }
KC_HIP_FN __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
KC_HIP_FN __half2 __hneg2(__half2 a) { return __half2(__hneg(a.x), __hneg(a.y)); }
KC_HIP_FN __half2 __habs2(__half2 a) { return __half2(__habs(a.x), __habs(a.y)); }
KC_HIP_FN __half2 __hmax2(__half2 a, __half2 b) { return __half2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
KC_HIP_FN __half2 __hmin2(__half2 a, __half2 b) { return __half2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
KC_HIP_FN __half2 h2sqrt(__half2 a) { return __half2(hsqrt(a.x), hsqrt(a.y)); }

// ---------------------------------------------------------------- operators
KC_HIP_FN __half operator+(__half a, __half b) { return __hadd(a, b); }
KC_HIP_FN __half operator-(__half a, __half b) { return __hsub(a, b); }
KC_HIP_FN __half operator*(__half a, __half b) { return __hmul(a, b); }
KC_HIP_FN __half operator/(__half a, __half b) { return __hdiv(a, b); }
KC_HIP_FN __half operator-(__half a) { return __hneg(a); }
KC_HIP_FN __half operator+(__half a) { return a; }
KC_HIP_FN __half& operator+=(__half& a, __half b) { return a = __hadd(a, b); }
KC_HIP_FN __half& operator-=(__half& a, __half b) { return a = __hsub(a, b); }
KC_HIP_FN __half& operator*=(__half& a, __half b) { return a = __hmul(a, b); }
KC_HIP_FN __half& operator/=(__half& a, __half b) { return a = __hdiv(a, b); }
KC_HIP_FN bool operator==(__half a, __half b) { return __heq(a, b); }
KC_HIP_FN bool operator!=(__half a, __half b) { return __hne(a, b); }
KC_HIP_FN bool operator<(__half a, __half b) { return __hlt(a, b); }
KC_HIP_FN bool operator<=(__half a, __half b) { return __hle(a, b); }
KC_HIP_FN bool operator>(__half a, __half b) { return __hgt(a, b); }
KC_HIP_FN bool operator>=(__half a, __half b) { return __hge(a, b); }

KC_HIP_FN __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
KC_HIP_FN __half2 operator-(__half2 a, __half2 b) { return __hsub2(a, b); }
KC_HIP_FN __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }
KC_HIP_FN __half2 operator/(__half2 a, __half2 b) { return __h2div(a, b); }
KC_HIP_FN __half2 operator-(__half2 a) { return __hneg2(a); }
KC_HIP_FN __half2& operator+=(__half2& a, __half2 b) { return a = __hadd2(a, b); }
KC_HIP_FN __half2& operator-=(__half2& a, __half2 b) { return a = __hsub2(a, b); }
KC_HIP_FN __half2& operator*=(__half2& a, __half2 b) { return a = __hmul2(a, b); }
KC_HIP_FN __half2& operator/=(__half2& a, __half2 b) { return a = __h2div(a, b); }

// ---------------------------------------------------------------- the packed dot product
#if defined(KC_HIP_AMDGCN)
// the hardware instruction (v_dot2_f32_f16); ockl passes the clamp bit set, as here
KC_HIP_FN float __ockl_fdot2(__kc_f16x2 a, __kc_f16x2 b, float c, bool) { return __builtin_amdgcn_fdot2(a, b, c, true); }
#else
// ockl's software definition, which ignores the clamp flag: each product is exact in f32
KC_HIP_FN float __kc_fdot2(__half2 a, __half2 b, float c, bool) {
  return __kc_fmaf((float)a.y, (float)b.y, __kc_fmaf((float)a.x, (float)b.x, c));
}
KC_HIP_FN float __ockl_fdot2(__half2 a, __half2 b, float c, bool saturate) { return __kc_fdot2(a, b, c, saturate); }
// the clang builtin's name, for the backends whose compiler has no such builtin
#define __builtin_amdgcn_fdot2 __kc_fdot2
#endif
// HIP's public name for it
KC_HIP_FN float amd_mixed_dot(__half2 a, __half2 b, float c, bool saturate) { return __ockl_fdot2(a, b, c, saturate); }

// ---------------------------------------------------------------- shuffles of half types
// the host prelude's shuffles take any 16-byte value; the GPU preludes' take 32-bit words
#if defined(KC_HIP_AMDGCN)
#define KC_HIP_SHFL_HALF(OP, ARG)                                                                               \
  KC_HIP_FN __half2 OP(__half2 v, ARG a, int width = warpSize) {                                               \
    return __builtin_bit_cast(__half2, OP(__builtin_bit_cast(int, v), a, width));                              \
  }                                                                                                            \
  KC_HIP_FN __half OP(__half v, ARG a, int width = warpSize) {                                                 \
    return __ushort_as_half((unsigned short)OP((int)v.__x, a, width));                                         \
  }
KC_HIP_SHFL_HALF(__shfl, int)
KC_HIP_SHFL_HALF(__shfl_up, unsigned)
KC_HIP_SHFL_HALF(__shfl_down, unsigned)
KC_HIP_SHFL_HALF(__shfl_xor, int)
#undef KC_HIP_SHFL_HALF
#elif defined(KC_HIP_NVRTC)
// the cuda prelude spells HIP's shuffles as tf_cuda_* templates over __shfl_*_sync
#define KC_HIP_SHFL_HALF(OP, ARG)                                                                               \
  KC_HIP_FN __half2 OP(__half2 v, ARG a, int width = 32) {                                                     \
    return __kc_half2_from_bits(OP(__kc_half2_bits(v), a, width));                                            \
  }                                                                                                            \
  KC_HIP_FN __half OP(__half v, ARG a, int width = 32) {                                                       \
    return __ushort_as_half((unsigned short)OP((unsigned)v.__x, a, width));                                    \
  }
KC_HIP_SHFL_HALF(tf_cuda_shfl, int)
KC_HIP_SHFL_HALF(tf_cuda_shfl_up, unsigned)
KC_HIP_SHFL_HALF(tf_cuda_shfl_down, unsigned)
KC_HIP_SHFL_HALF(tf_cuda_shfl_xor, int)
#undef KC_HIP_SHFL_HALF
#endif
