// Control: tf_delta_rule_step recalling k from the state before its decay (kv = k^T S, not
// k^T S exp(g)), an easy slip since the update then adds to the decayed state: the correction
// is too small wherever g < 0.
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
      s[r] = state_in[column + (long long)i * dv];
      part += ks[i] * s[r];   // planted: the undecayed state
      s[r] *= decay;
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
