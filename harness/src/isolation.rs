//! Process isolation: each contract's records, and each control, run in a child process of
//! the `contracts` binary (as cargo-nextest runs each test). The parent gathers results as
//! they arrive; a child that crashes, runs past its time limit or loses its device context
//! costs one red record naming the cause, and what it had left runs again in a fresh
//! process (and so a fresh device context).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::backend::Backend;
use serde::{Deserialize, Serialize};

use crate::contract::{Contract, Control, Record};
use crate::gate::{Fault, Gate};
use crate::runner::{self, Event, InputCache, RecordResult, RunContext, RunReport, Settings};

/// Marks the lines of a child's standard output that carry messages; anything else a
/// kernel or a library prints there is kept as output, never parsed.
const MESSAGE_PREFIX: &str = "@@kernel-contracts ";

/// The kernel builds that fill the cache before any record runs may take this long, all of
/// them together (a cold cache of every kernel on a slow machine).
const BUILD_TIME_LIMIT: Duration = Duration::from_secs(900);

/// How much of a dead child's standard error a record keeps: the last lines, each cut.
const STDERR_LINES: usize = 20;
const STDERR_LINE_CHARS: usize = 300;

/// What a child process is asked to do: JSON on its standard input.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildJob {
    /// Build these kernel sources (path and kernel symbol) on all cores, filling the cache.
    Build { sources: Vec<(PathBuf, String)> },
    /// Run these records of one contract, in this order.
    Records { contract: PathBuf, records: Vec<String> },
    /// Run one control.
    Control { contract: PathBuf, control: PathBuf },
}

/// What a child says, one message per line of its standard output.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildMessage {
    /// A case of the record in flight is about to run (so a crash can be placed in it).
    Case(String),
    Result(Box<RecordResult>),
    /// Nothing of the job can run in this process (its contract no longer loads, the
    /// backend did not start): every record left gets this error.
    Fatal(String),
}

/// A child's last word when it cannot run its job at all.
pub fn send_fatal(out: &mut dyn Write, message: &str) -> std::io::Result<()> {
    send(out, &ChildMessage::Fatal(message.to_string()))
}

fn send(out: &mut dyn Write, message: &ChildMessage) -> std::io::Result<()> {
    let text = serde_json::to_string(message).map_err(std::io::Error::other)?;
    writeln!(out, "{MESSAGE_PREFIX}{text}")?;
    out.flush()
}

/// The child's side: called by `contracts` when it runs as a child, with the backend it
/// started from the same flags as its parent. Stops after a record that errored, so that
/// whatever the error left behind (a lost device context, a worker stuck in a kernel)
/// never touches the next record: the parent starts a fresh process for the rest.
pub fn serve(
    backend: &dyn Backend,
    reference: Option<&dyn Backend>,
    settings: &Settings,
    job: &ChildJob,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let root = &settings.root;
    let (contract_path, control_path, records) = match job {
        ChildJob::Build { sources } => {
            let sources: Vec<_> = sources.iter().map(|(path, symbol)| runner::kernel_source(settings, path, symbol)).collect();
            // the cache is what counts: a source that fails here fails again, reported, in the
            // child of its record
            runner::build_all(backend, &sources);
            return Ok(());
        }
        ChildJob::Records { contract, records } => (contract, None, records.clone()),
        ChildJob::Control { contract, control } => (contract, Some(control), Vec::new()),
    };
    let contract = match Contract::load(contract_path, &display(root, contract_path)) {
        Ok(contract) => contract,
        Err(e) => return send(out, &ChildMessage::Fatal(format!("the contract no longer loads: {e}"))),
    };
    let control = match control_path.map(|path| Control::load(path, &display(root, path), root)).transpose() {
        Ok(control) => control,
        Err(e) => return send(out, &ChildMessage::Fatal(format!("the control no longer loads: {e}"))),
    };
    let records = match &control {
        Some(control) => vec![control.record.clone()],
        None => records,
    };
    let mut chosen: Vec<&Record> = Vec::new();
    for name in &records {
        match contract.record(name) {
            Some(record) => chosen.push(record),
            None => return send(out, &ChildMessage::Fatal(format!("{} no longer has a record `{name}`", contract.file))),
        }
    }

    let source = runner::source_of(settings, &contract, control.as_ref());
    let sources: Vec<_> = source.iter().cloned().collect();
    let modules = runner::build_all(backend, &sources);
    let reference_modules = reference.map(|r| runner::build_all(r, &sources)).unwrap_or_default();
    let module = match &source {
        Some(source) => modules[&source.path].clone().map(Some),
        None => Ok(None),
    };
    let gates_run = runner::gates_for(backend);
    let writer: Mutex<&mut dyn Write> = Mutex::new(out);
    let on_case = |case: &str| {
        // a lost pipe means the parent is gone; the next result's write says so
        let _ = send(&mut **writer.lock().unwrap(), &ChildMessage::Case(case.to_string()));
    };
    let context =
        RunContext { backend, settings, gates_run: &gates_run, reference, reference_modules: &reference_modules, on_case: Some(&on_case) };
    let mut inputs = InputCache::default();
    for record in chosen {
        let result = runner::run_record(&context, &contract, record, &module, control.as_ref(), &mut inputs);
        let stop = result.error.is_some();
        send(&mut **writer.lock().unwrap(), &ChildMessage::Result(Box::new(result)))?;
        if stop {
            break;
        }
    }
    Ok(())
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
}

/// The whole run, each contract and each control in its own child process, one at a
/// time (every child has the machine's cores, or the GPU, to itself).
pub fn run_isolated(info: &BackendInfo, command: &ChildCommand, settings: &Settings, on_event: &mut dyn FnMut(&Event)) -> RunReport {
    let started = Instant::now();
    on_event(&Event::Started { arch: &info.arch, backend: &info.name, toolchain: &info.toolchain });
    let mut report = RunReport::empty(&info.arch, &info.name, &info.toolchain, settings, settings.repeats, &info.gates_run);
    let (contracts, controls) = runner::load(settings, &info.arch, &info.gates_run, &mut report, on_event);

    // every kernel built first, on all cores, in one child: the record children then load
    // from the cache. A build that fails or crashes here is built again, and reported, by
    // the record's own child.
    let build_started = Instant::now();
    let mut sources: Vec<(PathBuf, String)> =
        runner::kernel_sources(settings, &contracts, &controls).into_iter().map(|s| (s.path, s.kernels[0].clone())).collect();
    sources.dedup();
    if !sources.is_empty() {
        let mut child = Supervised::start(command, "build", &ChildJob::Build { sources: sources.clone() });
        if let Ok(child) = &mut child {
            child.finish_within(BUILD_TIME_LIMIT);
        }
    }
    report.timing.build_seconds = build_started.elapsed().as_secs_f64();
    report.timing.modules_built = sources.len();

    let run_started = Instant::now();
    // the units of work in report order: each contract's records, then each control
    let mut units: Vec<(&Contract, Option<&Control>, Vec<&Record>)> =
        contracts.iter().map(|contract| (contract, None, contract.records.iter().collect())).collect();
    for control in &controls {
        let contract = contracts.iter().find(|k| k.op.name == control.contract).unwrap();
        units.push((contract, Some(control), vec![contract.record(&control.record).unwrap()]));
    }
    // `jobs` children at a time; results are reported in unit order whatever order the
    // children finish in (those of the unit being reported as they arrive)
    let next_unit = std::sync::atomic::AtomicUsize::new(0);
    let (sender, results) = mpsc::channel::<(usize, Option<RecordResult>)>();
    std::thread::scope(|scope| {
        for _ in 0..settings.jobs.clamp(1, units.len().max(1)) {
            let sender = sender.clone();
            let (units, next_unit) = (&units, &next_unit);
            scope.spawn(move || {
                loop {
                    let index = next_unit.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((contract, control, records)) = units.get(index) else { break };
                    let timeout = time_limit(settings, contract, *control);
                    supervise(command, settings, info, contract, *control, records.clone(), timeout, &mut |result| {
                        let _ = sender.send((index, Some(result)));
                    });
                    let _ = sender.send((index, None));
                }
            });
        }
        drop(sender);
        let mut reporting = 0;
        let mut waiting: Vec<Vec<RecordResult>> = vec![Vec::new(); units.len()];
        let mut finished = vec![false; units.len()];
        let mut report_result = |result: RecordResult| {
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
                Some(result) if index == reporting => report_result(result),
                Some(result) => waiting[index].push(result),
                None => finished[index] = true,
            }
            while reporting < units.len() && finished[reporting] {
                reporting += 1;
                if let Some(next) = waiting.get_mut(reporting) {
                    for result in next.drain(..) {
                        report_result(result);
                    }
                }
            }
        }
    });
    report.timing.run_seconds = run_started.elapsed().as_secs_f64();
    report.timing.total_seconds = started.elapsed().as_secs_f64();
    report
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

/// Runs `records` of `contract` (or its `control`) in child processes until each has a
/// result: one that did not come back gets a red result naming why.
#[allow(clippy::too_many_arguments)]
fn supervise(
    command: &ChildCommand,
    settings: &Settings,
    info: &BackendInfo,
    contract: &Contract,
    control: Option<&Control>,
    records: Vec<&Record>,
    timeout: Duration,
    emit: &mut dyn FnMut(RecordResult),
) {
    let mut remaining: VecDeque<&Record> = records.into();
    let label = match control {
        Some(c) => format!("control {}", c.file),
        None => contract.op.name.to_string(),
    };
    let failed = |record: &Record, fault: Option<Fault>, error: String, seconds: f64| {
        runner::faulted_result(contract, record, control, &info.gates_run, &info.arch, (fault, error), seconds)
    };
    while !remaining.is_empty() {
        let job = match control {
            Some(c) => ChildJob::Control { contract: absolute(settings, &contract.file), control: absolute(settings, &c.file) },
            None => ChildJob::Records {
                contract: absolute(settings, &contract.file),
                records: remaining.iter().map(|r| r.name.clone()).collect(),
            },
        };
        let mut child = match Supervised::start(command, &label, &job) {
            Ok(child) => child,
            Err(e) => {
                for record in remaining.drain(..) {
                    emit(failed(record, None, format!("could not start a child process for it: {e}"), 0.0));
                }
                return;
            }
        };
        let mut item_started = Instant::now();
        let mut case: Option<String> = None;
        let mut stopped_on_error = false;
        let ending = loop {
            let deadline = item_started + timeout;
            match child.next_message(deadline) {
                Received::Message(ChildMessage::Case(c)) => case = Some(c),
                Received::Message(ChildMessage::Result(result)) => {
                    let expected = remaining.front().map(|r| r.name.as_str());
                    if expected != Some(result.record.as_str()) {
                        // never trust a result for a record it was not the child's turn to run
                        child.kill();
                        break Ending::Protocol(format!(
                            "its process reported record `{}` while `{}` was running",
                            result.record,
                            expected.unwrap_or("nothing")
                        ));
                    }
                    remaining.pop_front();
                    stopped_on_error = result.error.is_some();
                    emit(*result);
                    item_started = Instant::now();
                    case = None;
                }
                Received::Message(ChildMessage::Fatal(message)) => {
                    for record in remaining.drain(..) {
                        emit(failed(record, None, message.clone(), item_started.elapsed().as_secs_f64()));
                    }
                }
                Received::End => break Ending::Exited,
                Received::TimedOut => {
                    child.kill();
                    break Ending::TimedOut;
                }
            }
        };
        let status = child.wait();
        let Some(record) = remaining.pop_front() else { continue };
        let seconds = item_started.elapsed().as_secs_f64();
        let place = case.map(|c| format!(" in case {c}")).unwrap_or_default();
        let stderr = child.stderr_tail();
        let with_stderr = |text: String| {
            if stderr.is_empty() { text } else { format!("{text}\nits standard error ended with:\n{}", stderr.join("\n")) }
        };
        match (ending, status) {
            (Ending::TimedOut, _) => {
                let error = with_stderr(format!("timed out after {} s{place}: its process was killed", timeout.as_secs()));
                emit(failed(record, Some(Fault::Timeout), error, seconds));
            }
            (Ending::Protocol(why), _) => emit(failed(record, None, with_stderr(why), seconds)),
            (Ending::Exited, Ok(status)) if status.success() && stopped_on_error => remaining.push_front(record),
            (Ending::Exited, Ok(status)) => {
                let cause = crash_cause(status);
                // ROCm's runtime aborts the process on a GPU memory fault and says so on stderr
                let fault = if stderr.iter().any(|l| l.contains("Memory access fault")) { Fault::DeviceFault } else { Fault::Crash };
                emit(failed(record, Some(fault), with_stderr(format!("{cause}{place}")), seconds));
            }
            (Ending::Exited, Err(e)) => {
                emit(failed(record, Some(Fault::Crash), format!("its process could not be waited for: {e}"), seconds))
            }
        }
    }
}

/// Reports name files relative to the repository (as loaded); a child is given them whole.
fn absolute(settings: &Settings, file: &str) -> PathBuf {
    settings.root.join(file)
}

/// `crashed: SIGSEGV`, `crashed: exit status 101`.
fn crash_cause(status: ExitStatus) -> String {
    match (status.signal(), status.code()) {
        (Some(signal), _) => format!("crashed: {}", signal_name(signal)),
        (None, Some(0)) => "its process ended without a result".to_string(),
        (None, Some(code)) => format!("crashed: exit status {code}"),
        (None, None) => format!("crashed: {status}"),
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
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGXCPU => "SIGXCPU",
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

enum Ending {
    Exited,
    TimedOut,
    Protocol(String),
}

enum Received {
    Message(ChildMessage),
    End,
    TimedOut,
}

enum Line {
    Text(String),
    End,
}

/// A child process with its output read on two threads: messages from standard output as
/// they come, the tail of standard error for the record it crashes in.
struct Supervised {
    child: Child,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    stderr_done: Receiver<()>,
    ended: bool,
}

impl Supervised {
    fn start(command: &ChildCommand, label: &str, job: &ChildJob) -> std::io::Result<Supervised> {
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .arg(CHILD_FLAG)
            .arg(label)
            .env("KERNEL_CONTRACTS_PARENT", std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // its own process group: a timeout kills the child and any compiler it started
            .process_group(0)
            .spawn()?;
        let job = serde_json::to_vec(job).map_err(std::io::Error::other)?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        // a child that dies before reading its job is seen by its exit status
        let _ = stdin.write_all(&job);
        drop(stdin);

        let (line_sender, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if line_sender.send(Line::Text(String::from_utf8_lossy(&line).trim_end().to_string())).is_err() {
                            return;
                        }
                    }
                }
            }
            let _ = line_sender.send(Line::End);
        });
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let (done_sender, stderr_done) = mpsc::channel();
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let tail = stderr.clone();
        std::thread::spawn(move || {
            let keep = |line: &[u8]| {
                let mut tail = tail.lock().unwrap();
                tail.push_back(String::from_utf8_lossy(line).chars().take(STDERR_LINE_CHARS).collect());
                if tail.len() > STDERR_LINES {
                    tail.pop_front();
                }
            };
            let mut bytes = Vec::new();
            let mut chunk = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                bytes.extend_from_slice(&chunk[..n]);
                // keep whole lines, the last ones only
                while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
                    keep(&bytes[..end]);
                    bytes.drain(..=end);
                }
            }
            if !bytes.is_empty() {
                keep(&bytes);
            }
            let _ = done_sender.send(());
        });
        Ok(Supervised { child, lines, stderr, stderr_done, ended: false })
    }

    /// The next message, the end of the child's output, or the deadline passing.
    fn next_message(&mut self, deadline: Instant) -> Received {
        loop {
            if self.ended {
                return Received::End;
            }
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(wait) {
                Ok(Line::Text(text)) => {
                    if let Some(json) = text.strip_prefix(MESSAGE_PREFIX)
                        && let Ok(message) = serde_json::from_str::<ChildMessage>(json)
                    {
                        return Received::Message(message);
                    }
                    // anything else on stdout (a kernel's printf) is not ours to read
                }
                Ok(Line::End) | Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Received::End;
                }
                Err(RecvTimeoutError::Timeout) => return Received::TimedOut,
            }
        }
    }

    /// The whole process group, so a compiler the child started goes too.
    fn kill(&mut self) {
        // SAFETY: signals the process group this child leads (process_group(0) at spawn)
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.kill();
    }

    fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait();
        // its standard error is read to the end (or for at most a second, should a
        // grandchild still hold the pipe)
        let _ = self.stderr_done.recv_timeout(Duration::from_secs(1));
        status
    }

    /// Waits for the child to end, killing it after `limit`; messages are not needed.
    fn finish_within(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            match self.next_message(deadline) {
                Received::Message(_) => {}
                Received::End => break,
                Received::TimedOut => {
                    self.kill();
                    break;
                }
            }
        }
        let _ = self.wait();
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lock().unwrap().iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::Metrics;

    #[test]
    fn a_dead_child_is_named_by_its_signal_or_exit_status() {
        assert_eq!(crash_cause(ExitStatus::from_raw(libc::SIGSEGV)), "crashed: SIGSEGV");
        assert_eq!(crash_cause(ExitStatus::from_raw(libc::SIGABRT)), "crashed: SIGABRT");
        assert_eq!(crash_cause(ExitStatus::from_raw(libc::SIGKILL)), "crashed: SIGKILL");
        assert_eq!(crash_cause(ExitStatus::from_raw(101 << 8)), "crashed: exit status 101");
        assert_eq!(crash_cause(ExitStatus::from_raw(0)), "its process ended without a result");
        assert_eq!(signal_name(63), "signal 63");
    }

    fn settings(timeout_seconds: u64) -> Settings {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        Settings {
            contracts_dir: root.join("contracts"),
            controls_dir: root.join("controls"),
            kernels_dir: root.join("kernels"),
            root,
            only: Vec::new(),
            run_controls: true,
            seed: 1,
            repeats: 3,
            strict_limits: false,
            timeout_seconds,
            isolated: true,
            jobs: 1,
        }
    }

    #[test]
    fn the_time_limit_is_the_controls_else_the_contracts_else_the_runs() {
        let settings = settings(30);
        let text = std::fs::read_to_string(settings.contracts_dir.join("tf_add.toml")).unwrap();
        let mut contract = Contract::parse("contracts/tf_add.toml", &text).unwrap();
        assert_eq!(time_limit(&settings, &contract, None), Duration::from_secs(30));
        contract.timeout_seconds = Some(90);
        assert_eq!(time_limit(&settings, &contract, None), Duration::from_secs(90));
        let control =
            Control::load(&settings.controls_dir.join("faults/never_returns.toml"), "never_returns.toml", &settings.root).unwrap();
        assert_eq!(time_limit(&settings, &contract, Some(&control)), Duration::from_secs(3));
    }

    #[test]
    fn a_result_crosses_the_pipe_unchanged_even_with_non_finite_figures() {
        let settings = settings(30);
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
        });
        let mut wire = Vec::new();
        send(&mut wire, &ChildMessage::Result(Box::new(result.clone()))).unwrap();
        let line = String::from_utf8(wire).unwrap();
        let json = line.trim_end().strip_prefix(MESSAGE_PREFIX).expect("prefixed");
        let ChildMessage::Result(back) = serde_json::from_str(json).unwrap() else { panic!("not a result: {line}") };
        assert_eq!(back.cases[0].seeds["a"], u64::MAX);
        assert!(back.cases[0].outputs["out"].max_abs_error.is_nan());
        assert_eq!(
            (back.fault, back.error.as_deref(), back.outcome),
            (Some(Fault::Crash), Some("crashed: SIGSEGV"), runner::Outcome::Error)
        );
        assert_eq!(
            serde_json::to_string(&back.cases[0].cross_backend).unwrap(),
            serde_json::to_string(&result.cases[0].cross_backend).unwrap()
        );
    }
}
