//! Tolerance models: how far a kernel's output may be from the f64 oracle. `exact` and
//! `ulp(N)` compare against the oracle rounded to the output type (to nearest even);
//! `rtol/atol` bounds the error before the store, whose own rounding must then be to nearest
//! even (see `rounds_within`), and it needs a stated reason. A tolerance that could hide
//! anything is refused: see `Tolerance::check_for` and `LOOSE_ULP`.

use engine::DType;

#[derive(Clone, Debug, PartialEq)]
pub enum Tolerance {
    Exact,
    Ulp(u64),
    Relative { rtol: f64, atol: f64 },
}

impl Tolerance {
    /// `exact`, `ulp(4)`, `rtol=1e-5, atol=1e-6` (either part may stand alone).
    pub fn parse(text: &str) -> Result<Tolerance, String> {
        let t = text.trim();
        if t == "exact" {
            return Ok(Tolerance::Exact);
        }
        if let Some(inner) = t.strip_prefix("ulp(").and_then(|r| r.strip_suffix(')')) {
            return inner.trim().parse::<u64>().map(Tolerance::Ulp).map_err(|_| format!("`{t}`: ulp takes a whole number of units"));
        }
        if t.starts_with("rtol") || t.starts_with("atol") {
            let (mut rtol, mut atol) = (0.0, 0.0);
            for part in t.split(',') {
                let (key, value) = part.split_once('=').ok_or_else(|| format!("`{t}`: expected `rtol=X, atol=Y`"))?;
                let value: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| format!("`{t}`: `{}` is not a non-negative number", value.trim()))?;
                match key.trim() {
                    "rtol" => rtol = value,
                    "atol" => atol = value,
                    other => return Err(format!("`{t}`: unknown bound `{other}` (rtol, atol)")),
                }
            }
            return Ok(Tolerance::Relative { rtol, atol });
        }
        Err(format!("unknown tolerance model `{t}` (exact, ulp(N), rtol=X, atol=Y)"))
    }

    /// A relative bound always says why; an ulp count past `LOOSE_ULP` too.
    pub fn needs_reason(&self) -> bool {
        match self {
            Tolerance::Exact => false,
            Tolerance::Ulp(n) => *n > LOOSE_ULP,
            Tolerance::Relative { .. } => true,
        }
    }

    /// Refuses a tolerance that means nothing for an output of `dtype`: anything but `exact`
    /// on an integer (an index one off is a bug, not a rounding), an ulp count that spans a
    /// binade of the type (2^mantissa bits ulps accept twice or half the right value), and an
    /// rtol of 1 or more (which accepts 0 for every value).
    pub fn check_for(&self, dtype: DType) -> Result<(), String> {
        if !dtype.is_float() {
            return match self {
                Tolerance::Exact => Ok(()),
                other => Err(format!("`{other}` on an {dtype} output: integer outputs are compared `exact`")),
            };
        }
        match self {
            Tolerance::Ulp(n) if *n >= 1u64 << mantissa_bits(dtype) => Err(format!(
                "ulp({n}) means nothing for {dtype}: {} ulps span a whole binade (a factor of 2), so at most ulp({})",
                1u64 << mantissa_bits(dtype),
                (1u64 << mantissa_bits(dtype)) - 1
            )),
            Tolerance::Relative { rtol, .. } if *rtol >= 1.0 => {
                Err(format!("rtol={rtol:e} accepts 0 for every value: rtol must be below 1"))
            }
            _ => Ok(()),
        }
    }

    /// Does `got` (an element of `dtype`) meet `want` (the f64 oracle)?
    pub fn accepts(&self, dtype: DType, got: f64, want: f64) -> bool {
        if got.is_nan() || want.is_nan() {
            return got.is_nan() && want.is_nan();
        }
        let rounded = round_to(dtype, want);
        if got.is_infinite() || rounded.is_infinite() {
            // an overflow of the output type is that infinity, in every model
            return got == rounded;
        }
        match self {
            Tolerance::Exact => got.to_bits() == rounded.to_bits() || (got == 0.0 && rounded == 0.0 && got.to_bits() == rounded.to_bits()),
            Tolerance::Ulp(n) => ulp_distance(dtype, got, rounded) <= *n,
            Tolerance::Relative { rtol, atol } => rounds_within(dtype, got, want, atol + rtol * want.abs()),
        }
    }
}

/// Is `got` the round-to-nearest-even, in `dtype`, of some value within `bound` of `want`?
/// Rounding is monotone, so those roundings are exactly the values of the type from
/// RN(want - bound) to RN(want + bound): a kernel whose value before its store is within the
/// bound always passes, and a store that truncates, or is one unit off in any other way,
/// passes only where the bound itself reaches that far (a flat allowance of one unit on top
/// of the bound let every truncating store through). The ends are moved out by one f64 step
/// so that the rounding of `want +- bound` in f64 never decides a tie of the output type.
fn rounds_within(dtype: DType, got: f64, want: f64, bound: f64) -> bool {
    let low = round_to(dtype, (want - bound).next_down());
    let high = round_to(dtype, (want + bound).next_up());
    low <= got && got <= high
}

impl std::fmt::Display for Tolerance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tolerance::Exact => write!(f, "exact"),
            Tolerance::Ulp(n) => write!(f, "ulp({n})"),
            Tolerance::Relative { rtol, atol } => write!(f, "rtol={rtol:e}, atol={atol:e}"),
        }
    }
}

/// An ulp count above this is loose and needs a stated reason.
pub const LOOSE_ULP: u64 = 64;

/// Stored mantissa bits of a float type: its ulp is 2^-bits of its binade.
pub fn mantissa_bits(dtype: DType) -> u32 {
    match dtype {
        DType::F32 => 23,
        DType::F16 => 10,
        DType::Bf16 => 7,
        _ => 0,
    }
}

/// The oracle value as the output type holds it (round to nearest even).
pub fn round_to(dtype: DType, value: f64) -> f64 {
    let mut bytes = [0u8; 8];
    dtype.encode(value, &mut bytes);
    dtype.decode(&bytes)
}

/// The oracle value's bits in the output type, for reports.
pub fn bits_in(dtype: DType, value: f64) -> u64 {
    let mut bytes = [0u8; 8];
    dtype.encode(value, &mut bytes);
    dtype.bits(&bytes)
}

/// Units in the last place of `dtype` between two values of that type: the distance of
/// their positions on the type's ordered line of values (+0 and -0 are one point).
pub fn ulp_distance(dtype: DType, a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    if !dtype.is_float() {
        return (a - b).abs() as u64;
    }
    let ordinal = |v: f64| -> i64 {
        let bits = bits_in(dtype, v) as i64;
        let sign_bit = 1i64 << (dtype.size() * 8 - 1);
        if bits & sign_bit != 0 { -(bits & (sign_bit - 1)) } else { bits }
    };
    ordinal(a).abs_diff(ordinal(b))
}

/// The spacing of `dtype`'s values at `value`: from its magnitude, rounded to the type, to
/// the next value up; at the type's largest finite value, where the next one up is infinity,
/// the spacing below it (the largest finite value's own unit).
pub fn unit_in_last_place(dtype: DType, value: f64) -> f64 {
    if !dtype.is_float() {
        return 0.0;
    }
    let rounded = round_to(dtype, value.abs());
    let bits = bits_in(dtype, rounded);
    let up = value_of_bits(dtype, bits + 1);
    if up.is_finite() { up - rounded } else { rounded - value_of_bits(dtype, bits - 1) }
}

/// The value of `dtype` with these bits (the low `dtype.size()` bytes of them).
fn value_of_bits(dtype: DType, bits: u64) -> f64 {
    dtype.decode(&bits.to_le_bytes()[..dtype.size()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_models() {
        assert_eq!(Tolerance::parse("exact").unwrap(), Tolerance::Exact);
        assert_eq!(Tolerance::parse("ulp(4)").unwrap(), Tolerance::Ulp(4));
        assert_eq!(Tolerance::parse("rtol=1e-5, atol=1e-6").unwrap(), Tolerance::Relative { rtol: 1e-5, atol: 1e-6 });
        for bad in ["close", "ulp(-1)", "ulp(x)", "rtol=abc", "rtol=1e-5, btol=1", "rtol=-1"] {
            assert!(Tolerance::parse(bad).is_err(), "{bad}");
        }
        assert!(Tolerance::parse("rtol=1e-3").unwrap().needs_reason());
        assert!(!Tolerance::Ulp(2).needs_reason());
        assert!(!Tolerance::Ulp(64).needs_reason() && Tolerance::Ulp(65).needs_reason());
    }

    #[test]
    fn a_tolerance_is_bounded_by_its_output_type() {
        assert!(Tolerance::Ulp(127).check_for(DType::Bf16).is_ok());
        let e = Tolerance::Ulp(1_000_000).check_for(DType::Bf16).unwrap_err();
        assert!(e.contains("at most ulp(127)"), "{e}");
        assert!(Tolerance::Ulp(1024).check_for(DType::F16).is_err());
        assert!(Tolerance::Ulp(1_000_000).check_for(DType::F32).is_ok());
        assert!(Tolerance::Ulp(1).check_for(DType::I32).is_err());
        assert!(Tolerance::Exact.check_for(DType::I32).is_ok());
        assert!(Tolerance::Relative { rtol: 1.0, atol: 0.0 }.check_for(DType::F32).is_err());
    }

    #[test]
    fn an_overflow_is_accepted_only_as_that_infinity() {
        let t = Tolerance::Relative { rtol: 1e-6, atol: 0.0 };
        assert!(t.accepts(DType::F16, f64::INFINITY, 70000.0), "70000 is +inf in f16");
        assert!(!t.accepts(DType::F16, f64::NEG_INFINITY, 70000.0));
        assert!(!t.accepts(DType::F16, 65504.0, 70000.0));
        assert!(!t.accepts(DType::F32, f64::INFINITY, 1.0));
        assert!(Tolerance::Ulp(2).accepts(DType::F32, f64::NEG_INFINITY, f64::NEG_INFINITY));
    }

    #[test]
    fn exact_compares_against_the_oracle_rounded_to_the_output_type() {
        let third = 1.0 / 3.0;
        assert!(Tolerance::Exact.accepts(DType::F32, third as f32 as f64, third));
        assert!(!Tolerance::Exact.accepts(DType::F32, f32::from_bits((third as f32).to_bits() + 1) as f64, third));
        assert!(Tolerance::Exact.accepts(DType::Bf16, round_to(DType::Bf16, third), third));
        assert!(!Tolerance::Exact.accepts(DType::F32, 0.0, -0.0), "-0 and +0 differ in bits");
    }

    #[test]
    fn ulp_distance_counts_representable_values_across_zero() {
        let one = 1.0f64;
        let next = f32::from_bits(1.0f32.to_bits() + 3) as f64;
        assert_eq!(ulp_distance(DType::F32, one, next), 3);
        assert_eq!(ulp_distance(DType::F32, 0.0, -0.0), 0);
        let tiny = f32::from_bits(1) as f64;
        assert_eq!(ulp_distance(DType::F32, tiny, -tiny), 2);
        assert_eq!(ulp_distance(DType::Bf16, 1.0, 1.0078125), 1);
        assert!(Tolerance::Ulp(1).accepts(DType::Bf16, 1.0078125, 1.0));
        assert!(!Tolerance::Ulp(0).accepts(DType::Bf16, 1.0078125, 1.0));
    }

    #[test]
    fn relative_accepts_a_nearest_even_rounding_of_a_value_within_the_bound() {
        let t = Tolerance::Relative { rtol: 1e-6, atol: 0.0 };
        assert!(t.accepts(DType::F32, 1.0 + 1e-7, 1.0));
        assert!(!t.accepts(DType::F32, 1.0 + 1e-5, 1.0));
        // bf16 spacing at 1.0 is 2^-7, far above the bound: only 1.0 itself rounds from it
        assert!(t.accepts(DType::Bf16, 1.0, 1.0 + 1e-6));
        assert!(!t.accepts(DType::Bf16, 1.0078125, 1.0), "one bf16 unit off is no rounding of a value within 1e-6");
        // 397.5 rounds up to bf16 398 (0x43c7) and truncates to 396 (0x43c6): a truncating
        // store is one unit off, which the old flat allowance of one unit let through
        assert!(t.accepts(DType::Bf16, 398.0, 397.5));
        assert!(!t.accepts(DType::Bf16, 396.0, 397.5));
        // where the bound reaches past a rounding boundary, both neighbours are roundings of it
        let wide = Tolerance::Relative { rtol: 0.0, atol: 0.5 };
        assert!(wide.accepts(DType::Bf16, 396.0, 397.5) && wide.accepts(DType::Bf16, 398.0, 397.5));
    }

    /// Soundness: every value within the bound, rounded to nearest even, passes; the
    /// truncation of a value that rounds up does not, unless the bound reaches that far.
    #[test]
    fn every_nearest_even_rounding_of_a_value_within_the_bound_passes() {
        let mut stream = crate::inputs::SeededStream::new(7);
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            for _ in 0..20_000 {
                let want = (stream.next_unit() - 0.5) * 2f64.powi(stream.next_int(-20, 16) as i32);
                let (rtol, atol) = (2f64.powi(-(stream.next_int(8, 26) as i32)), 2f64.powi(-(stream.next_int(20, 40) as i32)));
                let bound = atol + rtol * want.abs();
                let t = Tolerance::Relative { rtol, atol };
                let before_store = want + bound * (2.0 * stream.next_unit() - 1.0);
                let stored = round_to(dtype, before_store);
                assert!(t.accepts(dtype, stored, want), "{dtype}: {stored} from {before_store}, want {want} within {bound}");
                // a value of the type more than a whole unit beyond the bound is no rounding of it
                let away = if stored >= want { 1.0 } else { -1.0 };
                let mut far = stored;
                for _ in 0..8 {
                    if (far - want).abs() > bound + unit_in_last_place(dtype, far) {
                        break;
                    }
                    far = round_to(dtype, far + away * unit_in_last_place(dtype, far));
                }
                if (far - want).abs() > bound + unit_in_last_place(dtype, far) {
                    assert!(!t.accepts(dtype, far, want), "{dtype}: {far}, want {want} within {bound}");
                }
            }
        }
    }

    #[test]
    fn the_largest_finite_value_has_a_unit_too() {
        assert_eq!(unit_in_last_place(DType::F16, 1.0), 2f64.powi(-10));
        assert_eq!(unit_in_last_place(DType::F16, 65504.0), 32.0);
        assert_eq!(unit_in_last_place(DType::F16, -65504.0), 32.0);
        assert_eq!(unit_in_last_place(DType::Bf16, half::bf16::MAX.to_f64()), 2f64.powi(120));
        assert_eq!(unit_in_last_place(DType::F32, f32::MAX as f64), 2f64.powi(104));
        assert_eq!(unit_in_last_place(DType::F16, 65000.0), 32.0);
        // a correct kernel whose value rounds to the largest finite value passes
        let t = Tolerance::Relative { rtol: 2e-6, atol: 0.0 };
        assert!(t.accepts(DType::F16, 65504.0, 65510.0), "got 65504 (0x7bff) want 65504 (0x7bff)");
        assert!(t.accepts(DType::Bf16, half::bf16::MAX.to_f64(), half::bf16::MAX.to_f64() * (1.0 + 1e-6)));
        assert!(!t.accepts(DType::F16, 65472.0, 65510.0));
    }
}
