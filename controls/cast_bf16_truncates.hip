// Control: tf_cast whose bf16 store truncates (drops the low 16 bits) instead of rounding to
// nearest even.
#include "common.h"

extern "C" __global__ void tf_cast(const void* in, int in_kind, int rows, int k, void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float v = tf_load(in, in_kind, i);
  if (out_kind == TF_BF16) {
    ((unsigned short*)out)[i] = (unsigned short)(__float_as_uint(v) >> 16);   // planted: truncation
    return;
  }
  tf_store(out, out_kind, i, v);
}
