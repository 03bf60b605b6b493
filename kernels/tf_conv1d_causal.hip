// Causal depthwise conv1d over a kept state, the short convolution of a gated delta-net layer
// (Qwen3-Next: width 4 over the concatenated q, k and v projections, then silu). Each channel
// has its own `width` taps. The sequence the taps run over is the state's width - 1 rows (the
// previous call's last inputs, oldest first) followed by the tokens of x:
//   e = [state_in; x],  out[t, c] = bias[c] + sum_i weight[c, i] * e[t + i, c]  (then silu)
// so token t's window ends at itself and reaches width - 1 tokens back, into the state for
// the first tokens. state_out is the last width - 1 rows of e, the next call's state: when
// there are fewer tokens than that (a decode step of one token), part of it comes from
// state_in, shifted up. The state is a separate input and output (an engine updates it in
// place), in one dtype, and x's rows are stored into it rounded to that dtype.
//
// One thread per element of the tokens + width - 1 rows of channels: rows below `tokens` are
// outputs, the rest state_out. Threads run along channels, so neighbours read neighbouring
// elements. The taps are added in order onto the bias in f32, and the bias is skipped (not
// read) when `has_bias` is 0; silu(v) = v / (1 + exp(-v)) when `silu` is 1.
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
    // state_out row r is e's row tokens + r
    float v = tf_conv_input(x, x_kind, state_in, state_kind, row, kept, channels, c);
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
