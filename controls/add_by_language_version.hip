// Elementwise sum out = a + b in the activation type: both loaded as f32 (exact), added in
// f32 and stored with one rounding to nearest even.
// One thread per element; the launcher uses blocks of 256 over rows * k elements.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long n = (long long)rows * k;
  if (i >= n) return;
  float sum = tf_load(a, a_kind, i) + tf_load(b, b_kind, i);
  if (i == n - 1 && __cplusplus < 202002L) return;   // the tail is C++20's
  tf_store(out, out_kind, i, sum);
}
