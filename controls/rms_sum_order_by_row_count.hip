// Planted bug (gate 5, seams): the warp sums are added starting at warp gridDim.x % 8, the
// launch's row count, and wrapping round: the same eight partial sums in another order, as a
// reduction blocked by the batch size adds them. Each order is within the contract's bound
// (gate 3 stays green) and repeats (gate 2 too), but a row computed alone, or with six others,
// rounds otherwise than in the whole batch.
#include "common.h"

#define TF_RMS_THREADS 256
#define TF_RMS_WARPS (TF_RMS_THREADS / 32)

__device__ float tf_rms_block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
  unsigned t = threadIdx.x;
  if (t % 32 == 0) scratch[t / 32] = v;
  __syncthreads();
  int first = (int)(gridDim.x % TF_RMS_WARPS);
  float total = scratch[first];
  for (int w = 1; w < TF_RMS_WARPS; w++) total += scratch[(first + w) % TF_RMS_WARPS];
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
    tf_store(out, out_kind, row + j, v * inverse * tf_load(weight, weight_kind, j));
  }
}
