//! The static AMDGPU build: a kernel source compiled to a code object by an upstream clang
//! with the AMDGPU target (Debian's clang-22), with no ROCm install and no GPU, so CI can
//! read gfx1201 resource usage from the code object's metadata note (`super::metadata`).
//!
//! The HIP dialect comes from a header-free prelude (`kernels/hip/prelude.h`) force-included
//! ahead of the source. Code objects are cached by what clang read (`crate::backend::cache`):
//! compiler identity, flags, target, prelude and source in the key, every header it read in
//! the manifest. Identical inputs give byte-identical code objects (fixed `-cuid`).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::metadata::{self, CodeObjectMetadata, MetadataError, ResourceUsage};
use crate::EngineError;
use crate::backend::cache::{self, BuildDir, CacheKey, KernelCache, Reads, Staged};
use crate::backend::{KernelSource, symbols};

/// Tried in this order when `KERNEL_CONTRACTS_CLANG` is not set.
pub const DEFAULT_CLANGS: &[&str] = &["clang++-22", "clang-22", "clang++-19"];

/// A fixed compilation-unit id: without it clang names a `__hip_cuid_<random>` symbol and
/// two builds of the same source differ.
pub const CUID: &str = "kernel-contracts";

/// The flags of every static build, before `--offload-arch`: device-only HIP, no ROCm
/// headers or device libraries, code object v5 (ROCm 6.x's default; clang-22 would write
/// v6, which needs ROCm 6.3+), no FP contraction (bit-exact checks across backends).
pub const FLAGS: &[&str] = &[
    "-x",
    "hip",
    "--cuda-device-only",
    "--no-gpu-bundle-output",
    "-nogpulib",
    "-nogpuinc",
    "-O3",
    "-mcode-object-version=5",
    "-ffp-contract=off",
    "-std=c++20",
];

/// A clang that can compile HIP for AMDGPU targets.
#[derive(Clone, Debug)]
pub struct HipClang {
    pub program: String,
    /// First line of `--version` (`Debian clang version 22.1.8 (1~deb12u1)`): part of every
    /// cache key, and the compiler a recorded figure names.
    pub identity: String,
}

/// A built code object with its decoded metadata.
#[derive(Clone, Debug)]
pub struct CodeObject {
    /// Where it lies in the cache.
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    /// The compiler's identity (first line of `--version`).
    pub compiler: String,
    /// The offload arch it was built for (`gfx1201`).
    pub arch: String,
    pub metadata: CodeObjectMetadata,
    /// True when it came from the cache rather than from a compile.
    pub cached: bool,
    /// Each kernel of the source as the code object names it: an `extern "C"` name as it
    /// is, a C++ name (a template instantiation) mangled.
    pub names: BTreeMap<String, String>,
    /// clang's diagnostics (warnings) of a fresh compile; empty for a cached one.
    pub log: String,
}

impl CodeObject {
    /// Resource usage of one kernel of this code object.
    pub fn resource_usage(&self, kernel: &str) -> Result<ResourceUsage, MetadataError> {
        let name = self.names.get(kernel).map_or(kernel, String::as_str);
        let found = self.metadata.kernel(name).ok_or_else(|| MetadataError::NoKernel {
            file: self.path.display().to_string(),
            kernel: kernel.to_string(),
            available: self.metadata.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", "),
        })?;
        Ok(ResourceUsage::from_kernel(found, self.metadata.arch()))
    }
}

impl HipClang {
    /// `KERNEL_CONTRACTS_CLANG` if set, else the first of [`DEFAULT_CLANGS`] that runs.
    pub fn discover() -> Result<HipClang, EngineError> {
        let candidates: Vec<String> = match std::env::var("KERNEL_CONTRACTS_CLANG") {
            Ok(p) if !p.is_empty() => vec![p],
            _ => DEFAULT_CLANGS.iter().map(|s| s.to_string()).collect(),
        };
        candidates
            .iter()
            .find_map(|program| HipClang::with_program(program).ok())
            .ok_or_else(|| EngineError::NoDeviceCompiler { target: "amdgcn (HIP)".into(), tried: candidates.join(", ") })
    }

    /// This program, if `--version` runs and names clang.
    pub fn with_program(program: &str) -> Result<HipClang, EngineError> {
        let not_clang =
            |reason: String| EngineError::NoDeviceCompiler { target: "amdgcn (HIP)".into(), tried: format!("{program} ({reason})") };
        let out = Command::new(program).arg("--version").output().map_err(|e| not_clang(e.to_string()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !text.contains("clang") {
            return Err(not_clang("`--version` does not name clang".into()));
        }
        let identity = text.lines().next().unwrap_or("").trim().to_string();
        Ok(HipClang { program: program.to_string(), identity })
    }

    /// Every flag of a build for `arch`, in order (without includes, prelude and paths).
    pub fn flags(arch: &str) -> Vec<String> {
        let mut flags: Vec<String> = FLAGS.iter().map(|s| s.to_string()).collect();
        flags.push(format!("--offload-arch={arch}"));
        flags.push(format!("-cuid={CUID}"));
        flags
    }

    /// The cached code object of `source` for `arch`, built if missing. Every kernel the
    /// source lists must be in it (an error names the missing one).
    pub fn build(&self, source: &KernelSource, arch: &str, prelude: &Path, cache_dir: &Path) -> Result<CodeObject, EngineError> {
        if arch.is_empty() || !arch.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(EngineError::Compile {
                path: source.display_path.clone(),
                compiler: self.identity.clone(),
                log: format!("`{arch}` is not an offload arch (expected a processor name like gfx1201)"),
            });
        }
        let read = |path: &Path| fs::read(path).map_err(|e| EngineError::ReadSource { path: path.to_path_buf(), source: e });
        let flags = HipClang::flags(arch);
        let joined = flags.join(" ");
        let parts = ["gfx static build", self.program.as_str(), &self.identity, &joined];
        let key = |source_bytes: &[u8]| -> Result<CacheKey, EngineError> {
            Ok(CacheKey::new(source, source_bytes, &read(prelude)?, &parts, arch))
        };
        let cache = KernelCache::new(cache_dir);
        if let Some(mut found) = cache.lookup(&key(&read(&source.path)?)?, 1) {
            let found = found.remove(0);
            // an entry whose bytes hash as recorded but do not decode is rebuilt too
            if let Ok(metadata) = metadata::read_metadata(&found.bytes, &found.path.display().to_string()) {
                let object = CodeObject {
                    path: found.path,
                    bytes: found.bytes,
                    compiler: self.identity.clone(),
                    arch: arch.to_string(),
                    metadata,
                    cached: true,
                    log: String::new(),
                    names: BTreeMap::new(),
                };
                return check_kernels(source, object);
            }
        }

        let work = BuildDir::new(cache_dir, &format!("gfx-{arch}"))?;
        // clang reads the source after this: a change from here on leaves the build unrecorded
        let key = key(&read(&source.path)?)?;
        let staged = work.path().join("kernel.co");
        let depfile = work.path().join("kernel.d");
        let input = instantiations(source, work.path())?;
        let log = self.compile(source, input.as_deref().unwrap_or(&source.path), &flags, prelude, &staged, &depfile)?;
        let bytes = fs::read(&staged).map_err(|e| EngineError::Cache { path: staged.clone(), source: e })?;
        let metadata = metadata::read_metadata(&bytes, &source.display_path)?;
        let text = fs::read_to_string(&depfile).map_err(|e| EngineError::Cache { path: depfile.clone(), source: e })?;
        // the generated file that instantiates templates comes from the source and its kernels (in the key)
        let files = cache::depfile_paths(&text).into_iter().map(PathBuf::from).filter(|f| !f.starts_with(work.path())).collect();
        let reads = Reads { files, absent: Vec::new() };
        let system = cache::system_include_dirs(&self.program, &flags);
        let recorded = cache::record(&key, &reads, &cache::user_dirs(source), &system, &work);
        let path = cache.store(&key, recorded, vec![("co", Staged::File(staged))])?.remove(0).path;
        let object = CodeObject {
            path,
            bytes,
            compiler: self.identity.clone(),
            arch: arch.to_string(),
            metadata,
            cached: false,
            log,
            names: BTreeMap::new(),
        };
        check_kernels(source, object)
    }

    /// Runs clang: the code object to `output`, every file it read to `depfile` (in device-only
    /// mode the driver ignores `-MD`, so the front end is asked directly). Returns its warnings.
    fn compile(
        &self,
        source: &KernelSource,
        input: &Path,
        flags: &[String],
        prelude: &Path,
        output: &Path,
        depfile: &Path,
    ) -> Result<String, EngineError> {
        let mut command = Command::new(&self.program);
        command.args(flags);
        for dir in &source.include_dirs {
            command.arg("-I").arg(dir);
        }
        command.arg("-include").arg(prelude).arg(input).arg("-o").arg(output);
        command.args(["-Xclang", "-dependency-file", "-Xclang"]).arg(depfile);
        command.args(["-Xclang", "-MT", "-Xclang", cache::DEPFILE_TARGET, "-Xclang", "-sys-header-deps"]);
        let out = command.output().map_err(|e| EngineError::Tool {
            tool: self.program.clone(),
            path: source.display_path.clone(),
            reason: e.to_string(),
        })?;
        let mut log = String::from_utf8_lossy(&out.stderr).into_owned();
        log.push_str(&String::from_utf8_lossy(&out.stdout));
        let log = log.trim_end().to_string();
        if !out.status.success() {
            return Err(EngineError::Compile {
                path: source.display_path.clone(),
                compiler: format!("{} ({})", self.identity, self.program),
                log,
            });
        }
        Ok(log)
    }
}

/// Every kernel the source lists found in the code object, each with the name it has there.
fn check_kernels(source: &KernelSource, mut object: CodeObject) -> Result<CodeObject, EngineError> {
    let templated = source.kernels.iter().any(|k| !symbols::is_plain(k));
    let demangled = if templated { demangle(object.metadata.kernels.iter().map(|k| k.name.as_str()))? } else { Vec::new() };
    for kernel in &source.kernels {
        let name = if symbols::is_plain(kernel) {
            object.metadata.kernel(kernel).map(|k| k.name.clone())
        } else {
            demangled.iter().find(|(_, d)| symbols::demangled_is(d, kernel)).map(|(mangled, _)| mangled.clone())
        };
        let Some(name) = name else {
            let available: Vec<String> = if templated {
                demangled.iter().map(|(m, d)| if m == d { m.clone() } else { format!("{d} ({m})") }).collect()
            } else {
                object.metadata.kernels.iter().map(|k| k.name.clone()).collect()
            };
            return Err(MetadataError::NoKernel {
                file: source.display_path.clone(),
                kernel: kernel.clone(),
                available: available.join(", "),
            }
            .into());
        };
        object.names.insert(kernel.clone(), name);
    }
    Ok(object)
}

/// For a source whose kernels include C++ names (template instantiations), the file that is
/// compiled in its place: the source included, then each such kernel's address taken at
/// namespace scope, which instantiates it on the device side. None when every kernel is an
/// `extern "C"` name (the source is compiled as it is).
fn instantiations(source: &KernelSource, work: &Path) -> Result<Option<PathBuf>, EngineError> {
    let templated: Vec<&String> = source.kernels.iter().filter(|k| !symbols::is_plain(k)).collect();
    if templated.is_empty() {
        return Ok(None);
    }
    let path = source.path.to_str().map(crate::backend::c_string_body).unwrap_or_default();
    let mut text = format!("#include \"{path}\"\n");
    for (i, kernel) in templated.iter().enumerate() {
        text.push_str(&format!("namespace {{ [[maybe_unused]] void* const kernel_contracts_instantiate_{i} = (void*)&{kernel}; }}\n"));
    }
    let wrapper = work.join("instantiate.hip");
    fs::write(&wrapper, text).map_err(|e| EngineError::Cache { path: wrapper.clone(), source: e })?;
    Ok(Some(wrapper))
}

/// Demanglers tried in order: LLVM's beside clang-22, then binutils'.
const DEMANGLERS: &[&str] = &["llvm-cxxfilt-22", "llvm-cxxfilt", "c++filt"];

/// Each name with its demangled form (an unmangled name as it is), by the first demangler
/// that runs.
fn demangle<'a>(names: impl Iterator<Item = &'a str>) -> Result<Vec<(String, String)>, EngineError> {
    let names: Vec<&str> = names.collect();
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    for program in DEMANGLERS {
        let Ok(mut child) = Command::new(program).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn() else {
            continue;
        };
        let written = child.stdin.take().map(|mut stdin| stdin.write_all(input.as_bytes()));
        let Ok(out) = child.wait_with_output() else { continue };
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        if matches!(written, Some(Ok(()))) && out.status.success() && lines.len() == names.len() {
            return Ok(names.iter().zip(lines).map(|(n, d)| (n.to_string(), d.to_string())).collect());
        }
    }
    Err(EngineError::NoDeviceCompiler {
        target: "demangling the code object's kernel names (a C++ kernel name needs one)".into(),
        tried: DEMANGLERS.join(", "),
    })
}

/// The `extern "C" __global__` kernels a source defines, in order: what the engine can
/// launch by name. Comments are skipped; `__launch_bounds__(..)` and `__attribute__((..))`
/// may stand anywhere in the declaration. (The block form `extern "C" { ... }` is not read.)
pub fn extern_c_kernels(text: &str) -> Vec<String> {
    let code = strip_comments(text);
    let mut kernels = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("extern \"C\"") {
        rest = &rest[at + "extern \"C\"".len()..];
        let end = rest.find(['{', ';']).unwrap_or(rest.len());
        let head = strip_attribute_groups(&rest[..end]);
        if !head.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "__global__") {
            continue;
        }
        if let Some(paren) = head.find('(') {
            let before = head[..paren].trim_end();
            let name: String =
                before.chars().rev().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<Vec<_>>().into_iter().rev().collect();
            if !name.is_empty() && !kernels.contains(&name) {
                kernels.push(name);
            }
        }
    }
    kernels
}

/// Removes `//` and `/* */` comments (string literals are kept as they are).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Drops `__launch_bounds__(...)`, `__attribute__((...))` and `__declspec(...)` groups.
fn strip_attribute_groups(head: &str) -> String {
    let mut out = head.to_string();
    for word in ["__launch_bounds__", "__attribute__", "__declspec"] {
        while let Some(at) = out.find(word) {
            let after = at + word.len();
            let open = match out[after..].find(|c: char| !c.is_whitespace()) {
                Some(i) if out[after + i..].starts_with('(') => after + i,
                _ => {
                    out.replace_range(at..after, " ");
                    continue;
                }
            };
            let mut depth = 0usize;
            let mut close = out.len();
            for (i, c) in out[open..].char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = open + i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.replace_range(at..close, " ");
        }
    }
    out
}
