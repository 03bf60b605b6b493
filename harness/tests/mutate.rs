//! `contracts mutate` through the real binary: a fixed CI sample of the repository's mutants
//! scores at or above the floor in mutants.toml and prints survivors, the kill matrix and the
//! SUMMARY; a planted weak contract lets a mutant survive, reported as a gap, and a mutant
//! that compiles to the original's code is dropped as identical.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The CI sample: under a minute on two cores (60 mutants, about 30 s), spread over every
/// file and operator by the seed.
const CI_SAMPLE: &str = "60";
const CI_SEED: &str = "142";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn mutate(root: &Path, args: &[&str]) -> (i32, Vec<String>) {
    let out = Command::new(env!("CARGO_BIN_EXE_contracts"))
        .arg("mutate")
        .args(args)
        .arg("--root")
        .arg(root)
        .arg("--cache-dir")
        .arg(self::root().join("target/kernel-cache"))
        .output()
        .expect("run contracts mutate");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<String> = stdout.lines().map(str::to_string).collect();
    assert!(lines.last().is_some_and(|l| l.starts_with("SUMMARY mutate ")), "no SUMMARY last:\n{stdout}\n{stderr}");
    (out.status.code().unwrap_or(-1), lines)
}

/// The score the SUMMARY line gives.
fn score(summary: &str) -> f64 {
    let at = summary.find("score ").expect("a score") + "score ".len();
    summary[at..].split_whitespace().next().unwrap().parse().unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn the_ci_sample_of_mutants_scores_at_least_the_floor() {
    let report = tempfile::tempdir().unwrap();
    let report = report.path().join("mutate.json");
    let (code, lines) = mutate(&root(), &["--sample", CI_SAMPLE, "--seed", CI_SEED, "--jobs", "2", "--report", report.to_str().unwrap()]);
    let text = lines.join("\n");
    let summary = lines.last().unwrap();
    let floor: f64 = {
        let config = harness::mutate::Config::load(&root().join("mutants.toml"), "mutants.toml").unwrap();
        config.floor
    };
    assert!(score(summary) >= floor, "score below the floor {floor}:\n{text}");
    assert_eq!(code, 0, "{text}");
    assert!(summary.contains(&format!("SUMMARY mutate host-{} {CI_SAMPLE} mutants", std::env::consts::ARCH)), "{summary}");
    assert!(lines.iter().any(|l| l.ends_with("survivor(s):")), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("kill matrix")), "{text}");
    assert!(lines.iter().any(|l| l.trim_start().starts_with("overall ")), "{text}");
    assert!(!lines.iter().any(|l| l.contains("GAP")), "a survivor no contract catches and mutants.toml does not explain:\n{text}");
    assert!(!lines.iter().any(|l| l.starts_with("KILLED BUT LISTED")), "an entry of mutants.toml no longer true:\n{text}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["results"].as_array().unwrap().len(), CI_SAMPLE.parse::<usize>().unwrap());
    assert_eq!(json["summary_line"].as_str(), Some(summary.as_str()));
}

#[test]
fn a_weak_contract_lets_a_mutant_survive_and_identical_code_is_dropped() {
    let temp = tempfile::tempdir().unwrap();
    let weak = temp.path();
    for folder in ["contracts", "kernels"] {
        copy_dir(&root().join(folder), &weak.join(folder));
    }
    std::fs::copy(root().join("mutants.toml"), weak.join("mutants.toml")).unwrap();
    // tf_add on whole blocks only, each row one block of 256 (so gate 5's pieces of a row are
    // whole blocks too): the bounds guard is never needed, so deleting it survives
    let contract = weak.join("contracts/tf_add.toml");
    let text = std::fs::read_to_string(&contract).unwrap();
    let start = text.find("cases = [").unwrap();
    let end = start + text[start..].find("]\n").unwrap() + 2;
    let exempt = "\n[exempt]\nresidues = { rows = \"one block only\", k = \"one block only\" }\n\
                  past = { rows = \"one block only\", k = \"one block only\" }\n";
    std::fs::write(&contract, format!("{}cases = [{{ rows = 4, k = 256 }}]\n{exempt}{}", &text[..start], &text[end..])).unwrap();
    // a dead comparison the compiler removes: its relational mutant compiles to the same code
    let kernel = weak.join("kernels/tf_add.hip");
    let text = std::fs::read_to_string(&kernel).unwrap();
    std::fs::write(
        &kernel,
        text.replace("  if (i >= (long long)rows * k) return;", "  if (i >= (long long)rows * k) return;\n  if (k < -1) {}"),
    )
    .unwrap();

    let (code, lines) = mutate(weak, &["--only", "tf_add", "--jobs", "2", "--report", weak.join("m.json").to_str().unwrap()]);
    let text = lines.join("\n");
    assert_eq!(code, 1, "a gap below the floor exits 1:\n{text}");
    let at = lines
        .iter()
        .position(|l| l.starts_with("SURVIVED kernels/tf_add.hip [guard] GAP"))
        .unwrap_or_else(|| panic!("the deleted guard is a survivor:\n{text}"));
    assert_eq!(lines[at + 1].trim(), "line 9: if (i >= (long long)rows * k) return;  ->", "{text}");
    assert!(lines.iter().any(|l| l.contains("kernels/tf_add.hip:10 relational `<` -> `<=` identical code")), "{text}");
    assert!(lines.last().unwrap().contains("BELOW THE FLOOR"), "{text}");
}
