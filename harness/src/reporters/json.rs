//! The JSON report: the run's records, controls, figures and timings, written whole or not
//! at all, only to a regular file, when the run is over (or interrupted).

use std::path::{Path, PathBuf};

use super::{Output, Reporter, Written};
use crate::report::{self, Summary};
use crate::runner::{Event, RunReport};

pub struct JsonReporter {
    /// `--report`, else `<root>/reports/last/<arch>.json` once the arch is known.
    path: Option<PathBuf>,
    root: PathBuf,
}

impl JsonReporter {
    pub fn new(path: Option<PathBuf>, root: &Path) -> JsonReporter {
        JsonReporter { path, root: root.to_path_buf() }
    }

    /// Where the report of a run on `arch` goes.
    pub fn path_for(&self, arch: &str) -> PathBuf {
        self.path.clone().unwrap_or_else(|| default_path(&self.root, arch))
    }
}

/// `<root>/reports/last/<arch>.json`.
pub fn default_path(root: &Path, arch: &str) -> PathBuf {
    root.join("reports/last").join(format!("{arch}.json"))
}

impl Reporter for JsonReporter {
    fn event(&mut self, event: &Event) {
        if let Event::Started { arch, .. } = event {
            self.path = Some(self.path_for(arch));
        }
    }

    fn write(&mut self, run: &RunReport, summary: &Summary) -> Option<Written> {
        let path = self.path_for(&run.arch);
        let outcome = report::write_json(&path, run, summary).map(|()| None).map_err(|e| e.to_string());
        Some(Written { output: Output::Report, path, outcome })
    }
}
