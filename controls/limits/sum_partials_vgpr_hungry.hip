// Limits control: tf_sum_partials holding 64 output columns per thread in registers, so
// its VGPR count goes far over the gfx1201 budget while its results stay bit-identical.
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
#define TF_HUNGRY_COLUMNS 64

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
  // planted: every thread keeps TF_HUNGRY_COLUMNS accumulators (columns j0, j0 + 256, ...)
  // live across the tile loop, fully unrolled, "to reuse each weight load". Same sums in
  // the same order as the original, so only the register count changes.
  for (int j0 = (int)t; j0 < d; j0 += TF_COMBINE_THREADS * TF_HUNGRY_COLUMNS) {
    float acc[TF_HUNGRY_COLUMNS];
#pragma unroll
    for (int c = 0; c < TF_HUNGRY_COLUMNS; c++) acc[c] = 0.0f;
    for (int i = 0; i < tiles; i++) {
      float w = weight[i];
      const float* tile_row = rows + (long long)i * d;
#pragma unroll
      for (int c = 0; c < TF_HUNGRY_COLUMNS; c++) {
        int j = j0 + c * TF_COMBINE_THREADS;
        if (j < d) acc[c] += w * tile_row[j];
      }
    }
#pragma unroll
    for (int c = 0; c < TF_HUNGRY_COLUMNS; c++) {
      int j = j0 + c * TF_COMBINE_THREADS;
      if (j < d) tf_store(out, out_kind, (long long)row * d + j, acc[c] / denominator);
    }
  }
}
