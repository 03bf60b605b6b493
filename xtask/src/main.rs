//! `cargo xtask test`, the README's test command: installs what the tests need beyond Rust
//! (the host C++ compiler and objcopy, clang-22 for gfx1201, Debian's ROCm 5.2 runtime, the
//! NVRTC wheel for sm_90, xmllint and Chromium for the reports' tests) or stops before any test with the exact command to run, then runs
//! `cargo test --workspace --locked` and fails when any test reported itself not run.
//! `cargo xtask setup` does only the first part.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use engine::backend::cuda::nvrtc;
use engine::toolchain::{NOT_RUN_LOG, Toolchain};

/// The one wheel the static sm_90 path is recorded against.
const NVRTC_WHEEL: &str = "nvidia-cuda-nvrtc==13.0.*";

const USAGE: &str = "usage: cargo xtask test [ARGS for cargo test...]   set up the toolchains, then run every test
       cargo xtask setup                            only set up the toolchains";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") if args.len() == 1 => setup(),
        Some("test") => setup().and_then(|()| test(&args[1..])),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A tool the tests need and the Debian packages that give it.
struct Need {
    what: &'static str,
    packages: &'static [&'static str],
    missing: Option<String>,
}

/// The program runs with this argument and succeeds (its output captured, not shown).
fn runs(program: &str, arg: &str) -> bool {
    Command::new(program).arg(arg).output().is_ok_and(|out| out.status.success())
}

fn set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// What the system package manager must provide, each with why it is missing (None: here).
fn system_needs() -> Vec<Need> {
    let cxx = set("KERNEL_CONTRACTS_CXX").unwrap_or_else(|| "g++".into());
    let nvrtc_wanted =
        Toolchain::Nvrtc.find().is_err() && set("KERNEL_CONTRACTS_NVRTC").is_none() && set("KERNEL_CONTRACTS_NVRTC_DIR").is_none();
    vec![
        Need {
            what: "the host C++ compiler",
            packages: &["g++"],
            missing: (!runs(&cxx, "--version")).then(|| format!("`{cxx} --version` does not run")),
        },
        Need {
            what: "objcopy (host kernel libraries)",
            packages: &["binutils"],
            missing: (!runs("objcopy", "--version")).then(|| "`objcopy --version` does not run".into()),
        },
        Need {
            what: "clang with the AMDGPU target (static gfx1201 path)",
            packages: &["clang-22", "lld-22", "llvm-22"],
            missing: Toolchain::AmdgpuClang.find().err(),
        },
        Need {
            what: "Debian's ROCm 5.2 HIP runtime (the hip backend's no-device test)",
            packages: &["libamdhip64-5"],
            missing: Toolchain::Rocm52Runtime.find().err(),
        },
        Need { what: "xmllint (the JUnit report's schema test)", packages: &["libxml2-utils"], missing: Toolchain::Xmllint.find().err() },
        Need {
            what: "Chromium, run headless (the triage page's browser test)",
            packages: &["chromium"],
            missing: Toolchain::Chromium.find().err(),
        },
        Need {
            what: "Python's venv and pip (to install the NVRTC wheel)",
            packages: &["python3-venv"],
            missing: (nvrtc_wanted && !python_can_make_a_venv())
                .then(|| "`python3 -m venv` cannot make a virtual environment with pip".into()),
        },
    ]
}

fn python_can_make_a_venv() -> bool {
    Command::new("python3").args(["-c", "import venv, ensurepip"]).output().is_ok_and(|out| out.status.success())
}

fn setup() -> Result<(), String> {
    install_system_packages()?;
    install_nvrtc_wheel()?;
    for toolchain in [Toolchain::AmdgpuClang, Toolchain::Rocm52Runtime, Toolchain::Nvrtc, Toolchain::Xmllint, Toolchain::Chromium] {
        toolchain.find().map_err(|reason| format!("{} is still not found after setting up: {reason}", toolchain.name()))?;
    }
    eprintln!("xtask: every toolchain the tests need is here");
    Ok(())
}

fn install_system_packages() -> Result<(), String> {
    let needs = system_needs();
    let missing: Vec<&Need> = needs.iter().filter(|n| n.missing.is_some()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    for need in &missing {
        eprintln!("xtask: missing {}: {}", need.what, need.missing.as_deref().unwrap_or(""));
    }
    let packages: Vec<&str> = missing.iter().flat_map(|n| n.packages.iter().copied()).collect();
    let list = packages.join(" ");
    if !runs("apt-get", "--version") {
        return Err(format!(
            "no apt-get here to install them; install the equivalents of the Debian packages {list} \
             (or point KERNEL_CONTRACTS_CXX, KERNEL_CONTRACTS_CLANG, KERNEL_CONTRACTS_NVRTC_DIR at what you have), \
             then run `cargo xtask test` again"
        ));
    }
    let sudo: &[&str] = if is_root() {
        &[]
    } else if Command::new("sudo").args(["-n", "true"]).output().is_ok_and(|out| out.status.success()) {
        &["sudo", "-n"]
    } else {
        return Err(format!(
            "installing them needs root; run\n    sudo apt-get update && sudo apt-get install -y {list}\nthen run `cargo xtask test` again"
        ));
    };
    eprintln!("xtask: installing {list} with apt-get");
    apt(sudo, &["update", "-qq"])?;
    apt(sudo, &[&["install", "-y", "-qq"][..], &packages].concat())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn apt(sudo: &[&str], args: &[&str]) -> Result<(), String> {
    let mut words: Vec<&str> = sudo.to_vec();
    words.push("apt-get");
    words.extend(args);
    let status = Command::new(words[0])
        .args(&words[1..])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| format!("`{}` did not start: {e}", words.join(" ")))?;
    if !status.success() {
        return Err(format!("`{}` failed ({status})", words.join(" ")));
    }
    Ok(())
}

/// NVRTC from its PyPI wheel in the user's cache, where the engine looks, unless the engine
/// finds one already or the user pointed it at one.
fn install_nvrtc_wheel() -> Result<(), String> {
    if Toolchain::Nvrtc.find().is_ok() {
        return Ok(());
    }
    if set("KERNEL_CONTRACTS_NVRTC").is_some() || set("KERNEL_CONTRACTS_NVRTC_DIR").is_some() {
        let reason = Toolchain::Nvrtc.find().unwrap_err();
        return Err(format!("KERNEL_CONTRACTS_NVRTC or KERNEL_CONTRACTS_NVRTC_DIR is set, and NVRTC is not found there: {reason}"));
    }
    let venv = nvrtc::wheel_venv().ok_or("neither HOME nor XDG_CACHE_HOME nor KERNEL_CONTRACTS_VENV is set: nowhere to install NVRTC")?;
    eprintln!("xtask: installing {NVRTC_WHEEL} into {}", venv.display());
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    run(Command::new(venv.join("bin/pip")).args(["install", "-q", "--disable-pip-version-check", NVRTC_WHEEL]))?;
    if nvrtc::wheel_lib_dirs(&venv).is_empty() {
        return Err(format!("{NVRTC_WHEEL} installed into {} but no lib/python3*/site-packages/nvidia/cu13/lib is there", venv.display()));
    }
    Ok(())
}

fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let status = command.status().map_err(|e| format!("{shown} did not start: {e}"))?;
    if !status.success() {
        return Err(format!("{shown} failed ({status})"));
    }
    Ok(())
}

/// `cargo test --workspace --locked ARGS` from the workspace root; fails when it fails, or
/// when any test wrote to the not-run log.
fn test(args: &[String]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = workspace_root(&cargo)?;
    let log = std::env::temp_dir().join(format!("kernel-contracts-not-run-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    fuzz_lock_is_current(&cargo, &root)?;
    let status = Command::new(&cargo)
        .args(["test", "--workspace", "--locked"])
        .args(args)
        .current_dir(&root)
        .env(NOT_RUN_LOG, &log)
        .status()
        .map_err(|e| format!("`{cargo} test` did not start: {e}"))?;
    let not_run = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let not_run: Vec<&str> = not_run.lines().filter(|l| !l.is_empty()).collect();
    if !not_run.is_empty() {
        eprintln!("\nxtask: {} test(s) did not run:", not_run.len());
        for line in &not_run {
            eprintln!("  {line}");
        }
    }
    if !status.success() {
        return Err(format!("cargo test failed ({status})"));
    }
    if !not_run.is_empty() {
        return Err(format!("{} test(s) did not run for a missing toolchain; the suite is not green", not_run.len()));
    }
    Ok(())
}

/// The fuzz crate sits outside the workspace with its own Cargo.lock; a dependency added to
/// an engine crate changes it, and the fuzz run refuses a lock it would rewrite. Said here,
/// in seconds, rather than after the whole suite.
fn fuzz_lock_is_current(cargo: &str, root: &Path) -> Result<(), String> {
    let out = Command::new(cargo)
        .args(["metadata", "--locked", "--format-version", "1", "--manifest-path"])
        .arg(root.join("fuzz").join("Cargo.toml"))
        .output()
        .map_err(|e| format!("`{cargo} metadata` did not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "fuzz/Cargo.lock is out of date with the crates it builds (run `cargo metadata --manifest-path fuzz/Cargo.toml` and commit the lock): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

fn workspace_root(cargo: &str) -> Result<PathBuf, String> {
    let out = Command::new(cargo)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .output()
        .map_err(|e| format!("`{cargo} locate-project` did not start: {e}"))?;
    if !out.status.success() {
        return Err(format!("`{cargo} locate-project --workspace` failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let manifest = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Ok(manifest.parent().unwrap_or(Path::new(".")).to_path_buf())
}
