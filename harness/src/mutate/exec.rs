//! Running mutants: each in a copy of the kernels folder with its one change, through the
//! `contracts` binary on its op's records only (`--fail-fast`, one child at a time), several
//! mutants at once, all sharing one kernel cache (keyed by content, so that is safe). On
//! the host backend a mutant is first built here: one that does not build is counted apart,
//! and one whose code is byte-identical to the original's is dropped as equivalent.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use engine::backend::KernelSource;
use engine::backend::host::HostCompiler;
use object::{Object, ObjectSection};

use super::{COMMON_HEADER, MutantResult, MutateError, Outcome, Target, op_of};
use crate::mutate::Mutant;

/// The ops a `common.h` mutant runs first: tf_cast converts every type through the
/// header's helpers, so most header mutants die there and the other ops are never run.
pub const HEADER_FIRST_OPS: &[&str] = &["tf_cast"];

/// A mutant's record time limit: this many times its op's slowest record in the unmutated
/// run, and never below [`MIN_RECORD_SECONDS`].
pub const TIME_FACTOR: f64 = 5.0;
pub const MIN_RECORD_SECONDS: u64 = 10;

/// How mutants are run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `contracts` binary.
    pub program: PathBuf,
    pub contracts_dir: PathBuf,
    /// The unmutated kernels.
    pub kernels_dir: PathBuf,
    pub cache_dir: PathBuf,
    /// `host`, `cuda`, `hip` (the identical-code check runs on the host only).
    pub backend: String,
    pub warp_size: u32,
    /// Mutants at a time.
    pub jobs: usize,
    /// Where each mutant's kernels folder and report are written (removed after each).
    pub work: PathBuf,
    /// More flags for every run (`--workers N`).
    pub extra_args: Vec<OsString>,
}

/// An op's records in the unmutated run.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpTime {
    pub slowest_record: f64,
    pub all_records: f64,
}

/// A finished `contracts` run: its exit status (None when it was killed at its cap) and its
/// JSON report, if written.
struct Finished {
    status: Option<i32>,
    report: Option<serde_json::Value>,
    output: String,
}

fn run_contracts(
    plan: &Plan,
    root: &Path,
    kernels: &Path,
    ops: &[String],
    args: &[OsString],
    cap: Duration,
) -> Result<Finished, MutateError> {
    let report = root.join("report.json");
    let log = root.join("output.txt");
    let _ = std::fs::remove_file(&report);
    let mut command = Command::new(&plan.program);
    command
        .arg("--backend")
        .arg(&plan.backend)
        .arg("--root")
        .arg(root)
        .arg("--contracts")
        .arg(&plan.contracts_dir)
        .arg("--kernels")
        .arg(kernels)
        .arg("--cache-dir")
        .arg(&plan.cache_dir)
        .arg("--report")
        .arg(&report)
        .arg("--warp-size")
        .arg(plan.warp_size.to_string())
        .arg("--no-controls")
        .args(args)
        .args(&plan.extra_args);
    for op in ops {
        command.arg("--only").arg(op);
    }
    command.stdin(Stdio::null()).stdout(std::fs::File::create(&log)?).stderr(std::fs::File::create(root.join("stderr.txt"))?);
    let mut child = command.spawn().map_err(|e| MutateError::Run(format!("starting {}: {e}", plan.program.display())))?;
    let deadline = Instant::now() + cap;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status.code();
        }
        if Instant::now() >= deadline {
            // SIGTERM: the run ends its children and writes what finished; then SIGKILL
            // SAFETY: kill() on the pid of a child this process started and has not reaped
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let grace = Instant::now() + Duration::from_secs(10);
            while child.try_wait()?.is_none() && Instant::now() < grace {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let report = std::fs::read_to_string(&report).ok().and_then(|text| serde_json::from_str(&text).ok());
    let mut output = std::fs::read_to_string(&log).unwrap_or_default();
    output.push_str(&std::fs::read_to_string(root.join("stderr.txt")).unwrap_or_default());
    Ok(Finished { status, report, output })
}

fn records(report: &serde_json::Value) -> &[serde_json::Value] {
    report.get("records").and_then(|r| r.as_array()).map_or(&[], |v| v.as_slice())
}

fn text<'a>(v: &'a serde_json::Value, key: &str) -> &'a str {
    v.get(key).and_then(|s| s.as_str()).unwrap_or("")
}

/// Runs the selected ops unmutated (all must pass) and times each op's records.
pub fn baseline(plan: &Plan, ops: &[String]) -> Result<HashMap<String, OpTime>, MutateError> {
    let root = plan.work.join("baseline");
    std::fs::create_dir_all(&root)?;
    let args: Vec<OsString> = vec!["--jobs".into(), plan.jobs.max(1).to_string().into()];
    let finished = run_contracts(plan, &root, &plan.kernels_dir, ops, &args, Duration::from_secs(3600))?;
    let Some(report) = finished.report else {
        return Err(MutateError::Baseline(format!("its run wrote no report: {}", tail(&finished.output))));
    };
    let mut times: HashMap<String, OpTime> = HashMap::new();
    for r in records(&report) {
        if matches!(text(r, "outcome"), "fail" | "error") {
            return Err(MutateError::Baseline(format!(
                "{} ({}) is {}: {}",
                text(r, "op"),
                text(r, "record"),
                text(r, "outcome"),
                tail(&finished.output)
            )));
        }
        let seconds = r.get("seconds").and_then(|s| s.as_f64()).unwrap_or(0.0);
        let t = times.entry(text(r, "op").to_string()).or_default();
        t.slowest_record = t.slowest_record.max(seconds);
        t.all_records += seconds;
    }
    if finished.status != Some(0) {
        return Err(MutateError::Baseline(format!("its run exited {:?}: {}", finished.status, tail(&finished.output))));
    }
    Ok(times)
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().rev().take(4).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// How a red record killed: its fault, `error`, or its first red gate; with its message.
fn kill_of(r: &serde_json::Value) -> (String, String) {
    let error = text(r, "error");
    if let Some(fault) = r.get("fault").and_then(|f| f.as_str()) {
        return (fault.to_string(), first_line(error));
    }
    if !error.is_empty() {
        return ("error".into(), first_line(error));
    }
    let failure = r.get("failures").and_then(|f| f.as_array()).and_then(|f| f.first());
    match failure {
        Some(f) => (text(f, "gate").to_string(), first_line(f.get("failure").map_or("", |x| text(x, "message")))),
        None => ("error".into(), "red with no failure named".into()),
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > 240 { format!("{}...", line.chars().take(240).collect::<String>()) } else { line.to_string() }
}

/// The code of a built library: its allocated code and constant sections, debug info left out.
fn code_of(library: &Path) -> Result<Code, String> {
    let bytes = std::fs::read(library).map_err(|e| format!("{}: {e}", library.display()))?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{}: {e}", library.display()))?;
    let mut out = Vec::new();
    for section in file.sections() {
        let name = section.name().unwrap_or("").to_string();
        if name.starts_with(".text") || name.starts_with(".rodata") || name.starts_with(".data") {
            out.push((name, section.data().map_err(|e| e.to_string())?.to_vec()));
        }
    }
    Ok(out)
}

/// A built library's code sections, by name.
type Code = Vec<(String, Vec<u8>)>;

/// Host builds of the originals, for the identical-code check.
struct Builds {
    compiler: HostCompiler,
    originals: Mutex<HashMap<String, Result<Code, String>>>,
}

impl Builds {
    fn source(kernels: &Path, op: &str) -> Option<KernelSource> {
        let spec = engine::ops::find(op)?;
        let (source, symbol) = (spec.source?, spec.symbol?);
        Some(KernelSource {
            path: kernels.join(source),
            display_path: format!("kernels/{source}"),
            kernels: vec![symbol.to_string()],
            include_dirs: vec![kernels.to_path_buf()],
        })
    }

    fn build(&self, plan: &Plan, kernels: &Path, op: &str) -> Result<Code, String> {
        let Some(source) = Builds::source(kernels, op) else { return Ok(Vec::new()) };
        let built =
            self.compiler.build(&source, &kernels.join("host/prelude.h"), &plan.cache_dir, plan.warp_size).map_err(|e| e.to_string())?;
        code_of(&built.library)
    }

    fn original(&self, plan: &Plan, op: &str) -> Result<Code, String> {
        if let Some(found) = self.originals.lock().unwrap().get(op) {
            return found.clone();
        }
        let built = self.build(plan, &plan.kernels_dir, op);
        self.originals.lock().unwrap().insert(op.to_string(), built.clone());
        built
    }

    /// Did not build (with why), identical code for every op, or neither.
    fn judge(&self, plan: &Plan, kernels: &Path, ops: &[String]) -> Option<Outcome> {
        for op in ops {
            let mutated = match self.build(plan, kernels, op) {
                Ok(code) => code,
                Err(message) => return Some(Outcome::DidNotCompile { message: first_line(&message) }),
            };
            match self.original(plan, op) {
                Ok(original) if original == mutated => continue,
                _ => return None,
            }
        }
        Some(Outcome::IdenticalCode)
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &to.join(entry.file_name()))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Runs one mutant: its kernels folder, the build checks, then its ops' records in stages.
fn run_one(
    plan: &Plan,
    builds: Option<&Builds>,
    target: &Target,
    times: &HashMap<String, OpTime>,
    index: usize,
    mutant: &Mutant,
) -> MutantResult {
    let started = Instant::now();
    let outcome = (|| -> Result<Outcome, MutateError> {
        let root = plan.work.join(format!("m{index:04}"));
        let _ = std::fs::remove_dir_all(&root);
        let kernels = root.join("kernels");
        copy_dir(&plan.kernels_dir, &kernels)?;
        let name = mutant.file.trim_start_matches("kernels/");
        let original = std::fs::read_to_string(kernels.join(name))?;
        std::fs::write(kernels.join(name), mutant.apply(&original))?;
        let outcome = match builds.and_then(|b| b.judge(plan, &kernels, &target.ops)) {
            Some(outcome) => outcome,
            None => run_stages(plan, &root, &kernels, target, times)?,
        };
        let _ = std::fs::remove_dir_all(&root);
        Ok(outcome)
    })()
    .unwrap_or_else(|e| Outcome::NotJudged { why: e.to_string() });
    MutantResult {
        name: mutant.name(),
        mutant: mutant.clone(),
        op: op_of(&mutant.file),
        outcome,
        equivalent: None,
        known_gap: None,
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn run_stages(plan: &Plan, root: &Path, kernels: &Path, target: &Target, times: &HashMap<String, OpTime>) -> Result<Outcome, MutateError> {
    let stages: Vec<Vec<String>> = if target.file.ends_with(COMMON_HEADER) {
        let (first, rest): (Vec<String>, Vec<String>) = target.ops.iter().cloned().partition(|op| HEADER_FIRST_OPS.contains(&op.as_str()));
        [first, rest].into_iter().filter(|s| !s.is_empty()).collect()
    } else {
        vec![target.ops.clone()]
    };
    for ops in stages {
        let time = |op: &String| times.get(op).copied().unwrap_or_default();
        let record_limit = ops
            .iter()
            .map(|op| ((time(op).slowest_record * TIME_FACTOR).ceil() as u64).max(MIN_RECORD_SECONDS))
            .max()
            .unwrap_or(MIN_RECORD_SECONDS);
        let all: f64 = ops.iter().map(|op| time(op).all_records).sum();
        // the run's own start and kernel builds beside the records' limits
        let cap = Duration::from_secs_f64(all * TIME_FACTOR + record_limit as f64 + 120.0);
        let args: Vec<OsString> =
            vec!["--fail-fast".into(), "--jobs".into(), "1".into(), "--timeout".into(), record_limit.to_string().into()];
        let finished = run_contracts(plan, root, kernels, &ops, &args, cap)?;
        let Some(report) = &finished.report else {
            return Ok(match finished.status {
                None => Outcome::Killed {
                    gate: "timeout".into(),
                    record: ops.join(", "),
                    message: format!("the run passed its cap of {} s", cap.as_secs()),
                },
                Some(code) => Outcome::NotJudged { why: format!("the run exited {code} without a report: {}", tail(&finished.output)) },
            });
        };
        if let Some(red) = records(report).iter().find(|r| matches!(text(r, "outcome"), "fail" | "error")) {
            let (gate, message) = kill_of(red);
            let record = format!("{} ({})", text(red, "op"), text(red, "record"));
            // a GPU backend builds in the run: a source that does not compile is not a kill
            if gate == "error" && message.contains("compil") {
                return Ok(Outcome::DidNotCompile { message });
            }
            return Ok(Outcome::Killed { gate, record, message });
        }
        if finished.status.is_none() {
            return Ok(Outcome::Killed {
                gate: "timeout".into(),
                record: ops.join(", "),
                message: format!("the run passed its cap of {} s", cap.as_secs()),
            });
        }
        if finished.status != Some(0) {
            return Ok(Outcome::NotJudged {
                why: format!("the run exited {:?} with every record green: {}", finished.status, tail(&finished.output)),
            });
        }
    }
    Ok(Outcome::Survived)
}

/// Runs `chosen` mutants, `plan.jobs` at a time; `on_done` hears each as it finishes (with
/// how many have). Results come back in `chosen`'s order.
pub fn run_mutants(
    plan: &Plan,
    targets: &[Target],
    chosen: &[&Mutant],
    times: &HashMap<String, OpTime>,
    on_done: &(dyn Fn(usize, &MutantResult) + Sync),
) -> Result<Vec<MutantResult>, MutateError> {
    std::fs::create_dir_all(&plan.work)?;
    let builds = if plan.backend == "host" {
        Some(Builds {
            compiler: HostCompiler::discover().map_err(|e| MutateError::Run(e.to_string()))?,
            originals: Mutex::new(HashMap::new()),
        })
    } else {
        None
    };
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<MutantResult>>> = Mutex::new(vec![None; chosen.len()]);
    std::thread::scope(|scope| {
        for _ in 0..plan.jobs.clamp(1, chosen.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(mutant) = chosen.get(i) else { break };
                    let target = targets.iter().find(|t| t.file == mutant.file).expect("every mutant is of a target");
                    let result = run_one(plan, builds.as_ref(), target, times, i, mutant);
                    on_done(done.fetch_add(1, Ordering::Relaxed) + 1, &result);
                    results.lock().unwrap()[i] = Some(result);
                }
            });
        }
    });
    Ok(results.into_inner().unwrap().into_iter().map(|r| r.expect("every mutant ran")).collect())
}
