//! The static gfx1201 path: every kernel, control and test kernel built by clang for
//! gfx1201 with the header-free prelude, and the metadata reader on real and hand-made
//! code objects. These tests need a clang with the AMDGPU target (Debian: `clang-22`); without one they
//! report themselves not run, and `cargo xtask test` fails on that.

use std::fs;
use std::path::{Path, PathBuf};

use super::metadata::{MetadataError, read_metadata, resource_usage, target_arch};
use super::static_build::{CodeObject, HipClang, extern_c_kernels};
use super::{GFX1201, ResourceUsage};
use crate::EngineError;
use crate::backend::KernelSource;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn prelude() -> PathBuf {
    root().join("kernels/hip/prelude.h")
}

/// The AMDGPU clang, or `None` (the test reported as not run, with the reason) without one.
fn clang() -> Option<HipClang> {
    if !crate::toolchain::available_for_test(crate::toolchain::Toolchain::AmdgpuClang) {
        return None;
    }
    Some(HipClang::discover().expect("found a moment ago"))
}

/// `.hip` files of a folder of the repository, sorted.
fn hip_files(folder: &str) -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(root().join(folder))
        .unwrap_or_else(|e| panic!("{folder}: {e}"))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".hip"))
        .map(|name| format!("{folder}/{name}"))
        .collect();
    files.sort();
    files
}

fn kernel_source(display_path: &str) -> KernelSource {
    let path = root().join(display_path);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{display_path}: {e}"));
    let kernels = extern_c_kernels(&text);
    assert!(!kernels.is_empty(), "{display_path}: no extern \"C\" __global__ kernel found");
    KernelSource {
        path,
        display_path: display_path.to_string(),
        kernels,
        include_dirs: vec![root().join("kernels"), root().join("kernels/hip-headers")],
    }
}

#[test]
fn a_template_kernel_is_instantiated_and_found_by_its_demangled_name() {
    let Some(clang) = clang() else { return };
    let mut source = kernel_source("src/backend/host/test_kernels/hip_headers.hip");
    source.kernels = vec!["scale<float, 4>".into(), "scale<__half,2>".into(), "half_ops".into()];
    let dir = tempfile::tempdir().unwrap();
    let object = clang.build(&source, GFX1201, &prelude(), dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(object.names["scale<float, 4>"], "_Z5scaleIfLi4EEvPKT_PS0_i");
    assert_eq!(object.names["half_ops"], "half_ops");
    assert!(object.resource_usage("scale<__half,2>").unwrap().vgprs > 0);
    // from the cache, the names are found again
    let cached = clang.build(&source, GFX1201, &prelude(), dir.path()).unwrap();
    assert!(cached.cached && cached.names == object.names);
    // a name the demangler writes otherwise is not found, and the error lists the names it has
    source.kernels = vec!["scale<float, 4u>".into()];
    let e = clang.build(&source, GFX1201, &prelude(), dir.path()).unwrap_err().to_string();
    assert!(e.contains("scale<float, 4u>") && e.contains("void scale<float, 4>(float const*, float*, int)"), "{e}");
}

fn build(clang: &HipClang, display_path: &str, cache: &Path) -> (KernelSource, CodeObject) {
    let source = kernel_source(display_path);
    let object = clang.build(&source, GFX1201, &prelude(), cache).unwrap_or_else(|e| panic!("{e}"));
    (source, object)
}

fn shared_cache() -> PathBuf {
    root().join("target/kernel-cache/gfx1201")
}

fn usage_row(display_path: &str, u: &ResourceUsage) -> String {
    format!(
        "{:<48} {:<22} vgpr {:>3} sgpr {:>3} lds {:>6} scratch {:>4} spills {}/{} max_threads {:>4} wave {}",
        display_path, u.kernel, u.vgprs, u.sgprs, u.lds_bytes, u.scratch_bytes, u.vgpr_spills, u.sgpr_spills, u.max_threads, u.wave_size
    )
}

/// Every kernel source of the engine and every control builds for gfx1201, and the figures
/// are sane: wave32, the gfx1201 target, no scratch and no spills, the launch bound the
/// source declares (none: 1024), and the static LDS the source declares.
#[test]
fn every_kernel_control_and_test_kernel_builds_for_gfx1201() {
    let Some(clang) = clang() else { return };
    let mut files = hip_files("kernels");
    files.extend(hip_files("controls"));
    // a test kernel of the host's own emulation says so on its first line, and may call what
    // the gfx1201 prelude refuses (sinf)
    let host_only =
        |file: &String| fs::read_to_string(root().join(file)).is_ok_and(|t| t.lines().next().is_some_and(|l| l.contains("(host only")));
    files.extend(hip_files("src/backend/host/test_kernels").into_iter().filter(|f| !host_only(f)));
    assert!(files.len() >= 12, "{files:?}");
    let mut rows = Vec::new();
    for file in &files {
        let (source, object) = build(&clang, file, &shared_cache());
        assert_eq!(object.metadata.target, "amdgcn-amd-amdhsa--gfx1201", "{file}");
        assert_eq!(object.metadata.arch(), GFX1201);
        assert_eq!(object.metadata.version, vec![1, 2], "{file}: code object v5 has amdhsa.version [1, 2]");
        assert_eq!(object.bytes[8], 3, "{file}: EI_ABIVERSION 3 is code object v5");
        assert_eq!(object.compiler, clang.identity);
        let mut names: Vec<&str> = object.metadata.kernels.iter().map(|k| k.name.as_str()).collect();
        names.sort();
        let mut expected: Vec<&str> = source.kernels.iter().map(String::as_str).collect();
        expected.sort();
        assert_eq!(names, expected, "{file}: the code object's kernels are the source's extern \"C\" kernels");
        for kernel in &source.kernels {
            let u = object.resource_usage(kernel).unwrap();
            rows.push(usage_row(file, &u));
            let k = object.metadata.kernel(kernel).unwrap();
            assert_eq!(k.symbol, format!("{kernel}.kd"));
            assert_eq!(u.wave_size, 32, "{file} {kernel}");
            assert_eq!(u.arch, "gfx1201");
            assert_eq!(u.max_threads, 1024, "{file} {kernel}: no __launch_bounds__, so the code object allows 1024");
            assert!((1..=256).contains(&u.vgprs), "{file} {kernel}: {} VGPRs", u.vgprs);
            assert!((1..=106).contains(&u.sgprs), "{file} {kernel}: {} SGPRs", u.sgprs);
            assert_eq!((u.scratch_bytes, u.vgpr_spills, u.sgpr_spills), (0, 0, 0), "{file} {kernel}: scratch and spills");
            assert!(!u.dynamic_stack, "{file} {kernel}");
            assert!(u.lds_bytes <= 65536);
            let lds_floor = match kernel.as_str() {
                "tf_sum_partials" => 1024 * 4 + 8 * 4, // weight[1024] + scratch[8 warps]
                "tf_softmax_stats" | "block_sum" | "unwritten_shared" => 256 * 4,
                _ => 0,
            };
            assert!(u.lds_bytes >= lds_floor, "{file} {kernel}: LDS {} < {lds_floor}", u.lds_bytes);
            if kernel == "dynamic_reverse" {
                // its `extern __shared__` array is not static LDS
                assert_eq!(u.lds_bytes, 0, "{file} {kernel}");
            }
        }
    }
    eprintln!("{}", rows.join("\n"));
}

/// The three limits controls (controls/limits/) land over the figures they are planted to
/// break: registers, LDS, spills; each stays clean on the other two.
#[test]
fn limits_controls_break_their_own_limit() {
    let Some(clang) = clang() else { return };
    let files = hip_files("controls/limits");
    assert!(files.len() >= 3, "{files:?}");
    let seed = |file: &str, kernel: &str| build(&clang, file, &shared_cache()).1.resource_usage(kernel).unwrap();
    let sum_partials = seed("kernels/tf_sum_partials.hip", "tf_sum_partials");
    let softmax_stats = seed("kernels/tf_softmax_stats.hip", "tf_softmax_stats");

    let hungry = seed("controls/limits/sum_partials_vgpr_hungry.hip", "tf_sum_partials");
    assert!(hungry.vgprs > 128 && hungry.vgprs > 4 * sum_partials.vgprs, "{hungry:?}");
    assert_eq!((hungry.vgpr_spills, hungry.scratch_bytes, hungry.lds_bytes), (0, 0, sum_partials.lds_bytes), "{hungry:?}");

    let lds = seed("controls/limits/softmax_lds_stage.hip", "tf_softmax_stats");
    assert!(lds.lds_bytes >= 60 * 1024 + 1024 && lds.lds_bytes <= 64 * 1024, "{lds:?}");
    assert_eq!((lds.vgpr_spills, lds.scratch_bytes), (0, 0), "{lds:?}");
    assert!(lds.vgprs <= 2 * softmax_stats.vgprs, "{lds:?}");

    let spills = seed("controls/limits/sum_partials_spills.hip", "tf_sum_partials");
    assert!(spills.vgprs <= 12, "{spills:?}");
    assert!(spills.vgpr_spills > 0 && spills.scratch_bytes > 0, "{spills:?}");
    assert_eq!(spills.lds_bytes, sum_partials.lds_bytes);
    for u in [&hungry, &lds, &spills] {
        eprintln!("{}", usage_row("controls/limits", u));
    }
}

/// A fresh cache compiles; the second build is a cache hit with the same bytes; two cold
/// builds are byte-identical; a header no kernel includes is no rebuild.
#[test]
fn code_objects_are_cached_by_content_and_deterministic() {
    let Some(clang) = clang() else { return };
    let work = tempfile::tempdir().unwrap();
    let include = work.path().join("include");
    fs::create_dir_all(&include).unwrap();
    fs::copy(root().join("kernels/common.h"), include.join("common.h")).unwrap();
    let mut source = kernel_source("kernels/tf_embed_dense.hip");
    source.include_dirs = vec![include.clone()];

    let cache = work.path().join("cache");
    let cold = clang.build(&source, GFX1201, &prelude(), &cache).unwrap();
    assert!(!cold.cached);
    assert!(cold.path.starts_with(&cache));
    assert_eq!(fs::read(&cold.path).unwrap(), cold.bytes);
    let warm = clang.build(&source, GFX1201, &prelude(), &cache).unwrap();
    assert!(warm.cached);
    assert_eq!((warm.path.clone(), warm.bytes.clone()), (cold.path.clone(), cold.bytes.clone()));

    let other_cache = work.path().join("other");
    let again = clang.build(&source, GFX1201, &prelude(), &other_cache).unwrap();
    assert!(!again.cached);
    assert_eq!(again.bytes, cold.bytes, "a fixed -cuid makes builds byte-identical");

    fs::write(include.join("unrelated.h"), "// a header no kernel includes\n").unwrap();
    let unrelated = clang.build(&source, GFX1201, &prelude(), &cache).unwrap();
    assert!(unrelated.cached, "the key is what clang read");
    assert_eq!(unrelated.path, cold.path);
}

/// The code object follows its headers wherever they lie (a subfolder of the include folder,
/// outside the repository), and a truncated, altered or swapped one is rebuilt, never used.
#[test]
fn code_objects_follow_every_header_read_and_damaged_ones_are_rebuilt() {
    use crate::backend::cache::test_repo::{TempRepo, damages, replace};
    let Some(clang) = clang() else { return };
    let repo = TempRepo::new();
    let build = |source: &KernelSource| clang.build(source, GFX1201, &prelude(), &repo.cache()).unwrap_or_else(|e| panic!("{e}"));
    let lds = |object: &CodeObject| object.resource_usage("tile").unwrap().lds_bytes;

    let source = repo.tile_source("tile", 64, 1);
    let first = build(&source);
    assert_eq!((first.cached, lds(&first)), (false, 256));
    assert!(build(&source).cached);
    repo.write("repo/kernels/sub/tile.h", "#define TILE 128\n");
    let edited = build(&source);
    assert_eq!((edited.cached, lds(&edited)), (false, 512), "a header in a subfolder");
    repo.write("elsewhere/extra.h", "#define EXTRA 2\n");
    let outside = build(&source);
    assert_eq!((outside.cached, lds(&outside)), (false, 1024), "a header outside the repository");
    assert_eq!(build(&source).path, outside.path);

    for (damage, bytes) in damages(&outside.bytes) {
        replace(&outside.path, &bytes);
        let rebuilt = build(&source);
        assert!(!rebuilt.cached, "{damage}: rebuilt");
        assert!(rebuilt.bytes == outside.bytes, "{damage}: the code object again");
        assert!(fs::read(&rebuilt.path).unwrap() == outside.bytes, "{damage}: written again");
    }

    let other = repo.source("other", "extern \"C\" __global__ void tile(float* y) { y[threadIdx.x] = 1.0f; }\n", "tile");
    let other_object = build(&other);
    replace(&outside.path, &other_object.bytes);
    replace(&other_object.path, &outside.bytes);
    let (rebuilt, rebuilt_other) = (build(&source), build(&other));
    assert!(!rebuilt.cached && !rebuilt_other.cached, "swapped code objects are rebuilt");
    assert_eq!((lds(&rebuilt), lds(&rebuilt_other)), (1024, 0));
}

fn scratch_source(dir: &Path, name: &str, text: &str) -> KernelSource {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    KernelSource {
        path,
        display_path: format!("scratch/{name}"),
        kernels: extern_c_kernels(text),
        include_dirs: vec![root().join("kernels")],
    }
}

#[test]
fn compile_errors_come_back_with_clangs_log() {
    let Some(clang) = clang() else { return };
    let work = tempfile::tempdir().unwrap();
    let source = scratch_source(work.path(), "broken.hip", "extern \"C\" __global__ void broken(float* x) { x[0] = y; }\n");
    let error = clang.build(&source, GFX1201, &prelude(), work.path()).unwrap_err();
    let EngineError::Compile { path, compiler, log } = &error else { panic!("{error}") };
    assert_eq!(path, "scratch/broken.hip");
    assert!(compiler.contains("clang"), "{compiler}");
    assert!(log.contains("use of undeclared identifier 'y'"), "{log}");
    // nothing half-written is left in the cache
    assert!(fs::read_dir(work.path()).unwrap().all(|e| e.unwrap().path().extension().is_none_or(|x| x != "co")));
}

/// Math without a lowering under -nogpulib is refused at compile time with the reason,
/// never replaced by an approximation; the provided functions compile to no libcall.
#[test]
fn prelude_refuses_math_it_cannot_lower_exactly() {
    let Some(clang) = clang() else { return };
    let work = tempfile::tempdir().unwrap();
    for (function, call, reason) in [
        ("sinf", "sinf(x[0])", "v_sin_f32"),
        ("cosf", "cosf(x[0])", "v_cos_f32"),
        ("powf", "powf(x[0], x[1])", "NaN for x < 0"),
        ("tanhf", "tanhf(x[0])", "ftanh"),
        ("erff", "erff(x[0])", "erff"),
    ] {
        let text = format!("extern \"C\" __global__ void k(float* x) {{ x[2] = {call}; }}\n");
        let source = scratch_source(work.path(), &format!("{function}.hip"), &text);
        let error = clang.build(&source, GFX1201, &prelude(), work.path()).unwrap_err();
        let message = error.to_string();
        assert!(message.contains(&format!("'{function}' is unavailable")) && message.contains(reason), "{message}");
    }
    let text = "#include \"common.h\"\n\
        extern \"C\" __global__ void k(float* x, int* n, unsigned* u) {\n\
          float v = x[threadIdx.x];\n\
          float r = expf(v) + logf(v) + sqrtf(v) + rsqrtf(v) + fmaxf(v, 1.0f) + fminf(v, 2.0f) + fabsf(v) + floorf(v)\n\
                  + exp2f(v) + log2f(v) + ceilf(v) + truncf(v) + rintf(v) + roundf(v) + fmaf(v, v, v) + __expf(v);\n\
          r += __shfl_xor(r, 1) + __shfl_down(r, 2, 16) + __shfl_up(r, 3) + __shfl(r, 4);\n\
          double d = __shfl_xor((double)r, 5); long long l = __shfl((long long)n[0] << 33, 1);\n\
          unsigned w = __shfl_down(u[0], 1); int i = __shfl_up(n[1], 1, 8);\n\
          n[2] = (int)__ballot(r > 0) + __any(i) + __all(w) + min(i, 3) + max(i, 4) + (int)min(w, 5u) + (int)max(l, 6ll);\n\
          atomicAdd(&x[1], r); atomicMax(&x[2], r); atomicMin(&x[3], r); atomicExch(&x[4], r); atomicCAS(&x[5], r, 1.0f);\n\
          atomicAdd(n, 1); atomicMax(n + 1, i); atomicMin(n + 2, i); atomicExch(n + 3, i); atomicCAS(n + 4, 0, i);\n\
          atomicAdd(u, 1u); atomicMax(u + 1, w); atomicMin(u + 2, w); atomicExch(u + 3, w); atomicCAS(u + 4, 0u, w);\n\
          __threadfence(); __threadfence_block(); __syncthreads();\n\
          x[6] = (float)d + min(r, INFINITY) + max(r, -INFINITY) + __uint_as_float(__float_as_uint(r)) + __int_as_float(__float_as_int(r));\n\
          if (r == 12345.0f) __trap();\n\
          x[7] = (float)(blockIdx.x + blockIdx.y + blockIdx.z + gridDim.x + gridDim.y + gridDim.z + blockDim.x + blockDim.y\n\
                         + blockDim.z + threadIdx.y + threadIdx.z + warpSize);\n\
        }\n\
        extern \"C\" __global__ void __launch_bounds__(128) one_bound(float* x) { x[threadIdx.x] = 1.0f; }\n\
        extern \"C\" __global__ void __launch_bounds__(256, 2) two_bounds(float* x) { x[threadIdx.x] = 2.0f; }\n";
    let source = scratch_source(work.path(), "everything.hip", text);
    assert_eq!(source.kernels, ["k", "one_bound", "two_bounds"]);
    let object = clang.build(&source, GFX1201, &prelude(), work.path()).unwrap_or_else(|e| panic!("{e}"));
    assert!(object.log.is_empty(), "warnings: {}", object.log);
    assert_eq!(object.resource_usage("one_bound").unwrap().max_threads, 128);
    assert_eq!(object.resource_usage("two_bounds").unwrap().max_threads, 256);
    assert_eq!(object.resource_usage("k").unwrap().scratch_bytes, 0);
}

#[test]
fn a_listed_kernel_missing_from_the_code_object_is_an_error() {
    let Some(clang) = clang() else { return };
    let work = tempfile::tempdir().unwrap();
    let mut source = scratch_source(work.path(), "mangled.hip", "__global__ void mangled(float* x) { x[0] = 1.0f; }\n");
    assert!(source.kernels.is_empty(), "not extern \"C\": not a launchable kernel");
    source.kernels = vec!["mangled".into()];
    let error = clang.build(&source, GFX1201, &prelude(), work.path()).unwrap_err();
    let EngineError::AmdgpuMetadata(MetadataError::NoKernel { kernel, available, .. }) = &error else { panic!("{error}") };
    assert_eq!(kernel, "mangled");
    assert!(available.contains("_Z7mangledPf"), "{available}");
}

#[test]
fn unknown_clang_is_refused_by_name() {
    let error = HipClang::with_program("/nonexistent/clang-99").unwrap_err();
    assert!(error.to_string().contains("/nonexistent/clang-99"), "{error}");
}

#[test]
fn extern_c_kernels_are_read_from_source_text() {
    let text = r#"
        // extern "C" __global__ void commented_out(float* x);
        /* extern "C" __global__ void also_commented(float* x) {} */
        #include "common.h"
        __device__ float helper(float v) { return v; }
        extern "C" __device__ float not_a_kernel(float v) { return v; }
        extern "C" __global__ void first(const float* x, float* y) { y[0] = x[0]; }
        extern "C" __global__ void __launch_bounds__(256) bounded(float* y) {}
        extern "C" __global__ __launch_bounds__(128, 2) void
            bounded_two
            (float* y) {}
        extern "C" __global__ void __attribute__((amdgpu_num_vgpr(12))) capped(float* y) {}
        const char* text = "extern \"C\" __global__ void in_a_string(";
    "#;
    assert_eq!(extern_c_kernels(text), ["first", "bounded", "bounded_two", "capped"]);
}

// ---------------------------------------------------------------- the reader on hand-made input

/// A minimal MessagePack encoder for the tests' notes.
enum Mp<'a> {
    U(u64),
    S(&'a str),
    B(bool),
    A(Vec<Mp<'a>>),
    M(Vec<(&'a str, Mp<'a>)>),
}

fn encode(value: &Mp, out: &mut Vec<u8>) {
    match value {
        Mp::U(v) if *v < 128 => out.push(*v as u8),
        Mp::U(v) => {
            out.push(0xce);
            out.extend_from_slice(&(*v as u32).to_be_bytes());
        }
        Mp::S(s) => {
            out.push(0xd9);
            out.push(s.len() as u8);
            out.extend_from_slice(s.as_bytes());
        }
        Mp::B(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Mp::A(items) => {
            out.push(0xdc);
            out.extend_from_slice(&(items.len() as u16).to_be_bytes());
            for item in items {
                encode(item, out);
            }
        }
        Mp::M(pairs) => {
            out.push(0xde);
            out.extend_from_slice(&(pairs.len() as u16).to_be_bytes());
            for (k, v) in pairs {
                encode(&Mp::S(k), out);
                encode(v, out);
            }
        }
    }
}

fn kernel_entry<'a>(name: &'a str, symbol: &'a str, skip: &str) -> Mp<'a> {
    let fields = vec![
        (".name", Mp::S(name)),
        (".symbol", Mp::S(symbol)),
        (".vgpr_count", Mp::U(21)),
        (".sgpr_count", Mp::U(40)),
        (".group_segment_fixed_size", Mp::U(4128)),
        (".private_segment_fixed_size", Mp::U(0)),
        (".vgpr_spill_count", Mp::U(0)),
        (".sgpr_spill_count", Mp::U(0)),
        (".max_flat_workgroup_size", Mp::U(1024)),
        (".wavefront_size", Mp::U(32)),
        (".kernarg_segment_size", Mp::U(296)),
        (".uses_dynamic_stack", Mp::B(false)),
    ];
    Mp::M(fields.into_iter().filter(|(k, _)| *k != skip).collect())
}

fn note_descriptor(skip: &str) -> Vec<u8> {
    let note = Mp::M(vec![
        ("amdhsa.kernels", Mp::A(vec![kernel_entry("tf_sum_partials", "tf_sum_partials.kd", skip)])),
        ("amdhsa.target", Mp::S("amdgcn-amd-amdhsa--gfx1201")),
        ("amdhsa.version", Mp::A(vec![Mp::U(1), Mp::U(2)])),
    ]);
    let mut out = Vec::new();
    encode(&note, &mut out);
    out
}

/// An ELF64 with no sections and one PT_NOTE segment holding one note.
fn minimal_elf(machine: u16, note_name: &[u8], note_type: u32, descriptor: &[u8]) -> Vec<u8> {
    let pad4 = |v: &mut Vec<u8>| v.resize(v.len().div_ceil(4) * 4, 0);
    let mut note = Vec::new();
    note.extend_from_slice(&(note_name.len() as u32 + 1).to_le_bytes());
    note.extend_from_slice(&(descriptor.len() as u32).to_le_bytes());
    note.extend_from_slice(&note_type.to_le_bytes());
    note.extend_from_slice(note_name);
    note.push(0);
    pad4(&mut note);
    note.extend_from_slice(descriptor);
    pad4(&mut note);

    let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 64, 3, 0, 0, 0, 0, 0, 0, 0];
    elf.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    elf.extend_from_slice(&machine.to_le_bytes());
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&0u64.to_le_bytes()); // entry
    elf.extend_from_slice(&64u64.to_le_bytes()); // phoff
    elf.extend_from_slice(&0u64.to_le_bytes()); // shoff
    elf.extend_from_slice(&0x4eu32.to_le_bytes()); // gfx1201
    for v in [64u16, 56, 1, 64, 0, 0] {
        elf.extend_from_slice(&v.to_le_bytes());
    }
    assert_eq!(elf.len(), 64);
    elf.extend_from_slice(&4u32.to_le_bytes()); // PT_NOTE
    elf.extend_from_slice(&4u32.to_le_bytes()); // PF_R
    elf.extend_from_slice(&120u64.to_le_bytes()); // offset
    elf.extend_from_slice(&0u64.to_le_bytes());
    elf.extend_from_slice(&0u64.to_le_bytes());
    elf.extend_from_slice(&(note.len() as u64).to_le_bytes());
    elf.extend_from_slice(&(note.len() as u64).to_le_bytes());
    elf.extend_from_slice(&4u64.to_le_bytes());
    assert_eq!(elf.len(), 120);
    elf.extend_from_slice(&note);
    elf
}

#[test]
fn reader_decodes_a_hand_made_note() {
    let elf = minimal_elf(224, b"AMDGPU", 32, &note_descriptor(""));
    let metadata = read_metadata(&elf, "hand.co").unwrap();
    assert_eq!(metadata.target, "amdgcn-amd-amdhsa--gfx1201");
    assert_eq!(metadata.version, vec![1, 2]);
    let k = &metadata.kernels[0];
    assert_eq!((k.name.as_str(), k.symbol.as_str()), ("tf_sum_partials", "tf_sum_partials.kd"));
    assert_eq!((k.vgpr_count, k.sgpr_count, k.group_segment_fixed_size, k.private_segment_fixed_size), (21, 40, 4128, 0));
    assert_eq!((k.max_flat_workgroup_size, k.wavefront_size, k.kernarg_segment_size, k.agpr_count), (1024, 32, Some(296), None));
    let u = resource_usage(&elf, "hand.co", "tf_sum_partials").unwrap();
    assert_eq!((u.arch.as_str(), u.vgprs, u.lds_bytes, u.dynamic_stack), ("gfx1201", 21, 4128, false));

    // the same bytes at an odd address still read
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&elf);
    assert_eq!(read_metadata(&shifted[1..], "hand.co").unwrap(), metadata);

    let missing = resource_usage(&elf, "hand.co", "tf_embed_dense").unwrap_err();
    assert_eq!(missing.to_string(), "hand.co: no kernel `tf_embed_dense` in the code object (it has: tf_sum_partials)");
}

#[test]
fn reader_names_the_file_and_what_is_missing() {
    let elf = minimal_elf(224, b"AMDGPU", 32, &note_descriptor(".vgpr_count"));
    let error = read_metadata(&elf, "k.co").unwrap_err();
    assert_eq!(error.to_string(), "k.co: NT_AMDGPU_METADATA has no `.vgpr_count` of kernel `tf_sum_partials`");

    let error = read_metadata(&minimal_elf(224, b"AMDGPU", 32, &note_descriptor(".name")), "k.co").unwrap_err();
    assert_eq!(error.to_string(), "k.co: NT_AMDGPU_METADATA has no `.name` of amdhsa.kernels[0]");

    let error = read_metadata(&minimal_elf(62, b"AMDGPU", 32, &note_descriptor("")), "x86.o").unwrap_err();
    assert_eq!(error, MetadataError::NotAmdgpu { file: "x86.o".into(), machine: 62 });

    for (name, kind) in [(&b"AMDGPU"[..], 1), (b"GNU", 32)] {
        let error = read_metadata(&minimal_elf(224, name, kind, &note_descriptor("")), "k.co").unwrap_err();
        assert_eq!(error, MetadataError::NoMetadataNote { file: "k.co".into() });
    }

    let error = read_metadata(&minimal_elf(224, b"AMDGPU", 32, &[0x93, 0x01]), "k.co").unwrap_err();
    assert!(matches!(error, MetadataError::Msgpack { .. }), "{error}");
    let error = read_metadata(&minimal_elf(224, b"AMDGPU", 32, &[0x91, 0x01]), "k.co").unwrap_err();
    assert_eq!(error.to_string(), "k.co: NT_AMDGPU_METADATA `(the note)` is a array, not a map");

    let mut wrong_type = Vec::new();
    encode(&Mp::M(vec![("amdhsa.target", Mp::U(7)), ("amdhsa.kernels", Mp::A(vec![]))]), &mut wrong_type);
    let error = read_metadata(&minimal_elf(224, b"AMDGPU", 32, &wrong_type), "k.co").unwrap_err();
    assert_eq!(error.to_string(), "k.co: NT_AMDGPU_METADATA `amdhsa.target` is a integer, not a string");

    for bytes in [&b""[..], b"\x7fELF", b"MZ\x90\x00", &[0u8; 200]] {
        let error = read_metadata(bytes, "junk").unwrap_err();
        assert!(matches!(error, MetadataError::NotElf { .. }), "{error}");
    }
}

/// Truncations and byte flips of a hand-made and of a real code object are errors (or,
/// for flips outside what is read, the same figures), never panics.
#[test]
fn reader_survives_truncated_and_corrupted_code_objects() {
    let hand = minimal_elf(224, b"AMDGPU", 32, &note_descriptor(""));
    for end in 0..hand.len() {
        assert!(read_metadata(&hand[..end], "cut.co").is_err(), "a cut at {end} still parsed");
    }
    for i in 0..hand.len() {
        for b in [0x00, 0x01, 0x7f, 0x80, 0xc1, 0xdd, 0xdf, 0xff] {
            let mut copy = hand.clone();
            copy[i] = b;
            let _ = read_metadata(&copy, "flip.co");
        }
    }

    let Some(clang) = clang() else { return };
    let (_, object) = build(&clang, "kernels/tf_sum_partials.hip", &shared_cache());
    let real = &object.bytes;
    let full = read_metadata(real, "real.co").unwrap();
    let mut errors = 0;
    let mut end = 0;
    while end < real.len() {
        match read_metadata(&real[..end], "cut.co") {
            Err(_) => errors += 1,
            // past the note and the section table nothing else is read
            Ok(m) => assert_eq!(m, full, "a cut at {end}"),
        }
        end += 97;
    }
    assert!(errors > 0);
    let note_at = real.windows(12).position(|w| w == b"amdhsa.kerne").unwrap();
    for i in (0..real.len()).step_by(13).chain(note_at.saturating_sub(64)..(note_at + 4096).min(real.len())) {
        let mut copy = real.clone();
        copy[i] ^= 0xa5;
        let _ = read_metadata(&copy, "flip.co");
    }
}

#[test]
fn target_arch_drops_the_triple_and_features() {
    assert_eq!(target_arch("amdgcn-amd-amdhsa--gfx1201"), "gfx1201");
    assert_eq!(target_arch("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"), "gfx90a");
    assert_eq!(target_arch("amdgcn-amd-amdhsa--gfx12-generic"), "gfx12-generic");
    assert_eq!(target_arch("gfx1201"), "gfx1201");
}

/// Wall time of building every kernel source cold (a fresh cache) and warm (all cached).
/// Run with `cargo test --lib build_times -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn build_times_cold_and_warm() {
    let Some(clang) = clang() else { return };
    let mut files = hip_files("kernels");
    files.extend(hip_files("controls"));
    files.extend(hip_files("controls/limits"));
    files.extend(hip_files("src/backend/host/test_kernels"));
    let work = tempfile::tempdir().unwrap();
    for pass in ["cold", "warm"] {
        let start = std::time::Instant::now();
        for file in &files {
            let (_, object) = build(&clang, file, work.path());
            assert_eq!(object.cached, pass == "warm");
        }
        eprintln!("{pass}: {} sources in {:.2?} with {}", files.len(), start.elapsed(), clang.identity);
    }
}
