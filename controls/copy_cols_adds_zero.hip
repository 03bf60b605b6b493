// Control: tf_copy_cols that passes each value through + 0.0f (a split-and-add kernel with a
// zero bias): -0 becomes +0, so the copy is no longer bit-exact.
// Columns [start, start + width) of every row of a [rows, k] tensor, copied into a
// [rows, width] tensor (the split of a fused projection's output). Values pass through f32,
// which holds every f16 and bf16 value exactly, so a copy in one type is bit-exact.
// One thread per output element; the launcher uses blocks of 256 over rows * width.
#include "common.h"

extern "C" __global__ void tf_copy_cols(const void* in, int in_kind, int rows, int k, int start, int width,
                                        void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * width) return;
  long long row = i / width, column = i % width;
  tf_store(out, out_kind, i, tf_load(in, in_kind, row * k + start + column) + 0.0f);   // planted
}
