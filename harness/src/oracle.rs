//! Oracles: what each op must compute, in f64, written independently of the kernels.
//! Inputs arrive decoded from the bytes the kernel read; outputs are exact-as-f64 values
//! that the tolerance model compares against.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

use engine::DType;
use engine::shape_expr::Symbols;
use rayon::prelude::*;

pub struct OracleInput<'a> {
    pub symbols: &'a Symbols,
    pub params: &'a Params<'a>,
    pub inputs: &'a BTreeMap<String, InputValues>,
}

/// An input's values as an oracle reads them: its bytes, decoded to f64 whole the first time
/// an oracle asks for them whole (`whole`), or a range at a time (`read`, `get`) with nothing
/// decoded beyond it. The oracles of the GPU-only cases' tables and caches read them a row at
/// a time: decoded whole, a 4 GiB f16 cache was 17 GiB of f64 a record, seconds of writes and
/// page faults, and an oracle whose outputs were kept decoded nothing at all. A clone shares
/// the bytes and the values decoded so far.
#[derive(Clone)]
pub struct InputValues {
    dtype: DType,
    bytes: Arc<Vec<u8>>,
    whole: OnceLock<Arc<Vec<f64>>>,
}

impl InputValues {
    pub fn new(dtype: DType, bytes: Arc<Vec<u8>>) -> InputValues {
        InputValues { dtype, bytes, whole: OnceLock::new() }
    }

    /// With its values decoded already (kept from an earlier record).
    pub fn decoded(dtype: DType, bytes: Arc<Vec<u8>>, values: Arc<Vec<f64>>) -> InputValues {
        InputValues { dtype, bytes, whole: OnceLock::from(values) }
    }

    pub fn len(&self) -> usize {
        match self.whole.get() {
            Some(values) => values.len(),
            None => self.bytes.len() / self.dtype.size(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every value, decoded (on all cores) the first time.
    pub fn whole(&self) -> &[f64] {
        self.whole.get_or_init(|| Arc::new(decode_all(self.dtype, &self.bytes)))
    }

    /// The values decoded so far whole, if any (for a cache of them).
    pub fn kept(&self) -> Option<Arc<Vec<f64>>> {
        self.whole.get().cloned()
    }

    /// Values `first..first + out.len()`, into `out`.
    pub fn read(&self, first: usize, out: &mut [f64]) {
        match self.whole.get() {
            Some(values) => out.copy_from_slice(&values[first..first + out.len()]),
            None => {
                let size = self.dtype.size();
                let bytes = &self.bytes[first * size..(first + out.len()) * size];
                decode_into(self.dtype, bytes, out);
            }
        }
    }

    /// Value `i`.
    pub fn get(&self, i: usize) -> f64 {
        match self.whole.get() {
            Some(values) => values[i],
            None => self.dtype.decode(&self.bytes[i * self.dtype.size()..]),
        }
    }
}

/// Values given as they are (tests, and inputs made as f64).
impl From<Vec<f64>> for InputValues {
    fn from(values: Vec<f64>) -> InputValues {
        InputValues::decoded(DType::F32, Arc::default(), Arc::new(values))
    }
}

/// A tensor's bytes as f64 values, in parallel pieces when it is large.
pub fn decode_all(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    let size = dtype.size();
    let mut values = vec![0.0; bytes.len() / size];
    if bytes.len() < PARALLEL_DECODE_BYTES {
        decode_into(dtype, bytes, &mut values);
    } else {
        values
            .par_chunks_mut(PARALLEL_DECODE_BYTES / size)
            .zip(bytes.par_chunks(PARALLEL_DECODE_BYTES))
            .for_each(|(out, piece)| decode_into(dtype, piece, out));
    }
    values
}

/// Tensors of at least this many bytes are decoded in parallel pieces.
const PARALLEL_DECODE_BYTES: usize = 1 << 22;

/// `bytes` decoded into `out`, one element each; the type matched once, not per element.
fn decode_into(dtype: DType, bytes: &[u8], out: &mut [f64]) {
    fn each<const N: usize>(bytes: &[u8], out: &mut [f64], value: impl Fn([u8; N]) -> f64) {
        for (o, chunk) in out.iter_mut().zip(bytes.chunks_exact(N)) {
            *o = value(chunk.try_into().expect("chunks of N"));
        }
    }
    match dtype {
        DType::F32 => each(bytes, out, |b| f32::from_le_bytes(b) as f64),
        DType::F16 => f16_into(bytes, out),
        // bf16 is f32's upper half: a shift, where `half`'s conversion to f64 branches on each
        // field (4 times the time of the shift in the bf16 caches' oracles); NaNs come out as
        // `half` makes them (the conversion to f64 sets the quiet bit it sets)
        DType::Bf16 => each(bytes, out, |b| f32::from_bits((u16::from_le_bytes(b) as u32) << 16) as f64),
        DType::I32 => each(bytes, out, |b| i32::from_le_bytes(b) as f64),
        DType::U32 => each(bytes, out, |b| u32::from_le_bytes(b) as f64),
        DType::U8 => each(bytes, out, |b: [u8; 1]| b[0] as f64),
    }
}

/// f16 `bytes` into `out` through `half`'s slice conversion, which uses the CPU's F16C
/// instructions where it has them: one element at a time, the conversion was most of the GPU-only
/// f16 caches' oracles (a 4 GiB cache a record), 3 times the time of their products.
fn f16_into(bytes: &[u8], out: &mut [f64]) {
    use half::slice::HalfFloatSliceExt;
    const CHUNK: usize = 256;
    let mut halves = [half::f16::ZERO; CHUNK];
    for (out, bytes) in out.chunks_mut(CHUNK).zip(bytes.chunks(2 * CHUNK)) {
        let halves = &mut halves[..out.len()];
        for (value, pair) in halves.iter_mut().zip(bytes.chunks_exact(2)) {
            *value = half::f16::from_bits(u16::from_le_bytes([pair[0], pair[1]]));
        }
        halves.convert_to_f64_slice(out);
    }
}

/// A record's parameters as an oracle sees them, and which of them it read. An oracle is a
/// function of its inputs, its case's symbols and the parameters it reads, so its outputs
/// serve any record with the same values of those (the runner keeps them so: two records that
/// differ in a launcher's parameter, or in an output's type alone, run it once).
pub struct Params<'a> {
    values: &'a BTreeMap<String, f64>,
    read: Mutex<BTreeSet<String>>,
}

impl<'a> Params<'a> {
    pub fn new(values: &'a BTreeMap<String, f64>) -> Params<'a> {
        Params { values, read: Mutex::default() }
    }

    fn get(&self, name: &str) -> Option<f64> {
        self.read.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string());
        self.values.get(name).copied()
    }

    /// Each parameter read so far, with its value's bits (none: it had no value).
    pub fn read(&self) -> Vec<(String, Option<u64>)> {
        let read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        read.iter().map(|name| (name.clone(), self.values.get(name).map(|v| v.to_bits()))).collect()
    }
}

impl OracleInput<'_> {
    fn symbol(&self, name: &str) -> Result<usize, String> {
        self.symbols.get(name).map(|v| *v as usize).ok_or_else(|| format!("oracle needs shape symbol `{name}`"))
    }

    #[allow(dead_code)]
    fn param(&self, name: &str) -> Result<f64, String> {
        self.params.get(name).ok_or_else(|| format!("oracle needs parameter `{name}`"))
    }

    /// An input's values, whole.
    fn input(&self, name: &str) -> Result<&[f64], String> {
        self.values(name).map(InputValues::whole)
    }

    /// An input's values, to read a range at a time (a gigabyte table or cache).
    fn values(&self, name: &str) -> Result<&InputValues, String> {
        self.inputs.get(name).ok_or_else(|| format!("oracle needs input `{name}`"))
    }
}

pub type Outputs = BTreeMap<String, Vec<f64>>;
pub type Oracle = fn(&OracleInput) -> Result<Outputs, String>;

const ORACLES: &[(&str, Oracle)] = &[
    ("gather_rows", gather_rows),
    ("softmax_stats", softmax_stats),
    ("sum_partials", sum_partials),
    ("score_keys", score_keys),
    ("apply_values", apply_values),
    ("sum_partials_act", sum_partials_act),
    ("kv_append", kv_append),
    ("argmax", argmax),
    ("dense_rows", dense_rows),
    ("affine_dequant_rows", affine_dequant_rows),
    ("gemm_xwt", gemm_xwt),
    ("cast", cast),
    ("add", add),
    ("silu_mul", silu_mul),
    ("copy_cols", copy_cols),
    ("rms_norm", rms_norm),
    ("add_rms_norm", add_rms_norm),
    ("rope", rope),
    ("conv1d_causal", conv1d_causal),
    ("delta_rule_step", delta_rule_step),
    ("l2_norm", l2_norm),
    ("quant_matvec", quant_matvec),
    ("attention_prefill", attention_prefill),
    ("rms_gated", rms_gated),
];

/// Oracles whose value is defined with NaN inputs left out (the `ignore` policy for
/// non-finite inputs): infinities stay in, as the values they are.
const IGNORING_NAN: &[&str] = &["argmax"];

pub fn ignores_nan(name: &str) -> bool {
    IGNORING_NAN.contains(&name)
}

pub fn find(name: &str) -> Option<Oracle> {
    ORACLES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

pub fn names() -> Vec<&'static str> {
    ORACLES.iter().map(|(n, _)| *n).collect()
}

/// out[i, :] = table[ids[i], :]
fn gather_rows(x: &OracleInput) -> Result<Outputs, String> {
    let (n, k, vocab) = (x.symbol("n")?, x.symbol("k")?, x.symbol("vocab")?);
    let (table, ids) = (x.values("table")?, x.input("ids")?);
    let mut out = vec![0.0; n * k];
    let ids = &ids[..n];
    if k > 0
        && let Some(id) = ids.iter().find(|&&id| id < 0.0 || id as usize >= vocab)
    {
        return Err(format!("token id {id} outside the table of {vocab} rows"));
    }
    // rows on all cores: a case of 65,537 blocks is 16.8 million values, 0.1-0.25 s on one
    out.par_chunks_mut(k.max(1)).zip(ids).with_min_len(64).for_each(|(out, &id)| table.read(id as usize * k, out));
    Ok([("out".to_string(), out)].into())
}

/// Per row and tile of `tile` keys: the max score, and the sum of exp(score - max).
fn softmax_stats(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, keys, tile) = (x.symbol("rows")?, x.symbol("keys")?, x.symbol("tile")?);
    let scores = x.input("scores")?;
    let tiles = keys.div_ceil(tile);
    let (mut maxima, mut sums) = (Vec::with_capacity(rows * tiles), Vec::with_capacity(rows * tiles));
    for row in scores.chunks(keys).take(rows) {
        for part in row.chunks(tile) {
            let m = part.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            maxima.push(m);
            sums.push(part.iter().map(|s| (s - m).exp()).sum());
        }
    }
    Ok([("tile_max".to_string(), maxima), ("tile_sum".to_string(), sums)].into())
}

/// out[r, j] = sum_t exp(m_t - M) partial_t[j] / sum_t exp(m_t - M) sum_t, M = max_t m_t
fn sum_partials(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, tiles, d) = (x.symbol("rows")?, x.symbol("tiles")?, x.symbol("d")?);
    let (partials, maxima, sums) = (x.values("partials")?, x.input("tile_max")?, x.input("tile_sum")?);
    let mut out = vec![0.0; rows * d];
    for (r, row) in out.chunks_mut(d.max(1)).enumerate().take(rows) {
        let m = &maxima[r * tiles..(r + 1) * tiles];
        let l = &sums[r * tiles..(r + 1) * tiles];
        let global = m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = m.iter().map(|v| f32_weight((v - global).exp())).collect();
        let denominator: f64 = weights.iter().zip(l).map(|(w, s)| w * s).sum();
        // tiles outer, columns inner, a slice of columns per core: a tile's columns are
        // contiguous, where a column's tiles lie d apart (4 MiB at the GPU-only case's d =
        // 2^20, a cache and TLB miss each). Each column still sums its tiles in tile order
        // from -0.0, as an iterator's sum does, so the values are the same bits.
        row.par_chunks_mut(COLUMNS_A_TASK).enumerate().for_each(|(chunk, numerators)| {
            let first = chunk * COLUMNS_A_TASK;
            numerators.fill(-0.0);
            let mut tile = vec![0.0; numerators.len()];
            for (t, weight) in weights.iter().enumerate() {
                partials.read((r * tiles + t) * d + first, &mut tile);
                for (n, p) in numerators.iter_mut().zip(&tile) {
                    *n += weight * p;
                }
            }
            for n in numerators.iter_mut() {
                *n /= denominator;
            }
        });
    }
    Ok([("out".to_string(), out)].into())
}

/// Columns of one row an oracle's task takes on (32 KiB of f64 a tile row).
const COLUMNS_A_TASK: usize = 4096;

/// A tile's weight exp(m_t - M) as the f32 value the combine holds: a weight under f32's
/// range is 0 there, and 0 times an infinite partial or tile sum is NaN, where the f64 weight
/// (1e-50, say) would make it that infinity. Finite outputs move by at most one f32 rounding
/// per weight, which the tolerance's expf term already counts.
fn f32_weight(weight: f64) -> f64 {
    weight as f32 as f64
}

/// scores[r, key] = scale * sum_i q[r, i] k_cache[key, i]
fn score_keys(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, keys, d) = (x.symbol("rows")?, x.symbol("keys")?, x.symbol("d")?);
    let (q, k, scale) = (x.input("q")?, x.values("k_cache")?, x.param("scale")?);
    let mut scores = vec![0.0; rows * keys];
    // keys on all cores (the GPU-only case's cache is 8 million keys), each score `dot`'s
    // eight partial sums (one running sum made each add wait on the last)
    for (r, row) in scores.chunks_mut(keys.max(1)).enumerate().take(rows) {
        let query = &q[r * d..(r + 1) * d];
        row.par_chunks_mut(COLUMNS_A_TASK).enumerate().for_each(|(chunk, part)| {
            let mut key_row = vec![0.0; d];
            for (i, score) in part.iter_mut().enumerate() {
                k.read((chunk * COLUMNS_A_TASK + i) * d, &mut key_row);
                *score = scale * dot(query, &key_row);
            }
        });
    }
    Ok([("scores".to_string(), scores)].into())
}

/// partials[r, t, :] = sum over keys j of tile t of exp(scores[r, j] - tile_max[r, t]) v_cache[j, :]
fn apply_values(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, keys, tile, d) = (x.symbol("rows")?, x.symbol("keys")?, x.symbol("tile")?, x.symbol("d")?);
    let (scores, maxima, v) = (x.input("scores")?, x.input("tile_max")?, x.values("v_cache")?);
    let tiles = keys.div_ceil(tile);
    let mut partials = vec![0.0; rows * tiles * d];
    // a tile row on each core (the GPU-only case has 8,193 of them over 2 million keys)
    partials.par_chunks_mut(d.max(1)).enumerate().take(rows * tiles).for_each(|(rt, out)| {
        let (r, t) = (rt / tiles, rt % tiles);
        let mut value_row = vec![0.0; d];
        for j in t * tile..((t + 1) * tile).min(keys) {
            let p = (scores[r * keys + j] - maxima[r * tiles + t]).exp();
            v.read(j * d, &mut value_row);
            for (o, value) in out.iter_mut().zip(&value_row) {
                *o += p * value;
            }
        }
    });
    Ok([("partials".to_string(), partials)].into())
}

/// sum_partials, each element times sigmoid(gate[r, j]) = 1 / (1 + exp(-gate[r, j]))
fn sum_partials_act(x: &OracleInput) -> Result<Outputs, String> {
    let mut out = sum_partials(x)?;
    let gate = x.input("gate")?;
    let combined = out.get_mut("out").ok_or("sum_partials gave no `out`")?;
    for (o, g) in combined.iter_mut().zip(gate) {
        *o /= 1.0 + (-g).exp();
    }
    Ok(out)
}

/// The cache with each new row i at slot slots[i] (as the cache type holds it); negative
/// slots are padding, and of two new rows with the same slot the later one wins.
fn kv_append(x: &OracleInput) -> Result<Outputs, String> {
    let (n, pages, page_size, d) = (x.symbol("n")?, x.symbol("pages")?, x.symbol("page_size")?, x.symbol("d")?);
    let slots = x.input("slots")?;
    let rows = pages * page_size;
    let mut out = Outputs::new();
    for (fresh, given, returned) in [("k_new", "k_cache_in", "k_cache"), ("v_new", "v_cache_in", "v_cache")] {
        let (fresh, mut cache) = (x.input(fresh)?, x.input(given)?.to_vec());
        // a slot outside the cache, negative (padding) or past its end, writes nothing
        for (i, &slot) in slots.iter().enumerate().take(n) {
            if slot < 0.0 || slot >= rows as f64 {
                continue;
            }
            let s = slot as usize;
            cache[s * d..(s + 1) * d].copy_from_slice(&fresh[i * d..(i + 1) * d]);
        }
        out.insert(returned.to_string(), cache);
    }
    Ok(out)
}

/// The index of each row's largest value, the lowest index among equal ones. NaN logits are
/// left out (as numpy's nanargmax; infinities are values like any other); a row of NaN
/// alone has no largest value and gives 0.
fn argmax(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, vocab) = (x.symbol("rows")?, x.symbol("vocab")?);
    let logits = x.input("logits")?;
    let mut out = Vec::with_capacity(rows);
    for row in logits.chunks(vocab).take(rows) {
        let mut best: Option<usize> = None;
        for (j, v) in row.iter().enumerate() {
            if !v.is_nan() && best.is_none_or(|b| *v > row[b]) {
                best = Some(j);
            }
        }
        out.push(best.unwrap_or(0) as f64);
    }
    Ok([("out".to_string(), out)].into())
}

/// y[r, o] = sum_i w[o, i] x[r, i]
fn dense_rows(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, n, k) = (x.symbol("rows")?, x.symbol("n")?, x.symbol("k")?);
    let (w, input) = (x.input("w")?, x.input("x")?);
    let mut y = Vec::with_capacity(rows * n);
    for r in 0..rows {
        let row = &input[r * k..(r + 1) * k];
        for o in 0..n {
            y.push(w[o * k..(o + 1) * k].iter().zip(row).map(|(a, b)| a * b).sum());
        }
    }
    Ok([("y".to_string(), y)].into())
}

/// out[i, c] = scales[id, c / group] * code(id, c) + biases[id, c / group], id = ids[i], where
/// code(id, c) is read bit by bit from row id's little-endian bitstream of 32-bit words:
/// bit b of the code is stream bit c * bits + b, which is bit (s % 32) of word s / 32.
fn affine_dequant_rows(x: &OracleInput) -> Result<Outputs, String> {
    let (n, k, vocab, bits, group) = (x.symbol("n")?, x.symbol("k")?, x.symbol("vocab")?, x.symbol("bits")?, x.symbol("group")?);
    let (table, scales, biases, ids) = (x.values("table")?, x.values("scales")?, x.values("biases")?, x.input("ids")?);
    if bits == 0 || group == 0 || k % group != 0 || (k * bits) % 32 != 0 {
        return Err(format!("k = {k}, bits = {bits}, group = {group}: rows are not whole words and groups"));
    }
    let (words, groups) = (k * bits / 32, k / group);
    let mut out = Vec::with_capacity(n * k);
    let mut stream = vec![0.0; words];
    for &id in &ids[..n] {
        if id < 0.0 || id as usize >= vocab {
            return Err(format!("token id {id} outside the table of {vocab} rows"));
        }
        let row = id as usize;
        table.read(row * words, &mut stream);
        for c in 0..k {
            let mut code = 0u64;
            for b in 0..bits {
                let s = c * bits + b;
                let word = stream[s / 32] as u64;
                code |= ((word >> (s % 32)) & 1) << b;
            }
            let g = row * groups + c / group;
            out.push(scales.get(g) * code as f64 + biases.get(g));
        }
    }
    Ok([("out".to_string(), out)].into())
}

/// y[i, j] = sum over kk of x[i, kk] * w[j, kk], in f64. Each element is its k products
/// summed in one fixed order, whatever core makes it (`dot`). The rows of x go to the cores a
/// block at a time, and each block meets W a few rows at a time, so that a row of W read from
/// memory serves the whole block: a prompt of 4,096 rows at n = k = 4,096 is 69 G products,
/// and summed in k order (each add waiting on the one before) with W read again for every row
/// of x, it took 4 to 5 s of a 16-core machine a record.
fn gemm_xwt(x: &OracleInput) -> Result<Outputs, String> {
    use rayon::prelude::*;
    const X_ROWS: usize = 32;
    const W_ROWS: usize = 8;
    let (m, n, k) = (x.symbol("m")?, x.symbol("n")?, x.symbol("k")?);
    let (a, w) = (x.input("x")?, x.input("w")?);
    let mut y = vec![0.0; m * n];
    if n == 0 {
        return Ok([("y".to_string(), y)].into());
    }
    y.par_chunks_mut(n * X_ROWS).enumerate().for_each(|(block, out)| {
        let rows = &a[block * X_ROWS * k..][..out.len() / n * k];
        products(rows, w, (n, k, W_ROWS), out);
    });
    Ok([("y".to_string(), y)].into())
}

/// One block of rows of `gemm_xwt`. On x86-64 the sums are made with AVX-512 or AVX2
/// vectors where the CPU has them: lane l of a vector is `dot`'s lane l, the same multiplies
/// and adds in the same order (no fused multiply-add), so the same bits as the portable code.
fn products(rows: &[f64], w: &[f64], shape: (usize, usize, usize), out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, all that the function's target feature asks for
            return unsafe { wide::products_avx512(rows, w, shape, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, all that the function's target feature asks for
            return unsafe { wide::products_avx2(rows, w, shape, out) };
        }
    }
    products_by(rows, w, shape, out, Portable);
}

/// Several of `dot`'s sums in one pass: a row against four rows of W, or four rows against
/// the same four. Each sum is made as `dot` makes it (the same bits); making several at once
/// lets their adds overlap (each waits on its own lane's last add only) and reads each row
/// once for all of them.
trait Dots {
    fn four(&self, p: &[f64], q: [&[f64]; 4]) -> [f64; 4];
    fn four_by_four(&self, p: [&[f64]; 4], q: [&[f64]; 4]) -> [[f64; 4]; 4] {
        p.map(|p| self.four(p, q))
    }
}

struct Portable;

impl Dots for Portable {
    fn four(&self, p: &[f64], q: [&[f64]; 4]) -> [f64; 4] {
        q.map(|q| dot(p, q))
    }
}

/// Each row of `rows` against W, `w_rows` rows of W at a time (so that they stay in cache
/// across the block's rows of x), four of them at a time against four rows of x.
#[inline(always)]
fn products_by(rows: &[f64], w: &[f64], (n, k, w_rows): (usize, usize, usize), out: &mut [f64], dots: impl Dots) {
    let w_row = |j: usize| &w[j * k..(j + 1) * k];
    let x_row = |r: usize| &rows[r * k..][..k];
    let m = out.len() / n;
    for first in (0..n).step_by(w_rows) {
        let end = (first + w_rows).min(n);
        for r in (0..m).step_by(4) {
            let mut j = first;
            while j + 4 <= end {
                let q = [w_row(j), w_row(j + 1), w_row(j + 2), w_row(j + 3)];
                if r + 4 <= m {
                    let ys = dots.four_by_four([x_row(r), x_row(r + 1), x_row(r + 2), x_row(r + 3)], q);
                    for (i, y) in ys.iter().enumerate() {
                        out[(r + i) * n + j..][..4].copy_from_slice(y);
                    }
                } else {
                    for r in r..m {
                        out[r * n + j..][..4].copy_from_slice(&dots.four(x_row(r), q));
                    }
                }
                j += 4;
            }
            for r in r..(r + 4).min(m) {
                for j in j..end {
                    out[r * n + j] = dot(x_row(r), w_row(j));
                }
            }
        }
    }
}

/// The sum of p[i] * q[i] in a fixed order: eight partial sums, lane l taking the products
/// of i = l mod 8 in order (the tail's first lanes included), joined pairwise. Independent
/// partial sums let the adds overlap where one running sum made each wait on the last. Every
/// lane starts at -0, the identity of IEEE addition, so a sum of products that are all -0 is
/// -0, as a sum in k order from -0 gives.
#[inline(always)]
fn dot(p: &[f64], q: &[f64]) -> f64 {
    let mut lanes = [-0.0f64; 8];
    let ((p_blocks, p_tail), (q_blocks, q_tail)) = (p.as_chunks::<8>(), q.as_chunks::<8>());
    for (p, q) in p_blocks.iter().zip(q_blocks) {
        for lane in 0..8 {
            lanes[lane] += p[lane] * q[lane];
        }
    }
    finish_dot(lanes, p_tail, q_tail)
}

/// `dot`'s end: the tail's products into the first lanes, then the lanes joined pairwise.
#[inline(always)]
fn finish_dot(mut lanes: [f64; 8], p_tail: &[f64], q_tail: &[f64]) -> f64 {
    for (lane, (p, q)) in p_tail.iter().zip(q_tail).enumerate() {
        lanes[lane] += p * q;
    }
    ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
}

/// `Dots` in x86-64 vectors: the eight lanes of a sum in one 512-bit or two 256-bit
/// registers (written plainly, the compiler shuffled the four sums' lanes through memory).
/// AVX-512 makes four rows by four at once (16 of its 32 registers), AVX2 one by four (8 of 16).
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::*;

    use super::{Dots, finish_dot, products_by};

    #[target_feature(enable = "avx512f")]
    pub(super) fn products_avx512(rows: &[f64], w: &[f64], shape: (usize, usize, usize), out: &mut [f64]) {
        products_by(rows, w, shape, out, Avx512);
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn products_avx2(rows: &[f64], w: &[f64], shape: (usize, usize, usize), out: &mut [f64]) {
        products_by(rows, w, shape, out, Avx2);
    }

    /// Made only by `products_avx512`, which runs where the CPU has AVX-512F.
    struct Avx512;

    impl Dots for Avx512 {
        #[inline(always)]
        fn four(&self, p: &[f64], q: [&[f64]; 4]) -> [f64; 4] {
            // SAFETY: this CPU has AVX-512F (see the type)
            let [sums] = unsafe { sums_avx512::<1>([p], q) };
            sums
        }
        #[inline(always)]
        fn four_by_four(&self, p: [&[f64]; 4], q: [&[f64]; 4]) -> [[f64; 4]; 4] {
            // SAFETY: this CPU has AVX-512F (see the type)
            unsafe { sums_avx512(p, q) }
        }
    }

    /// Made only by `products_avx2`, which runs where the CPU has AVX2.
    struct Avx2;

    impl Dots for Avx2 {
        #[inline(always)]
        fn four(&self, p: &[f64], q: [&[f64]; 4]) -> [f64; 4] {
            // SAFETY: this CPU has AVX2 (see the type)
            unsafe { four_avx2(p, q) }
        }
    }

    /// `dot` of each of the R rows `p` with each of the four `q`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sums_avx512<const R: usize>(p: [&[f64]; R], q: [&[f64]; 4]) -> [[f64; 4]; R] {
        let k = q[0].len();
        assert!(p.iter().chain(&q).all(|v| v.len() == k));
        let blocks = k / 8;
        let mut sums = [[_mm512_set1_pd(-0.0); 4]; R];
        for b in 0..blocks {
            // SAFETY: 8 * b + 8 <= k, the length of every p and q
            unsafe {
                let w = q.map(|q| _mm512_loadu_pd(q.as_ptr().add(8 * b)));
                for (sums, p) in sums.iter_mut().zip(p) {
                    let x = _mm512_loadu_pd(p.as_ptr().add(8 * b));
                    for (sum, w) in sums.iter_mut().zip(w) {
                        *sum = _mm512_add_pd(*sum, _mm512_mul_pd(x, w));
                    }
                }
            }
        }
        let mut out = [[0.0; 4]; R];
        for ((out, sums), p) in out.iter_mut().zip(sums).zip(p) {
            for ((out, sum), q) in out.iter_mut().zip(sums).zip(q) {
                let mut lanes = [0.0; 8];
                // SAFETY: `lanes` holds 8 f64
                unsafe { _mm512_storeu_pd(lanes.as_mut_ptr(), sum) };
                *out = finish_dot(lanes, &p[8 * blocks..], &q[8 * blocks..]);
            }
        }
        out
    }

    /// `dot` of `p` with each of the four `q`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn four_avx2(p: &[f64], q: [&[f64]; 4]) -> [f64; 4] {
        let k = p.len();
        assert!(q.iter().all(|q| q.len() == k));
        let blocks = k / 8;
        let mut low = [_mm256_set1_pd(-0.0); 4];
        let mut high = [_mm256_set1_pd(-0.0); 4];
        for b in 0..blocks {
            // SAFETY: 8 * b + 8 <= k, the length of p and of every q
            unsafe {
                let (x_low, x_high) = (_mm256_loadu_pd(p.as_ptr().add(8 * b)), _mm256_loadu_pd(p.as_ptr().add(8 * b + 4)));
                for ((low, high), q) in low.iter_mut().zip(high.iter_mut()).zip(q) {
                    let q = q.as_ptr().add(8 * b);
                    *low = _mm256_add_pd(*low, _mm256_mul_pd(x_low, _mm256_loadu_pd(q)));
                    *high = _mm256_add_pd(*high, _mm256_mul_pd(x_high, _mm256_loadu_pd(q.add(4))));
                }
            }
        }
        let mut out = [0.0; 4];
        for (((out, low), high), q) in out.iter_mut().zip(low).zip(high).zip(q) {
            let mut lanes = [0.0; 8];
            // SAFETY: `lanes` holds 8 f64, 4 at each store
            unsafe {
                _mm256_storeu_pd(lanes.as_mut_ptr(), low);
                _mm256_storeu_pd(lanes.as_mut_ptr().add(4), high);
            }
            *out = finish_dot(lanes, &p[8 * blocks..], &q[8 * blocks..]);
        }
        out
    }
}

/// out = in: the conversion is the rounding of the output type, which the tolerance applies.
fn cast(x: &OracleInput) -> Result<Outputs, String> {
    let n = x.symbol("rows")? * x.symbol("k")?;
    Ok([("out".to_string(), x.input("in")?[..n].to_vec())].into())
}

/// out = a + b
fn add(x: &OracleInput) -> Result<Outputs, String> {
    let n = x.symbol("rows")? * x.symbol("k")?;
    let (a, b) = (x.input("a")?, x.input("b")?);
    Ok([("out".to_string(), (0..n).map(|i| a[i] + b[i]).collect())].into())
}

/// out = silu(gate) * up, silu(g) = g / (1 + e^-g)
fn silu_mul(x: &OracleInput) -> Result<Outputs, String> {
    let n = x.symbol("rows")? * x.symbol("k")?;
    let (gate, up) = (x.input("gate")?, x.input("up")?);
    let silu = |g: f64| g / (1.0 + (-g).exp());
    Ok([("out".to_string(), (0..n).map(|i| silu(gate[i]) * up[i]).collect())].into())
}

/// out[r, c] = in[r, start + c], c < width
fn copy_cols(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, k, width) = (x.symbol("rows")?, x.symbol("k")?, x.symbol("width")?);
    let start = x.param("start")?;
    if start < 0.0 || start as usize + width > k {
        return Err(format!("columns [{start}, {}) outside a row of {k}", start as usize + width));
    }
    let input = x.input("in")?;
    let out = (0..rows).flat_map(|r| input[r * k + start as usize..][..width].iter().copied()).collect();
    Ok([("out".to_string(), out)].into())
}

/// The norm of one row times the weight: v / sqrt(mean(v^2) + eps) * w, with eps as the
/// kernel receives it (a float).
fn rms_row(v: &[f64], weight: &[f64], eps: f64) -> impl Iterator<Item = f64> {
    let mean = v.iter().map(|e| e * e).sum::<f64>() / v.len() as f64;
    let inverse = 1.0 / (mean + eps as f32 as f64).sqrt();
    v.iter().zip(weight).map(move |(e, w)| e * inverse * w)
}

/// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight
fn rms_norm(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, k) = (x.symbol("rows")?, x.symbol("k")?);
    let (input, weight, eps) = (x.input("x")?, x.input("weight")?, x.param("eps")?);
    let out = (0..rows).flat_map(|r| rms_row(&input[r * k..(r + 1) * k], &weight[..k], eps)).collect();
    Ok([("out".to_string(), out)].into())
}

/// sum = x + residual; out = RMSNorm(sum) * weight, from the exact sum
fn add_rms_norm(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, k) = (x.symbol("rows")?, x.symbol("k")?);
    let (input, residual, weight, eps) = (x.input("x")?, x.input("residual")?, x.input("weight")?, x.param("eps")?);
    let sum: Vec<f64> = (0..rows * k).map(|i| input[i] + residual[i]).collect();
    let out = sum.chunks(k).flat_map(|row| rms_row(row, &weight[..k], eps)).collect();
    Ok([("sum".to_string(), sum), ("out".to_string(), out)].into())
}

/// sin and cos of 2 pi t, t in turns: t is reduced to the nearest quarter turn exactly (4t
/// and its distance to a whole number are exact in f64), so a whole number of quarter turns
/// gives exact zeros and ones, at any position, as the kernel's own reduction does.
fn sin_cos_turns(t: f64) -> (f64, f64) {
    let q = 4.0 * t;
    let n = q.round();
    let (s, c) = ((q - n) * std::f64::consts::FRAC_PI_2).sin_cos();
    match (n as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// Rotary embedding. The op defines its angle as an f32 product in turns: the inverse
/// frequency theta^(-2i/d) / (2 pi) rounded to f32, times the position, rounded to f32. The
/// oracle forms that angle the same way and rotates by 2 pi times it in f64, so what remains
/// is the kernel's own arithmetic.
fn rope(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, heads, d) = (x.symbol("rows")?, x.symbol("heads")?, x.symbol("d")?);
    let (theta, layout) = (x.param("theta")?, x.param("layout")?);
    let (input, positions) = (x.input("x")?, x.input("positions")?);
    let half = d / 2;
    let pair = |i: usize| match layout as i64 {
        0 => Ok((i, i + half)),
        1 => Ok((2 * i, 2 * i + 1)),
        other => Err(format!("layout {other} (0 = neox, 1 = interleaved)")),
    };
    let mut out = vec![0.0; rows * heads * d];
    for (r, &position) in positions.iter().enumerate().take(rows) {
        for i in 0..half {
            let turns = (theta.powf(-((2 * i) as f64) / d as f64) / std::f64::consts::TAU) as f32;
            let (sin, cos) = sin_cos_turns((position as f32 * turns) as f64);
            let (a, b) = pair(i)?;
            for h in 0..heads {
                let base = (r * heads + h) * d;
                let (xa, xb) = (input[base + a], input[base + b]);
                out[base + a] = xa * cos - xb * sin;
                out[base + b] = xb * cos + xa * sin;
            }
        }
    }
    Ok([("out".to_string(), out)].into())
}

/// silu(v) = v / (1 + e^-v)
fn silu(v: f64) -> f64 {
    v / (1.0 + (-v).exp())
}

/// Causal depthwise conv1d over a kept state. With e the sequence of state_in's width - 1 rows
/// (the previous tokens, oldest first) then x's rows, out[t, c] = bias[c] + sum_i weight[c, i]
/// e[t + i, c] (the bias only when `has_bias` is 1), through silu when `silu` is 1; state_out
/// is the last width - 1 rows of e, the state the next call takes.
fn conv1d_causal(x: &OracleInput) -> Result<Outputs, String> {
    let (tokens, channels, width) = (x.symbol("tokens")?, x.symbol("channels")?, x.symbol("width")?);
    let (input, weight, bias, state) = (x.input("x")?, x.input("weight")?, x.input("bias")?, x.input("state_in")?);
    let (activate, has_bias) = (x.param("silu")? != 0.0, x.param("has_bias")? != 0.0);
    if width == 0 {
        return Err("a convolution of width 0".into());
    }
    let kept = width - 1;
    // element c of row m of e
    let e = |m: usize, c: usize| if m < kept { state[m * channels + c] } else { input[(m - kept) * channels + c] };
    let mut out = Vec::with_capacity(tokens * channels);
    for t in 0..tokens {
        for c in 0..channels {
            let taps: f64 = (0..width).map(|i| weight[c * width + i] * e(t + i, c)).sum();
            let v = if has_bias { bias[c] + taps } else { taps };
            out.push(if activate { silu(v) } else { v });
        }
    }
    let state_out = (tokens..tokens + kept).flat_map(|m| (0..channels).map(move |c| (m, c))).map(|(m, c)| e(m, c)).collect();
    Ok([("out".to_string(), out), ("state_out".to_string(), state_out)].into())
}

/// One decode step of the gated delta rule (Gated DeltaNet, as flash-linear-attention's
/// fused_recurrent_gated_delta_rule computes it with a per-head gate g and beta), per value
/// head h with its key head kh = h / (heads / k_heads) (grouped value heads, as Qwen3-Next
/// repeats each q and k head over consecutive value heads), the state S of h a dk x dv matrix:
///   S' = S exp(g[h]);  kv[j] = sum_i k[kh, i] S'[i, j];  delta[j] = beta[h] (v[h, j] - kv[j]);
///   state_out[h] = S' + k[kh] delta^T;  out[h, j] = scale sum_i q[kh, i] state_out[h, i, j]
/// with scale as the kernel receives it (a float).
fn delta_rule_step(x: &OracleInput) -> Result<Outputs, String> {
    let (heads, k_heads, dk, dv) = (x.symbol("heads")?, x.symbol("k_heads")?, x.symbol("dk")?, x.symbol("dv")?);
    let (state, q, k, v) = (x.input("state_in")?, x.input("q")?, x.input("k")?, x.input("v")?);
    let (g, beta, scale) = (x.input("g")?, x.input("beta")?, x.param("scale")? as f32 as f64);
    if k_heads == 0 || heads % k_heads != 0 {
        return Err(format!("{heads} value heads do not share {k_heads} key heads evenly"));
    }
    let group = heads / k_heads;
    let (mut state_out, mut out) = (vec![0.0; heads * dk * dv], vec![0.0; heads * dv]);
    for h in 0..heads {
        let kh = h / group;
        let (qh, kh) = (&q[kh * dk..(kh + 1) * dk], &k[kh * dk..(kh + 1) * dk]);
        let decay = g[h].exp();
        let s = |i: usize, j: usize| state[(h * dk + i) * dv + j] * decay;
        for j in 0..dv {
            let kv: f64 = (0..dk).map(|i| kh[i] * s(i, j)).sum();
            let delta = beta[h] * (v[h * dv + j] - kv);
            let mut dot = 0.0;
            for i in 0..dk {
                let updated = s(i, j) + kh[i] * delta;
                state_out[(h * dk + i) * dv + j] = updated;
                dot += qh[i] * updated;
            }
            out[h * dv + j] = scale * dot;
        }
    }
    Ok([("state_out".to_string(), state_out), ("out".to_string(), out)].into())
}

/// out[r, :] = x[r, :] / sqrt(sum(x[r, :]^2) + eps), with eps as the kernel receives it (a float)
fn l2_norm(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, k) = (x.symbol("rows")?, x.symbol("k")?);
    let (input, eps) = (x.input("x")?, x.param("eps")? as f32 as f64);
    let mut out = Vec::with_capacity(rows * k);
    for row in input.chunks(k).take(rows) {
        let norm = (row.iter().map(|v| v * v).sum::<f64>() + eps).sqrt();
        out.extend(row.iter().map(|v| v / norm));
    }
    Ok([("out".to_string(), out)].into())
}

/// y[r, o] = sum_c x[r, c] W[o, c], W the MLX-affine dequantised matrix: every row of w (codes
/// of `bits` bits packed in 32-bit words, a scale and a bias per group of `group` columns),
/// dequantised by `affine_dequant_rows` as the embedding gathers them, ids 0..n in order.
fn quant_matvec(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, n, k) = (x.symbol("rows")?, x.symbol("n")?, x.symbol("k")?);
    let symbols: Symbols =
        [("n", n as i64), ("k", k as i64), ("vocab", n as i64), ("bits", x.symbol("bits")? as i64), ("group", x.symbol("group")? as i64)]
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect();
    let ids: Vec<f64> = (0..n).map(|o| o as f64).collect();
    let inputs: BTreeMap<String, InputValues> = [
        ("table", x.values("w")?.clone()),
        ("scales", x.values("scales")?.clone()),
        ("biases", x.values("biases")?.clone()),
        ("ids", ids.into()),
    ]
    .into_iter()
    .map(|(name, values)| (name.to_string(), values))
    .collect();
    let dequantised = affine_dequant_rows(&OracleInput { symbols: &symbols, params: x.params, inputs: &inputs })?;
    let w = dequantised.get("out").ok_or("affine_dequant_rows gave no `out`")?;
    let input = x.input("x")?;
    let mut y = Vec::with_capacity(rows * n);
    for r in 0..rows {
        let row = &input[r * k..(r + 1) * k];
        for o in 0..n {
            y.push(row.iter().zip(&w[o * k..(o + 1) * k]).map(|(a, b)| a * b).sum());
        }
    }
    Ok([("y".to_string(), y)].into())
}

/// Causal prefill attention: the queries are the last q_len of kv_len positions, so query i of
/// head h sits at position start + i, start = kv_len - q_len, and attends to keys 0..=start + i
/// of its KV head (h / (heads / kv_heads), grouped-query), with weights
/// softmax(scale q . k) computed with the max subtracted (NaN left out of the max, as f64::max
/// does); scale as the kernel receives it (a float).
fn attention_prefill(x: &OracleInput) -> Result<Outputs, String> {
    let (q_len, heads, kv_len, kv_heads, d) =
        (x.symbol("q_len")?, x.symbol("heads")?, x.symbol("kv_len")?, x.symbol("kv_heads")?, x.symbol("d")?);
    let (q, k, v, scale) = (x.input("q")?, x.input("k")?, x.input("v")?, x.param("scale")? as f32 as f64);
    if kv_heads == 0 || heads % kv_heads != 0 || q_len > kv_len {
        return Err(format!("{q_len} queries of {heads} heads over {kv_len} keys of {kv_heads} KV heads"));
    }
    let start = kv_len - q_len;
    let group = heads / kv_heads;
    let mut out = Vec::with_capacity(q_len * heads * d);
    for i in 0..q_len {
        for h in 0..heads {
            let query = &q[(i * heads + h) * d..][..d];
            let row = |j: usize| (j * kv_heads + h / group) * d;
            let visible = start + i + 1;
            let scores: Vec<f64> =
                (0..visible).map(|j| scale * query.iter().zip(&k[row(j)..][..d]).map(|(a, b)| a * b).sum::<f64>()).collect();
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            // a weight below f32's smallest subnormal is 0 in any f32 kernel, and 0 times an
            // infinite value is NaN there, not the infinity a tiny f64 weight would give
            let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).map(|w| if w as f32 == 0.0 { 0.0 } else { w }).collect();
            let total: f64 = weights.iter().sum();
            for c in 0..d {
                out.push((0..visible).map(|j| weights[j] * v[row(j) + c]).sum::<f64>() / total);
            }
        }
    }
    Ok([("out".to_string(), out)].into())
}

/// Qwen3-Next's gated RMSNorm: out[r, :] = x / sqrt(mean(x^2) + eps) * weight * silu(z[r, :])
fn rms_gated(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, k) = (x.symbol("rows")?, x.symbol("k")?);
    let (input, gate, weight, eps) = (x.input("x")?, x.input("z")?, x.input("weight")?, x.param("eps")?);
    let out = (0..rows)
        .flat_map(|r| rms_row(&input[r * k..(r + 1) * k], &weight[..k], eps).zip(&gate[r * k..(r + 1) * k]).map(|(n, z)| n * silu(*z)))
        .collect();
    Ok([("out".to_string(), out)].into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, symbols: &[(&str, i64)], inputs: &[(&str, Vec<f64>)]) -> Outputs {
        run_with(name, symbols, &[], inputs)
    }

    fn run_with(name: &str, symbols: &[(&str, i64)], params: &[(&str, f64)], inputs: &[(&str, Vec<f64>)]) -> Outputs {
        let symbols: Symbols = symbols.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let params: BTreeMap<String, f64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let inputs: BTreeMap<String, InputValues> = inputs.iter().map(|(k, v)| (k.to_string(), v.clone().into())).collect();
        find(name).unwrap()(&OracleInput { symbols: &symbols, params: &Params::new(&params), inputs: &inputs }).unwrap()
    }

    #[test]
    fn gather_rows_picks_rows_by_id() {
        let out =
            run("gather_rows", &[("n", 2), ("k", 2), ("vocab", 3)], &[("table", vec![1., 2., 3., 4., 5., 6.]), ("ids", vec![2., 0.])]);
        assert_eq!(out["out"], vec![5., 6., 1., 2.]);
    }

    /// Rows gathered on all cores land in order (rows in chunks of 64, the last one short),
    /// and an id outside the table is the oracle's error, named.
    #[test]
    fn gather_rows_over_many_rows_and_an_id_outside_the_table() {
        let (n, k, vocab) = (1000usize, 3usize, 7usize);
        let table: Vec<f64> = (0..vocab * k).map(|v| v as f64).collect();
        let ids: Vec<f64> = (0..n).map(|i| ((i * 5 + 3) % vocab) as f64).collect();
        let out =
            run("gather_rows", &[("n", n as i64), ("k", k as i64), ("vocab", vocab as i64)], &[("table", table), ("ids", ids.clone())]);
        let want: Vec<f64> = ids.iter().flat_map(|&id| (0..k).map(move |j| (id as usize * k + j) as f64)).collect();
        assert_eq!(out["out"], want);
        let symbols: Symbols = [("n", 2i64), ("k", 2), ("vocab", 3)].iter().map(|(s, v)| (s.to_string(), *v)).collect();
        let inputs: BTreeMap<String, InputValues> =
            [("table", vec![0.; 6]), ("ids", vec![1., 3.])].into_iter().map(|(s, v)| (s.to_string(), v.into())).collect();
        let params = BTreeMap::new();
        let error =
            find("gather_rows").unwrap()(&OracleInput { symbols: &symbols, params: &Params::new(&params), inputs: &inputs }).unwrap_err();
        assert_eq!(error, "token id 3 outside the table of 3 rows");
    }

    #[test]
    fn softmax_stats_of_two_tiles_with_a_short_tail() {
        let out = run("softmax_stats", &[("rows", 1), ("keys", 3), ("tile", 2)], &[("scores", vec![0., 1., 5.])]);
        assert_eq!(out["tile_max"], vec![1., 5.]);
        assert_eq!(out["tile_sum"], vec![1. + (-1f64).exp(), 1.]);
    }

    #[test]
    fn sum_partials_of_one_tile_is_the_partial_over_its_sum() {
        let out = run(
            "sum_partials",
            &[("rows", 1), ("tiles", 1), ("d", 2)],
            &[("partials", vec![2., 4.]), ("tile_max", vec![3.]), ("tile_sum", vec![2.])],
        );
        assert_eq!(out["out"], vec![1., 2.]);
        // two tiles: the combine equals a softmax over all keys at once
        let out = run(
            "sum_partials",
            &[("rows", 1), ("tiles", 2), ("d", 1)],
            &[("partials", vec![10.0, 20.0]), ("tile_max", vec![0., -1.]), ("tile_sum", vec![1., 1.])],
        );
        let want = (10.0 + (-1f64).exp() * 20.0) / (1.0 + (-1f64).exp());
        assert!((out["out"][0] - want).abs() < 1e-6 * want, "the weights are f32 values: {} {want}", out["out"][0]);
    }

    #[test]
    fn sum_partials_by_tiles_and_column_slices_gives_each_columns_tile_order_sum() {
        // two rows, columns past one task's slice, values of mixed sign and scale: every
        // output is the same bits as its column summed tile by tile, one column at a time
        let (rows, tiles, d) = (2usize, 5usize, COLUMNS_A_TASK + 3);
        let partials: Vec<f64> = (0..rows * tiles * d).map(|i| ((i * 7919 % 1000) as f64 - 500.0) * 1.37e-3).collect();
        let maxima = vec![0.5, -1.0, 3.0, 2.5, -7.0, 1.0, 1.0, 0.0, -30.0, 4.0];
        let sums = vec![1.0, 2.0, 3.5, 1.25, 9.0, 1.0, 64.0, 2.0, 1.5, 7.0];
        let symbols = [("rows", rows as i64), ("tiles", tiles as i64), ("d", d as i64)];
        let inputs = [("partials", partials.clone()), ("tile_max", maxima.clone()), ("tile_sum", sums.clone())];
        let got = run("sum_partials", &symbols, &inputs);
        for r in 0..rows {
            let m = &maxima[r * tiles..(r + 1) * tiles];
            let global = m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = m.iter().map(|v| f32_weight((v - global).exp())).collect();
            let denominator: f64 = w.iter().zip(&sums[r * tiles..]).map(|(w, s)| w * s).sum();
            for j in 0..d {
                let numerator: f64 = (0..tiles).map(|t| w[t] * partials[(r * tiles + t) * d + j]).sum();
                assert_eq!(got["out"][r * d + j].to_bits(), (numerator / denominator).to_bits(), "row {r} column {j}");
            }
        }
    }

    #[test]
    fn a_weight_under_f32s_range_times_an_infinity_is_nan_as_in_f32() {
        // tile 1's weight e^-200 is 0 in f32: 0 * -inf is NaN there, not -inf
        let out = run(
            "sum_partials",
            &[("rows", 1), ("tiles", 2), ("d", 2)],
            &[("partials", vec![1.0, 2.0, f64::NEG_INFINITY, 3.0]), ("tile_max", vec![200., 0.]), ("tile_sum", vec![1., 1.])],
        );
        assert!(out["out"][0].is_nan(), "{:?}", out["out"]);
        assert_eq!(out["out"][1], 2.0);
    }

    #[test]
    fn input_values_read_and_get_what_whole_decodes_and_keep_only_what_was_decoded_whole() {
        for dtype in DType::ALL {
            let generator = crate::inputs::Generator::parse(if dtype.is_float() { "normal(0, 100)" } else { "int(0, 200)" }).unwrap();
            let bytes = Arc::new(generator.generate(dtype, 1000, 7, &Symbols::new()).unwrap());
            let values = InputValues::new(dtype, bytes.clone());
            let mut part = vec![0.0; 300];
            values.read(600, &mut part);
            assert_eq!(values.get(999), dtype.decode(&bytes[999 * dtype.size()..]), "{dtype:?}");
            assert!(values.kept().is_none(), "{dtype:?}: read and get decode nothing whole");
            let whole = values.whole().to_vec();
            assert_eq!(whole.len(), 1000);
            assert_eq!(whole, bytes.chunks(dtype.size()).map(|c| dtype.decode(c)).collect::<Vec<_>>(), "{dtype:?}");
            assert_eq!(&whole[600..900], part.as_slice(), "{dtype:?}");
            assert_eq!(values.kept().as_deref(), Some(&whole), "{dtype:?}");
            // decoded already: read and get serve from the values
            let given = InputValues::from(whole.clone());
            given.read(600, &mut part);
            assert_eq!((&whole[600..900], given.get(999), given.len()), (part.as_slice(), whole[999], 1000));
        }
    }

    /// Every f16 and bf16 bit pattern decodes (f16 in `decode_into`'s chunks, a length past
    /// one chunk with a short last one) to the value, and for a NaN the bits, that `half`'s
    /// one-element conversion gives.
    #[test]
    fn halves_decode_as_half_converts_each_element() {
        let bits: Vec<u16> = (0..=u16::MAX).chain(0..300).collect();
        let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
        let mut decoded = vec![0.0; bits.len()];
        decode_into(DType::F16, &bytes, &mut decoded);
        for (b, value) in bits.iter().zip(&decoded) {
            assert_eq!(value.to_bits(), half::f16::from_bits(*b).to_f64().to_bits(), "f16 {b:#06x}");
        }
        decode_into(DType::Bf16, &bytes, &mut decoded);
        for (b, value) in bits.iter().zip(&decoded) {
            assert_eq!(value.to_bits(), half::bf16::from_bits(*b).to_f64().to_bits(), "bf16 {b:#06x}");
        }
        let mut one = [0.0];
        decode_into(DType::F16, &0x3c01u16.to_le_bytes(), &mut one);
        assert_eq!(one[0], 1.0 + 2f64.powi(-10));
        decode_into(DType::Bf16, &0x3f81u16.to_le_bytes(), &mut one);
        assert_eq!(one[0], 1.0 + 2f64.powi(-7));
    }

    /// A score is `dot`'s sum of the query and key row's products, times the scale: a head
    /// dimension of whole blocks of eight and a tail, exact in f64.
    #[test]
    fn score_keys_scales_each_keys_dot_product() {
        let d = 19;
        let q: Vec<f64> = (0..2 * d).map(|i| i as f64 - 7.0).collect();
        let k: Vec<f64> = (0..3 * d).map(|i| (i % 5) as f64 * 0.5).collect();
        let out = run_with(
            "score_keys",
            &[("rows", 2), ("keys", 3), ("d", d as i64)],
            &[("scale", 0.25)],
            &[("q", q.clone()), ("k_cache", k.clone())],
        );
        let want: Vec<f64> = (0..2)
            .flat_map(|r| (0..3).map(move |key| (r, key)))
            .map(|(r, key)| 0.25 * (0..d).map(|i| q[r * d + i] * k[key * d + i]).sum::<f64>())
            .collect();
        assert_eq!(out["scores"], want);
    }

    /// The oracles that read a table or cache a row at a time give the same bits on encoded
    /// inputs as on values decoded whole (a column block past `COLUMNS_A_TASK` included).
    #[test]
    fn oracles_reading_rows_of_encoded_inputs_give_the_bits_of_decoded_ones() {
        type Input = (&'static str, DType, usize, &'static str);
        type OracleCase = (&'static str, &'static [(&'static str, i64)], &'static [(&'static str, f64)], &'static [Input]);
        let cases: [OracleCase; 6] = [
            (
                "gather_rows",
                &[("n", 3), ("k", 5), ("vocab", 7)],
                &[],
                &[("table", DType::F16, 35, "normal(0, 1)"), ("ids", DType::I32, 3, "int(0, 7)")],
            ),
            (
                "score_keys",
                &[("rows", 2), ("keys", 5000), ("d", 3)],
                &[("scale", 0.25)],
                &[("q", DType::F32, 6, "normal(0, 1)"), ("k_cache", DType::Bf16, 15000, "normal(0, 1)")],
            ),
            (
                "apply_values",
                &[("rows", 2), ("keys", 7), ("tile", 3), ("d", 4)],
                &[],
                &[
                    ("scores", DType::F32, 14, "normal(0, 1)"),
                    ("tile_max", DType::F32, 6, "uniform(2, 3)"),
                    ("v_cache", DType::F16, 28, "normal(0, 1)"),
                ],
            ),
            (
                "sum_partials",
                &[("rows", 2), ("tiles", 3), ("d", 4100)],
                &[],
                &[
                    ("partials", DType::F32, 24600, "normal(0, 1)"),
                    ("tile_max", DType::F32, 6, "normal(0, 1)"),
                    ("tile_sum", DType::F32, 6, "uniform(0.5, 2)"),
                ],
            ),
            (
                "affine_dequant_rows",
                &[("n", 2), ("k", 64), ("vocab", 3), ("bits", 4), ("group", 32)],
                &[],
                &[
                    ("table", DType::U32, 24, "int(0, 4294967296)"),
                    ("scales", DType::F16, 6, "normal(0, 1)"),
                    ("biases", DType::Bf16, 6, "normal(0, 1)"),
                    ("ids", DType::I32, 2, "int(0, 3)"),
                ],
            ),
            (
                "quant_matvec",
                &[("rows", 2), ("n", 3), ("k", 64), ("bits", 4), ("group", 32)],
                &[],
                &[
                    ("w", DType::U32, 24, "int(0, 4294967296)"),
                    ("scales", DType::F16, 6, "normal(0, 1)"),
                    ("biases", DType::Bf16, 6, "normal(0, 1)"),
                    ("x", DType::F32, 128, "normal(0, 1)"),
                ],
            ),
        ];
        for (name, symbols, params, inputs) in cases {
            let symbols: Symbols = symbols.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            let params: BTreeMap<String, f64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            let made: Vec<(String, DType, Arc<Vec<u8>>)> = inputs
                .iter()
                .enumerate()
                .map(|(i, (input, dtype, elements, generator))| {
                    let bytes =
                        crate::inputs::Generator::parse(generator).unwrap().generate(*dtype, *elements, i as u64, &symbols).unwrap();
                    (input.to_string(), *dtype, Arc::new(bytes))
                })
                .collect();
            let encoded: BTreeMap<String, InputValues> =
                made.iter().map(|(input, dtype, bytes)| (input.clone(), InputValues::new(*dtype, bytes.clone()))).collect();
            let decoded: BTreeMap<String, InputValues> = made
                .iter()
                .map(|(input, dtype, bytes)| {
                    (input.clone(), bytes.chunks(dtype.size()).map(|c| dtype.decode(c)).collect::<Vec<_>>().into())
                })
                .collect();
            let oracle = find(name).unwrap();
            let on = |inputs| oracle(&OracleInput { symbols: &symbols, params: &Params::new(&params), inputs }).unwrap();
            let (from_bytes, from_values) = (on(&encoded), on(&decoded));
            assert!(!from_values.is_empty(), "{name}");
            for (output, want) in &from_values {
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&from_bytes[output]), bits(want), "{name} {output}");
            }
            // the tables and caches were read a row at a time, never decoded whole
            let tables = ["table", "k_cache", "v_cache", "partials", "scales", "biases", "w"];
            let whole: Vec<&String> =
                encoded.iter().filter(|(n, v)| tables.contains(&n.as_str()) && v.kept().is_some()).map(|(n, _)| n).collect();
            assert!(whole.is_empty(), "{name} decoded {whole:?} whole");
        }
    }

    #[test]
    fn score_keys_scales_each_query_key_dot_product() {
        // q = [[1, 2], [0, -1]], keys [3, 4], [-1, 1], [0.5, 0]
        let out = run_with(
            "score_keys",
            &[("rows", 2), ("keys", 3), ("d", 2)],
            &[("scale", 0.5)],
            &[("q", vec![1., 2., 0., -1.]), ("k_cache", vec![3., 4., -1., 1., 0.5, 0.])],
        );
        assert_eq!(out["scores"], vec![5.5, 0.5, 0.25, -2., -0.5, 0.]);
    }

    #[test]
    fn apply_values_weights_each_tiles_keys_by_exp_of_score_minus_tile_max() {
        // 3 keys in tiles of 2: tile 0 = keys 0, 1; tile 1 = key 2 alone
        let out = run(
            "apply_values",
            &[("rows", 1), ("keys", 3), ("tile", 2), ("d", 2)],
            &[("scores", vec![1., 0., 2.]), ("tile_max", vec![1., 3.]), ("v_cache", vec![1., 2., 10., 20., 4., -4.])],
        );
        let e = (-1f64).exp();
        assert_eq!(out["partials"], vec![1. + 10. * e, 2. + 20. * e, 4. * e, -4. * e]);
    }

    #[test]
    fn sum_partials_act_gates_the_combined_row() {
        let out = run(
            "sum_partials_act",
            &[("rows", 1), ("tiles", 1), ("d", 2)],
            &[("partials", vec![2., 4.]), ("tile_max", vec![3.]), ("tile_sum", vec![2.]), ("gate", vec![0., 2f64.ln()])],
        );
        // sigmoid(0) = 1/2, sigmoid(ln 2) = 1 / (1 + 1/2) = 2/3
        assert_eq!(out["out"][0], 0.5);
        assert!((out["out"][1] - 4. / 3.).abs() < 1e-15);
    }

    #[test]
    fn kv_append_copies_the_cache_and_places_new_rows_at_their_slots() {
        // 2 pages of 2 rows, d = 1; new rows 7, 8, 9, 10 at slots 3, -1 (padding), 0, 4 (past
        // the cache: dropped)
        let out = run(
            "kv_append",
            &[("n", 4), ("pages", 2), ("page_size", 2), ("d", 1)],
            &[
                ("k_new", vec![7., 8., 9., 10.]),
                ("v_new", vec![-7., -8., -9., -10.]),
                ("slots", vec![3., -1., 0., 4.]),
                ("k_cache_in", vec![1., 2., 3., 4.]),
                ("v_cache_in", vec![-1., -2., -3., -4.]),
            ],
        );
        assert_eq!(out["k_cache"], vec![9., 2., 3., 7.]);
        assert_eq!(out["v_cache"], vec![-9., -2., -3., -7.]);
        // the same slot twice: the later row wins
        let out = run(
            "kv_append",
            &[("n", 2), ("pages", 1), ("page_size", 2), ("d", 1)],
            &[
                ("k_new", vec![5., 6.]),
                ("v_new", vec![5., 6.]),
                ("slots", vec![1., 1.]),
                ("k_cache_in", vec![0., 0.]),
                ("v_cache_in", vec![0., 0.]),
            ],
        );
        assert_eq!(out["k_cache"], vec![0., 6.]);
    }

    #[test]
    fn argmax_takes_the_lowest_index_of_tied_maxima() {
        let out = run("argmax", &[("rows", 4), ("vocab", 3)], &[("logits", vec![1., 3., 3., 5., 0., 5., -1., -2., 2., 0., -0., 0.])]);
        assert_eq!(out["out"], vec![1., 0., 2., 0.]);
    }

    #[test]
    fn argmax_leaves_nan_out_and_orders_infinities() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        let logits = vec![nan, -1., -2., 3., nan, inf, nan, nan, nan, -inf, -inf, nan];
        let out = run("argmax", &[("rows", 4), ("vocab", 3)], &[("logits", logits)]);
        assert_eq!(out["out"], vec![1., 2., 0., 0.]);
        assert!(ignores_nan("argmax") && !ignores_nan("add"));
    }

    #[test]
    fn dense_rows_is_x_times_w_transposed() {
        // w = [[1, 2], [3, -1], [0, 1]], x = [[2, 1]]
        let out = run("dense_rows", &[("rows", 1), ("n", 3), ("k", 2)], &[("w", vec![1., 2., 3., -1., 0., 1.]), ("x", vec![2., 1.])]);
        assert_eq!(out["y"], vec![4., 5., 1.]);
    }

    #[test]
    fn affine_dequant_rows_reads_codes_across_word_boundaries() {
        // k = 32 codes of 3 bits = 96 bits = 3 words; code c is c % 8, except code 10 = 7 (0b111),
        // which straddles words 0 and 1: its low 2 bits are bits 30, 31 of word 0, its high bit
        // is bit 0 of word 1
        let codes: Vec<u64> = (0..32).map(|c| if c == 10 { 7 } else { c % 8 }).collect();
        // by hand, most significant first: code 10's low bits, codes 9 (1), 8 (0), 7 (7), ..., 0 (0)
        let word0: u64 = 0b11_001_000_111_110_101_100_011_010_001_000;
        // bit 0: code 10's high bit; then codes 11 (3), 12 (4), ... at bits 1-3, 4-6, ...
        let mut stream = [0u64; 3];
        for (c, code) in codes.iter().enumerate() {
            for b in 0..3 {
                let s = c * 3 + b;
                stream[s / 32] |= ((code >> b) & 1) << (s % 32);
            }
        }
        assert_eq!(stream[0], word0);
        assert_eq!(stream[1] & 0b1111, 0b0111, "code 11 (3) at bits 1-3 above code 10's high bit");
        let table: Vec<f64> = stream.iter().map(|w| *w as f64).collect();
        let out = run(
            "affine_dequant_rows",
            &[("n", 1), ("k", 32), ("vocab", 1), ("bits", 3), ("group", 32)],
            &[("table", table), ("scales", vec![0.5]), ("biases", vec![-1.0]), ("ids", vec![0.])],
        );
        let want: Vec<f64> = codes.iter().map(|c| 0.5 * *c as f64 - 1.0).collect();
        assert_eq!(out["out"], want);
        // 6 bits, two rows, two groups of 32; row 1 all ones (code 63) scaled by 2 and 3
        let ones = vec![u32::MAX as f64; 12];
        let zeros = vec![0.0; 12];
        let out = run(
            "affine_dequant_rows",
            &[("n", 2), ("k", 64), ("vocab", 2), ("bits", 6), ("group", 32)],
            &[
                ("table", [zeros, ones].concat()),
                ("scales", vec![1., 1., 2., 3.]),
                ("biases", vec![0.25, 0.5, 1., -1.]),
                ("ids", vec![1., 0.]),
            ],
        );
        assert_eq!(&out["out"][..32], &[127.0; 32]);
        assert_eq!(&out["out"][32..64], &[188.0; 32]);
        assert_eq!(&out["out"][64..96], &[0.25; 32]);
        assert_eq!(&out["out"][96..], &[0.5; 32]);
    }

    #[test]
    fn gemm_xwt_multiplies_by_the_transpose() {
        // x = [[1, 2, 3], [4, 5, 6]], w = [[1, 0, -1], [2, 1, 0]]: y = x . w^T
        let out =
            run("gemm_xwt", &[("m", 2), ("n", 2), ("k", 3)], &[("x", vec![1., 2., 3., 4., 5., 6.]), ("w", vec![1., 0., -1., 2., 1., 0.])]);
        assert_eq!(out["y"], vec![-2., 4., -2., 13.]);
    }

    #[test]
    fn gemm_xwt_is_each_sum_of_products_in_blocks_and_tails() {
        // whole numbers: every sum is exact in any order, so the blocked sums must equal the
        // plain ones; m, n and k around the blocks of rows (32), of W (8) and of lanes (8)
        for (m, n, k) in [(1, 1, 0), (1, 1, 1), (33, 9, 7), (65, 17, 8), (31, 7, 9), (40, 1, 33), (3, 20, 130)] {
            let value = |i: usize, salt: usize| ((i * 7919 + salt * 104_729) % 31) as f64 - 15.0;
            let a: Vec<f64> = (0..m * k).map(|i| value(i, 1)).collect();
            let w: Vec<f64> = (0..n * k).map(|i| value(i, 2)).collect();
            let symbols = [("m", m as i64), ("n", n as i64), ("k", k as i64)];
            let out = run("gemm_xwt", &symbols, &[("x", a.clone()), ("w", w.clone())]);
            let want: Vec<f64> =
                (0..m * n).map(|e| (0..k).map(|kk| a[e / n * k + kk] * w[e % n * k + kk]).fold(-0.0, |s, p| s + p)).collect();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&out["y"]), bits(&want), "m {m} n {n} k {k}");
        }
    }

    #[test]
    fn gemm_xwt_keeps_the_sign_of_a_sum_of_negative_zeros() {
        // every product -0 (0 times a negative): IEEE's sum, and the oracle's, is -0
        let out =
            run("gemm_xwt", &[("m", 1), ("n", 2), ("k", 11)], &[("x", vec![0.0; 11]), ("w", [vec![-1.0; 11], vec![1.0; 11]].concat())]);
        assert_eq!(out["y"][0].to_bits(), (-0.0f64).to_bits());
        assert_eq!(out["y"][1].to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn gemm_xwt_gives_the_same_bits_on_any_number_of_cores() {
        // rounded sums: the order of the adds shows in the bits, and must not follow the cores
        let (m, n, k) = (70, 13, 301);
        let a: Vec<f64> = (0..m * k).map(|i| ((i as f64) * 0.618_033_988_7).fract() - 0.5).collect();
        let w: Vec<f64> = (0..n * k).map(|i| ((i as f64) * 0.414_213_562_3).fract() - 0.5).collect();
        let symbols = [("m", m as i64), ("n", n as i64), ("k", k as i64)];
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| run("gemm_xwt", &symbols, &[("x", a.clone()), ("w", w.clone())]))["y"]
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(on(1), on(3));
    }

    /// Every build of `products` this CPU runs: the portable one, and the AVX2 and AVX-512
    /// ones where it has them.
    #[allow(clippy::type_complexity)]
    fn product_builds() -> Vec<(&'static str, Box<dyn Fn(&[f64], &[f64], (usize, usize, usize), &mut [f64])>)> {
        let mut builds: Vec<(&'static str, Box<dyn Fn(&[f64], &[f64], (usize, usize, usize), &mut [f64])>)> =
            vec![("portable", Box::new(|x, w, shape, out| super::products_by(x, w, shape, out, super::Portable)))];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2
                builds.push(("avx2", Box::new(|x, w, shape, out| unsafe { super::wide::products_avx2(x, w, shape, out) })));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F
                builds.push(("avx512", Box::new(|x, w, shape, out| unsafe { super::wide::products_avx512(x, w, shape, out) })));
            }
        }
        builds
    }

    #[test]
    fn gemm_xwt_gives_the_same_bits_with_and_without_wide_lanes() {
        // rounded sums, whose bits show the order of the adds: every build gives `dot`'s own
        // sums, element by element; m and n around the 4-by-4 blocks, k around the 8 lanes
        let shapes = [(5, 11, 203, 4), (9, 13, 301, 8), (4, 4, 8, 8), (7, 9, 3, 8), (6, 5, 0, 8), (1, 4, 17, 8), (8, 12, 64, 12)];
        for (m, n, k, w_rows) in shapes {
            let x: Vec<f64> = (0..m * k).map(|i| ((i as f64) * 0.618_033_988_7).fract() - 0.5).collect();
            let w: Vec<f64> = (0..n * k).map(|i| ((i as f64) * 0.414_213_562_3).fract() - 0.5).collect();
            let want: Vec<u64> = (0..m * n).map(|e| super::dot(&x[e / n * k..][..k], &w[e % n * k..][..k]).to_bits()).collect();
            for (name, products) in product_builds() {
                let mut out = vec![f64::NAN; m * n];
                products(&x, &w, (n, k, w_rows), &mut out);
                assert_eq!(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "{name}: m {m} n {n} k {k}");
            }
        }
    }

    #[test]
    fn gemm_xwt_builds_keep_the_sign_of_a_sum_of_negative_zeros() {
        // 4 by 4, the wide builds' blocks: each lane starts at -0 there too
        let (m, n, k) = (4, 4, 19);
        let w: Vec<f64> = (0..n * k).map(|i| if i / k % 2 == 0 { -1.0 } else { 1.0 }).collect();
        for (name, products) in product_builds() {
            let mut out = vec![f64::NAN; m * n];
            products(&vec![0.0; m * k], &w, (n, k, 8), &mut out);
            let signs: Vec<bool> = out.iter().map(|v| *v == 0.0 && v.is_sign_negative()).collect();
            assert_eq!(signs, [true, false, true, false].repeat(m), "{name}");
        }
    }

    #[test]
    fn cast_passes_values_through() {
        let out = run("cast", &[("rows", 1), ("k", 3)], &[("in", vec![1.5, -2.0, 65504.0])]);
        assert_eq!(out["out"], vec![1.5, -2.0, 65504.0]);
    }

    #[test]
    fn add_adds_elementwise() {
        let out = run("add", &[("rows", 2), ("k", 1)], &[("a", vec![1.0, 2.0]), ("b", vec![3.0, -5.0])]);
        assert_eq!(out["out"], vec![4.0, -3.0]);
    }

    #[test]
    fn silu_mul_at_zero_and_at_ln3() {
        // silu(0) = 0; silu(ln 3) = ln 3 / (1 + 1/3) = 0.75 ln 3, times up = 2 gives 1.5 ln 3
        let ln3 = 3f64.ln();
        let out = run("silu_mul", &[("rows", 1), ("k", 2)], &[("gate", vec![0.0, ln3]), ("up", vec![5.0, 2.0])]);
        assert_eq!(out["out"][0], 0.0);
        assert!((out["out"][1] - 1.5 * ln3).abs() < 1e-15);
        // far negative gates go to zero, far positive ones to the gate itself
        let out = run("silu_mul", &[("rows", 1), ("k", 2)], &[("gate", vec![-800.0, 800.0]), ("up", vec![1.0, 1.0])]);
        assert_eq!(out["out"], vec![-0.0, 800.0]);
    }

    #[test]
    fn copy_cols_takes_the_window_of_every_row() {
        let input: Vec<f64> = (0..8).map(f64::from).collect();
        let out = run_with("copy_cols", &[("rows", 2), ("k", 4), ("width", 2)], &[("start", 1.0)], &[("in", input)]);
        assert_eq!(out["out"], vec![1.0, 2.0, 5.0, 6.0]);
    }

    #[test]
    fn rms_norm_by_hand() {
        // row [2, -2]: mean of squares 4, + eps 5 = 9, so x / 3 * weight; a zero row stays zero
        let out = run_with(
            "rms_norm",
            &[("rows", 2), ("k", 2)],
            &[("eps", 5.0)],
            &[("x", vec![2.0, -2.0, 0.0, 0.0]), ("weight", vec![1.0, 3.0])],
        );
        assert_eq!(out["out"], vec![2.0 / 3.0, -2.0, 0.0, 0.0]);
        // eps is taken as the kernel's float: 0.1 is 0.100000001490116... there
        let out = run_with("rms_norm", &[("rows", 1), ("k", 1)], &[("eps", 0.1)], &[("x", vec![0.3]), ("weight", vec![1.0])]);
        assert_eq!(out["out"][0], 0.3 / (0.09 + 0.1f32 as f64).sqrt());
    }

    #[test]
    fn add_rms_norm_by_hand() {
        let out = run_with(
            "add_rms_norm",
            &[("rows", 1), ("k", 2)],
            &[("eps", 5.0)],
            &[("x", vec![1.0, -3.0]), ("residual", vec![1.0, 1.0]), ("weight", vec![1.0, 3.0])],
        );
        assert_eq!(out["sum"], vec![2.0, -2.0]);
        assert_eq!(out["out"], vec![2.0 / 3.0, -2.0]);
    }

    #[test]
    fn rope_in_both_layouts_by_hand() {
        // d = 4: inverse frequencies 1 and 10000^(-1/2) = 0.01, each over 2 pi as an f32 number
        // of turns; at position 1 the angles are 2 pi times those
        let tau = std::f64::consts::TAU;
        let a0 = tau * (1.0 / tau) as f32 as f64;
        let a1 = tau * (0.01 / tau) as f32 as f64;
        assert!((a0 - 1.0).abs() < 1e-7 && (a1 - 0.01).abs() < 1e-9);
        let symbols = [("rows", 1), ("heads", 1), ("d", 4)];
        let x = ("x", vec![1.0, 0.0, 0.0, 1.0]);
        let close = |got: &[f64], want: &[f64]| got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-15);
        let neox = run_with("rope", &symbols, &[("theta", 10000.0), ("layout", 0.0)], &[x.clone(), ("positions", vec![1.0])]);
        // pairs (0, 2) at angle a0 and (1, 3) at angle a1
        assert!(close(&neox["out"], &[a0.cos(), -a1.sin(), a0.sin(), a1.cos()]), "{:?}", neox["out"]);
        let interleaved = run_with("rope", &symbols, &[("theta", 10000.0), ("layout", 1.0)], &[x.clone(), ("positions", vec![1.0])]);
        // pairs (0, 1) at angle a0 and (2, 3) at angle a1
        assert!(close(&interleaved["out"], &[a0.cos(), a0.sin(), -a1.sin(), a1.cos()]), "{:?}", interleaved["out"]);
        // position 0 is the identity
        let still = run_with("rope", &symbols, &[("theta", 10000.0), ("layout", 1.0)], &[x, ("positions", vec![0.0])]);
        assert_eq!(still["out"], vec![1.0, 0.0, 0.0, 1.0]);
        // whole quarter turns are exact: a half turn is exactly -1 and 0
        assert_eq!(sin_cos_turns(0.5), (0.0, -1.0));
        assert_eq!(sin_cos_turns(1e6 + 0.25), (1.0, -0.0));
    }

    #[test]
    fn conv1d_causal_runs_over_the_state_then_the_tokens() {
        // width 3 on one channel: state rows 1, 2 (oldest first), tokens 3, 4, taps 1, 10, 100
        let inputs = |state: Vec<f64>, tokens: Vec<f64>| {
            vec![("x", tokens), ("weight", vec![1.0, 10.0, 100.0]), ("bias", vec![0.5]), ("state_in", state)]
        };
        let plain = [("has_bias", 1.0), ("silu", 0.0)];
        let out = run_with("conv1d_causal", &[("tokens", 2), ("channels", 1), ("width", 3)], &plain, &inputs(vec![1., 2.], vec![3., 4.]));
        assert_eq!(out["out"], vec![0.5 + 1. + 20. + 300., 0.5 + 2. + 30. + 400.]);
        assert_eq!(out["state_out"], vec![3., 4.]);
        // one token: the state shifts up by one row and the token joins it; no bias, then silu
        let gated = [("has_bias", 0.0), ("silu", 1.0)];
        let out = run_with("conv1d_causal", &[("tokens", 1), ("channels", 1), ("width", 3)], &gated, &inputs(vec![1., 2.], vec![-0.03]));
        let v: f64 = 1. + 20. - 3.;
        assert_eq!(out["out"], vec![v / (1. + (-v).exp())]);
        assert_eq!(out["state_out"], vec![2., -0.03]);
        // two channels: each runs over its own column of the state and the tokens
        let out = run_with(
            "conv1d_causal",
            &[("tokens", 1), ("channels", 2), ("width", 2)],
            &plain,
            &[("x", vec![3., 5.]), ("weight", vec![1., 2., -1., 1.]), ("bias", vec![0., 1.]), ("state_in", vec![7., 11.])],
        );
        assert_eq!(out["out"], vec![7. + 6., 1. - 11. + 5.]);
        assert_eq!(out["state_out"], vec![3., 5.]);
    }

    #[test]
    fn delta_rule_step_by_hand() {
        // one head, dk = 2, dv = 1: S = [2, 4] decays by 1/2 to [1, 2]; k = [1, 0] recalls 1;
        // beta 1/2 of (v = 3) - 1 is 1, added along k: [2, 2]; q = [1, 1] at scale 1/2 reads 2
        let out = run_with(
            "delta_rule_step",
            &[("heads", 1), ("k_heads", 1), ("dk", 2), ("dv", 1)],
            &[("scale", 0.5)],
            &[
                ("state_in", vec![2., 4.]),
                ("q", vec![1., 1.]),
                ("k", vec![1., 0.]),
                ("v", vec![3.]),
                ("g", vec![0.5f64.ln()]),
                ("beta", vec![0.5]),
            ],
        );
        assert!((out["state_out"][0] - 2.).abs() < 1e-15 && (out["state_out"][1] - 2.).abs() < 1e-15, "{:?}", out["state_out"]);
        assert!((out["out"][0] - 2.).abs() < 1e-15);
        // two value heads share the one key head; head 1's beta 0 and g 0 leave its state as it was
        let out = run_with(
            "delta_rule_step",
            &[("heads", 2), ("k_heads", 1), ("dk", 1), ("dv", 2)],
            &[("scale", 1.0)],
            &[
                ("state_in", vec![1., 2., 3., 4.]),
                ("q", vec![2.]),
                ("k", vec![1.]),
                ("v", vec![5., 5., 9., 9.]),
                ("g", vec![0., 0.]),
                ("beta", vec![1., 0.]),
            ],
        );
        assert_eq!(out["state_out"], vec![5., 5., 3., 4.]);
        assert_eq!(out["out"], vec![10., 10., 6., 8.]);
    }

    #[test]
    fn l2_norm_by_hand() {
        let out = run_with("l2_norm", &[("rows", 2), ("k", 2)], &[("eps", 0.0)], &[("x", vec![3., -4., 0., 5.])]);
        assert_eq!(out["out"], vec![0.6, -0.8, 0., 1.]);
        // eps keeps a zero row zero, and is taken as the kernel's float
        let out = run_with("l2_norm", &[("rows", 2), ("k", 1)], &[("eps", 0.1)], &[("x", vec![0., 0.3])]);
        assert_eq!(out["out"], vec![0., 0.3 / (0.09 + 0.1f32 as f64).sqrt()]);
    }

    #[test]
    fn quant_matvec_dequantises_every_row_of_w() {
        // k = 32 codes of 4 bits in 4 words; row 0 all code 1, row 1 codes 0..7 repeated; groups of 32
        let ones = vec![0x1111_1111u32 as f64; 4];
        let ramp = vec![0x7654_3210u32 as f64; 4];
        let symbols = [("rows", 2), ("n", 2), ("k", 32), ("bits", 4), ("group", 32)];
        let x: Vec<f64> = [vec![1.0; 32], (0..32).map(f64::from).collect()].concat();
        let out = run(
            "quant_matvec",
            &symbols,
            &[("x", x), ("w", [ones, ramp].concat()), ("scales", vec![0.5, 2.]), ("biases", vec![-1., 0.25])],
        );
        // row 0 of W is -0.5 everywhere, row 1 is 2 (c % 8) + 0.25
        let w1 = |c: usize| 2. * (c % 8) as f64 + 0.25;
        let want = [-16., (0..32).map(w1).sum(), (0..32).map(|c| -0.5 * c as f64).sum(), (0..32).map(|c| c as f64 * w1(c)).sum()];
        assert_eq!(out["y"], want.to_vec());
    }

    #[test]
    fn attention_prefill_is_causal_grouped_and_max_shifted() {
        // two queries, the last two of two positions, one head, d = 1: query 0 sees key 0 alone;
        // query 1 sees keys 0 and 1, scores 0 and ln 3 at scale 1: weights 1/4 and 3/4
        let ln3 = 3f64.ln();
        let out = run_with(
            "attention_prefill",
            &[("q_len", 2), ("heads", 1), ("kv_len", 2), ("kv_heads", 1), ("d", 1)],
            &[("scale", 1.0)],
            &[("q", vec![1., 1.]), ("k", vec![0., ln3 as f32 as f64]), ("v", vec![1., 5.])],
        );
        assert_eq!(out["out"][0], 1.);
        assert!((out["out"][1] - (1. + 15.) / 4.).abs() < 1e-6, "{:?}", out["out"]);
        // one query after a cached key, two heads on one KV head, scores of 1000 and 0: no
        // overflow, the larger one takes all the weight
        let out = run_with(
            "attention_prefill",
            &[("q_len", 1), ("heads", 2), ("kv_len", 2), ("kv_heads", 1), ("d", 1)],
            &[("scale", 1.0)],
            &[("q", vec![1000., -1000.]), ("k", vec![1., 0.]), ("v", vec![2., 7.])],
        );
        assert_eq!(out["out"], vec![2., 7.]);
    }

    #[test]
    fn rms_gated_by_hand() {
        // row [2, -2]: mean of squares 4, + eps 5 = 9: x / 3 * weight, times silu(0) = 0 and
        // silu(ln 3) = 0.75 ln 3
        let ln3 = 3f64.ln();
        let out = run_with(
            "rms_gated",
            &[("rows", 1), ("k", 2)],
            &[("eps", 5.0)],
            &[("x", vec![2., -2.]), ("z", vec![0., ln3]), ("weight", vec![1., 3.])],
        );
        assert_eq!(out["out"][0], 0.);
        assert!((out["out"][1] - (-2. * 0.75 * ln3)).abs() < 1e-15);
    }
}
