//! Builds a kernel source into a shared library for the host backend: a wrapper that
//! exports one descriptor per kernel, the system C++ compiler with the host prelude
//! force-included, `extern __shared__` symbols pointed at the dynamic shared pool, a
//! shared link. Results are cached by a hash of everything that can change the bits.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol, SymbolKind};

use crate::EngineError;
use crate::backend::KernelSource;

/// Flags that make host results mean what GPU results mean, each for a measured reason:
/// `-fvisibility=hidden` (under -fPIC a global kernel symbol can be interposed, so g++
/// would call it through the PLT once per thread instead of inlining it);
/// `-mtls-dialect=gnu2` (the default TLS dialect calls `__tls_get_addr` on every
/// `__shared__` access, about 4 ns, and GCC does not hoist it; initial-exec would force the
/// whole TLS segment into the static surplus and dlopen fails); `-ffp-contract=off` (g++
/// fuses multiply-adds as soon as FMA is available, which breaks bit-exact checks).
/// `-fsanitize=thread -g1`: every load and store of kernel code calls the prelude's memory
/// checks (no sanitizer runtime is linked), and the line tables let a finding name its line.
const FLAGS: &[&str] =
    &["-std=c++20", "-O2", "-fPIC", "-fvisibility=hidden", "-ffp-contract=off", "-mtls-dialect=gnu2", "-w", "-fsanitize=thread", "-g1"];

/// Part of every cache key: what the build does beyond its flags (the `__shared__` rewrite,
/// the line tables' folder). Change it whenever either changes.
const REWRITE_VERSION: &str = "shared-redzones-1, debug-prefix-map-1, narrow-offsets-2";

#[derive(Clone, Debug)]
pub struct HostCompiler {
    pub program: String,
    /// First line of `--version`: part of every cache key and of reports.
    pub identity: String,
    is_gcc: bool,
}

impl HostCompiler {
    /// `KERNEL_CONTRACTS_CXX` if set, else the first of g++, clang++-22, clang++ that runs.
    pub fn discover() -> Result<HostCompiler, EngineError> {
        let candidates: Vec<String> = match std::env::var("KERNEL_CONTRACTS_CXX") {
            Ok(p) if !p.is_empty() => vec![p],
            _ => vec!["g++".into(), "clang++-22".into(), "clang++".into()],
        };
        for program in &candidates {
            if let Ok(out) = Command::new(program).arg("--version").output()
                && out.status.success()
            {
                let text = String::from_utf8_lossy(&out.stdout);
                let identity = text.lines().next().unwrap_or("").trim().to_string();
                let is_gcc = !text.contains("clang");
                return Ok(HostCompiler { program: program.clone(), identity, is_gcc });
            }
        }
        Err(EngineError::NoHostCompiler { tried: candidates.join(", ") })
    }

    fn flags(&self, warp_size: u32) -> Vec<String> {
        let mut flags: Vec<String> = FLAGS.iter().map(|s| s.to_string()).collect();
        if self.is_gcc {
            flags.push("-fno-extern-tls-init".into());
            flags.push("--param=tsan-instrument-func-entry-exit=0".into());
            flags.push(super::lint::DUMP_FLAG.into());
        } else {
            flags.extend(["-mllvm".into(), "-tsan-instrument-func-entry-exit=0".into()]);
        }
        flags.push(format!("-DSIMT_WARP={warp_size}"));
        flags
    }

    /// The cached shared library for this source, built if missing.
    pub fn build(&self, source: &KernelSource, prelude: &Path, cache_dir: &Path, warp_size: u32) -> Result<PathBuf, EngineError> {
        let read = |path: &Path| fs::read(path).map_err(|e| EngineError::ReadSource { path: path.to_path_buf(), source: e });
        let flags = self.flags(warp_size);
        let source_prefix = source_prefix(source);

        let key = crate::backend::build_key(source, &read(prelude)?, &[&self.identity, &flags.join(" "), REWRITE_VERSION])?;
        let stem = source.path.file_stem().and_then(|s| s.to_str()).unwrap_or("kernel");
        let library = cache_dir.join(format!("{stem}-{key}.so"));
        if library.exists() {
            return Ok(library);
        }

        fs::create_dir_all(cache_dir).map_err(|e| EngineError::Cache { path: cache_dir.to_path_buf(), source: e })?;
        let work = tempfile_dir(cache_dir, &key)?;
        let result = self.build_in(source, prelude, &flags, source_prefix.as_deref(), &work, &library);
        let _ = fs::remove_dir_all(&work);
        result.map(|()| library)
    }

    fn build_in(
        &self,
        source: &KernelSource,
        prelude: &Path,
        flags: &[String],
        source_prefix: Option<&str>,
        work: &Path,
        library: &Path,
    ) -> Result<(), EngineError> {
        // the source with its `__shared__` arrays given redzones, still named as the source
        let original = fs::read_to_string(&source.path).map_err(|e| EngineError::ReadSource { path: source.path.clone(), source: e })?;
        let (rewritten, _) = super::shared_decls::rewrite(&original);
        let copy = work.join("source.hip");
        let text = format!("#line 1 \"{}\"\n{rewritten}", crate::backend::c_string_body(&source.display_path));
        fs::write(&copy, text).map_err(|e| EngineError::Cache { path: copy.clone(), source: e })?;
        let wrapper = work.join("wrap.cpp");
        // beside the wrapper: a quoted include needs no path, whatever the cache folder is called
        let mut text = String::from("#include \"source.hip\"\n");
        for kernel in &source.kernels {
            text.push_str(&format!("SIMT_KERNEL({kernel})\n"));
        }
        fs::write(&wrapper, text).map_err(|e| EngineError::Cache { path: wrapper.clone(), source: e })?;

        let object_file = work.join("kernel.o");
        let link = RepositoryLink::make(work, source_prefix);
        let compiler = |input: &Path| {
            let mut command = Command::new(&self.program);
            command.args(flags);
            // barrier sites, traps and line tables name `kernels/x.hip:12`, not an absolute path
            let map = match &link {
                Some(_) => Some(format!("-ffile-prefix-map={}/=", RepositoryLink::NAME)),
                None => source_prefix.and_then(|prefix| prefix_map("-ffile-prefix-map", prefix, "")),
            };
            command.args(map);
            // the copy's quoted includes resolve as the source's own
            if let Some(dir) = source.path.parent() {
                command.arg("-iquote").arg(RepositoryLink::through(&link, dir));
            }
            // the line tables' folder is `.`, not wherever the run started; the inputs are
            // named from there, so no folder's name is in the assembly
            command.current_dir(work);
            if let Some(map) = work.to_str().and_then(|work| prefix_map("-fdebug-prefix-map", work, ".")) {
                command.arg(map);
            }
            for dir in &source.include_dirs {
                command.arg("-I").arg(RepositoryLink::through(&link, dir));
            }
            command.arg("-include").arg(RepositoryLink::through(&link, prelude));
            command.arg("-c").arg(input.strip_prefix(work).unwrap_or(input));
            command
        };
        let mut compile = compiler(&wrapper);
        compile.arg("-o").arg(&object_file);
        if let Err(error) = self.run(compile, &source.display_path, "compile") {
            return Err(self.missing_kernel(source, &error, work, compiler).unwrap_or(error));
        }

        write_lint(work, &source.display_path, &original, &lint_path(library))?;
        let renames = shared_symbol_renames(&object_file, &source.display_path)?;
        if !renames.is_empty() {
            let mut objcopy = Command::new("objcopy");
            for (from, to) in &renames {
                objcopy.arg("--redefine-sym").arg(format!("{from}={to}"));
            }
            objcopy.arg(&object_file);
            run_tool(objcopy, "objcopy", &source.display_path)?;
        }

        let staged = work.join("kernel.so");
        let mut link = Command::new(&self.program);
        // -z defs: an instrumentation entry point the prelude lacks fails the build, not the load
        link.arg("-shared").arg("-Wl,-z,defs").arg("-o").arg(&staged).arg(&object_file);
        self.run(link, &source.display_path, "link")?;
        fs::rename(&staged, library).map_err(|e| EngineError::Cache { path: library.to_path_buf(), source: e })
    }

    /// When the source compiles on its own, what failed is the wrapper naming a kernel the
    /// source does not define: that is said as a missing kernel, not as a compiler error in a
    /// generated file of the cache.
    fn missing_kernel(
        &self,
        source: &KernelSource,
        error: &EngineError,
        work: &Path,
        compiler: impl Fn(&Path) -> Command,
    ) -> Option<EngineError> {
        let EngineError::Compile { log, .. } = error else { return None };
        let alone = work.join("alone.cpp");
        fs::write(&alone, "#include \"source.hip\"\n").ok()?;
        let mut check = compiler(&alone);
        check.arg("-fsyntax-only");
        if !check.output().ok()?.status.success() {
            return None;
        }
        // an error of another stage (the assembler's `Error:`) is said as it is
        let said = log.lines().find_map(|l| l.split_once("error: ")).map(|(_, e)| e)?;
        let kernel = source.kernels.iter().find(|k| said.contains(k.as_str())).or(source.kernels.first())?;
        Some(EngineError::MissingSymbol {
            library: format!("{} (host build)", source.display_path),
            symbol: kernel.clone(),
            hint: format!(" (the source compiles but defines no kernel of that name; the compiler: {said})"),
        })
    }

    fn run(&self, mut command: Command, display_path: &str, step: &str) -> Result<(), EngineError> {
        let out = command.output().map_err(|e| EngineError::Tool {
            tool: self.program.clone(),
            path: display_path.to_string(),
            reason: e.to_string(),
        })?;
        if out.status.success() {
            return Ok(());
        }
        let mut log = String::from_utf8_lossy(&out.stderr).into_owned();
        log.push_str(&String::from_utf8_lossy(&out.stdout));
        Err(EngineError::Compile {
            path: display_path.to_string(),
            compiler: format!("{} ({step})", self.identity),
            log: log.trim_end().to_string(),
        })
    }
}

/// The static findings of a built library (one line each), beside it.
pub fn lint_path(library: &Path) -> PathBuf {
    let mut name = library.as_os_str().to_owned();
    name.push(".lint");
    PathBuf::from(name)
}

/// The 32-bit offsets of the compile's SSA dump (GCC; none from another compiler, which
/// writes no dump), written before the library lands, so a library always has its file.
fn write_lint(work: &Path, display_path: &str, source: &str, path: &Path) -> Result<(), EngineError> {
    let mut findings = Vec::new();
    for entry in fs::read_dir(work).map_err(|e| EngineError::Cache { path: work.to_path_buf(), source: e })?.flatten() {
        if entry.path().extension().is_some_and(|x| x == "ssa")
            && let Ok(dump) = fs::read_to_string(entry.path())
        {
            findings.extend(super::lint::narrow_offsets(&dump, display_path, source));
        }
    }
    let staged = work.join("lint");
    let text: String = findings.iter().map(|f| format!("{f}\n")).collect();
    fs::write(&staged, text).map_err(|e| EngineError::Cache { path: staged.clone(), source: e })?;
    fs::rename(&staged, path).map_err(|e| EngineError::Cache { path: path.to_path_buf(), source: e })
}

/// The repository as the compiler sees it: a link named `root` in the work folder. GCC writes
/// the name of a file that holds inline asm (the prelude does) into its assembly as it is
/// (`# 232 "<file>" 1`, neither mapped nor escaped), so a repository whose folder name holds
/// a newline would not assemble; through the link, no folder's name reaches the compiler.
struct RepositoryLink {
    /// The repository's path with its final `/`, as `source_prefix` gives it.
    prefix: String,
}

impl RepositoryLink {
    const NAME: &'static str = "root";

    /// None when the source lies outside the repository, or the link cannot be made (the
    /// build then names paths as they are).
    fn make(work: &Path, source_prefix: Option<&str>) -> Option<RepositoryLink> {
        let prefix = source_prefix?;
        std::os::unix::fs::symlink(prefix, work.join(Self::NAME)).ok()?;
        Some(RepositoryLink { prefix: prefix.to_string() })
    }

    /// `path` through the link when it lies in the repository.
    fn through(link: &Option<RepositoryLink>, path: &Path) -> PathBuf {
        let inside = link.as_ref().and_then(|l| path.to_str()?.strip_prefix(&l.prefix));
        inside.map_or_else(|| path.to_path_buf(), |rest| Path::new(Self::NAME).join(rest))
    }
}

/// `-f...-prefix-map=from=to`, which the compilers split at the first `=`: a folder whose
/// name holds one cannot be mapped (the names then stay absolute), and is left unmapped
/// rather than mapped wrongly. Spaces, quotes and newlines need nothing: the argument goes to
/// the compiler as it is, through no shell.
fn prefix_map(flag: &str, from: &str, to: &str) -> Option<String> {
    (!from.contains('=')).then(|| format!("{flag}={from}={to}"))
}

/// The part of the absolute path before the display path (`/repo/` for `kernels/x.hip`).
fn source_prefix(source: &KernelSource) -> Option<String> {
    let full = source.path.to_str()?;
    full.strip_suffix(&source.display_path).map(|p| p.to_string()).filter(|p| !p.is_empty())
}

fn tempfile_dir(cache_dir: &Path, key: &str) -> Result<PathBuf, EngineError> {
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let build = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = cache_dir.join(format!("build-{key}-{}-{build}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| EngineError::Cache { path: dir.clone(), source: e })?;
    Ok(dir)
}

fn run_tool(mut command: Command, tool: &str, display_path: &str) -> Result<(), EngineError> {
    let out = command.output().map_err(|e| EngineError::Tool {
        tool: tool.to_string(),
        path: display_path.to_string(),
        reason: e.to_string(),
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(EngineError::Tool {
            tool: tool.to_string(),
            path: display_path.to_string(),
            reason: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Every undefined TLS symbol of the object is an `extern __shared__` array: it is pointed
/// at the dynamic shared pool (all of them alias it, as on a GPU). clang's
/// `_TLS_MODULE_BASE_` is the linker's own; weak `_ZTH` TLS-init hooks become a no-op.
fn shared_symbol_renames(object_file: &Path, display_path: &str) -> Result<Vec<(String, String)>, EngineError> {
    let data = fs::read(object_file).map_err(|e| EngineError::Cache { path: object_file.to_path_buf(), source: e })?;
    let file = object::File::parse(&*data).map_err(|e| EngineError::Tool {
        tool: "object".into(),
        path: display_path.to_string(),
        reason: e.to_string(),
    })?;
    let mut renames = Vec::new();
    for symbol in file.symbols() {
        if !symbol.is_undefined() {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        if symbol.kind() == SymbolKind::Tls && name != "_TLS_MODULE_BASE_" {
            renames.push((name.to_string(), "__simt_dynamic_shared".to_string()));
        } else if name.starts_with("_ZTH") {
            renames.push((name.to_string(), "__simt_tls_noop".to_string()));
        }
    }
    Ok(renames)
}
