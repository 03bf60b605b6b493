//! A small run for the reporters' tests: a record that passed, one that failed (with its
//! triage), one that errored, a control red as planted, one missed, one not run here and a
//! file that did not load.

use crate::runner::{RecordResult, RunReport};

fn record(op: &str, name: &str, outcome: &str, extra: serde_json::Value) -> RecordResult {
    let mut r = serde_json::json!({
        "op": op, "record": name, "contract_file": format!("contracts/{op}.toml"), "control": null, "outcome": outcome,
        "gates_run": ["nonfinite", "repeat", "shapes"], "failures": [], "findings": [], "stale_findings": [], "error": null,
        "tolerances": {"out": "exact"}, "limits": null, "seconds": 0.25,
        "cases": [{"symbols": {"rows": 2, "k": 3}, "seeds": {}, "blocks": 1, "switches": 0, "inactive_lane_reads": 0, "block_threads": 256,
            "outputs": {"out": {"elements": 6, "mismatches": 0, "max_abs_error": 0.0, "mean_abs_error": 0.0, "max_ulp": 0}}}]
    });
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    serde_json::from_value(r).unwrap()
}

fn shapes_failure(message: &str) -> serde_json::Value {
    serde_json::json!([{"gate": "shapes", "case_index": 0, "case": "{rows = 2, k = 3}", "tensor": "out",
        "failure": {"count": 2, "total": 6, "first": [0, 1], "message": message}, "also": [], "failing_cases": [0]}])
}

fn control(bug: &str, outcome: &str, failures: serde_json::Value) -> RecordResult {
    let control = serde_json::json!({"file": "controls/add_twice.toml", "bug": bug, "planted": {"gate": "shapes"}, "source": "controls/add_twice.hip"});
    record("tf_add", "f32", outcome, serde_json::json!({"control": control, "failures": failures}))
}

/// The run, with a triage of the failing record's output.
pub fn run() -> RunReport {
    let message = "2 of 6 elements differ, first [0, 1]: got 2.000 (0x40000000) want 1.000 (0x3f800000)";
    let mut failing = record("tf_add", "f16 & <bf16>", "fail", serde_json::json!({"failures": shapes_failure(message)}));
    let got: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 7.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let site = crate::triage::Site { gate: crate::gate::Gate::Shapes, case_index: 0, case: "{rows = 2, k = 3}", tensor: "out" };
    let want = [1.0, 1.0, 3.0, 4.0, 5.0, 6.0];
    failing.triage = vec![crate::triage::summarize(&site, engine::DType::F32, &[2, 3], &got, &want, &crate::tolerance::Tolerance::Exact)];
    let errored = record(
        "tf_rms",
        "f32",
        "error",
        serde_json::json!({"error": "compiling kernels/tf_rms.hip failed:\nkernels/tf_rms.hip:3: error: 'x' was not declared", "cases": []}),
    );
    let mut report = RunReport::empty("host-x86_64", "host", "g++ 12", &crate::runner::tests_settings(), 3, &[]);
    report.gates_run = failing.gates_run.clone();
    report.records = vec![record("tf_add", "f32", "pass", serde_json::json!({})), failing, errored];
    report.controls =
        vec![control("adds twice", "red_as_planted", shapes_failure(message)), control("adds nothing", "missed", serde_json::json!([]))];
    report.controls_not_applicable = vec!["controls/faults/far_write_gpu.toml (device-fault): a device fault needs a GPU".into()];
    report.contract_errors = vec![crate::contract::ContractError {
        file: "contracts/bad.toml".into(),
        line: 3,
        key: "colour".into(),
        message: "unknown field `colour`".into(),
    }];
    report.timing.total_seconds = 1.5;
    report
}
