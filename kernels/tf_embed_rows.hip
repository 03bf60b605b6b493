// MLX-style affine-quantized embedding rows, gathered by token id and written in the
// activation type: out[i, c] = scale[id, c / group] * code[id, c] + bias[id, c / group].
//
// Each table row holds k codes of `bits` bits (2, 3, 4, 6 or 8) as one little-endian
// bitstream in k * bits / 32 words: code c sits at stream bits [c * bits, c * bits + bits),
// and word w holds stream bits [32 w, 32 w + 32). For 3 and 6 bits a code can straddle two
// words (its low bits at the top of one word, its high bits at the bottom of the next).
// Scales and biases (f16 or bf16, one dtype code for both) hold one value per group of
// `group` columns. The launcher checks k % group == 0 and k * bits % 32 == 0.
//
// The value is computed in f32 as one multiply and one add: scale * code is exact in f32 (at
// most 11 + 8 significant bits, every f16 and bf16 exponent in range), so the add is the only
// rounding before the store, and a compiler that contracts the two into an FMA gives the
// same bits.
// One thread per output element; the launcher uses blocks of 256 over n * k elements.
#include "common.h"

extern "C" __global__ void tf_embed_rows(const unsigned* table, const void* scales, const void* biases, int scale_kind,
                                         const int* ids, int n, int k, int bits, int group, void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)n * k) return;
  long long row = i / k, column = i % k;
  long long id = ids[row];
  long long words_per_row = (long long)k * bits / 32;
  long long bit = column * bits;
  const unsigned* words = table + id * words_per_row;
  unsigned shift = (unsigned)(bit % 32);
  unsigned code = words[bit / 32] >> shift;
  if (shift + (unsigned)bits > 32u) code |= words[bit / 32 + 1] << (32u - shift);   // the high bits, from the next word
  code &= (1u << bits) - 1u;
  long long g = id * (k / group) + column / group;
  float scale = tf_load(scales, scale_kind, g);
  float bias = tf_load(biases, scale_kind, g);
  float scaled = scale * (float)code;
  tf_store(out, out_kind, i, scaled + bias);
}
