//! The host build cache on temporary repositories: an edited header wherever it lies (a
//! subfolder of the include folder, outside the repository) is a rebuild with the new
//! behaviour; a truncated, altered or swapped library is rebuilt, never loaded; concurrent
//! builds of one source all get a whole library.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Built, HostBackend, HostOptions};
use crate::DType;
use crate::backend::{Backend, KernelArg, KernelSource, LaunchDims, Schedule};
use crate::tensor::Tensor;

/// A repository of its own: `repo/kernels/<name>.hip`, its cache in `repo/target/kernel-cache`.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Repo {
        let repo = Repo { dir: tempfile::tempdir().unwrap() };
        fs::create_dir_all(repo.root().join("kernels")).unwrap();
        repo
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    /// Writes a file under the temporary folder (`repo/...` or beside the repository), then
    /// lets the clock move on: a file changed at the tick a build begins leaves that build
    /// unrecorded, as an edit during the build would.
    fn write(&self, path: &str, text: &str) {
        let path = self.dir.path().join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }

    /// `kernels/<name>.hip` with one kernel, `value_of`, writing `value()` to every element.
    fn kernel(&self, name: &str, include: &str) -> KernelSource {
        let display_path = format!("kernels/{name}.hip");
        let text = format!("#include \"{include}\"\nextern \"C\" __global__ void value_of(float* y) {{ y[threadIdx.x] = value(); }}\n");
        self.write(&format!("repo/{display_path}"), &text);
        KernelSource {
            path: self.root().join(&display_path),
            display_path,
            kernels: vec!["value_of".into()],
            include_dirs: vec![self.root().join("kernels")],
        }
    }

    fn backend(&self) -> HostBackend {
        HostBackend::new(HostOptions {
            prelude: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("kernels/host/prelude.h"),
            cache_dir: self.root().join("target/kernel-cache"),
            workers: 1,
            warp_size: 32,
        })
        .unwrap()
    }

    fn build(&self, source: &KernelSource) -> Built {
        let backend = self.backend();
        let options = &backend.options;
        backend.compiler().build(source, &options.prelude, &options.cache_dir, options.warp_size).unwrap_or_else(|e| panic!("{e}"))
    }

    fn cached_libraries(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = fs::read_dir(self.root().join("target/kernel-cache"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "so"))
            .collect();
        found.sort();
        found
    }
}

/// What the kernel writes, loaded and launched through a fresh backend (so through the cache).
fn value(repo: &Repo, source: &KernelSource) -> f32 {
    let backend = repo.backend();
    let module = backend.load_module(source).unwrap_or_else(|e| panic!("{e}"));
    let out = Tensor::allocate(&backend, DType::F32, &[32]).unwrap();
    let dims = LaunchDims { grid: [1, 1, 1], block: [32, 1, 1], dynamic_shared: 0 };
    module.launch("value_of", dims, Schedule::default(), &[KernelArg::Pointer(out.device_address())]).unwrap();
    let bytes = out.read().unwrap();
    f32::from_le_bytes(bytes[..4].try_into().unwrap())
}

fn header(value: f32) -> String {
    format!("static __device__ float value() {{ return {value:?}f; }}\n")
}

/// Builds, checks a second build is a hit on the same library, edits the header at `header`
/// and checks the rebuild has the new value; then the old header text is a hit again.
fn an_edited_header_is_rebuilt(repo: &Repo, source: &KernelSource, header_path: &str) {
    let first = repo.build(source);
    assert!(!first.cached);
    assert_eq!(value(repo, source), 1.0);
    let again = repo.build(source);
    assert!(again.cached, "nothing changed");
    assert_eq!(again.library, first.library);

    repo.write(header_path, &header(2.0));
    let edited = repo.build(source);
    assert!(!edited.cached, "the header changed");
    assert_ne!(edited.library, first.library);
    assert_eq!(value(repo, source), 2.0, "the edited header's behaviour, not the stale library's");

    repo.write(header_path, &header(1.0));
    let back = repo.build(source);
    assert!(back.cached, "the first header's library is still recorded");
    assert_eq!(back.library, first.library);
}

#[test]
fn an_edited_header_in_a_subfolder_of_the_include_folder_is_rebuilt() {
    let repo = Repo::new();
    repo.write("repo/kernels/deep/er/value.h", &header(1.0));
    let source = repo.kernel("sub", "deep/er/value.h");
    an_edited_header_is_rebuilt(&repo, &source, "repo/kernels/deep/er/value.h");
}

#[test]
fn an_edited_header_outside_the_repository_included_by_relative_path_is_rebuilt() {
    let repo = Repo::new();
    repo.write("elsewhere/value.h", &header(1.0));
    let source = repo.kernel("outside", "../../elsewhere/value.h");
    an_edited_header_is_rebuilt(&repo, &source, "elsewhere/value.h");
}

/// Puts `bytes` at `path` as a new file. A library this process loaded stays mapped from
/// its old file, which an in-place write would change under it; none of these has been
/// loaded, but the damage is done the way that is safe either way.
fn replace(path: &Path, bytes: &[u8]) {
    let staged = path.with_extension("damaged");
    fs::write(&staged, bytes).unwrap();
    fs::rename(&staged, path).unwrap();
}

#[test]
fn a_truncated_altered_or_swapped_library_is_rebuilt_not_loaded() {
    let repo = Repo::new();
    repo.write("repo/kernels/one.h", &header(1.0));
    repo.write("repo/kernels/two.h", &header(2.0));
    let one = repo.kernel("one", "one.h");
    let two = repo.kernel("two", "two.h");
    let library = repo.build(&one).library;
    let whole = fs::read(&library).unwrap();

    let mut flipped = whole.clone();
    flipped[whole.len() / 2] ^= 0x20;
    for (damage, bytes) in [("truncated", &whole[..whole.len() / 2]), ("one byte flipped", &flipped[..]), ("empty", &[][..])] {
        replace(&library, bytes);
        let rebuilt = repo.build(&one);
        assert!(!rebuilt.cached, "{damage}: rebuilt");
        assert_eq!(rebuilt.library, library);
        assert_eq!(fs::read(&library).unwrap().len(), whole.len(), "{damage}: a whole library again");
        assert!(repo.build(&one).cached, "{damage}: the rebuilt library is recorded");
    }

    let other = repo.build(&two).library;
    let (bytes_one, bytes_two) = (fs::read(&library).unwrap(), fs::read(&other).unwrap());
    replace(&library, &bytes_two);
    replace(&other, &bytes_one);
    assert!(!repo.build(&one).cached && !repo.build(&two).cached, "swapped libraries are rebuilt");
    // the first loads of these libraries in this process: each is its own kernel's
    assert_eq!((value(&repo, &one), value(&repo, &two)), (1.0, 2.0));
    let mut both = vec![library, other];
    both.sort();
    assert_eq!(repo.cached_libraries(), both);
}

#[test]
fn concurrent_builds_of_one_source_each_get_a_whole_library() {
    let repo = Repo::new();
    repo.write("repo/kernels/value.h", &header(3.0));
    let source = repo.kernel("shared", "value.h");
    let built: Vec<Built> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4).map(|_| scope.spawn(|| repo.build(&source))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let whole = fs::read(&built[0].library).unwrap();
    for b in &built {
        assert_eq!(fs::read(&b.library).unwrap(), whole, "every build sees the same whole library");
    }
    assert_eq!(value(&repo, &source), 3.0);
    assert!(repo.build(&source).cached);
    let leftovers: Vec<String> = fs::read_dir(repo.root().join("target/kernel-cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "no build folder or temporary file is left: {leftovers:?}");
}
