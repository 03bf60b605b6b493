// tf_add whose first thread waits for a flag that nothing ever sets (a spin-wait on a
// value another block was meant to publish): the kernel never returns, on any backend.
#include "common.h"

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * k) return;
  if (i == 0) {
    // the f32 record's out[0]: written by this thread alone, and only after the wait
    volatile unsigned* flag = (volatile unsigned*)out;
    while (*flag != 0x600dcafeu) {
    }
  }
  tf_store(out, out_kind, i, tf_load(a, a_kind, i) + tf_load(b, b_kind, i));
}
