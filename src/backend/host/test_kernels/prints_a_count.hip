// A kernel that prints, and one whose printf stores the count of characters printed through
// `%n` into its output (no GPU's printf stores it). No GPU build here has printf: the calls are
// the host's alone.
extern "C" __global__ void prints(float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if (i == 0) printf("prints %d\n", n);
#endif
  y[i] = 1.0f;
}

extern "C" __global__ void counts_through_printf(int* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  y[i] = 0;
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  printf("%d%n", i, &y[i]);
#endif
}
