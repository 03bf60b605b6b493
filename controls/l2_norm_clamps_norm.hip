// Control: tf_l2_norm dividing by max(norm, eps), as torch's F.normalize does, instead of
// sqrt(sum of squares + eps), as the gated delta rule's l2norm does: the same away from zero,
// different on a row whose sum of squares is near eps.
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
  float inverse = 1.0f / fmaxf(sqrtf(squares), eps);   // planted: F.normalize's clamp
  for (int j = lane; j < k; j += 32) tf_store(out, out_kind, base + j, tf_load(x, x_kind, base + j) * inverse);
}
