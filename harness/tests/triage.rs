//! The run's outputs for CI and triage, from the real binary: JUnit that a schema validator
//! accepts, `contracts diff` naming a planted regression, a failing record's replay command
//! reproducing just its case, `--dump` files, triage pages rendered by a real headless
//! browser, partitions merged into the whole run, GitHub annotations, and `contracts record`
//! writing only what was accepted.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() { copy_dir(&path, &target) } else { std::fs::copy(&path, &target).map(drop).unwrap() }
    }
}

/// The binary with `args`, from the repository, on the tests' shared kernel cache.
fn contracts(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_contracts"));
    command.args(args).current_dir(root()).arg("--cache-dir").arg(root().join("target/kernel-cache"));
    command
}

/// Exit status and standard output (then standard error, for messages).
fn output(mut command: Command) -> (i32, String, String) {
    let out = command.output().expect("run contracts");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A kernels folder whose tf_cast is the control that truncates to bf16 instead of rounding:
/// the records that write bf16 fail at shapes (and nonfinite), element by element.
fn truncating_kernels(dir: &Path) -> PathBuf {
    let kernels = dir.join("kernels");
    copy_dir(&root().join("kernels"), &kernels);
    std::fs::copy(root().join("controls/cast_bf16_truncates.hip"), kernels.join("tf_cast.hip")).unwrap();
    kernels
}

#[test]
fn junit_output_validates_against_the_junit_schema_and_carries_each_failing_record_line() {
    if !engine::toolchain::available_for_test(engine::toolchain::Toolchain::Xmllint) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kernels = truncating_kernels(dir.path());
    let junit = dir.path().join("out/junit.xml");
    let (code, stdout, stderr) = output(contracts(&[
        "--only",
        "tf_cast",
        "--kernels",
        kernels.to_str().unwrap(),
        "--report",
        dir.path().join("r.json").to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let xsd = root().join("harness/tests/data/junit.xsd");
    let validate = |file: &Path| Command::new("xmllint").arg("--noout").arg("--schema").arg(&xsd).arg(file).output().unwrap();
    let checked = validate(&junit);
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));

    let xml = std::fs::read_to_string(&junit).unwrap();
    let report = json(&dir.path().join("r.json"));
    let (records, controls) = (report["records"].as_array().unwrap(), report["controls"].as_array().unwrap());
    let not_run = report["controls_not_applicable"].as_array().unwrap().len();
    assert_eq!(xml.matches("<testcase ").count(), records.len() + controls.len() + not_run, "{xml}");
    assert_eq!(xml.matches("<skipped ").count(), not_run);
    // each failing record is a failure carrying its record line, as the run printed it
    let failing: Vec<&str> = stdout.lines().filter(|l| l.starts_with("tf_cast (") && l.contains(" FAIL at ")).collect();
    assert_eq!(failing.len(), 2, "{stdout}");
    assert_eq!(xml.matches("<failure ").count(), failing.len(), "{xml}");
    for line in failing {
        let escaped = line.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;");
        assert!(xml.contains(&format!("message=\"{escaped}\"")), "{line}\n{xml}");
    }
    // the schema is no rubber stamp: a suite without its test count is refused
    let broken = dir.path().join("broken.xml");
    std::fs::write(&broken, xml.replacen(" tests=\"", " counted=\"", 2)).unwrap();
    assert!(!validate(&broken).status.success(), "the schema accepted a testsuite without `tests`");
}

#[test]
fn contracts_diff_exits_1_on_a_planted_regression_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.json"), dir.path().join("new.json"));
    let (code, stdout, _) = output(contracts(&["--only", "tf_cast", "--no-controls", "--report", base.to_str().unwrap()]));
    assert_eq!(code, 0, "{stdout}");
    let kernels = truncating_kernels(dir.path());
    let (code, _, _) = output(contracts(&[
        "--only",
        "tf_cast",
        "--no-controls",
        "--kernels",
        kernels.to_str().unwrap(),
        "--report",
        new.to_str().unwrap(),
    ]));
    assert_eq!(code, 1);

    let (code, stdout, stderr) = output(contracts(&["diff", base.to_str().unwrap(), new.to_str().unwrap()]));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    for record in ["f32 to bf16", "f16 to bf16"] {
        assert!(lines.contains(&format!("REGRESSION tf_cast ({record}): pass -> FAIL").as_str()), "{stdout}");
    }
    // the record line's change is shown word by word
    assert!(lines.iter().any(|l| l.starts_with("    ~ tf_cast (f32 to bf16) [-pass") && l.contains("{+FAIL at nonfinite:")), "{stdout}");
    assert!(lines.last().unwrap().starts_with("DIFF host-x86_64: 6 records and 0 controls compared: 2 regressions, "), "{stdout}");

    // the other way round it is an improvement, not a regression; a report against itself is quiet
    let (code, stdout, _) = output(contracts(&["diff", new.to_str().unwrap(), base.to_str().unwrap()]));
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("changed tf_cast (f32 to bf16): FAIL -> pass"), "{stdout}");
    let (code, stdout, _) = output(contracts(&["diff", base.to_str().unwrap(), base.to_str().unwrap()]));
    assert_eq!((code, stdout.lines().count()), (0, 2), "{stdout}");
    // unreadable input: 2, naming the file
    std::fs::write(dir.path().join("not.json"), "{\"tool\": \"something else\"}").unwrap();
    let (code, _, stderr) = output(contracts(&["diff", base.to_str().unwrap(), dir.path().join("not.json").to_str().unwrap()]));
    assert_eq!(code, 2);
    assert!(stderr.contains("not.json: a JSON file, but not a report of kernel-contracts"), "{stderr}");
    let (code, _, _) = output(contracts(&["diff", base.to_str().unwrap(), dir.path().join("missing.json").to_str().unwrap()]));
    assert_eq!(code, 2);
}

/// The words of a replay command, as a shell reads them: run through `sh -c` with the binary
/// first on PATH, so the command is taken exactly as printed.
fn run_printed(command: &str, extra: &str, env: &[(&str, &str)]) -> (i32, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_contracts")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let cache = root().join("target/kernel-cache");
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(format!("{command} {extra} --cache-dir '{}'", cache.display())).env("PATH", path).current_dir(root());
    for (k, v) in env {
        sh.env(k, v);
    }
    let out = sh.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_failing_records_replay_command_reproduces_exactly_that_case_and_its_dump_holds_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let kernels = truncating_kernels(dir.path());
    let full = dir.path().join("full.json");
    let mut run = contracts(&["--only", "tf_cast", "--kernels", kernels.to_str().unwrap(), "--report", full.to_str().unwrap()]);
    run.env("GITHUB_ACTIONS", "true");
    let (code, stdout, stderr) = output(run);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("tf_cast (f32 to bf16) FAIL at ")).expect(&stdout);
    let replay = lines[at + 1].strip_prefix("    replay: ").unwrap_or_else(|| panic!("no replay line under the record: {stdout}"));
    assert!(
        replay.starts_with("contracts --only tf_cast --record 'f32 to bf16' --case ")
            && replay.contains(" --backend host")
            && replay.contains(&format!(" --kernels {}", kernels.display())),
        "{replay}"
    );
    // a passing record has none
    let passing = lines.iter().position(|l| l.starts_with("tf_cast (f32 to f16) pass ")).unwrap();
    assert!(!lines[passing + 1].contains("replay:"), "{stdout}");
    // under GitHub Actions each failing record is annotated at its [[record]] in the contract
    let contract = std::fs::read_to_string(root().join("contracts/tf_cast.toml")).unwrap();
    let name_line = contract.lines().position(|l| l.trim() == "name = \"f32 to bf16\"").unwrap() + 1;
    let annotation =
        format!("::error file=contracts/tf_cast.toml,line={name_line},title=tf_cast (f32 to bf16) FAIL::tf_cast (f32 to bf16) FAIL at ");
    assert!(lines.iter().any(|l| l.starts_with(&annotation) && l.contains("%0Areplay: contracts --only tf_cast")), "{stdout}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("::error ")).count(), 2, "{stdout}");

    let full = json(&full);
    let record = full["records"].as_array().unwrap().iter().find(|r| r["record"] == "f32 to bf16").unwrap();
    let first = &record["failures"][0];
    let case_index = first["case_index"].as_u64().unwrap() as usize;
    let case_symbols = &record["cases"][case_index]["symbols"];

    let again = dir.path().join("again.json");
    let dump = dir.path().join("dump");
    let (code, said) = run_printed(replay, &format!("--report '{}' --dump '{}'", again.display(), dump.display()), &[]);
    assert_eq!(code, 1, "{said}");
    let again = json(&again);
    let records = again["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{said}");
    assert_eq!(again["controls"].as_array().unwrap().len(), 0, "{said}");
    let replayed = &records[0];
    assert_eq!(replayed["record"], "f32 to bf16");
    // one case, the one that failed, failing the same way at the same gate
    assert_eq!(replayed["cases"].as_array().unwrap().len(), 1, "{replayed}");
    assert_eq!(&replayed["cases"][0]["symbols"], case_symbols);
    assert!(replayed["nonfinite_cases"].as_array().unwrap().len() <= 1);
    let again_first = &replayed["failures"][0];
    assert_eq!(
        (&again_first["gate"], &again_first["case_index"], &again_first["tensor"]),
        (&first["gate"], &first["case_index"], &first["tensor"])
    );
    assert_eq!(again_first["failure"]["message"], first["failure"]["message"]);

    // --dump: the case's input, output and oracle, with the dtype in each file's name
    let case_dir = dump.join(format!("tf_cast/f32-to-bf16/case{case_index}"));
    let mut files: Vec<String> =
        std::fs::read_dir(&case_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["input-in.f32.npy", "oracle-out.f64.npy", "output-out.bf16-bits.npy"], "{said}");
    let elements: u64 = case_symbols.as_object().unwrap().values().map(|v| v.as_u64().unwrap()).product();
    for (file, descr, size) in [("input-in.f32.npy", "<f4", 4), ("output-out.bf16-bits.npy", "<u2", 2), ("oracle-out.f64.npy", "<f8", 8)] {
        let bytes = std::fs::read(case_dir.join(file)).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "{file}");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = String::from_utf8_lossy(&bytes[10..10 + header_len]);
        assert!(header.contains(&format!("'descr': '{descr}'")), "{file}: {header}");
        assert_eq!((bytes.len() - 10 - header_len) as u64, elements * size, "{file}: {header}");
    }
}

#[test]
fn the_triage_page_renders_in_a_headless_browser_with_the_failing_tensor_and_its_heat_map() {
    if !engine::toolchain::available_for_test(engine::toolchain::Toolchain::Chromium) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kernels = truncating_kernels(dir.path());
    let html = dir.path().join("triage");
    let (code, stdout, stderr) = output(contracts(&[
        "--only",
        "tf_cast",
        "--no-controls",
        "--kernels",
        kernels.to_str().unwrap(),
        "--report",
        dir.path().join("r.json").to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("; triage pages {} (2 failing records)", html.display())), "{stdout}");
    let page = html.join("01-tf_cast-f32-to-bf16.html");
    assert!(page.is_file() && html.join("index.html").is_file(), "{stdout}");

    // the page as the browser laid it out: a probe appended to a copy measures what is drawn
    let probe = "<script>window.addEventListener('load', () => { const out = document.createElement('pre'); out.id = 'probe'; \
        const map = document.querySelector('svg.heatmap'); const box = map ? map.getBoundingClientRect() : {width: 0, height: 0}; \
        const cells = [...document.querySelectorAll('svg.heatmap rect.mismatch')].filter(r => { const b = r.getBoundingClientRect(); return b.width > 0 && b.height > 0; }); \
        const fill = cells.length ? getComputedStyle(cells[0]).fill : 'none'; \
        const name = document.querySelector('.tensor-name'); \
        out.textContent = JSON.stringify({tensor: name ? name.textContent : null, map: [box.width, box.height], cells: cells.length, fill: fill, \
            bins: document.querySelectorAll('svg.histogram rect.bin').length, rows: document.querySelectorAll('table.mismatches tr').length}); \
        document.body.appendChild(out); });</script>";
    let probed = dir.path().join("probed.html");
    std::fs::write(&probed, std::fs::read_to_string(&page).unwrap().replace("</body>", &format!("{probe}</body>"))).unwrap();
    let dumped = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", probed.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dumped.stdout);
    assert!(dumped.status.success(), "{}", String::from_utf8_lossy(&dumped.stderr));
    let probe =
        dom.split("<pre id=\"probe\">").nth(1).and_then(|rest| rest.split("</pre>").next()).unwrap_or_else(|| panic!("no probe: {dom}"));
    let facts: serde_json::Value = serde_json::from_str(&probe.replace("&quot;", "\"")).unwrap_or_else(|e| panic!("{e}: {probe}"));
    assert_eq!(facts["tensor"], "out", "{facts}");
    assert!(facts["map"][0].as_f64().unwrap() > 50.0 && facts["map"][1].as_f64().unwrap() > 50.0, "{facts}");
    assert!(facts["cells"].as_u64().unwrap() > 0, "the heat map shows no mismatching cell: {facts}");
    assert!(facts["fill"].as_str().unwrap().starts_with("rgb(204, 0, 0)"), "{facts}");
    assert!(facts["bins"].as_u64().unwrap() >= 2 && facts["rows"].as_u64().unwrap() >= 2, "{facts}");
    // the page itself, as the browser read it: its record, its replay command
    let plain = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&plain.stdout);
    assert!(dom.contains("<h1 id=\"record\">tf_cast (f32 to bf16)</h1>"), "{dom}");
    assert!(dom.contains("contracts --only tf_cast --record 'f32 to bf16' --case "), "{dom}");
    assert!(!dom.contains("<script"), "the page itself runs no script");
}

#[test]
fn partitions_split_the_ops_and_merge_gives_the_whole_runs_summary() {
    let dir = tempfile::tempdir().unwrap();
    let only = ["--only", "tf_add", "--only", "tf_rms", "--only", "tf_cast", "--only", "tf_rope"];
    let report = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let run = |extra: &[&str]| output(contracts(&[&only[..], extra].concat()));
    let (code, whole, _) = run(&["--report", &report("whole.json")]);
    assert_eq!(code, 0, "{whole}");
    let mut parts = Vec::new();
    for k in 1..=2 {
        let (code, stdout, stderr) = run(&["--partition", &format!("{k}/2"), "--report", &report(&format!("part{k}.json"))]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        parts.push(json(&dir.path().join(format!("part{k}.json"))));
    }
    // every op in exactly one job
    let ops = |j: &serde_json::Value| -> Vec<String> {
        let mut ops: Vec<String> = j["records"].as_array().unwrap().iter().map(|r| r["op"].as_str().unwrap().to_string()).collect();
        ops.dedup();
        ops
    };
    let (a, b) = (ops(&parts[0]), ops(&parts[1]));
    assert!(!a.is_empty() && !b.is_empty() && a.iter().all(|op| !b.contains(op)), "{a:?} {b:?}");
    let junit = report("merged.xml");
    let (code, merged, stderr) =
        output(contracts(&["merge", &report("part1.json"), &report("part2.json"), "--report", &report("merged.json"), "--junit", &junit]));
    assert_eq!(code, 0, "{merged}\n{stderr}");
    assert_eq!(merged.lines().last(), whole.lines().last(), "{merged}");
    let record_lines = |text: &str| -> Vec<String> {
        text.lines().filter(|l| l.starts_with("tf_") && (l.contains(" pass ") || l.contains(" as planted"))).map(str::to_string).collect()
    };
    // the same records and controls in the same order (the racing control's values aside)
    let titles = |lines: Vec<String>| -> Vec<String> { lines.iter().map(|l| l.split(") ").next().unwrap().to_string()).collect() };
    assert_eq!(titles(record_lines(&merged)), titles(record_lines(&whole)));
    assert!(std::fs::read_to_string(&junit).unwrap().contains("<testsuites "));
    let (code, stdout, _) = output(contracts(&["diff", &report("whole.json"), &report("merged.json")]));
    assert_eq!(code, 0, "{stdout}");

    // jobs of another run are refused, saying why
    let (code, _, _) = run(&["--partition", "2/2", "--seed", "7", "--no-controls", "--report", &report("other.json")]);
    assert_eq!(code, 0);
    let (code, _, stderr) = output(contracts(&["merge", &report("part1.json"), &report("other.json"), "--report", &report("x.json")]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("are of different seeds (0x6b65726e656c and 0x7)"), "{stderr}");
    let (code, _, stderr) = output(contracts(&["merge", &report("part1.json"), &report("part1.json"), "--report", &report("x.json")]));
    assert_eq!(code, 2);
    assert!(stderr.contains("their jobs overlap"), "{stderr}");
}

#[test]
fn contracts_record_shows_its_diff_and_writes_only_with_accept() {
    if !engine::toolchain::available_for_test(engine::toolchain::Toolchain::AmdgpuClang) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let contracts_dir = dir.path().join("contracts");
    copy_dir(&root().join("contracts"), &contracts_dir);
    let file = contracts_dir.join("tf_add.toml");
    let recorded = std::fs::read_to_string(&file).unwrap();
    let line = recorded.lines().skip_while(|l| *l != "[limits.gfx1201]").find(|l| l.starts_with("vgprs = ")).unwrap().to_string();
    let stale = recorded.replacen(&line, "vgprs = 99", 1);
    std::fs::write(&file, &stale).unwrap();
    let record = |accept: bool| {
        let mut args = vec!["record", "--arch", "gfx1201", "--only", "tf_add", "--contracts", contracts_dir.to_str().unwrap()];
        if accept {
            args.push("--accept");
        }
        output(contracts(&args))
    };
    let (code, stdout, stderr) = record(false);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("-vgprs = 99\n") && stdout.contains(&format!("+{line}\n")), "{stdout}");
    assert!(stdout.contains("1 of 1 contract(s) would change (above): nothing written; run again with --accept to write them"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), stale, "written without --accept");
    let (code, stdout, _) = record(true);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), recorded, "--accept wrote something else than the figures measured");
    let (code, stdout, _) = record(false);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("every one of 1 contract(s) as recorded"), "{stdout}");
}
