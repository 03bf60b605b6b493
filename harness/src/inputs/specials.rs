//! The `specials` modifier: finite values that no generator draws but kernels trip on (signed
//! zeros, subnormals, the smallest normal, the neighbours of 1, a tiny value), planted into a
//! few elements of every row of every float input unless its contract opts it out.

use engine::DType;

use super::{Elements, SeededStream, float_limits};

/// At most this many elements of a row get a special value: enough for each row to meet
/// several, few enough that the row's own values still decide what the op computes.
const PER_ROW: usize = 4;

/// A row gets one special value per this many elements (at least one, at most `PER_ROW`).
const ROW_ELEMENTS_PER_SPECIAL: usize = 16;

/// Seeds the columns and the shared kinds: a constant, not the tensor's seed, so that inputs
/// whose rows are as long meet special against special at the same coordinates.
const PLACES: u64 = 0x7370_6563_6961_6c73;

/// The kinds of special values, by magnitude; each is planted with a seeded sign.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Zero,
    SmallestSubnormal,
    LargestSubnormal,
    SmallestNormal,
    One,
    AboveOne,
    BelowOne,
    /// 10^-7 of the input's scale: small against every other value, far above subnormal.
    Tiny,
}

const KINDS: [Kind; 8] = [
    Kind::Zero,
    Kind::SmallestSubnormal,
    Kind::LargestSubnormal,
    Kind::SmallestNormal,
    Kind::One,
    Kind::AboveOne,
    Kind::BelowOne,
    Kind::Tiny,
];

impl Kind {
    /// Its magnitude in `dtype` (exact in the type but `Tiny`, which the store rounds).
    fn magnitude(self, dtype: DType, scale: f64) -> f64 {
        let (_, normal, subnormal) = float_limits(dtype).unwrap_or((f64::MAX, f64::MIN_POSITIVE, 0.0));
        let unit = 2f64.powi(-(crate::tolerance::mantissa_bits(dtype) as i32));
        match self {
            Kind::Zero => 0.0,
            Kind::SmallestSubnormal => subnormal,
            Kind::LargestSubnormal => normal - subnormal,
            Kind::SmallestNormal => normal,
            Kind::One => 1.0,
            Kind::AboveOne => 1.0 + unit,
            Kind::BelowOne => 1.0 - unit / 2.0,
            Kind::Tiny => 1e-7 * scale,
        }
    }
}

/// How many elements of a row of `len` get a special value.
fn per_row(len: usize) -> usize {
    len.div_ceil(ROW_ELEMENTS_PER_SPECIAL).min(PER_ROW)
}

/// Plants the special values. Row r's slots split it into equal parts, one column in each.
/// An even slot's column and kind depend on its place alone (a stream of the row's length and
/// index), so two inputs of one shape hold the same kind there: every other one is a zero
/// (with seeded signs, -0 meets +0 in a quarter of them), the rest cycle through the other
/// kinds (a subnormal meets a subnormal). An odd slot's column comes from the tensor's own
/// `stream`, so it faces the other inputs' ordinary values, and its kind cycles through every
/// kind from a place that stream draws; every sign comes from that stream too. Rows under
/// `ROW_ELEMENTS_PER_SPECIAL` elements (a vector's rows are single elements) are taken together
/// as one, so that no input is mostly special values. `scale` is the generator's (its standard
/// deviation, its largest magnitude).
pub(super) fn plant(t: &mut Elements, scale: f64, stream: &mut SeededStream) {
    let (rows, len) = if t.row_len() < ROW_ELEMENTS_PER_SPECIAL { (1, t.len()) } else { (t.rows, t.row_len()) };
    if len == 0 {
        return;
    }
    let slots = per_row(len);
    let shared_per_row = slots.div_ceil(2);
    let (start, mut own) = (stream.next_int(0, KINDS.len() as i64) as usize, 0);
    for row in 0..rows {
        let mut places = SeededStream::new(PLACES ^ (len as u64).rotate_left(32) ^ row as u64);
        for slot in 0..slots {
            let (first, end) = (slot * len / slots, (slot + 1) * len / slots);
            let shared_column = places.next_int(first as i64, end as i64) as usize;
            let (column, kind) = if slot % 2 == 0 {
                (shared_column, shared_kind(row * shared_per_row + slot / 2, len))
            } else {
                own += 1;
                (stream.next_int(first as i64, end as i64) as usize, KINDS[(start + own) % KINDS.len()])
            };
            let sign = if stream.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
            t.set(row * len + column, sign * kind.magnitude(t.dtype, scale));
        }
    }
}

/// The kind of the `place`-th shared slot of a tensor with rows of `len`: zeros and, between
/// them, the other kinds in turn from a place of the length's.
fn shared_kind(place: usize, len: usize) -> Kind {
    if place.is_multiple_of(2) { Kind::Zero } else { KINDS[1 + (place / 2 + len) % (KINDS.len() - 1)] }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::InputSpec;
    use engine::shape_expr::Symbols;

    fn values(spec: &str, dtype: DType, shape: &[usize], seed: u64) -> Vec<f64> {
        let bytes = InputSpec::parse(spec).unwrap().generate(dtype, shape, seed, &Symbols::new()).unwrap();
        bytes.chunks(dtype.size()).map(|c| dtype.decode(c)).collect()
    }

    fn is_special(dtype: DType, v: f64) -> bool {
        KINDS.iter().any(|k| crate::tolerance::round_to(dtype, k.magnitude(dtype, 1.0)) == v.abs())
    }

    #[test]
    fn every_row_gets_a_few_special_values_and_the_rest_stays_as_generated() {
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            let plain = values("normal(0, 1) | no_specials(the generator's values alone)", dtype, &[5, 40], 3);
            let planted = values("normal(0, 1)", dtype, &[5, 40], 3);
            for row in 0..5 {
                let changed = (0..40).filter(|c| planted[row * 40 + c].to_bits() != plain[row * 40 + c].to_bits()).count();
                assert_eq!(changed, per_row(40), "{dtype} row {row}");
                assert!((0..40).filter(|c| is_special(dtype, planted[row * 40 + c])).count() >= per_row(40), "{dtype} row {row}");
            }
        }
        assert_eq!((per_row(1), per_row(16), per_row(17), per_row(4096)), (1, 1, 2, 4));
        // a vector's rows are single elements: it is taken as one row, not made all special
        let plain = values("normal(1, 0.25) | no_specials(the generator's values alone)", DType::F32, &[8192], 3);
        let planted = values("normal(1, 0.25)", DType::F32, &[8192], 3);
        assert_eq!(plain.iter().zip(&planted).filter(|(a, b)| a.to_bits() != b.to_bits()).count(), per_row(8192));
    }

    #[test]
    fn inputs_of_one_shape_meet_signed_zeros_and_subnormals_at_the_same_coordinates() {
        let (a, b) = (values("normal(0, 4)", DType::F32, &[64, 64], 1), values("normal(0, 1)", DType::F32, &[64, 64], 2));
        let both = |pick: &dyn Fn(f64) -> bool| a.iter().zip(&b).filter(|(x, y)| pick(**x) && pick(**y)).count();
        assert!(both(&|v| v == 0.0) > 4, "zeros meet zeros");
        assert!(a.iter().zip(&b).any(|(x, y)| x.to_bits() == (-0.0f64).to_bits() && y.to_bits() == 0), "-0 meets +0");
        assert!(both(&|v| v != 0.0 && v.abs() < f32::MIN_POSITIVE as f64) > 4, "subnormals meet subnormals");
        let kinds: Vec<f64> = KINDS.iter().map(|k| k.magnitude(DType::F32, 4.0)).collect();
        for kind in &kinds {
            assert!(a.iter().any(|v| v.abs() == *kind as f32 as f64), "{kind} planted");
        }
    }

    #[test]
    fn the_magnitudes_are_the_types_edges() {
        assert_eq!(Kind::SmallestSubnormal.magnitude(DType::F16, 1.0), 2f64.powi(-24));
        assert_eq!(Kind::LargestSubnormal.magnitude(DType::F16, 1.0), 2f64.powi(-14) - 2f64.powi(-24));
        assert_eq!(Kind::AboveOne.magnitude(DType::Bf16, 1.0), 1.0078125);
        assert_eq!(Kind::BelowOne.magnitude(DType::Bf16, 1.0), 0.99609375);
        assert_eq!(Kind::SmallestNormal.magnitude(DType::F32, 1.0), f32::MIN_POSITIVE as f64);
        assert_eq!(Kind::Tiny.magnitude(DType::F32, 120.0), 1.2e-5);
    }

    #[test]
    fn an_input_opts_out_only_with_a_reason() {
        let spec = InputSpec::parse("uniform(1, 64) | no_specials(a tile's sum of exp(s - max) is at least 1, its max's own term)");
        assert!(spec.is_ok(), "{spec:?}");
        assert!(InputSpec::parse("uniform(1, 64) | no_specials()").is_err());
        assert!(InputSpec::parse("uniform(1, 64) | no_specials").is_err());
        // an integer tensor has no special values to plant, and is left as generated
        let ids = InputSpec::parse("int(0, 9)").unwrap().generate(DType::I32, &[4, 4], 1, &Symbols::new()).unwrap();
        let plain = super::super::Generator::parse("int(0, 9)").unwrap().generate(DType::I32, 16, 1, &Symbols::new()).unwrap();
        assert_eq!(ids, plain);
    }
}
