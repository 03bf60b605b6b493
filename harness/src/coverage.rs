//! `contracts coverage`: line and branch coverage of each kernel source by its own
//! contract's cases, from a host build instrumented for gcov, checked against the floor and
//! the accepted exceptions of `coverage.toml`.
//!
//! The kernels are built with `--coverage` (see `engine::backend::host::BuildMode`), the
//! contracts run in one child process of the binary (`--in-process`: its libraries write
//! their counters when it exits) with `GCOV_PREFIX` pointing at a folder of this run, and
//! gcov's JSON for each library is read back. The rewritten copy the compiler reads starts
//! with `#line 1 "kernels/x.hip"`, so gcov already names the original file and its lines;
//! only files of the kernels folder count (not the host prelude, not system headers).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use engine::backend::host::{Built, GCOV_STRIP_ALL, HostBackend};
use engine::backend::{Backend, KernelSource};
use serde::{Deserialize, Serialize};

use crate::runner::{self, Event, RunReport, Settings};

/// The floor file, at the repository root.
pub const FLOOR_FILE: &str = "coverage.toml";

#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    #[error("{file}: {message}")]
    Floor { file: String, message: String },
    #[error("{file}: `accept[{index}].{key}`: {message}")]
    Accept { file: String, index: usize, key: &'static str, message: String },
    #[error("gcov's JSON for {source_file}: {message}")]
    Gcov { source_file: String, message: String },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{0}")]
    Build(String),
    #[error("the report {path}: {source}")]
    Report { path: String, source: crate::report::WriteError },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CoverageError {
    let what = what.into();
    move |source| CoverageError::Io { what, source }
}

// ---------------------------------------------------------------- gcov's JSON

#[derive(Deserialize)]
struct GcovJson {
    files: Vec<GcovFile>,
}

#[derive(Deserialize)]
struct GcovFile {
    file: String,
    lines: Vec<GcovLine>,
}

#[derive(Deserialize)]
struct GcovLine {
    line_number: u32,
    count: u64,
    #[serde(default)]
    branches: Vec<GcovBranch>,
}

#[derive(Deserialize)]
struct GcovBranch {
    count: u64,
    #[serde(default)]
    throw: bool,
}

/// One source line as gcov counted it: how often it ran, and the count of each of its
/// branches in gcov's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineCounts {
    pub count: u64,
    pub branches: Vec<u64>,
}

/// The lines of each file of one gcov run, by the file's name as gcov gives it.
pub type FileCounts = BTreeMap<String, BTreeMap<u32, LineCounts>>;

/// Reads `gcov --json-format --stdout` output (one JSON document per line, one per data
/// file). An exception edge (`throw`) is the compiler's, not the source's, and is left out;
/// a line listed again (a second function on it) adds its branches.
pub fn parse_gcov_json(text: &str) -> Result<FileCounts, String> {
    let mut files = FileCounts::new();
    for document in text.lines().filter(|l| !l.trim().is_empty()) {
        let parsed: GcovJson = serde_json::from_str(document).map_err(|e| e.to_string())?;
        for file in parsed.files {
            let lines = files.entry(file.file).or_default();
            for line in file.lines {
                let entry = lines.entry(line.line_number).or_default();
                entry.count += line.count;
                entry.branches.extend(line.branches.iter().filter(|b| !b.throw).map(|b| b.count));
            }
        }
    }
    Ok(files)
}

/// Adds one library's counts of a file to another's (a header several ops include): a line
/// ran if it ran in any; its i-th branch was taken if it was in any. Every library compiles
/// the header's functions the same way (`-O0`, nothing inlined), so branch i is the same
/// branch in each.
pub fn merge_into(into: &mut BTreeMap<u32, LineCounts>, from: &BTreeMap<u32, LineCounts>) {
    for (line, counts) in from {
        let entry = into.entry(*line).or_default();
        entry.count += counts.count;
        if entry.branches.len() < counts.branches.len() {
            entry.branches.resize(counts.branches.len(), 0);
        }
        for (i, c) in counts.branches.iter().enumerate() {
            entry.branches[i] += c;
        }
    }
}

/// The repository-relative name of a file gcov names, when it is a kernel source or header
/// of the kernels folder (not the host prelude's folder, not a system header); None for
/// everything else. gcov names the kernel source as its `#line` says (`kernels/x.hip`), and a
/// header as the compiler reached it: through the build's link to the repository (`root/`,
/// mapped away by `-ffile-prefix-map`), relative to the repository, or absolute.
pub fn kernel_file(name: &str, root: &Path, kernels_dir: &Path) -> Option<String> {
    let name = name.strip_prefix("./").unwrap_or(name);
    let path = if Path::new(name).is_absolute() { PathBuf::from(name) } else { root.join(name) };
    let real = path.canonicalize().ok()?;
    let kernels = kernels_dir.canonicalize().ok()?;
    let inside = real.strip_prefix(&kernels).ok()?;
    // the backends' preludes (host/, hip/, cuda/) are the harness's, not kernel code
    if inside.components().count() > 1 {
        return None;
    }
    let root = root.canonicalize().ok()?;
    Some(real.strip_prefix(&root).map(|p| p.display().to_string()).unwrap_or_else(|_| real.display().to_string()))
}

// ---------------------------------------------------------------- the floor file

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FloorToml {
    branch_floor: f64,
    #[serde(default)]
    line_floor: Option<f64>,
    #[serde(default)]
    accept: Vec<AcceptToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AcceptToml {
    file: String,
    line: u32,
    #[serde(default)]
    branch: Option<usize>,
    text: String,
    reason: String,
}

/// An uncovered line, or one branch of it, accepted with the reason no case can reach it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Accepted {
    pub file: String,
    pub line: u32,
    /// None: the line and every branch on it.
    pub branch: Option<usize>,
    /// What the line must hold, so that an acceptance does not move to another line when the
    /// source is edited.
    pub text: String,
    pub reason: String,
}

/// `coverage.toml`: the branch floor every kernel source must reach (with its accepted
/// items counted as covered), an optional line floor, and the accepted items.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Floor {
    pub branch_floor: f64,
    pub line_floor: f64,
    pub accepted: Vec<Accepted>,
}

impl Floor {
    pub fn parse(text: &str, file: &str) -> Result<Floor, CoverageError> {
        let parsed: FloorToml = toml::from_str(text)
            .map_err(|e| CoverageError::Floor { file: file.to_string(), message: e.to_string().trim_end().to_string() })?;
        let fraction = |key: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(CoverageError::Floor {
                    file: file.to_string(),
                    message: format!("`{key}` = {v}: a fraction from 0 to 1 (0.95 for 95%)"),
                })
            }
        };
        let branch_floor = fraction("branch_floor", parsed.branch_floor)?;
        let line_floor = fraction("line_floor", parsed.line_floor.unwrap_or(0.0))?;
        let mut accepted = Vec::new();
        for (index, a) in parsed.accept.into_iter().enumerate() {
            let bad = |key: &'static str, message: &str| CoverageError::Accept {
                file: file.to_string(),
                index,
                key,
                message: message.to_string(),
            };
            if a.reason.trim().is_empty() || a.reason.contains('\n') {
                return Err(bad("reason", "one line saying why no case can reach it"));
            }
            if a.text.trim().is_empty() || a.text.contains('\n') {
                return Err(bad("text", "a part of the line's source text, on one line"));
            }
            if a.line == 0 {
                return Err(bad("line", "lines count from 1"));
            }
            accepted.push(Accepted { file: a.file, line: a.line, branch: a.branch, text: a.text, reason: a.reason });
        }
        Ok(Floor { branch_floor, line_floor, accepted })
    }
}

// ---------------------------------------------------------------- figures

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ratio {
    pub covered: usize,
    pub total: usize,
}

impl Ratio {
    /// 1 when there is nothing to cover.
    pub fn fraction(&self) -> f64 {
        if self.total == 0 { 1.0 } else { self.covered as f64 / self.total as f64 }
    }

    pub fn percent(&self) -> String {
        format!("{:.1}%", 100.0 * self.fraction())
    }

    fn add(&mut self, other: Ratio) {
        self.covered += other.covered;
        self.total += other.total;
    }
}

/// Something of a source that no case reached.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Uncovered {
    pub line: u32,
    /// None: the line never ran (its branches, `branches` of them, with it).
    pub branch: Option<usize>,
    pub branches: usize,
    pub text: String,
    /// Its reason in `coverage.toml`, when it is accepted there.
    pub accepted: Option<String>,
}

impl Uncovered {
    pub fn describe(&self) -> String {
        let what = match self.branch {
            None if self.branches > 0 => format!("line {} not run (nor its {} branches)", self.line, self.branches),
            None => format!("line {} not run", self.line),
            Some(b) => format!("line {} branch {} of {} not taken", self.line, b + 1, self.branches),
        };
        format!("{what}: `{}`", crate::text::escaped(self.text.trim()))
    }
}

/// One kernel source's figures.
#[derive(Clone, Debug, Serialize)]
pub struct SourceCoverage {
    pub file: String,
    /// The ops whose runs count here (one for a kernel; those that include it for a header).
    pub ops: Vec<String>,
    pub lines: Ratio,
    pub branches: Ratio,
    /// Counting the accepted items as covered.
    pub lines_with_accepted: Ratio,
    pub branches_with_accepted: Ratio,
    pub uncovered: Vec<Uncovered>,
    /// Acceptances of this file that no longer match: the line's text differs, or it is
    /// covered now.
    pub stale: Vec<String>,
    /// A header shared by several ops is held to the floor on a run of every op only.
    pub floor_checked: bool,
    pub meets_floor: bool,
}

/// The figures of `file` from its line counts, with the accepted items of `floor` applied.
pub fn figures(file: &str, ops: Vec<String>, counts: &BTreeMap<u32, LineCounts>, text: &[String], floor: &Floor) -> SourceCoverage {
    let mut lines = Ratio::default();
    let mut branches = Ratio::default();
    let mut uncovered = Vec::new();
    let text_of = |line: u32| text.get((line as usize).wrapping_sub(1)).cloned().unwrap_or_default();
    for (&line, c) in counts {
        lines.total += 1;
        branches.total += c.branches.len();
        if c.count > 0 {
            lines.covered += 1;
        } else {
            uncovered.push(Uncovered { line, branch: None, branches: c.branches.len(), text: text_of(line), accepted: None });
        }
        let taken = c.branches.iter().filter(|&&b| b > 0).count();
        branches.covered += taken;
        if c.count > 0 {
            for (i, _) in c.branches.iter().enumerate().filter(|(_, b)| **b == 0) {
                uncovered.push(Uncovered { line, branch: Some(i), branches: c.branches.len(), text: text_of(line), accepted: None });
            }
        }
    }
    let mut stale = Vec::new();
    let mut lines_with_accepted = lines;
    let mut branches_with_accepted = branches;
    for a in floor.accepted.iter().filter(|a| a.file == file) {
        let line_text = text_of(a.line);
        if !line_text.contains(&a.text) {
            stale.push(format!(
                "accepted line {} should read `{}` but reads `{}`",
                a.line,
                crate::text::escaped(&a.text),
                crate::text::escaped(line_text.trim())
            ));
            continue;
        }
        let mut matched = false;
        for u in uncovered.iter_mut().filter(|u| u.line == a.line) {
            // a whole-line acceptance takes the line and its branches; a branch's, that branch
            let applies = match (a.branch, u.branch) {
                (None, _) => true,
                (Some(b), Some(ub)) => b == ub + 1,
                (Some(_), None) => false,
            };
            if applies && u.accepted.is_none() {
                u.accepted = Some(a.reason.clone());
                matched = true;
                match u.branch {
                    None => {
                        lines_with_accepted.covered += 1;
                        branches_with_accepted.covered += u.branches;
                    }
                    Some(_) => branches_with_accepted.covered += 1,
                }
            }
        }
        if !matched {
            let what = a.branch.map_or(format!("line {}", a.line), |b| format!("line {} branch {b}", a.line));
            stale.push(format!("accepted {what} is covered now (or is no line or branch gcov counts): remove it from {FLOOR_FILE}"));
        }
    }
    SourceCoverage {
        file: file.to_string(),
        ops,
        lines,
        branches,
        lines_with_accepted,
        branches_with_accepted,
        uncovered,
        stale,
        floor_checked: true,
        meets_floor: false,
    }
}

impl SourceCoverage {
    /// Sets `meets_floor`: the floors reached with the accepted items, and no acceptance of
    /// this file that points at another line's text.
    pub fn check(&mut self, floor: &Floor, checked: bool) {
        self.floor_checked = checked;
        let misplaced = self.stale.iter().any(|s| s.contains("should read"));
        self.meets_floor = !checked
            || (self.branches_with_accepted.fraction() + 1e-12 >= floor.branch_floor
                && self.lines_with_accepted.fraction() + 1e-12 >= floor.line_floor
                && !misplaced);
    }

    /// `kernels/x.hip (op): lines 30/30 100.0%, branches 22/24 91.7% (100.0% with 2 accepted): ok`
    pub fn line(&self, floor: &Floor) -> String {
        let accepted = self.uncovered.iter().filter(|u| u.accepted.is_some()).count();
        let with =
            if accepted > 0 { format!(" ({} with {accepted} accepted)", self.branches_with_accepted.percent()) } else { String::new() };
        let verdict = if !self.floor_checked {
            "shared header, held to the floor on a run of every op".to_string()
        } else if self.meets_floor {
            "ok".to_string()
        } else {
            format!("BELOW the {:.0}% branch floor", 100.0 * floor.branch_floor)
        };
        format!(
            "{} ({}): lines {}/{} {}, branches {}/{} {}{with}: {verdict}",
            crate::text::escaped(&self.file),
            self.ops.join(", "),
            self.lines.covered,
            self.lines.total,
            self.lines.percent(),
            self.branches.covered,
            self.branches.total,
            self.branches.percent(),
        )
    }

    /// The lines under it: each uncovered item (accepted ones with their reason), then any
    /// acceptance that no longer matches.
    pub fn detail_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for u in &self.uncovered {
            match &u.accepted {
                None => out.push(format!("    {}", u.describe())),
                Some(reason) => out.push(format!("    accepted {}; {}", u.describe(), crate::text::escaped(reason))),
            }
        }
        for s in &self.stale {
            out.push(format!("    {s}"));
        }
        out
    }
}

/// One op's figures: its kernel, and each header as the op uses it.
#[derive(Clone, Debug, Serialize)]
pub struct OpCoverage {
    pub op: String,
    pub contract: String,
    pub source: String,
    pub lines: Ratio,
    pub branches: Ratio,
    pub headers: Vec<HeaderCoverage>,
}

#[derive(Clone, Debug, Serialize)]
pub struct HeaderCoverage {
    pub file: String,
    pub lines: Ratio,
    pub branches: Ratio,
}

fn ratios(counts: &BTreeMap<u32, LineCounts>) -> (Ratio, Ratio) {
    let mut lines = Ratio::default();
    let mut branches = Ratio::default();
    for c in counts.values() {
        lines.add(Ratio { covered: usize::from(c.count > 0), total: 1 });
        branches.add(Ratio { covered: c.branches.iter().filter(|&&b| b > 0).count(), total: c.branches.len() });
    }
    (lines, branches)
}

/// The whole run's figures, as the JSON report holds them.
#[derive(Debug, Serialize)]
pub struct CoverageReport {
    pub arch: String,
    pub toolchain: String,
    pub gcov: String,
    pub floor_file: String,
    pub floor: Floor,
    pub only: Vec<String>,
    pub sources: Vec<SourceCoverage>,
    pub ops: Vec<OpCoverage>,
    /// Ops with no kernel source of ours (a library serves them).
    pub ops_without_kernel: Vec<String>,
    /// What went wrong beside the figures: a kernel that did not build, a run that failed.
    pub problems: Vec<String>,
    pub lines: Ratio,
    pub branches: Ratio,
    pub branches_with_accepted: Ratio,
    pub below_floor: Vec<String>,
}

impl CoverageReport {
    pub fn summary_line(&self) -> String {
        let kernels = self.sources.iter().filter(|s| s.floor_checked).count();
        let below = self.below_floor.len();
        let mut line = format!(
            "SUMMARY coverage {} {} kernel sources: {} at or above the {:.0}% branch floor, {below} below; lines {}/{} {}, branches {}/{} {} ({} with accepted)",
            self.arch,
            kernels,
            kernels - below,
            100.0 * self.floor.branch_floor,
            self.lines.covered,
            self.lines.total,
            self.lines.percent(),
            self.branches.covered,
            self.branches.total,
            self.branches.percent(),
            self.branches_with_accepted.percent(),
        );
        if !self.problems.is_empty() {
            line.push_str(&format!("; {} problem(s)", self.problems.len()));
        }
        line
    }

    pub fn exit_code(&self) -> i32 {
        i32::from(!self.below_floor.is_empty() || !self.problems.is_empty())
    }
}

// ---------------------------------------------------------------- the run

/// What `contracts coverage` is given by the binary.
pub struct Request<'a> {
    pub settings: &'a Settings,
    /// A host backend in coverage mode.
    pub backend: &'a HostBackend,
    /// The binary and the flags that make a child run with this run's settings; the
    /// coverage run adds `--in-process --no-controls`, its own `--only` and `--report`, and
    /// `child_flag` (which makes the child's host backend build for coverage).
    pub program: PathBuf,
    pub args: Vec<std::ffi::OsString>,
    pub child_flag: &'static str,
    pub report_path: PathBuf,
}

/// An op to cover: its contract and its kernel source.
struct Target {
    op: String,
    contract: String,
    source: KernelSource,
}

fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// Runs the contracts of `request.settings` on kernels built for coverage and reports the
/// figures; returns the exit status (0: every kernel at its floor; 1: one below it, or a
/// kernel that did not build, or a record that failed under coverage).
pub fn run(request: &Request, say: &mut dyn FnMut(&str)) -> Result<i32, CoverageError> {
    let settings = request.settings;
    let root = &settings.root;
    let floor_path = root.join(FLOOR_FILE);
    let floor_text =
        std::fs::read_to_string(&floor_path).map_err(io(format!("{FLOOR_FILE} (the coverage floor, at the repository root)")))?;
    let floor = Floor::parse(&floor_text, FLOOR_FILE)?;
    let gcov = request
        .backend
        .compiler()
        .gcov()
        .ok_or_else(|| CoverageError::Build("coverage needs GCC's gcov; the host compiler is clang".into()))?;
    let gcov_version =
        Command::new(&gcov).arg("--version").output().map_err(io(format!("running {gcov} --version (gcov ships with g++)")))?;
    let gcov_identity = String::from_utf8_lossy(&gcov_version.stdout).lines().next().unwrap_or("").trim().to_string();
    let arch = request.backend.arch();
    say(&format!("kernel-contracts {}: coverage on {arch}, {}; {gcov_identity}", env!("CARGO_PKG_VERSION"), request.backend.toolchain()));

    // the contracts in scope, each with its kernel
    let mut problems = Vec::new();
    let mut scratch = RunReport::empty(&arch, "host", "", settings, settings.repeats, &[]);
    let mut printed = Vec::new();
    let gates = runner::gates_for(request.backend);
    let (contracts, _) = runner::load(settings, &arch, &gates, &mut scratch, &mut |e| {
        if let Event::ContractError(e) = e {
            printed.push(crate::report::contract_error_line(e));
        }
    });
    for line in printed {
        say(&line);
        problems.push(line);
    }
    let mut targets = Vec::new();
    let mut ops_without_kernel = Vec::new();
    for contract in &contracts {
        match runner::source_of(settings, contract, None) {
            Some(source) => targets.push(Target { op: contract.op.name.to_string(), contract: contract.file.clone(), source }),
            None => ops_without_kernel.push(contract.op.name.to_string()),
        }
    }
    if !ops_without_kernel.is_empty() {
        say(&format!("not covered (no kernel source of ours, a library serves them): {}", ops_without_kernel.join(", ")));
    }

    // build each kernel for coverage (the child finds them in the cache), on every core
    let builds = build_all(request.backend, &targets);
    let mut built: Vec<(&Target, Built)> = Vec::new();
    for (target, outcome) in targets.iter().zip(builds) {
        match outcome {
            Ok(b) => built.push((target, b)),
            Err(e) => {
                let line = format!("{}: the coverage build failed: {e}", target.source.display_path);
                say(&line);
                problems.push(line);
            }
        }
    }

    // one child runs every record; its libraries write their data into this run's folder
    let run_dir =
        tempfile::Builder::new().prefix("kernel-contracts-coverage-").tempdir().map_err(io("a folder for this run's coverage data"))?;
    let data_dir = run_dir.path().join("data");
    std::fs::create_dir_all(&data_dir).map_err(io("a folder for this run's coverage data"))?;
    if !built.is_empty() {
        let status = run_child(request, &built, run_dir.path(), &data_dir, say)?;
        if status != 0 {
            problems.push(format!("the contracts run under coverage exited with status {status} (its lines above)"));
        }
    }

    // gcov over each library's notes and data
    let mut per_op: Vec<(&Target, FileCounts)> = Vec::new();
    for (target, b) in &built {
        let Some(notes) = &b.coverage else { continue };
        match read_counts(&gcov, &notes.notes, &notes.data_name, &data_dir, &target.source.display_path) {
            Ok(counts) => per_op.push((target, counts)),
            Err(e) => {
                let line = e.to_string();
                say(&line);
                problems.push(line);
            }
        }
    }

    let report = assemble(&arch, request, &floor, gcov_identity, per_op, ops_without_kernel, problems);
    for source in &report.sources {
        say(&source.line(&floor));
        for line in source.detail_lines() {
            say(&line);
        }
    }
    for problem in &report.problems {
        if problem.starts_with("the contracts run") {
            say(problem);
        }
    }
    let written = crate::report::write_text(&request.report_path, &(serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"));
    let shown = crate::text::escaped(&display(root, &request.report_path)).into_owned();
    match &written {
        Ok(()) => say(&format!("report {shown}")),
        Err(e) => say(&format!("report NOT written to {shown}: {e}")),
    }
    say(&report.summary_line());
    Ok(if written.is_err() { 2 } else { report.exit_code() })
}

fn build_all(backend: &HostBackend, targets: &[Target]) -> Vec<Result<Built, String>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new((0..targets.len()).map(|_| None).collect::<Vec<_>>());
    let threads = engine::backend::host::worker_count().clamp(1, 8);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(target) = targets.get(i) else { break };
                    let outcome = backend.build(&target.source).map_err(|e| runner::error_chain(&e));
                    results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(outcome);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|p| p.into_inner()).into_iter().map(|r| r.unwrap_or_else(|| Err("not built".into()))).collect()
}

/// Runs the records of every built op in one child process, its lines printed as they come
/// (its SUMMARY relabelled, so that this run's SUMMARY is the only one); the child's
/// libraries write `<data_name>.gcda` into `data_dir` when it exits.
fn run_child(
    request: &Request,
    built: &[(&Target, Built)],
    run_dir: &Path,
    data_dir: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<i32, CoverageError> {
    use std::io::BufRead;
    let mut command = Command::new(&request.program);
    command.args(&request.args);
    command.args(["--in-process", "--no-controls", request.child_flag]);
    for (target, _) in built {
        command.arg("--only").arg(&target.op);
    }
    command.arg("--report").arg(run_dir.join("run.json"));
    command.env("GCOV_PREFIX", data_dir).env("GCOV_PREFIX_STRIP", GCOV_STRIP_ALL.to_string());
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = command.spawn().map_err(io("starting the contracts run under coverage"))?;
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let line = line.map_err(io("reading the contracts run's output"))?;
            match line.strip_prefix("SUMMARY ") {
                Some(rest) => say(&format!("records under coverage: {rest}")),
                None => say(&line),
            }
        }
    }
    let status = child.wait().map_err(io("waiting for the contracts run under coverage"))?;
    Ok(status.code().unwrap_or(128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)))
}

/// gcov's counts of one library: its notes copied beside its data under the data's name
/// (gcov pairs them by name), gcov run there. No data file (the library never ran) gives
/// every line at zero.
fn read_counts(gcov: &str, notes: &Path, data_name: &str, data_dir: &Path, source: &str) -> Result<FileCounts, CoverageError> {
    let copy = data_dir.join(format!("{data_name}.gcno"));
    std::fs::copy(notes, &copy).map_err(io(format!("copying the coverage notes of {source}")))?;
    let out = Command::new(gcov)
        .args(["--json-format", "--stdout", "--branch-probabilities", "--branch-counts"])
        .arg(format!("{data_name}.gcno"))
        .current_dir(data_dir)
        .output()
        .map_err(io(format!("running {gcov} for {source}")))?;
    if !out.status.success() {
        return Err(CoverageError::Gcov {
            source_file: source.to_string(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    parse_gcov_json(&String::from_utf8_lossy(&out.stdout))
        .map_err(|message| CoverageError::Gcov { source_file: source.to_string(), message })
}

fn source_text(root: &Path, file: &str) -> Vec<String> {
    let path = if Path::new(file).is_absolute() { PathBuf::from(file) } else { root.join(file) };
    std::fs::read_to_string(path).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default()
}

/// Every op's counts mapped to the kernels folder's files: each kernel source from its own
/// op, each header merged over the ops that include it.
fn assemble(
    arch: &str,
    request: &Request,
    floor: &Floor,
    gcov: String,
    per_op: Vec<(&Target, FileCounts)>,
    ops_without_kernel: Vec<String>,
    problems: Vec<String>,
) -> CoverageReport {
    let settings = request.settings;
    let root = &settings.root;
    let mut kernels: BTreeMap<String, (Vec<String>, BTreeMap<u32, LineCounts>)> = BTreeMap::new();
    let mut headers: BTreeMap<String, (BTreeSet<String>, BTreeMap<u32, LineCounts>)> = BTreeMap::new();
    let mut ops = Vec::new();
    for (target, files) in &per_op {
        let mut own = BTreeMap::new();
        let mut op_headers = Vec::new();
        for (name, counts) in files {
            let mapped =
                if *name == target.source.display_path { Some(name.clone()) } else { kernel_file(name, root, &settings.kernels_dir) };
            let Some(file) = mapped else { continue };
            if file == target.source.display_path {
                merge_into(&mut own, counts);
            } else {
                let (lines, branches) = ratios(counts);
                op_headers.push(HeaderCoverage { file: file.clone(), lines, branches });
                let entry = headers.entry(file).or_default();
                entry.0.insert(target.op.clone());
                merge_into(&mut entry.1, counts);
            }
        }
        let (lines, branches) = ratios(&own);
        ops.push(OpCoverage {
            op: target.op.clone(),
            contract: target.contract.clone(),
            source: target.source.display_path.clone(),
            lines,
            branches,
            headers: op_headers,
        });
        let entry = kernels.entry(target.source.display_path.clone()).or_default();
        entry.0.push(target.op.clone());
        merge_into(&mut entry.1, &own);
    }
    let full_run = settings.only.is_empty();
    let mut sources = Vec::new();
    for (file, (ops, counts)) in kernels {
        let mut s = figures(&file, ops, &counts, &source_text(root, &file), floor);
        s.check(floor, true);
        sources.push(s);
    }
    for (file, (ops, counts)) in headers {
        let mut s = figures(&file, ops.into_iter().collect(), &counts, &source_text(root, &file), floor);
        s.check(floor, full_run);
        sources.push(s);
    }
    let mut lines = Ratio::default();
    let mut branches = Ratio::default();
    let mut branches_with_accepted = Ratio::default();
    for s in &sources {
        lines.add(s.lines);
        branches.add(s.branches);
        branches_with_accepted.add(s.branches_with_accepted);
    }
    let below_floor = sources.iter().filter(|s| !s.meets_floor).map(|s| s.file.clone()).collect();
    CoverageReport {
        arch: arch.to_string(),
        toolchain: request.backend.toolchain(),
        gcov,
        floor_file: FLOOR_FILE.to_string(),
        floor: floor.clone(),
        only: settings.only.clone(),
        sources,
        ops,
        ops_without_kernel,
        problems,
        lines,
        branches,
        branches_with_accepted,
        below_floor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What gcov 12 writes for a library (cut down): a kernel source named by its `#line`,
    /// the shared header through the build's link, the prelude, a system header.
    const GCOV: &str = r#"{"format_version":"1","gcc_version":"12.2.0","current_working_directory":"/tmp/x","data_file":"tf_argmax-0011.gcno","files":[{"file":"kernels/tf_argmax.hip","functions":[],"lines":[{"line_number":17,"function_name":"f","count":40,"unexecuted_block":false,"branches":[{"count":10,"throw":false,"fallthrough":true},{"count":30,"throw":false,"fallthrough":false},{"count":0,"throw":false,"fallthrough":true},{"count":10,"throw":false,"fallthrough":false}]},{"line_number":33,"count":5,"unexecuted_block":false,"branches":[{"count":5,"throw":false,"fallthrough":true},{"count":0,"throw":true,"fallthrough":false}]},{"line_number":51,"count":0,"unexecuted_block":true,"branches":[{"count":0,"throw":false,"fallthrough":true},{"count":0,"throw":false,"fallthrough":false}]}]},{"file":"kernels/common.h","functions":[],"lines":[{"line_number":57,"count":3,"unexecuted_block":false,"branches":[{"count":3,"throw":false,"fallthrough":false},{"count":0,"throw":false,"fallthrough":false}]}]},{"file":"kernels/host/prelude.h","functions":[],"lines":[{"line_number":9,"count":1,"unexecuted_block":false,"branches":[]}]}]}"#;

    #[test]
    fn gcov_json_is_read_without_exception_edges() {
        let files = parse_gcov_json(GCOV).unwrap();
        let argmax = &files["kernels/tf_argmax.hip"];
        assert_eq!(argmax[&17], LineCounts { count: 40, branches: vec![10, 30, 0, 10] });
        // the call's exception edge is no branch of the source: a fallthrough alone stays
        assert_eq!(argmax[&33].branches, vec![5]);
        assert_eq!(argmax[&51], LineCounts { count: 0, branches: vec![0, 0] });
        assert!(files.contains_key("kernels/common.h"));
        assert!(parse_gcov_json("{not json").is_err());
    }

    #[test]
    fn a_line_listed_twice_adds_its_branches_and_headers_merge_by_branch() {
        let twice = r#"{"files":[{"file":"a.hip","lines":[{"line_number":3,"count":1,"branches":[{"count":1,"throw":false}]},{"line_number":3,"count":2,"branches":[{"count":0,"throw":false}]}]}]}"#;
        let files = parse_gcov_json(twice).unwrap();
        assert_eq!(files["a.hip"][&3], LineCounts { count: 3, branches: vec![1, 0] });

        let mut merged = BTreeMap::from([(5, LineCounts { count: 0, branches: vec![0, 0] })]);
        merge_into(
            &mut merged,
            &BTreeMap::from([(5, LineCounts { count: 2, branches: vec![0, 2] }), (6, LineCounts { count: 1, branches: vec![] })]),
        );
        merge_into(&mut merged, &BTreeMap::from([(5, LineCounts { count: 1, branches: vec![1, 0] })]));
        assert_eq!(merged[&5], LineCounts { count: 3, branches: vec![1, 2] });
        assert_eq!(merged[&6].count, 1);
    }

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("kernels/host")).unwrap();
        for f in ["kernels/tf_argmax.hip", "kernels/common.h", "kernels/host/prelude.h"] {
            std::fs::write(dir.path().join(f), "x\n").unwrap();
        }
        dir
    }

    #[test]
    fn gcov_names_map_to_the_kernels_folder_only() {
        let dir = repo();
        let root = dir.path();
        let kernels = root.join("kernels");
        assert_eq!(kernel_file("kernels/tf_argmax.hip", root, &kernels).as_deref(), Some("kernels/tf_argmax.hip"));
        assert_eq!(kernel_file("./kernels/common.h", root, &kernels).as_deref(), Some("kernels/common.h"));
        let absolute = root.join("kernels/common.h").display().to_string();
        assert_eq!(kernel_file(&absolute, root, &kernels).as_deref(), Some("kernels/common.h"));
        // the host prelude, system headers and files that do not exist are not kernel code
        assert_eq!(kernel_file("kernels/host/prelude.h", root, &kernels), None);
        assert_eq!(kernel_file("/usr/include/c++/12/tuple", root, &kernels), None);
        assert_eq!(kernel_file("wrap.cpp", root, &kernels), None);
    }

    fn floor(accept: &str) -> Floor {
        Floor::parse(&format!("branch_floor = 0.95\n{accept}"), "coverage.toml").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn figures_list_what_is_uncovered_and_apply_acceptances() {
        let files = parse_gcov_json(GCOV).unwrap();
        let mut text = vec![String::new(); 60];
        text[16] = "  if (a > b || (a == b && i < j)) {".into();
        text[32] = "    float x = tf_load(p, kind, i);".into();
        text[50] = "    out[row] = index == NONE ? 0 : index;".into();
        let none = floor("");
        let mut s = figures("kernels/tf_argmax.hip", vec!["tf_argmax".into()], &files["kernels/tf_argmax.hip"], &text, &none);
        assert_eq!((s.lines, s.branches), (Ratio { covered: 2, total: 3 }, Ratio { covered: 4, total: 7 }));
        let described: Vec<String> = s.uncovered.iter().map(Uncovered::describe).collect();
        assert_eq!(
            described,
            [
                "line 17 branch 3 of 4 not taken: `if (a > b || (a == b && i < j)) {`",
                "line 51 not run (nor its 2 branches): `out[row] = index == NONE ? 0 : index;`"
            ]
        );
        s.check(&none, true);
        assert!(!s.meets_floor);
        assert!(s.line(&none).ends_with("branches 4/7 57.1%: BELOW the 95% branch floor"), "{}", s.line(&none));

        let accepting = floor(
            "[[accept]]\nfile = \"kernels/tf_argmax.hip\"\nline = 51\ntext = \"index == NONE\"\nreason = \"no row is all NaN\"\n\
             [[accept]]\nfile = \"kernels/tf_argmax.hip\"\nline = 17\nbranch = 3\ntext = \"a > b\"\nreason = \"ties need equal values\"\n",
        );
        let mut s = figures("kernels/tf_argmax.hip", vec!["tf_argmax".into()], &files["kernels/tf_argmax.hip"], &text, &accepting);
        s.check(&accepting, true);
        assert_eq!(s.branches_with_accepted, Ratio { covered: 7, total: 7 });
        assert!(s.meets_floor && s.stale.is_empty());
        assert!(s.line(&accepting).contains("(100.0% with 2 accepted): ok"));
        assert!(s.detail_lines()[0].starts_with("    accepted line 17 branch 3 of 4 not taken"), "{:?}", s.detail_lines());
        assert!(s.detail_lines()[0].ends_with("; ties need equal values"));

        // an acceptance whose line now reads otherwise is said, and fails the floor
        let moved = floor("[[accept]]\nfile = \"kernels/tf_argmax.hip\"\nline = 33\ntext = \"index == NONE\"\nreason = \"r\"\n");
        let mut s = figures("kernels/tf_argmax.hip", vec!["tf_argmax".into()], &files["kernels/tf_argmax.hip"], &text, &moved);
        s.check(&Floor { branch_floor: 0.0, ..moved.clone() }, true);
        assert!(!s.meets_floor);
        assert!(s.stale[0].starts_with("accepted line 33 should read `index == NONE` but reads `float x"), "{:?}", s.stale);
    }

    #[test]
    fn the_floor_file_names_what_is_wrong() {
        let err = |text: &str| Floor::parse(text, "coverage.toml").unwrap_err().to_string();
        assert!(err("branch_floor = 95").contains("`branch_floor` = 95: a fraction"));
        assert!(err("").starts_with("coverage.toml: "));
        assert!(err("branch_floor = 0.9\nbranch_flor = 1").contains("branch_flor"));
        let missing = err("branch_floor = 0.9\n[[accept]]\nfile = \"k\"\nline = 2\ntext = \"t\"\nreason = \" \"\n");
        assert_eq!(missing, "coverage.toml: `accept[0].reason`: one line saying why no case can reach it");
        let no_text = err("branch_floor = 0.9\n[[accept]]\nfile = \"k\"\nline = 2\nreason = \"r\"\n");
        assert!(no_text.contains("text"), "{no_text}");
    }
}
