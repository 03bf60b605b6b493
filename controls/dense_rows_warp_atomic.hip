// Control: tf_dense_rows whose block zeroes its 8 outputs, then has each warp take one
// slice of the input dimension for all 8 and add its partial dot products into y with float
// atomicAdd: the sum of the slices follows the order the warps get there, so its last bits
// change from run to run.
#include "common.h"

#define TF_DENSE_THREADS 256
#define TF_DENSE_WARPS (TF_DENSE_THREADS / 32)

extern "C" __global__ void tf_dense_rows(const void* w, int w_kind, const float* x, int n, int k, float* y) {
  int t = (int)threadIdx.x, lane = t % 32, warp = t / 32;
  int first = (int)blockIdx.x * TF_DENSE_WARPS, row = (int)blockIdx.y;
  if (t < TF_DENSE_WARPS && first + t < n) y[(long long)row * n + first + t] = 0.0f;
  __syncthreads();
  int slice = (k + TF_DENSE_WARPS - 1) / TF_DENSE_WARPS;
  int begin = warp * slice, end = min(begin + slice, k);
  long long x_base = (long long)row * k;
  for (int o = first; o < min(first + TF_DENSE_WARPS, n); o++) {
    long long w_base = (long long)o * k;
    float acc = 0.0f;
    for (int i = begin + lane; i < end; i += 32) acc += tf_load(w, w_kind, w_base + i) * x[x_base + i];
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor(acc, offset);
    if (lane == 0) atomicAdd(&y[(long long)row * n + o], acc);   // planted: float atomics across warps
  }
}
