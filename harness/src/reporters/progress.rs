//! A progress bar on a terminal: records and controls done of those planned, the one in
//! flight and its cases. None when standard output or standard error is not a terminal (a CI
//! log, a pipe), where it would only be noise between the lines.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Reporter;
use crate::runner::Event;

pub struct ProgressReporter {
    bar: ProgressBar,
    /// Cases finished of the record in flight.
    cases: usize,
}

/// The bar, drawn on standard error, when both standard output and standard error are a
/// terminal; the text reporter prints its lines through `ProgressBar::suspend` on it.
pub fn terminal_bar() -> Option<ProgressBar> {
    draws(std::io::stdout().is_terminal(), std::io::stderr().is_terminal()).then(|| bar(ProgressDrawTarget::stderr()))
}

/// Whether a bar is drawn: only where a person watches both streams.
pub fn draws(stdout_terminal: bool, stderr_terminal: bool) -> bool {
    stdout_terminal && stderr_terminal
}

pub fn bar(target: ProgressDrawTarget) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target);
    let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
        .expect("a valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

impl ProgressReporter {
    pub fn new(bar: ProgressBar) -> ProgressReporter {
        ProgressReporter { bar, cases: 0 }
    }
}

impl Reporter for ProgressReporter {
    fn event(&mut self, event: &Event) {
        match event {
            Event::Planned { records, controls } => self.bar.set_length((records + controls) as u64),
            Event::RecordStarted { op, record, control } => {
                self.cases = 0;
                let what = control.unwrap_or(record);
                self.bar.set_message(format!("{op} ({what})"));
            }
            Event::CaseFinished(done) => {
                self.cases += 1;
                let what = done.control.as_deref().unwrap_or(&done.record);
                self.bar.set_message(format!("{} ({what}): {} cases done", done.op, self.cases));
            }
            Event::Record(_) | Event::Control(_) => self.bar.inc(1),
            Event::Finished(_) => self.bar.finish_and_clear(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::CaseDone;

    #[test]
    fn the_bar_counts_what_finished_of_what_was_planned_and_only_on_a_terminal() {
        assert!(draws(true, true));
        assert!(!draws(false, true) && !draws(true, false) && !draws(false, false));
        let bar = bar(ProgressDrawTarget::hidden());
        let mut reporter = ProgressReporter::new(bar.clone());
        reporter.event(&Event::Planned { records: 3, controls: 2 });
        reporter.event(&Event::RecordStarted { op: "tf_add", record: "f32", control: None });
        let done = CaseDone {
            op: "tf_add".into(),
            record: "f32".into(),
            control: None,
            case_index: 0,
            case: "{rows = 1, k = 1}".into(),
            planted: false,
            failures: 0,
        };
        reporter.event(&Event::CaseFinished(&done));
        assert_eq!((bar.length(), bar.position()), (Some(5), 0));
        assert_eq!(bar.message(), "tf_add (f32): 1 cases done");
        let report = crate::runner::RunReport::empty("host-x86_64", "host", "g++", &crate::runner::tests_settings(), 3, &[]);
        let record: crate::runner::RecordResult = serde_json::from_str(RECORD).unwrap();
        reporter.event(&Event::Record(&record));
        assert_eq!(bar.position(), 1);
        reporter.event(&Event::Finished(&report));
        assert!(bar.is_finished());
    }

    const RECORD: &str = r#"{"op":"tf_add","record":"f32","contract_file":"contracts/tf_add.toml","control":null,"outcome":"pass",
        "gates_run":[],"failures":[],"findings":[],"stale_findings":[],"error":null,"tolerances":{},"cases":[],"limits":null,"seconds":0.0}"#;
}
