// C math routines that store through a pointer: the host calls the C library's, whose stores
// no instrumentation sees. Each thread splits its value into a mantissa, an exponent and a whole
// part; the last thread stores the exponent and the whole part `extra` elements on, past both
// tensors' ends when `extra` is 1.
extern "C" __global__ void splits(const float* x, float* mantissa, int* exponent, float* whole, int n, int extra) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  int at = i == n - 1 ? i + extra : i;
  float fraction = frexpf(x[i], &exponent[at]);
  mantissa[i] = modff(fraction * 8.0f, &whole[at]);
}
