// Control: tf_add that flushes a subnormal sum to +0 ("no denormals in the residual stream"), as
// a kernel built with flush-to-zero does: sums below the smallest normal (and -0) are lost.
// Elementwise sum out = a + b in the activation type: both loaded as f32 (exact), added in
// f32 and stored with one rounding to nearest even.
// One thread per element; the launcher uses blocks of 256 over rows * k elements.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float s = tf_load(a, a_kind, i) + tf_load(b, b_kind, i);
  if (fabsf(s) < 1.17549435e-38f) s = 0.0f;   // planted
  tf_store(out, out_kind, i, s);
}
