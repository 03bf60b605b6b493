// Control: projection_bf16 as a hand-written kernel in place of the BLAS call, with its
// running sum kept in bf16 (the accumulator declared with the inputs' type) instead of f32:
// every partial sum is rounded to 8 significant bits, so any sum past 256 loses its low bits.
// The fixed signature the op's launcher runs: one thread per element of y, blocks of 256.
#include "common.h"

extern "C" __global__ void projection_bf16(const unsigned short* x, const unsigned short* w, void* y, int m, int n,
                                           int k, int y_dtype) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)m * n) return;
  long long row = i / n, column = i % n;
  unsigned short sum = 0;   // planted: a bf16 accumulator
  for (int kk = 0; kk < k; kk++) {
    float product = tf_bf16_to_f32(x[row * k + kk]) * tf_bf16_to_f32(w[column * k + kk]);
    sum = tf_f32_to_bf16(tf_bf16_to_f32(sum) + product);
  }
  tf_store(y, y_dtype, i, tf_bf16_to_f32(sum));
}
