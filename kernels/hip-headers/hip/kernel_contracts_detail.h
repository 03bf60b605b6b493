// What the HIP header shims of kernels/hip-headers share: which backend compiles them,
// function qualifiers that every backend accepts, and the bit conversions of f16 and bf16
// in integer arithmetic, rounding to nearest even, so that every backend gives the same bits
// without a vendor header (the algorithm of kernels/common.h, written once more here because
// a foreign kernel library includes these headers, not common.h).
//
// The backends: the host (kernels/host/prelude.h force-included, `SIMT_WARP` defined), the
// static gfx1201 build (clang -nogpuinc with kernels/hip/prelude.h, `__AMDGCN__`) and NVRTC
// (kernels/cuda/prelude.h, `__CUDACC_RTC__`). hiprtc on a ROCm machine uses ROCm's own
// headers: this folder is not on its include path.
#pragma once

#if defined(__HIPCC_RTC__)
#error "kernels/hip-headers shims are for the host, the static gfx1201 build and NVRTC; hiprtc has ROCm's own headers"
#endif

#if defined(SIMT_WARP)
#define KC_HIP_HOST 1
#elif defined(__AMDGCN__)
#define KC_HIP_AMDGCN 1
#elif defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define KC_HIP_NVRTC 1
#else
#error "kernels/hip-headers: include a backend prelude first (the engine force-includes it)"
#endif

// Every function of the shims runs on the device; `__host__` too where the backend has it,
// as HIP's own headers declare them.
#define KC_HIP_FN __host__ __device__ __forceinline__

// 32-bit bit casts: every prelude has `__float_as_uint` and `__uint_as_float` (NVRTC's
// front end may lack `__builtin_bit_cast`).
KC_HIP_FN unsigned __kc_f32_bits(float f) { return __float_as_uint(f); }
KC_HIP_FN float __kc_f32_from_bits(unsigned u) { return __uint_as_float(u); }

// fma and sqrt under one name: the compilers' builtins, or CUDA's functions under NVRTC
#if defined(KC_HIP_NVRTC)
KC_HIP_FN double __kc_fma64(double a, double b, double c) { return fma(a, b, c); }
KC_HIP_FN float __kc_fmaf(float a, float b, float c) { return fmaf(a, b, c); }
KC_HIP_FN float __kc_sqrtf(float a) { return sqrtf(a); }
#else
KC_HIP_FN double __kc_fma64(double a, double b, double c) { return __builtin_fma(a, b, c); }
KC_HIP_FN float __kc_fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
KC_HIP_FN float __kc_sqrtf(float a) { return __builtin_sqrtf(a); }
#endif

// f16 bits to f32: exact.
KC_HIP_FN float __kc_f16_to_f32(unsigned short h) {
  unsigned sign = (unsigned)(h & 0x8000u) << 16;
  unsigned exponent = (h >> 10) & 0x1fu;
  unsigned mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return __kc_f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return __kc_f32_from_bits(sign);
    float v = (float)mantissa * 5.9604644775390625e-8f;   // mantissa * 2^-24, exact in f32
    return sign ? -v : v;
  }
  return __kc_f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// f32 to f16 bits, rounding to nearest even; a NaN stays a (quiet) NaN with its sign.
KC_HIP_FN unsigned short __kc_f32_to_f16(float f) {
  unsigned u = __kc_f32_bits(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);   // rounds to 65520 or more: infinity
  if (magnitude >= 0x38800000u) {                                          // normal in f16
    unsigned rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return (unsigned short)(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude < 0x33000000u) return sign;                                // below half the smallest subnormal
  unsigned exponent = magnitude >> 23;                                     // subnormal in f16
  unsigned mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  unsigned shift = 126u - exponent;                                        // 14..24
  unsigned half_ulp = 1u << (shift - 1);
  unsigned result = mantissa >> shift;
  unsigned remainder = mantissa & ((1u << shift) - 1u);
  if (remainder > half_ulp || (remainder == half_ulp && (result & 1u))) result++;
  return (unsigned short)(sign | result);
}

// f32 to f16 bits, rounding toward zero (`__float2half_rz`).
KC_HIP_FN unsigned short __kc_f32_to_f16_rz(float f) {
  unsigned u = __kc_f32_bits(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (unsigned short)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude == 0x7f800000u) return (unsigned short)(sign | 0x7c00u);
  if (magnitude >= 0x47800000u) return (unsigned short)(sign | 0x7bffu);   // 65536 or more: the largest finite
  if (magnitude >= 0x38800000u) return (unsigned short)(sign | ((magnitude - 0x38000000u) >> 13));
  if (magnitude < 0x33800000u) return sign;                                // below the smallest subnormal
  unsigned mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  return (unsigned short)(sign | (mantissa >> (126u - (magnitude >> 23))));
}

// f64 to f32 rounding to odd: with f32's 24 bits, at least 2p + 2 for f16 and bf16, the later
// rounding to nearest even of the result is the correctly rounded conversion from f64 (one
// rounding, as a direct f64 to f16 conversion would give).
KC_HIP_FN float __kc_f64_to_f32_odd(double d) {
  float f = (float)d;
  if (d != d || (double)f == d) return f;
  unsigned u = __kc_f32_bits(f);
  if ((u & 1u) == 0) {
    bool larger = (d < 0 ? -d : d) > (double)(f < 0 ? -f : f);   // the exact value lies above f's magnitude
    u = larger ? u + 1u : u - 1u;
  }
  return __kc_f32_from_bits(u);
}

// bf16 bits to f32: exact.
KC_HIP_FN float __kc_bf16_to_f32(unsigned short h) { return __kc_f32_from_bits((unsigned)h << 16); }

// f32 to bf16 bits, rounding to nearest even, as ROCm's hip_bfloat16 and __hip_bfloat16 do
// it: a NaN whose low 16 bits are not all zero gets bit 16 set, so it stays a NaN.
KC_HIP_FN unsigned short __kc_f32_to_bf16(float f) {
  unsigned u = __kc_f32_bits(f);
  if ((u & 0x7f800000u) != 0x7f800000u) {
    u += 0x7fffu + ((u >> 16) & 1u);
  } else if (u & 0xffffu) {
    u |= 0x10000u;
  }
  return (unsigned short)(u >> 16);
}
