// Control: tf_attention_prefill with the causal mask one key late: query i also sees the key
// of the next position (the bound written as <= position + 1), which exists for every query
// but the last.
#include "common.h"

#define TF_ATTN_WARPS 8
#define TF_ATTN_THREADS (TF_ATTN_WARPS * 32)
#define TF_ATTN_KEYS 16
#define TF_ATTN_MAX_D 256
#define TF_ATTN_PER_LANE (TF_ATTN_MAX_D / 32)

extern "C" __global__ void tf_attention_prefill(const void* q, int q_kind, const void* k, int k_kind, const void* v,
                                                int v_kind, int q_len, int heads, int kv_len, int kv_heads, int d,
                                                float scale, void* out, int out_kind) {
  __shared__ float keys[TF_ATTN_KEYS * TF_ATTN_MAX_D];
  __shared__ float values[TF_ATTN_KEYS * TF_ATTN_MAX_D];
  int lane = (int)(threadIdx.x % 32);
  int h = (int)blockIdx.y;
  int kv_head = h / (heads / kv_heads);
  int first = (int)blockIdx.x * TF_ATTN_WARPS;
  int i = first + (int)(threadIdx.x / 32);
  bool active = i < q_len;
  int start = kv_len - q_len;
  int position = start + i;
  // keys up to the block's last query's position, the last key at most
  int end = start + min(first + TF_ATTN_WARPS, q_len);

  float query[TF_ATTN_PER_LANE], acc[TF_ATTN_PER_LANE];
#pragma unroll
  for (int e = 0; e < TF_ATTN_PER_LANE; e++) {
    int c = lane + 32 * e;
    query[e] = active && c < d ? tf_load(q, q_kind, ((long long)i * heads + h) * d + c) : 0.0f;
    acc[e] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;

  for (int t0 = 0; t0 < end; t0 += TF_ATTN_KEYS) {
    int count = min(TF_ATTN_KEYS, end - t0);
    __syncthreads();   // every warp is done with the previous tile
    for (int e = (int)threadIdx.x; e < count * d; e += TF_ATTN_THREADS) {
      int key = e / d, c = e % d;
      long long at = ((long long)(t0 + key) * kv_heads + kv_head) * d + c;
      keys[key * TF_ATTN_MAX_D + c] = tf_load(k, k_kind, at);
      values[key * TF_ATTN_MAX_D + c] = tf_load(v, v_kind, at);
    }
    __syncthreads();
    if (!active || t0 > position + 1) continue;
    int visible = min(count, position + 2 - t0);   // planted: one key past the query's position

    float score[TF_ATTN_KEYS];
    float tile_max = -INFINITY;
#pragma unroll
    for (int key = 0; key < TF_ATTN_KEYS; key++) {
      if (key < visible) {
        float part = 0.0f;
#pragma unroll
        for (int e = 0; e < TF_ATTN_PER_LANE; e++) {
          int c = lane + 32 * e;
          if (c < d) part += query[e] * keys[key * TF_ATTN_MAX_D + c];
        }
        for (int offset = 16; offset > 0; offset >>= 1) part += __shfl_xor(part, offset);
        score[key] = scale * part;
        tile_max = fmaxf(tile_max, score[key]);
      }
    }
    float m_new = fmaxf(m, tile_max);
    float rescale = expf(m - m_new);
    float tile_sum = 0.0f, tile_acc[TF_ATTN_PER_LANE];
#pragma unroll
    for (int e = 0; e < TF_ATTN_PER_LANE; e++) tile_acc[e] = 0.0f;
#pragma unroll
    for (int key = 0; key < TF_ATTN_KEYS; key++) {
      if (key < visible) {
        float p = expf(score[key] - m_new);
        tile_sum += p;
#pragma unroll
        for (int e = 0; e < TF_ATTN_PER_LANE; e++) {
          int c = lane + 32 * e;
          if (c < d) tile_acc[e] += p * values[key * TF_ATTN_MAX_D + c];
        }
      }
    }
    l = l * rescale + tile_sum;
#pragma unroll
    for (int e = 0; e < TF_ATTN_PER_LANE; e++) acc[e] = acc[e] * rescale + tile_acc[e];
    m = m_new;
  }

  if (!active) return;
#pragma unroll
  for (int e = 0; e < TF_ATTN_PER_LANE; e++) {
    int c = lane + 32 * e;
    if (c < d) tf_store(out, out_kind, ((long long)i * heads + h) * d + c, acc[e] / l);
  }
}
