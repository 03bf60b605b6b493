//! Builds a kernel source into a shared library for the host backend: a wrapper that
//! exports one descriptor per kernel, the system C++ compiler with the host prelude
//! force-included, `extern __shared__` symbols pointed at the dynamic shared pool, a
//! shared link. Libraries are cached by what the compiler read (`crate::backend::cache`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol, SymbolKind};

use crate::EngineError;
use crate::backend::KernelSource;
use crate::backend::cache::{self, BuildDir, CacheKey, KernelCache, Reads, Staged};

/// The compiler's dependency file, in the build folder.
const DEPFILE: &str = "kernel.d";

/// A built library and whether the cache had it.
#[derive(Clone, Debug)]
pub struct Built {
    pub library: PathBuf,
    pub cached: bool,
    /// The static findings of the compile, kept in the cache beside it.
    pub lint: StaticFindings,
    /// A coverage build's notes and the name its profile data takes.
    pub coverage: Option<CoverageNotes>,
}

/// The static findings of a host build, one line each, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaticFindings {
    /// 32-bit offsets widened late and 64-bit values narrowed ([`super::lint`]).
    pub offsets: Vec<String>,
    /// Writable module-scope storage of kernel code ([`super::state`]).
    pub state: Vec<String>,
    /// Inline assembly and x86 intrinsics in kernel code ([`super::lint::assembly`],
    /// [`super::lint::x86_builtins`]).
    pub assembly: Vec<String>,
    /// What kernel code uses from outside that no GPU compiler provides ([`super::calls`]).
    pub calls: Vec<String>,
    /// Code one target's build sees otherwise than another's: lines of the kernel's own files
    /// one compiles and another leaves out ([`super::targets`]), a compiler's own macro whose
    /// value differs by target named by its code ([`super::predefined`]).
    pub targets: Vec<String>,
}

impl StaticFindings {
    const OFFSET: &'static str = "offset\t";
    const STATE: &'static str = "state\t";
    const ASSEMBLY: &'static str = "asm\t";
    const CALL: &'static str = "call\t";
    const TARGET: &'static str = "target\t";

    /// One tagged line per finding, as the cache keeps them.
    fn to_bytes(&self) -> Vec<u8> {
        let tagged = |tag: &'static str, lines: &[String]| lines.iter().map(move |l| format!("{tag}{l}\n")).collect::<String>();
        let (offsets, state) = (tagged(Self::OFFSET, &self.offsets), tagged(Self::STATE, &self.state));
        let (assembly, calls) = (tagged(Self::ASSEMBLY, &self.assembly), tagged(Self::CALL, &self.calls));
        let targets = tagged(Self::TARGET, &self.targets);
        format!("{offsets}{state}{assembly}{calls}{targets}").into_bytes()
    }

    fn from_bytes(bytes: &[u8]) -> StaticFindings {
        let text = String::from_utf8_lossy(bytes);
        let of = |tag: &str| text.lines().filter_map(|l| l.strip_prefix(tag)).map(str::to_string).collect();
        StaticFindings {
            offsets: of(Self::OFFSET),
            state: of(Self::STATE),
            assembly: of(Self::ASSEMBLY),
            calls: of(Self::CALL),
            targets: of(Self::TARGET),
        }
    }
}

/// What a coverage build leaves for gcov: the compiler's notes file (`.gcno`, kept in the
/// cache beside the library) and the base name of the data file (`<name>.gcda`) the library
/// writes when the process that loaded it exits. The data goes where `GCOV_PREFIX` says
/// (with `GCOV_PREFIX_STRIP` at [`GCOV_STRIP_ALL`], straight into that folder).
#[derive(Clone, Debug)]
pub struct CoverageNotes {
    pub notes: PathBuf,
    pub data_name: String,
}

/// A `GCOV_PREFIX_STRIP` above any folder depth: libgcov then keeps only the data file's
/// own name under `GCOV_PREFIX` (the build folder it was compiled in is gone by then).
pub const GCOV_STRIP_ALL: u32 = 4096;

/// How a library is built: as the runs use it, or instrumented for line and branch coverage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BuildMode {
    #[default]
    Normal,
    Coverage,
}

/// Added for a coverage build (GCC only). `--coverage` counts arcs; `-fprofile-update=atomic`
/// because blocks run on several worker threads at once (the counters are the only memory
/// the kernels share that the prelude does not track); `-O0` so that the branches gcov
/// counts are the source's (at -O2 the profile is taken after early inlining and loop
/// copying, and one `if` shows as 20 branches); `-fno-exceptions` so that a call is no
/// branch (else every call has an exception edge that gcov counts); `SIMT_COVERAGE` makes
/// the prelude's `__forceinline__` a plain `noinline`, so that each helper is counted once,
/// not once per call site it was inlined into.
/// A kernel's translation unit declares the prelude's runtime and leaves its definitions to
/// the runtime object ([`HostCompiler::runtime_object`]); a coverage build compiles both in one.
const KERNEL_TU_FLAG: &str = "-DSIMT_KERNEL_TU";

const COVERAGE_FLAGS: &[&str] = &["--coverage", "-fprofile-update=atomic", "-O0", "-fno-exceptions", "-DSIMT_COVERAGE"];

fn read(path: &Path) -> Result<Vec<u8>, EngineError> {
    fs::read(path).map_err(|e| EngineError::ReadSource { path: path.to_path_buf(), source: e })
}

/// Flags that make host results mean what GPU results mean, each for a measured reason:
/// `-fvisibility=hidden` (under -fPIC a global kernel symbol can be interposed, so g++
/// would call it through the PLT once per thread instead of inlining it);
/// `-mtls-dialect=gnu2` (the default TLS dialect calls `__tls_get_addr` on every
/// `__shared__` access, about 4 ns, and GCC does not hoist it; initial-exec would force the
/// whole TLS segment into the static surplus and dlopen fails); `-ffp-contract=off` (g++
/// fuses multiply-adds as soon as FMA is available, which breaks bit-exact checks).
/// `-fsanitize=thread -g1`: every load and store of kernel code calls the prelude's memory
/// checks (no sanitizer runtime is linked), and the line tables let a finding name its line.
/// No `-w`: the compiler's warnings are read back for implicit 64-to-32-bit narrowing
/// ([`super::lint::NARROWING_FLAG_GCC`]) and dropped otherwise.
/// `-ftrivial-auto-var-init=pattern`: a local read before it is written holds a fixed
/// pattern (a huge or NaN value), not whatever the register last held. On a GPU an
/// uninitialised accumulator holds garbage; on the host, without this, it often held a
/// harmless 0 and such a kernel passed or failed by the seed.
/// `-U_FORTIFY_SOURCE`: some distributions' GCC (Ubuntu's) turns it on with `-O`, and then a
/// kernel's `memcpy` into a local of known size is a call of glibc's `__memcpy_chk`, which
/// neither the checked copies nor the check of what kernel code uses from the C library allow.
const FLAGS: &[&str] = &[
    "-std=c++20",
    "-O2",
    "-fPIC",
    "-fvisibility=hidden",
    "-ffp-contract=off",
    "-mtls-dialect=gnu2",
    "-fsanitize=thread",
    "-g1",
    "-ftrivial-auto-var-init=pattern",
    KEEP_LAST_CALLS,
    "-U_FORTIFY_SOURCE",
];

/// A call that ends a function of kernel code stays a call, so that a check called there (a
/// copy's, `memcpy(row, ...)` as a kernel's last statement) names the kernel's line by its
/// return address, not the line of whatever called the kernel.
const KEEP_LAST_CALLS: &str = "-fno-optimize-sibling-calls";

/// Part of every cache key: what the build does beyond its flags (the `__shared__` rewrite,
/// the line tables' folder). Change it whenever either changes.
const REWRITE_VERSION: &str =
    "shared-redzones-1, debug-prefix-map-1, narrow-offsets-3, implicit-narrowing-2, module-state-1, checked-copies-1, checked-calls-1";
/// The rules the cached static findings were made by: their own source text, so a build
/// cached under older rules is never taken for one checked by these (a version number someone
/// must remember to bump would let a stale finding, or a stale absence of one, through).
const STATIC_RULES: [&str; 6] = [
    include_str!("lint.rs"),
    include_str!("state.rs"),
    include_str!("shared_decls.rs"),
    include_str!("calls.rs"),
    include_str!("targets.rs"),
    include_str!("predefined.rs"),
];

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

    /// GCC, not clang (only GCC's builds precompile the prelude).
    pub fn is_gcc(&self) -> bool {
        self.is_gcc
    }

    /// The program that reads this compiler's coverage notes: `gcov` beside `g++`
    /// (`g++-12` gives `gcov-12`); none for clang, whose coverage is another format.
    pub fn gcov(&self) -> Option<String> {
        if !self.is_gcc {
            return None;
        }
        let path = Path::new(&self.program);
        let name = path.file_name()?.to_str()?;
        let gcov = match name.rfind("g++") {
            Some(at) => format!("{}gcov{}", &name[..at], &name[at + 3..]),
            None => "gcov".to_string(),
        };
        Some(path.with_file_name(gcov).to_string_lossy().into_owned())
    }

    pub(super) fn flags(&self, warp_size: u32, mode: BuildMode) -> Vec<String> {
        let mut flags: Vec<String> = FLAGS.iter().map(|s| s.to_string()).collect();
        // an index past an array's declared size calls the prelude's handler: a thread's local
        // arrays lie on its stack, which the access checks leave alone (clang's `bounds` would
        // add `local-bounds`, which traps instead of calling)
        flags.push(if self.is_gcc { "-fsanitize=bounds" } else { "-fsanitize=array-bounds" }.into());
        if self.is_gcc {
            flags.push("-fno-extern-tls-init".into());
            flags.push("--param=tsan-instrument-func-entry-exit=0".into());
            // volatile reads call hooks of their own, which tell a spin-wait (the prelude's `spin`)
            flags.push("--param=tsan-distinguish-volatile=1".into());
            flags.push(super::lint::DUMP_FLAG.into());
            flags.push(super::lint::NARROWING_FLAG_GCC.into());
        } else {
            flags.extend(["-mllvm".into(), "-tsan-instrument-func-entry-exit=0".into()]);
            flags.extend(["-mllvm".into(), "-tsan-distinguish-volatile=1".into()]);
            flags.push(super::lint::NARROWING_FLAG_CLANG.into());
        }
        flags.push(format!("-DSIMT_WARP={warp_size}"));
        match mode {
            BuildMode::Normal => flags.push(KERNEL_TU_FLAG.into()),
            BuildMode::Coverage => flags.extend(COVERAGE_FLAGS.iter().map(|s| s.to_string())),
        }
        flags
    }

    /// The prelude's runtime (what a kernel's translation unit leaves out under
    /// [`KERNEL_TU_FLAG`]: the instrumentation's entry points, the launch entry, the context
    /// switch and the runtime's data), compiled once per prelude, compiler and flags into the
    /// cache and linked into every kernel's library, each library getting its own copy. It was
    /// about 1.2 s of every kernel's 1.25 s of g++. Named by the SHA-256 of what it is built
    /// from, and checked against the SHA-256 recorded beside it before each use: one that
    /// does not match is built again.
    fn runtime_object(&self, prelude: &Path, cache_dir: &Path, kernel_flags: &[String]) -> Result<PathBuf, EngineError> {
        // the runtime's own tail calls name no kernel line: they stay jumps
        let lint_flags =
            [super::lint::DUMP_FLAG, super::lint::NARROWING_FLAG_GCC, super::lint::NARROWING_FLAG_CLANG, KERNEL_TU_FLAG, KEEP_LAST_CALLS];
        let flags: Vec<&String> = kernel_flags.iter().filter(|f| !lint_flags.contains(&f.as_str())).collect();
        let text = read(prelude)?;
        let name = self.prelude_key(&flags, &text);
        let dir = cache_dir.join("host-runtime");
        let object = dir.join(format!("{name}.o"));
        let recorded = dir.join(format!("{name}.o.sha256"));
        // the build threads of one process build it once between them
        static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = BUILDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if matches_recorded(&object, &recorded) {
            return Ok(object);
        }
        let work = BuildDir::new(cache_dir, "host-runtime")?;
        // the prelude copied beside the empty source: no repository path reaches the compiler
        // (GCC writes the name of a file holding inline asm into its assembly as it is)
        let copy = work.path().join("prelude.h");
        fs::write(&copy, &text).map_err(|e| EngineError::Cache { path: copy.clone(), source: e })?;
        let source = work.path().join("runtime.cpp");
        fs::write(&source, "").map_err(|e| EngineError::Cache { path: source.clone(), source: e })?;
        let mut compile = Command::new(&self.program);
        compile.args(flags).current_dir(work.path());
        if let Some(map) = work.path().to_str().and_then(|work| prefix_map("-fdebug-prefix-map", work, ".")) {
            compile.arg(map);
        }
        compile.args(["-include", "prelude.h", "-c", "runtime.cpp", "-o", "runtime.o"]);
        self.run(compile, "the host prelude's runtime", "compile")?;
        let built = work.path().join("runtime.o");
        let bytes = fs::read(&built).map_err(|e| EngineError::Cache { path: built.clone(), source: e })?;
        fs::create_dir_all(&dir).map_err(|e| EngineError::Cache { path: dir.clone(), source: e })?;
        store_recorded(&object, &recorded, &bytes)?;
        Ok(object)
    }

    /// The name of what is built from the prelude's `text` with `flags` by this compiler.
    fn prelude_key(&self, flags: &[&String], text: &[u8]) -> String {
        use sha2::{Digest, Sha256};
        let mut key = Sha256::new();
        for part in
            [self.program.as_bytes(), self.identity.as_bytes(), flags.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(" ").as_bytes()]
        {
            key.update((part.len() as u64).to_le_bytes());
            key.update(part);
        }
        key.update(text);
        cache::hex(&key.finalize())
    }

    /// The prelude precompiled for a kernel's translation unit (GCC's `prelude.h.gch`, beside
    /// a copy of the prelude that a kernel's compile includes instead of the prelude itself):
    /// parsing the prelude, `<cmath>` above all, was half of every kernel's compile. Built
    /// once per prelude, compiler and flags into the cache, and checked against the SHA-256
    /// recorded beside it before each use, as the runtime object is. None where it does not
    /// apply (clang, a coverage build) or could not be built: the kernel then includes the
    /// prelude as text, which gives the same code. A kernel's manifest then lists neither it
    /// nor the system headers the prelude includes: what it was built from is in the
    /// kernel's key (the prelude's bytes, the compiler's identity and the flags).
    fn precompiled_prelude(&self, prelude: &Path, cache_dir: &Path, kernel_flags: &[String]) -> Option<PathBuf> {
        if !self.is_gcc || !kernel_flags.iter().any(|f| f == KERNEL_TU_FLAG) {
            return None;
        }
        let text = read(prelude).ok()?;
        let flags: Vec<&String> = kernel_flags.iter().collect();
        let dir = cache_dir.join("host-pch").join(self.prelude_key(&flags, &text));
        let (header, compiled, recorded) = (dir.join("prelude.h"), dir.join("prelude.h.gch"), dir.join("prelude.h.gch.sha256"));
        // the build threads of one process build it once between them
        static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = BUILDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if fs::read(&header).is_ok_and(|copy| copy == text) && matches_recorded(&compiled, &recorded) {
            return Some(header);
        }
        let work = BuildDir::new(cache_dir, "host-pch").ok()?;
        // compiled under the name `prelude.h` in the work folder: the line tables of the
        // kernels that use it name `prelude.h`, no folder of this machine
        fs::write(work.path().join("prelude.h"), &text).ok()?;
        let mut compile = Command::new(&self.program);
        compile.args(&flags).current_dir(work.path());
        if let Some(map) = work.path().to_str().and_then(|work| prefix_map("-fdebug-prefix-map", work, ".")) {
            compile.arg(map);
        }
        compile.args(["-x", "c++-header", "prelude.h", "-o", "prelude.h.gch"]);
        self.run(compile, "the host prelude, precompiled", "compile").ok()?;
        let bytes = fs::read(work.path().join("prelude.h.gch")).ok()?;
        fs::create_dir_all(&dir).ok()?;
        cache::write_atomically(&header, &text).ok()?;
        store_recorded(&compiled, &recorded, &bytes).ok()?;
        Some(header)
    }

    /// The shared library of this source: from the cache when every file the last build of
    /// it read, and the library itself, still hash as recorded; else built and recorded.
    pub fn build(&self, source: &KernelSource, prelude: &Path, cache_dir: &Path, warp_size: u32) -> Result<Built, EngineError> {
        self.build_as(source, prelude, cache_dir, warp_size, BuildMode::Normal)
    }

    /// [`HostCompiler::build`] in either mode; the mode's flags are part of the cache key, so
    /// covered and normal libraries never mix.
    pub fn build_as(
        &self,
        source: &KernelSource,
        prelude: &Path,
        cache_dir: &Path,
        warp_size: u32,
        mode: BuildMode,
    ) -> Result<Built, EngineError> {
        if mode == BuildMode::Coverage && !self.is_gcc {
            return Err(EngineError::Tool {
                tool: self.program.clone(),
                path: source.display_path.clone(),
                reason: "coverage builds need GCC (--coverage and gcov); this compiler is clang".into(),
            });
        }
        let flags = self.flags(warp_size, mode);
        let joined = flags.join(" ");
        // the device preludes decide which lines a GPU build compiles (`super::targets`)
        let device_preludes = super::targets::device_preludes_digest(prelude);
        let mut parts = vec![self.program.as_str(), &self.identity, &joined, REWRITE_VERSION, &device_preludes];
        parts.extend(STATIC_RULES);
        let key =
            |source_bytes: &[u8]| -> Result<CacheKey, EngineError> { Ok(CacheKey::new(source, source_bytes, &read(prelude)?, &parts, "")) };
        let cache = KernelCache::new(cache_dir);
        let artifacts = if mode == BuildMode::Coverage { 3 } else { 2 };
        let lookup_key = key(&read(&source.path)?)?;
        if let Some(found) = cache.lookup(&lookup_key, artifacts) {
            let coverage =
                (mode == BuildMode::Coverage).then(|| CoverageNotes { notes: found[2].path.clone(), data_name: lookup_key.short_name() });
            return Ok(Built { library: found[0].path.clone(), cached: true, lint: StaticFindings::from_bytes(&found[1].bytes), coverage });
        }

        let work = BuildDir::new(cache_dir, "host")?;
        // read again once the build began: the key and the library come from these bytes
        let original = read(&source.path)?;
        let key = key(&original)?;
        // a coverage build's object is named by its key: the data file the library writes at
        // exit takes the object's name, and every source of a run needs its own
        let object_name = match mode {
            BuildMode::Normal => "kernel".to_string(),
            BuildMode::Coverage => key.short_name(),
        };
        let (staged, lint, files) = self.build_in(source, &original, (prelude, cache_dir), &flags, &object_name, work.path())?;
        let reads = Reads { files, absent: Vec::new() };
        let system = cache::system_include_dirs(&self.program, &["-x".into(), "c++".into()]);
        let recorded = cache::record(&key, &reads, &cache::user_dirs(source), &system, &work);
        let mut staged = vec![("so", Staged::File(staged)), ("lint", Staged::Bytes(lint))];
        if mode == BuildMode::Coverage {
            staged.push(("gcno", Staged::File(work.path().join(format!("{object_name}.gcno")))));
        }
        let stored = cache.store(&key, recorded, staged)?;
        let coverage = (mode == BuildMode::Coverage).then(|| CoverageNotes { notes: stored[2].path.clone(), data_name: key.short_name() });
        Ok(Built { library: stored[0].path.clone(), cached: false, lint: StaticFindings::from_bytes(&stored[1].bytes), coverage })
    }

    /// Compiles and links in `work`; the library it returns lies there, with the text of the
    /// static findings and the files the compile read (its dependency file, [`DEPFILE`]).
    fn build_in(
        &self,
        source: &KernelSource,
        original: &[u8],
        (prelude, cache_dir): (&Path, &Path),
        flags: &[String],
        object_name: &str,
        work: &Path,
    ) -> Result<(PathBuf, Vec<u8>, Vec<PathBuf>), EngineError> {
        let source_prefix = source_prefix(source);
        // the source with its `__shared__` arrays given redzones, still named as the source
        let original = std::str::from_utf8(original).map_err(|e| EngineError::ReadSource {
            path: source.path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        let (rewritten, _) = super::shared_decls::rewrite(original);
        let copy = work.join("source.hip");
        let text = format!("#line 1 \"{}\"\n{rewritten}", crate::backend::c_string_body(&source.display_path));
        fs::write(&copy, text).map_err(|e| EngineError::Cache { path: copy.clone(), source: e })?;
        let wrapper = work.join("wrap.cpp");
        // beside the wrapper: a quoted include needs no path, whatever the cache folder is called
        let mut text = String::from("#include \"source.hip\"\n");
        for kernel in &source.kernels {
            // a template instantiation is made here, by taking its address, under a C name of its own
            text.push_str(&format!("SIMT_KERNEL_AS({}, &{kernel})\n", crate::backend::symbols::host_alias(kernel)));
        }
        fs::write(&wrapper, text).map_err(|e| EngineError::Cache { path: wrapper.clone(), source: e })?;

        // the runtime object the link needs, built beside the prelude's precompiling and the
        // kernel's compile: the first build of a cold cache built it at its link, 1.5 s of one
        // core while every other build thread waited for it at theirs (a build that fails
        // before its link leaves it to finish into the cache)
        let runtime = flags.iter().any(|f| f == KERNEL_TU_FLAG).then(|| {
            let (compiler, prelude, cache_dir, flags) = (self.clone(), prelude.to_path_buf(), cache_dir.to_path_buf(), flags.to_vec());
            crate::threads::brief(move || compiler.runtime_object(&prelude, &cache_dir, &flags))
        });
        let object_file = work.join(format!("{object_name}.o"));
        let link = RepositoryLink::make(work, source_prefix.as_deref());
        let included = self.precompiled_prelude(prelude, cache_dir, flags).unwrap_or_else(|| RepositoryLink::through(&link, prelude));
        let compiler = |input: &Path| {
            let mut command = Command::new(&self.program);
            command.args(flags);
            // barrier sites, traps and line tables name `kernels/x.hip:12`, not an absolute path
            let map = match &link {
                Some(_) => Some(format!("-ffile-prefix-map={}/=", RepositoryLink::NAME)),
                None => source_prefix.as_deref().and_then(|prefix| prefix_map("-ffile-prefix-map", prefix, "")),
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
            command.arg("-include").arg(&included);
            command.arg("-c").arg(input.strip_prefix(work).unwrap_or(input));
            command
        };
        let mut compile = compiler(&wrapper);
        // every file the compiler reads, system headers included, for the cache's manifest
        compile.args(["-MD", "-MF", DEPFILE, "-MT", cache::DEPFILE_TARGET]);
        compile.arg("-o").arg(&object_file);
        let diagnostics = match self.run(compile, &source.display_path, "compile") {
            Ok(diagnostics) => diagnostics,
            Err(error) => return Err(self.missing_kernel(source, &error, work, compiler).unwrap_or_else(|| checks_turned_off(error))),
        };
        let depfile = work.join(DEPFILE);
        let text = fs::read_to_string(&depfile).map_err(|e| EngineError::Cache { path: depfile.clone(), source: e })?;
        let files = files_read(&cache::depfile_paths(&text), work);

        // the object, read once for the checks of its symbols and the renames before the link
        let object_bytes = fs::read(&object_file).map_err(|e| EngineError::Cache { path: object_file.clone(), source: e })?;
        let object = object::File::parse(&*object_bytes).map_err(|e| EngineError::Tool {
            tool: "object".into(),
            path: source.display_path.clone(),
            reason: e.to_string(),
        })?;
        let text = super::state::SourceText { source, text: original };
        let state = super::state::findings(&object, &text);
        // a coverage build compiles the runtime into the kernel's object (its mmap, its calloc,
        // its own memcpy): the check and the copies' renames are for objects of kernel code alone
        let kernel_only = flags.iter().any(|f| f == KERNEL_TU_FLAG);
        let calls = if kernel_only { super::calls::findings(&object, &text) } else { Vec::new() };
        let targets = match kernel_only {
            true => {
                let preprocess = || {
                    let mut command = compiler(&wrapper);
                    command.args(super::targets::PREPROCESS);
                    command
                };
                self.target_findings(source, &preprocess, (prelude, &included), flags, (work, &files))
            }
            false => Vec::new(),
        };
        let dumps = ssa_dumps(work)?;
        let prelude_text = String::from_utf8_lossy(&read(prelude)?).into_owned();
        let name = prelude.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let prelude = super::lint::Prelude { name: &name, text: &prelude_text };
        let linked = format!("{}/", RepositoryLink::NAME);
        let lint = StaticFindings {
            offsets: super::lint::findings(&dumps, &diagnostics, &source.display_path, original),
            state,
            // x86 intrinsics are assembly in all but name: the same finding
            assembly: [super::lint::assembly(&dumps, &prelude, &linked), super::lint::x86_builtins(&dumps, &linked)].concat(),
            calls,
            targets,
        }
        .to_bytes();
        let renames = symbol_renames(&object, kernel_only);
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
        if let Some(runtime) = runtime {
            link.arg(runtime.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?);
        }
        if flags.iter().any(|f| f == "--coverage") {
            // libgcov: the counters' registration and the data file's writing at exit
            link.arg("--coverage");
        }
        self.run(link, &source.display_path, "link")?;
        Ok((staged, lint, files))
    }

    /// The lines of the kernel's own files (those of them the compile in `work` read, `files`)
    /// that the host build (`preprocess`: its compile, preprocessing only) and a GPU build do not
    /// both compile ([`super::targets`]); `included` is the prelude as the compile includes it.
    fn target_findings(
        &self,
        source: &KernelSource,
        preprocess: &dyn Fn() -> Command,
        (prelude, included): (&Path, &Path),
        flags: &[String],
        (work, files): (&Path, &[PathBuf]),
    ) -> Vec<String> {
        let host_toolchain = [included.to_path_buf()];
        let builds = super::targets::Builds {
            host: preprocess,
            host_program: &self.program,
            host_flags: flags,
            host_prelude: prelude,
            host_toolchain: &host_toolchain,
            work,
        };
        let own = super::targets::own_files(source, files, &builds);
        super::targets::findings(source, &own, &builds)
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

    /// Runs one step of the build; on success, what the compiler said (its warnings).
    pub(super) fn run(&self, mut command: Command, display_path: &str, step: &str) -> Result<String, EngineError> {
        let out = command.output().map_err(|e| EngineError::Tool {
            tool: self.program.clone(),
            path: display_path.to_string(),
            reason: e.to_string(),
        })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stderr).into_owned());
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

/// A compile that failed on a name the prelude poisons (`no_sanitize`, `optimize`, ...: what
/// would turn the host's checks off for the code it marks) says why that name is refused.
fn checks_turned_off(error: EngineError) -> EngineError {
    match error {
        // GCC: `attempt to use poisoned "optimize"`; clang: `attempt to use a poisoned identifier`
        EngineError::Compile { path, compiler, log }
            if log.contains("attempt to use poisoned") || log.contains("attempt to use a poisoned") =>
        {
            EngineError::Compile {
                path,
                compiler,
                log: format!(
                    "{log}\nnote: the host build refuses what would turn its checks off for the code it marks (no_sanitize in any \
                 spelling, disable_sanitizer_instrumentation, optimize, reset_options, the prelude's SIMT_NOSAN): a kernel's \
                 memory accesses are all checked"
                ),
            }
        }
        other => other,
    }
}

/// The offset findings of a build, one a line in source-line order: the 32-bit offsets of
/// the compile's SSA dump (GCC; another compiler writes no dump) and the 64-bit values the
/// compiler said were narrowed implicitly.
/// The SSA dumps the compile wrote into `work` (GCC's; none from clang).
fn ssa_dumps(work: &Path) -> Result<Vec<String>, EngineError> {
    let mut dumps = Vec::new();
    for entry in fs::read_dir(work).map_err(|e| EngineError::Cache { path: work.to_path_buf(), source: e })?.flatten() {
        if entry.path().extension().is_some_and(|x| x == "ssa")
            && let Ok(dump) = fs::read_to_string(entry.path())
        {
            dumps.push(dump);
        }
    }
    Ok(dumps)
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

/// The files of a depfile that the manifest must list. The wrapper and the rewritten copy
/// live in the build folder and come from the source (in the key). The copy's quoted
/// includes are looked for beside it first, so one with `..` may be read through the build
/// folder (`<build>/../../x.h`): such a path is resolved to the file it reached, as the
/// build folder is gone by the next lookup.
/// Whether `file`'s bytes still have the SHA-256 recorded in `recorded` (a cache artifact
/// built from the prelude, checked before each use).
fn matches_recorded(file: &Path, recorded: &Path) -> bool {
    let (Ok(bytes), Ok(sum)) = (fs::read(file), fs::read_to_string(recorded)) else { return false };
    cache::digest_hex(&bytes) == sum.trim()
}

/// `bytes` written to `file`, then their SHA-256 to `recorded` ([`matches_recorded`]).
fn store_recorded(file: &Path, recorded: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    cache::write_atomically(file, bytes)?;
    cache::write_atomically(recorded, cache::digest_hex(bytes).as_bytes())
}

pub(super) fn files_read(depfile_paths: &[String], work: &Path) -> Vec<PathBuf> {
    let real_work = work.canonicalize().unwrap_or_else(|_| work.to_path_buf());
    let reached = |path: PathBuf| {
        if !path.starts_with(work) {
            return Some(path);
        }
        match path.canonicalize() {
            Ok(real) if real.starts_with(&real_work) => None,
            Ok(real) => Some(real),
            // gone already: listed as it was, so the build is used but not recorded
            Err(_) => Some(path),
        }
    };
    depfile_paths.iter().map(|p| work.join(p)).filter_map(reached).collect()
}

/// The part of the absolute path before the display path (`/repo/` for `kernels/x.hip`).
fn source_prefix(source: &KernelSource) -> Option<String> {
    let full = source.path.to_str()?;
    full.strip_suffix(&source.display_path).map(|p| p.to_string()).filter(|p| !p.is_empty())
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

/// The C library routines kernel code may call whose stores no instrumentation sees, and the
/// checked ones the prelude defines in their place.
const CHECKED_CALLS: [(&str, &str); 13] = [
    ("memcpy", "__tsan_memcpy"),
    ("memmove", "__tsan_memmove"),
    ("memset", "__tsan_memset"),
    ("sincosf", "__simt_sincosf"),
    ("sincos", "__simt_sincos"),
    ("frexpf", "__simt_frexpf"),
    ("frexp", "__simt_frexp"),
    ("modff", "__simt_modff"),
    ("modf", "__simt_modf"),
    ("remquof", "__simt_remquof"),
    ("remquo", "__simt_remquo"),
    ("printf", "__simt_printf"),
    ("vprintf", "__simt_vprintf"),
];

/// What the object's undefined symbols are pointed at before the link. Every undefined TLS
/// symbol is an `extern __shared__` array: it is pointed at the dynamic shared pool (all of
/// them alias it, as on a GPU). clang's `_TLS_MODULE_BASE_` is the linker's own; weak `_ZTH`
/// TLS-init hooks become a no-op. In an object of kernel code alone (`kernel_only`: not a
/// coverage build's, which holds the runtime too), `memcpy`, `memmove` and `memset` become the
/// prelude's checked ones: GCC calls the C library's for a copy or fill whose size is known
/// only at run time (clang calls the instrumentation's), and it ran unchecked, so a row copy
/// past both tensors' ends passed. So do the math routines that store through a pointer
/// (`frexpf`, `sincosf`: their stores are checked) and `printf` (its `%n` stores a count no
/// GPU's printf stores: a kernel error).
fn symbol_renames(file: &object::File, kernel_only: bool) -> Vec<(String, String)> {
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
        } else if let Some(checked) = CHECKED_CALLS.iter().find(|(plain, _)| *plain == name).filter(|_| kernel_only) {
            renames.push((name.to_string(), checked.1.to_string()));
        }
    }
    renames
}
