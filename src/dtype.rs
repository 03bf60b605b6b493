//! Element types of tensors, their sizes, names and the codes kernels take (kernels/common.h).

use std::fmt;
use std::str::FromStr;

use crate::EngineError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F16,
    Bf16,
    I32,
    U32,
    U8,
}

impl DType {
    pub const ALL: [DType; 6] = [DType::F32, DType::F16, DType::Bf16, DType::I32, DType::U32, DType::U8];

    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::Bf16 => 2,
            DType::U8 => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::U8 => "u8",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::Bf16)
    }

    /// The code a kernel takes for a buffer of this type: 0 = f32, 1 = f16, 2 = bf16.
    pub fn kernel_code(self) -> Result<i32, EngineError> {
        match self {
            DType::F32 => Ok(0),
            DType::F16 => Ok(1),
            DType::Bf16 => Ok(2),
            other => Err(EngineError::NoKernelCode { dtype: other }),
        }
    }

    /// Decodes one element from little-endian bytes to f64 (exact for every type here).
    // inline: called once an element over whole tensors, from the harness crate
    #[inline]
    pub fn decode(self, bytes: &[u8]) -> f64 {
        match self {
            DType::F32 => f32::from_le_bytes(bytes[..4].try_into().unwrap()) as f64,
            DType::F16 => half::f16::from_bits(u16::from_le_bytes(bytes[..2].try_into().unwrap())).to_f64(),
            // f32's upper half: a shift, where `half`'s conversion to f64 branches on each field
            // (the same value, and for a NaN the same bits)
            DType::Bf16 => f32::from_bits((u16::from_le_bytes(bytes[..2].try_into().unwrap()) as u32) << 16) as f64,
            DType::I32 => i32::from_le_bytes(bytes[..4].try_into().unwrap()) as f64,
            DType::U32 => u32::from_le_bytes(bytes[..4].try_into().unwrap()) as f64,
            DType::U8 => bytes[0] as f64,
        }
    }

    /// The raw bits of one element (for reports: values are shown with their bits).
    pub fn bits(self, bytes: &[u8]) -> u64 {
        let mut wide = [0u8; 8];
        wide[..self.size()].copy_from_slice(&bytes[..self.size()]);
        u64::from_le_bytes(wide)
    }

    /// Rounds an f64 to this type (to nearest even; integers saturate) and encodes it.
    #[inline]
    pub fn encode(self, value: f64, out: &mut [u8]) {
        match self {
            DType::F32 => out[..4].copy_from_slice(&(value as f32).to_le_bytes()),
            // through an exact f32: half's from_f64 rounds some bf16 ties wrongly (0xc0028006 as
            // f64 gives 0xc002, not 0xc003), so the rounding is done here, once, in f64
            DType::F16 => out[..2].copy_from_slice(&round_to_half(value, F16_FORMAT).to_le_bytes()),
            DType::Bf16 => out[..2].copy_from_slice(&round_to_half(value, BF16_FORMAT).to_le_bytes()),
            DType::I32 => out[..4].copy_from_slice(&(value as i32).to_le_bytes()),
            DType::U32 => out[..4].copy_from_slice(&(value as u32).to_le_bytes()),
            DType::U8 => out[0] = value as u8,
        }
    }

    /// One element of the guard band on `side` of the buffer with guard id `id` (1 to
    /// [`GUARD_IDS`]). Float patterns are signaling NaNs: any arithmetic on one gives a quiet
    /// NaN (x86 keeps the payload and sets the quiet bit; NVIDIA gives 0x7fffffff), never a
    /// guard, and a read past the end still poisons what it feeds. The id sits in the payload
    /// bits that every shift conversion keeps (f32 bits 16..21 = bf16 bits 0..5 = f16 bits
    /// 3..8) and the sign bit says the side, so a guard value copied into another buffer's
    /// guard, as is or through bf16/f16/f32 by shifting, differs from what is there. The
    /// bits below the id are redundancy a widening shift zeroes (f32 bits 0..15, f16 bits
    /// 0..2, never zero), and their top bit (f32 bit 15, f16 bit 2) is clear, so rounding to
    /// bf16 by adding half an ulp, even after widening an f16, carries nothing into the id. Integer patterns are distinct per buffer and side too, but no pattern can be
    /// kept from arithmetic there: any integer may be a result.
    pub fn guard_pattern(self, id: u8, side: GuardSide) -> Vec<u8> {
        assert!((1..=GUARD_IDS).contains(&id), "guard id {id} out of 1..={GUARD_IDS}");
        let (id16, after) = (id as u16, side == GuardSide::After);
        let sign16 = if after { 0x8000u16 } else { 0 };
        match self {
            DType::F32 => {
                let low = (id16 << 8) | 0x80 | (!id16 & 0x3f);
                let high = sign16 | 0x7f80 | id16;
                ((high as u32) << 16 | low as u32).to_le_bytes().to_vec()
            }
            DType::Bf16 => (sign16 | 0x7f80 | id16).to_le_bytes().to_vec(),
            // bits 0..2 are 2 or 3: never what a shift from f32 leaves there (0 or 1)
            DType::F16 => (sign16 | 0x7c00 | (id16 << 3) | (2 + (id16 & 1))).to_le_bytes().to_vec(),
            DType::I32 | DType::U32 => (0xdead_0000u32 | (id as u32) << 8 | if after { 0xbe } else { 0xef }).to_le_bytes().to_vec(),
            DType::U8 => vec![0x80 | id << 1 | after as u8],
        }
    }
}

/// Guard ids run from 1 to this: six payload bits, zero excluded (a bf16 with an all-zero
/// payload is infinity, not a NaN).
pub const GUARD_IDS: u8 = 63;

/// Which guard band of a buffer: before its first element or after its last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuardSide {
    Before,
    After,
}

/// A 16-bit float format: stored mantissa bits and the smallest normal exponent (its bias is
/// 1 - that; the largest finite exponent is the bias).
#[derive(Clone, Copy)]
struct HalfFormat {
    mantissa_bits: u32,
    min_exponent: i32,
}

const F16_FORMAT: HalfFormat = HalfFormat { mantissa_bits: 10, min_exponent: -14 };
const BF16_FORMAT: HalfFormat = HalfFormat { mantissa_bits: 7, min_exponent: -126 };

/// The bits of `value` rounded to nearest even in a 16-bit format, subnormals and overflow to
/// infinity included, from the f64's bits alone: inputs are encoded element by element, and
/// this runs for every element of every f16 and bf16 tensor. A NaN goes through f32 as half
/// converts it (its payload's top bits kept, made quiet).
#[inline]
fn round_to_half(value: f64, format: HalfFormat) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let biased = ((bits >> 52) & 0x7ff) as i32;
    // the common case, an f64 in the format's normal binades: round the magnitude's bits to
    // nearest even at the format's last mantissa bit (a carry runs into the exponent, and past
    // the largest binade into the infinity pattern), then move the exponent to the format's
    // bias. It agrees with the general path below bit for bit, and normals came out of it a
    // third faster in f16 and bf16 (3.8 ns an element on two cores, from 5.7; f32 3.4).
    let (format_bias, dropped) = (1 - format.min_exponent, 52 - format.mantissa_bits);
    if (1023 + format.min_exponent..=1023 + format_bias).contains(&biased) {
        let magnitude = bits & !(1u64 << 63);
        let rounded = (magnitude + ((1u64 << (dropped - 1)) - 1) + ((magnitude >> dropped) & 1)) >> dropped;
        return sign | (rounded - (((1023 - format_bias) as u64) << format.mantissa_bits)) as u16;
    }
    if biased == 0x7ff {
        return if value.is_nan() {
            match format.mantissa_bits {
                10 => half::f16::from_f32(value as f32).to_bits(),
                _ => half::bf16::from_f32(value as f32).to_bits(),
            }
        } else {
            sign | infinity_bits(format)
        };
    }
    // the significand as an integer (an f64 subnormal has no implicit bit and exponent -1022)
    let fraction = bits & ((1u64 << 52) - 1);
    let (significand, exponent) = if biased == 0 { (fraction, -1022) } else { (fraction | 1 << 52, biased - 1023) };
    // the format's quantum at this exponent is 2^(max(exponent, min) - mantissa bits): drop
    // that many bits more than the f64's 52 and round the rest to nearest, ties to even
    let shift = (52 - format.mantissa_bits as i32 + (format.min_exponent - exponent).max(0)).min(63) as u32;
    let kept = significand >> shift;
    let rest = significand & ((1u64 << shift) - 1);
    let half_quantum = 1u64 << (shift - 1);
    let quanta = kept + u64::from(rest > half_quantum || (rest == half_quantum && kept & 1 == 1));
    // quanta of the binade's (or the subnormals') quantum, stacked on the exponent field: a
    // carry into the next binade, or past the largest finite value into infinity, falls out
    let field = ((exponent.max(format.min_exponent) - format.min_exponent) as u64) << format.mantissa_bits;
    sign | (field + quanta).min(infinity_bits(format) as u64) as u16
}

/// The bits of +infinity in a 16-bit format.
fn infinity_bits(format: HalfFormat) -> u16 {
    let exponent_field = (1 - format.min_exponent) * 2 + 1;
    (exponent_field as u16) << format.mantissa_bits
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::ALL.into_iter().find(|d| d.name() == s).ok_or_else(|| EngineError::UnknownDtype(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_is_refused() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>().unwrap(), d);
        }
        assert!(matches!("fp8".parse::<DType>(), Err(EngineError::UnknownDtype(s)) if s == "fp8"));
    }

    /// Every bf16 bit pattern decodes to `half`'s value, and for a NaN its bits.
    #[test]
    fn bf16_decodes_as_half_converts_it() {
        for bits in 0..=u16::MAX {
            let want = half::bf16::from_bits(bits).to_f64().to_bits();
            assert_eq!(DType::Bf16.decode(&bits.to_le_bytes()).to_bits(), want, "bf16 {bits:#06x}");
        }
    }

    #[test]
    fn kernel_codes_are_the_shared_header_codes() {
        assert_eq!(DType::F32.kernel_code().unwrap(), 0);
        assert_eq!(DType::F16.kernel_code().unwrap(), 1);
        assert_eq!(DType::Bf16.kernel_code().unwrap(), 2);
        assert!(DType::I32.kernel_code().is_err());
    }

    #[test]
    fn encode_rounds_to_nearest_even() {
        let mut b = [0u8; 2];
        // 1 + 2^-8 is a tie between bf16 1.0 and 1 + 2^-7: even is 1.0
        DType::Bf16.encode(1.0 + 2f64.powi(-8), &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x3f80);
        DType::F16.encode(65520.0, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x7c00);
        // f32 0xc0028006 lies just above a bf16 tie: it rounds up to 0xc003
        DType::Bf16.encode(f32::from_bits(0xc002_8006) as f64, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0xc003);
        DType::Bf16.encode(f32::from_bits(0xc002_8000) as f64, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0xc002);
        DType::F16.encode(65504.0 + 15.99, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x7bff);
        DType::F16.encode(2f64.powi(-25), &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x0000, "half the smallest subnormal ties to even zero");
        DType::F16.encode(2f64.powi(-25) * 1.5, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x0001);
        DType::F16.encode(-2f64.powi(-14) * 1.0009765625, &mut b);
        assert_eq!(u16::from_le_bytes(b), 0x8401);
    }
}

#[cfg(test)]
mod rounding_by_bits_against_rounding_in_f64 {
    use super::*;

    /// The encoding by f64 arithmetic that the bit rounding replaced: its results are the
    /// reference, bit for bit.
    fn round_to_format(value: f64, mantissa_bits: i32, min_exponent: i32, max_exponent: i32) -> f64 {
        if !value.is_finite() || value == 0.0 {
            return value;
        }
        let exponent = (((value.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(min_exponent);
        let quantum = 2f64.powi(exponent - mantissa_bits);
        let rounded = (value / quantum).round_ties_even() * quantum;
        let largest = (2.0 - 2f64.powi(-mantissa_bits)) * 2f64.powi(max_exponent);
        if rounded.abs() > largest { f64::INFINITY.copysign(value) } else { rounded }
    }

    fn reference(dtype: DType, value: f64) -> u16 {
        match dtype {
            DType::F16 => half::f16::from_f32(round_to_format(value, 10, -14, 15) as f32).to_bits(),
            _ => half::bf16::from_f32(round_to_format(value, 7, -126, 127) as f32).to_bits(),
        }
    }

    fn assert_same(value: f64) {
        for dtype in [DType::F16, DType::Bf16] {
            let mut b = [0u8; 2];
            dtype.encode(value, &mut b);
            assert_eq!(u16::from_le_bytes(b), reference(dtype, value), "{dtype} of {value:e} ({:#018x})", value.to_bits());
        }
    }

    /// Each value and its f64 neighbours, both signs.
    fn around(value: f64) {
        for v in [value, -value] {
            let b = v.to_bits();
            for d in [-2i64, -1, 0, 1, 2] {
                assert_same(f64::from_bits(b.wrapping_add(d as u64)));
            }
        }
    }

    #[test]
    fn every_half_value_its_ties_and_their_neighbours() {
        // each f16 and bf16 value, the midpoints to the next one (ties) and the f64s beside them
        for bits in 0..=u16::MAX {
            for (value, next) in [
                (half::f16::from_bits(bits).to_f64(), half::f16::from_bits(bits.wrapping_add(1)).to_f64()),
                (half::bf16::from_bits(bits).to_f64(), half::bf16::from_bits(bits.wrapping_add(1)).to_f64()),
            ] {
                around(value);
                if value.is_finite() && next.is_finite() {
                    around((value + next) / 2.0);
                }
            }
        }
    }

    #[test]
    fn specials_extremes_and_a_sweep_of_f64_bits() {
        let specials = [
            0.0,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0x7ff8_dead_beef_0001),
            f64::from_bits(0xfff4_0000_2000_0000),
            65504.0,
            65520.0,
            2f64.powi(-24),
            2f64.powi(-25),
            2f64.powi(-26),
            2f64.powi(-133),
            2f64.powi(-134),
            2f64.powi(-135),
            half::bf16::MAX.to_f64(),
            half::bf16::MAX.to_f64() * (1.0 + 2f64.powi(-9)),
            f32::MAX as f64,
            f32::MIN_POSITIVE as f64,
            f32::from_bits(1) as f64,
        ];
        for v in specials {
            around(v);
        }
        // every binade of f64, with a spread of mantissas
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..2_000_000 {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            assert_same(f64::from_bits(z));
            // and one in the formats' own range, where most inputs are
            let exponent = (z >> 52) % 300;
            assert_same(f64::from_bits((z & 0x800f_ffff_ffff_ffff) | (exponent + 1023 - 160) << 52));
        }
    }
}

#[cfg(test)]
mod rounding_against_the_integer_rule {
    use super::*;

    /// The integer round-to-nearest-even of kernels/common.h, on f32 bits.
    fn kernel_bf16(f: f32) -> u16 {
        let u = f.to_bits();
        ((u + 0x7fff + ((u >> 16) & 1)) >> 16) as u16
    }

    #[test]
    fn f64_rounding_to_bf16_matches_the_kernels_rule_for_every_f32_in_a_sweep() {
        let mut b = [0u8; 2];
        for i in 0..2_000_000u32 {
            let f = f32::from_bits(0x0080_0000u32.wrapping_add(i.wrapping_mul(2_113)));
            if !f.is_finite() || (f.to_bits() & 0x7f80_0000) == 0x7f80_0000 {
                continue;
            }
            DType::Bf16.encode(f as f64, &mut b);
            assert_eq!(u16::from_le_bytes(b), kernel_bf16(f), "{:#010x}", f.to_bits());
            DType::F16.encode(f as f64, &mut b);
            assert_eq!(u16::from_le_bytes(b), half::f16::from_f32(f).to_bits(), "{:#010x}", f.to_bits());
        }
    }
}

#[cfg(test)]
mod guard_patterns {
    use std::hint::black_box;

    use super::*;

    const SIDES: [GuardSide; 2] = [GuardSide::Before, GuardSide::After];

    fn bits(dtype: DType, id: u8, side: GuardSide) -> u32 {
        let p = dtype.guard_pattern(id, side);
        let mut wide = [0u8; 4];
        wide[..p.len()].copy_from_slice(&p);
        u32::from_le_bytes(wide)
    }

    /// Every (dtype, id, side) guard and its bits.
    fn every_guard() -> Vec<(DType, u8, GuardSide, u32)> {
        let mut all = Vec::new();
        for dtype in DType::ALL {
            for id in 1..=GUARD_IDS {
                for side in SIDES {
                    all.push((dtype, id, side, bits(dtype, id, side)));
                }
            }
        }
        all
    }

    fn guard_set() -> std::collections::HashSet<(DType, u32)> {
        every_guard().into_iter().map(|(d, _, _, b)| (d, b)).collect()
    }

    // the conversions a kernel may do by shifting (kernels/common.h and the usual hand-written ones)
    fn bf16_to_f32(h: u32) -> u32 {
        h << 16
    }
    fn f16_to_f32(h: u32) -> u32 {
        let (sign, exponent, mantissa) = ((h & 0x8000) << 16, (h >> 10) & 0x1f, h & 0x3ff);
        if exponent == 0x1f { sign | 0x7f80_0000 | mantissa << 13 } else { sign | (exponent + 112) << 23 | mantissa << 13 }
    }
    fn f32_to_bf16_truncating(u: u32) -> u32 {
        u >> 16
    }
    fn f32_to_bf16_nearest_even_unchecked(u: u32) -> u32 {
        (u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) & 0xffff
    }
    fn f32_to_bf16_common_h(u: u32) -> u32 {
        if u & 0x7fff_ffff > 0x7f80_0000 { (u >> 16) | 0x40 } else { f32_to_bf16_nearest_even_unchecked(u) }
    }
    fn f32_to_f16_shifting(u: u32) -> u32 {
        ((u >> 16) & 0x8000) | 0x7c00 | ((u >> 13) & 0x3ff)
    }
    fn f32_to_f16_common_h(u: u32) -> u32 {
        ((u >> 16) & 0x8000) | 0x7e00 | ((u >> 13) & 0x3ff)
    }

    /// What a guard of `dtype` may become in another type: (the type, its bits).
    fn conversions(dtype: DType, value: u32) -> Vec<(DType, u32)> {
        let widened = match dtype {
            DType::F32 => value,
            DType::F16 => f16_to_f32(value),
            DType::Bf16 => bf16_to_f32(value),
            _ => unreachable!(),
        };
        vec![
            (DType::F32, widened),
            (DType::Bf16, f32_to_bf16_truncating(widened)),
            (DType::Bf16, f32_to_bf16_nearest_even_unchecked(widened)),
            (DType::Bf16, f32_to_bf16_common_h(widened)),
            (DType::Bf16, half::bf16::from_f32(f32::from_bits(widened)).to_bits() as u32),
            (DType::F16, f32_to_f16_shifting(widened)),
            (DType::F16, f32_to_f16_common_h(widened)),
            (DType::F16, half::f16::from_f32(f32::from_bits(widened)).to_bits() as u32),
        ]
    }

    #[test]
    fn every_float_guard_is_a_signaling_nan_and_every_guard_is_its_own() {
        let all = every_guard();
        for (dtype, id, side, b) in &all {
            let clash = all.iter().find(|(d, i, s, other)| d == dtype && (i, s) != (id, side) && other == b);
            assert!(clash.is_none(), "{dtype} guard {id} {side:?} equals {clash:?}");
            let (quiet, payload) = match dtype {
                DType::F32 => (1 << 22, 0x3f_ffff),
                DType::F16 => (1 << 9, 0x1ff),
                DType::Bf16 => (1 << 6, 0x3f),
                _ => continue,
            };
            assert!(dtype.decode(&dtype.guard_pattern(*id, *side)).is_nan(), "{dtype} {id}");
            assert!(b & quiet == 0 && b & payload != 0, "{dtype} guard {id} {side:?} ({b:#x}) is not a signaling NaN");
            assert_eq!(b >> (dtype.size() * 8 - 1) == 1, *side == GuardSide::After);
        }
    }

    #[test]
    fn arithmetic_on_a_guard_never_gives_a_guard_of_any_type() {
        let guards = guard_set();
        let is_guard = |dtype: DType, value: u32| guards.contains(&(dtype, value));
        let one = black_box(1.0f32);
        let widened: Vec<f32> =
            every_guard().iter().filter(|(d, ..)| d.is_float()).map(|(d, _, _, b)| f32::from_bits(conversions(*d, *b)[0].1)).collect();
        for &x in &widened {
            let x = black_box(x);
            let y = black_box(widened[widened.len() / 3]);
            let results = [
                x + one,
                x * 0.0,
                x - x,
                x * x,
                x / one,
                one / x,
                x.mul_add(2.0, one),
                x.sqrt(),
                -(x + one),
                x.max(one),
                x.min(one),
                x + y,
                x * y,
                (x as f64 + 1.0) as f32,
            ];
            for r in results {
                let r = black_box(r).to_bits();
                for (dtype, value) in conversions(DType::F32, r) {
                    assert!(!is_guard(dtype, value), "{:#010x} gave {r:#010x}, a {dtype} guard {value:#x}", x.to_bits());
                }
                assert!(!is_guard(DType::I32, r) && !is_guard(DType::U32, r));
            }
        }
    }

    #[test]
    fn a_guard_converted_by_shifting_is_never_another_buffers_guard() {
        for (from, id, side, b) in every_guard().into_iter().filter(|(d, ..)| d.is_float()) {
            let mut routes = conversions(from, b);
            // twice round: bf16 -> f32 -> f16 and f16 -> f32 -> bf16 by the shifts alone
            for (to, value) in conversions(from, b) {
                if to != DType::F32 {
                    routes.extend(conversions(to, value));
                }
            }
            routes.push((from, b));
            for (to, value) in routes {
                for other_id in 1..=GUARD_IDS {
                    for other_side in SIDES {
                        if (other_id, other_side) != (id, side) {
                            assert_ne!(value, bits(to, other_id, other_side), "{from} guard {id} {side:?} as {to}");
                        }
                    }
                }
            }
        }
        // integers: distinct per buffer and side as well
        for dtype in [DType::I32, DType::U32, DType::U8] {
            assert_ne!(bits(dtype, 1, GuardSide::Before), bits(dtype, 2, GuardSide::Before));
            assert_ne!(bits(dtype, 1, GuardSide::Before), bits(dtype, 1, GuardSide::After));
        }
    }
}
