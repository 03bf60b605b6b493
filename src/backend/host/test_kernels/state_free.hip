// Tables that are no state (src/backend/host/tests.rs): `__constant__` is read-only on a GPU,
// a `const` table read-only everywhere, and a table of pointers read-only once relocated.
#include "common.h"

__constant__ float scale[2] = {1.0f, 2.0f};
const __device__ float offset[2] = {0.5f, 0.25f};
__device__ const float* const tables[2] = {scale, offset};

extern "C" __global__ void tabled(const float* x, float* y, int n) {
  int i = (int)threadIdx.x;
  if (i < n) y[i] = x[i] * scale[i % 2] + tables[1][i % 2];
}
