// Control: tf_score_keys with a sparsity shortcut that skips the terms whose query element is 0:
// a 0 in the query facing an infinite or NaN key element never reaches the score, which IEEE
// arithmetic (0 * inf = NaN) and the oracle make NaN.
// Attention decode scores over a KV cache: scores[row, key] = scale * dot(q[row, :], K[key, :]).
// q is in the activation type (f32, f16 or bf16), the cache in f16 or bf16; the dot product
// accumulates in f32. One warp per (row, key): its lanes take the head dimension in strides
// of 32 and a shuffle butterfly sums their partials. Blocks of 256 threads hold 8 keys;
// the grid is (ceil(keys / 8), rows).
#include "common.h"

#define TF_SCORE_THREADS 256
#define TF_SCORE_WARPS (TF_SCORE_THREADS / 32)

extern "C" __global__ void tf_score_keys(const void* q, int q_kind, const void* k_cache, int k_kind, int keys, int d,
                                         float scale, float* scores) {
  int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32);
  int key = (int)blockIdx.x * TF_SCORE_WARPS + warp;
  int row = (int)blockIdx.y;
  if (key >= keys) return;   // the whole warp leaves together
  long long q_base = (long long)row * d, k_base = (long long)key * d;
  float acc = 0.0f;
  for (int i = lane; i < d; i += 32) {
    float qv = tf_load(q, q_kind, q_base + i);
    if (qv != 0.0f) acc += qv * tf_load(k_cache, k_kind, k_base + i);   // planted: zero query entries skipped
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor(acc, offset);
  if (lane == 0) scores[(long long)row * keys + key] = scale * acc;
}
