// Control: tf_cast whose f32 -> bf16 conversion keeps a NaN's sign and top payload bits without
// forcing a mantissa bit: a NaN whose payload sits only in the low 16 bits (the signaling NaN
// 0x7f800001) becomes an infinity.
#include "common.h"

extern "C" __global__ void tf_cast(const void* in, int in_kind, int rows, int k, void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float v = tf_load(in, in_kind, i);
  unsigned u = __float_as_uint(v);
  if (out_kind == TF_BF16 && (u & 0x7fffffffu) > 0x7f800000u) {   // planted: NaN, sign and payload kept by shifting
    ((unsigned short*)out)[i] = (unsigned short)(u >> 16);
    return;
  }
  tf_store(out, out_kind, i, v);
}
