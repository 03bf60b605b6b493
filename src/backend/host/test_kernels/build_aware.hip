// A kernel that tells the host build from a GPU build without naming a target: the host
// build's wrapper lies beside its copy of the source, and no GPU build has one. Its last
// element is stored by the host alone.
#if __has_include("wrap.cpp")
#define KEEPS_LAST 1
#else
#define KEEPS_LAST 0
#endif

extern "C" __global__ void copies_but_the_last(const float* x, float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n || (i == n - 1 && !KEEPS_LAST)) return;
  y[i] = x[i];
}
