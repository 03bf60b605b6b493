// lumen: out = a * alpha + b, elementwise, one rounding per element (a fused multiply-add in
// the element type). VEC elements per thread: VEC = 2 moves halves in pairs, as __half2.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>

namespace lumen {

__device__ __forceinline__ float fma_one(float a, float alpha, float b) { return fmaf(a, alpha, b); }
__device__ __forceinline__ __half fma_one(__half a, float alpha, __half b) { return __hfma(a, __float2half(alpha), b); }

// two neighbours at once; halves through one packed __half2 operation
__device__ __forceinline__ void fma_two(__half* out, const __half* a, const __half* b, float alpha) {
  *(__half2*)out = __hfma2(*(const __half2*)a, __float2half2_rn(alpha), *(const __half2*)b);
}
__device__ __forceinline__ void fma_two(float* out, const float* a, const float* b, float alpha) {
  out[0] = fma_one(a[0], alpha, b[0]);
  out[1] = fma_one(a[1], alpha, b[1]);
}

}  // namespace lumen

template <typename T, int VEC>
__global__ void lumen_scale_add(T* out, const T* a, const T* b, float alpha, long long n) {
  const long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (VEC == 2 && first + 1 < n) {
    lumen::fma_two(out + first, a + first, b + first, alpha);
    return;
  }
  for (int i = 0; i < VEC; i++) {
    if (first + i < n) out[first + i] = lumen::fma_one(a[first + i], alpha, b[first + i]);
  }
}
