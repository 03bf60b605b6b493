// lumen: the dot product of each pair of f16 rows, accumulated in f32 two products at a time
// (the packed dot product, v_dot2_f32_f16 on RDNA).
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

#include "lumen/common.h"

// out[r] = sum_c x[r, c] * y[r, c]; cols even. One block of 256 threads per row.
extern "C" __global__ __launch_bounds__(256) void lumen_row_dot_f16(float* out, const __half* x, const __half* y,
                                                                   long long rows, long long cols) {
  __shared__ alignas(16) float partial[256 / lumen::kWarp];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const __half2* xs = (const __half2*)(x + row * cols);
  const __half2* ys = (const __half2*)(y + row * cols);
  float acc = 0.0f;
  for (long long p = threadIdx.x; p < cols / 2; p += blockDim.x) acc = __builtin_amdgcn_fdot2(xs[p], ys[p], acc, false);
  const float total = lumen::block_sum(acc, partial);
  if (threadIdx.x == 0) out[row] = total;
}
