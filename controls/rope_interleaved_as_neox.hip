// Control: tf_rope that pairs i with i + d / 2 whatever the layout (the interleaved layout rotated as neox).
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
  long long a = base + i;   // planted: the layout is ignored
  long long b = base + i + half;
  float angle = (float)positions[row] * inv_freq[i];
  float c = cosf(angle), s = sinf(angle);
  float xa = tf_load(x, x_kind, a), xb = tf_load(x, x_kind, b);
  tf_store(out, out_kind, a, xa * c - xb * s);
  tf_store(out, out_kind, b, xb * c + xa * s);
}
