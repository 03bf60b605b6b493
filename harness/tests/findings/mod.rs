//! Known findings cover one failure shape, no more: a repository of its own whose
//! tf_copy_cols kernel writes one element past the output (the guard band, in every case of
//! its contract but case 1, one whole block) and reads one past the input (the host's bounds checks), with findings
//! per record that cover those failures exactly, or miss them by tensor, by message, by case
//! or by arch.

use crate::{contracts, copy_dir, root};

/// Records added to the real contract, each named for what its finding does.
const RECORDS: &str = r#"[[record]]
name = "f32, cases 0 and 2"
dtypes = { in = "f32", out = "f32" }
params = { start = 0 }

[[record]]
name = "f32, cases 0 and 2 to 8"
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
        finding("f32, cases 0 and 2 to 8", &host, &format!("{guard}\ncases = [0, 2, 3, 4, 5, 6, 7, 8]")),
        finding("f32, cases 0 and 2 to 8", &host, &format!("{read}\ncases = [0, 2, 3, 4, 5, 6, 7, 8]")),
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

    for known in ["f32, leading columns", "f32, cases 0 and 2 to 8"] {
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
            "SUMMARY {host} 10 kernels: 2 pass gates 1-5, 8 fail, 2 known findings; 0 controls: 0 red as planted, 0 missed; 0 limit problems"
        ),
        "{output}"
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let outcomes: Vec<&str> = json["records"].as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    // the real contract's records, then the three above
    let mut want = vec!["known_finding"];
    want.extend(["fail"; 7]);
    want.extend(["known_finding", "fail"]);
    assert_eq!(outcomes, want, "{output}");
    assert_eq!(json["records"][0]["covered_tensors"], serde_json::json!(["in", "out"]));
}

/// tf_add with a last-block counter that the last block resets: module state the host build's
/// static check names, which a known finding on `kernel` accepts.
const SELF_RESETTING: &str = r#"#include "common.h"

__device__ unsigned blocks_done;   // the last block of a launch resets it for the next

extern "C" __global__ void tf_add(const void* a, int a_kind, const void* b, int b_kind, int rows, int k,
                                  void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (long long)rows * k) tf_store(out, out_kind, i, tf_load(a, a_kind, i) + tf_load(b, b_kind, i));
  if (threadIdx.x == 0 && atomicAdd(&blocks_done, 1u) == gridDim.x - 1) atomicExch(&blocks_done, 0u);
}
"#;

#[test]
fn a_finding_on_kernel_accepts_module_state_that_the_kernel_resets_itself() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    for folder in ["contracts", "controls"] {
        std::fs::create_dir_all(base.join(folder)).unwrap();
    }
    copy_dir(&root().join("kernels"), &base.join("kernels"));
    std::fs::write(base.join("kernels/tf_add.hip"), SELF_RESETTING).unwrap();
    let real = std::fs::read_to_string(root().join("contracts/tf_add.toml")).unwrap();
    let host = format!("host-{}", std::env::consts::ARCH);
    let accepted = format!(
        "{real}\n[[finding]]\ngate = \"shapes\"\narch = \"{host}\"\nrecord = \"f32\"\ntensor = \"kernel\"\n\
         matches = \"`blocks_done` (\"\nreason = \"the last block of every launch resets the counter\"\n"
    );
    std::fs::write(base.join("contracts/tf_add.toml"), accepted).unwrap();
    let (code, lines, stderr) =
        contracts(&["--root", base.to_str().unwrap(), "--no-controls", "--report", base.join("r.json").to_str().unwrap()]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    println!("{output}");
    let line =
        |record: &str| lines.iter().find(|l| l.starts_with(&format!("tf_add ({record}) "))).unwrap_or_else(|| panic!("{output}")).clone();
    let f32 = line("f32");
    assert!(f32.contains(" with known finding at shapes (kernel): the last block of every launch resets the counter"), "{f32}");
    let f16 = line("f16");
    assert!(f16.contains(" FAIL at shapes: ") && f16.contains("kernel: kernels/tf_add.hip:3: `blocks_done` ("), "{f16}");
    assert!(f16.contains("is writable module-scope storage"), "{f16}");
    assert_eq!(code, 1, "{output}");
}
