//! hiprtc, layers (b) and (c): discovery (libhiprtc.so / .so.7 / .so.6, else the hiprtc*
//! symbols inside libamdhip64 as ROCm 5.x ships them), one wrapper per call with hiprtc's
//! own name for the result, a program that is destroyed on drop, and the compiler that turns
//! a kernel source into a code object for the device's `gcnArchName` (cached on disk as the
//! cubins are, by what the compile read, `crate::backend::cache`).

use std::collections::BTreeMap;
use std::ffi::{CString, c_char, c_int};
use std::fs;
use std::path::{Path, PathBuf};

use super::sys::*;
use crate::EngineError;
use crate::amdgpu::CodeObjectMetadata;
use crate::backend::KernelSource;
use crate::backend::cache::{self, BuildDir, CacheKey, KernelCache, Staged};
use crate::backend::vendor::{self, Vendor};

/// Sonames tried in order (the dev symlink, ROCm 7, ROCm 6) before falling back to the
/// hiprtc* symbols inside libamdhip64, where ROCm 5.x ships them.
pub const LIBHIPRTC: &[&str] = &["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"];

/// What is tried (the vendor layer's list): `library` (`KERNEL_CONTRACTS_LIBHIPRTC`) alone
/// when given, else the sonames, then `fallback` (the libamdhip64 the runtime opened).
pub fn candidates(library: Option<&str>, fallback: &str) -> Vec<String> {
    let mut list = Vendor::Hiprtc.candidates(library);
    if library.is_none() && std::env::var_os("KERNEL_CONTRACTS_LIBHIPRTC").is_none_or(|v| v.is_empty()) {
        list.push(fallback.to_string());
    }
    list
}

pub struct Hiprtc {
    api: HiprtcApi,
    pub version: (i32, i32),
}

impl Hiprtc {
    /// The first candidate that opens and has every hiprtc symbol.
    pub fn discover(candidates: &[String]) -> Result<Hiprtc, EngineError> {
        Hiprtc::with_api(HiprtcApi::resolve(vendor::open(Vendor::Hiprtc, candidates, &HiprtcApi::check)?)?)
    }

    fn with_api(api: HiprtcApi) -> Result<Hiprtc, EngineError> {
        let mut version = (0, 0);
        let code = unsafe { (api.hiprtcVersion)(&mut version.0, &mut version.1) };
        let hiprtc = Hiprtc { api, version };
        hiprtc.check("hiprtcVersion", code)?;
        Ok(hiprtc)
    }

    pub fn library(&self) -> &str {
        &self.api.library.name
    }

    /// `hiprtc 6.4 (libhiprtc.so.6)`.
    pub fn identity(&self) -> String {
        format!("hiprtc {}.{} ({})", self.version.0, self.version.1, self.library())
    }

    fn error_text(&self, code: hiprtcResult) -> String {
        c_str(unsafe { (self.api.hiprtcGetErrorString)(code) }).unwrap_or_else(|| format!("hiprtcResult {code}"))
    }

    fn check(&self, call: &str, code: hiprtcResult) -> Result<(), EngineError> {
        if code == HIPRTC_SUCCESS {
            return Ok(());
        }
        let meaning = match code {
            6 => "the source did not compile",
            7 => "a builtin operation failed",
            11 => "internal hiprtc error",
            100 => "linking failed",
            _ => "see hiprtc.h",
        };
        Err(EngineError::Vendor {
            library: self.library().to_string(),
            call: call.to_string(),
            code: code as i64,
            name: self.error_text(code),
            message: meaning.into(),
        })
    }

    /// Compiles one source with in-memory `headers` (name, text), each of `kernels` added as a
    /// name expression (which instantiates a template). On failure the error carries
    /// hiprtc's log. Returns the code object, the log, and each kernel's lowered name.
    pub fn compile(
        &self,
        name: &str,
        source: &str,
        headers: &[(String, String)],
        options: &[String],
        kernels: &[String],
    ) -> Result<CompiledParts, EngineError> {
        let nul = |what: &str| EngineError::Compile {
            path: name.to_string(),
            compiler: self.identity(),
            log: format!("{what} contains a NUL byte"),
        };
        let source_c = CString::new(source).map_err(|_| nul("the source"))?;
        let name_c = CString::new(name).map_err(|_| nul("the source name"))?;
        let texts: Vec<CString> =
            headers.iter().map(|(_, t)| CString::new(t.as_str())).collect::<Result<_, _>>().map_err(|_| nul("a header"))?;
        let names: Vec<CString> =
            headers.iter().map(|(n, _)| CString::new(n.as_str())).collect::<Result<_, _>>().map_err(|_| nul("a header name"))?;
        let options_c: Vec<CString> =
            options.iter().map(|o| CString::new(o.as_str())).collect::<Result<_, _>>().map_err(|_| nul("an option"))?;
        let text_ptrs: Vec<*const c_char> = texts.iter().map(|c| c.as_ptr()).collect();
        let name_ptrs: Vec<*const c_char> = names.iter().map(|c| c.as_ptr()).collect();
        let option_ptrs: Vec<*const c_char> = options_c.iter().map(|c| c.as_ptr()).collect();

        let mut raw: hiprtcProgram = std::ptr::null_mut();
        let (tp, np) = if text_ptrs.is_empty() { (std::ptr::null(), std::ptr::null()) } else { (text_ptrs.as_ptr(), name_ptrs.as_ptr()) };
        self.check("hiprtcCreateProgram", unsafe {
            (self.api.hiprtcCreateProgram)(&mut raw, source_c.as_ptr(), name_c.as_ptr(), text_ptrs.len() as c_int, tp, np)
        })?;
        let program = Program { hiprtc: self, raw };
        let kernels_c: Vec<CString> =
            kernels.iter().map(|k| CString::new(k.as_str())).collect::<Result<_, _>>().map_err(|_| nul("a kernel name"))?;
        for kernel in &kernels_c {
            self.check("hiprtcAddNameExpression", unsafe { (self.api.hiprtcAddNameExpression)(program.raw, kernel.as_ptr()) })?;
        }
        let code = unsafe { (self.api.hiprtcCompileProgram)(program.raw, option_ptrs.len() as c_int, option_ptrs.as_ptr()) };
        let log = program.log()?;
        if code != HIPRTC_SUCCESS {
            return Err(EngineError::Compile {
                path: name.to_string(),
                compiler: self.identity(),
                log: format!("{} ({code})\n{log}", self.error_text(code)),
            });
        }
        let image = program.code()?;
        if image.is_empty() {
            return Err(EngineError::Compile {
                path: name.to_string(),
                compiler: self.identity(),
                log: format!("hiprtcGetCode gave no code object\n{log}"),
            });
        }
        let mut names = BTreeMap::new();
        for (kernel, kernel_c) in kernels.iter().zip(&kernels_c) {
            let mut lowered: *const c_char = std::ptr::null();
            self.check("hiprtcGetLoweredName", unsafe { (self.api.hiprtcGetLoweredName)(program.raw, kernel_c.as_ptr(), &mut lowered) })?;
            names.insert(kernel.clone(), c_str(lowered).unwrap_or_else(|| kernel.clone()));
        }
        Ok((image, log, names))
    }
}

/// A code object, hiprtc's log, and each kernel's name in the code object.
pub type CompiledParts = (Vec<u8>, String, BTreeMap<String, String>);

/// Kernel names as the cache keeps them beside a code object: `name<TAB>lowered name` a line.
fn names_text(names: &BTreeMap<String, String>) -> String {
    names.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect()
}

fn names_of(text: &str) -> BTreeMap<String, String> {
    text.lines().filter_map(|l| l.split_once('\t')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

struct Program<'a> {
    hiprtc: &'a Hiprtc,
    raw: hiprtcProgram,
}

impl Program<'_> {
    fn log(&self) -> Result<String, EngineError> {
        let api = &self.hiprtc.api;
        let mut size = 0usize;
        self.hiprtc.check("hiprtcGetProgramLogSize", unsafe { (api.hiprtcGetProgramLogSize)(self.raw, &mut size) })?;
        let mut buffer = vec![0u8; size.max(1)];
        if size > 0 {
            self.hiprtc.check("hiprtcGetProgramLog", unsafe { (api.hiprtcGetProgramLog)(self.raw, buffer.as_mut_ptr() as *mut c_char) })?;
        }
        let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
        Ok(String::from_utf8_lossy(&buffer[..end]).into_owned())
    }

    fn code(&self) -> Result<Vec<u8>, EngineError> {
        let api = &self.hiprtc.api;
        let mut size = 0usize;
        self.hiprtc.check("hiprtcGetCodeSize", unsafe { (api.hiprtcGetCodeSize)(self.raw, &mut size) })?;
        let mut buffer = vec![0u8; size];
        if size > 0 {
            self.hiprtc.check("hiprtcGetCode", unsafe { (api.hiprtcGetCode)(self.raw, buffer.as_mut_ptr() as *mut c_char) })?;
        }
        Ok(buffer)
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        unsafe { (self.hiprtc.api.hiprtcDestroyProgram)(&mut self.raw) };
    }
}

/// The in-memory name the hiprtc prelude is included under (first line of every source).
pub const PRELUDE_NAME: &str = "kernel_contracts_hiprtc_prelude.h";

/// Options of every compile besides the arch and the include folders: the static gfx1201
/// build's (src/amdgpu/static_build.rs FLAGS) that hiprtc does not set itself. hiprtc adds
/// `-O3 -std=c++14`; the later `-std=c++20` wins. `-ffp-contract=off`: no FMA contraction,
/// the bits of the host backend and of clang-22's static build.
pub const OPTIONS: &[&str] = &["-O3", "-mcode-object-version=5", "-ffp-contract=off", "-std=c++20"];

/// A code object hiprtc built, with its metadata note decoded.
#[derive(Clone, Debug)]
pub struct HipCodeObject {
    pub arch: String,
    pub image: Vec<u8>,
    pub log: String,
    pub metadata: CodeObjectMetadata,
    /// `hiprtc 6.4 (libhiprtc.so.6)`.
    pub compiler: String,
    /// Each kernel of the source as the code object names it (its lowered name).
    pub names: BTreeMap<String, String>,
}

impl HipCodeObject {
    /// The code object's name of `kernel`: its lowered name, or the name itself.
    pub fn entry<'a>(&'a self, kernel: &'a str) -> &'a str {
        self.names.get(kernel).map_or(kernel, String::as_str)
    }
}

/// Kernel sources to code objects through hiprtc, with the hiprtc prelude included first.
pub struct HipCompiler {
    hiprtc: Hiprtc,
    prelude: PathBuf,
    prelude_text: String,
    /// Where code objects are cached; none: every load compiles.
    cache_dir: Option<PathBuf>,
}

impl HipCompiler {
    pub fn new(hiprtc: Hiprtc, prelude: &Path, cache_dir: Option<PathBuf>) -> Result<HipCompiler, EngineError> {
        let prelude_text = fs::read_to_string(prelude).map_err(|e| EngineError::ReadSource { path: prelude.to_path_buf(), source: e })?;
        Ok(HipCompiler { hiprtc, prelude: prelude.to_path_buf(), prelude_text, cache_dir })
    }

    pub fn hiprtc(&self) -> &Hiprtc {
        &self.hiprtc
    }

    pub fn prelude(&self) -> &Path {
        &self.prelude
    }

    /// Every option for `arch` (`gfx1201`, without feature suffix) and the source's include folders.
    pub fn options(&self, source: &KernelSource, arch: &str) -> Vec<String> {
        let mut options = vec![format!("--offload-arch={arch}")];
        options.extend(OPTIONS.iter().map(|o| o.to_string()));
        // hiprtc compiles with ROCm's own HIP headers, never the shims of the backends without ROCm
        for dir in source.include_dirs.iter().filter(|d| !crate::backend::preludes::is_hip_headers(d)) {
            options.push(format!("-I{}", dir.display()));
        }
        options
    }

    /// The text handed to hiprtc: the prelude's include, then the source with its own line
    /// numbers and name (`#line 1`), so diagnostics point into the file.
    pub fn program_text(source: &KernelSource, text: &str) -> String {
        format!("#include \"{PRELUDE_NAME}\"\n#line 1 \"{}\"\n{text}", crate::backend::c_string_body(&source.display_path))
    }

    /// The code object of `source` for `arch`, its note read with the static path's reader;
    /// every kernel the source lists must be in it, as wave32.
    pub fn compile(&self, source: &KernelSource, arch: &str) -> Result<HipCodeObject, EngineError> {
        let options = self.options(source, arch);
        let (image, log, names) = match &self.cache_dir {
            Some(dir) => self.compile_cached(source, arch, &options, dir)?,
            None => self.compile_bytes(source, &read(source)?, &options)?,
        };
        let file = format!("{} (hiprtc code object for {arch})", source.display_path);
        let metadata = crate::amdgpu::read_metadata(&image, &file)?;
        let compiled = crate::amdgpu::metadata::target_arch(&metadata.target).to_string();
        let refuse = |log: String| EngineError::Compile { path: source.display_path.clone(), compiler: self.hiprtc.identity(), log };
        if compiled != arch {
            return Err(refuse(format!("asked for {arch}, the code object is for {} ({})", compiled, metadata.target)));
        }
        for kernel in &source.kernels {
            let entry = names.get(kernel).unwrap_or(kernel);
            let found = metadata
                .kernel(entry)
                .ok_or_else(|| refuse(format!("no kernel `{entry}` (lowered from `{kernel}`) in the code object")))?;
            if found.wavefront_size != 32 {
                return Err(refuse(format!("`{kernel}` was built for wave{} (the kernels assume warpSize 32)", found.wavefront_size)));
            }
        }
        Ok(HipCodeObject { arch: arch.to_string(), image, log, metadata, compiler: self.hiprtc.identity(), names })
    }

    fn compile_bytes(&self, source: &KernelSource, bytes: &[u8], options: &[String]) -> Result<CompiledParts, EngineError> {
        let text = std::str::from_utf8(bytes).map_err(|_| EngineError::Compile {
            path: source.display_path.clone(),
            compiler: self.hiprtc.identity(),
            log: "the source is not UTF-8".into(),
        })?;
        let headers = vec![(PRELUDE_NAME.to_string(), self.prelude_text.clone())];
        self.hiprtc.compile(&source.display_path, &Self::program_text(source, text), &headers, options, &source.kernels)
    }

    /// The code object and log from the cache when every file the last compile read, the code
    /// object and its log still hash as recorded; else compiled and recorded.
    fn compile_cached(&self, source: &KernelSource, arch: &str, options: &[String], dir: &Path) -> Result<CompiledParts, EngineError> {
        let identity = self.hiprtc.identity();
        // include folders are in the key already, relative to the repository
        let mut parts = vec![identity.as_str()];
        parts.extend(options.iter().map(String::as_str).filter(|o| !o.starts_with("-I")));
        let key = |bytes: &[u8]| CacheKey::new(source, bytes, self.prelude_text.as_bytes(), &parts, arch);
        let cache = KernelCache::new(dir);
        if let Some(found) = cache.lookup(&key(&read(source)?), 3) {
            let names = names_of(&String::from_utf8_lossy(&found[2].bytes));
            return Ok((found[0].bytes.clone(), String::from_utf8_lossy(&found[1].bytes).into_owned(), names));
        }
        let work = BuildDir::new(dir, &format!("hiprtc-{arch}"))?;
        let bytes = read(source)?;
        let key = key(&bytes);
        let (image, log, names) = self.compile_bytes(source, &bytes, options)?;
        // hiprtc's predefined macros, as the device compile sees them
        let defines =
            ["-undef", "-nostdinc", "-ffreestanding", "-D__HIP__", "-D__HIPCC_RTC__", "-D__HIP_DEVICE_COMPILE__=1", "-D__AMDGCN__"]
                .map(String::from);
        // without the list of what hiprtc read, the code object is used but not kept
        let mut as_compiled = source.clone();
        as_compiled.include_dirs.retain(|d| !crate::backend::preludes::is_hip_headers(d));
        if let Some(reads) = cache::runtime_compiler_reads(&as_compiled, &self.prelude, &defines) {
            let recorded = cache::record(&key, &reads, &cache::user_dirs(source), &[], &work);
            let artifacts = vec![
                ("hsaco", Staged::Bytes(image.clone())),
                ("log", Staged::Bytes(log.clone().into_bytes())),
                ("names", Staged::Bytes(names_text(&names).into_bytes())),
            ];
            cache.store(&key, recorded, artifacts)?;
        }
        Ok((image, log, names))
    }
}

fn read(source: &KernelSource) -> Result<Vec<u8>, EngineError> {
    fs::read(&source.path).map_err(|e| EngineError::ReadSource { path: source.path.clone(), source: e })
}
