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
    pub fn decode(self, bytes: &[u8]) -> f64 {
        match self {
            DType::F32 => f32::from_le_bytes(bytes[..4].try_into().unwrap()) as f64,
            DType::F16 => half::f16::from_bits(u16::from_le_bytes(bytes[..2].try_into().unwrap())).to_f64(),
            DType::Bf16 => half::bf16::from_bits(u16::from_le_bytes(bytes[..2].try_into().unwrap())).to_f64(),
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
    pub fn encode(self, value: f64, out: &mut [u8]) {
        match self {
            DType::F32 => out[..4].copy_from_slice(&(value as f32).to_le_bytes()),
            // through an exact f32: half's from_f64 rounds some bf16 ties wrongly (0xc0028006 as
            // f64 gives 0xc002, not 0xc003), so the rounding is done here, once, in f64
            DType::F16 => {
                out[..2].copy_from_slice(&half::f16::from_f32(round_to_format(value, 10, -14, 15) as f32).to_bits().to_le_bytes())
            }
            DType::Bf16 => {
                out[..2].copy_from_slice(&half::bf16::from_f32(round_to_format(value, 7, -126, 127) as f32).to_bits().to_le_bytes())
            }
            DType::I32 => out[..4].copy_from_slice(&(value as i32).to_le_bytes()),
            DType::U32 => out[..4].copy_from_slice(&(value as u32).to_le_bytes()),
            DType::U8 => out[0] = value as u8,
        }
    }

    /// The pattern a guard band of this type is filled with: a NaN for float types (so a
    /// read past the end poisons the result too), a canary for integers.
    pub fn guard_pattern(self) -> &'static [u8] {
        match self {
            DType::F32 => &[0xad, 0xde, 0xc0, 0x7f], // 0x7fc0dead, a quiet NaN
            DType::F16 => &[0xde, 0x7e],             // 0x7ede
            DType::Bf16 => &[0xde, 0x7f],            // 0x7fde
            DType::I32 | DType::U32 => &[0xef, 0xbe, 0xad, 0xde],
            DType::U8 => &[0xa5],
        }
    }
}

/// Rounds to nearest even in a binary format with `mantissa_bits` stored bits, smallest
/// normal exponent `min_exponent` and largest `max_exponent` (subnormals and overflow to
/// infinity included). The result is exactly representable in that format and in f32.
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
        assert!(DType::F32.decode(DType::F32.guard_pattern()).is_nan());
        assert!(DType::F16.decode(DType::F16.guard_pattern()).is_nan());
        assert!(DType::Bf16.decode(DType::Bf16.guard_pattern()).is_nan());
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
