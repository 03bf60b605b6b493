//! Reporters: every output of a run is one, fed the runner's events (record lines and the
//! SUMMARY, the JSON report, JUnit XML, triage pages, case dumps, a progress bar, GitHub
//! annotations). `Reporters` hands each event to each of them and, when the run is over, has
//! the file writers write first and the line printers close after, knowing what was written.

pub mod dump;
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

    #[test]
    fn slugs_are_file_name_parts() {
        assert_eq!(slug("bf16 table, bf16 out"), "bf16-table-bf16-out");
        assert_eq!(slug("../x/\ny"), "x-y");
        assert_eq!(slug("tf_add"), "tf_add");
    }
}
