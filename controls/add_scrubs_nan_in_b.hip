// Control: tf_add that replaces a NaN in b (the branch output) by 0, so that it "cannot poison
// the residual stream": a NaN in b alone gives a instead of NaN. Planted in every input at
// once, a's own NaNs hide it.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float bv = tf_load(b, b_kind, i);
  if (bv != bv) bv = 0.0f;   // planted
  tf_store(out, out_kind, i, tf_load(a, a_kind, i) + bv);
}
