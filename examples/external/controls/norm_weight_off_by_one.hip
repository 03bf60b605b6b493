// A control: lumen's RMS normalisation, each column scaled by the next column's weight.
#include <hip/hip_runtime.h>
#include <hip/hip_bfloat16.h>

#include "lumen/common.h"

// out[r, c] = x[r, c] / sqrt(mean_c(x[r, c]^2) + eps) * weight[c]; bf16 in and out, f32
// inside. One block of 256 threads per row.
extern "C" __global__ __launch_bounds__(256) void lumen_rms_norm_bf16(hip_bfloat16* out, const hip_bfloat16* x,
                                                                     const hip_bfloat16* weight, long long rows,
                                                                     long long cols, float eps) {
  __shared__ alignas(16) float partial[256 / lumen::kWarp];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const hip_bfloat16* in = x + row * cols;
  float squares = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = float(in[c]);
    squares += v * v;
  }
  const float total = lumen::block_sum(squares, partial);
  const float scale = 1.0f / sqrtf(total / (float)cols + eps);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    out[row * cols + c] = hip_bfloat16(float(in[c]) * scale * float(weight[c + 1]));
  }
}
