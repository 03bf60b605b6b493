// A kernel whose host build stores through an x86 intrinsic (a non-temporal store the
// instrumentation does not see) from a helper of its own, and loads through one that is a
// plain (checked) load.
#include "common.h"
#if defined(__x86_64__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#include <immintrin.h>
static void store_bits(float* y, float v) { _mm_stream_si32((int*)y, __float_as_int(v)); }
#endif

extern "C" __global__ void stores_with_intrinsics(const float* x, float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
#if defined(__x86_64__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  __m128 v = _mm_load_ss(x + i);
  store_bits(&y[i], _mm_cvtss_f32(v));
#else
  y[i] = x[i];
#endif
}
