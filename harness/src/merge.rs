//! `contracts merge A.json B.json ...`: the reports of a partitioned run's jobs as the one run
//! they are parts of. Reports of another arch, backend, seed, repeat count, gate list or
//! harness version are refused, and so is a record or control in two of them (jobs that
//! overlap); what each job reports of the whole (files that did not load) is kept once.

use std::path::{Path, PathBuf};

use crate::report_file::{ErrorEntry, ReportFile};
use crate::runner::{RecordResult, RunReport, Timing};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no report to merge")]
    Nothing,
    #[error("{a} and {b} are of different {what} ({a_value} and {b_value}): only the jobs of one run merge")]
    Differ { what: &'static str, a: String, a_value: String, b: String, b_value: String },
    #[error("{title} is in both {a} and {b}: their jobs overlap (give each job its own --partition k/n)")]
    Overlap { title: String, a: String, b: String },
}

/// What must be the same in every job of one run, as (what, value).
fn identity(r: &ReportFile) -> [(&'static str, String); 6] {
    [
        ("harness versions", format!("{} {}", r.tool, r.version)),
        ("archs", r.arch.clone()),
        ("backends", r.backend.clone()),
        ("seeds", format!("{:#x}", r.seed)),
        ("repeat counts", r.repeats.to_string()),
        ("gate lists", format!("{:?}", r.gates_run)),
    ]
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// Records in the order one run reports them: by contract file, each file's records in the
/// order the report has them; controls by folder, then file.
fn sort_like_a_run(records: &mut [(usize, RecordResult)], controls: bool) {
    records.sort_by(|(ia, a), (ib, b)| {
        let place = |r: &RecordResult| match (&r.control, controls) {
            (Some(c), true) => {
                let path = Path::new(&c.file);
                (path.parent().map(|p| p.display().to_string()).unwrap_or_default(), c.file.clone())
            }
            _ => (String::new(), r.contract_file.clone()),
        };
        place(a).cmp(&place(b)).then(ia.cmp(ib))
    });
}

/// One list's results, refusing one that two reports hold.
fn union(
    reports: &[(PathBuf, ReportFile)],
    pick: fn(&ReportFile) -> &Vec<RecordResult>,
    controls: bool,
) -> Result<Vec<RecordResult>, MergeError> {
    let mut seen: Vec<(String, String, Option<String>, usize)> = Vec::new();
    let mut all: Vec<(usize, RecordResult)> = Vec::new();
    for (i, (_, report)) in reports.iter().enumerate() {
        for r in pick(report) {
            let key = (r.op.clone(), r.record.clone(), r.control.as_ref().map(|c| c.file.clone()));
            if let Some(first) = seen.iter().find(|(op, record, control, _)| (op, record, control) == (&key.0, &key.1, &key.2)) {
                let title = match &r.control {
                    Some(c) => format!("control {}", c.file),
                    None => format!("{} ({})", r.op, r.record),
                };
                return Err(MergeError::Overlap { title, a: shown(&reports[first.3].0), b: shown(&reports[i].0) });
            }
            seen.push((key.0, key.1, key.2, i));
            all.push((all.len(), r.clone()));
        }
    }
    sort_like_a_run(&mut all, controls);
    Ok(all.into_iter().map(|(_, r)| r).collect())
}

fn dedup<T: PartialEq + Clone>(lists: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in lists {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// The jobs' reports as one run: their records and controls in a run's order, the lines each
/// job reports of the whole once, the timings summed, the first interruption kept.
pub fn merge(reports: Vec<(PathBuf, ReportFile)>) -> Result<RunReport, MergeError> {
    let (first_path, first) = reports.first().ok_or(MergeError::Nothing)?;
    for (path, report) in &reports[1..] {
        for ((what, a_value), (_, b_value)) in identity(first).into_iter().zip(identity(report)) {
            if a_value != b_value {
                return Err(MergeError::Differ { what, a: shown(first_path), a_value, b: shown(path), b_value });
            }
        }
    }
    let records = union(&reports, |r| &r.records, false)?;
    let controls = union(&reports, |r| &r.controls, true)?;
    let errors: Vec<(String, usize, String, String)> = dedup(
        reports.iter().flat_map(|(_, r)| r.contract_errors.iter().map(|e| (e.file.clone(), e.line, e.key.clone(), e.message.clone()))),
    );
    let mut timing = Timing::default();
    for (_, r) in &reports {
        timing.build_seconds += r.timing.build_seconds;
        timing.run_seconds += r.timing.run_seconds;
        timing.total_seconds += r.timing.total_seconds;
        timing.before_seconds += r.timing.before_seconds;
        timing.modules_built += r.timing.modules_built;
        timing.processes += r.timing.processes;
        let (starts, of) = (&mut timing.process_starts, &r.timing.process_starts);
        (starts.ahead, starts.build, starts.spare, starts.on_demand) =
            (starts.ahead + of.ahead, starts.build + of.build, starts.spare + of.spare, starts.on_demand + of.on_demand);
        timing.processes_ended.extend(r.timing.processes_ended.iter().cloned());
        // each run's budget was its machine's: the first run's that had units of gigabytes
        if timing.large_units.units.is_empty() {
            (timing.large_units.host_budget, timing.large_units.device_budget) =
                (r.timing.large_units.host_budget, r.timing.large_units.device_budget);
        }
        timing.large_units.units.extend(r.timing.large_units.units.iter().cloned());
    }
    let interrupted = reports.iter().find_map(|(_, r)| r.interrupted.clone());
    let controls_not_applicable = dedup(reports.iter().flat_map(|(_, r)| r.controls_not_applicable.iter().cloned()));
    let cases_not_run = dedup(reports.iter().flat_map(|(_, r)| r.cases_not_run.iter().cloned()));
    let first = &reports[0].1;
    Ok(RunReport {
        arch: first.arch.clone(),
        backend: first.backend.clone(),
        toolchain: first.toolchain.clone(),
        seed: first.seed,
        repeats: first.repeats,
        gates_run: first.gates_run.clone(),
        contract_errors: errors.into_iter().map(|(file, line, key, message)| ErrorEntry { file, line, key, message }.to_error()).collect(),
        records,
        controls,
        controls_not_applicable,
        cases_not_run,
        timing,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(seed: u64, records: &[(&str, &str)], controls: &[&str]) -> ReportFile {
        let record = |op: &str, name: &str, control: Option<&str>| {
            serde_json::json!({
                "op": op, "record": name, "contract_file": format!("contracts/{op}.toml"),
                "control": control.map(|file| serde_json::json!({"file": file, "bug": "b", "planted": {"gate": "shapes"}, "source": "x.hip"})),
                "outcome": if control.is_some() { "red_as_planted" } else { "pass" },
                "gates_run": ["shapes"], "failures": [], "findings": [], "stale_findings": [], "error": null,
                "tolerances": {}, "cases": [], "limits": null, "seconds": 0.5
            })
        };
        serde_json::from_value(serde_json::json!({
            "tool": "kernel-contracts", "version": "0.1.0", "arch": "host-x86_64", "backend": "host", "toolchain": "g++",
            "seed": seed, "repeats": 3, "gates_run": ["nonfinite", "repeat", "shapes"],
            "records": records.iter().map(|(op, name)| record(op, name, None)).collect::<Vec<_>>(),
            "controls": controls.iter().map(|file| record("tf_add", "f32", Some(file))).collect::<Vec<_>>(),
            "contract_errors": [{"file": "contracts/bad.toml", "line": 2, "key": "colour", "message": "unknown field"}],
            "timing": {"build_seconds": 1.0, "run_seconds": 2.0, "total_seconds": 3.0, "modules_built": 4}
        }))
        .unwrap()
    }

    #[test]
    fn jobs_merge_into_one_run_in_a_runs_order() {
        let a = report(1, &[("tf_rms", "f32"), ("tf_rms", "f16")], &["controls/limits/z.toml", "controls/b.toml"]);
        let b = report(1, &[("tf_add", "f32")], &["controls/a.toml"]);
        let run = merge(vec![("a.json".into(), a), ("b.json".into(), b)]).unwrap();
        let records: Vec<String> = run.records.iter().map(|r| format!("{} ({})", r.op, r.record)).collect();
        assert_eq!(records, ["tf_add (f32)", "tf_rms (f32)", "tf_rms (f16)"]);
        let controls: Vec<&str> = run.controls.iter().map(|r| r.control.as_ref().unwrap().file.as_str()).collect();
        assert_eq!(controls, ["controls/a.toml", "controls/b.toml", "controls/limits/z.toml"]);
        assert_eq!(run.contract_errors.len(), 1);
        assert_eq!((run.timing.total_seconds, run.timing.modules_built), (6.0, 8));
    }

    #[test]
    fn reports_of_other_runs_or_overlapping_jobs_are_refused() {
        let e = merge(vec![("a.json".into(), report(1, &[], &[])), ("b.json".into(), report(2, &[], &[]))]).unwrap_err();
        assert_eq!(e.to_string(), "a.json and b.json are of different seeds (0x1 and 0x2): only the jobs of one run merge");
        let mut other = report(1, &[], &[]);
        other.arch = "gfx1201".into();
        let e = merge(vec![("a.json".into(), report(1, &[], &[])), ("b.json".into(), other)]).unwrap_err();
        assert!(e.to_string().contains("different archs (host-x86_64 and gfx1201)"), "{e}");
        let mut newer = report(1, &[], &[]);
        newer.version = "0.2.0".into();
        let e = merge(vec![("a.json".into(), report(1, &[], &[])), ("b.json".into(), newer)]).unwrap_err();
        assert!(e.to_string().contains("different harness versions (kernel-contracts 0.1.0 and kernel-contracts 0.2.0)"), "{e}");
        let e =
            merge(vec![("a.json".into(), report(1, &[("tf_add", "f32")], &[])), ("b.json".into(), report(1, &[("tf_add", "f32")], &[]))])
                .unwrap_err();
        assert_eq!(e.to_string(), "tf_add (f32) is in both a.json and b.json: their jobs overlap (give each job its own --partition k/n)");
        assert!(matches!(merge(Vec::new()), Err(MergeError::Nothing)));
    }
}
