//! Gates 1-3 over the bytes of one output of one case: nonfinite, repeat, and the shape
//! comparison against the oracle. Each returns what failed, by coordinates, with got and
//! want as values and bits, and how many elements failed.

use engine::DType;
use serde::Serialize;

use crate::format;
use crate::tolerance::{Tolerance, bits_in, round_to, ulp_distance};

/// One failed check: how many elements failed and the first one, in words.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Failure {
    pub count: usize,
    pub total: usize,
    /// Coordinates of the first failing element, when there is one.
    pub first: Option<Vec<usize>>,
    pub message: String,
}

/// Gate 1 on finite inputs: every element of a float output is finite, except where the
/// oracle's value overflows the output type (whether that is the right infinity is gate 3's).
pub fn nonfinite(dtype: DType, shape: &[usize], bytes: &[u8], want: &[f64]) -> Option<Failure> {
    if !dtype.is_float() {
        return None;
    }
    if all_finite(dtype, bytes) {
        return None;
    }
    let size = dtype.size();
    let total = bytes.len() / size;
    let overflows = |i: usize| !round_to(dtype, want[i]).is_finite();
    let bad: Vec<usize> = (0..total).filter(|&i| !dtype.decode(&bytes[i * size..]).is_finite() && !overflows(i)).collect();
    let first = *bad.first()?;
    let v = dtype.decode(&bytes[first * size..]);
    Some(Failure {
        count: bad.len(),
        total,
        first: Some(format::coordinates(shape, first)),
        message: format!(
            "{} of {} elements are not finite, first {}: {}",
            format::count(bad.len()),
            format::count(total),
            format::coordinates_text(shape, first),
            format::value_and_bits(dtype, v, dtype.bits(&bytes[first * size..]))
        ),
    })
}

/// Whether every element of a float output is finite, read off the exponent bits (all ones
/// is an infinity or a NaN in each float type): the usual case at close to memcpy's speed.
fn all_finite(dtype: DType, bytes: &[u8]) -> bool {
    match dtype {
        DType::F32 => bytes.chunks_exact(4).all(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7f80_0000 != 0x7f80_0000),
        DType::F16 => bytes.chunks_exact(2).all(|b| u16::from_le_bytes([b[0], b[1]]) & 0x7c00 != 0x7c00),
        DType::Bf16 => bytes.chunks_exact(2).all(|b| u16::from_le_bytes([b[0], b[1]]) & 0x7f80 != 0x7f80),
        _ => false,
    }
}

/// Gate 2: the launches, each over an output poisoned with its own pattern, gave the same
/// bytes; an element equal to the poison on every launch was never written.
pub fn repeat(dtype: DType, shape: &[usize], launches: &[Vec<u8>], poisons: &[Vec<u8>]) -> Option<Failure> {
    let size = dtype.size();
    let total = launches[0].len() / size;
    let element = |launch: usize, i: usize| &launches[launch][i * size..(i + 1) * size];
    let poison = |launch: usize| &poisons[launch][..size];
    // the usual case at memcmp's speed: launches byte-identical over poisons that differ
    // (no element can equal two different poisons, so none is unwritten)
    let poisons_differ = (1..launches.len()).any(|l| poison(l) != poison(0));
    if poisons_differ && launches[1..].iter().all(|l| l == &launches[0]) {
        return None;
    }
    let unwritten: Vec<usize> = (0..total).filter(|&i| (0..launches.len()).all(|l| element(l, i) == poison(l))).collect();
    if let Some(&first) = unwritten.first() {
        return Some(Failure {
            count: unwritten.len(),
            total,
            first: Some(format::coordinates(shape, first)),
            message: format!(
                "{} of {} elements unwritten (equal to the poison on all {} launches), first {}",
                format::count(unwritten.len()),
                format::count(total),
                launches.len(),
                format::coordinates_text(shape, first)
            ),
        });
    }
    let differ: Vec<usize> = (0..total).filter(|&i| (1..launches.len()).any(|l| element(l, i) != element(0, i))).collect();
    let first = *differ.first()?;
    let other = (1..launches.len()).find(|&l| element(l, first) != element(0, first)).unwrap();
    let show = |l: usize| format::value_and_bits(dtype, dtype.decode(element(l, first)), dtype.bits(element(l, first)));
    Some(Failure {
        count: differ.len(),
        total,
        first: Some(format::coordinates(shape, first)),
        message: format!(
            "{} of {} elements differ between launches, first {}: launch 1 gave {}, launch {} gave {}",
            format::count(differ.len()),
            format::count(total),
            format::coordinates_text(shape, first),
            show(0),
            other + 1,
            show(other)
        ),
    })
}

/// Error figures of one output against the oracle.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Metrics {
    pub elements: usize,
    pub mismatches: usize,
    #[serde(deserialize_with = "crate::format::number_or_null")]
    pub max_abs_error: f64,
    #[serde(deserialize_with = "crate::format::number_or_null")]
    pub mean_abs_error: f64,
    /// Against the oracle rounded to the output type.
    pub max_ulp: u64,
}

/// Gate 3 (values): every element within tolerance of the oracle. Large outputs are
/// compared a slice at a time on all cores; the slices' figures join in slice order, so the
/// figures (the mean's rounding included) are the same whatever the cores.
pub fn compare(dtype: DType, shape: &[usize], got: &[u8], want: &[f64], tolerance: &Tolerance) -> (Metrics, Option<Failure>) {
    use rayon::prelude::*;
    let size = dtype.size();
    let total = want.len();
    let slice = |(index, want): (usize, &[f64])| {
        let offset = index * COMPARE_SLICE;
        compare_slice(dtype, &got[offset * size..(offset + want.len()) * size], want, tolerance, offset)
    };
    let slices: Vec<SliceFigures> = if total > COMPARE_SLICE {
        want.par_chunks(COMPARE_SLICE).enumerate().map(slice).collect()
    } else {
        want.chunks(COMPARE_SLICE.max(1)).enumerate().map(slice).collect()
    };
    let mut metrics = Metrics { elements: total, ..Metrics::default() };
    let (mut first, mut abs_sum) = (None, 0.0);
    for figures in slices {
        abs_sum += figures.abs_sum;
        metrics.max_abs_error = metrics.max_abs_error.max(figures.max_abs_error);
        metrics.max_ulp = metrics.max_ulp.max(figures.max_ulp);
        metrics.mismatches += figures.mismatches;
        first = first.or(figures.first);
    }
    metrics.mean_abs_error = if total > 0 { abs_sum / total as f64 } else { 0.0 };
    let failure = first.map(|i| {
        let g = dtype.decode(&got[i * size..]);
        Failure {
            count: metrics.mismatches,
            total,
            first: Some(format::coordinates(shape, i)),
            message: format!(
                "{} of {} elements differ, first {}: got {} want {}",
                format::count(metrics.mismatches),
                format::count(total),
                format::coordinates_text(shape, i),
                format::value_and_bits(dtype, g, dtype.bits(&got[i * size..])),
                format::value_and_bits(dtype, round_to(dtype, want[i]), bits_in(dtype, want[i]))
            ),
        }
    });
    (metrics, failure)
}

/// Elements of an output that gate 3 compares as one task.
const COMPARE_SLICE: usize = 1 << 16;

/// Gate 3's figures over one slice of an output.
#[derive(Default)]
struct SliceFigures {
    abs_sum: f64,
    max_abs_error: f64,
    max_ulp: u64,
    mismatches: usize,
    /// The first element out of tolerance, by its index in the whole output.
    first: Option<usize>,
}

fn compare_slice(dtype: DType, got: &[u8], want: &[f64], tolerance: &Tolerance, offset: usize) -> SliceFigures {
    let size = dtype.size();
    let mut figures = SliceFigures::default();
    for (i, (&w, bytes)) in want.iter().zip(got.chunks_exact(size)).enumerate() {
        let g = dtype.decode(bytes);
        let rounded = round_to(dtype, w);
        // an overflow to the oracle's own infinity is no error
        let error = if g.is_infinite() && g == rounded { 0.0 } else { (g - w).abs() };
        if error.is_finite() {
            figures.abs_sum += error;
            figures.max_abs_error = figures.max_abs_error.max(error);
        } else if !(g.is_nan() && w.is_nan()) {
            figures.max_abs_error = f64::INFINITY;
        }
        // the oracle's own rounding, bit for bit: within every tolerance (each accepts the
        // rounding of the exact value) and 0 ulp, so there is nothing more to judge
        if g.to_bits() == rounded.to_bits() && !g.is_nan() {
            continue;
        }
        // a NaN where the oracle has one is no distance (ulp_distance counts any NaN as the most)
        let ulp = if g.is_nan() && w.is_nan() { 0 } else { ulp_distance(dtype, g, rounded) };
        figures.max_ulp = figures.max_ulp.max(ulp);
        if !tolerance.accepts(dtype, g, w) {
            figures.mismatches += 1;
            figures.first.get_or_insert(offset + i);
        }
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn nonfinite_names_the_first_element_and_counts() {
        let bytes = f32_bytes(&[1.0, f32::INFINITY, 2.0, f32::NAN]);
        let want = [1.0; 4];
        let f = nonfinite(DType::F32, &[2, 2], &bytes, &want).unwrap();
        assert_eq!((f.count, f.first.clone()), (2, Some(vec![0, 1])));
        assert_eq!(f.message, "2 of 4 elements are not finite, first [0, 1]: inf (0x7f800000)");
        assert!(nonfinite(DType::F32, &[4], &f32_bytes(&[1.0; 4]), &want).is_none());
        // where the oracle overflows the output type, an infinity is not gate 1's to refuse
        let f16: Vec<u8> = [0x7c00u16, 0x3c00].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(nonfinite(DType::F16, &[2], &f16, &[70000.0, 1.0]).is_none());
        assert!(nonfinite(DType::F16, &[2], &f16, &[60000.0, 1.0]).is_some());
    }

    #[test]
    fn the_finite_scan_sees_every_infinity_and_nan_of_each_float_type() {
        // each type's largest finite values and smallest subnormals, then its infinities and NaNs
        for (dtype, finite, specials) in [
            (
                DType::F32,
                [0x7f7f_ffffu32, 0xff7f_ffff, 0x0000_0001],
                vec![0x7f80_0000u32, 0xff80_0000, 0x7fc0_0000, 0x7f80_0001, 0xffff_ffff],
            ),
            (DType::F16, [0x7bff, 0xfbff, 0x0001], vec![0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff]),
            (DType::Bf16, [0x7f7f, 0xff7f, 0x0001], vec![0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffff]),
        ] {
            let encode = |v: u32| if dtype == DType::F32 { v.to_le_bytes().to_vec() } else { (v as u16).to_le_bytes().to_vec() };
            let finite: Vec<u8> = finite.iter().flat_map(|v| encode(*v)).collect();
            assert!(all_finite(dtype, &finite), "{dtype}");
            for special in specials {
                let mut bytes = finite.clone();
                bytes.extend(encode(special));
                assert!(!all_finite(dtype, &bytes), "{dtype} {special:#x}");
            }
        }
    }

    #[test]
    fn repeat_tells_unwritten_from_differing() {
        let poisons = vec![vec![0xff; 4], vec![0x00; 4], vec![0x5a; 4]];
        let unwritten = vec![f32_bytes(&[1.0, f32::from_bits(!0)]), f32_bytes(&[1.0, 0.0]), f32_bytes(&[1.0, f32::from_bits(0x5a5a5a5a)])];
        let f = repeat(DType::F32, &[2], &unwritten, &poisons).unwrap();
        assert_eq!(f.message, "1 of 2 elements unwritten (equal to the poison on all 3 launches), first [1]");
        let differing = vec![f32_bytes(&[1.0, 2.0]), f32_bytes(&[1.0, 2.5]), f32_bytes(&[1.0, 2.0])];
        let f = repeat(DType::F32, &[2], &differing, &poisons).unwrap();
        assert_eq!(
            f.message,
            "1 of 2 elements differ between launches, first [1]: launch 1 gave 2.000 (0x40000000), launch 2 gave 2.500 (0x40200000)"
        );
        assert!(repeat(DType::F32, &[2], &vec![f32_bytes(&[1.0, 2.0]); 3], &poisons).is_none());
    }

    #[test]
    fn compare_reports_got_and_want_with_bits() {
        let got: Vec<u8> = [0x3ea3u16, 0x3f80].iter().flat_map(|v| v.to_le_bytes()).collect();
        let (metrics, f) = compare(DType::Bf16, &[1, 2], &got, &[-1.203125, 1.0], &Tolerance::Exact);
        let f = f.unwrap();
        assert_eq!(f.message, "1 of 2 elements differ, first [0, 0]: got 0.3184 (0x3ea3) want -1.203 (0xbf9a)");
        assert_eq!(metrics.mismatches, 1);
        let (metrics, f) = compare(DType::Bf16, &[2], &got[2..], &[1.0], &Tolerance::Exact);
        assert!(f.is_none());
        assert_eq!(metrics.max_ulp, 0);
    }

    #[test]
    fn compare_in_slices_counts_every_slice_and_names_the_first_mismatch_in_the_whole() {
        // three slices and a part; mismatches in the second and the last
        let total = 3 * COMPARE_SLICE + 5;
        let want: Vec<f64> = (0..total).map(|i| (i % 1000) as f64 * 0.25).collect();
        let mut got: Vec<f32> = want.iter().map(|w| *w as f32).collect();
        got[COMPARE_SLICE + 7] += 1.0;
        got[total - 1] -= 3.0;
        let (metrics, f) = compare(DType::F32, &[total], &f32_bytes(&got), &want, &Tolerance::Exact);
        assert_eq!((metrics.elements, metrics.mismatches, metrics.max_abs_error), (total, 2, 3.0));
        assert_eq!(metrics.mean_abs_error, 4.0 / total as f64);
        let f = f.unwrap();
        assert_eq!((f.count, f.first), (2, Some(vec![COMPARE_SLICE + 7])));
        // the same output in one slice gives the same figures
        let small = &want[COMPARE_SLICE..COMPARE_SLICE + 10];
        let (one, g) = compare(DType::F32, &[10], &f32_bytes(&got[COMPARE_SLICE..COMPARE_SLICE + 10]), small, &Tolerance::Exact);
        assert_eq!((one.mismatches, one.max_abs_error, g.unwrap().first), (1, 1.0, Some(vec![7])));
    }

    #[test]
    fn compare_holds_planted_outputs_to_the_oracles_nan_and_infinities() {
        let t = Tolerance::Relative { rtol: 1e-6, atol: 0.0 };
        let want = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0];
        let (metrics, f) = compare(DType::F32, &[4], &f32_bytes(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0]), &want, &t);
        assert!(f.is_none() && metrics.max_abs_error == 0.0 && metrics.max_ulp == 0, "{metrics:?}");
        // a NaN turned into 0, and an infinity turned into NaN, are both red
        let (metrics, f) = compare(DType::F32, &[4], &f32_bytes(&[0.0, f32::NAN, f32::NEG_INFINITY, 1.0]), &want, &t);
        assert_eq!((metrics.mismatches, f.unwrap().first), (2, Some(vec![0])));
    }
}
