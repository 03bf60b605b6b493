//! Seeded input generation. The same seed gives the same bytes on every backend and every
//! machine: a small in-tree generator (splitmix64) and normals from a sum of uniforms, with
//! no libm call, so neither a dependency upgrade nor a platform's math library can change
//! the inputs. A golden-value test pins the streams.

use engine::DType;
use engine::shape_expr::{Expr, Symbols};

/// splitmix64: tiny, fast, and every output is a bijection of the state.
#[derive(Clone, Debug)]
pub struct SeededStream {
    state: u64,
}

impl SeededStream {
    pub fn new(seed: u64) -> SeededStream {
        SeededStream { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Approximately standard normal: the sum of 12 uniforms minus 6 (Irwin-Hall), exact
    /// arithmetic only; its tails end at +-6, which keeps inputs in a known finite range.
    pub fn next_normal(&mut self) -> f64 {
        (0..12).map(|_| self.next_unit()).sum::<f64>() - 6.0
    }

    /// Uniform integer in [low, high) (multiply-shift, no modulo bias worth naming).
    pub fn next_int(&mut self, low: i64, high: i64) -> i64 {
        let range = (high - low) as u128;
        low + ((self.next_u64() as u128 * range) >> 64) as i64
    }
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

#[derive(Clone, Debug, PartialEq)]
pub enum Modifier {
    /// Row i (along the first axis) is all zeros.
    ZeroRow(usize),
    /// The first element is the range's low end and the last its high end (`int` only).
    Edges,
    /// Every element of row i is multiplied by s (large magnitudes in one row).
    ScaleRow(usize, f64),
}

impl InputSpec {
    pub fn parse(text: &str) -> Result<InputSpec, String> {
        let mut parts = text.split('|');
        let generator = Generator::parse(parts.next().unwrap_or(""))?;
        let mut modifiers = Vec::new();
        for part in parts {
            let part = part.trim();
            let (name, args) = match part.split_once('(') {
                Some((name, rest)) => {
                    let inner = rest.strip_suffix(')').ok_or_else(|| format!("`{part}`: missing `)`"))?;
                    (name.trim(), inner.split(',').map(str::trim).filter(|a| !a.is_empty()).collect::<Vec<_>>())
                }
                None => (part, Vec::new()),
            };
            let index = |a: &str| a.parse::<usize>().map_err(|_| format!("`{part}`: `{a}` is not a row index"));
            let modifier = match (name, args.as_slice()) {
                ("zero_row", [i]) => Modifier::ZeroRow(index(i)?),
                ("scale_row", [i, s]) => Modifier::ScaleRow(
                    index(i)?,
                    s.parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| format!("`{part}`: `{s}` is not a finite number"))?,
                ),
                ("edges", []) if generator.is_integer() => Modifier::Edges,
                ("edges", []) => return Err(format!("`{part}` applies to int(...) inputs only")),
                _ => return Err(format!("unknown modifier `{part}` (zero_row(i), scale_row(i, s), edges)")),
            };
            modifiers.push(modifier);
        }
        Ok(InputSpec { generator, modifiers })
    }

    pub fn symbols(&self) -> Vec<&str> {
        self.generator.symbols()
    }

    /// The bytes of a tensor of `dtype` and `shape` from `seed`.
    pub fn generate(&self, dtype: DType, shape: &[usize], seed: u64, symbols: &Symbols) -> Result<Vec<u8>, String> {
        let elements: usize = shape.iter().product();
        let mut bytes = self.generator.generate(dtype, elements, seed, symbols)?;
        let size = dtype.size();
        let rows = shape.first().copied().unwrap_or(1).max(1);
        let row_bytes = bytes.len() / rows;
        for modifier in &self.modifiers {
            match *modifier {
                Modifier::ZeroRow(i) | Modifier::ScaleRow(i, _) if i >= rows => {
                    return Err(format!("row {i} of a tensor of {rows} rows"));
                }
                Modifier::ZeroRow(i) => {
                    for chunk in bytes[i * row_bytes..(i + 1) * row_bytes].chunks_mut(size) {
                        dtype.encode(0.0, chunk);
                    }
                }
                Modifier::ScaleRow(i, s) => {
                    for chunk in bytes[i * row_bytes..(i + 1) * row_bytes].chunks_mut(size) {
                        let v = dtype.decode(chunk);
                        dtype.encode(v * s, chunk);
                    }
                }
                Modifier::Edges => {
                    if let Generator::Int { low, high } = &self.generator {
                        let (l, h) = (low.evaluate(symbols)?, high.evaluate(symbols)?);
                        dtype.encode(l as f64, &mut bytes[..size]);
                        let end = bytes.len();
                        dtype.encode((h - 1) as f64, &mut bytes[end - size..]);
                    }
                }
            }
        }
        Ok(bytes)
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

    /// `elements` values of `dtype`, little-endian, from `seed`.
    pub fn generate(&self, dtype: DType, elements: usize, seed: u64, symbols: &Symbols) -> Result<Vec<u8>, String> {
        let mut stream = SeededStream::new(seed);
        let mut out = vec![0u8; elements * dtype.size()];
        let (low, high) = match self {
            Generator::Int { low, high } => {
                let (l, h) = (low.evaluate(symbols)?, high.evaluate(symbols)?);
                if l >= h {
                    return Err(format!("int({l}, {h}) is an empty range"));
                }
                (l, h)
            }
            _ => (0, 0),
        };
        for chunk in out.chunks_mut(dtype.size()) {
            let value = match self {
                Generator::Normal { mean, std } => mean + std * stream.next_normal(),
                Generator::Uniform { low, high } => low + (high - low) * stream.next_unit(),
                Generator::Int { .. } => stream.next_int(low, high) as f64,
                Generator::Constant(v) => *v,
            };
            dtype.encode(value, chunk);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    const GOLDEN_U64: [u64; 3] = [13679457532755275413, 2949826092126892291, 5139283748462763858];
    const GOLDEN_NORMAL_F32_BITS: [u32; 4] = [0xbf64e5ee, 0xbeeedda6, 0x3fcbd856, 0xbfee950f];
    const GOLDEN_UNIFORM_BF16_BYTES: [u8; 8] = [226, 190, 247, 191, 205, 63, 170, 62];
    const GOLDEN_IDS: [i32; 4] = [682, 750, 265, 784];
    const GOLDEN_TENSOR_SEED: u64 = 16434049013277771555;

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
