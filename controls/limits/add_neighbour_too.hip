// Limits control for --strict-limits: tf_add where each thread also adds and stores its pair
// neighbour's element (i ^ 1), which that neighbour stores too, with the same bits. Every
// result is right and the register figures stay well within budget, but they move from the
// recorded ones (gfx1201 10 -> 14 VGPRs, sm_90 14 -> 18 registers): a limit problem, red only
// when limit problems fail the run.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long n = (long long)rows * k;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long j = i ^ 1;   // planted: a second element per thread nobody asked for
  float x = tf_load(a, a_kind, i) + tf_load(b, b_kind, i);
  if (j < n) tf_store(out, out_kind, j, tf_load(a, a_kind, j) + tf_load(b, b_kind, j));
  tf_store(out, out_kind, i, x);
}
