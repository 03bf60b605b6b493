//! The toolchains beyond Rust and the host C++ compiler that the static paths and their
//! tests need (NVRTC for sm_90, a clang with the AMDGPU target for gfx1201, Debian's ROCm
//! 5.2 runtime for the hip no-device path; xmllint and a headless Chromium for the reports'
//! tests), found the way the engine finds them, and the
//! one way a test says it could not run for lack of one. The README's test command
//! (`cargo xtask test`) installs them first and fails when any test still reports not run.

use std::io::Write;
use std::path::PathBuf;

/// Where a test that could not run writes one line (`test name: reason`), when set. The
/// README's test command sets it and fails the run when the file is not empty.
pub const NOT_RUN_LOG: &str = "KERNEL_CONTRACTS_NOT_RUN_LOG";

/// The command that installs every toolchain below (and says what it could not).
pub const SETUP_COMMAND: &str = "cargo xtask setup";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toolchain {
    /// libnvrtc.so.13 (or .12): the static sm_90 path and the cuda backend's compiler.
    Nvrtc,
    /// A clang with the AMDGPU target (Debian's clang-22): the static gfx1201 path.
    AmdgpuClang,
    /// Debian's ROCm 5.2 HIP runtime (libamdhip64.so.5): the hip backend's no-device path.
    Rocm52Runtime,
    /// libxml2's `xmllint` (Debian's libxml2-utils): the JUnit report's schema check.
    Xmllint,
    /// Debian's `chromium`, run headless: the triage page's browser check.
    Chromium,
}

impl Toolchain {
    pub fn name(self) -> &'static str {
        match self {
            Toolchain::Nvrtc => "NVRTC",
            Toolchain::AmdgpuClang => "clang with the AMDGPU target",
            Toolchain::Rocm52Runtime => "Debian's ROCm 5.2 HIP runtime (libamdhip64.so.5)",
            Toolchain::Xmllint => "xmllint (libxml2-utils)",
            Toolchain::Chromium => "Chromium (headless)",
        }
    }

    /// Ok when the engine finds it here; otherwise why not.
    pub fn find(self) -> Result<(), String> {
        match self {
            Toolchain::Nvrtc => crate::backend::cuda::nvrtc::Nvrtc::discover().map(drop).map_err(|e| e.to_string()),
            Toolchain::AmdgpuClang => crate::amdgpu::HipClang::discover().map(drop).map_err(|e| e.to_string()),
            Toolchain::Rocm52Runtime => crate::backend::cuda::sys::Dylib::open("libamdhip64.so.5", false).map(drop),
            Toolchain::Xmllint => runs("xmllint", "--version"),
            Toolchain::Chromium => runs("chromium", "--version"),
        }
    }
}

/// Ok when `program arg` starts and succeeds; otherwise why not.
fn runs(program: &str, arg: &str) -> Result<(), String> {
    match std::process::Command::new(program).arg(arg).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!("`{program} {arg}` failed ({})", out.status)),
        Err(e) => Err(format!("`{program} {arg}` did not start: {e}")),
    }
}

/// For a test that needs `toolchain`: true when the engine finds it. Otherwise the calling
/// test is reported as not run, with the reason, on stderr and in [`NOT_RUN_LOG`], and this
/// returns false so the test returns before doing anything.
pub fn available_for_test(toolchain: Toolchain) -> bool {
    match toolchain.find() {
        Ok(()) => true,
        Err(reason) => {
            report_not_run(toolchain, &reason);
            false
        }
    }
}

fn report_not_run(toolchain: Toolchain, reason: &str) {
    let test = std::thread::current().name().unwrap_or("a test").to_string();
    let line = format!("{test}: needs {} ({SETUP_COMMAND} installs it): {}", toolchain.name(), reason.replace('\n', " "));
    eprintln!("not run: {line}");
    let Some(log) = std::env::var_os(NOT_RUN_LOG).filter(|p| !p.is_empty()).map(PathBuf::from) else { return };
    // one write of one line with O_APPEND: lines of tests in other threads and processes do
    // not interleave
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut file| file.write_all(format!("{line}\n").as_bytes()));
    if let Err(e) = written {
        panic!("{test} could not run and could not say so in {}: {e}", log.display());
    }
}
