// Kernels the engine's benches time on the host backend (benches/elementwise.rs, barrier.rs).

// y = a * 2 + b, one thread per element: the loop the elementwise bench also runs natively.
extern "C" __global__ void scale_add(const float* a, const float* b, float* y, int n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] * 2.0f + b[i];
}

// Nothing but barriers: the runtime's cost of one thread arriving at one __syncthreads().
extern "C" __global__ void barriers(int count) {
  for (int i = 0; i < count; i++) __syncthreads();
}
