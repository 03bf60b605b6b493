// Control: tf_embed_dense gathering the row after the one its token id names.
#include "common.h"

extern "C" __global__ void tf_embed_dense(const void* table, int table_kind, const int* ids, int n, int k,
                                          void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)n * k) return;
  long long row = i / k, column = i % k;
  float v = tf_load(table, table_kind, (long long)(ids[row] + 1) * k + column);   // planted: + 1
  tf_store(out, out_kind, i, v);
}
