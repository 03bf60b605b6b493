//! A JSON report read back (`contracts diff`, `contracts merge`): the run as the report holds
//! it, refused with the reason when the file cannot be read or is no report of this tool.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::contract::ContractError;
use crate::gate::Gate;
use crate::runner::{RecordResult, RunReport, Timing};

/// The `tool` field every report carries.
pub const TOOL: &str = "kernel-contracts";

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a JSON report of {TOOL} ({source})")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}: a JSON file, but not a report of {TOOL} (its `tool` is {tool:?})")]
    NotAReport { path: PathBuf, tool: String },
}

/// A report as written by `report::json`.
#[derive(Debug, Deserialize)]
pub struct ReportFile {
    pub tool: String,
    pub version: String,
    pub arch: String,
    pub backend: String,
    pub toolchain: String,
    pub seed: u64,
    pub repeats: usize,
    pub gates_run: Vec<Gate>,
    #[serde(default)]
    pub contract_errors: Vec<ErrorEntry>,
    pub records: Vec<RecordResult>,
    pub controls: Vec<RecordResult>,
    #[serde(default)]
    pub controls_not_applicable: Vec<String>,
    #[serde(default)]
    pub cases_not_run: Vec<String>,
    #[serde(default)]
    pub timing: Timing,
    #[serde(default)]
    pub interrupted: Option<String>,
}

/// A contract error as the report holds it.
#[derive(Clone, Debug, Deserialize)]
pub struct ErrorEntry {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

impl ErrorEntry {
    pub fn to_error(&self) -> ContractError {
        ContractError { file: self.file.clone(), line: self.line, key: self.key.clone(), message: self.message.clone() }
    }
}

/// Reads a report; what cannot be read says which file and why.
pub fn read(path: &Path) -> Result<ReportFile, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io { path: path.to_path_buf(), source })?;
    let head: serde_json::Value = serde_json::from_str(&text).map_err(|source| ReadError::Json { path: path.to_path_buf(), source })?;
    let tool = head.get("tool").and_then(|t| t.as_str()).unwrap_or("(none)");
    if tool != TOOL {
        return Err(ReadError::NotAReport { path: path.to_path_buf(), tool: tool.to_string() });
    }
    serde_json::from_value(head).map_err(|source| ReadError::Json { path: path.to_path_buf(), source })
}

impl ReportFile {
    /// The run it reports, as the reporters take it.
    pub fn into_run(self) -> RunReport {
        RunReport {
            arch: self.arch,
            backend: self.backend,
            toolchain: self.toolchain,
            seed: self.seed,
            repeats: self.repeats,
            gates_run: self.gates_run,
            contract_errors: self.contract_errors.iter().map(ErrorEntry::to_error).collect(),
            records: self.records,
            controls: self.controls,
            controls_not_applicable: self.controls_not_applicable,
            cases_not_run: self.cases_not_run,
            timing: self.timing,
            interrupted: self.interrupted,
        }
    }
}
