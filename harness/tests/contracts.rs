//! The real `contracts` binary over the real contracts and controls: the main job passes
//! and every control goes red; each control swapped in for its kernel fails the run at its
//! gate; malformed contracts are named and the rest still run; bad flags exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::contract::Control;

mod bad_inputs;
mod external;
mod findings;
mod untrusted;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The `contracts` binary with `args`, run from the repository, with the tests' shared kernel
/// cache unless `args` name another.
fn contracts_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_contracts"));
    command.args(args).current_dir(root());
    if !args.contains(&"--cache-dir") {
        command.arg("--cache-dir").arg(root().join("target/kernel-cache"));
    }
    command
}

/// Checks every row of a table, two runs at a time (each is mostly process start, loading
/// and one small contract), printing each row's answer for `--nocapture`; gives back the
/// rows that fall short, each with its problems.
fn rows_two_at_a_time<R: Sync>(
    rows: &[R],
    name: impl Fn(&R) -> &str + Sync,
    check: impl Fn(&R) -> (String, Vec<String>) + Sync,
) -> Vec<String> {
    let (name, check) = (&name, &check);
    std::thread::scope(|scope| {
        let handles: Vec<_> = rows
            .chunks(rows.len().div_ceil(2).max(1))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|row| {
                            let (said, problems) = check(row);
                            println!("{} -> {said}", name(row));
                            (!problems.is_empty()).then(|| format!("{}:\n  {}", name(row), problems.join("\n  ")))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

fn contracts(args: &[&str]) -> (i32, Vec<String>, String) {
    output_of(contracts_command(args))
}

/// The binary run from `cwd` (the repository, as users and the device runs do), on the
/// shared kernel cache.
fn contracts_in(cwd: &Path, args: &[&str]) -> (i32, Vec<String>, String) {
    let mut command = contracts_command(args);
    command.current_dir(cwd);
    output_of(command)
}

/// Exit status, standard output lines and standard error of a run.
fn output_of(mut command: Command) -> (i32, Vec<String>, String) {
    let out: Output = command.output().expect("run contracts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), stdout.lines().map(str::to_string).collect(), stderr)
}

/// The environment variable that marks every process of one test run (inherited by the
/// run's children, compilers and whatever a kernel starts), so /proc tells what is left.
const RUN_MARKER: &str = "KERNEL_CONTRACTS_TEST_RUN";

/// Processes that carry `marker` in [`RUN_MARKER`] and are not zombies, as `pid: cmdline`.
fn processes_marked(marker: &str) -> Vec<String> {
    let needle = format!("{RUN_MARKER}={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if !stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')) {
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                found.push(format!("{}: {}", entry.file_name().to_string_lossy(), String::from_utf8_lossy(&cmdline).replace('\0', " ")));
            }
        }
    }
    found
}

/// The SUMMARY's numbers: kernels, pass, fail, known findings, controls, red, missed, limit problems.
fn summary_numbers(line: &str) -> Vec<usize> {
    let rest = line.strip_prefix("SUMMARY host-x86_64 ").unwrap_or_else(|| panic!("not a host SUMMARY line: {line}"));
    let numbers: Vec<usize> = rest.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    // kernels, pass, [1, 5 of "gates 1-5"], fail, known, controls, red, missed, limit problems
    assert_eq!(numbers.len(), 10, "{line}");
    numbers.iter().enumerate().filter(|(i, _)| *i != 2 && *i != 3).map(|(_, v)| *v).collect()
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
fn the_main_job_passes_every_record_and_every_control_goes_red_as_planted() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let (code, lines, stderr) = contracts(&["--report", report.to_str().unwrap()]);
    let last = lines.last().expect("output");
    assert_eq!(code, 0, "{}\n{stderr}", lines.join("\n"));
    let n = summary_numbers(last);
    let (kernels, pass, fail, known, controls, red, missed, limits) = (n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]);
    assert!(kernels >= 5 && controls >= 6, "{last}");
    assert_eq!((pass, fail, known, red, missed, limits), (kernels, 0, 0, controls, 0, 0), "{last}");
    assert_eq!(
        last,
        &format!(
            "SUMMARY host-x86_64 {kernels} kernels: {kernels} pass gates 1-5, 0 fail, 0 known findings; {controls} controls: {controls} red as planted, 0 missed; 0 limit problems"
        )
    );
    // gate 5 runs for every record but those of a contract whose rows are not independent
    let with_seams = lines.iter().filter(|l| l.contains(" pass nonfinite, repeat, shapes and seams; ")).count();
    let without: Vec<&String> = lines.iter().filter(|l| l.contains(" pass nonfinite, repeat and shapes; ")).collect();
    let rows_not_independent = ["tf_kv_append (", "tf_conv1d_causal (", "tf_delta_rule_step (", "tf_attention_prefill ("];
    assert!(!without.is_empty() && without.iter().all(|l| rows_not_independent.iter().any(|op| l.starts_with(op))), "{without:?}");
    let control_lines: Vec<&String> = lines.iter().filter(|l| l.contains(" as planted: ")).collect();
    assert_eq!((with_seams + without.len(), control_lines.len()), (kernels, controls));
    assert!(lines.iter().any(|l| l.contains(" red at seams as planted: ") && l.contains(": out: pieces of ")), "a control red at seams");

    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["summary_line"], last.as_str());
    assert_eq!(json["records"].as_array().unwrap().len(), kernels);
    assert_eq!(json["controls"].as_array().unwrap().len(), controls);
    let first = &json["records"][0];
    assert!(first["cases"][0]["seeds"].as_object().is_some_and(|s| !s.is_empty()), "seeds recorded");
    let outputs = first["cases"][0]["outputs"].as_object().unwrap();
    assert!(!outputs.is_empty() && outputs.values().all(|m| m["max_ulp"].is_u64() && m["mismatches"] == 0), "{outputs:?}");
    // gate 5's figures: each plan's pieces and rows, no row differing
    let checks: Vec<&serde_json::Value> = json["records"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["cases"].as_array().unwrap())
        .filter_map(|c| c["seams"].as_array())
        .flatten()
        .collect();
    assert!(checks.len() > kernels, "{checks:?}");
    assert!(checks.iter().all(|c| c["rows"].as_u64() > Some(0) && c["rows_differing"].as_object().unwrap().values().all(|v| v == 0)));
    // a control stops at the first case its planted gate goes red in: that gate names one
    // failing case, and where that case is an ordinary one, no planted copy ran after it
    let mut stopped_early = 0;
    for control in json["controls"].as_array().unwrap() {
        let gate = &control["control"]["planted"]["gate"];
        let Some(planted) = control["failures"].as_array().unwrap().iter().find(|f| &f["gate"] == gate) else { continue };
        assert_eq!(planted["failing_cases"].as_array().unwrap().len(), 1, "{control}");
        if !planted["case"].as_str().unwrap().contains(" planted") {
            assert!(control["nonfinite_cases"].as_array().unwrap().is_empty(), "{control}");
            stopped_early += 1;
        }
    }
    assert!(stopped_early > controls / 2, "{stopped_early} of {controls} controls stopped before gate 1's planted copies");
    assert_eq!(json["exit_code"], 0);
}

#[test]
fn the_main_job_runs_from_a_root_named_with_a_space_a_quote_and_a_newline() {
    let dir = tempfile::tempdir().unwrap();
    // where the OS refuses a newline in a name, the space and the quote still make the point
    let odd = ["kc root \"q\"\nline", "kc root \"q\""]
        .iter()
        .map(|name| dir.path().join(name))
        .find(|p| std::fs::create_dir(p).is_ok())
        .expect("a folder named with a space and a quote");
    for folder in ["contracts", "controls", "kernels"] {
        copy_dir(&root().join(folder), &odd.join(folder));
    }
    // a control whose file name has a space, with a first line no other run has, so that its
    // build is never the cache's: the compiler sees the folder's name every time
    let run = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
    let kernel = std::fs::read_to_string(root().join("controls/add_whole_blocks_only.hip")).unwrap();
    std::fs::write(odd.join("controls/add whole blocks.hip"), format!("// the odd-root test, run {run}\n{kernel}")).unwrap();
    let control = std::fs::read_to_string(root().join("controls/add_whole_blocks_only.toml"))
        .unwrap()
        .replace("source = \"add_whole_blocks_only.hip\"", "source = \"add whole blocks.hip\"")
        .replace("bug = \"assumes", "bug = \"(in a file named with a space) assumes");
    std::fs::write(odd.join("controls/add whole blocks.toml"), control).unwrap();

    // no --root and no --report: the root is found from the current folder, the report goes under it
    let (code, lines, stderr) = contracts_in(&odd, &[]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    assert_eq!(code, 0, "{output}");
    let n = summary_numbers(lines.last().unwrap());
    let (kernels, pass, fail, controls, red, missed) = (n[0], n[1], n[2], n[4], n[5], n[6]);
    assert!(kernels >= 5 && controls >= 7, "{output}");
    assert_eq!((pass, fail, red, missed), (kernels, 0, controls, 0), "{output}");
    let spaced = lines.iter().find(|l| l.starts_with("tf_add ((in a file named with a space) assumes")).expect(&output);
    assert!(spaced.contains(" red at repeat as planted: "), "{spaced}");
    assert!(lines.iter().any(|l| l.ends_with("; report reports/last/host-x86_64.json")), "{output}");
    let report = std::fs::read_to_string(odd.join("reports/last/host-x86_64.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert_eq!(json["summary_line"], lines.last().unwrap().as_str());
    let sources: Vec<&str> = json["controls"].as_array().unwrap().iter().filter_map(|c| c["control"]["source"].as_str()).collect();
    assert!(sources.contains(&"controls/add whole blocks.hip"), "{sources:?}");
}

#[test]
fn each_control_swapped_in_for_its_kernel_fails_the_run_at_its_gate() {
    let controls_dir = root().join("controls");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&controls_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 6);
    // the ops the contracts describe as data are found by name once defined
    harness::contract::define_data_ops(&root().join("contracts"));
    for file in files {
        let control = Control::load(&file, &file.display().to_string(), &root()).unwrap();
        let op = engine::ops::find(&control.contract).unwrap();
        // a library op has no kernel of ours to swap: its control runs in place of the
        // library call, or plants parameters, and only as a control (the main job shows it red)
        let (Some(kernel), Some(source)) = (op.source, &control.source) else { continue };
        let dir = tempfile::tempdir().unwrap();
        let kernels = dir.path().join("kernels");
        copy_dir(&root().join("kernels"), &kernels);
        std::fs::copy(source, kernels.join(kernel)).unwrap();
        let (code, lines, stderr) = contracts(&[
            "--kernels",
            kernels.to_str().unwrap(),
            "--only",
            op.name,
            "--no-controls",
            "--report",
            dir.path().join("r.json").to_str().unwrap(),
        ]);
        let output = format!("{}\n{stderr}", lines.join("\n"));
        assert_eq!(code, 1, "{} swapped in: {output}", source.display());
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("{} ({}) FAIL", op.name, control.record)))
            .unwrap_or_else(|| panic!("no FAIL line for record `{}`: {output}", control.record));
        assert!(line.contains(&format!("at {}: ", control.planted)), "gate {} not named: {line}", control.planted);
        // the first differing element, or the access that broke the rule, by place
        let placed = [
            "first [",
            "nearest [",
            " past the end of ",
            " before the start of ",
            " before any thread ",
            "race on ",
            " is multiplied in 32 bits and only then widened to 64",
            " is writable module-scope storage",
            ": inline assembly (`",
            ": x86 intrinsic (`",
            ", which no GPU compiler provides to device code",
            " build and not by ",
            " for the host build and ",
            "misaligned ",
        ];
        assert!(placed.iter().any(|p| line.contains(p)), "first differing element or access not named: {line}");
        assert!(lines.last().unwrap().contains(" 0 controls"), "{output}");
    }
}

#[test]
fn malformed_contracts_are_named_by_file_line_and_key_and_the_rest_still_run() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("contracts"), dir.path());
    let good = std::fs::read_to_string(root().join("contracts/tf_softmax_stats.toml")).unwrap();
    let bad = [
        ("unknown_key.toml", good.replacen("about = ", "colour = \"red\"\nabout = ", 1)),
        ("unknown_dtype.toml", good.replace("name = \"f32 scores\"", "name = \"f32 scores\"\ndtypes = { scores = \"fp8\" }")),
        ("undefined_symbol.toml", good.replace("{ rows = 1, keys = 1, tile = 64 }", "{ rows = 1, keys = 1 }")),
    ];
    for (name, text) in &bad {
        assert_ne!(text, &good, "{name}: the replacement did not apply");
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let (code, lines, stderr) =
        contracts(&["--contracts", dir.path().to_str().unwrap(), "--no-controls", "--report", dir.path().join("r.json").to_str().unwrap()]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    // the rest ran, so not 2 (nothing could run), but a contract that does not load is red
    assert_eq!(code, 1, "{output}");
    let error_for = |file: &str| {
        lines.iter().find(|l| l.contains(file) && l.contains(": error: ")).unwrap_or_else(|| panic!("{file}: {output}")).clone()
    };
    assert!(error_for("unknown_key.toml").contains("unknown_key.toml:2: error: `colour`"), "{output}");
    assert!(error_for("unknown_dtype.toml").contains("`record[0].dtypes.scores`: unknown dtype `fp8`"), "{output}");
    let undefined = error_for("undefined_symbol.toml");
    assert!(undefined.contains("`shapes.cases[0]`: undefined shape symbol `tile`"), "{output}");
    // the good contracts still ran and were reported
    // (gate 5 left out of the records of a contract whose seams are `none`)
    let passing = lines
        .iter()
        .filter(|l| l.contains(" pass nonfinite, repeat, shapes and seams; ") || l.contains(" pass nonfinite, repeat and shapes; "))
        .count();
    assert!(passing >= 5, "{output}");
    let n = summary_numbers(lines.last().unwrap());
    assert_eq!((n[0], n[1]), (passing, passing), "{output}");
}

#[test]
fn bad_flags_and_an_absent_cuda_driver_exit_2() {
    let (code, _, stderr) = contracts(&["--repeats", "2"]);
    assert_eq!(code, 2, "{stderr}");
    // a GPU run starts its first children before it opens the device: with no driver they
    // end with the run, none left behind
    let marker = "absent-cuda-driver";
    let mut command = contracts_command(&["--backend", "cuda"]);
    command.env(RUN_MARKER, marker);
    let (code, _, stderr) = output_of(command);
    assert_eq!(code, 2);
    assert!(stderr.contains("libcuda.so.1"), "{stderr}");
    assert_eq!(processes_marked(marker), Vec::<String>::new());
}

#[test]
fn hip_without_a_device_exits_2_with_hips_error_and_auto_falls_back_to_host() {
    // Debian's ROCm 5.2 runtime (installed by `cargo xtask test`) loads and finds no device
    if !engine::toolchain::available_for_test(engine::toolchain::Toolchain::Rocm52Runtime) {
        return;
    }
    let (code, _, stderr) = contracts(&["--backend", "hip"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no HIP device found")
            && (stderr.contains("hipErrorInvalidDevice (101)") || stderr.contains("hipErrorNoDevice (100)")),
        "{stderr}"
    );
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let (code, lines, _) =
        contracts(&["--backend", "auto", "--only", "tf_softmax_stats", "--no-controls", "--report", report.to_str().unwrap()]);
    assert!(
        lines[0].starts_with("backend auto: no HIP device") && lines[0].contains("libcuda.so.1") && lines[0].ends_with("using host"),
        "{lines:?}"
    );
    assert_eq!(code, 0, "{lines:?}");
}

#[test]
fn the_readme_lists_every_op_under_contract_as_generated_from_contracts() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let begin =
        readme.find(harness::ops_table::BEGIN).expect("README has the ops table's begin marker") + harness::ops_table::BEGIN.len() + 1;
    let end = readme.find(harness::ops_table::END).expect("README has the ops table's end marker");
    let want = harness::ops_table::generate(&root().join("contracts")).unwrap();
    assert_eq!(&readme[begin..end], want, "README's ops table is stale: regenerate it with `cargo run --bin contracts -- --ops-table`");
    assert!(want.lines().count() >= 2 + 18, "at least 18 ops under contract");
}

/// The static limits gate of one architecture: every recorded figure as recorded, every
/// limits control red at limits, and the SUMMARY never claiming gates 1-3.
fn static_limits_hold(arch: &str, controls_at_least: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (code, lines, stderr) =
        contracts(&["--arch", arch, "--static", "--strict-limits", "--report", dir.path().join("r.json").to_str().unwrap()]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    assert_eq!(code, 0, "{output}");
    let last = lines.last().unwrap();
    assert!(last.starts_with(&format!("SUMMARY {arch} ")), "{output}");
    assert!(last.contains(" pass gate 4 (static; gates 1-3 not run: no device), 0 fail, "), "{last}");
    assert!(last.ends_with("0 missed; 0 limit problems"), "{last}");
    let red = lines.iter().filter(|l| l.contains(" red at limits as planted: ")).count();
    assert!(red >= controls_at_least, "{output}");
    assert!(lines.iter().filter(|l| l.contains(" pass limits; static limits ")).count() >= 60, "{output}");
    let strict_control = "tf_add (adds its pair neighbour's element too";
    let strict_line = lines.iter().find(|l| l.starts_with(strict_control)).unwrap_or_else(|| panic!("{output}"));
    assert!(strict_line.contains(" red at limits as planted: ") && strict_line.contains("limit problem (strict): "), "{strict_line}");

    // without --strict-limits a figure that moved within budget is no failure: the control
    // planted for it does not run, and every other one still goes red
    let (code, lenient, stderr) = contracts(&["--arch", arch, "--static", "--report", dir.path().join("l.json").to_str().unwrap()]);
    let output = format!("{}\n{stderr}", lenient.join("\n"));
    assert_eq!(code, 0, "{output}");
    assert!(!lenient.iter().any(|l| l.starts_with(strict_control)), "{output}");
    assert_eq!(lenient.iter().filter(|l| l.contains(" red at limits as planted: ")).count(), red - 1, "{output}");
}

#[test]
fn gfx1201_static_limits_hold_for_every_contract_and_the_limits_controls_go_red() {
    if !engine::toolchain::available_for_test(engine::toolchain::Toolchain::AmdgpuClang) {
        return;
    }
    static_limits_hold("gfx1201", 4);
}

#[test]
fn sm_90_static_limits_hold_for_every_contract_and_the_limits_controls_go_red() {
    if !engine::toolchain::available_for_test(engine::toolchain::Toolchain::Nvrtc) {
        return;
    }
    static_limits_hold("sm_90", 3);
}

/// The lines a run prints for its records and controls, without the timing line.
fn result_lines(lines: &[String]) -> Vec<String> {
    lines.iter().filter(|l| !l.starts_with("ran ") && !l.starts_with("SUMMARY ")).cloned().collect()
}

#[test]
fn fault_controls_go_red_with_their_cause_and_every_other_record_reads_as_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let only = ["--only", "tf_add", "--only", "tf_softmax_stats"];
    let report = dir.path().join("with.json");
    // four children at a time here (the default), one at a time below: the lines are the same
    let (code, with, stderr) = contracts(&[&only[..], &["--report", report.to_str().unwrap()]].concat());
    let output = format!("{}\n{stderr}", with.join("\n"));
    assert_eq!(code, 0, "{output}");
    let crash = with.iter().find(|l| l.contains("(one thread calls through a null function pointer)")).expect(&output);
    assert!(crash.contains(" red at crash as planted: crashed: SIGSEGV in case {"), "{crash}");
    let hang = with.iter().find(|l| l.contains("(the first thread spins on a flag that nothing ever sets)")).expect(&output);
    assert!(hang.contains(" red at timeout as planted: timed out after 1 s in case {"), "{hang}");

    let controls = dir.path().join("controls");
    copy_dir(&root().join("controls"), &controls);
    std::fs::remove_dir_all(controls.join("faults")).unwrap();
    let (code, without, stderr) = contracts(
        &[
            &only[..],
            &["--jobs", "1", "--controls", controls.to_str().unwrap(), "--report", dir.path().join("without.json").to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{}\n{stderr}", without.join("\n"));
    // the controls not run, each on an indented line with its reason, differ by the fault controls
    let not_run = |l: &String| l.contains(" controls not run on ") || l.starts_with("    ");
    let kept: Vec<String> = result_lines(&with).into_iter().filter(|l| l != crash && l != hang && !not_run(l)).collect();
    // the copied controls are named by their absolute folder (outside the root)
    let copied = format!("{}/", controls.display());
    let baseline: Vec<String> =
        result_lines(&without).into_iter().filter(|l| !not_run(l)).map(|l| l.replace(&copied, "controls/")).collect();
    assert_eq!(kept, baseline);
    let (a, b) = (summary_numbers(with.last().unwrap()), summary_numbers(without.last().unwrap()));
    assert_eq!((a[0], a[1], a[4], a[5]), (b[0], b[1], b[4] + 2, b[5] + 2), "{}\n{}", with.last().unwrap(), without.last().unwrap());

    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let faults: Vec<&str> = json["controls"].as_array().unwrap().iter().filter_map(|c| c["fault"].as_str()).collect();
    assert_eq!(faults, ["timeout", "crash"]);
}

/// The children of process `parent` whose command line has `--child <label>`.
fn children_labelled(parent: u32, label: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // the parent pid is the second field after the command name in parentheses
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else { continue };
        if after.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok()) != Some(parent) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if words.windows(2).any(|w| w[0] == b"--child" && w[1] == label.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn killing_a_child_mid_run_loses_no_other_record_and_the_report_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    // tf_add's kernel swapped for one that never returns, so its child is there to be killed
    let kernels = dir.path().join("kernels");
    copy_dir(&root().join("kernels"), &kernels);
    std::fs::copy(root().join("controls/faults/never_returns.hip"), kernels.join("tf_add.hip")).unwrap();
    let only = ["--only", "tf_softmax_stats", "--only", "tf_add", "--only", "tf_cast", "--no-controls", "--timeout", "3"];
    let report = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_contracts"))
        .args(only)
        .args(["--kernels", kernels.to_str().unwrap(), "--report", report.to_str().unwrap()])
        .arg("--cache-dir")
        .arg(root().join("target/kernel-cache"))
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let parent = child.id();
    let started = std::time::Instant::now();
    let victim = loop {
        if let Some(pid) = children_labelled(parent, "tf_add").first() {
            break *pid;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "no child for tf_add appeared");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // SAFETY: a signal to the child process found above
    assert_eq!(unsafe { libc::kill(victim, libc::SIGKILL) }, 0);
    let out = child.wait_with_output().unwrap();
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let output = format!("{}\n{}", lines.join("\n"), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{output}");

    let line = |prefix: &str| lines.iter().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no `{prefix}` line: {output}"));
    assert!(line("tf_add (f32) ERROR: ").contains("crashed: SIGKILL"), "{output}");
    // the rest of tf_add ran on in fresh processes, each stopped at the time limit
    for record in ["f16", "bf16", "bf16 a, f16 b, f32 out"] {
        assert!(line(&format!("tf_add ({record}) ERROR: ")).contains("timed out after 3 s"), "{output}");
    }
    // every other record exactly as in a run where nothing was killed
    let baseline_report = dir.path().join("baseline.json");
    let (code, baseline, _) =
        contracts(&["--only", "tf_softmax_stats", "--only", "tf_cast", "--no-controls", "--report", baseline_report.to_str().unwrap()]);
    assert_eq!(code, 0);
    // tf_add's lines and the replay commands under its errors aside
    let others: Vec<String> = result_lines(&lines)
        .into_iter()
        .filter(|l| !l.starts_with("tf_add ") && !l.starts_with("    replay: contracts --only tf_add "))
        .collect();
    assert_eq!(others, result_lines(&baseline));

    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).expect("the report is valid JSON");
    let records = json["records"].as_array().unwrap();
    let n = summary_numbers(lines.last().unwrap());
    assert_eq!(records.len(), n[0]);
    assert_eq!(records.len(), others.iter().filter(|l| l.contains(" pass nonfinite, repeat, shapes and seams; ")).count() + 4, "{output}");
    let faults: Vec<&str> = records.iter().filter_map(|r| r["fault"].as_str()).collect();
    assert_eq!(faults, ["crash", "timeout", "timeout", "timeout"]);
    assert_eq!(json["summary_line"], lines.last().unwrap().as_str());
    assert_eq!(json["exit_code"], 1);
}

/// A kernel nobody here wrote goes under contract with no Rust: `contracts new` writes the
/// starting contract off its signature (and never over an existing one), the contract does
/// not load while a `?` is left, and filled in it passes and a planted bug goes red.
#[test]
fn contracts_new_starts_a_contract_that_runs_once_its_placeholders_are_filled() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    copy_dir(&root().join("kernels"), &base.join("kernels"));
    std::fs::create_dir_all(base.join("contracts")).unwrap();
    let add = std::fs::read_to_string(root().join("kernels/tf_add.hip")).unwrap().replace("tf_add(", "my_add(");
    std::fs::write(base.join("kernels/my_add.hip"), &add).unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["--root", base.to_str().unwrap(), "--cache-dir"];
        let cache = root().join("target/kernel-cache");
        all.push(cache.to_str().unwrap());
        all.extend(args);
        let out = Command::new(env!("CARGO_BIN_EXE_contracts")).args(&all).current_dir(base).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    let (code, said) = run(&["new", "kernels/my_add.hip", "my_add"]);
    assert_eq!(code, 0, "{said}");
    assert!(said.starts_with("wrote contracts/my_add.toml: 8 parameters read off `my_add`"), "{said}");
    let written = std::fs::read_to_string(base.join("contracts/my_add.toml")).unwrap();
    assert!(
        written.contains("args = [\"a\", \"dtype(a)\", \"b\", \"dtype(b)\", \"int(rows)\", \"int(k)\", \"out\", \"dtype(out)\"]"),
        "{written}"
    );
    let (code, said) = run(&["new", "kernels/my_add.hip", "my_add"]);
    assert!(code != 0 && said.contains("never overwritten"), "{said}");
    std::fs::write(base.join("elsewhere.hip"), &add).unwrap();
    let (code, said) = run(&["new", "elsewhere.hip", "my_add"]);
    assert!(code != 0 && said.contains("is not in the kernels folder"), "{said}");

    let (code, said) = run(&["--no-controls"]);
    assert_eq!(code, 2, "nothing loads while a `?` is left: {said}");
    assert!(said.contains("contracts/my_add.toml:") && said.contains("unexpected `?`"), "{said}");

    let filled = written
        .replace("about = \"?\"", "about = \"a + b\"")
        .replace("shape = \"?\"", "shape = \"rows, k\"")
        .replace("grid = [\"?\"]", "grid = [\"ceil_div(rows * k, 256)\"]")
        .replace("block = [\"?\"]", "block = [256]")
        .replace(
            "name = \"?\"",
            "name = \"f32\"\ndtypes = { a = \"f32\", b = \"f32\", out = \"f32\" }\n\n[[record]]\nname = \"mixed\"\ndtypes = { a = \"bf16\", b = \"f16\", out = \"f32\" }",
        )
        // what the domain's lints ask: every width mod 4 over two rows or more, an odd multiple
        // of the block, a row past 8192 wide and more rows than four blocks' threads
        .replace("{ rows = \"?\", k = \"?\" }", "{ rows = 3, k = 1 }, { rows = 6, k = 258 }, { rows = 5, k = 768 }, { rows = 2, k = 8195 }, { rows = 1028, k = 1 }")
        .replace("a = \"?\"", "a = \"normal(0, 1)\"")
        .replace("b = \"?\"", "b = \"normal(0, 1)\"")
        .replace("policy = \"?\"", "policy = \"propagate\"")
        .replace("axis = \"?\"", "axis = \"rows\"")
        .replace("oracle = \"?\"", "oracle = \"add\"");
    std::fs::write(base.join("contracts/my_add.toml"), &filled).unwrap();
    let (code, said) = run(&["--no-controls"]);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("my_add (f32) pass nonfinite, repeat, shapes and seams; 5 cases, 22,809 elements, exact"), "{said}");
    // the same contract over a kernel with a bug: red
    std::fs::write(base.join("kernels/my_add.hip"), add.replace("tf_load(b, b_kind, i)", "tf_load(b, b_kind, i) * 2.0f")).unwrap();
    let (code, said) = run(&["--no-controls"]);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("my_add (f32) FAIL at ") && said.contains("at shapes: "), "{said}");
}

#[test]
fn timings_split_each_records_time_into_phases_in_the_table_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let (code, lines, stderr) = contracts(&["--only", "tf_add", "--timings", "--report", report.to_str().unwrap()]);
    assert_eq!(code, 0, "{lines:?}\n{stderr}");
    let table = lines.iter().position(|l| l.starts_with("timings: ")).expect("a timings table");
    // tf_add's controls planted to crash and to hang end their processes
    assert_eq!(lines[table + 1], "processes that ended after a job: 2 (1 crashed: SIGSEGV; 1 it timed out)", "{lines:?}");
    let table = table + 1;
    let header = &lines[table + 1];
    for phase in ["start-up", "inputs", "upload", "launches", "download", "oracle", "gates", "other"] {
        assert!(header.contains(phase), "{header}");
    }
    let rows: Vec<_> = lines[table + 2..].iter().take_while(|l| !l.starts_with("ran ")).collect();
    assert!(rows.iter().any(|r| r.contains("tf_add / ")), "{rows:?}");
    assert!(rows.iter().any(|r| r.contains("(control: ")), "{rows:?}");
    assert!(rows.last().unwrap().contains("summed over records"), "{rows:?}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    for record in json["records"].as_array().unwrap() {
        let phases = &record["phases"];
        assert!(phases["launches"].as_f64().unwrap() > 0.0 && phases["gates"].as_f64().unwrap() > 0.0, "{record}");
        let summed: f64 =
            ["startup", "inputs", "upload", "launches", "download", "oracle", "gates"].iter().map(|p| phases[p].as_f64().unwrap()).sum();
        assert!(summed <= record["seconds"].as_f64().unwrap() + 1e-3, "phases sum past the record's wall time: {record}");
    }
    // the job's first record carries its process's start-up
    let records = json["records"].as_array().unwrap();
    assert!(records[0]["phases"]["startup"].as_f64().unwrap() > 0.0, "{}", records[0]);
    // and the run, this process's own start before it
    let before = json["timing"]["before_seconds"].as_f64().unwrap();
    assert!(before > 0.0 && before < json["timing"]["total_seconds"].as_f64().unwrap() + 60.0, "{}", json["timing"]);
    let first = lines.iter().find(|l| l.starts_with("timings: ")).unwrap();
    assert_eq!(first.contains(" of this process's own start "), before >= 0.005, "{first}");
}

/// Controls run in workers of their own: one serves control after control while each goes red
/// cleanly, and ends after one whose kernel stored outside its tensors. tf_rms's six controls
/// on one job, in report order: `rms_bf16_store_truncates` (a fresh process: the records'
/// worker serves no control), `rms_lone_row_pairs_overrun` (the same process; it stores past a
/// piece's row, so the process ends after it), then the other four in one more process. With
/// the build's process and the records' worker: 4 processes, where a process a control was
/// 8, and 2 without the controls (on the host no spare starts ahead of them). A kernel cache of its own: on the tests' shared cache,
/// which the other tests fill at the same time, a clean-clone run once started one process
/// more (a worker declined a job or was not kept; seen only with a cache shared by two
/// runs at once, cause not found).
#[test]
fn controls_share_a_worker_of_their_own_until_one_stores_outside_its_tensors() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let processes = |flags: &[&str]| {
        let report = dir.path().join("r.json");
        let mut args = vec!["--only", "tf_rms", "--jobs", "1", "--timings", "--report", report.to_str().unwrap()];
        args.extend_from_slice(&["--cache-dir", cache.to_str().unwrap()]);
        args.extend_from_slice(flags);
        let (code, lines, stderr) = contracts(&args);
        assert_eq!(code, 0, "{lines:?}\n{stderr}");
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let summary = json["summary_line"].as_str().unwrap().to_string();
        (json["timing"]["processes"].as_u64().unwrap(), summary, lines.join("\n"))
    };
    let (with_controls, summary, output) = processes(&[]);
    assert!(summary.ends_with("6 controls: 6 red as planted, 0 missed; 0 limit problems"), "{output}");
    assert_eq!(with_controls, 4, "{output}");
    assert_eq!(processes(&["--no-controls"]).0, 2);
}

/// A record whose kernel stores outside its tensors ends its process there: the job's later
/// records run in a fresh one. tf_rms with a store one element past an f32 output: its first
/// record (`f32`) and its last (`f16, f32 out, eps 1e-6`) red at shapes, the three between
/// pass, in a second worker (3 processes with the build's, where 2 served them before).
#[test]
fn a_record_that_stores_outside_its_tensors_leaves_the_jobs_other_records_to_a_fresh_process() {
    let dir = tempfile::tempdir().unwrap();
    let kernels = dir.path().join("kernels");
    copy_dir(&root().join("kernels"), &kernels);
    let source = std::fs::read_to_string(kernels.join("tf_rms.hip")).unwrap();
    let store = "    tf_store(out, out_kind, row + j, v * inverse * tf_load(weight, weight_kind, j));\n  }\n";
    assert!(source.contains(store), "tf_rms.hip's store changed: update this test");
    let past = "  if (out_kind == TF_F32 && blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) tf_store(out, out_kind, row + k, 0.0f);\n";
    std::fs::write(kernels.join("tf_rms.hip"), source.replace(store, &format!("{store}{past}"))).unwrap();
    let report = dir.path().join("r.json");
    let cache = dir.path().join("cache");
    let (code, lines, stderr) = contracts(&[
        "--only",
        "tf_rms",
        "--no-controls",
        "--jobs",
        "1",
        "--kernels",
        kernels.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    assert_eq!(code, 1, "{output}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let outcomes: Vec<(&str, &str)> =
        json["records"].as_array().unwrap().iter().map(|r| (r["record"].as_str().unwrap(), r["outcome"].as_str().unwrap())).collect();
    let fail_pass = |record: &(&str, &str)| if record.0.contains("f32 out") || record.0 == "f32" { "fail" } else { "pass" };
    assert!(outcomes.len() == 5 && outcomes.iter().all(|r| r.1 == fail_pass(r)), "{outcomes:?}\n{output}");
    let f32_cases = json["records"][0]["cases"].as_array().unwrap();
    assert!(f32_cases.iter().any(|c| c["wrote_outside"] == true), "{output}");
    assert!(json["records"][1]["cases"].as_array().unwrap().iter().all(|c| c.get("wrote_outside").is_none()));
    assert_eq!(json["timing"]["processes"], 3, "{output}");
}

/// Gate 5's pieces copy their rows of an input from the whole batch's tensor on the device,
/// and run once more on the generated bytes where that input turns out changed: here the whole
/// batch flips a bit of its last row's input after using it, so a piece given the whole batch's
/// bytes differs from it at that row. Red at shapes (the input changed), and not at seams.
#[test]
fn pieces_of_a_whole_batch_that_changed_its_input_get_the_input_as_generated() {
    let dir = tempfile::tempdir().unwrap();
    let kernels = dir.path().join("kernels");
    copy_dir(&root().join("kernels"), &kernels);
    let source = std::fs::read_to_string(kernels.join("tf_rms.hip")).unwrap();
    let flips = "    tf_store(out, out_kind, row + j, v * inverse * tf_load(weight, weight_kind, j));\n  }\n  __syncthreads();\n  \
                 if (gridDim.x > 1 && blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)\n    \
                 ((unsigned char*)(void*)x)[(row + k - 1) * (x_kind == TF_F32 ? 4 : 2)] ^= 1;\n}\n";
    let (kept, _) = source.rsplit_once("    tf_store(out, out_kind, row + j").expect("tf_rms's store");
    std::fs::write(kernels.join("tf_rms.hip"), format!("{kept}{flips}")).unwrap();
    let report = dir.path().join("r.json");
    let args = ["--kernels", kernels.to_str().unwrap(), "--only", "tf_rms", "--no-controls", "--report", report.to_str().unwrap()];
    let (code, lines, stderr) = contracts(&args);
    let output = format!("{}\n{stderr}", lines.join("\n"));
    assert_eq!(code, 1, "{output}");
    let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("tf_rms (") && l.contains(" FAIL ")).collect();
    assert_eq!(fails.len(), 5, "{output}");
    for line in fails {
        assert!(line.contains("at shapes: ") && line.contains("x: input changed: 1 of 192 elements, first [2, 63]"), "{line}");
        assert!(!line.contains("at seams"), "a piece ran on the whole batch's changed input: {line}");
    }
}
