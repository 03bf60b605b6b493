//! Nanoseconds per thread per barrier on the host runtime (issue 15: at most 25): a kernel
//! that does nothing but `__syncthreads()` in a loop, blocks of 256. The throughput criterion
//! prints is thread-barriers per second; its inverse is the figure.

mod common;

use criterion::{Criterion, SamplingMode, Throughput};
use engine::backend::host::worker_count;
use engine::backend::{KernelArg, LaunchDims, Module, Schedule};

const BLOCK: u32 = 256;
const BLOCKS: u32 = 16;
const BARRIERS: i32 = 1000;

fn launch(module: &dyn Module, blocks: u32, barriers: i32) {
    let dims = LaunchDims { grid: [blocks, 1, 1], block: [BLOCK, 1, 1], dynamic_shared: 0 };
    let report = module.launch("barriers", dims, Schedule::default(), &[KernelArg::I32(barriers)]).unwrap_or_else(|e| panic!("{e}"));
    // one switch at least per thread per barrier: the barriers ran
    assert!(report.switches >= (blocks * BLOCK) as u64 * barriers as u64, "{} switches", report.switches);
}

fn main() {
    let Some(one) = common::host(1) else { return };
    let cores = worker_count();
    let all = common::host(cores).expect("the compiler was found a moment ago");
    let (module_one, module_all) = (common::module(&one), common::module(&all));
    if !common::measuring() {
        launch(module_one.as_ref(), 2, 3);
        launch(module_all.as_ref(), 3, 3);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("barrier");
    let thread_barriers = (BLOCKS * BLOCK) as u64 * BARRIERS as u64;
    group.throughput(Throughput::Elements(thread_barriers)).sampling_mode(SamplingMode::Flat).sample_size(10);
    group.bench_function("1 worker", |b| b.iter(|| launch(module_one.as_ref(), BLOCKS, BARRIERS)));
    group.bench_function(format!("{cores} workers"), |b| b.iter(|| launch(module_all.as_ref(), BLOCKS, BARRIERS)));
    group.finish();
    c.final_summary();
}
