//! `contracts diff BASE.json NEW.json`: two reports compared record by record and control by
//! control: verdicts that changed, outputs whose error grew (largest ulp distance, mean
//! absolute error), limits that moved, records that are new or vanished, and record lines
//! whose text changed (a word diff). A regression is a pass that became a failure or an error,
//! a control red as planted that became missed, error growth past the stated thresholds, or a
//! recorded figure that moved.

use std::collections::BTreeMap;

use similar::{ChangeTag, TextDiff};

use crate::report::record_line;
use crate::report_file::ReportFile;
use crate::runner::{Outcome, RecordResult};

/// How much error may grow before it is a regression.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// ulps an output's largest distance from the oracle may grow by.
    pub max_ulp_growth: u64,
    /// The fraction an output's mean absolute error may grow by (0.1: 10%).
    pub mean_error_growth: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { max_ulp_growth: 0, mean_error_growth: 0.0 }
    }
}

/// One thing that changed about a record or control.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub regression: bool,
    pub text: String,
}

/// A record (or control) in either report, and what changed about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// `tf_add (f32)`, or `tf_add control (bug)`.
    pub title: String,
    pub kind: Kind,
    pub changes: Vec<Change>,
    /// The record line's text, word by word, where it changed.
    pub line_diff: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Both,
    New,
    Vanished,
}

impl Entry {
    pub fn regression(&self) -> bool {
        self.changes.iter().any(|c| c.regression)
    }
}

/// The two reports compared.
#[derive(Debug)]
pub struct Diff {
    pub header: String,
    pub notes: Vec<String>,
    pub entries: Vec<Entry>,
    pub compared_records: usize,
    pub compared_controls: usize,
    pub arch: String,
}

fn verdict(o: &Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::KnownFinding => "pass with known finding",
        Outcome::Fail => "FAIL",
        Outcome::Error => "ERROR",
        Outcome::RedAsPlanted => "red as planted",
        Outcome::Missed => "MISSED",
    }
}

/// A record's key across reports: op and record, and for a control its bug.
fn key(r: &RecordResult) -> (String, String, Option<String>) {
    (r.op.clone(), r.record.clone(), r.control.as_ref().map(|c| c.bug.clone()))
}

fn title(r: &RecordResult) -> String {
    match &r.control {
        Some(c) => format!("{} control ({})", r.op, c.bug),
        None => format!("{} ({})", r.op, r.record),
    }
}

/// Per output, over the record's cases: the largest ulp distance and the mean absolute error
/// weighted by elements.
fn error_figures(r: &RecordResult) -> BTreeMap<String, (u64, f64)> {
    let mut sums: BTreeMap<String, (u64, f64, usize)> = BTreeMap::new();
    for case in &r.cases {
        for (output, m) in &case.outputs {
            let entry = sums.entry(output.clone()).or_insert((0, 0.0, 0));
            entry.0 = entry.0.max(m.max_ulp);
            entry.1 += m.mean_abs_error * m.elements as f64;
            entry.2 += m.elements;
        }
    }
    sums.into_iter().map(|(k, (ulp, sum, n))| (k, (ulp, if n > 0 { sum / n as f64 } else { 0.0 }))).collect()
}

fn regressed(base: &Outcome, new: &Outcome) -> bool {
    matches!(
        (base, new),
        (Outcome::Pass | Outcome::KnownFinding, Outcome::Fail | Outcome::Error) | (Outcome::RedAsPlanted, Outcome::Missed)
    )
}

fn error_changes(base: &RecordResult, new: &RecordResult, t: &Thresholds) -> Vec<Change> {
    let (before, after) = (error_figures(base), error_figures(new));
    let mut changes = Vec::new();
    for (output, (ulp, mean)) in &after {
        let Some((was_ulp, was_mean)) = before.get(output) else { continue };
        if ulp != was_ulp {
            let grew = ulp.saturating_sub(*was_ulp);
            let regression = grew > t.max_ulp_growth;
            let why =
                if regression { format!(" (grew by {grew}, more than --max-ulp-growth {})", t.max_ulp_growth) } else { String::new() };
            changes.push(Change { regression, text: format!("{output} max ulp {was_ulp} -> {ulp}{why}") });
        }
        if mean != was_mean && mean.is_finite() && was_mean.is_finite() {
            let regression = *mean > was_mean * (1.0 + t.mean_error_growth);
            let why = if regression { format!(" (grew by more than --mean-error-growth {})", t.mean_error_growth) } else { String::new() };
            changes.push(Change { regression, text: format!("{output} mean abs error {was_mean:.3e} -> {mean:.3e}{why}") });
        }
    }
    changes
}

fn limit_changes(base: &RecordResult, new: &RecordResult) -> Vec<Change> {
    let (Some(before), Some(after)) = (&base.limits, &new.limits) else { return Vec::new() };
    let mut figures: Vec<&String> = before.figures.keys().chain(after.figures.keys()).collect();
    figures.sort();
    figures.dedup();
    let show = |v: Option<&u64>| v.map_or("none".to_string(), u64::to_string);
    let moved: Vec<String> = figures
        .into_iter()
        .filter(|f| before.figures.get(*f) != after.figures.get(*f))
        .map(|f| format!("{f} {} -> {}", show(before.figures.get(f)), show(after.figures.get(f))))
        .collect();
    if moved.is_empty() { Vec::new() } else { vec![Change { regression: true, text: format!("limits moved: {}", moved.join(", ")) }] }
}

/// The change from `old` to `new`, word by word: `[-removed-]{+added+}` (as `git diff
/// --word-diff`), the spaces between two changed words kept inside one change.
pub fn word_diff(old: &str, new: &str) -> String {
    let diff = TextDiff::from_words(old, new);
    let changes: Vec<(ChangeTag, &str)> = diff.iter_all_changes().map(|c| (c.tag(), c.value())).collect();
    let mut out = String::new();
    let (mut removed, mut added) = (String::new(), String::new());
    let flush = |out: &mut String, removed: &mut String, added: &mut String| {
        if !removed.is_empty() {
            out.push_str(&format!("[-{removed}-]"));
        }
        if !added.is_empty() {
            out.push_str(&format!("{{+{added}+}}"));
        }
        removed.clear();
        added.clear();
    };
    for (i, (tag, text)) in changes.iter().enumerate() {
        match tag {
            ChangeTag::Delete => removed.push_str(text),
            ChangeTag::Insert => added.push_str(text),
            ChangeTag::Equal => {
                let changing = !removed.is_empty() || !added.is_empty();
                let between = changing && text.trim().is_empty() && changes.get(i + 1).is_some_and(|(t, _)| *t != ChangeTag::Equal);
                if between {
                    removed.push_str(text);
                    added.push_str(text);
                } else {
                    flush(&mut out, &mut removed, &mut added);
                    out.push_str(text);
                }
            }
        }
    }
    flush(&mut out, &mut removed, &mut added);
    out
}

fn compare(base: &RecordResult, new: &RecordResult, t: &Thresholds) -> Entry {
    let mut changes = Vec::new();
    if base.outcome != new.outcome {
        let text = format!("{} -> {}", verdict(&base.outcome), verdict(&new.outcome));
        changes.push(Change { regression: regressed(&base.outcome, &new.outcome), text });
    }
    if new.control.is_none() {
        changes.extend(error_changes(base, new, t));
    }
    changes.extend(limit_changes(base, new));
    let (was, is) = (record_line(base), record_line(new));
    let line_diff = (was != is).then(|| word_diff(&was, &is));
    Entry { title: title(new), kind: Kind::Both, changes, line_diff }
}

/// The two reports compared under the thresholds.
pub fn diff(base: &ReportFile, new: &ReportFile, t: &Thresholds) -> Diff {
    let header = format!(
        "contracts diff: base {} ({}, seed {:#x}, {} {}), new {} ({}, seed {:#x}, {} {})",
        base.arch, base.backend, base.seed, base.tool, base.version, new.arch, new.backend, new.seed, new.tool, new.version
    );
    let mut notes = Vec::new();
    if base.arch != new.arch || base.seed != new.seed {
        notes.push(format!(
            "note: the reports are of {}: their error figures come from other inputs or another device",
            if base.arch != new.arch { "different archs" } else { "different seeds" }
        ));
    }
    let mut entries = Vec::new();
    let (mut compared_records, mut compared_controls) = (0, 0);
    for (base_list, new_list, controls) in [(&base.records, &new.records, false), (&base.controls, &new.controls, true)] {
        let before: BTreeMap<_, &RecordResult> = base_list.iter().map(|r| (key(r), r)).collect();
        let after: BTreeMap<_, &RecordResult> = new_list.iter().map(|r| (key(r), r)).collect();
        for r in new_list {
            match before.get(&key(r)) {
                Some(b) => {
                    if controls {
                        compared_controls += 1
                    } else {
                        compared_records += 1
                    }
                    entries.push(compare(b, r, t));
                }
                None => entries.push(Entry {
                    title: title(r),
                    kind: Kind::New,
                    changes: vec![Change { regression: false, text: verdict(&r.outcome).to_string() }],
                    line_diff: None,
                }),
            }
        }
        for r in base_list.iter().filter(|r| !after.contains_key(&key(r))) {
            let text = format!("was {}", verdict(&r.outcome));
            entries.push(Entry {
                title: title(r),
                kind: Kind::Vanished,
                changes: vec![Change { regression: false, text }],
                line_diff: None,
            });
        }
    }
    Diff { header, notes, entries, compared_records, compared_controls, arch: new.arch.clone() }
}

impl Diff {
    pub fn regressions(&self) -> usize {
        self.entries.iter().filter(|e| e.regression()).count()
    }

    /// 1 on a regression, else 0 (2, a report that cannot be read, is the caller's).
    pub fn exit_code(&self) -> i32 {
        if self.regressions() > 0 { 1 } else { 0 }
    }

    /// What changed, regressions first, one line per record and change, then a `DIFF` line.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![self.header.clone()];
        lines.extend(self.notes.iter().cloned());
        let order = |e: &Entry| (!e.regression(), e.kind != Kind::Both);
        let mut shown: Vec<&Entry> = self.entries.iter().filter(|e| !e.changes.is_empty() || e.line_diff.is_some()).collect();
        shown.sort_by_key(|e| order(e));
        for e in &shown {
            let lead = match (e.kind, e.regression()) {
                (_, true) => "REGRESSION",
                (Kind::New, _) => "new",
                (Kind::Vanished, _) => "vanished",
                (Kind::Both, false) => "changed",
            };
            if e.changes.is_empty() {
                lines.push(format!("{lead} {}: its line reads otherwise", e.title));
            }
            for c in &e.changes {
                let lead = match (c.regression, e.kind) {
                    (true, _) => "REGRESSION",
                    (false, Kind::Both) => "changed",
                    _ => lead,
                };
                lines.push(format!("{lead} {}: {}", e.title, c.text));
            }
            if let Some(d) = &e.line_diff {
                lines.push(format!("    ~ {d}"));
            }
        }
        let count = |k: Kind| shown.iter().filter(|e| e.kind == k).count();
        let changed = shown.iter().filter(|e| e.kind == Kind::Both && !e.regression()).count();
        lines.push(format!(
            "DIFF {}: {} records and {} controls compared: {} regressions, {changed} changed, {} new, {} vanished",
            self.arch,
            self.compared_records,
            self.compared_controls,
            self.regressions(),
            count(Kind::New),
            count(Kind::Vanished)
        ));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report_file::ReportFile;

    fn report(records: serde_json::Value, controls: serde_json::Value) -> ReportFile {
        serde_json::from_value(serde_json::json!({
            "tool": "kernel-contracts", "version": "0.1.0", "arch": "host-x86_64", "backend": "host", "toolchain": "g++",
            "seed": 1, "repeats": 3, "gates_run": ["nonfinite", "repeat", "shapes"], "records": records, "controls": controls
        }))
        .unwrap()
    }

    fn record(op: &str, name: &str, outcome: &str, max_ulp: u64, mean: f64, limits: Option<u64>) -> serde_json::Value {
        let limits = limits.map(|vgprs| {
            serde_json::json!({"arch": "gfx1201", "source": "static", "compiler": "clang", "figures": {"vgprs": vgprs},
                "recorded": null, "budget": {}, "over_budget": [], "problems": []})
        });
        serde_json::json!({
            "op": op, "record": name, "contract_file": format!("contracts/{op}.toml"), "control": null, "outcome": outcome,
            "gates_run": ["shapes"], "failures": [], "findings": [], "stale_findings": [], "error": null,
            "tolerances": {"out": "ulp(4)"}, "limits": limits, "seconds": 0.1,
            "cases": [{"symbols": {}, "seeds": {}, "blocks": 1, "switches": 0, "inactive_lane_reads": 0, "block_threads": 256,
                "outputs": {"out": {"elements": 10, "mismatches": 0, "max_abs_error": 0.0, "mean_abs_error": mean, "max_ulp": max_ulp}}}]
        })
    }

    fn control(outcome: &str) -> serde_json::Value {
        let mut c = record("tf_add", "f32", outcome, 0, 0.0, None);
        c["control"] =
            serde_json::json!({"file": "controls/x.toml", "bug": "adds twice", "planted": {"gate": "shapes"}, "source": "controls/x.hip"});
        if outcome == "red_as_planted" {
            c["failures"] = serde_json::json!([{"gate": "shapes", "case_index": 0, "case": "{rows = 1}", "tensor": "out",
                "failure": {"count": 1, "total": 1, "first": [0], "message": "1 of 1 elements differ"}, "also": [], "failing_cases": [0]}]);
        }
        c
    }

    #[test]
    fn a_planted_regression_is_named_and_exits_1_and_the_rest_is_told() {
        let base = report(
            serde_json::json!([
                record("tf_add", "f32", "pass", 0, 0.0, None),
                record("tf_rms", "f32", "pass", 1, 1e-7, None),
                record("tf_rope", "f32", "pass", 2, 2e-7, Some(12)),
                record("tf_cast", "f32", "pass", 0, 0.0, None),
                record("tf_old", "f32", "pass", 0, 0.0, None)
            ]),
            serde_json::json!([control("red_as_planted")]),
        );
        let mut failed = record("tf_add", "f32", "fail", 0, 0.0, None);
        failed["failures"] = serde_json::json!([{"gate": "shapes", "case_index": 0, "case": "{rows = 1}", "tensor": "out",
            "failure": {"count": 1, "total": 10, "first": [0], "message": "1 of 10 elements differ, first [0]: got 1.000 (0x3f800000) want 0 (0x00000000)"},
            "also": [], "failing_cases": [0]}]);
        let new = report(
            serde_json::json!([
                failed,
                record("tf_rms", "f32", "pass", 3, 0.9e-7, None),
                record("tf_rope", "f32", "pass", 2, 2e-7, Some(14)),
                record("tf_cast", "f32", "pass", 0, 0.0, None),
                record("tf_new", "f32", "pass", 0, 0.0, None)
            ]),
            serde_json::json!([control("missed")]),
        );
        let d = diff(&base, &new, &Thresholds::default());
        assert_eq!(d.exit_code(), 1);
        insta::assert_snapshot!(d.lines().join("\n"));
        // within a stated threshold, the ulp growth is told but is no regression
        let lenient = diff(&base, &new, &Thresholds { max_ulp_growth: 2, mean_error_growth: 0.0 });
        assert!(lenient.lines().contains(&"changed tf_rms (f32): out max ulp 1 -> 3".to_string()), "{:?}", lenient.lines());
        assert_eq!(lenient.regressions(), 3);
        // a report against itself: nothing changed
        let same = diff(&base, &base, &Thresholds::default());
        assert_eq!((same.exit_code(), same.lines().len()), (0, 2));
    }

    #[test]
    fn word_diffs_mark_what_went_and_what_came() {
        assert_eq!(
            word_diff("tf_add (f32) pass nonfinite", "tf_add (f32) FAIL at nonfinite"),
            "tf_add (f32) [-pass-]{+FAIL at+} nonfinite"
        );
    }
}
