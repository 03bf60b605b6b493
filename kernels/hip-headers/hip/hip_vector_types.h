// HIP's hip/hip_vector_types.h, the part kernels use: float2, float4, int2, int4, uint2,
// uint4 and their make_ functions, with HIP's sizes and alignments (a float4 load is one
// 16-byte access). NVRTC has CUDA's own vector types built in, so there this is empty.
#pragma once
#include "kernel_contracts_detail.h"

#if !defined(KC_HIP_NVRTC)
struct __attribute__((aligned(8))) float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(8))) int2 { int x, y; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };

KC_HIP_FN float2 make_float2(float x, float y) { return float2{x, y}; }
KC_HIP_FN float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
KC_HIP_FN int2 make_int2(int x, int y) { return int2{x, y}; }
KC_HIP_FN int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
KC_HIP_FN uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
KC_HIP_FN uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
#endif
