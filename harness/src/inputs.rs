//! Seeded input generation. The same seed gives the same bytes on every backend and every
//! machine: a small in-tree generator (splitmix64) and normals from a sum of uniforms, with
//! no libm call, so neither a dependency upgrade nor a platform's math library can change
//! the inputs. A golden-value test pins the streams.

use engine::DType;
use engine::shape_expr::{Expr, Symbols};
use rayon::prelude::*;

pub mod device;
mod nonfinite;
mod specials;
mod written;

pub use nonfinite::{Planting, Sites, nan_encodings};
pub use written::Written;

const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// Tensors of at least this many elements are generated in parallel pieces of this many
/// (the same bytes as one serial stream); smaller ones stay on the calling thread, where a
/// thread pool would cost more than it saves.
const PARALLEL_ELEMENTS: usize = 1 << 20;

/// Normals made side by side (`SeededStream::next_normals`).
const NORMALS_AT_ONCE: usize = 8;

/// splitmix64: tiny, fast, and every output is a bijection of the state.
#[derive(Clone, Debug)]
pub struct SeededStream {
    state: u64,
}

impl SeededStream {
    pub fn new(seed: u64) -> SeededStream {
        SeededStream { state: seed }
    }

    /// The stream from `seed` after `draws` draws: splitmix64's state is a counter, so any
    /// place in a stream is one multiply away, and a tensor's elements can be made in
    /// parallel pieces whose bytes are exactly the serial stream's.
    pub fn at(seed: u64, draws: u64) -> SeededStream {
        SeededStream { state: seed.wrapping_add(draws.wrapping_mul(GOLDEN_GAMMA)) }
    }

    /// This stream after `draws` more draws, made or not: where a later part of it begins,
    /// so that parts whose draw counts are known can be drawn in parallel, each from its place.
    pub fn skipped(&self, draws: u64) -> SeededStream {
        SeededStream { state: self.state.wrapping_add(draws.wrapping_mul(GOLDEN_GAMMA)) }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix(self.state)
    }

    /// Uniform in [0, 1), 53 bits.
    #[inline]
    pub fn next_unit(&mut self) -> f64 {
        unit_of(self.next_u64())
    }

    /// Approximately standard normal: the sum of 12 uniforms minus 6 (Irwin-Hall), exact
    /// arithmetic only; its tails end at +-6, which keeps inputs in a known finite range.
    #[inline]
    pub fn next_normal(&mut self) -> f64 {
        // the twelve draws are independent (the state is a counter), so they are mixed side
        // by side; the sum stays in draw order, each add rounded as before
        let base = self.state;
        self.state = base.wrapping_add(12u64.wrapping_mul(GOLDEN_GAMMA));
        let draws: [f64; 12] = std::array::from_fn(|i| unit_of(mix(base.wrapping_add((i as u64 + 1).wrapping_mul(GOLDEN_GAMMA)))));
        draws.iter().fold(0.0, |sum, u| sum + u) - 6.0
    }

    /// The next `N` draws of `next_normal`, the same values: the `N` sums' adds do not wait on
    /// one another, so they overlap where one normal at a time waited on each of its 11 adds
    /// (normals were a third of the speed of uniforms, and gigabyte inputs are normals).
    #[inline(always)]
    pub fn next_normals<const N: usize>(&mut self) -> [f64; N] {
        let base = self.state;
        self.state = base.wrapping_add((12 * N as u64).wrapping_mul(GOLDEN_GAMMA));
        let mut sums = [0.0; N];
        for draw in 0..12 {
            for (element, sum) in sums.iter_mut().enumerate() {
                *sum += unit_of(mix(base.wrapping_add(((element * 12 + draw) as u64 + 1).wrapping_mul(GOLDEN_GAMMA))));
            }
        }
        sums.map(|sum| sum - 6.0)
    }

    /// Uniform integer in [low, high) (multiply-shift, no modulo bias worth naming).
    pub fn next_int(&mut self, low: i64, high: i64) -> i64 {
        int_of(self.next_u64(), low, high)
    }
}

/// A draw as an integer in [low, high) (multiply-shift).
#[inline(always)]
fn int_of(draw: u64, low: i64, high: i64) -> i64 {
    // in i128: no range of two i64 bounds overflows there, and the values of every range
    // that fits i64 are what they always were
    let range = (high as i128 - low as i128) as u128;
    (low as i128 + ((draw as u128 * range) >> 64) as i128) as i64
}

/// splitmix64's output function of a state.
#[inline(always)]
fn mix(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A draw's top 53 bits as a uniform in [0, 1) (through i64: they fit, and the conversion is
/// one instruction where u64's is several).
#[inline(always)]
fn unit_of(draw: u64) -> f64 {
    ((draw >> 11) as i64) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The seed of one tensor of one case: stable under reordering of contracts and records.
pub fn tensor_seed(run_seed: u64, op: &str, tensor: &str, case_index: usize) -> u64 {
    // FNV-1a over the names, then mixed with the case and the run seed
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in op.bytes().chain([0]).chain(tensor.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut mix = SeededStream::new(h ^ run_seed.rotate_left(17) ^ (case_index as u64).wrapping_mul(0xd6e8_feb8_6659_fd93));
    mix.next_u64()
}

/// How a contract fills one input tensor: a generator, then modifiers that plant the
/// values an op's classic bugs need (`normal(0, 1) | zero_row(1)`, `int(0, vocab) | edges`).
#[derive(Clone, Debug, PartialEq)]
pub struct InputSpec {
    pub generator: Generator,
    pub modifiers: Vec<Modifier>,
}

/// A row of the first axis: by index, or the tensor's last (`last`), which every case has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Row {
    Index(usize),
    Last,
}

/// A value `fill_row` writes: a number, or one the tensor's type decides.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    Number(f64),
    /// A shape expression's value (`pages * page_size`: the first slot past a cache).
    Shape(Expr),
    /// The largest finite value of the type (`max`), or its negative (`-max`).
    Max {
        negative: bool,
    },
    /// The smallest positive subnormal of the type (`tiny`).
    Tiny,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Modifier {
    /// Row i (along the first axis) is all zeros.
    ZeroRow(Row),
    /// The first element is the range's low end and the last its high end (`int` only).
    Edges,
    /// Every element of row i is multiplied by s (large magnitudes in one row).
    ScaleRow(Row, f64),
    /// Every element of row i is one value (`-0`, `max`, `tiny`, a number).
    FillRow(Row, Fill),
    /// Every element of row i is minus its magnitude, a zero becoming -1: a strictly negative
    /// row, where a max that starts at 0 instead of -inf shows.
    NegativeRow(Row),
    /// Row i times 2^-3 of the type's smallest normal: magnitudes below 8 become subnormal.
    SubnormalRow(Row),
    /// Row i in the top 1/32 of the type's finite range, each element keeping its sign.
    NearMaxRow(Row),
    /// Row i uniform in [low, high) (whole numbers under an `int` generator, so exact ties
    /// and boundaries such as 65520 occur), clamped to the type's finite range.
    BandRow(Row, f64, f64),
    /// Row i sorted ascending (or descending): every chunk of it holds its largest element
    /// last (or first), and every element past a chunk is larger (or smaller) than the chunk.
    SortedRow(Row, bool),
    /// Every odd element repeats the even one before it: adjacent duplicates (ties).
    Ties,
    /// In every chunk of `n` elements of every row (the whole row without `n`), the largest
    /// (or smallest) element is swapped into the chunk's last place.
    ExtremeLast { largest: bool, chunk: Option<Expr> },
    /// Row i's last element becomes the row's largest plus `gap`: one element dominating the
    /// rest (an attention sink), so that in a max-shifted sum every other weight underflows,
    /// and a max that misses the last element overflows instead of rounding differently.
    OutlierLast(Row, f64),
    /// What gate 1 plants into an input (`Sites`): NaNs of several encodings in most rows,
    /// +Inf at the last element, -Inf at a seeded element between.
    NonFinite,
    /// Special finite values (signed zeros, subnormals, the smallest normal, the neighbours of
    /// 1, a tiny value) in a few elements of every row (`specials`). Every float input gets
    /// them first, before its other modifiers, unless it names `specials` elsewhere in its
    /// chain or opts out.
    Specials,
    /// No special values, for the reason given (`no_specials(why)`): an input whose values
    /// carry a structure the op relies on.
    NoSpecials(String),
}

impl InputSpec {
    pub fn parse(text: &str) -> Result<InputSpec, String> {
        let mut parts = text.split('|');
        let generator = Generator::parse(parts.next().unwrap_or(""))?;
        let mut modifiers = Vec::new();
        for part in parts {
            modifiers.push(Modifier::parse(part.trim(), &generator)?);
        }
        Ok(InputSpec { generator, modifiers })
    }

    /// Whether the special values go in first, by default: unless the spec places them itself
    /// or opts out.
    fn specials_first(&self) -> bool {
        !self.modifiers.iter().any(|m| matches!(m, Modifier::Specials | Modifier::NoSpecials(_)))
    }

    pub fn symbols(&self) -> Vec<&str> {
        let mut symbols = self.generator.symbols();
        for m in &self.modifiers {
            if let Modifier::ExtremeLast { chunk: Some(e), .. } = m {
                symbols.extend(e.symbols());
            }
        }
        symbols
    }

    /// The bytes of a tensor of `dtype` and `shape` from `seed`.
    pub fn generate(&self, dtype: DType, shape: &[usize], seed: u64, symbols: &Symbols) -> Result<Vec<u8>, String> {
        self.generate_on(None, dtype, shape, seed, symbols)
    }

    /// `generate`'s bytes, the generator's values drawn on `device` where it takes them (a
    /// large tensor on a GPU), the modifiers applied on the host as ever.
    pub fn generate_on(
        &self,
        device: Option<&device::DeviceDraw>,
        dtype: DType,
        shape: &[usize],
        seed: u64,
        symbols: &Symbols,
    ) -> Result<Vec<u8>, String> {
        let elements: usize = shape.iter().product();
        let mut bytes = match device.and_then(|device| device.generate(&self.generator, dtype, elements, seed, symbols)) {
            Some(drawn) => drawn?,
            None => self.generator.generate(dtype, elements, seed, symbols)?,
        };
        self.modify(dtype, shape, seed, symbols, &mut bytes, None)?;
        Ok(bytes)
    }

    /// `generate`'s bytes drawn on `device` into a tensor of its own (a large tensor on a GPU,
    /// `DeviceDraw::takes`), read back and modified on the host, with the words the modifiers
    /// wrote: `DeviceDraw::seal_drawn` sends those alone up again. `None` where the device
    /// does not draw them.
    pub fn draw_into(
        &self,
        device: &device::DeviceDraw,
        dtype: DType,
        shape: &[usize],
        seed: u64,
        symbols: &Symbols,
    ) -> Option<Result<device::Drawn, String>> {
        let elements: usize = shape.iter().product();
        device::DeviceDraw::takes(&self.generator, dtype, elements).then(|| {
            let (tensor, mut bytes) = device.draw_tensor(&self.generator, dtype, shape, seed, symbols)?;
            let written = Written::new(bytes.len());
            self.modify(dtype, shape, seed, symbols, &mut bytes, Some(&written))?;
            Ok(device::Drawn { tensor, bytes, written })
        })
    }

    /// `generate`'s bytes in each of `dtypes`, the generator's values drawn once for all of
    /// them: the records of an op that take a table of gigabytes in two types draw its
    /// billions of normals once, not once a type.
    pub fn generate_each(&self, dtypes: &[DType], shape: &[usize], seed: u64, symbols: &Symbols) -> Result<Vec<Vec<u8>>, String> {
        let elements: usize = shape.iter().product();
        let mut each = self.generator.generate_each(dtypes, elements, seed, symbols)?;
        for (dtype, bytes) in dtypes.iter().zip(each.iter_mut()) {
            self.modify(*dtype, shape, seed, symbols, bytes, None)?;
        }
        Ok(each)
    }

    /// The modifiers' changes to a tensor's generated bytes, in order, marked in `written`
    /// where it is given.
    fn modify(
        &self,
        dtype: DType,
        shape: &[usize],
        seed: u64,
        symbols: &Symbols,
        bytes: &mut [u8],
        written: Option<&Written>,
    ) -> Result<(), String> {
        let rows = shape.first().copied().unwrap_or(1).max(1);
        let mut tensor = Elements { dtype, bytes, rows, written };
        if self.specials_first() && dtype.is_float() {
            Modifier::Specials.apply(&mut tensor, &self.generator, symbols, &mut specials_stream(seed))?;
        }
        for (index, modifier) in self.modifiers.iter().enumerate() {
            // each modifier draws from a stream of its own, so adding one changes no other's values
            let mut stream = match modifier {
                Modifier::Specials => specials_stream(seed),
                _ => SeededStream::new(seed ^ 0x6d6f_6469_6669_6572u64.wrapping_mul(index as u64 + 1)),
            };
            modifier.apply(&mut tensor, &self.generator, symbols, &mut stream)?;
        }
        Ok(())
    }
}

/// The special values' stream: one of its own, wherever they are placed in the chain.
fn specials_stream(seed: u64) -> SeededStream {
    SeededStream::new(seed ^ 0x7370_6563_6961_6c21)
}

/// A tensor's bytes seen as elements and rows of its first axis, and where it is given, the
/// record of what a modifier wrote: each modifier marks what it writes (`wrote`), `swap` marks
/// its own.
struct Elements<'a> {
    dtype: DType,
    bytes: &'a mut [u8],
    rows: usize,
    written: Option<&'a Written>,
}

impl Elements<'_> {
    fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }

    fn row_len(&self) -> usize {
        self.len() / self.rows
    }

    fn get(&self, i: usize) -> f64 {
        self.dtype.decode(&self.bytes[i * self.dtype.size()..])
    }

    fn set(&mut self, i: usize, value: f64) {
        let size = self.dtype.size();
        self.dtype.encode(value, &mut self.bytes[i * size..(i + 1) * size]);
    }

    /// Elements `range` were (or may have been) written.
    fn wrote(&self, range: std::ops::Range<usize>) {
        if let Some(written) = self.written {
            let size = self.dtype.size();
            written.mark(range.start * size..range.end * size);
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.wrote(a..a + 1);
        self.wrote(b..b + 1);
        let size = self.dtype.size();
        for k in 0..size {
            self.bytes.swap(a * size + k, b * size + k);
        }
    }

    /// Each element of `range` set from one draw of `stream` (in element order) and its value
    /// before, in parallel pieces each from its place in the stream: the bytes, and where
    /// `stream` is left, are those of one element after another (a row of tf_sum_partials'
    /// GPU-only case holds 67 M elements).
    fn set_each_drawn(&mut self, range: std::ops::Range<usize>, stream: &mut SeededStream, value: impl Fn(u64, f64) -> f64 + Sync) {
        let (dtype, size, origin) = (self.dtype, self.dtype.size(), stream.clone());
        let set_piece = |first: usize, piece: &mut [u8]| {
            let mut stream = origin.skipped(first as u64);
            for element in piece.chunks_exact_mut(size) {
                let draw = stream.next_u64();
                let old = dtype.decode(element);
                dtype.encode(value(draw, old), element);
            }
        };
        let bytes = &mut self.bytes[range.start * size..range.end * size];
        if range.len() <= PARALLEL_ELEMENTS {
            set_piece(0, bytes);
        } else {
            bytes.par_chunks_mut(PARALLEL_ELEMENTS * size).enumerate().for_each(|(i, piece)| set_piece(i * PARALLEL_ELEMENTS, piece));
        }
        *stream = origin.skipped(range.len() as u64);
    }

    /// The element range of a row, or why there is no such row.
    fn row(&self, row: Row) -> Result<std::ops::Range<usize>, String> {
        let i = match row {
            Row::Index(i) if i >= self.rows => return Err(format!("row {i} of a tensor of {} rows", self.rows)),
            Row::Index(i) => i,
            Row::Last => self.rows - 1,
        };
        Ok(i * self.row_len()..(i + 1) * self.row_len())
    }
}

/// The largest finite value and the smallest normal and subnormal magnitudes of a float type.
fn float_limits(dtype: DType) -> Option<(f64, f64, f64)> {
    match dtype {
        DType::F32 => Some((f32::MAX as f64, f32::MIN_POSITIVE as f64, 2f64.powi(-149))),
        DType::F16 => Some((65504.0, 2f64.powi(-14), 2f64.powi(-24))),
        DType::Bf16 => Some((half::bf16::MAX.to_f64(), 2f64.powi(-126), 2f64.powi(-133))),
        _ => None,
    }
}

impl Modifier {
    fn name(&self) -> &'static str {
        match self {
            Modifier::SubnormalRow(_) => "subnormal_row",
            Modifier::NearMaxRow(_) => "near_max_row",
            Modifier::NonFinite => "nonfinite",
            Modifier::Specials => "specials",
            _ => "this modifier",
        }
    }

    fn parse(part: &str, generator: &Generator) -> Result<Modifier, String> {
        // a reason is free text: its commas and parentheses are its own
        if let Some(reason) = part.strip_prefix("no_specials").map(str::trim) {
            return match reason.strip_prefix('(').and_then(|r| r.strip_suffix(')')).map(str::trim) {
                Some(why) if !why.is_empty() => Ok(Modifier::NoSpecials(why.to_string())),
                _ => Err(format!("`{part}`: an input opts out of the special values with a reason: `no_specials(why)`")),
            };
        }
        let (name, args) = match part.split_once('(') {
            Some((name, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(|| format!("`{part}`: missing `)`"))?;
                (name.trim(), inner.split(',').map(str::trim).filter(|a| !a.is_empty()).collect::<Vec<_>>())
            }
            None => (part, Vec::new()),
        };
        let row = |a: &str| match a {
            "last" => Ok(Row::Last),
            _ => a.parse::<usize>().map(Row::Index).map_err(|_| format!("`{part}`: `{a}` is not a row index (a number or `last`)")),
        };
        let number =
            |a: &str| a.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| format!("`{part}`: `{a}` is not a finite number"));
        match (name, args.as_slice()) {
            ("zero_row", [i]) => Ok(Modifier::ZeroRow(row(i)?)),
            ("scale_row", [i, s]) => Ok(Modifier::ScaleRow(row(i)?, number(s)?)),
            ("fill_row", [i, v]) => {
                let fill = match *v {
                    "max" => Fill::Max { negative: false },
                    "-max" => Fill::Max { negative: true },
                    "tiny" => Fill::Tiny,
                    other => match other.parse::<f64>() {
                        Ok(_) => Fill::Number(number(other)?),
                        Err(_) => Fill::Shape(
                            Expr::parse(other).map_err(|e| format!("`{part}`: `{other}` is not a number or a shape expression: {e}"))?,
                        ),
                    },
                };
                Ok(Modifier::FillRow(row(i)?, fill))
            }
            ("negative_row", [i]) => Ok(Modifier::NegativeRow(row(i)?)),
            ("subnormal_row", [i]) => Ok(Modifier::SubnormalRow(row(i)?)),
            ("near_max_row", [i]) => Ok(Modifier::NearMaxRow(row(i)?)),
            ("band_row", [i, low, high]) => {
                let (low, high) = (number(low)?, number(high)?);
                if low >= high {
                    return Err(format!("`{part}`: empty range"));
                }
                Ok(Modifier::BandRow(row(i)?, low, high))
            }
            ("ascending_row", [i]) => Ok(Modifier::SortedRow(row(i)?, true)),
            ("descending_row", [i]) => Ok(Modifier::SortedRow(row(i)?, false)),
            ("ties", []) => Ok(Modifier::Ties),
            ("max_last" | "min_last", _) if args.len() <= 1 => {
                let chunk = args.first().map(|a| Expr::parse(a).map_err(|e| format!("`{part}`: {e}"))).transpose()?;
                Ok(Modifier::ExtremeLast { largest: name == "max_last", chunk })
            }
            ("outlier_last", [i, gap]) => Ok(Modifier::OutlierLast(row(i)?, number(gap)?)),
            ("nonfinite", []) => Ok(Modifier::NonFinite),
            ("specials", []) => Ok(Modifier::Specials),
            ("edges", []) if generator.is_integer() => Ok(Modifier::Edges),
            ("edges", []) => Err(format!("`{part}` applies to int(...) inputs only")),
            _ => Err(format!(
                "unknown modifier `{part}` (zero_row(i), scale_row(i, s), fill_row(i, v), negative_row(i), subnormal_row(i), \
                 near_max_row(i), band_row(i, low, high), ascending_row(i), descending_row(i), ties, max_last(n), min_last(n), \
                 outlier_last(i, gap), edges, nonfinite, specials, no_specials(why))"
            )),
        }
    }

    fn apply(&self, t: &mut Elements, generator: &Generator, symbols: &Symbols, stream: &mut SeededStream) -> Result<(), String> {
        let limits = float_limits(t.dtype);
        let float_only = matches!(self, Modifier::SubnormalRow(_) | Modifier::NearMaxRow(_) | Modifier::NonFinite | Modifier::Specials);
        if float_only && limits.is_none() {
            return Err(format!("{} applies to float tensors, not {}", self.name(), t.dtype));
        }
        self.mark_writes(t)?;
        match self {
            Modifier::ZeroRow(r) => t.row(*r)?.for_each(|i| t.set(i, 0.0)),
            Modifier::ScaleRow(r, s) => t.row(*r)?.for_each(|i| t.set(i, t.get(i) * s)),
            Modifier::FillRow(r, fill) => {
                let value = match (fill, limits) {
                    (Fill::Number(v), _) => *v,
                    (Fill::Shape(e), _) => e.evaluate(symbols)? as f64,
                    (Fill::Max { negative }, Some((max, _, _))) => {
                        if *negative {
                            -max
                        } else {
                            max
                        }
                    }
                    (Fill::Tiny, Some((_, _, tiny))) => tiny,
                    (_, None) => return Err(format!("`max` and `tiny` are values of float tensors, not {}", t.dtype)),
                };
                t.row(*r)?.for_each(|i| t.set(i, value));
            }
            Modifier::NegativeRow(r) => {
                for i in t.row(*r)? {
                    t.set(i, -t.get(i).abs());
                    if t.get(i) == 0.0 {
                        t.set(i, -1.0);
                    }
                }
            }
            Modifier::SubnormalRow(r) => {
                let scale = limits.map_or(1.0, |(_, normal, _)| normal / 8.0);
                t.row(*r)?.for_each(|i| t.set(i, t.get(i) * scale));
            }
            Modifier::NearMaxRow(r) => {
                let max = limits.map_or(f64::MAX, |(max, _, _)| max);
                t.set_each_drawn(t.row(*r)?, stream, |draw, old| {
                    let magnitude = max * (1.0 - unit_of(draw) / 32.0);
                    if old < 0.0 { -magnitude } else { magnitude }
                });
            }
            Modifier::BandRow(r, low, high) => {
                let max = limits.map_or(f64::MAX, |(max, _, _)| max);
                let integer = generator.is_integer();
                t.set_each_drawn(t.row(*r)?, stream, |draw, _| {
                    let value = if integer {
                        int_of(draw, low.ceil() as i64, high.ceil() as i64) as f64
                    } else {
                        low + (high - low) * unit_of(draw)
                    };
                    value.clamp(-max, max)
                });
            }
            Modifier::SortedRow(r, ascending) => {
                let range = t.row(*r)?;
                let size = t.dtype.size();
                let mut order: Vec<usize> = range.clone().collect();
                order.sort_by(|a, b| t.get(*a).total_cmp(&t.get(*b)));
                if !ascending {
                    order.reverse();
                }
                let start = range.start;
                let old: Vec<u8> = t.bytes[start * size..range.end * size].to_vec();
                for (place, from) in range.zip(order) {
                    let source = (from - start) * size;
                    t.bytes[place * size..(place + 1) * size].copy_from_slice(&old[source..source + size]);
                }
            }
            Modifier::Ties => {
                for i in (1..t.len()).step_by(2) {
                    let size = t.dtype.size();
                    t.bytes.copy_within((i - 1) * size..i * size, i * size);
                }
            }
            Modifier::ExtremeLast { largest, chunk } => {
                let row_len = t.row_len();
                let n = match chunk {
                    Some(e) => usize::try_from(e.evaluate(symbols)?).ok().filter(|n| *n > 0).ok_or("a chunk of no elements")?,
                    None => row_len,
                };
                for row in 0..t.rows {
                    for start in (row * row_len..(row + 1) * row_len).step_by(n.max(1)) {
                        let end = (start + n).min((row + 1) * row_len);
                        let better = |a: f64, b: f64| if *largest { a > b } else { a < b };
                        let extreme = (start..end).fold(start, |best, i| if better(t.get(i), t.get(best)) { i } else { best });
                        t.swap(extreme, end - 1);
                    }
                }
            }
            Modifier::OutlierLast(r, gap) => {
                let range = t.row(*r)?;
                let last = range.end - 1;
                let largest = range.map(|i| t.get(i)).fold(f64::NEG_INFINITY, f64::max);
                let max = limits.map_or(f64::MAX, |(max, _, _)| max);
                t.set(last, (largest + gap).clamp(-max, max));
            }
            Modifier::NonFinite => {
                let sites = Sites::new(t.rows, t.row_len(), stream.next_u64(), 0);
                sites.elements().for_each(|i| t.wrote(i..i + 1));
                sites.plant(t.dtype, t.bytes)
            }
            Modifier::Specials => specials::plant(t, generator.scale(symbols)?, stream),
            Modifier::NoSpecials(_) => {}
            Modifier::Edges => {
                if let Generator::Int { low, high } = generator {
                    let (l, h) = (low.evaluate(symbols)?, high.evaluate(symbols)?);
                    let last = t.len() - 1;
                    t.set(0, l as f64);
                    t.set(last, (h - 1) as f64);
                }
            }
        }
        Ok(())
    }
}

impl Modifier {
    /// Marks in `t` the elements this modifier writes, where they are known before it draws
    /// (the special values, gate 1's planted values and `swap` mark their own as they go).
    fn mark_writes(&self, t: &Elements) -> Result<(), String> {
        match self {
            Modifier::ZeroRow(r)
            | Modifier::ScaleRow(r, _)
            | Modifier::FillRow(r, _)
            | Modifier::NegativeRow(r)
            | Modifier::SubnormalRow(r)
            | Modifier::NearMaxRow(r)
            | Modifier::BandRow(r, ..)
            | Modifier::SortedRow(r, _) => t.wrote(t.row(*r)?),
            Modifier::OutlierLast(r, _) => {
                let row = t.row(*r)?;
                t.wrote(row.end.saturating_sub(1).max(row.start)..row.end);
            }
            Modifier::Ties => t.wrote(0..t.len()),
            Modifier::Edges => {
                t.wrote(0..t.len().min(1));
                t.wrote(t.len().saturating_sub(1)..t.len());
            }
            Modifier::ExtremeLast { .. } | Modifier::NonFinite | Modifier::Specials | Modifier::NoSpecials(_) => {}
        }
        Ok(())
    }
}

/// The base of an input: where its values come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Generator {
    Normal {
        mean: f64,
        std: f64,
    },
    Uniform {
        low: f64,
        high: f64,
    },
    /// Integers in [low, high), bounds as shape expressions (`int(0, vocab)`).
    Int {
        low: Expr,
        high: Expr,
    },
    Constant(f64),
}

impl Generator {
    /// `normal(0, 1)`, `uniform(-2, 2)`, `int(0, vocab)`, `const(0.5)`.
    pub fn parse(text: &str) -> Result<Generator, String> {
        let text = text.trim();
        let open = text.find('(').ok_or_else(|| format!("`{text}` is not a generator (normal, uniform, int, const)"))?;
        if !text.ends_with(')') {
            return Err(format!("`{text}`: missing `)`"));
        }
        let name = text[..open].trim();
        let args: Vec<&str> = text[open + 1..text.len() - 1].split(',').map(str::trim).collect();
        let number =
            |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| format!("`{s}` in `{text}` is not a finite number"));
        let want = |n: usize| {
            if args.len() == n && args.iter().all(|a| !a.is_empty()) {
                Ok(())
            } else {
                Err(format!("`{text}`: {name} takes {n} argument(s)"))
            }
        };
        match name {
            "normal" => {
                want(2)?;
                let (mean, std) = (number(args[0])?, number(args[1])?);
                if std < 0.0 {
                    return Err(format!("`{text}`: negative standard deviation"));
                }
                Ok(Generator::Normal { mean, std })
            }
            "uniform" => {
                want(2)?;
                let (low, high) = (number(args[0])?, number(args[1])?);
                if low >= high {
                    return Err(format!("`{text}`: empty range"));
                }
                Ok(Generator::Uniform { low, high })
            }
            "int" => {
                want(2)?;
                let low = Expr::parse(args[0]).map_err(|e| e.to_string())?;
                let high = Expr::parse(args[1]).map_err(|e| e.to_string())?;
                Ok(Generator::Int { low, high })
            }
            "const" => {
                want(1)?;
                Ok(Generator::Constant(number(args[0])?))
            }
            other => Err(format!("unknown generator `{other}` (known: normal, uniform, int, const)")),
        }
    }

    pub fn symbols(&self) -> Vec<&str> {
        match self {
            Generator::Int { low, high } => {
                let mut s = low.symbols();
                s.extend(high.symbols());
                s
            }
            _ => Vec::new(),
        }
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, Generator::Int { .. })
    }

    /// The size of the values it draws (a standard deviation, the largest magnitude of a
    /// range, the constant), 1 where that is 0: what a value small against them is scaled by.
    pub fn scale(&self, symbols: &Symbols) -> Result<f64, String> {
        let scale = match self {
            Generator::Normal { mean, std } => std.max(mean.abs()),
            Generator::Uniform { low, high } => low.abs().max(high.abs()),
            Generator::Int { low, high } => (low.evaluate(symbols)? as f64).abs().max((high.evaluate(symbols)? as f64).abs()),
            Generator::Constant(v) => v.abs(),
        };
        Ok(if scale > 0.0 { scale } else { 1.0 })
    }

    /// `generate`'s bytes in each of `dtypes` (at least one), each value drawn once.
    pub fn generate_each(&self, dtypes: &[DType], elements: usize, seed: u64, symbols: &Symbols) -> Result<Vec<Vec<u8>>, String> {
        if let [dtype] = dtypes {
            return Ok(vec![self.generate(*dtype, elements, seed, symbols)?]);
        }
        let (low, high) = self.int_bounds(symbols)?;
        let draws = self.draws_per_value();
        let mut each: Vec<Vec<u8>> = dtypes.iter().map(|dtype| engine::host_buffer::zeroed(elements * dtype.size())).collect();
        // pieces of `PARALLEL_ELEMENTS`, each with its elements' bytes in every type
        let mut pieces: Vec<Vec<(DType, &mut [u8])>> = (0..elements.div_ceil(PARALLEL_ELEMENTS)).map(|_| Vec::new()).collect();
        for (dtype, bytes) in dtypes.iter().zip(each.iter_mut()) {
            for (piece, chunk) in pieces.iter_mut().zip(bytes.chunks_mut(PARALLEL_ELEMENTS * dtype.size())) {
                piece.push((*dtype, chunk));
            }
        }
        pieces.into_par_iter().enumerate().for_each(|(i, mut piece)| {
            let first = i * PARALLEL_ELEMENTS;
            let mut stream = SeededStream::at(seed, first as u64 * draws);
            if let Generator::Normal { mean, std } = self {
                return fill_normals(&mut stream, (*mean, *std), &mut piece);
            }
            let count = piece.first().map_or(0, |(dtype, bytes)| bytes.len() / dtype.size());
            for i in 0..count {
                let value = self.next_value(&mut stream, (low, high));
                for (dtype, bytes) in piece.iter_mut() {
                    let size = dtype.size();
                    dtype.encode(value, &mut bytes[i * size..(i + 1) * size]);
                }
            }
        });
        Ok(each)
    }

    /// An `int(low, high)`'s bounds, checked; (0, 0) for the other generators.
    fn int_bounds(&self, symbols: &Symbols) -> Result<(i64, i64), String> {
        let Generator::Int { low, high } = self else { return Ok((0, 0)) };
        let (l, h) = (low.evaluate(symbols)?, high.evaluate(symbols)?);
        if l >= h {
            return Err(format!("int({l}, {h}) is an empty range"));
        }
        if h.checked_sub(l).is_none() {
            return Err(format!("int({l}, {h}) is wider than i64 holds (its width {h} - {l} overflows)"));
        }
        Ok((l, h))
    }

    /// The stream's draws each value takes (a place in the stream is a multiple of them).
    fn draws_per_value(&self) -> u64 {
        match self {
            Generator::Normal { .. } => 12,
            Generator::Constant(_) => 0,
            Generator::Uniform { .. } | Generator::Int { .. } => 1,
        }
    }

    /// The value `generate` makes at `element`, alone (the stream is a counter: any place in
    /// it is one multiply away), to compare a tensor drawn elsewhere with.
    fn value_at(&self, seed: u64, element: usize, bounds: (i64, i64)) -> f64 {
        let mut stream = SeededStream::at(seed, element as u64 * self.draws_per_value());
        match self {
            Generator::Normal { mean, std } => mean + std * stream.next_normal(),
            _ => self.next_value(&mut stream, bounds),
        }
    }

    /// The next value of a generator other than a normal (those are made eight at a time).
    #[inline]
    fn next_value(&self, stream: &mut SeededStream, (low, high): (i64, i64)) -> f64 {
        match self {
            Generator::Normal { .. } => stream.next_normal(),
            Generator::Uniform { low, high } => low + (high - low) * stream.next_unit(),
            Generator::Int { .. } => stream.next_int(low, high) as f64,
            Generator::Constant(v) => *v,
        }
    }

    /// `elements` values of `dtype`, little-endian, from `seed`.
    pub fn generate(&self, dtype: DType, elements: usize, seed: u64, symbols: &Symbols) -> Result<Vec<u8>, String> {
        let mut out = engine::host_buffer::zeroed(elements * dtype.size());
        let bounds = self.int_bounds(symbols)?;
        let (size, draws) = (dtype.size(), self.draws_per_value());
        let fill = |first: usize, piece: &mut [u8]| {
            let mut stream = SeededStream::at(seed, first as u64 * draws);
            if let Generator::Normal { mean, std } = self {
                fill_normals(&mut stream, (*mean, *std), &mut [(dtype, piece)]);
                return;
            }
            for chunk in piece.chunks_mut(size) {
                dtype.encode(self.next_value(&mut stream, bounds), chunk);
            }
        };
        if elements < PARALLEL_ELEMENTS {
            fill(0, &mut out);
        } else {
            out.par_chunks_mut(PARALLEL_ELEMENTS * size).enumerate().for_each(|(i, piece)| fill(i * PARALLEL_ELEMENTS, piece));
        }
        Ok(out)
    }
}

/// `piece`'s elements from `stream`'s normals, `mean + std * z` each, in the bytes of each of
/// its types (one, most often; a table two records take in two types, both). On a CPU with AVX-512
/// (DQ: 64-bit multiplies and conversions in vector registers) the same code is built for it,
/// and the mixing of the normals side by side takes eight lanes at once: the draws and each
/// sum's adds are the same, in the same order, so the bytes are too. A GPU-only case's cache
/// is 2 to 3 G normals, about 7 s of a 16-core machine without.
fn fill_normals(stream: &mut SeededStream, scale: (f64, f64), piece: &mut [(DType, &mut [u8])]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has AVX-512 F and DQ, all the function's target features ask for
        return unsafe { fill_normals_avx512(stream, scale, piece) };
    }
    fill_normals_portable(stream, scale, piece);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
fn fill_normals_avx512(stream: &mut SeededStream, scale: (f64, f64), piece: &mut [(DType, &mut [u8])]) {
    fill_normals_portable(stream, scale, piece);
}

/// Several elements at a time, then the rest one by one: the same draws in order, each
/// normal encoded in every type.
#[inline(always)]
fn fill_normals_portable(stream: &mut SeededStream, (mean, std): (f64, f64), piece: &mut [(DType, &mut [u8])]) {
    let count = piece.first().map_or(0, |(dtype, bytes)| bytes.len() / dtype.size());
    let grouped = count / NORMALS_AT_ONCE * NORMALS_AT_ONCE;
    for first in (0..grouped).step_by(NORMALS_AT_ONCE) {
        let normals = stream.next_normals::<NORMALS_AT_ONCE>();
        for (dtype, bytes) in piece.iter_mut() {
            let size = dtype.size();
            let group = &mut bytes[first * size..(first + NORMALS_AT_ONCE) * size];
            for (value, chunk) in normals.iter().zip(group.chunks_exact_mut(size)) {
                dtype.encode(mean + std * value, chunk);
            }
        }
    }
    for i in grouped..count {
        let value = mean + std * stream.next_normal();
        for (dtype, bytes) in piece.iter_mut() {
            let size = dtype.size();
            dtype.encode(value, &mut bytes[i * size..(i + 1) * size]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every modifier marks each word it changes (a word a drawn input's tensor would keep as
    /// drawn otherwise), in every type, on rows whose words straddle rows; and the special
    /// values mark their few elements a row, not the tensor.
    #[test]
    fn every_modifier_marks_the_words_it_changes() {
        let specs = [
            "normal(0, 1)",
            "normal(0, 1) | nonfinite",
            "normal(0, 1) | zero_row(1) | scale_row(last, 2)",
            "normal(0, 1) | fill_row(0, max) | negative_row(2)",
            "normal(0, 1) | fill_row(3, tiny) | fill_row(1, 0.5)",
            "normal(0, 1) | subnormal_row(0) | near_max_row(1)",
            "normal(0, 1) | band_row(2, -1, 1) | specials",
            "normal(0, 1) | ascending_row(1) | descending_row(4)",
            "normal(0, 1) | ties",
            "normal(0, 1) | max_last(4)",
            "normal(0, 1) | min_last",
            "normal(0, 1) | outlier_last(0, 5)",
            "uniform(-2, 2) | no_specials(the generator alone) | outlier_last(last, 1)",
            "int(0, 100) | edges",
        ];
        let shape = [5, 37];
        for text in specs {
            let spec = InputSpec::parse(text).unwrap();
            let dtypes: &[DType] =
                if spec.generator.is_integer() { &[DType::U8, DType::I32] } else { &[DType::F32, DType::F16, DType::Bf16] };
            for &dtype in dtypes {
                let mut bytes = spec.generator.generate(dtype, 5 * 37, 11, &Symbols::new()).unwrap();
                let drawn = bytes.clone();
                let written = Written::new(bytes.len());
                spec.modify(dtype, &shape, 11, &Symbols::new(), &mut bytes, Some(&written)).unwrap();
                assert_eq!(bytes, spec.generate(dtype, &shape, 11, &Symbols::new()).unwrap(), "{text} {dtype}: the bytes are generate's");
                let marked: Vec<usize> = written.runs().into_iter().flatten().collect();
                let changed = (0..bytes.len().div_ceil(8)).filter(|w| {
                    let range = w * 8..(w * 8 + 8).min(bytes.len());
                    bytes[range.clone()] != drawn[range]
                });
                for word in changed {
                    assert!(marked.contains(&word), "{text} {dtype}: word {word} changed and not marked");
                }
            }
        }
        let written = Written::new(64 * 4096 * 4);
        let spec = InputSpec::parse("normal(0, 1)").unwrap();
        let mut bytes = spec.generator.generate(DType::F32, 64 * 4096, 3, &Symbols::new()).unwrap();
        spec.modify(DType::F32, &[64, 4096], 3, &Symbols::new(), &mut bytes, Some(&written)).unwrap();
        let marked: usize = written.runs().iter().map(|run| run.len()).sum();
        assert!((1..=64 * 4).contains(&marked), "{marked} words marked for 4 special values a row of 64");
    }

    #[test]
    fn a_large_tensor_made_in_parallel_pieces_is_the_serial_stream() {
        let elements = PARALLEL_ELEMENTS * 2 + 3;
        for generator in ["normal(0, 1)", "uniform(-1, 1)", "int(0, 4294967296)"] {
            let g = Generator::parse(generator).unwrap();
            let bytes = g.generate(DType::F32, elements, 7, &Symbols::new()).unwrap();
            let mut stream = SeededStream::new(7);
            for (i, chunk) in bytes.chunks(4).enumerate() {
                let value = match &g {
                    Generator::Normal { .. } => stream.next_normal(),
                    Generator::Uniform { .. } => -1.0 + 2.0 * stream.next_unit(),
                    _ => stream.next_int(0, 4294967296) as f64,
                };
                assert_eq!(chunk, (value as f32).to_le_bytes(), "{generator} element {i}");
            }
        }
    }

    /// Drawn once for several types, each type's bytes are its own generation's: every
    /// generator, with modifiers, over a piece and a half of elements and a few.
    #[test]
    fn one_draw_for_several_types_gives_each_types_own_bytes() {
        let symbols: Symbols = [("vocab".to_string(), 70001i64)].into();
        let specs = [
            "normal(0, 1) | subnormal_row(0) | fill_row(last, -0)",
            "normal(-3, 0.5)",
            "uniform(1, 64) | fill_row(last, 1)",
            "int(0, vocab) | edges",
            "normal(0, 4) | band_row(0, -300, -100) | band_row(last, 100, 300) | max_last",
        ];
        for text in specs {
            let spec = InputSpec::parse(text).unwrap();
            let types: &[DType] =
                if text.starts_with("int") { &[DType::I32, DType::U32, DType::F32] } else { &[DType::F32, DType::Bf16, DType::F16] };
            for shape in [vec![3, 5], vec![4, PARALLEL_ELEMENTS / 2 + 3], vec![2, 1]] {
                let each = spec.generate_each(types, &shape, 11, &symbols).unwrap();
                for (dtype, bytes) in types.iter().zip(&each) {
                    assert!(*bytes == spec.generate(*dtype, &shape, 11, &symbols).unwrap(), "{text} in {dtype} of {shape:?}");
                }
            }
        }
        let empty = InputSpec::parse("int(5, 5)").unwrap().generate_each(&[DType::I32, DType::U32], &[4], 1, &symbols);
        assert_eq!(empty.unwrap_err(), "int(5, 5) is an empty range");
    }

    #[test]
    fn normals_side_by_side_are_the_draws_one_at_a_time() {
        fn check<const N: usize>(seed: u64) {
            let (mut together, mut alone) = (SeededStream::new(seed), SeededStream::new(seed));
            for _ in 0..3 {
                let values = together.next_normals::<N>();
                for value in values {
                    assert_eq!(value.to_bits(), alone.next_normal().to_bits(), "N = {N}");
                }
            }
            assert_eq!(together.next_u64(), alone.next_u64(), "N = {N}: the streams go on alike");
        }
        check::<1>(3);
        check::<3>(u64::MAX);
        check::<8>(0x6b65_726e_656c);
    }

    #[test]
    fn normals_made_with_avx512_are_the_bytes_made_without() {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq") {
            for dtype in [DType::F32, DType::F16, DType::Bf16] {
                // 8 at a time and a tail of 5; a seed near the top of the counter
                let (mut wide, mut plain) = (SeededStream::new(u64::MAX - 40), SeededStream::new(u64::MAX - 40));
                let (mut a, mut b) = (vec![0u8; 1005 * dtype.size()], vec![0u8; 1005 * dtype.size()]);
                // SAFETY: the features were just detected
                unsafe { fill_normals_avx512(&mut wide, (0.5, 3.0), &mut [(dtype, &mut a[..])]) };
                fill_normals_portable(&mut plain, (0.5, 3.0), &mut [(dtype, &mut b[..])]);
                assert!(a == b, "{dtype:?}");
                assert_eq!(wide.next_u64(), plain.next_u64(), "{dtype:?}: the streams go on alike");
            }
            return;
        }
        eprintln!("not run: this CPU lacks AVX-512 F and DQ");
    }

    /// If this test fails, the drawn rows of every contract's inputs changed: a row of more
    /// elements than one parallel piece (tf_sum_partials' 67 M) draws what one element after
    /// another did. The hashes are the serial drawing's.
    #[test]
    fn the_drawn_rows_are_pinned_past_one_piece() {
        let cases: [(&str, DType, &[usize], u64); 4] = [
            (
                "normal(0, 1) | band_row(last, 65490, 65530) | no_specials(pinned)",
                DType::F32,
                &[2, PARALLEL_ELEMENTS * 2 + 77],
                0xbb4a_1e4f_162d_607c,
            ),
            ("int(0, 9) | band_row(0, 65000, 66000)", DType::F32, &[1, PARALLEL_ELEMENTS + 5], 0xa004_779c_4f9b_31d5),
            ("normal(0, 1) | near_max_row(1) | no_specials(pinned)", DType::Bf16, &[3, PARALLEL_ELEMENTS + 3], 0x0f95_083d_b2b6_9514),
            ("normal(0, 1) | band_row(0, -3, 5) | near_max_row(0) | no_specials(pinned)", DType::F16, &[2, 100], 0x6a8d_c284_0a65_d238),
        ];
        let got: Vec<u64> = cases
            .iter()
            .map(|(spec, dtype, shape, _)| {
                crate::selection::fnv1a(&InputSpec::parse(spec).unwrap().generate(*dtype, shape, 5, &Symbols::new()).unwrap())
            })
            .collect();
        let want: Vec<u64> = cases.iter().map(|c| c.3).collect();
        assert_eq!(got, want, "{got:#018x?}");
    }

    /// If this test fails, every contract's inputs changed: the generator must never change.
    #[test]
    fn golden_values_pin_the_streams() {
        let mut s = SeededStream::new(42);
        let first: Vec<u64> = (0..3).map(|_| s.next_u64()).collect();
        assert_eq!(first, GOLDEN_U64);
        let bytes = Generator::Normal { mean: 0.0, std: 1.0 }.generate(DType::F32, 4, 42, &Symbols::new()).unwrap();
        let values: Vec<u32> = bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(values, GOLDEN_NORMAL_F32_BITS);
        let bf16 = Generator::Uniform { low: -2.0, high: 2.0 }.generate(DType::Bf16, 4, 7, &Symbols::new()).unwrap();
        assert_eq!(bf16, GOLDEN_UNIFORM_BF16_BYTES);
        let symbols: Symbols = [("vocab".to_string(), 1000)].into();
        let ids = Generator::parse("int(0, vocab)").unwrap().generate(DType::I32, 4, 9, &symbols).unwrap();
        let ids: Vec<i32> = ids.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(ids, GOLDEN_IDS);
        assert_eq!(tensor_seed(1, "tf_embed_dense", "table", 2), GOLDEN_TENSOR_SEED);
        // the seeded modifiers: values near the max, a band, and where -inf lands
        let spec =
            InputSpec::parse("normal(0, 1) | near_max_row(0) | band_row(1, -3, 5) | nonfinite | no_specials(pinned by their own test)")
                .unwrap();
        let planted = spec.generate(DType::F32, &[3, 4], 42, &Symbols::new()).unwrap();
        let bits: Vec<u32> = planted.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(bits, GOLDEN_MODIFIED_F32_BITS);
        // the special values every float input gets by default: where and what they are
        let bf16 = |spec: &str| -> Vec<u16> {
            let bytes = InputSpec::parse(spec).unwrap().generate(DType::Bf16, &[2, 20], 42, &Symbols::new()).unwrap();
            bytes.chunks(2).map(|c| u16::from_le_bytes(c.try_into().unwrap())).collect()
        };
        let (plain, planted) = (bf16("normal(0, 1) | no_specials(the generator alone)"), bf16("normal(0, 1)"));
        let specials: Vec<(usize, u16)> = planted.into_iter().enumerate().filter(|(i, b)| plain[*i] != *b).collect();
        assert_eq!(specials, GOLDEN_SPECIALS_BF16);
    }

    const GOLDEN_U64: [u64; 3] = [13679457532755275413, 2949826092126892291, 5139283748462763858];
    const GOLDEN_NORMAL_F32_BITS: [u32; 4] = [0xbf64e5ee, 0xbeeedda6, 0x3fcbd856, 0xbfee950f];
    const GOLDEN_UNIFORM_BF16_BYTES: [u8; 8] = [226, 190, 247, 191, 205, 63, 170, 62];
    const GOLDEN_IDS: [i32; 4] = [682, 750, 265, 784];
    const GOLDEN_TENSOR_SEED: u64 = 16434049013277771555;
    const GOLDEN_SPECIALS_BF16: [(usize, u16); 4] = [(2, 0x0000), (16, 0x33d7), (28, 0xb3d7), (37, 0x8000)];
    const GOLDEN_MODIFIED_F32_BITS: [u32; 12] = [
        0x7fffffff, 0xff800000, 0x7f7f02c2, 0xff795f78, 0x3f6d6188, 0x40921cda, 0xc026335e, 0x401c429a, 0xbeae9947, 0x3e82f6f8, 0xbfb26e58,
        0x7f800000,
    ];

    #[test]
    fn generators_parse_and_refuse() {
        assert_eq!(Generator::parse("normal(0, 1)").unwrap(), Generator::Normal { mean: 0.0, std: 1.0 });
        assert_eq!(Generator::parse("int(0, vocab)").unwrap().symbols(), vec!["vocab"]);
        for bad in ["normal(0)", "gauss(0, 1)", "uniform(2, 1)", "normal(0, nan)", "int(0, vocab", "const()"] {
            assert!(Generator::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn modifiers_plant_zero_rows_scaled_rows_and_edges() {
        let symbols: Symbols = [("vocab".to_string(), 50)].into();
        let spec = InputSpec::parse("int(0, vocab) | edges").unwrap();
        let bytes = spec.generate(DType::I32, &[9], 1, &symbols).unwrap();
        let ids: Vec<i32> = bytes.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!((ids[0], ids[8]), (0, 49));
        let spec = InputSpec::parse("normal(0, 1) | zero_row(1) | scale_row(2, 100)").unwrap();
        let plain = InputSpec::parse("normal(0, 1)").unwrap().generate(DType::F32, &[3, 4], 5, &symbols).unwrap();
        let bytes = spec.generate(DType::F32, &[3, 4], 5, &symbols).unwrap();
        let v: Vec<f32> = bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        let p: Vec<f32> = plain.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(&v[..4], &p[..4]);
        assert_eq!(&v[4..8], &[0.0; 4]);
        assert_eq!(v[8], p[8] * 100.0);
        assert!(spec.generate(DType::F32, &[1, 4], 5, &symbols).is_err(), "row 1 of 1 row");
        for bad in ["normal(0, 1) | edges", "normal(0, 1) | zero_row(x)", "normal(0, 1) | twist"] {
            assert!(InputSpec::parse(bad).is_err(), "{bad}");
        }
    }

    fn f32s(bytes: &[u8]) -> Vec<f32> {
        bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    fn planted(spec: &str, dtype: DType, shape: &[usize]) -> Vec<u8> {
        let symbols: Symbols = [("tile".to_string(), 3)].into();
        InputSpec::parse(spec).unwrap().generate(dtype, shape, 11, &symbols).unwrap()
    }

    #[test]
    fn a_modifier_leaves_the_generators_bytes_alone_where_it_plants_nothing() {
        let plain = planted("normal(0, 1)", DType::F32, &[3, 4]);
        let modified = planted("normal(0, 1) | negative_row(1) | fill_row(last, -0)", DType::F32, &[3, 4]);
        assert_eq!(&plain[..16], &modified[..16]);
        assert!(f32s(&modified)[4..8].iter().all(|v| *v < 0.0));
        assert!(f32s(&modified)[8..].iter().all(|v| v.to_bits() == (-0.0f32).to_bits()));
    }

    #[test]
    fn rows_reach_the_edges_of_their_type() {
        let v = f32s(&planted("normal(0, 1) | subnormal_row(0) | near_max_row(1) | band_row(2, 1e39, 2e39)", DType::F32, &[3, 4]));
        assert!(v[..4].iter().all(|x| x.is_subnormal() || *x == 0.0), "{v:?}");
        assert!(v[4..8].iter().all(|x| x.abs() >= f32::MAX * (1.0 - 1.0 / 32.0) && x.is_finite()), "{v:?}");
        assert!(v[8..].iter().all(|x| *x == f32::MAX), "clamped to the largest finite: {v:?}");
        let whole = f32s(&planted("int(0, 9) | band_row(0, 65000, 66000)", DType::F32, &[1, 64]));
        assert!(whole.iter().all(|x| x.fract() == 0.0 && (65000.0..66000.0).contains(x)), "{whole:?}");
        let h = planted("normal(0, 1) | fill_row(0, max) | fill_row(1, tiny)", DType::F16, &[2, 2]);
        assert_eq!(h, [0xff, 0x7b, 0xff, 0x7b, 0x01, 0x00, 0x01, 0x00]);
        let zeros = planted("int(-2, 3) | negative_row(0)", DType::I32, &[1, 64]);
        assert!(zeros.chunks(4).all(|c| i32::from_le_bytes(c.try_into().unwrap()) < 0), "a zero becomes -1");
    }

    #[test]
    fn ties_and_extremes_in_last_place() {
        let v = f32s(&planted("normal(0, 1) | ties", DType::F32, &[1, 5]));
        assert!(v[0] == v[1] && v[2] == v[3] && v[1] != v[2], "{v:?}");
        // chunks of 3 in rows of 7: [0, 3), [3, 6), [6, 7)
        let v = f32s(&planted("normal(0, 1) | max_last(tile)", DType::F32, &[2, 7]));
        for (start, end) in [(0, 3), (3, 6), (6, 7), (7, 10), (10, 13), (13, 14)] {
            assert!(v[start..end].iter().all(|x| *x <= v[end - 1]), "{v:?}");
        }
        let v = f32s(&planted("normal(0, 1) | ascending_row(0) | descending_row(last)", DType::F32, &[2, 7]));
        assert!(v[..7].windows(2).all(|w| w[0] <= w[1]) && v[7..].windows(2).all(|w| w[0] >= w[1]), "{v:?}");
        let v = f32s(&planted("normal(0, 1) | min_last", DType::F32, &[2, 7]));
        assert!(v[..7].iter().all(|x| *x >= v[6]) && v[7..].iter().all(|x| *x >= v[13]), "{v:?}");
        let v = f32s(&planted("normal(0, 1) | outlier_last(last, 100)", DType::F32, &[2, 7]));
        let rest = v[7..13].iter().copied().fold(f32::NEG_INFINITY, f32::max);
        assert!((v[13] - rest - 100.0).abs() < 1e-4 && v[..7].iter().all(|x| x.abs() < 10.0), "only the last row: {v:?}");
        let h = f32s(&planted("normal(0, 1) | outlier_last(0, 1e9)", DType::F32, &[1, 3]));
        assert_eq!(h[2], 1e9 + h[..2].iter().copied().fold(f32::NEG_INFINITY, f32::max));
    }

    #[test]
    fn nonfinite_plants_what_gate_1_plants() {
        let v = f32s(&planted("normal(0, 1) | no_specials(only the planted values) | nonfinite", DType::F32, &[2, 8]));
        assert_eq!((v[0].to_bits(), v[15]), (0x7fff_ffff, f32::INFINITY));
        assert_eq!(v[1..15].iter().filter(|x| **x == f32::NEG_INFINITY).count(), 1);
        assert_eq!(&planted("normal(0, 1) | nonfinite", DType::Bf16, &[1])[..], &[0xff, 0x7f], "a lone element is the NaN");
    }

    #[test]
    fn modifiers_refuse_what_they_cannot_mean() {
        for bad in [
            "normal(0, 1) | band_row(0, 2, 1)",
            "normal(0, 1) | fill_row(0, nan)",
            "normal(0, 1) | max_last(1, 2)",
            "normal(0, 1) | zero_row(first)",
        ] {
            assert!(InputSpec::parse(bad).is_err(), "{bad}");
        }
        let symbols = Symbols::new();
        for int_only_bad in ["int(0, 9) | fill_row(0, max)", "int(0, 9) | near_max_row(0)", "int(0, 9) | nonfinite"] {
            let e = InputSpec::parse(int_only_bad).unwrap().generate(DType::I32, &[2], 1, &symbols).unwrap_err();
            assert!(e.contains("not i32"), "{int_only_bad}: {e}");
        }
    }

    #[test]
    fn normals_are_the_draws_summed_in_order() {
        // the sum of twelve next_unit draws, one add at a time: what next_normal must give
        let mut one_by_one = SeededStream::new(0x5eed);
        let mut normals = SeededStream::new(0x5eed);
        for _ in 0..200_000 {
            let mut sum = 0.0;
            for _ in 0..12 {
                sum += one_by_one.next_unit();
            }
            assert_eq!(normals.next_normal().to_bits(), (sum - 6.0).to_bits());
        }
        assert_eq!(normals.next_u64(), one_by_one.next_u64(), "twelve draws a normal");
    }

    #[test]
    fn streams_stay_in_range() {
        let mut s = SeededStream::new(3);
        for _ in 0..10_000 {
            let i = s.next_int(-5, 5);
            assert!((-5..5).contains(&i));
            let z = s.next_normal();
            assert!((-6.0..=6.0).contains(&z));
        }
    }
}
