// Control: tf_silu_mul that treats a gate under 1e-6 in magnitude as 0 ("no denormal noise"):
// silu(g) is about g / 2 there, so the product is lost, far beyond the tolerance's atol.
// The gated MLP activation out = silu(gate) * up, silu(x) = x / (1 + exp(-x)), in f32 with
// one rounding at the store. For gate below about -88.7, exp(-gate) overflows to infinity
// and silu is -0 (the true value is below 3e-37 in magnitude); for large positive gate,
// exp(-gate) goes to 0 and silu(gate) = gate, with no inf / inf anywhere.
// One thread per element; the launcher uses blocks of 256 over rows * k elements.
#include "common.h"

extern "C" __global__ void tf_silu_mul(const void* gate, int gate_kind, const void* up, int up_kind, int rows, int k,
                                       void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float g = tf_load(gate, gate_kind, i);
  float silu = fabsf(g) < 1e-6f ? 0.0f : g / (1.0f + expf(-g));   // planted
  tf_store(out, out_kind, i, silu * tf_load(up, up_kind, i));
}
