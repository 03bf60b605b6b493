// Control: tf_silu_mul with silu written as x * exp(x) / (1 + exp(x)): inf / inf = NaN once exp(x) overflows (x > 88.7).
#include "common.h"

extern "C" __global__ void tf_silu_mul(const void* gate, int gate_kind, const void* up, int up_kind, int rows, int k,
                                       void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float g = tf_load(gate, gate_kind, i);
  float e = expf(g);
  float silu = g * e / (1.0f + e);   // planted: the sigmoid in the overflowing form
  tf_store(out, out_kind, i, silu * tf_load(up, up_kind, i));
}
