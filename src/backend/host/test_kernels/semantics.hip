// Kernels written to test the host runtime's GPU semantics (src/backend/host/tests.rs).
#include "common.h"

// Block sum through __shared__ with a barrier per tree level; integer-valued floats, so
// every order gives the same exact sum.
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float buffer[256];
  unsigned t = threadIdx.x;
  unsigned i = (unsigned)(blockIdx.x * blockDim.x + t);
  buffer[t] = i < (unsigned)n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
    if (t < half) buffer[t] += buffer[t + half];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buffer[0];
}

// Warp ops: a full xor butterfly, a width-16 butterfly, shfl_down / shfl_up at the edges,
// a broadcast, ballot / any / all. Seven results per thread.
extern "C" __global__ void warp_ops(const int* x, int* out) {
  unsigned t = threadIdx.x;
  int v = x[(unsigned long long)blockIdx.x * blockDim.x + t];
  int sum32 = v;
  for (int mask = 16; mask > 0; mask >>= 1) sum32 += __shfl_xor(sum32, mask);
  int sum16 = v;
  for (int mask = 8; mask > 0; mask >>= 1) sum16 += __shfl_xor(sum16, mask, 16);
  int down = __shfl_down(v, 1);
  int up = __shfl_up(v, 2);
  int broadcast = __shfl(v, 5);
  unsigned long long ballot = __ballot(v & 1);
  int any_all = __any(v > 1000) * 2 + __all(v >= 0);
  int* r = out + ((unsigned long long)blockIdx.x * blockDim.x + t) * 7;
  r[0] = sum32; r[1] = sum16; r[2] = down; r[3] = up; r[4] = broadcast; r[5] = (int)(ballot & 0xffffffffu); r[6] = any_all;
}

// Atomics from every thread of many blocks into one counter and one float total.
extern "C" __global__ void atomics(const float* x, int n, int* count, float* total, int* maximum) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  atomicAdd(count, 1);
  atomicAdd(total, x[i]);
  atomicMax(maximum, i);
}

// The other read-modify-writes, in the types CUDA and HIP both have them for: subtraction,
// minimum and maximum, compare-and-swap (one thread of all wins) and exchange.
extern "C" __global__ void atomics_more(int n, int* down, int* minimum, unsigned* maximum, unsigned* winner, int* exchanged,
                                        float* float_exchanged) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  atomicSub(down, 2);
  atomicMin(minimum, n - 1 - i);
  atomicMax(maximum, (unsigned)i);
  atomicCAS(winner, 0u, (unsigned)i + 1);
  atomicExch(exchanged, 7);
  atomicExch(float_exchanged, 2.5f);
}

// Dynamic shared memory: each block stages its inputs reversed.
extern "C" __global__ void dynamic_reverse(const float* x, float* y) {
  extern __shared__ float stage[];
  unsigned t = threadIdx.x, n = blockDim.x;
  stage[t] = x[(unsigned long long)blockIdx.x * n + t];
  __syncthreads();
  y[(unsigned long long)blockIdx.x * n + t] = stage[n - 1 - t];
}

// The last thread reads a shared slot nobody wrote in this block.
extern "C" __global__ void unwritten_shared(const float* x, float* y) {
  __shared__ float buffer[256];
  unsigned t = threadIdx.x;
  if (t + 1 < blockDim.x) buffer[t] = x[(unsigned long long)blockIdx.x * blockDim.x + t];
  __syncthreads();
  y[(unsigned long long)blockIdx.x * blockDim.x + t] = buffer[(t + 1) % blockDim.x];
}

// Stores through the shared header with a dtype code from the caller.
extern "C" __global__ void store_by_code(float* out, int code) {
  tf_store(out, code, threadIdx.x, 1.5f);
}

// 2-D blocks and grids: each thread writes its linear coordinates.
extern "C" __global__ void coordinates(int* out) {
  int bx = blockIdx.x, by = blockIdx.y, tx = threadIdx.x, ty = threadIdx.y;
  int block = (int)(by * gridDim.x + bx);
  int thread = ty * blockDim.x + tx;
  out[(unsigned long long)block * blockDim.x * blockDim.y + thread] = block * 1000 + thread;
}

// Warp 0 polls a flag with a vote until warp 1, after shuffles of its own, sets it: the
// runtime runs a released warp's lanes ahead of the others', and must give way in time.
// Each thread writes how often its warp polled.
extern "C" __global__ void vote_until_flag(int* out) {
  __shared__ int flag;
  unsigned t = threadIdx.x;
  if (t == 0) atomicExch(&flag, 0);
  __syncthreads();
  int polls = 0;
  if (t < 32) {
    while (!__any(atomicAdd(&flag, 0) != 0)) polls++;
  } else {
    int v = (int)t;
    for (int i = 0; i < 4; i++) v += __shfl_xor(v, 1);
    if (t == 32) atomicExch(&flag, v);
  }
  out[t] = polls;
}

// Block 0 waits for a flag that block 1 sets once block 0 has polled it three million times
// (block 0 publishes its count as it goes): past the first million reads of the same value
// the runtime pauses the waiting thread now and then, and the wait must still end. One
// thread a block, on two workers.
extern "C" __global__ void wait_for_block(volatile int* flag, volatile int* progress, int* polled) {
  if (blockIdx.x == 0) {
    int polls = 0;
    while (*flag == 0) {
      if ((++polls & 0xffff) == 0) *progress = polls;
    }
    *polled = polls;
  } else {
    while (*progress < 3 * (1 << 20)) {
    }
    *flag = 1;
  }
}

// Volatile loads, one through a packed struct (unaligned: clang calls its unaligned volatile
// hooks for it, GCC a byte range) and one plain: each thread adds its two values.
struct __attribute__((packed)) tagged { char tag; volatile int value; };
extern "C" __global__ void volatile_reads(const tagged* x, const volatile int* y, int* out) {
  unsigned t = threadIdx.x;
  out[t] = x[t].value + y[t];
}
