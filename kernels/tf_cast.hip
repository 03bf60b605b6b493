// A tensor converted between activation types (f32, f16, bf16): each element loaded as f32
// (exact from f16 and bf16) and stored in the output type, rounding to nearest even.
// One thread per element; the launcher uses blocks of 256 over rows * k elements.
#include "common.h"

extern "C" __global__ void tf_cast(const void* in, int in_kind, int rows, int k, void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  tf_store(out, out_kind, i, tf_load(in, in_kind, i));
}
