//! Reporters: record lines, the SUMMARY line, the JSON report, and the one function that
//! decides the exit status. They read the runner's results; they decide nothing else.

use std::path::Path;

use serde::Serialize;

use crate::gate::Gate;
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

/// How close the outputs came to the oracle: `exact`, or the largest error per output.
fn accuracy(r: &RecordResult) -> String {
    let parts: Vec<String> = r
        .tolerances
        .iter()
        .map(|(output, tolerance)| {
            let max_ulp = r.cases.iter().filter_map(|c| c.outputs.get(output)).map(|m| m.max_ulp).max().unwrap_or(0);
            let max_abs = r.cases.iter().filter_map(|c| c.outputs.get(output)).map(|m| m.max_abs_error).fold(0.0, f64::max);
            let figure = if tolerance == "exact" {
                "exact".to_string()
            } else if tolerance.starts_with("ulp") {
                format!("max {max_ulp} ulp within {tolerance}")
            } else {
                format!("max error {max_abs:.2e} ({max_ulp} ulp) within {tolerance}")
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
        let others: Vec<Gate> = r.failures.iter().map(|f| f.gate).filter(|g| *g != control.gate).collect();
        let also = if others.is_empty() { String::new() } else { format!("; also red at {}", gate_list(&others)) };
        return match r.outcome {
            Outcome::RedAsPlanted => {
                let planted = r.failures.iter().find(|f| f.gate == control.gate).unwrap();
                format!("{title} red at {} as planted: {}{also}", control.gate, failure_text(planted))
            }
            _ => match &r.error {
                Some(e) => format!("{title} MISSED: planted to go red at {}, but no gate ran: {e}", control.gate),
                None if others.is_empty() => format!("{title} MISSED: green at {} where it was planted to go red, and green at every gate", control.gate),
                None => format!("{title} MISSED: green at {} where it was planted to go red{also}", control.gate),
            },
        };
    }
    let summary = format!("{} cases, {} elements, {}", r.cases.len(), crate::format::count(r.elements()), accuracy(r));
    match r.outcome {
        Outcome::Pass => format!("{title} pass {}; {summary}", gate_list(&r.gates_run)),
        Outcome::KnownFinding => format!("{title} pass {} with known finding at {}; {summary}", gate_list(&r.gates_run), r.findings.join("; ")),
        Outcome::Error => format!("{title} ERROR: {}", r.error.as_deref().unwrap_or("")),
        _ => {
            let mut parts: Vec<String> = Vec::new();
            for (i, f) in r.failures.iter().enumerate() {
                let lead = if i == 0 { "FAIL at" } else { "also at" };
                parts.push(format!("{lead} {}: {}", f.gate, failure_text(f)));
            }
            parts.extend(r.stale_findings.iter().map(|s| format!("FAIL: {s}")));
            format!("{title} {}", parts.join("; "))
        }
    }
}

pub fn contract_error_line(e: &crate::contract::ContractError) -> String {
    format!("{}:{}: error: `{}`: {}", e.file, e.line, e.key, e.message)
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
            limit_problems: 0,
            load_errors: report.contract_errors.len(),
        }
    }

    pub fn line(&self) -> String {
        format!(
            "SUMMARY {} {} kernels: {} pass gates 1-{}, {} fail, {} known findings; {} controls: {} red as planted, {} missed; {} limit problems",
            self.arch,
            self.records,
            self.pass,
            self.gates,
            self.fail,
            self.known_findings,
            self.controls,
            self.red_as_planted,
            self.missed,
            self.limit_problems
        )
    }
}

/// 0: every record passed and every control went red as planted; 1: a record failed or a
/// control was missed; 2: the harness could not run all it was given (a contract or
/// control that does not load, or nothing to run).
pub fn exit_code(summary: &Summary) -> i32 {
    if summary.load_errors > 0 || summary.records == 0 {
        2
    } else if summary.fail > 0 || summary.missed > 0 {
        1
    } else {
        0
    }
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

pub fn write_json(path: &Path, report: &RunReport, summary: &Summary) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let staged = path.with_extension("json.partial");
    std::fs::write(&staged, json(report, summary))?;
    std::fs::rename(staged, path)
}
