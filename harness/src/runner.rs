//! The runner: loads contracts and controls, builds their kernels, runs every record and
//! control through the engine's op launchers and gates 1-3, and emits one event per result.
//! It decides outcomes; reporters (report.rs) turn events into lines, JSON and the SUMMARY.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use engine::backend::{Backend, BlockOrder, KernelSource, MemoryFinding, MemoryFindingKind, Module, Schedule, ThreadOrder};
use engine::ops::{OpCall, Role};
use engine::tensor::Tensor;
use serde::Serialize;

use crate::builds::{self, Checker};
use crate::checked;
use crate::confine::Confinement;
use crate::contract::{Case, Contract, ContractError, Control, Finding, KERNEL_TENSOR, NonfinitePolicy, Record};
use crate::events::Forward;
pub use crate::events::{CaseData, CaseDone, CaseWatcher, TensorData};
use crate::format;
use crate::gate::{Fault, Gate, Planted};
use crate::gates::{self, Failure, Metrics};
use crate::inputs::device::{DeviceDraw, Drawn, Seal};
use crate::inputs::{Planting, Sites, tensor_seed};
use crate::limits::{self, LimitsReport};
use crate::oracle::InputValues;
use crate::phases::{Lap, Phases};
use rayon::prelude::*;

/// What a run covers and how.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Reports name paths relative to this folder (the repository).
    pub root: PathBuf,
    pub contracts_dir: PathBuf,
    pub controls_dir: PathBuf,
    pub kernels_dir: PathBuf,
    /// `--include` folders: searched by every kernel's includes, after its contract's own.
    pub include_dirs: Vec<PathBuf>,
    /// The HIP header shims (`hip/hip_runtime.h` and friends), searched last.
    pub hip_headers: Option<PathBuf>,
    /// The kernel cache (C++ reference functions are built into it too).
    pub cache_dir: PathBuf,
    /// Run only these ops (all when empty).
    pub only: Vec<String>,
    pub run_controls: bool,
    pub seed: u64,
    /// Launches per case for the repeat gate (at least 3).
    pub repeats: usize,
    /// A limit problem (figures that differ from the recorded ones) fails the record.
    pub strict_limits: bool,
    /// Each record's time limit where neither its contract nor its control sets one.
    pub timeout_seconds: u64,
    /// Records run in child processes, so crash and timeout controls can run.
    pub isolated: bool,
    /// Child processes at a time (isolated runs).
    pub jobs: usize,
    /// `jobs` was given (`--jobs`): a GPU run's default takes fewer for small units
    /// (`isolation::gpu_jobs`).
    pub jobs_given: bool,
    /// How long the build child may take to build every kernel (isolated runs).
    pub build_timeout_seconds: u64,
    /// Stop at the first record that fails or errors (`--fail-fast`): the records and
    /// contracts after it are not run. For `contracts mutate`, where one red record is the
    /// whole answer.
    pub fail_fast: bool,
    /// Run only the records of these names (`--record`, all when empty).
    pub records: Vec<String>,
    /// Run only this shape case, by its index in `[shapes].cases` (`--case`).
    pub case: Option<usize>,
    /// Run only the ops of this CI job's share (`--partition k/n`).
    pub partition: Option<crate::selection::Partition>,
    /// Emit each case's inputs, outputs and oracle as an event (`--dump`; in-process runs).
    pub case_data: bool,
    /// On a GPU, large inputs drawn and gate 3's check of them made on the device
    /// (`inputs::device`; the binary's default, off with `--host-inputs`).
    pub device_inputs: bool,
    /// When this process started (its `main`), where the binary says so: the run's timings
    /// then hold what came before the run (finding the repository, defining the contracts'
    /// data ops, opening the backend).
    pub process_started: Option<Instant>,
}

/// The time limit of a record whose contract and control set none, and no flag either: the
/// one place this default is set.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;

/// How long the kernel builds before any record runs may take, all of them together (a cold
/// cache of every kernel on a slow machine), where `--build-timeout` sets no other limit.
pub const DEFAULT_BUILD_TIMEOUT_SECONDS: u64 = 900;

pub const DEFAULT_SEED: u64 = 0x6b65_726e_656c;

/// A case's planted copies (NaN and infinities in its float inputs, gate 1) run when all of
/// its tensors together hold at most this many elements: what they plant (a NaN in most rows,
/// the infinities at the last and one seeded element) small cases reach as well as large ones.
pub const NONFINITE_CASE_ELEMENTS: usize = 1 << 16;

/// Which inputs a case runs on: the contract's, or a copy with non-finite values planted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Inputs {
    AsGenerated,
    Planted(Planting),
}

/// Gate 1's planted copies of one case of a record: every float input at once, then, where
/// there are several, each alone (`index` and the run's `seed` give its values' seed).
fn plantings(contract: &Contract, record: &Record, seed: u64, index: usize) -> Vec<Inputs> {
    let floats: Vec<&'static str> =
        contract.op.tensors.iter().filter(|t| t.role == Role::Input && record.dtypes[t.name].is_float()).map(|t| t.name).collect();
    let alone = floats.iter().filter(|_| floats.len() > 1);
    let alone = alone.map(|&tensor| Planting::Alone { tensor, seed: tensor_seed(seed, contract.op.name, tensor, index) });
    let together = Planting::Together { seed: tensor_seed(seed, contract.op.name, "", index) };
    std::iter::once(together).chain(alone).map(Inputs::Planted).collect()
}

/// How a failure names a planted copy of a case.
fn planted_text(planting: Planting) -> String {
    match planting {
        Planting::Together { .. } => "with NaN and infinities planted".to_string(),
        Planting::Alone { tensor, .. } => format!("with NaN and infinities planted in {tensor} alone"),
    }
}

/// An input's place among its op's float inputs: planted together, inputs of even and odd
/// places hold infinities of opposite signs at their last element.
fn float_ordinal(contract: &Contract, tensor: &str) -> usize {
    let floats = contract.op.tensors.iter().filter(|t| t.role == Role::Input && t.dtypes.iter().all(|d| d.is_float()));
    floats.take_while(|t| t.name != tensor).count()
}

/// The cases whose planted copies run on `arch`: every small one, else the smallest; on a GPU
/// also each GPU-only case of few elements (a grid of 65,535 blocks or rows and more, not a
/// buffer past 2^31): its copies cost milliseconds there, and a path a kernel takes only past
/// some block or row count (a NaN there scrubbed, say) meets non-finite values nowhere else.
pub fn nonfinite_cases(contract: &Contract, arch: &str) -> Vec<usize> {
    let size = |c: &Case| c.shapes.values().map(|s| s.iter().product::<usize>()).sum::<usize>();
    let eligible: Vec<usize> = (0..contract.cases.len()).filter(|i| contract.cases[*i].gpu_only.is_none()).collect();
    let small: Vec<usize> = eligible.iter().copied().filter(|i| size(&contract.cases[*i]) <= NONFINITE_CASE_ELEMENTS).collect();
    let mut cases: Vec<usize> =
        if small.is_empty() { eligible.into_iter().min_by_key(|i| size(&contract.cases[*i])).into_iter().collect() } else { small };
    if !arch.starts_with("host") {
        let gpu_only = |c: &Case| c.gpu_only.is_some() && size(c) <= GPU_ONLY_PLANTED_ELEMENTS;
        cases.extend((0..contract.cases.len()).filter(|i| gpu_only(&contract.cases[*i])));
    }
    cases
}

/// The most elements (all tensors together) of a GPU-only case whose planted copies run.
pub const GPU_ONLY_PLANTED_ELEMENTS: usize = 1 << 25;

/// Output poison of launch l: a NaN pattern first, then zeros, then a finite pattern.
pub fn output_poison(launch: usize) -> u8 {
    [0xff, 0x00, 0x5a, 0xa5, 0x3c][launch % 5]
}

/// The schedule of launch l: shared-memory poison, block order, the order a block's threads
/// start in and the wake order all change, so a result that depends on scheduling differs
/// between repeats every time. The three launches a record makes at least (`--repeats` 3)
/// start threads with one seeded warp ahead of the rest, reversed and shuffled: every order
/// but plain forward, which a warp ahead is but for the warp it picks, comes fourth.
pub fn launch_schedule(launch: usize, seed: u64) -> Schedule {
    let block_order = match launch % 3 {
        0 => BlockOrder::Linear,
        1 => BlockOrder::Reversed,
        _ => BlockOrder::Shuffled(seed ^ launch as u64),
    };
    let thread_order = match launch % 4 {
        0 => ThreadOrder::WarpAhead(seed ^ launch as u64),
        1 => ThreadOrder::Reversed,
        2 => ThreadOrder::Shuffled(seed ^ (launch as u64).rotate_left(32)),
        _ => ThreadOrder::Forward,
    };
    Schedule { shared_poison: Some([0xff, 0x00, 0xa5, 0x5a, 0x3c][launch % 5]), block_order, wake_reverse: launch % 2 == 1, thread_order }
}

/// How many launches a case makes: `--repeats` (at least 3) as generated, and one fewer for a
/// planted copy (2 by default). A planted copy is there for gate 1, and its first two launches
/// already tell an element left unwritten (the NaN poison, then zeros: no value is both) and a
/// result that moves with the schedule; on the host, where launches are most of a run, the
/// third launch of every planted copy was a third of all gate 1's time.
pub(crate) fn launches_of(variant: Inputs, repeats: usize) -> usize {
    match variant {
        Inputs::AsGenerated => repeats.max(3),
        Inputs::Planted(_) => repeats.max(3) - 1,
    }
}

/// The gate a wrong access fails: a race makes the result depend on the schedule (repeat);
/// the rest read or write what the kernel's shapes do not allow (shapes).
pub fn gate_of(kind: MemoryFindingKind) -> Gate {
    match kind {
        MemoryFindingKind::SharedRace | MemoryFindingKind::GlobalRace => Gate::Repeat,
        _ => Gate::Shapes,
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    KnownFinding,
    Fail,
    Error,
    RedAsPlanted,
    Missed,
}

/// A gate that went red: its first failing case and tensor.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct GateFailure {
    pub gate: Gate,
    pub case_index: usize,
    pub case: String,
    pub tensor: String,
    pub failure: Failure,
    /// Other failures of this gate in the same case (another tensor, a guard band).
    pub also: Vec<String>,
    /// Indices of every case where the gate went red.
    pub failing_cases: Vec<usize>,
}

/// One failure as its gate found it, before failures are grouped by gate for the record
/// line: what a known finding covers, or not.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct FailureSite {
    pub gate: Gate,
    pub case_index: usize,
    pub tensor: String,
    pub message: String,
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct ControlInfo {
    pub file: String,
    pub bug: String,
    pub planted: Planted,
    /// The control's kernel; none where it plants only parameters.
    #[serde(default)]
    pub source: Option<String>,
}

impl ControlInfo {
    pub fn of(control: &Control) -> ControlInfo {
        ControlInfo {
            file: control.file.clone(),
            bug: control.bug.clone(),
            planted: control.planted,
            source: control.source_display.clone(),
        }
    }
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct CaseReport {
    pub symbols: BTreeMap<String, i64>,
    pub seeds: BTreeMap<String, u64>,
    pub outputs: BTreeMap<String, Metrics>,
    pub blocks: u64,
    pub switches: u64,
    pub inactive_lane_reads: u64,
    pub block_threads: u32,
    /// Against the reference backend (`--compare-host`): the largest ulp distance per output
    /// between the two backends' bytes for the same inputs, or why it could not be had.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_backend: Option<Result<BTreeMap<String, u64>, String>>,
    /// Where the case's time went.
    #[serde(default)]
    pub phases: Phases,
    /// Gate 5: each cut's and batch's pieces, and the rows of each output that differed from
    /// the whole batch's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seams: Vec<crate::seams::SeamCheck>,
    /// A launch of the case stored where the run could see it must not: a guard band, an
    /// input, or (host) past a tensor or a `__shared__` array, or misaligned. Its process
    /// serves nothing after this record: such a store may have landed where nothing looks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wrote_outside: bool,
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct RecordResult {
    pub op: String,
    pub record: String,
    pub contract_file: String,
    pub control: Option<ControlInfo>,
    pub outcome: Outcome,
    pub gates_run: Vec<Gate>,
    /// Every gate that went red, in gate order.
    pub failures: Vec<GateFailure>,
    /// Every failure of every gate and case, one by one.
    #[serde(default)]
    pub failure_sites: Vec<FailureSite>,
    /// Findings that covered a red gate, and stale ones (which fail the record).
    pub findings: Vec<String>,
    pub stale_findings: Vec<String>,
    /// Tensors a known finding covered a failure of: no closeness is claimed for them.
    #[serde(default)]
    pub covered_tensors: Vec<String>,
    /// Where findings apply but one failure is covered by none: the first such failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncovered: Option<String>,
    pub error: Option<String>,
    /// The record's process died, ran past its time limit, or lost its device context
    /// (`error` says how); outcome Error, or red as planted for a fault control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    pub tolerances: BTreeMap<String, String>,
    pub cases: Vec<CaseReport>,
    /// The contract's policy for non-finite inputs (`propagate`, `ignore`, `unspecified`).
    #[serde(default)]
    pub nonfinite_policy: String,
    /// Gate 1's planted copies of the small cases (NaN and infinities in every float input).
    #[serde(default)]
    pub nonfinite_cases: Vec<CaseReport>,
    /// Cases this backend does not run (GPU-only cases on the host), with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases_not_run: Vec<String>,
    /// Gate 4's figures and verdicts, where it ran.
    pub limits: Option<LimitsReport>,
    /// `--compare-host`: per output, the largest ulp distance from the host backend's output
    /// over every case (the per-case figures and any failure to compare are in `cases`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_backend_max_ulp: Option<BTreeMap<String, u64>>,
    /// What the runner noticed about the record's process without failing it (lines on its
    /// result channel that did not carry the run's token).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub seconds: f64,
    /// The cases' phases summed (`seconds` also holds the process, module and limits).
    #[serde(default)]
    pub phases: Phases,
    /// For a failing record: each failing output's mismatches in its first failing case,
    /// summarized for the triage page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triage: Vec<crate::triage::Triage>,
}

impl RecordResult {
    pub fn elements(&self) -> usize {
        self.cases.iter().flat_map(|c| c.outputs.values()).map(|m| m.elements).sum()
    }

    /// A record that failed or errored (not a control: a control is red by design).
    pub fn red(&self) -> bool {
        self.control.is_none() && matches!(self.outcome, Outcome::Fail | Outcome::Error)
    }

    pub fn failed(&self, gate: Gate) -> bool {
        self.failures.iter().any(|f| f.gate == gate)
    }

    /// Whether a launch of any case, planted or not, stored where the run could see it must
    /// not (`CaseReport::wrote_outside`).
    pub fn wrote_outside_its_tensors(&self) -> bool {
        self.cases.iter().chain(&self.nonfinite_cases).any(|case| case.wrote_outside)
    }
}

pub enum Event<'a> {
    Started {
        arch: &'a str,
        backend: &'a str,
        toolchain: &'a str,
        gates_run: &'a [Gate],
    },
    ContractError(&'a ContractError),
    /// A line about how the run runs (a sandbox it could not set up), printed as it is.
    Notice(&'a str),
    /// Controls whose gate does not run on this architecture.
    NotApplicable {
        arch: &'a str,
        controls: &'a [String],
    },
    /// Shape cases this backend does not run (GPU-only cases on the host), with the reason.
    CasesNotRun {
        arch: &'a str,
        cases: &'a [String],
    },
    /// What the run will run, once its contracts and controls loaded.
    Planned {
        records: usize,
        controls: usize,
    },
    /// A record (or a control: `control` names its bug) is about to run; in an isolated run,
    /// when its child process takes it up.
    RecordStarted {
        op: &'a str,
        record: &'a str,
        control: Option<&'a str>,
    },
    /// One case of the record in flight finished (plain or with non-finite values planted).
    CaseFinished(&'a CaseDone),
    /// A case's inputs, first outputs and oracle (only with `Settings::case_data`).
    CaseData(&'a CaseData<'a>),
    /// A record finished.
    Record(&'a RecordResult),
    /// A control finished.
    Control(&'a RecordResult),
    /// The run is over: what it ran, as the report holds it.
    Finished(&'a RunReport),
}

#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Timing {
    pub build_seconds: f64,
    pub run_seconds: f64,
    pub total_seconds: f64,
    /// This process's own start before the run began (`Settings::process_started`): on a GPU,
    /// opening the backend loads the driver's and the compiler's libraries and starts the
    /// driver (0.15 s on an H100's host), beside the first children's own starts.
    #[serde(default)]
    pub before_seconds: f64,
    pub modules_built: usize,
    /// Child processes the run started (0 in one process): on a GPU each opens a device
    /// context, which the driver makes one after another.
    #[serde(default)]
    pub processes: usize,
    /// Why they were started.
    #[serde(default)]
    pub process_starts: ProcessStarts,
    /// The processes that ended after serving a job, while a pooled worker would have been
    /// kept for the next, each with its unit and why: what the next job's process start cost.
    #[serde(default)]
    pub processes_ended: Vec<ProcessEnded>,
    /// The units whose cases hold gigabytes, as they held the run's memory budget.
    #[serde(default)]
    pub large_units: LargeUnits,
}

impl Timing {
    /// The seconds from this process's start (where the settings know it) to `run_started`.
    pub fn before(settings: &Settings, run_started: Instant) -> f64 {
        settings.process_started.map_or(0.0, |process| run_started.saturating_duration_since(process).as_secs_f64())
    }
}

/// The bytes the units of cases of gigabytes may hold at once (`budget::MemoryBudget`), and
/// each such unit's share and when it ran: where one waited for another's bytes, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct LargeUnits {
    pub host_budget: u64,
    pub device_budget: u64,
    /// In the order they started.
    pub units: Vec<LargeUnitRun>,
}

/// A unit of a case of gigabytes: what it was taken to hold, and when it started and ended
/// (seconds from the run's start, the clock of `total_seconds`).
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct LargeUnitRun {
    pub unit: String,
    pub host: u64,
    pub device: u64,
    pub started: f64,
    pub ended: f64,
}

/// A run's child processes by why each started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProcessStarts {
    /// At the run's start, one per job slot, before the first units' kernels were built.
    pub ahead: usize,
    /// The kernel builds' process.
    pub build: usize,
    /// While a job ran, for the job its slot takes next (a fault planted, a job no worker may
    /// take, a slot turning to controls or running them).
    pub spare: usize,
    /// When a job found no worker that could take it and no spare.
    pub on_demand: usize,
}

/// A child process that ended after a job: its unit (`tf_add`, `control controls/x.toml`) and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProcessEnded {
    pub unit: String,
    pub why: String,
}

#[derive(Debug, Serialize)]
pub struct RunReport {
    pub arch: String,
    pub backend: String,
    pub toolchain: String,
    pub seed: u64,
    pub repeats: usize,
    pub gates_run: Vec<Gate>,
    pub contract_errors: Vec<ContractError>,
    pub records: Vec<RecordResult>,
    pub controls: Vec<RecordResult>,
    pub controls_not_applicable: Vec<String>,
    pub cases_not_run: Vec<String>,
    pub timing: Timing,
    /// What ended the run before its SUMMARY (`SIGINT`, `SIGTERM`, `SIGHUP`, `exit()`): the
    /// report then holds what finished.
    pub interrupted: Option<String>,
}

impl RunReport {
    pub fn empty(arch: &str, backend: &str, toolchain: &str, settings: &Settings, repeats: usize, gates_run: &[Gate]) -> RunReport {
        RunReport {
            arch: arch.to_string(),
            backend: backend.to_string(),
            toolchain: toolchain.to_string(),
            seed: settings.seed,
            repeats,
            gates_run: gates_run.to_vec(),
            contract_errors: Vec::new(),
            records: Vec::new(),
            controls: Vec::new(),
            controls_not_applicable: Vec::new(),
            cases_not_run: Vec::new(),
            timing: Timing::default(),
            interrupted: None,
        }
    }
}

impl Serialize for ContractError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ContractError", 4)?;
        st.serialize_field("file", &self.file)?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("key", &self.key)?;
        st.serialize_field("message", &self.message)?;
        st.end()
    }
}

/// The gates a backend runs: 1-3 everywhere, limits where modules report live figures;
/// seams comes with the contracts that declare a row axis (`gates_of_run`).
pub fn gates_for(backend: &dyn Backend) -> Vec<Gate> {
    let mut gates = vec![Gate::Nonfinite, Gate::Repeat, Gate::Shapes];
    if backend.has_live_limits() {
        gates.push(Gate::Limits);
    }
    gates
}

/// A run's gates: the backend's, and seams where some contract declares a row axis.
pub fn gates_of_run(backend_gates: &[Gate], contracts: &[Contract]) -> Vec<Gate> {
    let mut gates = backend_gates.to_vec();
    if !gates.contains(&Gate::Seams) && contracts.iter().any(|c| c.seams.axis().is_some()) {
        gates.push(Gate::Seams);
    }
    gates
}

/// The gates a record of `contract` (or a control) runs: the run's, less seams where the
/// contract says its rows are not independent, or for a control planted elsewhere: gate 5's
/// pieces are launches of their own, and they prove nothing about the gate a control is for.
pub fn gates_of_record(gates_run: &[Gate], contract: &Contract, control: Option<&Control>) -> Vec<Gate> {
    let seams = contract.seams.axis().is_some() && control.is_none_or(|c| c.planted == Planted::Gate(Gate::Seams));
    gates_run.iter().copied().filter(|g| *g != Gate::Seams || seams).collect()
}

fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// Controls: the TOML files of the folder and of its subfolders (`controls/limits/`).
fn control_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = toml_files(dir);
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    subdirs.sort();
    for sub in subdirs {
        files.extend(toml_files(&sub));
    }
    files
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect())
        .unwrap_or_default();
    files.sort();
    files
}

pub fn run(backend: &dyn Backend, settings: &Settings, on_event: &mut dyn FnMut(&Event)) -> RunReport {
    run_compared(backend, None, settings, on_event)
}

/// A run whose every case is also launched once on `reference` (the host backend) with the
/// same inputs, so each record's JSON carries the largest ulp distance between the two
/// backends' outputs.
pub fn run_compared(
    backend: &dyn Backend,
    reference: Option<&dyn Backend>,
    settings: &Settings,
    on_event: &mut dyn FnMut(&Event),
) -> RunReport {
    let started = Instant::now();
    let arch = backend.arch();
    let toolchain = backend.toolchain();
    let mut report = RunReport::empty(&arch, backend.name(), &toolchain, settings, settings.repeats, &gates_for(backend));
    let contracts = load_contracts(settings, &mut report);
    let gates_run = gates_of_run(&gates_for(backend), &contracts);
    report.gates_run = gates_run.clone();
    on_event(&Event::Started { arch: &arch, backend: backend.name(), toolchain: &toolchain, gates_run: &gates_run });
    let controls = load_controls(settings, &arch, &gates_run, &contracts, &mut report, on_event);

    // build every kernel source first, on all cores
    let build_started = Instant::now();
    let sources = kernel_sources(settings, &contracts, &controls);
    let modules = build_all(backend, &sources);
    let reference_modules = reference.map(|r| build_all(r, &sources)).unwrap_or_default();
    report.timing.build_seconds = build_started.elapsed().as_secs_f64();
    report.timing.modules_built = sources.len();

    let run_started = Instant::now();
    let mut inputs = InputCache::default();
    // the cases' events go out through the same callback as the records'
    let forward = Forward::new(on_event);
    let context = RunContext {
        backend,
        settings,
        gates_run: &gates_run,
        reference,
        reference_modules: &reference_modules,
        on_case: None,
        watcher: Some(&forward),
    };
    'contracts: for contract in &contracts {
        let loaded = Loaded::of(settings, contract, None, &modules, builds::build_reference(settings, contract));
        inputs.release_tensors();
        inputs.will_run(contract, &settings.records_of(contract).collect::<Vec<_>>());
        for record in settings.records_of(contract) {
            forward.emit(&Event::RecordStarted { op: contract.op.name, record: &record.name, control: None });
            let result = run_record(&context, contract, record, &loaded, None, &mut inputs);
            forward.emit(&Event::Record(&result));
            let red = result.red();
            report.records.push(result);
            if red && settings.fail_fast {
                break 'contracts;
            }
        }
    }
    for control in controls.iter().filter(|_| !(settings.fail_fast && report.records.iter().any(RecordResult::red))) {
        let contract = contracts.iter().find(|k| k.op.name == control.contract).unwrap();
        let record = contract.record(&control.record).unwrap();
        let loaded = Loaded::of(settings, contract, Some(control), &modules, builds::build_reference(settings, contract));
        // a control's kernel is planted to write where it must not: it launches on no tensor a
        // record left, and leaves none to the next control
        inputs.release_tensors();
        forward.emit(&Event::RecordStarted { op: contract.op.name, record: &record.name, control: Some(&control.bug) });
        let result = run_record(&context, contract, record, &loaded, Some(control), &mut inputs);
        forward.emit(&Event::Control(&result));
        report.controls.push(result);
    }
    report.timing.run_seconds = run_started.elapsed().as_secs_f64();
    report.timing.total_seconds = started.elapsed().as_secs_f64();
    report.timing.before_seconds = Timing::before(settings, started);
    forward.emit(&Event::Finished(&report));
    report
}

/// Loads contracts and the controls that apply here; what cannot load is reported, never fatal.
pub(crate) fn load(
    settings: &Settings,
    arch: &str,
    gates_run: &[Gate],
    report: &mut RunReport,
    on_event: &mut dyn FnMut(&Event),
) -> (Vec<Contract>, Vec<Control>) {
    let contracts = load_contracts(settings, report);
    let controls = load_controls(settings, arch, gates_run, &contracts, report, on_event);
    (contracts, controls)
}

/// The contracts in scope, one op each; each one that cannot load goes to the report's
/// errors (said, with the controls', by `load_controls`). The run's gates follow from them.
pub(crate) fn load_contracts(settings: &Settings, report: &mut RunReport) -> Vec<Contract> {
    let mut contracts: Vec<Contract> = Vec::new();
    let confined = confinement(settings);
    if !settings.contracts_dir.is_dir() {
        report.contract_errors.push(ContractError {
            file: display(&settings.root, &settings.contracts_dir),
            line: 0,
            key: "(folder)".into(),
            message: "no contracts folder".into(),
        });
    }
    // the atol check runs the oracle over every input of the contract's cases: as costly as
    // the inputs of its records, so only for the ops this run runs (an atol no record compares
    // with accepts nothing; a full run checks every contract), and the contracts on all cores
    // (one after another it was 0.6 s of a 2-core machine before any record started)
    let loaded: Vec<Result<Contract, ContractError>> = toml_files(&settings.contracts_dir)
        .par_iter()
        .map(|path| {
            let loaded = found_inside(&confined, settings, path).and_then(|()| Contract::load(path, &display(&settings.root, path)));
            loaded.and_then(|c| {
                if settings.selects_op(c.op.name) { crate::scale::check_absolute_tolerances(&c, settings.seed).map(|()| c) } else { Ok(c) }
            })
        })
        .collect();
    for checked in loaded {
        match checked {
            Ok(c) => {
                if let Some(first) = contracts.iter().find(|x| x.op.name == c.op.name) {
                    report.contract_errors.push(ContractError {
                        file: c.file.clone(),
                        line: c.op_line,
                        key: "op".into(),
                        message: format!("op `{}` already has a contract: {}", c.op.name, first.file),
                    });
                } else if settings.selects_op(c.op.name) {
                    match builds::files_inside(&confined, settings, &c) {
                        Ok(()) => contracts.push(c),
                        Err(e) => report.contract_errors.push(e),
                    }
                }
            }
            Err(e) => report.contract_errors.push(e),
        }
    }
    settings.drop_cases_out_of_range(&mut contracts, &mut report.contract_errors);
    contracts
}

/// The controls that apply here (`gates_run` are the run's), then every load error, the
/// controls not run and the cases not run, said as events.
pub(crate) fn load_controls(
    settings: &Settings,
    arch: &str,
    gates_run: &[Gate],
    contracts: &[Contract],
    report: &mut RunReport,
    on_event: &mut dyn FnMut(&Event),
) -> Vec<Control> {
    let confined = confinement(settings);
    let mut controls: Vec<Control> = Vec::new();
    let mut not_applicable: Vec<String> = Vec::new();
    if settings.run_controls {
        for path in control_files(&settings.controls_dir) {
            let loaded = found_inside(&confined, settings, &path)
                .and_then(|()| Control::load(&path, &display(&settings.root, &path), &settings.root));
            let control = loaded.and_then(|c| {
                if engine::ops::find(&c.contract).is_none() {
                    // said even when --only leaves the op out: a control for no op is wrong everywhere
                    return Err(c.error("contract", format!("no op `{}` in the engine, so no contract for it", c.contract)));
                }
                if !settings.selects_op(&c.contract) {
                    return Ok(None);
                }
                let contract = contracts
                    .iter()
                    .find(|k| k.op.name == c.contract)
                    .ok_or_else(|| c.error("contract", format!("no loaded contract for op `{}`", c.contract)))?;
                c.check_against(contract)?;
                if !settings.selects_record(&c.record) {
                    return Ok(None);
                }
                if let (Some(source), Some(shown)) = (&c.source, &c.source_display) {
                    let include_dirs = builds::include_dirs(settings, contract.kernel.as_ref());
                    confined.includes(source, shown, &include_dirs).map_err(|e| c.error("source", e.to_string()))?;
                }
                if let Some(why) = not_run_here(&c, arch, gates_run, settings) {
                    not_applicable.push(format!("{} ({}): {why}", c.file, c.planted));
                    return Ok(None);
                }
                Ok(Some(c))
            });
            match control {
                Ok(Some(c)) => controls.push(c),
                Ok(None) => {}
                Err(mut e) => {
                    if e.line == 0 {
                        e.line = 1;
                    }
                    report.contract_errors.push(e)
                }
            }
        }
    }
    for e in &report.contract_errors {
        on_event(&Event::ContractError(e));
    }
    if !not_applicable.is_empty() {
        on_event(&Event::NotApplicable { arch, controls: &not_applicable });
    }
    report.controls_not_applicable = not_applicable.clone();
    let not_run: Vec<String> = contracts.iter().flat_map(|c| cases_not_run(c, arch, false)).collect();
    if !not_run.is_empty() {
        on_event(&Event::CasesNotRun { arch, cases: &not_run });
    }
    report.cases_not_run = not_run;
    let records = contracts.iter().map(|c| settings.records_of(c).count()).sum();
    on_event(&Event::Planned { records, controls: controls.len() });
    controls
}

/// Whether a case runs on `arch`, for a contract's record or for a control. A GPU-only case
/// runs on a GPU for the contract's own records only: a control proves its gate on the
/// ordinary cases, and a GPU-only case costs tens of seconds and gigabytes each time.
pub fn case_runs(case: &Case, arch: &str, control: bool) -> bool {
    case.gpu_only.is_none() || !(arch.starts_with("host") || control)
}

/// The cases a record (or a control) runs on `arch`, by index: a control's own `cases` where
/// it names them (a GPU-only one among them runs on a GPU), else every case that runs here.
pub fn cases_run_for(contract: &Contract, arch: &str, control: Option<&Control>) -> Vec<usize> {
    match control.and_then(|c| c.case_indices(contract)) {
        Some(cases) => cases.into_iter().filter(|i| case_runs(&contract.cases[*i], arch, false)).collect(),
        None => (0..contract.cases.len()).filter(|i| case_runs(&contract.cases[*i], arch, control.is_some())).collect(),
    }
}

/// The cases of a record (or a control) that `arch` does not run, with why: for a control
/// with its own `cases`, those of them this arch cannot run.
pub fn cases_not_run_for(contract: &Contract, arch: &str, control: Option<&Control>) -> Vec<String> {
    match control.and_then(|c| c.case_indices(contract)) {
        Some(cases) => cases_not_run(contract, arch, false)
            .into_iter()
            .filter(|line| cases.iter().any(|i| line.contains(&format!(" shapes.cases[{i}] "))))
            .collect(),
        None => cases_not_run(contract, arch, control.is_some()),
    }
}

/// The cases of a contract that `arch` does not run, each as `file shapes.cases[i] {..}: why`
/// (for a control, also the GPU-only cases a GPU runs for the records).
pub fn cases_not_run(contract: &Contract, arch: &str, control: bool) -> Vec<String> {
    contract
        .cases
        .iter()
        .enumerate()
        .filter(|(_, c)| !case_runs(c, arch, control))
        .filter_map(|(i, c)| {
            let why = c.gpu_only.as_ref()?;
            let whose = if arch.starts_with("host") { "" } else { ", run for the records, not for controls" };
            Some(format!("{} shapes.cases[{i}] {}: GPU-only ({why}){whose}", contract.file, c.describe(contract.op)))
        })
        .collect()
}

/// Why a control cannot go red here, if it cannot: its gate does not run, its arch is
/// another, a planted crash or timeout outside child processes (in one process it would take
/// the whole run down), a device fault without a GPU, or a control planted for strict limits
/// without `--strict-limits`.
fn not_run_here(control: &Control, arch: &str, gates_run: &[Gate], settings: &Settings) -> Option<String> {
    let gates = || gates_run.iter().map(|g| g.name()).collect::<Vec<_>>().join(", ");
    match control.planted {
        Planted::Gate(gate) if !gates_run.contains(&gate) => {
            return Some(format!("gate {gate} does not run on {arch} (this run's gates: {})", gates()));
        }
        Planted::Fault(fault @ (Fault::Crash | Fault::Timeout)) if !settings.isolated => {
            return Some(format!("a planted {fault} needs records in child processes (not with --in-process)"));
        }
        Planted::Fault(Fault::DeviceFault) if arch.starts_with("host") => return Some("a device fault needs a GPU".into()),
        Planted::Fault(Fault::DeviceFault) if !settings.isolated => {
            return Some("a device fault needs records in child processes (not with --in-process)".into());
        }
        _ => {}
    }
    if !control.runs_on(arch) {
        return Some(format!("planted for {} only", control.arch.join(", ")));
    }
    (control.strict_limits && !settings.strict_limits).then(|| "planted for --strict-limits, which this run does not use".to_string())
}

/// What a contract's or control's files may resolve into: the repository and the folders
/// given on the command line, and the HIP header shims (the harness's own, wherever the
/// kernel cache holds them).
fn confinement(settings: &Settings) -> Confinement {
    let given = [&settings.root, &settings.contracts_dir, &settings.controls_dir, &settings.kernels_dir];
    Confinement::new(given.into_iter().chain(&settings.include_dirs).chain(&settings.hip_headers).map(PathBuf::as_path))
}

/// A contract or control file found in its folder, refused when it is a symlink that leads
/// outside (it would be read as one of the repository's).
fn found_inside(confined: &Confinement, settings: &Settings, path: &Path) -> Result<(), ContractError> {
    let shown = display(&settings.root, path);
    confined.resolve(path, &shown).map(|_| ()).map_err(|e| ContractError {
        file: shown,
        line: 1,
        key: "(file)".into(),
        message: e.to_string(),
    })
}

pub(crate) use crate::builds::{Built, kernel_sources, source_of};

/// What a record runs with: its kernel's module (none for a library op) and what its outputs
/// are checked against.
pub(crate) struct Loaded {
    pub module: Result<Option<Arc<dyn Module>>, String>,
    pub checker: Result<Checker, String>,
}

impl Loaded {
    /// From the run's modules, and the reference function `built` for the contract (if any).
    pub(crate) fn of(
        settings: &Settings,
        contract: &Contract,
        control: Option<&Control>,
        modules: &Built,
        built: Option<Result<PathBuf, String>>,
    ) -> Loaded {
        let module = match source_of(settings, contract, control) {
            Some(source) => modules.get(&builds::key(&source)).cloned().unwrap_or_else(|| Err("not built".into())).map(Some),
            None => Ok(None),
        };
        Loaded { module, checker: builds::load_checker(settings, contract, built, modules) }
    }
}

/// Generated inputs by (seed, dtype, shape, planted or not): records of one op share their
/// inputs, and a large table is generated once, not once per record. A small tensor keeps its
/// decoded values too, and an oracle's outputs are kept by the inputs they came from and the
/// parameters it read: records that differ only in an output's type or a parameter the oracle
/// does not read (or a control of a record) get the same oracle values without running it
/// again.
#[derive(Default)]
pub(crate) struct InputCache {
    bytes: HashMap<InputKey, Arc<Vec<u8>>>,
    /// The types the records to run take each input of an op in, where the contract's
    /// generator makes it (`will_run`): a large input is generated in all of them at once.
    types_wanted: HashMap<(&'static str, &'static str), Vec<engine::DType>>,
    values: HashMap<InputKey, Arc<Vec<f64>>>,
    /// Each oracle's outputs by what they follow from: the key, and the parameters it read.
    oracles: HashMap<OracleKey, Vec<(checked::ParamsRead, Arc<crate::oracle::Outputs>)>>,
    /// Values of every output kept in `oracles`.
    oracle_values: usize,
    /// Device tensors of large inputs (`KEPT_TENSOR_BYTES` and more) that the last case to
    /// take them left as uploaded, guard bands and all: the next record's case of the same
    /// bytes launches on them, not on a fresh upload of gigabytes (`take_tensor`).
    tensors: HashMap<InputKey, (Tensor, Option<Seal>)>,
}

impl InputCache {
    /// Notes the types `records` of `contract` take each input in (those a record generates
    /// itself apart), so that a large input is drawn once for all of them.
    pub(crate) fn will_run(&mut self, contract: &Contract, records: &[&Record]) {
        for spec in contract.op.tensors.iter().filter(|t| t.role == Role::Input) {
            let wanted = self.types_wanted.entry((contract.op.name, spec.name)).or_default();
            for record in records.iter().filter(|r| !r.inputs.contains_key(spec.name)) {
                if !wanted.contains(&record.dtypes[spec.name]) {
                    wanted.push(record.dtypes[spec.name]);
                }
            }
        }
    }

    /// A large input as the contract's generator makes it (`key` of no planted values and no
    /// record's own generator), in `key`'s type, drawn once with the other types the records to
    /// run take it in that are not made yet, which are kept; else `None`.
    fn generate_with_other_types(
        &mut self,
        contract: &Contract,
        tensor: &'static str,
        case: &Case,
        key: &InputKey,
    ) -> Option<Result<Vec<u8>, String>> {
        let (seed, dtype, shape, variant, own) = key;
        if *variant != Inputs::AsGenerated || own.is_some() {
            return None;
        }
        let others: Vec<engine::DType> = self
            .types_wanted
            .get(&(contract.op.name, tensor))?
            .iter()
            .copied()
            .filter(|other| other != dtype && !self.bytes.contains_key(&(*seed, *other, shape.clone(), Inputs::AsGenerated, None)))
            .collect();
        if others.is_empty() || shape.iter().product::<usize>() * dtype.size() < DRAWN_ONCE_BYTES {
            return None;
        }
        let types: Vec<engine::DType> = std::iter::once(*dtype).chain(others).collect();
        let spec = &contract.inputs[tensor];
        let made = spec.generate_each(&types, shape, *seed, &case.symbols).map_err(|e| format!("inputs.{tensor}: {e}"));
        Some(made.map(|mut each| {
            let mine = each.remove(0);
            for (other, bytes) in types[1..].iter().zip(each) {
                self.bytes.insert((*seed, *other, shape.clone(), Inputs::AsGenerated, None), Arc::new(bytes));
            }
            mine
        }))
    }

    /// The device tensor of `key`'s bytes a case left unchanged, to launch on again. It is
    /// fail-closed: the case taking it reads it back after its launches, as every case does
    /// its inputs, so a change made since the last check (by a launch of any case in between)
    /// is red at gate 3 there, with a note that the buffer was kept. A miss frees the kept
    /// tensor of the same input and case in another type, so that a gigabyte buffer is not
    /// held beside its successor.
    fn take_tensor(&mut self, key: &InputKey, bytes: usize) -> Option<(Tensor, Option<Seal>)> {
        if bytes < KEPT_TENSOR_BYTES {
            return None;
        }
        let kept = self.tensors.remove(key);
        if kept.is_none() {
            self.free_other_tensors(key);
        }
        kept
    }

    /// Frees the kept tensors of the same input and case (one seed) in another type or
    /// planted: before the buffer that follows one is allocated.
    fn free_other_tensors(&mut self, key: &InputKey) {
        self.tensors.retain(|kept, _| kept.0 != key.0 || kept == key);
    }

    /// Keeps a large input's tensor that its case left unchanged for the next record's case,
    /// with its seal where it has one (gate 3's check of it on the device).
    fn keep_tensor(&mut self, key: InputKey, tensor: Tensor, seal: Option<Seal>) {
        if tensor.bytes() >= KEPT_TENSOR_BYTES {
            self.tensors.insert(key, (tensor, seal));
        }
    }

    /// Frees the kept device tensors, and the guard ids start again (no tensor of the run is
    /// alive): a job's records end, or another kernel (a control's, in one process) is about
    /// to run.
    pub(crate) fn release_tensors(&mut self) {
        self.tensors.clear();
        engine::tensor::restart_guard_ids();
    }

    /// The outputs an oracle gave on these inputs and case, where the parameters it read then
    /// have the same values in `params`.
    fn oracle_for(&self, key: &OracleKey, params: &BTreeMap<String, f64>) -> Option<Arc<crate::oracle::Outputs>> {
        let same = |read: &checked::ParamsRead| read.iter().all(|(name, bits)| params.get(name).map(|v| v.to_bits()) == *bits);
        self.oracles.get(key)?.iter().find(|(read, _)| same(read)).map(|(_, outputs)| outputs.clone())
    }

    fn keep_oracle(&mut self, key: OracleKey, read: checked::ParamsRead, outputs: &Arc<crate::oracle::Outputs>) {
        let values: usize = outputs.values().map(Vec::len).sum();
        let small = outputs.values().all(|v| v.len() <= KEPT_ORACLE_OUTPUT);
        if small && self.oracle_values + values <= KEPT_ORACLE_VALUES {
            self.oracle_values += values;
            self.oracles.entry(key).or_default().push((read, outputs.clone()));
        }
    }
}

/// The order a unit's records run in: records that take an op's large inputs (a kept device
/// tensor's bytes, `KEPT_TENSOR_BYTES`, in some case run on `arch`) in the same types and from
/// the same generator one after another, each group where its first record is. A case keeps
/// one such tensor of an input for the next record (`InputCache::take_tensor`): tf_score_keys'
/// records alternate their 4 GiB cache between f16 and bf16, and sent it up again whole three
/// times in six records (0.24 to 0.34 s each on an H100). Results are reported in the
/// contract's order whatever order they ran in.
pub(crate) fn execution_order<'a>(contract: &Contract, records: &[&'a Record], arch: &str) -> Vec<&'a Record> {
    let cases = cases_run_for(contract, arch, None);
    let large: Vec<&str> = contract
        .op
        .tensors
        .iter()
        .filter(|t| t.role == Role::Input)
        .filter(|t| {
            let elements = |i: &usize| contract.cases[*i].shapes.get(t.name).map_or(0, |shape| shape.iter().product::<usize>());
            let most = cases.iter().map(elements).max().unwrap_or(0);
            records.iter().any(|r| r.dtypes.get(t.name).is_some_and(|dtype| most.saturating_mul(dtype.size()) >= KEPT_TENSOR_BYTES))
        })
        .map(|t| t.name)
        .collect();
    let takes = |record: &Record| -> Vec<(engine::DType, bool)> {
        large.iter().map(|name| (record.dtypes[*name], record.inputs.contains_key(*name))).collect()
    };
    let mut order: Vec<&'a Record> = Vec::with_capacity(records.len());
    for record in records {
        if order.iter().any(|r| r.name == record.name) {
            continue;
        }
        let same = takes(record);
        order.extend(records.iter().filter(|r| takes(r) == same));
    }
    order
}

/// A tensor's seed, dtype and shape, whether its copy has non-finite values planted, and
/// the record whose own generator made it (none: the contract's).
type InputKey = (u64, engine::DType, Vec<usize>, Inputs, Option<String>);

/// What an oracle's outputs follow from, but for the parameters it reads: the oracle, the op
/// and case (its symbols) and each input tensor's key, by name.
type OracleKey = (String, &'static str, usize, Vec<(String, InputKey)>);

/// An input of at least this many bytes in a record's type is drawn once for every type the
/// records to run take it in (`InputCache::generate_with_other_types`).
const DRAWN_ONCE_BYTES: usize = 64 << 20;

/// An input's device tensor of this many bytes or more is kept for the next record's case of
/// the same bytes (`InputCache::take_tensor`): a GPU-only case uploads 4 to 8.25 GiB a record.
const KEPT_TENSOR_BYTES: usize = 64 << 20;

/// Decoded values are kept for tensors up to this many elements (a GPU-only case's gigabytes
/// are generated as bytes alone, as before).
const KEPT_VALUES: usize = 1 << 22;

/// An oracle's outputs are kept up to this many values in all (512 MiB), each output up to
/// `KEPT_ORACLE_OUTPUT`: the 4,096-row projection's 16M values are an oracle of 69 G products.
const KEPT_ORACLE_VALUES: usize = 1 << 26;
const KEPT_ORACLE_OUTPUT: usize = 1 << 25;

/// The generator of an input tensor for a record: the record's own, else the contract's.
pub(crate) fn input_spec<'a>(contract: &'a Contract, record: &'a Record, tensor: &str) -> &'a crate::inputs::InputSpec {
    record.inputs.get(tensor).unwrap_or(&contract.inputs[tensor])
}

/// The bytes of one input tensor of one case, as the record's spec (and, for a planted copy,
/// gate 1's non-finite values in a float input) makes them.
pub(crate) fn generate_input(
    contract: &Contract,
    record: &Record,
    tensor: &str,
    case: &Case,
    seed: u64,
    inputs: Inputs,
    device: Option<&DeviceDraw>,
) -> Result<Vec<u8>, String> {
    let dtype = record.dtypes[tensor];
    let spec = input_spec(contract, record, tensor);
    let mut bytes = spec
        .generate_on(device, dtype, &case.shapes[tensor], seed, &case.symbols)
        .map_err(|e| format!("{}: {e}", input_key(record, tensor)))?;
    plant_input(contract, record, (tensor, seed), case, inputs, &mut bytes);
    Ok(bytes)
}

/// `generate_input`'s bytes as generated (not planted), drawn by `device` into a tensor of
/// their own (`InputSpec::draw_into`); `None` where the device does not draw them.
fn draw_input(
    contract: &Contract,
    record: &Record,
    tensor: &str,
    (case, seed): (&Case, u64),
    device: &DeviceDraw,
) -> Option<Result<Drawn, String>> {
    let spec = input_spec(contract, record, tensor);
    let drawn = spec.draw_into(device, record.dtypes[tensor], &case.shapes[tensor], seed, &case.symbols)?;
    Some(drawn.map_err(|e| format!("{}: {e}", input_key(record, tensor))))
}

/// The contract's key an input's generator comes from: the record's own, else the contract's.
fn input_key(record: &Record, tensor: &str) -> String {
    if record.inputs.contains_key(tensor) { format!("record `{}` inputs.{tensor}", record.name) } else { format!("inputs.{tensor}") }
}

/// Gate 1's non-finite values (and the zeros facing them) planted into an input's bytes as
/// generated, for a planted copy of its case; nothing for `Inputs::AsGenerated`.
pub(crate) fn plant_input(
    contract: &Contract,
    record: &Record,
    (tensor, seed): (&str, u64),
    case: &Case,
    inputs: Inputs,
    bytes: &mut [u8],
) {
    let dtype = record.dtypes[tensor];
    if let Inputs::Planted(planting) = inputs
        && dtype.is_float()
    {
        let sites = |name: &str, seed: u64| Sites::of_shape(&case.shapes[name], seed, float_ordinal(contract, name));
        match planting {
            Planting::Alone { tensor: planted, seed: its_seed } if planted != tensor => {
                sites(planted, its_seed).zero_facing(&case.shapes[planted], &case.shapes[tensor], dtype, bytes)
            }
            Planting::Together { seed: shared } => sites(tensor, shared).plant(dtype, bytes),
            Planting::Alone { .. } => sites(tensor, seed).plant(dtype, bytes),
        }
    }
}

pub(crate) fn build_all(backend: &dyn Backend, sources: &[KernelSource]) -> Built {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Built::new());
    let threads = engine::backend::host::worker_count().clamp(1, 8);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            engine::threads::brief_scoped(scope, || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(source) = sources.get(i) else { break };
                    let module = backend.load_module(source).map_err(|e| error_chain(&e));
                    results.lock().unwrap().insert(builds::key(source), module);
                }
            });
        }
    });
    results.into_inner().unwrap()
}

/// Builds every source without loading it (so no code of a kernel runs), on all cores: a
/// record's process builds before it sandboxes itself, and loads after.
pub(crate) fn build_only(backend: &dyn Backend, sources: &[KernelSource], on_built: &(dyn Fn(&KernelSource, Result<(), String>) + Sync)) {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = engine::backend::host::worker_count().clamp(1, 8);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            engine::threads::brief_scoped(scope, || {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(source) = sources.get(i) else { break };
                    on_built(source, backend.build_module(source).map_err(|e| error_chain(&e)));
                }
            });
        }
    });
}

/// Loads each source that built (`built` holds the build's outcome by key); one that did not
/// keeps its build error, and is not built again.
pub(crate) fn load_built(backend: &dyn Backend, sources: &[KernelSource], built: &HashMap<builds::SourceKey, Result<(), String>>) -> Built {
    let mut modules = Built::new();
    for source in sources {
        let module = match built.get(&builds::key(source)) {
            Some(Err(e)) => Err(e.clone()),
            _ => backend.load_module(source).map_err(|e| error_chain(&e)),
        };
        modules.insert(builds::key(source), module);
    }
    modules
}

/// An error with every cause, as one message.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// What every record of a run shares.
pub(crate) struct RunContext<'a> {
    pub backend: &'a dyn Backend,
    pub settings: &'a Settings,
    pub gates_run: &'a [Gate],
    /// A second backend every case is compared with (the host for a GPU run).
    pub reference: Option<&'a dyn Backend>,
    pub reference_modules: &'a Built,
    /// Told the case about to run, so a crash can be placed in it.
    pub on_case: Option<&'a dyn Fn(&str)>,
    /// Told each case that finished, and its data where the settings ask for it.
    pub watcher: Option<&'a dyn CaseWatcher>,
}

/// A record's result before anything ran: what the runner knows from the contract alone.
pub(crate) fn new_result(contract: &Contract, record: &Record, control: Option<&Control>, gates_run: &[Gate]) -> RecordResult {
    RecordResult {
        op: contract.op.name.to_string(),
        record: record.name.clone(),
        contract_file: contract.file.clone(),
        control: control.map(ControlInfo::of),
        outcome: Outcome::Pass,
        gates_run: gates_of_record(gates_run, contract, control),
        failures: Vec::new(),
        failure_sites: Vec::new(),
        findings: Vec::new(),
        stale_findings: Vec::new(),
        covered_tensors: Vec::new(),
        uncovered: None,
        error: None,
        fault: None,
        tolerances: record.tolerances.iter().map(|(k, b)| (k.clone(), b.tolerance.to_string())).collect(),
        cases: Vec::new(),
        nonfinite_policy: contract.nonfinite.name().to_string(),
        nonfinite_cases: Vec::new(),
        cases_not_run: Vec::new(),
        limits: None,
        cross_backend_max_ulp: None,
        notes: Vec::new(),
        seconds: 0.0,
        phases: Phases::default(),
        triage: Vec::new(),
    }
}

/// A record that did not come back from its process: it errored with `fault`, as `error` says.
pub(crate) fn faulted_result(
    contract: &Contract,
    record: &Record,
    control: Option<&Control>,
    gates_run: &[Gate],
    arch: &str,
    (fault, error): (Option<Fault>, String),
    seconds: f64,
) -> RecordResult {
    let mut result = new_result(contract, record, control, gates_run);
    result.fault = fault;
    result.error = Some(error);
    result.seconds = seconds;
    result.outcome = decide(&mut result, contract, control, arch, gates_run, false);
    result
}

pub(crate) fn run_record(
    context: &RunContext,
    contract: &Contract,
    record: &Record,
    loaded: &Loaded,
    control: Option<&Control>,
    inputs: &mut InputCache,
) -> RecordResult {
    let module = &loaded.module;
    let RunContext { backend, gates_run, .. } = *context;
    let started = Instant::now();
    let mut result = new_result(contract, record, control, gates_run);
    // a control's parameters in place of the record's
    let applied = control.filter(|c| !c.params.is_empty()).map(|c| c.applied_to(record));
    let record = applied.as_ref().unwrap_or(record);
    let arch = backend.arch();
    result.cases_not_run = cases_not_run_for(contract, &arch, control);
    // a control's own cases where it names them (cases_run_for), and the run's --case
    let runs_here: Vec<usize> = cases_run_for(contract, &arch, control).into_iter().filter(|i| context.settings.selects_case(*i)).collect();
    let plain: Vec<(usize, Inputs)> = runs_here.iter().map(|i| (*i, Inputs::AsGenerated)).collect();
    let seed = context.settings.seed;
    let planted = nonfinite_cases(contract, &arch)
        .into_iter()
        .filter(|i| runs_here.contains(i))
        .flat_map(|i| plantings(contract, record, seed, i).into_iter().map(move |p| (i, p)));
    match module.as_ref().and_then(|m| loaded.checker.as_ref().map(|c| (m, c))) {
        Err(e) => result.error = Some(e.clone()),
        Ok((module, checker)) => {
            for (index, variant) in plain.into_iter().chain(planted) {
                let case = &contract.cases[index];
                let described = match variant {
                    Inputs::AsGenerated => case.describe(contract.op),
                    Inputs::Planted(planting) => format!("{} {}", case.describe(contract.op), planted_text(planting)),
                };
                if let Some(on_case) = context.on_case {
                    on_case(&described);
                }
                let whose = Whose { control, described: &described };
                let gates = &result.gates_run;
                match run_case(context, (contract, record, gates), (module.as_deref(), checker), (index, case), variant, inputs, &whose) {
                    Ok((case_report, failures, triage)) => {
                        result.phases.add(&case_report.phases);
                        match variant {
                            Inputs::AsGenerated => result.cases.push(case_report),
                            Inputs::Planted(_) => result.nonfinite_cases.push(case_report),
                        }
                        if let Some(watcher) = context.watcher {
                            watcher.case_finished(&CaseDone {
                                op: contract.op.name.to_string(),
                                record: record.name.clone(),
                                control: control.map(|c| c.bug.clone()),
                                case_index: index,
                                case: described.clone(),
                                planted: matches!(variant, Inputs::Planted(_)),
                                failures: failures.len(),
                            });
                        }
                        crate::triage::keep_first(&mut result.triage, triage);
                        add_failures(&mut result, index, &described, failures);
                        // a control has proved its gate once that gate is red: later cases
                        // could only count more failing cases, never change its outcome
                        if let Some(Planted::Gate(gate)) = control.map(|c| c.planted)
                            && result.failed(gate)
                        {
                            break;
                        }
                    }
                    Err(e) => {
                        result.error = Some(format!("case {described}: {e}"));
                        break;
                    }
                }
            }
        }
    }
    if result.cases.iter().any(|c| c.cross_backend.is_some()) {
        let mut worst: BTreeMap<String, u64> = BTreeMap::new();
        for figures in result.cases.iter().filter_map(|c| c.cross_backend.as_ref()?.as_ref().ok()) {
            for (output, ulp) in figures {
                let entry = worst.entry(output.clone()).or_default();
                *entry = (*entry).max(*ulp);
            }
        }
        result.cross_backend_max_ulp = Some(worst);
    }
    if gates_run.contains(&Gate::Limits)
        && result.error.is_none()
        && let Ok(Some(module)) = module
    {
        match module.resource_usage(contract.op.kernel_symbol()) {
            Some(Ok(mut usage)) => {
                if let Some(threads) = result.cases.first().map(|c| c.block_threads) {
                    usage.figures.insert("threads".into(), threads as u64);
                }
                let arch = backend.arch();
                let report = limits::check(&arch, "live", &usage, contract.limits.get(&arch));
                add_limits_failure(&mut result, &report, context.settings.strict_limits);
                result.limits = Some(report);
            }
            Some(Err(e)) => result.error = Some(format!("live limits: {}", error_chain(&e))),
            None => {}
        }
    }
    result.failures.sort_by_key(|f| f.gate);
    if let Some(lost) = backend.device_lost() {
        // the context is unusable: whatever this record saw, the device fault is its result
        result.fault = Some(Fault::DeviceFault);
        if result.error.is_none() {
            result.error = Some(lost);
        }
    }
    let partial = context.settings.case.is_some();
    result.outcome = decide(&mut result, contract, control, backend.arch().as_str(), gates_run, partial);
    result.seconds = started.elapsed().as_secs_f64();
    result
}

/// A case's failures into the record's: the first case where a gate went red is the one its
/// line names, later ones are counted.
fn add_failures(result: &mut RecordResult, index: usize, described: &str, failures: CaseFailures) {
    for (gate, tensor, failure) in failures {
        result.failure_sites.push(FailureSite { gate, case_index: index, tensor: tensor.clone(), message: failure.message.clone() });
        match result.failures.iter_mut().find(|f| f.gate == gate) {
            Some(existing) if existing.case_index == index && existing.case == described => {
                existing.also.push(format!("{tensor}: {}", failure.message))
            }
            Some(existing) => {
                if !existing.failing_cases.contains(&index) {
                    existing.failing_cases.push(index)
                }
            }
            None => result.failures.push(GateFailure {
                gate,
                case_index: index,
                case: described.to_string(),
                tensor,
                failure,
                also: Vec::new(),
                failing_cases: vec![index],
            }),
        }
    }
}

/// Launches one case on `reference` with the same input bytes and measures the largest
/// ulp distance of each output from `primary`'s.
fn compare_on(
    reference: &dyn Backend,
    context: &RunContext,
    contract: &Contract,
    record: &Record,
    case: &Case,
    inputs: &BTreeMap<String, Arc<Vec<u8>>>,
    primary: &BTreeMap<&str, &[u8]>,
) -> Result<BTreeMap<String, u64>, String> {
    let op = contract.op;
    let module = match source_of(context.settings, contract, None) {
        Some(source) => {
            Some(context.reference_modules.get(&builds::key(&source)).ok_or("the reference backend has no module for the op")?.clone()?)
        }
        None => None,
    };
    let text = |e: engine::EngineError| error_chain(&e);
    let mut tensors = BTreeMap::new();
    for spec in op.tensors {
        let mut tensor = Tensor::allocate(reference, record.dtypes[spec.name], &case.shapes[spec.name]).map_err(text)?;
        if let Some(bytes) = inputs.get(spec.name) {
            tensor.write(bytes).map_err(text)?;
        }
        tensors.insert(spec.name.to_string(), tensor);
    }
    let call = OpCall {
        op,
        backend: reference,
        module: module.as_deref(),
        symbols: &case.symbols,
        params: &record.params,
        tensors: &tensors,
        schedule: Schedule::default(),
    };
    (op.launch)(&call).map_err(text)?;
    let mut out = BTreeMap::new();
    for (name, bytes) in primary {
        let tensor = &tensors[*name];
        let theirs = tensor.read().map_err(text)?;
        let size = tensor.dtype.size();
        let worst = bytes
            .chunks(size)
            .zip(theirs.chunks(size))
            .map(|(a, b)| crate::tolerance::ulp_distance(tensor.dtype, tensor.dtype.decode(a), tensor.dtype.decode(b)))
            .max()
            .unwrap_or(0);
        out.insert(name.to_string(), worst);
    }
    Ok(out)
}

/// Over budget (or, with strict limits, any limit problem) turns gate 4 red.
fn add_limits_failure(result: &mut RecordResult, report: &LimitsReport, strict: bool) {
    let mut reasons = report.over_budget.clone();
    if strict {
        reasons.extend(report.problems.iter().map(|p| format!("limit problem (strict): {p}")));
    }
    if reasons.is_empty() {
        return;
    }
    let message = reasons.join("; ");
    result.failure_sites.push(FailureSite { gate: Gate::Limits, case_index: 0, tensor: KERNEL_TENSOR.into(), message: message.clone() });
    result.failures.push(GateFailure {
        gate: Gate::Limits,
        case_index: 0,
        case: format!("{} {}", report.source, report.arch),
        tensor: KERNEL_TENSOR.into(),
        failure: Failure { count: reasons.len(), total: report.figures.len(), first: None, message },
        also: Vec::new(),
        failing_cases: vec![0],
    });
}

/// One function decides a record's outcome: a finding for the arch and record covers each
/// failure of its gate and tensor whose message holds its `matches`, in its cases; a failure
/// no finding covers fails the record, and so does a finding that covers nothing (stale).
/// A `partial` run (one case, `--case`) calls no finding stale: the failures it covers may be
/// in the cases that did not run.
fn decide(
    result: &mut RecordResult,
    contract: &Contract,
    control: Option<&Control>,
    arch: &str,
    gates_run: &[Gate],
    partial: bool,
) -> Outcome {
    if let Some(control) = control {
        let red = match control.planted {
            Planted::Gate(gate) => result.error.is_none() && result.failed(gate),
            Planted::Fault(fault) => result.fault == Some(fault),
        };
        return if red { Outcome::RedAsPlanted } else { Outcome::Missed };
    }
    if result.error.is_some() {
        return Outcome::Error;
    }
    let applicable: Vec<&Finding> = contract
        .findings
        .iter()
        .filter(|f| f.arch == arch && gates_run.contains(&f.gate) && f.record.as_ref().is_none_or(|r| *r == result.record))
        .collect();
    let mut used = vec![false; applicable.len()];
    let mut uncovered: Vec<&FailureSite> = Vec::new();
    for site in &result.failure_sites {
        match applicable.iter().position(|f| f.covers(site.gate, &site.tensor, site.case_index, &site.message)) {
            Some(i) => {
                used[i] = true;
                if !result.covered_tensors.contains(&site.tensor) {
                    result.covered_tensors.push(site.tensor.clone());
                }
            }
            None => uncovered.push(site),
        }
    }
    if let (Some(site), false) = (uncovered.first(), applicable.is_empty()) {
        result.uncovered = Some(uncovered_text(site, result, contract));
    }
    for (f, used) in applicable.iter().zip(&used) {
        if *used {
            result.findings.push(format!("{} ({}): {}", f.gate, f.tensor, f.reason));
        } else if !partial {
            result.stale_findings.push(stale(f, result, contract));
        }
    }
    if !uncovered.is_empty() || !result.stale_findings.is_empty() {
        Outcome::Fail
    } else if !result.findings.is_empty() {
        Outcome::KnownFinding
    } else {
        Outcome::Pass
    }
}

/// The failure no finding covers, said in full unless the record line already shows it
/// first for its gate.
fn uncovered_text(site: &FailureSite, result: &RecordResult, contract: &Contract) -> String {
    let shown = result
        .failures
        .iter()
        .find(|f| f.gate == site.gate)
        .is_some_and(|f| f.case_index == site.case_index && f.tensor == site.tensor && f.failure.message == site.message);
    if shown {
        return format!("not covered by a known finding at {}", site.gate);
    }
    let case = contract.cases.get(site.case_index).map(|c| c.describe(contract.op)).unwrap_or_default();
    let place = if site.gate == Gate::Limits { String::new() } else { format!(" in case {case}") };
    format!("not covered by a known finding: {}{place}: {}: {}", site.gate, site.tensor, site.message)
}

/// Why a finding covered nothing: its gate passes, or it failed otherwise than the finding says.
fn stale(f: &Finding, result: &RecordResult, contract: &Contract) -> String {
    let at = format!("the known finding at {} ({}:{}) is stale", f.gate, contract.file, f.line);
    if !result.failed(f.gate) {
        return format!("{at}: the gate passes now; remove it");
    }
    let cases = match &f.cases {
        Some(cases) => format!(" in cases {cases:?}"),
        None => String::new(),
    };
    format!("{at}: no failure of `{}`{cases} says `{}`; correct or remove it", f.tensor, f.matches)
}

type CaseFailures = Vec<(Gate, String, Failure)>;

/// Whose case runs: a record's (whose failing outputs are summarized for the triage page) or
/// a control's, and the case as the record line names it.
struct Whose<'a> {
    control: Option<&'a Control>,
    described: &'a str,
}

#[allow(clippy::too_many_arguments)]
fn run_case(
    context: &RunContext,
    (contract, record, gates): (&Contract, &Record, &[Gate]),
    (module, checker): (Option<&dyn Module>, &Checker),
    (index, case): (usize, &Case),
    variant: Inputs,
    inputs: &mut InputCache,
    whose: &Whose,
) -> Result<(CaseReport, CaseFailures, Vec<crate::triage::Triage>), String> {
    let RunContext { backend, settings, .. } = *context;
    let op = contract.op;
    let text = |e: engine::EngineError| error_chain(&e);
    let mut phases = Phases::default();
    let mut lap = Lap::start();
    let mut tensors: BTreeMap<String, Tensor> = BTreeMap::new();
    let mut input_bytes: BTreeMap<String, Arc<Vec<u8>>> = BTreeMap::new();
    let mut input_values: BTreeMap<String, InputValues> = BTreeMap::new();
    let mut input_keys: Vec<(String, InputKey)> = Vec::new();
    let mut seeds = BTreeMap::new();
    // inputs launched on in a tensor an earlier record's case left unchanged (`take_tensor`)
    let mut kept_inputs: Vec<&str> = Vec::new();
    // the seals gate 3 checks the large inputs by on the device (`DeviceDraw::write_sealed`)
    let mut seals: BTreeMap<&str, Seal> = BTreeMap::new();
    let device = settings.device_inputs.then(|| DeviceDraw::on(backend, &settings.cache_dir)).flatten();
    for spec in op.tensors {
        let dtype = record.dtypes[spec.name];
        let shape = &case.shapes[spec.name];
        if spec.role == Role::Output {
            tensors.insert(spec.name.to_string(), Tensor::allocate(backend, dtype, shape).map_err(text)?);
        } else {
            let seed = tensor_seed(settings.seed, op.name, spec.name, index);
            let own = record.inputs.contains_key(spec.name).then(|| record.name.clone());
            let plain = (seed, dtype, shape.clone(), Inputs::AsGenerated, own.clone());
            let key = (seed, dtype, shape.clone(), variant, own);
            // a large input a GPU drew into its own tensor, and the words the modifiers wrote
            // since, which alone go up again where they are few (`DeviceDraw::seal_drawn`)
            let mut drawn_tensor = None;
            let bytes = match inputs.bytes.get(&key) {
                Some(bytes) => bytes.clone(),
                None => {
                    // a device may draw these bytes into memory of its own: the kept tensor of
                    // this input and case in another type goes first, not beside it
                    inputs.free_other_tensors(&key);
                    // a planted copy is its case's bytes as generated, planted
                    let bytes = match inputs.bytes.get(&plain) {
                        Some(generated) => {
                            let mut bytes = generated.to_vec();
                            plant_input(contract, record, (spec.name, seed), case, variant, &mut bytes);
                            bytes
                        }
                        // a device draws each type of a large input in milliseconds: one at a time
                        None => match device.is_none().then(|| inputs.generate_with_other_types(contract, spec.name, case, &key)).flatten()
                        {
                            Some(made) => made?,
                            None => match device
                                .as_ref()
                                .filter(|_| variant == Inputs::AsGenerated)
                                .and_then(|device| Some((draw_input(contract, record, spec.name, (case, seed), device)?, device)))
                            {
                                Some((drawn, device)) => {
                                    let Drawn { tensor, bytes, written } = drawn?;
                                    drawn_tensor = Some((tensor, written, device));
                                    bytes
                                }
                                None => generate_input(contract, record, spec.name, case, seed, variant, device.as_ref())?,
                            },
                        },
                    };
                    let bytes = Arc::new(bytes);
                    inputs.bytes.insert(key.clone(), bytes.clone());
                    bytes
                }
            };
            // decoded by the oracle if it runs (not when its outputs are kept), and only as it reads
            let values = match inputs.values.get(&key) {
                Some(values) => InputValues::decoded(dtype, bytes.clone(), values.clone()),
                None => InputValues::new(dtype, bytes.clone()),
            };
            input_values.insert(spec.name.to_string(), values);
            phases.inputs += lap.take();
            let kept = if drawn_tensor.is_none() { inputs.take_tensor(&key, bytes.len()) } else { None };
            let (tensor, seal) = match (drawn_tensor, kept) {
                (Some((mut tensor, written, device)), _) => {
                    let seal = device.seal_drawn(&mut tensor, &bytes, &written).map_err(|e| format!("uploading `{}`: {e}", spec.name))?;
                    (tensor, seal)
                }
                (None, Some(kept)) => {
                    kept_inputs.push(spec.name);
                    kept
                }
                (None, None) => {
                    let mut tensor = Tensor::allocate(backend, dtype, shape).map_err(text)?;
                    let seal = match &device {
                        Some(device) => device.write_sealed(&mut tensor, &bytes).map_err(|e| format!("uploading `{}`: {e}", spec.name))?,
                        None => tensor.write(&bytes).map(|()| None).map_err(text)?,
                    };
                    (tensor, seal)
                }
            };
            if let Some(seal) = seal {
                seals.insert(spec.name, seal);
            }
            phases.upload += lap.take();
            input_keys.push((spec.name.to_string(), key));
            input_bytes.insert(spec.name.to_string(), bytes);
            seeds.insert(spec.name.to_string(), seed);
            tensors.insert(spec.name.to_string(), tensor);
        }
    }
    phases.upload += lap.take();
    // an oracle of the harness is a function of its inputs' values, the case and the
    // parameters alone: its outputs on the same inputs are the ones it gave before
    let oracle_key = matches!(checker, Checker::Oracle(_)).then(|| (contract.reference.name(), op.name, index, input_keys.clone()));
    let kept = oracle_key.as_ref().and_then(|key| inputs.oracle_for(key, &record.params));
    let (want, want_bytes) = match kept {
        Some(outputs) => (outputs, None),
        None => {
            let (want, want_bytes, read) = checked::want(checker, backend, contract, record, case, &input_values, &input_bytes)?;
            for (name, key) in &input_keys {
                if let Some(decoded) = input_values[name].kept().filter(|v| v.len() <= KEPT_VALUES) {
                    inputs.values.entry(key.clone()).or_insert(decoded);
                }
            }
            let want = Arc::new(want);
            if let Some(key) = oracle_key {
                inputs.keep_oracle(key, read, &want);
            }
            (want, want_bytes)
        }
    };
    drop(input_values);
    phases.oracle += lap.take();
    let outputs: Vec<&str> = op.tensors.iter().filter(|t| t.role == Role::Output).map(|t| t.name).collect();
    for name in &outputs {
        let expected = tensors[*name].elements();
        let given = want.get(*name).map_or(0, Vec::len);
        if given != expected {
            return Err(format!("oracle {} gave {given} values for `{name}` of {expected} elements", contract.reference.name()));
        }
    }

    let repeats = launches_of(variant, settings.repeats);
    let mut launches: BTreeMap<&str, Vec<Vec<u8>>> = BTreeMap::new();
    // a large output's later launches held to its first on the device (`RepeatCheck`): the
    // check made of the first launch's bytes, and the launches found to repeat them, not read
    let mut repeat_checks: BTreeMap<&str, crate::inputs::device::RepeatCheck> = BTreeMap::new();
    let mut hashed_repeats: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    // the first launch's finding of each kind (the host backend's memory checks)
    let mut memory: BTreeMap<MemoryFindingKind, MemoryFinding> = BTreeMap::new();
    let mut poisons: BTreeMap<&str, Vec<Vec<u8>>> = BTreeMap::new();
    let mut report = CaseReport {
        symbols: case.symbols.clone(),
        seeds,
        outputs: BTreeMap::new(),
        blocks: 0,
        switches: 0,
        inactive_lane_reads: 0,
        block_threads: 0,
        cross_backend: None,
        phases: Phases::default(),
        seams: Vec::new(),
        wrote_outside: false,
    };
    for launch in 0..repeats {
        for name in &outputs {
            let size = tensors[*name].dtype.size();
            let pattern = vec![output_poison(launch); size];
            tensors.get_mut(*name).unwrap().fill(&pattern).map_err(text)?;
            poisons.entry(name).or_default().push(pattern);
        }
        phases.upload += lap.take();
        let call = OpCall {
            op,
            backend,
            module,
            symbols: &case.symbols,
            params: &record.params,
            tensors: &tensors,
            schedule: launch_schedule(launch, settings.seed),
        };
        let stats = (op.launch)(&call).map_err(text)?;
        phases.launches += lap.take();
        if launch == 0 {
            report.blocks = stats.blocks;
            report.switches = stats.switches;
            report.block_threads = stats.block_threads;
        }
        report.inactive_lane_reads = report.inactive_lane_reads.max(stats.inactive_lane_reads);
        for finding in stats.findings {
            memory.entry(finding.kind).or_insert(finding);
        }
        for name in &outputs {
            let tensor = &tensors[*name];
            if let (Some(device), Some(check)) = (&device, repeat_checks.get(name))
                && device.repeats_first(tensor, check)?
            {
                hashed_repeats.entry(name).or_default().push(launch);
                continue;
            }
            let bytes = tensor.read().map_err(text)?;
            if let Some(device) = device.as_ref().filter(|_| launch == 0 && repeats > 1)
                && let Some(check) = device.repeat_check(tensor, &bytes)
            {
                repeat_checks.insert(name, check);
            }
            launches.entry(name).or_default().push(bytes);
        }
        phases.download += lap.take();
    }

    if let Some(reference) = context.reference.filter(|_| variant == Inputs::AsGenerated && case.gpu_only.is_none()) {
        let first: BTreeMap<&str, &[u8]> = outputs.iter().map(|n| (*n, launches[n][0].as_slice())).collect();
        report.cross_backend = Some(compare_on(reference, context, contract, record, case, &input_bytes, &first));
        lap.take();
    }
    if settings.case_data
        && let Some(watcher) = context.watcher
    {
        let tensor = |name: &'_ str| &tensors[name];
        let data = CaseData {
            op: op.name,
            record: &record.name,
            control: whose.control.map(|c| c.bug.as_str()),
            case_index: index,
            planted: matches!(variant, Inputs::Planted(_)),
            inputs: input_bytes
                .iter()
                .map(|(name, bytes)| TensorData { name, dtype: tensor(name).dtype, shape: &tensor(name).shape, bytes })
                .collect(),
            outputs: outputs
                .iter()
                .map(|name| TensorData { name, dtype: tensor(name).dtype, shape: &tensor(name).shape, bytes: &launches[name][0] })
                .collect(),
            oracle: outputs.iter().map(|name| (*name, tensor(name).shape.as_slice(), want[*name].as_slice())).collect(),
        };
        watcher.case_data(&data);
        lap.take();
    }
    let mut failures: CaseFailures = Vec::new();
    let mut triage = Vec::new();
    let seams_here = variant == Inputs::AsGenerated && gates.contains(&Gate::Seams);
    let mut piece_walls = Vec::new();
    // gate 3's check of the row inputs, made right after gate 5's pieces: they copy their rows
    // of an input on the device from the whole batch's tensor, and where the whole batch (or
    // a piece) changed it they got changed rows, so they run again on the input as generated
    let mut row_inputs_checked: BTreeMap<&str, Option<Failure>> = BTreeMap::new();
    if let Some(axis) = contract.seams.axis().filter(|_| seams_here) {
        let rows_of = crate::seams::row_tensors(op, &axis.axis);
        let row_inputs: Vec<&str> =
            op.tensors.iter().filter(|t| t.role == Role::Input && rows_of.contains(&t.name)).map(|t| t.name).collect();
        let whole: BTreeMap<&str, &[u8]> = outputs.iter().map(|n| (*n, launches[n][0].as_slice())).collect();
        let unchanged = |checked: &BTreeMap<&str, Option<Failure>>, name: &str| checked.get(name).is_none_or(Option::is_none);
        let mut outcome = None;
        // every row input a source; where that gave the pieces changed rows, once more with the
        // unchanged ones alone (a changed input is red at shapes, not at seams as well)
        for _ in 0..2 {
            let sources: BTreeMap<&str, u64> = row_inputs
                .iter()
                .filter(|name| unchanged(&row_inputs_checked, name))
                .map(|name| (*name, tensors[*name].device_address()))
                .collect();
            let pieces = (&mut tensors, &input_bytes, whole.clone(), sources);
            outcome = Some(run_seams(context, (contract, record, module), (index, case), axis, pieces, device.as_ref(), &mut phases)?);
            lap.take();
            for name in &row_inputs {
                if unchanged(&row_inputs_checked, name) {
                    let checked = input_check(&tensors[*name], &input_bytes[*name], device.as_ref().zip(seals.get(name)))?;
                    row_inputs_checked.insert(name, checked);
                }
            }
            phases.download += lap.take();
            if row_inputs_checked.values().all(Option::is_none) {
                break;
            }
        }
        let outcome = outcome.expect("gate 5 ran");
        report.seams = outcome.checks;
        for (tensor, failure) in outcome.failures {
            failures.push((Gate::Seams, tensor, failure));
        }
        piece_walls = outcome.walls;
        // a wrong access only a piece made (the whole batch's first of each kind is said below)
        for (plan, finding) in outcome.findings {
            if let std::collections::btree_map::Entry::Vacant(slot) = memory.entry(finding.kind) {
                slot.insert(MemoryFinding { message: format!("in {plan}: {}", finding.message), ..finding });
            }
        }
        lap.take();
    }
    report.wrote_outside = memory.keys().any(|kind| kind.may_have_written_outside());
    for finding in memory.into_values() {
        let failure = Failure { count: finding.count as usize, total: finding.count as usize, first: None, message: finding.message };
        failures.push((gate_of(finding.kind), finding.subject, failure));
    }
    for name in &outputs {
        let tensor = &tensors[*name];
        let (dtype, shape) = (tensor.dtype, &tensor.shape);
        let first = &launches[name][0];
        let tolerance = &record.tolerances[*name].tolerance;
        // gate 1 judges the outputs of finite inputs only: planted ones are held to the policy
        // by gate 3's comparison below
        let finite_check = variant == Inputs::AsGenerated;
        let launched = Launched::of(&launches[name], hashed_repeats.get(name).map_or(&[], Vec::as_slice), &poisons[name], dtype.size());
        let (launched, repeats_proven) = match &launched {
            Launched::Proven(first) => (std::slice::from_ref(*first), true),
            Launched::Read(each) => (*each, false),
            Launched::Rebuilt(each) => (each.as_slice(), false),
        };
        let gates::OutputGates { repeat, metrics, compare, nonfinite } =
            gates::output_gates(dtype, shape, (launched, repeats_proven), &poisons[name], &want[*name], tolerance, finite_check);
        if let Some(f) = repeat {
            failures.push((Gate::Repeat, name.to_string(), f));
        }
        // a replacement matches its predecessor's bits, a NaN's payload and a zero's sign too
        // (what differs in value differs in bits, and is said so)
        let failure = match want_bytes.as_ref().and_then(|bits| bits.get(*name)) {
            Some(bits) => checked::bits_differ(contract, dtype, shape, first, bits),
            None => compare,
        };
        let judged = !matches!((variant, &contract.nonfinite), (Inputs::Planted(_), NonfinitePolicy::Unspecified(_)));
        if failure.is_some() && judged && whose.control.is_none() {
            let gate = if variant == Inputs::AsGenerated { Gate::Shapes } else { Gate::Nonfinite };
            let at = crate::triage::Site { gate, case_index: index, case: whose.described, tensor: name };
            triage.push(crate::triage::summarize(&at, dtype, shape, first, &want[*name], tolerance));
        }
        match (variant, &contract.nonfinite) {
            (Inputs::AsGenerated, _) => {
                if let Some(f) = nonfinite {
                    failures.push((Gate::Nonfinite, name.to_string(), f));
                }
                if let Some(f) = failure {
                    failures.push((Gate::Shapes, name.to_string(), f));
                }
            }
            // planted: gate 1 holds the outputs to the policy; the values of an unspecified
            // policy are not compared, but its launches still repeat and keep inside their tensors
            (Inputs::Planted(_), NonfinitePolicy::Propagate | NonfinitePolicy::Ignore) => {
                if let Some(f) = failure {
                    failures.push((Gate::Nonfinite, name.to_string(), f));
                }
            }
            (Inputs::Planted(_), NonfinitePolicy::Unspecified(_)) => {}
        }
        report.outputs.insert(name.to_string(), metrics);
    }
    // shapes also means: nothing written outside any tensor, no input changed
    let mut broken = std::collections::BTreeSet::new();
    let mut unchanged_inputs = Vec::new();
    for spec in op.tensors {
        let tensor = &tensors[spec.name];
        let guard = guard_check(tensor).map_err(text)?;
        let guarded = guard.is_none();
        if let Some(failure) = guard {
            failures.push((Gate::Shapes, spec.name.to_string(), kept_note(failure, kept_inputs.contains(&spec.name))));
            broken.insert((spec.name.to_string(), crate::seams::Wall::Guard));
        }
        if spec.role == Role::Input {
            phases.gates += lap.take();
            // a row input was read back after gate 5's pieces, the last launches of the case
            let changed = match row_inputs_checked.remove(spec.name) {
                Some(checked) => checked,
                None => input_check(tensor, &input_bytes[spec.name], device.as_ref().zip(seals.get(spec.name)))?,
            };
            match changed {
                Some(failure) => {
                    failures.push((Gate::Shapes, spec.name.to_string(), kept_note(failure, kept_inputs.contains(&spec.name))));
                    broken.insert((spec.name.to_string(), crate::seams::Wall::Input));
                }
                None if guarded => unchanged_inputs.push(spec.name),
                None => {}
            }
            phases.download += lap.take();
        }
    }
    for (name, key) in input_keys.into_iter().filter(|(name, _)| unchanged_inputs.contains(&name.as_str())) {
        let tensor = tensors.remove(&name).expect("an input's tensor");
        let seal = seals.get(name.as_str()).copied();
        inputs.keep_tensor(key, tensor, seal);
    }
    report.wrote_outside |= !broken.is_empty() || !piece_walls.is_empty();
    // a wall only a piece broke is gate 5's; one the whole batch broke too is said above
    for (tensor, _, failure) in piece_walls.into_iter().filter(|(tensor, wall, _)| !broken.contains(&(tensor.clone(), *wall))) {
        failures.push((Gate::Seams, tensor, failure));
    }
    phases.gates += lap.take();
    report.phases = phases;
    Ok((report, failures, triage))
}

/// An output's launches as gate 2 judges them: where every later launch was found on the device
/// to repeat the first's bytes over poisons that differ from the first's, the first's bytes
/// alone (the gate has passed); else every launch's bytes, those the device found repeating
/// the first taken as the first's (a launch read back differed, and gate 2 says where).
enum Launched<'a> {
    Proven(&'a Vec<u8>),
    Read(&'a [Vec<u8>]),
    Rebuilt(Vec<Vec<u8>>),
}

impl<'a> Launched<'a> {
    /// `read`: the launches read back, in order; `hashed`: the places of the others.
    fn of(read: &'a [Vec<u8>], hashed: &[usize], poisons: &[Vec<u8>], size: usize) -> Launched<'a> {
        let count = read.len() + hashed.len();
        if hashed.is_empty() {
            return Launched::Read(read);
        }
        if read.len() == 1 && gates::poisons_differ(size, count, poisons) {
            return Launched::Proven(&read[0]);
        }
        let mut read = read.iter();
        let first = read.next().expect("the first launch is read back");
        let each = (0..count)
            .map(|launch| if launch == 0 || hashed.contains(&launch) { first.clone() } else { read.next().expect("read back").clone() });
        Launched::Rebuilt(each.collect())
    }
}

/// A case's whole batch as gate 5 reuses it: its tensors (the shared ones lent to the pieces),
/// its inputs' bytes, each output's bytes from its first launch, and the device address of
/// each row input whose rows the pieces copy on the device.
type WholeBatch<'a, 'b> =
    (&'a mut BTreeMap<String, Tensor>, &'a BTreeMap<String, Arc<Vec<u8>>>, BTreeMap<&'b str, &'a [u8]>, BTreeMap<&'b str, u64>);

/// Gate 5 on one case: its rows in pieces of each of the record's cuts and, where the
/// contract asks, in decode batches (`seams::batched_cases` says which cases); each against
/// the whole batch's bytes.
fn run_seams(
    context: &RunContext,
    (contract, record, module): (&Contract, &Record, Option<&dyn Module>),
    (index, case): (usize, &Case),
    axis: &crate::contract::RowAxis,
    (tensors, inputs, outputs, sources): WholeBatch,
    device: Option<&DeviceDraw>,
    phases: &mut Phases,
) -> Result<crate::seams::Outcome, String> {
    let rows = usize::try_from(case.symbols[&axis.axis]).map_err(|_| format!("`{}` is not a row count", axis.axis))?;
    let batches: Vec<usize> =
        axis.batches.iter().copied().filter(|b| crate::seams::batched_cases(contract, &axis.axis, *b).contains(&index)).collect();
    let plans = crate::seams::plans(rows, &axis.cuts_for(record), &batches);
    let batch = crate::seams::Batch {
        op: contract.op,
        backend: context.backend,
        module,
        symbols: &case.symbols,
        params: &record.params,
        // the whole batch's bytes are its first launch's: the pieces run as it ran
        schedule: launch_schedule(0, context.settings.seed),
        poison: output_poison(0),
        axis: &axis.axis,
        inputs,
        outputs,
        sources,
        device,
    };
    crate::seams::run(&batch, tensors, &plans, phases)
}

/// A failure of an input's bands or bytes, where its tensor was kept from an earlier record's
/// case: that case's check found it unchanged, so a launch since changed it, of this case or
/// of one in between.
fn kept_note(failure: Failure, kept: bool) -> Failure {
    if !kept {
        return failure;
    }
    let message = format!(
        "{} (its device buffer was kept from an earlier record's case of the same bytes, and found unchanged after that case's launches: a launch since changed it, this case's or one in between)",
        failure.message
    );
    Failure { message, ..failure }
}

/// Gate 3's check that nothing was written outside a tensor: its guard bands as they were
/// allocated, or the nearest written element and how many.
pub(crate) fn guard_check(tensor: &Tensor) -> Result<Option<Failure>, engine::EngineError> {
    let Some(damage) = tensor.guard_damage()? else { return Ok(None) };
    let elements = tensor.elements() as i64;
    let place = if damage.first_element >= elements {
        let past = damage.first_element - elements + 1;
        format!(
            "{} ({} past the end)",
            format::coordinates_text(&tensor.shape, damage.first_element as usize),
            format::plural(past as usize, "element")
        )
    } else {
        format::plural(-damage.first_element as usize, "element") + " before the start"
    };
    let message = format!("guard band written: {} outside the tensor, nearest {place}", format::plural(damage.elements, "element"));
    Ok(Some(Failure { count: damage.elements, total: tensor.elements(), first: None, message }))
}

/// Tensors of at least this many bytes are compared in parallel pieces.
const PARALLEL_BYTES: usize = 1 << 22;

/// Gate 3's check that the launches left an input as it was: by the device's hash against
/// the seal it got as it went up (`DeviceDraw::write_sealed`, a large input on a GPU), else on
/// the device's bytes read back a slice at a time into one buffer (a GPU-only case's inputs
/// are gigabytes, and a whole copy of each into fresh memory took seconds a record). Only a
/// changed input is read whole, for its failure's count and first element.
pub(crate) fn input_check(tensor: &Tensor, before: &[u8], sealed: Option<(&DeviceDraw, &Seal)>) -> Result<Option<Failure>, String> {
    match sealed {
        None => input_check_in_slices(tensor, before, INPUT_CHECK_SLICE).map_err(|e| error_chain(&e)),
        Some((device, seal)) => match device.holds_sealed(tensor, seal, before)? {
            true => Ok(None),
            // a hash that differs: the bytes read back say where (or that they are the same after all)
            false => Ok(input_changed(tensor, before, &tensor.read().map_err(|e| error_chain(&e))?)),
        },
    }
}

fn input_check_in_slices(tensor: &Tensor, before: &[u8], slice_bytes: usize) -> Result<Option<Failure>, engine::EngineError> {
    let changed = differs_on_device(tensor, &[(0, before)], slice_bytes)?;
    Ok(if changed { input_changed(tensor, before, &tensor.read()?) } else { None })
}

/// Whether the tensor's bytes at any of `parts` (a byte offset in the tensor, the bytes wanted
/// there) differ from them, read back `slice_bytes` at a time into the thread's kept buffer.
/// (Each slice read on a thread of its own while the one before it was compared measured no
/// faster on an H100: the device's copy back is the bound, reports/sm_90/speed-88ab28a.)
pub(crate) fn differs_on_device(tensor: &Tensor, parts: &[(usize, &[u8])], slice_bytes: usize) -> Result<bool, engine::EngineError> {
    let longest = parts.iter().map(|(_, want)| want.len()).max().unwrap_or(0);
    with_scratch(slice_bytes.min(longest), |slice| {
        for (at, want) in parts {
            for (i, want) in want.chunks(slice_bytes).enumerate() {
                let now = &mut slice[..want.len()];
                tensor.read_part(at + i * slice_bytes, now)?;
                if differs(now, want) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    })
}

/// `check` with a buffer of `len` bytes that this thread keeps from one call to the next: the
/// input checks read a GPU-only case's gigabytes back into it a slice at a time, and a fresh
/// 256 MiB buffer is 65,536 pages the kernel maps and zeroes at first touch, each check again.
/// Its bytes are whatever the last call left (every caller overwrites what it reads).
pub(crate) fn with_scratch<R>(len: usize, check: impl FnOnce(&mut [u8]) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|kept| match kept.try_borrow_mut() {
        Ok(mut kept) => {
            if kept.len() < len {
                kept.resize(len, 0);
            }
            check(&mut kept[..len])
        }
        // a check within a check (none today) gets a buffer of its own
        Err(_) => check(&mut vec![0u8; len]),
    })
}

/// Whether two buffers of one length differ, compared on all cores (a GPU-only case's inputs
/// are 4 to 8.25 GiB a record).
pub(crate) fn differs(a: &[u8], b: &[u8]) -> bool {
    a.len() != b.len() || a.par_chunks(PARALLEL_BYTES).zip(b.par_chunks(PARALLEL_BYTES)).any(|(a, b)| a != b)
}

/// Bytes of an input read back at a time by the input check (gate 3's, and gate 5's of each piece).
pub(crate) const INPUT_CHECK_SLICE: usize = 256 << 20;

/// Gate 3's check that a launch left an input as it was: the first changed element, with
/// its value and bits before and after, and how many changed. Equal bytes (the usual case)
/// cost one comparison of the buffers.
pub(crate) fn input_changed(tensor: &Tensor, before: &[u8], now: &[u8]) -> Option<Failure> {
    if before == now {
        return None;
    }
    let size = tensor.dtype.size();
    let changed_in = |a: &[u8], b: &[u8], offset: usize| -> (usize, Option<usize>) {
        let mut first = None;
        let mut count = 0;
        for (i, (x, y)) in a.chunks(size).zip(b.chunks(size)).enumerate() {
            if x != y {
                count += 1;
                first.get_or_insert(offset + i);
            }
        }
        (count, first)
    };
    let piece = PARALLEL_BYTES / size * size;
    let (changed, first) = before
        .par_chunks(piece)
        .zip(now.par_chunks(piece))
        .enumerate()
        .map(|(i, (a, b))| changed_in(a, b, i * (piece / size)))
        .reduce(|| (0, None), |(n, f), (m, g)| (n + m, f.or(g)));
    let first = first?;
    let (was, is) = (&before[first * size..], &now[first * size..]);
    let value = |bytes: &[u8]| format::value_and_bits(tensor.dtype, tensor.dtype.decode(bytes), tensor.dtype.bits(bytes));
    let message = format!(
        "input changed: {} of {} elements, first {}: was {} now {}",
        format::count(changed),
        format::count(tensor.elements()),
        format::coordinates_text(&tensor.shape, first),
        value(was),
        value(is)
    );
    Some(Failure { count: changed, total: tensor.elements(), first: Some(format::coordinates(&tensor.shape, first)), message })
}

/// A contract error as one printed line, for the JSON report.
#[derive(Serialize)]
pub struct ContractErrorView {
    pub line: String,
}

/// The block a launch of the op uses for the contract's first case and first record: the
/// `threads` figure of the static path, which has no device to launch on.
fn launcher_block(contract: &Contract) -> Result<u32, String> {
    let (record, case) = (&contract.records[0], &contract.cases[0]);
    let dims = (contract.op.dims)(contract.op, &case.symbols, &record.params).map_err(|e| error_chain(&e))?;
    Ok(dims.block.iter().product())
}

/// Gate 4 alone, from a compiler's figures, with no device: every record and every limits
/// control of an architecture. Gates 1-3 are not run and never reported as passed.
pub fn run_static(compiler: &dyn engine::backend::StaticCompiler, settings: &Settings, on_event: &mut dyn FnMut(&Event)) -> RunReport {
    let started = Instant::now();
    let arch = compiler.arch();
    let toolchain = compiler.identity();
    let gates_run = vec![Gate::Limits];
    on_event(&Event::Started { arch: &arch, backend: "static", toolchain: &toolchain, gates_run: &gates_run });
    let mut report = RunReport::empty(&arch, "static", &toolchain, settings, 0, &gates_run);
    let (contracts, controls) = load(settings, &arch, &gates_run, &mut report, on_event);

    // (contract index, control) pairs to measure, built on all cores
    let mut jobs: Vec<(usize, Option<&Control>, KernelSource)> = Vec::new();
    for (i, c) in contracts.iter().enumerate() {
        if let Some(source) = source_of(settings, c, None) {
            jobs.push((i, None, source));
        }
    }
    for control in &controls {
        let i = contracts.iter().position(|k| k.op.name == control.contract).unwrap();
        if let Some(source) = source_of(settings, &contracts[i], Some(control)) {
            jobs.push((i, Some(control), source));
        }
    }
    let build_started = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let figures: std::sync::Mutex<HashMap<usize, Result<engine::backend::ResourceUsage, String>>> = Default::default();
    std::thread::scope(|scope| {
        for _ in 0..engine::backend::host::worker_count().clamp(1, 8) {
            engine::threads::brief_scoped(scope, || {
                loop {
                    let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((i, _, source)) = jobs.get(j) else { break };
                    let symbol = contracts[*i].op.kernel_symbol();
                    let usage = compiler.resource_usage(source, symbol).map_err(|e| error_chain(&e)).and_then(|mut u| {
                        u.figures.insert("threads".into(), launcher_block(&contracts[*i])? as u64);
                        Ok(u)
                    });
                    figures.lock().unwrap().insert(j, usage);
                }
            });
        }
    });
    report.timing.build_seconds = build_started.elapsed().as_secs_f64();
    report.timing.modules_built = jobs.len();
    let figures = figures.into_inner().unwrap();

    for (j, (i, control, _)) in jobs.iter().enumerate() {
        let contract = &contracts[*i];
        let records: Vec<&Record> = match control {
            Some(c) => vec![contract.record(&c.record).unwrap()],
            None => settings.records_of(contract).collect(),
        };
        for record in records {
            let mut result = RecordResult {
                op: contract.op.name.to_string(),
                record: record.name.clone(),
                contract_file: contract.file.clone(),
                control: control.map(ControlInfo::of),
                outcome: Outcome::Pass,
                gates_run: gates_run.clone(),
                failures: Vec::new(),
                failure_sites: Vec::new(),
                findings: Vec::new(),
                stale_findings: Vec::new(),
                covered_tensors: Vec::new(),
                uncovered: None,
                error: None,
                fault: None,
                tolerances: BTreeMap::new(),
                cases: Vec::new(),
                nonfinite_policy: contract.nonfinite.name().to_string(),
                nonfinite_cases: Vec::new(),
                cases_not_run: Vec::new(),
                limits: None,
                cross_backend_max_ulp: None,
                notes: Vec::new(),
                seconds: 0.0,
                phases: Phases::default(),
                triage: Vec::new(),
            };
            match &figures[&j] {
                Ok(usage) => {
                    let limits = limits::check(&arch, "static", usage, contract.limits.get(&arch));
                    add_limits_failure(&mut result, &limits, settings.strict_limits);
                    result.limits = Some(limits);
                }
                Err(e) => result.error = Some(e.clone()),
            }
            result.outcome = decide(&mut result, contract, *control, &arch, &gates_run, false);
            if control.is_some() {
                on_event(&Event::Control(&result));
                report.controls.push(result);
            } else {
                on_event(&Event::Record(&result));
                report.records.push(result);
            }
        }
    }
    report.timing.total_seconds = started.elapsed().as_secs_f64();
    report.timing.before_seconds = Timing::before(settings, started);
    on_event(&Event::Finished(&report));
    report
}

/// The repository's own folders and the defaults, for unit tests.
#[cfg(test)]
pub(crate) fn tests_settings() -> Settings {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    Settings {
        contracts_dir: root.join("contracts"),
        controls_dir: root.join("controls"),
        kernels_dir: root.join("kernels"),
        include_dirs: Vec::new(),
        hip_headers: Some(root.join("kernels/hip-headers")),
        cache_dir: root.join("target/kernel-cache"),
        root,
        only: Vec::new(),
        run_controls: true,
        seed: 1,
        repeats: 3,
        strict_limits: false,
        timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        isolated: true,
        jobs: 1,
        jobs_given: true,
        build_timeout_seconds: DEFAULT_BUILD_TIMEOUT_SECONDS,
        fail_fast: false,
        records: Vec::new(),
        case: None,
        partition: None,
        case_data: false,
        device_inputs: true,
        process_started: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oracles_outputs_serve_records_that_agree_on_the_parameters_it_read() {
        // rms_norm reads eps alone: a record that differs in another parameter gets its
        // outputs; one whose eps differs, or has none, runs it again
        let symbols: engine::shape_expr::Symbols = [("rows".to_string(), 1), ("k".to_string(), 2)].into();
        let inputs: BTreeMap<String, crate::oracle::InputValues> =
            [("x".to_string(), vec![1.0, 2.0].into()), ("weight".to_string(), vec![1.0, 1.0].into())].into();
        let record: BTreeMap<String, f64> = [("eps".to_string(), 1e-6), ("chunk".to_string(), 256.0)].into();
        let params = crate::oracle::Params::new(&record);
        let rms_norm = crate::oracle::find("rms_norm").unwrap();
        let outputs = Arc::new(rms_norm(&crate::oracle::OracleInput { symbols: &symbols, params: &params, inputs: &inputs }).unwrap());
        assert_eq!(params.read(), vec![("eps".to_string(), Some(1e-6f64.to_bits()))]);
        let input = (7, engine::DType::F32, vec![1, 2], Inputs::AsGenerated, None);
        let key: OracleKey = ("rms_norm".into(), "tf_rms", 0, vec![("x".into(), input)]);
        let mut cache = InputCache::default();
        cache.keep_oracle(key.clone(), params.read(), &outputs);
        let with = |pairs: &[(&str, f64)]| pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect::<BTreeMap<_, _>>();
        assert!(cache.oracle_for(&key, &with(&[("eps", 1e-6), ("chunk", 0.0)])).is_some(), "another chunk: the same outputs");
        assert!(cache.oracle_for(&key, &with(&[("eps", 1e-5), ("chunk", 256.0)])).is_none(), "another eps");
        assert!(cache.oracle_for(&key, &with(&[("chunk", 256.0)])).is_none(), "no eps");
        let other_case: OracleKey = ("rms_norm".into(), "tf_rms", 1, key.3.clone());
        assert!(cache.oracle_for(&other_case, &record).is_none(), "another case");
    }

    /// A large table the records take in f32 and in bf16 is drawn once: the first record's
    /// generation keeps the other type's bytes, each what its own generation gives; a small
    /// input, a planted copy or a record's own generator is left to `generate_input`.
    #[test]
    fn a_large_input_is_drawn_once_for_every_type_the_records_take_it_in() {
        let settings = tests_settings();
        let text = std::fs::read_to_string(settings.contracts_dir.join("tf_embed_dense.toml")).unwrap();
        // a case of 8,193 rows of 4,096 after the contract's: 128 MiB in f32, 64 MiB in bf16
        let end = text.find("cases = [").unwrap() + text[text.find("cases = [").unwrap()..].find("\n]\n").unwrap();
        let text = format!("{}\n  {{ n = 2, k = 4096, vocab = 8193 }},{}", &text[..end], &text[end..]);
        let contract = Contract::parse("contracts/tf_embed_dense.toml", &text).unwrap();
        let records: Vec<&Record> = contract.records.iter().collect();
        let mut cache = InputCache::default();
        cache.will_run(&contract, &records);
        assert_eq!(cache.types_wanted[&("tf_embed_dense", "table")], [engine::DType::F32, engine::DType::Bf16]);
        let (large, small) = (contract.cases.last().unwrap(), &contract.cases[0]);
        let key =
            |case: &Case, dtype, own: Option<&str>| (5u64, dtype, case.shapes["table"].clone(), Inputs::AsGenerated, own.map(String::from));
        let made = |case: &Case, dtype| contract.inputs["table"].generate(dtype, &case.shapes["table"], 5, &case.symbols).unwrap();
        assert!(cache.generate_with_other_types(&contract, "table", small, &key(small, engine::DType::F32, None)).is_none());
        assert!(
            cache
                .generate_with_other_types(&contract, "table", large, &key(large, engine::DType::F32, Some("fp32 table, f32 out")))
                .is_none()
        );
        assert!(cache.bytes.is_empty());
        let f32_table = cache.generate_with_other_types(&contract, "table", large, &key(large, engine::DType::F32, None)).unwrap().unwrap();
        assert!(f32_table == made(large, engine::DType::F32));
        let kept = cache.bytes.get(&key(large, engine::DType::Bf16, None)).expect("the bf16 table, kept");
        assert!(**kept == made(large, engine::DType::Bf16));
        assert_eq!(cache.bytes.len(), 1);
        // both made (the caller keeps the type it asked for): nothing more to draw
        cache.bytes.insert(key(large, engine::DType::F32, None), Arc::new(f32_table));
        assert!(cache.generate_with_other_types(&contract, "table", large, &key(large, engine::DType::Bf16, None)).is_none());
    }

    /// tf_embed_dense's table over a case of 64 MiB and a small one, in two records of the same
    /// types, launched on a Rust gather in place of the kernel (the memory backend: a device
    /// address is a host address).
    const KEPT_TABLE_CONTRACT: &str = r#"
op = "tf_embed_dense"
about = "Rows of a table gathered by token id."
[tensors]
table = { role = "input", dtypes = ["f32"], shape = "vocab, k" }
ids = { role = "input", dtypes = ["i32"], shape = "n" }
out = { role = "output", dtypes = ["f32"], shape = "n, k" }
[kernel]
source = "tf_embed_dense.hip"
symbol = "tf_embed_dense"
args = ["table", "dtype(table)", "ids", "int(n)", "int(k)", "out", "dtype(out)"]
grid = ["ceil_div(n * k, 256)"]
block = [256]
[[record]]
name = "first"
dtypes = { table = "f32", out = "f32" }
[[record]]
name = "second"
dtypes = { table = "f32", out = "f32" }
[shapes]
cases = [{ n = 3, k = 64, vocab = 16 }, { n = 2, k = 4096, vocab = 4097 }]
[inputs]
table = "normal(0, 1)"
ids = "int(0, vocab) | edges"
[nonfinite]
policy = "propagate"
reason = "a gather moves the values"
[seams]
axis = "n"
[reference]
oracle = "gather_rows"
tolerance = "exact"
reason = "a gather copies values"
[exempt]
residues = { n = "a test's contract", k = "a test's contract", vocab = "a test's contract" }
past = { n = "a test's contract", k = "a test's contract" }
odd_multiple = { k = "a test's contract" }
"#;

    /// A context that runs gates 1 to 3 on `backend`, with no reference backend or watcher.
    fn gates_1_to_3<'a>(backend: &'a dyn Backend, settings: &'a Settings, no_modules: &'a builds::Built) -> RunContext<'a> {
        const GATES: [Gate; 3] = [Gate::Nonfinite, Gate::Repeat, Gate::Shapes];
        RunContext { backend, settings, gates_run: &GATES, reference: None, reference_modules: no_modules, on_case: None, watcher: None }
    }

    /// The rows of `watched`'s table its ids name, into its output: what a correct gather
    /// makes, but for the last element of an output of `REPEAT_HASHED_BYTES` or more where
    /// `leave_last` (left as the launch's poison); the table's address.
    fn gather_rows(watched: &[engine::backend::WatchedTensor], leave_last: bool) -> u64 {
        let find = |name: &str| watched.iter().find(|w| w.name == name).expect("watched");
        let (table, ids, out) = (find("table"), find("ids"), find("out"));
        let (n, k) = (ids.bytes as usize / 4, out.bytes as usize / ids.bytes as usize);
        let left = if leave_last && out.bytes as usize >= crate::inputs::device::REPEAT_HASHED_BYTES { 4 } else { 0 };
        for i in 0..n {
            let row_bytes = if i == n - 1 { k * 4 - left } else { k * 4 };
            // SAFETY: the host backends' device addresses are their buffers' host addresses,
            // alive for the launch; the ids are within the table (the oracle agrees)
            unsafe {
                let id = *(ids.data as *const i32).add(i) as usize;
                std::ptr::copy_nonoverlapping((table.data as *const u8).add(id * k * 4), (out.data as *mut u8).add(i * k * 4), row_bytes);
            }
        }
        table.data
    }

    /// The gather a correct kernel makes (but for a large output's last element where `.2`,
    /// `gather_rows`), noting the table's address each launch.
    struct Gather(KernelSource, std::sync::Mutex<Vec<u64>>, bool);

    impl Module for Gather {
        fn source(&self) -> &KernelSource {
            &self.0
        }
        fn launch_watched(
            &self,
            _: &str,
            _: engine::backend::LaunchDims,
            _: Schedule,
            _: &[engine::backend::KernelArg],
            watched: &[engine::backend::WatchedTensor],
        ) -> Result<engine::backend::LaunchReport, engine::EngineError> {
            self.1.lock().unwrap().push(gather_rows(watched, self.2));
            Ok(engine::backend::LaunchReport::default())
        }
    }

    /// The host backend answering to a GPU's name, so that the runner takes its device paths
    /// (the harness's own kernels, `kc_hash` among them, built and run by the host's SIMT
    /// runtime, on the host memory its buffers are); it counts the buffers of 2 MiB it hands
    /// out, which only a hash's partial sums are here.
    struct HostAnsweringAsGpu(engine::backend::host::HostBackend, std::sync::atomic::AtomicUsize);

    impl Backend for HostAnsweringAsGpu {
        fn name(&self) -> &'static str {
            "cuda"
        }
        fn arch(&self) -> String {
            self.0.arch()
        }
        fn toolchain(&self) -> String {
            self.0.toolchain()
        }
        fn device_memory(&self) -> Option<u64> {
            None
        }
        fn allocate(&self, bytes: usize) -> Result<Box<dyn engine::backend::DeviceBuffer>, engine::EngineError> {
            if bytes == 2 << 20 {
                self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            self.0.allocate(bytes)
        }
        fn load_module(&self, source: &KernelSource) -> Result<Arc<dyn Module>, engine::EngineError> {
            self.0.load_module(source)
        }
        fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), engine::EngineError> {
            self.0.copy(to, from, bytes)
        }
    }

    /// On a GPU, a 16 MiB output's later launches are held to its first by the device's hash:
    /// a correct gather passes with its repeats hashed, not read back; one that leaves the last
    /// element unwritten differs there from launch to launch (each launch's poison), and gate 2
    /// reads the launches back and names the element as it does for launches read whole.
    #[test]
    fn a_large_outputs_repeats_are_hashed_on_a_gpu_and_an_unwritten_element_is_still_named() {
        let cache = tempfile::tempdir().unwrap();
        let settings = Settings { cache_dir: cache.path().to_path_buf(), ..tests_settings() };
        let text = KEPT_TABLE_CONTRACT
            .replace("{ n = 2, k = 4096, vocab = 4097 }", "{ n = 1024, k = 4096, vocab = 16 }")
            .replace(r#"past = { n = "a test's contract""#, r#"past = { vocab = "a test's contract", n = "a test's contract""#);
        let contract = Contract::parse("contracts/tf_embed_dense.toml", &text).unwrap();
        let options = engine::backend::host::HostOptions {
            prelude: settings.kernels_dir.join("host/prelude.h"),
            cache_dir: cache.path().join("host"),
            workers: 2,
            warp_size: 32,
        };
        let backend = HostAnsweringAsGpu(engine::backend::host::HostBackend::new(options).unwrap(), Default::default());
        let no_modules = builds::Built::new();
        let context = gates_1_to_3(&backend, &settings, &no_modules);
        let source = KernelSource { path: "x.hip".into(), display_path: "x.hip".into(), kernels: vec![], include_dirs: vec![] };
        let run = |leave_last: bool| {
            let loaded = Loaded {
                module: Ok(Some(Arc::new(Gather(source.clone(), Default::default(), leave_last)) as Arc<dyn Module>)),
                checker: builds::load_checker(&settings, &contract, None, &builds::Built::new()),
            };
            let mut inputs = InputCache::default();
            inputs.will_run(&contract, &[&contract.records[0]]);
            run_record(&context, &contract, &contract.records[0], &loaded, None, &mut inputs)
        };
        let result = run(false);
        assert!(matches!(result.outcome, Outcome::Pass), "{:?} {:?}", result.failures, result.error);
        let hashed = backend.1.load(std::sync::atomic::Ordering::Relaxed);
        assert!(hashed >= 2, "the large case's second and third launches hashed: {hashed}");
        let result = run(true);
        let failure = result.failures.iter().find(|f| f.gate == Gate::Repeat).expect("red at repeat");
        assert_eq!((failure.case_index, failure.tensor.as_str()), (1, "out"));
        assert!(
            failure
                .failure
                .message
                .starts_with("1 of 4,194,304 elements unwritten (equal to the poison on all 3 launches), first [1023, 4095]"),
            "{}",
            failure.failure.message
        );
        assert!(backend.1.load(std::sync::atomic::Ordering::Relaxed) > hashed, "hashed, then read back");
    }

    #[test]
    fn a_large_inputs_tensor_serves_the_next_records_case_and_a_change_made_in_between_is_red_there() {
        let settings = tests_settings();
        let contract = Contract::parse("contracts/tf_embed_dense.toml", KEPT_TABLE_CONTRACT).unwrap();
        let source = KernelSource { path: "x.hip".into(), display_path: "x.hip".into(), kernels: vec![], include_dirs: vec![] };
        let module = Arc::new(Gather(source, Default::default(), false));
        let loaded = Loaded {
            module: Ok(Some(module.clone() as Arc<dyn Module>)),
            checker: builds::load_checker(&settings, &contract, None, &builds::Built::new()),
        };
        let backend = engine::backend::memory::Memory;
        let no_modules = builds::Built::new();
        let context = gates_1_to_3(&backend, &settings, &no_modules);
        let (first, second) = (&contract.records[0], &contract.records[1]);
        let mut inputs = InputCache::default();
        inputs.will_run(&contract, &[first, second]);
        let run = |record: &Record, inputs: &mut InputCache| {
            let launched = module.1.lock().unwrap().len();
            let result = run_record(&context, &contract, record, &loaded, None, inputs);
            (result, module.1.lock().unwrap()[launched..].to_vec())
        };
        let (result, _) = run(first, &mut inputs);
        assert!(matches!(result.outcome, Outcome::Pass), "{:?} {:?}", result.failures, result.error);
        assert_eq!(inputs.tensors.len(), 1, "the 64 MiB table kept, the small one not");
        let kept = inputs.tensors.values().next().unwrap().0.device_address();
        // the second record's large case launches on the kept tensor, its small one on its own
        let (result, tables) = run(second, &mut inputs);
        assert!(matches!(result.outcome, Outcome::Pass), "{:?} {:?}", result.failures, result.error);
        // (an address alone could be a fresh buffer's at the freed one's place: the change
        // below, made to the kept tensor, is what shows the next record launching on it)
        assert_eq!(tables.iter().filter(|t| **t == kept).count(), 3, "the large case's three launches: {tables:x?}");
        assert_eq!(inputs.tensors.values().next().unwrap().0.device_address(), kept, "kept again");
        // one element changed between records, as a stray write of another case's launch would:
        // red at shapes in the record that takes the tensor, said so, and the tensor dropped
        let (tensor, seal) = inputs.tensors.values_mut().next().unwrap();
        assert!(seal.is_none(), "no device hash here");
        let mut bytes = tensor.read().unwrap();
        bytes[(7 * 4096 + 2) * 4..][..4].copy_from_slice(&1234.5f32.to_le_bytes());
        tensor.write(&bytes).unwrap();
        let (result, _) = run(first, &mut inputs);
        let failure = result.failures.iter().find(|f| f.gate == Gate::Shapes && f.tensor == "table").expect("the table, red");
        assert_eq!(failure.case_index, 1);
        assert!(
            failure.failure.message.starts_with("input changed: 1 of 16,781,312 elements, first [7, 2]"),
            "{}",
            failure.failure.message
        );
        assert!(failure.failure.message.contains("kept from an earlier record's case"), "{}", failure.failure.message);
        assert!(inputs.tensors.is_empty(), "a changed tensor is not kept");
        // the next record uploads it afresh, and passes
        let (result, _) = run(second, &mut inputs);
        assert!(matches!(result.outcome, Outcome::Pass), "{:?} {:?}", result.failures, result.error);
        assert_eq!(inputs.tensors.len(), 1);
    }

    #[test]
    fn the_scratch_buffer_is_kept_between_checks_and_a_nested_check_gets_its_own() {
        let first = with_scratch(64, |kept| {
            kept.fill(7);
            kept.as_ptr() as usize
        });
        // the same memory again (a smaller length within it), with what the last check left
        let again = with_scratch(16, |kept| (kept.as_ptr() as usize, kept.len(), kept.iter().all(|b| *b == 7)));
        assert_eq!(again, (first, 16, true));
        let nested = with_scratch(8, |outer| {
            outer.fill(1);
            with_scratch(8, |inner| {
                inner.fill(2);
                inner.as_ptr() as usize
            }) != outer.as_ptr() as usize
                && outer.iter().all(|b| *b == 1)
        });
        assert!(nested, "a check within a check has a buffer of its own");
    }

    #[test]
    fn the_input_check_in_slices_sees_a_change_in_any_slice_and_names_it_whole() {
        let backend = engine::backend::memory::Memory;
        let before: Vec<u8> = (0..40u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
        let mut tensor = Tensor::allocate(&backend, engine::DType::F32, &[4, 10]).unwrap();
        tensor.write(&before).unwrap();
        assert!(input_check_in_slices(&tensor, &before, 12).unwrap().is_none());
        // elements 25 and 38, in the ninth and thirteenth slices of 3
        let mut now = before.clone();
        now[25 * 4..26 * 4].copy_from_slice(&(-1f32).to_le_bytes());
        now[38 * 4..39 * 4].copy_from_slice(&(7.5f32).to_le_bytes());
        tensor.write(&now).unwrap();
        let failure = input_check_in_slices(&tensor, &before, 12).unwrap().expect("a changed input");
        assert_eq!((failure.count, failure.total), (2, 40));
        assert!(failure.message.starts_with("input changed: 2 of 40 elements, first [2, 5]"), "{}", failure.message);
        // the whole tensor in one slice says the same
        assert_eq!(input_check_in_slices(&tensor, &before, 1 << 20).unwrap().unwrap().message, failure.message);
        // a slice that cannot be read back is the check's error, in one slice or in many
        tensor.write(&before).unwrap();
        for slice in [12, 1 << 20] {
            let error = differs_on_device(&tensor, &[(0, &before[..]), (150, &before[..20])], slice).unwrap_err();
            assert!(error.to_string().contains("reading"), "{error}");
        }
    }

    /// Gate 2 gets the first launch alone where the device found every later one repeating it
    /// over poisons that differ, every launch in order where one was read back (those the device
    /// found repeating taken as the first's), and the launches as read where none was hashed.
    #[test]
    fn launches_the_device_found_repeating_the_first_are_the_firsts_bytes_in_their_places() {
        let poisons: Vec<Vec<u8>> = (0..3).map(|l| vec![output_poison(l); 4]).collect();
        let (first, third) = (vec![1u8; 8], vec![2u8; 8]);
        let read = [first.clone()];
        assert!(matches!(Launched::of(&read, &[1, 2], &poisons, 4), Launched::Proven(bytes) if *bytes == first));
        let same = vec![vec![7u8; 4]; 3];
        assert!(matches!(Launched::of(&read, &[1, 2], &same, 4), Launched::Rebuilt(each) if each == vec![first.clone(); 3]));
        let read = [first.clone(), third.clone()];
        assert!(
            matches!(Launched::of(&read, &[1], &poisons, 4), Launched::Rebuilt(each) if each == [first.clone(), first.clone(), third.clone()])
        );
        assert!(matches!(Launched::of(&read, &[], &poisons, 4), Launched::Read(each) if each.len() == 2));
    }

    #[test]
    fn a_planted_copy_makes_one_launch_fewer_than_its_case_and_two_at_least() {
        let planted = Inputs::Planted(Planting::Together { seed: 1 });
        assert_eq!((launches_of(Inputs::AsGenerated, 3), launches_of(planted, 3)), (3, 2));
        assert_eq!((launches_of(Inputs::AsGenerated, 1), launches_of(planted, 1)), (3, 2));
        assert_eq!((launches_of(Inputs::AsGenerated, 5), launches_of(planted, 5)), (5, 4));
        // two launches tell an unwritten element: the first two poisons share no value
        assert_ne!(output_poison(0), output_poison(1));
    }

    #[test]
    fn the_three_default_launches_start_threads_warp_ahead_reversed_and_shuffled() {
        let orders: Vec<ThreadOrder> = (0..3).map(|l| launch_schedule(l, 7).thread_order).collect();
        assert!(matches!(orders[0], ThreadOrder::WarpAhead(_)), "{orders:?}");
        assert!(matches!(orders[1], ThreadOrder::Reversed), "{orders:?}");
        assert!(matches!(orders[2], ThreadOrder::Shuffled(_)), "{orders:?}");
        assert!(matches!(launch_schedule(3, 7).thread_order, ThreadOrder::Forward));
        // poisons and block orders differ between every two of them too
        let poisons: Vec<u8> = (0..3).map(output_poison).collect();
        assert!(poisons[0] != poisons[1] && poisons[1] != poisons[2] && poisons[0] != poisons[2]);
    }

    #[test]
    fn records_that_take_a_large_input_in_the_same_type_run_one_after_another() {
        let settings = tests_settings();
        let load = |op: &str| {
            let path = settings.contracts_dir.join(format!("{op}.toml"));
            Contract::parse(&format!("contracts/{op}.toml"), &std::fs::read_to_string(path).unwrap()).unwrap()
        };
        let names = |contract: &Contract, arch: &str| -> Vec<String> {
            let records: Vec<&Record> = contract.records.iter().collect();
            execution_order(contract, &records, arch).iter().map(|r| r.name.clone()).collect()
        };
        let keys = load("tf_score_keys");
        let cache = |name: &String| keys.record(name).unwrap().dtypes["k_cache"];
        let on_gpu = names(&keys, "sm_90");
        let in_contract: Vec<String> = keys.records.iter().map(|r| r.name.clone()).collect();
        assert_ne!(on_gpu, in_contract, "the contract alternates its 4 GiB cache's type");
        let mut sorted = on_gpu.clone();
        sorted.sort();
        let mut all = in_contract.clone();
        all.sort();
        assert_eq!(sorted, all, "every record once");
        let switches = on_gpu.windows(2).filter(|w| cache(&w[0]) != cache(&w[1])).count();
        assert_eq!(switches, 1, "{on_gpu:?}");
        assert_eq!(on_gpu[0], in_contract[0]);
        // the host runs no case of gigabytes: the contract's order
        assert_eq!(names(&keys, "host-x86_64"), in_contract);
        let add = load("tf_add");
        assert_eq!(names(&add, "sm_90"), add.records.iter().map(|r| r.name.clone()).collect::<Vec<_>>());
    }

    #[test]
    fn a_gpu_only_case_runs_on_a_gpu_for_the_records_only_and_never_on_the_host() {
        let settings = tests_settings();
        let contract = Contract::load(&settings.contracts_dir.join("tf_embed_dense.toml"), "contracts/tf_embed_dense.toml").unwrap();
        let gpu_only = contract.cases.iter().position(|c| c.gpu_only.is_some()).expect("tf_embed_dense has a GPU-only case");
        let case = &contract.cases[gpu_only];
        assert!(case_runs(case, "sm_90", false) && case_runs(case, "gfx1201", false));
        assert!(!case_runs(case, "sm_90", true) && !case_runs(case, "host-x86_64", false) && !case_runs(case, "host-x86_64", true));
        assert!(contract.cases.iter().filter(|c| c.gpu_only.is_none()).all(|c| case_runs(c, "host-x86_64", true)));
        assert!(
            cases_run_for(&contract, "sm_90", None).contains(&gpu_only)
                && !cases_run_for(&contract, "host-x86_64", None).contains(&gpu_only)
        );
        assert!(cases_not_run(&contract, "sm_90", false).is_empty());
        // every GPU-only case is left out of the controls' runs, and of every host run
        let gpu_only_cases = contract.cases.iter().filter(|c| c.gpu_only.is_some()).count();
        let for_controls = cases_not_run(&contract, "sm_90", true);
        assert_eq!(for_controls.len(), gpu_only_cases, "{for_controls:?}");
        assert!(
            for_controls[0].contains(&format!("shapes.cases[{gpu_only}]"))
                && for_controls.iter().all(|c| c.ends_with("run for the records, not for controls"))
        );
        let on_host = cases_not_run(&contract, "host-x86_64", true);
        assert!(on_host.len() == gpu_only_cases && on_host.iter().all(|c| c.ends_with(')')), "{on_host:?}");
    }

    #[test]
    fn a_gpu_only_case_of_many_blocks_gets_planted_copies_on_a_gpu_and_one_of_gigabytes_never() {
        let settings = tests_settings();
        let load = |op: &str| Contract::load(&settings.contracts_dir.join(format!("{op}.toml")), &format!("contracts/{op}.toml")).unwrap();
        let rms = load("tf_rms");
        let many_rows = rms.cases.iter().position(|c| c.gpu_only.is_some()).expect("tf_rms has a GPU-only case of 65,537 rows");
        assert!(nonfinite_cases(&rms, "sm_90").contains(&many_rows) && nonfinite_cases(&rms, "gfx1201").contains(&many_rows));
        assert!(!nonfinite_cases(&rms, "host-x86_64").contains(&many_rows));
        // the host's planted cases are the GPU's less the GPU-only ones
        let host = nonfinite_cases(&rms, "host-x86_64");
        assert_eq!(nonfinite_cases(&rms, "sm_90").into_iter().filter(|i| rms.cases[*i].gpu_only.is_none()).collect::<Vec<_>>(), host);
        let sum = load("tf_sum_partials");
        let planted_gpu_only: Vec<usize> =
            nonfinite_cases(&sum, "sm_90").into_iter().filter(|i| sum.cases[*i].gpu_only.is_some()).collect();
        assert_eq!(planted_gpu_only.len(), 1, "the 65,537-row case, not the 8.25 GiB one: {planted_gpu_only:?}");
        assert_eq!(sum.cases[planted_gpu_only[0]].symbols["rows"], 65537);
    }

    #[test]
    fn a_known_finding_at_seams_covers_a_seams_failure_on_its_arch_and_goes_stale_without_one() {
        let settings = tests_settings();
        let finding = "\n[[finding]]\ngate = \"seams\"\narch = \"sm_90\"\nrecord = \"f32\"\ntensor = \"out\"\n\
                       matches = \"rows differ from the whole batch\"\nreason = \"a library that picks its kernel by the row count\"\n";
        let text = std::fs::read_to_string(settings.contracts_dir.join("tf_rms.toml")).unwrap() + finding;
        let contract = Contract::parse("contracts/tf_rms.toml", &text).unwrap();
        let gates = [Gate::Nonfinite, Gate::Repeat, Gate::Shapes, Gate::Limits, Gate::Seams];
        let red = || {
            let mut result = new_result(&contract, &contract.records[0], None, &gates);
            let message = "pieces of 7 rows: 3 of 8 rows differ from the whole batch, first [2, 0] (row 2): got -0.4821 (0xbef6da7b) want \
                           -0.4821 (0xbef6da7e)";
            let failure = Failure { count: 3, total: 8, first: Some(vec![2, 0]), message: message.into() };
            add_failures(&mut result, 4, "{rows = 8, k = 8192}", vec![(Gate::Seams, "out".into(), failure)]);
            result
        };
        let mut known = red();
        known.outcome = decide(&mut known, &contract, None, "sm_90", &gates, false);
        assert_eq!(known.outcome, Outcome::KnownFinding);
        let line = crate::report::record_line(&known);
        assert!(
            line.starts_with("tf_rms (f32) pass nonfinite, repeat, shapes, limits and seams with known finding at seams (out): a library"),
            "{line}"
        );
        let mut elsewhere = red();
        assert_eq!(decide(&mut elsewhere, &contract, None, "gfx1201", &gates, false), Outcome::Fail, "the finding is for sm_90 only");
        let mut green = new_result(&contract, &contract.records[0], None, &gates);
        assert_eq!(decide(&mut green, &contract, None, "sm_90", &gates, false), Outcome::Fail);
        assert!(green.stale_findings[0].contains("is stale: the gate passes now"), "{:?}", green.stale_findings);
    }
}
