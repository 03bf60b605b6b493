//! `contracts`: runs every contract and control on a backend and prints one record line per
//! record and control, then the SUMMARY. Flags in, library calls out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use engine::amdgpu::{Gfx1201Static, HipClang};
use engine::backend::cuda::{CudaBackend, CudaOptions, NvrtcStatic};
use engine::backend::hip::{HipBackend, HipOptions};
use engine::backend::host::{HostBackend, HostOptions, worker_count};
use engine::backend::preludes::Preludes;
use engine::backend::static_checks::{StaticCheckOptions, StaticChecked};
use engine::backend::{Backend, StaticCompiler};
use harness::isolation::{self, BackendInfo, ChildCommand};
use harness::replay::Replay;
use harness::report::{self, Summary};
use harness::reporters::dump::DumpReporter;
use harness::reporters::github::GithubAnnotations;
use harness::reporters::html::HtmlReporter;
use harness::reporters::json::JsonReporter;
use harness::reporters::junit::JunitReporter;
use harness::reporters::progress::ProgressReporter;
use harness::reporters::text::TextReporter;
use harness::reporters::{self, Reporter, Reporters, Sink};
use harness::runner::{self, Event, RunReport, Settings};
use harness::{exit_guard, processes};
use indicatif::ProgressBar;

/// Output that survives a closed pipe (`contracts | head`): the run goes on, its report is
/// written and its exit status is the run's, where `println!` would panic.
fn say_raw(text: std::fmt::Arguments) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_fmt(text);
}

macro_rules! say {
    ($($arg:tt)*) => {
        say_raw(format_args!("{}\n", format_args!($($arg)*)))
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    /// hip, then cuda, then host: the first this machine has
    Auto,
    /// the CPU, with GPU block semantics (no GPU needed)
    Host,
    /// NVIDIA GPUs through libcuda, NVRTC and cuBLAS
    Cuda,
    /// AMD GPUs through libamdhip64, hiprtc and rocBLAS
    Hip,
}

/// A seed in decimal or, as runs print it, in hex after `0x`.
fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|e| format!("`{text}` is not a seed (decimal, or hex after 0x): {e}"))
}

/// Runs the engine's kernels under their contracts: gates 1-3 (nonfinite, repeat, shapes)
/// on every shape case of every record, and every planted control.
#[derive(Parser, Debug)]
#[command(name = "contracts", version)]
struct Flags {
    #[command(subcommand)]
    command: Option<Subcommand>,
    /// With --static: the architecture whose compiler figures gate 4 checks (gfx1201, sm_90).
    #[arg(long, global = true)]
    arch: Option<String>,
    /// Gate 4 alone, from the compiler's figures, with no device (gates 1-3 are not run).
    #[arg(long = "static", requires = "arch")]
    static_only: bool,
    #[arg(long, global = true, value_enum, default_value = "host")]
    backend: BackendChoice,
    /// The repository: contracts/, controls/ and kernels/ are found under it.
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Contracts folder (default: <root>/contracts).
    #[arg(long, global = true)]
    contracts: Option<PathBuf>,
    /// Controls folder (default: <root>/controls).
    #[arg(long, global = true)]
    controls: Option<PathBuf>,
    /// Kernel sources folder (default: <root>/kernels).
    #[arg(long, global = true)]
    kernels: Option<PathBuf>,
    /// A folder every kernel's includes are also looked for in, after its contract's own
    /// `[kernel] include` (repeatable); files there may be named by contracts.
    #[arg(long = "include", value_name = "DIR", global = true)]
    include: Vec<PathBuf>,
    /// Run only this op's contract and controls (repeatable).
    #[arg(long = "only", value_name = "OP", global = true)]
    only: Vec<String>,
    /// Skip the planted controls.
    #[arg(long, global = true)]
    no_controls: bool,
    /// Seed of every input (the same seed gives the same bytes on every backend); decimal, or
    /// hex with 0x as the first line of a run prints it.
    #[arg(long, global = true, default_value_t = runner::DEFAULT_SEED, value_parser = parse_seed)]
    seed: u64,
    /// Launches per case for the repeat gate (at least 3).
    #[arg(long, global = true, default_value_t = 3, value_parser = clap::value_parser!(u16).range(3..=16))]
    repeats: u16,
    /// Host backend: OS threads running blocks (default: every core; 1 replays deterministically).
    #[arg(long, global = true)]
    workers: Option<usize>,
    /// Host backend: warp size, 32 (gfx1201 wave32, NVIDIA) or 64.
    #[arg(long, global = true, default_value_t = 32)]
    warp_size: u32,
    /// Where built kernels are cached (default: $KERNEL_CONTRACTS_CACHE, else
    /// $XDG_CACHE_HOME/kernel-contracts, else ~/.cache/kernel-contracts, shared by every
    /// checkout); it must be a folder this run can write in.
    #[arg(long, global = true)]
    cache_dir: Option<PathBuf>,
    /// A limit problem (live figures that differ from the recorded ones) fails the record.
    #[arg(long, global = true)]
    strict_limits: bool,
    /// On a GPU (cuda, hip): draw every input on the host and read each one back whole for
    /// gate 3, where by default an input of 64 MiB or more is drawn on the device by the
    /// harness's own kernel and checked there by a keyed hash (README, "Inputs").
    #[arg(long, global = true)]
    host_inputs: bool,
    /// With a GPU backend: leave out the host build's static offset checks (32-bit products
    /// widened late, 64-bit values narrowed), which need the host C++ compiler.
    #[arg(long, global = true)]
    no_static_checks: bool,
    /// With a GPU backend: also launch every case on the host backend and put the largest ulp
    /// distance between the two backends' outputs in the JSON report.
    #[arg(long, global = true)]
    compare_host: bool,
    /// After the run, a table of where the time went: the records and controls by wall time,
    /// each split into inputs, copies to and from the device, launches, oracle and gates.
    #[arg(long, global = true)]
    timings: bool,
    /// Print the README's table of ops under contract and exit.
    #[arg(long, global = true)]
    ops_table: bool,
    /// The JSON report (default: <root>/reports/last/<arch>.json).
    #[arg(long, global = true)]
    report: Option<PathBuf>,
    /// Time limit of each record, in seconds, where its contract (or control) sets none
    /// with `timeout_seconds` [default: 30].
    #[arg(long, global = true, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: Option<u64>,
    /// Child processes at a time (each contract and each control has its own). Several at once
    /// overlap their start (a GPU context each) and let a hung record wait out its limit beside
    /// the others; the lines and the report keep their order [default: 4; on a GPU, 2 and one
    /// more for each contract or control with a case of gigabytes].
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: Option<u16>,
    /// How long the kernel builds before the records may take, all together; a kernel still
    /// building then errors its records [default: 900].
    #[arg(long, global = true, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    build_timeout: Option<u64>,
    /// Run every record in this process, not each contract in a child process: for a
    /// debugger. A crash then ends the run, so crash and timeout controls are not run.
    #[arg(long, global = true)]
    in_process: bool,
    /// Stop at the first record that fails or errors: the records and contracts after it
    /// are not run (what `contracts mutate` runs each mutant with).
    #[arg(long, global = true)]
    fail_fast: bool,
    /// Run only the records of this name (repeatable), in the ops the run selects.
    #[arg(long = "record", value_name = "NAME", global = true)]
    records: Vec<String>,
    /// Run only this shape case (its index in the contract's `[shapes].cases`, from 0), and
    /// its copy with NaN and infinities planted where gate 1 plants one; needs one --only.
    #[arg(long, value_name = "N", global = true)]
    case: Option<usize>,
    /// Run this CI job's share of the ops, k of n (`--partition 2/4`): each op's contracts and
    /// controls go to one job by a hash of its name; `contracts merge` joins the jobs' reports.
    #[arg(long, value_name = "K/N", global = true)]
    partition: Option<harness::selection::Partition>,
    /// Write each case's inputs, outputs (first launch) and oracle as NumPy .npy files under
    /// this folder; f16 and bf16 as their 16-bit patterns (`<u2`). Needs --only; the records
    /// run in this process (as --in-process), so that their data can be written.
    #[arg(long, value_name = "DIR", global = true)]
    dump: Option<PathBuf>,
    /// Also write the results as JUnit XML (a regular file, written whole or not at all).
    #[arg(long, value_name = "PATH", global = true)]
    junit: Option<PathBuf>,
    /// Write a triage page per failing record, and an index, into this folder (static HTML).
    #[arg(long, value_name = "DIR", global = true)]
    html: Option<PathBuf>,
    /// Internal (`isolation::CHILD_FLAG`): this process is a child of a run and reads its job
    /// on standard input.
    #[arg(long, global = true, hide = true, value_name = "LABEL")]
    child: Option<String>,
    /// Internal: the host backend builds every kernel for coverage (the run `contracts
    /// coverage` starts).
    #[arg(long, global = true, hide = true)]
    coverage_build: bool,
}

#[derive(clap::Subcommand, Debug)]
enum Subcommand {
    /// Show how every contract's `[limits.<arch>]` recorded figures would change, from the
    /// compiler (gfx1201 with clang, sm_90 with NVRTC) or live from the GPU with `--backend
    /// cuda`, as a diff of each file; writes them only with --accept. Exits 1 when a change is
    /// shown and not written.
    Record {
        /// Write the changes shown.
        #[arg(long)]
        accept: bool,
    },
    /// Compare two JSON reports, per record and control: verdicts, error growth, limits moved,
    /// new and vanished records. Exits 1 on a regression, 2 when a report cannot be read.
    Diff {
        base: PathBuf,
        new: PathBuf,
        /// How many ulps an output's largest distance from the oracle may grow before it counts
        /// as a regression.
        #[arg(long, value_name = "ULPS", default_value_t = 0)]
        max_ulp_growth: u64,
        /// By how much (a fraction: 0.1 is 10%) an output's mean absolute error may grow before
        /// it counts as a regression.
        #[arg(long, value_name = "FRACTION", default_value_t = 0.0)]
        mean_error_growth: f64,
    },
    /// Combine the JSON reports of a partitioned run (`--partition k/n` jobs) into one report
    /// and one SUMMARY, and exit as that run would; --junit and --html work as for a run.
    Merge {
        #[arg(required = true)]
        reports: Vec<PathBuf>,
    },
    /// Line and branch coverage of every kernel source by its own contract's cases (host
    /// backend, GCC's gcov), held to the floor and accepted exceptions of `coverage.toml`.
    Coverage,
    /// Write a starting contract for a kernel of the kernels folder, read off its signature
    /// (`contracts/<symbol>.toml`, never over an existing file): its `[tensors]` and `[kernel]`
    /// argument list guessed, everything else a `?` to fill in.
    New {
        /// The kernel's source, in the kernels folder (`kernels/my_op.hip`).
        source: PathBuf,
        /// Its `extern "C" __global__` function.
        symbol: String,
    },
    /// Mutation testing: one-change mutants of every kernel (and common.h), each run against
    /// its op's records; prints survivors, a kill matrix, the score per op and a SUMMARY
    /// line, writes reports/last/mutate-<arch>.json, and exits 1 below the floor in
    /// mutants.toml. `--seed` seeds the sample; the runs use the default input seed.
    Mutate {
        /// Run this many mutants, chosen with `--seed` over every file and operator (default: all).
        #[arg(long, value_name = "N")]
        sample: Option<usize>,
        /// Print the chosen mutants' names and changes, and run nothing.
        #[arg(long)]
        list: bool,
        /// Only mutants of this operator (repeatable: relational, arithmetic, bound, index,
        /// guard, barrier, min-max, init, shuffle, narrow, swap), before any `--sample`.
        #[arg(long = "operator", value_name = "OPERATOR")]
        operators: Vec<String>,
    },
}

/// The repository, without `--root`: the nearest folder holding `contracts/`, from the
/// current folder upward. Never a folder compiled into the binary: a binary copied
/// elsewhere would quietly run another checkout's contracts.
fn find_root() -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("the current folder")?;
    match cwd.ancestors().find(|p| p.join("contracts").is_dir()) {
        Some(found) => Ok(found.to_path_buf()),
        None => bail!(
            "no contracts/ folder in the current folder ({}) or any folder above it: run from inside the repository, or give --root",
            harness::text::escaped(&cwd.display().to_string())
        ),
    }
}

/// `--only` names ops of the engine, every one of them: a typo beside a valid name would
/// otherwise run less than asked and still pass.
fn check_only(only: &[String]) -> Result<()> {
    let unknown: Vec<String> =
        only.iter().filter(|op| engine::ops::find(op).is_none()).map(|op| format!("`{}`", harness::text::escaped(op))).collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = engine::ops::all().iter().map(|o| o.name).collect();
        bail!("--only {}: no such op (the engine and the contracts have: {})", unknown.join(", "), known.join(", "));
    }
    Ok(())
}

/// The kernel cache folder every backend of the run builds into: `--cache-dir`, else the
/// user's cache shared by every checkout and run (entries are keyed by what a build reads,
/// never by where the checkout lies), else, with no home to put it in, the repository's
/// `target/kernel-cache`.
fn cache_dir(flags: &Flags, root: &Path) -> PathBuf {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from).filter(|p| p.is_absolute());
    flags
        .cache_dir
        .clone()
        .or_else(|| env("KERNEL_CONTRACTS_CACHE"))
        .or_else(|| env("XDG_CACHE_HOME").map(|dir| dir.join("kernel-contracts")))
        .or_else(|| env("HOME").map(|home| home.join(".cache/kernel-contracts")))
        .unwrap_or_else(|| root.join("target/kernel-cache"))
}

/// The backends' preludes and HIP header shims: the kernels folder's own, else the copies
/// built into this binary (a kernels folder of another library has none).
fn preludes(flags: &Flags, root: &Path) -> Result<Preludes> {
    let kernels = flags.kernels.clone().unwrap_or_else(|| root.join("kernels"));
    Preludes::locate(&kernels, &cache_dir(flags, root)).context("the backends' preludes")
}

fn static_compiler(arch: &str, flags: &Flags, root: &Path) -> Result<Box<dyn StaticCompiler>> {
    let preludes = preludes(flags, root)?;
    let cache_dir = cache_dir(flags, root);
    if arch.starts_with("gfx") {
        let clang = HipClang::discover().context("the static gfx path needs clang-22 (apt-get install clang-22 lld-22 llvm-22)")?;
        Ok(Box::new(Gfx1201Static { clang, arch: arch.to_string(), prelude: preludes.hip_static(), cache_dir: cache_dir.join(arch) }))
    } else if arch.starts_with("sm_") {
        engine::backend::cuda::nvrtc::Nvrtc::shared().context("the static sm_90 path needs NVRTC")?;
        Ok(Box::new(NvrtcStatic { arch: arch.to_string(), prelude: preludes.cuda() }))
    } else {
        bail!("--arch {arch}: static figures exist for gfx targets (gfx1201) and sm_ targets (sm_90)")
    }
}

fn backend(flags: &Flags, root: &Path) -> Result<(Box<dyn Backend>, Option<String>)> {
    // every backend's prelude from the kernels folder the run uses (`--kernels` included), or built in
    let preludes = preludes(flags, root)?;
    let host = || -> Result<Box<dyn Backend>> {
        let options = HostOptions {
            prelude: preludes.host(),
            cache_dir: cache_dir(flags, root),
            workers: flags.workers.unwrap_or_else(worker_count).max(1),
            warp_size: flags.warp_size,
        };
        let host = HostBackend::new(options).context("starting the host backend")?;
        Ok(Box::new(if flags.coverage_build { host.with_coverage() } else { host }))
    };
    let cuda = || {
        let options = CudaOptions { prelude: preludes.cuda(), cache_dir: Some(cache_dir(flags, root)), ..CudaOptions::for_root(root) };
        CudaBackend::probe(options)
    };
    let hip = || {
        let options = HipOptions { prelude: preludes.hiprtc(), cache_dir: Some(cache_dir(flags, root)), ..HipOptions::for_root(root) };
        HipBackend::probe(options)
    };
    // a GPU backend's kernels get the host build's static offset checks too, unless asked not to
    let checked = |gpu: Box<dyn Backend>| -> Result<Box<dyn Backend>> {
        if flags.no_static_checks {
            return Ok(gpu);
        }
        let options = StaticCheckOptions { prelude: preludes.host(), cache_dir: cache_dir(flags, root), warp_size: flags.warp_size };
        let checked = StaticChecked::new(gpu, options)
            .context("the static offset checks of a GPU run need the host C++ compiler and prelude (--no-static-checks leaves them out)")?;
        Ok(Box::new(checked))
    };
    match flags.backend {
        BackendChoice::Host => Ok((host()?, None)),
        BackendChoice::Cuda => Ok((checked(Box::new(cuda().context("backend cuda")?))?, None)),
        BackendChoice::Hip => Ok((checked(Box::new(hip().context("backend hip")?))?, None)),
        BackendChoice::Auto => match hip() {
            Ok(backend) => Ok((checked(Box::new(backend))?, Some("backend auto: using hip".into()))),
            Err(hip_error) => match cuda() {
                Ok(backend) => Ok((
                    checked(Box::new(backend))?,
                    Some(format!("backend auto: no HIP device ({}); using cuda", runner::error_chain(&hip_error))),
                )),
                Err(e) => Ok((
                    host()?,
                    Some(format!(
                        "backend auto: no HIP device ({}), no CUDA device ({}); using host",
                        runner::error_chain(&hip_error),
                        runner::error_chain(&e)
                    )),
                )),
            },
        },
    }
}

/// This binary run as a child of the run on `backend`.
fn child_command(flags: &Flags, settings: &Settings, backend: &str) -> Result<ChildCommand> {
    Ok(ChildCommand {
        program: std::env::current_exe().context("finding the contracts binary to run children")?,
        args: child_args(flags, settings, backend),
    })
}

/// The flags that make a child's backend and settings its parent's (the backend named as
/// the parent resolved it, so `auto` is not probed again).
fn child_args(flags: &Flags, settings: &Settings, backend: &str) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = Vec::new();
    let mut pair = |flag: &str, value: std::ffi::OsString| {
        args.push(flag.into());
        args.push(value);
    };
    pair("--backend", backend.into());
    pair("--root", settings.root.clone().into());
    pair("--contracts", settings.contracts_dir.clone().into());
    pair("--controls", settings.controls_dir.clone().into());
    pair("--kernels", settings.kernels_dir.clone().into());
    for dir in &settings.include_dirs {
        pair("--include", dir.clone().into());
    }
    pair("--seed", settings.seed.to_string().into());
    pair("--repeats", settings.repeats.to_string().into());
    pair("--warp-size", flags.warp_size.to_string().into());
    if let Some(workers) = flags.workers {
        pair("--workers", workers.to_string().into());
    }
    // the folder the parent resolved, whatever the child's environment says
    pair("--cache-dir", settings.cache_dir.clone().into());
    if flags.strict_limits {
        args.push("--strict-limits".into());
    }
    if flags.host_inputs {
        args.push("--host-inputs".into());
    }
    if flags.no_static_checks {
        args.push("--no-static-checks".into());
    }
    if flags.compare_host {
        args.push("--compare-host".into());
    }
    if flags.fail_fast {
        args.push("--fail-fast".into());
    }
    // the job names the records; the case filter applies inside them
    if let Some(case) = flags.case {
        args.extend(["--case".into(), case.to_string().into()]);
    }
    args
}

/// What the run covers, from the flags. A child is given every folder whole by its parent
/// (and no --only: its job names what it runs).
fn settings(flags: &Flags, root: &Path, isolated: bool) -> Settings {
    let absolute = |p: &Option<PathBuf>, default: &str| -> PathBuf {
        let p = p.clone().unwrap_or_else(|| root.join(default));
        p.canonicalize().unwrap_or(p)
    };
    Settings {
        process_started: PROCESS_STARTED.get().copied(),
        contracts_dir: absolute(&flags.contracts, "contracts"),
        controls_dir: absolute(&flags.controls, "controls"),
        kernels_dir: absolute(&flags.kernels, "kernels"),
        include_dirs: flags.include.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect(),
        // a run whose cache cannot hold them stops at the backend's start, saying why
        hip_headers: preludes(flags, root).ok().map(|p| p.hip_headers()),
        cache_dir: cache_dir(flags, root),
        root: root.to_path_buf(),
        only: flags.only.clone(),
        run_controls: !flags.no_controls,
        seed: flags.seed,
        repeats: flags.repeats as usize,
        strict_limits: flags.strict_limits,
        timeout_seconds: flags.timeout.unwrap_or(runner::DEFAULT_TIMEOUT_SECONDS),
        isolated,
        jobs: flags.jobs.map_or(isolation::DEFAULT_JOBS, usize::from),
        jobs_given: flags.jobs.is_some(),
        build_timeout_seconds: flags.build_timeout.unwrap_or(runner::DEFAULT_BUILD_TIMEOUT_SECONDS),
        fail_fast: flags.fail_fast,
        records: flags.records.clone(),
        case: flags.case,
        partition: flags.partition,
        case_data: flags.dump.is_some(),
        device_inputs: !flags.host_inputs,
    }
}

/// `--compare-host`: the host backend every case is also launched on.
fn reference_host(flags: &Flags, settings: &Settings) -> Result<Option<HostBackend>> {
    if !flags.compare_host {
        return Ok(None);
    }
    let options = HostOptions {
        prelude: preludes(flags, &settings.root)?.host(),
        cache_dir: cache_dir(flags, &settings.root),
        workers: worker_count(),
        warp_size: flags.warp_size,
    };
    Ok(Some(HostBackend::new(options).context("--compare-host: starting the host backend")?))
}

/// A child of a run: its backend started before its first job arrives, then its jobs from
/// standard input, one a line, each reported on the result channel the job names, until the
/// parent closes the input. Its temporary folder (TMPDIR) is set by the parent.
fn run_child(flags: &Flags) -> i32 {
    let parent = std::env::var("KERNEL_CONTRACTS_PARENT").ok().and_then(|p| p.parse().ok()).unwrap_or(0);
    isolation::prepare_child_process(parent);
    let outcome = (|| -> Result<()> {
        exit_guard::arm(
            "contracts (child): the process ended before its job was done: a kernel or library called exit() (or a panic above)",
            None,
        );
        let root = flags.root.clone().context("a child is given --root")?;
        // the ops its contract replaces are defined by the other contracts: read on a thread
        // of its own while the device opens (20 ms of every start, beside the driver's)
        let contracts = flags.contracts.clone().unwrap_or_else(|| root.join("contracts"));
        let defining = engine::threads::brief(move || harness::contract::define_data_ops(&contracts));
        let settings = settings(flags, &root, true);
        // a process that will launch opens its device now, while the run's kernels build;
        // the build process only compiles
        let launches = flags.child.as_deref() != Some(isolation::BUILD_LABEL);
        let started = backend(flags, &root).and_then(|(backend, _)| {
            if launches {
                backend.open().context("opening the device")?;
            }
            Ok((backend, reference_host(flags, &settings)?))
        });
        defining.join().map_err(|_| anyhow::anyhow!("defining the contracts' data ops panicked"))?;
        let started = match &started {
            Ok((backend, reference)) => Ok((backend.as_ref(), reference.as_ref().map(|r| r as &dyn Backend))),
            Err(e) => Err(runner::error_chain(e.as_ref())),
        };
        isolation::serve_worker(started, &settings, &mut std::io::stdin().lock()).context("serving the parent's jobs")?;
        Ok(())
    })();
    exit_guard::disarm();
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("contracts (child): error: {}", runner::error_chain(e.as_ref()));
            isolation::CHILD_ERROR_STATUS
        }
    }
}

/// The run's reporters, and what it has reported so far, for the report an interrupted run
/// still writes.
struct Progress {
    reporters: Reporters,
    /// Set when the run starts.
    report: Option<RunReport>,
    started: Instant,
    /// The run finished and its outputs were written: a signal from here on writes nothing.
    over: bool,
}

/// Set before the run starts; taken (and its lock kept) by whatever ends the run early, so
/// that no line is printed after the interruption's.
static PROGRESS: Mutex<Option<Progress>> = Mutex::new(None);

/// The progress lock, waited for a little: the thread holding it only prints a line.
fn progress() -> Option<MutexGuard<'static, Option<Progress>>> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match PROGRESS.try_lock() {
            Ok(guard) => return Some(guard),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        }
    }
}

/// Ends every process of the run, then has the reporters write what finished, marked as
/// interrupted by `cause`: the line saying so, where the report went and (for a signal) the
/// SUMMARY, and the JSON report and the other outputs. Holds the progress lock to the end of
/// the process, so no other line follows.
fn write_interrupted(cause: &'static str) {
    let guard = progress();
    processes::end_everything(cause);
    isolation::remove_temp_folders();
    let Some(mut guard) = guard else { return };
    let Some(progress) = guard.as_mut().filter(|p| !p.over) else { return };
    let Some(report) = progress.report.as_mut() else { return };
    report.interrupted = Some(cause.to_string());
    report.timing.total_seconds = progress.started.elapsed().as_secs_f64();
    progress.reporters.finish(report);
    std::mem::forget(guard);
}

/// SIGINT, SIGTERM or SIGHUP: the run ends now, with its report, and exits 128 + the signal.
fn on_signal(signal: i32) {
    let name = processes::interrupting_name(signal);
    exit_guard::disarm();
    write_interrupted(name);
    eprintln!("contracts: interrupted by {name}");
    // SAFETY: ends the process at once; every process of the run was ended above.
    unsafe { libc::_exit(128 + signal) }
}

/// When `main` began: a run's timings say how long this process took to start it.
static PROCESS_STARTED: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    PROCESS_STARTED.get_or_init(Instant::now);
    let flags = Flags::parse();
    if flags.child.is_some() {
        return ExitCode::from(run_child(&flags) as u8);
    }
    // two reports compared: no repository, no run, no signal handling needed
    if let Some(Subcommand::Diff { base, new, max_ulp_growth, mean_error_growth }) = &flags.command {
        let thresholds = harness::diff::Thresholds { max_ulp_growth: *max_ulp_growth, mean_error_growth: *mean_error_growth };
        return ExitCode::from(diff(base, new, thresholds) as u8);
    }
    // before any thread starts, so that every thread leaves these signals to the watcher
    if let Err(e) = processes::block_interrupting_signals().and_then(|()| processes::become_subreaper()) {
        eprintln!("contracts: error: {}", runner::error_chain(&e));
        return ExitCode::from(2);
    }
    processes::watch_signals(on_signal);
    let outcome = run(&flags);
    exit_guard::disarm();
    // what a kernel of an in-process run forked, or anything a child left, ends with the run
    processes::end_orphans();
    match outcome {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("contracts: error: {}", runner::error_chain(e.as_ref()));
            ExitCode::from(2)
        }
    }
}

fn run(flags: &Flags) -> Result<i32> {
    let root = match &flags.root {
        Some(root) => root.clone(),
        None => find_root()?,
    };
    let root = root.canonicalize().with_context(|| format!("repository folder {}", harness::text::escaped(&root.display().to_string())))?;
    // the ops the contracts describe as data are ops of this run, as the engine's own are
    harness::contract::define_data_ops(&flags.contracts.clone().unwrap_or_else(|| root.join("contracts")));
    check_only(&flags.only)?;
    if flags.ops_table {
        say_raw(format_args!("{}", harness::ops_table::generate(&root.join("contracts")).map_err(|e| anyhow::anyhow!(e))?));
        return Ok(0);
    }
    if let Some(Subcommand::New { source, symbol }) = &flags.command {
        return new_contract(flags, &root, source, symbol);
    }
    if let Some(Subcommand::Mutate { sample, list, operators }) = &flags.command {
        return mutate(flags, &root, *sample, *list, operators);
    }
    if let Some(Subcommand::Merge { reports }) = &flags.command {
        return merge(flags, &root, reports);
    }
    if let Some(arch) = &flags.arch
        && !flags.static_only
        && !matches!(flags.command, Some(Subcommand::Record { .. }))
    {
        bail!("--arch {arch} needs --static (or the record subcommand); a live run takes its arch from the device");
    }
    // a folder that cannot hold the cache is one error, not one per kernel
    engine::backend::cache::prepare_folder(&cache_dir(flags, &root))?;
    if matches!(flags.command, Some(Subcommand::Coverage)) {
        return coverage(flags, &root);
    }
    // gate 4 from a compiler's figures alone: no kernel runs, so nothing to isolate
    let compiler_only =
        flags.static_only || matches!(flags.command, Some(Subcommand::Record { .. })) && flags.backend != BackendChoice::Cuda;
    check_selection(flags)?;
    // a case's data can only be written from a process that may write files: this one
    let isolated = !flags.in_process && !compiler_only && flags.dump.is_none();
    let settings = settings(flags, &root, isolated);
    let recording = matches!(flags.command, Some(Subcommand::Record { .. }));
    let bar = if recording { None } else { reporters::progress::terminal_bar() };
    *PROGRESS.lock().unwrap_or_else(|p| p.into_inner()) =
        Some(Progress { reporters: run_reporters(flags, &root, bar, recording), report: None, started: Instant::now(), over: false });
    exit_guard::arm(
        "contracts: the run ended before its SUMMARY: a kernel or library called exit() (or the run panicked, above); \
         the report holds what finished",
        Some(Box::new(|| write_interrupted("exit()"))),
    );
    let mut print = |event: &Event| {
        let Some(mut guard) = progress() else { return };
        let Some(progress) = guard.as_mut().filter(|p| !p.over) else { return };
        if let Event::Started { arch, backend, toolchain, gates_run } = event {
            progress.report = Some(RunReport::empty(arch, backend, toolchain, &settings, settings.repeats, gates_run));
        }
        if let Some(report) = progress.report.as_mut() {
            collect(report, event);
        }
        progress.reporters.event(event);
        // the outputs were written as the run finished: a signal from here on writes nothing
        progress.over = matches!(event, Event::Finished(_));
    };
    if flags.dump.is_some() {
        say!(
            "--dump: the records run in this process (as with --in-process: no child processes, no sandbox), so that their cases can be written"
        );
    }
    let run = if compiler_only {
        let arch = flags.arch.clone().context("record needs --arch (gfx1201, sm_90)")?;
        runner::run_static(static_compiler(&arch, flags, &root)?.as_ref(), &settings, &mut print)
    } else {
        // a GPU run's first children start before this process opens the device, so that
        // their device contexts are made while its driver starts; as many as jobs, or as
        // the ops of a run without controls if fewer (the driver makes contexts one after
        // another: an unused one delays the others); by default as many as a run of small
        // units takes (`isolation::gpu_jobs`), and the run starts more where it takes more
        let early = match flags.backend {
            BackendChoice::Cuda if settings.isolated => Some("cuda"),
            BackendChoice::Hip if settings.isolated => Some("hip"),
            _ => None,
        };
        let ahead = match early {
            Some(name) => {
                let jobs = isolation::gpu_jobs(&settings, 0);
                let jobs = if flags.no_controls && !flags.only.is_empty() { jobs.min(flags.only.len()) } else { jobs };
                isolation::Ahead::start(&child_command(flags, &settings, name)?, jobs.max(1))
            }
            None => isolation::Ahead::none(),
        };
        let (backend, note) = backend(flags, &root)?;
        if let Some(note) = note {
            say!("{note}");
        }
        if settings.isolated {
            let info = BackendInfo {
                name: backend.name().to_string(),
                arch: backend.arch(),
                toolchain: backend.toolchain(),
                gates_run: runner::gates_for(backend.as_ref()),
                workers: flags.workers.unwrap_or_else(worker_count).max(1),
                device_memory: backend.device_memory(),
            };
            // the children open their own device contexts; this one is closed first
            drop(backend);
            isolation::run_isolated(&info, &child_command(flags, &settings, &info.name)?, &settings, ahead, &mut print)
        } else {
            let reference = reference_host(flags, &settings)?;
            runner::run_compared(backend.as_ref(), reference.as_ref().map(|r| r as &dyn Backend), &settings, &mut print)
        }
    };
    if let Some(Subcommand::Record { accept }) = &flags.command {
        return record(&run, &settings, *accept);
    }
    let summary = progress().and_then(|guard| guard.as_ref()?.reporters.summary().cloned()).unwrap_or_else(|| Summary::of(&run));
    Ok(report::exit_code(&summary))
}

/// What an interrupted run's report holds: each event's part of the run, as it came.
fn collect(report: &mut RunReport, event: &Event) {
    match event {
        Event::ContractError(e) => report.contract_errors.push((*e).clone()),
        Event::NotApplicable { controls, .. } => report.controls_not_applicable.extend(controls.iter().cloned()),
        Event::CasesNotRun { cases, .. } => report.cases_not_run.extend(cases.iter().cloned()),
        Event::Record(r) => report.records.push((*r).clone()),
        Event::Control(r) => report.controls.push((*r).clone()),
        _ => {}
    }
}

/// `--case` and `--dump` name what they apply to.
fn check_selection(flags: &Flags) -> Result<()> {
    if flags.case.is_some() && flags.only.len() != 1 {
        bail!("--case N is an index into one contract's [shapes].cases: give exactly one --only OP with it");
    }
    if flags.dump.is_some() && flags.only.is_empty() {
        bail!("--dump writes every case the run runs: name the op with --only (and narrow it with --record and --case)");
    }
    Ok(())
}

/// Where lines go: standard output, through the progress bar where one is drawn (so the bar
/// is lifted off the terminal while a line prints).
fn stdout_sink(bar: Option<ProgressBar>) -> Sink {
    Box::new(move |line: &str| match &bar {
        Some(bar) => bar.suspend(|| say!("{line}")),
        None => say!("{line}"),
    })
}

/// The replay command's flags of this run that shape what a case computes.
fn replay(flags: &Flags) -> Replay {
    let mut folders = Vec::new();
    for (flag, value) in
        [("--root", &flags.root), ("--contracts", &flags.contracts), ("--controls", &flags.controls), ("--kernels", &flags.kernels)]
    {
        if let Some(path) = value {
            folders.push((flag.to_string(), path.display().to_string()));
        }
    }
    let mut extra = Vec::new();
    if flags.warp_size != 32 {
        extra.extend(["--warp-size".to_string(), flags.warp_size.to_string()]);
    }
    if flags.repeats != 3 {
        extra.extend(["--repeats".to_string(), flags.repeats.to_string()]);
    }
    if flags.strict_limits {
        extra.push("--strict-limits".into());
    }
    Replay { program: "contracts".into(), seed: flags.seed, folders, extra, ..Replay::default() }
}

/// Every output of a run: its files first (the JSON report, JUnit, triage pages, case dumps),
/// then its lines (the progress bar, the record lines and SUMMARY, annotations). `contracts
/// record` prints the record lines only, and writes no report.
fn run_reporters(flags: &Flags, root: &Path, bar: Option<ProgressBar>, recording: bool) -> Reporters {
    let replay = replay(flags);
    let mut list: Vec<Box<dyn Reporter>> = Vec::new();
    if recording {
        list.push(Box::new(TextReporter::new(stdout_sink(None), flags.seed, root).with_replay(replay).without_closing()));
        return Reporters::new(list);
    }
    list.push(Box::new(JsonReporter::new(flags.report.clone(), root)));
    if let Some(path) = &flags.junit {
        list.push(Box::new(JunitReporter::new(path.clone(), Some(replay.clone()))));
    }
    if let Some(dir) = &flags.html {
        list.push(Box::new(HtmlReporter::new(dir.clone(), Some(replay.clone()))));
    }
    if let Some(dir) = &flags.dump {
        list.push(Box::new(DumpReporter::new(dir.clone())));
    }
    if let Some(bar) = &bar {
        list.push(Box::new(ProgressReporter::new(bar.clone())));
    }
    let text = TextReporter::new(stdout_sink(bar.clone()), flags.seed, root).with_replay(replay.clone()).with_timings(flags.timings);
    list.push(Box::new(text));
    // after the record's own lines; never after the SUMMARY (it annotates no closing line)
    if reporters::github::enabled() {
        list.push(Box::new(GithubAnnotations::new(stdout_sink(bar), root, Some(replay))));
    }
    Reporters::new(list)
}

/// `contracts record`: every contract whose recorded figures differ from the run's, as a diff
/// of its file; written only with `--accept` (as `cargo insta accept` does). Exits 1 when a
/// change is shown and not written.
fn record(run: &RunReport, settings: &Settings, accept: bool) -> Result<i32> {
    let plan = harness::record::plan(run, &settings.contracts_dir).map_err(|e| anyhow::anyhow!("recording figures: {e}"))?;
    for line in &plan.lines {
        say!("{line}");
    }
    for change in &plan.changes {
        say_raw(format_args!("{}", change.diff()));
    }
    let n = plan.changes.len();
    if accept {
        harness::record::apply(&plan).map_err(|e| anyhow::anyhow!("recording figures: {e}"))?;
        say!("recorded {} figures of {}: {n} of {} contract(s) changed", run.arch, run.toolchain, plan.lines.len());
        return Ok(0);
    }
    if n == 0 {
        say!("recorded {} figures of {}: every one of {} contract(s) as recorded", run.arch, run.toolchain, plan.lines.len());
        return Ok(0);
    }
    say!("{n} of {} contract(s) would change (above): nothing written; run again with --accept to write them", plan.lines.len());
    Ok(1)
}

/// `contracts diff`: 1 on a regression, 0 otherwise, 2 when a report cannot be read.
fn diff(base: &Path, new: &Path, thresholds: harness::diff::Thresholds) -> i32 {
    let read = |path: &Path| harness::report_file::read(path).map_err(|e| eprintln!("contracts diff: {e}"));
    let (Ok(base), Ok(new)) = (read(base), read(new)) else { return 2 };
    let compared = harness::diff::diff(&base, &new, &thresholds);
    for line in compared.lines() {
        say!("{line}");
    }
    compared.exit_code()
}

/// `contracts merge`: the jobs' reports as one run, told by the run's reporters (record lines
/// and SUMMARY, the JSON report, --junit, --html), exiting as that run would.
fn merge(flags: &Flags, root: &Path, paths: &[PathBuf]) -> Result<i32> {
    let mut reports = Vec::new();
    for path in paths {
        reports.push((path.clone(), harness::report_file::read(path)?));
    }
    let run = harness::merge::merge(reports)?;
    let mut reporters = Reporters::default();
    reporters.push(Box::new(JsonReporter::new(flags.report.clone(), root)));
    if let Some(path) = &flags.junit {
        reporters.push(Box::new(JunitReporter::new(path.clone(), None)));
    }
    if let Some(dir) = &flags.html {
        reporters.push(Box::new(HtmlReporter::new(dir.clone(), None)));
    }
    reporters.push(Box::new(TextReporter::new(stdout_sink(None), run.seed, root)));
    reporters.event(&Event::Started { arch: &run.arch, backend: &run.backend, toolchain: &run.toolchain, gates_run: &run.gates_run });
    let shown: Vec<String> = paths.iter().map(|p| harness::text::escaped(&p.display().to_string()).into_owned()).collect();
    reporters.event(&Event::Notice(&format!("merged {} reports: {}", paths.len(), shown.join(", "))));
    for e in &run.contract_errors {
        reporters.event(&Event::ContractError(e));
    }
    if !run.controls_not_applicable.is_empty() {
        reporters.event(&Event::NotApplicable { arch: &run.arch, controls: &run.controls_not_applicable });
    }
    if !run.cases_not_run.is_empty() {
        reporters.event(&Event::CasesNotRun { arch: &run.arch, cases: &run.cases_not_run });
    }
    reporters.event(&Event::Planned { records: run.records.len(), controls: run.controls.len() });
    for r in &run.records {
        reporters.event(&Event::Record(r));
    }
    for r in &run.controls {
        reporters.event(&Event::Control(r));
    }
    reporters.event(&Event::Finished(&run));
    let summary = reporters.summary().cloned().unwrap_or_else(|| Summary::of(&run));
    Ok(report::exit_code(&summary))
}

/// `contracts coverage`: the host backend in coverage mode, its records run in one child
/// process of this binary (`--in-process`: the kernels' counters are written when it exits).
fn coverage(flags: &Flags, root: &Path) -> Result<i32> {
    if flags.backend != BackendChoice::Host {
        bail!("coverage runs on the host backend (GCC's gcov); leave out --backend or give --backend host");
    }
    let settings = settings(flags, root, false);
    let options = HostOptions {
        prelude: preludes(flags, root)?.host(),
        cache_dir: cache_dir(flags, root),
        workers: flags.workers.unwrap_or_else(worker_count).max(1),
        warp_size: flags.warp_size,
    };
    let backend = HostBackend::new(options).context("starting the host backend")?.with_coverage();
    let arch = backend.arch();
    let request = harness::coverage::Request {
        settings: &settings,
        backend: &backend,
        program: std::env::current_exe().context("finding the contracts binary to run the records")?,
        args: child_args(flags, &settings, "host"),
        child_flag: "--coverage-build",
        report_path: flags.report.clone().unwrap_or_else(|| root.join("reports/last").join(format!("coverage-{arch}.json"))),
    };
    Ok(harness::coverage::run(&request, &mut |line| say!("{line}"))?)
}

/// `contracts new`: the starting contract of `symbol` in `source`, written beside the others.
fn new_contract(flags: &Flags, root: &Path, source: &Path, symbol: &str) -> Result<i32> {
    let shown = |p: &Path| harness::text::escaped(&p.display().to_string()).into_owned();
    let kernels = flags.kernels.clone().unwrap_or_else(|| root.join("kernels")).canonicalize().context("the kernels folder")?;
    let path = source.canonicalize().with_context(|| format!("the kernel source {}", shown(source)))?;
    let Ok(named) = path.strip_prefix(&kernels) else {
        bail!("{} is not in the kernels folder {}: a contract's [kernel] names its source from there", shown(source), shown(&kernels));
    };
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", shown(source)))?;
    let params = harness::scaffold::signature(&text, symbol).map_err(|e| anyhow::anyhow!("{}: {e}", shown(source)))?;
    let named = named.to_string_lossy().into_owned();
    let contract = harness::scaffold::contract(symbol, &named, symbol, &params);
    let dir = flags.contracts.clone().unwrap_or_else(|| root.join("contracts"));
    let target = dir.join(format!("{symbol}.toml"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .with_context(|| format!("writing {} (an existing contract is never overwritten)", shown(&target)))?;
    use std::io::Write;
    file.write_all(contract.as_bytes()).with_context(|| format!("writing {}", shown(&target)))?;
    let written = target.strip_prefix(root).unwrap_or(&target);
    say!(
        "wrote {}: {} parameters read off `{symbol}`; fill in every `?`, then run `contracts --only {symbol}`",
        shown(written),
        params.len()
    );
    Ok(0)
}

/// `contracts mutate`: generates the mutants, runs the chosen ones, prints and writes what
/// became of them.
fn mutate(flags: &Flags, root: &Path, sample: Option<usize>, list: bool, operators: &[String]) -> Result<i32> {
    use harness::mutate::{self, exec};
    let mut wanted = Vec::new();
    for name in operators {
        match mutate::Operator::from_name(name) {
            Some(operator) => wanted.push(operator),
            None => {
                let known: Vec<&str> = mutate::Operator::ALL.iter().map(|o| o.name()).collect();
                bail!("--operator {name}: no such mutation operator (there are {})", known.join(", "))
            }
        }
    }
    let started = Instant::now();
    let backend_name = match flags.backend {
        BackendChoice::Host => "host",
        BackendChoice::Cuda => "cuda",
        BackendChoice::Hip => "hip",
        BackendChoice::Auto => bail!("mutate needs a named --backend (host, cuda or hip): every mutant must run on the same one"),
    };
    let config = mutate::Config::load(&root.join(mutate::CONFIG_FILE), mutate::CONFIG_FILE)?.for_backend(backend_name);
    let kernels_dir = flags.kernels.clone().unwrap_or_else(|| root.join("kernels")).canonicalize().context("the kernels folder")?;
    let contracts_dir = flags.contracts.clone().unwrap_or_else(|| root.join("contracts")).canonicalize().context("the contracts folder")?;
    let targets = mutate::targets(&kernels_dir, &flags.only)?;
    let all = mutate::generate(&kernels_dir, &targets)?;
    // the report still sees every generated mutant, so no entry of mutants.toml looks stale
    let pool: Vec<mutate::Mutant> = all.iter().filter(|m| wanted.is_empty() || wanted.contains(&m.operator)).cloned().collect();
    let chosen: Vec<usize> = match sample {
        Some(n) => mutate::sample(&pool, n, flags.seed),
        None => (0..pool.len()).collect(),
    };
    let chosen: Vec<&mutate::Mutant> = chosen.into_iter().map(|i| &pool[i]).collect();
    if list {
        for m in &chosen {
            say!("{}    line {}: {}  ->  {}", m.name(), m.line, m.before, m.after);
        }
        say!("{} mutants of {} generated", chosen.len(), all.len());
        return Ok(0);
    }
    let cache = cache_dir(flags, root);
    engine::backend::cache::prepare_folder(&cache)?;
    let work = tempfile::Builder::new().prefix("contracts-mutate.").tempdir().context("a temporary folder for the mutants")?;
    let mut extra_args: Vec<std::ffi::OsString> = Vec::new();
    if let Some(workers) = flags.workers {
        extra_args.extend(["--workers".into(), workers.to_string().into()]);
    }
    let plan = exec::Plan {
        program: std::env::current_exe().context("finding the contracts binary to run mutants")?,
        contracts_dir,
        kernels_dir,
        cache_dir: cache.canonicalize().unwrap_or(cache),
        backend: backend_name.to_string(),
        warp_size: flags.warp_size,
        jobs: flags.jobs.map_or(isolation::DEFAULT_JOBS, usize::from),
        work: work.path().to_path_buf(),
        extra_args,
    };
    let arch = match flags.backend {
        BackendChoice::Host => format!("host-{}", std::env::consts::ARCH),
        _ => backend(flags, root)?.0.arch(),
    };
    let ops: Vec<String> = {
        // only the ops some chosen mutant runs against
        let mut ops: Vec<String> =
            targets.iter().filter(|t| chosen.iter().any(|m| m.file == t.file)).flat_map(|t| t.ops.iter().cloned()).collect();
        ops.sort();
        ops.dedup();
        ops
    };
    say!(
        "kernel-contracts {} mutate: backend {backend_name} ({arch}); {} mutants generated in {} files, running {}{}{}; {} at a time",
        env!("CARGO_PKG_VERSION"),
        all.len(),
        targets.len(),
        chosen.len(),
        if wanted.is_empty() { String::new() } else { format!(" of the {} by --operator {}", pool.len(), operators.join(", ")) },
        sample.map(|_| format!(" (sample seed {:#x})", flags.seed)).unwrap_or_default(),
        plan.jobs
    );
    let times = exec::baseline(&plan, &ops)?;
    say!("unmutated: {} ops pass in {:.1} s of records", times.len(), times.values().map(|t| t.all_records).sum::<f64>());
    let total = chosen.len();
    let mut results = exec::run_mutants(&plan, &targets, &chosen, &times, &|done, r| {
        let what = match &r.outcome {
            mutate::Outcome::Killed { gate, record, .. } => format!("killed at {gate} by {record}"),
            mutate::Outcome::Survived => "SURVIVED".into(),
            mutate::Outcome::DidNotCompile { .. } => "did not compile".into(),
            mutate::Outcome::IdenticalCode => "identical code".into(),
            mutate::Outcome::NotJudged { why } => format!("NOT JUDGED: {why}"),
        };
        say!("[{done}/{total}] {} {what} ({:.1} s)", r.name, r.seconds);
    })?;
    mutate::apply_equivalents(&mut results, &config);
    let report = mutate::MutateReport::new(
        &arch,
        backend_name,
        &all,
        sample,
        flags.seed,
        &config,
        &mutate::target_files(&targets),
        results,
        started.elapsed().as_secs_f64(),
    );
    let lines = report.lines();
    let (summary, body) = lines.split_last().expect("the report has a SUMMARY line");
    for line in body {
        say!("{line}");
    }
    let path = flags.report.clone().unwrap_or_else(|| mutate::default_report(root, &arch));
    let json = serde_json::to_string_pretty(&report).context("the mutate report")?;
    let written = write_report(&path, &json);
    let shown = harness::text::escaped(&path.strip_prefix(root).unwrap_or(&path).display().to_string()).into_owned();
    match &written {
        Ok(()) => say!("ran {total} mutants in {:.1} s; report {shown}", report.seconds),
        Err(e) => say!("ran {total} mutants in {:.1} s; report NOT written to {shown}: {e}", report.seconds),
    }
    say!("{summary}");
    Ok(if written.is_err() { 2 } else { report.exit_code() })
}

/// The mutate report, written whole through a temporary file beside it and a rename.
fn write_report(path: &Path, json: &str) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_file()) {
        bail!("it is not a regular file");
    }
    let mut staged = tempfile::Builder::new().prefix(".mutate.").suffix(".partial").tempfile_in(dir)?;
    staged.write_all(json.as_bytes())?;
    staged.persist(path).map_err(|e| e.error)?;
    Ok(())
}
