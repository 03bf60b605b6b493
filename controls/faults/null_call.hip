// tf_add where one thread calls through a function pointer that is null (a dispatch table's
// entry never filled): no memory access a check could stop first, so on the CPU the process
// dies (SIGSEGV) at the call.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  float sum = tf_load(a, a_kind, i) + tf_load(b, b_kind, i);
  tf_store(out, out_kind, i, sum);
  float (*volatile finish)(float) = nullptr;
  if (i == (long long)rows * k - 1) tf_store(out, out_kind, i, finish(sum));
}
