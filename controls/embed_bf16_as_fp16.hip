// Control: tf_embed_dense reading a bf16 table as if it held fp16 values.
#include "common.h"

extern "C" __global__ void tf_embed_dense(const void* table, int table_kind, const int* ids, int n, int k,
                                          void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)n * k) return;
  long long row = i / k, column = i % k;
  int kind = table_kind == TF_BF16 ? TF_F16 : table_kind;   // planted: the 16-bit kinds confused
  float v = tf_load(table, kind, (long long)ids[row] * k + column);
  tf_store(out, out_kind, i, v);
}
