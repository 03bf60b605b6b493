// Control: tf_softmax_stats whose running max starts at 0 instead of -INFINITY: a tile whose
// scores are all negative reports 0 as its max (and its sum is off by exp(max)).
//
// Per-tile softmax statistics for split-K attention decode: for each row of scores and
// each tile of `tile` keys, the running max and the sum of exp(score - max) over the
// tile's keys (keys past `keys` are not part of the last tile).
// One block of 256 threads per (tile, row); block reductions through shared memory.
#include "common.h"

#define TF_STATS_THREADS 256

extern "C" __global__ void tf_softmax_stats(const float* scores, int keys, int tile, float* tile_max, float* tile_sum) {
  __shared__ float partial[TF_STATS_THREADS];
  unsigned t = threadIdx.x;
  int tile_index = blockIdx.x, row = blockIdx.y, tiles = gridDim.x;
  const float* s = scores + (long long)row * keys;
  int begin = tile_index * tile;
  int end = min(begin + tile, keys);

  float m = 0.0f;   // planted
  for (int j = begin + (int)t; j < end; j += TF_STATS_THREADS) m = fmaxf(m, s[j]);
  partial[t] = m;
  __syncthreads();
  for (unsigned half = TF_STATS_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) partial[t] = fmaxf(partial[t], partial[t + half]);
    __syncthreads();
  }
  float tile_maximum = partial[0];
  __syncthreads();

  float sum = 0.0f;
  for (int j = begin + (int)t; j < end; j += TF_STATS_THREADS) sum += expf(s[j] - tile_maximum);
  partial[t] = sum;
  __syncthreads();
  for (unsigned half = TF_STATS_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) partial[t] += partial[t + half];
    __syncthreads();
  }
  if (t == 0) {
    tile_max[(long long)row * tiles + tile_index] = tile_maximum;
    tile_sum[(long long)row * tiles + tile_index] = partial[0];
  }
}
