// HIP's hip/hip_bf16.h, the part kernels use: __hip_bfloat16 and __hip_bfloat162 (the
// names HIP gives CUDA's __nv_bfloat16 and __nv_bfloat162), held as bits, conversions
// rounding to nearest even, and arithmetic as HIP does it: in f32, rounded once to bf16
// (exact: f32's 24 bits are more than 2 * 8 + 2), __hfma through fmaf as HIP's does.
#pragma once
#include "kernel_contracts_detail.h"
#include "hip_vector_types.h"

struct __hip_bfloat16_raw {
  unsigned short x;
};

struct __hip_bfloat16 {
  unsigned short data;

  __hip_bfloat16() = default;
  KC_HIP_FN __hip_bfloat16(const __hip_bfloat16_raw& r) : data(r.x) {}
  KC_HIP_FN __hip_bfloat16(float f) : data(__kc_f32_to_bf16(f)) {}
  KC_HIP_FN __hip_bfloat16(double d) : data(__kc_f32_to_bf16(__kc_f64_to_f32_odd(d))) {}
  KC_HIP_FN __hip_bfloat16(int i) : data(__kc_f32_to_bf16(__kc_f64_to_f32_odd((double)i))) {}
  KC_HIP_FN operator float() const { return __kc_bf16_to_f32(data); }
  KC_HIP_FN operator __hip_bfloat16_raw() const { return __hip_bfloat16_raw{data}; }
};

struct alignas(4) __hip_bfloat162 {
  __hip_bfloat16 x, y;

  __hip_bfloat162() = default;
  KC_HIP_FN __hip_bfloat162(__hip_bfloat16 a, __hip_bfloat16 b) : x(a), y(b) {}
};

KC_HIP_FN __hip_bfloat16 __float2bfloat16(float f) { return __hip_bfloat16(f); }
KC_HIP_FN __hip_bfloat16 __double2bfloat16(double d) { return __hip_bfloat16(d); }
KC_HIP_FN float __bfloat162float(__hip_bfloat16 b) { return (float)b; }
KC_HIP_FN unsigned short __bfloat16_as_ushort(__hip_bfloat16 b) { return b.data; }
KC_HIP_FN __hip_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __hip_bfloat16_raw{u}; }
KC_HIP_FN __hip_bfloat162 __float2bfloat162_rn(float f) { return __hip_bfloat162(__hip_bfloat16(f), __hip_bfloat16(f)); }
KC_HIP_FN __hip_bfloat162 __floats2bfloat162_rn(float a, float b) { return __hip_bfloat162(__hip_bfloat16(a), __hip_bfloat16(b)); }
KC_HIP_FN __hip_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
KC_HIP_FN float2 __bfloat1622float2(__hip_bfloat162 b) { return make_float2((float)b.x, (float)b.y); }
KC_HIP_FN __hip_bfloat162 __halves2bfloat162(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat162(a, b); }
KC_HIP_FN __hip_bfloat16 __low2bfloat16(__hip_bfloat162 b) { return b.x; }
KC_HIP_FN __hip_bfloat16 __high2bfloat16(__hip_bfloat162 b) { return b.y; }
KC_HIP_FN float __low2float(__hip_bfloat162 b) { return (float)b.x; }
KC_HIP_FN float __high2float(__hip_bfloat162 b) { return (float)b.y; }

KC_HIP_FN __hip_bfloat16 __hadd(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16((float)a + (float)b); }
KC_HIP_FN __hip_bfloat16 __hsub(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16((float)a - (float)b); }
KC_HIP_FN __hip_bfloat16 __hmul(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16((float)a * (float)b); }
KC_HIP_FN __hip_bfloat16 __hdiv(__hip_bfloat16 a, __hip_bfloat16 b) { return __hip_bfloat16((float)a / (float)b); }
KC_HIP_FN __hip_bfloat16 __hfma(__hip_bfloat16 a, __hip_bfloat16 b, __hip_bfloat16 c) {
  return __hip_bfloat16(__kc_fmaf((float)a, (float)b, (float)c));
}
KC_HIP_FN __hip_bfloat16 __hneg(__hip_bfloat16 a) { return __hip_bfloat16_raw{(unsigned short)(a.data ^ 0x8000u)}; }
KC_HIP_FN __hip_bfloat16 __habs(__hip_bfloat16 a) { return __hip_bfloat16_raw{(unsigned short)(a.data & 0x7fffu)}; }
KC_HIP_FN bool __hisnan(__hip_bfloat16 a) { return (a.data & 0x7fffu) > 0x7f80u; }
KC_HIP_FN bool __hisinf(__hip_bfloat16 a) { return (a.data & 0x7fffu) == 0x7f80u; }
KC_HIP_FN __hip_bfloat16 __hmax(__hip_bfloat16 a, __hip_bfloat16 b) {
  return __hisnan(a) ? b : (__hisnan(b) ? a : ((float)a < (float)b ? b : a));
}
KC_HIP_FN __hip_bfloat16 __hmin(__hip_bfloat16 a, __hip_bfloat16 b) {
  return __hisnan(a) ? b : (__hisnan(b) ? a : ((float)b < (float)a ? b : a));
}

KC_HIP_FN __hip_bfloat162 __hadd2(__hip_bfloat162 a, __hip_bfloat162 b) { return __hip_bfloat162(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
KC_HIP_FN __hip_bfloat162 __hsub2(__hip_bfloat162 a, __hip_bfloat162 b) { return __hip_bfloat162(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
KC_HIP_FN __hip_bfloat162 __hmul2(__hip_bfloat162 a, __hip_bfloat162 b) { return __hip_bfloat162(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
KC_HIP_FN __hip_bfloat162 __hfma2(__hip_bfloat162 a, __hip_bfloat162 b, __hip_bfloat162 c) {
  return __hip_bfloat162(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}

KC_HIP_FN __hip_bfloat16 operator+(__hip_bfloat16 a, __hip_bfloat16 b) { return __hadd(a, b); }
KC_HIP_FN __hip_bfloat16 operator-(__hip_bfloat16 a, __hip_bfloat16 b) { return __hsub(a, b); }
KC_HIP_FN __hip_bfloat16 operator*(__hip_bfloat16 a, __hip_bfloat16 b) { return __hmul(a, b); }
KC_HIP_FN __hip_bfloat16 operator/(__hip_bfloat16 a, __hip_bfloat16 b) { return __hdiv(a, b); }
KC_HIP_FN __hip_bfloat16 operator-(__hip_bfloat16 a) { return __hneg(a); }
KC_HIP_FN __hip_bfloat16& operator+=(__hip_bfloat16& a, __hip_bfloat16 b) { return a = __hadd(a, b); }
KC_HIP_FN __hip_bfloat16& operator*=(__hip_bfloat16& a, __hip_bfloat16 b) { return a = __hmul(a, b); }
KC_HIP_FN bool operator==(__hip_bfloat16 a, __hip_bfloat16 b) { return (float)a == (float)b; }
KC_HIP_FN bool operator!=(__hip_bfloat16 a, __hip_bfloat16 b) { return (float)a != (float)b; }
KC_HIP_FN bool operator<(__hip_bfloat16 a, __hip_bfloat16 b) { return (float)a < (float)b; }
KC_HIP_FN bool operator>(__hip_bfloat16 a, __hip_bfloat16 b) { return (float)a > (float)b; }
KC_HIP_FN __hip_bfloat162 operator+(__hip_bfloat162 a, __hip_bfloat162 b) { return __hadd2(a, b); }
KC_HIP_FN __hip_bfloat162 operator*(__hip_bfloat162 a, __hip_bfloat162 b) { return __hmul2(a, b); }
