//! `contracts coverage` through the real binary: the per-kernel lines, the JSON report and
//! the SUMMARY for a couple of ops; a contract that loses the case reaching a branch drops
//! below the floor, names that branch and exits 1.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Exit status and standard output lines of `contracts coverage` with `args`, on the tests'
/// shared kernel cache.
fn coverage(args: &[&str]) -> (i32, Vec<String>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_contracts"))
        .arg("coverage")
        .args(args)
        .arg("--cache-dir")
        .arg(root().join("target/kernel-cache"))
        .current_dir(root())
        .output()
        .expect("run contracts coverage");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code().unwrap_or(-1), stdout.lines().map(str::to_string).collect(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() { copy_dir(&path, &target) } else { std::fs::copy(&path, &target).map(drop).unwrap() }
    }
}

#[test]
fn coverage_of_two_ops_prints_each_kernel_and_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("coverage.json");
    let (code, lines, stderr) = coverage(&["--only", "tf_argmax", "--only", "tf_silu_mul", "--report", report.to_str().unwrap()]);
    let all = lines.join("\n");
    assert_eq!(code, 0, "{all}\n{stderr}");
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("SUMMARY coverage host-x86_64 2 kernel sources: 2 at or above the 95% branch floor, 0 below; lines "),
        "{last}"
    );
    for (file, op) in [("kernels/tf_argmax.hip", "tf_argmax"), ("kernels/tf_silu_mul.hip", "tf_silu_mul")] {
        let line =
            lines.iter().find(|l| l.starts_with(&format!("{file} ({op}): lines "))).unwrap_or_else(|| panic!("no line for {file}:\n{all}"));
        assert!(line.contains(", branches ") && line.ends_with(": ok"), "{line}");
    }
    // the shared header counts what both ops use of it, and is held to the floor on a full run only
    let header = lines.iter().find(|l| l.starts_with("kernels/common.h (tf_argmax, tf_silu_mul): ")).unwrap_or_else(|| panic!("{all}"));
    assert!(header.ends_with("shared header, held to the floor on a run of every op"), "{header}");
    // the host prelude is no kernel code
    assert!(!all.contains("prelude.h"), "{all}");

    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["floor"]["branch_floor"], 0.95);
    let ops: Vec<&str> = json["ops"].as_array().unwrap().iter().map(|o| o["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["tf_argmax", "tf_silu_mul"]);
    let argmax = &json["ops"][0];
    assert_eq!(argmax["source"], "kernels/tf_argmax.hip");
    assert!(argmax["branches"]["total"].as_u64().unwrap() >= 20, "{argmax}");
    assert_eq!(argmax["headers"][0]["file"], "kernels/common.h");
    let sources = json["sources"].as_array().unwrap();
    assert!(sources.iter().all(|s| s["meets_floor"] == true), "{sources:?}");
    assert_eq!(json["below_floor"].as_array().unwrap().len(), 0);
}

/// What a contract of one case leaves open of tf_embed_rows' domain, and why the test may.
const ONE_CASE: &str = r#"
[exempt]
residues = { n = "one case, to show a branch it misses", vocab = "one case", bits = "one case" }
odd_multiple = { k = "one case" }
past = { n = "one case", k = "one case", vocab = "one case" }
bound = { "bits in [2, 3, 4, 6, 8]" = "one code width, to show the straddle branch it misses", "group in [32, 64, 128]" = "one case" }
pairs = { "bits, group" = "one case" }

"#;

/// `tf_embed_rows` reads a code's high bits from the next word only when the code straddles
/// two words (3 and 6 bits): a contract with one 3-bit case covers every branch of the
/// kernel; with that case swapped for a 2-bit one, that branch is named and the run fails.
#[test]
fn a_contract_that_loses_a_case_drops_below_the_floor_and_names_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    copy_dir(&root().join("kernels"), &repo.join("kernels"));
    std::fs::create_dir_all(repo.join("contracts")).unwrap();
    std::fs::copy(root().join("coverage.toml"), repo.join("coverage.toml")).unwrap();
    let original = std::fs::read_to_string(root().join("contracts/tf_embed_rows.toml")).unwrap();
    // the first record alone, and one small case
    let second_record = original.match_indices("[[record]]").nth(1).unwrap().0;
    let shapes = original.find("[shapes]").unwrap();
    let cases_end = shapes + original[shapes..].find("\n]\n").unwrap() + 3;
    let with_case =
        |case: &str| format!("{}[shapes]\ncases = [ {case} ]\n{ONE_CASE}{}", &original[..second_record], &original[cases_end..]);
    let contract = repo.join("contracts/tf_embed_rows.toml");
    let report = repo.join("coverage.json");
    let run = || coverage(&["--root", repo.to_str().unwrap(), "--only", "tf_embed_rows", "--report", report.to_str().unwrap()]);

    std::fs::write(&contract, with_case("{ n = 1, k = 64, vocab = 32, bits = 3, group = 32 }")).unwrap();
    let (code, lines, stderr) = run();
    assert_eq!(code, 0, "{}\n{stderr}", lines.join("\n"));
    let kernel = lines.iter().find(|l| l.starts_with("kernels/tf_embed_rows.hip (tf_embed_rows): ")).unwrap();
    assert!(kernel.contains("100.0%: ok"), "{kernel}");

    std::fs::write(&contract, with_case("{ n = 1, k = 64, vocab = 32, bits = 2, group = 32 }")).unwrap();
    let (code, lines, stderr) = run();
    let all = lines.join("\n");
    assert_eq!(code, 1, "{all}\n{stderr}");
    let at = lines.iter().position(|l| l.starts_with("kernels/tf_embed_rows.hip (tf_embed_rows): ")).unwrap();
    assert!(lines[at].ends_with("BELOW the 95% branch floor"), "{}", lines[at]);
    let named = &lines[at + 1];
    assert!(named.starts_with("    line 29 branch ") && named.contains(" of 2 not taken: `if (shift + (unsigned)bits > 32u)"), "{all}");
    assert!(lines.last().unwrap().contains(": 0 at or above the 95% branch floor, 1 below;"), "{all}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["below_floor"][0], "kernels/tf_embed_rows.hip");
    let uncovered = &json["sources"][0]["uncovered"][0];
    assert_eq!((uncovered["line"].as_u64(), uncovered["branches"].as_u64()), (Some(29), Some(2)), "{uncovered}");
}
