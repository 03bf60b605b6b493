// tf_add with one store 2^40 elements past the output (an index computed in the wrong
// units): far outside every buffer and every guard band. On the CPU the process dies
// (SIGSEGV); on a GPU the context is lost (CUDA_ERROR_ILLEGAL_ADDRESS, a HIP memory fault).
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float sum = tf_load(a, a_kind, i) + tf_load(b, b_kind, i);
  tf_store(out, out_kind, i, sum);
  if (i == (long long)rows * k - 1) tf_store(out, out_kind, i + (1LL << 40), sum);
}
