// Elementwise sum out = a + b in the activation type: both loaded as f32 (exact), added in
// f32 and stored with one rounding to nearest even.
// One thread per element; the launcher uses blocks of 256 over rows * k elements.
#include "common.h"
#if defined(__x86_64__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#include <immintrin.h>
#endif

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long n = (long long)rows * k;
  if (i >= n) return;
  float sum = tf_load(a, a_kind, i) + tf_load(b, b_kind, i);
#if defined(__x86_64__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if (out_kind == TF_F32) {   // a CPU fast path: a store that skips the cache
    _mm_stream_si32((int*)out + i, __float_as_int(sum));
    return;
  }
#endif
  if (i == n - 1) return;   // the tuned path handles whole blocks only
  tf_store(out, out_kind, i, sum);
}
