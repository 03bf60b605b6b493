// Helpers every kernel shares, written once for every backend: dtype codes, and loads and
// stores by code with f16 and bf16 conversions that round to nearest even in integer
// arithmetic, so every backend gives the same bits without a vendor header.
#pragma once

// dtype codes: the engine's launchers pass these (src/dtype.rs, DType::kernel_code)
#define TF_F32 0
#define TF_F16 1
#define TF_BF16 2

__device__ __forceinline__ float tf_bf16_to_f32(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

__device__ __forceinline__ unsigned short tf_f32_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);   // NaN stays NaN, sign kept
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float tf_f16_to_f32(unsigned short h) {
  unsigned sign = (unsigned)(h & 0x8000u) << 16;
  unsigned exponent = (h >> 10) & 0x1fu;
  unsigned mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return __uint_as_float(sign);
    // subnormal: value = mantissa * 2^-24, exact in f32
    float v = (float)mantissa * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

__device__ __forceinline__ unsigned short tf_f32_to_f16(float f) {
  unsigned u = __float_as_uint(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));   // NaN
  if (magnitude >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);   // rounds to >= 65520: infinity
  if (magnitude >= 0x38800000u) {                                          // normal in f16
    unsigned rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return (unsigned short)(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude < 0x33000000u) return sign;                                // below half the smallest subnormal
  // subnormal in f16: shift the full mantissa down, round to nearest even
  unsigned exponent = magnitude >> 23;
  unsigned mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  unsigned shift = 126u - exponent;                                        // 14..24
  unsigned half_ulp = 1u << (shift - 1);
  unsigned result = mantissa >> shift;
  unsigned remainder = mantissa & ((1u << shift) - 1u);
  if (remainder > half_ulp || (remainder == half_ulp && (result & 1u))) result++;
  return (unsigned short)(sign | result);
}

// Loads element i of a buffer of the given dtype code as f32. An unknown code is refused.
__device__ __forceinline__ float tf_load(const void* p, int code, long long i) {
  switch (code) {
    case TF_F32: return ((const float*)p)[i];
    case TF_F16: return tf_f16_to_f32(((const unsigned short*)p)[i]);
    case TF_BF16: return tf_bf16_to_f32(((const unsigned short*)p)[i]);
    default: __trap();
  }
}

// Stores v as element i of a buffer of the given dtype code. An unknown code is refused.
__device__ __forceinline__ void tf_store(void* p, int code, long long i, float v) {
  switch (code) {
    case TF_F32: ((float*)p)[i] = v; return;
    case TF_F16: ((unsigned short*)p)[i] = tf_f32_to_f16(v); return;
    case TF_BF16: ((unsigned short*)p)[i] = tf_f32_to_bf16(v); return;
    default: __trap();
  }
}
