//! Gate 1's planted values: where NaNs of several encodings and infinities of both signs go in
//! one float input, and the zeros that the other inputs hold facing them when that input is
//! planted alone.

use engine::DType;

/// Which float inputs a planted run plants into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Planting {
    /// Every float input at once, their seeded elements drawn from one `seed`: inputs of one
    /// shape hold infinities of opposite signs at the same two elements, so inf meets -inf
    /// there, and no planted infinity meets a finite value of another input, which f32 may
    /// have rounded to 0 where f64 has not (silu(-100) is -0 in f32, and -0 * inf is NaN).
    Together { seed: u64 },
    /// One float input, named, with the seed of its own values; the other inputs keep their
    /// values but hold 0 where they face its planted elements (a NaN in one input must not be
    /// masked by another's, and an infinity must meet a zero).
    Alone { tensor: &'static str, seed: u64 },
}

/// NaN encodings, as bits of `dtype`: every payload bit set (positive: a conversion that
/// rounds by adding to the bits carries it into the sign or the exponent), the canonical quiet
/// NaN (what AMD hardware and most libraries produce), both negated, and a signaling NaN with
/// only the lowest payload bit set, of both signs (a conversion that shifts the payload out
/// makes it an infinity).
pub fn nan_encodings(dtype: DType) -> [u64; 6] {
    match dtype {
        DType::F16 => [0x7fff, 0x7e00, 0xffff, 0xfe00, 0x7c01, 0xfc01],
        DType::Bf16 => [0x7fff, 0x7fc0, 0xffff, 0xffc0, 0x7f81, 0xff81],
        _ => [0x7fff_ffff, 0x7fc0_0000, 0xffff_ffff, 0xffc0_0000, 0x7f80_0001, 0xff80_0001],
    }
}

fn infinity_bits(dtype: DType, positive: bool) -> u64 {
    let (bits, sign) = match dtype {
        DType::F16 => (0x7c00, 0x8000),
        DType::Bf16 => (0x7f80, 0x8000),
        _ => (0x7f80_0000, 0x8000_0000),
    };
    if positive { bits } else { bits | sign }
}

/// Rows of at least this many elements get their NaNs by column (one that moves with the row
/// and the input, then every `COLUMN_STRIDE`th); shorter rows (a vector is a column of rows of
/// one) get one NaN every this many elements, so that no input is mostly NaN.
const SHORT_ROW: usize = 8;
const COLUMN_STRIDE: usize = 37;

/// Mixed into an input's seed for its planted sites: a stream apart from its values'.
const PLANTED_SALT: u64 = 0x6e6f_6e66_696e_6974;

/// The elements of one input that a planted run sets, by element index.
#[derive(Clone, Debug, PartialEq)]
pub struct Sites {
    /// NaNs: the element and the index of its encoding in `nan_encodings`.
    pub nans: Vec<(usize, usize)>,
    /// Infinities: the element and whether it is +inf.
    pub infinities: Vec<(usize, bool)>,
}

impl Sites {
    /// The sites of an input of `rows` rows of `len` elements, the `ordinal`-th float input of
    /// its op: the last element is +inf for an even ordinal and -inf for an odd one (so two
    /// inputs of one shape planted together add inf and -inf there), a seeded element between
    /// the first and the last the other infinity, element 0 a NaN with every payload bit set
    /// (as the inputs of a lone element), and NaNs of every encoding in turn in every other row
    /// but the last (where the last infinity meets only finite values) and the seeded
    /// infinity's.
    pub fn new(rows: usize, len: usize, seed: u64, ordinal: usize) -> Sites {
        let n = rows * len;
        let mut sites = Sites { nans: Vec::new(), infinities: Vec::new() };
        if n == 0 {
            return sites;
        }
        let (last, positive) = (n - 1, ordinal.is_multiple_of(2));
        let mut infinity_rows = vec![rows - 1];
        if n > 2 {
            let between = super::SeededStream::new(seed).next_int(1, last as i64) as usize;
            sites.infinities.push((between, !positive));
            infinity_rows.push(between / len);
        }
        sites.infinities.push((last, positive));
        let free = |i: usize| rows < 2 || !infinity_rows.contains(&(i / len));
        let strided: Vec<usize> = if len >= SHORT_ROW {
            let first = |row: usize| row * len + (1 + 11 * ordinal + 3 * row) % len;
            (0..rows).flat_map(|row| (first(row)..(row + 1) * len).step_by(COLUMN_STRIDE)).filter(|i| free(*i)).collect()
        } else {
            ((1 + 11 * ordinal) % SHORT_ROW..n).step_by(SHORT_ROW).filter(|i| free(*i)).collect()
        };
        let encodings = nan_encodings(DType::F32).len();
        sites.nans = strided.into_iter().enumerate().map(|(k, i)| (i, (k + ordinal) % encodings)).collect();
        sites.nans.push((0, 0));
        sites
    }

    /// The sites of an input of `shape` (its rows along the first axis), from its own `seed`.
    pub fn of_shape(shape: &[usize], seed: u64, ordinal: usize) -> Sites {
        let rows = shape.first().copied().unwrap_or(1).max(1);
        Sites::new(rows, shape.iter().product::<usize>() / rows, seed ^ PLANTED_SALT, ordinal)
    }

    /// Sets the sites in `bytes`, a tensor of `dtype`: the strided NaNs, then the infinities,
    /// then element 0's NaN, so a lone element is that NaN.
    pub fn plant(&self, dtype: DType, bytes: &mut [u8]) {
        let encodings = nan_encodings(dtype);
        let (first, strided) = self.nans.split_last().expect("element 0's NaN is always a site");
        for &(i, encoding) in strided {
            set_bits(dtype, bytes, i, encodings[encoding]);
        }
        for &(i, positive) in &self.infinities {
            set_bits(dtype, bytes, i, infinity_bits(dtype, positive));
        }
        set_bits(dtype, bytes, first.0, encodings[first.1]);
    }

    /// Every planted element, in no particular order.
    pub(super) fn elements(&self) -> impl Iterator<Item = usize> + '_ {
        self.nans.iter().map(|s| s.0).chain(self.infinities.iter().map(|s| s.0))
    }

    /// Zeroes another input (`other`, of `dtype` and `shape`) where it faces these sites of
    /// an input of `planted` shape, as far as the shapes tell: of the same shape, the same
    /// element; else, with a last axis as long, the same column in every row (a dot product's
    /// other operand, a weight vector beside its rows). Other shapes are left alone.
    pub fn zero_facing(&self, planted: &[usize], shape: &[usize], dtype: DType, bytes: &mut [u8]) {
        let zero = |bytes: &mut [u8], i: usize| set_bits(dtype, bytes, i, 0);
        if planted == shape {
            self.elements().for_each(|i| zero(bytes, i));
            return;
        }
        let (Some(&width), Some(&other_width)) = (planted.last(), shape.last()) else { return };
        if width != other_width || width == 0 {
            return;
        }
        let mut columns: Vec<usize> = self.elements().map(|i| i % width).collect();
        columns.sort_unstable();
        columns.dedup();
        let elements = bytes.len() / dtype.size();
        for row_start in (0..elements).step_by(width) {
            columns.iter().for_each(|c| zero(bytes, row_start + c));
        }
    }
}

fn set_bits(dtype: DType, bytes: &mut [u8], i: usize, bits: u64) {
    let size = dtype.size();
    bytes[i * size..(i + 1) * size].copy_from_slice(&bits.to_le_bytes()[..size]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planted(dtype: DType, rows: usize, len: usize, ordinal: usize) -> Vec<u64> {
        let mut bytes = vec![0u8; rows * len * dtype.size()];
        Sites::new(rows, len, 5, ordinal).plant(dtype, &mut bytes);
        bytes.chunks(dtype.size()).map(|c| dtype.bits(c)).collect()
    }

    fn is_nan(dtype: DType, bits: u64) -> bool {
        dtype.decode(&bits.to_le_bytes()).is_nan()
    }

    #[test]
    fn every_encoding_is_a_nan_of_its_type() {
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            for bits in nan_encodings(dtype) {
                assert!(is_nan(dtype, bits), "{dtype} {bits:#x}");
            }
            assert_eq!(dtype.decode(&infinity_bits(dtype, false).to_le_bytes()), f64::NEG_INFINITY);
        }
    }

    #[test]
    fn every_row_but_the_infinities_holds_nans_of_every_encoding() {
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            let (rows, len) = (12, 100);
            let v = planted(dtype, rows, len, 1);
            let infinity_rows: Vec<usize> =
                (0..rows * len).filter(|i| dtype.decode(&v[*i].to_le_bytes()).is_infinite()).map(|i| i / len).collect();
            assert_eq!(infinity_rows.len(), 2);
            assert_eq!(v[rows * len - 1], infinity_bits(dtype, false), "an odd ordinal's last element is -inf");
            for row in 0..rows {
                let nans = (0..len).filter(|c| is_nan(dtype, v[row * len + c])).count();
                if infinity_rows.contains(&row) && row != 0 {
                    assert_eq!(nans, 0, "{dtype} row {row}: an infinity meets finite values in its row");
                } else {
                    assert!(nans >= 1, "{dtype} row {row}");
                }
            }
            for encoding in nan_encodings(dtype) {
                assert!(v.contains(&encoding), "{dtype} {encoding:#x}");
            }
            assert_eq!(v[0], nan_encodings(dtype)[0]);
        }
    }

    #[test]
    fn inputs_of_one_shape_get_their_nans_in_other_places_and_opposite_infinities_last() {
        let (a, b) = (planted(DType::F32, 6, 64, 0), planted(DType::F32, 6, 64, 1));
        let nan = |bits: u64| is_nan(DType::F32, bits);
        assert!(a.iter().zip(&b).skip(1).all(|(x, y)| !(nan(*x) && nan(*y))), "no NaN meets a NaN but at element 0");
        assert_eq!((a[383], b[383]), (0x7f80_0000, 0xff80_0000));
    }

    #[test]
    fn short_rows_and_vectors_are_never_mostly_nan() {
        let v = planted(DType::F16, 64, 1, 0);
        let nans = v.iter().filter(|b| is_nan(DType::F16, **b)).count();
        assert!((4..=9).contains(&nans), "{nans} of 64");
        assert_eq!(planted(DType::Bf16, 1, 1, 0), vec![0x7fff], "a lone element is the NaN");
        assert_eq!(planted(DType::F32, 1, 2, 0), vec![0x7fff_ffff, 0x7f80_0000]);
    }

    #[test]
    fn the_other_inputs_hold_zeros_facing_the_planted_elements() {
        let sites = Sites::new(4, 8, 5, 0);
        let ones = |n: usize| 1.0f32.to_bits().to_le_bytes().repeat(n);
        let value = |bytes: &[u8], i: usize| f32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap());
        let mut same = ones(32);
        sites.zero_facing(&[4, 8], &[4, 8], DType::F32, &mut same);
        let zeros: Vec<usize> = (0..32).filter(|i| value(&same, *i) == 0.0).collect();
        let mut planted: Vec<usize> = sites.elements().collect();
        planted.sort_unstable();
        planted.dedup();
        assert_eq!(zeros, planted);
        // a weight vector beside rows of 8: the planted columns
        let mut weight = ones(8);
        sites.zero_facing(&[4, 8], &[8], DType::F32, &mut weight);
        let columns: Vec<usize> = (0..8).filter(|c| value(&weight, *c) == 0.0).collect();
        assert!(columns.contains(&0) && columns.contains(&7), "{columns:?}");
        // the other operand of a dot product: every row, at those columns
        let mut keys = ones(24);
        sites.zero_facing(&[4, 8], &[3, 8], DType::F32, &mut keys);
        assert!((0..3).all(|row| columns.iter().all(|c| value(&keys, row * 8 + c) == 0.0)));
        let mut other = ones(12);
        sites.zero_facing(&[4, 8], &[3, 4], DType::F32, &mut other);
        assert_eq!(other, ones(12), "shapes that do not line up are left alone");
    }
}
