//! The host runtime's elementwise kernel against the same loop compiled natively (issue 15:
//! within 1.5x of native). y = a * 2 + b over 16M f32 elements in blocks of 256, on the same
//! buffers: the launch as the harness makes it (every access checked against the watched
//! tensors), the same launch with no tensor watched (the instrumentation hooks still run: the
//! host build has no unchecked mode), and the native loop; on one worker and one thread, then
//! on every core.

mod common;

use std::sync::Arc;

use common::measure::{self, Measure};
use criterion::measurement::Measurement;
use criterion::{Criterion, SamplingMode, Throughput};
use engine::DType;
use engine::backend::host::worker_count;
use engine::backend::{KernelArg, LaunchDims, Module, Schedule};
use engine::tensor::Tensor;

const BLOCK: u32 = 256;
const ELEMENTS: usize = 16 << 20;

struct Buffers {
    a: Tensor,
    b: Tensor,
    y: Tensor,
    n: usize,
}

impl Buffers {
    fn new(backend: &dyn engine::backend::Backend, n: usize) -> Buffers {
        let values = |seed: u32| -> Vec<u8> {
            (0..n as u32).flat_map(|i| ((i.wrapping_mul(seed) % 2001) as f32 / 1000.0 - 1.0).to_le_bytes()).collect()
        };
        let tensor = |bytes: Option<Vec<u8>>| {
            let mut t = Tensor::allocate(backend, DType::F32, &[n]).unwrap();
            if let Some(bytes) = bytes {
                t.write(&bytes).unwrap();
            }
            t
        };
        Buffers { a: tensor(Some(values(7919))), b: tensor(Some(values(104_729))), y: tensor(None), n }
    }

    /// The host launch; `watched`: with the tensors the memory checks know, as the harness
    /// launches.
    fn launch(&self, module: &dyn Module, watched: bool) {
        let pointer = |t: &Tensor| KernelArg::Pointer(t.device_address());
        let args = [pointer(&self.a), pointer(&self.b), pointer(&self.y), KernelArg::I32(self.n as i32)];
        let dims = LaunchDims { grid: [self.n.div_ceil(BLOCK as usize) as u32, 1, 1], block: [BLOCK, 1, 1], dynamic_shared: 0 };
        let tensors =
            if watched { vec![self.a.watched("a", false), self.b.watched("b", false), self.y.watched("y", true)] } else { vec![] };
        let report = module.launch_watched("scale_add", dims, Schedule::default(), &args, &tensors).unwrap_or_else(|e| panic!("{e}"));
        assert!(report.findings.is_empty(), "{:?}", report.findings);
    }

    /// The same loop, native, on the same memory, split over `threads`.
    fn native(&self, threads: usize) {
        // SAFETY: on the host backend a device address is the host address of the tensor's
        // data, `n` f32 long; nothing else touches these tensors while the loop runs.
        let (a, b, y) = unsafe {
            (
                std::slice::from_raw_parts(self.a.device_address() as *const f32, self.n),
                std::slice::from_raw_parts(self.b.device_address() as *const f32, self.n),
                std::slice::from_raw_parts_mut(self.y.device_address() as *mut f32, self.n),
            )
        };
        let chunk = self.n.div_ceil(threads.max(1));
        std::thread::scope(|s| {
            for ((y, a), b) in y.chunks_mut(chunk).zip(a.chunks(chunk)).zip(b.chunks(chunk)) {
                s.spawn(move || scale_add(a, b, y));
            }
        });
    }
}

fn scale_add(a: &[f32], b: &[f32], y: &mut [f32]) {
    for ((y, a), b) in y.iter_mut().zip(a).zip(b) {
        *y = a * 2.0 + b;
    }
}

struct Elementwise {
    buffers: Buffers,
    one: Arc<dyn Module>,
    all: Arc<dyn Module>,
    cores: usize,
}

impl Measure for Elementwise {
    fn run<M: Measurement + 'static>(self, mut c: Criterion<M>) {
        let Elementwise { buffers, one, all, cores } = self;
        let mut group = c.benchmark_group(measure::group("elementwise"));
        group.throughput(Throughput::Elements(buffers.n as u64)).sampling_mode(SamplingMode::Flat).sample_size(10);
        group.bench_function("native, 1 thread", |b| b.iter(|| buffers.native(1)));
        group.bench_function("host checked, 1 worker", |b| b.iter(|| buffers.launch(one.as_ref(), true)));
        group.bench_function("host unwatched, 1 worker", |b| b.iter(|| buffers.launch(one.as_ref(), false)));
        group.bench_function(format!("native, {cores} threads"), |b| b.iter(|| buffers.native(cores)));
        group.bench_function(format!("host checked, {cores} workers"), |b| b.iter(|| buffers.launch(all.as_ref(), true)));
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
        // once, small: the host launch writes what the native loop does, bit for bit
        let mut buffers = Buffers::new(&backend_one, 3 * BLOCK as usize + 17);
        buffers.native(1);
        let native = buffers.y.read().unwrap();
        for (module, watched) in [(&one, true), (&one, false), (&all, true)] {
            buffers.y.write(&vec![0xff; native.len()]).unwrap();
            buffers.launch(module.as_ref(), watched);
            assert_eq!(buffers.y.read().unwrap(), native, "watched {watched}");
        }
        return;
    }
    let buffers = Buffers::new(&backend_one, ELEMENTS);
    measure::criterion(Elementwise { buffers, one, all, cores });
}
