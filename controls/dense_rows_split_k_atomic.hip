// Control: tf_dense_rows as a split-K kernel: up to 4 blocks of a row each take one slice of
// the input dimension for every output (the rest of the grid has nothing to do) and add
// their partial dot products into y with float atomicAdd. Nothing zeroes y first (the
// kernel assumes a memset that the launcher never does), and the adds land in whatever
// order the blocks run.
#include "common.h"

#define TF_DENSE_THREADS 256
#define TF_DENSE_WARPS (TF_DENSE_THREADS / 32)
#define TF_DENSE_SPLITS 4

extern "C" __global__ void tf_dense_rows(const void* w, int w_kind, const float* x, int n, int k, float* y) {
  int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32);
  int row = (int)blockIdx.y;
  int splits = min((int)gridDim.x, TF_DENSE_SPLITS), slice = (k + splits - 1) / splits;
  if ((int)blockIdx.x >= splits) return;
  int begin = (int)blockIdx.x * slice, end = min(begin + slice, k);
  long long x_base = (long long)row * k;
  for (int o = warp; o < n; o += TF_DENSE_WARPS) {
    long long w_base = (long long)o * k;
    float acc = 0.0f;
    for (int i = begin + lane; i < end; i += 32) acc += tf_load(w, w_kind, w_base + i) * x[x_base + i];
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor(acc, offset);
    if (lane == 0) atomicAdd(&y[(long long)row * n + o], acc);   // planted: across blocks, onto an unzeroed y
  }
}
