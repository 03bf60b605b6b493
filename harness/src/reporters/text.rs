//! The lines a person reads: the run's first line, contract errors, what does not run here,
//! one line per record and control (a failing record followed by its replay command), and
//! the closing lines with the SUMMARY last.

use std::path::{Path, PathBuf};

use super::{Output, Reporter, Sink, Written};
use crate::replay::Replay;
use crate::report::{self, Summary};
use crate::runner::{Event, RunReport};
use crate::text::escaped;

/// Records and controls `--timings` lists, the slowest first.
const TIMINGS_ROWS: usize = 20;

pub struct TextReporter {
    sink: Sink,
    seed: u64,
    /// Paths print relative to it.
    root: PathBuf,
    /// The replay command under each failing record (none where no command can be given).
    replay: Option<Replay>,
    /// `--timings`: the table of where the time went, before the closing lines.
    timings: bool,
    /// The closing lines (`ran ...`, the SUMMARY); `contracts record` prints its own.
    closing: bool,
}

impl TextReporter {
    pub fn new(sink: Sink, seed: u64, root: &Path) -> TextReporter {
        TextReporter { sink, seed, root: root.to_path_buf(), replay: None, timings: false, closing: true }
    }

    pub fn with_replay(mut self, replay: Replay) -> Self {
        self.replay = Some(replay);
        self
    }

    pub fn with_timings(mut self, timings: bool) -> Self {
        self.timings = timings;
        self
    }

    pub fn without_closing(mut self) -> Self {
        self.closing = false;
        self
    }

    fn say(&mut self, line: &str) {
        (self.sink)(line)
    }

    fn listed(&mut self, what: &str, arch: &str, items: &[String]) {
        let n = items.len();
        self.say(&format!("{n} {what}{} not run on {arch}:", if n == 1 { "" } else { "s" }));
        for item in items {
            self.say(&format!("    {}", escaped(item)));
        }
    }

    fn shown(&self, path: &Path) -> String {
        escaped(&path.strip_prefix(&self.root).unwrap_or(path).display().to_string()).into_owned()
    }

    /// `; junit reports/junit.xml`, or `; junit NOT written to ...: why`, for each output
    /// beside the JSON report.
    fn others(&self, written: &[Written]) -> String {
        let mut text = String::new();
        for w in written.iter().filter(|w| w.output != Output::Report) {
            let what = w.output.name();
            let shown = self.shown(&w.path);
            text.push_str(&match &w.outcome {
                Ok(Some(detail)) => format!("; {what} {shown} ({detail})"),
                Ok(None) => format!("; {what} {shown}"),
                Err(e) => format!("; {what} NOT written to {shown}: {e}"),
            });
        }
        text
    }

    fn closing_lines(&mut self, run: &RunReport, summary: &Summary, written: &[Written]) {
        if self.timings {
            for line in crate::phases::timings_table(run, TIMINGS_ROWS) {
                self.say(&line);
            }
        }
        let report = match written.iter().find(|w| w.output == Output::Report) {
            Some(Written { path, outcome: Ok(_), .. }) => self.shown(path),
            Some(Written { path, outcome: Err(e), .. }) => format!("NOT written to {}: {e}", self.shown(path)),
            None => "not written".into(),
        };
        let others = self.others(written);
        self.say(&format!(
            "ran {} records and {} controls in {:.2} s ({}); report {report}{others}",
            run.records.len(),
            run.controls.len(),
            run.timing.total_seconds,
            crate::phases::builds_and_records(&run.timing, false, "launches and gates"),
        ));
        if summary.load_errors > 0 {
            self.say(&format!("{} contract or control file(s) could not be loaded: see the error lines above", summary.load_errors));
        }
        self.say(&summary.line());
    }

    /// An interrupted run: what ended it, where its report went, and (but after `exit()`, whose
    /// message is on standard error) the SUMMARY of what finished.
    fn interrupted_lines(&mut self, run: &RunReport, summary: &Summary, written: &[Written]) {
        if let Some(line) = report::interrupted_line(run) {
            self.say(&line);
        }
        for w in written {
            let path = w.path.strip_prefix(&self.root).unwrap_or(&w.path).display().to_string();
            let what = w.output.name();
            match &w.outcome {
                Ok(_) => self.say(&format!("{what} {path}")),
                Err(e) => self.say(&format!("{what} NOT written to {path}: {e}")),
            }
        }
        if run.interrupted.as_deref() != Some("exit()") {
            self.say(&summary.line());
        }
    }
}

impl Reporter for TextReporter {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Started { arch, backend, toolchain, .. } => {
                if let Some(replay) = &mut self.replay {
                    replay.backend = backend.to_string();
                    replay.arch = arch.to_string();
                }
                let line = format!(
                    "kernel-contracts {}: backend {backend} ({arch}), {toolchain}; seed {:#x}",
                    env!("CARGO_PKG_VERSION"),
                    self.seed
                );
                self.say(&line)
            }
            Event::ContractError(e) => self.say(&report::contract_error_line(e)),
            Event::Notice(line) => self.say(line),
            Event::NotApplicable { arch, controls } => self.listed("control", arch, controls),
            Event::CasesNotRun { arch, cases } => self.listed("shape case", arch, cases),
            Event::Record(r) | Event::Control(r) => {
                self.say(&report::record_line(r));
                if let Some(command) = self.replay.as_ref().and_then(|replay| replay.command(r)) {
                    self.say(&format!("    replay: {}", escaped(&command)));
                }
                for line in report::detail_lines(r) {
                    self.say(&line);
                }
            }
            Event::Planned { .. } | Event::RecordStarted { .. } | Event::CaseFinished(_) | Event::CaseData(_) | Event::Finished(_) => {}
        }
    }

    fn close(&mut self, run: &RunReport, summary: &Summary, written: &[Written]) {
        if !self.closing {
            return;
        }
        if run.interrupted.is_some() { self.interrupted_lines(run, summary, written) } else { self.closing_lines(run, summary, written) }
    }
}
