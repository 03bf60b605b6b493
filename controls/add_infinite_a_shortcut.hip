// Control: tf_add that stores an infinite a as is, without adding b ("inf + x is inf"): inf +
// -inf gives inf instead of NaN, and inf + NaN gives inf.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float av = tf_load(a, a_kind, i);
  if ((__float_as_uint(av) << 1) == 0xff000000u) {   // planted: an infinite a wins
    tf_store(out, out_kind, i, av);
    return;
  }
  tf_store(out, out_kind, i, av + tf_load(b, b_kind, i));
}
