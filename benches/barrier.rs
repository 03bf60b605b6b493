//! Nanoseconds per thread per barrier on the host runtime (issue 15: at most 25): a kernel
//! that does nothing but `__syncthreads()` in a loop, blocks of 256. The throughput criterion
//! prints is thread-barriers per second; its inverse is the figure. Beside it, the same for a
//! lane at a warp shuffle (`__shfl_xor`), the sync op of every warp reduction, which also
//! costs one fiber switch per lane.

mod common;

use std::sync::Arc;

use common::measure::{self, Measure};
use criterion::measurement::Measurement;
use criterion::{Criterion, SamplingMode, Throughput};
use engine::backend::host::worker_count;
use engine::backend::{KernelArg, LaunchDims, Module, Schedule};

const BLOCK: u32 = 256;
const BLOCKS: u32 = 16;
const BARRIERS: i32 = 1000;
const SHUFFLES: i32 = 1000;

fn launch(module: &dyn Module, blocks: u32, barriers: i32) {
    let dims = LaunchDims { grid: [blocks, 1, 1], block: [BLOCK, 1, 1], dynamic_shared: 0 };
    let report = module.launch("barriers", dims, Schedule::default(), &[KernelArg::I32(barriers)]).unwrap_or_else(|e| panic!("{e}"));
    // a switch per thread per barrier but the last to arrive, who goes on: the barriers ran
    assert!(report.switches >= (blocks * (BLOCK - 1)) as u64 * barriers as u64, "{} switches", report.switches);
}

fn shuffle(module: &dyn Module, blocks: u32, shuffles: i32) {
    let dims = LaunchDims { grid: [blocks, 1, 1], block: [BLOCK, 1, 1], dynamic_shared: 0 };
    let args = [KernelArg::I32(shuffles), KernelArg::Pointer(0)];
    let report = module.launch("shuffles", dims, Schedule::default(), &args).unwrap_or_else(|e| panic!("{e}"));
    // a switch per lane per shuffle but the last of each warp to arrive, who goes on
    let warps = blocks * BLOCK / 32;
    assert!(report.switches >= (warps * 31) as u64 * shuffles as u64, "{} switches", report.switches);
}

struct Barrier {
    one: Arc<dyn Module>,
    all: Arc<dyn Module>,
    cores: usize,
}

impl Measure for Barrier {
    fn run<M: Measurement + 'static>(self, mut c: Criterion<M>) {
        let Barrier { one, all, cores } = self;
        let mut group = c.benchmark_group(measure::group("barrier"));
        let thread_barriers = (BLOCKS * BLOCK) as u64 * BARRIERS as u64;
        group.throughput(Throughput::Elements(thread_barriers)).sampling_mode(SamplingMode::Flat).sample_size(10);
        group.bench_function("1 worker", |b| b.iter(|| launch(one.as_ref(), BLOCKS, BARRIERS)));
        group.bench_function(format!("{cores} workers"), |b| b.iter(|| launch(all.as_ref(), BLOCKS, BARRIERS)));
        group.finish();
        let mut group = c.benchmark_group(measure::group("shuffle"));
        let lane_shuffles = (BLOCKS * BLOCK) as u64 * SHUFFLES as u64;
        group.throughput(Throughput::Elements(lane_shuffles)).sampling_mode(SamplingMode::Flat).sample_size(10);
        group.bench_function("1 worker", |b| b.iter(|| shuffle(one.as_ref(), BLOCKS, SHUFFLES)));
        group.bench_function(format!("{cores} workers"), |b| b.iter(|| shuffle(all.as_ref(), BLOCKS, SHUFFLES)));
        group.finish();
        c.final_summary();
    }
}

fn main() {
    let Some(backend_one) = common::host(1) else { return };
    let cores = worker_count();
    let backend_all = common::host(cores).expect("the compiler was found a moment ago");
    let (one, all) = (common::module(&backend_one), common::module(&backend_all));
    if !measure::measuring() {
        launch(one.as_ref(), 2, 3);
        launch(all.as_ref(), 3, 3);
        shuffle(one.as_ref(), 2, 3);
        shuffle(all.as_ref(), 3, 3);
        return;
    }
    measure::criterion(Barrier { one, all, cores });
}
