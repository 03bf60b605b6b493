//! JUnit XML (`--junit PATH`), as CI systems read test results: one testcase per record and
//! per control (a control not run here is a skipped one), a failing one carrying its record
//! line; contract and control files that did not load are testcases in error of their own
//! suite. Written whole or not at all, only to a regular file, as the JSON report is.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::{Output, Reporter, Written};
use crate::replay::Replay;
use crate::report::{self, Summary};
use crate::runner::{Event, Outcome, RecordResult, RunReport};

pub struct JunitReporter {
    path: PathBuf,
    replay: Option<Replay>,
}

impl JunitReporter {
    pub fn new(path: PathBuf, replay: Option<Replay>) -> JunitReporter {
        JunitReporter { path, replay }
    }
}

impl Reporter for JunitReporter {
    fn event(&mut self, event: &Event) {
        if let (Event::Started { backend, arch, .. }, Some(replay)) = (event, &mut self.replay) {
            replay.backend = backend.to_string();
            replay.arch = arch.to_string();
        }
    }

    fn write(&mut self, run: &RunReport, summary: &Summary) -> Option<Written> {
        let outcome = report::write_text(&self.path, &xml(run, summary, self.replay.as_ref())).map(|()| None).map_err(|e| e.to_string());
        Some(Written { output: Output::Junit, path: self.path.clone(), outcome })
    }
}

/// Text as XML 1.0 may hold it: markup characters escaped, and the control characters it
/// cannot hold at all (any but tab, newline and carriage return) written as `\u{..}`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A testcase's verdict: none (passed), a failure or an error with its message and body, or
/// skipped with why.
enum Verdict {
    Passed,
    Failure { kind: String, message: String, body: String },
    Error { message: String, body: String },
    Skipped(String),
}

struct Case {
    classname: String,
    name: String,
    file: String,
    seconds: f64,
    verdict: Verdict,
}

fn body(r: &RecordResult, replay: Option<&Replay>) -> String {
    let mut lines = vec![report::record_line(r)];
    lines.extend(replay.and_then(|p| p.command(r)).map(|c| format!("    replay: {c}")));
    lines.extend(report::detail_lines(r));
    lines.join("\n")
}

fn record_case(r: &RecordResult, replay: Option<&Replay>) -> Case {
    let line = report::record_line(r);
    let verdict = match (&r.control, &r.outcome) {
        (None, Outcome::Error) => Verdict::Error { message: line, body: body(r, replay) },
        (None, Outcome::Fail) => {
            let kind = r.failures.first().map_or("findings".to_string(), |f| f.gate.to_string());
            Verdict::Failure { kind, message: line, body: body(r, replay) }
        }
        (Some(c), Outcome::Missed) => Verdict::Failure { kind: format!("missed {}", c.planted), message: line, body: body(r, None) },
        _ => Verdict::Passed,
    };
    let (name, file) = match &r.control {
        Some(c) => (format!("control: {}", c.bug), c.file.clone()),
        None => (r.record.clone(), r.contract_file.clone()),
    };
    Case { classname: r.op.clone(), name, file, seconds: r.seconds, verdict }
}

/// A control not run here (`controls/x.toml (shapes): why`): skipped, named by its file.
fn not_applicable_case(line: &str) -> Case {
    let file = line.split(" (").next().unwrap_or(line).to_string();
    Case { classname: "controls not run".into(), name: file.clone(), file, seconds: 0.0, verdict: Verdict::Skipped(line.to_string()) }
}

fn suite(out: &mut String, name: &str, cases: &[Case], properties: &[(&str, String)]) {
    let count = |f: fn(&Verdict) -> bool| cases.iter().filter(|c| f(&c.verdict)).count();
    let failures = count(|v| matches!(v, Verdict::Failure { .. }));
    let errors = count(|v| matches!(v, Verdict::Error { .. }));
    let skipped = count(|v| matches!(v, Verdict::Skipped(_)));
    let seconds: f64 = cases.iter().map(|c| c.seconds).sum();
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{seconds:.3}\">",
        escape(name),
        cases.len()
    );
    if !properties.is_empty() {
        out.push_str("    <properties>\n");
        for (key, value) in properties {
            let _ = writeln!(out, "      <property name=\"{}\" value=\"{}\"/>", escape(key), escape(value));
        }
        out.push_str("    </properties>\n");
    }
    for case in cases {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" time=\"{:.3}\"",
            escape(&case.classname),
            escape(&case.name),
            escape(&case.file),
            case.seconds
        );
        match &case.verdict {
            Verdict::Passed => out.push_str("/>\n"),
            Verdict::Failure { kind, message, body } => {
                let _ = writeln!(
                    out,
                    ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>",
                    escape(kind),
                    escape(message),
                    escape(body)
                );
            }
            Verdict::Error { message, body } => {
                let _ = writeln!(
                    out,
                    ">\n      <error type=\"error\" message=\"{}\">{}</error>\n    </testcase>",
                    escape(message),
                    escape(body)
                );
            }
            Verdict::Skipped(why) => {
                let _ = writeln!(out, ">\n      <skipped message=\"{}\"/>\n    </testcase>", escape(why));
            }
        }
    }
    out.push_str("  </testsuite>\n");
}

/// The run as JUnit XML: a suite of records, one of controls, and one of the files that did
/// not load (when any did not).
pub fn xml(run: &RunReport, summary: &Summary, replay: Option<&Replay>) -> String {
    let records: Vec<Case> = run.records.iter().map(|r| record_case(r, replay)).collect();
    let mut controls: Vec<Case> = run.controls.iter().map(|r| record_case(r, None)).collect();
    controls.extend(run.controls_not_applicable.iter().map(|l| not_applicable_case(l)));
    let loads: Vec<Case> = run
        .contract_errors
        .iter()
        .map(|e| {
            let line = report::contract_error_line(e);
            Case {
                classname: "contract files".into(),
                name: e.file.clone(),
                file: e.file.clone(),
                seconds: 0.0,
                verdict: Verdict::Error { message: line.clone(), body: line },
            }
        })
        .collect();
    let all = || records.iter().chain(&controls).chain(&loads);
    let count = |f: fn(&Verdict) -> bool| all().filter(|c| f(&c.verdict)).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"kernel-contracts {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
        escape(&run.arch),
        all().count(),
        count(|v| matches!(v, Verdict::Failure { .. })),
        count(|v| matches!(v, Verdict::Error { .. })),
        count(|v| matches!(v, Verdict::Skipped(_))),
        run.timing.total_seconds
    );
    let properties = [
        ("arch", run.arch.clone()),
        ("backend", run.backend.clone()),
        ("toolchain", run.toolchain.clone()),
        ("seed", format!("{:#x}", run.seed)),
        ("harness", format!("kernel-contracts {}", env!("CARGO_PKG_VERSION"))),
        ("summary", summary.line()),
    ];
    suite(&mut out, &format!("records ({})", run.arch), &records, &properties);
    suite(&mut out, &format!("controls ({})", run.arch), &controls, &[]);
    if !loads.is_empty() {
        suite(&mut out, "contract and control files", &loads, &[]);
    }
    out.push_str("</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_as_junit_one_testcase_per_record_and_control_failures_carrying_their_lines() {
        let run = super::super::fixture::run();
        let summary = Summary::of(&run);
        let replay = Replay { program: "contracts".into(), seed: 1, backend: "host".into(), ..Replay::default() };
        insta::assert_snapshot!(xml(&run, &summary, Some(&replay)));
    }

    #[test]
    fn text_xml_cannot_hold_is_escaped() {
        assert_eq!(escape("a<b & \"c\" 'd'\u{1b}[0m\ttab"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;\\u{1b}[0m\ttab");
    }
}
