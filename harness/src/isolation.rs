//! Process isolation: each contract's records, and each control, run in a child process of
//! the `contracts` binary (as cargo-nextest runs each test). A child reports on a result
//! channel of its own (an inherited pipe on a high file descriptor, each message carrying its
//! job's random token), never on the standard output its kernels print to. A child that
//! crashes, runs past its time limit, calls exit() or loses its device context costs one red
//! record naming the cause, and what it had left runs again in a fresh process (and so a
//! fresh device context).
//!
//! The children are a pool of workers, `--jobs` at a time, each serving job after job with
//! one backend (one device context), so that isolation costs next to nothing when nothing
//! goes wrong. Which jobs share a process, and why:
//! - a contract's records go to a worker that served only clean contract-record jobs before
//!   (each job's kernels its own: no library is loaded twice), and the worker is kept after
//!   the job only when every record reported without error, its limits, threads,
//!   descriptors, children, signal handlers, environment and temporary folder are as they
//!   were before its first job (`sandbox::ProcessState`), and no library it loaded runs code
//!   of its own at exit (a destructor, an atexit handler: the process must end to show how
//!   that ends, so it ends after that job and its exit is judged as a child's always was);
//! - a control (planted to misbehave) runs in a worker that serves only controls, on the same
//!   terms: no record runs after a planted kernel, and no control meets a record job's
//!   leftovers. On a GPU each process opens a device context, which the driver makes one
//!   after another (about 0.2 s each on an H100, opened and closed): a process per control was
//!   10 s of a whole run;
//! - a job whose kernel stored where the run saw it must not (a guard band, an input, past a
//!   tensor or a `__shared__` array, misaligned) ends its process: such a store may have
//!   landed where nothing looks too;
//! - anything that faults, times out, errors or breaks the protocol ends its process, and
//!   what is left runs in a fresh one.
//!
//! Results of a job in a kept worker are trusted once its end is reported and checked; those
//! of a job after which the process ends, once it has ended cleanly.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::backend::{Backend, KernelSource};
use serde::{Deserialize, Serialize};

use crate::budget::Bytes;
use crate::builds::{self, SourceKey};
use crate::contract::{Contract, Control, Record};
use crate::exit_guard::EXIT_CALLED_STATUS;
use crate::gate::{Fault, Gate, Planted};
use crate::processes::{self, ProcessError};
use crate::runner::{self, CaseDone, CaseWatcher, Event, InputCache, Loaded, RecordResult, RunContext, RunReport, Settings};
use crate::sandbox::{self, Plan, ProcessState};

/// The file descriptor of the result channel in a child: high, so that nothing a kernel opens
/// lands on it, and below the usual limit of 1024 open files.
pub const CHANNEL_FD: i32 = 1000;

/// The label of the child that builds every kernel before the records run (its processes
/// compile and never launch, so they open no device).
pub const BUILD_LABEL: &str = "build";

/// The status of a child that could not run its job (it says why on standard error).
pub const CHILD_ERROR_STATUS: i32 = 4;

/// How much of a child's standard output and error the parent keeps: the last bytes of each,
/// whatever a kernel prints, shown as their last lines, each cut.
const TAIL_BYTES: usize = 8 << 10;
const TAIL_LINES: usize = 20;
const TAIL_LINE_CHARS: usize = 300;

/// The longest message on a result channel (a result with every failure site of a large case
/// is a few MiB); a longer line is ignored and noted.
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// After a child ends, how long the parent waits for the rest of its channel and output (what
/// it forked is killed first, so the pipes close).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// What a child process is asked to do.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildJob {
    /// Build these kernel sources on all cores, filling the cache.
    Build { sources: Vec<BuildSource> },
    /// Run these records of one contract, in this order.
    Records { contract: PathBuf, records: Vec<String> },
    /// Run one control.
    Control { contract: PathBuf, control: PathBuf },
}

/// A kernel source to build: its file, its kernel's symbol and its include folders.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildSource {
    pub path: PathBuf,
    pub symbol: String,
    pub include_dirs: Vec<PathBuf>,
}

impl BuildSource {
    fn of(source: &KernelSource) -> BuildSource {
        BuildSource { path: source.path.clone(), symbol: source.kernels.join(","), include_dirs: source.include_dirs.clone() }
    }

    fn key(&self) -> SourceKey {
        (self.path.clone(), self.symbol.clone())
    }
}

/// Everything a child is told of a job, as one line of JSON on its standard input.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobRequest {
    pub job: ChildJob,
    /// Where its messages go (the same descriptor for every job of a worker) and the job's
    /// own token.
    pub channel: ChannelSpec,
    /// The limits it runs its kernels under (record jobs).
    pub sandbox: Option<Plan>,
}

/// Where a child's messages go and the token each carries.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChannelSpec {
    pub fd: i32,
    pub token: String,
}

/// What a child says, one message per line of its result channel.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildMessage {
    /// A case of the record in flight is about to run (so a crash can be placed in it).
    Case(String),
    Result(Box<RecordResult>),
    /// Nothing of the job can run in this process (its contract no longer loads, the
    /// backend did not start): every record left gets this error.
    Fatal(String),
    /// The build job finished one source (its error, if it did not build).
    Built {
        source: PathBuf,
        symbol: String,
        error: Option<String>,
    },
    /// A case of the record in flight finished (for the parent's progress).
    CaseFinished(CaseDone),
    /// The job's first record is about to run: what came before is its start-up.
    Ready,
    /// The worker cannot run this job and ran none of it (a kernel that would have to be
    /// built under a sandbox that forbids writing the cache): it goes to a fresh process.
    Refused(String),
    /// The job is over and the worker waits for the next.
    Done(JobEnd),
}

/// How a worker stands after a job.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct JobEnd {
    /// Why no later job may run in this process, if one may not.
    pub refused: Option<String>,
    /// CPU seconds its hard limit leaves.
    pub cpu_left: u64,
}

/// `<token> <json>`: one line.
fn encode(token: &str, message: &ChildMessage) -> io::Result<Vec<u8>> {
    let text = serde_json::to_string(message).map_err(io::Error::other)?;
    Ok(format!("{token} {text}\n").into_bytes())
}

/// The message a line carries, if it carries this run's token.
fn decode(token: &str, line: &[u8]) -> Option<ChildMessage> {
    let json = line.strip_prefix(token.as_bytes())?.strip_prefix(b" ")?;
    serde_json::from_slice(json).ok()
}

/// 128 random bits from the OS, as hex: a child's messages carry them.
fn random_token() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    // SAFETY: getrandom writes at most the buffer's length into it.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if got != bytes.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The child's end of its result channel.
pub struct Channel {
    file: File,
    token: String,
}

impl Channel {
    /// The inherited descriptor the job names; closed on exec, so no compiler or tool that
    /// the child runs holds it.
    pub fn open(spec: &ChannelSpec) -> io::Result<Channel> {
        // SAFETY: fcntl on a descriptor number; an invalid one only fails.
        if unsafe { libc::fcntl(spec.fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::other(format!("no result channel on descriptor {}: {}", spec.fd, io::Error::last_os_error())));
        }
        // SAFETY: the descriptor is open (checked above) and this process owns it from here on.
        let file = unsafe { File::from_raw_fd(spec.fd) };
        Ok(Channel { file, token: spec.token.clone() })
    }

    /// The next job's token.
    fn retoken(&mut self, spec: &ChannelSpec) {
        self.token = spec.token.clone();
    }

    /// One message, written whole.
    pub fn send(&mut self, message: &ChildMessage) -> io::Result<()> {
        self.file.write_all(&encode(&self.token, message)?)
    }

    /// A child's last word when it cannot run its job at all.
    pub fn fatal(&mut self, message: &str) -> io::Result<()> {
        self.send(&ChildMessage::Fatal(message.to_string()))
    }
}

/// The address space earlier jobs may leave mapped in a worker (kernel libraries are never
/// unloaded; each keeps fiber stacks per block worker) before it is retired.
const MAX_LEFT_MAPPED: u64 = 16 << 30;

/// What a worker keeps between jobs: whether its sandbox holds, and the picture of the
/// process its later jobs are checked against.
#[derive(Default)]
pub struct WorkerState {
    sandboxed: bool,
    /// Its address space when its sandbox was applied.
    mapped_at_sandbox: u64,
    first: Option<ProcessState>,
    /// The folder it may write in (a host worker's temporary folder).
    temp: Option<PathBuf>,
}

/// A child's life: its jobs, one line of standard input each, until the input ends. The
/// backend started once (or why it did not); after each job, how the process stands.
pub fn serve_worker(
    backend: Result<(&dyn Backend, Option<&dyn Backend>), String>,
    settings: &Settings,
    input: &mut dyn BufRead,
) -> io::Result<()> {
    let mut state = WorkerState::default();
    let mut channel: Option<Channel> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let request: JobRequest = serde_json::from_str(&line).map_err(io::Error::other)?;
        let channel = match &mut channel {
            Some(channel) => {
                channel.retoken(&request.channel);
                channel
            }
            None => channel.insert(Channel::open(&request.channel)?),
        };
        let before = mapped_files();
        match backend {
            Ok((backend, reference)) => serve(backend, reference, settings, &request, channel, &mut state)?,
            Err(ref e) => channel.fatal(&format!("the backend did not start in the child process: {e}"))?,
        }
        let end = job_end(&mut state, &before, backend.as_ref().is_ok_and(|(b, _)| b.name() == "host"));
        channel.send(&ChildMessage::Done(end))?;
    }
}

/// How the worker stands after a job: whether a later job may run in it.
fn job_end(state: &mut WorkerState, before: &BTreeSet<PathBuf>, host: bool) -> JobEnd {
    let cpu_left = sandbox::cpu_seconds_left();
    let mut refused = || -> Option<String> {
        if !state.sandboxed {
            return Some("it never applied its limits".into());
        }
        let loaded: Vec<PathBuf> = mapped_files().difference(before).cloned().collect();
        if let Some(library) = loaded.iter().find(|path| runs_code_at_exit(path)) {
            return Some(format!("{} runs code of its own at exit: its process ends to show how that ends", library.display()));
        }
        let left = sandbox::mapped_bytes().saturating_sub(state.mapped_at_sandbox);
        if left > MAX_LEFT_MAPPED {
            return Some(format!("its jobs left {} MiB mapped", left >> 20));
        }
        match &state.first {
            Some(first) => ProcessState::changed_at_job_end(first, state.temp.as_deref()),
            // a GPU backend's driver starts threads and opens files at its first launches:
            // the first job's end is the picture (a host worker takes it before any kernel loads)
            None if !host => {
                state.first = Some(ProcessState::settled(state.temp.as_deref()));
                None
            }
            None => Some("it has no picture of itself".into()),
        }
    };
    JobEnd { refused: refused(), cpu_left }
}

/// The files mapped into this process (its libraries).
fn mapped_files() -> BTreeSet<PathBuf> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return BTreeSet::new() };
    maps.lines().filter_map(|l| l.split_whitespace().nth(5)).filter(|p| p.starts_with('/')).map(PathBuf::from).collect()
}

/// Whether an ELF library has code that runs when the process ends: a destructor beyond the
/// one every library has (`.fini_array` holds the C runtime's), old-style `.dtors`, or a
/// call that registers one (atexit, a static object's or thread-local's destructor). A file
/// that cannot be read or parsed counts as one that does.
fn runs_code_at_exit(path: &Path) -> bool {
    use object::{Object, ObjectSection};
    const REGISTERS: [&[u8]; 6] =
        [b"atexit", b"on_exit", b"__cxa_atexit", b"__cxa_thread_atexit", b"__cxa_thread_atexit_impl", b"pthread_key_create"];
    let Ok(bytes) = std::fs::read(path) else { return true };
    if !bytes.starts_with(b"\x7fELF") {
        // a data file mapped by a library (a locale archive): no code
        return false;
    }
    let Ok(file) = object::File::parse(&*bytes) else { return true };
    let pointer = if file.is_64() { 8 } else { 4 };
    if file.section_by_name(".fini_array").is_some_and(|s| s.size() > pointer)
        || file.section_by_name(".dtors").is_some_and(|s| s.size() > 2 * pointer)
    {
        return true;
    }
    match file.imports() {
        Ok(mut imports) => {
            imports.any(|i| i.map_or(true, |i| matches!(i.name(), object::read::NameOrOrdinal::Name(name) if REGISTERS.contains(&name))))
        }
        Err(_) => true,
    }
}

/// The child's side of one job, with the backend it started from the same flags as its
/// parent. Builds its kernels, then applies its sandbox (the job's own soft limits, in a
/// worker that applied it for an earlier job), then loads them: no code of a kernel runs
/// before the limits hold. Stops after a record that errored, so that whatever the error
/// left behind (a lost device context, a worker stuck in a kernel) never touches the next
/// record: the parent starts a fresh process for the rest.
pub fn serve(
    backend: &dyn Backend,
    reference: Option<&dyn Backend>,
    settings: &Settings,
    request: &JobRequest,
    channel: &mut Channel,
    worker: &mut WorkerState,
) -> io::Result<()> {
    let root = &settings.root;
    let (contract_path, control_path, records) = match &request.job {
        ChildJob::Build { sources } => return serve_build(backend, settings, sources, channel),
        ChildJob::Records { contract, records } => (contract, None, records.clone()),
        ChildJob::Control { contract, control } => (contract, Some(control), Vec::new()),
    };
    let contract = match Contract::load(contract_path, &display(root, contract_path)) {
        Ok(contract) => contract,
        Err(e) => return channel.fatal(&format!("the contract no longer loads: {e}")),
    };
    let control = match control_path.map(|path| Control::load(path, &display(root, path), root)).transpose() {
        Ok(control) => control,
        Err(e) => return channel.fatal(&format!("the control no longer loads: {e}")),
    };
    let records = match &control {
        Some(control) => vec![control.record.clone()],
        None => records,
    };
    let mut chosen: Vec<&Record> = Vec::new();
    for name in &records {
        match contract.record(name) {
            Some(record) => chosen.push(record),
            None => return channel.fatal(&format!("{} no longer has a record `{name}`", contract.file)),
        }
    }

    // its kernel and the kernel it replaces, then its C++ reference function: every build
    // writes the cache, so all of them before the sandbox
    let sources = builds::sources_of(settings, &contract, control.as_ref());
    let built = Mutex::new(HashMap::new());
    runner::build_only(backend, &sources, &|source, outcome| {
        built.lock().unwrap().insert(builds::key(source), outcome);
    });
    let reference_built = builds::build_reference(settings, &contract);
    let built = built.into_inner().unwrap();
    if worker.sandboxed && (built.values().any(Result::is_err) || matches!(reference_built, Some(Err(_)))) {
        // a build that failed here may only have been unable to write the cache: a fresh
        // process builds it before its limits, and reports what the compiler says
        return channel.send(&ChildMessage::Refused("a kernel of the job did not build in this process".into()));
    }
    if let Some(plan) = &request.sandbox {
        if worker.sandboxed {
            let left = sandbox::mapped_bytes().saturating_sub(worker.mapped_at_sandbox);
            if let Err(e) = sandbox::next_job(plan, left) {
                return channel.fatal(&format!("its limits could not be set for this job: {}", runner::error_chain(&e)));
            }
        } else {
            if let Err(e) = sandbox::apply(plan) {
                return channel.fatal(&format!("its process could not be sandboxed: {}", runner::error_chain(&e)));
            }
            worker.sandboxed = true;
            worker.mapped_at_sandbox = sandbox::mapped_bytes();
            worker.temp = plan.writable.clone();
            if backend.name() == "host" {
                // the threads every later job shares, started before the picture is taken
                engine::backend::host::start_block_workers();
                rayon::join(|| (), || ());
                worker.first = Some(ProcessState::settled(worker.temp.as_deref()));
            }
        }
    }
    let modules = runner::load_built(backend, &sources, &built);
    let reference_modules = reference.map(|r| runner::build_all(r, &sources)).unwrap_or_default();
    let loaded = Loaded::of(settings, &contract, control.as_ref(), &modules, reference_built);
    let gates_run = runner::gates_of_run(&runner::gates_for(backend), std::slice::from_ref(&contract));
    let channel = Mutex::new(channel);
    let on_case = |case: &str| {
        // a lost pipe means the parent is gone; the next result's write says so
        let _ = channel.lock().unwrap().send(&ChildMessage::Case(case.to_string()));
    };
    let watcher = ChannelWatcher(&channel);
    let context = RunContext {
        backend,
        settings,
        gates_run: &gates_run,
        reference,
        reference_modules: &reference_modules,
        on_case: Some(&on_case),
        watcher: Some(&watcher),
    };
    // each job its own inputs and guard patterns: nothing of an earlier job's reaches a later one's
    let mut inputs = InputCache::default();
    engine::tensor::restart_guard_ids();
    inputs.will_run(&contract, &chosen);
    channel.lock().unwrap().send(&ChildMessage::Ready)?;
    for (i, record) in chosen.into_iter().enumerate() {
        if i > 0
            && let Some(plan) = &request.sandbox
            && let Err(e) = sandbox::next_record(plan)
        {
            return channel.lock().unwrap().fatal(&format!("its CPU time limit could not be moved on: {}", runner::error_chain(&e)));
        }
        let result = runner::run_record(&context, &contract, record, &loaded, control.as_ref(), &mut inputs);
        // a store outside its tensors may have landed in this process: the job's later
        // records run in a fresh one, and the parent keeps this process for nothing more
        let stop = result.error.is_some() || result.wrote_outside_its_tensors() || (settings.fail_fast && result.red());
        channel.lock().unwrap().send(&ChildMessage::Result(Box::new(result)))?;
        if stop {
            break;
        }
    }
    Ok(())
}

/// A child's cases, told to its parent as they finish.
struct ChannelWatcher<'a, 'c>(&'a Mutex<&'c mut Channel>);

impl CaseWatcher for ChannelWatcher<'_, '_> {
    fn case_finished(&self, done: &CaseDone) {
        // a lost pipe means the parent is gone; the next result's write says so
        let _ = self.0.lock().unwrap().send(&ChildMessage::CaseFinished(done.clone()));
    }
}

/// The build job: each source built (not loaded: no kernel code runs here), each reported.
fn serve_build(backend: &dyn Backend, settings: &Settings, sources: &[BuildSource], channel: &mut Channel) -> io::Result<()> {
    let sources: Vec<KernelSource> = sources
        .iter()
        .map(|s| KernelSource {
            path: s.path.clone(),
            display_path: display(&settings.root, &s.path),
            kernels: vec![s.symbol.clone()],
            include_dirs: s.include_dirs.clone(),
        })
        .collect();
    let channel = Mutex::new(channel);
    let lost = Mutex::new(None);
    runner::build_only(backend, &sources, &|source, outcome| {
        // a source that fails here fails again, reported, in the child of its record
        let message = ChildMessage::Built { source: source.path.clone(), symbol: source.kernels.join(","), error: outcome.err() };
        if let Err(e) = channel.lock().unwrap().send(&message) {
            *lost.lock().unwrap() = Some(e);
        }
    });
    match lost.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The `contracts` flag that makes a process a child; its value labels the job, so `ps`
/// shows what each child runs.
pub const CHILD_FLAG: &str = "--child";

/// How the parent starts a child: the `contracts` binary with the flags that make its
/// backend and settings the parent's. The job goes to its standard input.
#[derive(Clone, Debug)]
pub struct ChildCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// What the parent knows of the backend its children run on.
#[derive(Clone, Debug)]
pub struct BackendInfo {
    pub name: String,
    pub arch: String,
    pub toolchain: String,
    pub gates_run: Vec<Gate>,
    /// Threads running a host kernel's blocks in each child (its CPU time limit counts them).
    pub workers: usize,
    /// The device's memory, where the backend can say (`Backend::device_memory`).
    pub device_memory: Option<u64>,
}

/// Child processes started before the run's parent opened its backend: on a GPU each opens
/// its device context while the parent's own driver start (cuInit, 0.1 to 0.2 s on an H100)
/// runs, where they used to start after it. `run_isolated` takes them as its first jobs'
/// processes; those it does not take are ended.
pub struct Ahead(Vec<Supervised>);

impl Ahead {
    pub fn none() -> Ahead {
        Ahead(Vec::new())
    }

    /// `count` children of `command`, labelled `ahead` (their first jobs are not known yet).
    pub fn start(command: &ChildCommand, count: usize) -> Ahead {
        Ahead((0..count).filter_map(|_| start_fresh(command, "ahead", Start::Ahead).ok()).collect())
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        for mut unused in self.0.drain(..) {
            unused.kill();
            let _ = unused.finish();
        }
    }
}

/// Child processes at a time where `--jobs` is not given.
pub const DEFAULT_JOBS: usize = 4;

/// Child processes a GPU run of small units takes at most where `--jobs` is not given: they
/// share one device, whose contexts take turns, and each process beyond the second made the
/// device's copies and launches slower than it overlapped them (issue 15's five ops on an H100:
/// 1.00-1.13 s at 2, 1.17-1.22 s at 3, 1.32-1.35 s at 4; their summed upload 0.17, 0.38 and
/// 0.65 s). A unit with a case of gigabytes is bound by the host's memory instead, and those
/// side by side overlap it (the whole suite: 14.3-15.8 s at 2, 11.6-12.6 s at 4).
pub const GPU_JOBS_FOR_SMALL_UNITS: usize = 2;

/// Child processes at a time: `--jobs` where given, and on the host; on a GPU, at most
/// `GPU_JOBS_FOR_SMALL_UNITS` and one more for each of the run's `large_units` (units with a
/// case of gigabytes), up to `DEFAULT_JOBS`.
pub fn gpu_jobs(settings: &Settings, large_units: usize) -> usize {
    match settings.jobs_given {
        true => settings.jobs,
        false => settings.jobs.min(GPU_JOBS_FOR_SMALL_UNITS + large_units),
    }
}

/// The whole run, each contract and each control in its own child process, `jobs` at a time.
pub fn run_isolated(
    info: &BackendInfo,
    command: &ChildCommand,
    settings: &Settings,
    mut ahead: Ahead,
    on_event: &mut dyn FnMut(&Event),
) -> RunReport {
    let started = Instant::now();
    let mut report = RunReport::empty(&info.arch, &info.name, &info.toolchain, settings, settings.repeats, &info.gates_run);
    let contracts = runner::load_contracts(settings, &mut report);
    let info = &BackendInfo { gates_run: runner::gates_of_run(&info.gates_run, &contracts), ..info.clone() };
    report.gates_run = info.gates_run.clone();
    on_event(&Event::Started { arch: &info.arch, backend: &info.name, toolchain: &info.toolchain, gates_run: &info.gates_run });
    if info.name == "host" && sandbox::landlock_abi() == 0 {
        on_event(&Event::Notice(
            "sandbox: this kernel has no Landlock, so record processes run under rlimits only (their file system is not read-only)",
        ));
    }
    let controls = runner::load_controls(settings, &info.arch, &info.gates_run, &contracts, &mut report, on_event);

    // the units of work in report order: each contract's records, then each control
    let mut units: Vec<(&Contract, Option<&Control>, Vec<&Record>)> =
        contracts.iter().map(|contract| (contract, None, settings.records_of(contract).collect())).collect();
    for control in &controls {
        let contract = contracts.iter().find(|k| k.op.name == control.contract).unwrap();
        units.push((contract, Some(control), vec![contract.record(&control.record).unwrap()]));
    }
    let worker_cpu_seconds = worker_cpu_seconds(settings, info, &units);
    // the host memory each unit's case of gigabytes holds at its peak (none for most), and the
    // order units start in: those first, longest first (one after another, or a few side by
    // side, they are most of a GPU run), the rest as reported
    let footprints: Vec<Bytes> = units
        .iter()
        .map(|(contract, control, records)| {
            let cases = runner::cases_run_for(contract, &info.arch, *control);
            let of_case = |i: &usize| large_case_footprint(contract, records, &contract.cases[*i]);
            cases.iter().map(of_case).max_by_key(|bytes| (bytes.host, bytes.device)).unwrap_or_default()
        })
        .collect();
    let jobs = match info.name.as_str() {
        "host" => settings.jobs,
        _ => gpu_jobs(settings, footprints.iter().filter(|bytes| bytes.host > 0).count()),
    };
    let threads = jobs.clamp(1, units.len().max(1));
    // with one job at a time the order changes nothing but when each line prints: report order
    let to_the_limit: Vec<bool> =
        units.iter().map(|(_, control, _)| threads > 1 && control.is_some_and(|c| c.planted == Planted::Fault(Fault::Timeout))).collect();
    let start_order = start_order(&footprints, &to_the_limit);
    // the processes of the first units to start, one a thread, started now (or before the
    // parent opened its backend, `Ahead`): each opens its backend (on a GPU, its device
    // context: most of a process's start-up) while the kernels build. Each started here is
    // labelled as its unit, and serves it unless a kept worker takes that job.
    let prestarted: Mutex<Vec<Option<Supervised>>> = Mutex::new(
        start_order
            .iter()
            .take(threads)
            .map(|&i| {
                let (contract, control, _) = &units[i];
                ahead.0.pop().or_else(|| start_fresh(command, &unit_label(contract, *control), Start::Ahead).ok())
            })
            .collect(),
    );
    drop(ahead);

    // every kernel built on all cores in one child, in the order the units start; on a GPU the
    // units whose kernels are built already run meanwhile (each waits for its own builds alone,
    // `BuildProgress`), on the host they wait for every build (there the builds and the records
    // share the cores, and side by side the cold suite was slower on 2 cores). The record
    // children load from the cache. A build that fails or crashes here is built again, and
    // reported, by the record's own child; one still running at the build time limit is not.
    let sources = build_order(settings, &units, &start_order);
    let every_source: HashSet<SourceKey> = sources.iter().map(BuildSource::key).collect();
    let beside_builds = info.name != "host";
    let progress = BuildProgress::default();
    report.timing.modules_built = sources.len();
    let first_unit_started = std::sync::OnceLock::<Instant>::new();
    // `jobs` children at a time; results are reported in unit order whatever order the
    // children finish in (those of the unit being reported as they arrive). The units not yet
    // started, as places in `start_order`.
    let left: Mutex<Vec<usize>> = Mutex::new((0..units.len()).collect());
    let unstarted = std::sync::atomic::AtomicUsize::new(units.len());
    let records_unstarted = std::sync::atomic::AtomicUsize::new(units.iter().filter(|(_, control, _)| control.is_none()).count());
    // `--fail-fast`: set at the first red record; no unit starts after it
    let stopped = std::sync::atomic::AtomicBool::new(false);
    let (sender, results) = mpsc::channel::<(usize, UnitMessage)>();
    // held by a unit whose records run a case of gigabytes (`large_case_bytes`) for as long as
    // it runs: its process keeps the case's inputs in every type its records take them in, the
    // read-backs and the oracle's values in host memory (`kept_on_host`), and its tensors on
    // the device, so only as many run at once as the machine's memory and the device's hold;
    // when each ran is kept for `--timings`
    let memory = crate::budget::MemoryBudget::of_this_machine(info.device_memory);
    let large_units: Mutex<Vec<runner::LargeUnitRun>> = Mutex::new(Vec::new());
    let build_seconds = std::thread::scope(|scope| {
        let building = scope.spawn(|| {
            let build_started = Instant::now();
            // the units wait on the progress: it is over whatever happens here
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| build(command, settings, &sources, &progress))).is_err() {
                progress.over(HashMap::new());
            }
            build_started.elapsed().as_secs_f64()
        });
        for _ in 0..threads {
            let sender = sender.clone();
            let (units, left, unstarted, progress, stopped, memory) = (&units, &left, &unstarted, &progress, &stopped, &memory);
            let records_unstarted = &records_unstarted;
            let (first_unit_started, every_source) = (&first_unit_started, &every_source);
            let (prestarted, start_order, footprints) = (&prestarted, &start_order, &footprints);
            let (large_units, run_started) = (&large_units, &started);
            scope.spawn(move || {
                // this thread's processes between units
                let mut slot = Slot::default();
                // not `left`'s lock: a thread may hold it while it waits for this one's bytes
                let more = || unstarted.load(std::sync::atomic::Ordering::Relaxed) > 0;
                // fewer records units wait than there are slots, and controls do: this slot's
                // next unit is likely a control, which a records worker never serves (atomics,
                // not `left`'s lock, for the same reason)
                let controls_next = || {
                    let (all, records) = (
                        unstarted.load(std::sync::atomic::Ordering::Relaxed),
                        records_unstarted.load(std::sync::atomic::Ordering::Relaxed),
                    );
                    records < threads && all > records
                };
                loop {
                    if stopped.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let Some((started, _held)) = next_unit(left, start_order, footprints, memory) else { break };
                    unstarted.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    let index = start_order[started];
                    let unit_started = run_started.elapsed().as_secs_f64();
                    let (contract, control, records) = &units[index];
                    if control.is_none() {
                        records_unstarted.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    let ready = prestarted.lock().unwrap_or_else(|p| p.into_inner()).get_mut(started).and_then(Option::take);
                    if let Some(mut unneeded) = ready.and_then(|process| slot.spare.replace(process)) {
                        unneeded.kill();
                        let _ = unneeded.finish();
                    }
                    let mut emit = |result: RecordResult| {
                        if settings.fail_fast && result.red() {
                            stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                        let _ = sender.send((index, UnitMessage::Result(Box::new(result))));
                    };
                    let tell = |message: UnitMessage| {
                        let _ = sender.send((index, message));
                    };
                    let sources = builds::sources_of(settings, contract, *control);
                    let keys: HashSet<SourceKey> = sources.iter().map(builds::key).collect();
                    if !beside_builds {
                        progress.wait_for(every_source);
                    }
                    let (unbuilt, all_built) = progress.wait_for(&keys);
                    first_unit_started.get_or_init(Instant::now);
                    match unbuilt {
                        Some(why) => {
                            for record in records {
                                let error = (Some(Fault::Timeout), why.clone());
                                emit(runner::faulted_result(contract, record, *control, &info.gates_run, &info.arch, error, 0.0));
                            }
                        }
                        None => {
                            let timeout = time_limit(settings, contract, *control);
                            // a sandboxed worker cannot write the cache: only a job whose every
                            // build is there already may run in one
                            let poolable = !matches!(contract.reference, crate::contract::Reference::Cpp(_)) && all_built;
                            let unit = Unit {
                                command,
                                settings,
                                info,
                                contract,
                                control: *control,
                                timeout,
                                tell: &tell,
                                keys,
                                poolable,
                                controls_next: &controls_next,
                                worker_cpu_seconds,
                            };
                            let in_order = runner::execution_order(contract, records, &info.arch);
                            supervise(&unit, in_order, &mut emit, &mut slot, &more);
                        }
                    }
                    if footprints[index] != Bytes::default() {
                        let run = runner::LargeUnitRun {
                            unit: unit_label(contract, *control),
                            host: footprints[index].host,
                            device: footprints[index].device,
                            started: unit_started,
                            ended: run_started.elapsed().as_secs_f64(),
                        };
                        large_units.lock().unwrap_or_else(|p| p.into_inner()).push(run);
                    }
                    let _ = sender.send((index, UnitMessage::Done));
                }
                slot.retire();
            });
        }
        drop(sender);
        let mut in_order =
            ReportOrder::new(units.iter().map(|(_, _, records)| records.iter().map(|r| r.name.as_str()).collect()).collect());
        let mut report_result = |on_event: &mut dyn FnMut(&Event), result: RecordResult| {
            if result.control.is_some() {
                on_event(&Event::Control(&result));
                report.controls.push(result);
            } else {
                on_event(&Event::Record(&result));
                report.records.push(result);
            }
        };
        for (index, message) in results {
            match message {
                // progress is told as it comes; results in unit order
                UnitMessage::Started(record) => {
                    let (contract, control, _) = &units[index];
                    on_event(&Event::RecordStarted { op: contract.op.name, record: &record, control: control.map(|c| c.bug.as_str()) })
                }
                UnitMessage::Case(done) => on_event(&Event::CaseFinished(&done)),
                UnitMessage::Result(result) => in_order.result(index, *result),
                UnitMessage::Done => in_order.done(index),
            }
            for result in in_order.ready() {
                report_result(on_event, result);
            }
        }
        building.join().unwrap_or(0.0)
    });
    report.timing.build_seconds = build_seconds;
    // from the first unit's start: the builds of the later ones run beside the records
    report.timing.run_seconds = first_unit_started.get().map_or(0.0, |at| at.elapsed().as_secs_f64());
    report.timing.total_seconds = started.elapsed().as_secs_f64();
    report.timing.before_seconds = runner::Timing::before(settings, started);
    // a run is its process's only one: every child it started, the build's and spares' too
    let starts = process_starts();
    report.timing.processes = starts.ahead + starts.build + starts.spare + starts.on_demand;
    report.timing.process_starts = starts;
    report.timing.processes_ended = std::mem::take(&mut *PROCESSES_ENDED.lock().unwrap_or_else(|p| p.into_inner()));
    let mut large_units = large_units.into_inner().unwrap_or_else(|p| p.into_inner());
    if !large_units.is_empty() {
        large_units.sort_by(|a, b| a.started.total_cmp(&b.started));
        let total = memory.total();
        report.timing.large_units = runner::LargeUnits { host_budget: total.host, device_budget: total.device, units: large_units };
    }
    on_event(&Event::Finished(&report));
    report
}

/// Results held until they can be reported in report order: the units in order, and each
/// unit's results in its records' order as they come, whatever order they ran in
/// (`runner::execution_order`); what is left of a unit (no result is expected to be) once it
/// is done, as it came.
struct ReportOrder<'a> {
    records: Vec<Vec<&'a str>>,
    waiting: Vec<Vec<RecordResult>>,
    finished: Vec<bool>,
    reporting: usize,
    /// of the unit being reported, how many of its records are
    reported: usize,
}

impl<'a> ReportOrder<'a> {
    fn new(records: Vec<Vec<&'a str>>) -> ReportOrder<'a> {
        let units = records.len();
        ReportOrder { records, waiting: vec![Vec::new(); units], finished: vec![false; units], reporting: 0, reported: 0 }
    }

    fn result(&mut self, unit: usize, result: RecordResult) {
        self.waiting[unit].push(result);
    }

    fn done(&mut self, unit: usize) {
        self.finished[unit] = true;
    }

    /// The results that may be reported now, in order.
    fn ready(&mut self) -> Vec<RecordResult> {
        let mut ready = Vec::new();
        while self.reporting < self.records.len() {
            let (unit, waiting) = (self.reporting, &mut self.waiting[self.reporting]);
            while let Some(at) = self.records[unit].get(self.reported).and_then(|name| waiting.iter().position(|r| r.record == *name)) {
                ready.push(waiting.remove(at));
                self.reported += 1;
            }
            if !self.finished[unit] {
                break;
            }
            ready.append(waiting);
            (self.reporting, self.reported) = (unit + 1, 0);
        }
        ready
    }
}

/// What a unit's thread tells the thread that reports: a record taken up, a case finished, a
/// result, the unit done.
enum UnitMessage {
    Started(String),
    Case(CaseDone),
    Result(Box<RecordResult>),
    Done,
}

/// The hard CPU limit of every worker of the run (`Plan::worker_cpu_seconds`): what its
/// largest job's records may use, and at least `sandbox::WORKER_CPU_SECONDS`.
fn worker_cpu_seconds(settings: &Settings, info: &BackendInfo, units: &[(&Contract, Option<&Control>, Vec<&Record>)]) -> u64 {
    units
        .iter()
        .map(|(contract, control, records)| {
            let seconds = time_limit(settings, contract, *control).as_secs();
            Plan::for_job(&info.name, contract, records.len(), seconds, info.workers, Path::new("")).cpu_seconds_needed()
        })
        .fold(sandbox::WORKER_CPU_SECONDS, u64::max)
}

/// Every kernel source the units need, once each, in the order the units start (a unit's
/// kernel and the kernel it replaces), so that the first units to start are the first whose
/// builds are done.
fn build_order(settings: &Settings, units: &[(&Contract, Option<&Control>, Vec<&Record>)], start_order: &[usize]) -> Vec<BuildSource> {
    let mut seen: HashSet<SourceKey> = HashSet::new();
    let mut sources = Vec::new();
    for &index in start_order {
        let (contract, control, _) = &units[index];
        for source in builds::sources_of(settings, contract, *control) {
            if seen.insert(builds::key(&source)) {
                sources.push(BuildSource::of(&source));
            }
        }
    }
    sources
}

/// The build child's progress, for the units to wait on: each unit starts once every source
/// it needs is done (built, failed, or left unbuilt at the build time limit), not once every
/// source of the run is.
#[derive(Default)]
struct BuildProgress {
    state: Mutex<BuildState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct BuildState {
    /// Sources the build child finished, built or not.
    done: HashSet<SourceKey>,
    /// Those that built: a sandboxed worker can load them from the cache, where it could not
    /// build one.
    built: HashSet<SourceKey>,
    /// Those not built within the build time limit, with why: the records of those sources
    /// are not run (their kernel would hang their children too).
    unbuilt: HashMap<SourceKey, String>,
    /// The build child is gone: a source not done by then is the record child's to build.
    over: bool,
}

impl BuildProgress {
    fn lock(&self) -> std::sync::MutexGuard<'_, BuildState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finished(&self, key: SourceKey, built: bool) {
        let mut state = self.lock();
        if built {
            state.built.insert(key.clone());
        }
        state.done.insert(key);
        self.changed.notify_all();
    }

    fn over(&self, unbuilt: HashMap<SourceKey, String>) {
        let mut state = self.lock();
        state.unbuilt = unbuilt;
        state.over = true;
        self.changed.notify_all();
    }

    /// Waits until every one of `keys` is done or the build child is gone; then why one of
    /// them was left unbuilt, if one was, and whether every one of them built.
    fn wait_for(&self, keys: &HashSet<SourceKey>) -> (Option<String>, bool) {
        let mut state = self.lock();
        while !state.over && !keys.iter().all(|k| state.done.contains(k)) {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        let unbuilt = keys.iter().find_map(|k| state.unbuilt.get(k).cloned());
        (unbuilt, keys.iter().all(|k| state.built.contains(k)))
    }
}

/// Runs the build child over `sources`, telling `progress` of each source it finishes, and at
/// the end of those it did not finish within the build time limit. Whatever happens, the
/// progress is over when this returns: a child that cannot start or dies leaves its sources
/// to the record children, which build what they need and say what failed.
fn build(command: &ChildCommand, settings: &Settings, sources: &[BuildSource], progress: &BuildProgress) {
    if sources.is_empty() {
        return progress.over(HashMap::new());
    }
    let limit = Duration::from_secs(settings.build_timeout_seconds.max(1));
    let job = ChildJob::Build { sources: sources.to_vec() };
    let started = Supervised::start(command, BUILD_LABEL, None, Start::Build);
    let Ok(mut child) = started.and_then(|mut child| child.send(job, None).map(|()| child)) else {
        return progress.over(HashMap::new());
    };
    child.close_input();
    let deadline = Instant::now() + limit;
    loop {
        match child.next(deadline) {
            Received::Message(ChildMessage::Built { source, symbol, error }) => {
                progress.finished((source, symbol), error.is_none());
            }
            Received::Message(_) => {}
            Received::Ended => {
                let _ = child.finish();
                return progress.over(HashMap::new());
            }
            Received::TimedOut => break,
        }
    }
    child.kill();
    let _ = child.finish();
    let done = progress.lock().done.clone();
    let unbuilt = sources
        .iter()
        .filter(|s| !done.contains(&s.key()))
        .map(|s| {
            let why = format!(
                "{}: not built within the build time limit ({} s, --build-timeout): the build and its compilers were killed",
                display(&settings.root, &s.path),
                limit.as_secs()
            );
            (s.key(), why)
        })
        .collect();
    progress.over(unbuilt)
}

/// A case's tensors at or past this many bytes in some record make its unit hold the memory
/// budget (`budget::MemoryBudget`) while it runs.
const LARGE_CASE_BYTES: usize = 1 << 30;

/// The most bytes a GPU-only case's tensors hold in one of the records, where that is at least
/// `LARGE_CASE_BYTES`; else 0. Most GPU-only cases are GPU-only for their block count (65,535
/// blocks of one element each) or their arithmetic (a 4,096-cubed projection), not their size:
/// holding every unit with a GPU-only case to one at a time ran most of the sm_90 suite one
/// contract after another.
fn large_case_bytes(records: &[&Record], case: &crate::contract::Case) -> usize {
    let bytes = |record: &&Record| -> usize {
        let of = |(name, shape): (&String, &Vec<usize>)| {
            let size = record.dtypes.get(name).map_or(8, |dtype| dtype.size());
            shape.iter().product::<usize>().saturating_mul(size)
        };
        case.shapes.iter().map(of).fold(0, usize::saturating_add)
    };
    let largest = records.iter().map(bytes).max().unwrap_or(0);
    if case.gpu_only.is_some() && largest >= LARGE_CASE_BYTES { largest } else { 0 }
}

/// What a unit's case holds of the memory budget (`budget::Bytes::of_case`) while the unit
/// runs: nothing but for a GPU-only case of gigabytes (`large_case_bytes`).
fn large_case_footprint(contract: &Contract, records: &[&Record], case: &crate::contract::Case) -> Bytes {
    match large_case_bytes(records, case) {
        0 => Bytes::default(),
        largest => Bytes::of_case(kept_on_host(contract, records, case), largest as u64),
    }
}

/// The tensor bytes a unit's records keep in host memory at once for `case`: each input once
/// in every type its records take it in (or generate it in with their own generator: kept
/// apart), as `runner::InputCache` keeps them for the unit's records, and the largest record's
/// outputs read back with the oracle's f64 values of them.
fn kept_on_host(contract: &Contract, records: &[&Record], case: &crate::contract::Case) -> u64 {
    let elements = |tensor: &str| case.shapes.get(tensor).map_or(0, |shape| shape.iter().product::<usize>()) as u64;
    let mut inputs: Vec<(&str, engine::DType, Option<&str>)> = Vec::new();
    let mut outputs = 0u64;
    for record in records {
        let mut record_outputs = 0u64;
        for spec in contract.op.tensors {
            let Some(&dtype) = record.dtypes.get(spec.name) else { continue };
            match spec.role {
                engine::ops::Role::Input => {
                    let own = record.inputs.contains_key(spec.name).then_some(record.name.as_str());
                    if !inputs.contains(&(spec.name, dtype, own)) {
                        inputs.push((spec.name, dtype, own));
                    }
                }
                engine::ops::Role::Output => record_outputs += elements(spec.name) * (dtype.size() as u64 + 8),
            }
        }
        outputs = outputs.max(record_outputs);
    }
    inputs.iter().map(|(tensor, dtype, _)| elements(tensor) * dtype.size() as u64).sum::<u64>() + outputs
}

/// The next unit to start, as its place in `start_order`, with its bytes of the memory
/// budget (held while it runs): the first left that fits now (`MemoryBudget::hold_first`), so
/// a large unit that must wait for another's bytes lets the small ones after it go first;
/// `None` when none is left. Waits, holding `left`, only where every unit left is large and
/// none fits: the other threads would find the same.
fn next_unit<'m>(
    left: &Mutex<Vec<usize>>,
    start_order: &[usize],
    footprints: &[Bytes],
    memory: &'m crate::budget::MemoryBudget,
) -> Option<(usize, crate::budget::Held<'m>)> {
    let mut left = left.lock().unwrap_or_else(|p| p.into_inner());
    let wanted: Vec<Bytes> = left.iter().map(|&place| footprints[start_order[place]]).collect();
    let (at, held) = memory.hold_first(&wanted)?;
    Some((left.remove(at), held))
}

/// The order units start in (indices into `footprints`, one per unit): those with a large
/// case first, the largest first, then those that run until their time limit (`to_the_limit`:
/// a control planted to hang, when jobs run side by side), then the rest in report order. A
/// run's large units are its longest by far (seconds of gigabytes generated, copied and
/// compared each), and those left to the end ran on alone after everything else had finished;
/// so did the hang control, last in report order, for its whole limit (on the host, a second
/// of 9 with one core idle).
fn start_order(footprints: &[Bytes], to_the_limit: &[bool]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..footprints.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(footprints[i].host), !to_the_limit[i]));
    order
}

/// A record's time limit: its control's, else its contract's, else the run's (`--timeout`,
/// else `DEFAULT_TIMEOUT_SECONDS`).
pub fn time_limit(settings: &Settings, contract: &Contract, control: Option<&Control>) -> Duration {
    let seconds = control.and_then(|c| c.timeout_seconds).or(contract.timeout_seconds).unwrap_or(settings.timeout_seconds);
    Duration::from_secs(seconds.max(1))
}

fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// One contract's records (or one control) and how its children are started.
struct Unit<'a> {
    command: &'a ChildCommand,
    settings: &'a Settings,
    info: &'a BackendInfo,
    contract: &'a Contract,
    control: Option<&'a Control>,
    timeout: Duration,
    /// Progress for the reporting thread.
    tell: &'a dyn Fn(UnitMessage),
    /// The kernels its process builds and loads.
    keys: HashSet<SourceKey>,
    /// Whether it may run in a worker of the pool (before and after other jobs).
    poolable: bool,
    /// Whether the slot's next unit is likely a control (see `Unit::spare_ahead`).
    controls_next: &'a dyn Fn() -> bool,
    /// A worker's hard CPU limit (`Plan::worker_cpu_seconds`): the run's largest job's need.
    worker_cpu_seconds: u64,
}

/// The processes of one of the run's `--jobs` threads, between its units.
#[derive(Default)]
struct Slot {
    idle: Option<PoolWorker>,
    /// A process started ahead, while the last job ran, that has served no job: the next job
    /// that needs a fresh process takes it, and its start-up is behind it.
    spare: Option<Supervised>,
}

impl Slot {
    fn retire(self) {
        if let Some(worker) = self.idle {
            worker.retire();
        }
        if let Some(mut spare) = self.spare {
            spare.kill();
            let _ = spare.finish();
        }
    }
}

/// What a unit's processes are labelled (`ps` shows it): its control's file, else its op.
fn unit_label(contract: &Contract, control: Option<&Control>) -> String {
    match control {
        Some(c) => format!("control {}", c.file),
        None => contract.op.name.to_string(),
    }
}

/// A new process with a temporary folder of its own, waiting for its first job.
fn start_fresh(command: &ChildCommand, label: &str, why: Start) -> Result<Supervised, String> {
    let temp = TempFolder::create().map_err(|e| format!("could not create a temporary folder for its process: {e}"))?;
    Supervised::start(command, label, Some(temp), why)
        .map_err(|e| format!("could not start a child process for it: {}", runner::error_chain(&e)))
}

/// A worker of the pool, idle between jobs: every job it served reported cleanly and left
/// the process as it found it.
struct PoolWorker {
    child: Supervised,
    /// The kernels its jobs loaded: a library is never loaded by two jobs of one process,
    /// so no job meets another's module state.
    loaded: HashSet<SourceKey>,
    /// CPU seconds its hard limit leaves.
    cpu_left: u64,
    /// It served controls, and serves only controls: a record never runs after a kernel
    /// planted to misbehave, and a control never meets a record's leftovers.
    controls: bool,
}

impl PoolWorker {
    fn can_take(&self, unit: &Unit, plan_cpu: u64) -> bool {
        unit.poolable && self.controls == unit.control.is_some() && self.loaded.is_disjoint(&unit.keys) && self.cpu_left >= plan_cpu
    }

    /// Ends an idle worker. Nothing it loaded runs code at exit, and every result it gave is
    /// reported, so it is not waited for.
    fn retire(mut self) {
        self.child.kill();
        let _ = self.child.finish();
    }
}

impl Unit<'_> {
    /// Whether the slot's next job likely needs a fresh process, so that one is started while
    /// this job runs: the controls come next (a records worker never serves a control), or
    /// this is a control (its worker ends after one whose kernel stored outside its tensors:
    /// 6 of the suite's controls on the host). On an H100 such a start was 0.43 to 0.66 s, the
    /// device context most of it (the driver makes contexts one at a time), and 11 of a whole
    /// run's controls waited for one; a spare left over at the end is killed. Not on the host:
    /// there a start is a few milliseconds, and the records need the same cores, so a spare
    /// hides nothing and a spare killed unused is CPU lost (the cold suite on 2 cores was
    /// 0.1 to 0.4 s slower with them).
    fn spare_ahead(&self) -> bool {
        self.info.name != "host" && (self.control.is_some() || (self.controls_next)())
    }

    /// Whether its process surely ends with it: no worker may take it, or it is a control
    /// planted to crash, hang, exit or lose its device.
    fn ends_its_process(&self) -> bool {
        !self.poolable || self.control.is_some_and(|c| matches!(c.planted, Planted::Fault(_)))
    }

    fn failed(&self, record: &Record, fault: Option<Fault>, error: String, seconds: f64) -> RecordResult {
        runner::faulted_result(self.contract, record, self.control, &self.info.gates_run, &self.info.arch, (fault, error), seconds)
    }

    /// Reports name files relative to the repository (as loaded); a child is given them whole.
    fn job(&self, remaining: &VecDeque<&Record>) -> ChildJob {
        let root = &self.settings.root;
        match self.control {
            Some(c) => ChildJob::Control { contract: root.join(&self.contract.file), control: root.join(&c.file) },
            None => {
                ChildJob::Records { contract: root.join(&self.contract.file), records: remaining.iter().map(|r| r.name.clone()).collect() }
            }
        }
    }
}

/// Why a process that reported the whole job it was given is not kept for the next one.
fn why_not_kept(unit: &Unit, pending: &[RecordResult], end: &JobEnd, fatal: bool, foreign: usize) -> String {
    if !unit.poolable {
        "no worker may take its job (a kernel built in its own process, or a C++ reference)".into()
    } else if pending.iter().any(|r| r.error.is_some()) {
        "a record errored".into()
    } else if pending.iter().any(RecordResult::wrote_outside_its_tensors) {
        "a record stored outside its tensors".into()
    } else if fatal {
        "it reported a fatal error".into()
    } else if foreign > 0 {
        "it wrote to its result channel outside the protocol".into()
    } else if let Some(why) = &end.refused {
        format!("it declined further jobs: {why}")
    } else {
        "--fail-fast stopped it at a red record".into()
    }
}

/// Why a process ended that did not report its whole job cleanly.
fn why_it_ended(ending: &Ending, status: &io::Result<ExitStatus>) -> String {
    match (ending, status) {
        (Ending::TimedOut, _) => "it timed out".into(),
        (Ending::Protocol(_), _) => "it broke the result protocol".into(),
        (_, Ok(status)) if status.success() => "it ended by itself".into(),
        (_, Ok(status)) => end_cause(*status).1,
        (_, Err(e)) => format!("it could not be waited for: {e}"),
    }
}

/// How a child's process ended, as far as the records it ran are concerned.
enum Ending {
    /// Its process ended by itself (its status says how).
    Exited,
    TimedOut,
    /// It broke the protocol and was killed: the record in flight fails with this, or (None)
    /// goes on in a fresh process.
    Protocol(Option<String>),
    /// It ran the whole job cleanly and waits for another.
    Kept(JobEnd),
    /// It declined the job before running any of it, saying why.
    Refused(String),
}

/// Runs `records` of the unit in child processes until each has a result: one that did not
/// come back gets a red result naming why. The slot's idle worker takes the job where it can
/// (and is kept after it, if the job ended cleanly and left the process as it was), else a
/// fresh process does. Results of a job after which the process ends are emitted once it has
/// ended: one that hangs or dies after its last result puts that result in doubt, and its
/// last record errors instead.
fn supervise(unit: &Unit, records: Vec<&Record>, emit: &mut dyn FnMut(RecordResult), slot: &mut Slot, more: &dyn Fn() -> bool) {
    let mut remaining: VecDeque<&Record> = records.into();
    let label = unit_label(unit.contract, unit.control);
    // set when a worker declined the job: the next try is a fresh process
    let mut fresh_only = false;
    while !remaining.is_empty() {
        (unit.tell)(UnitMessage::Started(remaining[0].name.clone()));
        let asked: Vec<String> = remaining.iter().map(|r| r.name.clone()).collect();
        let timeout_seconds = unit.timeout.as_secs();
        let plan_in = |temp: &Path| {
            let mut plan = Plan::for_job(&unit.info.name, unit.contract, remaining.len(), timeout_seconds, unit.info.workers, temp);
            plan.pooled = unit.poolable;
            plan.worker_cpu_seconds = unit.worker_cpu_seconds;
            plan
        };
        let handed = Instant::now();
        // an idle worker that can take the job, else a fresh process (the idle one waits for
        // a later job it can take)
        let reusable = !fresh_only && slot.idle.as_ref().is_some_and(|w| w.can_take(unit, plan_in(Path::new("")).cpu_seconds_needed()));
        let (mut child, mut loaded) = match slot.idle.take() {
            Some(worker) if reusable => (worker.child, worker.loaded),
            idle => {
                slot.idle = idle;
                let fresh = match slot.spare.take() {
                    Some(spare) => Ok(spare),
                    None => start_fresh(unit.command, &label, Start::OnDemand),
                };
                match fresh {
                    Ok(child) => (child, HashSet::new()),
                    Err(why) => {
                        for record in remaining.drain(..) {
                            emit(unit.failed(record, None, why.clone(), 0.0));
                        }
                        return;
                    }
                }
            }
        };
        // a job whose process will end (a control planted to fault, or one no worker may take)
        // is likely followed by another (controls come last), and so is one whose slot turns
        // to controls next or runs them (`Unit::spare_ahead`, asked again after each record):
        // the next one's process starts while this one runs
        let start_spare = |slot: &mut Slot| {
            if slot.spare.is_none() && (unit.ends_its_process() || unit.spare_ahead()) && more() {
                slot.spare = start_fresh(unit.command, "spare", Start::Spare).ok();
            }
        };
        start_spare(slot);
        let temp = child.temp.as_ref().map(|t| t.path().to_path_buf()).unwrap_or_default();
        if let Err(e) = child.send(unit.job(&remaining), Some(plan_in(&temp))) {
            child.kill();
            let _ = child.finish();
            let why = format!("could not hand its process the job: {}", runner::error_chain(&e));
            for record in remaining.drain(..) {
                emit(unit.failed(record, None, why.clone(), 0.0));
            }
            return;
        }
        if !unit.poolable {
            // a job no worker may take ends its process
            child.close_input();
        }
        loaded.extend(unit.keys.iter().cloned());
        let mut pending: Vec<RecordResult> = Vec::new();
        let mut item_started = handed;
        let mut case: Option<String> = None;
        let mut stopped_early = false;
        let mut fatal: Option<String> = None;
        let mut startup: Option<f64> = None;
        // why a process that reported its whole job is not kept as a worker
        let mut ends_because: Option<String> = None;
        let ending = loop {
            match child.next(item_started + unit.timeout) {
                Received::Message(ChildMessage::Case(c)) => case = Some(c),
                Received::Message(ChildMessage::CaseFinished(done)) => (unit.tell)(UnitMessage::Case(done)),
                Received::Message(ChildMessage::Ready) => {
                    startup.get_or_insert(handed.elapsed().as_secs_f64());
                }
                Received::Message(ChildMessage::Refused(why)) if pending.is_empty() && fatal.is_none() => break Ending::Refused(why),
                Received::Message(ChildMessage::Refused(why)) => {
                    break Ending::Protocol(Some(format!("its process declined the job after running some of it: {why}")));
                }
                Received::Message(ChildMessage::Done(end)) => {
                    let clean = child.stdin.is_some()
                        && remaining.is_empty()
                        && !stopped_early
                        && fatal.is_none()
                        && child.foreign == 0
                        && end.refused.is_none()
                        && pending.iter().all(|r| r.error.is_none());
                    if clean {
                        break Ending::Kept(end);
                    }
                    ends_because = Some(why_not_kept(unit, &pending, &end, fatal.is_some(), child.foreign));
                    // it ends now, and its results count once it has ended cleanly
                    child.close_input();
                }
                Received::Message(ChildMessage::Result(result)) => {
                    let name = result.record.clone();
                    if let Some(first) = pending.iter_mut().find(|r| r.record == name) {
                        let why =
                            "its process reported this record twice (a second result on its result channel): neither result is trusted";
                        let record = unit.contract.record(&name).expect("a pending result is for a record asked for");
                        *first = unit.failed(record, None, why.to_string(), first.seconds);
                        break Ending::Protocol(None);
                    }
                    let front = remaining.front().map(|r| r.name.clone()).unwrap_or_default();
                    if !asked.contains(&name) {
                        break Ending::Protocol(Some(format!(
                            "its process reported a result for record `{name}`, which it was not asked to run, while `{front}` was running: \
                             no result of it is trusted"
                        )));
                    }
                    if name != front {
                        break Ending::Protocol(Some(format!("its process reported record `{name}` while `{front}` was running")));
                    }
                    let mut result = *result;
                    if let Some(seconds) = startup.take() {
                        result.phases.startup += seconds;
                        result.seconds += seconds;
                    }
                    result.notes.extend(child.take_note());
                    remaining.pop_front();
                    // the child stops after such a record, and the rest run in a fresh process
                    stopped_early =
                        result.error.is_some() || result.wrote_outside_its_tensors() || (unit.settings.fail_fast && result.red());
                    pending.push(result);
                    start_spare(slot);
                    item_started = Instant::now();
                    case = None;
                    if let Some(next) = remaining.front() {
                        (unit.tell)(UnitMessage::Started(next.name.clone()));
                    }
                }
                Received::Message(ChildMessage::Fatal(message)) => fatal = Some(message),
                Received::Message(ChildMessage::Built { .. }) => {}
                Received::Ended => break Ending::Exited,
                Received::TimedOut => break Ending::TimedOut,
            }
        };
        let ending = match ending {
            Ending::Kept(end) => {
                // what its kernels forked and left (reparented to this process) ends with the job
                processes::end_orphans();
                if let Some(last) = pending.last_mut() {
                    last.notes.extend(child.take_note());
                }
                let red = pending.iter().any(RecordResult::red);
                pending.into_iter().for_each(&mut *emit);
                let controls = unit.control.is_some();
                if let Some(idle) = slot.idle.replace(PoolWorker { child, loaded, cpu_left: end.cpu_left, controls }) {
                    idle.retire();
                }
                if red && unit.settings.fail_fast {
                    return;
                }
                continue;
            }
            Ending::Refused(why) => {
                child.kill();
                let _ = child.finish();
                process_ended(&label, format!("declined the job: {why}"));
                fresh_only = true;
                continue;
            }
            other => other,
        };
        if !matches!(ending, Ending::Exited) {
            child.kill();
        }
        let status = child.finish();
        process_ended(&label, ends_because.take().unwrap_or_else(|| why_it_ended(&ending, &status)));
        let seconds = item_started.elapsed().as_secs_f64();
        let output = child.output_tails();
        let with_output = |text: String| if output.is_empty() { text } else { format!("{text}\n{output}") };
        let note = child.take_note();

        if let Some(message) = fatal {
            pending.into_iter().for_each(&mut *emit);
            for record in remaining.drain(..) {
                emit(unit.failed(record, None, with_output(message.clone()), seconds));
            }
            return;
        }
        let at_exit = remaining.is_empty();
        let place = case.map(|c| format!(" in case {c}")).unwrap_or_default();
        let blame = match (ending, status) {
            (Ending::TimedOut, _) if at_exit => Some((
                Some(Fault::Timeout),
                format!(
                    "timed out after {timeout_seconds} s after its last case, while its process was ending (an exit handler or a \
                     kernel library's destructor hung): its process was killed, and its result is not trusted"
                ),
            )),
            (Ending::TimedOut, _) => {
                Some((Some(Fault::Timeout), format!("timed out after {timeout_seconds} s{place}: its process was killed")))
            }
            (Ending::Protocol(why), _) => why.map(|why| (None, why)),
            (Ending::Kept(_) | Ending::Refused(_), _) => unreachable!("a kept or declining worker was dealt with above"),
            (Ending::Exited, Ok(status)) if status.success() && (at_exit || stopped_early) => None,
            (Ending::Exited, Ok(status)) => {
                let (fault, cause) = end_cause(status);
                let cause = if at_exit {
                    format!("{cause}, after its last case, while its process was ending: its result is not trusted")
                } else {
                    format!("{cause}{place}")
                };
                // ROCm's runtime aborts the process on a GPU memory fault and says so on stderr
                let fault = if output.contains("Memory access fault") { Fault::DeviceFault } else { fault };
                Some((Some(fault), cause))
            }
            (Ending::Exited, Err(e)) => Some((Some(Fault::Crash), format!("its process could not be waited for: {e}"))),
        };
        let Some((fault, cause)) = blame else {
            if let Some(last) = pending.last_mut() {
                last.notes.extend(note);
            }
            let red = pending.iter().any(RecordResult::red);
            pending.into_iter().for_each(&mut *emit);
            if red && unit.settings.fail_fast {
                return;
            }
            continue;
        };
        // the record in flight, else the last one reported (its process did not end cleanly)
        let blamed = match remaining.pop_front() {
            Some(record) => record,
            None => {
                let last = pending.pop().expect("a child that reported everything reported something");
                unit.contract.record(&last.record).expect("a reported record was asked for")
            }
        };
        pending.into_iter().for_each(&mut *emit);
        let mut result = unit.failed(blamed, fault, with_output(cause), seconds);
        result.notes.extend(note);
        emit(result);
        if unit.settings.fail_fast {
            return;
        }
    }
}

/// Why a child's process ended without reporting what it was asked, from its status.
fn end_cause(status: ExitStatus) -> (Fault, String) {
    match (status.signal(), status.code()) {
        (Some(libc::SIGXCPU), _) => {
            (Fault::Timeout, "used up its CPU time (RLIMIT_CPU: its time limit times its block workers): SIGXCPU".to_string())
        }
        (Some(libc::SIGXFSZ), _) => {
            (Fault::Crash, "wrote to a file, which a record's process may not (RLIMIT_FSIZE 0): SIGXFSZ".to_string())
        }
        (Some(signal), _) => (Fault::Crash, format!("crashed: {}", signal_name(signal))),
        (None, Some(0)) => (
            Fault::Crash,
            "its process ended (exit status 0) without reporting it: a kernel or library called _exit() or the like".to_string(),
        ),
        (None, Some(EXIT_CALLED_STATUS)) => {
            (Fault::Crash, "its process ended before reporting it: a kernel or library called exit()".to_string())
        }
        (None, Some(code)) => (Fault::Crash, format!("crashed: exit status {code}")),
        (None, None) => (Fault::Crash, format!("crashed: {status}")),
    }
}

pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

/// Called first thing in a child: it dies with its parent (never a kernel spinning on an
/// orphaned GPU context), and a crash leaves no core file behind.
pub fn prepare_child_process(parent: u32) {
    // SAFETY: plain system calls on this process, with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
    }
    // the parent may have died before prctl took effect (0: started by hand, no parent to check)
    if parent != 0 && std::os::unix::process::parent_id() != parent {
        std::process::exit(1);
    }
}

/// A child's own temporary folder, removed when the parent is done with the child (or, for a
/// run a signal ends, by `remove_temp_folders`).
struct TempFolder(PathBuf);

/// Every temporary folder of a live child.
static TEMP_FOLDERS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

impl TempFolder {
    fn create() -> io::Result<TempFolder> {
        use std::os::unix::fs::DirBuilderExt;
        static CREATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("kernel-contracts-{}-{n}-{}", std::process::id(), &random_token()?[..8]));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        TEMP_FOLDERS.lock().unwrap_or_else(|p| p.into_inner()).insert(path.clone());
        Ok(TempFolder(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        TEMP_FOLDERS.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.0);
    }
}

/// Removes the temporary folder of every child still running: the run is ending without them
/// (their processes were ended first).
pub fn remove_temp_folders() {
    let mut folders = TEMP_FOLDERS.lock().unwrap_or_else(|p| p.into_inner());
    for folder in std::mem::take(&mut *folders) {
        let _ = std::fs::remove_dir_all(folder);
    }
}

/// The last bytes of an output stream: whatever a kernel prints, the parent keeps this much.
#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
    cut: bool,
}

impl Tail {
    fn clear(&mut self) {
        *self = Tail::default();
    }

    fn push(&mut self, chunk: &[u8]) {
        let kept = &chunk[chunk.len().saturating_sub(TAIL_BYTES)..];
        self.cut |= kept.len() < chunk.len();
        self.bytes.extend(kept);
        let excess = self.bytes.len().saturating_sub(TAIL_BYTES);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.cut = true;
        }
    }

    /// The last lines, each cut (the first one kept is dropped when the tail began mid-line).
    fn lines(&self) -> Vec<String> {
        let bytes: Vec<u8> = self.bytes.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<&str> = text.lines().collect();
        if self.cut && !lines.is_empty() {
            lines.remove(0);
        }
        let skip = lines.len().saturating_sub(TAIL_LINES);
        lines[skip..].iter().map(|l| l.chars().take(TAIL_LINE_CHARS).collect()).collect()
    }
}

/// What the threads watching a child tell the thread supervising it.
enum Note {
    Line(Vec<u8>),
    /// A channel line longer than `MAX_MESSAGE_BYTES`, dropped.
    Oversized,
    ChannelClosed,
    Exited(io::Result<ExitStatus>),
}

enum Received {
    Message(ChildMessage),
    /// Its process ended and its channel is read to the end.
    Ended,
    TimedOut,
}

/// A child process watched by four threads: its result channel read as it comes, its standard
/// output and error drained into bounded tails, and its exit waited for.
struct Supervised {
    pid: i32,
    /// The token of the job in hand.
    token: String,
    /// Where its jobs go; closed when no job follows.
    stdin: Option<std::process::ChildStdin>,
    notes: Receiver<Note>,
    stdout: Arc<Mutex<Tail>>,
    stderr: Arc<Mutex<Tail>>,
    drained: Receiver<()>,
    status: Option<io::Result<ExitStatus>>,
    channel_closed: bool,
    drain_until: Option<Instant>,
    /// Channel lines without the token, and how many of them a result has noted.
    foreign: usize,
    first_foreign: Option<String>,
    noted: usize,
    temp: Option<TempFolder>,
}

#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("creating its result channel")]
    Channel(#[source] io::Error),
    #[error(transparent)]
    Process(#[from] ProcessError),
}

/// Why a child process is started (`ProcessStarts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    Ahead,
    Build,
    Spare,
    OnDemand,
}

/// Child processes this process started, by `Start`: a run's figures (each opens a device
/// context, which on an H100 costs about 0.2 s of the driver's time, one context after another).
static PROCESSES_STARTED: [std::sync::atomic::AtomicUsize; 4] = [const { std::sync::atomic::AtomicUsize::new(0) }; 4];
/// The processes that ended after a job (`Timing::processes_ended`), in the order they ended.
static PROCESSES_ENDED: Mutex<Vec<runner::ProcessEnded>> = Mutex::new(Vec::new());

fn process_starts() -> runner::ProcessStarts {
    let of = |why: Start| PROCESSES_STARTED[why as usize].load(std::sync::atomic::Ordering::Relaxed);
    runner::ProcessStarts { ahead: of(Start::Ahead), build: of(Start::Build), spare: of(Start::Spare), on_demand: of(Start::OnDemand) }
}

fn process_ended(unit: &str, why: String) {
    PROCESSES_ENDED.lock().unwrap_or_else(|p| p.into_inner()).push(runner::ProcessEnded { unit: unit.to_string(), why });
}

impl Supervised {
    /// A child waiting for its first job, with `temp` as its temporary folder (its TMPDIR).
    fn start(command: &ChildCommand, label: &str, temp: Option<TempFolder>, why: Start) -> Result<Supervised, StartError> {
        PROCESSES_STARTED[why as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (read_end, write_end) = pipe().map_err(StartError::Channel)?;
        let mut process = Command::new(&command.program);
        if let Some(temp) = &temp {
            process.env("TMPDIR", temp.path());
        }
        process
            .args(&command.args)
            .arg(CHILD_FLAG)
            .arg(label)
            .env("KERNEL_CONTRACTS_PARENT", std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // its own process group: a timeout kills the child and any compiler it started
            .process_group(0);
        let write_fd = write_end.as_raw_fd();
        // SAFETY: between fork and exec only dup2 and fcntl run, both async-signal-safe.
        unsafe {
            process.pre_exec(move || {
                let placed =
                    if write_fd == CHANNEL_FD { libc::fcntl(CHANNEL_FD, libc::F_SETFD, 0) } else { libc::dup2(write_fd, CHANNEL_FD) };
                if placed < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
            });
        }
        let mut child = processes::spawn_registered(&mut process)?;
        // the parent's copy of the write end closes, so the channel ends with the child's
        drop(write_end);
        let pid = child.id() as i32;
        let stdin = child.stdin.take().expect("stdin is piped");

        let (note_sender, notes) = mpsc::channel();
        read_channel(File::from(read_end), note_sender.clone());
        let (drained_sender, drained) = mpsc::channel();
        let stdout = drain(child.stdout.take().expect("stdout is piped"), drained_sender.clone());
        let stderr = drain(child.stderr.take().expect("stderr is piped"), drained_sender);
        std::thread::spawn(move || {
            let status = child.wait();
            processes::unregister(pid as u32);
            let _ = note_sender.send(Note::Exited(status));
        });
        Ok(Supervised {
            pid,
            token: String::new(),
            stdin: Some(stdin),
            notes,
            stdout,
            stderr,
            drained,
            status: None,
            channel_closed: false,
            drain_until: None,
            foreign: 0,
            first_foreign: None,
            noted: 0,
            temp,
        })
    }

    /// Hands the child a job under a token of its own: messages of an earlier job no longer
    /// count. The output tails start afresh, so an error shows what this job printed.
    fn send(&mut self, job: ChildJob, sandbox: Option<Plan>) -> Result<(), StartError> {
        self.token = random_token().map_err(StartError::Channel)?;
        let request = JobRequest { job, channel: ChannelSpec { fd: CHANNEL_FD, token: self.token.clone() }, sandbox };
        let mut line = serde_json::to_vec(&request).map_err(|e| StartError::Channel(io::Error::other(e)))?;
        line.push(b'\n');
        self.stdout.lock().unwrap().clear();
        self.stderr.lock().unwrap().clear();
        // a child that dies before reading its job is seen by its exit status
        if let Some(stdin) = &mut self.stdin {
            let _ = stdin.write_all(&line);
        }
        Ok(())
    }

    /// No job follows: the child ends after the one it has.
    fn close_input(&mut self) {
        self.stdin = None;
    }

    /// The next message, the end of the child (its process ended and its channel read to the
    /// end), or the deadline passing while it runs.
    fn next(&mut self, deadline: Instant) -> Received {
        loop {
            if self.status.is_some() && self.channel_closed {
                return Received::Ended;
            }
            let until = self.drain_until.unwrap_or(deadline);
            match self.notes.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(Note::Line(line)) => match decode(&self.token, &line) {
                    Some(message) => return Received::Message(message),
                    None => self.foreign(String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned()),
                },
                Ok(Note::Oversized) => self.foreign(format!("a line of over {} MiB", MAX_MESSAGE_BYTES >> 20)),
                Ok(Note::ChannelClosed) => self.channel_closed = true,
                Ok(Note::Exited(status)) => {
                    self.status = Some(status);
                    self.end_leftovers();
                    self.drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                }
                Err(RecvTimeoutError::Timeout) if self.status.is_some() => self.channel_closed = true,
                Err(RecvTimeoutError::Timeout) => return Received::TimedOut,
                Err(RecvTimeoutError::Disconnected) => {
                    self.channel_closed = true;
                    self.status.get_or_insert_with(|| Err(io::Error::other("its watcher thread ended")));
                }
            }
        }
    }

    fn foreign(&mut self, line: String) {
        self.foreign += 1;
        self.first_foreign.get_or_insert(line);
    }

    /// A note on channel lines without the token since the last note, if any came.
    fn take_note(&mut self) -> Option<String> {
        let new = self.foreign - self.noted;
        if new == 0 {
            return None;
        }
        self.noted = self.foreign;
        let first = self.first_foreign.take().unwrap_or_default();
        Some(format!("its result channel carried {new} line(s) without this run's token, ignored; the first: `{first}`"))
    }

    /// What the child left: its process group, and whatever of it escaped the group (a
    /// process that called setsid) and reparented to this one.
    fn end_leftovers(&self) {
        // SAFETY: signals the process group the child led (process_group(0) at spawn)
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        processes::end_orphans();
    }

    /// The whole process group, so a compiler the child started goes too.
    fn kill(&self) {
        if self.status.is_none() {
            // SAFETY: signals the process group this child leads, and the child, not yet reaped
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
    }

    /// Waits for the end (after `kill`, or after `Ended`), discarding any later message, and
    /// gives the exit status once the output is drained.
    fn finish(&mut self) -> io::Result<ExitStatus> {
        loop {
            match self.next(Instant::now() + Duration::from_secs(10)) {
                Received::Ended => break,
                Received::Message(_) => {}
                Received::TimedOut => self.kill(),
            }
        }
        for _ in 0..2 {
            let _ = self.drained.recv_timeout(Duration::from_secs(1));
        }
        self.status.take().unwrap_or_else(|| Err(io::Error::other("no exit status")))
    }

    /// The ends of standard error and output, for an error message.
    fn output_tails(&self) -> String {
        let mut text = Vec::new();
        for (name, tail) in [("standard error", &self.stderr), ("standard output", &self.stdout)] {
            let lines = tail.lock().unwrap().lines();
            if !lines.is_empty() {
                text.push(format!("its {name} ended with:\n{}", lines.join("\n")));
            }
        }
        text.join("\n")
    }
}

/// A pipe whose ends close on exec (the child gets its end by dup2, on `CHANNEL_FD`).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads the result channel line by line, each byte looked at once; a line over the cap is
/// skipped to its end.
fn read_channel(channel: File, notes: Sender<Note>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(1 << 16, channel);
        let mut line = Vec::new();
        let mut oversized = false;
        loop {
            let buffer = match reader.fill_buf() {
                Ok([]) => break,
                Ok(buffer) => buffer,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let (taken, complete) = match buffer.iter().position(|b| *b == b'\n') {
                Some(end) => (&buffer[..end], Some(end + 1)),
                None => (buffer, None),
            };
            if !oversized {
                line.extend_from_slice(taken);
                if line.len() > MAX_MESSAGE_BYTES {
                    oversized = true;
                    line = Vec::new();
                }
            }
            let consumed = complete.unwrap_or(buffer.len());
            reader.consume(consumed);
            if complete.is_some() {
                let note = if oversized { Note::Oversized } else { Note::Line(std::mem::take(&mut line)) };
                oversized = false;
                if notes.send(note).is_err() {
                    return;
                }
            }
        }
        if !line.is_empty() {
            let _ = notes.send(Note::Line(line));
        }
        let _ = notes.send(Note::ChannelClosed);
    });
}

/// Drains an output pipe as fast as the child writes, keeping its tail.
fn drain(mut pipe: impl Read + Send + 'static, done: Sender<()>) -> Arc<Mutex<Tail>> {
    let tail = Arc::new(Mutex::new(Tail::default()));
    let kept = tail.clone();
    std::thread::spawn(move || {
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => kept.lock().unwrap().push(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
    tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::Metrics;

    /// A GPU run's default jobs: two for small units and one more for each unit with a case of
    /// gigabytes, up to the default; `--jobs` as given.
    #[test]
    fn a_gpu_runs_default_jobs_follow_its_units_of_gigabytes_and_given_jobs_stand() {
        let default = Settings { jobs: DEFAULT_JOBS, jobs_given: false, ..runner::tests_settings() };
        assert_eq!([0, 1, 2, 5].map(|large| gpu_jobs(&default, large)), [2, 3, 4, 4]);
        for jobs in [1, 4, 8] {
            let given = Settings { jobs, jobs_given: true, ..runner::tests_settings() };
            assert_eq!([0, 5].map(|large| gpu_jobs(&given, large)), [jobs, jobs]);
        }
    }

    #[test]
    fn a_dead_child_is_named_by_its_signal_or_exit_status() {
        let cause = |raw| end_cause(ExitStatus::from_raw(raw)).1;
        assert_eq!(cause(libc::SIGSEGV), "crashed: SIGSEGV");
        assert_eq!(cause(libc::SIGABRT), "crashed: SIGABRT");
        assert_eq!(cause(libc::SIGKILL), "crashed: SIGKILL");
        assert_eq!(cause(101 << 8), "crashed: exit status 101");
        assert!(cause(0).starts_with("its process ended (exit status 0) without reporting it"));
        assert!(cause(EXIT_CALLED_STATUS << 8).ends_with("a kernel or library called exit()"));
        assert_eq!(end_cause(ExitStatus::from_raw(libc::SIGXCPU)).0, Fault::Timeout);
        assert!(cause(libc::SIGXFSZ).starts_with("wrote to a file"));
        assert_eq!(signal_name(63), "signal 63");
    }

    #[test]
    fn the_time_limit_is_the_controls_else_the_contracts_else_the_runs() {
        let settings = runner::tests_settings();
        let text = std::fs::read_to_string(settings.contracts_dir.join("tf_add.toml")).unwrap();
        let mut contract = Contract::parse("contracts/tf_add.toml", &text).unwrap();
        assert_eq!(time_limit(&settings, &contract, None), Duration::from_secs(30));
        contract.timeout_seconds = Some(90);
        assert_eq!(time_limit(&settings, &contract, None), Duration::from_secs(90));
        let control =
            Control::load(&settings.controls_dir.join("faults/never_returns.toml"), "never_returns.toml", &settings.root).unwrap();
        assert_eq!(time_limit(&settings, &contract, Some(&control)), Duration::from_secs(1));
    }

    /// On a GPU host of 16 cores, tf_embed_dense's six records of 120 s need 6 * (120 * 16 +
    /// 10) + 10 CPU seconds: every worker's hard limit covers them, so a worker that began
    /// with tf_add (4 * (30 * 16 + 10) + 10) is not passed over for it.
    #[test]
    fn every_worker_of_a_run_may_take_its_largest_job_by_cpu_time() {
        let settings = runner::tests_settings();
        let parse = |op: &str| {
            let path = settings.contracts_dir.join(format!("{op}.toml"));
            Contract::parse(&format!("contracts/{op}.toml"), &std::fs::read_to_string(path).unwrap()).unwrap()
        };
        let (add, embed) = (parse("tf_add"), parse("tf_embed_dense"));
        let info = |name: &str, workers| BackendInfo {
            name: name.into(),
            arch: "sm_90".into(),
            toolchain: String::new(),
            gates_run: vec![],
            workers,
            device_memory: None,
        };
        let units = vec![(&add, None, add.records.iter().collect()), (&embed, None, embed.records.iter().collect())];
        assert_eq!(embed.records.len(), 6);
        let seconds = worker_cpu_seconds(&settings, &info("cuda", 16), &units);
        assert_eq!(seconds, 6 * (120 * 16 + 10) + 10);
        let mut plan = Plan::for_job("cuda", &add, add.records.len(), 30, 16, Path::new(""));
        assert!(plan.cpu_seconds_needed() < sandbox::WORKER_CPU_SECONDS);
        plan.worker_cpu_seconds = seconds;
        // the limit a worker that begins with tf_add sets for its life
        assert_eq!(plan.worker_cpu_seconds.max(plan.cpu_seconds_needed()), 11_590);
        // a small run's workers keep the floor
        let small = vec![(&add, None, add.records.iter().collect())];
        assert_eq!(worker_cpu_seconds(&settings, &info("host", 2), &small), sandbox::WORKER_CPU_SECONDS);
    }

    #[test]
    fn the_units_of_the_largest_cases_start_first_and_the_rest_in_report_order() {
        let of = |cases: &[u64]| cases.iter().map(|&b| if b == 0 { Bytes::default() } else { Bytes::of_case(b, b) }).collect::<Vec<_>>();
        let none = [false; 7];
        assert_eq!(start_order(&of(&[0, 0, 5, 0, 9, 5, 0]), &none), [4, 2, 5, 0, 1, 3, 6]);
        assert_eq!(start_order(&of(&[0, 0, 0]), &none[..3]), [0, 1, 2]);
        assert_eq!(start_order(&[], &[]), Vec::<usize>::new());
        // a unit that runs to its time limit: after the large ones, before the rest
        let hang = [false, false, false, false, false, false, true];
        assert_eq!(start_order(&of(&[0, 0, 5, 0, 9, 5, 0]), &hang), [4, 2, 5, 6, 0, 1, 3]);
    }

    #[test]
    fn only_a_gpu_only_case_of_gigabytes_holds_the_memory_budget() {
        let settings = runner::tests_settings();
        let large = |op: &str| -> Vec<bool> {
            let path = settings.contracts_dir.join(format!("{op}.toml"));
            let contract = Contract::parse(&format!("contracts/{op}.toml"), &std::fs::read_to_string(path).unwrap()).unwrap();
            let records: Vec<&Record> = contract.records.iter().collect();
            contract.cases.iter().filter(|c| c.gpu_only.is_some()).map(|c| large_case_bytes(&records, c) > 0).collect()
        };
        // a 4 GiB key cache past 2^31 elements, and 65,535 one-element rows
        assert_eq!(large("tf_score_keys"), [true, false]);
        // 65,537 one-element rows, and 33 rows of partials, the last at element 2^31 (8.25 GiB)
        assert_eq!(large("tf_sum_partials"), [false, true]);
        // 69 G products of 32 MiB inputs; 65,537 rows of 2
        assert_eq!(large("projection_bf16"), [false]);
        assert_eq!(large("tf_rms"), [false]);
        // the largest record's bytes: partials, tile maxima and sums in f32, an f32 output
        let path = settings.contracts_dir.join("tf_sum_partials.toml");
        let contract = Contract::parse("contracts/tf_sum_partials.toml", &std::fs::read_to_string(path).unwrap()).unwrap();
        let records: Vec<&Record> = contract.records.iter().collect();
        let case = contract.cases.iter().find(|c| c.symbols["rows"] == 33).unwrap();
        assert_eq!(large_case_bytes(&records, case), (33 << 26) * 4 + 2 * 33 * 1024 * 4 + 33 * 65536 * 4);
    }

    /// The units of a GPU run's five ops with cases of gigabytes are taken to hold at least
    /// what they were measured to hold at their peak on sm_90, and fit side by side in half of
    /// a 128 GiB host's memory (where counting each at twice its largest record's bytes came to 65
    /// GiB, past half of it).
    #[test]
    fn the_units_of_gigabytes_hold_what_they_keep_and_fit_side_by_side() {
        let settings = runner::tests_settings();
        let footprint = |op: &str| -> Bytes {
            let path = settings.contracts_dir.join(format!("{op}.toml"));
            let contract = Contract::parse(&format!("contracts/{op}.toml"), &std::fs::read_to_string(path).unwrap()).unwrap();
            let records: Vec<&Record> = contract.records.iter().collect();
            let of_case = |case: &crate::contract::Case| large_case_footprint(&contract, &records, case);
            contract.cases.iter().map(of_case).max_by_key(|b| (b.host, b.device)).unwrap()
        };
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        let (dense, partials) = (footprint("tf_embed_dense"), footprint("tf_sum_partials"));
        // measured: 13.5 GB (12.6 GiB) for the f32 table and its bf16 copy, 9.4 GB for the partials
        assert!((13.0..14.5).contains(&gib(dense.host)), "{}", gib(dense.host));
        assert!((8.8..10.0).contains(&gib(partials.host)), "{}", gib(partials.host));
        assert_eq!(dense.device, (8u64 << 30) * 5 / 4 + 4096 * 4 * 5 / 4 + 4 * 4096 * 4 * 5 / 4 + 4 * 4 * 5 / 4);
        let five = ["tf_embed_dense", "tf_sum_partials", "tf_embed_rows", "tf_score_keys", "tf_apply_values"];
        let host: u64 = five.iter().map(|op| footprint(op).host).sum();
        let device: u64 = five.iter().map(|op| footprint(op).device).sum();
        assert!(gib(host) < 60.0 && gib(device) < 0.75 * 80.0, "{} GiB host, {} GiB device", gib(host), gib(device));
        assert_eq!(footprint("tf_rms"), Bytes::default(), "no case of gigabytes");
    }

    /// Units start largest first; a large unit that does not fit beside the one running is
    /// passed over for the small ones (where its thread waited before), and starts once the
    /// other gives its bytes back, while another thread waits for it holding the queue.
    #[test]
    fn a_large_unit_that_must_wait_lets_the_small_ones_start() {
        let gib = |n: u64| Bytes::of_case(n << 30, n << 30);
        let footprints = [Bytes::default(), gib(8), Bytes::default(), gib(6), Bytes::default()];
        let order = start_order(&footprints, &[false; 5]);
        assert_eq!(order, [1, 3, 0, 2, 4]);
        // a 16 GiB card: 12 GiB of it for the large units, room for one of these at a time
        let memory = crate::budget::MemoryBudget::new(Bytes { host: 64 << 30, device: 12 << 30 });
        let left = Mutex::new((0..footprints.len()).collect::<Vec<usize>>());
        let (place, held) = next_unit(&left, &order, &footprints, &memory).unwrap();
        assert_eq!(order[place], 1, "the largest first");
        let started: Vec<usize> = (0..3).map(|_| order[next_unit(&left, &order, &footprints, &memory).unwrap().0]).collect();
        assert_eq!(started, [0, 2, 4], "the 6 GiB case does not fit beside the 8 GiB one: the small ones go");
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| next_unit(&left, &order, &footprints, &memory).map(|(place, _)| order[place]));
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!waiter.is_finished(), "only the large unit is left: it waits");
            drop(held);
            assert_eq!(waiter.join().unwrap(), Some(3));
        });
        assert!(next_unit(&left, &order, &footprints, &memory).is_none(), "none left");
    }

    /// A unit's results are reported in its records' order though they ran in another, the
    /// units in order, and a unit's results wait for the units before it to be done.
    #[test]
    fn results_are_reported_in_the_records_order_whatever_order_they_ran_in() {
        let settings = runner::tests_settings();
        let text = std::fs::read_to_string(settings.contracts_dir.join("tf_add.toml")).unwrap();
        let contract = Contract::parse("contracts/tf_add.toml", &text).unwrap();
        let result = |name: &str| {
            let record = contract.record(name).unwrap();
            runner::faulted_result(&contract, record, None, &[Gate::Nonfinite], "sm_90", (None, "-".into()), 0.0)
        };
        let names: Vec<&str> = contract.records.iter().take(3).map(|r| r.name.as_str()).collect();
        let (a, b, c) = (names[0], names[1], names[2]);
        let mut order = ReportOrder::new(vec![vec![a, b, c], vec![a]]);
        let said = |ready: Vec<RecordResult>| ready.into_iter().map(|r| r.record).collect::<Vec<_>>();
        order.result(1, result(a));
        order.done(1);
        assert!(order.ready().is_empty(), "the second unit waits for the first");
        order.result(0, result(c));
        assert!(order.ready().is_empty(), "the third record waits for the first two");
        order.result(0, result(a));
        assert_eq!(said(order.ready()), [a]);
        order.result(0, result(b));
        assert_eq!(said(order.ready()), [b, c]);
        assert!(order.ready().is_empty(), "the first unit is not done yet");
        order.done(0);
        assert_eq!(said(order.ready()), [a], "then the second unit's");
        assert!(order.ready().is_empty());
    }

    #[test]
    fn a_result_crosses_the_channel_unchanged_even_with_non_finite_figures() {
        let settings = runner::tests_settings();
        let text = std::fs::read_to_string(settings.contracts_dir.join("tf_add.toml")).unwrap();
        let contract = Contract::parse("contracts/tf_add.toml", &text).unwrap();
        let mut result = runner::faulted_result(
            &contract,
            &contract.records[0],
            None,
            &[Gate::Nonfinite],
            "host-x86_64",
            (Some(Fault::Crash), "crashed: SIGSEGV".into()),
            0.25,
        );
        result.cases.push(runner::CaseReport {
            symbols: [("rows".to_string(), 3)].into(),
            seeds: [("a".to_string(), u64::MAX)].into(),
            outputs: [(
                "out".to_string(),
                Metrics { elements: 3, mismatches: 1, max_abs_error: f64::NAN, mean_abs_error: 0.5, max_ulp: 7 },
            )]
            .into(),
            blocks: 1,
            switches: 2,
            inactive_lane_reads: 0,
            block_threads: 256,
            cross_backend: Some(Err("no module".into())),
            phases: crate::phases::Phases { inputs: 0.5, gates: 0.125, ..Default::default() },
            seams: vec![crate::seams::SeamCheck {
                plan: "pieces of 1 row".into(),
                cut: Some(1),
                batch: None,
                pieces: 3,
                of_pieces: 3,
                rows: 3,
                rows_differing: [("out".to_string(), 2)].into(),
            }],
            wrote_outside: true,
        });
        let token = random_token().unwrap();
        let line = encode(&token, &ChildMessage::Result(Box::new(result.clone()))).unwrap();
        assert!(line.ends_with(b"\n") && !line[..line.len() - 1].contains(&b'\n'));
        let Some(ChildMessage::Result(back)) = decode(&token, line.trim_ascii_end()) else { panic!("not a result") };
        assert_eq!(back.cases[0].seeds["a"], u64::MAX);
        // what a case wrote outside its tensors crosses too: the parent takes its process's stop
        assert!(result.wrote_outside_its_tensors() && back.wrote_outside_its_tensors());
        assert!(back.cases[0].outputs["out"].max_abs_error.is_nan());
        assert_eq!(
            (back.fault, back.error.as_deref(), back.outcome),
            (Some(Fault::Crash), Some("crashed: SIGSEGV"), runner::Outcome::Error)
        );
        assert_eq!(
            serde_json::to_string(&back.cases[0].cross_backend).unwrap(),
            serde_json::to_string(&result.cases[0].cross_backend).unwrap()
        );
        // another run's token, or none, carries nothing
        let other = random_token().unwrap();
        assert_ne!(token, other);
        assert!(decode(&other, line.trim_ascii_end()).is_none());
        assert!(decode(&token, &line[token.len() + 1..]).is_none());
    }

    #[test]
    fn a_tail_keeps_the_last_bytes_whatever_was_printed_and_drops_the_cut_line() {
        let mut tail = Tail::default();
        tail.push(b"first line\n");
        assert_eq!(tail.lines(), ["first line"]);
        // 64 MiB in 4 KiB chunks, no newline: the tail stays at its size
        let chunk = vec![b'x'; 4096];
        for _ in 0..(64 << 8) {
            tail.push(&chunk);
        }
        assert_eq!(tail.bytes.len(), TAIL_BYTES);
        tail.push(b"\nlast words\n");
        assert_eq!(tail.lines(), ["last words"]);
        let mut many = Tail::default();
        many.push((0..100).map(|i| format!("line {i}\n")).collect::<String>().as_bytes());
        let lines = many.lines();
        assert_eq!((lines.len(), lines[0].as_str(), lines[19].as_str()), (TAIL_LINES, "line 80", "line 99"));
    }

    #[test]
    fn the_channel_reader_splits_lines_and_drops_an_oversized_one_to_its_end() {
        let (read_end, write_end) = pipe().unwrap();
        let (sender, notes) = mpsc::channel();
        read_channel(File::from(read_end), sender);
        let mut writer = File::from(write_end);
        writer.write_all(b"one\ntwo\n").unwrap();
        let big = vec![b'y'; MAX_MESSAGE_BYTES + 1];
        std::thread::spawn(move || {
            writer.write_all(&big).unwrap();
            writer.write_all(b"\nthree").unwrap();
        });
        let mut seen = Vec::new();
        for note in notes.iter() {
            match note {
                Note::Line(line) => seen.push(String::from_utf8(line).unwrap()),
                Note::Oversized => seen.push("(oversized)".into()),
                Note::ChannelClosed => break,
                Note::Exited(_) => unreachable!(),
            }
        }
        assert_eq!(seen, ["one", "two", "(oversized)", "three"]);
    }

    #[test]
    fn a_unit_waits_for_its_own_builds_alone() {
        let key = |name: &str| (PathBuf::from(name), "k".to_string());
        let progress = BuildProgress::default();
        let (first, second) = (HashSet::from([key("a.hip")]), HashSet::from([key("a.hip"), key("b.hip")]));
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| progress.wait_for(&second));
            progress.finished(key("a.hip"), true);
            // the first unit's kernel is done: it goes, while the second still waits for b
            assert_eq!(progress.wait_for(&first), (None, true));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!waiting.is_finished());
            progress.finished(key("b.hip"), false);
            // b failed: the record's own child builds it again and says why
            assert_eq!(waiting.join().unwrap(), (None, false));
        });
        // a source the build child never finished: unbuilt at the limit, with why; one it
        // never reached because it died is the record child's to build
        let unit = HashSet::from([key("c.hip")]);
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| progress.wait_for(&unit));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!waiting.is_finished());
            progress.over(HashMap::from([(key("c.hip"), "not built within the build time limit".to_string())]));
            assert_eq!(waiting.join().unwrap(), (Some("not built within the build time limit".to_string()), false));
        });
        assert_eq!(progress.wait_for(&HashSet::from([key("d.hip")])), (None, false));
    }

    #[test]
    fn kernels_build_in_the_order_their_units_start_once_each() {
        let settings = runner::tests_settings();
        let parse = |op: &str| {
            let text = std::fs::read_to_string(settings.contracts_dir.join(format!("{op}.toml"))).unwrap();
            Contract::parse(&format!("contracts/{op}.toml"), &text).unwrap()
        };
        let (add, rms) = (parse("tf_add"), parse("tf_rms"));
        let control =
            Control::load(&settings.controls_dir.join("faults/never_returns.toml"), "never_returns.toml", &settings.root).unwrap();
        let units: Vec<(&Contract, Option<&Control>, Vec<&Record>)> =
            vec![(&add, None, vec![]), (&rms, None, vec![]), (&add, Some(&control), vec![]), (&add, None, vec![])];
        let names = |order: &[usize]| -> Vec<String> {
            build_order(&settings, &units, order).iter().map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned()).collect()
        };
        assert_eq!(names(&[0, 1, 2, 3]), ["tf_add.hip", "tf_rms.hip", "never_returns.hip"]);
        assert_eq!(names(&[2, 1, 3, 0]), ["never_returns.hip", "tf_rms.hip", "tf_add.hip"]);
    }
}
