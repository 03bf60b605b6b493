//! The hip backend's tests. Without a GPU: the runtime, hiprtc and rocBLAS paths run against
//! fakes built here with gcc (testdata/fake_libamdhip64.c, testdata/fake_librocblas.c), the
//! code object a compile returns is a real gfx1201 one from clang-22 (the static path), and
//! Debian's ROCm 5.2 runtime (libamdhip64-5) must answer the probe with HIP's "no device"
//! error. Without libamdhip64.so.5 or clang-22 the tests that need them report themselves
//! not run, and `cargo xtask test` fails on that. With a gfx1201 and ROCm 6.3+:
//! `cargo test -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::DType;
use crate::backend::GemmBf16;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gcc(dir: &Path, file: &str, out: &str, defines: &[&str]) -> PathBuf {
    let library = dir.join(out);
    let mut gcc = Command::new("gcc");
    gcc.args(["-shared", "-fPIC", "-O1", "-o"]).arg(&library).arg(root().join("src/backend/hip/testdata").join(file));
    for d in defines {
        gcc.arg(format!("-D{d}"));
    }
    let out = gcc.output().expect("gcc runs");
    assert!(out.status.success(), "gcc: {}", String::from_utf8_lossy(&out.stderr));
    library
}

fn options(runtime: &Path, rocblas: Option<&Path>) -> HipOptions {
    HipOptions {
        runtime_library: Some(runtime.display().to_string()),
        hiprtc_library: None,
        rocblas_library: rocblas.map(|p| p.display().to_string()),
        ..HipOptions::for_root(&root())
    }
}

fn source(display_path: &str, kernels: &[&str]) -> KernelSource {
    KernelSource {
        path: root().join(display_path),
        display_path: display_path.to_string(),
        kernels: kernels.iter().map(|k| k.to_string()).collect(),
        include_dirs: vec![root().join("kernels")],
    }
}

struct Fake(libloading::Library);

impl Fake {
    fn open(path: &Path) -> Fake {
        Fake(unsafe { libloading::Library::new(path) }.unwrap())
    }
    fn i32(&self, name: &str) -> i32 {
        unsafe { (*self.0.get::<unsafe extern "C" fn() -> i32>(name).unwrap())() }
    }
    fn usize(&self, name: &str) -> usize {
        unsafe { (*self.0.get::<unsafe extern "C" fn() -> usize>(name).unwrap())() }
    }
    fn set_func_attr(&self, attr: i32, value: i32) {
        unsafe { (*self.0.get::<unsafe extern "C" fn(i32, i32)>("fake_set_func_attr").unwrap())(attr, value) }
    }
    fn last_dims(&self) -> [u32; 7] {
        let p = unsafe { (*self.0.get::<unsafe extern "C" fn() -> *const u32>("fake_last_dims").unwrap())() };
        unsafe { std::slice::from_raw_parts(p, 7) }.try_into().unwrap()
    }
    fn last_options(&self) -> String {
        let p = unsafe { (*self.0.get::<unsafe extern "C" fn() -> *const std::ffi::c_char>("fake_last_options").unwrap())() };
        c_str(p).unwrap()
    }
}

#[test]
fn the_default_sonames_are_tried_in_order() {
    assert_eq!(runtime::candidates(None), ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"]);
    assert_eq!(runtime::candidates(Some("/opt/rocm/lib/libamdhip64.so.6")), ["/opt/rocm/lib/libamdhip64.so.6"]);
    assert_eq!(hiprtc::candidates(None, "libamdhip64.so.5"), ["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libamdhip64.so.5"]);
    assert_eq!(rocblas::candidates(None), ["librocblas.so", "librocblas.so.5", "librocblas.so.4", "librocblas.so.0"]);
}

#[test]
fn gcn_arch_name_is_read_at_offset_1160() {
    let mut image = vec![0u8; DEVICE_PROP_R0600_SIZE];
    image[..4].copy_from_slice(b"Card");
    image[1160..1160 + 23].copy_from_slice(b"gfx1201:sramecc-:xnack-");
    let p = runtime::DeviceProperties::from_r0600(&image);
    assert_eq!((p.name.as_str(), p.gcn_arch_name.as_str(), p.arch()), ("Card", "gfx1201:sramecc-:xnack-", "gfx1201"));
}

#[test]
fn without_libamdhip64_the_error_names_the_library() {
    let missing = "/nonexistent/libamdhip64.so.6";
    let error =
        HipBackend::probe(HipOptions { runtime_library: Some(missing.into()), ..HipOptions::for_root(&root()) }).err().expect("no library");
    let text = error.to_string();
    assert!(matches!(error, EngineError::LoadLibrary { .. }), "{text}");
    assert!(text.contains(missing) && text.contains("ROCm 6.3"), "{text}");
    // the default list, where none of them exists, names each soname
    let error = Runtime::open(&["libamdhip64-none.so.7".into(), "libamdhip64-none.so.6".into()]).err().unwrap().to_string();
    assert!(error.contains("libamdhip64-none.so.7 or libamdhip64-none.so.6"), "{error}");
}

#[test]
fn debians_rocm_5_2_runtime_says_no_hip_device_with_the_error_name_and_code() {
    if !crate::toolchain::available_for_test(crate::toolchain::Toolchain::Rocm52Runtime) {
        return;
    }
    let error = HipBackend::probe(HipOptions { runtime_library: Some("libamdhip64.so.5".into()), ..HipOptions::for_root(&root()) })
        .err()
        .expect("no AMD GPU here");
    let text = error.to_string();
    eprintln!("{text}");
    assert!(matches!(&error, EngineError::Vendor { call, code: 100 | 101, .. } if call == "hipInit"), "{text}");
    assert!(text.contains("hipErrorInvalidDevice (101)") || text.contains("hipErrorNoDevice (100)"), "{text}");
    assert!(text.contains("libamdhip64.so.5"), "{text}");
}

#[test]
fn a_runtime_without_devices_fails_the_probe_with_hips_error_name() {
    let dir = tempfile::tempdir().unwrap();
    let library = gcc(dir.path(), "fake_libamdhip64.c", "libamdhip64-nodev.so", &["FAKE_NO_DEVICE"]);
    let text = HipBackend::probe(options(&library, None)).err().expect("no device").to_string();
    assert!(text.contains("hipInit") && text.contains("hipErrorNoDevice (100)"), "{text}");
}

#[test]
fn a_runtime_without_hiphostmalloc_opens_and_copies_direct() {
    let dir = tempfile::tempdir().unwrap();
    let library = gcc(dir.path(), "fake_libamdhip64.c", "libamdhip64-nopinned.so", &["FAKE_OMIT_HOST_MALLOC"]);
    let fake = Fake::open(&library);
    let backend = HipBackend::probe(options(&library, None)).unwrap();
    let mut large = backend.allocate(17 << 20).unwrap();
    let bytes: Vec<u8> = (0..17 << 20).map(|i: usize| (i * 13 % 253) as u8).collect();
    large.write(0, &bytes).unwrap();
    let mut back = vec![0u8; bytes.len()];
    large.read(0, &mut back).unwrap();
    assert!(back == bytes, "copied direct, whole");
    assert_eq!(fake.i32("fake_live_pinned"), 0);
}

/// A gfx1201 code object of tf_embed_dense from clang-22 (the static path), or `None` (the
/// test reported as not run) without an AMDGPU clang.
fn embed_code_object(dir: &Path) -> Option<PathBuf> {
    if !crate::toolchain::available_for_test(crate::toolchain::Toolchain::AmdgpuClang) {
        return None;
    }
    let clang = crate::amdgpu::HipClang::discover().expect("found a moment ago");
    let s = source("kernels/tf_embed_dense.hip", &["tf_embed_dense"]);
    Some(clang.build(&s, "gfx1201", &root().join("kernels/hip/prelude.h"), &dir.join("co")).unwrap().path)
}

#[test]
fn the_runtime_hiprtc_and_rocblas_paths_run_against_fakes_and_the_workspace_call_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let Some(code_object) = embed_code_object(dir.path()) else { return };
    let hip = gcc(dir.path(), "fake_libamdhip64.c", "libamdhip64-fake.so", &[]);
    let blas_lean = gcc(dir.path(), "fake_librocblas.c", "librocblas-lean.so", &[]);
    let blas_full = gcc(dir.path(), "fake_librocblas.c", "librocblas-full.so", &["FAKE_WORKSPACE"]);
    // only this test reads it (the fake's hiprtcCompileProgram)
    unsafe { std::env::set_var("FAKE_HIPRTC_CODE_OBJECT", &code_object) };
    let fake = Fake::open(&hip);
    {
        let backend = HipBackend::probe(options(&hip, Some(&blas_lean))).unwrap();
        assert_eq!(backend.arch(), "gfx1201");
        // the large units' device budget (hipDeviceTotalMem)
        assert_eq!(backend.device_memory(), Some(16 << 30));
        // no libhiprtc here: hiprtc came from libamdhip64 itself, as on ROCm 5.x
        assert_eq!(backend.compiler().hiprtc().library(), hip.display().to_string());
        let toolchain = backend.toolchain();
        assert!(
            toolchain.contains("hiprtc 6.4")
                && toolchain.contains("HIP runtime 6.4.43483")
                && toolchain.contains("gfx1201:sramecc-:xnack-"),
            "{toolchain}"
        );

        // buffers: zero-filled (hipMemset), written and read at offsets, bounds checked; one
        // dropped is kept and zeroed again for the next of its size
        let memsets = fake.i32("fake_memsets");
        let mut kept = backend.allocate(64).unwrap();
        kept.write(0, &[7u8; 64]).unwrap();
        let address = kept.device_address();
        drop(kept);
        let mut buffer = backend.allocate(64).unwrap();
        assert_eq!(buffer.device_address(), address, "the kept buffer");
        assert_eq!(fake.i32("fake_memsets") - memsets, 2, "zeroed when made and when handed out again");
        let mut bytes = [1u8; 64];
        buffer.read(0, &mut bytes).unwrap();
        assert_eq!(bytes, [0u8; 64]);
        buffer.write(8, &[1, 2, 3]).unwrap();
        let mut three = [0u8; 3];
        buffer.read(8, &mut three).unwrap();
        assert_eq!(three, [1, 2, 3]);
        assert!(buffer.write(63, &[1, 2]).is_err());
        // fills on the device (hipMemset, hipMemsetD16, hipMemsetD32 at the range's start),
        // their range alone; an unaligned word's by a copy
        let memsets = fake.i32("fake_memsets");
        for (pattern, want) in
            [(&[0x33][..], [0, 0x33, 0x33, 0x33, 0x33, 0]), (&[1, 2], [0, 1, 2, 1, 2, 0]), (&[1, 2, 3, 4], [0, 1, 2, 3, 4, 0])]
        {
            buffer.fill(12, 4, pattern).unwrap();
            let mut around = [0u8; 6];
            buffer.read(11, &mut around).unwrap();
            assert_eq!(around, want, "{pattern:?}");
            buffer.fill(12, 4, &[0]).unwrap();
        }
        assert_eq!(fake.i32("fake_memsets") - memsets, 6);
        buffer.fill(13, 2, &[5, 6]).unwrap();
        assert_eq!(fake.i32("fake_memsets") - memsets, 6, "an unaligned word is copied");
        let mut two = [0u8; 2];
        buffer.read(13, &mut two).unwrap();
        assert_eq!(two, [5, 6]);
        buffer.fill(13, 2, &[0]).unwrap();
        assert!(buffer.fill(62, 3, &[0]).is_err());
        // a device copy (hipMemcpyDtoD), as a pinned projection's last chunk makes
        let other = backend.allocate(8).unwrap();
        backend.copy(other.device_address(), buffer.device_address() + 8, 3).unwrap();
        let mut copied = [9u8; 4];
        other.read(0, &mut copied).unwrap();
        assert_eq!(copied, [1, 2, 3, 0]);
        // a large copy goes through the two page-locked stages (hipHostMalloc), made at the first
        assert_eq!(fake.i32("fake_live_pinned"), 0);
        let mut large = backend.allocate(17 << 20).unwrap();
        let bytes: Vec<u8> = (0..(17 << 20) - 3).map(|i: usize| (i * 7 % 251) as u8).collect();
        large.write(3, &bytes).unwrap();
        let mut back = vec![0u8; bytes.len()];
        large.read(3, &mut back).unwrap();
        assert!(back == bytes, "a staged copy there and back");
        assert_eq!(fake.i32("fake_live_pinned"), 2);
        assert!(large.write(4, &bytes).is_err(), "past the end: refused before any piece is copied");

        // a module: hiprtc's options, the note read, hipFuncGetAttribute cross-checked
        let s = source("kernels/tf_embed_dense.hip", &["tf_embed_dense"]);
        let module = backend.load_module(&s).unwrap();
        let used = fake.last_options();
        for option in [
            "--offload-arch=gfx1201 ",
            "-mcode-object-version=5 ",
            "-ffp-contract=off ",
            &format!("-I{} ", root().join("kernels").display()),
        ] {
            assert!(used.contains(option), "{option} not in {used}");
        }
        let note = backend.code_object(&s).unwrap().metadata.kernel("tf_embed_dense").unwrap().clone();
        fake.set_func_attr(HIP_FUNC_ATTRIBUTE_NUM_REGS, note.vgpr_count as i32);
        fake.set_func_attr(HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, note.group_segment_fixed_size as i32);
        fake.set_func_attr(HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, note.private_segment_fixed_size as i32);
        let usage = module.resource_usage("tf_embed_dense").unwrap().unwrap();
        assert_eq!(usage.figures.keys().cloned().collect::<Vec<_>>(), ["lds", "scratch", "sgpr_spills", "sgprs", "vgpr_spills", "vgprs"]);
        assert_eq!(usage.figures["vgprs"], note.vgpr_count as u64);
        assert!(usage.compiler.contains("hiprtc 6.4"), "{}", usage.compiler);
        fake.set_func_attr(HIP_FUNC_ATTRIBUTE_NUM_REGS, note.vgpr_count as i32 + 7);
        let text = module.resource_usage("tf_embed_dense").unwrap().unwrap_err().to_string();
        assert!(
            text.contains(&format!("NUM_REGS = {}", note.vgpr_count + 7)) && text.contains(&format!(".vgpr_count = {}", note.vgpr_count)),
            "{text}"
        );

        // the note's arguments: table, table_kind, ids, n, k, out, out_kind (hidden ones left out)
        assert_eq!(note.explicit_arg_sizes.as_deref(), Some(&[8, 4, 8, 4, 4, 8, 4][..]));
        // a launch whose arguments the kernel does not declare is refused before HIP reads them
        let dims = LaunchDims { grid: [3, 2, 1], block: [128, 1, 1], dynamic_shared: 16 };
        let p = KernelArg::Pointer(buffer.device_address());
        let short = module.launch("tf_embed_dense", dims, Schedule::default(), &[p, KernelArg::I32(1)]).unwrap_err().to_string();
        assert!(short.contains("takes 7 parameters ([8, 4, 8, 4, 4, 8, 4] bytes) but the launcher passes 2"), "{short}");
        let wide = [p, KernelArg::I32(1), p, KernelArg::I32(1), KernelArg::I64(64), p, KernelArg::I32(0)];
        let text = module.launch("tf_embed_dense", dims, Schedule::default(), &wide).unwrap_err().to_string();
        assert!(text.contains("passes 7 ([8, 4, 8, 4, 8, 8, 4] bytes)"), "{text}");
        // a launch reaches hipModuleLaunchKernel with the dimensions asked for
        let args = [p, KernelArg::I32(1), p, KernelArg::I32(1), KernelArg::I32(64), p, KernelArg::I32(0)];
        module.launch("tf_embed_dense", dims, Schedule::default(), &args).unwrap();
        assert_eq!(fake.last_dims(), [3, 2, 1, 128, 1, 1, 16]);
        let refused = module.launch("tf_embed_dense", LaunchDims { block: [2048, 1, 1], ..dims }, Schedule::default(), &args).unwrap_err();
        assert!(refused.to_string().contains("1024"), "{refused}");

        // a compile error comes back with hiprtc's log
        let broken = dir.path().join("broken.hip");
        std::fs::write(&broken, "#include \"common.h\"\nextern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }\n")
            .unwrap();
        let s = KernelSource {
            path: broken,
            display_path: "kernels/broken.hip".into(),
            kernels: vec!["broken".into()],
            include_dirs: vec![root().join("kernels")],
        };
        let text = backend.load_module(&s).err().unwrap().to_string();
        assert!(
            text.contains("kernels/broken.hip") && text.contains("undefined_name") && text.contains("HIPRTC_ERROR_COMPILATION"),
            "{text}"
        );

        // rocBLAS without the workspace calls: the first BF16 projection is refused by name
        let request = GemmBf16 {
            m: 1,
            rows: 1,
            n: 1,
            k: 1,
            x: buffer.device_address(),
            w: buffer.device_address(),
            y: buffer.device_address(),
            y_dtype: DType::F32,
        };
        let error = backend.gemm_bf16(&request).unwrap_err();
        let text = error.to_string();
        assert!(matches!(&error, EngineError::MissingSymbol { symbol, .. } if symbol == "rocblas_set_workspace"), "{text}");
        assert!(text.contains("librocblas-lean.so") && text.contains("rocblas_set_workspace"), "{text}");
        // the product calls did resolve: the library opened and a handle was made
        let lean = Fake::open(&blas_lean);
        assert_eq!(lean.i32("fake_atomics_mode"), 0, "atomics mode set to not_allowed");
        assert_eq!(lean.i32("fake_live_handles"), 0, "the refused handle was destroyed");
        // refused again, by name, on the next call
        assert!(backend.gemm_bf16(&request).unwrap_err().to_string().contains("rocblas_set_workspace"));
    }
    assert_eq!(fake.i32("fake_live"), 0, "every allocation, module and stream was given back");
    assert_eq!(fake.i32("fake_live_pinned"), 0, "the stages were freed with their backend");

    // with the workspace calls the projection runs (the fake computes it in host memory)
    {
        let backend = HipBackend::probe(options(&hip, Some(&blas_full))).unwrap();
        let (m, n, k) = (3usize, 2usize, 5usize);
        let x: Vec<f32> = (0..m * k).map(|i| i as f32 * 0.5 - 2.0).collect();
        let w: Vec<f32> = (0..n * k).map(|i| 1.0 - i as f32 * 0.25).collect();
        let bf16 = |v: &[f32]| v.iter().flat_map(|f| ((f.to_bits() >> 16) as u16).to_le_bytes()).collect::<Vec<u8>>();
        let mut xb = backend.allocate(m * k * 2).unwrap();
        let mut wb = backend.allocate(n * k * 2).unwrap();
        let yb = backend.allocate(m * n * 4).unwrap();
        xb.write(0, &bf16(&x)).unwrap();
        wb.write(0, &bf16(&w)).unwrap();
        let request =
            GemmBf16 { m, rows: m, n, k, x: xb.device_address(), w: wb.device_address(), y: yb.device_address(), y_dtype: DType::F32 };
        backend.gemm_bf16(&request).unwrap();
        let mut out = vec![0u8; m * n * 4];
        yb.read(0, &mut out).unwrap();
        let y: Vec<f32> = out.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
        for r in 0..m {
            for c in 0..n {
                let expected: f32 = (0..k).map(|i| x[r * k + i] * w[c * k + i]).sum();
                assert_eq!(y[r * n + c], expected, "y[{r}, {c}]");
            }
        }
        let full = Fake::open(&blas_full);
        assert_eq!(full.usize("fake_workspace_size"), BLAS_WORKSPACE_BYTES);
        assert_eq!(full.i32("fake_atomics_mode"), 0);
    }
    assert_eq!(fake.i32("fake_live"), 0);

    // code objects are cached on disk: once hiprtc can no longer compile (the fake has no code
    // object to return), a backend with the cache still loads the module, one without it
    // fails, and a damaged cached code object is never used (its rebuild then fails too)
    {
        let cache = dir.path().join("kernel-cache");
        let cached = HipOptions { cache_dir: Some(cache.clone()), ..options(&hip, None) };
        let s = source("kernels/tf_embed_dense.hip", &["tf_embed_dense"]);
        HipBackend::probe(cached.clone()).unwrap().load_module(&s).unwrap();
        unsafe { std::env::remove_var("FAKE_HIPRTC_CODE_OBJECT") };
        let uncached = HipBackend::probe(options(&hip, None)).unwrap().load_module(&s).err().expect("hiprtc cannot compile now");
        assert!(uncached.to_string().contains("HIPRTC_ERROR_INTERNAL_ERROR"), "{uncached}");
        HipBackend::probe(cached.clone()).unwrap().load_module(&s).unwrap();
        let hsaco: Vec<PathBuf> = std::fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "hsaco"))
            .collect();
        assert_eq!(hsaco.len(), 1, "{hsaco:?}");
        let whole = std::fs::read(&hsaco[0]).unwrap();
        for (damage, bytes) in crate::backend::cache::test_repo::damages(&whole) {
            crate::backend::cache::test_repo::replace(&hsaco[0], &bytes);
            let error = HipBackend::probe(cached.clone()).unwrap().load_module(&s).err();
            assert!(
                error.is_some_and(|e| e.to_string().contains("HIPRTC_ERROR_INTERNAL_ERROR")),
                "{damage}: the damaged code object was used"
            );
            crate::backend::cache::test_repo::replace(&hsaco[0], &whole);
        }
        unsafe { std::env::set_var("FAKE_HIPRTC_CODE_OBJECT", &code_object) };
    }
    assert_eq!(fake.i32("fake_live"), 0);
}

#[test]
#[ignore = "needs an AMD GPU (gfx1201) with ROCm 6.3+: run on a gfx1201 runner with `cargo test -- --ignored`"]
fn gpu_hiprtc_code_objects_load_and_hipfuncgetattribute_agrees_with_the_note() {
    let backend = HipBackend::probe(HipOptions::for_root(&root())).unwrap();
    eprintln!("{}", backend.toolchain());
    let s = source("kernels/tf_embed_dense.hip", &["tf_embed_dense"]);
    let module = backend.load_module(&s).unwrap();
    let usage = module.resource_usage("tf_embed_dense").unwrap().unwrap();
    eprintln!("{usage:?}");
    assert!(usage.figures["vgprs"] > 0);
}
