// Control: tf_add that skips the add when b is zero and stores a as is ("nothing to add"): -0
// plus +0 gives -0 where IEEE addition (round to nearest even) gives +0.
// Elementwise sum out = a + b in the activation type: both loaded as f32 (exact), added in
// f32 and stored with one rounding to nearest even.
// One thread per element; the launcher uses blocks of 256 over rows * k elements.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float av = tf_load(a, a_kind, i), bv = tf_load(b, b_kind, i);
  tf_store(out, out_kind, i, bv == 0.0f ? av : av + bv);   // planted
}
