// Kernels with the wrong accesses the host memory checks must name (src/backend/host/tests.rs),
// and correct ones they must leave alone.
#include "common.h"

extern "C" __global__ void read_past_end(const float* x, float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = fmaxf(x[i], x[i + 1]);   // the last thread reads x[n], swallowed by fmaxf
}

extern "C" __global__ void read_before_start(const float* x, float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = x[i - 2] * 0.0f + x[i];   // threads 0 and 1 read before the start
}

extern "C" __global__ void shared_overrun(const float* x, float* y) {
  __shared__ float stage[64];
  unsigned t = threadIdx.x;
  stage[t] = x[t];
  __syncthreads();
  y[t] = fmaxf(stage[t], stage[t + 1]);   // thread 63 reads stage[64]
}

extern "C" __global__ void shared_race(const float* x, float* y) {
  __shared__ float stage[64];
  unsigned t = threadIdx.x;
  stage[t] = x[t];
  y[t] = stage[(t + 1) % 64];   // no barrier between a neighbour's write and this read
}

extern "C" __global__ void shared_write_after_read(const float* x, float* y) {
  __shared__ float stage[64];
  unsigned t = threadIdx.x;
  stage[t] = x[t];
  __syncthreads();
  float mirrored = stage[63 - t];
  stage[t] = mirrored * 2.0f;   // the second __syncthreads() is missing before this write
  __syncthreads();
  y[t] = stage[63 - t];
}

extern "C" __global__ void warp_ordered(const float* x, float* y) {
  __shared__ float slot[2];
  unsigned t = threadIdx.x;
  if (t == 0) slot[0] = x[0];
  float v = __shfl(x[t], 0);   // a warp op orders lane 0's write before lane 1's read
  y[t] = t == 1 ? slot[0] + v : v;
}

extern "C" __global__ void shared_atomics(int* out) {
  __shared__ int count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  atomicAdd(&count, 1);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = count;
}

extern "C" __global__ void dynamic_overrun(const float* x, float* y) {
  extern __shared__ float pool[];
  unsigned t = threadIdx.x;
  pool[t] = x[t];
  __syncthreads();
  y[t] = pool[t + 1];   // the last thread reads past the launch's dynamic bytes
}

extern "C" __global__ void writes_input(float* x, float* y) {
  unsigned t = threadIdx.x;
  x[t] += 0.0f;   // the same value back into an input (but for -0): a write all the same
  y[t] = x[t];
}

extern "C" __global__ void every_lane_stores(const float* x, float* y) {
  unsigned t = threadIdx.x;
  float v = x[t];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
  y[t / 32] = v;   // every lane stores its warp's sum: the same value, from 32 threads
}

extern "C" __global__ void atomic_total(const float* x, float* y) {
  atomicAdd(&y[0], x[threadIdx.x]);   // every block adds into one element: atomics do not race
}

extern "C" __global__ void shared_overrun_by_pointer(const float* x, float* y) {
  __shared__ float stage[64];
  unsigned t = threadIdx.x;
  stage[t] = x[t];
  __syncthreads();
  const float* row = stage;
  y[t] = fmaxf(row[t], row[t + 1]);   // thread 63 reads stage[64], through a pointer (no index check)
}

extern "C" __global__ void local_overrun(const float* x, float* y, int n) {
  float acc[4];
  unsigned t = threadIdx.x;
  for (int e = 0; e <= n % 5; e++) acc[e] = x[t] * (float)e;   // n = 64: e reaches 4, one past the end
  y[t] = acc[0] + acc[3];
}

extern "C" __global__ void local_overrun_2d(const float* x, float* y, int n) {
  float m[2][4];
  unsigned t = threadIdx.x;
  for (int e = 0; e < 4; e++) m[t & 1][e] = m[1 - (t & 1)][e] = x[t];
  y[t] = m[t & 1][n % 5];   // n = 64: the row's element 4
}

extern "C" __global__ void local_underrun(const float* x, float* y, int n) {
  float acc[4];
  unsigned t = threadIdx.x;
  for (int e = 0; e < 4; e++) acc[e] = x[t] + (float)e;
  y[t] = acc[(int)(t & 3) - n / 64];   // n = 64: thread 0 reads acc[-1]
}

extern "C" __global__ void far_past_end(const float* x, float* y, int n) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  long long far = i == 5 ? (long long)n << 22 : 0;   // n = 64: a GiB past the end of y, for thread 5
  if (i < n) y[i + far] = x[i];
}
