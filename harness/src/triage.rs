//! The summary of a failing output that its triage page draws: where over the output's
//! coordinates its elements mismatch (a heat map of fixed size), how far they are from the
//! oracle (an ulp histogram), and the first mismatches with got and want. Made where the bytes
//! are (a record's process), small enough to travel in its result and the JSON report.

use engine::DType;
use serde::{Deserialize, Serialize};

use crate::format;
use crate::gate::Gate;
use crate::tolerance::{Tolerance, bits_in, round_to, ulp_distance};

/// The heat map's largest side, in cells: a bigger output is downsampled to it.
pub const MAX_CELLS: usize = 128;

/// How many mismatches a triage lists, the first by element order.
pub const FIRST_MISMATCHES: usize = 20;

/// A failing output of one case, summarized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Triage {
    pub gate: Gate,
    pub case_index: usize,
    pub case: String,
    pub tensor: String,
    pub dtype: String,
    pub shape: Vec<usize>,
    pub elements: usize,
    pub mismatches: usize,
    pub heat: HeatMap,
    pub ulp_histogram: Vec<UlpBin>,
    pub first: Vec<Mismatch>,
}

/// Mismatching elements per cell over the output seen as rows x columns (a 1-D output is one
/// row; higher ranks are flattened to their leading axes x the last), each cell
/// `cell_rows` x `cell_cols` elements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeatMap {
    pub rows: usize,
    pub cols: usize,
    pub cell_rows: usize,
    pub cell_cols: usize,
    pub grid_rows: usize,
    pub grid_cols: usize,
    /// Row-major, `grid_rows * grid_cols` cells.
    pub counts: Vec<u32>,
}

/// How many elements are at a distance from the oracle in the bin `label` names: `0`, `1`,
/// `2-3`, `4-7`, ..., or `NaN on one side` (no number of ulps).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UlpBin {
    pub label: String,
    pub count: usize,
}

/// One mismatching element: got and want as values and bits, and their distance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub coordinates: Vec<usize>,
    pub got: String,
    pub got_bits: String,
    pub want: String,
    pub want_bits: String,
    /// `None` where the distance is not a number of ulps (a NaN on one side).
    pub ulp: Option<u64>,
}

/// Where the failure is: the gate, the case (by index and as the record line names it) and
/// the output.
pub struct Site<'a> {
    pub gate: Gate,
    pub case_index: usize,
    pub case: &'a str,
    pub tensor: &'a str,
}

/// The 2-D view of a shape: rows x columns.
pub fn view(shape: &[usize]) -> (usize, usize) {
    match shape {
        [] => (1, 1),
        [n] => (1, *n),
        [lead @ .., last] => (lead.iter().product(), *last),
    }
}

impl HeatMap {
    fn new(shape: &[usize]) -> HeatMap {
        let (rows, cols) = view(shape);
        let (cell_rows, cell_cols) = (rows.div_ceil(MAX_CELLS).max(1), cols.div_ceil(MAX_CELLS).max(1));
        let (grid_rows, grid_cols) = (rows.div_ceil(cell_rows).max(1), cols.div_ceil(cell_cols).max(1));
        HeatMap { rows, cols, cell_rows, cell_cols, grid_rows, grid_cols, counts: vec![0; grid_rows * grid_cols] }
    }

    fn add(&mut self, element: usize) {
        let (row, col) = (element / self.cols.max(1), element % self.cols.max(1));
        self.counts[(row / self.cell_rows) * self.grid_cols + col / self.cell_cols] += 1;
    }

    /// Elements in a cell (cells on the last row or column may be partial).
    pub fn cell_elements(&self, grid_row: usize, grid_col: usize) -> usize {
        let rows = (self.rows - grid_row * self.cell_rows).min(self.cell_rows);
        let cols = (self.cols - grid_col * self.cell_cols).min(self.cell_cols);
        rows * cols
    }
}

/// The histogram's bin of a distance: 0, then one bin per power of two (1, 2-3, 4-7, ...),
/// and the last for a distance that is no number of ulps.
fn bin_of(ulp: u64) -> usize {
    if ulp == u64::MAX { 65 } else { 64 - ulp.leading_zeros() as usize }
}

fn bin_label(bin: usize) -> String {
    match bin {
        0 => "0".into(),
        1 => "1".into(),
        65 => "NaN on one side".into(),
        64 => "2^63 or more".into(),
        b => format!("{}-{}", 1u64 << (b - 1), (1u64 << b) - 1),
    }
}

/// The summary of `got` (bytes of `dtype`) against the oracle's `want` under `tolerance`.
pub fn summarize(site: &Site, dtype: DType, shape: &[usize], got: &[u8], want: &[f64], tolerance: &Tolerance) -> Triage {
    let size = dtype.size();
    let mut heat = HeatMap::new(shape);
    let mut bins = vec![0usize; 66];
    let mut first = Vec::new();
    let mut mismatches = 0;
    for (i, &w) in want.iter().enumerate() {
        let bytes = &got[i * size..];
        let g = dtype.decode(bytes);
        let rounded = round_to(dtype, w);
        let ulp = if g.is_nan() && w.is_nan() { 0 } else { ulp_distance(dtype, g, rounded) };
        bins[bin_of(ulp)] += 1;
        if tolerance.accepts(dtype, g, w) {
            continue;
        }
        mismatches += 1;
        heat.add(i);
        if first.len() < FIRST_MISMATCHES {
            first.push(Mismatch {
                coordinates: format::coordinates(shape, i),
                got: format::value(g),
                got_bits: format::bits(dtype, dtype.bits(bytes)),
                want: format::value(rounded),
                want_bits: format::bits(dtype, bits_in(dtype, w)),
                ulp: (ulp != u64::MAX).then_some(ulp),
            });
        }
    }
    // every bin up to the farthest distance, empty ones too (the gaps are part of the picture)
    let farthest = bins[..65].iter().rposition(|c| *c > 0).unwrap_or(0);
    let mut ulp_histogram: Vec<UlpBin> = (0..=farthest).map(|b| UlpBin { label: bin_label(b), count: bins[b] }).collect();
    if bins[65] > 0 {
        ulp_histogram.push(UlpBin { label: bin_label(65), count: bins[65] });
    }
    Triage {
        gate: site.gate,
        case_index: site.case_index,
        case: site.case.to_string(),
        tensor: site.tensor.to_string(),
        dtype: dtype.name().to_string(),
        shape: shape.to_vec(),
        elements: want.len(),
        mismatches,
        heat,
        ulp_histogram,
        first,
    }
}

/// A record keeps one triage per gate and output: that of the first case where it failed,
/// the case its line names.
pub fn keep_first(kept: &mut Vec<Triage>, new: Vec<Triage>) {
    for t in new {
        if !kept.iter().any(|k| k.gate == t.gate && k.tensor == t.tensor) {
            kept.push(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn site() -> Site<'static> {
        Site { gate: Gate::Shapes, case_index: 1, case: "{rows = 3, k = 4}", tensor: "out" }
    }

    #[test]
    fn mismatches_land_in_their_cells_with_got_and_want_as_values_and_bits() {
        let want: Vec<f64> = (0..12).map(|i| i as f64).collect();
        let mut got: Vec<f32> = (0..12).map(|i| i as f32).collect();
        got[5] = 5.5; // [1, 1]
        got[11] = f32::NAN; // [2, 3]
        let t = summarize(&site(), DType::F32, &[3, 4], &f32_bytes(&got), &want, &Tolerance::Exact);
        assert_eq!((t.mismatches, t.elements), (2, 12));
        assert_eq!((t.heat.rows, t.heat.cols, t.heat.cell_rows, t.heat.cell_cols), (3, 4, 1, 1));
        let hot: Vec<usize> = t.heat.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, _)| i).collect();
        assert_eq!(hot, [5, 11]);
        assert_eq!(t.first[0].coordinates, [1, 1]);
        assert_eq!((t.first[0].got.as_str(), t.first[0].got_bits.as_str()), ("5.500", "0x40b00000"));
        assert_eq!((t.first[0].want.as_str(), t.first[0].want_bits.as_str()), ("5.000", "0x40a00000"));
        assert_eq!(t.first[0].ulp, Some(1 << 20));
        assert_eq!((t.first[1].got.as_str(), t.first[1].ulp), ("NaN", None));
        let labels: Vec<(&str, usize)> = t.ulp_histogram.iter().map(|b| (b.label.as_str(), b.count)).filter(|b| b.1 > 0).collect();
        assert_eq!(labels, [("0", 10), ("1048576-2097151", 1), ("NaN on one side", 1)]);
    }

    #[test]
    fn a_big_output_is_downsampled_and_higher_ranks_flattened() {
        assert_eq!(view(&[2, 3, 5]), (6, 5));
        assert_eq!(view(&[7]), (1, 7));
        assert_eq!(view(&[]), (1, 1));
        let (rows, cols) = (1000, 4096);
        let want = vec![0.0; rows * cols];
        let mut got = vec![0.0f32; rows * cols];
        got[rows * cols - 1] = 1.0;
        let t = summarize(&site(), DType::F32, &[rows, cols], &f32_bytes(&got), &want, &Tolerance::Exact);
        let h = &t.heat;
        assert!(h.grid_rows <= MAX_CELLS && h.grid_cols <= MAX_CELLS, "{} x {}", h.grid_rows, h.grid_cols);
        assert_eq!((h.cell_rows, h.cell_cols, h.grid_rows, h.grid_cols), (8, 32, 125, 128));
        assert_eq!(h.counts.iter().sum::<u32>(), 1);
        assert_eq!(*h.counts.last().unwrap(), 1);
        assert_eq!(h.cell_elements(124, 127), 8 * 32);
        let uneven = HeatMap::new(&[130, 3]);
        assert_eq!((uneven.cell_rows, uneven.grid_rows), (2, 65));
        assert_eq!(uneven.cell_elements(64, 0), 2);
    }

    #[test]
    fn a_record_keeps_the_first_case_per_gate_and_output() {
        let t = |case_index, tensor: &str| {
            let site = Site { gate: Gate::Shapes, case_index, case: "{}", tensor };
            summarize(&site, DType::F32, &[1], &f32_bytes(&[1.0]), &[0.0], &Tolerance::Exact)
        };
        let mut kept = vec![t(0, "out")];
        keep_first(&mut kept, vec![t(1, "out"), t(1, "max")]);
        let kept: Vec<(usize, &str)> = kept.iter().map(|k| (k.case_index, k.tensor.as_str())).collect();
        assert_eq!(kept, [(0, "out"), (1, "max")]);
    }
}
