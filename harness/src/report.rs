//! Reporters: record lines, the SUMMARY line, the JSON report, and the one function that
//! decides the exit status. They read the runner's results; they decide nothing else.

use std::path::Path;

use serde::Serialize;

use crate::gate::{Fault, Gate, Planted};
use crate::runner::{ContractErrorView, Outcome, RecordResult, RunReport};

/// `nonfinite, repeat and shapes`
fn gate_list(gates: &[Gate]) -> String {
    let names: Vec<&str> = gates.iter().map(|g| g.name()).collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn title(r: &RecordResult) -> String {
    match &r.control {
        Some(c) => format!("{} ({})", r.op, c.bug),
        None => format!("{} ({})", r.op, r.record),
    }
}

/// How close the outputs came to the oracle: `exact`, or the largest error per output. An
/// output a known finding covered gets no claim: it failed a gate, however close it came.
fn accuracy(r: &RecordResult) -> String {
    let parts: Vec<String> = r
        .tolerances
        .iter()
        .map(|(output, tolerance)| {
            if r.covered_tensors.contains(output) {
                return format!("{output} not claimed (known finding)");
            }
            let max_ulp = r.cases.iter().filter_map(|c| c.outputs.get(output)).map(|m| m.max_ulp).max().unwrap_or(0);
            let max_abs = r.cases.iter().filter_map(|c| c.outputs.get(output)).map(|m| m.max_abs_error).fold(0.0, f64::max);
            let figure = if tolerance == "exact" {
                "exact".to_string()
            } else if tolerance.starts_with("ulp") {
                format!("max {max_ulp} ulp within {tolerance}")
            } else {
                // the largest error and the largest ulp distance are often different elements
                // (ulps grow near zero), so they are said as two maxima, not one element's
                format!("max error {max_abs:.2e}, max {max_ulp} ulp, within {tolerance}")
            };
            if r.tolerances.len() > 1 { format!("{output} {figure}") } else { figure }
        })
        .collect();
    parts.join(", ")
}

fn failure_text(f: &crate::runner::GateFailure) -> String {
    let more = match f.failing_cases.len() {
        0 | 1 => String::new(),
        2 => " (and 1 more case)".to_string(),
        n => format!(" (and {} more cases)", n - 1),
    };
    let mut text = format!("case {}{more}: {}: {}", f.case, f.tensor, f.failure.message);
    for also in &f.also {
        text.push_str("; ");
        text.push_str(also);
    }
    text
}

/// One line per record and per control.
pub fn record_line(r: &RecordResult) -> String {
    let title = title(r);
    if let Some(control) = &r.control {
        let gate = match control.planted {
            Planted::Gate(gate) => gate,
            Planted::Fault(fault) => return fault_control_line(r, &title, fault),
        };
        let others: Vec<Gate> = r.failures.iter().map(|f| f.gate).filter(|g| *g != gate).collect();
        let also = if others.is_empty() { String::new() } else { format!("; also red at {}", gate_list(&others)) };
        return match r.outcome {
            Outcome::RedAsPlanted => {
                let planted = r.failures.iter().find(|f| f.gate == gate).unwrap();
                format!("{title} red at {gate} as planted: {}{also}", failure_text(planted))
            }
            _ => match &r.error {
                Some(e) => format!("{title} MISSED: planted to go red at {gate}, but no gate ran: {}", first_line(e)),
                None if others.is_empty() => {
                    format!("{title} MISSED: green at {gate} where it was planted to go red, and green at every gate")
                }
                None => format!("{title} MISSED: green at {gate} where it was planted to go red{also}"),
            },
        };
    }
    let mut summary = if r.cases.is_empty() {
        String::new()
    } else {
        format!("{} cases, {} elements, {}", r.cases.len(), crate::format::count(r.elements()), accuracy(r))
    };
    if let Some(limits) = &r.limits {
        if !summary.is_empty() {
            summary.push_str("; ");
        }
        summary.push_str(&limits.summary(&limits.arch));
    }
    if r.gates_run == [Gate::Limits] {
        summary.push_str("; gates 1-3 not run (no device)");
    }
    match r.outcome {
        Outcome::Pass => format!("{title} pass {}; {summary}", gate_list(&r.gates_run)),
        Outcome::KnownFinding => {
            format!("{title} pass {} with known finding at {}; {summary}", gate_list(&r.gates_run), r.findings.join("; "))
        }
        Outcome::Error => format!("{title} ERROR: {}", first_line(r.error.as_deref().unwrap_or(""))),
        _ => {
            let mut parts: Vec<String> = Vec::new();
            for (i, f) in r.failures.iter().enumerate() {
                let lead = if i == 0 { "FAIL at" } else { "also at" };
                parts.push(format!("{lead} {}: {}", f.gate, failure_text(f)));
            }
            parts.extend(r.uncovered.iter().cloned());
            parts.extend(r.stale_findings.iter().map(|s| format!("FAIL: {s}")));
            format!("{title} {}", parts.join("; "))
        }
    }
}

/// A control planted to crash, time out or fault the device: red when its process or context
/// went down that way, with the cause the runner saw.
fn fault_control_line(r: &RecordResult, title: &str, planted: Fault) -> String {
    let cause = r.error.as_deref().map(first_line).unwrap_or("");
    match (r.outcome.clone(), r.fault) {
        (Outcome::RedAsPlanted, _) => format!("{title} red at {planted} as planted: {cause}"),
        (_, Some(other)) => format!("{title} MISSED: planted to end in a {planted}, but it ended in a {other}: {cause}"),
        (_, None) if r.error.is_some() => format!("{title} MISSED: planted to end in a {planted}, but it errored: {cause}"),
        (_, None) if r.failures.is_empty() => {
            format!("{title} MISSED: planted to end in a {planted}, but it ran to the end, green at every gate")
        }
        (_, None) => {
            let red: Vec<Gate> = r.failures.iter().map(|f| f.gate).collect();
            format!("{title} MISSED: planted to end in a {planted}, but it ran to the end (red at {})", gate_list(&red))
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// What does not fit the record line (a compiler's log), indented, to print under it.
pub fn detail_lines(r: &RecordResult) -> Vec<String> {
    let error: Vec<String> = r.error.as_deref().map(|e| e.lines().skip(1).map(|l| format!("    {l}")).collect()).unwrap_or_default();
    [error, r.notes.iter().map(|n| format!("    note: {n}")).collect()].concat()
}

/// `file:line: error: `key`: message`, on one line whatever a file name holds.
pub fn contract_error_line(e: &crate::contract::ContractError) -> String {
    let escaped = crate::text::escaped;
    format!("{}:{}: error: `{}`: {}", escaped(&e.file), e.line, escaped(&e.key), escaped(&e.message))
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub arch: String,
    pub gates: u8,
    pub records: usize,
    pub pass: usize,
    pub fail: usize,
    /// Records that errored (counted in `fail` too: the SUMMARY has no other column for them).
    pub errors: usize,
    pub known_findings: usize,
    pub controls: usize,
    pub red_as_planted: usize,
    pub missed: usize,
    pub limit_problems: usize,
    /// Contracts or controls that could not be loaded.
    pub load_errors: usize,
    /// Only gate 4 ran, from the compiler's figures, with no device.
    pub static_only: bool,
    /// What ended the run before it finished (`SIGINT`, `exit()`): the counts are of what finished.
    pub interrupted: Option<String>,
    /// Outputs of the run (the JSON report, JUnit, triage pages) that could not be written;
    /// known only after they were, so never in the JSON report itself.
    #[serde(skip)]
    pub not_written: usize,
}

impl Summary {
    pub fn of(report: &RunReport) -> Summary {
        let count = |list: &[RecordResult], o: Outcome| list.iter().filter(|r| r.outcome == o).count();
        let known = count(&report.records, Outcome::KnownFinding);
        let errors = count(&report.records, Outcome::Error);
        Summary {
            arch: report.arch.clone(),
            gates: report.gates_run.iter().map(|g| g.number()).max().unwrap_or(0),
            records: report.records.len(),
            pass: count(&report.records, Outcome::Pass) + known,
            fail: count(&report.records, Outcome::Fail) + errors,
            errors,
            known_findings: known,
            controls: report.controls.len(),
            red_as_planted: count(&report.controls, Outcome::RedAsPlanted),
            missed: count(&report.controls, Outcome::Missed),
            limit_problems: {
                let mut kernels: Vec<&str> = report
                    .records
                    .iter()
                    .filter(|r| r.limits.as_ref().is_some_and(|l| !l.problems.is_empty()))
                    .map(|r| r.op.as_str())
                    .collect();
                kernels.dedup();
                kernels.len()
            },
            load_errors: report.contract_errors.len(),
            static_only: report.gates_run == [Gate::Limits],
            interrupted: report.interrupted.clone(),
            not_written: 0,
        }
    }

    pub fn line(&self) -> String {
        let gates =
            if self.static_only { "gate 4 (static; gates 1-3 not run: no device)".to_string() } else { format!("gates 1-{}", self.gates) };
        format!(
            "SUMMARY {} {} kernels: {} pass {gates}, {} fail, {} known findings; {} controls: {} red as planted, {} missed; {} limit problems",
            self.arch,
            self.records,
            self.pass,
            self.fail,
            self.known_findings,
            self.controls,
            self.red_as_planted,
            self.missed,
            self.limit_problems
        )
    }
}

/// 0: every record passed and every control went red as planted; 1: a record failed, a
/// control was missed, or a contract or control did not load (the others still ran); 2:
/// nothing could run (no record and no control), or an output of the run (its report, JUnit,
/// triage pages) could not be written: the harness failing its job, not a kernel failing a
/// gate; an interrupted run, what `interrupted_code` says.
pub fn exit_code(summary: &Summary) -> i32 {
    if let Some(cause) = &summary.interrupted {
        interrupted_code(cause)
    } else if summary.not_written > 0 || summary.records == 0 && summary.controls == 0 {
        2
    } else if summary.fail > 0 || summary.missed > 0 || summary.load_errors > 0 {
        1
    } else {
        0
    }
}

/// 128 plus the signal's number, as a shell reports a process a signal ended (130 for
/// SIGINT, 143 for SIGTERM, 129 for SIGHUP); 3 for a run some code ended with `exit()`.
pub fn interrupted_code(cause: &str) -> i32 {
    match cause {
        "SIGINT" => 128 + libc::SIGINT,
        "SIGTERM" => 128 + libc::SIGTERM,
        "SIGHUP" => 128 + libc::SIGHUP,
        _ => crate::exit_guard::EXIT_CALLED_STATUS,
    }
}

/// The line an interrupted run prints before its SUMMARY.
pub fn interrupted_line(report: &RunReport) -> Option<String> {
    let cause = report.interrupted.as_deref()?;
    Some(format!(
        "interrupted by {cause}: {} records and {} controls finished (the report holds them); every process of the run was ended",
        report.records.len(),
        report.controls.len()
    ))
}

#[derive(Serialize)]
struct JsonReport<'a> {
    tool: &'static str,
    version: &'static str,
    #[serde(flatten)]
    run: &'a RunReport,
    summary: &'a Summary,
    summary_line: String,
    exit_code: i32,
    contract_error_lines: Vec<ContractErrorView>,
}

pub fn json(report: &RunReport, summary: &Summary) -> String {
    let view = JsonReport {
        tool: "kernel-contracts",
        version: env!("CARGO_PKG_VERSION"),
        run: report,
        summary,
        summary_line: summary.line(),
        exit_code: exit_code(summary),
        contract_error_lines: report.contract_errors.iter().map(|e| ContractErrorView { line: contract_error_line(e) }).collect(),
    };
    serde_json::to_string_pretty(&view).expect("report serializes")
}

/// Why the report was not written. The run's lines and SUMMARY print all the same.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("it is a symbolic link; the report is written only to a regular file, never through a link")]
    Symlink,
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What stands at `path`, refused unless it is nothing yet or a regular file (a link would
/// send the report elsewhere; a rename over a device node or a folder would replace it).
fn refuse_non_regular(path: &Path) -> Result<(), WriteError> {
    use std::os::unix::fs::FileTypeExt;
    let kind = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
        Ok(meta) => meta.file_type(),
    };
    if kind.is_symlink() {
        return Err(WriteError::Symlink);
    }
    let named = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device node"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "something else"
    };
    Err(WriteError::NotRegular(named))
}

/// The report, whole or not at all: written to a temporary file of a name no one else has
/// (created new, so never through a link planted at it) in the report's folder, then
/// renamed over `path`, which must be a regular file or nothing.
pub fn write_json(path: &Path, report: &RunReport, summary: &Summary) -> Result<(), WriteError> {
    write_text(path, &json(report, summary))
}

/// `text` at `path` as [`write_json`] writes a report: whole or not at all, only to a
/// regular file (the coverage report goes through it too).
pub fn write_text(path: &Path, text: &str) -> Result<(), WriteError> {
    write_bytes(path, text.as_bytes())
}

/// `bytes` at `path`, whole or not at all, only to a regular file (as [`write_text`]).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    refuse_non_regular(path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map_or("report".into(), |n| n.to_string_lossy());
    let mut staged = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)?;
    staged.write_all(bytes)?;
    staged.as_file().sync_all()?;
    // again just before the rename: what stands there now is what would be replaced
    refuse_non_regular(path)?;
    staged.persist(path).map_err(|e| WriteError::Io(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::gates::{Failure, Metrics};
    use crate::runner::{CaseReport, ControlInfo, GateFailure, Timing};

    fn case(elements: usize, max_ulp: u64, max_abs_error: f64) -> CaseReport {
        CaseReport {
            symbols: BTreeMap::new(),
            seeds: BTreeMap::new(),
            outputs: [("out".to_string(), Metrics { elements, mismatches: 0, max_abs_error, mean_abs_error: 0.0, max_ulp })].into(),
            blocks: 1,
            switches: 0,
            inactive_lane_reads: 0,
            block_threads: 256,
            cross_backend: None,
            phases: Default::default(),
            seams: Vec::new(),
            wrote_outside: false,
        }
    }

    fn record(name: &str, outcome: Outcome, tolerance: &str) -> RecordResult {
        RecordResult {
            op: "tf_embed_dense".into(),
            record: name.into(),
            contract_file: "contracts/tf_embed_dense.toml".into(),
            control: None,
            outcome,
            gates_run: vec![Gate::Nonfinite, Gate::Repeat, Gate::Shapes],
            failures: Vec::new(),
            failure_sites: Vec::new(),
            findings: Vec::new(),
            stale_findings: Vec::new(),
            covered_tensors: Vec::new(),
            uncovered: None,
            error: None,
            fault: None,
            tolerances: [("out".to_string(), tolerance.to_string())].into(),
            cases: vec![case(64, 0, 0.0), case(910, 0, 0.0), case(7168, 0, 0.0)],
            nonfinite_policy: "propagate".into(),
            nonfinite_cases: Vec::new(),
            cases_not_run: Vec::new(),
            limits: None,
            cross_backend_max_ulp: None,
            notes: Vec::new(),
            seconds: 0.1,
            phases: Default::default(),
            triage: Vec::new(),
        }
    }

    fn shapes_failure(failing_cases: Vec<usize>) -> GateFailure {
        GateFailure {
            gate: Gate::Shapes,
            case_index: 2,
            case: "{n = 7, k = 1024, vocab = 1024}".into(),
            tensor: "out".into(),
            failure: Failure {
                count: 6912,
                total: 7168,
                first: Some(vec![0, 0]),
                message: "6,912 of 7,168 elements differ, first [0, 0]: got 0.3184 (0x3ea3) want -1.203 (0xbf9a)".into(),
            },
            also: Vec::new(),
            failing_cases,
        }
    }

    fn control(bug: &str, gate: Gate) -> ControlInfo {
        ControlInfo { file: "controls/x.toml".into(), bug: bug.into(), planted: Planted::Gate(gate), source: Some("controls/x.hip".into()) }
    }

    #[test]
    fn record_lines() {
        let pass = record("bf16 table, bf16 out", Outcome::Pass, "exact");
        let mut ulp = record("f32 scores", Outcome::Pass, "ulp(16)");
        ulp.cases[1] = case(910, 3, 1e-7);
        let mut fail = record("fp32 table, bf16 out", Outcome::Fail, "exact");
        fail.failures = vec![shapes_failure(vec![2])];
        let mut two_gates = record("fp32 table, f32 out", Outcome::Fail, "exact");
        let mut unwritten = shapes_failure(vec![1, 2]);
        unwritten.gate = Gate::Repeat;
        unwritten.failure.message = "1 of 910 elements unwritten (equal to the poison on all 3 launches), first [6, 129]".into();
        two_gates.failures = vec![unwritten, shapes_failure(vec![0, 1, 2])];
        let mut error = record("bf16 table, f32 out", Outcome::Error, "exact");
        error.error = Some("kernel `tf_embed_dense` (kernels/tf_embed_dense.hip): block (0,0,0): divergent barrier: 16 thread(s) wait at kernels/tf_embed_dense.hip:9, 240 thread(s) exited without reaching it".into());
        let mut known = record("fp32 table, f16 out", Outcome::KnownFinding, "exact");
        known.failures = vec![shapes_failure(vec![2])];
        known.findings = vec!["shapes (out): the table is read through a texture path that flushes subnormals".into()];
        known.covered_tensors = vec!["out".into()];
        let mut stale = record("fp32 table, f16 out", Outcome::Fail, "exact");
        stale.stale_findings =
            vec!["the known finding at shapes (contracts/tf_embed_dense.toml:40) is stale: the gate passes now; remove it".into()];
        let mut narrow = record("fp32 table, f16 out", Outcome::Fail, "exact");
        narrow.failures = vec![shapes_failure(vec![1, 2])];
        narrow.uncovered = Some(
            "not covered by a known finding: shapes in case {n = 7, k = 130, vocab = 1024}: out: 1 of 910 elements differ, first [6, 129]: got 1.000 (0x3f80) want 0.5000 (0x3f00)".into(),
        );
        let mut red = record("fp32 table, f32 out", Outcome::RedAsPlanted, "exact");
        red.control = Some(control("gathers the next row", Gate::Shapes));
        red.failures = vec![shapes_failure(vec![2])];
        let mut red_also = red.clone();
        red_also.control = Some(control("leaves the last element unwritten", Gate::Repeat));
        let mut repeat = shapes_failure(vec![2]);
        repeat.gate = Gate::Repeat;
        repeat.failure.message = "1 of 7,168 elements unwritten (equal to the poison on all 3 launches), first [6, 1023]".into();
        red_also.failures = vec![repeat, shapes_failure(vec![2])];
        let mut missed = record("fp32 table, f32 out", Outcome::Missed, "exact");
        missed.control = Some(control("gathers the next row", Gate::Shapes));
        let mut missed_elsewhere = missed.clone();
        let mut nonfinite = shapes_failure(vec![2]);
        nonfinite.gate = Gate::Nonfinite;
        missed_elsewhere.failures = vec![nonfinite];
        let mut missed_error = missed.clone();
        missed_error.error =
            Some("compiling controls/x.hip with g++ 12.2.0 (compile) failed:\nx.hip:3: error: 'undefined_name' was not declared".into());
        let lines: Vec<String> =
            [pass, ulp, fail, two_gates, error, known, stale, narrow, red, red_also, missed, missed_elsewhere, missed_error]
                .iter()
                .flat_map(|r| std::iter::once(record_line(r)).chain(detail_lines(r)))
                .collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn fault_control_lines() {
        let planted = |fault: Fault| ControlInfo {
            file: "controls/faults/x.toml".into(),
            bug: "one store lands 2^40 elements past the output".into(),
            planted: Planted::Fault(fault),
            source: Some("controls/faults/x.hip".into()),
        };
        let faulted = |fault: Fault, got: Option<Fault>, outcome: Outcome, error: Option<&str>| {
            let mut r = record("f32", outcome, "exact");
            r.control = Some(planted(fault));
            r.fault = got;
            r.error = error.map(str::to_string);
            r
        };
        let crash = "crashed: SIGSEGV in case {rows = 1, k = 1}\nits standard error ended with:\nSegmentation fault";
        let lines: Vec<String> = [
            faulted(Fault::Crash, Some(Fault::Crash), Outcome::RedAsPlanted, Some(crash)),
            faulted(Fault::Timeout, Some(Fault::Timeout), Outcome::RedAsPlanted, Some("timed out after 5 s in case {rows = 1, k = 1}: its process was killed")),
            faulted(
                Fault::DeviceFault,
                Some(Fault::DeviceFault),
                Outcome::RedAsPlanted,
                Some("case {rows = 1, k = 1}: kernel `tf_add` (controls/faults/x.hip) faulted: cuCtxSynchronize after cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"),
            ),
            faulted(Fault::Crash, Some(Fault::Timeout), Outcome::Missed, Some("timed out after 30 s: its process was killed")),
            faulted(Fault::Timeout, None, Outcome::Missed, Some("case {rows = 1, k = 1}: inputs.a: no such generator")),
            faulted(Fault::Timeout, None, Outcome::Missed, None),
            {
                let mut r = faulted(Fault::Crash, None, Outcome::Missed, None);
                r.failures = vec![shapes_failure(vec![2])];
                r
            },
            {
                let mut r = record("f32", Outcome::Error, "exact");
                r.fault = Some(Fault::Crash);
                r.error = Some(crash.into());
                r
            },
        ]
        .iter()
        .flat_map(|r| std::iter::once(record_line(r)).chain(detail_lines(r)))
        .collect();
        insta::assert_snapshot!(lines.join("\n"));
    }

    fn empty_report() -> RunReport {
        RunReport {
            arch: "host-x86_64".into(),
            backend: "host".into(),
            toolchain: "g++".into(),
            seed: 1,
            repeats: 3,
            gates_run: vec![Gate::Nonfinite, Gate::Repeat, Gate::Shapes],
            contract_errors: Vec::new(),
            records: vec![record("a", Outcome::Pass, "exact")],
            controls: Vec::new(),
            controls_not_applicable: Vec::new(),
            cases_not_run: Vec::new(),
            timing: Timing::default(),
            interrupted: None,
        }
    }

    #[test]
    fn the_report_goes_only_to_a_regular_file_never_through_a_link() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let report = empty_report();
        let summary = Summary::of(&report);
        let path = dir.path().join("out/r.json");
        write_json(&path, &report, &summary).unwrap();
        write_json(&path, &report, &summary).unwrap();
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(json["summary_line"], summary.line());
        // nothing left beside it
        assert_eq!(std::fs::read_dir(dir.path().join("out")).unwrap().count(), 1);

        let target = dir.path().join("target.txt");
        std::fs::write(&target, "untouched").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(write_json(&link, &report, &summary), Err(WriteError::Symlink)));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        let e = write_json(dir.path(), &report, &summary).unwrap_err();
        assert_eq!(e.to_string(), "it is a folder, not a regular file");
        // a device node is refused the same way (not tried here on a real one: run as root, a
        // rename over /dev/null is what this guards against)
        let fifo = dir.path().join("fifo.json");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that outlives the call
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
        let e = write_json(&fifo, &report, &summary).unwrap_err();
        assert_eq!(e.to_string(), "it is a named pipe, not a regular file");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn summary_lines_and_exit_codes() {
        let mut report = RunReport {
            arch: "host-x86_64".into(),
            backend: "host".into(),
            toolchain: "g++".into(),
            seed: 1,
            repeats: 3,
            gates_run: vec![Gate::Nonfinite, Gate::Repeat, Gate::Shapes],
            contract_errors: Vec::new(),
            records: vec![record("a", Outcome::Pass, "exact"), record("b", Outcome::KnownFinding, "exact")],
            controls: vec![record("a", Outcome::RedAsPlanted, "exact")],
            controls_not_applicable: Vec::new(),
            cases_not_run: Vec::new(),
            timing: Timing::default(),
            interrupted: None,
        };
        let green = Summary::of(&report);
        let mut lines = vec![green.line(), format!("exit {}", exit_code(&green))];
        report.records.push(record("c", Outcome::Fail, "exact"));
        report.records.push(record("d", Outcome::Error, "exact"));
        report.controls.push(record("b", Outcome::Missed, "exact"));
        let red = Summary::of(&report);
        lines.extend([red.line(), format!("exit {}", exit_code(&red))]);
        report.contract_errors.push(crate::contract::ContractError {
            file: "contracts/bad.toml".into(),
            line: 3,
            key: "colour".into(),
            message: "unknown field `colour`".into(),
        });
        let broken = Summary::of(&report);
        lines.extend([contract_error_line(&report.contract_errors[0]), broken.line(), format!("exit {}", exit_code(&broken))]);
        assert_eq!(red.pass + red.fail, red.records);
        insta::assert_snapshot!(lines.join("\n"));
    }

    #[test]
    fn an_interrupted_run_exits_128_plus_its_signal_and_says_so_before_its_summary() {
        let mut report = RunReport::empty("host-x86_64", "host", "g++", &crate::runner::tests_settings(), 3, &[Gate::Shapes]);
        report.records.push(record("a", Outcome::Pass, "exact"));
        assert_eq!(interrupted_line(&report), None);
        let mut codes = Vec::new();
        for cause in ["SIGINT", "SIGTERM", "SIGHUP", "exit()"] {
            report.interrupted = Some(cause.into());
            let summary = Summary::of(&report);
            codes.push(exit_code(&summary));
            let json: serde_json::Value = serde_json::from_str(&json(&report, &summary)).unwrap();
            assert_eq!((json["interrupted"].as_str(), json["exit_code"].as_i64()), (Some(cause), Some(*codes.last().unwrap() as i64)));
        }
        assert_eq!(codes, [130, 143, 129, 3]);
        assert_eq!(
            interrupted_line(&report).unwrap(),
            "interrupted by exit(): 1 records and 0 controls finished (the report holds them); every process of the run was ended"
        );
    }
}
