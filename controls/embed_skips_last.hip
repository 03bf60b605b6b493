// Control: tf_embed_dense whose bound check drops the last element.
#include "common.h"

extern "C" __global__ void tf_embed_dense(const void* table, int table_kind, const int* ids, int n, int k,
                                          void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)n * k - 1) return;   // planted: - 1
  long long row = i / k, column = i % k;
  float v = tf_load(table, table_kind, (long long)ids[row] * k + column);
  tf_store(out, out_kind, i, v);
}
