// Control: tf_rope that pairs i with i + d / 2 whatever the layout (the interleaved layout rotated as neox).
#include "common.h"

// sin and cos of 2 pi t for any finite t (in turns), within 1.65 * 2^-24 absolute (measured
// over every f32 t in [0, 1); the reduction is exact, so that holds for every t).
__device__ __forceinline__ void tf_rope_sincos_turns(float t, float* sine, float* cosine) {
  float sign = t < 0.0f ? -1.0f : 1.0f;
  float q = fabsf(t) * 4.0f;                                // quarter turns (exact)
  float n = floorf(q);
  float f = q - n;                                          // exact: in [0, 1)
  if (f > 0.5f) {
    f -= 1.0f;                                              // exact (Sterbenz): in (-0.5, 0)
    n += 1.0f;
  }
  int quadrant = (int)(n - 4.0f * floorf(n * 0.25f));       // n mod 4, exact
  float x = f * 1.5707963267948966f;                        // |x| <= pi / 4
  float z = x * x;
  // Taylor series to x^9 and x^10: the first term left out is below 2^-33 at pi / 4
  float s = x + x * z * (-0.16666666666666666f + z * (0.008333333333333333f + z * (-1.984126984126984e-4f + z * 2.755731922398589e-6f)));
  float c = 1.0f + z * (-0.5f + z * (0.041666666666666664f + z * (-0.001388888888888889f + z * (2.48015873015873e-5f + z * -2.755731922398589e-7f))));
  float rs = quadrant == 0 ? s : quadrant == 1 ? c : quadrant == 2 ? -s : -c;
  float rc = quadrant == 0 ? c : quadrant == 1 ? -s : quadrant == 2 ? -c : s;
  *sine = sign * rs;
  *cosine = rc;
}

extern "C" __global__ void tf_rope(const void* x, int x_kind, const int* positions, const float* turns, int rows,
                                   int heads, int d, int layout, void* out, int out_kind) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int half = d / 2;
  if (p >= (long long)rows * heads * half) return;
  int i = (int)(p % half);
  long long head_row = p / half;          // row * heads + head
  long long row = head_row / heads;
  long long base = head_row * d;
  long long a = base + i;   // planted: the layout is ignored
  long long b = base + i + half;
  float s, c;
  tf_rope_sincos_turns((float)positions[row] * turns[i], &s, &c);
  float xa = tf_load(x, x_kind, a), xb = tf_load(x, x_kind, b);
  tf_store(out, out_kind, a, xa * c - xb * s);
  tf_store(out, out_kind, b, xb * c + xa * s);
}
