//! C++ reference functions (a contract's `[reference] reference = "ref/x.cpp:name"`): a plain
//! C++ function of the contract's author, built by the host compiler into a shared library
//! (cached as kernels are) and called on every case with each tensor as f64 values. Three
//! layers: the generated trampoline's C type, a call that checks every length, and the
//! harness's oracle over it. The function runs in the record's process, as a kernel does.

use std::ffi::c_int;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::compile::{HostCompiler, files_read};
use crate::EngineError;
use crate::backend::KernelSource;
use crate::backend::cache::{self, BuildDir, CacheKey, KernelCache, Reads, Staged};

/// Flags of a reference build: optimized, no contraction into FMA (the author's arithmetic
/// as written, in double precision), hidden symbols but the trampoline's.
const FLAGS: &[&str] = &["-std=c++20", "-O2", "-fPIC", "-ffp-contract=off", "-fvisibility=hidden"];

/// The one symbol every reference library exports: it unpacks the arrays into the author's
/// parameters (see [`ReferenceSignature::trampoline`]).
const TRAMPOLINE: &str = "kernel_contracts_reference";

/// Part of every cache key: change it when the generated wrapper changes.
const WRAPPER_VERSION: &str = "reference-wrapper-1";

/// What a reference function takes, in order: each tensor of the op (`const double*` for an
/// input, `double*` for an output), then each shape symbol as `long long`, then each
/// parameter as `double`. It returns `int`: 0, or a code of its own for inputs it refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceSignature {
    /// Name, and whether it is an output.
    pub tensors: Vec<(String, bool)>,
    pub symbols: Vec<String>,
    pub params: Vec<String>,
}

impl ReferenceSignature {
    /// The C declaration the function must match: `extern "C" int name(const double* x, double*
    /// y, long long n, double eps)`.
    pub fn declaration(&self, function: &str) -> String {
        let tensors = self.tensors.iter().map(|(t, out)| format!("{}double* {t}", if *out { "" } else { "const " }));
        let symbols = self.symbols.iter().map(|s| format!("long long {s}"));
        let params = self.params.iter().map(|p| format!("double {p}"));
        let all: Vec<String> = tensors.chain(symbols).chain(params).collect();
        format!("extern \"C\" int {function}({})", all.join(", "))
    }

    /// The exported function that calls the author's with its arrays unpacked.
    fn trampoline(&self, function: &str) -> String {
        let tensors = self.tensors.iter().enumerate().map(|(i, _)| format!("tensors[{i}]"));
        let symbols = (0..self.symbols.len()).map(|i| format!("symbols[{i}]"));
        let params = (0..self.params.len()).map(|i| format!("params[{i}]"));
        let args: Vec<String> = tensors.chain(symbols).chain(params).collect();
        format!(
            "extern \"C\" __attribute__((visibility(\"default\"))) int {TRAMPOLINE}(double* const* tensors, const long long* symbols, \
             const double* params) {{\n  (void)tensors; (void)symbols; (void)params;\n  return {function}({});\n}}\n",
            args.join(", ")
        )
    }
}

/// A reference function to build: its source file, its name, what it takes, and the folders
/// its includes are found in.
#[derive(Clone, Debug)]
pub struct ReferenceSource {
    pub path: PathBuf,
    /// As reports show it (`ref/embed.cpp`).
    pub display_path: String,
    pub function: String,
    pub signature: ReferenceSignature,
    pub include_dirs: Vec<PathBuf>,
}

impl ReferenceSource {
    /// The file compiled: the source, then the declaration (a definition of another signature
    /// or without `extern "C"` is a compile error naming both), then the trampoline.
    fn wrapper(&self) -> String {
        let path = self.path.to_str().map(crate::backend::c_string_body).unwrap_or_default();
        let declaration = self.signature.declaration(&self.function);
        format!(
            "#include \"{path}\"\n// the signature the contract gives it\n{declaration};\n{}",
            self.signature.trampoline(&self.function)
        )
    }

    /// The source as the kernel cache keys it.
    fn as_kernel_source(&self) -> KernelSource {
        KernelSource {
            path: self.path.clone(),
            display_path: self.display_path.clone(),
            kernels: vec![self.function.clone()],
            include_dirs: self.include_dirs.clone(),
        }
    }
}

impl HostCompiler {
    /// The shared library of a reference function: from the cache when every file the last
    /// build read still hashes as recorded, else built and recorded.
    pub fn build_reference(&self, source: &ReferenceSource, cache_dir: &Path) -> Result<PathBuf, EngineError> {
        let wrapper = source.wrapper();
        let joined = FLAGS.join(" ");
        let parts = [self.program.as_str(), self.identity.as_str(), joined.as_str(), WRAPPER_VERSION];
        let keyed = source.as_kernel_source();
        let read = |path: &Path| fs::read(path).map_err(|e| EngineError::ReadSource { path: path.to_path_buf(), source: e });
        let key = |bytes: &[u8]| CacheKey::new(&keyed, bytes, wrapper.as_bytes(), &parts, "reference");
        let cache = KernelCache::new(cache_dir);
        if let Some(found) = cache.lookup(&key(&read(&source.path)?), 1) {
            return Ok(found[0].path.clone());
        }
        let work = BuildDir::new(cache_dir, "reference")?;
        let key = key(&read(&source.path)?);
        let file = work.path().join("reference.cpp");
        fs::write(&file, &wrapper).map_err(|e| EngineError::Cache { path: file.clone(), source: e })?;
        let library = work.path().join("reference.so");
        let mut command = Command::new(&self.program);
        command.args(FLAGS).current_dir(work.path());
        for dir in &source.include_dirs {
            command.arg("-I").arg(dir);
        }
        command.args(["-MD", "-MF", "reference.d", "-MT", cache::DEPFILE_TARGET, "-shared", "-o"]).arg(&library).arg("reference.cpp");
        let shown = format!("{} (reference function `{}`)", source.display_path, source.function);
        self.run(command, &shown, "reference build").map_err(|e| match e {
            EngineError::Compile { path, compiler, log } => EngineError::Compile {
                path,
                compiler,
                log: format!("{log}\n(the contract's signature for it: {})", source.signature.declaration(&source.function)),
            },
            other => other,
        })?;
        let depfile = work.path().join("reference.d");
        let text = fs::read_to_string(&depfile).map_err(|e| EngineError::Cache { path: depfile.clone(), source: e })?;
        let reads = Reads { files: files_read(&cache::depfile_paths(&text), work.path()), absent: Vec::new() };
        let system = cache::system_include_dirs(&self.program, &["-x".into(), "c++".into()]);
        let recorded = cache::record(&key, &reads, &cache::user_dirs(&keyed), &system, &work);
        Ok(cache.store(&key, recorded, vec![("so", Staged::File(library))])?.remove(0).path)
    }
}

/// Layer (a): the trampoline's C type.
type Trampoline = unsafe extern "C" fn(tensors: *const *mut f64, symbols: *const i64, params: *const f64) -> c_int;

/// A built reference function, loaded (its library stays loaded for the process's life, as a
/// kernel's does).
pub struct ReferenceLibrary {
    trampoline: Trampoline,
    signature: ReferenceSignature,
    shown: String,
}

impl ReferenceLibrary {
    /// Opens the library `build_reference` made for `source`.
    pub fn open(library: &Path, source: &ReferenceSource) -> Result<ReferenceLibrary, EngineError> {
        let shown = library.display().to_string();
        let opened = unsafe {
            libloading::os::unix::Library::open(Some(library), libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL)
        }
        .map_err(|e| EngineError::LoadLibrary { library: shown.clone(), reason: e.to_string() })?;
        let opened: &'static libloading::Library = Box::leak(Box::new(libloading::Library::from(opened)));
        let trampoline: Trampoline = unsafe {
            *opened.get::<Trampoline>(TRAMPOLINE.as_bytes()).map_err(|_| EngineError::MissingSymbol {
                library: shown.clone(),
                symbol: TRAMPOLINE.into(),
                hint: " (not a reference library of this engine)".into(),
            })?
        };
        let shown = format!("{}:{}", source.display_path, source.function);
        Ok(ReferenceLibrary { trampoline, signature: source.signature.clone(), shown })
    }

    /// Layer (b): calls the function on `tensors` (in the signature's order, each as long as
    /// the op's tensor), `symbols` and `params`. Outputs are written in place.
    pub fn call(&self, tensors: &mut [Vec<f64>], symbols: &[i64], params: &[f64]) -> Result<(), String> {
        let s = &self.signature;
        if tensors.len() != s.tensors.len() || symbols.len() != s.symbols.len() || params.len() != s.params.len() {
            return Err(format!(
                "{} takes {} tensors, {} shape symbols and {} parameters; given {}, {} and {}",
                self.shown,
                s.tensors.len(),
                s.symbols.len(),
                s.params.len(),
                tensors.len(),
                symbols.len(),
                params.len()
            ));
        }
        let pointers: Vec<*mut f64> = tensors.iter_mut().map(|t| t.as_mut_ptr()).collect();
        // SAFETY: the trampoline passes each pointer to the author's function as the parameter
        // the contract declares; each array is as long as its tensor, which the function reads
        // as the shape symbols say
        let code = unsafe { (self.trampoline)(pointers.as_ptr(), symbols.as_ptr(), params.as_ptr()) };
        if code == 0 { Ok(()) } else { Err(format!("{} returned {code}", self.shown)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature() -> ReferenceSignature {
        ReferenceSignature {
            tensors: vec![("x".into(), false), ("y".into(), true)],
            symbols: vec!["rows".into(), "k".into()],
            params: vec!["scale".into()],
        }
    }

    #[test]
    fn the_declaration_lists_tensors_then_symbols_then_parameters() {
        assert_eq!(
            signature().declaration("scale_ref"),
            "extern \"C\" int scale_ref(const double* x, double* y, long long rows, long long k, double scale)"
        );
    }

    fn compiler_and_source(text: &str) -> Option<(HostCompiler, tempfile::TempDir, ReferenceSource)> {
        let compiler = HostCompiler::discover().ok()?;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scale_ref.cpp");
        fs::write(&path, text).unwrap();
        let source = ReferenceSource {
            path,
            display_path: "ref/scale_ref.cpp".into(),
            function: "scale_ref".into(),
            signature: signature(),
            include_dirs: vec![],
        };
        Some((compiler, dir, source))
    }

    #[test]
    fn a_reference_function_is_built_cached_and_called_in_double_precision() {
        let text = "extern \"C\" int scale_ref(const double* x, double* y, long long rows, long long k, double scale) {\n\
                    if (scale < 0) return 7;\n  for (long long i = 0; i < rows * k; i++) y[i] = x[i] * scale;\n  return 0;\n}\n";
        let Some((compiler, dir, source)) = compiler_and_source(text) else { return };
        let cache = dir.path().join("cache");
        let built = compiler.build_reference(&source, &cache).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(compiler.build_reference(&source, &cache).unwrap(), built, "the second build is the cached one");
        let library = ReferenceLibrary::open(&built, &source).unwrap();
        let mut tensors = vec![vec![1.0, 0.1, -3.0, 1e300], vec![f64::NAN; 4]];
        library.call(&mut tensors, &[2, 2], &[3.0]).unwrap();
        assert_eq!(tensors[1], [3.0, 0.1 * 3.0, -9.0, 3e300]);
        assert_eq!(library.call(&mut tensors, &[2, 2], &[-1.0]).unwrap_err(), "ref/scale_ref.cpp:scale_ref returned 7");
        assert!(library.call(&mut tensors, &[2], &[1.0]).unwrap_err().contains("takes 2 tensors, 2 shape symbols and 1 parameters"));
    }

    #[test]
    fn a_definition_of_another_signature_is_a_compile_error_naming_the_contracts() {
        let text = "extern \"C\" int scale_ref(const float* x, float* y, int rows, int k, float scale) { return 0; }\n";
        let Some((compiler, dir, source)) = compiler_and_source(text) else { return };
        let e = compiler.build_reference(&source, &dir.path().join("cache")).unwrap_err().to_string();
        assert!(e.contains("ref/scale_ref.cpp (reference function `scale_ref`)"), "{e}");
        assert!(e.contains("the contract's signature for it: extern \"C\" int scale_ref(const double* x, double* y"), "{e}");
    }
}
