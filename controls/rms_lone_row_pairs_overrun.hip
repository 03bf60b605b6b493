// Planted bug (gate 5, seams): a launch of one row (the decode path, gridDim.x == 1) stores its
// outputs two at a time, and for an odd k the last pair's second store lands one element past
// the row: past the end of a one-row output. No case's whole batch has one row, so gates 1-3
// never see it; a piece of one row does, on a GPU by the piece's guard band alone (the host's
// memory checks see the store too).
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
  if (gridDim.x == 1) {
    for (int j = 2 * (int)threadIdx.x; j < k; j += 2 * TF_RMS_THREADS) {
      float first = tf_load(x, x_kind, row + j) * inverse * tf_load(weight, weight_kind, j);
      float second = j + 1 < k ? tf_load(x, x_kind, row + j + 1) * inverse * tf_load(weight, weight_kind, j + 1) : 0.0f;
      tf_store(out, out_kind, row + j, first);
      tf_store(out, out_kind, row + j + 1, second);
    }
    return;
  }
  for (int j = (int)threadIdx.x; j < k; j += TF_RMS_THREADS) {
    float v = tf_load(x, x_kind, row + j);
    tf_store(out, out_kind, row + j, v * inverse * tf_load(weight, weight_kind, j));
  }
}
