//! Kernels that misbehave as a process (issue: a kernel under test is code we do not trust):
//! each row writes a faulty copy of tf_add into a repository of its own, runs the real binary
//! on it and checks the exact outcome, the SUMMARY, a whole JSON report, that nothing outside
//! the repository changed and that no process of the run is left. A test beside the table
//! interrupts runs with SIGINT, SIGTERM and SIGHUP.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{copy_dir, root};

/// What a row's tf_add does besides adding: `extra` is C++ at file scope defining
/// `static bool misbehave(long long i, int out_kind)`, called by every thread before its
/// store; `true` stores a wrong sum (one more).
struct Row {
    name: &'static str,
    extra: &'static str,
    /// Flags beyond the repository's own.
    flags: &'static [&'static str],
    /// A compiler script (KERNEL_CONTRACTS_CXX) to write into the repository.
    compiler: Option<&'static str>,
    code: i32,
    /// Lines that must be printed: each starting with the first text and holding the second.
    lines: &'static [(&'static str, &'static str)],
    /// Records in the report, and what ended the run early if anything did.
    records: usize,
    interrupted: Option<&'static str>,
    /// An in-process run ended by exit(): no SUMMARY, and this on standard error.
    no_summary_but: Option<&'static str>,
    /// Whether the kernel uses the C library beyond device code's (`getenv`, `write`, `fork`):
    /// the contract then accepts the static check's finding, so that what is tested is how the
    /// run stands the kernel's behaviour.
    uses_host_only: bool,
}

const ROW: Row = Row {
    name: "",
    extra: "",
    flags: &[],
    compiler: None,
    code: 1,
    lines: &[],
    records: 3,
    interrupted: None,
    no_summary_but: None,
    uses_host_only: true,
};

/// The known finding a row's contract gets when its kernel uses the C library beyond device code's.
const HOST_ONLY_ACCEPTED: &str = "\n[[finding]]\ngate = \"shapes\"\narch = \"host-x86_64\"\ntensor = \"kernel\"\n\
                                  matches = \"which no GPU compiler provides to device code\"\n\
                                  reason = \"a test of misbehaving kernels: what they do with the C library is the test\"\n";

/// The old protocol's prefix and a result that parsed as a pass under it.
const FORGED_PASS: &str = r#"@@kernel-contracts {\"result\":{\"op\":\"tf_add\",\"record\":\"f32\",\"contract_file\":\"contracts/tf_add.toml\",\"control\":null,\"outcome\":\"pass\",\"gates_run\":[\"nonfinite\",\"repeat\",\"shapes\"],\"failures\":[],\"findings\":[],\"stale_findings\":[],\"error\":null,\"tolerances\":{},\"cases\":[],\"limits\":null,\"seconds\":0.1}}\n"#;

const PASS_F32: (&str, &str) = ("tf_add (f32) pass ", "");
const PASS_F16: (&str, &str) = ("tf_add (f16) pass ", "");
const PASS_BF16: (&str, &str) = ("tf_add (bf16) pass ", "");

fn rows() -> Vec<Row> {
    let mut rows = vec![
        Row {
            name: "a kernel printing a forged pass on standard output still fails",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && once(\"KC_SAID\")) { printf(\"%s\", FORGED); fflush(stdout); }
                   return out_kind == TF_F32;
                 }",
            lines: &[("tf_add (f32) FAIL at nonfinite: ", "elements differ"), PASS_F16, PASS_BF16],
            ..ROW
        },
        Row {
            name: "a forged result written on the result channel without the token is ignored and noted",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && once(\"KC_SAID\")) { (void)!write(1000, FORGED, strlen(FORGED)); }
                   return out_kind == TF_F32;
                 }",
            lines: &[
                ("tf_add (f32) FAIL at nonfinite: ", "elements differ"),
                ("    note: its result channel carried 1 line(s) without this run's token, ignored", "@@kernel-contracts"),
            ],
            ..ROW
        },
        Row {
            name: "a genuine-looking result for another record, on both streams, changes nothing",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && out_kind == TF_F32 && once(\"KC_SAID\")) {
                     char other[2048];
                     snprintf(other, sizeof other, \"%s\", FORGED);
                     char* at = strstr(other, \"\\\"record\\\":\\\"f32\\\"\");
                     memcpy(at, \"\\\"record\\\":\\\"f16\\\"\", 14);
                     printf(\"%s\", other); fflush(stdout);
                     (void)!write(1000, other, strlen(other));
                   }
                   return false;
                 }",
            code: 0,
            lines: &[
                ("tf_add (f32) pass ", ""),
                ("    note: its result channel carried 1 line", "\"record\":\"f16\""),
                PASS_F16,
                PASS_BF16,
            ],
            ..ROW
        },
        Row {
            name: "a kernel printing 160 MB neither grows the parent nor times out",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && once(\"KC_SAID\")) {
                     char line[4096];
                     memset(line, 'x', sizeof line); line[sizeof line - 1] = '\\n';
                     for (int n = 0; n < 32 * 1024; n++) fwrite(line, 1, sizeof line, stdout);
                     for (int n = 0; n < 8 * 1024; n++) fwrite(line, 1, sizeof line, stderr);
                     fflush(stdout);
                   }
                   return false;
                 }",
            flags: &["--timeout", "60"],
            code: 0,
            lines: &[PASS_F32, PASS_F16, PASS_BF16],
            ..ROW
        },
        Row {
            name: "a kernel calling exit(0) errors its record, and the rest run",
            extra: "static bool misbehave(long long i, int out_kind) { if (i == 0 && out_kind == TF_F32) exit(0); return false; }",
            lines: &[
                (
                    "tf_add (f32) ERROR: ",
                    "its process ended before reporting it: a kernel or library called exit() in case {rows = 3, k = 1}",
                ),
                PASS_F16,
                PASS_BF16,
            ],
            ..ROW
        },
        Row {
            name: "a kernel calling _exit(0) errors its record",
            extra: "static bool misbehave(long long i, int out_kind) { if (i == 0 && out_kind == TF_F32) _exit(0); return false; }",
            lines: &[("tf_add (f32) ERROR: ", "its process ended (exit status 0) without reporting it"), PASS_F16, PASS_BF16],
            ..ROW
        },
        Row {
            name: "a kernel calling abort() errors its record",
            extra: "static bool misbehave(long long i, int out_kind) { if (i == 0 && out_kind == TF_F32) abort(); return false; }",
            uses_host_only: false,
            lines: &[("tf_add (f32) ERROR: ", "crashed: SIGABRT in case {rows = 3, k = 1}"), PASS_F16, PASS_BF16],
            ..ROW
        },
        Row {
            name: "a kernel calling exit(0) in an in-process run: exit 3, said, and the report holds what finished",
            extra: "static bool misbehave(long long i, int out_kind) { if (i == 0 && out_kind == TF_F16) exit(0); return false; }",
            flags: &["--in-process"],
            code: 3,
            lines: &[PASS_F32, ("report r.json", "")],
            records: 1,
            interrupted: Some("exit()"),
            no_summary_but: Some("contracts: the run ended before its SUMMARY: a kernel or library called exit()"),
            ..ROW
        },
        Row {
            name: "a kernel forking a sleeper that calls setsid leaves no process behind",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && once(\"KC_FORKED\") && fork() == 0) { setsid(); sleep(300); _exit(0); }
                   return false;
                 }",
            code: 0,
            lines: &[PASS_F32, PASS_F16, PASS_BF16],
            ..ROW
        },
        Row {
            name: "a kernel writing files is stopped: outside its folder refused, inside killed by the size limit",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && out_kind == TF_F32) {
                     FILE* out = fopen(ESCAPED, \"w\");
                     if (out) { fputs(\"escaped\", out); fclose(out); }
                     char inside[4096];
                     snprintf(inside, sizeof inside, \"%s/inside.txt\", getenv(\"TMPDIR\"));
                     FILE* in = fopen(inside, \"w\");
                     if (in) { fputs(\"inside\", in); fflush(in); }
                   }
                   return false;
                 }",
            lines: &[
                (
                    "tf_add (f32) ERROR: ",
                    "wrote to a file, which a record's process may not (RLIMIT_FSIZE 0): SIGXFSZ in case {rows = 3, k = 1}",
                ),
                PASS_F16,
                PASS_BF16,
            ],
            ..ROW
        },
        Row {
            name: "a kernel opening files until it fails stops at the open-files limit",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && once(\"KC_COUNTED\")) {
                     int fds[4096];   // on the thread's own stack: memory the kernel got no pointer to is a finding
                     int opened = 0;
                     while (opened < 4096 && (fds[opened] = open(\"/dev/null\", O_RDONLY)) >= 0) opened++;
                     for (int n = 0; n < opened; n++) close(fds[n]);
                     if (opened >= 256) setenv(\"KC_OPENED_MANY\", \"1\", 1);
                   }
                   return getenv(\"KC_OPENED_MANY\") != nullptr;
                 }",
            code: 0,
            lines: &[PASS_F32, PASS_F16, PASS_BF16],
            ..ROW
        },
        Row {
            name: "a compiler that hangs is killed at the build time limit and its records error",
            extra: "static bool misbehave(long long, int) { return false; }",
            flags: &["--build-timeout", "2"],
            uses_host_only: false,
            compiler: Some("#!/bin/sh\nif [ \"$1\" = --version ]; then exec g++ --version; fi\nexec sleep 300\n"),
            lines: &[
                ("tf_add (f32) ERROR: ", "kernels/tf_add.hip: not built within the build time limit (2 s, --build-timeout)"),
                ("tf_add (f16) ERROR: ", "not built within the build time limit"),
                ("tf_add (bf16) ERROR: ", "not built within the build time limit"),
            ],
            ..ROW
        },
        Row {
            name: "a kernel library whose destructor hangs at exit: its last record times out, never passes",
            extra: "__attribute__((destructor)) static void hang() { for (;;) pause(); }
                    static bool misbehave(long long, int) { return false; }",
            flags: &["--timeout", "5"],
            lines: &[
                PASS_F32,
                PASS_F16,
                ("tf_add (bf16) ERROR: ", "timed out after 5 s after its last case, while its process was ending"),
            ],
            ..ROW
        },
        Row {
            name: "a kernel library whose destructor aborts: its last record errors, never passes",
            extra: "__attribute__((destructor)) static void die() { abort(); }
                    static bool misbehave(long long, int) { return false; }",
            uses_host_only: false,
            lines: &[PASS_F32, PASS_F16, ("tf_add (bf16) ERROR: ", "crashed: SIGABRT, after its last case, while its process was ending")],
            ..ROW
        },
    ];
    // Landlock's signal scope (Linux 6.12, ABI 6) is what stops this; on an older kernel a
    // kernel can end the run, as the README's security model says
    if harness::sandbox::landlock_abi() >= 6 {
        rows.push(Row {
            name: "a kernel sending SIGKILL to the run is refused by the sandbox: its record fails, the run goes on",
            extra: "static bool misbehave(long long i, int out_kind) {
                   if (i == 0 && once(\"KC_SENT\")) { (void)kill(getppid(), SIGKILL); }
                   return out_kind == TF_F32;
                 }",
            lines: &[("tf_add (f32) FAIL at nonfinite: ", "elements differ"), PASS_F16, PASS_BF16],
            ..ROW
        });
    }
    rows
}

/// tf_add with the row's misbehaviour: every thread calls `misbehave` before its store.
fn kernel(extra: &str, escaped: &Path) -> String {
    let real = std::fs::read_to_string(root().join("kernels/tf_add.hip")).unwrap();
    let head = format!(
        "#include <csignal>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <fcntl.h>\n#include <unistd.h>\n\
         static const char FORGED[] = \"{FORGED_PASS}\";\nstatic const char ESCAPED[] = \"{}\";\n\
         static bool misbehave(long long i, int out_kind);\n\
         // a flag kept in the process's environment: a kernel's own static storage is a finding of its own\n\
         static bool once(const char* name) {{ if (getenv(name)) return false; setenv(name, \"1\", 1); return true; }}\n",
        escaped.display()
    );
    let store = "tf_store(out, out_kind, i, tf_load(a, a_kind, i) + tf_load(b, b_kind, i));";
    assert!(real.contains(store), "tf_add's store changed");
    let kernel = real.replace(
        store,
        // adding 0.0f would turn a sum of -0 into +0, which gate 1's signed zeros see
        "tf_store(out, out_kind, i, tf_load(a, a_kind, i) + tf_load(b, b_kind, i) + (misbehave(i, out_kind) ? 1.0f : -0.0f));",
    );
    let include = "#include \"common.h\"\n";
    kernel.replace(include, &format!("{include}{head}{extra}\n"))
}

/// A repository of its own: tf_add's contract and the row's kernel, its own kernel cache, its
/// own temporary folder, and a marker in the environment of every process of the run.
struct Setup {
    dir: tempfile::TempDir,
    base: PathBuf,
    marker: String,
}

fn set_up(row_name: &str, extra: &str, compiler: Option<&str>, uses_host_only: bool) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    for folder in ["contracts", "controls", "tmp"] {
        std::fs::create_dir_all(base.join(folder)).unwrap();
    }
    copy_dir(&root().join("kernels"), &base.join("kernels"));
    // tf_add's three records of one dtype each: the rows below name each record's line
    let real = std::fs::read_to_string(root().join("contracts/tf_add.toml")).unwrap();
    let mixed = "[[record]]\nname = \"bf16 a, f16 b, f32 out\"\ndtypes = { a = \"bf16\", b = \"f16\", out = \"f32\" }\n";
    assert!(real.contains(mixed), "tf_add's mixed record changed");
    let exempt = "\n[exempt]\ndtype_pairs = { \"a, b\" = \"a test of misbehaving kernels\", \"a, out\" = \"a test of misbehaving kernels\", \
                  \"b, out\" = \"a test of misbehaving kernels\" }\n";
    let accepted = if uses_host_only { HOST_ONLY_ACCEPTED } else { "" };
    std::fs::write(base.join("contracts/tf_add.toml"), format!("{}{exempt}{accepted}", real.replace(mixed, ""))).unwrap();
    std::fs::write(base.join("kernels/tf_add.hip"), kernel(extra, &base.join("escaped.txt"))).unwrap();
    if let Some(script) = compiler {
        use std::os::unix::fs::PermissionsExt;
        let path = base.join("cxx.sh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // the temporary folder's name is unique: so is the marker
    let marker = format!("{row_name}: {}", base.file_name().unwrap().to_string_lossy());
    Setup { dir, base, marker }
}

impl Setup {
    fn command(&self, flags: &[&str], compiler: bool) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_contracts"));
        command
            .args(["--root", self.base.to_str().unwrap(), "--report", self.base.join("r.json").to_str().unwrap()])
            .arg("--cache-dir")
            .arg(self.base.join("cache"))
            .args(flags)
            .env("TMPDIR", self.base.join("tmp"))
            .env(crate::RUN_MARKER, &self.marker)
            .current_dir(&self.base)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if compiler {
            command.env("KERNEL_CONTRACTS_CXX", self.base.join("cxx.sh"));
        }
        command
    }

    /// Every file and folder under the repository but the kernel cache and the report, with a
    /// hash of its bytes.
    fn snapshot(&self) -> BTreeMap<PathBuf, u64> {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let hash = |bytes: &[u8]| {
            let mut hasher = DefaultHasher::new();
            bytes.hash(&mut hasher);
            hasher.finish()
        };
        let mut files = BTreeMap::new();
        let mut folders = vec![self.base.clone()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap().flatten() {
                let path = entry.path();
                let relative = path.strip_prefix(&self.base).unwrap().to_path_buf();
                if relative == Path::new("cache") || relative.starts_with("r.json") {
                    continue;
                }
                if path.is_dir() {
                    files.insert(relative, 0);
                    folders.push(path);
                } else {
                    files.insert(relative, hash(&std::fs::read(&path).unwrap_or_default()));
                }
            }
        }
        files
    }

    /// Processes that carry this run's marker and are not zombies.
    fn left_behind(&self) -> Vec<String> {
        crate::processes_marked(&self.marker)
    }
}

/// The run's exit status, lines, standard error, and the peak resident memory of the
/// `contracts` process as sampled while it ran.
fn run(command: &mut Command) -> (i32, Vec<String>, String, u64) {
    let mut child = command.spawn().unwrap();
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            pipe.read_to_end(&mut text).unwrap();
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let mut peak_kib = 0;
    while child.try_wait().unwrap().is_none() {
        let status = std::fs::read_to_string(&status_file).unwrap_or_default();
        let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches(" kB").parse().ok());
        peak_kib = peak_kib.max(hwm.unwrap_or(0));
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = child.wait().unwrap().code().unwrap_or(-1);
    let stdout = out.join().unwrap();
    (code, stdout.lines().map(str::to_string).collect(), err.join().unwrap(), peak_kib)
}

/// Runs one row: what the run said, and every way it fell short.
fn check(row: &Row) -> (String, Vec<String>) {
    let setup = set_up(row.name, row.extra, row.compiler, row.uses_host_only);
    let before = setup.snapshot();
    let started = Instant::now();
    let (code, lines, stderr, peak_kib) = run(setup.command(row.flags, row.compiler.is_some()).arg("--no-controls"));
    let mut problems = Vec::new();
    let mut expect = |holds: bool, what: String| {
        if !holds {
            problems.push(what)
        }
    };
    expect(code == row.code, format!("exit {code}, not {}", row.code));
    let mut said = Vec::new();
    for (start, holds) in row.lines {
        match lines.iter().find(|l| l.starts_with(start) && l.contains(holds)) {
            Some(line) => said.push(line.clone()),
            None => expect(false, format!("no line `{start}...{holds}...`")),
        }
    }
    match row.no_summary_but {
        None => expect(lines.last().is_some_and(|l| l.starts_with("SUMMARY ")), "the last line is not the SUMMARY".into()),
        Some(message) => {
            expect(stderr.contains(message), format!("standard error does not say `{message}`"));
            expect(!lines.iter().any(|l| l.starts_with("SUMMARY ")), "a SUMMARY was printed".into());
        }
    }
    match std::fs::read_to_string(setup.base.join("r.json"))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()))
    {
        Err(e) => expect(false, format!("report: {e}")),
        Ok(json) => {
            expect(json["exit_code"] == row.code, format!("the report's exit_code is {}", json["exit_code"]));
            let records = json["records"].as_array().map_or(0, Vec::len);
            expect(records == row.records, format!("the report has {records} records, not {}", row.records));
            expect(json["interrupted"].as_str() == row.interrupted, format!("the report's interrupted is {}", json["interrupted"]));
            if row.no_summary_but.is_none() {
                expect(lines.last().is_some_and(|l| json["summary_line"] == l.as_str()), "the report's summary_line differs".into());
            }
        }
    }
    expect(setup.snapshot() == before, "files under the repository changed (beyond the cache and the report)".into());
    let escaped = setup.base.join("escaped.txt");
    expect(!escaped.exists(), format!("{} exists", escaped.display()));
    let left = setup.left_behind();
    expect(left.is_empty(), format!("processes of the run are left: {left:?}"));
    // a flood of output is drained and dropped, never held
    expect(peak_kib < 96 * 1024, format!("the parent's resident memory peaked at {peak_kib} KiB"));
    expect(started.elapsed() < Duration::from_secs(240), format!("the run took {:?}", started.elapsed()));
    if !problems.is_empty() {
        problems.push(format!("output:\n{}\n{stderr}", lines.join("\n")));
    }
    drop(setup.dir);
    (said.join(" / "), problems)
}

#[test]
fn every_misbehaving_kernel_costs_its_record_only_and_leaves_nothing_behind() {
    let rows = rows();
    assert!(rows.len() >= 12);
    let failures = crate::rows_two_at_a_time(&rows, |row| row.name, check);
    assert!(failures.is_empty(), "{} of {} rows fall short:\n{}", failures.len(), rows.len(), failures.join("\n\n"));
}

/// Whether a child of `parent` has a child that leads a session of its own (a sleeper forked
/// by a kernel that called setsid).
fn has_a_session_leader_grandchild(parent: u32) -> bool {
    // (pid, parent pid, session) of every process
    let processes: Vec<(u32, u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // after the command name in parentheses: state, parent pid, process group, session
            let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
            Some((pid, fields.get(1)?.parse().ok()?, fields.get(3)?.parse().ok()?))
        })
        .collect();
    let children: Vec<u32> = processes.iter().filter(|p| p.1 == parent).map(|p| p.0).collect();
    processes.iter().any(|&(pid, ppid, session)| session == pid && children.contains(&ppid))
}

#[test]
fn a_signal_mid_run_ends_every_process_and_the_report_says_so() {
    // tf_add's records pass; then a control whose first thread forks a sleeper into a session
    // of its own and never returns
    let setup = set_up("signals", "static bool misbehave(long long, int) { return false; }", None, false);
    let hang = "static bool misbehave(long long i, int) {
                  if (i == 0 && once(\"KC_FORKED\")) {
                    if (fork() == 0) { setsid(); sleep(300); _exit(0); }
                    for (;;) pause();
                  }
                  return false;
                }";
    std::fs::write(setup.base.join("controls/hang.hip"), kernel(hang, &setup.base.join("escaped.txt"))).unwrap();
    std::fs::write(
        setup.base.join("controls/hang.toml"),
        "contract = \"tf_add\"\nrecord = \"f32\"\nfault = \"timeout\"\ntimeout_seconds = 120\n\
         bug = \"forks a sleeper that calls setsid, then never returns\"\nsource = \"hang.hip\"\n",
    )
    .unwrap();
    let before = setup.snapshot();
    for (signal, name, code) in [(libc::SIGINT, "SIGINT", 130), (libc::SIGTERM, "SIGTERM", 143), (libc::SIGHUP, "SIGHUP", 129)] {
        let child = setup.command(&["--jobs", "1"], false).spawn().unwrap();
        let parent = child.id();
        let started = Instant::now();
        // the control's process (whatever its label: on a GPU it would be a spare started
        // while the records ran) is stuck in its kernel once the sleeper it forked has its own
        // session
        while !has_a_session_leader_grandchild(parent) {
            assert!(started.elapsed() < Duration::from_secs(180), "the control's kernel forked no sleeper");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: a signal to the run started above
        assert_eq!(unsafe { libc::kill(parent as i32, signal) }, 0);
        let out = child.wait_with_output().unwrap();
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
        let output = format!("{}\n{}", lines.join("\n"), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{name}: {output}");
        let summary = lines.iter().position(|l| l.starts_with("SUMMARY ")).unwrap_or_else(|| panic!("{name}: no SUMMARY: {output}"));
        assert_eq!(summary, lines.len() - 1, "{output}");
        let said =
            lines.iter().position(|l| l.starts_with(&format!("interrupted by {name}: 3 records and 0 controls finished"))).expect(&output);
        assert!(said < summary, "{output}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(setup.base.join("r.json")).unwrap()).expect("the report is valid JSON");
        assert_eq!((json["interrupted"].as_str(), json["exit_code"].as_i64()), (Some(name), Some(code as i64)), "{output}");
        assert_eq!(json["summary_line"], lines[summary].as_str());
        assert_eq!((json["records"].as_array().unwrap().len(), json["controls"].as_array().unwrap().len()), (3, 0), "{output}");
        let left = setup.left_behind();
        assert!(left.is_empty(), "{name}: processes of the run are left: {left:?}");
        assert_eq!(setup.snapshot(), before, "{name}: files under the repository changed");
    }
}
