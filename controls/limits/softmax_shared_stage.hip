// Limits control (sm_90): tf_softmax_stats staging its tile of scores in a 40 KiB shared array
// (61 KiB of LDS with the reduction buffer), far over the gfx1201 LDS budget. Each thread
// reads the same scores in the same order as the original, so results are bit-identical.
// (clang refuses static LDS over 64 KiB for gfx1201 at compile time: "local memory (66560)
// exceeds limit (65536)", so an over-budget control has to stay under that.)
#include "common.h"

#define TF_STATS_THREADS 256
#define TF_STAGE_FLOATS (40 * TF_STATS_THREADS)   // 10240 floats = 40 KiB, under the 48 KiB static limit of sm_90

extern "C" __global__ void tf_softmax_stats(const float* scores, int keys, int tile, float* tile_max, float* tile_sum) {
  __shared__ float partial[TF_STATS_THREADS];
  __shared__ float stage[TF_STAGE_FLOATS];   // planted: the whole tile staged in LDS "to read scores once"
  unsigned t = threadIdx.x;
  int tile_index = blockIdx.x, row = blockIdx.y, tiles = gridDim.x;
  const float* s = scores + (long long)row * keys;
  int begin = tile_index * tile;
  int end = min(begin + tile, keys);

  float m = -INFINITY;
  for (int chunk = begin; chunk < end; chunk += TF_STAGE_FLOATS) {
    int chunk_end = min(chunk + TF_STAGE_FLOATS, end);
    for (int j = chunk + (int)t; j < chunk_end; j += TF_STATS_THREADS) stage[j - chunk] = s[j];
    __syncthreads();
    for (int j = chunk + (int)t; j < chunk_end; j += TF_STATS_THREADS) m = fmaxf(m, stage[j - chunk]);
    __syncthreads();
  }
  partial[t] = m;
  __syncthreads();
  for (unsigned half = TF_STATS_THREADS / 2; half > 0; half >>= 1) {
    if (t < half) partial[t] = fmaxf(partial[t], partial[t + half]);
    __syncthreads();
  }
  float tile_maximum = partial[0];
  __syncthreads();

  float sum = 0.0f;
  for (int chunk = begin; chunk < end; chunk += TF_STAGE_FLOATS) {
    int chunk_end = min(chunk + TF_STAGE_FLOATS, end);
    for (int j = chunk + (int)t; j < chunk_end; j += TF_STATS_THREADS) stage[j - chunk] = s[j];
    __syncthreads();
    for (int j = chunk + (int)t; j < chunk_end; j += TF_STATS_THREADS) sum += expf(stage[j - chunk] - tile_maximum);
    __syncthreads();
  }
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
