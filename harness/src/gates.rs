//! Gates 1-3 over the bytes of one output of one case: nonfinite, repeat, and the shape
//! comparison against the oracle, each alone and the three in one pass over the output (as
//! the runner takes them). Each returns what failed, by coordinates, with got and want as
//! values and bits, and how many elements failed.

use std::ops::Range;

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
        DType::F32 => no_exponent_all_ones::<4>(bytes, 0x7f80_0000),
        DType::F16 => no_exponent_all_ones::<2>(bytes, 0x7c00),
        DType::Bf16 => no_exponent_all_ones::<2>(bytes, 0x7f80),
        _ => false,
    }
}

/// Bytes `all_finite` takes with no branch inside (so that it runs on vector registers),
/// stopping only between them.
const FINITE_RUN: usize = 256;

/// Whether no element of `SIZE` little-endian bytes has all of `exponent`'s bits set (a part
/// element at the end is none).
#[inline(always)]
fn no_exponent_all_ones<const SIZE: usize>(bytes: &[u8], exponent: u32) -> bool {
    let special = |b: &[u8]| {
        let mut element = [0; 4];
        element[..SIZE].copy_from_slice(b);
        u32::from_le_bytes(element) & exponent == exponent
    };
    let none = |run: &[u8]| !run.chunks_exact(SIZE).fold(false, |any, b| any | special(b));
    let runs = bytes.chunks_exact(FINITE_RUN);
    let rest = runs.remainder();
    runs.into_iter().all(none) && none(rest)
}

/// Gate 2: the launches, each over an output poisoned with its own pattern, gave the same
/// bytes; an element equal to the poison on every launch was never written.
pub fn repeat(dtype: DType, shape: &[usize], launches: &[Vec<u8>], poisons: &[Vec<u8>]) -> Option<Failure> {
    let size = dtype.size();
    let total = launches[0].len() / size;
    let element = |launch: usize, i: usize| &launches[launch][i * size..(i + 1) * size];
    let poison = |launch: usize| &poisons[launch][..size];
    // the usual case at memcmp's speed: launches byte-identical over poisons that differ
    if poisons_differ(size, launches.len(), poisons) && launches[1..].iter().all(|l| l == &launches[0]) {
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
    let size = dtype.size();
    let slices = over_slices(want, |offset, want| {
        compare_slice(dtype, &got[offset * size..(offset + want.len()) * size], want, tolerance, offset, |_| {})
    });
    joined(dtype, shape, got, want, slices)
}

/// `each` over an output's slices of `COMPARE_SLICE` elements, by the offset of the slice's
/// first element and its oracle values, in slice order: on all cores where there are several
/// slices, on this thread where there is one (a task costs more than a small output's checks).
fn over_slices<T: Send>(want: &[f64], each: impl Fn(usize, &[f64]) -> T + Sync) -> Vec<T> {
    use rayon::prelude::*;
    let slice = |(index, want): (usize, &[f64])| each(index * COMPARE_SLICE, want);
    if want.len() > COMPARE_SLICE {
        want.par_chunks(COMPARE_SLICE).enumerate().map(slice).collect()
    } else {
        want.chunks(COMPARE_SLICE.max(1)).enumerate().map(slice).collect()
    }
}

/// Gate 3's figures and failure from its slices' figures, joined in slice order.
fn joined(
    dtype: DType,
    shape: &[usize],
    got: &[u8],
    want: &[f64],
    slices: impl IntoIterator<Item = SliceFigures>,
) -> (Metrics, Option<Failure>) {
    let size = dtype.size();
    let total = want.len();
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

/// Gates 1-3 of one output, as [`repeat`], [`compare`] and [`nonfinite`] each give them.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputGates {
    /// Gate 2: the launches' bytes.
    pub repeat: Option<Failure>,
    /// Gate 3: the first launch against the oracle.
    pub metrics: Metrics,
    pub compare: Option<Failure>,
    /// Gate 1 on the first launch; none where it was not asked for.
    pub nonfinite: Option<Failure>,
}

/// Gates 2, 3 and (with `finite_check`) 1 over one output in one pass on all cores: each
/// piece of the first launch is read from memory once and is still in cache for the rest
/// (the three gates one after another read it three times, two of them on one core). Each
/// piece takes the cheap tests a passing output meets for gates 1 and 2: the other launches'
/// bytes are the first's, and the first's are finite. Where any piece fails one, that gate
/// goes to its own whole-output function after the pass, so what it says of a failing output
/// (count, first element, message) is what that function says. Gate 3's slices are
/// [`compare`]'s, so its figures are too, bit for bit. `repeats_proven`: the later launches
/// were found on the device to repeat the first's bytes over poisons that differ from the
/// first's (`launches` holds the first alone, and gate 2 has passed).
#[allow(clippy::too_many_arguments)]
pub fn output_gates(
    dtype: DType,
    shape: &[usize],
    (launches, repeats_proven): (&[Vec<u8>], bool),
    poisons: &[Vec<u8>],
    want: &[f64],
    tolerance: &Tolerance,
    finite_check: bool,
) -> OutputGates {
    let size = dtype.size();
    let got = match launches.first() {
        Some(got) if sliced_alike(size, launches, poisons, want) => got,
        _ => {
            let separate = separately(dtype, shape, launches, poisons, want, tolerance, finite_check);
            return OutputGates { repeat: separate.repeat.filter(|_| !repeats_proven), ..separate };
        }
    };
    // equal launches over equal poisons can still be unwritten, and an integer output has
    // nothing to be finite: neither takes a cheap test (a repeat proven on the device has
    // its first launch here alone)
    let repeat_fast = repeats_proven || poisons_differ(size, launches.len(), poisons);
    let finite_fast = finite_check && dtype.is_float();
    let passes = over_slices(want, |offset, want| {
        let (mut repeated, mut finite) = (repeat_fast, finite_fast);
        let cheap_tests = |piece: Range<usize>| {
            let bytes = (offset + piece.start) * size..(offset + piece.end) * size;
            let first = &got[bytes.clone()];
            // once a piece fails a test, its gate goes to its whole-output function: the rest
            // of the slice need not take it
            repeated = repeated && launches[1..].iter().all(|l| l[bytes.clone()] == *first);
            finite = finite && all_finite(dtype, first);
        };
        let slice = &got[offset * size..(offset + want.len()) * size];
        let figures = compare_slice(dtype, slice, want, tolerance, offset, cheap_tests);
        SlicePass { figures, repeated, finite }
    });
    let repeated = repeat_fast && passes.iter().all(|p| p.repeated);
    let finite = !finite_fast || passes.iter().all(|p| p.finite);
    let (metrics, compare) = joined(dtype, shape, got, want, passes.into_iter().map(|p| p.figures));
    OutputGates {
        repeat: if repeated { None } else { repeat(dtype, shape, launches, poisons) },
        metrics,
        compare,
        nonfinite: if finite { None } else { nonfinite(dtype, shape, got, want) },
    }
}

/// One slice's share of [`output_gates`]' pass: gate 3's figures, and whether every piece of
/// the slice met gate 2's and gate 1's cheap tests (false where the gate takes none).
struct SlicePass {
    figures: SliceFigures,
    repeated: bool,
    finite: bool,
}

/// Whether every launch has as many elements as the oracle has values, and a poison of at
/// least an element: what the single pass takes for granted. Otherwise the three functions
/// say what they say of the output.
fn sliced_alike(size: usize, launches: &[Vec<u8>], poisons: &[Vec<u8>], want: &[f64]) -> bool {
    let poisoned = poisons.len() >= launches.len() && poisons.iter().all(|p| p.len() >= size);
    poisoned && launches.iter().all(|l| l.len() == want.len() * size)
}

/// Whether some launch's poison differs from the first's: then no element can equal every
/// launch's poison, so launches with the same bytes wrote every element.
pub(crate) fn poisons_differ(size: usize, launches: usize, poisons: &[Vec<u8>]) -> bool {
    (1..launches).any(|l| poisons[l][..size] != poisons[0][..size])
}

/// [`output_gates`]' figures from the three gates' own functions, one after another.
#[allow(clippy::too_many_arguments)]
fn separately(
    dtype: DType,
    shape: &[usize],
    launches: &[Vec<u8>],
    poisons: &[Vec<u8>],
    want: &[f64],
    tolerance: &Tolerance,
    finite_check: bool,
) -> OutputGates {
    let repeat = repeat(dtype, shape, launches, poisons);
    let (metrics, compare) = compare(dtype, shape, &launches[0], want, tolerance);
    let nonfinite = if finite_check { nonfinite(dtype, shape, &launches[0], want) } else { None };
    OutputGates { repeat, metrics, compare, nonfinite }
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

/// Gate 3 over one slice: a float type a block at a time, on its fast path where the block
/// is the oracle's own rounding, any other type element by element. `before` runs on each
/// piece of the slice (its elements, counted from the slice's start) just before the piece
/// is compared: what else reads the piece finds it in cache, and the loads of the one
/// overlap the arithmetic of the other. The pieces keep the slice's order, so its figures
/// are the same however it is cut.
fn compare_slice(
    dtype: DType,
    got: &[u8],
    want: &[f64],
    tolerance: &Tolerance,
    offset: usize,
    mut before: impl FnMut(Range<usize>),
) -> SliceFigures {
    match dtype {
        DType::F32 => compare_blocks::<F32>(dtype, got, want, tolerance, offset, before),
        DType::F16 => compare_blocks::<F16>(dtype, got, want, tolerance, offset, before),
        DType::Bf16 => compare_blocks::<Bf16>(dtype, got, want, tolerance, offset, before),
        _ => {
            let (size, mut figures) = (dtype.size(), SliceFigures::default());
            for piece in pieces(want.len()) {
                before(piece.clone());
                let bytes = &got[piece.start * size..piece.end * size];
                compare_elements(dtype, bytes, &want[piece.clone()], tolerance, offset + piece.start, &mut figures);
            }
            figures
        }
    }
}

/// Elements of a slice that the single pass over an output checks at once (a whole number
/// of blocks, so that only the slice's last piece has a part block). Small: the other
/// launches' next bytes then load while gate 3 works on these, where larger pieces leave
/// the launches' comparison waiting on memory alone (on a 2-core VM, 64 to 128 elements
/// took 10 to 15% less time than 2048, and 15 to 20% less than whole slices).
const PIECE: usize = 128;
const _: () = assert!(PIECE.is_multiple_of(BLOCK));

/// The pieces of a slice of `len` elements, in order.
fn pieces(len: usize) -> impl Iterator<Item = Range<usize>> {
    (0..len).step_by(PIECE).map(move |start| start..(start + PIECE).min(len))
}

/// Elements gate 3 takes at once on its fast path: a block either is the oracle's own
/// rounding throughout, with its errors gathered lane by lane, or goes to the element by
/// element path whole.
const BLOCK: usize = 16;

/// A float type as gate 3's fast path reads it: an element's bits, widened to 32.
trait Stored {
    /// Bytes of one element.
    const SIZE: usize;
    /// The element's bits, from its little-endian bytes.
    fn bits(bytes: &[u8]) -> u32;
    /// The bits of a block of the oracle's values rounded to this type: those of `round_to`,
    /// bit for bit, and a NaN for a NaN.
    fn rounded(want: &[f64; BLOCK]) -> [u32; BLOCK];
    /// The element's value: `DType::decode`'s, exact in f32 as every value of these types is
    /// (four to a register where f64 has two).
    fn value(bits: u32) -> f32;
}

struct F32;
struct F16;
struct Bf16;

impl Stored for F32 {
    const SIZE: usize = 4;
    #[inline(always)]
    fn bits(bytes: &[u8]) -> u32 {
        u32::from_le_bytes(bytes[..4].try_into().unwrap())
    }
    #[inline(always)]
    fn rounded(want: &[f64; BLOCK]) -> [u32; BLOCK] {
        let mut rounded = [0; BLOCK];
        for (bits, &w) in rounded.iter_mut().zip(want) {
            *bits = (w as f32).to_bits();
        }
        rounded
    }
    #[inline(always)]
    fn value(bits: u32) -> f32 {
        f32::from_bits(bits)
    }
}

impl Stored for F16 {
    const SIZE: usize = 2;
    #[inline(always)]
    fn bits(bytes: &[u8]) -> u32 {
        u16::from_le_bytes(bytes[..2].try_into().unwrap()) as u32
    }
    /// Rounded to odd in f32 (see `round_to_odd_f32`), then to nearest even by integer
    /// arithmetic (F. Giesen's float_to_half_fast3_rtne), without a branch: two passes over the
    /// block, so that the second runs on four elements to a register, not two as f64s do.
    #[inline(always)]
    fn rounded(want: &[f64; BLOCK]) -> [u32; BLOCK] {
        let mut rounded = block_to_odd_f32(want);
        for bits in &mut rounded {
            let (sign, magnitude) = (*bits & 0x8000_0000, *bits & 0x7fff_ffff);
            // below f16's smallest normal, 2^-14: adding 0.5 puts f16's subnormal quantum,
            // 2^-24, at the last place of the sum, and the hardware's addition rounds to
            // nearest even
            let subnormal = (f32::from_bits(magnitude) + 0.5).to_bits().wrapping_sub(0.5f32.to_bits());
            // rebias the exponent and add just under half a unit, plus one where the kept part
            // is odd: a carry out of the mantissa moves to the next binade, or to infinity
            // from 65520
            let normal = magnitude.wrapping_add(0xc800_0fff).wrapping_add((magnitude >> 13) & 1) >> 13;
            let finite = if magnitude < 113 << 23 { subnormal } else { normal };
            let overflowed = if magnitude >= 143 << 23 { 0x7c00 } else { finite };
            *bits = if magnitude > 0x7f80_0000 { 0x7e00 } else { overflowed | sign >> 16 };
        }
        rounded
    }
    /// Moved into f32's fields and rebiased (F. Giesen's half_to_float_fast5), without a
    /// branch: an infinity or NaN gets f32's all-ones exponent, and a subnormal (or zero) is
    /// renormalized by an exact subtraction.
    #[inline(always)]
    fn value(bits: u32) -> f32 {
        let shifted = (bits & 0x7fff) << 13;
        let exponent = shifted & 0x0f80_0000;
        let rebiased = shifted + ((127 - 15) << 23);
        let magnitude = if exponent == 0x0f80_0000 {
            f32::from_bits(rebiased + ((128 - 16) << 23))
        } else if exponent == 0 {
            f32::from_bits(rebiased + (1 << 23)) - f32::from_bits(113 << 23)
        } else {
            f32::from_bits(rebiased)
        };
        f32::from_bits(magnitude.to_bits() | (bits & 0x8000) << 16)
    }
}

impl Stored for Bf16 {
    const SIZE: usize = 2;
    #[inline(always)]
    fn bits(bytes: &[u8]) -> u32 {
        u16::from_le_bytes(bytes[..2].try_into().unwrap()) as u32
    }
    /// Rounded to odd in f32 (see `round_to_odd_f32`), then to nearest even: bf16 is f32's
    /// top half, so adding just under half a unit, plus one where the kept part is odd, does
    /// it, subnormals and the carry to infinity included (two passes, as f16's).
    #[inline(always)]
    fn rounded(want: &[f64; BLOCK]) -> [u32; BLOCK] {
        let mut rounded = block_to_odd_f32(want);
        for bits in &mut rounded {
            let nearest = bits.wrapping_add(0x7fff).wrapping_add((*bits >> 16) & 1) >> 16;
            *bits = if *bits & 0x7fff_ffff > 0x7f80_0000 { 0x7fc0 } else { nearest };
        }
        rounded
    }
    #[inline(always)]
    fn value(bits: u32) -> f32 {
        f32::from_bits(bits << 16)
    }
}

/// [`round_to_odd_f32`] of each of a block's values: the first pass of f16's and bf16's rounding.
#[inline(always)]
fn block_to_odd_f32(want: &[f64; BLOCK]) -> [u32; BLOCK] {
    let mut rounded = [0; BLOCK];
    for (bits, &w) in rounded.iter_mut().zip(want) {
        *bits = round_to_odd_f32(w);
    }
    rounded
}

/// The bits of `want` rounded to odd in f32: toward zero, with the last bit set where that
/// dropped anything. Rounding that to nearest even in f16 or bf16 is the rounding straight
/// from f64: each of their values and ties (the overflow threshold too) is an f32 whose last
/// bit is clear, which rounding to odd reaches only from that very value, so `want` and its
/// f32 lie on the same side of every tie (Boldo and Melquiond, "When double rounding is
/// odd"). Nearest even in f32 first could land on a tie and round it the wrong way from
/// there. A NaN stays a NaN (its last bit set is no carry).
#[inline(always)]
fn round_to_odd_f32(want: f64) -> u32 {
    let nearest = want as f32;
    let bits = nearest.to_bits();
    // nearest to even picked the even neighbour: the odd one is the other side of `want`,
    // one unit toward it (bits are sign and magnitude, so a unit less is toward zero)
    let inexact_even = f64::from(nearest) != want && bits & 1 == 0;
    let toward = if f64::from(nearest).abs() > want.abs() { bits.wrapping_sub(1) } else { bits.wrapping_add(1) };
    if inexact_even { toward } else { bits }
}

/// Gate 3 over one slice, a block at a time: the errors of a block that is the oracle's own
/// rounding throughout go to per-lane sums and maxima (no branch on any one element), and
/// only a block with some other element in it pays for the element by element path.
fn compare_blocks<T: Stored>(
    dtype: DType,
    got: &[u8],
    want: &[f64],
    tolerance: &Tolerance,
    offset: usize,
    mut before: impl FnMut(Range<usize>),
) -> SliceFigures {
    let mut figures = SliceFigures::default();
    let mut lanes = Lanes::default();
    for piece in pieces(want.len()) {
        before(piece.clone());
        let got = &got[piece.start * T::SIZE..piece.end * T::SIZE];
        let blocks = want[piece.clone()].chunks_exact(BLOCK).zip(got.chunks_exact(BLOCK * T::SIZE));
        for (index, (want, got)) in blocks.enumerate() {
            if !lanes.take::<T>(got, want) {
                compare_elements(dtype, got, want, tolerance, offset + piece.start + index * BLOCK, &mut figures);
            }
        }
    }
    let whole = want.len() / BLOCK * BLOCK;
    compare_elements(dtype, &got[whole * T::SIZE..], &want[whole..], tolerance, offset + whole, &mut figures);
    // the lanes join in lane order after the blocks that went element by element: a fixed
    // order for a given output, as the slices' is
    figures.abs_sum += lanes.sums.iter().sum::<f64>();
    figures.max_abs_error = lanes.maxima.iter().fold(figures.max_abs_error, |max, &e| max.max(e));
    figures
}

/// The fast path's running figures: each block's errors are summed pairwise, and their
/// maximum taken, down to `LANES` (so that the sums and maxima stay in registers), and those
/// join the lanes'.
#[derive(Default)]
struct Lanes {
    sums: [f64; LANES],
    maxima: [f64; LANES],
}

/// Lanes of the fast path's sums and maxima.
const LANES: usize = 4;

impl Lanes {
    /// Takes a block's errors if every element of it is the oracle's rounding, bit for bit:
    /// each such element is within every tolerance and 0 ulp, and its error is what the
    /// element by element path adds (0 for the oracle's own infinity). A NaN is the rounding
    /// only of a NaN, and adds nothing on either path: there a NaN against a NaN is no error,
    /// 0 ulp and accepted; here its error is left out as an infinity's is.
    #[inline(always)]
    fn take<T: Stored>(&mut self, got: &[u8], want: &[f64]) -> bool {
        let (got, want): (_, &[f64; BLOCK]) = (&got[..BLOCK * T::SIZE], want[..BLOCK].try_into().unwrap());
        let mut other = 0;
        for (bytes, rounded) in got.chunks_exact(T::SIZE).zip(T::rounded(want)) {
            other |= T::bits(bytes) ^ rounded;
        }
        if other != 0 {
            return false;
        }
        // every error of a finite element is finite, and so is their sum: a sum that is not
        // comes of the oracle's own infinities (or NaNs), rare enough that only such a block
        // pays for leaving them out
        let (sums, maxima) = match gather::<T, false>(got, want) {
            (sums, _) if !sums.iter().all(|s| s.is_finite()) => gather::<T, true>(got, want),
            figures => figures,
        };
        for lane in 0..LANES {
            self.sums[lane] += sums[lane];
            self.maxima[lane] = if maxima[lane] > self.maxima[lane] { maxima[lane] } else { self.maxima[lane] };
        }
        true
    }
}

/// A block's errors, summed pairwise and their maximum taken down to `LANES`; with
/// `INFINITIES`, those of infinite and NaN elements left out as 0.
#[inline(always)]
fn gather<T: Stored, const INFINITIES: bool>(got: &[u8], want: &[f64; BLOCK]) -> ([f64; LANES], [f64; LANES]) {
    let mut values = [0.0; BLOCK];
    for (value, bytes) in values.iter_mut().zip(got.chunks_exact(T::SIZE)) {
        *value = T::value(T::bits(bytes));
    }
    let mut errors = [0.0; BLOCK];
    for (error, (&value, &w)) in errors.iter_mut().zip(values.iter().zip(want)) {
        let e = (f64::from(value) - w).abs();
        // an infinite error (the oracle's own overflow) or a NaN one (its infinity less
        // itself, or its NaN) is 0
        *error = if INFINITIES && !e.is_finite() { 0.0 } else { e };
    }
    let mut maxima = errors;
    let mut width = BLOCK;
    while width > LANES {
        width /= 2;
        for i in 0..width {
            errors[i] += errors[i + width];
            // a NaN here goes with its block's sums, never kept: a plain comparison serves
            maxima[i] = if maxima[i + width] > maxima[i] { maxima[i + width] } else { maxima[i] };
        }
    }
    (errors[..LANES].try_into().unwrap(), maxima[..LANES].try_into().unwrap())
}

/// Gate 3 element by element, into `figures`: every element, however far from the oracle.
fn compare_elements(dtype: DType, got: &[u8], want: &[f64], tolerance: &Tolerance, offset: usize, figures: &mut SliceFigures) {
    let size = dtype.size();
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
                // in a longer output: the first and last element of a run, and the rest's
                let long: Vec<u8> = finite.iter().copied().cycle().take(3 * FINITE_RUN + 2 * finite.len()).collect();
                assert!(all_finite(dtype, &long), "{dtype}");
                for at in [0, FINITE_RUN - dtype.size(), FINITE_RUN, 3 * FINITE_RUN, long.len() - dtype.size()] {
                    let mut bytes = long.clone();
                    bytes[at..at + dtype.size()].copy_from_slice(&encode(special));
                    assert!(!all_finite(dtype, &bytes), "{dtype} {special:#x} at byte {at}");
                }
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

    /// One output of a case: the oracle's values, each launch's bytes and poison.
    struct Output {
        dtype: DType,
        want: Vec<f64>,
        launches: Vec<Vec<u8>>,
        poisons: Vec<Vec<u8>>,
    }

    impl Output {
        /// A passing output of `len` elements over three launches: the oracle's rounding,
        /// the same every launch, over the runner's poisons.
        fn passing(dtype: DType, len: usize, stream: &mut crate::inputs::SeededStream) -> Output {
            let want: Vec<f64> = (0..len)
                .map(|_| if dtype.is_float() { (stream.next_unit() - 0.5) * 8.0 } else { stream.next_int(0, 200) as f64 })
                .collect();
            let bytes: Vec<u8> = want.iter().flat_map(|&w| element_bytes(dtype, bits_in(dtype, w))).collect();
            let poisons = (0..3).map(|l| vec![crate::runner::output_poison(l); dtype.size()]).collect();
            Output { dtype, want, launches: vec![bytes; 3], poisons }
        }

        fn set(&mut self, launch: usize, at: usize, bytes: &[u8]) {
            let size = self.dtype.size();
            self.launches[launch][at * size..(at + 1) * size].copy_from_slice(bytes);
        }

        /// Element `at` of every launch set to the bits of `value`.
        fn everywhere(&mut self, at: usize, value: f64) {
            let bytes = element_bytes(self.dtype, bits_in(self.dtype, value));
            (0..self.launches.len()).for_each(|l| self.set(l, at, &bytes));
        }

        /// Elements in the first slice, in a middle one and in the last (a part slice in the
        /// longer outputs), where there are that many.
        fn sites(&self) -> Vec<usize> {
            let len = self.want.len();
            let mut sites: Vec<usize> =
                [0, COMPARE_SLICE + 5, 2 * COMPARE_SLICE + 3 * BLOCK + 1, len.saturating_sub(1)].into_iter().filter(|&i| i < len).collect();
            sites.dedup();
            sites
        }

        /// `output_gates` gives what the three gates' own functions give, one after another,
        /// with and without gate 1, the figures bit for bit.
        fn assert_fused_is_separate(&self, tolerance: &Tolerance, what: &str) -> OutputGates {
            let (dtype, shape) = (self.dtype, [self.want.len()]);
            let bits = |m: &Metrics| (m.max_abs_error.to_bits(), m.mean_abs_error.to_bits());
            for finite_check in [false, true] {
                let fused = output_gates(dtype, &shape, (&self.launches, false), &self.poisons, &self.want, tolerance, finite_check);
                let repeated = repeat(dtype, &shape, &self.launches, &self.poisons);
                let (metrics, compared) = compare(dtype, &shape, &self.launches[0], &self.want, tolerance);
                let finite = finite_check.then(|| nonfinite(dtype, &shape, &self.launches[0], &self.want)).flatten();
                let context = format!("{dtype} {what}, {} elements, finite check {finite_check}", self.want.len());
                assert_eq!(fused.repeat, repeated, "{context}: repeat");
                assert_eq!(fused.compare, compared, "{context}: compare");
                assert_eq!(fused.nonfinite, finite, "{context}: nonfinite");
                assert_eq!((&fused.metrics, bits(&fused.metrics)), (&metrics, bits(&metrics)), "{context}: metrics");
            }
            output_gates(dtype, &shape, (&self.launches, false), &self.poisons, &self.want, tolerance, true)
        }
    }

    const FUSED_SIZES: [usize; 6] = [0, 1, 1000, COMPARE_SLICE, COMPARE_SLICE + 1, 3 * COMPARE_SLICE + 17];
    const FUSED_DTYPES: [DType; 4] = [DType::F32, DType::F16, DType::Bf16, DType::I32];

    #[test]
    fn output_gates_pass_a_passing_output_with_compares_figures() {
        let mut stream = crate::inputs::SeededStream::new(15);
        let tolerance = Tolerance::Relative { rtol: 1e-5, atol: 1e-6 };
        for dtype in FUSED_DTYPES {
            for len in FUSED_SIZES {
                let output = Output::passing(dtype, len, &mut stream);
                let gates = output.assert_fused_is_separate(&tolerance, "passing");
                assert_eq!((gates.repeat, gates.compare, gates.nonfinite), (None, None, None), "{dtype} {len}");
                assert_eq!((gates.metrics.elements, gates.metrics.mismatches), (len, 0));
            }
        }
    }

    #[test]
    fn output_gates_say_what_each_gate_says_of_a_nan_or_an_infinity() {
        let mut stream = crate::inputs::SeededStream::new(16);
        let tolerance = Tolerance::Ulp(1);
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            for len in FUSED_SIZES {
                let passing = Output::passing(dtype, len, &mut stream);
                for at in passing.sites() {
                    for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                        // on every launch, where the oracle is finite: gates 1 and 3 fail
                        let mut output = Output::passing(dtype, len, &mut stream);
                        output.everywhere(at, value);
                        let gates = output.assert_fused_is_separate(&tolerance, &format!("{value} at {at}"));
                        assert!(gates.nonfinite.is_some() && gates.compare.is_some() && gates.repeat.is_none());
                        // on one launch: gate 2 fails too, gate 1 (on the first) only if it is that one
                        for launch in [0, 2] {
                            let mut output = Output::passing(dtype, len, &mut stream);
                            output.set(launch, at, &element_bytes(dtype, bits_in(dtype, value)));
                            let gates = output.assert_fused_is_separate(&tolerance, &format!("{value} at {at} of launch {launch}"));
                            assert!(gates.repeat.is_some() && gates.nonfinite.is_some() == (launch == 0));
                        }
                    }
                    // the oracle's own overflow, to the same infinity: no gate fails
                    let mut output = Output::passing(dtype, len, &mut stream);
                    output.want[at] = -1e300;
                    output.everywhere(at, f64::NEG_INFINITY);
                    let gates = output.assert_fused_is_separate(&tolerance, &format!("the oracle's overflow at {at}"));
                    assert_eq!((gates.repeat, gates.compare, gates.nonfinite), (None, None, None));
                }
            }
        }
    }

    #[test]
    fn output_gates_say_what_repeat_says_of_unwritten_and_differing_elements() {
        let mut stream = crate::inputs::SeededStream::new(17);
        let tolerance = Tolerance::Relative { rtol: 1e-5, atol: 1e-6 };
        for dtype in FUSED_DTYPES {
            for len in FUSED_SIZES {
                let passing = Output::passing(dtype, len, &mut stream);
                for at in passing.sites() {
                    // equal to each launch's poison on every launch
                    let mut output = Output::passing(dtype, len, &mut stream);
                    for launch in 0..3 {
                        let poison = output.poisons[launch].clone();
                        output.set(launch, at, &poison);
                    }
                    let gates = output.assert_fused_is_separate(&tolerance, &format!("unwritten at {at}"));
                    assert!(gates.repeat.is_some_and(|f| f.message.contains("unwritten")));
                    // one launch's element off by its last bit, or another launch's
                    for launch in [1, 2] {
                        let mut output = Output::passing(dtype, len, &mut stream);
                        let size = dtype.size();
                        output.launches[launch][at * size] ^= 1;
                        let gates = output.assert_fused_is_separate(&tolerance, &format!("launch {launch} differs at {at}"));
                        assert!(gates.repeat.is_some_and(|f| f.message.contains("differ between launches")));
                        assert!(gates.compare.is_none());
                    }
                }
            }
        }
    }

    #[test]
    fn output_gates_count_every_element_out_of_tolerance() {
        let mut stream = crate::inputs::SeededStream::new(18);
        let tolerance = Tolerance::Ulp(1);
        for dtype in FUSED_DTYPES {
            for len in FUSED_SIZES {
                let mut output = Output::passing(dtype, len, &mut stream);
                let sites = output.sites();
                // a few units off on every launch, and some misses of each kind on the first
                for &at in &sites {
                    let bits = bits_in(dtype, output.want[at]) + 3;
                    (0..3).for_each(|l| output.set(l, at, &element_bytes(dtype, bits)));
                }
                output.assert_fused_is_separate(&tolerance, "3 units off");
                for _ in 0..(len / 500).min(40) {
                    let at = stream.next_int(0, len as i64) as usize;
                    let missed = got_for(dtype, output.want[at], 1.0, &mut stream);
                    output.set(0, at, &missed);
                }
                let gates = output.assert_fused_is_separate(&tolerance, "misses");
                assert_eq!(gates.compare.is_some(), !sites.is_empty(), "{dtype} {len}");
            }
        }
    }

    #[test]
    fn output_gates_over_poisons_that_do_not_differ_take_repeats_whole_output_path() {
        let mut stream = crate::inputs::SeededStream::new(19);
        let tolerance = Tolerance::Exact;
        for dtype in FUSED_DTYPES {
            for len in FUSED_SIZES {
                let mut output = Output::passing(dtype, len, &mut stream);
                output.poisons = vec![vec![0x5a; dtype.size()]; 3];
                let gates = output.assert_fused_is_separate(&tolerance, "passing, one poison");
                assert!(gates.repeat.is_none());
                let sites = output.sites();
                for &at in &sites {
                    (0..3).for_each(|l| output.set(l, at, &[0x5a; 4][..dtype.size()]));
                }
                let gates = output.assert_fused_is_separate(&tolerance, "unwritten, one poison");
                assert_eq!(gates.repeat.map(|f| f.count), (!sites.is_empty()).then_some(sites.len()), "{dtype} {len}");
            }
        }
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

    /// Gate 3 as it was before its fast path, element by element in order: the reference
    /// the blocks must agree with.
    fn reference_compare(dtype: DType, shape: &[usize], got: &[u8], want: &[f64], tolerance: &Tolerance) -> (Metrics, Option<Failure>) {
        let size = dtype.size();
        let mut figures = Metrics { elements: want.len(), ..Metrics::default() };
        let (mut first, mut abs_sum) = (None, 0.0);
        for (i, &w) in want.iter().enumerate() {
            let g = dtype.decode(&got[i * size..]);
            let rounded = round_to(dtype, w);
            let error = if g.is_infinite() && g == rounded { 0.0 } else { (g - w).abs() };
            if error.is_finite() {
                abs_sum += error;
                figures.max_abs_error = figures.max_abs_error.max(error);
            } else if !(g.is_nan() && w.is_nan()) {
                figures.max_abs_error = f64::INFINITY;
            }
            let ulp = if g.is_nan() && w.is_nan() { 0 } else { ulp_distance(dtype, g, rounded) };
            figures.max_ulp = figures.max_ulp.max(ulp);
            if !tolerance.accepts(dtype, g, w) {
                figures.mismatches += 1;
                first.get_or_insert(i);
            }
        }
        figures.mean_abs_error = if want.is_empty() { 0.0 } else { abs_sum / want.len() as f64 };
        let failure = first.map(|i| Failure {
            count: figures.mismatches,
            total: want.len(),
            first: Some(format::coordinates(shape, i)),
            message: format!(
                "{} of {} elements differ, first {}: got {} want {}",
                format::count(figures.mismatches),
                format::count(want.len()),
                format::coordinates_text(shape, i),
                format::value_and_bits(dtype, dtype.decode(&got[i * size..]), dtype.bits(&got[i * size..])),
                format::value_and_bits(dtype, round_to(dtype, want[i]), bits_in(dtype, want[i]))
            ),
        });
        (figures, failure)
    }

    fn assert_compare_is_the_reference(dtype: DType, got: &[u8], want: &[f64], tolerance: &Tolerance, what: &str) {
        let shape = [want.len()];
        let (metrics, failure) = compare(dtype, &shape, got, want, tolerance);
        let (expected, expected_failure) = reference_compare(dtype, &shape, got, want, tolerance);
        let context = || format!("{dtype} {tolerance} {what}, {} elements", want.len());
        assert_eq!(
            (metrics.elements, metrics.mismatches, metrics.max_ulp, metrics.max_abs_error.to_bits()),
            (expected.elements, expected.mismatches, expected.max_ulp, expected.max_abs_error.to_bits()),
            "{}: {metrics:?} against {expected:?}",
            context()
        );
        assert_eq!(failure, expected_failure, "{}", context());
        let (mean, reference) = (metrics.mean_abs_error, expected.mean_abs_error);
        assert!(
            mean == reference || (mean - reference).abs() <= 1e-12 * reference.abs(),
            "{}: mean {mean:e} against {reference:e}",
            context()
        );
    }

    /// The bits of one element of `dtype` as its bytes.
    fn element_bytes(dtype: DType, bits: u64) -> Vec<u8> {
        bits.to_le_bytes()[..dtype.size()].to_vec()
    }

    /// An oracle value meant to stress the rounding to `dtype`: anywhere from f64 subnormals
    /// past the type's overflow, the type's own values, ties between two of them and values
    /// just off a tie, zeros of both signs, infinities and NaN.
    fn adversarial_want(dtype: DType, stream: &mut crate::inputs::SeededStream) -> f64 {
        let bits = 8 * dtype.size() as u32;
        let random_bits = |stream: &mut crate::inputs::SeededStream| stream.next_u64() >> (64 - bits);
        let value_of = |b: u64| dtype.decode(&element_bytes(dtype, b));
        let sign = if stream.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
        match stream.next_int(0, 13) {
            0..=3 => sign * (1.0 + stream.next_unit()) * 2f64.powi(stream.next_int(-160, 140) as i32),
            4 => (stream.next_unit() - 0.5) * 8.0,
            5 => value_of(random_bits(stream)),
            6 | 7 => {
                // a tie between two neighbours of the type, or an f64 step to either side of it
                let b = random_bits(stream) & !(1 << (bits - 1));
                let (low, high) = (value_of(b), value_of(b + 1));
                let tie = low + (high - low) / 2.0;
                match stream.next_int(0, 3) {
                    0 => sign * tie,
                    1 => sign * tie.next_up(),
                    _ => sign * tie.next_down(),
                }
            }
            8 => sign * f64::from_bits(stream.next_u64() >> 12),
            9 => [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN][stream.next_int(0, 6) as usize],
            // NaNs of any sign and payload: all ones, one bit, any
            10 => {
                f64::from_bits([u64::MAX, 0x7ff0_0000_0000_0001, stream.next_u64() | 0x7ff0_0000_0000_0001][stream.next_int(0, 3) as usize])
            }
            11 => {
                sign * [65504.0, 65519.99, 65520.0, 3.4e38, 3.3961e38, f32::MAX as f64, 3.4028235677973366e38, 1e300]
                    [stream.next_int(0, 8) as usize]
            }
            _ => sign * 2f64.powi(stream.next_int(-150, -100) as i32) * stream.next_unit(),
        }
    }

    /// A kernel's element for `want`: the oracle's rounding, or one of the ways to miss it.
    fn got_for(dtype: DType, want: f64, miss: f64, stream: &mut crate::inputs::SeededStream) -> Vec<u8> {
        let bits = 8 * dtype.size() as u32;
        let rounded = bits_in(dtype, want);
        if stream.next_unit() >= miss {
            return element_bytes(dtype, rounded);
        }
        let sign = 1u64 << (bits - 1);
        let special = |value: f64| bits_in(dtype, value);
        let missed = match stream.next_int(0, 9) {
            0 => rounded.wrapping_add(1),
            1 => rounded.wrapping_sub(1),
            2 => special(f64::NAN),
            3 => special(f64::INFINITY),
            4 => special(f64::NEG_INFINITY),
            5 => rounded ^ sign,
            6 => 0,
            7 => rounded.wrapping_add(stream.next_int(2, 5) as u64),
            _ => stream.next_u64(),
        };
        element_bytes(dtype, missed & (u64::MAX >> (64 - bits)))
    }

    #[test]
    fn compare_agrees_with_the_element_by_element_reference_on_random_and_adversarial_outputs() {
        let tolerances = [
            Tolerance::Exact,
            Tolerance::Ulp(1),
            Tolerance::Ulp(3),
            Tolerance::Relative { rtol: 1e-5, atol: 1e-6 },
            Tolerance::Relative { rtol: 1e-2, atol: 0.0 },
        ];
        let mut stream = crate::inputs::SeededStream::new(0x6761_7465);
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            for trial in 0..600 {
                // lengths about the block's: none, less than one, one and a part, several
                let len = match trial % 4 {
                    0 => stream.next_int(0, 3 * BLOCK as i64) as usize,
                    1 => BLOCK * stream.next_int(0, 8) as usize,
                    _ => stream.next_int(0, 700) as usize,
                };
                let miss = [0.0, 0.0, 1e-3, 0.02, 0.3, 1.0][trial % 6];
                let want: Vec<f64> = (0..len).map(|_| adversarial_want(dtype, &mut stream)).collect();
                let got: Vec<u8> = want.iter().flat_map(|&w| got_for(dtype, w, miss, &mut stream)).collect();
                let tolerance = &tolerances[trial % tolerances.len()];
                assert_compare_is_the_reference(dtype, &got, &want, tolerance, &format!("trial {trial}"));
            }
        }
    }

    #[test]
    fn compare_agrees_with_the_reference_over_slices_of_plain_outputs() {
        let mut stream = crate::inputs::SeededStream::new(17);
        let tolerance = Tolerance::Relative { rtol: 1e-5, atol: 1e-6 };
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            // a correct output over several slices, then single misses in a few of its blocks
            let len = 2 * COMPARE_SLICE + 3 * BLOCK + 7;
            let want: Vec<f64> = (0..len).map(|_| (stream.next_unit() - 0.5) * 8.0).collect();
            let mut got: Vec<u8> = want.iter().flat_map(|&w| element_bytes(dtype, bits_in(dtype, w))).collect();
            assert_compare_is_the_reference(dtype, &got, &want, &tolerance, "correct");
            for _ in 0..6 {
                let i = stream.next_int(0, len as i64) as usize;
                let missed = got_for(dtype, want[i], 1.0, &mut stream);
                got[i * dtype.size()..(i + 1) * dtype.size()].copy_from_slice(&missed);
                assert_compare_is_the_reference(dtype, &got, &want, &tolerance, &format!("missed at {i}"));
            }
        }
    }

    #[test]
    fn compare_takes_each_kind_of_element_alone_in_a_block_of_the_oracles_roundings() {
        let tolerance = Tolerance::Ulp(1);
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            let sign = 1u64 << (8 * dtype.size() - 1);
            let max = bits_in(dtype, f64::MAX) - 1;
            // (want, got's bits): NaN against NaN and not, infinities and the oracle's overflow,
            // -0 against +0, subnormals one unit apart, the largest finite value
            let cases = [
                (f64::NAN, bits_in(dtype, f64::NAN)),
                (f64::NAN, 0),
                (1.0, bits_in(dtype, f64::NAN)),
                (f64::INFINITY, bits_in(dtype, f64::INFINITY)),
                (f64::NEG_INFINITY, bits_in(dtype, f64::INFINITY)),
                (1e300, bits_in(dtype, f64::INFINITY)),
                (-1e300, bits_in(dtype, f64::NEG_INFINITY)),
                (1e300, max),
                (0.0, sign),
                (-0.0, 0),
                (-1e-300, 0),
                (-1e-300, sign),
                (dtype.decode(&element_bytes(dtype, 1)), 2),
                (dtype.decode(&element_bytes(dtype, 1)), 1),
                (dtype.decode(&element_bytes(dtype, max)), max),
                (dtype.decode(&element_bytes(dtype, max)), max - 1),
            ];
            for (index, (w, bits)) in cases.into_iter().enumerate() {
                for at in [0, 5, BLOCK - 1, BLOCK, 2 * BLOCK + 3] {
                    let mut want: Vec<f64> = (0..3 * BLOCK + 1).map(|i| 1.0 + i as f64 / 64.0).collect();
                    want[at] = w;
                    let mut got: Vec<u8> = want.iter().flat_map(|&w| element_bytes(dtype, bits_in(dtype, w))).collect();
                    got[at * dtype.size()..(at + 1) * dtype.size()].copy_from_slice(&element_bytes(dtype, bits));
                    assert_compare_is_the_reference(dtype, &got, &want, &tolerance, &format!("case {index} at {at}"));
                }
            }
        }
    }

    /// The fast path's rounding of each of `wants` to `dtype`, a block at a time.
    fn fast_rounded(dtype: DType, wants: &[f64]) -> Vec<u32> {
        let block = |want: &[f64]| {
            let mut padded = [0.0; BLOCK];
            padded[..want.len()].copy_from_slice(want);
            let rounded = match dtype {
                DType::F32 => F32::rounded(&padded),
                DType::F16 => F16::rounded(&padded),
                _ => Bf16::rounded(&padded),
            };
            rounded[..want.len()].to_vec()
        };
        wants.chunks(BLOCK).flat_map(block).collect()
    }

    fn fast_value(dtype: DType, bits: u32) -> f32 {
        match dtype {
            DType::F32 => F32::value(bits),
            DType::F16 => F16::value(bits),
            _ => Bf16::value(bits),
        }
    }

    /// Where a rounding goes wrong, if anywhere: on each value of the 16-bit types, on each
    /// tie between two neighbours (the overflow threshold past the largest) and just off
    /// either, by an f64 step and by steps about f32's unit there (where a rounding to
    /// nearest in f32 first would make or move a tie), each of both signs.
    #[test]
    fn the_fast_paths_16_bit_rounding_is_round_tos_at_every_value_and_tie() {
        for dtype in [DType::F16, DType::Bf16] {
            let value_of = |b: u64| dtype.decode(&element_bytes(dtype, b));
            let infinity = bits_in(dtype, f64::INFINITY);
            for b in 0..infinity {
                let low = value_of(b);
                let high = if b + 1 < infinity { value_of(b + 1) } else { 2.0 * low - value_of(b - 1) };
                let (unit, tie) = (high - low, low + (high - low) / 2.0);
                let mut wants = vec![low, low.next_up(), low.next_down(), tie, tie.next_up(), tie.next_down()];
                for k in [12, 13, 14, 15, 16, 17, 18, 20, 24, 30, 40] {
                    let step = unit * 2f64.powi(-k);
                    wants.extend([tie + step, tie - step, low + step, low - step]);
                }
                let wants: Vec<f64> = wants.into_iter().flat_map(|w| [w, -w]).collect();
                for (&w, fast) in wants.iter().zip(fast_rounded(dtype, &wants)) {
                    let expected = bits_in(dtype, w);
                    assert_eq!(fast as u64, expected, "{dtype}: {w:e} ({:#x}) gives {fast:#x}, round_to {expected:#x}", w.to_bits());
                }
            }
        }
    }

    #[test]
    fn the_fast_paths_rounding_is_round_tos_bit_for_bit_and_a_nan_stays_a_nan() {
        let mut stream = crate::inputs::SeededStream::new(3);
        for dtype in [DType::F32, DType::F16, DType::Bf16] {
            let wants: Vec<f64> = (0..200_000).map(|_| adversarial_want(dtype, &mut stream)).collect();
            for (&w, fast) in wants.iter().zip(fast_rounded(dtype, &wants)) {
                let expected = bits_in(dtype, w);
                if w.is_nan() {
                    let nan = dtype.decode(&element_bytes(dtype, fast as u64)).is_nan();
                    assert!(nan, "{dtype}: NaN gives {fast:#x}");
                } else {
                    assert_eq!(fast as u64, expected, "{dtype}: {w:e} ({:#x}) gives {fast:#x}, round_to {expected:#x}", w.to_bits());
                }
            }
        }
    }

    #[test]
    fn the_fast_paths_values_are_decodes_for_every_16_bit_element() {
        let f32_bits = [0u32, 1, 0x007f_ffff, 0x0080_0000, 0x3f80_0000, 0x7f7f_ffff, 0x7f80_0000, 0x7f80_0001, 0x7fc0_0000, 0xffff_ffff];
        let every_16_bit = || (0..=0xffffu32).flat_map(|b| [(DType::F16, b), (DType::Bf16, b)]);
        let f32_cases = f32_bits.into_iter().flat_map(|b| [(DType::F32, b), (DType::F32, b | 0x8000_0000)]);
        for (dtype, bits) in every_16_bit().chain(f32_cases) {
            let expected = dtype.decode(&element_bytes(dtype, bits as u64));
            let value = f64::from(fast_value(dtype, bits));
            assert!(
                value.to_bits() == expected.to_bits() || value.is_nan() && expected.is_nan(),
                "{dtype} {bits:#x}: {value:e}, decode {expected:e}"
            );
        }
    }

    #[test]
    fn compare_gives_the_same_figures_on_one_thread_as_on_many() {
        let mut stream = crate::inputs::SeededStream::new(5);
        let len = 3 * COMPARE_SLICE + 11;
        let want: Vec<f64> = (0..len).map(|_| stream.next_normal() * 1e3).collect();
        let got: Vec<u8> = want.iter().flat_map(|&w| got_for(DType::Bf16, w, 1e-4, &mut stream)).collect();
        let t = Tolerance::Ulp(1);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| compare(DType::Bf16, &[len], &got, &want, &t))
        };
        let (one, failure) = run(1);
        let (many, many_failure) = run(4);
        assert_eq!((one.mean_abs_error.to_bits(), &one, failure), (many.mean_abs_error.to_bits(), &many, many_failure));
    }
}
