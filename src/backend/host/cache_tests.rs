//! The host build cache on temporary repositories: an edited header wherever it lies (a
//! subfolder of the include folder, outside the repository) is a rebuild with the new
//! behaviour; a truncated, altered or swapped library is rebuilt, never loaded; concurrent
//! builds of one source all get a whole library.

use std::fs;
use std::path::PathBuf;

use super::{Built, HostBackend, HostCompiler, HostOptions};
use crate::DType;
use crate::backend::cache::test_repo::{TempRepo, damages, replace};
use crate::backend::{Backend, KernelArg, KernelSource, LaunchDims, Schedule};
use crate::tensor::Tensor;

fn backend(repo: &TempRepo) -> HostBackend {
    HostBackend::new(HostOptions {
        prelude: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/host/prelude.h"),
        cache_dir: repo.cache(),
        workers: 1,
        warp_size: 32,
    })
    .unwrap()
}

fn build(repo: &TempRepo, source: &KernelSource) -> Built {
    let backend = backend(repo);
    let options = &backend.options;
    backend.compiler().build(source, &options.prelude, &options.cache_dir, options.warp_size).unwrap_or_else(|e| panic!("{e}"))
}

/// `kernels/<name>.hip` with one kernel, `value_of`, writing `value()` (from `include`) to
/// every element.
fn value_source(repo: &TempRepo, name: &str, include: &str) -> KernelSource {
    let text = format!("#include \"{include}\"\nextern \"C\" __global__ void value_of(float* y) {{ y[threadIdx.x] = value(); }}\n");
    repo.source(name, &text, "value_of")
}

fn header(value: f32) -> String {
    format!("static __device__ float value() {{ return {value:?}f; }}\n")
}

/// What the kernel writes, loaded and launched through a fresh backend (so through the cache).
fn value(repo: &TempRepo, source: &KernelSource) -> f32 {
    let backend = backend(repo);
    let module = backend.load_module(source).unwrap_or_else(|e| panic!("{e}"));
    let out = Tensor::allocate(&backend, DType::F32, &[32]).unwrap();
    let dims = LaunchDims { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared: 0 };
    module.launch("value_of", dims, Schedule::default(), &[KernelArg::Pointer(out.device_address())]).unwrap();
    let bytes = out.read().unwrap();
    f32::from_le_bytes(bytes[..4].try_into().unwrap())
}

/// Builds, checks a second build is a hit on the same library, edits the header at
/// `header_path` and checks the rebuild has the new value; then the old header text is a hit
/// on the first library again.
fn an_edited_header_is_rebuilt(repo: &TempRepo, source: &KernelSource, header_path: &str) {
    let first = build(repo, source);
    assert!(!first.cached);
    assert_eq!(value(repo, source), 1.0);
    let again = build(repo, source);
    assert!(again.cached, "nothing changed");
    assert_eq!(again.library, first.library);

    repo.write(header_path, &header(2.0));
    let edited = build(repo, source);
    assert!(!edited.cached, "the header changed");
    assert_ne!(edited.library, first.library);
    assert_eq!(value(repo, source), 2.0, "the edited header's behaviour, not the stale library's");

    repo.write(header_path, &header(1.0));
    let back = build(repo, source);
    assert!(back.cached, "the first header's library is still recorded");
    assert_eq!(back.library, first.library);
}

#[test]
fn an_edited_header_in_a_subfolder_of_the_include_folder_is_rebuilt() {
    let repo = TempRepo::new();
    repo.write("repo/kernels/deep/er/value.h", &header(1.0));
    let source = value_source(&repo, "sub", "deep/er/value.h");
    an_edited_header_is_rebuilt(&repo, &source, "repo/kernels/deep/er/value.h");
}

#[test]
fn an_edited_header_outside_the_repository_included_by_relative_path_is_rebuilt() {
    let repo = TempRepo::new();
    repo.write("elsewhere/value.h", &header(1.0));
    let source = value_source(&repo, "outside", "../../elsewhere/value.h");
    an_edited_header_is_rebuilt(&repo, &source, "elsewhere/value.h");
}

#[test]
fn a_truncated_altered_or_swapped_library_is_rebuilt_not_loaded() {
    let repo = TempRepo::new();
    repo.write("repo/kernels/one.h", &header(1.0));
    repo.write("repo/kernels/two.h", &header(2.0));
    let one = value_source(&repo, "one", "one.h");
    let two = value_source(&repo, "two", "two.h");
    let library = build(&repo, &one).library;
    let whole = fs::read(&library).unwrap();

    for (damage, bytes) in damages(&whole) {
        replace(&library, &bytes);
        let rebuilt = build(&repo, &one);
        assert!(!rebuilt.cached, "{damage}: rebuilt");
        assert_eq!(rebuilt.library, library);
        assert_eq!(fs::read(&library).unwrap().len(), whole.len(), "{damage}: a whole library again");
        assert!(build(&repo, &one).cached, "{damage}: the rebuilt library is recorded");
    }

    let other = build(&repo, &two).library;
    let (bytes_one, bytes_two) = (fs::read(&library).unwrap(), fs::read(&other).unwrap());
    replace(&library, &bytes_two);
    replace(&other, &bytes_one);
    assert!(!build(&repo, &one).cached && !build(&repo, &two).cached, "swapped libraries are rebuilt");
    // the first loads of these libraries in this process: each is its own kernel's
    assert_eq!((value(&repo, &one), value(&repo, &two)), (1.0, 2.0));
}

#[test]
fn concurrent_builds_of_one_source_each_get_a_whole_library() {
    let repo = TempRepo::new();
    repo.write("repo/kernels/value.h", &header(3.0));
    let source = value_source(&repo, "shared", "value.h");
    let built: Vec<Built> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| build(&repo, &source))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(built.iter().all(|b| b.library == built[0].library), "{built:?}");
    assert_eq!(value(&repo, &source), 3.0, "the library that landed last is whole");
    assert!(build(&repo, &source).cached);
    let leftovers: Vec<String> = fs::read_dir(repo.cache())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "no build folder or temporary file is left: {leftovers:?}");
}

/// The prelude's runtime object in the cache (`host-runtime/<sha256>.o` and its recorded
/// SHA-256 beside it).
fn runtime_objects(repo: &TempRepo) -> Vec<PathBuf> {
    let dir = repo.cache().join("host-runtime");
    let mut found: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "o")).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn the_prelude_runtime_is_built_once_for_every_kernel_and_an_altered_one_is_built_again() {
    let repo = TempRepo::new();
    repo.write("repo/kernels/v.h", &header(1.0));
    let first = value_source(&repo, "first", "v.h");
    let second = value_source(&repo, "second", "v.h");
    assert!(!build(&repo, &first).cached);
    let objects = runtime_objects(&repo);
    assert_eq!(objects.len(), 1, "{objects:?}");
    let made = fs::metadata(&objects[0]).unwrap().modified().unwrap();
    // another kernel links the same object, not a new build of it
    assert!(!build(&repo, &second).cached);
    assert_eq!(runtime_objects(&repo), objects);
    assert_eq!(fs::metadata(&objects[0]).unwrap().modified().unwrap(), made);
    assert_eq!(value(&repo, &second), 1.0);
    // an object whose bytes are not the ones recorded is built again before a kernel links it
    let mut bytes = fs::read(&objects[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&objects[0], &bytes).unwrap();
    repo.write("repo/kernels/v.h", &header(2.0));
    assert!(!build(&repo, &first).cached);
    assert_ne!(fs::read(&objects[0]).unwrap(), bytes, "the altered object was linked as it was");
    assert_eq!(value(&repo, &first), 2.0);
}

/// The precompiled preludes in the cache (`host-pch/<sha256>/prelude.h.gch`).
fn precompiled_preludes(repo: &TempRepo) -> Vec<PathBuf> {
    let dir = repo.cache().join("host-pch");
    let mut found: Vec<PathBuf> = fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path().join("prelude.h.gch")).filter(|p| p.exists()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn the_precompiled_prelude_is_built_once_and_an_altered_one_is_built_again() {
    let repo = TempRepo::new();
    let gcc = HostCompiler::discover().unwrap().is_gcc();
    repo.write("repo/kernels/v.h", &header(1.0));
    let first = value_source(&repo, "first", "v.h");
    let second = value_source(&repo, "second", "v.h");
    assert!(!build(&repo, &first).cached);
    let precompiled = precompiled_preludes(&repo);
    if !gcc {
        assert_eq!(precompiled, Vec::<PathBuf>::new(), "clang builds include the prelude as text");
        return;
    }
    assert_eq!(precompiled.len(), 1, "{precompiled:?}");
    let made = fs::metadata(&precompiled[0]).unwrap().modified().unwrap();
    assert!(!build(&repo, &second).cached);
    assert_eq!(precompiled_preludes(&repo), precompiled);
    assert_eq!(fs::metadata(&precompiled[0]).unwrap().modified().unwrap(), made);
    assert_eq!(value(&repo, &second), 1.0);
    // one whose bytes are not the ones recorded is built again before a kernel includes it
    let mut bytes = fs::read(&precompiled[0]).unwrap();
    bytes[100] ^= 0xff;
    fs::write(&precompiled[0], &bytes).unwrap();
    repo.write("repo/kernels/v.h", &header(2.0));
    assert!(!build(&repo, &first).cached);
    assert_ne!(fs::read(&precompiled[0]).unwrap(), bytes, "the altered precompiled prelude was used as it was");
    assert_eq!(value(&repo, &first), 2.0);
}
