// Everything the kernel dialect allows (the README's kernel dialect), in one kernel, so the cuda
// backend's tests prove that the prelude maps all of it for NVRTC.
#include "common.h"

__device__ float dialect_helper(float v) { return fmaxf(fminf(v, 1e30f), -1e30f); }

extern "C" __global__ void dialect(const void* x, int x_kind, const int* ids, const unsigned* mask, long long n,
                                   float scale, float* out, int* counter, void* y, int y_kind) {
  __shared__ float stage[256];
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x + (long long)blockIdx.y * gridDim.x * blockDim.x;
  unsigned t = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
  float v = i < n ? tf_load(x, x_kind, i) * scale : -INFINITY;
  v = expf(v) + logf(fabsf(v) + 1.0f) + sqrtf(fabsf(v)) + rsqrtf(fabsf(v) + 1.0f) + floorf(v) + sinf(v) + cosf(v) + powf(fabsf(v), 0.5f);
  v = dialect_helper(v);
  stage[t % 256] = v;
  __syncthreads();
  float r = stage[(t + 1) % 256];
  r += __shfl_xor(r, 16) + __shfl_xor(r, 8, 16) + __shfl_down(r, 1) + __shfl_up(r, 1) + __shfl(r, 0);
  int k = __shfl_xor((int)t, 1) + __shfl_down((int)t, 2, 16);
  unsigned long long b = __ballot(r > 0.0f);
  int votes = __any(r > 0.0f) + __all(r > 0.0f);
  unsigned bits = __float_as_uint(r) ^ (mask[0] & 1u);
  r = __uint_as_float(bits);
  long long big = max((long long)k, i) + min(1LL, n);
  int small = min(k, votes) + max(ids[0], 0);
  unsigned u = max(t, 1u) + min(t, 2u);
  atomicAdd(counter, small + (int)(b & 1ull) + (int)(big & 1) + (int)u);
  atomicAdd(out, r);
  if (i < n) tf_store(y, y_kind, i, r + (float)warpSize);
  if (i < n) out[i + 1] = tf_bf16_to_f32(tf_f32_to_bf16(r)) + tf_f16_to_f32(tf_f32_to_f16(r));
}
