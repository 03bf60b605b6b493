// The fast intrinsics beside the accurate functions they stand for (host only: the gfx1201
// prelude refuses sinf; src/backend/host/tests.rs):
// y[i] = f(x[i]) for the function `which` names.
#include "common.h"

extern "C" __global__ void fast_math(const float* x, float* y, int n, int which) {
  int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  float v = x[i], s, c;
  switch (which) {
    case 0: y[i] = __expf(v); break;
    case 1: y[i] = expf(v); break;
    case 2: y[i] = __logf(v); break;
    case 3: y[i] = logf(v); break;
    case 4: y[i] = __sinf(v); break;
    case 5: y[i] = sinf(v); break;
    case 6: y[i] = __fdividef(1.0f, v); break;
    case 7: y[i] = 1.0f / v; break;
    case 8: y[i] = rsqrtf(v); break;
    case 9: y[i] = __powf(v, 2.5f); break;
    case 10: __sincosf(v, &s, &c); y[i] = s + c; break;
    case 11: y[i] = __saturatef(v); break;
    default: y[i] = __frsqrt_rn(v); break;
  }
}
