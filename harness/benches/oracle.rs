//! An oracle's throughput, in input elements per second: rms_norm over 1024 rows of 4096,
//! and softmax_stats over as many scores in tiles of 256, as the runner calls them (on
//! inputs already decoded to f64), and gemm_xwt's products per second (the projection's
//! oracle: x [256, 1024] times W [1024, 1024] transposed, 268 M products). And the oracles of
//! the GPU-only caches, which decode the cache as they read it: score_keys and apply_values
//! over an f16 and a bf16 cache of 262,144 keys of 256 (the cache's elements per second).

use std::collections::BTreeMap;

use criterion::measurement::Measurement;
use criterion::{Criterion, SamplingMode, Throughput};
use engine::shape_expr::Symbols;
use harness::oracle::{self, InputValues, OracleInput, Params};

#[path = "../../benches/common/measure.rs"]
mod measure;

use measure::Measure;

const ROWS: usize = 1024;
const K: usize = 4096;

fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 8.0
        })
        .collect()
}

struct Call {
    name: &'static str,
    symbols: Symbols,
    params: BTreeMap<String, f64>,
    inputs: BTreeMap<String, InputValues>,
}

impl Call {
    fn run(&self) -> usize {
        let oracle = oracle::find(self.name).expect("an oracle of the harness");
        let params = Params::new(&self.params);
        let input = OracleInput { symbols: &self.symbols, params: &params, inputs: &self.inputs };
        let outputs = oracle(&input).unwrap_or_else(|e| panic!("{}: {e}", self.name));
        outputs.values().map(Vec::len).sum()
    }
}

fn calls(rows: usize, k: usize) -> [Call; 2] {
    let symbols = |pairs: &[(&str, usize)]| pairs.iter().map(|(n, v)| (n.to_string(), *v as i64)).collect();
    [
        Call {
            name: "rms_norm",
            symbols: symbols(&[("rows", rows), ("k", k)]),
            params: [("eps".to_string(), 1e-6)].into(),
            inputs: [("x".to_string(), values(rows * k, 1).into()), ("weight".to_string(), values(k, 2).into())].into(),
        },
        Call {
            name: "softmax_stats",
            symbols: symbols(&[("rows", rows), ("keys", k), ("tile", 256)]),
            params: BTreeMap::new(),
            inputs: [("scores".to_string(), values(rows * k, 3).into())].into(),
        },
    ]
}

/// gemm_xwt over m rows of x [m, k] and W [n, k].
fn gemm(m: usize, n: usize, k: usize) -> Call {
    Call {
        name: "gemm_xwt",
        symbols: [("m", m), ("n", n), ("k", k)].iter().map(|(s, v)| (s.to_string(), *v as i64)).collect(),
        params: BTreeMap::new(),
        inputs: [("x".to_string(), values(m * k, 4).into()), ("w".to_string(), values(n * k, 5).into())].into(),
    }
}

const GEMM: (usize, usize, usize) = (256, 1024, 1024);

/// score_keys (one query row) or apply_values (tiles of 256 keys) over a cache of `keys` x
/// `d` in `dtype`, its bytes as the runner hands them over: encoded, decoded as read.
fn over_cache(name: &'static str, dtype: engine::DType, keys: usize, d: usize) -> Call {
    let tile = 256;
    let tiles = keys.div_ceil(tile);
    let encoded: Vec<u8> = values(keys * d, 6)
        .iter()
        .flat_map(|v| {
            let mut bytes = vec![0u8; dtype.size()];
            dtype.encode(*v, &mut bytes);
            bytes
        })
        .collect();
    let cache = InputValues::new(dtype, std::sync::Arc::new(encoded));
    let symbols = [("rows", 1), ("keys", keys), ("d", d), ("tile", tile)].iter().map(|(s, v)| (s.to_string(), *v as i64)).collect();
    let inputs = match name {
        "score_keys" => [("q".to_string(), values(d, 7).into()), ("k_cache".to_string(), cache)].into(),
        _ => [
            ("scores".to_string(), values(keys, 8).into()),
            ("tile_max".to_string(), vec![4.0; tiles].into()),
            ("v_cache".to_string(), cache),
        ]
        .into(),
    };
    Call { name, symbols, params: [("scale".to_string(), 0.0625)].into(), inputs }
}

const CACHE: (usize, usize) = (262_144, 256);

struct Oracles;

impl Measure for Oracles {
    fn run<M: Measurement + 'static>(self, mut c: Criterion<M>) {
        let mut group = c.benchmark_group(measure::group("oracle"));
        group.throughput(Throughput::Elements((ROWS * K) as u64)).sampling_mode(SamplingMode::Flat).sample_size(10);
        for call in calls(ROWS, K) {
            group.bench_function(call.name, |b| b.iter(|| call.run()));
        }
        group.finish();

        let (m, n, k) = GEMM;
        let call = gemm(m, n, k);
        let mut group = c.benchmark_group(measure::group("oracle products"));
        group.throughput(Throughput::Elements((m * n * k) as u64)).sampling_mode(SamplingMode::Flat).sample_size(10);
        group.bench_function(call.name, |b| b.iter(|| call.run()));
        group.finish();

        let (keys, d) = CACHE;
        let mut group = c.benchmark_group(measure::group("oracle caches"));
        group.throughput(Throughput::Elements((keys * d) as u64)).sampling_mode(SamplingMode::Flat).sample_size(10);
        for dtype in [engine::DType::F16, engine::DType::Bf16] {
            for name in ["score_keys", "apply_values"] {
                let call = over_cache(name, dtype, keys, d);
                group.bench_function(format!("{name} {}", dtype.name()), |b| b.iter(|| call.run()));
            }
        }
        group.finish();
        c.final_summary();
    }
}

fn main() {
    if !measure::measuring() {
        // `cargo test`: once, small
        let [rms, softmax] = calls(3, 512);
        assert_eq!(rms.run(), 3 * 512);
        assert_eq!(softmax.run(), 2 * 3 * 2);
        assert_eq!(gemm(33, 9, 70).run(), 33 * 9);
        assert_eq!(over_cache("score_keys", engine::DType::F16, 300, 33).run(), 300);
        assert_eq!(over_cache("apply_values", engine::DType::Bf16, 300, 33).run(), 2 * 33);
        return;
    }
    measure::criterion(Oracles);
}
