//! GitHub Actions annotations (`GITHUB_ACTIONS=true`): an `::error` workflow command for each
//! failing record (at its `[[record]]` in the contract), each missed control (at its file) and
//! each file that did not load (at its line), so the failure shows on the pull request's files.

use std::path::{Path, PathBuf};

use super::{Reporter, Sink};
use crate::replay::Replay;
use crate::report;
use crate::runner::{Event, Outcome, RecordResult};

pub struct GithubAnnotations {
    sink: Sink,
    root: PathBuf,
    replay: Option<Replay>,
}

/// Whether this process runs under GitHub Actions, as its runner says in the environment.
pub fn enabled() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

impl GithubAnnotations {
    pub fn new(sink: Sink, root: &Path, replay: Option<Replay>) -> GithubAnnotations {
        GithubAnnotations { sink, root: root.to_path_buf(), replay }
    }

    fn annotate(&mut self, file: &str, line: usize, title: &str, message: &str) {
        let command = format!("::error file={},line={line},title={}::{}", property(file), property(title), data(message));
        (self.sink)(&command)
    }

    fn record(&mut self, r: &RecordResult) {
        let line = record_line_in(&self.root.join(&r.contract_file), &r.record).unwrap_or(1);
        let title = format!("{} ({}) {}", r.op, r.record, if r.outcome == Outcome::Error { "ERROR" } else { "FAIL" });
        let mut message = report::record_line(r);
        if let Some(command) = self.replay.as_ref().and_then(|p| p.command(r)) {
            message.push_str(&format!("\nreplay: {command}"));
        }
        let file = r.contract_file.clone();
        self.annotate(&file, line, &title, &message);
    }
}

impl Reporter for GithubAnnotations {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Started { backend, arch, .. } => {
                if let Some(replay) = &mut self.replay {
                    replay.backend = backend.to_string();
                    replay.arch = arch.to_string();
                }
            }
            Event::Record(r) if r.red() => self.record(r),
            Event::Control(r) if r.outcome == Outcome::Missed => {
                let Some(control) = &r.control else { return };
                let (file, title) = (control.file.clone(), format!("{} control MISSED: {}", r.op, control.bug));
                self.annotate(&file, 1, &title, &report::record_line(r));
            }
            Event::ContractError(e) => {
                let title = format!("{} does not load", e.file);
                self.annotate(&e.file, e.line.max(1), &title, &report::contract_error_line(e));
            }
            _ => {}
        }
    }
}

/// A workflow command's message: `%`, CR and LF escaped as the runner reads them back.
fn data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A property's value (file, title): as data, and `:` and `,` too, which end a property.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The line of the `[[record]]` named `name` in a contract's text (its `name = ` line).
fn record_line_in(path: &Path, name: &str) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut in_record = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            in_record = trimmed.starts_with("[[record]]");
            continue;
        }
        let Some(value) = trimmed.strip_prefix("name").map(str::trim_start).and_then(|v| v.strip_prefix('=')) else { continue };
        let parsed: Option<String> =
            toml::from_str::<toml::Table>(&format!("v = {}", value.trim())).ok().and_then(|t| t.get("v")?.as_str().map(String::from));
        if in_record && parsed.as_deref() == Some(name) {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_properties_are_escaped_as_the_runner_reads_them() {
        assert_eq!(data("100% red\nnext"), "100%25 red%0Anext");
        assert_eq!(property("tf_add (f32, bf16): FAIL"), "tf_add (f32%2C bf16)%3A FAIL");
    }

    #[test]
    fn a_record_is_found_at_its_name_line() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let path = root.join("contracts/tf_add.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let line = record_line_in(&path, "f16").expect("tf_add has a record f16");
        assert_eq!(text.lines().nth(line - 1).unwrap().trim(), "name = \"f16\"");
        assert!(text.lines().take(line).any(|l| l.trim() == "[[record]]"));
        assert_eq!(record_line_in(&path, "f8"), None);
    }

    #[test]
    fn a_failing_record_a_missed_control_and_a_bad_file_are_annotated() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let kept = lines.clone();
        let sink: Sink = Box::new(move |l| kept.lock().unwrap().push(l.to_string()));
        let mut github = GithubAnnotations::new(sink, root, None);
        let error = crate::contract::ContractError {
            file: "contracts/bad.toml".into(),
            line: 3,
            key: "colour".into(),
            message: "unknown field `colour`".into(),
        };
        github.event(&Event::ContractError(&error));
        let lines = lines.lock().unwrap();
        assert_eq!(
            lines[0],
            "::error file=contracts/bad.toml,line=3,title=contracts/bad.toml does not load::contracts/bad.toml:3: error: `colour`: unknown field `colour`"
        );
    }
}
