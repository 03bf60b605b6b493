//! The Rust side of the host runtime: the launch ABI shared with kernels/host/prelude.h,
//! loaded modules, and a pool of persistent worker threads that run a launch's blocks.
//! Workers are persistent because each keeps per-module fiber pools (a fresh OS thread per
//! launch would rebuild and leak them).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, OnceLock};

use crate::EngineError;
use crate::backend::{
    BlockOrder, KernelArg, KernelSource, LaunchDims, LaunchReport, MemoryFinding, MemoryFindingKind, Module, Schedule, ThreadOrder,
    WatchedTensor,
};

use super::findings::{self, FindingSites, SharedLayout};

pub const MESSAGE_BYTES: usize = 512;
const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// `simt_config` in the prelude.
#[repr(C)]
struct SimtConfig {
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared: u64,
    next_block: *mut u64,
    abort_flag: *mut c_int,
    shared_poison: c_int,
    wake_reverse: c_int,
    block_order: *const u32,
    thread_order: c_int,
    order_seed: u64,
    regions: *const SimtRegion,
    region_count: u32,
    check_memory: c_int,
}

/// Whether every pointer a launch passes lies in one of its watched tensors: then an access of
/// its kernel outside them all (and outside shared memory, its stack and its module) is a
/// finding, as it is past a guard band. A launch with an unwatched pointer (a test's plain
/// launch, a scratch buffer) keeps the addresses between the tensors unjudged.
fn every_pointer_watched(args: &[KernelArg], tensors: &[WatchedTensor]) -> bool {
    !tensors.is_empty()
        && args.iter().all(|a| match a {
            KernelArg::Pointer(p) => tensors.iter().any(|t| *p >= t.data && *p <= t.data + t.bytes),
            _ => true,
        })
}

/// `simt_region` in the prelude.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct SimtRegion {
    data: u64,
    bytes: u64,
    guard: u64,
    element_bytes: u32,
    index: u32,
    writers: *mut u64,
    writer_pcs: *mut u32,
}

/// `simt_finding` in the prelude.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SimtFinding {
    pub count: u64,
    pub place: i64,
    pub offset: i64,
    pub access_bytes: u32,
    pub write: u32,
    pub block: [u32; 3],
    pub thread: u32,
    pub pc: u64,
    pub other_thread: u32,
    pub other_write: u32,
    pub other_pc: u64,
    pub other_block: u32,
    pub shared: u32,
    /// An index past an array's size: the source line and column the compiler gives it.
    pub line: u32,
    pub column: u32,
}

/// `SIMT_F_KINDS` in the prelude, in its order.
pub(super) const FINDING_KINDS: [MemoryFindingKind; 9] = [
    MemoryFindingKind::OutOfBoundsRead,
    MemoryFindingKind::OutOfBoundsWrite,
    MemoryFindingKind::SharedOutOfBounds,
    MemoryFindingKind::SharedUnwrittenRead,
    MemoryFindingKind::SharedRace,
    MemoryFindingKind::InputWrite,
    MemoryFindingKind::GlobalRace,
    MemoryFindingKind::Misaligned,
    MemoryFindingKind::ArrayIndexOutOfBounds,
];

/// `simt_shared_var` in the prelude.
#[repr(C)]
struct SimtSharedVar {
    offset: u64,
    bytes: u64,
    redzone: u64,
}

/// `simt_result` in the prelude.
#[repr(C)]
struct SimtResult {
    code: c_int,
    message: [c_char; MESSAGE_BYTES],
    blocks: u64,
    switches: u64,
    inactive_reads: u64,
    stacks: u32,
    findings: [SimtFinding; FINDING_KINDS.len()],
}

/// `simt::Kernel` in the prelude: the exported `simt_k_<name>` descriptor.
#[repr(C)]
struct SimtKernel {
    run: *const c_void,
    parameter_count: u32,
    parameter_sizes: [u32; 32],
}

type RunBlocks = unsafe extern "C" fn(*const SimtKernel, *const SimtConfig, *mut *mut c_void, *mut SimtResult) -> c_int;
type RegisterShared = unsafe extern "C" fn(*const SimtSharedVar, u32) -> c_int;

pub struct HostModule {
    source: KernelSource,
    library_path: String,
    // never unloaded: worker threads keep fiber pools and TLS of every module they ran
    _library: &'static libloading::Library,
    run_blocks: RunBlocks,
    kernels: HashMap<String, usize>,
    workers: usize,
    /// Its `__shared__` variables, in the order registered with the prelude.
    shared: SharedLayout,
    /// PCs of findings as source lines.
    sites: FindingSites,
    /// The build's static findings (offsets, module state), reported with every launch.
    lint: super::StaticFindings,
}

impl HostModule {
    pub fn open(
        source: &KernelSource,
        library_path: &std::path::Path,
        lint: super::StaticFindings,
        workers: usize,
    ) -> Result<HostModule, EngineError> {
        let shown = library_path.display().to_string();
        let library = unsafe {
            libloading::os::unix::Library::open(Some(library_path), libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL)
        }
        .map_err(|e| EngineError::LoadLibrary { library: shown.clone(), reason: e.to_string() })?;
        let library: &'static libloading::Library = Box::leak(Box::new(libloading::Library::from(library)));
        let missing = |symbol: &str, hint: &str| EngineError::MissingSymbol {
            library: shown.clone(),
            symbol: symbol.to_string(),
            hint: hint.to_string(),
        };
        let run_blocks: RunBlocks = unsafe {
            *library
                .get::<RunBlocks>(b"simt_run_blocks\0")
                .map_err(|_| missing("simt_run_blocks", " (not built with the host prelude?)"))?
        };
        let shared = findings::shared_layout(library_path, source)?;
        let register: RegisterShared = unsafe {
            *library
                .get::<RegisterShared>(b"simt_register_shared\0")
                .map_err(|_| missing("simt_register_shared", " (built with an older host prelude?)"))?
        };
        let table: Vec<SimtSharedVar> =
            shared.vars.iter().map(|v| SimtSharedVar { offset: v.offset, bytes: v.bytes, redzone: v.redzone }).collect();
        if unsafe { register(table.as_ptr(), table.len() as u32) } != 0 {
            return Err(EngineError::BadLaunch {
                kernel: source.display_path.clone(),
                reason: format!("{} __shared__ variables (the host prelude takes at most 256)", table.len()),
            });
        }
        let mut kernels = HashMap::new();
        for kernel in &source.kernels {
            let symbol = format!("simt_k_{}\0", crate::backend::symbols::host_alias(kernel));
            let descriptor: *const SimtKernel = unsafe {
                *library
                    .get::<*const SimtKernel>(symbol.as_bytes())
                    .map_err(|_| missing(&symbol[..symbol.len() - 1], &format!(" (kernel `{kernel}` of {})", source.display_path)))?
            };
            kernels.insert(kernel.clone(), descriptor as usize);
        }
        let sites = FindingSites::new(library_path, source);
        Ok(HostModule { source: source.clone(), library_path: shown, _library: library, run_blocks, kernels, workers, shared, sites, lint })
    }
}

impl Module for HostModule {
    fn source(&self) -> &KernelSource {
        &self.source
    }

    fn launch_watched(
        &self,
        kernel: &str,
        dims: LaunchDims,
        schedule: Schedule,
        args: &[KernelArg],
        tensors: &[WatchedTensor],
    ) -> Result<LaunchReport, EngineError> {
        let bad = |reason: String| EngineError::BadLaunch { kernel: kernel.to_string(), reason };
        let descriptor = *self.kernels.get(kernel).ok_or_else(|| EngineError::MissingSymbol {
            library: self.library_path.clone(),
            symbol: format!("simt_k_{kernel}"),
            hint: format!(" (`{kernel}` is not a kernel of {})", self.source.display_path),
        })? as *const SimtKernel;
        let descriptor_ref = unsafe { &*descriptor };

        let expected_sizes = descriptor_ref.parameter_sizes[..descriptor_ref.parameter_count as usize].to_vec();
        let given_sizes: Vec<u32> = args.iter().map(|a| a.size()).collect();
        if expected_sizes != given_sizes {
            return Err(EngineError::ArgumentMismatch {
                kernel: kernel.to_string(),
                expected: expected_sizes.len(),
                expected_sizes,
                given: given_sizes.len(),
                given_sizes,
            });
        }
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Err(bad(format!("grid {:?} and block {:?} must have no zero dimension", dims.grid, dims.block)));
        }
        let threads = dims.block.iter().map(|&d| d as u64).product::<u64>();
        if threads > MAX_THREADS_PER_BLOCK as u64 {
            return Err(bad(format!("block of {threads} threads (at most {MAX_THREADS_PER_BLOCK})")));
        }
        let blocks = dims.grid.iter().map(|&d| d as u64).product::<u64>();
        if blocks > u32::MAX as u64 {
            return Err(bad(format!("grid of {blocks} blocks (at most {})", u32::MAX)));
        }
        let order: Option<Vec<u32>> = match schedule.block_order {
            BlockOrder::Linear => None,
            BlockOrder::Reversed => Some((0..blocks as u32).rev().collect()),
            BlockOrder::Shuffled(seed) => Some(shuffled(blocks as u32, seed)),
        };

        let (thread_order, order_seed) = match schedule.thread_order {
            ThreadOrder::Forward => (0, 0),
            ThreadOrder::Reversed => (1, 0),
            ThreadOrder::Shuffled(seed) => (2, seed),
            ThreadOrder::WarpAhead(seed) => (3, seed),
        };
        // each output's last writer per element, for the race check of this launch
        let mut writers: Vec<WriterTable> = tensors
            .iter()
            .map(|t| WriterTable::take(if t.writable { (t.bytes / t.element_bytes.max(1) as u64) as usize } else { 0 }))
            .collect();
        let mut regions: Vec<SimtRegion> = tensors
            .iter()
            .zip(writers.iter_mut())
            .enumerate()
            .map(|(index, (t, WriterTable { stamps, pcs }))| SimtRegion {
                data: t.data,
                bytes: t.bytes,
                guard: t.guard_bytes,
                element_bytes: t.element_bytes.max(1),
                index: index as u32,
                writers: if t.writable { stamps.as_mut_ptr() } else { std::ptr::null_mut() },
                writer_pcs: pcs.as_mut_ptr(),
            })
            .collect();
        regions.sort_by_key(|r| r.data);

        let mut values: Vec<[u8; 8]> = args.iter().map(|a| a.bytes()).collect();
        let mut pointers: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr() as *mut c_void).collect();
        let mut next_block: u64 = 0;
        let mut abort_flag: c_int = 0;
        let config = SimtConfig {
            grid: dims.grid,
            block: dims.block,
            dynamic_shared: dims.dynamic_shared as u64,
            next_block: &mut next_block,
            abort_flag: &mut abort_flag,
            shared_poison: schedule.shared_poison.map_or(0, |b| 0x100 | b as c_int),
            wake_reverse: schedule.wake_reverse as c_int,
            block_order: order.as_ref().map_or(std::ptr::null(), |o| o.as_ptr()),
            thread_order,
            order_seed,
            regions: regions.as_ptr(),
            region_count: regions.len() as u32,
            check_memory: if every_pointer_watched(args, tensors) { 3 } else { 1 },
        };
        let job = Job {
            run_blocks: self.run_blocks,
            kernel: descriptor as usize,
            config: &config as *const SimtConfig as usize,
            args: pointers.as_mut_ptr() as usize,
        };
        let workers = self.workers.min(blocks as usize).max(1);
        let results = pool().run(job, workers);
        drop(regions);
        writers.into_iter().for_each(WriterTable::give_back);

        let mut report = LaunchReport { block_threads: threads as u32, ..LaunchReport::default() };
        let mut first_error: Option<(c_int, String)> = None;
        for (k, kind) in FINDING_KINDS.iter().enumerate() {
            // the first in block order over the workers, and the count of all of them
            let seen: Vec<&SimtFinding> = results.iter().map(|r| &r.findings[k]).filter(|f| f.count > 0).collect();
            let Some(first) = seen.iter().min_by_key(|f| (f.block[2], f.block[1], f.block[0], f.thread)) else { continue };
            let count = seen.iter().map(|f| f.count).sum();
            let message =
                findings::describe(*kind, first, count, tensors, &self.shared, (dims.dynamic_shared as u64, dims.grid), &self.sites);
            let subject = findings::subject(*kind, first, tensors, &self.shared, &self.sites);
            report.findings.push(MemoryFinding { kind: *kind, subject, count, message });
        }
        report.findings.extend(crate::backend::static_checks::static_findings(&self.lint));
        for r in &results {
            report.blocks += r.blocks;
            report.switches += r.switches;
            report.inactive_lane_reads += r.inactive_reads;
            if r.code != 0 && first_error.is_none() {
                let bytes: Vec<u8> = r.message.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
                first_error = Some((r.code, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
        match first_error {
            None => Ok(report),
            Some((2, message)) => Err(bad(message)),
            Some((_, message)) => {
                Err(EngineError::KernelFault { kernel: kernel.to_string(), source_path: self.source.display_path.clone(), message })
            }
        }
    }
}

/// An output's last writer per element (the stamp the prelude's `region_write` keeps) and
/// where it wrote. Tables are kept for the next launch: a fresh one per launch was a fresh
/// mapping of the whole size, page-faulted in one page at a time, which cost more than the
/// kernel on a large output.
struct WriterTable {
    stamps: Vec<u64>,
    pcs: Vec<u32>,
}

/// At most this many idle tables are kept (a launch has a few outputs), none of more than
/// KEPT_WRITER_ELEMENTS (12 bytes each): a rare huge output's table is not held for the run.
const KEPT_WRITER_TABLES: usize = 8;
const KEPT_WRITER_ELEMENTS: usize = 1 << 25;
static WRITER_TABLES: Mutex<Vec<WriterTable>> = Mutex::new(Vec::new());

impl WriterTable {
    /// A table of `elements` zero stamps (the PCs are read only where a stamp is set).
    fn take(elements: usize) -> WriterTable {
        if elements == 0 {
            return WriterTable { stamps: Vec::new(), pcs: Vec::new() };
        }
        let mut kept = WRITER_TABLES.lock().unwrap_or_else(|p| p.into_inner());
        // the smallest that holds it, else the largest (grown)
        let fits = |t: &WriterTable| t.stamps.capacity() >= elements;
        let best = kept
            .iter()
            .enumerate()
            .min_by_key(|(_, t)| (!fits(t), if fits(t) { t.stamps.capacity() } else { usize::MAX - t.stamps.capacity() }))
            .map(|(i, _)| i);
        let table = best.map(|i| kept.swap_remove(i));
        drop(kept);
        let mut table = table.unwrap_or(WriterTable { stamps: Vec::new(), pcs: Vec::new() });
        table.stamps.clear();
        table.stamps.resize(elements, 0);
        table.pcs.clear();
        table.pcs.resize(elements, 0);
        table
    }

    fn give_back(self) {
        if self.stamps.capacity() == 0 || self.stamps.capacity() > KEPT_WRITER_ELEMENTS {
            return;
        }
        let mut kept = WRITER_TABLES.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < KEPT_WRITER_TABLES {
            kept.push(self);
        }
    }
}

/// A permutation of 0..count from a seed (Fisher-Yates over splitmix64).
fn shuffled(count: u32, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..count).collect();
    let mut state = seed;
    for i in (1..order.len()).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let j = (z % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// One launch as the workers see it: addresses that stay valid until every worker replied.
#[derive(Clone, Copy)]
struct Job {
    run_blocks: RunBlocks,
    kernel: usize,
    config: usize,
    args: usize,
}

struct Outcome {
    code: c_int,
    message: [c_char; MESSAGE_BYTES],
    blocks: u64,
    switches: u64,
    inactive_reads: u64,
    findings: [SimtFinding; FINDING_KINDS.len()],
}

struct WorkerPool {
    senders: Vec<Sender<(Job, Sender<Outcome>)>>,
    // one launch at a time: a launch takes every worker it asks for
    lock: Mutex<()>,
}

impl WorkerPool {
    fn run(&self, job: Job, workers: usize) -> Vec<Outcome> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let (reply, replies): (Sender<Outcome>, Receiver<Outcome>) = channel();
        let workers = workers.min(self.senders.len());
        for sender in &self.senders[..workers] {
            sender.send((job, reply.clone())).expect("host worker thread alive");
        }
        drop(reply);
        (0..workers).map(|_| replies.recv().expect("host worker replied")).collect()
    }
}

fn worker_loop(jobs: Receiver<(Job, Sender<Outcome>)>) {
    while let Ok((job, reply)) = jobs.recv() {
        let mut result = SimtResult {
            code: 0,
            message: [0; MESSAGE_BYTES],
            blocks: 0,
            switches: 0,
            inactive_reads: 0,
            stacks: 0,
            findings: [SimtFinding::default(); FINDING_KINDS.len()],
        };
        unsafe {
            (job.run_blocks)(job.kernel as *const SimtKernel, job.config as *const SimtConfig, job.args as *mut *mut c_void, &mut result);
        }
        let _ = reply.send(Outcome {
            code: result.code,
            message: result.message,
            blocks: result.blocks,
            switches: result.switches,
            inactive_reads: result.inactive_reads,
            findings: result.findings,
        });
    }
}

/// Worker threads for every launch of this process: as many as there are cores.
pub fn worker_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Starts the block worker threads now rather than at the first launch, and gives their
/// count: a process that serves job after job (the harness's workers) takes its picture of
/// which threads are its own after they exist.
pub fn start_block_workers() -> usize {
    pool().senders.len()
}

fn pool() -> &'static WorkerPool {
    static POOL: OnceLock<WorkerPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let senders = (0..worker_count().max(1))
            .map(|i| {
                let (sender, receiver) = channel();
                std::thread::Builder::new()
                    .name(format!("host-block-worker-{i}"))
                    .spawn(move || worker_loop(receiver))
                    .expect("spawn a host block worker");
                sender
            })
            .collect();
        WorkerPool { senders, lock: Mutex::new(()) }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn shuffled_is_a_permutation_and_depends_on_the_seed() {
        let a = super::shuffled(100, 1);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(a, super::shuffled(100, 2));
        assert_ne!(a, (0..100).collect::<Vec<_>>());
    }
}
