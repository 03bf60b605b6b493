// Control: tf_rope rotating each token by the position after its own (pos + 1).
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
  float angle = (float)(positions[row] + 1) * inv_freq[i];   // planted: position off by one
  float c = cosf(angle), s = sinf(angle);
  float xa = tf_load(x, x_kind, a), xb = tf_load(x, x_kind, b);
  tf_store(out, out_kind, a, xa * c - xb * s);
  tf_store(out, out_kind, b, xb * c + xa * s);
}
