// Control: tf_apply_values that exponentiates through exp2f, (s - m) * log2(e), with log2(e)
// mistyped as 1.4425f: every weight exp(s - m) is off by 1.35e-4 |s - m| relative (up to
// 1.4e-3), partials by 1.1e-3 to 2.2e-3 at most per case: inside the old atol 3e-3, outside
// the derived 9e-4.
//
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
      weight[t] = k < end ? exp2f((s[k] - m) * 1.4425f) : 0.0f;   // planted: log2(e) = 1.44270
      __syncthreads();
      int count = min(TF_APPLY_THREADS, end - k0);
      if (j < d) {
        for (int i = 0; i < count; i++) acc += weight[i] * tf_load(v_cache, v_kind, (long long)(k0 + i) * d + j);
      }
    }
    if (j < d) out[j] = acc;
  }
}
