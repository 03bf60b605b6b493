//! The cuda backend's tests. Without a GPU: NVRTC compiles every kernel, control and test
//! kernel for sm_90 and the cubin's figures agree with ptxas's report; the driver path runs
//! end to end against a fake libcuda built here (tests/fake_libcuda.c); missing libraries
//! and symbols are errors naming them. With a GPU (`cargo test -- --ignored` on the H200):
//! copies, launches through the real op launcher, warp semantics of the prelude, live limits
//! against the static figures, faults by name, a cuBLAS bf16 projection.
//!
//! NVRTC is found as the engine finds it (KERNEL_CONTRACTS_NVRTC, KERNEL_CONTRACTS_NVRTC_DIR,
//! the sonames, /usr/local/cuda, the wheel `cargo xtask setup` installs). Without it the
//! NVRTC tests report themselves not run, and `cargo xtask test` fails on that.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use super::cubin::{self, parse_ptxas_report};
use super::driver::{Driver, LIBCUDA};
use super::nvrtc::{CudaCompiler, Nvrtc};
use super::*;
use crate::backend::{Backend, KernelArg, KernelSource, LaunchDims, Module, Schedule};
use crate::ops::data::{self, DataOp, DataTensor, KernelArgSpec, KernelSpec};
use crate::ops::{OpCall, OpSpec, Role};
use crate::shape_expr::Expr;
use crate::tensor::Tensor;
use crate::{DType, EngineError};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// NVRTC, or `None` (the test reported as not run, with the reason) when it is not found.
fn nvrtc() -> Option<Arc<Nvrtc>> {
    if !crate::toolchain::available_for_test(crate::toolchain::Toolchain::Nvrtc) {
        return None;
    }
    Some(Nvrtc::shared().expect("found a moment ago"))
}

fn compiler(nvrtc: Arc<Nvrtc>) -> CudaCompiler {
    CudaCompiler::new(nvrtc, &root().join("kernels/cuda/prelude.h"), None).unwrap()
}

fn source(display_path: &str, kernels: &[&str]) -> KernelSource {
    KernelSource {
        path: root().join(display_path),
        display_path: display_path.to_string(),
        kernels: kernels.iter().map(|k| k.to_string()).collect(),
        include_dirs: vec![root().join("kernels")],
    }
}

/// `extern "C" __global__ void [__launch_bounds__(..)] name(` in a kernel source.
fn kernels_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // a template kernel is named by an instantiation, which its own test gives
    for piece in text.split("__global__").skip(1).filter(|p| !p.trim_start().starts_with("void scale(")) {
        let mut rest = piece.trim_start().strip_prefix("void").unwrap_or("").trim_start();
        if let Some(after) = rest.strip_prefix("__launch_bounds__") {
            rest = after.split_once(')').map_or("", |(_, r)| r).trim_start();
        }
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

/// Every kernel source the project has: kernels, controls, test kernels of both backends.
fn every_source() -> Vec<KernelSource> {
    let mut out = Vec::new();
    for dir in ["kernels", "controls", "src/backend/host/test_kernels", "src/backend/cuda/test_kernels"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "hip"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let display = format!("{dir}/{}", file.file_name().unwrap().to_str().unwrap());
            let kernels = kernels_in(&text);
            assert!(!kernels.is_empty(), "{display} has no kernel");
            let include_dirs = vec![root().join("kernels"), root().join("kernels/hip-headers")];
            out.push(KernelSource { path: file, display_path: display, kernels, include_dirs });
        }
    }
    out
}

#[test]
fn kernel_names_are_found_in_sources() {
    let text = "extern \"C\" __global__ void a(int x) {}\nextern \"C\" __global__ void __launch_bounds__(1024, 2) b(float* y) {}";
    assert_eq!(kernels_in(text), vec!["a", "b"]);
}

#[test]
fn every_kernel_compiles_for_sm_90_and_the_cubin_agrees_with_ptxas() {
    let Some(nvrtc) = nvrtc() else { return };
    let compiler = compiler(nvrtc);
    let sources = every_source();
    // several threads at once, as the harness builds modules (NVRTC must be safe for it)
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(s) = sources.get(i) else { break };
                    let result = compiler.compile(s, STATIC_ARCH);
                    results.lock().unwrap().push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let mut table = String::from("source | kernel | regs | smem | reserved | local | spill st/ld | threads\n");
    for (i, result) in results {
        let s = &sources[i];
        let cubin = result.unwrap_or_else(|e| panic!("{}: {e}", s.display_path));
        assert_eq!(cubin.info.sm, 90, "{}", s.display_path);
        for kernel in &s.kernels {
            let usage = cubin.usage(kernel).unwrap_or_else(|e| panic!("{}: {e}", s.display_path));
            let at = format!("{} {kernel}", s.display_path);
            assert!(usage.registers > 0, "{at}");
            // the CUDA 13.0 toolkit's NVRTC on the H200 image printed no ptxas report at all
            // (the wheel's 13.0.88 does): then there is nothing to cross-check against
            let Some(report) = cubin.report.get(kernel) else {
                assert!(cubin.log.trim().is_empty(), "{at}: the log has no ptxas line for it:\n{}", cubin.log);
                continue;
            };
            assert_eq!(usage.registers, report.registers, "{at} registers");
            assert_eq!(usage.shared_bytes, report.shared_bytes, "{at} shared");
            assert_eq!(usage.local_bytes, report.stack_frame_bytes.max(report.cumulative_stack_bytes), "{at} local");
            table.push_str(&format!(
                "{} | {kernel} | {} | {} | {} | {} | {}/{} | {}\n",
                s.display_path,
                usage.registers,
                usage.shared_bytes,
                usage.reserved_shared_bytes,
                usage.local_bytes,
                usage.spill_store_bytes.unwrap(),
                usage.spill_load_bytes.unwrap(),
                usage.threads
            ));
        }
        // the parameter layout the launcher is checked against
        let text = std::fs::read_to_string(&s.path).unwrap();
        for kernel in &s.kernels {
            let info = cubin.info.kernel(kernel).unwrap();
            let declared = text.split(&format!("{kernel}(")).nth(1).unwrap().split(')').next().unwrap();
            let count = if declared.trim().is_empty() { 0 } else { declared.split(',').count() };
            assert_eq!(info.params.len(), count, "{} {kernel}: {declared}", s.display_path);
        }
    }
    eprintln!("{table}");
}

#[test]
fn kernels_written_for_known_figures_read_back_as_written() {
    let Some(nvrtc) = nvrtc() else { return };
    let kernels = ["plain", "shared_4k", "dynamic_only", "stack_array", "spills"];
    let cubin = compiler(nvrtc).compile(&source("src/backend/cuda/test_kernels/resources.hip", &kernels), "sm_90").unwrap();
    let usage = |k: &str| cubin.usage(k).unwrap();

    let plain = usage("plain");
    assert_eq!((plain.shared_bytes, plain.local_bytes, plain.threads), (0, 0, 1024), "{plain:?}");
    assert_eq!(cubin.info.kernel("plain").unwrap().param_sizes(), vec![8, 8, 4]);
    assert_eq!(cubin.info.kernel("plain").unwrap().params.iter().map(|p| p.offset).collect::<Vec<_>>(), vec![0, 8, 16]);

    let shared = usage("shared_4k");
    assert_eq!((shared.shared_bytes, shared.reserved_shared_bytes), (4096, 1024), "{shared:?}");
    assert_eq!(usage("dynamic_only").shared_bytes, 0);

    let stack = usage("stack_array");
    assert_eq!(stack.local_bytes, 256, "{stack:?}");
    assert!(matches!(stack.spill_store_bytes, Some(0)) || cubin.log.trim().is_empty(), "{stack:?}");

    let spills = usage("spills");
    let info = cubin.info.kernel("spills").unwrap();
    assert_eq!(info.max_threads, Some([1024, 1, 1]));
    assert_eq!(info.max_registers, Some(32));
    assert!(spills.registers <= 32, "{spills:?}");
    assert!(spills.local_bytes > 0, "{spills:?}");
    // the spill counts come from the ptxas report, which some NVRTC builds do not print
    if !cubin.log.trim().is_empty() {
        assert!(spills.spill_store_bytes.unwrap() > 0 && spills.spill_load_bytes.unwrap() > 0, "{spills:?}");
    }
    assert_eq!(spills.threads, 1024);
}

/// The host preprocessor that stands in for NVRTC's (what a build read; the lines each target
/// compiles) predefines what this NVRTC does: every macro its `-dM` lists, with NVRTC's value,
/// and none of those NVRTC leaves undefined that a host compiler has.
#[test]
fn the_host_preprocessor_predefines_what_nvrtc_predefines() {
    let Some(nvrtc) = nvrtc() else { return };
    let host = crate::backend::host::HostCompiler::discover().unwrap();
    let defines = super::nvrtc::host_preprocessor_defines("90", nvrtc.version);
    let out = std::process::Command::new(&host.program)
        .args(["-x", "c++", "-std=c++17"])
        .args(&defines)
        .args(["-dM", "-E", "/dev/null"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // name (a function-like macro's without its parameters) -> value
    let emulated: std::collections::BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("#define "))
        .map(|l| {
            let (name, value) = l.split_once(' ').unwrap_or((l, ""));
            (name.split('(').next().unwrap().to_string(), value.to_string())
        })
        .collect();
    let host_only = ["__x86_64__", "__GNUC__", "__clang__", "_GNU_SOURCE", "__STDC_UTF_16__", "__linux__", "__NVCC__", "__CUDACC_DEBUG__"];
    let names: Vec<&str> = emulated.keys().map(String::as_str).chain(host_only).collect();
    let mut text = String::from("#define KC_S(...) #__VA_ARGS__\n#define KC_V(...) KC_S(__VA_ARGS__)\n");
    for name in &names {
        text.push_str(&format!("#ifdef {name}\n#pragma message(\"KCDEF {name} \" KC_V({name}))\n#endif\n"));
    }
    text.push_str("extern \"C\" __global__ void probe() {}\n");
    let options: Vec<String> = ["--gpu-architecture=sm_90"].iter().chain(super::nvrtc::OPTIONS).map(|o| o.to_string()).collect();
    let compiled = nvrtc.compile("probe.cu", &text, &[], &options, &["probe".to_string()]).unwrap();
    let seen: std::collections::BTreeMap<String, String> = compiled
        .log
        .lines()
        .filter(|l| l.contains("remark"))
        .filter_map(|l| l.split_once("\"KCDEF ")?.1.strip_suffix('"')?.split_once(' ').map(|(n, v)| (n.to_string(), v.to_string())))
        .collect();
    for (name, value) in &emulated {
        // a function-like macro's value is its name, not invoked
        let want = if value.is_empty() || seen.get(name).is_some_and(|v| v == name) { None } else { Some(value) };
        match (seen.get(name), want) {
            (None, _) => panic!("{name} is predefined by the stand-in and not by NVRTC"),
            (Some(v), Some(w)) => assert_eq!(v, w, "{name}"),
            _ => {}
        }
    }
    for name in host_only {
        assert!(!emulated.contains_key(name) && !seen.contains_key(name), "{name}");
    }
    assert!(seen.len() >= 60 && seen.keys().all(|n| emulated.contains_key(n)), "{seen:?}");
}

#[test]
fn static_usage_needs_only_nvrtc() {
    if nvrtc().is_none() {
        return;
    }
    let usage = static_usage(&source("kernels/tf_embed_dense.hip", &["tf_embed_dense"]), "tf_embed_dense").unwrap();
    assert!(usage.registers > 0 && usage.registers <= 255, "{usage:?}");
    assert_eq!((usage.shared_bytes, usage.local_bytes), (0, 0), "{usage:?}");
    let error = static_usage(&source("kernels/tf_embed_dense.hip", &["tf_embed_dense"]), "tf_nothing").unwrap_err().to_string();
    assert!(error.contains("tf_nothing") && error.contains("tf_embed_dense"), "{error}");
}

#[test]
fn compile_errors_come_back_with_nvrtcs_log_and_the_display_path() {
    let Some(nvrtc) = nvrtc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.hip");
    std::fs::write(&path, "#include \"common.h\"\nextern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }\n").unwrap();
    let source = KernelSource {
        path,
        display_path: "kernels/broken.hip".into(),
        kernels: vec!["broken".into()],
        include_dirs: vec![root().join("kernels")],
    };
    let error = compiler(nvrtc).compile(&source, "sm_90").unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, EngineError::Compile { .. }), "{text}");
    assert!(
        text.contains("kernels/broken.hip(2)") && text.contains("undefined_name") && text.contains("NVRTC_ERROR_COMPILATION"),
        "{text}"
    );
}

#[test]
fn cubins_are_cached_by_content() {
    let Some(nvrtc) = nvrtc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let compiler = CudaCompiler::new(nvrtc, &root().join("kernels/cuda/prelude.h"), Some(dir.path().to_path_buf())).unwrap();
    let s = source("kernels/tf_embed_dense.hip", &["tf_embed_dense"]);
    let first = compiler.compile(&s, "sm_90").unwrap();
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 4, "a cubin, its log, its kernels' names and the manifest");
    let second = compiler.compile(&s, "sm_90").unwrap();
    assert_eq!(first.image, second.image);
    assert_eq!(first.report, second.report);
    assert_eq!(first.names, second.names);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
}

#[test]
fn a_template_kernel_is_instantiated_by_its_name_expression_and_found_by_its_lowered_name() {
    let Some(nvrtc) = nvrtc() else { return };
    let compiler = CudaCompiler::new(nvrtc, &root().join("kernels/cuda/prelude.h"), None).unwrap();
    let mut s = source("src/backend/host/test_kernels/hip_headers.hip", &["scale<float, 4>", "half_ops"]);
    s.include_dirs.push(root().join("kernels/hip-headers"));
    let cubin = compiler.compile(&s, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cubin.entry("scale<float, 4>"), "_Z5scaleIfLi4EEvPKT_PS0_i");
    assert_eq!(cubin.entry("half_ops"), "half_ops", "an extern \"C\" name lowers to itself");
    assert!(cubin.usage("scale<float, 4>").unwrap().registers > 0);
}

/// NVRTC gives no list of what it read: the host preprocessor's, over the same source and
/// include folders, keys the cubin, so it follows its headers wherever they lie (a subfolder
/// of the include folder, outside the repository); a truncated, altered or swapped cubin or
/// log is rebuilt, never used.
#[test]
fn cubins_follow_every_header_read_and_damaged_ones_are_rebuilt() {
    use crate::backend::cache::test_repo::{TempRepo, damages, replace};
    let Some(nvrtc) = nvrtc() else { return };
    let repo = TempRepo::new();
    let compiler = CudaCompiler::new(nvrtc, &root().join("kernels/cuda/prelude.h"), Some(repo.cache())).unwrap();
    let build = |source: &KernelSource| compiler.compile(source, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    let shared = |cubin: &Cubin| cubin.usage("tile").unwrap().shared_bytes;
    let cached = || -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(repo.cache())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "cubin" || x == "log"))
            .collect();
        files.sort();
        files
    };

    let source = repo.tile_source("tile", 64, 1);
    assert_eq!(shared(&build(&source)), 256);
    assert_eq!(cached().len(), 2, "a cubin and its log");
    repo.write("repo/kernels/sub/tile.h", "#define TILE 128\n");
    assert_eq!(shared(&build(&source)), 512, "a header in a subfolder");
    repo.write("elsewhere/extra.h", "#define EXTRA 2\n");
    let before = cached();
    let outside = build(&source);
    assert_eq!(shared(&outside), 1024, "a header outside the repository");
    let newest: Vec<PathBuf> = cached().into_iter().filter(|f| !before.contains(f)).collect();
    let kind = |extension: &str| newest.iter().find(|f| f.extension().unwrap() == extension).unwrap().clone();
    let (cubin_path, log_path) = (kind("cubin"), kind("log"));

    // every damage of either file is a rebuild: NVRTC runs again and writes both anew (the
    // log with its own compile time)
    for path in [&cubin_path, &log_path] {
        for (damage, bytes) in damages(&std::fs::read(path).unwrap()) {
            replace(path, &bytes);
            let rebuilt = build(&source);
            // the image, not the ptxas report: NVRTC 13.0.88 gives a program it already compiled
            // in this process the same cubin with an empty log (measured on an H200), so the
            // rebuilt log may hold no report
            let first_difference = rebuilt.image.iter().zip(&outside.image).position(|(a, b)| a != b);
            assert!(
                rebuilt.image == outside.image,
                "{damage} {}: rebuilt, but {} bytes against {} (first difference at {first_difference:?})",
                path.display(),
                rebuilt.image.len(),
                outside.image.len(),
            );
            assert!(std::fs::read(&cubin_path).unwrap() == outside.image, "{damage} {}: the cubin written again", path.display());
            assert_eq!(std::fs::read_to_string(&log_path).unwrap(), rebuilt.log, "{damage} {}: the log written again", path.display());
        }
    }

    let other = repo.source("other", "extern \"C\" __global__ void tile(float* y) { y[threadIdx.x] = 1.0f; }\n", "tile");
    let other_cubin = build(&other);
    assert_eq!(shared(&other_cubin), 0);
    let other_path = cached()
        .into_iter()
        .find(|f| f.file_name().unwrap().to_str().unwrap().starts_with("other-") && f.extension().unwrap() == "cubin")
        .unwrap();
    replace(&cubin_path, &other_cubin.image);
    replace(&other_path, &outside.image);
    assert_eq!((shared(&build(&source)), shared(&build(&other))), (1024, 0), "swapped cubins are rebuilt");
    assert!(std::fs::read(&cubin_path).unwrap() == outside.image, "the cubin written again");
}

#[test]
fn the_cubin_reader_refuses_what_is_not_a_cubin() {
    assert!(cubin::parse(b"not an elf").unwrap_err().contains("not an ELF"));
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[0x12] = 62; // x86-64
    assert!(cubin::parse(&elf).unwrap_err().contains("EM_CUDA"));
    elf[0x12] = 190;
    elf[0x3a] = 64;
    elf[0x3c] = 3; // three section headers past the end
    elf[0x28] = 64;
    assert!(cubin::parse(&elf).unwrap_err().contains("truncated"));
}

#[test]
fn the_ptxas_report_is_read_per_entry_function() {
    let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'spills' for 'sm_90'\n\
ptxas info    : Function properties for spills\n\
ptxas         .     1456 bytes stack frame, 1340 bytes spill stores, 2668 bytes spill loads\n\
ptxas info    : Used 32 registers, used 0 barriers, 1456 bytes cumulative stack size\n\
ptxas info    : Compile time = 160.657 ms\n\
ptxas info    : Compiling entry function 'tf_sum_partials' for 'sm_90'\n\
ptxas info    : Function properties for tf_sum_partials\n\
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 32 registers, used 1 barriers, 4128 bytes smem\n";
    let report = parse_ptxas_report(log);
    let spills = &report["spills"];
    assert_eq!(
        (spills.registers, spills.stack_frame_bytes, spills.spill_store_bytes, spills.spill_load_bytes, spills.cumulative_stack_bytes),
        (32, 1456, 1340, 2668, 1456)
    );
    let sum = &report["tf_sum_partials"];
    assert_eq!((sum.registers, sum.barriers, sum.shared_bytes, sum.stack_frame_bytes), (32, 1, 4128, 0));
}

// ---------------------------------------------------------------- driver path without a GPU

/// Builds the fake libcuda (testdata/fake_libcuda.c) with `defines` into `dir`.
fn fake_libcuda(dir: &Path, defines: &[&str]) -> PathBuf {
    let library = dir.join("libcuda-fake.so");
    let mut gcc = Command::new("gcc");
    gcc.args(["-shared", "-fPIC", "-O1", "-o"]).arg(&library).arg(root().join("src/backend/cuda/testdata/fake_libcuda.c"));
    for d in defines {
        gcc.arg(format!("-D{d}"));
    }
    let out = gcc.output().expect("gcc runs");
    assert!(out.status.success(), "gcc: {}", String::from_utf8_lossy(&out.stderr));
    library
}

#[test]
fn without_a_driver_the_error_names_libcuda_so_1() {
    match Driver::open(None) {
        Ok(driver) => eprintln!("{} opened here: this machine has a driver, nothing to check", driver.library()),
        Err(error) => {
            let text = error.to_string();
            eprintln!("{text}");
            assert!(matches!(error, EngineError::LoadLibrary { .. }), "{text}");
            assert!(text.contains(LIBCUDA), "{text}");
        }
    }
    let options = CudaOptions { driver_library: None, ..CudaOptions::for_root(&root()) };
    if let Err(error) = CudaBackend::probe(options) {
        let text = error.to_string();
        assert!(text.contains(LIBCUDA) || Driver::open(None).is_ok(), "{text}");
    }
    let error = Driver::open(Some("/nonexistent/libcuda.so.1")).err().unwrap().to_string();
    assert!(error.contains("/nonexistent/libcuda.so.1") && error.contains("no NVIDIA driver"), "{error}");
}

#[test]
fn a_library_lacking_a_symbol_is_an_error_naming_library_and_symbol() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_libcuda(dir.path(), &["FAKE_OMIT_LAUNCH"]);
    let error = Driver::open(Some(library.to_str().unwrap())).err().expect("cuLaunchKernel is missing");
    let text = error.to_string();
    assert!(matches!(&error, EngineError::MissingSymbol { symbol, .. } if symbol == "cuLaunchKernel"), "{text}");
    assert!(text.contains(library.to_str().unwrap()) && text.contains("cuLaunchKernel"), "{text}");
    // the complete fake resolves every symbol
    let full = fake_libcuda(&dir.path().join("full").tap_mkdir(), &[]);
    assert!(Driver::open(Some(full.to_str().unwrap())).is_ok());
}

#[test]
fn large_copies_go_through_page_locked_stages_that_are_freed_on_drop() {
    use super::driver::{Context, DeviceMemory, PinnedMemory};
    use crate::backend::staging::{STAGED_COPY_BYTES, Staging};
    let dir = tempfile::tempdir().unwrap();
    let library = fake_libcuda(dir.path(), &[]);
    let fake = Fake::open(&library);
    let driver = Driver::open(Some(library.to_str().unwrap())).unwrap();
    driver.init().unwrap();
    let context = Context::retain(&driver, 0).unwrap();
    let memory = DeviceMemory::allocate(&context, STAGED_COPY_BYTES + (3 << 20)).unwrap();
    // an odd stage: the copies' last pieces are partial
    let pinned = context.clone();
    let staging = Staging::new(2_500_003, move |len| PinnedMemory::allocate(&pinned, len));
    let bytes: Vec<u8> = (0..STAGED_COPY_BYTES + 100).map(|i: usize| (i * 7 % 251) as u8).collect();
    staging.write(5, &bytes, &|at, piece| memory.write(at, piece)).unwrap();
    assert_eq!(fake.call_i32("fake_live_pinned"), 2, "the two stages, allocated at the first large copy");
    let mut direct = vec![0u8; bytes.len()];
    memory.read(5, &mut direct).unwrap();
    assert!(direct == bytes, "a staged write is the bytes given");
    let mut staged = vec![0u8; bytes.len() - 2];
    staging.read(6, &mut staged, &|at, piece| memory.read(at, piece)).unwrap();
    assert!(staged == bytes[1..bytes.len() - 1], "a staged read is the bytes there");
    drop(staging);
    assert_eq!(fake.call_i32("fake_live_pinned"), 0, "the stages are freed on drop");
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn a_driver_without_devices_fails_the_probe_with_the_drivers_error_name() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_libcuda(dir.path(), &["FAKE_NO_DEVICE"]);
    let options = CudaOptions { driver_library: Some(library.display().to_string()), cache_dir: None, ..CudaOptions::for_root(&root()) };
    let error = CudaBackend::probe(options).err().expect("no device");
    let text = error.to_string();
    assert!(matches!(&error, EngineError::Vendor { call, code: 100, .. } if call == "cuInit"), "{text}");
    assert!(text.contains("CUDA_ERROR_NO_DEVICE") && text.contains("no CUDA-capable device"), "{text}");
}

/// Symbols of the fake driver the tests read back (same library instance as the backend's).
struct Fake {
    library: libloading::Library,
}

impl Fake {
    fn open(path: &Path) -> Fake {
        Fake { library: unsafe { libloading::Library::new(path) }.unwrap() }
    }
    fn call_i32(&self, name: &str) -> i32 {
        unsafe { (*self.library.get::<unsafe extern "C" fn() -> i32>(name).unwrap())() }
    }
    fn set_param_count(&self, n: i32) {
        unsafe { (*self.library.get::<unsafe extern "C" fn(i32)>("fake_set_param_count").unwrap())(n) }
    }
    fn fault_next(&self, code: i32) {
        unsafe { (*self.library.get::<unsafe extern "C" fn(i32)>("fake_fault_next").unwrap())(code) }
    }
    fn last_dims(&self) -> [u32; 7] {
        let p = unsafe { (*self.library.get::<unsafe extern "C" fn() -> *const u32>("fake_last_dims").unwrap())() };
        unsafe { std::slice::from_raw_parts(p, 7) }.try_into().unwrap()
    }
    fn last_params(&self, n: usize) -> Vec<u64> {
        let p = unsafe { (*self.library.get::<unsafe extern "C" fn() -> *const u64>("fake_last_params").unwrap())() };
        unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
    }
}

fn tensor_of<T: Copy>(backend: &dyn Backend, dtype: DType, values: &[T]) -> Tensor {
    let mut t = Tensor::allocate(backend, dtype, &[values.len()]).unwrap();
    let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) };
    t.write(bytes).unwrap();
    t
}

/// `tf_embed_dense` as its contract describes it (`[tensors]` and `[kernel]`), defined as the
/// harness defines it when it reads the contract. Only the keys this op's contract uses are
/// read, and any other is refused, so the test cannot launch less than the contract says.
fn embed_op() -> &'static OpSpec {
    static OP: std::sync::OnceLock<&'static OpSpec> = std::sync::OnceLock::new();
    OP.get_or_init(|| {
        let text = std::fs::read_to_string(root().join("contracts/tf_embed_dense.toml")).unwrap();
        let contract: toml::Table = text.parse().unwrap();
        let tensors = contract["tensors"].as_table().unwrap().iter().map(|(name, t)| {
            let role = match t["role"].as_str().unwrap() {
                "input" => Role::Input,
                "output" => Role::Output,
                other => panic!("tensor `{name}`: role `{other}`"),
            };
            let dtypes = t["dtypes"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().parse().unwrap()).collect();
            DataTensor { name: name.clone(), role, dtypes, shape: t["shape"].as_str().unwrap().to_string() }
        });
        let kernel = contract["kernel"].as_table().unwrap();
        for key in kernel.keys() {
            assert!(["source", "symbol", "args", "grid", "block"].contains(&key.as_str()), "kernel.{key} is not read here");
        }
        let expressions = |key: &str| -> Vec<Expr> {
            let text = |v: &toml::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
            kernel[key].as_array().unwrap().iter().map(|v| Expr::parse(&text(v)).unwrap()).collect()
        };
        let op = DataOp {
            name: contract["op"].as_str().unwrap().to_string(),
            about: contract["about"].as_str().unwrap().to_string(),
            source: kernel["source"].as_str().unwrap().to_string(),
            symbol: kernel["symbol"].as_str().unwrap().to_string(),
            tensors: tensors.collect(),
            params: Vec::new(),
            kernel: KernelSpec {
                args: kernel["args"].as_array().unwrap().iter().map(|a| KernelArgSpec::parse(a.as_str().unwrap()).unwrap()).collect(),
                grid: expressions("grid"),
                block: expressions("block"),
                dynamic_shared: None,
                requires: Vec::new(),
                same_dtype: Vec::new(),
                derived: Vec::new(),
            },
            symbol_order: vec!["n".into(), "k".into(), "vocab".into()],
        };
        data::define(op).unwrap()
    })
}

/// Launches `tf_embed_dense` through the engine's own op launcher.
fn launch_embed(
    backend: &dyn Backend,
    module: &dyn Module,
    tensors: &BTreeMap<String, Tensor>,
    n: i64,
    k: i64,
    vocab: i64,
) -> Result<crate::backend::LaunchReport, EngineError> {
    let op = embed_op();
    let symbols: BTreeMap<String, i64> = [("n".to_string(), n), ("k".to_string(), k), ("vocab".to_string(), vocab)].into();
    let params = BTreeMap::new();
    let call = OpCall { op, backend, module: Some(module), symbols: &symbols, params: &params, tensors, schedule: Schedule::default() };
    (op.launch)(&call)
}

#[test]
fn the_driver_path_runs_end_to_end_against_a_fake_driver() {
    if nvrtc().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let library = fake_libcuda(dir.path(), &[]);
    let fake = Fake::open(&library);
    {
        let options = CudaOptions {
            driver_library: Some(library.display().to_string()),
            cache_dir: Some(dir.path().join("cache")),
            ..CudaOptions::for_root(&root())
        };
        let backend = CudaBackend::probe(options).unwrap();
        assert_eq!(backend.arch(), "sm_90");
        let toolchain = backend.toolchain();
        assert!(
            toolchain.contains("NVRTC 13.") && toolchain.contains("CUDA driver 13.0") && toolchain.contains("Fake H200"),
            "{toolchain}"
        );
        assert_eq!(backend.device_memory(), Some(1 << 30), "cuDeviceTotalMem_v2's bytes (the fake's 1 GiB)");

        // buffers: zero-filled, written and read at offsets, bounds checked
        let mut buffer = backend.allocate(1000).unwrap();
        let mut back = vec![1u8; 1000];
        buffer.read(0, &mut back).unwrap();
        assert!(back.iter().all(|b| *b == 0));
        buffer.write(10, &[1, 2, 3]).unwrap();
        let mut three = [0u8; 5];
        buffer.read(9, &mut three).unwrap();
        assert_eq!(three, [0, 1, 2, 3, 0]);
        assert!(buffer.write(999, &[1, 2]).is_err());
        // fills: one memset by bytes, 16-bit or 32-bit words where the range is aligned to
        // the word (cuMemsetD8_v2, D16, D32), by copies where it is not; their range alone
        for (offset, pattern, memsets) in [(20, &[0x33][..], 1), (30, &[1, 2], 1), (40, &[1, 2, 3, 4], 1), (51, &[5, 6], 0)] {
            let before = fake.call_i32("fake_memsets");
            buffer.fill(offset, 4, pattern).unwrap();
            assert_eq!(fake.call_i32("fake_memsets") - before, memsets, "{pattern:?}");
            let mut around = [9u8; 6];
            buffer.read(offset - 1, &mut around).unwrap();
            let want: Vec<u8> = (0..6).map(|i| if (1..5).contains(&i) { pattern[(i - 1) % pattern.len()] } else { 0 }).collect();
            assert_eq!(around.to_vec(), want, "{pattern:?}");
        }
        assert!(buffer.fill(998, 4, &[0]).is_err());
        // a device copy (cuMemcpyDtoD_v2), as a pinned projection's last chunk makes
        let other = backend.allocate(8).unwrap();
        backend.copy(other.device_address(), buffer.device_address() + 10, 3).unwrap();
        let mut copied = [9u8; 4];
        other.read(0, &mut copied).unwrap();
        assert_eq!(copied, [1, 2, 3, 0]);

        // a real kernel, compiled by NVRTC, launched through the op launcher
        let embed = backend.load_module(&source("kernels/tf_embed_dense.hip", &["tf_embed_dense"])).unwrap();
        let (n, k, vocab) = (7i64, 130i64, 50i64);
        let mut tensors = BTreeMap::new();
        tensors.insert("table".to_string(), Tensor::allocate(&backend, DType::Bf16, &[vocab as usize, k as usize]).unwrap());
        tensors.insert("ids".to_string(), tensor_of(&backend, DType::I32, &[1i32, 2, 3, 4, 5, 6, 7]));
        tensors.insert("out".to_string(), Tensor::allocate(&backend, DType::F32, &[n as usize, k as usize]).unwrap());
        fake.set_param_count(7);
        let report = launch_embed(&backend, &*embed, &tensors, n, k, vocab).unwrap();
        assert_eq!(report.blocks, ((n * k) as u64).div_ceil(256));
        assert_eq!(fake.last_dims(), [((n * k) as u64).div_ceil(256) as u32, 1, 1, 256, 1, 1, 0]);
        let params = fake.last_params(7);
        let lo = |v: u64| v & 0xffff_ffff; // 4-byte parameters: the slot's high half is unused
        assert_eq!(params[0], tensors["table"].device_address());
        assert_eq!(lo(params[1]), 2, "bf16 code");
        assert_eq!(params[2], tensors["ids"].device_address());
        assert_eq!((lo(params[3]), lo(params[4])), (n as u64, k as u64));
        assert_eq!(params[5], tensors["out"].device_address());
        assert_eq!(lo(params[6]), 0, "f32 code");
        // loading again gives the same module
        let again = backend.load_module(&source("kernels/tf_embed_dense.hip", &["tf_embed_dense"])).unwrap();
        assert!(Arc::ptr_eq(&embed, &again));

        // refusals before the driver is called: argument layout from the cubin, block size, names
        let error = embed
            .launch(
                "tf_embed_dense",
                LaunchDims { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared: 0 },
                Schedule::default(),
                &[KernelArg::I32(1)],
            )
            .unwrap_err();
        assert!(
            matches!(&error, EngineError::ArgumentMismatch { expected: 7, given: 1, expected_sizes, .. } if *expected_sizes == vec![8, 4, 8, 4, 4, 8, 4]),
            "{error}"
        );
        let args = [
            KernelArg::Pointer(0),
            KernelArg::I32(0),
            KernelArg::Pointer(0),
            KernelArg::I32(0),
            KernelArg::I32(0),
            KernelArg::Pointer(0),
            KernelArg::I32(0),
        ];
        let error = embed
            .launch("tf_embed_dense", LaunchDims { grid: [1, 1, 1], block: [2048, 1, 1], dynamic_shared: 0 }, Schedule::default(), &args)
            .unwrap_err()
            .to_string();
        assert!(error.contains("2048 threads"), "{error}");
        let error = embed
            .launch("tf_other", LaunchDims { grid: [1, 1, 1], block: [1, 1, 1], dynamic_shared: 0 }, Schedule::default(), &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains("tf_other") && error.contains("kernels/tf_embed_dense.hip"), "{error}");
        let error = backend.load_module(&source("kernels/tf_embed_dense.hip", &["tf_embed_sparse"])).err().unwrap().to_string();
        assert!(error.contains("tf_embed_sparse"), "{error}");

        // more than 48 KiB of dynamic shared memory is opted into per kernel
        let resources = backend.load_module(&source("src/backend/cuda/test_kernels/resources.hip", &["dynamic_only", "plain"])).unwrap();
        fake.set_param_count(2);
        let big = LaunchDims { grid: [1, 1, 1], block: [64, 1, 1], dynamic_shared: 64 * 1024 };
        resources.launch("dynamic_only", big, Schedule::default(), &[KernelArg::Pointer(0), KernelArg::Pointer(0)]).unwrap();
        assert_eq!(fake.call_i32("fake_set_attribute_value"), 64 * 1024);

        // live figures come from cuFuncGetAttribute (the fake says 22 registers)
        let live = backend.live_usage(&source("src/backend/cuda/test_kernels/resources.hip", &["plain"]), "plain").unwrap();
        assert_eq!((live.registers, live.threads, live.binary_version), (22, 1024, 90));
        let usage = backend.loaded_static_usage(&source("src/backend/cuda/test_kernels/resources.hip", &["plain"]), "plain").unwrap();
        assert_eq!(usage.shared_bytes, 0);

        // a fault surfaces at the synchronize, names kernel, source and the driver's error,
        // and leaves the context marked unusable
        fake.set_param_count(7);
        fake.fault_next(700);
        let error = launch_embed(&backend, &*embed, &tensors, n, k, vocab).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, EngineError::KernelFault { .. }), "{text}");
        assert!(text.contains("tf_embed_dense") && text.contains("kernels/tf_embed_dense.hip"), "{text}");
        assert!(
            text.contains("cuCtxSynchronize") && text.contains("CUDA_ERROR_ILLEGAL_ADDRESS") && text.contains("illegal memory access"),
            "{text}"
        );
        let error = launch_embed(&backend, &*embed, &tensors, n, k, vocab).unwrap_err().to_string();
        assert!(error.contains("unusable since `tf_embed_dense`"), "{error}");
        let error = backend.allocate(16).err().unwrap().to_string();
        assert!(error.contains("cuMemAlloc_v2") && error.contains("unusable since"), "{error}");
        drop(tensors);
    }
    // every owner gave its handle back: buffers, modules, the stream, the primary context
    assert_eq!(fake.call_i32("fake_live"), 0, "{} allocations left", fake.call_i32("fake_live_allocations"));
}

#[test]
fn a_non_sticky_fault_leaves_the_context_usable() {
    if nvrtc().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let library = fake_libcuda(dir.path(), &[]);
    let fake = Fake::open(&library);
    let options = CudaOptions { driver_library: Some(library.display().to_string()), cache_dir: None, ..CudaOptions::for_root(&root()) };
    let backend = CudaBackend::probe(options).unwrap();
    let m = backend.load_module(&source("src/backend/cuda/test_kernels/resources.hip", &["plain"])).unwrap();
    let dims = LaunchDims { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared: 0 };
    let args = [KernelArg::Pointer(0), KernelArg::Pointer(0), KernelArg::I32(0)];
    fake.fault_next(701);
    let error = m.launch("plain", dims, Schedule::default(), &args).unwrap_err().to_string();
    assert!(error.contains("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"), "{error}");
    m.launch("plain", dims, Schedule::default(), &args).unwrap();
}

// ---------------------------------------------------------------- on a GPU (cargo test -- --ignored)

fn gpu() -> CudaBackend {
    CudaBackend::probe(CudaOptions::for_root(&root())).unwrap_or_else(|e| panic!("no CUDA backend: {e}"))
}

fn read_as<T: Copy + Default>(t: &Tensor) -> Vec<T> {
    let bytes = t.read().unwrap();
    let mut out = vec![T::default(); bytes.len() / std::mem::size_of::<T>()];
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr() as *mut u8, bytes.len()) };
    out
}

fn dims(grid: u32, block: u32) -> LaunchDims {
    LaunchDims { grid: [grid, 1, 1], block: [block, 1, 1], dynamic_shared: 0 }
}

fn ptr(t: &Tensor) -> KernelArg {
    KernelArg::Pointer(t.device_address())
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the H200 with `cargo test -- --ignored`"]
fn gpu_probe_names_the_device_arch_and_toolchain() {
    let backend = gpu();
    eprintln!("arch {} | {}", backend.arch(), backend.toolchain());
    assert!(backend.arch().starts_with("sm_"), "{}", backend.arch());
    assert!(backend.driver_version() >= 12000, "{}", backend.driver_version());
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the H200 with `cargo test -- --ignored`"]
fn gpu_buffers_round_trip_at_offsets_and_start_zeroed() {
    let backend = gpu();
    assert!(backend.device_memory().is_some_and(|bytes| bytes >= 1 << 30), "the device's memory: {:?}", backend.device_memory());
    let len = (1 << 20) + 13;
    let mut buffer = backend.allocate(len).unwrap();
    let mut back = vec![0xffu8; len];
    buffer.read(0, &mut back).unwrap();
    assert!(back.iter().all(|b| *b == 0), "fresh allocations are zero-filled");
    let pattern: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
    buffer.write(0, &pattern).unwrap();
    buffer.write(7, &[0xaa; 9]).unwrap();
    buffer.read(0, &mut back).unwrap();
    let mut want = pattern.clone();
    want[7..16].fill(0xaa);
    assert_eq!(back, want);
    let mut tail = [0u8; 13];
    buffer.read(len - 13, &mut tail).unwrap();
    assert_eq!(&tail[..], &want[len - 13..]);
    // copies of 32 KiB to 1 MiB (a guard band is 64 KiB), at odd offsets and past them
    let piece: Vec<u8> = (0..64 << 10).map(|i: usize| (i * 7 % 253) as u8).collect();
    buffer.write(101, &piece).unwrap();
    want[101..101 + piece.len()].copy_from_slice(&piece);
    for (at, n) in [(3, 64 << 10), (0, 1 << 20), (11, 32 << 10), (90, 70 << 10)] {
        let mut part = vec![0u8; n];
        buffer.read(at, &mut part).unwrap();
        assert!(part == want[at..at + n], "{n} bytes at {at}");
    }
    assert!(buffer.read(len - 1, &mut [0u8; 2]).is_err());
    assert_eq!(buffer.device_address() % 256, 0);
    // fills on the device (cuMemsetD8, D16, D32) and by copies (an unaligned word, 3 bytes):
    // only their range, and not past the end
    for (offset, count, pattern) in
        [(5, 1 << 20, &[0x5a][..]), (6, 100, &[1, 2]), (8, 400, &[1, 2, 3, 4]), (7, 10, &[3, 4]), (3, 9, &[7, 8, 9])]
    {
        buffer.fill(offset, count, pattern).unwrap();
        buffer.read(0, &mut back).unwrap();
        for (i, b) in want[offset..offset + count].iter_mut().enumerate() {
            *b = pattern[i % pattern.len()];
        }
        assert_eq!(back, want, "{pattern:?} at {offset}");
    }
    assert!(buffer.fill(len - 1, 2, &[0]).is_err());
    buffer.zero().unwrap();
    buffer.read(0, &mut back).unwrap();
    assert!(back.iter().all(|b| *b == 0));
    // copies of 16 MiB and more: pieces through the two page-locked stages in turn, both ways,
    // at odd offsets, the last piece partial
    let large = (100 << 20) + 7;
    let mut buffer = backend.allocate(large + 64).unwrap();
    let bytes: Vec<u8> = (0..large).map(|i: usize| (i * 13 % 241) as u8).collect();
    buffer.write(33, &bytes).unwrap();
    let mut back = vec![0u8; large - 5];
    buffer.read(35, &mut back).unwrap();
    assert!(back == bytes[2..large - 3], "a staged copy there and back");
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the H200 with `cargo test -- --ignored`"]
fn gpu_tf_embed_dense_through_the_op_launcher_gives_the_rounded_rows() {
    let backend = gpu();
    let module = backend.load_module(&source("kernels/tf_embed_dense.hip", &["tf_embed_dense"])).unwrap();
    let (n, k, vocab) = (37usize, 130usize, 1000usize);
    let values: Vec<f32> = (0..vocab * k).map(|i| ((i as f32) * 0.7311).sin() * 3.0 + (i % 7) as f32 * 1e-3).collect();
    let ids: Vec<i32> = (0..n).map(|r| ((r * 7919) % vocab) as i32).collect();
    for (table_type, out_type) in [
        (DType::F32, DType::F32),
        (DType::F32, DType::Bf16),
        (DType::Bf16, DType::F32),
        (DType::F16, DType::Bf16),
        (DType::F32, DType::F16),
    ] {
        let mut table_bytes = vec![0u8; vocab * k * table_type.size()];
        for (i, v) in values.iter().enumerate() {
            table_type.encode(*v as f64, &mut table_bytes[i * table_type.size()..]);
        }
        let mut table = Tensor::allocate(&backend, table_type, &[vocab, k]).unwrap();
        table.write(&table_bytes).unwrap();
        let mut out = Tensor::allocate(&backend, out_type, &[n, k]).unwrap();
        out.fill(&[0xff]).unwrap();
        let mut tensors = BTreeMap::new();
        tensors.insert("table".to_string(), table);
        tensors.insert("ids".to_string(), tensor_of(&backend, DType::I32, &ids));
        tensors.insert("out".to_string(), out);
        launch_embed(&backend, &*module, &tensors, n as i64, k as i64, vocab as i64).unwrap();

        let got = tensors["out"].read().unwrap();
        let size = out_type.size();
        for (r, id) in ids.iter().enumerate() {
            for c in 0..k {
                let source_at = (*id as usize * k + c) * table_type.size();
                let value = table_type.decode(&table_bytes[source_at..]);
                let mut want = vec![0u8; size];
                out_type.encode(value, &mut want);
                let at = (r * k + c) * size;
                assert_eq!(&got[at..at + size], &want[..], "{table_type}->{out_type} row {r} col {c}");
            }
        }
        assert_eq!(tensors["out"].guard_damage().unwrap(), None);
    }
}

const SEMANTICS: &[&str] = &["block_sum", "warp_ops", "atomics", "dynamic_reverse", "unwritten_shared", "store_by_code", "coordinates"];

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the H200 with `cargo test -- --ignored`"]
fn gpu_the_prelude_gives_hip_warp_semantics_and_shared_memory_works() {
    let backend = gpu();
    let m = backend.load_module(&source("src/backend/host/test_kernels/semantics.hip", SEMANTICS)).unwrap();

    // warp ops exactly as the host backend's test expects them (HIP semantics)
    let blocks = 3;
    let n = blocks * 128;
    let x: Vec<i32> = (0..n as i32).map(|i| (i * 37) % 101).collect();
    let input = tensor_of(&backend, DType::I32, &x);
    let out = Tensor::allocate(&backend, DType::I32, &[n * 7]).unwrap();
    m.launch("warp_ops", dims(blocks as u32, 128), Schedule::default(), &[ptr(&input), ptr(&out)]).unwrap();
    let got = read_as::<i32>(&out);
    for i in 0..n {
        let lane = i % 32;
        let warp = i - lane;
        let segment = i & !15;
        let sum32: i32 = x[warp..warp + 32].iter().sum();
        let sum16: i32 = x[segment..segment + 16].iter().sum();
        let down = if lane < 31 { x[i + 1] } else { x[i] };
        let up = if lane >= 2 { x[i - 2] } else { x[i] };
        let ballot = (0..32).filter(|j| x[warp + j] & 1 == 1).fold(0u32, |b, j| b | (1 << j)) as i32;
        let any = x[warp..warp + 32].iter().any(|v| *v > 1000) as i32;
        let all = x[warp..warp + 32].iter().all(|v| *v >= 0) as i32;
        assert_eq!(&got[i * 7..i * 7 + 7], &[sum32, sum16, down, up, x[warp + 5], ballot, any * 2 + all], "thread {i}");
    }

    // block reduction through __shared__
    let count: usize = 300 * 256 - 17;
    let values: Vec<f32> = (0..count).map(|i| ((i * 7919) % 17) as f32 - 8.0).collect();
    let want: Vec<f32> = values.chunks(256).map(|c| c.iter().sum()).collect();
    let input = tensor_of(&backend, DType::F32, &values);
    let sums = Tensor::allocate(&backend, DType::F32, &[want.len()]).unwrap();
    m.launch("block_sum", dims(300, 256), Schedule::default(), &[ptr(&input), ptr(&sums), KernelArg::I32(count as i32)]).unwrap();
    assert_eq!(read_as::<f32>(&sums), want);

    // atomics from many blocks
    let total_n: usize = 1000 * 128 + 5;
    let xs: Vec<f32> = (0..total_n).map(|i| (i % 13) as f32).collect();
    let input = tensor_of(&backend, DType::F32, &xs);
    let counter = tensor_of(&backend, DType::I32, &[0i32]);
    let total = tensor_of(&backend, DType::F32, &[0f32]);
    let maximum = tensor_of(&backend, DType::I32, &[-1i32]);
    m.launch(
        "atomics",
        dims(total_n.div_ceil(128) as u32, 128),
        Schedule::default(),
        &[ptr(&input), KernelArg::I32(total_n as i32), ptr(&counter), ptr(&total), ptr(&maximum)],
    )
    .unwrap();
    assert_eq!(read_as::<i32>(&counter), vec![total_n as i32]);
    assert_eq!(read_as::<f32>(&total), vec![xs.iter().map(|v| *v as f64).sum::<f64>() as f32]);
    assert_eq!(read_as::<i32>(&maximum), vec![total_n as i32 - 1]);

    // dynamic shared memory and a 2-D launch
    let xs: Vec<f32> = (0..4 * 64).map(|i| i as f32).collect();
    let input = tensor_of(&backend, DType::F32, &xs);
    let out = Tensor::allocate(&backend, DType::F32, &[xs.len()]).unwrap();
    m.launch(
        "dynamic_reverse",
        LaunchDims { grid: [4, 1, 1], block: [64, 1, 1], dynamic_shared: 256 },
        Schedule::default(),
        &[ptr(&input), ptr(&out)],
    )
    .unwrap();
    assert_eq!(read_as::<f32>(&out), xs.chunks(64).flat_map(|c| c.iter().rev().copied()).collect::<Vec<_>>());
    let coordinates = Tensor::allocate(&backend, DType::I32, &[3 * 2 * 8 * 4]).unwrap();
    m.launch("coordinates", LaunchDims { grid: [3, 2, 1], block: [8, 4, 1], dynamic_shared: 0 }, Schedule::default(), &[ptr(&coordinates)])
        .unwrap();
    assert_eq!(read_as::<i32>(&coordinates), (0..6).flat_map(|b| (0..32).map(move |t| b * 1000 + t)).collect::<Vec<_>>());

    // stores by dtype code through common.h
    for (code, bits) in [(0, 0x3fc0_0000u32), (2, 0x3fc0), (1, 0x3e00)] {
        let out = Tensor::allocate(&backend, DType::F32, &[32]).unwrap();
        m.launch("store_by_code", dims(1, 32), Schedule::default(), &[ptr(&out), KernelArg::I32(code)]).unwrap();
        let bytes = out.read().unwrap();
        let first = if code == 0 {
            u32::from_le_bytes(bytes[..4].try_into().unwrap())
        } else {
            u16::from_le_bytes(bytes[..2].try_into().unwrap()) as u32
        };
        assert_eq!(first, bits, "code {code}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the H200 with `cargo test -- --ignored`"]
fn gpu_live_limits_match_the_static_figures() {
    let backend = gpu();
    let mut table = String::from("kernel | static regs/smem(+reserved)/local/threads | live regs/smem/local/threads\n");
    let mut mismatches = Vec::new();
    let mut sources: Vec<KernelSource> =
        vec![source("src/backend/cuda/test_kernels/resources.hip", &["plain", "shared_4k", "dynamic_only", "stack_array", "spills"])];
    sources.extend(every_source().into_iter().filter(|s| s.display_path.starts_with("kernels/")));
    for s in &sources {
        backend.load_module(s).unwrap();
        for kernel in &s.kernels {
            let stat = backend.loaded_static_usage(s, kernel).unwrap();
            let live = backend.live_usage(s, kernel).unwrap();
            table.push_str(&format!(
                "{kernel} | {}/{}(+{})/{}/{} | {}/{}/{}/{}\n",
                stat.registers,
                stat.shared_bytes,
                stat.reserved_shared_bytes,
                stat.local_bytes,
                stat.threads,
                live.registers,
                live.shared_bytes,
                live.local_bytes,
                live.threads
            ));
            if live.registers != stat.registers || live.local_bytes != stat.local_bytes {
                mismatches.push(format!(
                    "{kernel}: registers/local static {}/{} live {}/{}",
                    stat.registers, stat.local_bytes, live.registers, live.local_bytes
                ));
            }
            if live.shared_bytes != stat.shared_bytes && live.shared_bytes != stat.shared_bytes + stat.reserved_shared_bytes {
                mismatches.push(format!(
                    "{kernel}: shared static {} (+{} reserved) live {}",
                    stat.shared_bytes, stat.reserved_shared_bytes, live.shared_bytes
                ));
            }
            if live.threads > stat.threads {
                mismatches.push(format!("{kernel}: threads static {} live {}", stat.threads, live.threads));
            }
            assert_eq!(live.binary_version, 90, "{kernel}");
        }
    }
    eprintln!("{table}");
    assert!(mismatches.is_empty(), "{}\n{table}", mismatches.join("\n"));
}

/// Runs `test` alone in a child process (a sticky fault poisons the whole process's
/// primary context, so it must not share one with other tests).
fn in_child_process(test: &str) -> Option<std::process::Output> {
    if std::env::var("KERNEL_CONTRACTS_CUDA_CHILD").is_ok_and(|t| t == test) {
        return None;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &format!("backend::cuda::tests::{test}"), "--ignored", "--nocapture", "--test-threads=1"])
        .env("KERNEL_CONTRACTS_CUDA_CHILD", test)
        .output()
        .unwrap();
    Some(out)
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver: run on the H200 with `cargo test -- --ignored`"]
fn gpu_a_fault_names_kernel_source_and_the_drivers_error() {
    if let Some(out) = in_child_process("gpu_a_fault_names_kernel_source_and_the_drivers_error") {
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        return;
    }
    let backend = gpu();
    let m = backend.load_module(&source("src/backend/host/test_kernels/semantics.hip", SEMANTICS)).unwrap();
    // an unknown dtype code makes common.h's tf_store execute __trap()
    let out = Tensor::allocate(&backend, DType::F32, &[32]).unwrap();
    let error = m.launch("store_by_code", dims(1, 32), Schedule::default(), &[ptr(&out), KernelArg::I32(7)]).unwrap_err();
    let text = error.to_string();
    eprintln!("trap: {text}");
    assert!(matches!(error, EngineError::KernelFault { .. }), "{text}");
    assert!(text.contains("store_by_code") && text.contains("semantics.hip") && text.contains("CUDA_ERROR_"), "{text}");
    let error = m.launch("store_by_code", dims(1, 32), Schedule::default(), &[ptr(&out), KernelArg::I32(0)]).unwrap_err().to_string();
    assert!(error.contains("unusable since"), "{error}");
}

#[test]
#[ignore = "needs an NVIDIA GPU, its driver and cuBLAS: run on the H200 with `cargo test -- --ignored`"]
fn gpu_cublas_bf16_projection_matches_an_f64_reference() {
    let backend = gpu();
    let mut handle = backend.blas_handle(4 << 20).unwrap();
    assert_eq!(handle.workspace_bytes(), 4 << 20);
    eprintln!("cuBLAS {} version {}", backend.cublas().unwrap().library(), handle.version().unwrap());
    let (rows, k, out) = (5usize, 70usize, 33usize);
    let encode = |values: &[f64]| -> Vec<u8> {
        let mut bytes = vec![0u8; values.len() * 2];
        for (i, v) in values.iter().enumerate() {
            DType::Bf16.encode(*v, &mut bytes[i * 2..]);
        }
        bytes
    };
    let xv: Vec<f64> = (0..rows * k).map(|i| ((i * 13 % 29) as f64 - 14.0) / 8.0).collect();
    let wv: Vec<f64> = (0..out * k).map(|i| ((i * 7 % 23) as f64 - 11.0) / 16.0).collect();
    let mut x = Tensor::allocate(&backend, DType::Bf16, &[rows, k]).unwrap();
    x.write(&encode(&xv)).unwrap();
    let mut w = Tensor::allocate(&backend, DType::Bf16, &[out, k]).unwrap();
    w.write(&encode(&wv)).unwrap();
    let y = Tensor::allocate(&backend, DType::F32, &[rows, out]).unwrap();
    let p = cublas::ProjectionBf16 {
        x: x.device_address(),
        w: w.device_address(),
        y: y.device_address(),
        y_is_bf16: false,
        rows: rows as i32,
        k: k as i32,
        out: out as i32,
    };
    handle.projection_bf16(p, &backend.stream().unwrap()).unwrap();
    let got = read_as::<f32>(&y);
    for r in 0..rows {
        for o in 0..out {
            // small dyadic values: every product and partial sum is exact in f32
            let want: f64 = (0..k).map(|i| xv[r * k + i] * wv[o * k + i]).sum();
            assert_eq!(got[r * out + o] as f64, want, "row {r} column {o}");
        }
    }
    assert_eq!(y.guard_damage().unwrap(), None);
    handle.set_workspace(0).unwrap();
}
