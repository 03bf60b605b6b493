// Dense rows: y[row, o] = dot(W[o, :], x[row, :]), the matrix-vector product of a decode step
// for small output counts. W in f32, f16 or bf16; x and y in f32; f32 accumulation. One warp
// per output value: its lanes take the input dimension in strides of 32 and a shuffle
// butterfly sums their partials. Blocks of 256 threads hold 8 outputs; the grid is
// (ceil(n / 8), rows).
#include "common.h"

#define TF_DENSE_THREADS 256
#define TF_DENSE_WARPS (TF_DENSE_THREADS / 32)

extern "C" __global__ void tf_dense_rows(const void* w, int w_kind, const float* x, int n, int k, float* y) {
  int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32);
  int o = (int)blockIdx.x * TF_DENSE_WARPS + warp;
  int row = (int)blockIdx.y;
  if (o >= n) return;   // the whole warp leaves together
  long long w_base = (long long)o * k, x_base = (long long)row * k;
  float acc = 0.0f;
  for (int i = lane; i < k; i += 32) acc += tf_load(w, w_kind, w_base + i) * x[x_base + i];
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor(acc, offset);
  if (lane == 0) y[(long long)row * n + o] = acc;
}
