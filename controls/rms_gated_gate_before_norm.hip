// Control: tf_rms_gated gating before the norm, rmsnorm(x * silu(z)) * weight (the other
// order flash-linear-attention's gated norm offers, norm_before_gate = False), where Qwen3-Next
// norms first: rmsnorm(x) * weight * silu(z).
#include "common.h"

#define TF_GATED_ROWS 8

extern "C" __global__ void tf_rms_gated(const void* x, int x_kind, const void* z, int z_kind, const void* weight,
                                        int weight_kind, int rows, int k, float eps, void* out, int out_kind) {
  int lane = (int)(threadIdx.x % 32);
  int row = (int)blockIdx.x * TF_GATED_ROWS + (int)(threadIdx.x / 32);
  if (row >= rows) return;
  long long base = (long long)row * k;
  float squares = 0.0f;
  for (int j = lane; j < k; j += 32) {
    float gate = tf_load(z, z_kind, base + j);
    float v = tf_load(x, x_kind, base + j) * (gate / (1.0f + expf(-gate)));   // planted: gated before the norm
    squares += v * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) squares += __shfl_xor(squares, offset);
  float inverse = rsqrtf(squares / (float)k + eps);
  for (int j = lane; j < k; j += 32) {
    float gate = tf_load(z, z_kind, base + j);
    float silu = gate / (1.0f + expf(-gate));
    tf_store(out, out_kind, base + j, tf_load(x, x_kind, base + j) * inverse * tf_load(weight, weight_kind, j) * silu);
  }
}
