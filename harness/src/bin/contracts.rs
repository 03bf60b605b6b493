//! `contracts`: runs every contract and control on a backend and prints one record line per
//! record and control, then the SUMMARY. Flags in, library calls out.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use engine::backend::Backend;
use engine::backend::host::{HostBackend, HostOptions, worker_count};
use harness::report::{self, Summary};
use harness::runner::{self, Event, Settings};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BackendChoice {
    /// hip, then cuda, then host: the first this machine has
    Auto,
    /// the CPU, with GPU block semantics (no GPU needed)
    Host,
    /// NVIDIA GPUs through libcuda, NVRTC and cuBLAS
    Cuda,
    /// AMD GPUs through libamdhip64, hiprtc and rocBLAS
    Hip,
}

/// Runs the engine's kernels under their contracts: gates 1-3 (nonfinite, repeat, shapes)
/// on every shape case of every record, and every planted control.
#[derive(Parser, Debug)]
#[command(name = "contracts", version)]
struct Flags {
    #[arg(long, value_enum, default_value = "host")]
    backend: BackendChoice,
    /// The repository: contracts/, controls/ and kernels/ are found under it.
    #[arg(long)]
    root: Option<PathBuf>,
    /// Contracts folder (default: <root>/contracts).
    #[arg(long)]
    contracts: Option<PathBuf>,
    /// Controls folder (default: <root>/controls).
    #[arg(long)]
    controls: Option<PathBuf>,
    /// Kernel sources folder (default: <root>/kernels).
    #[arg(long)]
    kernels: Option<PathBuf>,
    /// Run only this op's contract and controls (repeatable).
    #[arg(long = "only", value_name = "OP")]
    only: Vec<String>,
    /// Skip the planted controls.
    #[arg(long)]
    no_controls: bool,
    /// Seed of every input (the same seed gives the same bytes on every backend).
    #[arg(long, default_value_t = runner::DEFAULT_SEED)]
    seed: u64,
    /// Launches per case for the repeat gate (at least 3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(3..=16))]
    repeats: u16,
    /// Host backend: OS threads running blocks (default: every core; 1 replays deterministically).
    #[arg(long)]
    workers: Option<usize>,
    /// Host backend: warp size, 32 (gfx1201 wave32, NVIDIA) or 64.
    #[arg(long, default_value_t = 32)]
    warp_size: u32,
    /// Where built host kernels are cached (default: <root>/target/kernel-cache).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// A limit problem (live figures that differ from the recorded ones) fails the record.
    #[arg(long)]
    strict_limits: bool,
    /// The JSON report (default: <root>/reports/last/<arch>.json).
    #[arg(long)]
    report: Option<PathBuf>,
}

fn find_root() -> PathBuf {
    let is_root = |p: &Path| p.join("contracts").is_dir() && p.join("kernels/host/prelude.h").is_file();
    if let Ok(cwd) = std::env::current_dir()
        && let Some(found) = cwd.ancestors().find(|p| is_root(p)) {
            return found.to_path_buf();
        }
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("harness lives in the repository").to_path_buf()
}

fn backend(flags: &Flags, root: &Path) -> Result<(Box<dyn Backend>, Option<String>)> {
    let host = || -> Result<Box<dyn Backend>> {
        let options = HostOptions {
            prelude: flags.kernels.clone().unwrap_or_else(|| root.join("kernels")).join("host/prelude.h"),
            cache_dir: flags.cache_dir.clone().unwrap_or_else(|| root.join("target/kernel-cache")),
            workers: flags.workers.unwrap_or_else(worker_count).max(1),
            warp_size: flags.warp_size,
        };
        Ok(Box::new(HostBackend::new(options).context("starting the host backend")?))
    };
    match flags.backend {
        BackendChoice::Host => Ok((host()?, None)),
        BackendChoice::Auto => Ok((host()?, Some("backend auto: this build has no hip or cuda backend yet; using host".into()))),
        BackendChoice::Cuda => bail!("backend cuda: not in this build yet (libcuda.so.1, NVRTC and cuBLAS come with the CUDA backend); use --backend host"),
        BackendChoice::Hip => bail!("backend hip: not in this build yet (libamdhip64, hiprtc and rocBLAS come with the HIP backend); use --backend host"),
    }
}

fn main() -> ExitCode {
    let flags = Flags::parse();
    match run(&flags) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("contracts: error: {}", runner::error_chain(e.as_ref()));
            ExitCode::from(2)
        }
    }
}

fn run(flags: &Flags) -> Result<i32> {
    let root = flags.root.clone().unwrap_or_else(find_root);
    let root = root.canonicalize().with_context(|| format!("repository folder {}", root.display()))?;
    let (backend, note) = backend(flags, &root)?;
    if let Some(note) = note {
        println!("{note}");
    }
    let absolute = |p: &Option<PathBuf>, default: &str| -> PathBuf {
        let p = p.clone().unwrap_or_else(|| root.join(default));
        p.canonicalize().unwrap_or(p)
    };
    let settings = Settings {
        contracts_dir: absolute(&flags.contracts, "contracts"),
        controls_dir: absolute(&flags.controls, "controls"),
        kernels_dir: absolute(&flags.kernels, "kernels"),
        root: root.clone(),
        only: flags.only.clone(),
        run_controls: !flags.no_controls,
        seed: flags.seed,
        repeats: flags.repeats as usize,
        strict_limits: flags.strict_limits,
    };
    let mut print = |event: &Event| match event {
        Event::Started { arch, backend, toolchain } => {
            println!("kernel-contracts {}: backend {backend} ({arch}), {toolchain}; seed {:#x}", env!("CARGO_PKG_VERSION"), settings.seed)
        }
        Event::ContractError(e) => println!("{}", report::contract_error_line(e)),
        Event::NotApplicable { arch, controls } => {
            println!("not run on {arch}, their gate does not run here: {}", controls.join(", "))
        }
        Event::Record(r) | Event::Control(r) => {
            println!("{}", report::record_line(r));
            for line in report::detail_lines(r) {
                println!("{line}");
            }
        }
    };
    let run = runner::run(backend.as_ref(), &settings, &mut print);
    let summary = Summary::of(&run);
    let report_path = flags.report.clone().unwrap_or_else(|| root.join("reports/last").join(format!("{}.json", run.arch)));
    let written = report::write_json(&report_path, &run, &summary);
    println!(
        "ran {} records and {} controls in {:.2} s (kernel builds {:.2} s, launches and gates {:.2} s); report {}",
        run.records.len(),
        run.controls.len(),
        run.timing.total_seconds,
        run.timing.build_seconds,
        run.timing.run_seconds,
        match &written {
            Ok(()) => report_path.strip_prefix(&root).unwrap_or(&report_path).display().to_string(),
            Err(e) => format!("NOT written to {}: {e}", report_path.display()),
        }
    );
    if summary.load_errors > 0 {
        println!("{} contract or control file(s) could not be loaded: see the error lines above", summary.load_errors);
    }
    println!("{}", summary.line());
    let code = report::exit_code(&summary);
    Ok(if written.is_err() { 2 } else { code })
}
