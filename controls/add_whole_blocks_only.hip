// Control: tf_add that assumes rows * k is a multiple of the block: the tail past the last whole block is never written.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k / blockDim.x * blockDim.x) return;   // planted: whole blocks only
  tf_store(out, out_kind, i, tf_load(a, a_kind, i) + tf_load(b, b_kind, i));
}
