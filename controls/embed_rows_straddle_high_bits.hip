// Control: tf_embed_rows reading only the first word of a code, so a 3- or 6-bit code that
// straddles two words loses its high bits (they sit at the bottom of the next word).
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
  unsigned code = words[bit / 32] >> shift;   // planted: no read of the next word when shift + bits > 32
  code &= (1u << bits) - 1u;
  long long g = id * (k / group) + column / group;
  float scale = tf_load(scales, scale_kind, g);
  float bias = tf_load(biases, scale_kind, g);
  float scaled = scale * (float)code;
  tf_store(out, out_kind, i, scaled + bias);
}
