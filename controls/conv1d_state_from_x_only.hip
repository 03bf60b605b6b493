// Control: tf_conv1d_causal taking the next state from x's last width - 1 rows alone, as if
// every call had at least that many tokens. A decode step (one token, three state rows) then
// reads two rows before x's start instead of shifting them up from state_in.
#include "common.h"

__device__ __forceinline__ float tf_conv_input(const void* x, int x_kind, const void* state, int state_kind,
                                               long long m, int kept, int channels, int c) {
  if (m < kept) return tf_load(state, state_kind, m * channels + c);
  return tf_load(x, x_kind, (m - kept) * channels + c);
}

extern "C" __global__ void tf_conv1d_causal(const void* x, int x_kind, const void* weight, int weight_kind,
                                            const void* bias, int bias_kind, int has_bias, const void* state_in,
                                            int state_kind, int tokens, int channels, int width, int silu, void* out,
                                            int out_kind, void* state_out) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int kept = width - 1;
  if (i >= (long long)(tokens + kept) * channels) return;
  long long row = i / channels;
  int c = (int)(i % channels);
  if (row >= tokens) {
    float v = tf_load(x, x_kind, i - (long long)kept * channels);   // planted: x's row tokens - kept + r, even before x
    tf_store(state_out, state_kind, i - (long long)tokens * channels, v);
    return;
  }
  float acc = has_bias ? tf_load(bias, bias_kind, c) : 0.0f;
  for (int tap = 0; tap < width; tap++) {
    float w = tf_load(weight, weight_kind, (long long)c * width + tap);
    acc += w * tf_conv_input(x, x_kind, state_in, state_kind, row + tap, kept, channels, c);
  }
  if (silu) acc = acc / (1.0f + expf(-acc));
  tf_store(out, out_kind, i, acc);
}
