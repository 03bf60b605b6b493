// Rotary position embedding of x [rows, heads, d] at one position per row (token): each
// pair (a, b) of a head's d values is rotated by the angle pos * inv_freq[i], i < d / 2:
//   out[a] = x[a] cos - x[b] sin,  out[b] = x[b] cos + x[a] sin.
// layout 0 (neox, half-split) pairs i with i + d / 2; layout 1 (interleaved) pairs 2i with
// 2i + 1. inv_freq[i] = theta^(-2i / d), rounded to f32, comes from the engine (computed
// once on the host in f64), so the angle is one f32 product with the same bits on every
// backend; only sinf and cosf, and the rotation's own roundings, differ between backends.
// One thread per pair; the launcher uses blocks of 256 over rows * heads * d / 2 pairs.
#include "common.h"

extern "C" __global__ void tf_rope(const void* x, int x_kind, const int* positions, const float* inv_freq, int rows,
                                   int heads, int d, int layout, void* out, int out_kind) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int half = d / 2;
  if (p >= (long long)rows * heads * half) return;
  int i = (int)(p % half);
  long long head_row = p / half;          // row * heads + head
  long long row = head_row / heads;
  long long base = head_row * d;
  long long a = layout == 0 ? base + i : base + 2 * i;
  long long b = layout == 0 ? base + i + half : base + 2 * i + 1;
  float angle = (float)positions[row] * inv_freq[i];
  float c = cosf(angle), s = sinf(angle);
  float xa = tf_load(x, x_kind, a), xb = tf_load(x, x_kind, b);
  tf_store(out, out_kind, a, xa * c - xb * s);
  tf_store(out, out_kind, b, xb * c + xa * s);
}
