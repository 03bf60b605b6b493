// Control: tf_rms whose bf16 store truncates (keeps the top 16 bits of the f32 value) instead of
// rounding to nearest even: every result is within one bf16 unit of the right one, biased
// toward zero, which a tolerance of the bound plus one whole unit let through.
#include "common.h"

#define TF_RMS_THREADS 256
#define TF_RMS_WARPS (TF_RMS_THREADS / 32)

__device__ float tf_rms_block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
  unsigned t = threadIdx.x;
  if (t % 32 == 0) scratch[t / 32] = v;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < TF_RMS_WARPS; w++) total += scratch[w];
  return total;
}

extern "C" __global__ void tf_rms(const void* x, int x_kind, const void* weight, int weight_kind, int k, float eps,
                                  void* out, int out_kind) {
  __shared__ float scratch[TF_RMS_WARPS];
  long long row = (long long)blockIdx.x * k;
  float squares = 0.0f;
  for (int j = (int)threadIdx.x; j < k; j += TF_RMS_THREADS) {
    float v = tf_load(x, x_kind, row + j);
    squares += v * v;
  }
  float inverse = rsqrtf(tf_rms_block_sum(squares, scratch) / (float)k + eps);
  for (int j = (int)threadIdx.x; j < k; j += TF_RMS_THREADS) {
    float v = tf_load(x, x_kind, row + j);
    float r = v * inverse * tf_load(weight, weight_kind, j);
    if (out_kind == TF_BF16) ((unsigned short*)out)[row + j] = (unsigned short)(__float_as_uint(r) >> 16);   // planted
    else tf_store(out, out_kind, row + j, r);
  }
}
