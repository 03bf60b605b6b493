// L2 normalisation of rows: out[r, j] = x[r, j] / sqrt(sum_j x[r, j]^2 + eps), in f32 with one
// rounding at the store. Qwen3-Next normalises each head of q and k this way before the gated
// delta rule, so rows are short (a head, 128 wide) and many (tokens * heads): one warp takes a
// row, and a block of 256 threads takes 8 rows (TF_L2_ROWS). Each lane sums the squares of its
// strided columns in f32 (an f16 row of a few thousands would overflow a half sum), a shuffle
// butterfly adds the 32 lane sums so that every lane holds the same total in the same order,
// and each lane scales its own columns. A warp past the last row returns whole, before any
// shuffle, so no lane waits on one that left.
#include "common.h"

#define TF_L2_ROWS 8

extern "C" __global__ void tf_l2_norm(const void* x, int x_kind, int rows, int k, float eps, void* out, int out_kind) {
  int lane = (int)(threadIdx.x % 32);
  int row = (int)blockIdx.x * TF_L2_ROWS + (int)(threadIdx.x / 32);
  if (row >= rows) return;
  long long base = (long long)row * k;
  float squares = 0.0f;
  for (int j = lane; j < k; j += 32) {
    float v = tf_load(x, x_kind, base + j);
    squares += v * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor(squares, offset);
  // eps keeps a zero row finite: 0 * (1 / sqrt(eps)) is 0
  float inverse = rsqrtf(squares + eps);
  for (int j = lane; j < k; j += 32) tf_store(out, out_kind, base + j, tf_load(x, x_kind, base + j) * inverse);
}
