//! Reporters: every output of a run is one, fed the runner's events (record lines and the
//! SUMMARY, the JSON report, JUnit XML, triage pages, case dumps, a progress bar, GitHub
//! annotations). `Reporters` hands each event to each of them and, when the run is over, has
//! the file writers write first and the line printers close after, knowing what was written.

pub mod dump;
#[cfg(test)]
mod fixture;
pub mod github;
pub mod html;
pub mod json;
pub mod junit;
pub mod progress;
pub mod text;

use std::path::PathBuf;

use crate::report::Summary;
use crate::runner::{Event, RunReport};

/// Where a reporter's lines go (standard output in the binary, a buffer in tests).
pub type Sink = Box<dyn FnMut(&str) + Send>;

/// One reporter of a run's events.
pub trait Reporter: Send {
    /// Each event as the run goes (`Finished` included, before anything is written).
    fn event(&mut self, _event: &Event) {}

    /// The run is over (or was interrupted): write this reporter's file, if it has one.
    fn write(&mut self, _run: &RunReport, _summary: &Summary) -> Option<Written> {
        None
    }

    /// After every reporter wrote: the closing lines.
    fn close(&mut self, _run: &RunReport, _summary: &Summary, _written: &[Written]) {}
}

/// What a reporter writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The JSON report.
    Report,
    Junit,
    TriagePages,
    Dump,
}

impl Output {
    /// As the closing lines name it.
    pub fn name(self) -> &'static str {
        match self {
            Output::Report => "report",
            Output::Junit => "junit",
            Output::TriagePages => "triage pages",
            Output::Dump => "case dumps",
        }
    }
}

/// A file (or folder) a reporter wrote, or why it could not.
#[derive(Clone, Debug)]
pub struct Written {
    pub output: Output,
    pub path: PathBuf,
    /// Ok with what was written where that is more than the path says (`3 pages`).
    pub outcome: Result<Option<String>, String>,
}

/// Every reporter of a run, in order: file writers before line printers.
#[derive(Default)]
pub struct Reporters {
    list: Vec<Box<dyn Reporter>>,
    summary: Option<Summary>,
}

impl Reporters {
    pub fn new(list: Vec<Box<dyn Reporter>>) -> Reporters {
        Reporters { list, summary: None }
    }

    pub fn push(&mut self, reporter: Box<dyn Reporter>) {
        self.list.push(reporter);
    }

    /// One event to every reporter; the run's end also writes and closes.
    pub fn event(&mut self, event: &Event) {
        for reporter in &mut self.list {
            reporter.event(event);
        }
        if let Event::Finished(run) = event {
            self.finish(run);
        }
    }

    /// Writes every reporter's file and prints the closing lines, for a run that finished or
    /// was interrupted (`run.interrupted`); the summary then counts what was not written.
    pub fn finish(&mut self, run: &RunReport) {
        let mut summary = Summary::of(run);
        let written: Vec<Written> = self.list.iter_mut().filter_map(|r| r.write(run, &summary)).collect();
        summary.not_written = written.iter().filter(|w| w.outcome.is_err()).count();
        for reporter in &mut self.list {
            reporter.close(run, &summary, &written);
        }
        self.summary = Some(summary);
    }

    /// The run's summary, once it finished: what the exit status is decided from.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }
}

/// A file name part from any text: letters, digits, `-` and `_` kept, runs of anything else one `-`.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::{Arc, Mutex};

    use crate::replay::Replay;
    use crate::runner::Event;

    /// The lines a text reporter prints for the fixture run, written (or refused) as `written` says.
    fn printed(run: &RunReport, outcome: Result<Option<String>, String>) -> (Vec<String>, Summary) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = lines.clone();
        let sink: Sink = Box::new(move |l| kept.lock().unwrap().push(l.to_string()));
        let replay =
            Replay { program: "contracts".into(), seed: 1, folders: vec![("--kernels".into(), "my kernels".into())], ..Replay::default() };
        let root = std::path::Path::new("/repo");
        let text = text::TextReporter::new(sink, 1, root).with_replay(replay);
        struct Fake(Result<Option<String>, String>);
        impl Reporter for Fake {
            fn write(&mut self, _: &RunReport, _: &Summary) -> Option<Written> {
                Some(Written { output: Output::Report, path: "/repo/reports/last/host-x86_64.json".into(), outcome: self.0.clone() })
            }
        }
        let mut reporters = Reporters::new(vec![Box::new(Fake(outcome)), Box::new(text)]);
        reporters.event(&Event::Started { arch: &run.arch, backend: &run.backend, toolchain: &run.toolchain, gates_run: &run.gates_run });
        for r in &run.records {
            reporters.event(&Event::Record(r));
        }
        for r in &run.controls {
            reporters.event(&Event::Control(r));
        }
        reporters.event(&Event::Finished(run));
        let summary = reporters.summary().unwrap().clone();
        drop(reporters);
        (Arc::try_unwrap(lines).unwrap().into_inner().unwrap(), summary)
    }

    #[test]
    fn the_text_reporter_prints_record_lines_replays_and_closing_lines() {
        let run = fixture::run();
        let (lines, summary) = printed(&run, Ok(None));
        assert_eq!(crate::report::exit_code(&summary), 1);
        insta::assert_snapshot!(lines.join("\n"));
        // a report that could not be written: said on the `ran` line, and exit 2
        let (lines, summary) = printed(&run, Err("it is a folder, not a regular file".into()));
        let ran = lines.iter().find(|l| l.starts_with("ran ")).unwrap();
        assert!(ran.ends_with("; report NOT written to reports/last/host-x86_64.json: it is a folder, not a regular file"), "{ran}");
        assert_eq!((summary.not_written, crate::report::exit_code(&summary)), (1, 2));
        // an interrupted run: what ended it, where its report went, then the SUMMARY
        let mut interrupted = fixture::run();
        interrupted.interrupted = Some("SIGINT".into());
        let (lines, summary) = printed(&interrupted, Ok(None));
        assert_eq!(
            lines[lines.len() - 3..],
            [
                "interrupted by SIGINT: 3 records and 2 controls finished (the report holds them); every process of the run was ended",
                "report reports/last/host-x86_64.json",
                &summary.line()
            ]
        );
        assert_eq!(crate::report::exit_code(&summary), 130);
    }

    #[test]
    fn slugs_are_file_name_parts() {
        assert_eq!(slug("bf16 table, bf16 out"), "bf16-table-bf16-out");
        assert_eq!(slug("../x/\ny"), "x-y");
        assert_eq!(slug("tf_add"), "tf_add");
    }
}
