//! The `specials` modifier: finite values that no generator draws but kernels trip on (signed
//! zeros, subnormals, the smallest normal, the neighbours of 1, a tiny value), planted into a
//! few elements of every row of every float input unless its contract opts it out.

use engine::DType;
use rayon::prelude::*;

use super::{Elements, SeededStream, Written, float_limits};

/// At most this many elements of a row get a special value: enough for each row to meet
/// several, few enough that the row's own values still decide what the op computes.
const PER_ROW: usize = 4;

/// A row gets one special value per this many elements (at least one, at most `PER_ROW`).
const ROW_ELEMENTS_PER_SPECIAL: usize = 16;

/// Tensors of more elements than this are planted in parallel pieces of whole rows, at least
/// this many elements a piece; smaller ones on the calling thread, where a thread pool would
/// cost more than it saves.
const PIECE_ELEMENTS: usize = 1 << 16;

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

/// In declaration order: a kind's place here is `kind as usize`.
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
/// deviation, its largest magnitude). Every row takes as many draws of `stream`, so pieces of
/// rows are planted in parallel, each from its place in the stream: the bytes, and where
/// `stream` is left, are those of planting one row after another.
pub(super) fn plant(t: &mut Elements, scale: f64, stream: &mut SeededStream) {
    let (rows, len) = if t.row_len() < ROW_ELEMENTS_PER_SPECIAL { (1, t.len()) } else { (t.rows, t.row_len()) };
    if len == 0 {
        return;
    }
    let start = stream.next_int(0, KINDS.len() as i64) as usize;
    let plan = Plan {
        dtype: t.dtype,
        len,
        slots: per_row(len),
        start,
        magnitudes: KINDS.map(|kind| kind.magnitude(t.dtype, scale)),
        stream: stream.clone(),
        written: t.written,
    };
    let bytes = &mut t.bytes[..rows * len * t.dtype.size()];
    let rows_per_piece = PIECE_ELEMENTS.div_ceil(len);
    if rows <= rows_per_piece {
        plan.plant_rows(0, bytes);
    } else {
        let piece_bytes = rows_per_piece * len * t.dtype.size();
        bytes.par_chunks_mut(piece_bytes).enumerate().for_each(|(piece, bytes)| plan.plant_rows(piece * rows_per_piece, bytes));
    }
    *stream = plan.stream.skipped((rows * plan.draws_per_row()) as u64);
}

/// What every row's planting shares.
struct Plan<'a> {
    dtype: DType,
    len: usize,
    slots: usize,
    /// Where the odd slots' cycle of kinds begins.
    start: usize,
    /// The kinds' magnitudes by their place in `KINDS`, the same for every slot.
    magnitudes: [f64; KINDS.len()],
    /// The tensor's stream where the first row's draws begin.
    stream: SeededStream,
    /// Where the planted elements are marked, if anywhere.
    written: Option<&'a Written>,
}

impl Plan<'_> {
    /// A row's draws of the tensor's stream: a sign a slot and a column an odd slot.
    fn draws_per_row(&self) -> usize {
        self.slots + self.slots / 2
    }

    /// Plants the whole rows `bytes` holds, the first of them row `first`.
    fn plant_rows(&self, first: usize, bytes: &mut [u8]) {
        // the tensor's stream and its count of odd slots as the rows before leave them
        let mut stream = self.stream.skipped((first * self.draws_per_row()) as u64);
        let mut own = first * (self.slots / 2);
        for (row, row_bytes) in (first..).zip(bytes.chunks_exact_mut(self.len * self.dtype.size())) {
            self.plant_row(row, row_bytes, &mut stream, &mut own);
        }
    }

    fn plant_row(&self, row: usize, bytes: &mut [u8], stream: &mut SeededStream, own: &mut usize) {
        let (len, slots, size) = (self.len, self.slots, self.dtype.size());
        let mut places = SeededStream::new(PLACES ^ (len as u64).rotate_left(32) ^ row as u64);
        for slot in 0..slots {
            let (first, end) = (slot * len / slots, (slot + 1) * len / slots);
            // drawn for every slot, as ever: skipping the odd slots' draws would move the even slots' columns
            let shared_column = places.next_int(first as i64, end as i64) as usize;
            let (column, kind) = if slot % 2 == 0 {
                (shared_column, shared_kind(row * slots.div_ceil(2) + slot / 2, len))
            } else {
                *own += 1;
                (stream.next_int(first as i64, end as i64) as usize, KINDS[(self.start + *own) % KINDS.len()])
            };
            let sign = if stream.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
            self.dtype.encode(sign * self.magnitudes[kind as usize], &mut bytes[column * size..(column + 1) * size]);
            if let Some(written) = self.written {
                let at = (row * len + column) * size;
                written.mark(at..at + size);
            }
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
        assert!(KINDS.iter().enumerate().all(|(place, kind)| *kind as usize == place), "magnitudes are looked up by `kind as usize`");
    }

    /// If this test fails, every float input changed: the special values must land where they
    /// always did, whether the rows are planted one by one or in parallel pieces. The hashes
    /// are the serial planting's.
    #[test]
    fn the_planted_bytes_are_pinned() {
        let cases: [(&str, DType, &[usize], u64, u64); 14] = [
            ("normal(0, 1)", DType::F32, &[5, 40], 3, 0xbe97_a03a_2dc4_33bd),
            ("normal(0, 1)", DType::F16, &[5, 40], 3, 0x7a1f_8644_d7fe_c1f1),
            ("normal(0, 1)", DType::Bf16, &[5, 40], 3, 0x6fca_f6a0_04b8_6e8c),
            // rows under 16 elements, planted as one row
            ("normal(0, 1)", DType::F16, &[9, 15], 2, 0x1997_2171_8252_16ef),
            ("normal(0, 1)", DType::Bf16, &[3, 1], 5, 0x6fb9_5c3c_4d80_4a37),
            ("normal(1, 0.25)", DType::F32, &[8192], 3, 0xe85e_bb13_c18f_32ff),
            ("normal(0, 1)", DType::F32, &[33, 16], 4, 0x435e_fd84_c7b1_0dcb),
            ("normal(0, 1)", DType::Bf16, &[33, 17], 4, 0xeb78_176b_5b36_d97d),
            ("uniform(-2, 2)", DType::F16, &[3, 4096], 7, 0x8227_3490_52d6_6735),
            // enough rows for many pieces, the last one short
            ("normal(0, 4)", DType::F32, &[70000, 20], 11, 0xa86a_f3de_9656_dbb5),
            ("uniform(-2, 2)", DType::Bf16, &[70000, 20], 12, 0x75a9_fb90_8e1d_aa97),
            ("normal(0, 1)", DType::F16, &[20001, 17], 13, 0x5529_9ee5_4cfe_864e),
            // rows longer than a piece
            ("normal(0, 1)", DType::F32, &[5, 70001], 14, 0x9e1f_32ba_e218_5e60),
            // placed in the chain after another modifier: the same stream, later
            ("normal(0, 1) | subnormal_row(last) | specials", DType::F16, &[6, 40], 9, 0xa644_a90d_ce54_12d0),
        ];
        let mut changed = Vec::new();
        for (spec, dtype, shape, seed, pinned) in cases {
            let bytes = InputSpec::parse(spec).unwrap().generate(dtype, shape, seed, &Symbols::new()).unwrap();
            if crate::selection::fnv1a(&bytes) != pinned {
                changed.push(format!("{spec} in {dtype} of {shape:?} from {seed}: {:#018x}", crate::selection::fnv1a(&bytes)));
            }
        }
        assert!(changed.is_empty(), "{changed:#?}");
    }

    /// The tensor's stream goes on where the serial planting leaves it: one draw for the first
    /// kind, then per row a sign a slot and a column an odd slot.
    #[test]
    fn planting_leaves_the_stream_after_every_rows_draws() {
        for (dtype, rows, len) in
            [(DType::F32, 5, 40), (DType::F16, 9, 15), (DType::Bf16, 70000, 20), (DType::F32, 3, 1), (DType::F16, 4, 70001)]
        {
            let mut bytes = vec![0u8; rows * len * dtype.size()];
            let mut stream = SeededStream::new(17);
            plant(&mut Elements { dtype, bytes: &mut bytes, rows, written: None }, 1.0, &mut stream);
            let (rows, len) = if len < ROW_ELEMENTS_PER_SPECIAL { (1, rows * len) } else { (rows, len) };
            let slots = per_row(len);
            let draws = 1 + rows * (slots + slots / 2);
            assert_eq!(stream.next_u64(), SeededStream::at(17, draws as u64).next_u64(), "{dtype} of {rows} rows of {len}");
        }
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
