// A causal prefill attention tile: q_len queries, the last q_len of kv_len positions (a prompt
// chunk after start = kv_len - q_len cached tokens, its own keys and values already appended:
// flash-attention's causal mask aligned to the bottom right), against keys and values
// 0 .. kv_len - 1 of their KV head (grouped-query: query head h reads KV head
// h / (heads / kv_heads), as consecutive query heads share one). Query i sees keys 0 .. start + i:
//   out[i, h] = sum_j softmax_j(scale * q[i, h] . k[j]) v[j]
//
// Flash-attention's online softmax, one warp per query: keys come in tiles of 16
// (TF_ATTN_KEYS), staged by the whole block in shared memory as f32. For each tile a warp
// computes the scores of the keys its query sees (each lane holds d / 32 of the query's
// elements, and a shuffle butterfly adds the lanes' parts, so every lane has every score),
// raises its running max m to the tile's, rescales what it has summed so far by exp(m_old -
// m_new), and adds the tile's exp(score - m_new) and their sums with the values, formed per
// tile, then added to the running ones (as flash-attention adds a tile's P V). Every exp is
// of a number <= 0: no overflow whatever the scores. The first tile's rescale is
// exp(-inf) = 0 of sums that are 0. The output is the value sum over the weight sum, stored
// once in the activation type. Each lane holds d / 32 of the output elements.
//
// A block of 256 threads takes 8 consecutive queries (TF_ATTN_WARPS) of one head; it stages
// the keys up to its last query's position, and each warp skips the tiles past its own (a
// query past q_len computes nothing but still stages and reaches every barrier). d <= 256
// (TF_ATTN_MAX_D, Qwen3-Next's head size): 32 KiB of shared memory.
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
    if (!active || t0 > position) continue;
    int visible = min(count, position + 1 - t0);

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
