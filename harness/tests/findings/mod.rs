//! Known findings cover one failure shape, no more: a repository of its own whose
//! tf_copy_cols kernel writes one element past the output (the guard band, in cases 0, 2 and
//! 3 of its contract) and reads one past the input (the host's bounds checks), with findings
//! per record that cover those failures exactly, or miss them by tensor, by message, by case
//! or by arch.

use crate::{contracts, copy_dir, root};

/// Records added to the real contract, each named for what its finding does.
const RECORDS: &str = r#"[[record]]
name = "f32, cases 0 and 2"
dtypes = { in = "f32", out = "f32" }
params = { start = 0 }

[[record]]
name = "f32, cases 0, 2 and 3"
dtypes = { in = "f32", out = "f32" }
params = { start = 0 }

[[record]]
name = "f32, another arch"
dtypes = { in = "f32", out = "f32" }
params = { start = 0 }

[shapes]"#;

fn finding(record: &str, arch: &str, lines: &str) -> String {
    format!("\n[[finding]]\ngate = \"shapes\"\narch = \"{arch}\"\nrecord = \"{record}\"\n{lines}\nreason = \"writes one past the end\"\n")
}

/// The contract: the real one, three more records, and a finding for each record.
fn contract() -> String {
    let real = std::fs::read_to_string(root().join("contracts/tf_copy_cols.toml")).unwrap();
    assert!(real.contains("\n[shapes]"));
    let host = format!("host-{}", std::env::consts::ARCH);
    // the output's guard band and the host's bounds check of each tensor name `past the end`
    let guard = "tensor = \"out\"\nmatches = \"past the end\"";
    let read = "tensor = \"in\"\nmatches = \"past the end of `in`\"";
    [
        real.replacen("[shapes]", RECORDS, 1),
        finding("f32, leading columns", &host, guard),
        finding("f32, leading columns", &host, read),
        finding("f16, from column 7", &host, "tensor = \"in\"\nmatches = \"guard band written\""),
        finding("bf16, trailing columns", &host, "tensor = \"out\"\nmatches = \"elements differ\""),
        finding("f32, cases 0 and 2", &host, &format!("{guard}\ncases = [0, 2]")),
        finding("f32, cases 0 and 2", &host, &format!("{read}\ncases = [0, 2]")),
        finding("f32, cases 0, 2 and 3", &host, &format!("{guard}\ncases = [0, 2, 3]")),
        finding("f32, cases 0, 2 and 3", &host, &format!("{read}\ncases = [0, 2, 3]")),
        finding("f32, another arch", "sm_90", guard),
    ]
    .concat()
}

#[test]
fn a_finding_covers_only_its_tensor_message_cases_and_arch_and_claims_no_closeness() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    for folder in ["contracts", "controls"] {
        std::fs::create_dir_all(base.join(folder)).unwrap();
    }
    copy_dir(&root().join("kernels"), &base.join("kernels"));
    std::fs::copy(root().join("controls/copy_cols_bound_off_by_one.hip"), base.join("kernels/tf_copy_cols.hip")).unwrap();
    std::fs::write(base.join("contracts/tf_copy_cols.toml"), contract()).unwrap();
    let report = base.join("r.json");
    let (code, lines, stderr) = contracts(&["--root", base.to_str().unwrap(), "--no-controls", "--report", report.to_str().unwrap()]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    // the lines as the run said them, for `--nocapture`
    println!("{output}");
    let line = |record: &str| {
        lines.iter().find(|l| l.starts_with(&format!("tf_copy_cols ({record}) "))).unwrap_or_else(|| panic!("{record}: {output}")).clone()
    };

    for known in ["f32, leading columns", "f32, cases 0, 2 and 3"] {
        let l = line(known);
        assert!(
            l.contains(" pass nonfinite, repeat, shapes and seams with known finding at shapes (out): writes one past the end; "),
            "{l}"
        );
        assert!(l.contains("out not claimed (known finding)") && !l.contains("exact"), "{l}");
        assert!(l.contains("shapes (in): writes one past the end"), "{l}");
    }
    let other_tensor = line("f16, from column 7");
    assert!(other_tensor.contains(" FAIL at shapes: ") && other_tensor.contains("not covered by a known finding"), "{other_tensor}");
    assert!(other_tensor.contains("is stale: no failure of `in` says `guard band written`"), "{other_tensor}");
    let other_message = line("bf16, trailing columns");
    assert!(
        other_message.contains(" FAIL at shapes: ") && other_message.contains("no failure of `out` says `elements differ`"),
        "{other_message}"
    );
    let other_case = line("f32, cases 0 and 2");
    assert!(other_case.contains("not covered by a known finding: shapes in case {rows = 5, k = 289, width = 257}: "), "{other_case}");
    assert!(!other_case.contains("stale"), "{other_case}");
    let other_arch = line("f32, another arch");
    assert!(other_arch.contains(" FAIL at shapes: ") && !other_arch.contains("known finding"), "{other_arch}");

    assert_eq!(code, 1, "{output}");
    let host = format!("host-{}", std::env::consts::ARCH);
    assert_eq!(
        lines.last().unwrap(),
        &format!(
            "SUMMARY {host} 6 kernels: 2 pass gates 1-5, 4 fail, 2 known findings; 0 controls: 0 red as planted, 0 missed; 0 limit problems"
        ),
        "{output}"
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let outcomes: Vec<&str> = json["records"].as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["known_finding", "fail", "fail", "fail", "known_finding", "fail"], "{output}");
    assert_eq!(json["records"][0]["covered_tensors"], serde_json::json!(["in", "out"]));
}
