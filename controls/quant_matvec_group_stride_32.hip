// Control: tf_quant_matvec indexing the scales and biases with k / 32 groups per row, the
// stride of MLX's smallest group size: right for groups of 32, another row's (or past the
// end's) scale for groups of 64 and 128.
#include "common.h"

#define TF_QMV_WARPS 8
#define TF_QMV_RUN 8

extern "C" __global__ void tf_quant_matvec(const void* x, int x_kind, const unsigned* w, const void* scales,
                                           const void* biases, int scale_kind, int n, int k, int bits, int group,
                                           void* y, int y_kind) {
  int lane = (int)(threadIdx.x % 32);
  long long o = (long long)blockIdx.x * TF_QMV_WARPS + threadIdx.x / 32;
  long long r = blockIdx.y;
  if (o >= n) return;
  long long words = (long long)k / 32 * bits;   // per row of w
  const unsigned* codes = w + o * words;
  long long groups = k / 32;   // planted: the stride of groups of 32, whatever the group
  unsigned mask = (1u << bits) - 1u;
  float acc = 0.0f;
  for (int run = lane; run < k / TF_QMV_RUN; run += 32) {
    int c0 = run * TF_QMV_RUN;
    long long g = o * groups + c0 / group;
    float scale = tf_load(scales, scale_kind, g), bias = tf_load(biases, scale_kind, g);
    float part = 0.0f;
    for (int c = c0; c < c0 + TF_QMV_RUN; c++) {
      long long bit = (long long)c * bits;
      float code = (float)((codes[bit / 32] >> (bit % 32)) & mask);
      part += tf_load(x, x_kind, r * k + c) * (scale * code + bias);
    }
    acc += part;
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor(acc, offset);
  if (lane == 0) tf_store(y, y_kind, r * n + o, acc);
}
