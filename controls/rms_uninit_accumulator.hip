// Control: tf_rms whose sum of squares is left uninitialised in the threads past a short row's
// end (k < 256 leaves their loop empty): right only where the register happens to hold 0.
// RMSNorm over rows: out[r, j] = x[r, j] / sqrt(mean_j(x[r, j]^2) + eps) * weight[j], all in
// f32 with one rounding at the store. One block of 256 threads per row: each thread sums the
// squares of its strided columns, a warp shuffle butterfly adds within each warp, and the
// warp sums meet in shared memory, added in warp order by every thread (a fixed order, so
// the result does not depend on scheduling).
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
  float squares;
  for (int j = (int)threadIdx.x; j < k; j += TF_RMS_THREADS) {
    float v = tf_load(x, x_kind, row + j);
    if (j == (int)threadIdx.x) squares = v * v; else squares += v * v;
  }
  float inverse = rsqrtf(tf_rms_block_sum(squares, scratch) / (float)k + eps);
  for (int j = (int)threadIdx.x; j < k; j += TF_RMS_THREADS) {
    float v = tf_load(x, x_kind, row + j);
    tf_store(out, out_kind, row + j, v * inverse * tf_load(weight, weight_kind, j));
  }
}
