//! The kernel library of another engine (examples/external: its own argument order, a header
//! in a subfolder, a template kernel, ROCm's hip_bfloat16 and __half2) under contract with no
//! Rust, through the real binary: every record passes on the host and its controls go red;
//! its recorded gfx1201 and sm_90 figures hold on the static paths; a kernel of a folder named
//! by `--include` builds; a C++ reference of another signature is said with the contract's.

use std::path::{Path, PathBuf};

use crate::{contracts, copy_dir, root};

fn example() -> PathBuf {
    root().join("examples/external")
}

/// `contracts --root examples/external` with `args`, its report in `dir`.
fn run_example(root_dir: &Path, dir: &Path, args: &[&str]) -> (i32, Vec<String>, String) {
    let report = dir.join("r.json");
    let mut all = vec!["--root", root_dir.to_str().unwrap(), "--report", report.to_str().unwrap()];
    all.extend(args);
    contracts(&all)
}

#[test]
fn another_engines_kernels_pass_on_the_host_and_their_controls_go_red() {
    let dir = tempfile::tempdir().unwrap();
    let (code, lines, stderr) = run_example(&example(), dir.path(), &[]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    assert_eq!(code, 0, "{output}");
    for record in [
        "lumen_rms_norm_bf16 (bf16) pass ",
        "lumen_scale_add_f16 (f16, alpha -2.5) pass ",
        "lumen_scale_add_f16_x2 (f16) pass ",
        "lumen_row_dot_f16 (f16 rows) pass ",
    ] {
        assert!(lines.iter().any(|l| l.starts_with(record)), "{record}: {output}");
    }
    let norm = lines.iter().find(|l| l.starts_with("lumen_rms_norm_bf16 (scales each column by the next")).expect(&output);
    assert!(norm.contains(" red at shapes as planted: ") && norm.contains("past the end of `weight`"), "{norm}");
    let twice = lines.iter().find(|l| l.starts_with("lumen_scale_add_f16_x2 (the pair path multiplies")).expect(&output);
    assert!(twice.contains(" red at shapes as planted: ") && twice.contains("differ in bits from `lumen_scale_add_f16`'s"), "{twice}");
    let last = lines.last().unwrap();
    assert_eq!(
        last,
        "SUMMARY host-x86_64 7 kernels: 7 pass gates 1-5, 0 fail, 0 known findings; 2 controls: 2 red as planted, 0 missed; 0 limit problems"
    );
}

#[test]
fn another_engines_recorded_figures_hold_on_the_static_gfx1201_and_sm_90_paths() {
    for (arch, toolchain) in [("gfx1201", engine::toolchain::Toolchain::AmdgpuClang), ("sm_90", engine::toolchain::Toolchain::Nvrtc)] {
        if !engine::toolchain::available_for_test(toolchain) {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let (code, lines, stderr) = run_example(&example(), dir.path(), &["--arch", arch, "--static", "--strict-limits"]);
        let output = format!("{}\n{stderr}", lines.join("\n"));
        assert_eq!(code, 0, "{output}");
        let want = format!("SUMMARY {arch} 7 kernels: 7 pass gate 4 (static; gates 1-3 not run: no device), 0 fail, ");
        assert!(lines.last().unwrap().starts_with(&want), "{output}");
        assert!(lines.iter().any(|l| l.starts_with("lumen_scale_add_f16_x2 (f16) pass limits") && l.contains("as recorded")), "{output}");
    }
}

/// A copy of the example (without what a run left in it), whose `rewrite` changes one file.
fn copy_with(dir: &Path, file: &str, rewrite: impl Fn(String) -> String) -> PathBuf {
    let copy = dir.join("lumen");
    for folder in ["contracts", "controls", "kernels", "ref"] {
        copy_dir(&example().join(folder), &copy.join(folder));
    }
    let path = copy.join(file);
    std::fs::write(&path, rewrite(std::fs::read_to_string(&path).unwrap())).unwrap();
    copy
}

#[test]
fn an_include_folder_may_come_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_with(dir.path(), "contracts/lumen_row_dot_f16.toml", |t| t.replace("include = [\"include\"]\n", ""));
    let only = ["--only", "lumen_row_dot_f16", "--no-controls"];
    let (code, lines, stderr) = run_example(&copy, dir.path(), &only);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    assert_eq!(code, 1, "{output}");
    assert!(output.contains("lumen/common.h"), "the header is not found without its folder: {output}");
    let include = copy.join("kernels/include");
    let (code, lines, stderr) = run_example(&copy, dir.path(), &[&only[..], &["--include", include.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{}\n{stderr}", lines.join("\n"));
}

#[test]
fn a_reference_function_of_another_signature_is_said_with_the_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_with(dir.path(), "ref/lumen_ref.cpp", |t| {
        t.replace(
            "lumen_row_dot_ref(const double* x, const double* y, double* out, long long rows, long long cols)",
            "lumen_row_dot_ref(const float* x, const float* y, float* out, int rows, int cols)",
        )
    });
    let (code, lines, stderr) = run_example(&copy, dir.path(), &["--only", "lumen_row_dot_f16", "--no-controls"]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    assert_eq!(code, 1, "{output}");
    let line = lines.iter().find(|l| l.starts_with("lumen_row_dot_f16 (f16 rows) ERROR")).expect(&output);
    assert!(line.contains("ref/lumen_ref.cpp (reference function `lumen_row_dot_ref`)"), "{line}");
    assert!(
        output.contains(
            "the contract's signature for it: extern \"C\" int lumen_row_dot_ref(const double* x, const double* y, double* out, long long rows, long long cols)"
        ),
        "{output}"
    );
}
