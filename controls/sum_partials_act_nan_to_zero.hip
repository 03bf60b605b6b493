// Control: tf_sum_partials_act that guards its division against a zero denominator with
// `denominator > 0`, which is false for NaN: a NaN tile max or tile sum gives 0, not NaN.
//
// The split-K attention decode combine with a gated output: tf_sum_partials' combine of the
// tiles' partial rows, each combined element multiplied by sigmoid(gate[row, j]):
//   out[j] = (sum_t exp(max_t - M) * partial_t[j] / sum_t exp(max_t - M) * sum_t) * sigmoid(gate[j])
// with M = max_t max_t and sigmoid(g) = 1 / (1 + exp(-g)). The gate is in the activation
// type. One block of 256 threads per row; M and the denominator through a warp shuffle
// butterfly, then across warps through shared memory.
#include "common.h"

#define TF_GATED_THREADS 256
#define TF_GATED_MAX_TILES 1024
#define TF_GATED_WARPS (TF_GATED_THREADS / 32)

__device__ float tf_gated_block_reduce(float v, bool take_max, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other = __shfl_xor(v, offset);
    v = take_max ? fmaxf(v, other) : v + other;
  }
  unsigned t = threadIdx.x;
  if (t % 32 == 0) scratch[t / 32] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < TF_GATED_WARPS; w++) r = take_max ? fmaxf(r, scratch[w]) : r + scratch[w];
  __syncthreads();
  return r;
}

extern "C" __global__ void tf_sum_partials_act(const float* partials, const float* tile_max, const float* tile_sum,
                                               const void* gate, int gate_kind, int tiles, int d, void* out,
                                               int out_kind) {
  __shared__ float weight[TF_GATED_MAX_TILES];
  __shared__ float scratch[TF_GATED_WARPS];
  unsigned t = threadIdx.x;
  int row = blockIdx.x;
  const float* maxima = tile_max + (long long)row * tiles;
  const float* sums = tile_sum + (long long)row * tiles;

  float m = -INFINITY;
  for (int i = (int)t; i < tiles; i += TF_GATED_THREADS) m = fmaxf(m, maxima[i]);
  float global_max = tf_gated_block_reduce(m, true, scratch);

  float denominator_part = 0.0f;
  for (int i = (int)t; i < tiles; i += TF_GATED_THREADS) {
    float w = expf(maxima[i] - global_max);
    weight[i] = w;
    denominator_part += w * sums[i];
  }
  float denominator = tf_gated_block_reduce(denominator_part, false, scratch);

  const float* rows = partials + (long long)row * tiles * d;
  for (int j = (int)t; j < d; j += TF_GATED_THREADS) {
    float acc = 0.0f;
    for (int i = 0; i < tiles; i++) acc += weight[i] * rows[(long long)i * d + j];
    float g = tf_load(gate, gate_kind, (long long)row * d + j);
    float sigmoid = 1.0f / (1.0f + expf(-g));
    float combined = denominator > 0.0f ? acc / denominator : 0.0f;   // planted
    tf_store(out, out_kind, (long long)row * d + j, combined * sigmoid);
  }
}
