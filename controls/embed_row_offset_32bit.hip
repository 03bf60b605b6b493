// Faulty copy of kernels/tf_embed_dense.hip: the row offset ids[row] * k is multiplied in 32
// bits, so on a table past 2^31 elements (a 256k-token vocabulary of 8192 columns) the last
// rows come from the wrong place. No host case holds such a table: the host build's static
// check of 32-bit offsets sees it.
//
// Rows of a table gathered by token id, written in the activation type.
// One thread per output element; the launcher uses blocks of 256 over n * k elements.
#include "common.h"

extern "C" __global__ void tf_embed_dense(const void* table, int table_kind, const int* ids, int n, int k,
                                          void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)n * k) return;
  long long row = i / k, column = i % k;
  float v = tf_load(table, table_kind, ids[row] * k + column);
  tf_store(out, out_kind, i, v);
}
