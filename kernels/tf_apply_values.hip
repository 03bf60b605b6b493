// Attention decode, probabilities times values per tile of keys (split-K): for each row and
// each tile of `tile` keys (the last tile may be short),
//   partials[row, tile, :] = sum over the tile's keys j of exp(scores[row, j] - tile_max[row, tile]) * V[j, :]
// with tile_max as tf_softmax_stats gives it; V is the value cache in f16 or bf16. The
// partial rows, tile maxima and tile sums are what tf_sum_partials combines.
// One block of 256 threads per (tile, row). The block turns up to 256 keys at a time into
// weights in shared memory, then each thread adds weight * value down its columns, keys in
// order, so every element is one sequential f32 sum.
#include "common.h"

#define TF_APPLY_THREADS 256

extern "C" __global__ void tf_apply_values(const float* scores, const float* tile_max, const void* v_cache, int v_kind,
                                           int keys, int tile, int d, float* partials) {
  __shared__ float weight[TF_APPLY_THREADS];
  int t = (int)threadIdx.x;
  int tile_index = (int)blockIdx.x, row = (int)blockIdx.y, tiles = (int)gridDim.x;
  const float* s = scores + (long long)row * keys;
  float m = tile_max[(long long)row * tiles + tile_index];
  int begin = tile_index * tile;
  int end = min(begin + tile, keys);
  float* out = partials + ((long long)row * tiles + tile_index) * d;

  for (int j0 = 0; j0 < d; j0 += TF_APPLY_THREADS) {
    int j = j0 + t;
    float acc = 0.0f;
    for (int k0 = begin; k0 < end; k0 += TF_APPLY_THREADS) {
      __syncthreads();   // the previous chunk's weights are no longer read
      int k = k0 + t;
      weight[t] = k < end ? expf(s[k] - m) : 0.0f;
      __syncthreads();
      int count = min(TF_APPLY_THREADS, end - k0);
      if (j < d) {
        for (int i = 0; i < count; i++) acc += weight[i] * tf_load(v_cache, v_kind, (long long)(k0 + i) * d + j);
      }
    }
    if (j < d) out[j] = acc;
  }
}
