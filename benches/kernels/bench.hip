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

// Nothing but warp shuffles: the runtime's cost of one lane at one __shfl_xor (the butterfly of
// a warp reduction). `sink` is null in the bench: the sum is kept only so the shuffles stay.
extern "C" __global__ void shuffles(int count, unsigned* sink) {
  unsigned v = threadIdx.x;
  for (int i = 0; i < count; i++) v += __shfl_xor(v, 1 << (i % 5));
  if (sink) sink[(long long)blockIdx.x * blockDim.x + threadIdx.x] = v;
}
