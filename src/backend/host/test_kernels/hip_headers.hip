// The HIP header shims (kernels/hip-headers) on the host: conversions, f16 arithmetic, the
// packed dot product, a template kernel named by its instantiation, `__shared__ alignas`.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>
#include <hip/hip_bfloat16.h>

// x[i] converted each way, as bits
extern "C" __global__ void conversions(const float* x, int n, unsigned short* f16, unsigned short* f16_rz, unsigned short* bf16,
                                       unsigned short* hip_bf16) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  f16[i] = __half_as_ushort(__float2half(x[i]));
  f16_rz[i] = __half_as_ushort(__float2half_rz(x[i]));
  bf16[i] = hip_bfloat16(x[i]).data;
  hip_bf16[i] = __bfloat16_as_ushort(__float2bfloat16(x[i]));
}

// out[5 i + k]: a + b, a - b, a * b, a / b, fma(a, b, c) in f16; dot[i] the packed dot
// product of (a, c) and (b, a) added to c
extern "C" __global__ void half_ops(const unsigned short* a, const unsigned short* b, const unsigned short* c, int n,
                                    unsigned short* out, float* dot) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  __half x = __ushort_as_half(a[i]), y = __ushort_as_half(b[i]), z = __ushort_as_half(c[i]);
  __half2 sum = __hadd2(__halves2half2(x, y), __halves2half2(y, z));
  out[5 * i + 0] = __half_as_ushort(__low2half(sum));
  out[5 * i + 1] = __half_as_ushort(x - y);
  out[5 * i + 2] = __half_as_ushort(__low2half(__hmul2(__halves2half2(x, z), __halves2half2(y, z))));
  out[5 * i + 3] = __half_as_ushort(__hdiv(x, y));
  out[5 * i + 4] = __half_as_ushort(__hfma(x, y, z));
  dot[i] = __builtin_amdgcn_fdot2(__halves2half2(x, z), __halves2half2(y, x), (float)z, false);
}

// y[i] = x[i] * N, staged through an aligned shared tile
template <class T, int N>
__global__ void scale(const T* x, T* y, int n) {
  __shared__ alignas(16) T tile[64];
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  tile[threadIdx.x] = i < n ? x[i] : T(0);
  __syncthreads();
  if (i < n) y[i] = T((float)tile[threadIdx.x] * (float)N);
}
