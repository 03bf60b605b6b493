// MLX-affine quantized matrix-vector product (a decode step's projections of a quantized
// checkpoint): y[r, o] = sum_c x[r, c] * (scale[o, g] * code[o, c] + bias[o, g]), g = c / group.
// Each row o of w holds k codes of `bits` bits (4 or 8) packed little-endian in 32-bit words,
// code c at bits [c * bits, c * bits + bits) of the row's bitstream, so a code never straddles
// two words; scales and biases (f16 or bf16, one dtype code for both) hold one value per group.
//
// As MLX's qmv does, a lane decodes a run of 8 consecutive codes (one group's: group is a
// multiple of 8) and sums their products with x before adding the run to its total. Each
// weight is dequantised as scale * code + bias (the product exact in f32: at most 11 + 8
// significant bits) and then multiplied by x; MLX folds the bias instead (scale * sum(x *
// code) + bias * sum(x)), which rounds alike but makes an infinite x times a zero code NaN
// where the definition's weight is finite. One warp per output, 8 outputs to a block of 256
// threads (TF_QMV_WARPS): lane l takes runs l, l + 32, ..., and a shuffle butterfly adds the
// 32 lane sums (every lane ends with the same total, in the same order). f32 accumulation
// throughout; y is stored once in its type.
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
  long long groups = k / group;
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
