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

/// Gate 2: the launches, each over an output poisoned with its own pattern, gave the same
/// bytes; an element equal to the poison on every launch was never written.
pub fn repeat(dtype: DType, shape: &[usize], launches: &[Vec<u8>], poisons: &[Vec<u8>]) -> Option<Failure> {
    let size = dtype.size();
    let total = launches[0].len() / size;
    let element = |launch: usize, i: usize| &launches[launch][i * size..(i + 1) * size];
    let poison = |launch: usize| &poisons[launch][..size];
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

/// Gate 3 (values): every element within tolerance of the oracle.
pub fn compare(dtype: DType, shape: &[usize], got: &[u8], want: &[f64], tolerance: &Tolerance) -> (Metrics, Option<Failure>) {
    let size = dtype.size();
    let total = want.len();
    let mut metrics = Metrics { elements: total, ..Metrics::default() };
    let mut first: Option<usize> = None;
    let mut abs_sum = 0.0;
    for (i, &w) in want.iter().enumerate() {
        let g = dtype.decode(&got[i * size..]);
        let rounded = round_to(dtype, w);
        // an overflow to the oracle's own infinity is no error
        let error = if g.is_infinite() && g == rounded { 0.0 } else { (g - w).abs() };
        if error.is_finite() {
            abs_sum += error;
            metrics.max_abs_error = metrics.max_abs_error.max(error);
        } else if !(g.is_nan() && w.is_nan()) {
            metrics.max_abs_error = f64::INFINITY;
        }
        // a NaN where the oracle has one is no distance (ulp_distance counts any NaN as the most)
        let ulp = if g.is_nan() && w.is_nan() { 0 } else { ulp_distance(dtype, g, rounded) };
        metrics.max_ulp = metrics.max_ulp.max(ulp);
        if !tolerance.accepts(dtype, g, w) {
            metrics.mismatches += 1;
            first.get_or_insert(i);
        }
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
