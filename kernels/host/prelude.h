// Host backend prelude: runs HIP-dialect kernels on the CPU with GPU block semantics.
// Force-included (-include) ahead of every kernel source by the engine's host compiler.
//
// One block runs on one OS thread at a time. Its threads run on "workers": fibers that
// run threads one after another as a plain loop; a new worker is forked only when the
// running thread blocks at a barrier or a warp op. So a kernel that never synchronises
// costs two fiber switches per block, and one that does costs one switch per thread per
// sync op. Pitfalls measured while building it, each handled below where it bites: a
// switch through ucontext costs a sigprocmask syscall (~300 ns), so the switch is our own;
// returning onto another stack with `ret` mispredicts, so the switch pops and jumps;
// `__shared__` persists across the blocks one OS thread runs (an unwritten read sees the
// last block's data), so it is poisoned before each block; a suspended fiber never moves to
// another OS thread (the compiler caches TLS addresses of `__shared__` across calls).
#pragma once
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <cstdio>
#include <cstdarg>
#include <cstdlib>
#include <cmath>
#include <utility>
#include <type_traits>
#include <sys/mman.h>
#include <time.h>
#include <dlfcn.h>
#include <link.h>

#ifndef SIMT_WARP
#define SIMT_WARP 32
#endif
#ifndef SIMT_MAX_THREADS
#define SIMT_MAX_THREADS 1024
#endif
#ifndef SIMT_STACK                  // per fiber, a power of two, one guard page included
#define SIMT_STACK (256 * 1024)
#endif
#ifndef SIMT_DYNAMIC_SHARED_MAX
#define SIMT_DYNAMIC_SHARED_MAX (64 * 1024)
#endif
#define SIMT_MESSAGE_BYTES 512
// Kernels are compiled with -fsanitize=thread for its instrumentation alone: every load and
// store of kernel code calls __tsan_readN / __tsan_writeN, which this prelude defines (no
// ThreadSanitizer runtime is linked) to check accesses against the launch's tensors and the
// block's shared memory. The runtime itself is not instrumented.
// clang instruments atomics even under no_sanitize("thread") (the runtime's own atomics would
// then call the entry points that call them): it needs its stronger attribute too.
// The runtime's own array indexing is not checked either (-fsanitize=bounds, see
// index_out_of_bounds): only kernel code's.
#if defined(__clang__)
#define SIMT_NOSAN __attribute__((no_sanitize("thread", "array-bounds"), disable_sanitizer_instrumentation))
#else
#define SIMT_NOSAN __attribute__((no_sanitize("thread", "bounds")))
#endif

// ---------------------------------------------------------------- dialect
#define __global__
#define __device__
#define __host__
#define __constant__
#ifdef SIMT_COVERAGE
// a coverage build counts each helper once, not once per call site it was inlined into
#define __forceinline__ inline __attribute__((noinline))
#else
#define __forceinline__ inline __attribute__((always_inline))
#endif
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
// At block scope thread_local implies static. One block owns an OS thread while it
// runs, so the variable is per block. `extern __shared__ T x[];` becomes an undefined
// TLS symbol that the engine renames (objcopy --redefine-sym) to the pool below.
#define __shared__ thread_local
// The host build rewrites each block-scope `__shared__ T name[N];` into a shared_array and a
// reference to its data (src/backend/host/shared_decls.rs): the redzone after the data is
// where an overrun lands, so the memory checks can name it.
#define SIMT_REDZONE 64
namespace simt {
template <class A> struct shared_array {
  static_assert(alignof(A) <= SIMT_REDZONE, "a __shared__ array aligned beyond the redzone size");
  A data;
  unsigned char redzone[SIMT_REDZONE];
};
}  // namespace simt

struct uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
  constexpr dim3(uint3 u) : x(u.x), y(u.y), z(u.z) {}
};
static constexpr int warpSize = SIMT_WARP;
// Two translation units share this prelude (src/backend/host/compile.rs): a kernel's,
// compiled with SIMT_KERNEL_TU, which declares the runtime's data and entry points, and the
// runtime's, compiled once per prelude, compiler and flags and linked into every kernel's
// library, which defines them (each library still holds its own runtime and state). The
// runtime was most of every kernel's compile time. Without SIMT_KERNEL_TU one translation
// unit holds both (the coverage build).
#ifdef SIMT_KERNEL_TU
#define SIMT_RUNTIME_DATA extern __attribute__((visibility("hidden")))
#else
#define SIMT_RUNTIME_DATA __attribute__((visibility("hidden")))
#endif
extern "C" {
SIMT_RUNTIME_DATA thread_local __attribute__((aligned(64))) unsigned char __simt_dynamic_shared[SIMT_DYNAMIC_SHARED_MAX];
#ifndef SIMT_KERNEL_TU
// `extern thread_local` uses may call a weak TLS-init hook _ZTH<name>; the engine points
// those at this no-op (g++ alone can drop them with -fno-extern-tls-init).
__attribute__((visibility("hidden"), used)) void __simt_tls_noop() {}
#endif
}

// ---------------------------------------------------------------- math subset
static __forceinline__ unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
static __forceinline__ float __uint_as_float(unsigned u) { return __builtin_bit_cast(float, u); }
static __forceinline__ int __float_as_int(float f) { return __builtin_bit_cast(int, f); }
static __forceinline__ float __int_as_float(int u) { return __builtin_bit_cast(float, u); }

// ---------------------------------------------------------------- fast intrinsics
// A GPU computes __expf, __logf, __sinf, __fdividef, rsqrtf, ... on its special function unit
// (NVIDIA's ex2/lg2/sin/cos/rcp/rsqrt.approx, flushing subnormals to zero), and a kernel that
// calls one where the contract needs the accurate function fails there. Here each is built as
// the hardware builds it (the same f32 operations around the unit: `__expf(x)` is ex2 of the
// f32 product x * log2(e), `__fdividef(x, y)` is x times rcp(y), so a large |y| gives 0), and
// the unit itself is the exact function rounded to f32 and then moved by the error the CUDA
// documentation bounds it by, up or down as a hash of the argument's bits says: the same
// result on every run, an error of its real size. A result the hardware gets exactly (a power
// of two, 1, 0) is left exact. The accurate functions (expf, sinf, ...) stay glibc's. glibc
// declares __expf, __logf, ... itself (extern "C"), so the intrinsics are renamed by macro.
namespace simt {
static __forceinline__ unsigned mix(unsigned h) {
  h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; return h ^ (h >> 16);
}
// f32 subnormals become zeros of their sign (the .ftz forms).
static __forceinline__ float ftz(float v) { return v != 0.0f && fabsf(v) < 0x1p-126f ? copysignf(0.0f, v) : v; }
// `exact` rounded to f32 and moved `ulps` units of its last place away from or toward zero.
static __forceinline__ float sfu_ulps(double exact, unsigned key, int ulps) {
  float r = (float)exact;
  if ((double)r == exact || !__builtin_isfinite(r)) return r;
  unsigned magnitude = __float_as_uint(r) & 0x7fffffffu;
  magnitude = (mix(key) & 1) ? magnitude + ulps : (magnitude > (unsigned)ulps ? magnitude - ulps : 0);
  if (magnitude > 0x7f800000u) magnitude = 0x7f800000u;
  return __uint_as_float((__float_as_uint(r) & 0x80000000u) | magnitude);
}
// `exact` moved by an absolute error `error`, then rounded to f32.
static __forceinline__ float sfu_absolute(double exact, unsigned key, double error) {
  if ((double)(float)exact == exact || !__builtin_isfinite(exact)) return (float)exact;
  return (float)((mix(key) & 1) ? exact + error : exact - error);
}
// ex2.approx.ftz.f32: 2 ulp (CUDA's exp2f bound).
static __forceinline__ float ex2_approx(float t) {
  t = ftz(t);
  if (t != t) return t + t;
  return ftz(sfu_ulps(exp2((double)t), __float_as_uint(t), 2));
}
// lg2.approx.ftz.f32: an absolute error of 2^-22 for x in [0.5, 2], else 2 ulp (__log2f's bounds).
static __forceinline__ float lg2_approx(float x) {
  x = ftz(x);
  if (!(x > 0.0f) || x == __builtin_inff()) return (float)log2((double)x);   // NaN, a negative, 0, +inf
  double exact = log2((double)x);
  if (x >= 0.5f && x <= 2.0f) return sfu_absolute(exact, __float_as_uint(x), 0x1p-22);
  return sfu_ulps(exact, __float_as_uint(x), 2);
}
// sin.approx / cos.approx.ftz.f32: the argument is first scaled to turns by an f32 multiply
// (so a large |x| loses its low bits, as on the hardware), then an absolute error of 2^-21.41
// (sine) or 2^-21.19 (cosine), the bounds CUDA gives for x in [-pi, pi].
static __forceinline__ float sin_approx(float x) {
  float turns = ftz(ftz(x) * 0.159154943f);
  if (!__builtin_isfinite(turns)) return turns - turns;   // NaN for NaN and the infinities
  return ftz(sfu_absolute(sin(6.283185307179586 * (double)turns), __float_as_uint(x), 0x1.8p-22));
}
static __forceinline__ float cos_approx(float x) {
  float turns = ftz(ftz(x) * 0.159154943f);
  if (!__builtin_isfinite(turns)) return turns - turns;
  return ftz(sfu_absolute(cos(6.283185307179586 * (double)turns), __float_as_uint(x) ^ 0x5bd1e995u, 0x1.cp-22));
}
// rcp.approx.ftz.f32: 1 ulp.
static __forceinline__ float rcp_approx(float y) {
  y = ftz(y);
  if (y == 0.0f) return copysignf(__builtin_inff(), y);
  return ftz(sfu_ulps(1.0 / (double)y, __float_as_uint(y), 1));
}
}  // namespace simt

static __forceinline__ float simt_fast_expf(float x) { return simt::ex2_approx(simt::ftz(x) * 1.44269504f); }
static __forceinline__ float simt_fast_exp10f(float x) { return simt::ex2_approx(simt::ftz(x) * 3.32192802f); }
static __forceinline__ float simt_fast_log2f(float x) { return simt::lg2_approx(x); }
static __forceinline__ float simt_fast_logf(float x) { return simt::ftz(simt::lg2_approx(x) * 0.693147182f); }
static __forceinline__ float simt_fast_log10f(float x) { return simt::ftz(simt::lg2_approx(x) * 0.301029996f); }
static __forceinline__ float simt_fast_sinf(float x) { return simt::sin_approx(x); }
static __forceinline__ float simt_fast_cosf(float x) { return simt::cos_approx(x); }
static __forceinline__ void simt_fast_sincosf(float x, float* s, float* c) { *s = simt::sin_approx(x); *c = simt::cos_approx(x); }
static __forceinline__ float simt_fast_tanf(float x) { return simt::ftz(simt::sin_approx(x) * simt::rcp_approx(simt::cos_approx(x))); }
static __forceinline__ float simt_fast_powf(float x, float y) { return simt::ex2_approx(simt::ftz(simt::ftz(y) * simt::lg2_approx(x))); }
// div.approx: x * rcp(y); for 2^126 < |y| < 2^128 the reciprocal flushes to 0, so the quotient
// is 0 (NaN for an infinite x), as CUDA documents.
static __forceinline__ float simt_fast_fdividef(float x, float y) { return simt::ftz(simt::ftz(x) * simt::rcp_approx(y)); }
#define __expf simt_fast_expf
#define __exp10f simt_fast_exp10f
#define __log2f simt_fast_log2f
#define __logf simt_fast_logf
#define __log10f simt_fast_log10f
#define __sinf simt_fast_sinf
#define __cosf simt_fast_cosf
#define __sincosf simt_fast_sincosf
#define __tanf simt_fast_tanf
#define __powf simt_fast_powf
#define __fdividef simt_fast_fdividef
// rsqrtf is NVIDIA's rsqrt.approx.f32 (no flush): 2 ulp.
static __forceinline__ float rsqrtf(float x) {
  if (!(x > 0.0f) || x == __builtin_inff()) return 1.0f / sqrtf(x);   // NaN, a negative, +-0, +inf: as IEEE says
  return simt::sfu_ulps(1.0 / sqrt((double)x), __float_as_uint(x), 2);
}
// The correctly rounded ones stay correctly rounded (__frsqrt_rn through double: rounding the
// double result once more to f32 can be one ulp off, for about one argument in 2^29).
static __forceinline__ float __frsqrt_rn(float x) { return (float)(1.0 / sqrt((double)x)); }
static __forceinline__ float __fsqrt_rn(float x) { return sqrtf(x); }
static __forceinline__ float __frcp_rn(float x) { return 1.0f / x; }
static __forceinline__ float __fdiv_rn(float x, float y) { return x / y; }
static __forceinline__ float __fmul_rn(float x, float y) { return x * y; }
static __forceinline__ float __fadd_rn(float x, float y) { return x + y; }
static __forceinline__ float __fsub_rn(float x, float y) { return x - y; }
static __forceinline__ float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
static __forceinline__ float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
static __forceinline__ int min(int a, int b) { return a < b ? a : b; }
static __forceinline__ int max(int a, int b) { return a > b ? a : b; }
static __forceinline__ unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static __forceinline__ unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static __forceinline__ long long min(long long a, long long b) { return a < b ? a : b; }
static __forceinline__ long long max(long long a, long long b) { return a > b ? a : b; }
static __forceinline__ float min(float a, float b) { return fminf(a, b); }
static __forceinline__ float max(float a, float b) { return fmaxf(a, b); }

// ---------------------------------------------------------------- atomics (relaxed, as GPU atomics are)
// The compiler's __atomic builtins, not std::atomic_ref: <atomic> was half of the prelude's
// parse, and so about a third of each kernel's compile. A float or double has no fetch_add
// builtin; it takes a compare-and-swap loop, as atomic_ref's does. The instrumentation sees
// each as the atomic access it is (__tsan_atomicN_*).
namespace simt {
template <class T> static __forceinline__ T atomic_load(T* p) { T o; __atomic_load(p, &o, __ATOMIC_RELAXED); return o; }
// `*p = f(*p)` as one atomic update; returns the old value
template <class T, class F> static __forceinline__ T atomic_update(T* p, F f) {
  T o = atomic_load(p);
  for (;;) {
    T n = f(o);
    if (__atomic_compare_exchange(p, &o, &n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return o;
  }
}
}  // namespace simt
template <class T> static __forceinline__ T atomicAdd(T* p, T v) {
  if constexpr (std::is_integral_v<T>) return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  else return simt::atomic_update(p, [v](T o) { return o + v; });
}
template <class T> static __forceinline__ T atomicSub(T* p, T v) {
  if constexpr (std::is_integral_v<T>) return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
  else return simt::atomic_update(p, [v](T o) { return o - v; });
}
template <class T> static __forceinline__ T atomicExch(T* p, T v) { T o; __atomic_exchange(p, &v, &o, __ATOMIC_RELAXED); return o; }
template <class T> static __forceinline__ T atomicCAS(T* p, T compare, T v) {
  __atomic_compare_exchange(p, &compare, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return compare;
}
template <class T> static __forceinline__ T atomicMax(T* p, T v) {
  T o = simt::atomic_load(p);
  while (o < v && !__atomic_compare_exchange(p, &o, &v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  return o;
}
template <class T> static __forceinline__ T atomicMin(T* p, T v) {
  T o = simt::atomic_load(p);
  while (v < o && !__atomic_compare_exchange(p, &o, &v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  return o;
}
static __forceinline__ void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static __forceinline__ void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

// ---------------------------------------------------------------- context switch
// A switch is inline code, not a call: it pushes rbp and where to go on on the old stack,
// switches rsp, pops the new stack's two and jumps. The compiler is told every other
// register is clobbered, so it keeps nothing in one across the switch (what it would have
// saved around a call). No call and no return: the return stack buffer stays as the fibers'
// own calls and returns leave it, and as a warp's lanes wait at the same place, each lane's
// return after its switch is predicted (a switch by call leaves it one entry off, and every
// return after it mispredicted). It steps over the red zone (128 bytes below rsp that a leaf
// may keep data in) before pushing. MXCSR and the x87 control word are not switched: all
// fibers share one FP environment.
extern "C" void __simt_trampoline();
SIMT_NOSAN __attribute__((always_inline)) static inline void swap_stacks(void** save_sp, void* new_sp) {
  asm volatile(
      "leaq -128(%%rsp), %%rsp\n\t"
      "pushq %%rbp\n\t"
      "leaq 1f(%%rip), %%rax\n\t"
      "pushq %%rax\n\t"
      "movq %%rsp, (%[save])\n\t"
      "movq %[next], %%rsp\n\t"
      "popq %%rax\n\t"
      "popq %%rbp\n\t"
      "jmpq *%%rax\n"
      "1:\n\t"
      "leaq 128(%%rsp), %%rsp"
      : [save] "+D"(save_sp), [next] "+S"(new_sp)
      :
      : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "memory", "cc", "xmm0", "xmm1",
        "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
        "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)");
}
// A new fiber's first switch pops the trampoline as where to go on (and rbp, 0), which pops
// the scheduler and worker_main and calls one with the other, rsp 16-aligned.
#ifndef SIMT_KERNEL_TU
asm(R"(
.text
.globl __simt_trampoline
.hidden __simt_trampoline
.type __simt_trampoline,@function
__simt_trampoline:
  .cfi_startproc
  .cfi_undefined rip
  popq %rdi
  popq %rax
  callq *%rax
  ud2
  .cfi_endproc
.size __simt_trampoline,.-__simt_trampoline
)");
#endif

// ---------------------------------------------------------------- launch ABI (mirrored in src/backend/host/runtime.rs)
// A tensor of the launch, for the memory checks: data [data, data + bytes), guard bands of
// `guard` bytes on each side. An access in a guard band is out of bounds.
struct simt_region {
  unsigned long long data, bytes, guard;
  unsigned element_bytes, index;    // index: the tensor's place in the caller's table (names live there)
  unsigned long long* writers;      // an output's last writer per element (see region_write); null: an input
  unsigned* writer_pcs;             // where each element was last written
};
// The first access of one kind of memory finding (by the order this OS thread ran blocks),
// and how many accesses of that kind there were.
struct simt_finding {
  unsigned long long count;
  long long place;                  // region index (global) or shared variable index
  long long offset;                 // bytes from the start of the tensor's data or the shared variable
  unsigned access_bytes, write;     // write: 0 read, 1 write, 2 atomic
  unsigned block[3], thread;
  unsigned long long pc;            // return address into the module, relative to its load base
  unsigned other_thread, other_write;
  unsigned long long other_pc;      // the earlier access of a race
  unsigned other_block;             // its block's linear index (a race on a tensor element)
  unsigned shared;                  // a misaligned access: 1 when `place` is a shared variable (-1 the dynamic pool)
  unsigned line, column;            // an index past an array's size: where the compiler says the index is
};
enum {
  SIMT_F_OOB_READ, SIMT_F_OOB_WRITE, SIMT_F_SHARED_OOB, SIMT_F_SHARED_UNWRITTEN, SIMT_F_SHARED_RACE,
  SIMT_F_INPUT_WRITE, SIMT_F_GLOBAL_RACE, SIMT_F_MISALIGNED, SIMT_F_ARRAY_INDEX, SIMT_F_KINDS
};
struct simt_config {
  unsigned grid[3], block[3];
  unsigned long long dynamic_shared;
  unsigned long long* next_block;   // shared by every OS thread of the launch
  int* abort_flag;                  // shared: set by the first block that fails
  int shared_poison;                // 0: off; 0x100 | b: fill all shared memory with byte b before each block
  int wake_reverse;                 // 1: release barrier waiters in reverse arrival order
  const unsigned* block_order;      // null: blocks in linear order; else a permutation of 0..blocks-1
  int thread_order;                 // the order a block's threads start in: SIMT_ORDER_*
  unsigned long long order_seed;
  const simt_region* regions;       // sorted by data address
  unsigned region_count;
  int check_memory;                 // 1: every kernel access is checked (regions, shared memory);
                                    // 3: and the regions are every pointer the kernel was given, so
                                    // an access outside them all is one (see region_access)
};
enum { SIMT_ORDER_FORWARD, SIMT_ORDER_REVERSE, SIMT_ORDER_SHUFFLE, SIMT_ORDER_WARP_AHEAD };
struct simt_result {
  int code;                         // 0 ok, 1 kernel error (message), 2 bad launch
  char message[SIMT_MESSAGE_BYTES];
  unsigned long long blocks, switches, inactive_reads;
  unsigned stacks;
  simt_finding findings[SIMT_F_KINDS];
};
// A `__shared__` variable of the module (from its symbol table, registered by the engine):
// its offset in the module's TLS block, its bytes, and the redzone after them.
struct simt_shared_var {
  unsigned long long offset, bytes, redzone;
};

namespace simt {
enum { WARP = SIMT_WARP, MAX_THREADS = SIMT_MAX_THREADS, MAX_WARPS = MAX_THREADS / WARP };
using lanemask = std::conditional_t<(WARP > 32), uint64_t, uint32_t>;
struct Scheduler;

// Lives at the top of its own stack. Stacks are SIMT_STACK-aligned, so the running
// fiber finds its header from %rsp with one OR: kernel code touches no TLS for threadIdx.
struct Fiber {
  uint3 thread_index;    // threadIdx of the thread this worker runs now
  uint3 block_index, block_dim, grid_dim;
  void* sp;              // saved stack pointer while suspended
  Scheduler* scheduler;
  Fiber* next_free;
  unsigned alive_slot;   // index in Block::alive
  unsigned counter;      // the block's start counter of the thread it runs (threads start in Block::order)
  unsigned linear;       // the linear index of thread_index (x fastest)
};
// Power-of-two-aligned stack tops all map to the same cache sets; shifting each header
// down by a per-region colour (17 lines x region mod 64) spreads 64 fibers over the sets.
static __forceinline__ uintptr_t colour_of(uintptr_t top) { return ((top / SIMT_STACK) & 63) * (17 * 64); }
static __forceinline__ Fiber* self() {
  uintptr_t sp; asm("movq %%rsp, %0" : "=r"(sp));   // not volatile: hoisting is fine, a fiber never changes stack
  uintptr_t top = (sp | (uintptr_t)(SIMT_STACK - 1)) + 1;
  return (Fiber*)(top - colour_of(top) - sizeof(Fiber));
}

struct Warp {
  lanemask lanes;        // lanes that exist in this block
  lanemask arrived;      // lanes waiting at the pending op
  lanemask valid[2];     // lanes whose value sits in exchange[p]
  unsigned parity, waiting;
  lanemask started;      // lanes whose thread has started (exited ones are started and not alive)
  uint32_t syncs;        // warp ops completed in this block: they order the lanes' shared accesses
  const char* file; int line;
  Fiber* waiters[WARP];
  alignas(16) unsigned char exchange[2][WARP][16];
};

struct Kernel;

struct Block {
  const Kernel* kernel; void** args;
  uint3 block_index, block_dim, grid_dim;
  unsigned threads;      // threads per block
  unsigned started;      // threads handed out (exact whenever `runner` is null)
  Fiber* runner;         // worker whose private counter is ahead of `started`, or null
  unsigned alive_count; Fiber* alive[MAX_THREADS];   // workers in the middle of a thread
  unsigned barrier_waiting; const char* barrier_file; int barrier_line; Fiber* barrier_waiters[MAX_THREADS];
  Fiber* ready[MAX_THREADS + 1]; unsigned ready_head, ready_tail;
  const Warp* leading; unsigned lead_releases;   // the warp whose lanes were last queued in front, and how often in a row
  int wake_reverse;
  int error; char message[SIMT_MESSAGE_BYTES - 64];
  int stopped;           // a thread made an access a GPU faults on (a finding, not an error): the block ran no further
  unsigned long long switches, inactive_reads;
  unsigned warp_count; Warp warps[MAX_WARPS];
  const uint16_t* order;  // linear thread index of each start counter value, or null (0, 1, 2, ...)
  uint16_t order_storage[MAX_THREADS];
  uint32_t first_interval; // the shared-memory interval this block began in
  uint32_t linear_index;   // the block's index in the grid, x fastest
};

// The memory checks' shadow of one byte of the module's TLS block.
struct Shadow {
  uint32_t write_interval, read_interval;   // the barrier interval of the last write and of the reads
  uint32_t write_pc, read_pc;               // where (module offsets of the return addresses)
  uint32_t write_syncs, read_syncs;         // the accessing warp's completed warp ops (latest read)
  uint16_t writer, reader;                  // thread indices; MANY when two or more threads did it
  uint16_t reader_warp;                     // the readers' warp; MANY when they span warps
  uint16_t var;                             // 0: not shared; 1 + index; REDZONE | (1 + index); DYNAMIC
  uint16_t write_atomic, unused;
};
enum : uint16_t { MANY = 0xffff, REDZONE = 0x8000, DYNAMIC = 0x7fff };

struct Scheduler {       // one per OS thread per module, never freed (worker threads are persistent)
  void* main_sp;
  unsigned char* tls_base; size_t tls_size;   // this module's TLS block, for poisoning and the shadow
  Fiber* free_list;
  unsigned stacks;
  // memory checks of the running launch
  int checking;
  const simt_config* config;
  simt_result* result;
  // The shadow, allocated at the first checked block: one entry per 4-byte granule of the TLS
  // block, which judges an access of whole granules once per granule (shared memory is nearly
  // always accessed in 4-byte words, and a shadow per byte was four times the work), and one
  // per byte for the granules `split` marks, whose bytes may differ: those an access of part
  // of a granule touched, and those that hold bytes of two variables. `shadow` also names
  // each byte's variable (its `var`), split or not.
  Shadow* shadow;
  Shadow* granules;
  unsigned char* split;
  size_t pool;             // the dynamic shared pool's offset in the TLS block
  uint32_t interval;       // barrier intervals so far, over every block this thread ran
  // per access site (the hook's return address, hashed): the tensors its last two accesses
  // were in. A load or store of kernel code nearly always reads one tensor (or two, where the
  // compiler merged two loads of one helper), so this is one probe (a per-tensor list was a
  // loop of compares whose exit the branch predictor kept missing).
  enum { SITES = 256 };
  struct Tensor { uintptr_t data; size_t bytes; const simt_region* region; };
  struct Site { Tensor last, before; } sites[SITES];
  // the last volatile read (see `spin`): its address, the value it found, how many in a row found it
  uintptr_t spin_address; unsigned long long spin_value, spin_reads;
  Block block;
};
SIMT_RUNTIME_DATA thread_local Scheduler* tls_scheduler;

struct Kernel {
  void (*loop)(Block&);
  unsigned parameter_count; unsigned parameter_sizes[32];
};

SIMT_NOSAN static void fail(Block& b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
SIMT_NOSAN __attribute__((noinline, cold)) static void fail(Block& b, const char* fmt, ...) {
  if (b.error) return;
  b.error = 1;
  va_list ap; va_start(ap, fmt); vsnprintf(b.message, sizeof b.message, fmt, ap); va_end(ap);
}

SIMT_NOSAN static inline unsigned linear_thread(const Block&, const Fiber* f) { return f->linear; }

[[noreturn]] SIMT_NOSAN static void worker_main(void*);

// Every fiber stack region of this module, in an open-addressing table keyed by the region's
// address, so that the memory checks can tell kernel code on a fiber (where self() finds the
// scheduler) from anything else (a template of the C++ library that the runtime calls,
// instrumented because it is compiled here) with one load.
enum { STACK_TABLE = 1 << 14 };   // slots; at most half of them used (8192 stacks)
SIMT_RUNTIME_DATA uintptr_t stack_regions[STACK_TABLE];
SIMT_RUNTIME_DATA unsigned stack_region_count;
SIMT_RUNTIME_DATA int stack_regions_lock;
SIMT_NOSAN static inline unsigned stack_slot(uintptr_t region) { return (unsigned)((region / SIMT_STACK) * 0x9e3779b1u) % STACK_TABLE; }
SIMT_NOSAN static bool publish_stack_regions(uintptr_t base, size_t count) {
  while (__atomic_exchange_n(&stack_regions_lock, 1, __ATOMIC_ACQUIRE)) {}
  bool room = stack_region_count + count <= STACK_TABLE / 2;
  for (size_t i = 0; room && i < count; i++) {
    uintptr_t region = base + i * SIMT_STACK;
    unsigned slot = stack_slot(region);
    while (stack_regions[slot]) slot = (slot + 1) % STACK_TABLE;
    __atomic_store_n(&stack_regions[slot], region, __ATOMIC_RELEASE);
    stack_region_count++;
  }
  __atomic_store_n(&stack_regions_lock, 0, __ATOMIC_RELEASE);
  return room;
}
SIMT_NOSAN static inline bool on_fiber_stack(uintptr_t sp) {
  uintptr_t region = sp & ~(uintptr_t)(SIMT_STACK - 1);
  for (unsigned slot = stack_slot(region);; slot = (slot + 1) % STACK_TABLE) {
    uintptr_t r = __atomic_load_n(&stack_regions[slot], __ATOMIC_ACQUIRE);
    if (r == region) return true;
    if (!r) return false;
  }
}

SIMT_NOSAN static Fiber* new_worker(Scheduler* s) {
  Block& b = s->block;
  Fiber* f = s->free_list;
  if (f) s->free_list = f->next_free;
  else {
    // A chunk of SIMT_STACK-aligned regions: [guard page][stack, grows down][Fiber]
    const size_t size = SIMT_STACK, count = 32;
    char* raw = (char*)mmap(nullptr, (count + 1) * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    char* base = (char*)(((uintptr_t)raw + size - 1) & ~(uintptr_t)(size - 1));
    if (base > raw) munmap(raw, base - raw);
    if (raw + size > base) munmap(base + count * size, raw + size - base);
    if (!publish_stack_regions((uintptr_t)base, count)) { munmap(base, count * size); return nullptr; }
    for (size_t i = 0; i < count; i++) {
      mprotect(base + i * size, 4096, PROT_NONE);   // guard page: an overflow faults instead of corrupting
      uintptr_t top = (uintptr_t)(base + (i + 1) * size);
      Fiber* g = (Fiber*)(top - colour_of(top) - sizeof(Fiber));
      g->scheduler = s; g->next_free = s->free_list; s->free_list = g;
    }
    s->stacks += count;
    f = s->free_list; s->free_list = f->next_free;
  }
  f->block_index = b.block_index; f->block_dim = b.block_dim; f->grid_dim = b.grid_dim; f->thread_index = uint3{0, 0, 0}; f->linear = 0;
  uintptr_t top = ((uintptr_t)f - 64) & ~(uintptr_t)15;
  void** sp = (void**)top;
  *--sp = (void*)worker_main;                       // the trampoline's: called with rsp == top (16-aligned)
  *--sp = (void*)s;                                 // -> rdi
  *--sp = nullptr;                                  // rbp
  *--sp = (void*)__simt_trampoline;                 // where the first switch to it goes on
  f->sp = sp;
  f->alive_slot = b.alive_count; b.alive[b.alive_count++] = f;
  return f;
}

SIMT_NOSAN static inline void make_ready(Block& b, Fiber* f) { b.ready[b.ready_tail] = f; b.ready_tail = (b.ready_tail + 1) % (MAX_THREADS + 1); }

// A released warp's lanes run next, ahead of the lanes other warps queued (their stacks are
// still in the cache: a warp reduction is five shuffles in a row, and going round the block's
// 256 fibers between two of them missed the cache at nearly every switch: the attention,
// score and argmax records took 5-6% less CPU this way), at most LEAD_RELEASES releases in a row,
// so that a warp polling a flag another warp sets (a vote in a loop) gives way to it.
enum : unsigned { LEAD_RELEASES = 256 };
SIMT_NOSAN static void warp_release(Block& b, Warp& w, Fiber* keep_running) {
  bool lead = b.leading != &w || b.lead_releases < LEAD_RELEASES;
  b.lead_releases = b.leading == &w && lead ? b.lead_releases + 1 : 1;
  b.leading = lead ? &w : nullptr;
  for (unsigned i = 0; i < w.waiting; i++) {
    // behind the queue in wake order, or in front of it in wake order too (so the last first)
    unsigned k = (b.wake_reverse != 0) != lead ? w.waiting - 1 - i : i;
    Fiber* f = w.waiters[k];
    if (f == keep_running) continue;
    if (!lead) { make_ready(b, f); continue; }
    b.ready_head = (b.ready_head + MAX_THREADS) % (MAX_THREADS + 1);
    b.ready[b.ready_head] = f;
  }
  w.waiting = 0; w.arrived = 0;
  w.parity ^= 1; w.valid[w.parity] = 0;
  w.syncs++;
}

// Nothing is runnable: pending warp ops whose missing lanes have all exited can now
// complete (exited lanes are inactive). Returns true if anything was released.
SIMT_NOSAN __attribute__((noinline)) static bool resolve_stuck(Block& b) {
  lanemask alive[MAX_WARPS] = {};
  for (unsigned i = 0; i < b.alive_count; i++) { unsigned t = linear_thread(b, b.alive[i]); alive[t / WARP] |= lanemask(1) << (t % WARP); }
  bool any = false;
  for (unsigned wi = 0; wi < b.warp_count; wi++) {
    Warp& w = b.warps[wi];
    if (!w.waiting) continue;
    lanemask need = w.lanes & ~(w.started & ~alive[wi]);   // exited lanes are not waited for
    if ((w.arrived & need) == need) { warp_release(b, w, nullptr); any = true; }
  }
  return any;
}

// Next fiber to run: a released waiter, else a fresh worker for unstarted threads,
// else nullptr (the scheduler's own stack: block done, error, or nothing runnable).
SIMT_NOSAN static Fiber* pick_next(Scheduler* s) {
  Block& b = s->block;
  if (b.error || b.stopped) return nullptr;
  for (;;) {
    if (b.ready_head != b.ready_tail) { Fiber* f = b.ready[b.ready_head]; b.ready_head = (b.ready_head + 1) % (MAX_THREADS + 1); return f; }
    if (b.started < b.threads) { Fiber* f = new_worker(s); if (!f) fail(b, "out of memory for fiber stacks"); return f; }
    if (!resolve_stuck(b)) return nullptr;
  }
}

// from == nullptr: we are the scheduler's own stack, or (dying) a worker that never
// comes back. to == nullptr: go to the scheduler's stack.
SIMT_NOSAN static inline void switch_to(Scheduler* s, Fiber* from, bool dying, Fiber* to) {
  s->block.switches++;
  void* dead;
  swap_stacks(from ? &from->sp : dying ? &dead : &s->main_sp, to ? to->sp : s->main_sp);
}
SIMT_NOSAN static inline void block_wait(Scheduler* s, Fiber* me) {
  Fiber* next = pick_next(s);
  if (next != me) switch_to(s, me, false, next);
}
// Called first by every sync op: publish the running worker's private thread counter.
SIMT_NOSAN static inline void flush(Block& b, Fiber* me) {
  if (b.runner == me) { b.started = me->counter + 1; b.runner = nullptr; }
}

[[noreturn]] SIMT_NOSAN static void worker_main(void* arg) {
  Scheduler* s = (Scheduler*)arg;
  Block& b = s->block;
  Fiber* me = self();
  b.kernel->loop(b);
  // No thread left to start: leave for good. The stack goes back to the free list before
  // the switch; pick_next cannot hand out a new worker now (every thread has started).
  Fiber* last = b.alive[--b.alive_count]; last->alive_slot = me->alive_slot; b.alive[me->alive_slot] = last;
  Fiber* next = pick_next(s);
  me->next_free = s->free_list; s->free_list = me;
  switch_to(s, nullptr, true, next);
  __builtin_unreachable();
}

// A kernel error (trap, divergence): record it and leave the block for good.
[[noreturn]] SIMT_NOSAN __attribute__((noinline, cold)) static void abandon_block(Scheduler* s, Fiber* me) {
  switch_to(s, me, false, nullptr);
  __builtin_unreachable();
}

// The sync ops kernel code calls, defined in the runtime's translation unit alone: compiled
// into each kernel's, they and the scheduler they reach (pick_next, new_worker, the switch)
// were a third of the compile of every kernel with a barrier or a warp op, for code that is
// the same in all of them. Kernel code calls each through one call, as when it was its own.
enum ShuffleKind : unsigned { SHFL_XOR, SHFL_DOWN, SHFL_UP, SHFL_INDEX };
struct ShuffleBytes { unsigned char b[16]; };   // a shuffled value: a T of at most 16 bytes
#define SIMT_RUNTIME_FN SIMT_NOSAN __attribute__((visibility("hidden"), noinline))
SIMT_RUNTIME_FN void syncthreads(const char* file, int line);
[[noreturn]] SIMT_RUNTIME_FN void trap(const char* file, int line);
SIMT_RUNTIME_FN ShuffleBytes warp_shuffle_bytes(ShuffleBytes v, ShuffleKind kind, unsigned arg, int width, const char* file, int line);
SIMT_RUNTIME_FN unsigned long long warp_ballot(int predicate, const char* file, int line);
SIMT_RUNTIME_FN unsigned next_thread(Block& b, Fiber* me, unsigned t);

#ifndef SIMT_KERNEL_TU
// ---------------------------------------------------------------- block barrier
SIMT_RUNTIME_FN void syncthreads(const char* file, int line) {
  Fiber* me = self(); Scheduler* s = me->scheduler; Block& b = s->block;
  flush(b, me);
  unsigned exited = b.started - b.alive_count;
  if (exited)
    fail(b, "divergent barrier: thread %u reached %s:%d but %u thread(s) already exited", linear_thread(b, me), file, line, exited);
  else if (b.barrier_waiting && (b.barrier_line != line || (b.barrier_file != file && strcmp(b.barrier_file, file) != 0)))
    fail(b, "divergent barrier: thread %u at %s:%d while %u thread(s) wait at %s:%d", linear_thread(b, me), file, line,
         b.barrier_waiting, b.barrier_file, b.barrier_line);
  if (b.error) abandon_block(s, me);
  if (b.barrier_waiting == 0) { b.barrier_file = file; b.barrier_line = line; }
  b.barrier_waiters[b.barrier_waiting++] = me;
  if (b.barrier_waiting == b.threads) {   // last to arrive: release the others, keep running
    s->interval++;                          // accesses after the barrier are ordered after those before
    for (unsigned i = 0; i + 1 < b.barrier_waiting; i++) {
      unsigned k = b.wake_reverse ? b.barrier_waiting - 2 - i : i;
      make_ready(b, b.barrier_waiters[k]);
    }
    b.barrier_waiting = 0;
    return;
  }
  block_wait(s, me);
}

[[noreturn]] SIMT_RUNTIME_FN __attribute__((cold)) void trap(const char* file, int line) {
  Fiber* me = self(); Scheduler* s = me->scheduler; Block& b = s->block;
  flush(b, me);
  fail(b, "trap: thread %u executed __trap() at %s:%d", linear_thread(b, me), file, line);
  abandon_block(s, me);
}

// ---------------------------------------------------------------- warp ops
// Each lane writes its value into exchange[parity][lane], waits for the warp (a
// warp-level barrier), then reads the source lane's slot. Two buffers make one barrier
// per op enough: buffer p is rewritten only after every lane has arrived at the next op.
template <class T>
SIMT_NOSAN static inline unsigned warp_exchange(T v, const char* file, int line, Warp*& warp_out, unsigned& lane_out) {
  static_assert(sizeof(T) <= 16 && std::is_trivially_copyable_v<T>, "shuffle type");
  Fiber* me = self(); Scheduler* s = me->scheduler; Block& b = s->block;
  flush(b, me);
  unsigned t = linear_thread(b, me);
  Warp& w = b.warps[t / WARP]; unsigned lane = t % WARP;
  unsigned p = w.parity;
  if (w.waiting && (w.line != line || (w.file != file && strcmp(w.file, file) != 0))) {
    fail(b, "divergent warp op: lane %u of warp %u at %s:%d while %u lane(s) wait at %s:%d", lane, t / WARP, file, line, w.waiting, w.file, w.line);
    abandon_block(s, me);
  }
  if (w.waiting == 0) { w.file = file; w.line = line; }
  memcpy(w.exchange[p][lane], &v, sizeof(T));
  w.valid[p] |= lanemask(1) << lane;
  w.waiters[w.waiting++] = me;
  w.arrived |= lanemask(1) << lane;
  if (w.arrived == w.lanes) warp_release(b, w, me);   // the whole warp is here
  else block_wait(s, me);                             // or the rest exited: resolve_stuck
  warp_out = &w; lane_out = lane;
  return p;
}
template <class T>
SIMT_NOSAN static inline T warp_read(Warp& w, unsigned p, unsigned source, T own) {
  if (source >= (unsigned)WARP || !((w.valid[p] >> source) & 1)) { self()->scheduler->block.inactive_reads++; return own; }
  T r; memcpy(&r, w.exchange[p][source], sizeof(T)); return r;
}
// A shuffle whole, exchange and read, out of the kernel's instrumented code (the reads of the
// exchange buffers would each be a call into the memory checks), of a value's bytes (passed
// and returned in two registers). The source lane as HIP computes it (amd_warp_functions.h);
// width is a power of two <= warpSize.
SIMT_RUNTIME_FN ShuffleBytes warp_shuffle_bytes(ShuffleBytes v, ShuffleKind kind, unsigned arg, int width, const char* file, int line) {
  Warp* w; unsigned lane; unsigned p = warp_exchange(v, file, line, w, lane);
  const unsigned segment = lane & ~(unsigned)(width - 1), within = lane & (unsigned)(width - 1);
  unsigned source;
  switch (kind) {
    case SHFL_XOR: source = lane ^ arg; if ((source & ~(unsigned)(width - 1)) != segment) source = lane; break;   // outside its own segment
    case SHFL_DOWN: source = within + arg >= (unsigned)width ? lane : lane + arg; break;
    case SHFL_UP: source = (int)within - (int)arg < 0 ? lane : lane - arg; break;
    default: source = segment + (arg & (unsigned)(width - 1)); break;
  }
  return warp_read(*w, p, source, v);
}
SIMT_RUNTIME_FN unsigned long long warp_ballot(int predicate, const char* file, int line) {
  Warp* w; unsigned lane; unsigned p = warp_exchange(predicate, file, line, w, lane);
  unsigned long long r = 0;
  for (unsigned i = 0; i < (unsigned)WARP; i++)
    if ((w->valid[p] >> i) & 1) { int x; memcpy(&x, w->exchange[p][i], sizeof x); if (x) r |= 1ull << i; }
  return r;
}
#endif  // SIMT_KERNEL_TU
// Kernel code's shuffle of a T: its bytes through the runtime's, in registers (a value is on
// no tensor; a copy the compiler keeps on the stack is skipped by the memory checks' first
// test). Inlined, so that the kernel calls the runtime directly: after a fiber switch every
// return mispredicts (the switch leaves the return stack buffer one entry off), and a frame
// of its own here was one return more per lane per shuffle, half again the shuffle's cost.
template <class T>
__attribute__((always_inline)) static inline T warp_shuffle(T v, ShuffleKind kind, unsigned arg, int width, const char* file, int line) {
  static_assert(sizeof(T) <= sizeof(ShuffleBytes) && std::is_trivially_copyable_v<T>, "shuffle type");
  ShuffleBytes bytes{};
  memcpy(bytes.b, &v, sizeof(T));
  bytes = warp_shuffle_bytes(bytes, kind, arg, width, file, line);
  memcpy(&v, bytes.b, sizeof(T));
  return v;
}
}  // namespace simt

// HIP semantics (amd_warp_functions.h); width is a power of two <= warpSize.
#define SIMT_SITE const char* f = __builtin_FILE(), int l = __builtin_LINE()
template <class T> static inline T __shfl_xor(T v, int mask, int width = warpSize, SIMT_SITE) {
  return simt::warp_shuffle(v, simt::SHFL_XOR, (unsigned)mask, width, f, l);
}
template <class T> static inline T __shfl_down(T v, unsigned delta, int width = warpSize, SIMT_SITE) {
  return simt::warp_shuffle(v, simt::SHFL_DOWN, delta, width, f, l);
}
template <class T> static inline T __shfl_up(T v, unsigned delta, int width = warpSize, SIMT_SITE) {
  return simt::warp_shuffle(v, simt::SHFL_UP, delta, width, f, l);
}
template <class T> static inline T __shfl(T v, int source_lane, int width = warpSize, SIMT_SITE) {
  return simt::warp_shuffle(v, simt::SHFL_INDEX, (unsigned)source_lane, width, f, l);
}
static inline unsigned long long __ballot(int predicate, SIMT_SITE) { return simt::warp_ballot(predicate, f, l); }
static inline int __any(int predicate, SIMT_SITE) { return __ballot(predicate, f, l) != 0; }
static inline int __all(int predicate, SIMT_SITE) { return __ballot(!predicate, f, l) == 0; }   // over the active lanes
static inline void __syncthreads(SIMT_SITE) { simt::syncthreads(f, l); }
[[noreturn]] static inline void __trap(SIMT_SITE) { simt::trap(f, l); __builtin_unreachable(); }
// CUDA-style _sync variants: the mask is accepted, but the whole live warp is waited for
// (a narrower mask on a divergent path shows up as a divergent warp op).
template <class T> static inline T __shfl_xor_sync(unsigned long long, T v, int m, int w = warpSize, SIMT_SITE) { return __shfl_xor(v, m, w, f, l); }
template <class T> static inline T __shfl_down_sync(unsigned long long, T v, unsigned d, int w = warpSize, SIMT_SITE) { return __shfl_down(v, d, w, f, l); }
template <class T> static inline T __shfl_sync(unsigned long long, T v, int s, int w = warpSize, SIMT_SITE) { return __shfl(v, s, w, f, l); }

namespace simt {
// The bookkeeping of a worker's threads, out of the kernel's instrumented code (each access
// would be a call into the memory checks, per thread). The thread after `t` (after the
// first, `t` ~0u) that this worker runs, set up in its header; ~0u when none is left.
#ifndef SIMT_KERNEL_TU
SIMT_RUNTIME_FN unsigned next_thread(Block& b, Fiber* me, unsigned t) {
  if (t == ~0u || b.runner != me) { t = b.started; b.runner = me; }   // first, or blocked meanwhile: others may have started threads
  else t++;                                                             // did not block: keep counting privately
  if (t >= b.threads) { b.started = b.threads; b.runner = nullptr; return ~0u; }
  unsigned linear = b.order ? b.order[t] : t;
  me->counter = t;
  const unsigned bx = b.block_dim.x, by = b.block_dim.y;
  me->thread_index = by == 1 && b.block_dim.z == 1 ? uint3{linear, 0, 0} : uint3{linear % bx, (linear / bx) % by, linear / (bx * by)};
  me->linear = linear;
  b.warps[linear / WARP].started |= lanemask(1) << (linear % WARP);
  return t;
}
#endif
// The per-kernel worker loop. Parameters are unpacked once per worker (each call still
// gets its own by-value copy); the kernel is a template argument.
// The parameters are one aggregate with one base per parameter: std::tuple's constructors
// were a third of the compile of every kernel (206 against 138 ms of g++ for
// tf_attention_prefill's 14 parameters).
template <size_t I, class T> struct Parameter { T value; };
template <class Indices, class... T> struct Parameters;
template <size_t... I, class... T> struct Parameters<std::index_sequence<I...>, T...> : Parameter<I, T>... {};
template <class... T> using ParametersOf = Parameters<std::index_sequence_for<T...>, T...>;
template <class P> using Value = std::remove_cv_t<std::remove_reference_t<P>>;
// `noipa`, not only `noinline`: GCC's interprocedural scalar replacement would move the load of
// the argument table's first entry into the (instrumented) caller, an access of memory that is
// no tensor's.
#if defined(__clang__)
#define SIMT_NOIPA __attribute__((noinline))
#else
#define SIMT_NOIPA __attribute__((noipa))
#endif
// The kernel's parameters, copied out of the launch's argument table by uninstrumented code:
// a worker starts for every thread that blocks, and each copy's loads would be calls into the
// memory checks, each looking for a tensor the argument table is not.
template <class... T, size_t... I>
SIMT_NOSAN SIMT_NOIPA static ParametersOf<T...> unpack(void** args, std::index_sequence<I...>) {
  return ParametersOf<T...>{{*static_cast<T*>(args[I])}...};
}
template <auto F, size_t... I, class... P>
__attribute__((flatten)) static void loop_impl(Block& b, void (*)(P...), std::index_sequence<I...> indices) {
  const ParametersOf<Value<P>...> params = unpack<Value<P>...>(b.args, indices);
  Fiber* me = self();
  for (unsigned t = next_thread(b, me, ~0u); t != ~0u; t = next_thread(b, me, t))
    F(static_cast<const Parameter<I, Value<P>>&>(params).value...);
}
template <class... P> static constexpr size_t parameter_count(void (*)(P...)) { return sizeof...(P); }
template <auto F> static void loop(Block& b) {
  loop_impl<F>(b, F, std::make_index_sequence<parameter_count(F)>{});
}
template <class... P> static constexpr Kernel describe(void (*)(P...), void (*run)(Block&)) {
  return Kernel{run, sizeof...(P), {unsigned(sizeof(std::remove_reference_t<P>))...}};
}

SIMT_NOSAN static unsigned long long splitmix64(unsigned long long& state) {
  state += 0x9e3779b97f4a7c15ull;
  unsigned long long z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The order a block's threads start in (each runs until it blocks at a barrier or warp op):
// forward, reversed, a seeded shuffle, or one seeded warp first and the rest forward.
SIMT_NOSAN static void set_thread_order(Block& b, const simt_config* c, unsigned long long block) {
  const unsigned n = b.threads;
  b.order = nullptr;
  if (c->thread_order == SIMT_ORDER_FORWARD || n < 2) return;
  uint16_t* o = b.order_storage;
  unsigned long long state = c->order_seed ^ (block * 0x9e3779b97f4a7c15ull);
  if (c->thread_order == SIMT_ORDER_REVERSE) {
    for (unsigned i = 0; i < n; i++) o[i] = (uint16_t)(n - 1 - i);
  } else if (c->thread_order == SIMT_ORDER_SHUFFLE) {
    for (unsigned i = 0; i < n; i++) o[i] = (uint16_t)i;
    for (unsigned i = n - 1; i > 0; i--) { unsigned j = (unsigned)(splitmix64(state) % (i + 1)); uint16_t x = o[i]; o[i] = o[j]; o[j] = x; }
  } else {
    unsigned warps = (n + WARP - 1) / WARP, ahead = (unsigned)(splitmix64(state) % warps), k = 0;
    for (unsigned i = ahead * WARP; i < n && i < (ahead + 1) * WARP; i++) o[k++] = (uint16_t)i;
    for (unsigned i = 0; i < n; i++) if (i / WARP != ahead) o[k++] = (uint16_t)i;
  }
  b.order = o;
}

SIMT_NOSAN static int run_block(Scheduler* s) {
  Block& b = s->block;
  b.started = 0; b.runner = nullptr; b.alive_count = 0; b.barrier_waiting = 0; b.error = 0; b.stopped = 0; b.message[0] = 0;
  b.ready_head = b.ready_tail = 0; b.leading = nullptr; b.lead_releases = 0;
  b.warp_count = (b.threads + WARP - 1) / WARP;
  for (unsigned i = 0; i < b.warp_count; i++) {
    Warp& w = b.warps[i];
    unsigned count = (b.threads - i * WARP) < (unsigned)WARP ? (b.threads - i * WARP) : (unsigned)WARP;
    w.lanes = count == (unsigned)WARP ? ~lanemask(0) : ((lanemask(1) << count) - 1);
    w.arrived = w.valid[0] = w.valid[1] = 0; w.parity = 0; w.waiting = 0;
    w.started = 0; w.syncs = 0;
  }
  b.first_interval = ++s->interval;
  Fiber* first = new_worker(s);
  if (!first) { fail(b, "out of memory for fiber stacks"); return 1; }
  switch_to(s, nullptr, false, first);
  // Back on the OS thread's own stack: done, error, or nothing runnable (deadlock).
  if (!b.error && !b.stopped && b.alive_count) {
    unsigned exited = b.started - b.alive_count;
    int wi = -1;
    for (unsigned i = 0; i < b.warp_count; i++) if (b.warps[i].waiting) { wi = i; break; }
    if (b.barrier_waiting && exited)
      fail(b, "divergent barrier: %u thread(s) wait at %s:%d, %u thread(s) exited without reaching it", b.barrier_waiting,
           b.barrier_file, b.barrier_line, exited);
    else
      fail(b, "deadlock (divergent sync): %u thread(s) at barrier %s:%d; warp %d waits at %s:%d; %u exited", b.barrier_waiting,
           b.barrier_waiting ? b.barrier_file : "-", b.barrier_waiting ? b.barrier_line : 0, wi, wi >= 0 ? b.warps[wi].file : "-",
           wi >= 0 ? b.warps[wi].line : 0, exited);
  }
  if (b.error || b.stopped) {   // abandon the suspended fibers: their stacks go back to the pool
    for (unsigned i = 0; i < b.alive_count; i++) { b.alive[i]->next_free = s->free_list; s->free_list = b.alive[i]; }
    b.alive_count = 0;
    return b.error ? 1 : 0;
  }
  return 0;
}

// This module's TLS block for the calling thread: its __shared__ variables, the dynamic
// pool and tls_scheduler. Found with dlinfo(RTLD_DI_TLS_DATA) and PT_TLS p_memsz.
struct TlsExtent { unsigned char* base; size_t size; };
SIMT_NOSAN static int tls_phdr_callback(dl_phdr_info* info, size_t, void* data) {
  auto* want = (std::pair<uintptr_t, size_t>*)data;
  if (info->dlpi_addr != want->first) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) if (info->dlpi_phdr[i].p_type == PT_TLS) want->second = info->dlpi_phdr[i].p_memsz;
  return 1;
}
SIMT_NOSAN static TlsExtent tls_extent() {
  Dl_info info; dladdr((void*)&tls_extent, &info);
  void* handle = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  void* p = nullptr; if (handle) { dlinfo(handle, RTLD_DI_TLS_DATA, &p); dlclose(handle); }
  std::pair<uintptr_t, size_t> want{(uintptr_t)info.dli_fbase, 0};
  dl_iterate_phdr(tls_phdr_callback, &want);
  return TlsExtent{(unsigned char*)p, p ? want.second : 0};
}
// Poisons this block's shared memory: static __shared__ and the first dynamic bytes of the pool.
SIMT_NOSAN static void poison_shared(const TlsExtent& e, int byte, size_t dynamic) {
  // tls_scheduler never has its address taken, so the compiler may assume the memset cannot
  // touch it and drop the restore: launder the address through an asm.
  Scheduler** slot = &tls_scheduler;
  asm volatile("" : "+r"(slot) : : "memory");
  Scheduler* keep = *slot;
  unsigned char* pool = __simt_dynamic_shared;
  unsigned char* end = e.base + e.size;
  if (pool >= e.base && pool + SIMT_DYNAMIC_SHARED_MAX <= end) {
    memset(e.base, byte, pool - e.base);
    memset(pool, byte, dynamic);
    memset(pool + SIMT_DYNAMIC_SHARED_MAX, byte, end - (pool + SIMT_DYNAMIC_SHARED_MAX));
  }
  *slot = keep;
  asm volatile("" : : "r"(slot) : "memory");
}
}  // namespace simt

// ---------------------------------------------------------------- memory checks
// Every load and store of kernel code comes here (see SIMT_NOSAN). An access to the module's
// TLS block is a shared-memory access when its shadow names a variable: it is checked
// against the variable's bounds (a redzone follows every rewritten `__shared__` array, the
// dynamic pool ends at the launch's dynamic bytes), against writes in this block (a read of
// bytes no thread of the block wrote), and against other threads' accesses in the same
// barrier interval (a race, unless a warp op of the same warp came between). Any other
// access is checked against the launch's tensors: one in a guard band is out of bounds.
namespace simt {
enum { MAX_SHARED_VARS = 256 };
SIMT_RUNTIME_DATA simt_shared_var registered_vars[MAX_SHARED_VARS];
SIMT_RUNTIME_DATA unsigned registered_var_count;
SIMT_RUNTIME_DATA uintptr_t module_base;
// The module's own image (its loaded segments): kernel code reads its constants there (tables,
// literals, `__constant__` arrays) and may write its module state (a static finding of its own).
SIMT_RUNTIME_DATA uintptr_t module_image_lo, module_image_hi;
enum AccessKind : unsigned { READ = 0, WRITE = 1, ATOMIC = 2, ATOMIC_LOAD = 3 };

SIMT_NOSAN static uint32_t pc_offset(void* ret) { return (uint32_t)((uintptr_t)ret - module_base); }
SIMT_NOSAN static inline unsigned site_of(void* ret) { return (unsigned)(((uintptr_t)ret * 0x9e3779b97f4a7c15ull) >> 56) % Scheduler::SITES; }

SIMT_NOSAN __attribute__((noinline)) static void record(Scheduler* s, int kind, long long place, long long offset, size_t bytes,
                                                        unsigned access, void* ret, unsigned other = 0, unsigned other_access = 0,
                                                        uint32_t other_pc = 0) {
  simt_finding& f = s->result->findings[kind];
  if (f.count++) return;
  Block& b = s->block;
  f.place = place; f.offset = offset; f.access_bytes = (unsigned)bytes; f.write = access;
  f.block[0] = b.block_index.x; f.block[1] = b.block_index.y; f.block[2] = b.block_index.z;
  f.thread = linear_thread(b, self()); f.pc = pc_offset(ret);
  f.other_thread = other; f.other_write = other_access; f.other_pc = other_pc;
}

// The shadow of the module's TLS block of this thread (see Scheduler::shadow), each byte and
// granule naming its variable. Allocated with a granule to spare: an access that starts in the
// block's last bytes may run past its end.
enum { GRANULE = 4 };
SIMT_NOSAN static bool ensure_shadow(Scheduler* s) {
  if (s->shadow) return true;
  if (!s->tls_size) { TlsExtent e = tls_extent(); s->tls_base = e.base; s->tls_size = e.size; }
  if (!s->tls_base || !s->tls_size) return false;
  const size_t granules = s->tls_size / GRANULE + 5, bytes = granules * GRANULE;
  Shadow* shadow = (Shadow*)calloc(bytes, sizeof(Shadow));
  Shadow* words = (Shadow*)calloc(granules, sizeof(Shadow));
  unsigned char* split = (unsigned char*)calloc(granules, 1);
  if (!shadow || !words || !split) { free(shadow); free(words); free(split); return false; }
  for (unsigned k = 0; k < registered_var_count; k++) {
    const simt_shared_var& v = registered_vars[k];
    for (unsigned long long i = 0; i < v.bytes + v.redzone && v.offset + i < s->tls_size; i++)
      shadow[v.offset + i].var = (uint16_t)((i < v.bytes ? 0 : REDZONE) | (k + 1));
  }
  size_t pool = (size_t)(__simt_dynamic_shared - s->tls_base);
  for (size_t i = 0; i < SIMT_DYNAMIC_SHARED_MAX && pool + i < s->tls_size; i++) shadow[pool + i].var = DYNAMIC;
  for (size_t g = 0; g < granules; g++) {
    const Shadow* b = shadow + g * GRANULE;
    words[g].var = b[0].var;
    split[g] = b[1].var != b[0].var || b[2].var != b[0].var || b[3].var != b[0].var;
  }
  s->shadow = shadow; s->granules = words; s->split = split; s->pool = pool;
  return true;
}

SIMT_NOSAN static bool ordered_by_warp_op(unsigned other, uint32_t other_syncs, unsigned warp, uint32_t syncs) {
  return other < MAX_THREADS && other / WARP == warp && other_syncs != syncs;
}

SIMT_NOSAN __attribute__((noinline)) static void shared_access(Scheduler* s, size_t offset, size_t bytes, unsigned access, void* ret) {
  Block& b = s->block;
  const unsigned t = linear_thread(b, self()), warp = t / WARP;
  const uint32_t syncs = b.warps[warp].syncs, now = s->interval;
  const size_t pool = s->pool;
  const unsigned long long dynamic = s->config->dynamic_shared;
  unsigned reported = 0;   // one finding of each kind per access, however many bytes it spans
  auto report = [&](int kind, const Shadow& e, unsigned other, unsigned other_access, uint32_t other_pc) SIMT_NOSAN {
    if (reported & (1u << kind)) return;
    reported |= 1u << kind;
    long long var = (e.var & ~REDZONE) == DYNAMIC ? -1 : (long long)((e.var & ~REDZONE) - 1);
    size_t start = var < 0 ? pool : (size_t)registered_vars[var].offset;
    record(s, kind, var, (long long)(offset - start), bytes, access, ret, other, other_access, other_pc);
  };
  // one byte, or one granule whose bytes share one history, at `at` in the TLS block
  auto judge = [&](Shadow& e, size_t at) SIMT_NOSAN __attribute__((always_inline)) {
    if (e.var == 0) return;   // TLS that is not shared memory (the runtime's own)
    bool past_dynamic = e.var == DYNAMIC && at - pool >= dynamic;
    if ((e.var & REDZONE) || past_dynamic) {
      report(SIMT_F_SHARED_OOB, e, 0, 0, 0);
      return;   // nobody's bytes: nothing to order
    }
    if (access == READ || access == ATOMIC_LOAD) {
      bool atomic_pair = access == ATOMIC_LOAD && e.write_atomic;
      if (e.write_interval < b.first_interval)
        report(SIMT_F_SHARED_UNWRITTEN, e, 0, 0, 0);
      else if (e.write_interval == now && e.writer != t && !atomic_pair && !ordered_by_warp_op(e.writer, e.write_syncs, warp, syncs))
        report(SIMT_F_SHARED_RACE, e, e.writer, e.write_atomic ? ATOMIC : WRITE, e.write_pc);
      // the read is remembered even when it was wrong, so a later write in the interval races with it
      if (e.read_interval != now) {
        e.read_interval = now; e.reader = (uint16_t)t; e.reader_warp = (uint16_t)warp; e.read_syncs = syncs; e.read_pc = pc_offset(ret);
      } else {
        if (e.reader != t) e.reader = MANY;
        if (e.reader_warp != warp) e.reader_warp = MANY;
        e.read_syncs = syncs;
      }
      return;
    }
    // a write or an atomic update
    bool atomic_pair = access == ATOMIC && e.write_atomic;
    if (e.write_interval == now && e.writer != t && !atomic_pair && !ordered_by_warp_op(e.writer, e.write_syncs, warp, syncs))
      report(SIMT_F_SHARED_RACE, e, e.writer, e.write_atomic ? ATOMIC : WRITE, e.write_pc);
    else if (e.read_interval == now && e.reader != t && !(e.reader_warp == warp && e.read_syncs != syncs))
      report(SIMT_F_SHARED_RACE, e, e.reader, READ, e.read_pc);
    // another writer in this interval that is no race means atomics of several threads
    e.writer = (e.write_interval == now && e.writer != t) ? MANY : (uint16_t)t;
    e.write_atomic = access == ATOMIC;
    e.write_interval = now; e.write_syncs = syncs; e.write_pc = pc_offset(ret);
  };
  const size_t first = offset / GRANULE, last = (offset + bytes - 1) / GRANULE;
  if (offset % GRANULE == 0 && bytes % GRANULE == 0) {   // whole granules: judged once each, unless one is split
    bool whole = true;
    for (size_t g = first; g <= last; g++) {
      // a granule the launch's dynamic size ends inside has bytes of both kinds
      size_t in_pool = g * GRANULE - pool;
      whole &= !s->split[g] && !(s->granules[g].var == DYNAMIC && in_pool < dynamic && dynamic - in_pool < GRANULE);
    }
    if (__builtin_expect(whole, 1)) {
      for (size_t g = first; g <= last; g++) judge(s->granules[g], g * GRANULE);
      return;
    }
  }
  for (size_t g = first; g <= last; g++) {   // from here on its bytes are judged one by one
    if (s->split[g]) continue;
    for (size_t i = 0; i < GRANULE; i++) s->shadow[g * GRANULE + i] = s->granules[g];
    s->split[g] = 1;
  }
  for (size_t i = 0; i < bytes; i++) judge(s->shadow[offset + i], offset + i);
}

// A store into a tensor's data: an input must not be written at all; an output element is
// stamped with its writer (block, thread, barrier interval), and a plain store of another
// thread with nothing ordering the two (another block, or the same barrier interval) races.
SIMT_NOSAN __attribute__((noinline)) static void region_write(Scheduler* s, const simt_region& r, uintptr_t a, size_t bytes,
                                                              unsigned access, void* ret) {
  if (!r.writers) {
    record(s, SIMT_F_INPUT_WRITE, r.index, (long long)(a - r.data), bytes, access, ret);
    return;
  }
  Block& b = s->block;
  const unsigned t = linear_thread(b, self());
  const unsigned long long who = access == ATOMIC ? 0x7ff : t;   // atomics never race with atomics
  const unsigned long long stamp = ((unsigned long long)b.linear_index + 1) << 32 | who << 21 | (s->interval & 0x1fffff);
  // elements are nearly always a power of two bytes: a shift, not a 64-bit division per store
  const unsigned size = r.element_bytes, shift = (unsigned)__builtin_ctz(size);
  const bool power_of_two = (size & (size - 1)) == 0;
  auto element = [&](size_t offset) SIMT_NOSAN { return power_of_two ? offset >> shift : offset / size; };
  const size_t first = element(a - r.data), last = element(a + bytes - 1 - r.data), count = element(r.bytes);
  for (size_t e = first; e <= last && e < count; e++) {
    unsigned long long before = __atomic_exchange_n(&r.writers[e], stamp, __ATOMIC_RELAXED);
    unsigned before_pc = r.writer_pcs[e];
    r.writer_pcs[e] = pc_offset(ret);
    if (!before || before == stamp) continue;
    unsigned long long before_who = (before >> 21) & 0x7ff;
    bool other_block = (before >> 32) != (stamp >> 32);
    bool same_interval = (before & 0x1fffff) == (stamp & 0x1fffff);
    bool both_atomic = before_who == 0x7ff && who == 0x7ff;
    if (!both_atomic && (other_block || (before_who != who && same_interval))) {
      simt_finding& f = s->result->findings[SIMT_F_GLOBAL_RACE];
      record(s, SIMT_F_GLOBAL_RACE, r.index, (long long)(e * r.element_bytes), r.element_bytes, access, ret,
             (unsigned)before_who, before_who == 0x7ff ? ATOMIC : WRITE, before_pc);
      if (f.count == 1) f.other_block = (unsigned)(before >> 32) - 1;
      return;
    }
  }
}

// The place in the launch's sorted region table of the tensor whose data or guard bands hold
// `a`, or -1 (not a tensor's).
SIMT_NOSAN static long region_at(const simt_config* c, uintptr_t a) {
  unsigned lo = 0, hi = c->region_count;   // the last region whose guard band starts at or before a
  while (lo < hi) {
    unsigned mid = (lo + hi) / 2;
    if (c->regions[mid].data - c->regions[mid].guard <= a) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return -1;
  const simt_region& r = c->regions[lo - 1];
  return a < r.data + r.bytes + r.guard ? (long)(lo - 1) : -1;   // beyond its guard: not a tensor's
}

// Where `a` is no tensor's data nor guard band, nor shared memory: the gap around it between
// those, as a Scheduler::Tensor of no region (nothing to check), or none (bytes 0).
SIMT_NOSAN static Scheduler::Tensor gap_around(const Scheduler* s, uintptr_t a) {
  uintptr_t lo = 0, hi = UINTPTR_MAX;
  auto exclude = [&](uintptr_t start, uintptr_t end) SIMT_NOSAN {   // [start, end) is checked memory
    if (end <= a) lo = end > lo ? end : lo;
    else if (start > a) hi = start < hi ? start : hi;
    else hi = lo;   // `a` is inside: no gap
  };
  const simt_config* c = s->config;
  for (unsigned i = 0; i < c->region_count; i++) {
    const simt_region& r = c->regions[i];
    exclude(r.data - r.guard, r.data + r.bytes + r.guard);
  }
  exclude((uintptr_t)s->tls_base, (uintptr_t)s->tls_base + s->tls_size);
  return hi > lo ? Scheduler::Tensor{lo, hi - lo, nullptr} : Scheduler::Tensor{0, 0, nullptr};
}

SIMT_NOSAN __attribute__((noinline)) static void region_access(Scheduler* s, uintptr_t a, size_t bytes, unsigned access, void* ret) {
  const simt_config* c = s->config;
  Scheduler::Site& site = s->sites[site_of(ret)];
  long at = region_at(c, a);
  Dl_info object;
  if (at < 0 && (s->checking & 2) && a - module_image_lo >= module_image_hi - module_image_lo && !dladdr((void*)a, &object)) {
    // no tensor's data or guard band, no shared memory, not its own stack, not the image of
    // the module or of a library (`stdout`, which a kernel's printf reads): with every pointer
    // the kernel was given watched, an address it could only have made by going far past a
    // tensor (an index's stride, a wrapped offset) or out of thin air
    // The block stops here, before the access: such an address may be unmapped, or anyone's.
    record(s, access == READ || access == ATOMIC_LOAD ? SIMT_F_OOB_READ : SIMT_F_OOB_WRITE, -1, 0, bytes, access, ret);
    s->block.stopped = 1;
    abandon_block(s, self());
  }
  if (at < 0) {   // the next access of this site likely is no tensor's either
    Scheduler::Tensor gap = gap_around(s, a);
    if (gap.bytes) { site.before = site.last; site.last = gap; }
    return;
  }
  const simt_region& r = c->regions[at];
  if (a >= r.data && a + bytes <= r.data + r.bytes) {          // inside the data: the next access likely is too
    site.before = site.last;
    site.last = Scheduler::Tensor{r.data, r.bytes, &r};
    if (access == WRITE || access == ATOMIC) region_write(s, r, a, bytes, access, ret);
    return;
  }
  long long offset = a >= r.data ? (long long)(a - r.data) : -(long long)(r.data - a);
  record(s, access == READ || access == ATOMIC_LOAD ? SIMT_F_OOB_READ : SIMT_F_OOB_WRITE, r.index, offset, bytes, access, ret);
}

SIMT_NOSAN __attribute__((always_inline)) static inline void check_access(const volatile void* p, size_t bytes, unsigned access, void* ret) {
  uintptr_t sp; asm("movq %%rsp, %0" : "=r"(sp));   // not __builtin_frame_address: no frame pointer for the hooks
  uintptr_t a = (uintptr_t)p;
  // the running code's own stack (a fiber's locals and the header that holds threadIdx; off a
  // fiber, the OS thread's): nothing to check, and the commonest access that is no tensor's
  if (((a ^ sp) & ~(uintptr_t)(SIMT_STACK - 1)) == 0) return;
  // kernel code runs only on fibers, which find their scheduler from their stack (a TLS
  // lookup would cost as much as the check); anything else is the runtime's own
  if (__builtin_expect(!on_fiber_stack(sp), 0)) return;
  Scheduler* s = self()->scheduler;
  if (__builtin_expect(!s->checking, 0)) return;
  // in the tensor data this site last touched?
  const Scheduler::Site& site = s->sites[site_of(ret)];
  const Scheduler::Tensor* t = &site.last;
  uintptr_t into = a - t->data;
  if (__builtin_expect(!(into < t->bytes && bytes <= t->bytes - into), 0)) { t = &site.before; into = a - t->data; }
  if (__builtin_expect(into < t->bytes && bytes <= t->bytes - into, 1)) {
    if ((access == WRITE || access == ATOMIC) && t->region) region_write(s, *t->region, a, bytes, access, ret);
    return;
  }
  size_t offset = a - (uintptr_t)s->tls_base;
  if (offset < s->tls_size) { shared_access(s, offset, bytes, access, ret); return; }
  if (a - (uintptr_t)s < sizeof(Scheduler)) return;   // the runtime's block state
  region_access(s, a, bytes, access, ret);
}

// An access of N bytes (2, 4, 8 or 16) through an entry point the compiler picks only when the
// access's type is N-aligned (`__tsan_readN`, not `__tsan_unaligned_readN` or a byte range) is
// one N-byte load or store on a GPU, which faults unless its address is a multiple of N
// (NVIDIA: "misaligned address"). x86 runs a scalar one silently, and the thread runs on as it
// does after the other findings, so the outputs are still compared; but it faults for real on
// the aligned vector move GCC emits for a 16-byte one, so there the thread never goes back to
// the kernel and its block stops (its outputs stay unwritten). Only tensors and shared memory
// are judged (their placement is the launch's and the kernel's; the stack and the module's own
// data are the host compiler's layout).
SIMT_NOSAN __attribute__((noinline, cold)) static void misaligned(const volatile void* p, size_t bytes, unsigned access, void* ret) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (!on_fiber_stack(sp)) return;
  Fiber* me = self(); Scheduler* s = me->scheduler;
  if (!s->checking) return;
  uintptr_t a = (uintptr_t)p;
  size_t tls = a - (uintptr_t)s->tls_base;
  long long place, offset;
  unsigned shared = 0;
  if (tls < s->tls_size && s->shadow && s->shadow[tls].var) {
    uint16_t var = s->shadow[tls].var & ~REDZONE;
    size_t pool = (size_t)(__simt_dynamic_shared - s->tls_base);
    place = var == DYNAMIC ? -1 : (long long)(var - 1);
    offset = (long long)(tls - (var == DYNAMIC ? pool : (size_t)registered_vars[var - 1].offset));
    shared = 1;
  } else {
    long at = region_at(s->config, a);
    if (at < 0) return;
    const simt_region& r = s->config->regions[at];
    place = r.index;
    offset = a >= r.data ? (long long)(a - r.data) : -(long long)(r.data - a);
  }
  simt_finding& f = s->result->findings[SIMT_F_MISALIGNED];
  record(s, SIMT_F_MISALIGNED, place, offset, bytes, access, ret);
  if (f.count == 1) f.shared = shared;
  if (bytes < 16) return;
  s->block.stopped = 1;
  abandon_block(s, me);
}

// An index of an array whose size the source declares, past that size (or negative), as
// -fsanitize=bounds reports it before the access: the accesses above check tensors and shared
// memory by address, but a thread's own local arrays live on its fiber's stack, which they
// leave alone, so `float acc[8]` indexed at 8 (a loop's `<=`, an array declared one short)
// clobbered a neighbouring local and passed wherever that did not reach an output. On a GPU
// such an index reads or writes whatever local memory lies there. The block stops here,
// before the access: past a local array a write would overwrite the fiber's own frames.
// `data` is the compiler's: the source location, then the array's and the index's type
// descriptors ({kind, info, name}: an integer's info is log2(bits) << 1 | signed); an index
// of at most 64 bits is passed as its value.
struct simt_ubsan_type { uint16_t kind, info; char name[1]; };
struct simt_ubsan_bounds { const char* file; uint32_t line, column; const simt_ubsan_type* array; const simt_ubsan_type* index; };
SIMT_NOSAN __attribute__((noinline, cold)) static void index_out_of_bounds(const void* data, uintptr_t value, void* ret) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (!on_fiber_stack(sp)) return;
  Fiber* me = self(); Scheduler* s = me->scheduler;
  if (!s->checking) return;
  const simt_ubsan_bounds* d = (const simt_ubsan_bounds*)data;
  unsigned info = d->index->info, bits = 1u << (info >> 1);
  long long index = (long long)value;
  if (bits > 64) index = *(const long long*)value;   // passed by address: its low 64 bits
  else if ((info & 1) && bits < 64) index = (long long)(value << (64 - bits)) >> (64 - bits);
  else if (!(info & 1) && bits < 64) index = (long long)(value & ((1ull << bits) - 1));
  // the array's size from its type's name: GCC's `'float [8]'`, clang's `'float[8]'`
  // (`'float [4][8]'`: the first [])
  long long size = -1;
  for (const char* c = d->array->name; *c; c++) {
    if (c[0] == '[' && c[1] >= '0' && c[1] <= '9') { size = strtoll(c + 1, nullptr, 10); break; }
  }
  simt_finding& f = s->result->findings[SIMT_F_ARRAY_INDEX];
  record(s, SIMT_F_ARRAY_INDEX, size, index, 0, 0, ret);
  if (f.count == 1) { f.line = d->line; f.column = d->column; }
  s->block.stopped = 1;
  abandon_block(s, me);
}

// A volatile read that finds what the running thread's last volatile read found (the same
// address, the same value), again and again: a spin-wait on a flag. On a GPU another block
// sets it; here that block runs on another worker thread, or never while this one spins on a
// fiber of its own worker (the launch then hangs until its time limit). Past SPIN_READS such
// reads in a row, every SPIN_PAUSE_EVERY-th sleeps a millisecond first: a wait that ends still
// ends (a millisecond late at most), and a kernel that never returns no longer holds a core the
// run's other jobs need until its time limit (the suite's hang control held one of two cores
// for its whole second). A loop that only reads an unchanging volatile value (not a wait)
// pays a millisecond per 32,768 reads past the first million. A thread's own stack (a
// volatile local) is no flag.
enum : unsigned long long { SPIN_READS = 1ull << 20, SPIN_PAUSE_EVERY = 1ull << 15 };
SIMT_NOSAN __attribute__((noinline, cold)) static void spin_pause() {
  struct timespec pause = {0, 1000 * 1000};
  nanosleep(&pause, nullptr);
}
SIMT_NOSAN __attribute__((always_inline)) static inline void spin(const volatile void* p, size_t bytes) {
  uintptr_t sp; asm("movq %%rsp, %0" : "=r"(sp));
  uintptr_t a = (uintptr_t)p;
  if (((a ^ sp) & ~(uintptr_t)(SIMT_STACK - 1)) == 0 || !on_fiber_stack(sp)) return;
  Scheduler* s = self()->scheduler;
  unsigned long long value = 0;
  memcpy(&value, (const void*)p, bytes < sizeof value ? bytes : sizeof value);
  if (s->spin_address != a || s->spin_value != value) { s->spin_address = a; s->spin_value = value; s->spin_reads = 0; return; }
  if (++s->spin_reads > SPIN_READS && s->spin_reads % SPIN_PAUSE_EVERY == 0) spin_pause();
}

// The access checks of an entry point for a naturally aligned access of `bytes`.
SIMT_NOSAN __attribute__((always_inline)) static inline void check_aligned(const volatile void* p, size_t bytes, unsigned access, void* ret) {
  check_access(p, bytes, access, ret);
  if (__builtin_expect(((uintptr_t)p & (bytes - 1)) != 0, 0)) misaligned(p, bytes, access, ret);
}
}  // namespace simt

#ifndef SIMT_KERNEL_TU
// The instrumentation's entry points (GCC's and clang's -fsanitize=thread call them).
#define SIMT_TSAN SIMT_NOSAN __attribute__((visibility("hidden"), used))
// The aligned entry points also check alignment (see simt::misaligned); the unaligned ones are
// what the compiler calls for an access its type does not align (a packed field), which a GPU
// compiler splits into narrower accesses too.
#define SIMT_TSAN_ACCESS(n)                                                                                              \
  extern "C" SIMT_TSAN void __tsan_read##n(void* p) { simt::check_aligned(p, n, simt::READ, __builtin_return_address(0)); }  \
  extern "C" SIMT_TSAN void __tsan_write##n(void* p) { simt::check_aligned(p, n, simt::WRITE, __builtin_return_address(0)); } \
  extern "C" SIMT_TSAN void __tsan_unaligned_read##n(void* p) { simt::check_access(p, n, simt::READ, __builtin_return_address(0)); } \
  extern "C" SIMT_TSAN void __tsan_unaligned_write##n(void* p) { simt::check_access(p, n, simt::WRITE, __builtin_return_address(0)); } \
  extern "C" SIMT_TSAN void __tsan_volatile_read##n(void* p) { simt::check_aligned(p, n, simt::READ, __builtin_return_address(0)); simt::spin(p, n); } \
  extern "C" SIMT_TSAN void __tsan_volatile_write##n(void* p) { simt::check_aligned(p, n, simt::WRITE, __builtin_return_address(0)); } \
  extern "C" SIMT_TSAN void __tsan_unaligned_volatile_read##n(void* p) { simt::check_access(p, n, simt::READ, __builtin_return_address(0)); simt::spin(p, n); } \
  extern "C" SIMT_TSAN void __tsan_unaligned_volatile_write##n(void* p) { simt::check_access(p, n, simt::WRITE, __builtin_return_address(0)); }
SIMT_TSAN_ACCESS(1) SIMT_TSAN_ACCESS(2) SIMT_TSAN_ACCESS(4) SIMT_TSAN_ACCESS(8) SIMT_TSAN_ACCESS(16)
extern "C" SIMT_TSAN void __tsan_read_range(void* p, size_t n) { simt::check_access(p, n, simt::READ, __builtin_return_address(0)); }
extern "C" SIMT_TSAN void __tsan_write_range(void* p, size_t n) { simt::check_access(p, n, simt::WRITE, __builtin_return_address(0)); }
// clang calls these for an aggregate copy or a memset in kernel code (GCC calls the libc
// functions, unchecked): the bytes are checked as one read and one write of that many.
extern "C" SIMT_TSAN void* __tsan_memcpy(void* d, const void* p, size_t n) {
  simt::check_access(p, n, simt::READ, __builtin_return_address(0));
  simt::check_access(d, n, simt::WRITE, __builtin_return_address(0));
  return memcpy(d, p, n);
}
extern "C" SIMT_TSAN void* __tsan_memmove(void* d, const void* p, size_t n) {
  simt::check_access(p, n, simt::READ, __builtin_return_address(0));
  simt::check_access(d, n, simt::WRITE, __builtin_return_address(0));
  return memmove(d, p, n);
}
extern "C" SIMT_TSAN void* __tsan_memset(void* d, int c, size_t n) {
  simt::check_access(d, n, simt::WRITE, __builtin_return_address(0));
  return memset(d, c, n);
}
// The C math routines device code has that store through a pointer (`sincosf`, `frexpf`,
// `modff`, `remquof`, and their double forms): GCC and clang call the C library's, whose stores
// no instrumentation sees, so `frexpf(x, &e[n])` stored past a tensor's end unchecked. Kernel
// code's calls are pointed here, as its memcpy's are: each result is computed into a local and
// stored once the store is checked as the kernel's own store is.
#define SIMT_CHECKED_STORE(p, v) (simt::check_aligned((p), sizeof *(p), simt::WRITE, __builtin_return_address(0)), *(p) = (v))
extern "C" SIMT_TSAN void __simt_sincosf(float x, float* s, float* c) {
  float sine, cosine; sincosf(x, &sine, &cosine); SIMT_CHECKED_STORE(s, sine); SIMT_CHECKED_STORE(c, cosine);
}
extern "C" SIMT_TSAN void __simt_sincos(double x, double* s, double* c) {
  double sine, cosine; sincos(x, &sine, &cosine); SIMT_CHECKED_STORE(s, sine); SIMT_CHECKED_STORE(c, cosine);
}
extern "C" SIMT_TSAN float __simt_frexpf(float x, int* e) { int v; float r = frexpf(x, &v); SIMT_CHECKED_STORE(e, v); return r; }
extern "C" SIMT_TSAN double __simt_frexp(double x, int* e) { int v; double r = frexp(x, &v); SIMT_CHECKED_STORE(e, v); return r; }
extern "C" SIMT_TSAN float __simt_modff(float x, float* i) { float v; float r = modff(x, &v); SIMT_CHECKED_STORE(i, v); return r; }
extern "C" SIMT_TSAN double __simt_modf(double x, double* i) { double v; double r = modf(x, &v); SIMT_CHECKED_STORE(i, v); return r; }
extern "C" SIMT_TSAN float __simt_remquof(float x, float y, int* q) { int v; float r = remquof(x, y, &v); SIMT_CHECKED_STORE(q, v); return r; }
extern "C" SIMT_TSAN double __simt_remquo(double x, double y, int* q) { int v; double r = remquo(x, y, &v); SIMT_CHECKED_STORE(q, v); return r; }
#undef SIMT_CHECKED_STORE
// `printf`'s `%n` stores the count of characters printed so far through a pointer: the C
// library's store, which no check sees, and no GPU's printf stores it. Kernel code's printf and
// vprintf are pointed here: a format with a `%n` conversion stops the block (a kernel error
// that names the format); any other prints as the C library prints it.
namespace simt {
SIMT_NOSAN static bool stores_a_count(const char* format) {
  for (const char* f = format; *f; f++) {
    if (*f != '%') continue;
    if (*++f == '%') continue;
    while (*f && strchr("-+ #0'123456789.*$hlLqjzt", *f)) f++;
    if (*f == 'n') return true;
    if (!*f) break;
  }
  return false;
}
SIMT_NOSAN __attribute__((noinline, cold)) static void printf_stores_a_count(const char* format) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  if (!on_fiber_stack(sp)) return;
  Fiber* me = self(); Scheduler* s = me->scheduler; Block& b = s->block;
  flush(b, me);
  char shown[64];
  size_t i = 0;
  for (const char* f = format; *f && i + 4 < sizeof shown; f++) shown[i++] = (*f >= ' ' && *f < 127) ? *f : '?';
  shown[i] = 0;
  fail(b, "thread %u called printf with a %%n conversion (format \"%s\"): the count it stores goes through no check, and no GPU's "
       "printf stores it", linear_thread(b, me), shown);
  abandon_block(s, me);
}
}  // namespace simt
extern "C" SIMT_TSAN int __simt_vprintf(const char* format, va_list args) {
  if (simt::stores_a_count(format)) simt::printf_stores_a_count(format);
  return vprintf(format, args);
}
extern "C" SIMT_TSAN int __simt_printf(const char* format, ...) {
  if (simt::stores_a_count(format)) simt::printf_stores_a_count(format);
  va_list args; va_start(args, format); int printed = vprintf(format, args); va_end(args);
  return printed;
}
// -fsanitize=bounds's report of an index past an array's declared size (the compiler's
// declaration is `void (void*, void*)`); `_abort` where recovery is off.
extern "C" SIMT_TSAN void __ubsan_handle_out_of_bounds(void* data, void* index) {
  simt::index_out_of_bounds(data, (uintptr_t)index, __builtin_return_address(0));
}
extern "C" SIMT_TSAN void __ubsan_handle_out_of_bounds_abort(void* data, void* index) {
  simt::index_out_of_bounds(data, (uintptr_t)index, __builtin_return_address(0));
}
extern "C" SIMT_TSAN void __tsan_init() {}
extern "C" SIMT_TSAN void __tsan_func_entry(void*) {}
extern "C" SIMT_TSAN void __tsan_func_exit() {}
extern "C" SIMT_TSAN void __tsan_vptr_update(void**, void*) {}
extern "C" SIMT_TSAN void __tsan_vptr_read(void**) {}
extern "C" SIMT_TSAN void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" SIMT_TSAN void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#define SIMT_RA __builtin_return_address(0)
#define SIMT_TSAN_ATOMIC(bits, T)                                                                                                    \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_load(const volatile void* a, int) {                                                 \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC_LOAD, SIMT_RA); return __atomic_load_n((const volatile T*)a, __ATOMIC_SEQ_CST); } \
  extern "C" SIMT_TSAN void __tsan_atomic##bits##_store(volatile void* a, T v, int) {                                              \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); __atomic_store_n((volatile T*)a, v, __ATOMIC_SEQ_CST); }             \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_exchange(volatile void* a, T v, int) {                                              \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); return __atomic_exchange_n((volatile T*)a, v, __ATOMIC_SEQ_CST); }   \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_fetch_add(volatile void* a, T v, int) {                                             \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); return __atomic_fetch_add((volatile T*)a, v, __ATOMIC_SEQ_CST); }    \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_fetch_sub(volatile void* a, T v, int) {                                             \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); return __atomic_fetch_sub((volatile T*)a, v, __ATOMIC_SEQ_CST); }    \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_fetch_and(volatile void* a, T v, int) {                                             \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); return __atomic_fetch_and((volatile T*)a, v, __ATOMIC_SEQ_CST); }    \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_fetch_or(volatile void* a, T v, int) {                                              \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); return __atomic_fetch_or((volatile T*)a, v, __ATOMIC_SEQ_CST); }     \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_fetch_xor(volatile void* a, T v, int) {                                             \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); return __atomic_fetch_xor((volatile T*)a, v, __ATOMIC_SEQ_CST); }    \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_fetch_nand(volatile void* a, T v, int) {                                            \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA); return __atomic_fetch_nand((volatile T*)a, v, __ATOMIC_SEQ_CST); }   \
  extern "C" SIMT_TSAN int __tsan_atomic##bits##_compare_exchange_strong(volatile void* a, T* c, T v, int, int) {                 \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA);                                                                      \
    return __atomic_compare_exchange_n((volatile T*)a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); }                       \
  extern "C" SIMT_TSAN int __tsan_atomic##bits##_compare_exchange_weak(volatile void* a, T* c, T v, int, int) {                   \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA);                                                                      \
    return __atomic_compare_exchange_n((volatile T*)a, c, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); }                        \
  extern "C" SIMT_TSAN T __tsan_atomic##bits##_compare_exchange_val(volatile void* a, T c, T v, int, int) {                        \
    simt::check_aligned(a, sizeof(T), simt::ATOMIC, SIMT_RA);                                                                      \
    __atomic_compare_exchange_n((volatile T*)a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c; }
SIMT_TSAN_ATOMIC(8, uint8_t) SIMT_TSAN_ATOMIC(16, uint16_t) SIMT_TSAN_ATOMIC(32, uint32_t) SIMT_TSAN_ATOMIC(64, uint64_t)

// The module's `__shared__` variables, from its symbol table (the engine calls this once,
// before any launch). Redzone bytes are those a rewritten declaration put after the array.
extern "C" SIMT_NOSAN __attribute__((visibility("default"), used)) int simt_register_shared(const simt_shared_var* vars, unsigned count) {
  if (count > simt::MAX_SHARED_VARS) return 1;
  for (unsigned i = 0; i < count; i++) simt::registered_vars[i] = vars[i];
  simt::registered_var_count = count;
  Dl_info info;
  if (dladdr((void*)&simt_register_shared, &info)) simt::module_base = (uintptr_t)info.dli_fbase;
  dl_iterate_phdr(
      [](struct dl_phdr_info* object, size_t, void*) -> int {   // at registration, off every fiber: unchecked
        if (object->dlpi_addr != simt::module_base) return 0;
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        for (int i = 0; i < object->dlpi_phnum; i++) {
          const ElfW(Phdr)& segment = object->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD) continue;
          uintptr_t start = object->dlpi_addr + segment.p_vaddr;
          lo = start < lo ? start : lo;
          hi = start + segment.p_memsz > hi ? start + segment.p_memsz : hi;
        }
        simt::module_image_lo = lo;
        simt::module_image_hi = hi;
        return 1;
      },
      nullptr);
  return 0;
}

// Runs blocks of one launch until the shared counter is exhausted; called once per
// worker OS thread of the launch.
extern "C" SIMT_NOSAN __attribute__((visibility("default"), used))
int simt_run_blocks(const simt::Kernel* k, const simt_config* c, void** args, simt_result* r) {
  using namespace simt;
  if (!tls_scheduler) tls_scheduler = (Scheduler*)calloc(1, sizeof(Scheduler));
  Scheduler* s = tls_scheduler; Block& b = s->block;
  unsigned n = c->block[0] * c->block[1] * c->block[2];
  r->code = 0; r->message[0] = 0; r->blocks = r->switches = r->inactive_reads = 0; r->stacks = 0;
  memset(r->findings, 0, sizeof r->findings);
  if (!s) { r->code = 2; snprintf(r->message, sizeof r->message, "out of memory for the block scheduler"); return 2; }
  if (n == 0 || n > MAX_THREADS) { r->code = 2; snprintf(r->message, sizeof r->message, "block of %u threads (1 to %d allowed)", n, MAX_THREADS); return 2; }
  if (c->dynamic_shared > SIMT_DYNAMIC_SHARED_MAX) {
    r->code = 2; snprintf(r->message, sizeof r->message, "%llu bytes of dynamic shared memory (at most %d)", c->dynamic_shared, SIMT_DYNAMIC_SHARED_MAX);
    return 2;
  }
  b.kernel = k; b.args = args; b.threads = n; b.wake_reverse = c->wake_reverse;
  b.block_dim = uint3{c->block[0], c->block[1], c->block[2]};
  b.grid_dim = uint3{c->grid[0], c->grid[1], c->grid[2]};
  unsigned long long blocks = 1ull * c->grid[0] * c->grid[1] * c->grid[2];
  s->config = c; s->result = r;
  memset(s->sites, 0, sizeof s->sites);
  if (c->check_memory && !ensure_shadow(s)) {
    r->code = 2; snprintf(r->message, sizeof r->message, "out of memory for the shared-memory shadow of %zu bytes", s->tls_size);
    return 2;
  }
  // Blocks are handed out in chunks: one shared counter bumped per block costs a
  // cache-line transfer per block (it kept 2 threads at 1-thread speed).
  const unsigned long long chunk = blocks >= 256ull * 16 ? 16 : 1;
  unsigned long long next = 0, end = 0;
  for (;;) {
    if (next == end) {
      if (__atomic_load_n(c->abort_flag, __ATOMIC_RELAXED)) break;
      next = __atomic_fetch_add(c->next_block, chunk, __ATOMIC_RELAXED);
      if (next >= blocks) break;
      end = next + chunk < blocks ? next + chunk : blocks;
    }
    unsigned long long bi = c->block_order ? c->block_order[next] : next;
    b.block_index = uint3{unsigned(bi % c->grid[0]), unsigned((bi / c->grid[0]) % c->grid[1]), unsigned(bi / (1ull * c->grid[0] * c->grid[1]))};
    b.linear_index = (uint32_t)bi;
    b.switches = b.inactive_reads = 0;
    next++;
    // the extent is cached in the heap-allocated Scheduler: TLS itself gets poisoned; and an
    // access outside every checked place is judged only once shared memory is known to be one
    if ((c->shared_poison || (c->check_memory & 2)) && !s->tls_size) { TlsExtent e = tls_extent(); s->tls_base = e.base; s->tls_size = e.size; }
    if (c->shared_poison) poison_shared(TlsExtent{s->tls_base, s->tls_size}, c->shared_poison & 0xff, c->dynamic_shared);
    set_thread_order(b, c, bi);
    s->checking = c->check_memory;
    int e = run_block(s);
    s->checking = 0;
    r->blocks++; r->switches += b.switches; r->inactive_reads += b.inactive_reads;
    if (e) {
      r->code = 1;
      snprintf(r->message, sizeof r->message, "block (%u,%u,%u): %s", b.block_index.x, b.block_index.y, b.block_index.z, b.message);
      __atomic_store_n(c->abort_flag, 1, __ATOMIC_RELAXED);
      break;
    }
  }
  r->stacks = s->stacks;
  return r->code;
}
#endif  // SIMT_KERNEL_TU

// One line per kernel, appended by the engine: exports `const simt::Kernel simt_k_<symbol>`.
#define SIMT_KERNEL_AS(symbol, ...)                                                             \
  extern "C" __attribute__((visibility("default"))) const simt::Kernel simt_k_##symbol =       \
      simt::describe(__VA_ARGS__, &simt::loop<__VA_ARGS__>);
#define SIMT_KERNEL(name) SIMT_KERNEL_AS(name, &name)

// Kernel-visible built-in variables: fields of the running fiber's header, read by an asm
// load (a plain load would be instrumented: a call into the memory checks per use, to find
// the thread's own stack). The memory operands keep the load after any store or call, as a
// plain load would be: a worker runs its threads one after another. One function per
// variable, so that the offset lint (src/backend/host/lint.rs) knows a thread index and a
// block size in the SSA dump (`D.5 = simt::thread_index (_1);`) as it knew the loads.
namespace simt {
static __forceinline__ uint3 header_load(const uint3& v) {
  uint3 r;
  asm("movl %3, %0\n\tmovl %4, %1\n\tmovl %5, %2" : "=&r"(r.x), "=&r"(r.y), "=&r"(r.z) : "m"(v.x), "m"(v.y), "m"(v.z));
  return r;
}
static __forceinline__ uint3 thread_index(const Fiber* f) { return header_load(f->thread_index); }
static __forceinline__ uint3 block_index(const Fiber* f) { return header_load(f->block_index); }
static __forceinline__ uint3 block_dim(const Fiber* f) { return header_load(f->block_dim); }
static __forceinline__ uint3 grid_dim(const Fiber* f) { return header_load(f->grid_dim); }
}  // namespace simt
#define threadIdx (::simt::thread_index(::simt::self()))
#define blockIdx (::simt::block_index(::simt::self()))
#define blockDim (::simt::block_dim(::simt::self()))
#define gridDim (::simt::grid_dim(::simt::self()))

// Kernel code keeps a copy of an aggregate whole: GCC's scalar replacement of aggregates would
// split `float4 v = p[i]` into four 4-byte loads before the instrumentation sees it, and the
// 16-byte load a GPU makes of it (and its alignment) would not be checked. clang splits such
// copies itself and has no such switch: there the fields' own accesses are checked.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-tree-sra")
#endif

// Kernel code cannot turn the checks off: a function marked `no_sanitize("thread")` (or
// `no_sanitize_thread`, `disable_sanitizer_instrumentation`, the prelude's own SIMT_NOSAN) would
// make no call into them, its stores past a tensor unseen; `no_sanitize("bounds")` or
// `no_sanitize_undefined` would drop the index check; `#pragma GCC optimize("tree-sra")` or
// `reset_options` would undo the line above. Every name that says so is poisoned from here on,
// in whatever spelling or macro the source reaches it by: its use is a compile error at its line.
#undef SIMT_NOSAN
#undef SIMT_RUNTIME_FN
#undef SIMT_TSAN
#pragma GCC poison no_sanitize __no_sanitize__ no_sanitize_thread __no_sanitize_thread__ no_sanitize_undefined
#pragma GCC poison __no_sanitize_undefined__ disable_sanitizer_instrumentation __disable_sanitizer_instrumentation__
#pragma GCC poison optimize __optimize__ reset_options SIMT_NOSAN SIMT_RUNTIME_FN SIMT_TSAN
