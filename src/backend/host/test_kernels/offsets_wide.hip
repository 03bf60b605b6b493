// The same row copy with its offset kept in 64 bits: nothing for the static checks.
extern "C" __global__ void wide_copy(const float* x, float* y, int k) {
  long long base = (long long)blockIdx.x * k;
  if ((int)threadIdx.x < k) y[base + threadIdx.x] = x[base + threadIdx.x];
}
