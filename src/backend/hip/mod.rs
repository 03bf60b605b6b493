//! The hip backend: kernels compiled by hiprtc for the device's own `gcnArchName` (code
//! object v5), loaded and launched through libamdhip64's module API; rocBLAS for the BF16
//! projection. Every library is opened at run time (libloading), in the cuda backend's three
//! layers: raw symbol tables (`sys`), `Result`-returning wrappers with the vendor's error
//! names, owning types that free on drop (`runtime`, `hiprtc`, `rocblas`). Resource usage
//! comes from the code object's metadata note (the static gfx1201 path's reader),
//! cross-checked against hipFuncGetAttribute.
//!
//! Needs ROCm 6.3 or later and a GPU. With Debian's ROCm 5.2 and no GPU the probe fails with
//! HIP's own "no device" error (`hipInit ... hipErrorInvalidDevice (101)`).

pub mod hiprtc;
pub mod rocblas;
pub mod runtime;
pub mod sys;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::EngineError;
use crate::backend::pool::BufferPool;
use crate::backend::staging::{STAGE_BYTES, Staging};
use crate::backend::{Backend, DeviceBuffer, KernelArg, KernelSource, LaunchDims, LaunchReport, Memset, Module, Schedule, WatchedTensor};
use hiprtc::{HipCodeObject, HipCompiler, Hiprtc};
use rocblas::{BlasHandle, Rocblas};
use runtime::{DeviceMemory, LoadedModule, PinnedMemory, Runtime, Stream};
use sys::*;

/// The rocBLAS workspace the engine plans for and owns.
pub const BLAS_WORKSPACE_BYTES: usize = 32 << 20;

#[derive(Clone, Debug)]
pub struct HipOptions {
    /// `kernels/hip/hiprtc_prelude.h`.
    pub prelude: PathBuf,
    /// Device ordinal (`KERNEL_CONTRACTS_HIP_DEVICE`, default 0).
    pub device: i32,
    /// libamdhip64 (`KERNEL_CONTRACTS_LIBAMDHIP64`); default: the sonames of `runtime::LIBAMDHIP64`.
    pub runtime_library: Option<String>,
    /// hiprtc (`KERNEL_CONTRACTS_LIBHIPRTC`); default: `hiprtc::LIBHIPRTC`, then libamdhip64.
    pub hiprtc_library: Option<String>,
    /// rocBLAS (`KERNEL_CONTRACTS_LIBROCBLAS`); default: `rocblas::LIBROCBLAS`.
    pub rocblas_library: Option<String>,
    /// Where hiprtc's code objects are cached (the run's kernel cache); none: every load
    /// compiles.
    pub cache_dir: Option<PathBuf>,
}

impl HipOptions {
    pub fn for_root(root: &Path) -> HipOptions {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        HipOptions {
            prelude: root.join("kernels/hip/hiprtc_prelude.h"),
            device: var("KERNEL_CONTRACTS_HIP_DEVICE").and_then(|v| v.parse().ok()).unwrap_or(0),
            runtime_library: var("KERNEL_CONTRACTS_LIBAMDHIP64"),
            hiprtc_library: var("KERNEL_CONTRACTS_LIBHIPRTC"),
            rocblas_library: var("KERNEL_CONTRACTS_LIBROCBLAS"),
            cache_dir: None,
        }
    }
}

pub struct HipBackend {
    options: HipOptions,
    runtime: Arc<Runtime>,
    stream: Arc<Stream>,
    compiler: HipCompiler,
    properties: runtime::DeviceProperties,
    versions: (i32, i32),
    modules: Mutex<HashMap<PathBuf, Arc<HipModule>>>,
    rocblas: OnceLock<Result<Arc<Rocblas>, (String, String)>>,
    blas_handle: Mutex<Option<BlasHandle>>,
    /// Buffers kept for the next tensor of their size (`pool`).
    buffers: Arc<BufferPool>,
    /// The page-locked stages of large copies.
    staging: Arc<Staging<PinnedMemory>>,
}

impl HipBackend {
    /// Opens libamdhip64, initialises HIP, selects the device, reads its `gcnArchName` and
    /// finds hiprtc. A missing library, `hipInit != 0` and a device count of 0 are each an
    /// error: the library's name, or HIP's error name and code.
    pub fn probe(options: HipOptions) -> Result<HipBackend, EngineError> {
        let runtime = Runtime::open(&runtime::candidates(options.runtime_library.as_deref()))?;
        let versions = runtime.versions()?;
        runtime.init().map_err(|e| match e {
            EngineError::Vendor { library, call, code, name, message } => EngineError::Vendor {
                library,
                call,
                code,
                name,
                message: format!("{message}; no HIP device found (hipInit fails this way without a usable AMD GPU)"),
            },
            other => other,
        })?;
        let count = runtime.device_count()?;
        if count == 0 {
            return Err(EngineError::LoadLibrary {
                library: runtime.library().to_string(),
                reason: "hipGetDeviceCount: 0 HIP devices (no AMD GPU visible to this process)".into(),
            });
        }
        if options.device < 0 || options.device >= count {
            return Err(EngineError::LoadLibrary {
                library: runtime.library().to_string(),
                reason: format!("device {} asked for, {count} HIP device(s) present", options.device),
            });
        }
        runtime.select(options.device)?;
        let properties = runtime.properties(options.device)?;
        if properties.arch().is_empty() {
            return Err(EngineError::LoadLibrary {
                library: runtime.library().to_string(),
                reason: "the device's gcnArchName is empty".into(),
            });
        }
        let stream = Arc::new(Stream::create(&runtime)?);
        let hiprtc = Hiprtc::discover(&hiprtc::candidates(options.hiprtc_library.as_deref(), runtime.library()))?;
        let compiler = HipCompiler::new(hiprtc, &options.prelude, options.cache_dir.clone())?;
        let pinned = runtime.clone();
        Ok(HipBackend {
            options,
            runtime,
            stream,
            compiler,
            properties,
            versions,
            modules: Mutex::new(HashMap::new()),
            rocblas: OnceLock::new(),
            blas_handle: Mutex::new(None),
            buffers: BufferPool::new(),
            staging: Arc::new(Staging::new(STAGE_BYTES, move |len| PinnedMemory::allocate(&pinned, len))),
        })
    }

    pub fn options(&self) -> &HipOptions {
        &self.options
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    pub fn properties(&self) -> &runtime::DeviceProperties {
        &self.properties
    }

    pub fn compiler(&self) -> &HipCompiler {
        &self.compiler
    }

    /// rocBLAS, opened on first use (only the BF16 projection needs it).
    pub fn rocblas(&self) -> Result<Arc<Rocblas>, EngineError> {
        self.rocblas
            .get_or_init(|| {
                Rocblas::discover(&rocblas::candidates(self.options.rocblas_library.as_deref())).map(Arc::new).map_err(|e| match e {
                    EngineError::LoadLibrary { library, reason } => (library, reason),
                    other => ("librocblas".to_string(), other.to_string()),
                })
            })
            .clone()
            .map_err(|(library, reason)| EngineError::LoadLibrary { library, reason })
    }

    fn hip_module(&self, source: &KernelSource) -> Result<Arc<HipModule>, EngineError> {
        let modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        modules.get(&source.path).cloned().ok_or_else(|| EngineError::Op {
            op: "hip backend".into(),
            reason: format!("{} is not loaded (load_module first)", source.display_path),
        })
    }

    /// The code object hiprtc built for a loaded source.
    pub fn code_object(&self, source: &KernelSource) -> Result<HipCodeObject, EngineError> {
        Ok(self.hip_module(source)?.code_object.clone())
    }
}

impl Backend for HipBackend {
    fn name(&self) -> &'static str {
        "hip"
    }

    fn arch(&self) -> String {
        self.properties.arch().to_string()
    }

    fn device_memory(&self) -> Option<u64> {
        self.runtime.device_memory(self.options.device).ok().map(|bytes| bytes as u64)
    }

    fn toolchain(&self) -> String {
        let v = self.versions.1;
        format!(
            "{}, HIP runtime {}.{}.{} ({}), {} {}",
            self.compiler.hiprtc().identity(),
            v / 10_000_000,
            (v / 100_000) % 100,
            v % 100_000,
            self.runtime.library(),
            self.properties.name,
            self.properties.gcn_arch_name
        )
    }

    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
        self.buffers.allocate(bytes, |bytes| {
            Ok(Box::new(HipBuffer { memory: DeviceMemory::allocate(&self.runtime, bytes)?, staging: self.staging.clone() }))
        })
    }

    fn has_live_limits(&self) -> bool {
        true
    }

    fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
        self.runtime.copy(to, from, bytes)
    }

    fn device_lost(&self) -> Option<String> {
        self.runtime.lost()
    }

    /// rocblas_gemm_ex with bf16 inputs and f32 compute, through one handle whose workspace
    /// (BLAS_WORKSPACE_BYTES) the engine allocates once, at the first projection.
    fn gemm_bf16(&self, request: &crate::backend::GemmBf16) -> Result<LaunchReport, EngineError> {
        let int = |v: usize, what: &str| {
            i32::try_from(v)
                .map_err(|_| EngineError::Op { op: "projection_bf16".into(), reason: format!("{what} = {v} does not fit rocblas_int") })
        };
        let projection = rocblas::ProjectionBf16 {
            x: request.x,
            w: request.w,
            y: request.y,
            y_is_bf16: match request.y_dtype {
                crate::DType::Bf16 => true,
                crate::DType::F32 => false,
                other => return Err(EngineError::Op { op: "projection_bf16".into(), reason: format!("y in {other} (f32 or bf16)") }),
            },
            rows: int(request.m, "m")?,
            k: int(request.k, "k")?,
            out: int(request.n, "n")?,
        };
        let mut slot = self.blas_handle.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            let mut handle = BlasHandle::create(&self.rocblas()?, &self.stream)?;
            handle.set_workspace(BLAS_WORKSPACE_BYTES)?;
            *slot = Some(handle);
        }
        slot.as_ref().unwrap().projection_bf16(projection)?;
        Ok(LaunchReport::default())
    }

    fn load_module(&self, source: &KernelSource) -> Result<Arc<dyn Module>, EngineError> {
        {
            let modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(m) = modules.get(&source.path)
                && m.source.kernels == source.kernels
            {
                return Ok(m.clone());
            }
        }
        let code_object = self.compiler.compile(source, self.properties.arch())?;
        let module = Arc::new(HipModule::load(source, code_object, &self.runtime, &self.stream)?);
        self.modules.lock().unwrap_or_else(|p| p.into_inner()).insert(source.path.clone(), module.clone());
        Ok(module)
    }
}

struct HipBuffer {
    memory: DeviceMemory,
    staging: Arc<Staging<PinnedMemory>>,
}

impl DeviceBuffer for HipBuffer {
    fn len(&self) -> usize {
        self.memory.len()
    }

    fn device_address(&self) -> u64 {
        self.memory.address()
    }

    fn write(&mut self, offset: usize, bytes: &[u8]) -> Result<(), EngineError> {
        self.memory.check_range(offset, bytes.len())?;
        self.staging.write(offset, bytes, &|at, piece| self.memory.write(at, piece))
    }

    fn read(&self, offset: usize, bytes: &mut [u8]) -> Result<(), EngineError> {
        self.memory.check_range(offset, bytes.len())?;
        self.staging.read(offset, bytes, &|at, piece| self.memory.read(at, piece))
    }

    fn fill(&mut self, offset: usize, len: usize, pattern: &[u8]) -> Result<(), EngineError> {
        match Memset::of(offset, len, pattern) {
            Some(memset) => self.memory.set(offset, len, memset),
            None => crate::backend::fill_by_writes(self, offset, len, pattern),
        }
    }
}

struct Kernel {
    function: hipFunction_t,
    max_threads: u32,
    /// The bytes of each declared argument, from the code object's note: HIP copies each
    /// parameter's size from it, so a launch that passes other sizes is refused first.
    params: Vec<u32>,
}

unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

pub struct HipModule {
    source: KernelSource,
    code_object: HipCodeObject,
    kernels: HashMap<String, Kernel>,
    stream: Arc<Stream>,
    runtime: Arc<Runtime>,
    // last: functions are valid while the module is loaded
    _module: LoadedModule,
}

/// hipFuncGetAttribute's figures of one kernel. ROCm's runtime (clr) answers them from the
/// code object's metadata note: MAX_THREADS_PER_BLOCK is `.max_flat_workgroup_size`,
/// SHARED_SIZE_BYTES `.group_segment_fixed_size` (static LDS only), so they must agree with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveUsage {
    pub threads: u32,
    /// HIP_FUNC_ATTRIBUTE_NUM_REGS (= `.vgpr_count`).
    pub vgprs: u32,
    /// HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (= `.group_segment_fixed_size`).
    pub lds: u32,
    /// HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (= `.private_segment_fixed_size`).
    pub scratch: u32,
}

impl HipModule {
    fn load(
        source: &KernelSource,
        code_object: HipCodeObject,
        runtime: &Arc<Runtime>,
        stream: &Arc<Stream>,
    ) -> Result<HipModule, EngineError> {
        let module = LoadedModule::load(runtime, &code_object.image).map_err(|e| EngineError::Compile {
            path: source.display_path.clone(),
            compiler: format!("hipModuleLoadData of the {} code object from {}", code_object.arch, code_object.compiler),
            log: e.to_string(),
        })?;
        let mut kernels = HashMap::new();
        for name in &source.kernels {
            let entry = code_object.entry(name);
            let function = module.function(entry)?;
            let max_threads = runtime.function_attribute(function, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32;
            // a kernel the note does not describe, or without `.args`, cannot be checked: refused
            let params = code_object.metadata.kernel(entry).and_then(|k| k.explicit_arg_sizes.clone()).ok_or_else(|| {
                EngineError::MissingSymbol {
                    library: format!("{} ({} code object's NT_AMDGPU_METADATA)", source.display_path, code_object.arch),
                    symbol: format!("{name} .args"),
                    hint: " (the note must list the kernel's arguments, so that a launch's can be checked against them)".into(),
                }
            })?;
            kernels.insert(name.clone(), Kernel { function, max_threads, params });
        }
        Ok(HipModule { source: source.clone(), code_object, kernels, stream: stream.clone(), runtime: runtime.clone(), _module: module })
    }

    pub fn code_object(&self) -> &HipCodeObject {
        &self.code_object
    }

    fn kernel(&self, name: &str) -> Result<&Kernel, EngineError> {
        self.kernels.get(name).ok_or_else(|| EngineError::MissingSymbol {
            library: format!("{} ({} code object)", self.source.display_path, self.code_object.arch),
            symbol: name.to_string(),
            hint: format!(" (`{name}` is not a kernel the source was loaded with)"),
        })
    }

    pub fn live_usage(&self, kernel: &str) -> Result<LiveUsage, EngineError> {
        let function = self.kernel(kernel)?.function;
        self.runtime.bind()?;
        let get = |attribute| self.runtime.function_attribute(function, attribute).map(|v| v as u32);
        Ok(LiveUsage {
            threads: get(HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            vgprs: get(HIP_FUNC_ATTRIBUTE_NUM_REGS)?,
            lds: get(HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            scratch: get(HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        })
    }

    /// The note's figures (as `Gfx1201Static` names them), after checking that
    /// hipFuncGetAttribute agrees with the note on VGPRs, static LDS and scratch.
    pub fn checked_usage(&self, kernel: &str) -> Result<crate::backend::ResourceUsage, EngineError> {
        let file = format!("{} (hiprtc code object for {})", self.source.display_path, self.code_object.arch);
        let note =
            self.code_object.metadata.kernel(self.code_object.entry(kernel)).ok_or_else(|| crate::amdgpu::MetadataError::NoKernel {
                file: file.clone(),
                kernel: kernel.to_string(),
                available: self.code_object.metadata.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", "),
            })?;
        let usage = crate::amdgpu::ResourceUsage::from_kernel(note, self.code_object.metadata.arch());
        let live = self.live_usage(kernel)?;
        let pairs = [
            ("HIP_FUNC_ATTRIBUTE_NUM_REGS", live.vgprs, ".vgpr_count", usage.vgprs),
            ("HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES", live.lds, ".group_segment_fixed_size", usage.lds_bytes),
            ("HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES", live.scratch, ".private_segment_fixed_size", usage.scratch_bytes),
        ];
        let disagreements: Vec<String> = pairs
            .iter()
            .filter(|(_, a, _, b)| a != b)
            .map(|(attr, a, field, b)| format!("hipFuncGetAttribute {attr} = {a} but the note's {field} = {b}"))
            .collect();
        if !disagreements.is_empty() {
            return Err(EngineError::Tool {
                tool: "the hipFuncGetAttribute cross-check".into(),
                path: file,
                reason: format!("kernel `{kernel}`: {}", disagreements.join("; ")),
            });
        }
        Ok(crate::amdgpu::engine_usage(&usage, &self.code_object.compiler))
    }
}

impl Module for HipModule {
    fn source(&self) -> &KernelSource {
        &self.source
    }

    fn resource_usage(&self, kernel: &str) -> Option<Result<crate::backend::ResourceUsage, EngineError>> {
        Some(self.checked_usage(kernel))
    }

    /// Launches on the backend's stream and waits for the device. `Schedule` is a host-only
    /// hint. Parameters go one 8-byte slot each; HIP copies each one's size from the code
    /// object's own argument list, which the arguments' sizes are checked against first.
    fn launch_watched(
        &self,
        kernel: &str,
        dims: LaunchDims,
        _schedule: Schedule,
        args: &[KernelArg],
        _tensors: &[WatchedTensor],
    ) -> Result<LaunchReport, EngineError> {
        let bad = |reason: String| EngineError::BadLaunch { kernel: kernel.to_string(), reason };
        let k = self.kernel(kernel)?;
        crate::backend::check_argument_sizes(kernel, &k.params, args)?;
        if dims.grid.contains(&0) || dims.block.contains(&0) {
            return Err(bad(format!("grid {:?} and block {:?} must have no zero dimension", dims.grid, dims.block)));
        }
        let threads = dims.block.iter().map(|&d| d as u64).product::<u64>();
        if threads > k.max_threads as u64 {
            return Err(bad(format!("block of {threads} threads (HIP allows {} for this kernel)", k.max_threads)));
        }
        if let Some(lost) = self.runtime.lost() {
            return Err(EngineError::KernelFault {
                kernel: kernel.to_string(),
                source_path: self.source.display_path.clone(),
                message: format!("not launched: the HIP device is unusable since {lost}"),
            });
        }
        let mut values: Vec<[u8; 8]> = args.iter().map(|a| a.bytes()).collect();
        let mut pointers: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr() as *mut c_void).collect();
        let shape = format!("grid {:?} block {:?} dynamic shared {}", dims.grid, dims.block, dims.dynamic_shared);
        let fault = |e: EngineError, when: &str| {
            let sticky = matches!(&e, EngineError::Vendor { code, .. } if runtime::is_sticky(*code));
            let message = format!("{when} ({shape}): {e}");
            if sticky {
                self.runtime.mark_lost(format!("`{kernel}` ({}) faulted: {message}", self.source.display_path));
            }
            EngineError::KernelFault { kernel: kernel.to_string(), source_path: self.source.display_path.clone(), message }
        };
        unsafe { self.runtime.launch(k.function, dims.grid, dims.block, dims.dynamic_shared, self.stream.raw(), &mut pointers) }.map_err(
            |e| match &e {
                EngineError::Vendor { code, .. } if !runtime::is_sticky(*code) => bad(format!("{shape}: {e}")),
                _ => fault(e, "hipModuleLaunchKernel"),
            },
        )?;
        self.runtime.synchronize().map_err(|e| fault(e, "hipDeviceSynchronize after hipModuleLaunchKernel"))?;
        Ok(LaunchReport {
            blocks: dims.grid.iter().map(|&d| d as u64).product(),
            switches: 0,
            inactive_lane_reads: 0,
            block_threads: dims.block.iter().product(),
            findings: Vec::new(),
        })
    }
}
