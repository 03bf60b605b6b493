// HIP's hip/hip_bfloat16.h for the backends without ROCm: the struct hip_bfloat16 (its bits
// in `data`), built from a float rounding to nearest even (or truncating, on request), read
// back exactly as a float, with arithmetic in f32 rounded once to bf16, as ROCm's header
// defines it.
#pragma once
#include "kernel_contracts_detail.h"

struct hip_bfloat16 {
  unsigned short data;

  enum truncate_t { truncate };

  hip_bfloat16() = default;
  KC_HIP_FN explicit hip_bfloat16(float f) : data(__kc_f32_to_bf16(f)) {}
  KC_HIP_FN explicit hip_bfloat16(float f, truncate_t) : data((unsigned short)(__kc_f32_bits(f) >> 16)) {}
  KC_HIP_FN operator float() const { return __kc_bf16_to_f32(data); }
  KC_HIP_FN explicit operator bool() const { return (data & 0x7fffu) != 0; }

  KC_HIP_FN static hip_bfloat16 round_to_bfloat16(float f) { return hip_bfloat16(f); }
  KC_HIP_FN static hip_bfloat16 round_to_bfloat16(float f, truncate_t t) { return hip_bfloat16(f, t); }
};

KC_HIP_FN hip_bfloat16 operator+(hip_bfloat16 a) { return a; }
KC_HIP_FN hip_bfloat16 operator-(hip_bfloat16 a) {
  hip_bfloat16 r = a;
  r.data ^= 0x8000u;
  return r;
}
KC_HIP_FN hip_bfloat16 operator+(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) + float(b)); }
KC_HIP_FN hip_bfloat16 operator-(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) - float(b)); }
KC_HIP_FN hip_bfloat16 operator*(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) * float(b)); }
KC_HIP_FN hip_bfloat16 operator/(hip_bfloat16 a, hip_bfloat16 b) { return hip_bfloat16(float(a) / float(b)); }
KC_HIP_FN bool operator<(hip_bfloat16 a, hip_bfloat16 b) { return float(a) < float(b); }
KC_HIP_FN bool operator==(hip_bfloat16 a, hip_bfloat16 b) { return float(a) == float(b); }
KC_HIP_FN bool operator>(hip_bfloat16 a, hip_bfloat16 b) { return b < a; }
KC_HIP_FN bool operator<=(hip_bfloat16 a, hip_bfloat16 b) { return !(a > b); }
KC_HIP_FN bool operator!=(hip_bfloat16 a, hip_bfloat16 b) { return !(a == b); }
KC_HIP_FN bool operator>=(hip_bfloat16 a, hip_bfloat16 b) { return !(a < b); }
KC_HIP_FN hip_bfloat16& operator+=(hip_bfloat16& a, hip_bfloat16 b) { return a = a + b; }
KC_HIP_FN hip_bfloat16& operator-=(hip_bfloat16& a, hip_bfloat16 b) { return a = a - b; }
KC_HIP_FN hip_bfloat16& operator*=(hip_bfloat16& a, hip_bfloat16 b) { return a = a * b; }
KC_HIP_FN hip_bfloat16& operator/=(hip_bfloat16& a, hip_bfloat16 b) { return a = a / b; }
KC_HIP_FN bool isinf(hip_bfloat16 a) { return (a.data & 0x7fffu) == 0x7f80u; }
KC_HIP_FN bool isnan(hip_bfloat16 a) { return (a.data & 0x7fffu) > 0x7f80u; }
KC_HIP_FN bool iszero(hip_bfloat16 a) { return (a.data & 0x7fffu) == 0; }
