//! kernel-contracts: every kernel of the engine under a declarative contract, run through
//! the engine's own launchers, checked at gates against f64 oracles, with planted faulty
//! controls that prove the gates can go red.

pub mod budget;
pub mod builds;
mod checked;
pub mod confine;
pub mod contract;
pub mod coverage;
pub mod diff;
pub mod events;
pub mod exit_guard;
pub mod format;
pub mod gate;
pub mod gates;
pub mod inputs;
pub mod isolation;
pub mod limits;
pub mod merge;
pub mod mutate;
pub mod ops_table;
pub mod oracle;
pub mod phases;
pub mod processes;
pub mod record;
pub mod replay;
pub mod report;
pub mod report_file;
pub mod reporters;
pub mod runner;
pub mod sandbox;
pub mod scaffold;
pub mod scale;
pub mod seams;
pub mod selection;
pub mod text;
pub mod tolerance;
pub mod triage;
