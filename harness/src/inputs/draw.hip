// The harness's own kernels, built by a GPU backend's compiler like any kernel's: the input
// generators (kc_draw), the keyed hash gate 3 checks a large input with (kc_hash), and the
// store of the words the host's modifiers changed in an input drawn here (kc_patch).
//
// kc_draw: the harness's input generators on a device, the bytes `Generator::generate` makes on the
// host (harness/src/inputs.rs), element for element. A GPU-only case's tables are 2 to 2.2 G
// values, seconds of all a host's cores; a device makes them in milliseconds.
//
// Every value is a function of its element's index alone: splitmix64's state is a counter
// (state = seed + draws * GOLDEN), a normal is the sum of 12 uniforms minus 6 added in draw
// order, then mean + std * z; a uniform low + (high - low) * u; an int low + the high 64 bits
// of draw * range. Integer arithmetic and single IEEE adds and multiplies of doubles, each
// rounded to nearest even on every backend (every backend builds with FMA contraction off),
// so the bits are the host's; the harness still compares a sample of every tensor drawn here
// with the host's own generator before it uses one.
//
// out          the tensor's bytes (count elements of `dtype`)
// generator    0 normal(a, b), 1 uniform(a, b), 2 int(low = a, low + range = a + b)
// a, b         normal and uniform: the two doubles' bits; int: low and the range (< 2^63)
// dtype        0 f32, 1 f16, 2 bf16, 3 i32, 4 u32, 5 u8 (engine::DType's order)

#define KC_GOLDEN 0x9e3779b97f4a7c15ull

__device__ __forceinline__ unsigned long long kc_mix(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// a draw's top 53 bits as a uniform in [0, 1): exact (a power-of-two scale)
__device__ __forceinline__ double kc_unit(unsigned long long draw) {
  return (double)(long long)(draw >> 11) * (1.0 / 9007199254740992.0);
}

__device__ __forceinline__ double kc_double(long long bits) {
  union { long long i; double d; } u;
  u.i = bits;
  return u.d;
}

__device__ __forceinline__ unsigned long long kc_bits(double d) {
  union { double d; unsigned long long i; } u;
  u.d = d;
  return u.i;
}

// the high 64 bits of a 128-bit product, from 32-bit halves (no compiler's builtin needed)
__device__ __forceinline__ unsigned long long kc_mul_high(unsigned long long a, unsigned long long b) {
  unsigned long long a_low = a & 0xffffffffull, a_high = a >> 32, b_low = b & 0xffffffffull, b_high = b >> 32;
  unsigned long long low_low = a_low * b_low, low_high = a_low * b_high, high_low = a_high * b_low;
  unsigned long long middle = (low_low >> 32) + (low_high & 0xffffffffull) + (high_low & 0xffffffffull);
  return a_high * b_high + (low_high >> 32) + (high_low >> 32) + (middle >> 32);
}

// engine::dtype's round_to_half: an f64 rounded to nearest even in a 16-bit format with
// `mantissa` bits and smallest normal exponent `min_exponent`, subnormals and overflow
// included (no generator here makes a NaN or an infinity)
__device__ __forceinline__ unsigned short kc_half(double value, int mantissa, int min_exponent) {
  unsigned long long bits = kc_bits(value);
  unsigned short sign = (unsigned short)((bits >> 48) & 0x8000);
  int biased = (int)((bits >> 52) & 0x7ff);
  int format_bias = 1 - min_exponent, dropped = 52 - mantissa;
  if (biased >= 1023 + min_exponent && biased <= 1023 + format_bias) {
    unsigned long long magnitude = bits & ~(1ull << 63);
    unsigned long long rounded = (magnitude + ((1ull << (dropped - 1)) - 1) + ((magnitude >> dropped) & 1)) >> dropped;
    return sign | (unsigned short)(rounded - ((unsigned long long)(1023 - format_bias) << mantissa));
  }
  unsigned long long infinity = ((1ull << (15 - mantissa)) - 1) << mantissa;
  unsigned long long fraction = bits & ((1ull << 52) - 1);
  unsigned long long significand = biased == 0 ? fraction : (fraction | (1ull << 52));
  int exponent = biased == 0 ? -1022 : biased - 1023;
  int below = min_exponent - exponent > 0 ? min_exponent - exponent : 0;
  int shift = 52 - mantissa + below;
  if (shift > 63) shift = 63;
  unsigned long long kept = significand >> shift;
  unsigned long long rest = significand & ((1ull << shift) - 1);
  unsigned long long half_quantum = 1ull << (shift - 1);
  unsigned long long quanta = kept + ((rest > half_quantum || (rest == half_quantum && (kept & 1))) ? 1 : 0);
  int field_exponent = exponent > min_exponent ? exponent : min_exponent;
  unsigned long long field = (unsigned long long)(field_exponent - min_exponent) << mantissa;
  unsigned long long total = field + quanta;
  return sign | (unsigned short)(total < infinity ? total : infinity);
}

// Rust's saturating `as` of an f64 to an integer type: NaN 0, the ends clamped, else toward 0
__device__ __forceinline__ long long kc_saturate(double value, double low, double high) {
  if (value != value) return 0;
  if (value <= low) return (long long)low;
  if (value >= high) return (long long)high;
  return (long long)value;
}

extern "C" __global__ void kc_draw(void* out, long long count, long long seed, int generator, long long a, long long b,
                                   int dtype) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long element = (long long)blockIdx.x * blockDim.x + threadIdx.x; element < count; element += stride) {
    double value;
    if (generator == 0) {
      unsigned long long base = (unsigned long long)seed + (unsigned long long)element * 12ull * KC_GOLDEN;
      double sum = 0.0;
      for (int draw = 1; draw <= 12; ++draw) sum += kc_unit(kc_mix(base + (unsigned long long)draw * KC_GOLDEN));
      value = kc_double(a) + kc_double(b) * (sum - 6.0);
    } else {
      unsigned long long draw = kc_mix((unsigned long long)seed + ((unsigned long long)element + 1ull) * KC_GOLDEN);
      if (generator == 1) {
        double low = kc_double(a), high = kc_double(b);
        value = low + (high - low) * kc_unit(draw);
      } else {
        value = (double)(a + (long long)kc_mul_high(draw, (unsigned long long)b));
      }
    }
    switch (dtype) {
      case 0: ((float*)out)[element] = (float)value; break;
      case 1: ((unsigned short*)out)[element] = kc_half(value, 10, -14); break;
      case 2: ((unsigned short*)out)[element] = kc_half(value, 7, -126); break;
      case 3: ((int*)out)[element] = (int)kc_saturate(value, -2147483648.0, 2147483647.0); break;
      case 4: ((unsigned int*)out)[element] = (unsigned int)kc_saturate(value, 0.0, 4294967295.0); break;
      default: ((unsigned char*)out)[element] = (unsigned char)kc_saturate(value, 0.0, 255.0); break;
    }
  }
}

// Gate 3's check that a large input is as uploaded, without reading its gigabytes back: the
// sum of mix((word ^ key) + (i + 1) * GOLDEN) over its 64-bit words i, wrapping, keyed by a
// value drawn afresh for each check (a kernel under test never sees the key it is checked
// by). Thread t adds the words t, t + threads, ...; partials holds one sum per thread, which
// the host adds up.
extern "C" __global__ void kc_hash(const void* data, long long words, long long key, void* partials) {
  long long threads = (long long)gridDim.x * blockDim.x;
  long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long* word = (const unsigned long long*)data;
  unsigned long long sum = 0;
  for (long long i = thread; i < words; i += threads) {
    sum += kc_mix((word[i] ^ (unsigned long long)key) + ((unsigned long long)i + 1ull) * KC_GOLDEN);
  }
  ((unsigned long long*)partials)[thread] = sum;
}

// A large input drawn here, then changed on the host by its modifiers (the special values, a
// few elements of every row): the words they wrote go up as pairs, and word places[i] of data
// becomes values[i], so the tensor's gigabytes are not sent again.
extern "C" __global__ void kc_patch(void* data, const void* places, const void* values, long long count) {
  long long stride = (long long)gridDim.x * blockDim.x;
  const unsigned long long* place = (const unsigned long long*)places;
  const unsigned long long* value = (const unsigned long long*)values;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    ((unsigned long long*)data)[place[i]] = value[i];
  }
}
