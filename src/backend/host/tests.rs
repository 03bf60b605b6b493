//! Host-runtime semantics, tested by kernels written for the purpose (test_kernels/):
//! shared-memory reductions, warp shuffles, atomics across blocks, dynamic shared memory,
//! poisoning, 2-D launches, and barriers that must come back as errors, not hangs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{HostBackend, HostOptions, worker_count};
use crate::backend::{Backend, BlockOrder, KernelArg, KernelSource, LaunchDims, Module, Schedule, ThreadOrder};
use crate::tensor::Tensor;
use crate::{DType, EngineError};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn backend_with(workers: usize) -> HostBackend {
    HostBackend::new(HostOptions {
        prelude: root().join("kernels/host/prelude.h"),
        cache_dir: root().join("target/kernel-cache"),
        workers,
        warp_size: 32,
    })
    .expect("host backend")
}

fn module(backend: &HostBackend, file: &str, kernels: &[&str]) -> Arc<dyn Module> {
    let display_path = format!("src/backend/host/test_kernels/{file}");
    backend
        .load_module(&KernelSource {
            path: root().join(&display_path),
            display_path,
            kernels: kernels.iter().map(|k| k.to_string()).collect(),
            include_dirs: vec![root().join("kernels")],
        })
        .unwrap_or_else(|e| panic!("{e}"))
}

const SEMANTICS: &[&str] = &[
    "block_sum",
    "warp_ops",
    "atomics",
    "atomics_more",
    "dynamic_reverse",
    "unwritten_shared",
    "store_by_code",
    "coordinates",
    "vote_until_flag",
    "wait_for_block",
    "volatile_reads",
];

fn tensor<T: Copy>(backend: &dyn Backend, dtype: DType, values: &[T]) -> Tensor {
    let mut t = Tensor::allocate(backend, dtype, &[values.len()]).unwrap();
    let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) };
    t.write(bytes).unwrap();
    t
}

fn read<T: Copy + Default>(t: &Tensor) -> Vec<T> {
    let bytes = t.read().unwrap();
    let mut out = vec![T::default(); bytes.len() / std::mem::size_of::<T>()];
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr() as *mut u8, bytes.len()) };
    out
}

fn dims(grid: u32, block: u32) -> LaunchDims {
    LaunchDims { grid: [grid, 1, 1], block: [block, 1, 1], dynamic_shared: 0 }
}

fn ptr(t: &Tensor) -> KernelArg {
    KernelArg::Pointer(t.device_address())
}

#[test]
fn block_reduction_through_shared_memory_is_exact_in_every_schedule() {
    let backend = backend_with(worker_count());
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let n = 300 * 256 - 17;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 17) as f32 - 8.0).collect();
    let want: Vec<f32> = x.chunks(256).map(|c| c.iter().sum()).collect();
    let input = tensor(&backend, DType::F32, &x);
    for schedule in [
        Schedule::default(),
        Schedule { shared_poison: Some(0xff), block_order: BlockOrder::Reversed, wake_reverse: true, thread_order: ThreadOrder::Reversed },
        Schedule {
            shared_poison: Some(0x00),
            block_order: BlockOrder::Shuffled(7),
            wake_reverse: false,
            thread_order: ThreadOrder::Shuffled(7),
        },
        Schedule { thread_order: ThreadOrder::WarpAhead(3), ..Schedule::default() },
    ] {
        let out = Tensor::allocate(&backend, DType::F32, &[want.len()]).unwrap();
        let report = m.launch("block_sum", dims(300, 256), schedule, &[ptr(&input), ptr(&out), KernelArg::I32(n)]).unwrap();
        assert_eq!(read::<f32>(&out), want, "{schedule:?}");
        assert_eq!(report.blocks, 300);
        // 9 barriers per thread: at least one switch per thread per barrier
        assert!(report.switches >= 300 * 256 * 8, "{} switches", report.switches);
        assert_eq!(out.guard_damage().unwrap(), None);
    }
}

#[test]
fn warp_shuffles_ballots_and_votes_follow_hip_semantics() {
    let backend = backend_with(1);
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let blocks = 3;
    let n = blocks * 128;
    let x: Vec<i32> = (0..n as i32).map(|i| (i * 37) % 101).collect();
    let input = tensor(&backend, DType::I32, &x);
    let out = Tensor::allocate(&backend, DType::I32, &[n * 7]).unwrap();
    let report = m.launch("warp_ops", dims(blocks as u32, 128), Schedule::default(), &[ptr(&input), ptr(&out)]).unwrap();
    let got = read::<i32>(&out);
    for i in 0..n {
        let lane = i % 32;
        let warp = i - lane;
        let segment = i & !15;
        let sum32: i32 = x[warp..warp + 32].iter().sum();
        let sum16: i32 = x[segment..segment + 16].iter().sum();
        let down = if lane < 31 { x[i + 1] } else { x[i] };
        let up = if lane >= 2 { x[i - 2] } else { x[i] };
        let ballot = (0..32).filter(|j| x[warp + j] & 1 == 1).fold(0u32, |b, j| b | (1 << j)) as i32;
        let any = x[warp..warp + 32].iter().any(|v| *v > 1000) as i32;
        let all = x[warp..warp + 32].iter().all(|v| *v >= 0) as i32;
        let want = [sum32, sum16, down, up, x[warp + 5], ballot, any * 2 + all];
        assert_eq!(&got[i * 7..i * 7 + 7], &want, "thread {i}");
    }
    assert_eq!(report.inactive_lane_reads, 0);
}

#[test]
fn a_warp_polling_a_flag_gives_way_to_the_warp_that_sets_it() {
    let backend = backend_with(1);
    let m = module(&backend, "semantics.hip", SEMANTICS);
    for wake_reverse in [false, true] {
        let out = Tensor::allocate(&backend, DType::I32, &[64]).unwrap();
        let schedule = Schedule { wake_reverse, ..Schedule::default() };
        let (m, args) = (m.clone(), [ptr(&out)]);
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(m.launch("vote_until_flag", dims(1, 64), schedule, &args).map(|_| ())));
        // a warp that never gives way never returns: the launch would hang, not fail
        finished.recv_timeout(Duration::from_secs(60)).expect("the launch returns").unwrap();
        let polls = read::<i32>(&out);
        assert!(polls[..32].iter().all(|&p| p == polls[0]), "{polls:?}");
        // in arrival order, warp 0 polls first and runs ahead of warp 1 (queued first after each
        // of its votes) for a while, then gives way; woken the other way round, warp 1 sets the
        // flag before warp 0's first vote
        assert!(if wake_reverse { polls[0] == 0 } else { polls[0] > 1 }, "{polls:?}");
        assert!(polls[32..].iter().all(|&p| p == 0), "{polls:?}");
    }
}

#[test]
fn a_block_waiting_on_a_flag_past_the_spin_pauses_still_sees_it_set() {
    let backend = backend_with(2);
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let flag = tensor(&backend, DType::I32, &[0i32]);
    let progress = tensor(&backend, DType::I32, &[0i32]);
    let polled = tensor(&backend, DType::I32, &[0i32]);
    let (m, args) = (m.clone(), [ptr(&flag), ptr(&progress), ptr(&polled)]);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(m.launch("wait_for_block", dims(2, 1), Schedule::default(), &args).map(|_| ())));
    finished.recv_timeout(Duration::from_secs(60)).expect("the launch returns").unwrap();
    // three million polls of an unchanged flag: two million past the point where the pauses begin
    assert!(read::<i32>(&polled)[0] >= 3 << 20, "{:?}", read::<i32>(&polled));
    assert_eq!(read::<i32>(&flag), [1]);
}

#[test]
fn volatile_loads_aligned_or_not_read_their_values() {
    let backend = backend_with(1);
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let tagged: Vec<u8> = (0..64i32).flat_map(|t| std::iter::once(b'x').chain((t * 1000).to_le_bytes())).collect();
    let x = tensor(&backend, DType::U8, &tagged);
    let y = tensor(&backend, DType::I32, &(0..64).collect::<Vec<i32>>());
    let out = tensor(&backend, DType::I32, &[0i32; 64]);
    let report = m.launch("volatile_reads", dims(1, 64), Schedule::default(), &[ptr(&x), ptr(&y), ptr(&out)]).unwrap();
    assert_eq!(read::<i32>(&out), (0..64).map(|t| t * 1001).collect::<Vec<i32>>());
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}

#[test]
fn atomics_from_many_blocks_on_every_worker_are_exact() {
    let backend = backend_with(worker_count().max(2));
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let n: usize = 1000 * 128 + 5;
    // integer-valued floats below 2^24 in every partial sum: float atomics are exact in any order
    let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let input = tensor(&backend, DType::F32, &x);
    let count = tensor(&backend, DType::I32, &[0i32]);
    let total = tensor(&backend, DType::F32, &[0f32]);
    let maximum = tensor(&backend, DType::I32, &[-1i32]);
    let blocks = n.div_ceil(128) as u32;
    m.launch(
        "atomics",
        dims(blocks, 128),
        Schedule { block_order: BlockOrder::Shuffled(3), ..Schedule::default() },
        &[ptr(&input), KernelArg::I32(n as i32), ptr(&count), ptr(&total), ptr(&maximum)],
    )
    .unwrap();
    assert_eq!(read::<i32>(&count), vec![n as i32]);
    assert_eq!(read::<f32>(&total), vec![x.iter().map(|v| *v as f64).sum::<f64>() as f32]);
    assert_eq!(read::<i32>(&maximum), vec![n as i32 - 1]);

    let down = tensor(&backend, DType::I32, &[0i32]);
    let minimum = tensor(&backend, DType::I32, &[i32::MAX]);
    let maximum = tensor(&backend, DType::U32, &[0u32]);
    let winner = tensor(&backend, DType::U32, &[0u32]);
    let exchanged = tensor(&backend, DType::I32, &[0i32]);
    let float_exchanged = tensor(&backend, DType::F32, &[0f32]);
    m.launch(
        "atomics_more",
        dims(blocks, 128),
        Schedule { block_order: BlockOrder::Shuffled(5), ..Schedule::default() },
        &[KernelArg::I32(n as i32), ptr(&down), ptr(&minimum), ptr(&maximum), ptr(&winner), ptr(&exchanged), ptr(&float_exchanged)],
    )
    .unwrap();
    assert_eq!(read::<i32>(&down), vec![-2 * n as i32]);
    assert_eq!(read::<i32>(&minimum), vec![0]);
    assert_eq!(read::<u32>(&maximum), vec![n as u32 - 1]);
    let won = read::<u32>(&winner)[0];
    assert!((1..=n as u32).contains(&won), "{won}");
    assert_eq!(read::<f32>(&float_exchanged), vec![2.5]);
    assert_eq!(read::<i32>(&exchanged), vec![7]);
}

#[test]
fn dynamic_shared_memory_and_two_dimensional_launches() {
    let backend = backend_with(worker_count());
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let x: Vec<f32> = (0..4 * 64).map(|i| i as f32).collect();
    let input = tensor(&backend, DType::F32, &x);
    let out = Tensor::allocate(&backend, DType::F32, &[x.len()]).unwrap();
    let launch = LaunchDims { grid: [4, 1, 1], block: [64, 1, 1], dynamic_shared: 64 * 4 };
    m.launch("dynamic_reverse", launch, Schedule::default(), &[ptr(&input), ptr(&out)]).unwrap();
    let want: Vec<f32> = x.chunks(64).flat_map(|c| c.iter().rev().copied()).collect();
    assert_eq!(read::<f32>(&out), want);

    let coordinates = Tensor::allocate(&backend, DType::I32, &[3 * 2 * 8 * 4]).unwrap();
    let launch = LaunchDims { grid: [3, 2, 1], block: [8, 4, 1], dynamic_shared: 0 };
    m.launch("coordinates", launch, Schedule::default(), &[ptr(&coordinates)]).unwrap();
    let want: Vec<i32> = (0..6).flat_map(|b| (0..32).map(move |t| b * 1000 + t)).collect();
    assert_eq!(read::<i32>(&coordinates), want);
}

#[test]
fn poisoned_shared_memory_exposes_a_read_nobody_wrote() {
    let backend = backend_with(1);
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let x: Vec<f32> = (0..2 * 256).map(|i| i as f32).collect();
    let input = tensor(&backend, DType::F32, &x);
    let mut results = Vec::new();
    for poison in [0xffu8, 0x00] {
        let out = Tensor::allocate(&backend, DType::F32, &[x.len()]).unwrap();
        let schedule = Schedule { shared_poison: Some(poison), ..Schedule::default() };
        m.launch("unwritten_shared", dims(2, 256), schedule, &[ptr(&input), ptr(&out)]).unwrap();
        results.push(read::<f32>(&out));
    }
    // thread 255 of each block read slot 0... no: slot (255 + 1) % 256 = 0 was written; slot 255
    // is read by thread 254 and was written by nobody
    assert!(results[0][254].is_nan() && results[0][256 + 254].is_nan());
    assert_eq!(results[1][254], 0.0);
    assert_eq!(results[0][..254], results[1][..254]);
}

#[test]
fn a_divergent_barrier_is_an_error_naming_kernel_and_line_within_seconds() {
    let backend = backend_with(worker_count());
    let m = module(&backend, "divergent.hip", &["divergent_barrier", "divergent_sites"]);
    let out = Tensor::allocate(&backend, DType::F32, &[64 * 256]).unwrap();
    let started = Instant::now();
    let error = m.launch("divergent_barrier", dims(64, 256), Schedule::default(), &[ptr(&out)]).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let text = error.to_string();
    assert!(matches!(error, EngineError::KernelFault { .. }), "{text}");
    assert!(text.contains("divergent_barrier"), "{text}");
    assert!(text.contains("divergent barrier"), "{text}");
    assert!(text.contains("src/backend/host/test_kernels/divergent.hip:6"), "{text}");

    let error = m.launch("divergent_sites", dims(4, 64), Schedule::default(), &[ptr(&out)]).unwrap_err().to_string();
    assert!(error.contains("divergent.hip:12") && error.contains("divergent.hip:13"), "{error}");
    // the runtime is still usable after an abandoned block
    let semantics = module(&backend, "semantics.hip", SEMANTICS);
    let input = tensor(&backend, DType::F32, &[1.0f32; 256]);
    let sum = Tensor::allocate(&backend, DType::F32, &[1]).unwrap();
    semantics.launch("block_sum", dims(1, 256), Schedule::default(), &[ptr(&input), ptr(&sum), KernelArg::I32(256)]).unwrap();
    assert_eq!(read::<f32>(&sum), vec![256.0]);
}

#[test]
fn an_unknown_dtype_code_is_refused_by_the_shared_header() {
    let backend = backend_with(1);
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let out = Tensor::allocate(&backend, DType::F32, &[32]).unwrap();
    for (code, bits) in [(0, 0x3fc0_0000u32), (2, 0x3fc0), (1, 0x3e00)] {
        let out = Tensor::allocate(&backend, DType::F32, &[32]).unwrap();
        m.launch("store_by_code", dims(1, 32), Schedule::default(), &[ptr(&out), KernelArg::I32(code)]).unwrap();
        let bytes = out.read().unwrap();
        let first = match code {
            0 => u32::from_le_bytes(bytes[..4].try_into().unwrap()),
            _ => u16::from_le_bytes(bytes[..2].try_into().unwrap()) as u32,
        };
        assert_eq!(first, bits, "code {code}");
    }
    let error = m.launch("store_by_code", dims(1, 32), Schedule::default(), &[ptr(&out), KernelArg::I32(7)]).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("__trap()") && text.contains("kernels/common.h"), "{text}");
}

#[test]
fn launches_with_wrong_arguments_or_missing_kernels_are_refused_by_name() {
    let backend = backend_with(1);
    let m = module(&backend, "semantics.hip", SEMANTICS);
    let error = m.launch("block_sum", dims(1, 256), Schedule::default(), &[KernelArg::I32(1)]).unwrap_err();
    assert!(matches!(error, EngineError::ArgumentMismatch { expected: 3, given: 1, .. }), "{error}");
    let error = m.launch("no_such_kernel", dims(1, 1), Schedule::default(), &[]).unwrap_err().to_string();
    assert!(error.contains("simt_k_no_such_kernel"), "{error}");
    let error = m.launch("coordinates", dims(1, 2048), Schedule::default(), &[KernelArg::Pointer(0)]).unwrap_err().to_string();
    assert!(error.contains("2048 threads"), "{error}");

    let display_path = "src/backend/host/test_kernels/semantics.hip".to_string();
    let error = backend
        .load_module(&KernelSource {
            path: root().join(&display_path),
            display_path,
            kernels: vec!["not_in_this_file".into()],
            include_dirs: vec![root().join("kernels")],
        })
        .err()
        .expect("a kernel missing from its source is refused");
    let text = error.to_string();
    assert!(text.contains("not_in_this_file") && text.contains("semantics.hip"), "{text}");
}

#[test]
fn kernel_code_cannot_turn_the_host_checks_off() {
    let dir = tempfile::tempdir().unwrap();
    let backend = backend_with(1);
    let tries = [
        ("__attribute__((no_sanitize(\"thread\"))) __global__ void k(float* y) { y[threadIdx.x + 1] = 1.0f; }", 2),
        ("#define CAT(a, b) a##b\n__attribute__((CAT(no_, sanitize)(\"bounds\"))) __global__ void k(float* y) { y[0] = 1.0f; }", 3),
        ("[[gnu::no_sanitize_thread]] __global__ void k(float* y) { y[threadIdx.x + 1] = 1.0f; }", 2),
        ("__attribute__((disable_sanitizer_instrumentation)) __global__ void k(float* y) { y[0] = 1.0f; }", 2),
        ("SIMT_NOSAN __global__ void k(float* y) { y[threadIdx.x + 1] = 1.0f; }", 2),
        ("#pragma GCC optimize(\"tree-sra\")\n__global__ void k(float* y) { y[0] = 1.0f; }", 2),
        ("#pragma GCC reset_options\n__global__ void k(float* y) { y[0] = 1.0f; }", 2),
    ];
    // each with the line the compiler must name (a comment line comes first)
    for (n, (text, line)) in tries.iter().enumerate() {
        let path = dir.path().join(format!("off{n}.hip"));
        std::fs::write(&path, format!("// tries to turn the checks off\n{text}\n")).unwrap();
        let source = KernelSource { path, display_path: format!("off{n}.hip"), kernels: vec!["k".into()], include_dirs: vec![] };
        let error = backend.load_module(&source).err().unwrap_or_else(|| panic!("{text}: built"));
        let said = error.to_string();
        assert!(said.contains(&format!("off{n}.hip:{line}:")) && said.contains("poisoned"), "{text}: {said}");
        assert!(said.contains("the host build refuses what would turn its checks off"), "{said}");
    }
}

#[test]
fn compile_errors_come_back_with_the_compiler_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.hip");
    std::fs::write(&path, "extern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }\n").unwrap();
    let backend = HostBackend::new(HostOptions {
        prelude: root().join("kernels/host/prelude.h"),
        cache_dir: dir.path().join("cache"),
        workers: 1,
        warp_size: 32,
    })
    .unwrap();
    let error = backend
        .load_module(&KernelSource {
            path: path.clone(),
            display_path: "broken.hip".into(),
            kernels: vec!["broken".into()],
            include_dirs: vec![],
        })
        .err()
        .expect("compile error");
    let text = error.to_string();
    assert!(text.contains("compiling broken.hip") && text.contains("undefined_name"), "{text}");
    let _ = Path::new(&path);
}

const MEMCHECK: &[&str] = &[
    "read_past_end",
    "read_before_start",
    "shared_overrun",
    "shared_overrun_by_pointer",
    "local_overrun",
    "local_overrun_2d",
    "local_underrun",
    "far_past_end",
    "shared_race",
    "shared_write_after_read",
    "warp_ordered",
    "shared_atomics",
    "dynamic_overrun",
    "writes_input",
    "every_lane_stores",
    "atomic_total",
];

/// Launches `kernel` over x (64 floats) and y (64 floats) with both watched, in every thread
/// order, and returns each launch's findings.
fn findings_of(m: &dyn Module, kernel: &str, dynamic_shared: u32, with_n: bool) -> Vec<Vec<crate::backend::MemoryFinding>> {
    let backend = backend_with(1);
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let input = tensor(&backend, DType::F32, &x);
    let out = Tensor::allocate(&backend, DType::F32, &[64]).unwrap();
    let watched = [input.watched("x", false), out.watched("y", true)];
    let mut args = vec![ptr(&input), ptr(&out)];
    if with_n {
        args.push(KernelArg::I32(64));
    }
    let launch = LaunchDims { grid: [1, 1, 1], block: [64, 1, 1], dynamic_shared };
    [ThreadOrder::Forward, ThreadOrder::Reversed, ThreadOrder::Shuffled(5), ThreadOrder::WarpAhead(1)]
        .into_iter()
        .map(|thread_order| {
            let schedule = Schedule { thread_order, shared_poison: Some(0xa5), ..Schedule::default() };
            m.launch_watched(kernel, launch, schedule, &args, &watched).unwrap_or_else(|e| panic!("{kernel}: {e}")).findings
        })
        .collect()
}

fn only_finding(launches: &[Vec<crate::backend::MemoryFinding>], kind: crate::backend::MemoryFindingKind) -> String {
    for findings in launches {
        assert_eq!(findings.len(), 1, "{launches:#?}");
        assert_eq!(findings[0].kind, kind, "{findings:#?}");
    }
    launches[0][0].message.clone()
}

/// The finding of `kind` every launch has (a race may also read bytes nobody wrote yet,
/// depending on which thread ran first), from the launch in `order`.
fn finding_in_every_order(
    launches: &[Vec<crate::backend::MemoryFinding>],
    kind: crate::backend::MemoryFindingKind,
    order: usize,
) -> String {
    for findings in launches {
        assert!(findings.iter().any(|f| f.kind == kind), "{launches:#?}");
    }
    launches[order].iter().find(|f| f.kind == kind).unwrap().message.clone()
}

#[test]
fn reads_past_either_end_of_a_tensor_are_named_with_tensor_distance_and_line() {
    use crate::backend::MemoryFindingKind::*;
    let backend = backend_with(1);
    let m = module(&backend, "memcheck.hip", MEMCHECK);
    let past = only_finding(&findings_of(m.as_ref(), "read_past_end", 0, true), OutOfBoundsRead);
    assert!(past.starts_with("read 1 element past the end of `x` at src/backend/host/test_kernels/memcheck.hip:7 "), "{past}");
    assert!(past.contains("thread 63"), "{past}");
    let before = only_finding(&findings_of(m.as_ref(), "read_before_start", 0, true), OutOfBoundsRead);
    assert!(before.starts_with("read 2 elements before the start of `x` at src/backend/host/test_kernels/memcheck.hip:12 "), "{before}");
    assert!(before.ends_with("2 such reads in all"), "{before}");
}

/// A copy of a size known only at run time is a call of the C library's routine under GCC (and
/// of the instrumentation's under clang): it is checked as one read and one write of its bytes
/// all the same (GCC's had run unchecked, so a row copy past both tensors' ends passed).
#[test]
fn copies_and_clears_of_a_size_known_at_run_time_are_checked() {
    use crate::backend::MemoryFindingKind::{OutOfBoundsRead, OutOfBoundsWrite};
    let backend = backend_with(1);
    let kernels = ["copies_rows", "clears_rows", "moves_rows"];
    let m = module(&backend, "bulk_copies.hip", &kernels);
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    for extra in [0, 1] {
        for kernel in kernels {
            let input = tensor(&backend, DType::F32, &x);
            let out = Tensor::allocate(&backend, DType::F32, &[64]).unwrap();
            let watched = [input.watched("x", false), out.watched("y", true)];
            let mut args = if kernel == "clears_rows" { vec![ptr(&out)] } else { vec![ptr(&input), ptr(&out)] };
            args.extend([KernelArg::I32(8), KernelArg::I32(8), KernelArg::I32(extra)]);
            let launch = LaunchDims { grid: [1, 1, 1], block: [8, 1, 1], dynamic_shared: 0 };
            let mut report = m.launch_watched(kernel, launch, Schedule::default(), &args, &watched).unwrap();
            // moves_rows' memmove is the host's alone (`#if`): a static finding of the module's own
            let per_target = report.findings.iter().position(|f| f.kind == crate::backend::MemoryFindingKind::PerTargetCode);
            let per_target = report.findings.remove(per_target.expect("the module's host-only line is a finding"));
            assert!(per_target.message.starts_with("src/backend/host/test_kernels/bulk_copies.hip:25: line 25 compiled by the host build"));
            let kinds: Vec<_> = report.findings.iter().map(|f| f.kind).collect();
            let expected = match (extra, kernel) {
                (0, _) => vec![],
                (_, "clears_rows") => vec![OutOfBoundsWrite],
                _ => vec![OutOfBoundsRead, OutOfBoundsWrite],
            };
            assert_eq!(kinds, expected, "{kernel}, {extra} past the end: {:#?}", report.findings);
            // named by the kernel's line (the copy ends the kernel: no tail call hides it) and
            // by how far past the end the copy's range runs
            let line = [("copies_rows", 10), ("clears_rows", 17), ("moves_rows", 25)].iter().find(|(k, _)| *k == kernel).unwrap().1;
            for f in &report.findings {
                let (verb, name) = if f.kind == OutOfBoundsRead { ("read", "x") } else { ("wrote", "y") };
                let expected =
                    format!("{verb} 1 element past the end of `{name}` at src/backend/host/test_kernels/bulk_copies.hip:{line} ");
                assert!(f.message.starts_with(&expected), "{}", f.message);
            }
        }
    }
}

#[test]
fn an_access_far_from_every_tensor_is_named_and_stops_its_block_when_every_pointer_is_watched() {
    use crate::backend::MemoryFindingKind::OutOfBoundsWrite;
    let backend = backend_with(1);
    let m = module(&backend, "memcheck.hip", MEMCHECK);
    let far = only_finding(&findings_of(m.as_ref(), "far_past_end", 0, true), OutOfBoundsWrite);
    assert_eq!(
        far,
        "wrote memory that is no tensor's (nor a guard band, shared memory, its own stack or its module) at \
         src/backend/host/test_kernels/memcheck.hip:116 (block (0,0,0), thread 5)"
    );
    // with a pointer the launch does not watch, the addresses between tensors stay unjudged
    let x = tensor(&backend, DType::F32, &[1.0f32; 64]);
    let unwatched = tensor(&backend, DType::F32, &[0.0f32; 64]);
    let report = m
        .launch_watched(
            "read_past_end",
            dims(1, 64),
            Schedule::default(),
            &[ptr(&x), ptr(&unwatched), KernelArg::I32(63)],
            &[x.watched("x", false)],
        )
        .unwrap();
    assert_eq!(report.findings, vec![], "stores to an unwatched output are not judged");
}

#[test]
fn an_index_past_a_local_arrays_size_is_named_and_stops_its_block() {
    use crate::backend::MemoryFindingKind::ArrayIndexOutOfBounds;
    let backend = backend_with(1);
    let m = module(&backend, "memcheck.hip", MEMCHECK);
    let launches = findings_of(m.as_ref(), "local_overrun", 0, true);
    let overrun = only_finding(&launches, ArrayIndexOutOfBounds);
    assert_eq!(
        overrun,
        "indexed `acc[4]`, past the end of `acc` (4 elements) at src/backend/host/test_kernels/memcheck.hip:95 (block (0,0,0), \
         thread 0): an index outside the size the source declares; the block stopped there"
    );
    assert_eq!(launches[0][0].subject, "acc");
    let row = only_finding(&findings_of(m.as_ref(), "local_overrun_2d", 0, true), ArrayIndexOutOfBounds);
    // clang's check names the start of the array, not which of its two subscripts it is
    let clang = backend.compiler().identity.contains("clang");
    let want = if clang {
        "indexed `m` at index 4, past the end of its dimension (4 elements) at "
    } else {
        "indexed `m[t & 1][4]`, past the end of `m[t & 1]` (4 elements) at "
    };
    assert!(row.starts_with(want), "{row}");
    let under = only_finding(&findings_of(m.as_ref(), "local_underrun", 0, true), ArrayIndexOutOfBounds);
    assert!(
        under.starts_with("indexed `acc[-1]`, before the start of `acc` at src/backend/host/test_kernels/memcheck.hip:110 "),
        "{under}"
    );
}

#[test]
fn shared_overruns_races_and_unwritten_reads_name_the_array_index_and_lines() {
    use crate::backend::MemoryFindingKind::*;
    let backend = backend_with(1);
    let m = module(&backend, "memcheck.hip", MEMCHECK);
    // an index past the declared size is seen before the access (the block stops there); one
    // through a pointer lands in the array's redzone
    let overrun = only_finding(&findings_of(m.as_ref(), "shared_overrun", 0, false), ArrayIndexOutOfBounds);
    assert!(
        overrun.starts_with(
            "indexed `stage[64]`, past the end of `stage` (64 elements, `__shared__`, declared at line 16) at \
             src/backend/host/test_kernels/memcheck.hip:20 "
        ),
        "{overrun}"
    );
    let overrun = only_finding(&findings_of(m.as_ref(), "shared_overrun_by_pointer", 0, false), SharedOutOfBounds);
    assert!(
        overrun.starts_with(
            "read `stage[64]` past the end of `stage` (64 elements, declared at line 84) at src/backend/host/test_kernels/memcheck.hip:89 "
        ),
        "{overrun}"
    );
    let launches = findings_of(m.as_ref(), "shared_race", 0, false);
    // forward order: thread t reads stage[t + 1] before thread t + 1 writes it
    let race = finding_in_every_order(&launches, SharedRace, 0);
    assert_eq!(
        race,
        "race on `stage[1]` in block (0,0,0): thread 0 read it at src/backend/host/test_kernels/memcheck.hip:27, and thread 1 \
         wrote it at src/backend/host/test_kernels/memcheck.hip:26 with no barrier between; 64 such accesses in all"
    );
    // reversed order: thread t + 1 writes stage[t + 1] before thread t reads it
    let race = finding_in_every_order(&launches, SharedRace, 1);
    assert!(race.contains("wrote it at src/backend/host/test_kernels/memcheck.hip:26, and thread"), "{race}");
    assert!(race.contains("read it at src/backend/host/test_kernels/memcheck.hip:27 with no barrier between"), "{race}");
    // the last thread at a barrier runs on first, so thread 63 writes before thread 0 reads
    let war = only_finding(&findings_of(m.as_ref(), "shared_write_after_read", 0, false), SharedRace);
    assert!(war.starts_with("race on `stage[63]` in block (0,0,0): thread 63 wrote it at src/backend/host/test_kernels/memcheck.hip:36, and thread 0 read it at src/backend/host/test_kernels/memcheck.hip:35"), "{war}");
    let dynamic = only_finding(&findings_of(m.as_ref(), "dynamic_overrun", 64 * 4, false), SharedOutOfBounds);
    assert!(dynamic.starts_with("read `pool[64]` past the end of the launch's 256 bytes of dynamic shared memory"), "{dynamic}");

    let semantics = module(&backend, "semantics.hip", SEMANTICS);
    let unwritten = only_finding(&findings_of(semantics.as_ref(), "unwritten_shared", 0, false), SharedUnwrittenRead);
    assert!(
        unwritten.starts_with("read `buffer[63]` before any thread of the block wrote it, at src/backend/host/test_kernels/semantics.hip:"),
        "{unwritten}"
    );
}

#[test]
fn correct_kernels_have_no_findings_in_any_thread_order() {
    let backend = backend_with(1);
    let m = module(&backend, "memcheck.hip", MEMCHECK);
    for launch in findings_of(m.as_ref(), "warp_ordered", 0, false) {
        assert_eq!(launch, vec![]);
    }
    let out = Tensor::allocate(&backend, DType::I32, &[4]).unwrap();
    let report = m.launch_watched("shared_atomics", dims(4, 128), Schedule::default(), &[ptr(&out)], &[out.watched("out", true)]).unwrap();
    assert_eq!(report.findings, vec![]);
    assert_eq!(read::<i32>(&out), vec![128; 4]);
    let semantics = module(&backend, "semantics.hip", SEMANTICS);
    let x: Vec<f32> = (0..300 * 256).map(|i| (i % 7) as f32).collect();
    let input = tensor(&backend, DType::F32, &x);
    let sums = Tensor::allocate(&backend, DType::F32, &[300]).unwrap();
    for thread_order in [ThreadOrder::Forward, ThreadOrder::Reversed, ThreadOrder::Shuffled(9), ThreadOrder::WarpAhead(2)] {
        let schedule = Schedule { thread_order, shared_poison: Some(0xff), ..Schedule::default() };
        let args = [ptr(&input), ptr(&sums), KernelArg::I32(x.len() as i32)];
        let report = semantics
            .launch_watched("block_sum", dims(300, 256), schedule, &args, &[input.watched("x", false), sums.watched("out", true)])
            .unwrap();
        assert_eq!(report.findings, vec![], "{thread_order:?}");
    }
}

#[test]
fn stores_into_an_input_and_unordered_stores_to_one_output_element_are_named() {
    use crate::backend::MemoryFindingKind::*;
    let backend = backend_with(1);
    let m = module(&backend, "memcheck.hip", MEMCHECK);
    let input = only_finding(&findings_of(m.as_ref(), "writes_input", 0, false), InputWrite);
    assert!(
        input.starts_with(
            "wrote `x[0]`, an input, at src/backend/host/test_kernels/memcheck.hip:68 (block (0,0,0), thread 0); 64 such writes in all"
        ),
        "{input}"
    );
    let race = only_finding(&findings_of(m.as_ref(), "every_lane_stores", 0, false), GlobalRace);
    // the lanes leave the last shuffle in wake order: which two meet first varies
    assert!(race.starts_with("race on `y[0]`: thread "), "{race}");
    assert!(race.contains(" of block (0,0,0) wrote it at src/backend/host/test_kernels/memcheck.hip:76, and thread "), "{race}");
    assert!(race.ends_with(" with no barrier or order between the two; 62 such stores in all"), "{race}");
    for launch in findings_of(m.as_ref(), "atomic_total", 0, false) {
        assert_eq!(launch, vec![]);
    }
}

#[test]
fn a_source_in_a_folder_named_with_a_space_a_quote_a_newline_and_an_equals_sign_builds_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join("a b\"c\nd=e");
    let display_path = "kernels/k \"1\"\n.hip".to_string();
    // the prelude too (it holds inline asm, whose file GCC names in its assembly as it is)
    std::fs::create_dir_all(odd.join("kernels/host")).unwrap();
    for header in ["kernels/common.h", "kernels/host/prelude.h"] {
        std::fs::copy(root().join(header), odd.join(header)).unwrap();
    }
    let kernel = "#include \"common.h\"\n\
                  extern \"C\" __global__ void stuck(float* x) {\n\
                  \x20 if (threadIdx.x < 16) __syncthreads();\n\
                  \x20 x[threadIdx.x] = 1.0f;\n\
                  }\n\
                  extern \"C\" __global__ void by_code(float* out, int code) { tf_store(out, code, threadIdx.x, 1.5f); }\n";
    std::fs::write(odd.join(&display_path), kernel).unwrap();
    let backend = HostBackend::new(HostOptions {
        prelude: odd.join("kernels/host/prelude.h"),
        cache_dir: odd.join("cache"),
        workers: 1,
        warp_size: 32,
    })
    .unwrap();
    let m = backend
        .load_module(&KernelSource {
            path: odd.join(&display_path),
            display_path: display_path.clone(),
            kernels: vec!["stuck".into(), "by_code".into()],
            include_dirs: vec![odd.join("kernels")],
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let out = Tensor::allocate(&backend, DType::F32, &[64]).unwrap();
    let error = m.launch("stuck", dims(1, 64), Schedule::default(), &[ptr(&out)]).unwrap_err().to_string();
    // the name as written, line and all: the generated `#line` escaped it, and no folder of
    // the build leaked into it
    assert!(error.contains(&format!("{display_path}:3")), "{error}");
    // a header's name is the repository's too (the compiler saw the folder through a link)
    let error = m.launch("by_code", dims(1, 32), Schedule::default(), &[ptr(&out), KernelArg::I32(7)]).unwrap_err().to_string();
    assert!(error.contains("__trap()") && error.contains("kernels/common.h:"), "{error}");
    assert!(!error.contains(odd.to_str().unwrap()) && !error.contains("root/"), "{error}");
}

/// The static checks around another backend (here the host itself, whose modules also report
/// them): the wrapper adds the host build's findings to every launch of a source that has
/// them, and nothing to a clean source.
#[test]
fn static_checks_ride_on_every_launch_of_a_wrapped_backend() {
    use crate::backend::MemoryFindingKind;
    use crate::backend::static_checks::{StaticCheckOptions, StaticChecked};
    let options =
        StaticCheckOptions { prelude: root().join("kernels/host/prelude.h"), cache_dir: root().join("target/kernel-cache"), warp_size: 32 };
    let checked = StaticChecked::new(Box::new(backend_with(2)), options).expect("static checks");
    assert!(checked.toolchain().contains("static checks by "), "{}", checked.toolchain());
    for (file, kernel, findings, state) in
        [("offsets.hip", "narrowed_copy", 2, 0), ("offsets_wide.hip", "wide_copy", 0, 0), ("state.hip", "counted", 0, 2)]
    {
        let display_path = format!("src/backend/host/test_kernels/{file}");
        let source =
            KernelSource { path: root().join(&display_path), display_path, kernels: vec![kernel.to_string()], include_dirs: vec![] };
        checked.build_module(&source).unwrap();
        let m = checked.load_module(&source).unwrap();
        let x = tensor(&checked, DType::F32, &[1.0f32; 64]);
        let y = tensor(&checked, DType::F32, &[0.0f32; 64]);
        let report = m.launch(kernel, dims(2, 32), Schedule::default(), &[ptr(&x), ptr(&y), KernelArg::I32(32)]).unwrap();
        assert_eq!(read::<f32>(&y), vec![1.0f32; 64], "{kernel}");
        // the host module's own finding and the wrapper's
        let narrow: Vec<_> = report.findings.iter().filter(|f| f.kind == MemoryFindingKind::NarrowOffset).collect();
        assert_eq!(narrow.len(), findings, "{kernel}: {narrow:#?}");
        for f in narrow {
            assert!(f.message.starts_with("src/backend/host/test_kernels/offsets.hip:4: "), "{f:#?}");
        }
        let module_state: Vec<_> = report.findings.iter().filter(|f| f.kind == MemoryFindingKind::ModuleState).collect();
        assert_eq!(module_state.len(), state, "{kernel}: {module_state:#?}");
        for f in module_state {
            assert!(f.message.starts_with("src/backend/host/test_kernels/state.hip:4: `launches` "), "{f:#?}");
        }
    }
}

const ALIGN: &[&str] = &["pair_read_odd", "vector_read_shifted", "shared_pair_odd", "aligned_reads"];

/// Launches `kernel` of align.hip over x (256 floats, or 512 16-bit values) and y (64 floats)
/// in one block of 64 threads, forward and reversed; each launch's findings and y.
fn align_launches(kernel: &str) -> Vec<(Vec<crate::backend::MemoryFinding>, Vec<f32>)> {
    let backend = backend_with(1);
    let m = module(&backend, "align.hip", ALIGN);
    let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let input = tensor(&backend, DType::F32, &x);
    [ThreadOrder::Forward, ThreadOrder::Reversed]
        .into_iter()
        .map(|thread_order| {
            let out = tensor(&backend, DType::F32, &[-1.0f32; 64]);
            let watched = [input.watched("x", false), out.watched("y", true)];
            let schedule = Schedule { thread_order, shared_poison: Some(0xa5), ..Schedule::default() };
            let report = m
                .launch_watched(kernel, dims(1, 64), schedule, &[ptr(&input), ptr(&out)], &watched)
                .unwrap_or_else(|e| panic!("{kernel}: {e}"));
            (report.findings, read::<f32>(&out))
        })
        .collect()
}

#[test]
fn misaligned_loads_of_a_tensor_are_named_and_a_misaligned_vector_stops_its_block() {
    use crate::backend::MemoryFindingKind::Misaligned;
    let launches = align_launches("pair_read_odd");
    for (findings, _) in &launches {
        assert_eq!(findings.iter().map(|f| f.kind).collect::<Vec<_>>(), vec![Misaligned], "{findings:#?}");
        assert_eq!(findings[0].subject, "x");
    }
    // forward: thread 0 reads 16-bit elements 1 and 2 (byte 2); the thread runs on (x86 reads it)
    assert_eq!(
        launches[0].0[0].message,
        "misaligned 4-byte read of `x` at element 0 (byte 2) at src/backend/host/test_kernels/align.hip:11 (block (0,0,0), thread 0): \
         a GPU faults on an access whose address is not a multiple of its size; 64 such accesses in all"
    );
    assert!(launches[0].1.iter().all(|&y| y != -1.0), "{:?}", launches[0].1);
    assert!(launches[1].0[0].message.contains("at element 63 (byte 254) "), "{}", launches[1].0[0].message);
    // a 16-byte vector load of 4-byte floats from element 1: the block stops there, before
    // x86's aligned vector move faults for real (clang splits the copy into its four floats)
    if backend_with(1).compiler().identity.contains("clang") {
        return;
    }
    let vector = align_launches("vector_read_shifted");
    let message = &vector[0].0.iter().find(|f| f.kind == Misaligned).expect("misaligned").message;
    assert!(
        message.starts_with("misaligned 16-byte read of `x` at element 1 (byte 4) at src/backend/host/test_kernels/align.hip:18 "),
        "{message}"
    );
    assert!(message.ends_with("its size; the block stopped there"), "{message}");
    assert_eq!(vector[0].1[0], 6.0);
    assert_eq!(vector[0].1[1..], [-1.0f32; 63]);
}

#[test]
fn misaligned_loads_of_shared_memory_name_the_array_and_aligned_ones_pass() {
    use crate::backend::MemoryFindingKind::Misaligned;
    for (findings, _) in align_launches("shared_pair_odd") {
        assert_eq!(findings.iter().map(|f| f.kind).collect::<Vec<_>>(), vec![Misaligned], "{findings:#?}");
        assert_eq!(findings[0].subject, "stage");
        assert!(findings[0].message.starts_with("misaligned 4-byte read of `__shared__` `stage` at byte "), "{}", findings[0].message);
        assert!(findings[0].message.contains("align.hip:32 "), "{}", findings[0].message);
    }
    for (findings, y) in align_launches("aligned_reads") {
        assert_eq!(findings, vec![]);
        assert_eq!(y, (0..64).map(|i| i as f32).collect::<Vec<_>>());
    }
}

/// `fast_math.hip`'s function `which` over `x`, twice: both launches must agree bit for bit.
fn fast_math(which: i32, x: &[f32]) -> Vec<f32> {
    let backend = backend_with(2);
    let m = module(&backend, "fast_math.hip", &["fast_math"]);
    let input = tensor(&backend, DType::F32, x);
    let runs: Vec<Vec<u32>> = (0..2)
        .map(|_| {
            let out = Tensor::allocate(&backend, DType::F32, &[x.len()]).unwrap();
            let args = [ptr(&input), ptr(&out), KernelArg::I32(x.len() as i32), KernelArg::I32(which)];
            m.launch("fast_math", dims(x.len().div_ceil(64) as u32, 64), Schedule::default(), &args).unwrap();
            read::<f32>(&out).iter().map(|v| v.to_bits()).collect()
        })
        .collect();
    assert_eq!(runs[0], runs[1], "function {which} is not deterministic");
    runs[0].iter().map(|&b| f32::from_bits(b)).collect()
}

fn ulps(got: f32, want: f64) -> f64 {
    let want32 = want as f32;
    let unit = f32::from_bits(want32.abs().to_bits() + 1) - want32.abs();
    (got as f64 - want).abs() / unit as f64
}

#[test]
fn fast_exp_and_log_err_as_the_hardware_does_and_the_accurate_ones_stay_accurate() {
    // __expf is ex2 of the f32 product x * log2(e): its error grows with |x| (CUDA bounds it by
    // 2 + 1.173 |x| ulp), and a subnormal result flushes to zero
    let x: Vec<f32> = (0..512).map(|i| -20.0 + i as f32 * 0.078125 + 0.0013).collect();
    let fast = fast_math(0, &x);
    let accurate = fast_math(1, &x);
    let worst = x.iter().zip(&fast).map(|(&v, &f)| ulps(f, (v as f64).exp())).fold(0.0, f64::max);
    assert!(worst > 4.0 && worst < 2.0 + 1.173 * 20.0 + 1.0, "__expf worst {worst} ulp");
    assert!(x.iter().zip(&accurate).all(|(&v, &a)| ulps(a, (v as f64).exp()) <= 1.0));
    assert_eq!(fast_math(0, &[-100.0, 0.0, 1.0])[..2], [0.0, 1.0]);
    assert!(fast_math(1, &[-100.0])[0] > 0.0, "expf keeps subnormal results");
    // __logf is lg2 times ln 2, with an absolute error near 1: large relative to log(1 + e)
    let near_one = [1.0001f32, 0.9999, 1.001];
    for (&v, &f) in near_one.iter().zip(&fast_math(2, &near_one)) {
        let error = (f as f64 - (v as f64).ln()).abs();
        assert!(error > 1e-7 && error < 4e-7, "__logf({v}) off by {error}");
    }
    assert_eq!(fast_math(2, &[1.0, 2.0, 0.0, -1.0])[..3], [0.0, std::f32::consts::LN_2, f32::NEG_INFINITY]);
    assert!(fast_math(3, &near_one).iter().zip(&near_one).all(|(&a, &v)| ulps(a, (v as f64).ln()) <= 1.0));
}

#[test]
fn fast_division_sine_and_rsqrt_err_as_the_hardware_does() {
    // __fdividef(1, y) is 0 for 2^126 < |y| < 2^128, where 1 / y is a normal or subnormal value
    let big = [2.0f32.powi(127), -1.5 * 2.0f32.powi(126), 3.0];
    let fast = fast_math(6, &big);
    assert_eq!(fast[..2].iter().map(|v| v.to_bits()).collect::<Vec<_>>(), [0.0f32.to_bits(), (-0.0f32).to_bits()]);
    assert!(ulps(fast[2], 1.0 / 3.0) <= 2.0);
    assert!(fast_math(7, &big)[0] > 0.0);
    // __sinf scales to turns in f32 first: far from zero it loses the argument's low bits
    let far: Vec<f32> = (0..256).map(|i| 1000.0 + i as f32 * 0.37).collect();
    let worst = far.iter().zip(&fast_math(4, &far)).map(|(&v, &f)| (f as f64 - (v as f64).sin()).abs()).fold(0.0, f64::max);
    assert!(worst > 1e-5 && worst < 1e-3, "__sinf off by up to {worst}");
    assert!(far.iter().zip(&fast_math(5, &far)).all(|(&v, &a)| ulps(a, (v as f64).sin()) <= 1.0));
    // rsqrtf is 2 ulp off where the exact result is not a float, exact where it is
    let r = fast_math(8, &[2.0, 4.0, 0.25, 3.0]);
    assert_eq!(ulps(r[0], 0.5f64.sqrt()).round(), 2.0);
    assert_eq!(r[1..3], [0.5, 2.0]);
    let correctly_rounded = fast_math(12, &[2.0, 3.0]);
    assert!(ulps(correctly_rounded[0], 0.5f64.sqrt()) <= 0.5 && ulps(correctly_rounded[1], (1.0f64 / 3.0).sqrt()) <= 0.5);
    assert_eq!(fast_math(11, &[-1.0, 0.5, 2.0, f32::NAN]), [0.0, 0.5, 1.0, 0.0]);
    assert!(fast_math(9, &[4.0])[0] > 31.9 && fast_math(9, &[-4.0])[0].is_nan());
    let sum = fast_math(10, &[0.5])[0] as f64;
    assert!((sum - (0.5f64.sin() + 0.5f64.cos())).abs() < 1e-6);
}

/// The module-state findings of one launch of `kernel` in `file` (x and y of 64 floats).
fn state_findings(file: &str, kernel: &str) -> Vec<crate::backend::MemoryFinding> {
    use crate::backend::MemoryFindingKind;
    let backend = backend_with(1);
    let m = module(&backend, file, &[kernel]);
    let x = tensor(&backend, DType::F32, &[1.0f32; 64]);
    let y = tensor(&backend, DType::F32, &[0.0f32; 64]);
    let report = m.launch(kernel, dims(1, 64), Schedule::default(), &[ptr(&x), ptr(&y), KernelArg::I32(64)]).unwrap();
    report.findings.into_iter().filter(|f| f.kind == MemoryFindingKind::ModuleState).collect()
}

/// Launches `kernel` of `file`, whose host build copies x (0 to 63) into y by a path no memory
/// check sees: asserts that the copy happened, and returns the launch's findings of `kind` and
/// whether the compiler is clang (which writes no SSA dump).
fn unseen_copy_findings(file: &str, kernel: &str, kind: crate::backend::MemoryFindingKind) -> (Vec<crate::backend::MemoryFinding>, bool) {
    let backend = backend_with(1);
    let m = module(&backend, file, &[kernel]);
    let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let input = tensor(&backend, DType::F32, &x);
    let out = tensor(&backend, DType::F32, &[0.0f32; 64]);
    let report = m.launch(kernel, dims(1, 64), Schedule::default(), &[ptr(&input), ptr(&out), KernelArg::I32(64)]).unwrap();
    assert_eq!(read::<f32>(&out), x, "{kernel}: the copy");
    let clang = backend.compiler().identity.contains("clang");
    (report.findings.into_iter().filter(|f| f.kind == kind).collect(), clang)
}

#[test]
fn inline_assembly_in_kernel_code_is_a_static_finding_named_with_its_line() {
    let (found, clang) = unseen_copy_findings("assembly.hip", "stores_in_assembly", crate::backend::MemoryFindingKind::InlineAssembly);
    if clang {
        // clang writes no SSA dump: the check is a GCC build's (the README says so)
        assert!(found.is_empty(), "{found:#?}");
        return;
    }
    assert_eq!(found.len(), 1, "{found:#?}");
    // the compiler barrier on line 8 is no finding, the store on line 10 is
    assert_eq!(found[0].count, 1);
    assert_eq!(
        found[0].message,
        "src/backend/host/test_kernels/assembly.hip:10: inline assembly (`movl %1, %0`) runs unchecked on the host (no \
         memory check sees what it loads or stores), and no GPU compiler builds it: the host's gates judge code that a \
         GPU never runs"
    );
    // the runtime's own assembly (the prelude's) is none of the kernel's
    let backend = backend_with(1);
    let lint = backend.build(&test_source("assembly.hip", "stores_in_assembly")).unwrap().lint;
    assert_eq!(lint.assembly.len(), 1, "{lint:#?}");
    assert!(backend.build(&test_source("state.hip", "counted")).unwrap().lint.assembly.is_empty());
}

#[test]
fn an_x86_intrinsic_in_kernel_code_is_a_static_finding_named_with_its_line() {
    let (found, clang) =
        unseen_copy_findings("intrinsics.hip", "stores_with_intrinsics", crate::backend::MemoryFindingKind::InlineAssembly);
    if clang {
        // clang writes no SSA dump: the check is a GCC build's (the README says so)
        assert!(found.is_empty(), "{found:#?}");
        return;
    }
    assert_eq!(found.len(), 1, "{found:#?}");
    // the helper's store through `_mm_stream_si32` (line 7); `_mm_load_ss` and `_mm_cvtss_f32`
    // are a plain load and a lane read, which reach no builtin
    assert_eq!(found[0].count, 1, "{:#?}", found[0]);
    assert_eq!(
        found[0].message,
        "src/backend/host/test_kernels/intrinsics.hip:7: x86 intrinsic (`_mm_stream_si32`) runs unchecked on the host \
         (no memory check sees what it loads or stores), and no GPU compiler builds it: the host's gates judge code that \
         a GPU never runs"
    );
}

#[test]
fn stores_of_the_math_routines_that_store_through_a_pointer_are_checked() {
    use crate::backend::MemoryFindingKind::*;
    let backend = backend_with(1);
    let m = module(&backend, "pointer_math.hip", &["splits"]);
    let x: Vec<f32> = (1..=8).map(|i| i as f32 * 1.5).collect();
    for extra in [0, 1] {
        let input = tensor(&backend, DType::F32, &x);
        let outputs: Vec<Tensor> =
            [DType::F32, DType::I32, DType::F32].iter().map(|&t| Tensor::allocate(&backend, t, &[8]).unwrap()).collect();
        let watched = [
            input.watched("x", false),
            outputs[0].watched("mantissa", true),
            outputs[1].watched("exponent", true),
            outputs[2].watched("whole", true),
        ];
        let mut args: Vec<KernelArg> = [&input].into_iter().chain(&outputs).map(ptr).collect();
        args.extend([KernelArg::I32(8), KernelArg::I32(extra)]);
        let report = m.launch_watched("splits", dims(1, 8), Schedule::default(), &args, &watched).unwrap();
        let kinds: Vec<_> = report.findings.iter().map(|f| f.kind).collect();
        if extra == 0 {
            assert_eq!(kinds, [], "{:#?}", report.findings);
            // 1.5 = 0.75 * 2^1, and 0.75 * 8 = 6 + 0
            assert_eq!((read::<f32>(&outputs[0])[0], read::<i32>(&outputs[1])[0], read::<f32>(&outputs[2])[0]), (0.0, 1, 6.0));
            continue;
        }
        // the C library stored the last thread's exponent and whole part past both ends, unseen
        assert_eq!(kinds, [OutOfBoundsWrite], "{:#?}", report.findings);
        // two stores of the C library's (clang stores frexpf's exponent itself too: three)
        assert!(report.findings[0].count >= 2, "{:#?}", report.findings);
        let expected = "wrote 1 element past the end of `exponent` at src/backend/host/test_kernels/pointer_math.hip:9 ";
        assert!(report.findings[0].message.starts_with(expected), "{}", report.findings[0].message);
    }
}

#[test]
fn a_printf_that_stores_a_count_through_n_stops_its_block_and_one_that_prints_does_not() {
    let backend = backend_with(1);
    let m = module(&backend, "prints_a_count.hip", &["prints", "counts_through_printf"]);
    let y = tensor(&backend, DType::F32, &[0.0f32; 4]);
    let printed = m.launch("prints", dims(1, 4), Schedule::default(), &[ptr(&y), KernelArg::I32(4)]).unwrap();
    assert_eq!(read::<f32>(&y), [1.0; 4]);
    // its own line is the host's alone (no GPU build here has printf): that finding and no other
    let kinds: Vec<_> = printed.findings.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [crate::backend::MemoryFindingKind::PerTargetCode], "{:#?}", printed.findings);
    let counts = tensor(&backend, DType::I32, &[7i32; 4]);
    let error = m.launch("counts_through_printf", dims(1, 4), Schedule::default(), &[ptr(&counts), KernelArg::I32(4)]).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("called printf with a %n conversion (format \"%d%n\")"), "{text}");
}

#[test]
fn a_line_the_host_build_compiles_and_a_gpu_build_does_not_is_a_static_finding() {
    // the host build is preprocessed as it compiles (its wrapper beside its copy), so a source
    // that looks for the wrapper takes the host's path in the comparison too
    let backend = backend_with(1);
    let built = backend.build(&test_source("build_aware.hip", "copies_but_the_last")).unwrap();
    let origin = "(`#if` at src/backend/host/test_kernels/build_aware.hip:4)";
    let at = "src/backend/host/test_kernels/build_aware.hip";
    let expected: Vec<String> = ["a gfx1201", "an sm_90"]
        .iter()
        .flat_map(|target| {
            [
                format!("{at}:5: line 5 compiled by the host build and not by {target} build: the host's checks vouch for code that GPU never runs {origin}"),
                format!("{at}:7: line 7 compiled by {target} build and not by the host build: no host check sees code that GPU runs {origin}"),
            ]
        })
        .collect();
    assert_eq!(built.lint.targets, expected);
    // a source with no directive that can make builds differ is not compared at all
    assert!(backend.build(&test_source("state.hip", "counted")).unwrap().lint.targets.is_empty());
}

#[test]
fn a_c_library_routine_no_gpu_has_is_a_static_finding_named_with_its_line() {
    let kind = crate::backend::MemoryFindingKind::HostOnlyCall;
    // read off the object's symbols: GCC's build and clang's alike; expf and sqrtf are device code's
    let (found, _) = unseen_copy_findings("library_calls.hip", "stores_through_the_c_library", kind);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].count, 1);
    assert_eq!(
        found[0].message,
        "src/backend/host/test_kernels/library_calls.hip:13: uses `wmemcpy` (`wmemcpy((wchar_t*)&y[i], (const wchar_t*)&v, \
         1);`), which no GPU compiler provides to device code: the host runs it unchecked (no memory check sees what it \
         loads or stores), and the host's gates judge code that a GPU never runs"
    );
    // none in a kernel that uses only what device code has
    let backend = backend_with(1);
    assert!(backend.build(&test_source("state.hip", "counted")).unwrap().lint.calls.is_empty());
    assert!(backend.build(&test_source("assembly.hip", "stores_in_assembly")).unwrap().lint.calls.is_empty());
}

#[test]
fn writable_module_scope_storage_is_a_static_finding_named_with_its_line() {
    let found = state_findings("state.hip", "counted");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].subject.as_str(), found[0].count), ("kernel", 2));
    assert_eq!(
        found[0].message,
        "src/backend/host/test_kernels/state.hip:4: `launches` (`__device__ unsigned launches;`) is writable module-scope \
         storage: it keeps its value from one launch to the next, so a result can change after any number of launches, \
         which no test run certifies (pass it as an argument, keep it in `__shared__` memory, or make it `const` or \
         `__constant__`) (and 1 more such objects)"
    );
    let lint = backend_with(1).build(&test_source("state.hip", "counted")).unwrap().lint;
    assert!(
        lint.state[1].starts_with("src/backend/host/test_kernels/state.hip:7: `calls_so_far()::calls` (`static int calls = 0;`)"),
        "{lint:#?}"
    );
    assert_eq!(lint.offsets, Vec::<String>::new());
}

#[test]
fn constant_and_const_tables_are_no_module_state() {
    assert_eq!(state_findings("state_free.hip", "tabled"), vec![]);
}

fn test_source(file: &str, kernel: &str) -> KernelSource {
    let display_path = format!("src/backend/host/test_kernels/{file}");
    KernelSource {
        path: root().join(&display_path),
        display_path,
        kernels: vec![kernel.to_string()],
        include_dirs: vec![root().join("kernels")],
    }
}

#[test]
fn host_buffers_fill_only_their_range_and_tensors_alone() {
    let backend = backend_with(1);
    crate::tensor::tests::fills_the_data_alone(&backend);
    let mut buffer = backend.allocate(64).unwrap();
    buffer.fill(3, 10, &[0x77]).unwrap();
    buffer.fill(20, 6, &[1, 2, 3]).unwrap();
    let mut back = [0u8; 64];
    buffer.read(0, &mut back).unwrap();
    let want = |i: usize| match i {
        3..13 => 0x77,
        20..26 => [1, 2, 3][(i - 20) % 3],
        _ => 0,
    };
    assert!(back.iter().enumerate().all(|(i, b)| *b == want(i)), "{back:?}");
    assert!(buffer.fill(60, 5, &[0]).is_err());
    assert!(buffer.fill(0, 5, &[1, 2]).is_err(), "not a whole number of patterns");
}

#[test]
fn a_repeated_pattern_fills_every_length_whole() {
    for pattern in [&[9u8, 8][..], &[1, 2, 3], &[4, 5, 6, 7]] {
        for copies in [0usize, 1, 2, 3, 5, 8, 13, 1000, 32768] {
            let mut bytes = vec![0xeeu8; copies * pattern.len()];
            super::fill_repeating(&mut bytes, pattern);
            let want: Vec<u8> = pattern.repeat(copies);
            assert!(bytes == want, "{pattern:?} x {copies}");
        }
    }
}
