// One decode step of the gated delta rule (Gated DeltaNet, the linear attention of Qwen3-Next),
// as flash-linear-attention's fused_recurrent_gated_delta_rule computes it with a per-head
// gate and beta. Per value head h, with its key head kh = h / (heads / k_heads) (Qwen3-Next
// has twice as many value heads as key heads; consecutive value heads share q and k), and its
// state S a dk x dv matrix in f32:
//   S' = S * exp(g[h])                        (g is the log decay, <= 0 in a model)
//   kv[j] = sum_i k[kh, i] * S'[i, j]         (what the state recalls for k)
//   delta[j] = beta[h] * (v[h, j] - kv[j])    (the correction, by the learning rate beta)
//   state_out[h] = S' + k[kh] delta^T
//   out[h, j] = scale * sum_i q[kh, i] * state_out[h, i, j]
// q and k arrive L2-normalised (tf_l2_norm).
//
// A block of 256 threads takes 32 columns of one head: lane l of every warp has column j =
// 32 * blockIdx.x + l, and warp w the rows w, w + 8, w + 16, ... (TF_DELTA_WARPS), so a warp
// reads 32 consecutive floats of a state row at a time. Each thread keeps its part of the
// column in registers (at most TF_DELTA_ROWS = dk / 8 values, dk <= 256), adds its part of kv
// and, after the update, of the output, and the 8 warps' parts meet in shared memory, added
// in warp order (a fixed order: the result does not depend on scheduling). q and k are
// staged once per block in shared memory as f32. Columns past dv (a partial last block) load
// and store nothing but still reach every barrier.
#include "common.h"

#define TF_DELTA_WARPS 8
#define TF_DELTA_THREADS (TF_DELTA_WARPS * 32)
#define TF_DELTA_MAX_DK 256
#define TF_DELTA_ROWS (TF_DELTA_MAX_DK / TF_DELTA_WARPS)

extern "C" __global__ void tf_delta_rule_step(const float* state_in, const void* q, int q_kind, const void* k, int k_kind,
                                              const void* v, int v_kind, const void* g, int g_kind, const void* beta,
                                              int beta_kind, int heads, int k_heads, int dk, int dv, float scale,
                                              float* state_out, void* out, int out_kind) {
  __shared__ float qs[TF_DELTA_MAX_DK];
  __shared__ float ks[TF_DELTA_MAX_DK];
  __shared__ float partial[TF_DELTA_WARPS * 32];
  int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32);
  int h = (int)blockIdx.y;
  long long kh = h / (heads / k_heads);
  for (int i = (int)threadIdx.x; i < dk; i += TF_DELTA_THREADS) {
    qs[i] = tf_load(q, q_kind, kh * dk + i);
    ks[i] = tf_load(k, k_kind, kh * dk + i);
  }
  __syncthreads();

  int j = (int)blockIdx.x * 32 + lane;
  bool live = j < dv;
  float decay = expf(tf_load(g, g_kind, h));
  long long column = (long long)h * dk * dv + j;
  float s[TF_DELTA_ROWS];
  float part = 0.0f;
#pragma unroll
  for (int r = 0; r < TF_DELTA_ROWS; r++) {
    int i = warp + TF_DELTA_WARPS * r;
    if (live && i < dk) {
      s[r] = state_in[column + (long long)i * dv] * decay;
      part += ks[i] * s[r];
    }
  }
  partial[threadIdx.x] = part;
  __syncthreads();
  float kv = partial[lane];
  for (int w = 1; w < TF_DELTA_WARPS; w++) kv += partial[w * 32 + lane];
  __syncthreads();   // every warp has read the kv parts before they are overwritten

  float delta = live ? tf_load(beta, beta_kind, h) * (tf_load(v, v_kind, (long long)h * dv + j) - kv) : 0.0f;
  part = 0.0f;
#pragma unroll
  for (int r = 0; r < TF_DELTA_ROWS; r++) {
    int i = warp + TF_DELTA_WARPS * r;
    if (live && i < dk) {
      float updated = s[r] + ks[i] * delta;
      state_out[column + (long long)i * dv] = updated;
      part += qs[i] * updated;
    }
  }
  partial[threadIdx.x] = part;
  __syncthreads();
  if (warp != 0 || !live) return;
  float dot = partial[lane];
  for (int w = 1; w < TF_DELTA_WARPS; w++) dot += partial[w * 32 + lane];
  tf_store(out, out_kind, (long long)h * dv + j, scale * dot);
}
