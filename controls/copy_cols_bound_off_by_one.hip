// Control: tf_copy_cols with its bound off by one (`>` for `>=`), so the thread one past the
// last element copies the element after the last one it should read into the element after
// the output's last: a guard value of the input lands in the output's guard band.
#include "common.h"

extern "C" __global__ void tf_copy_cols(const void* in, int in_kind, int rows, int k, int start, int width,
                                        void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i > (long long)rows * width) return;   // planted: `>` where `>=` belongs
  long long row = i / width, column = i % width;
  tf_store(out, out_kind, i, tf_load(in, in_kind, row * k + start + column));
}
