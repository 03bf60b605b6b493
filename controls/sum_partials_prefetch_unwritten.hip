// Faulty copy of kernels/tf_sum_partials.hip: the combine loop prefetches the next tile's
// weight before checking there is one, reading weight[tiles], a shared slot no thread of the
// block wrote. The value is never used, so no output changes: only the host backend's
// shared-memory checks see the read.
//
// The split-K attention decode combine. Each of `tiles` tiles holds a partial output row
// of width d (sum over its keys of exp(score - tile max) * value), its tile max and its
// sum of exponentials (as tf_softmax_stats gives them). The final row is
//   out[j] = sum_t exp(max_t - M) * partial_t[j] / sum_t exp(max_t - M) * sum_t,  M = max_t max_t.
// One block of 256 threads per row. The block reduces M and the denominator with a warp
// shuffle butterfly, then across warps through shared memory.
#include "common.h"

#define TF_COMBINE_THREADS 256
#define TF_COMBINE_MAX_TILES 1024
#define TF_COMBINE_WARPS (TF_COMBINE_THREADS / 32)

__device__ float tf_block_reduce(float v, bool take_max, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other = __shfl_xor(v, offset);
    v = take_max ? fmaxf(v, other) : v + other;
  }
  unsigned t = threadIdx.x;
  if (t % 32 == 0) scratch[t / 32] = v;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < TF_COMBINE_WARPS; w++) r = take_max ? fmaxf(r, scratch[w]) : r + scratch[w];
  __syncthreads();
  return r;
}

extern "C" __global__ void tf_sum_partials(const float* partials, const float* tile_max, const float* tile_sum,
                                           int tiles, int d, void* out, int out_kind) {
  __shared__ float weight[TF_COMBINE_MAX_TILES];
  __shared__ float scratch[TF_COMBINE_WARPS];
  unsigned t = threadIdx.x;
  int row = blockIdx.x;
  const float* maxima = tile_max + (long long)row * tiles;
  const float* sums = tile_sum + (long long)row * tiles;

  float m = -INFINITY;
  for (int i = (int)t; i < tiles; i += TF_COMBINE_THREADS) m = fmaxf(m, maxima[i]);
  float global_max = tf_block_reduce(m, true, scratch);

  float denominator_part = 0.0f;
  for (int i = (int)t; i < tiles; i += TF_COMBINE_THREADS) {
    float w = expf(maxima[i] - global_max);
    weight[i] = w;
    denominator_part += w * sums[i];
  }
  float denominator = tf_block_reduce(denominator_part, false, scratch);

  const float* rows = partials + (long long)row * tiles * d;
  for (int j = (int)t; j < d; j += TF_COMBINE_THREADS) {
    float acc = 0.0f;
    float next = weight[0];
    for (int i = 0; i < tiles; i++) {
      float w = next;
      next = weight[i + 1];
      acc += w * rows[(long long)i * d + j];
    }
    tf_store(out, out_kind, (long long)row * d + j, acc / denominator);
  }
}
