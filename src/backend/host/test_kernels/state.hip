// State that outlives a launch (src/backend/host/tests.rs): a launch counter and a
// function-local static, each named with its line by the host build's static check.

__device__ unsigned launches;

__device__ int calls_so_far() {
  static int calls = 0;
  return calls++;
}

// A row copy (rows of k) that also counts its launches and its first thread's calls.
extern "C" __global__ void counted(const float* x, float* y, int k) {
  long long base = (long long)blockIdx.x * k;
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(&launches, (unsigned)calls_so_far() * 0u + 1u);
  if ((int)threadIdx.x < k) y[base + threadIdx.x] = x[base + threadIdx.x];
}
