// The index of the largest logit of each vocabulary row; ties go to the lowest index; NaN
// logits are left out (a row of NaN alone gives 0), infinities count as values.
// Logits in f32, f16 or bf16; the index as i32. One block of 256 threads per row: each
// thread scans its strided columns in order from (-inf, no index) (a strictly larger value
// replaces, so its first maximum stays; the first -inf is taken too, so a row of -inf has
// an answer), then (value, index) pairs are reduced with a warp shuffle butterfly and
// across warps through shared memory, each step keeping the larger value and, on equal
// values, the lower index, so the order of the steps does not matter. A NaN never compares
// larger or equal, so it is never taken.
#include "common.h"

#define TF_ARGMAX_THREADS 256
#define TF_ARGMAX_WARPS (TF_ARGMAX_THREADS / 32)
#define TF_ARGMAX_NONE 0x7fffffff

__device__ __forceinline__ void tf_argmax_take(float* value, int* index, float other_value, int other_index) {
  if (other_value > *value || (other_value == *value && other_index < *index)) {
    *value = other_value;
    *index = other_index;
  }
}

extern "C" __global__ void tf_argmax(const void* logits, int kind, int vocab, int* out) {
  __shared__ float warp_value[TF_ARGMAX_WARPS];
  __shared__ int warp_index[TF_ARGMAX_WARPS];
  int t = (int)threadIdx.x;
  int row = (int)blockIdx.x;
  long long base = (long long)row * vocab;

  float value = -INFINITY;
  int index = TF_ARGMAX_NONE;
  for (int j = t; j < vocab; j += TF_ARGMAX_THREADS) {
    float x = tf_load(logits, kind, base + j);
    if (x > value || (x == value && index == TF_ARGMAX_NONE)) {
      value = x;
      index = j;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other_value = __shfl_xor(value, offset);
    int other_index = __shfl_xor(index, offset);
    tf_argmax_take(&value, &index, other_value, other_index);
  }
  if (t % 32 == 0) {
    warp_value[t / 32] = value;
    warp_index[t / 32] = index;
  }
  __syncthreads();
  if (t == 0) {
    for (int w = 1; w < TF_ARGMAX_WARPS; w++) tf_argmax_take(&value, &index, warp_value[w], warp_index[w]);
    out[row] = index == TF_ARGMAX_NONE ? 0 : index;
  }
}
