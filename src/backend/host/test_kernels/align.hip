// Kernels whose loads and stores a GPU would fault on for their alignment, and correct ones
// the alignment check must leave alone (src/backend/host/tests.rs).
#include "common.h"

struct alignas(16) f4 { float a, b, c, d; };   // float4: one 16-byte access on a GPU
struct f4_packed { float a, b, c, d; };        // 4-byte aligned: four 4-byte accesses on a GPU

// Two 16-bit elements per 32-bit load from element 2t + 1: odd elements are 2 bytes off.
extern "C" __global__ void pair_read_odd(const unsigned short* x, float* y) {
  unsigned t = threadIdx.x;
  unsigned pair = *(const unsigned*)(x + 2 * t + 1);
  y[t] = (float)(pair & 0xffff);
}

// 16-byte vector loads from element t, not 4t: every thread but 4k is misaligned.
extern "C" __global__ void vector_read_shifted(const float* x, float* y) {
  unsigned t = threadIdx.x;
  f4 v = *(const f4*)(x + t);
  y[t] = v.a + v.b + v.c + v.d;
}

// A shared array of 16-bit pairs read as 32-bit pairs from an odd 16-bit element (odd at
// run time: GCC instruments an access it can prove misaligned as a byte range, not judged).
extern "C" __global__ void shared_pair_odd(const float* x, float* y) {
  __shared__ unsigned stage[65];
  unsigned t = threadIdx.x;
  stage[t] = t;
  if (t == 0) stage[64] = 0;
  __syncthreads();
  const unsigned short* halves = (const unsigned short*)stage;
  int odd = 1 + (int)x[0];
  y[t] = (float)*(const unsigned*)(halves + 2 * t + odd);
}

// The same accesses, aligned: whole vectors at multiples of 4 elements, pairs at even ones,
// and 16-byte copies of a type a GPU does not align to 16.
extern "C" __global__ void aligned_reads(const float* x, float* y) {
  unsigned t = threadIdx.x;
  if (t < 16) {
    f4 v = *(const f4*)(x + 4 * t);
    *(f4*)(y + 4 * t) = v;
  }
  __syncthreads();
  if (t < 15) {
    f4_packed u = *(const f4_packed*)(x + 4 * t + 1);
    unsigned pair = *(const unsigned*)((const unsigned short*)x + 2 * t);
    y[t] += u.a * 0.0f + (float)(pair & 0);
  }
}
