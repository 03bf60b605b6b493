//! Gate 5, seams: a row's output bytes never depend on how the batch was cut. The rows of a
//! case run again in pieces of each cut size (and, for decode, in batches built by repeating
//! the case's rows), each piece a launch of its own with the row axis set to its row count,
//! and every output row of a piece is compared byte for byte with the same row of the whole
//! batch's launch (gate 2's first, not launched again).

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::backend::{Backend, MemoryFinding, Module, Schedule};
use engine::ops::{OpCall, OpSpec, Role};
use engine::shape_expr::{ShapeExpr, Symbols};
use engine::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::format;
use crate::gates::Failure;
use crate::inputs::device::{DeviceDraw, Seal};
use crate::phases::{Lap, Phases};

/// At most this many pieces of each cut are launched, spread over the batch with the first
/// and the last (the remainder) among them: pieces of one row over a case of 1,000 rows would
/// be 1,000 launches, and a seam shows at the batch's edges and its remainder first.
pub const MAX_PIECES_PER_CUT: usize = 3;

/// A decode batch runs on each case where the batch's row count times the elements one row
/// reaches (its own in every row tensor, and every shared tensor whole: a query row reads
/// every key of a cache, a row of x every row of W) is at most this, else on the case where
/// that is smallest: a batch of 32 rows of a case of 2,048 keys would cost four times the
/// case again, and a row whose bits depend on the batch's size shows in a small case as well.
pub const BATCH_WORK: usize = 1 << 16;

/// The cases (indices) a decode batch of `batch` rows runs on; never a GPU-only one, whose
/// rows are gigabytes.
pub fn batched_cases(contract: &crate::contract::Contract, axis: &str, batch: usize) -> Vec<usize> {
    let has_rows = |shape: &str| ShapeExpr::parse(shape).is_ok_and(|s| s.symbols().contains(&axis));
    let work = |case: &crate::contract::Case| -> usize {
        let reached: usize = contract
            .op
            .tensors
            .iter()
            .map(|t| {
                let dims = &case.shapes[t.name];
                if has_rows(t.shape) { dims[1..].iter().product::<usize>() } else { dims.iter().product() }
            })
            .sum();
        batch.saturating_mul(reached)
    };
    let eligible: Vec<usize> = (0..contract.cases.len()).filter(|i| contract.cases[*i].gpu_only.is_none()).collect();
    let small: Vec<usize> = eligible.iter().copied().filter(|i| work(&contract.cases[*i]) <= BATCH_WORK).collect();
    if small.is_empty() { eligible.into_iter().min_by_key(|i| work(&contract.cases[*i])).into_iter().collect() } else { small }
}

/// One way of cutting a case's rows: pieces of a cut size, or one decode batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub cut: Option<usize>,
    pub batch: Option<usize>,
    /// The case's rows each launched piece holds, in its order.
    pub pieces: Vec<Vec<usize>>,
    /// How many pieces the cut makes in all (more than launched when bounded).
    pub of_pieces: usize,
    /// The case's row count.
    pub rows: usize,
}

impl Plan {
    /// `pieces of 7 rows`, `pieces of 1 row (3 of 1,000 pieces)`, `a batch of 32 rows (the
    /// case's 3 rows repeated)`.
    pub fn label(&self) -> String {
        match (self.cut, self.batch) {
            (Some(cut), _) => {
                let bounded = if self.pieces.len() < self.of_pieces {
                    format!(" ({} of {} pieces)", self.pieces.len(), format::count(self.of_pieces))
                } else {
                    String::new()
                };
                format!("pieces of {}{bounded}", format::plural(cut, "row"))
            }
            (None, Some(batch)) if batch > self.rows => {
                format!("a batch of {batch} rows (the case's {} repeated)", format::plural(self.rows, "row"))
            }
            (None, Some(batch)) => format!("a batch of {batch} rows (rows 0 to {})", batch - 1),
            (None, None) => "the whole batch".into(),
        }
    }
}

/// The pieces of every cut smaller than the case (a cut of all its rows or more is the whole
/// batch again), then one batch of each size built by repeating the rows cyclically.
pub fn plans(rows: usize, cuts: &[usize], batches: &[usize]) -> Vec<Plan> {
    let mut out = Vec::new();
    for &cut in cuts.iter().filter(|c| **c >= 1 && **c < rows) {
        let count = rows.div_ceil(cut);
        let pieces = spread(count, MAX_PIECES_PER_CUT).into_iter().map(|p| (p * cut..((p + 1) * cut).min(rows)).collect()).collect();
        out.push(Plan { cut: Some(cut), batch: None, pieces, of_pieces: count, rows });
    }
    // a batch of exactly the case's rows is the whole batch again
    for &batch in batches.iter().filter(|b| **b != rows) {
        out.push(Plan { cut: None, batch: Some(batch), pieces: vec![(0..batch).map(|j| j % rows).collect()], of_pieces: 1, rows });
    }
    out
}

/// `most` indices out of `count`, evenly spread, the first and the last among them.
fn spread(count: usize, most: usize) -> Vec<usize> {
    if count <= most || most < 2 {
        return (0..count.min(most.max(1))).collect();
    }
    let mut picked: Vec<usize> = (0..most).map(|i| (i * (count - 1) + (most - 1) / 2) / (most - 1)).collect();
    picked.dedup();
    picked
}

/// What gate 5 found for one plan of one case, for the JSON report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeamCheck {
    pub plan: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Launches made, of the pieces the cut makes.
    pub pieces: usize,
    pub of_pieces: usize,
    /// Rows compared with the whole batch's, per output the rows whose bytes differed.
    pub rows: usize,
    pub rows_differing: BTreeMap<String, usize>,
}

/// Where one plan's rows first differed from the whole batch in one output.
#[derive(Clone, Debug, Default)]
struct Difference {
    rows: usize,
    differing: usize,
    /// (the piece row's place among all rows the plan compared, its case row, the element's
    /// index in the row)
    first: Option<(usize, usize, usize)>,
    got: Vec<u8>,
}

/// Everything of a case's whole batch that its pieces reuse.
pub(crate) struct Batch<'a> {
    pub op: &'a OpSpec,
    pub backend: &'a dyn Backend,
    pub module: Option<&'a dyn Module>,
    pub symbols: &'a Symbols,
    pub params: &'a BTreeMap<String, f64>,
    pub schedule: Schedule,
    /// The output poison of the pieces' launches.
    pub poison: u8,
    pub axis: &'a str,
    /// Every input's bytes, and every output's bytes from the whole batch's launch.
    pub inputs: &'a BTreeMap<String, Arc<Vec<u8>>>,
    pub outputs: BTreeMap<&'a str, &'a [u8]>,
    /// The device address of each row input whose rows the pieces copy from the whole batch's
    /// tensor on the device, where a GPU-only case's rows are gigabytes that took a minute a
    /// record to send again from the host: every row input, and once more, where gate 3's check
    /// after the pieces found one changed, the others. The rows of any other input go up from
    /// `inputs`.
    pub sources: BTreeMap<&'a str, u64>,
    /// On a GPU, the harness's hash that checks a piece's input of 64 MiB or more on the
    /// device (as gate 3 checks the whole batch's), where it is read back otherwise.
    pub device: Option<&'a crate::inputs::device::DeviceDraw<'a>>,
}

/// What the pieces of a case showed: each plan's figures, each output's failure (its first
/// plan with a differing row; the others named after it), the first piece that broke each
/// wall of a row tensor, and the memory findings of the pieces' launches (host backend), each
/// with the plan it came from.
pub(crate) struct Outcome {
    pub checks: Vec<SeamCheck>,
    pub failures: Vec<(String, Failure)>,
    /// Gate 5's only where the whole batch kept that wall (else it is gate 3's, said once).
    pub walls: Vec<(String, Wall, Failure)>,
    pub findings: Vec<(String, MemoryFinding)>,
}

/// Gate 3's walls around a tensor: its guard bands, and an input's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Wall {
    Guard,
    Input,
}

/// Runs every plan's pieces. The tensors without rows (weights, tables, caches) are the whole
/// batch's own, lent to each piece and given back, so a table of gigabytes is never copied
/// again; the row tensors are each piece's own, with guard bands, inputs sliced from the
/// whole batch's bytes.
pub(crate) fn run(batch: &Batch, tensors: &mut BTreeMap<String, Tensor>, plans: &[Plan], phases: &mut Phases) -> Result<Outcome, String> {
    let rows_of = row_tensors(batch.op, batch.axis);
    let shapes: BTreeMap<String, Vec<usize>> = tensors.iter().map(|(name, t)| (name.clone(), t.shape.clone())).collect();
    let dtypes: BTreeMap<String, engine::DType> = tensors.iter().map(|(name, t)| (name.clone(), t.dtype)).collect();
    let mut lent: BTreeMap<String, Tensor> = BTreeMap::new();
    for name in shapes.keys().filter(|n| !rows_of.contains(&n.as_str())) {
        lent.insert(name.clone(), tensors.remove(name).expect("the case's tensor"));
    }
    let result = run_plans(batch, &mut lent, &rows_of, (&shapes, &dtypes), plans, phases);
    for name in rows_of.iter() {
        lent.remove(*name);
    }
    tensors.append(&mut lent);
    result
}

/// The op's tensors with a row per `axis` (the first dimension of their shape names it): each
/// piece gets its own of these; the others are the whole batch's, lent.
pub(crate) fn row_tensors<'a>(op: &'a OpSpec, axis: &str) -> Vec<&'a str> {
    op.tensors.iter().filter(|t| ShapeExpr::parse(t.shape).is_ok_and(|s| s.symbols().contains(&axis))).map(|t| t.name).collect()
}

type Layout<'a> = (&'a BTreeMap<String, Vec<usize>>, &'a BTreeMap<String, engine::DType>);

fn run_plans(
    batch: &Batch,
    tensors: &mut BTreeMap<String, Tensor>,
    rows_of: &[&str],
    (shapes, dtypes): Layout,
    plans: &[Plan],
    phases: &mut Phases,
) -> Result<Outcome, String> {
    let text = |e: engine::EngineError| crate::runner::error_chain(&e);
    let mut lap = Lap::start();
    let mut outcome = Outcome { checks: Vec::new(), failures: Vec::new(), walls: Vec::new(), findings: Vec::new() };
    // per output: each plan that differed, with its difference
    let mut differed: BTreeMap<&str, Vec<(&Plan, Difference)>> = BTreeMap::new();
    // per row tensor: the first piece that wrote outside it or changed it (an input)
    let mut walls: BTreeMap<(&str, Wall), Failure> = BTreeMap::new();
    for plan in plans {
        let mut differences: BTreeMap<&str, Difference> = BTreeMap::new();
        let mut compared = 0;
        for (index, piece) in plan.pieces.iter().enumerate() {
            // each row input copied on the device, sealed as it was copied
            let mut seals = BTreeMap::new();
            let mut symbols = batch.symbols.clone();
            symbols.insert(batch.axis.to_string(), piece.len() as i64);
            for name in rows_of {
                let (dtype, whole) = (dtypes[*name], &shapes[*name]);
                let row_bytes = whole[1..].iter().product::<usize>() * dtype.size();
                let shape: Vec<usize> = std::iter::once(piece.len()).chain(whole[1..].iter().copied()).collect();
                let mut tensor = Tensor::allocate(batch.backend, dtype, &shape).map_err(text)?;
                match (batch.sources.get(*name), batch.inputs.get(*name)) {
                    (Some(&from), Some(bytes)) => {
                        for (at, rows) in runs(piece) {
                            let to = tensor.device_address() + (at * row_bytes) as u64;
                            let from = from + (rows.start * row_bytes) as u64;
                            batch.backend.copy(to, from, rows.len() * row_bytes).map_err(text)?;
                        }
                        let parts = part_bytes(bytes, piece, row_bytes);
                        if let Some(seal) = batch.device.and_then(|device| device.seal_as_copied(&tensor, &parts)) {
                            seals.insert(*name, seal?);
                        }
                    }
                    (None, Some(bytes)) => tensor.write(&gather(bytes, piece, row_bytes)).map_err(text)?,
                    (_, None) => tensor.fill(&vec![batch.poison; dtype.size()]).map_err(text)?,
                }
                tensors.insert(name.to_string(), tensor);
            }
            phases.upload += lap.take();
            let call = OpCall {
                op: batch.op,
                backend: batch.backend,
                module: batch.module,
                symbols: &symbols,
                params: batch.params,
                tensors,
                schedule: batch.schedule,
            };
            let stats = (batch.op.launch)(&call).map_err(|e| format!("{}: {}", plan.label(), text(e)))?;
            phases.launches += lap.take();
            outcome.findings.extend(stats.findings.into_iter().map(|f| (plan.label(), f)));
            for spec in batch.op.tensors.iter().filter(|t| t.role == Role::Output) {
                let got = tensors[spec.name].read().map_err(text)?;
                phases.download += lap.take();
                let row_bytes = shapes[spec.name][1..].iter().product::<usize>() * dtypes[spec.name].size();
                let difference = differences.entry(spec.name).or_default();
                compare_rows(batch.outputs[spec.name], &got, piece, (row_bytes, dtypes[spec.name].size()), compared, difference);
                phases.gates += lap.take();
            }
            // the whole batch's launch had its own tensors' guard bands and inputs checked
            // (gate 3); a piece's kernel may overrun or write rows only a piece of its size has
            for name in rows_of {
                let tensor = &tensors[*name];
                let mut broken = Vec::new();
                if !walls.contains_key(&(*name, Wall::Guard)) {
                    broken.push((Wall::Guard, crate::runner::guard_check(tensor).map_err(text)?));
                }
                if let (false, Some(whole)) = (walls.contains_key(&(*name, Wall::Input)), batch.inputs.get(*name)) {
                    let row_bytes = shapes[*name][1..].iter().product::<usize>() * dtypes[*name].size();
                    let device = batch.device.map(|device| (device, seals.get(name)));
                    broken.push((Wall::Input, piece_input_changed(tensor, whole, (piece, row_bytes), device)?));
                }
                for (wall, failure) in broken.into_iter().filter_map(|(wall, failure)| Some((wall, failure?))) {
                    let message = format!("{}: {}", piece_label(plan, index), failure.message);
                    walls.insert((name, wall), Failure { first: None, message, ..failure });
                }
            }
            phases.gates += lap.take();
            compared += piece.len();
        }
        outcome.checks.push(SeamCheck {
            plan: plan.label(),
            cut: plan.cut,
            batch: plan.batch,
            pieces: plan.pieces.len(),
            of_pieces: plan.of_pieces,
            rows: compared,
            rows_differing: differences.iter().map(|(name, d)| (name.to_string(), d.differing)).collect(),
        });
        for (name, difference) in differences.into_iter().filter(|(_, d)| d.differing > 0) {
            differed.entry(name).or_default().push((plan, difference));
        }
    }
    for (name, found) in differed {
        let (dtype, shape) = (dtypes[name], &shapes[name]);
        outcome.failures.push((name.to_string(), failure(dtype, shape, batch.outputs[name], &found)));
    }
    outcome.walls.extend(walls.into_iter().map(|((name, wall), failure)| (name.to_string(), wall, failure)));
    phases.gates += lap.take();
    Ok(outcome)
}

/// `pieces of 1 row (3 of 19 pieces), piece 2 (row 1)`: which launch of a plan; a plan of one
/// piece (a batch) is named alone.
fn piece_label(plan: &Plan, index: usize) -> String {
    let piece = &plan.pieces[index];
    match (plan.pieces.len(), piece.as_slice()) {
        (1, _) | (_, []) => plan.label(),
        (_, [row]) => format!("{}, piece {} (row {row})", plan.label(), index + 1),
        (_, [first, .., last]) => format!("{}, piece {} (rows {first} to {last})", plan.label(), index + 1),
    }
}

/// The rows of `bytes` (rows of `row_bytes` each) in the piece's order.
fn gather(bytes: &[u8], rows: &[usize], row_bytes: usize) -> Vec<u8> {
    runs(rows).into_iter().flat_map(|(_, run)| &bytes[run.start * row_bytes..run.end * row_bytes]).copied().collect()
}

/// A piece's rows as runs of consecutive case rows: (the run's first row in the piece, its
/// case rows). A cut's piece is one run; a decode batch's repeats are one per repetition.
fn runs(piece: &[usize]) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut out: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for (at, &row) in piece.iter().enumerate() {
        match out.last_mut() {
            Some((_, rows)) if rows.end == row => rows.end += 1,
            _ => out.push((at, row..row + 1)),
        }
    }
    out
}

/// Gate 5's check that a piece's launch left its rows of an input as the whole batch's bytes
/// have them: by the keyed hash on the device where there is one (a piece of 64 MiB or more),
/// against the piece's seal where it was sealed as it was copied on the device, else against
/// the host's hash of its rows; else read back a slice at a time (a GPU-only case's row is
/// gigabytes). Only a changed input is read whole, for its failure's count and first element.
pub(crate) fn piece_input_changed(
    tensor: &Tensor,
    whole: &[u8],
    (piece, row_bytes): (&[usize], usize),
    device: Option<(&DeviceDraw, Option<&Seal>)>,
) -> Result<Option<Failure>, String> {
    let text = |e: engine::EngineError| crate::runner::error_chain(&e);
    let parts = part_bytes(whole, piece, row_bytes);
    let hashed = device.and_then(|(device, seal)| match seal {
        Some(seal) => Some(device.holds_sealed_parts(tensor, seal, &parts)),
        None => device.holds_parts(tensor, &parts),
    });
    match hashed {
        Some(Ok(true)) => Ok(None),
        Some(Ok(false)) => Ok(crate::runner::input_changed(tensor, &gather(whole, piece, row_bytes), &tensor.read().map_err(text)?)),
        Some(Err(e)) => Err(e),
        None => piece_input_changed_in_slices(tensor, whole, (piece, row_bytes), crate::runner::INPUT_CHECK_SLICE).map_err(text),
    }
}

fn piece_input_changed_in_slices(
    tensor: &Tensor,
    whole: &[u8],
    (piece, row_bytes): (&[usize], usize),
    slice_bytes: usize,
) -> Result<Option<Failure>, engine::EngineError> {
    let changed = crate::runner::differs_on_device(tensor, &piece_parts(whole, piece, row_bytes), slice_bytes)?;
    Ok(if changed { crate::runner::input_changed(tensor, &gather(whole, piece, row_bytes), &tensor.read()?) } else { None })
}

/// `piece_parts` without their offsets.
fn part_bytes<'w>(whole: &'w [u8], piece: &[usize], row_bytes: usize) -> Vec<&'w [u8]> {
    piece_parts(whole, piece, row_bytes).into_iter().map(|(_, part)| part).collect()
}

/// A piece's runs of rows as the whole batch's bytes hold them, each with its byte offset in
/// the piece's tensor (in order: the offsets follow one another).
fn piece_parts<'w>(whole: &'w [u8], piece: &[usize], row_bytes: usize) -> Vec<(usize, &'w [u8])> {
    runs(piece).into_iter().map(|(at, rows)| (at * row_bytes, &whole[rows.start * row_bytes..rows.end * row_bytes])).collect()
}

/// Each row of a piece's output against its row of the whole batch's: counted when any byte
/// differs, the first such row's first differing element kept.
fn compare_rows(whole: &[u8], got: &[u8], piece: &[usize], (row_bytes, size): (usize, usize), before: usize, d: &mut Difference) {
    for (j, &row) in piece.iter().enumerate() {
        let mine = &got[j * row_bytes..(j + 1) * row_bytes];
        let theirs = &whole[row * row_bytes..(row + 1) * row_bytes];
        d.rows += 1;
        if mine == theirs {
            continue;
        }
        d.differing += 1;
        if d.first.is_none() {
            let element = mine.chunks(size).zip(theirs.chunks(size)).position(|(a, b)| a != b).unwrap_or(0);
            d.first = Some((before + j, row, element));
            d.got = mine[element * size..(element + 1) * size].to_vec();
        }
    }
}

/// `pieces of 1 row (4 of 64 pieces): 4 of 4 rows differ from the whole batch, first [0, 17]
/// (row 0): got .. want ..; also pieces of 7 rows`: the first plan that differed, said in
/// full, the others by name.
fn failure(dtype: engine::DType, shape: &[usize], whole: &[u8], found: &[(&Plan, Difference)]) -> Failure {
    let (plan, d) = &found[0];
    let (place, row, element) = d.first.expect("a differing row");
    let row_elements: usize = shape[1..].iter().product();
    let index = row * row_elements + element;
    let want = &whole[index * dtype.size()..(index + 1) * dtype.size()];
    let which = if plan.batch.is_some() { format!("batch row {place}") } else { format!("row {row}") };
    let show = |bytes: &[u8]| format::value_and_bits(dtype, dtype.decode(bytes), dtype.bits(bytes));
    let mut message = format!(
        "{}: {} of {} rows differ from the whole batch, first {} ({which}): got {} want {}",
        plan.label(),
        format::count(d.differing),
        format::count(d.rows),
        format::coordinates_text(shape, index),
        show(&d.got),
        show(want)
    );
    if found.len() > 1 {
        let others: Vec<String> = found[1..].iter().map(|(p, _)| p.label()).collect();
        message.push_str(&format!("; also {}", others.join(", ")));
    }
    Failure { count: d.differing, total: d.rows, first: Some(format::coordinates(shape, index)), message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_rows_with_the_remainder_last_and_are_bounded_first_and_last_included() {
        let plans = plans(19, &[1, 7, 19, 64], &[2, 32]);
        let shown: Vec<String> = plans.iter().map(Plan::label).collect();
        assert_eq!(
            shown,
            [
                "pieces of 1 row (3 of 19 pieces)",
                "pieces of 7 rows",
                "a batch of 2 rows (rows 0 to 1)",
                "a batch of 32 rows (the case's 19 rows repeated)"
            ]
        );
        assert_eq!(plans[0].pieces, [vec![0], vec![9], vec![18]]);
        assert_eq!(plans[1].pieces, [(0..7).collect::<Vec<_>>(), (7..14).collect(), (14..19).collect()]);
        assert_eq!(plans[3].pieces[0][17..21], [17, 18, 0, 1]);
        assert!(super::plans(1, &[1, 7], &[]).is_empty(), "one row is never cut");
        assert_eq!(spread(1000, 4), [0, 333, 666, 999]);
        assert_eq!(spread(5, 4), [0, 1, 3, 4]);
        assert_eq!(spread(3, 4), [0, 1, 2]);
    }

    fn f32_rows(rows: &[[f32; 2]]) -> Vec<u8> {
        rows.iter().flatten().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn a_row_that_differs_is_named_by_plan_row_and_element_with_got_and_want_and_counted() {
        let whole = f32_rows(&[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]);
        let plan = |cut: usize| {
            let pieces: Vec<Vec<usize>> = (0..3).collect::<Vec<_>>().chunks(cut).map(<[usize]>::to_vec).collect();
            Plan { cut: Some(cut), batch: None, of_pieces: pieces.len(), pieces, rows: 3 }
        };
        let (one, two) = (plan(1), plan(2));
        let mut d = Difference::default();
        compare_rows(&whole, &f32_rows(&[[1.0, 2.0]]), &[0], (8, 4), 0, &mut d);
        compare_rows(&whole, &f32_rows(&[[3.0, 4.5]]), &[1], (8, 4), 1, &mut d);
        compare_rows(&whole, &f32_rows(&[[5.5, 6.0]]), &[2], (8, 4), 2, &mut d);
        assert_eq!((d.rows, d.differing, d.first), (3, 2, Some((1, 1, 1))));
        let f = failure(engine::DType::F32, &[3, 2], &whole, &[(&one, d), (&two, Difference::default())]);
        assert_eq!(
            f.message,
            "pieces of 1 row: 2 of 3 rows differ from the whole batch, first [1, 1] (row 1): got 4.500 (0x40900000) want 4.000 \
             (0x40800000); also pieces of 2 rows"
        );
        assert_eq!((f.count, f.total, f.first), (2, 3, Some(vec![1, 1])));
    }

    #[test]
    fn a_batch_takes_its_rows_in_order_and_names_the_batch_row() {
        let whole = f32_rows(&[[1.0, 2.0], [3.0, 4.0]]);
        assert_eq!(gather(&whole, &[1, 0, 1], 8), f32_rows(&[[3.0, 4.0], [1.0, 2.0], [3.0, 4.0]]));
        let batch = Plan { cut: None, batch: Some(3), pieces: vec![vec![0, 1, 0]], of_pieces: 1, rows: 2 };
        let mut d = Difference::default();
        compare_rows(&whole, &f32_rows(&[[1.0, 2.0], [3.0, 4.0], [1.0, -2.0]]), &batch.pieces[0], (8, 4), 0, &mut d);
        let f = failure(engine::DType::F32, &[2, 2], &whole, &[(&batch, d)]);
        assert!(
            f.message.starts_with("a batch of 3 rows (the case's 2 rows repeated): 1 of 3 rows differ from the whole batch, first [0, 1] (batch row 2): got -2.000"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_piece_is_copied_in_runs_of_consecutive_rows() {
        assert_eq!(runs(&[4, 5, 6]), [(0, 4..7)]);
        assert_eq!(runs(&[1, 2, 0, 1, 2, 0]), [(0, 1..3), (2, 0..3), (5, 0..1)]);
        assert_eq!(runs(&[3, 3]), [(0, 3..4), (1, 3..4)]);
        assert_eq!(runs(&[]), []);
    }

    #[test]
    fn a_piece_input_read_back_in_slices_finds_a_change_in_any_run_and_slice() {
        let whole = f32_rows(&[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]);
        let piece = [1, 2, 0, 1];
        let mut tensor = Tensor::allocate(&Memory, engine::DType::F32, &[4, 2]).unwrap();
        let rows = gather(&whole, &piece, 8);
        tensor.write(&rows).unwrap();
        for slice in [4, 12, 1 << 20] {
            assert_eq!(piece_input_changed_in_slices(&tensor, &whole, (&piece, 8), slice).unwrap().map(|f| f.message), None);
        }
        for element in 0..8 {
            let mut changed = rows.clone();
            changed[element * 4..element * 4 + 4].copy_from_slice(&(-1.0f32).to_le_bytes());
            tensor.write(&changed).unwrap();
            for slice in [4, 12, 1 << 20] {
                let failure = piece_input_changed_in_slices(&tensor, &whole, (&piece, 8), slice).unwrap();
                let message = failure.map(|f| f.message).unwrap_or_default();
                let place = format!("[{}, {}]", element / 2, element % 2);
                assert!(message.starts_with(&format!("input changed: 1 of 8 elements, first {place}")), "{slice}: {message}");
            }
        }
    }

    /// Buffers in host memory, at their real addresses, so a launcher written in Rust can
    /// compute a tiny op in place.
    use engine::backend::memory::Memory;

    /// out[r, j] = x[r, j] * w[j], plus, with `blocked` = 1, a millionth of the launch's row
    /// count: a row's bits then depend on how many rows came with it. With `lone` = 1, a launch
    /// of one row also writes the element after its output; with `lone` = 2, it zeroes x[0, 0].
    fn scaled(call: &OpCall) -> Result<engine::backend::LaunchReport, engine::EngineError> {
        let (rows, k) = (call.symbol("rows")? as usize, call.symbol("k")? as usize);
        let blocked = call.param("blocked")? == 1.0;
        let lone = if rows == 1 { call.param("lone")? } else { 0.0 };
        let (x, w, out) = (call.tensor("x")?, call.tensor("w")?, call.tensor("out")?);
        let (x, w) = (x.read()?, w.read()?);
        let f = |b: &[u8], i: usize| f32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
        for r in 0..rows {
            for j in 0..k {
                let mut v = f(&x, r * k + j) * f(&w, j);
                if blocked {
                    v += rows as f32 * 1e-6;
                }
                // SAFETY: `out` is the memory backend's buffer of rows * k f32 at its address
                unsafe { (out.device_address() as *mut f32).add(r * k + j).write(v) };
            }
        }
        // SAFETY: the element after `out`'s data is the first of its guard band, and `x` holds
        // at least one element: both are the memory backend's host memory
        unsafe {
            match lone {
                1.0 => (out.device_address() as *mut f32).add(rows * k).write(1.0),
                2.0 => (call.tensor("x")?.device_address() as *mut f32).write(0.0),
                _ => {}
            }
        }
        Ok(engine::backend::LaunchReport::default())
    }

    static SCALED: OpSpec = OpSpec {
        name: "scaled",
        about: "a test op",
        source: None,
        symbol: None,
        symbols: &["rows", "k"],
        params: &[
            engine::ops::ParamSpec { name: "blocked", integer: true, default: Some(0.0), limits: &[] },
            engine::ops::ParamSpec { name: "lone", integer: true, default: Some(0.0), limits: &[] },
        ],
        tensors: &[
            engine::ops::TensorSpec { name: "x", role: Role::Input, dtypes: &[engine::DType::F32], shape: "rows, k" },
            engine::ops::TensorSpec { name: "w", role: Role::Input, dtypes: &[engine::DType::F32], shape: "k" },
            engine::ops::TensorSpec { name: "out", role: Role::Output, dtypes: &[engine::DType::F32], shape: "rows, k" },
        ],
        launch: scaled,
        dims: engine::ops::data::dims,
        kernel: None,
    };

    /// Gate 5 on a case of `rows` rows of 3 of the test op, `blocked` or not.
    fn gate_on(rows: usize, blocked: bool) -> (Outcome, BTreeMap<String, Tensor>) {
        gate_with(rows, &[("blocked", if blocked { 1.0 } else { 0.0 }), ("lone", 0.0)])
    }

    /// Gate 5 with the pieces' rows of x copied on the device from the whole batch's x, and
    /// with them sent from the host bytes: the two must show the same.
    fn gate_with(rows: usize, params: &[(&str, f64)]) -> (Outcome, BTreeMap<String, Tensor>) {
        let (copied, tensors) = gate_with_sources(rows, params, true);
        let (sent, _) = gate_with_sources(rows, params, false);
        assert_eq!(format!("{:?}", copied.checks), format!("{:?}", sent.checks));
        assert_eq!(format!("{:?}", copied.failures), format!("{:?}", sent.failures));
        assert_eq!(format!("{:?}", copied.walls), format!("{:?}", sent.walls));
        (copied, tensors)
    }

    fn gate_with_sources(rows: usize, params: &[(&str, f64)], copied: bool) -> (Outcome, BTreeMap<String, Tensor>) {
        let k = 3;
        let values = |n: usize, scale: f32| -> Vec<u8> { (0..n).flat_map(|i| (i as f32 * scale + 0.25).to_le_bytes()).collect() };
        let inputs: BTreeMap<String, Arc<Vec<u8>>> =
            [("x".to_string(), Arc::new(values(rows * k, 1.5))), ("w".to_string(), Arc::new(values(k, -0.5)))].into();
        let symbols: Symbols = [("rows".to_string(), rows as i64), ("k".to_string(), k as i64)].into();
        let params: BTreeMap<String, f64> = params.iter().map(|(name, value)| (name.to_string(), *value)).collect();
        let mut tensors = BTreeMap::new();
        for (name, shape) in [("x", vec![rows, k]), ("w", vec![k]), ("out", vec![rows, k])] {
            let mut t = Tensor::allocate(&Memory, engine::DType::F32, &shape).unwrap();
            if let Some(bytes) = inputs.get(name) {
                t.write(bytes).unwrap();
            }
            tensors.insert(name.to_string(), t);
        }
        let whole_call = OpCall {
            op: &SCALED,
            backend: &Memory,
            module: None,
            symbols: &symbols,
            params: &params,
            tensors: &tensors,
            schedule: Schedule::default(),
        };
        scaled(&whole_call).unwrap();
        let whole = tensors["out"].read().unwrap();
        let batch = Batch {
            op: &SCALED,
            backend: &Memory,
            module: None,
            symbols: &symbols,
            params: &params,
            schedule: Schedule::default(),
            poison: 0xff,
            axis: "rows",
            inputs: &inputs,
            outputs: [("out", whole.as_slice())].into(),
            sources: if copied { [("x", tensors["x"].device_address())].into() } else { BTreeMap::new() },
            device: None,
        };
        let outcome = run(&batch, &mut tensors, &plans(rows, &[1, 7], &[2, 32]), &mut Phases::default()).unwrap();
        (outcome, tensors)
    }

    #[test]
    fn a_batch_invariant_op_passes_and_one_whose_rows_depend_on_the_row_count_is_red_with_the_cut_named() {
        let (outcome, tensors) = gate_on(19, false);
        assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
        let checked: Vec<(&str, usize, usize)> = outcome.checks.iter().map(|c| (c.plan.as_str(), c.pieces, c.rows)).collect();
        assert_eq!(
            checked,
            [
                ("pieces of 1 row (3 of 19 pieces)", 3, 3),
                ("pieces of 7 rows", 3, 19),
                ("a batch of 2 rows (rows 0 to 1)", 1, 2),
                ("a batch of 32 rows (the case's 19 rows repeated)", 1, 32)
            ]
        );
        // the shared weight was lent to the pieces and given back, the case's own tensors kept
        assert_eq!(tensors.keys().collect::<Vec<_>>(), ["out", "w", "x"]);
        assert_eq!((tensors["x"].shape.as_slice(), tensors["w"].shape.as_slice()), (&[19, 3][..], &[3][..]));

        let (outcome, _) = gate_on(19, true);
        let [(tensor, failure)] = outcome.failures.as_slice() else { panic!("{:?}", outcome.failures) };
        assert_eq!(tensor, "out");
        assert_eq!(
            failure.message,
            "pieces of 1 row (3 of 19 pieces): 3 of 3 rows differ from the whole batch, first [0, 0] (row 0): got 0.06250 \
             (0x3d800086) want 0.06252 (0x3d8009f6); also pieces of 7 rows, a batch of 2 rows (rows 0 to 1), a batch of 32 \
             rows (the case's 19 rows repeated)"
        );
        assert_eq!((failure.count, failure.total, failure.first.as_deref()), (3, 3, Some(&[0, 0][..])));
        let differing: Vec<usize> = outcome.checks.iter().map(|c| c.rows_differing["out"]).collect();
        assert_eq!(differing, [3, 19, 2, 32], "every row of every piece");
    }

    #[test]
    fn a_piece_that_writes_past_its_rows_or_into_an_input_is_red_with_the_piece_named() {
        // the whole batch (19 rows) never takes the one-row path: only a piece of 1 row does
        let (outcome, tensors) = gate_with(19, &[("blocked", 0.0), ("lone", 1.0)]);
        assert_eq!(tensors["out"].guard_damage().unwrap(), None, "the whole batch's own output is untouched");
        assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
        let [(tensor, Wall::Guard, failure)] = outcome.walls.as_slice() else { panic!("{:?}", outcome.walls) };
        assert_eq!(tensor, "out");
        assert_eq!(
            failure.message,
            "pieces of 1 row (3 of 19 pieces), piece 1 (row 0): guard band written: 1 element outside the tensor, nearest \
             [1, 0] (1 element past the end)"
        );
        assert_eq!((failure.count, failure.total, failure.first.as_deref()), (1, 3, None));

        let (outcome, _) = gate_with(19, &[("blocked", 0.0), ("lone", 2.0)]);
        let messages: Vec<(&str, Wall, &str)> = outcome.walls.iter().map(|(t, w, f)| (t.as_str(), *w, f.message.as_str())).collect();
        assert_eq!(
            messages,
            [(
                "x",
                Wall::Input,
                "pieces of 1 row (3 of 19 pieces), piece 1 (row 0): input changed: 1 of 3 elements, first [0, 0]: was 0.2500 \
                 (0x3e800000) now 0 (0x00000000)"
            )]
        );
    }
}
