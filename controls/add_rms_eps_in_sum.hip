// Control: tf_add_rms with eps misplaced inside the mean: (sum + eps) / k, so eps counts k times
// less. On rows whose mean square is far above eps the error is under a millionth; the
// all-zero row stays finite (eps / k > 0); only a row whose mean square is near eps shows it.
//
// Fused residual add + RMSNorm: sum = x + residual (the new residual stream, stored in its
// type) and out = sum / sqrt(mean(sum^2) + eps) * weight, where the norm takes the f32 sum
// before the store rounds it. One block of 256 threads per row, reduced as in tf_rms (warp
// shuffle butterfly, then the warp sums in warp order through shared memory). The second
// pass re-reads x and residual, so `sum` must not alias them.
#include "common.h"

#define TF_ADD_RMS_THREADS 256
#define TF_ADD_RMS_WARPS (TF_ADD_RMS_THREADS / 32)

__device__ float tf_add_rms_block_sum(float v, float* scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
  unsigned t = threadIdx.x;
  if (t % 32 == 0) scratch[t / 32] = v;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < TF_ADD_RMS_WARPS; w++) total += scratch[w];
  return total;
}

extern "C" __global__ void tf_add_rms(const void* x, int x_kind, const void* residual, int residual_kind,
                                      const void* weight, int weight_kind, int k, float eps, void* sum, int sum_kind,
                                      void* out, int out_kind) {
  __shared__ float scratch[TF_ADD_RMS_WARPS];
  long long row = (long long)blockIdx.x * k;
  float squares = 0.0f;
  for (int j = (int)threadIdx.x; j < k; j += TF_ADD_RMS_THREADS) {
    float v = tf_load(x, x_kind, row + j) + tf_load(residual, residual_kind, row + j);
    tf_store(sum, sum_kind, row + j, v);
    squares += v * v;
  }
  float inverse = rsqrtf((tf_add_rms_block_sum(squares, scratch) + eps) / (float)k);   // planted
  for (int j = (int)threadIdx.x; j < k; j += TF_ADD_RMS_THREADS) {
    float v = tf_load(x, x_kind, row + j) + tf_load(residual, residual_kind, row + j);
    tf_store(out, out_kind, row + j, v * inverse * tf_load(weight, weight_kind, j));
  }
}
