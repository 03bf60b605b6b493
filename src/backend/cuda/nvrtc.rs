//! NVRTC, layers (b) and (c): discovery, one wrapper per call with NVRTC's own error
//! string, a program that is destroyed on drop, and the compiler that turns a kernel
//! source into an sm_XX cubin (cached by what it read, `crate::backend::cache`). Needs no
//! GPU and no libcuda.

use std::collections::BTreeMap;
use std::ffi::{CString, c_char, c_int};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::cubin::{self, CubinInfo, PtxasFunction};
use super::sys::*;
use crate::EngineError;
use crate::backend::KernelSource;
use crate::backend::cache::{self, BuildDir, CacheKey, KernelCache, Reads, Staged};
use crate::backend::vendor::{self, Vendor};

/// How to get NVRTC on a machine without the CUDA toolkit (what the error says).
pub const NVRTC_INSTALL: &str = "`cargo xtask setup` installs the PyPI wheel nvidia-cuda-nvrtc==13.0.* into \
     ~/.cache/kernel-contracts/venv-nvrtc, where the engine looks; or set KERNEL_CONTRACTS_NVRTC_DIR to the folder \
     holding libnvrtc.so.13 (or KERNEL_CONTRACTS_NVRTC to the library itself)";

/// The virtual environment `cargo xtask setup` installs the NVRTC wheel into:
/// `$KERNEL_CONTRACTS_VENV`, else `$XDG_CACHE_HOME/kernel-contracts/venv-nvrtc`, else
/// `~/.cache/kernel-contracts/venv-nvrtc`.
pub fn wheel_venv() -> Option<PathBuf> {
    let set = |name: &str| std::env::var_os(name).filter(|p| !p.is_empty()).map(PathBuf::from);
    set("KERNEL_CONTRACTS_VENV")
        .or_else(|| set("XDG_CACHE_HOME").map(|c| c.join("kernel-contracts/venv-nvrtc")))
        .or_else(|| set("HOME").map(|h| h.join(".cache/kernel-contracts/venv-nvrtc")))
}

/// The wheel's library folders inside a virtual environment, whatever its Python version
/// (`lib/python3.X/site-packages/nvidia/cu13/lib`), newest Python last.
pub fn wheel_lib_dirs(venv: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(venv.join("lib"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with("python3")))
        .map(|e| e.path().join("site-packages/nvidia/cu13/lib"))
        .filter(|d| d.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Where NVRTC is looked for, in order (the vendor layer's list): `KERNEL_CONTRACTS_NVRTC`
/// alone when set, else the sonames in `KERNEL_CONTRACTS_NVRTC_DIR` alone when set, else the
/// sonames, the toolkit's folders and the wheel's folder.
pub fn candidates() -> Vec<PathBuf> {
    Vendor::Nvrtc.candidates(None).into_iter().map(PathBuf::from).collect()
}

pub struct Nvrtc {
    api: NvrtcApi,
    pub version: (i32, i32),
}

impl Nvrtc {
    /// NVRTC from the first candidate (see `candidates`) that opens with every symbol.
    pub fn discover() -> Result<Nvrtc, EngineError> {
        Nvrtc::with_library(vendor::open(Vendor::Nvrtc, &Vendor::Nvrtc.candidates(None), &NvrtcApi::check)?)
    }

    /// The process-wide NVRTC, discovered once.
    pub fn shared() -> Result<Arc<Nvrtc>, EngineError> {
        static SHARED: OnceLock<Result<Arc<Nvrtc>, (String, String)>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                Nvrtc::discover().map(Arc::new).map_err(|e| match e {
                    EngineError::LoadLibrary { library, reason } => (library, reason),
                    other => ("libnvrtc".to_string(), other.to_string()),
                })
            })
            .clone()
            .map_err(|(library, reason)| EngineError::LoadLibrary { library, reason })
    }

    /// NVRTC from a path (or a bare soname for the loader to find), its builtins beside it
    /// opened first.
    pub fn open(library: &Path) -> Result<Nvrtc, EngineError> {
        Nvrtc::with_library(vendor::open(Vendor::Nvrtc, &[library.display().to_string()], &NvrtcApi::check)?)
    }

    fn with_library(library: Arc<Dylib>) -> Result<Nvrtc, EngineError> {
        let api = NvrtcApi::resolve(library)?;
        let mut version = (0, 0);
        let code = unsafe { (api.nvrtcVersion)(&mut version.0, &mut version.1) };
        let nvrtc = Nvrtc { api, version };
        nvrtc.check("nvrtcVersion", code)?;
        Ok(nvrtc)
    }

    pub fn library(&self) -> &str {
        &self.api.library.name
    }

    /// `NVRTC 13.0 (/path/libnvrtc.so.13)`.
    pub fn identity(&self) -> String {
        format!("NVRTC {}.{} ({})", self.version.0, self.version.1, self.library())
    }

    /// NVRTC's name for `code` (nvrtcGetErrorString gives the enumerator name) and what it means.
    fn error_text(&self, code: nvrtcResult) -> (String, String) {
        let name = c_str(unsafe { (self.api.nvrtcGetErrorString)(code) }).unwrap_or_else(|| format!("nvrtcResult {code}"));
        let meaning = match code {
            1 => "out of memory",
            2 => "the program could not be created",
            3 => "invalid input",
            4 => "invalid program handle",
            5 => "an option was refused",
            6 => "the source did not compile",
            7 => "a builtin operation failed (is libnvrtc-builtins beside libnvrtc?)",
            11 => "internal NVRTC error",
            _ => "see NVRTC's documentation",
        };
        (name, meaning.to_string())
    }

    fn check(&self, call: &str, code: nvrtcResult) -> Result<(), EngineError> {
        if code == NVRTC_SUCCESS {
            return Ok(());
        }
        let (name, message) = self.error_text(code);
        Err(EngineError::Vendor { library: self.library().to_string(), call: call.to_string(), code: code as i64, name, message })
    }

    /// Compiles one source. `headers` are in-memory headers (name, text); `name` is what
    /// `__FILE__` and diagnostics show; each of `kernels` is added as a name expression (an
    /// `extern "C"` name, or a C++ name such as `scale_rows<float, 4>`, which this makes
    /// NVRTC instantiate), and the result gives the name each has in the cubin. On failure
    /// the error carries NVRTC's log.
    pub fn compile(
        &self,
        name: &str,
        source: &str,
        headers: &[(String, String)],
        options: &[String],
        kernels: &[String],
    ) -> Result<Compiled, EngineError> {
        let nul = |what: &str| EngineError::Compile {
            path: name.to_string(),
            compiler: self.identity(),
            log: format!("{what} contains a NUL byte"),
        };
        let source_c = CString::new(source).map_err(|_| nul("the source"))?;
        let name_c = CString::new(name).map_err(|_| nul("the source name"))?;
        let header_texts: Vec<CString> =
            headers.iter().map(|(_, t)| CString::new(t.as_str())).collect::<Result<_, _>>().map_err(|_| nul("a header"))?;
        let header_names: Vec<CString> =
            headers.iter().map(|(n, _)| CString::new(n.as_str())).collect::<Result<_, _>>().map_err(|_| nul("a header name"))?;
        let options_c: Vec<CString> =
            options.iter().map(|o| CString::new(o.as_str())).collect::<Result<_, _>>().map_err(|_| nul("an option"))?;
        let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|c| c.as_ptr()).collect();
        let name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
        let option_ptrs: Vec<*const c_char> = options_c.iter().map(|c| c.as_ptr()).collect();

        let kernels_c: Vec<CString> =
            kernels.iter().map(|k| CString::new(k.as_str())).collect::<Result<_, _>>().map_err(|_| nul("a kernel name"))?;

        let program = Program::create(self, &source_c, &name_c, &text_ptrs, &name_ptrs)?;
        for kernel in &kernels_c {
            self.check("nvrtcAddNameExpression", unsafe { (self.api.nvrtcAddNameExpression)(program.raw, kernel.as_ptr()) })?;
        }
        let code = unsafe { (self.api.nvrtcCompileProgram)(program.raw, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        let log = program.log()?;
        if code != NVRTC_SUCCESS {
            let (error, meaning) = self.error_text(code);
            return Err(EngineError::Compile {
                path: name.to_string(),
                compiler: self.identity(),
                log: format!("{error}: {meaning}\n{log}"),
            });
        }
        let cubin = program.cubin()?;
        if cubin.is_empty() {
            return Err(EngineError::Compile {
                path: name.to_string(),
                compiler: self.identity(),
                log: format!("no cubin (a virtual compute_XX architecture gives PTX only)\n{log}"),
            });
        }
        let mut names = BTreeMap::new();
        for (kernel, kernel_c) in kernels.iter().zip(&kernels_c) {
            names.insert(kernel.clone(), program.lowered_name(kernel_c)?);
        }
        Ok(Compiled { cubin, log, names })
    }
}

/// What a compile gives: the cubin, NVRTC's log (the ptxas report under `-v`), and each
/// kernel's name in the cubin (its lowered name: a C++ name mangled).
#[derive(Clone, Debug)]
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
    pub names: BTreeMap<String, String>,
}

/// Kernel names as the cache keeps them beside a cubin: `name<TAB>lowered name` a line.
fn names_text(names: &BTreeMap<String, String>) -> String {
    names.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect()
}

fn names_of(text: &str) -> BTreeMap<String, String> {
    text.lines().filter_map(|l| l.split_once('\t')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// An NVRTC program, destroyed on drop.
struct Program<'a> {
    nvrtc: &'a Nvrtc,
    raw: nvrtcProgram,
}

impl<'a> Program<'a> {
    fn create(
        nvrtc: &'a Nvrtc,
        source: &CString,
        name: &CString,
        header_texts: &[*const c_char],
        header_names: &[*const c_char],
    ) -> Result<Program<'a>, EngineError> {
        let mut raw: nvrtcProgram = std::ptr::null_mut();
        let (texts, names) =
            if header_texts.is_empty() { (std::ptr::null(), std::ptr::null()) } else { (header_texts.as_ptr(), header_names.as_ptr()) };
        let code =
            unsafe { (nvrtc.api.nvrtcCreateProgram)(&mut raw, source.as_ptr(), name.as_ptr(), header_texts.len() as c_int, texts, names) };
        nvrtc.check("nvrtcCreateProgram", code)?;
        Ok(Program { nvrtc, raw })
    }

    fn log(&self) -> Result<String, EngineError> {
        let api = &self.nvrtc.api;
        let mut size = 0usize;
        self.nvrtc.check("nvrtcGetProgramLogSize", unsafe { (api.nvrtcGetProgramLogSize)(self.raw, &mut size) })?;
        let mut buffer = vec![0u8; size.max(1)];
        self.nvrtc.check("nvrtcGetProgramLog", unsafe { (api.nvrtcGetProgramLog)(self.raw, buffer.as_mut_ptr() as *mut c_char) })?;
        let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
        Ok(String::from_utf8_lossy(&buffer[..end]).into_owned())
    }

    /// The name NVRTC gave a name expression added before the compile.
    fn lowered_name(&self, expression: &CString) -> Result<String, EngineError> {
        let mut lowered: *const c_char = std::ptr::null();
        let code = unsafe { (self.nvrtc.api.nvrtcGetLoweredName)(self.raw, expression.as_ptr(), &mut lowered) };
        self.nvrtc.check("nvrtcGetLoweredName", code)?;
        c_str(lowered).ok_or_else(|| EngineError::Vendor {
            library: self.nvrtc.library().to_string(),
            call: "nvrtcGetLoweredName".into(),
            code: 0,
            name: "NVRTC_SUCCESS".into(),
            message: format!("no lowered name for `{}`", expression.to_string_lossy()),
        })
    }

    fn cubin(&self) -> Result<Vec<u8>, EngineError> {
        let api = &self.nvrtc.api;
        let mut size = 0usize;
        self.nvrtc.check("nvrtcGetCUBINSize", unsafe { (api.nvrtcGetCUBINSize)(self.raw, &mut size) })?;
        let mut buffer = vec![0u8; size];
        if size > 0 {
            self.nvrtc.check("nvrtcGetCUBIN", unsafe { (api.nvrtcGetCUBIN)(self.raw, buffer.as_mut_ptr() as *mut c_char) })?;
        }
        Ok(buffer)
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        unsafe { (self.nvrtc.api.nvrtcDestroyProgram)(&mut self.raw) };
    }
}

/// The in-memory name the prelude is pre-included under.
const PRELUDE_NAME: &str = "kernel_contracts_cuda_prelude.h";

/// Options every kernel is compiled with, besides the architecture, the prelude and the
/// include folders. `--fmad=false`: no contraction into FMA, so results are the bits the
/// host backend (-ffp-contract=off) and gfx1201 (-ffp-contract=off) give. ptxas's report
/// (`-v`) goes into the log: registers, shared memory, stack and spill bytes per kernel.
pub const OPTIONS: &[&str] = &["--fmad=false", "-std=c++17", "-default-device", "--ptxas-options=-v"];

/// What NVRTC predefines under [`OPTIONS`] beyond the host preprocessor's own (`__cplusplus`
/// 201703L, `__STDC__`, `__STDC_HOSTED__`) and the architecture's and version's
/// ([`host_preprocessor_defines`]): NVRTC 13.0 for sm_90, probed over 649 names (every macro
/// g++ and clang predefine, and NVIDIA's documented ones), each printed by `#pragma message`.
/// NVRTC has no `-dM`: the host preprocessor stands in for it (the cache's list of what a
/// build read, the host build's comparison of the lines each target compiles), with these.
const PREDEFINED: &[(&str, &str)] = &[
    ("__CUDACC_RTC__", "1"),
    ("__CUDACC__", "1"),
    ("__CUDA_FTZ", "0"),
    ("__CUDA_PREC_DIV", "1"),
    ("__CUDA_PREC_SQRT", "1"),
    ("__EDG_VERSION__", "606"),
    ("__EDG__", "1"),
    ("__EXCEPTIONS", "1"),
    ("__LP64__", "1"),
    ("__NVCC_DIAG_PRAGMA_SUPPORT__", "1"),
    ("__PRAGMA_REDEFINE_EXTNAME", "1"),
    ("__STDCPP_DEFAULT_NEW_ALIGNMENT__", "16ul"),
    ("__USE_FAST_MATH__", "0"),
    ("__cpp_aggregate_bases", "201603L"),
    ("__cpp_aggregate_nsdmi", "201304L"),
    ("__cpp_alias_templates", "200704L"),
    ("__cpp_aligned_new", "201606L"),
    ("__cpp_attributes", "200809L"),
    ("__cpp_binary_literals", "201304L"),
    ("__cpp_capture_star_this", "201603L"),
    ("__cpp_constexpr", "201603L"),
    ("__cpp_decltype", "200707L"),
    ("__cpp_decltype_auto", "201304L"),
    ("__cpp_deduction_guides", "201703L"),
    ("__cpp_delegating_constructors", "200604L"),
    ("__cpp_enumerator_attributes", "201411L"),
    ("__cpp_exceptions", "199711L"),
    ("__cpp_fold_expressions", "201603L"),
    ("__cpp_generic_lambdas", "201304L"),
    ("__cpp_guaranteed_copy_elision", "201606L"),
    ("__cpp_hex_float", "201603L"),
    ("__cpp_if_constexpr", "201606L"),
    ("__cpp_inheriting_constructors", "201511L"),
    ("__cpp_init_captures", "201304L"),
    ("__cpp_initializer_lists", "200806L"),
    ("__cpp_inline_variables", "201606L"),
    ("__cpp_lambdas", "200907L"),
    ("__cpp_namespace_attributes", "201411L"),
    ("__cpp_nested_namespace_definitions", "201411L"),
    ("__cpp_noexcept_function_type", "201510L"),
    ("__cpp_nontype_template_args", "201411L"),
    ("__cpp_nontype_template_parameter_auto", "201606L"),
    ("__cpp_nsdmi", "200809L"),
    ("__cpp_range_based_for", "201603L"),
    ("__cpp_raw_strings", "200710L"),
    ("__cpp_ref_qualifiers", "200710L"),
    ("__cpp_return_type_deduction", "201304L"),
    ("__cpp_rtti", "199711L"),
    ("__cpp_rvalue_references", "200610L"),
    ("__cpp_sized_deallocation", "201309L"),
    ("__cpp_static_assert", "201411L"),
    ("__cpp_structured_bindings", "201606L"),
    ("__cpp_template_template_args", "201611L"),
    ("__cpp_threadsafe_static_init", "200806L"),
    ("__cpp_unicode_characters", "200704L"),
    ("__cpp_unicode_literals", "200710L"),
    ("__cpp_user_defined_literals", "200809L"),
    ("__cpp_variable_templates", "201304L"),
    ("__cpp_variadic_templates", "200704L"),
    ("__cpp_variadic_using", "201611L"),
];

/// The host preprocessor's flags (after `-x c++ -std=c++17`) that make it preprocess as NVRTC
/// does for `sm_<digits>` at NVRTC `version`: none of its own macros (`-undef`, and the three
/// the C++ front end keeps), no system headers, NVRTC's predefined macros.
pub fn host_preprocessor_defines(digits: &str, version: (i32, i32)) -> Vec<String> {
    let mut flags: Vec<String> =
        ["-undef", "-nostdinc", "-U_GNU_SOURCE", "-U__STDC_UTF_16__", "-U__STDC_UTF_32__"].map(String::from).into();
    flags.extend(PREDEFINED.iter().map(|(name, value)| format!("-D{name}={value}")));
    flags.push(format!("-D__CUDA_ARCH__={digits}0"));
    flags.push(format!("-D__CUDA_ARCH_LIST__={digits}0"));
    // true only for an arch-specific target (sm_90a), which no build here asks for
    flags.push("-D__CUDA_ARCH_HAS_FEATURE__(feature)=0".into());
    let (major, minor) = version;
    flags.extend([format!("-D__CUDACC_VER_MAJOR__={major}"), format!("-D__CUDACC_VER_MINOR__={minor}")]);
    flags.extend([format!("-D__CUDA_API_VER_MAJOR__={major}"), format!("-D__CUDA_API_VER_MINOR__={minor}")]);
    // the build number is the probed release's (nvrtcVersion says major and minor alone)
    if version == (13, 0) {
        flags.push("-D__CUDACC_VER_BUILD__=88".into());
    }
    flags
}

/// Kernel sources to sm_XX cubins through NVRTC, with the cuda prelude pre-included.
pub struct CudaCompiler {
    nvrtc: Arc<Nvrtc>,
    prelude: PathBuf,
    prelude_text: String,
    cache_dir: Option<PathBuf>,
}

/// A compiled kernel source: the cubin, NVRTC's log and what the cubin records.
#[derive(Clone, Debug)]
pub struct Cubin {
    pub arch: String,
    pub image: Vec<u8>,
    pub log: String,
    pub info: CubinInfo,
    /// The ptxas report by entry function.
    pub report: std::collections::HashMap<String, PtxasFunction>,
    /// Each kernel of the source as the cubin names it (an `extern "C"` name as it is).
    pub names: BTreeMap<String, String>,
}

impl Cubin {
    /// The cubin's name of `kernel`: its lowered name, or the name itself.
    pub fn entry<'a>(&'a self, kernel: &'a str) -> &'a str {
        self.names.get(kernel).map_or(kernel, String::as_str)
    }
}

impl CudaCompiler {
    pub fn new(nvrtc: Arc<Nvrtc>, prelude: &Path, cache_dir: Option<PathBuf>) -> Result<CudaCompiler, EngineError> {
        let prelude_text = fs::read_to_string(prelude).map_err(|e| EngineError::ReadSource { path: prelude.to_path_buf(), source: e })?;
        Ok(CudaCompiler { nvrtc, prelude: prelude.to_path_buf(), prelude_text, cache_dir })
    }

    pub fn nvrtc(&self) -> &Arc<Nvrtc> {
        &self.nvrtc
    }

    pub fn prelude(&self) -> &Path {
        &self.prelude
    }

    /// Every option for `arch` (`sm_90`) and this source's include folders.
    pub fn options(&self, source: &KernelSource, arch: &str) -> Vec<String> {
        let mut options = vec![format!("--gpu-architecture={arch}")];
        options.extend(OPTIONS.iter().map(|o| o.to_string()));
        options.push(format!("--pre-include={PRELUDE_NAME}"));
        for dir in &source.include_dirs {
            options.push(format!("--include-path={}", dir.display()));
        }
        options
    }

    /// The cubin of `source` for `arch`, from the cache when every file the last compile
    /// read, the cubin and its log still hash as recorded.
    pub fn compile(&self, source: &KernelSource, arch: &str) -> Result<Cubin, EngineError> {
        let options = self.options(source, arch);
        let (image, log, names) = match &self.cache_dir {
            Some(dir) => self.compile_cached(source, arch, &options, dir)?,
            None => {
                let compiled = self.compile_bytes(source, &read(&source.path)?, &options)?;
                (compiled.cubin, compiled.log, compiled.names)
            }
        };
        let info = cubin::parse(&image).map_err(|e| EngineError::Tool {
            tool: "cubin reader".into(),
            path: source.display_path.clone(),
            reason: e,
        })?;
        let report = cubin::parse_ptxas_report(&log);
        Ok(Cubin { arch: arch.to_string(), image, log, info, report, names })
    }

    fn compile_bytes(&self, source: &KernelSource, bytes: &[u8], options: &[String]) -> Result<Compiled, EngineError> {
        let text = std::str::from_utf8(bytes).map_err(|_| EngineError::Compile {
            path: source.display_path.clone(),
            compiler: self.nvrtc.identity(),
            log: "the source is not UTF-8".into(),
        })?;
        let headers = vec![(PRELUDE_NAME.to_string(), self.prelude_text.clone())];
        self.nvrtc.compile(&source.display_path, text, &headers, options, &source.kernels)
    }

    fn compile_cached(&self, source: &KernelSource, arch: &str, options: &[String], dir: &Path) -> Result<CompiledParts, EngineError> {
        let identity = format!("NVRTC {}.{}", self.nvrtc.version.0, self.nvrtc.version.1);
        // include folders are in the key already, relative to the repository
        let mut parts = vec![identity.as_str()];
        parts.extend(options.iter().map(String::as_str).filter(|o| !o.starts_with("--include-path=")));
        let key = |bytes: &[u8]| CacheKey::new(source, bytes, self.prelude_text.as_bytes(), &parts, arch);
        let cache = KernelCache::new(dir);
        if let Some(found) = cache.lookup(&key(&read(&source.path)?), 3) {
            let names = names_of(&String::from_utf8_lossy(&found[2].bytes));
            return Ok((found[0].bytes.clone(), String::from_utf8_lossy(&found[1].bytes).into_owned(), names));
        }

        let work = BuildDir::new(dir, &format!("nvrtc-{arch}"))?;
        let bytes = read(&source.path)?;
        let key = key(&bytes);
        let compiled = self.compile_bytes(source, &bytes, options)?;
        // without the list of what NVRTC read, the cubin is used but not kept
        if let Some(reads) = self.reads(source, arch) {
            let recorded = cache::record(&key, &reads, &cache::user_dirs(source), &[], &work);
            let artifacts = vec![
                ("cubin", Staged::Bytes(compiled.cubin.clone())),
                ("log", Staged::Bytes(compiled.log.clone().into_bytes())),
                ("names", Staged::Bytes(names_text(&compiled.names).into_bytes())),
            ];
            cache.store(&key, recorded, artifacts)?;
        }
        Ok((compiled.cubin, compiled.log, compiled.names))
    }

    /// What NVRTC reads for `source`: the host preprocessor over the source as NVRTC sees
    /// it, with NVRTC's predefined macros ([`cache::runtime_compiler_reads`]).
    fn reads(&self, source: &KernelSource, arch: &str) -> Option<Reads> {
        let digits: String = arch.strip_prefix("sm_")?.chars().take_while(char::is_ascii_digit).collect();
        cache::runtime_compiler_reads(source, &self.prelude, &host_preprocessor_defines(&digits, self.nvrtc.version))
    }
}

/// A cubin, its log and its kernels' names.
type CompiledParts = (Vec<u8>, String, BTreeMap<String, String>);

fn read(path: &Path) -> Result<Vec<u8>, EngineError> {
    fs::read(path).map_err(|e| EngineError::ReadSource { path: path.to_path_buf(), source: e })
}
