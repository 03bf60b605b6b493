//! The checks' bytes per second against memcpy on the same buffer (issue 15: at least half
//! memcpy's rate): gates 1-3 over one f32 output of 4M elements (16 MiB) as the runner makes
//! them on a passing case, each alone and the three together (`gates::output_gates`, one
//! pass over the output, as the runner calls them), and the guard-band scan of one tensor
//! (its two 64 KiB bands), each beside `copy_from_slice` of as many bytes. The bytes counted
//! are the output's (or the bands'), once, whatever each check reads besides.

use criterion::measurement::Measurement;
use criterion::{Criterion, SamplingMode, Throughput};
use engine::DType;
use engine::backend::memory::Memory;
use engine::tensor::{GUARD_BYTES, Tensor};
use harness::gates;
use harness::runner::output_poison;
use harness::tolerance::Tolerance;

#[path = "../../benches/common/measure.rs"]
mod measure;

use measure::Measure;

const ELEMENTS: usize = 4 << 20;
const LAUNCHES: usize = 3;

/// One output of a passing case: the oracle's values, each launch's bytes (the oracle's
/// values in f32, the same every launch), and each launch's poison.
struct Output {
    shape: Vec<usize>,
    want: Vec<f64>,
    launches: Vec<Vec<u8>>,
    poisons: Vec<Vec<u8>>,
    tolerance: Tolerance,
}

impl Output {
    fn new(n: usize) -> Output {
        let mut state = 0x6b65726e656c_u64;
        let want: Vec<f64> = (0..n)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 8.0
            })
            .collect();
        let bytes: Vec<u8> = want.iter().flat_map(|w| (*w as f32).to_le_bytes()).collect();
        Output {
            shape: vec![n],
            want,
            launches: vec![bytes; LAUNCHES],
            poisons: (0..LAUNCHES).map(|l| vec![output_poison(l); 4]).collect(),
            tolerance: Tolerance::Relative { rtol: 1e-5, atol: 1e-6 },
        }
    }

    fn nonfinite(&self) {
        assert!(gates::nonfinite(DType::F32, &self.shape, &self.launches[0], &self.want).is_none());
    }

    fn repeat(&self) {
        assert!(gates::repeat(DType::F32, &self.shape, &self.launches, &self.poisons).is_none());
    }

    fn compare(&self) {
        let (metrics, failure) = gates::compare(DType::F32, &self.shape, &self.launches[0], &self.want, &self.tolerance);
        assert!(failure.is_none() && metrics.mismatches == 0);
    }

    /// What the runner does for one output of a case as generated: the three in one pass.
    fn all(&self) {
        let gates = gates::output_gates(DType::F32, &self.shape, (&self.launches, false), &self.poisons, &self.want, &self.tolerance, true);
        assert!(gates.repeat.is_none() && gates.compare.is_none() && gates.nonfinite.is_none());
        assert_eq!(gates.metrics.mismatches, 0);
    }
}

fn guard_scan(tensor: &Tensor) {
    assert_eq!(tensor.guard_damage().unwrap(), None);
}

struct Checks {
    output: Output,
    tensor: Tensor,
}

impl Measure for Checks {
    fn run<M: Measurement + 'static>(self, mut c: Criterion<M>) {
        let Checks { output, tensor } = self;
        let source = output.launches[0].clone();
        let mut copy = vec![0u8; source.len()];
        let bands = vec![0x5au8; 2 * GUARD_BYTES];
        let mut bands_copy = vec![0u8; bands.len()];

        let mut group = c.benchmark_group(measure::group("checks"));
        group.throughput(Throughput::Bytes(source.len() as u64)).sampling_mode(SamplingMode::Flat).sample_size(10);
        group.bench_function("memcpy", |b| b.iter(|| copy.copy_from_slice(std::hint::black_box(&source))));
        group.bench_function("nonfinite", |b| b.iter(|| output.nonfinite()));
        group.bench_function("repeat", |b| b.iter(|| output.repeat()));
        group.bench_function("compare", |b| b.iter(|| output.compare()));
        group.bench_function("all three", |b| b.iter(|| output.all()));
        group.finish();

        let mut group = c.benchmark_group(measure::group("guard bands"));
        group.throughput(Throughput::Bytes(bands.len() as u64));
        group.bench_function("memcpy", |b| b.iter(|| bands_copy.copy_from_slice(std::hint::black_box(&bands))));
        group.bench_function("guard_damage", |b| b.iter(|| guard_scan(&tensor)));
        group.finish();
        c.final_summary();
    }
}

fn main() {
    let measuring = measure::measuring();
    let n = if measuring { ELEMENTS } else { 1000 };
    let output = Output::new(n);
    let tensor = Tensor::allocate(&Memory, DType::F32, &[n]).unwrap();
    if !measuring {
        // `cargo test`: once, small
        output.nonfinite();
        output.repeat();
        output.compare();
        output.all();
        guard_scan(&tensor);
        return;
    }
    measure::criterion(Checks { output, tensor });
}
