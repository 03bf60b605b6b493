//! The cuda backend: kernels compiled by NVRTC for the device's own compute capability
//! (as cubin), loaded and launched through the driver API; cuBLAS for library ops. Every
//! library is opened at run time (libloading), in three layers as cudarc does: raw symbol
//! tables (`sys`), `Result`-returning wrappers with the vendor's error names, owning types
//! that free on drop (`driver`, `nvrtc`, `cublas`). Static sm_90 figures (registers,
//! shared and local memory) come from NVRTC's cubin without a GPU (`cubin`).

pub mod cubin;
pub mod cublas;
pub mod driver;
pub mod nvrtc;
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
use cublas::{BlasHandle, Cublas};
use driver::{Context, DeviceMemory, Driver, LoadedModule, PinnedMemory, Stream};
use nvrtc::{Cubin, CudaCompiler, Nvrtc};
use sys::*;

/// The architecture the static figures are read for when no GPU says otherwise.
pub const STATIC_ARCH: &str = "sm_90";

#[derive(Clone, Debug)]
pub struct CudaOptions {
    /// `kernels/cuda/prelude.h`.
    pub prelude: PathBuf,
    /// Where cubins are cached (`target/kernel-cache`); none: compile every time.
    pub cache_dir: Option<PathBuf>,
    /// Device ordinal (`KERNEL_CONTRACTS_CUDA_DEVICE`, default 0).
    pub device: i32,
    /// The driver library; default `libcuda.so.1` (`KERNEL_CONTRACTS_LIBCUDA` overrides).
    pub driver_library: Option<String>,
}

impl CudaOptions {
    /// Options for a repository root: its prelude and cache, device and driver from the
    /// environment.
    pub fn for_root(root: &Path) -> CudaOptions {
        CudaOptions {
            prelude: root.join("kernels/cuda/prelude.h"),
            cache_dir: Some(root.join("target/kernel-cache")),
            device: std::env::var("KERNEL_CONTRACTS_CUDA_DEVICE").ok().and_then(|v| v.parse().ok()).unwrap_or(0),
            driver_library: std::env::var("KERNEL_CONTRACTS_LIBCUDA").ok().filter(|v| !v.is_empty()),
        }
    }
}

/// What a kernel uses, read statically from its cubin (no GPU needed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceUsage {
    /// The largest block it can be launched with as compiled: its `__launch_bounds__`,
    /// else 1024.
    pub threads: u32,
    pub registers: u32,
    /// Static `__shared__` bytes the kernel declares (ptxas's "bytes smem"); dynamic
    /// shared memory is the launch's, not counted here.
    pub shared_bytes: u32,
    /// Shared memory the toolchain adds per block on top (1024 on sm_90 when the kernel
    /// has a shared section, else 0). cuobjdump's SHARED column is the sum.
    pub reserved_shared_bytes: u32,
    /// Local memory per thread: the stack frame (private arrays, spills).
    pub local_bytes: u32,
    /// From ptxas's report; `None` if the log had no line for the kernel.
    pub spill_store_bytes: Option<u32>,
    pub spill_load_bytes: Option<u32>,
}

/// What the driver says a loaded kernel uses (cuFuncGetAttribute).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveUsage {
    /// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: launch bounds and registers both limit it.
    pub threads: u32,
    /// CU_FUNC_ATTRIBUTE_NUM_REGS.
    pub registers: u32,
    /// CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES (static shared memory).
    pub shared_bytes: u32,
    /// CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (per thread).
    pub local_bytes: u32,
    /// CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES.
    pub const_bytes: u32,
    /// CU_FUNC_ATTRIBUTE_BINARY_VERSION (90 for sm_90).
    pub binary_version: u32,
}

impl Cubin {
    /// The static figures of `kernel`.
    pub fn usage(&self, kernel: &str) -> Result<ResourceUsage, EngineError> {
        let entry = self.entry(kernel);
        let info = self.info.kernel(entry).ok_or_else(|| EngineError::MissingSymbol {
            library: format!("the {} cubin", self.arch),
            symbol: kernel.to_string(),
            hint: format!(" (kernels in it: {})", self.info.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")),
        })?;
        let reserved = self.info.reserved_shared(info);
        let report = self.report.get(entry);
        Ok(ResourceUsage {
            threads: info.max_threads.map_or(1024, |t| t[0] * t[1].max(1) * t[2].max(1)),
            registers: info.registers,
            shared_bytes: info.shared_section_bytes - reserved,
            reserved_shared_bytes: reserved,
            local_bytes: info.frame_bytes.max(info.min_stack_bytes),
            spill_store_bytes: report.map(|r| r.spill_store_bytes),
            spill_load_bytes: report.map(|r| r.spill_load_bytes),
        })
    }
}

/// The prelude for a source: `cuda/prelude.h` in one of its include folders.
pub fn prelude_for(source: &KernelSource) -> Result<PathBuf, EngineError> {
    source.include_dirs.iter().map(|d| d.join("cuda/prelude.h")).find(|p| p.is_file()).ok_or_else(|| EngineError::ReadSource {
        path: PathBuf::from("cuda/prelude.h"),
        source: std::io::Error::new(std::io::ErrorKind::NotFound, format!("not in any include folder of {}", source.display_path)),
    })
}

/// The static sm_90 figures of `kernel` in `source`, through NVRTC only (no libcuda, no
/// GPU). The prelude is `cuda/prelude.h` from the source's include folders.
pub fn static_usage(source: &KernelSource, kernel: &str) -> Result<ResourceUsage, EngineError> {
    static_cubin(source, STATIC_ARCH)?.usage(kernel)
}

/// The cubin NVRTC makes of `source` for `arch`, without a GPU.
pub fn static_cubin(source: &KernelSource, arch: &str) -> Result<Cubin, EngineError> {
    static_cubin_with(source, arch, &prelude_for(source)?)
}

/// [`static_cubin`] with the prelude given.
pub fn static_cubin_with(source: &KernelSource, arch: &str, prelude: &Path) -> Result<Cubin, EngineError> {
    let compiler = CudaCompiler::new(Nvrtc::shared()?, prelude, None)?;
    compiler.compile(source, arch)
}

/// The cuBLAS workspace the engine plans for (cuBLAS's own recommendation for Hopper).
pub const BLAS_WORKSPACE_BYTES: usize = 32 << 20;

pub struct CudaBackend {
    blas_handle_slot: std::sync::Mutex<Option<BlasHandle>>,
    options: CudaOptions,
    driver: Arc<Driver>,
    device: CUdevice,
    /// The device's primary context and the backend's stream, made at the first call that
    /// needs them (or `open`): a process that only compiles or describes the device (the
    /// run's own, its build process) never makes one, and making contexts is serialised by
    /// the driver (four processes at once took 0.56 s each on an H100, one alone 0.14-0.18 s).
    opened: Mutex<Option<Arc<Opened>>>,
    compiler: CudaCompiler,
    arch: String,
    device_name: String,
    driver_version: i32,
    modules: Mutex<HashMap<PathBuf, Arc<CudaModule>>>,
    blas: OnceLock<Result<Arc<Cublas>, String>>,
    /// Tensors' device buffers, kept for the next tensor of the same size.
    buffers: Arc<BufferPool>,
}

/// What launches need of the device: its primary context, and the stream on it.
struct Opened {
    context: Arc<Context>,
    stream: Arc<Stream>,
    staging: Arc<Staging<PinnedMemory>>,
}

impl CudaBackend {
    /// Opens libcuda.so.1, initialises the driver, describes the device and finds NVRTC; the
    /// device's primary context is retained at first use ([`Backend::open`]). Any failure is
    /// an error value naming the library (and call); with no NVIDIA driver it names
    /// `libcuda.so.1`.
    pub fn probe(options: CudaOptions) -> Result<CudaBackend, EngineError> {
        let driver = Driver::open(options.driver_library.as_deref())?;
        driver.init()?;
        let driver_version = driver.version()?;
        let count = driver.device_count()?;
        if options.device < 0 || options.device >= count {
            return Err(EngineError::LoadLibrary {
                library: driver.library().to_string(),
                reason: format!("device {} asked for, {count} CUDA device(s) present", options.device),
            });
        }
        let device = driver.device(options.device)?;
        let major = driver.device_attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = driver.device_attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let device_name = driver.device_name(device)?;
        let compiler = CudaCompiler::new(Arc::new(Nvrtc::discover()?), &options.prelude, options.cache_dir.clone())?;
        Ok(CudaBackend {
            options,
            driver,
            device,
            opened: Mutex::new(None),
            compiler,
            arch: format!("sm_{major}{minor}"),
            device_name,
            driver_version,
            modules: Mutex::new(HashMap::new()),
            blas: OnceLock::new(),
            blas_handle_slot: std::sync::Mutex::new(None),
            buffers: BufferPool::new(),
        })
    }

    pub fn options(&self) -> &CudaOptions {
        &self.options
    }

    pub fn driver(&self) -> &Arc<Driver> {
        &self.driver
    }

    /// The device's context and stream, made now if no call made them before.
    fn opened(&self) -> Result<Arc<Opened>, EngineError> {
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(opened) = opened.as_ref() {
            return Ok(opened.clone());
        }
        let context = Context::retain(&self.driver, self.device)?;
        let stream = Arc::new(Stream::create(&context)?);
        let pinned = context.clone();
        let staging = Arc::new(Staging::new(STAGE_BYTES, move |len| PinnedMemory::allocate(&pinned, len)));
        Ok(opened.insert(Arc::new(Opened { context, stream, staging })).clone())
    }

    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// `13000` for CUDA 13.0.
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    pub fn compiler(&self) -> &CudaCompiler {
        &self.compiler
    }

    fn cuda_module(&self, source: &KernelSource) -> Result<Arc<CudaModule>, EngineError> {
        let modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        modules.get(&source.path).cloned().ok_or_else(|| EngineError::Op {
            op: "cuda backend".into(),
            reason: format!("{} is not loaded (load_module first)", source.display_path),
        })
    }

    /// The live figures of a kernel of a loaded source (cuFuncGetAttribute).
    pub fn live_usage(&self, source: &KernelSource, kernel: &str) -> Result<LiveUsage, EngineError> {
        self.cuda_module(source)?.live_usage(kernel)
    }

    /// The static figures of a kernel of a loaded source, from the cubin that was loaded.
    pub fn loaded_static_usage(&self, source: &KernelSource, kernel: &str) -> Result<ResourceUsage, EngineError> {
        self.cuda_module(source)?.cubin.usage(kernel)
    }

    /// cuBLAS, opened on first use (only the BLAS path needs it).
    pub fn cublas(&self) -> Result<Arc<Cublas>, EngineError> {
        self.blas
            .get_or_init(|| Cublas::discover().map(Arc::new).map_err(|e| e.to_string()))
            .clone()
            .map_err(|reason| EngineError::LoadLibrary { library: "libcublas".into(), reason })
    }

    /// A cuBLAS handle on the backend's stream with a workspace of `workspace_bytes`.
    pub fn blas_handle(&self, workspace_bytes: usize) -> Result<BlasHandle, EngineError> {
        let opened = self.opened()?;
        let mut handle = BlasHandle::create(&self.cublas()?, &opened.context, &opened.stream)?;
        handle.set_workspace(workspace_bytes)?;
        Ok(handle)
    }

    pub fn stream(&self) -> Result<Arc<Stream>, EngineError> {
        Ok(self.opened()?.stream.clone())
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn arch(&self) -> String {
        self.arch.clone()
    }

    fn device_memory(&self) -> Option<u64> {
        self.driver.device_memory(self.device).ok().map(|bytes| bytes as u64)
    }

    fn toolchain(&self) -> String {
        let v = self.driver_version;
        format!(
            "{}, CUDA driver {}.{} ({}), {} {}",
            self.compiler.nvrtc().identity(),
            v / 1000,
            (v % 1000) / 10,
            self.driver().library(),
            self.device_name,
            self.arch
        )
    }

    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
        let opened = self.opened()?;
        self.buffers.allocate(bytes, |bytes| {
            Ok(Box::new(CudaBuffer { memory: DeviceMemory::allocate(&opened.context, bytes)?, staging: opened.staging.clone() }))
        })
    }

    fn has_live_limits(&self) -> bool {
        true
    }

    fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
        self.opened()?.context.copy(to, from, bytes)
    }

    fn open(&self) -> Result<(), EngineError> {
        self.opened().map(|_| ())
    }

    fn device_lost(&self) -> Option<String> {
        self.driver().lost()
    }

    /// cublasGemmEx with bf16 inputs and 32-bit float compute, through one handle whose
    /// workspace (BLAS_WORKSPACE_BYTES) the engine allocates once, at the first projection.
    fn gemm_bf16(&self, request: &crate::backend::GemmBf16) -> Result<LaunchReport, EngineError> {
        let int = |v: usize, what: &str| {
            i32::try_from(v)
                .map_err(|_| EngineError::Op { op: "projection_bf16".into(), reason: format!("{what} = {v} does not fit cuBLAS's int") })
        };
        let projection = cublas::ProjectionBf16 {
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
        let mut slot = self.blas_handle_slot.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.blas_handle(BLAS_WORKSPACE_BYTES)?);
        }
        slot.as_ref().unwrap().projection_bf16(projection, &self.opened()?.stream)?;
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
        let cubin = self.compiler.compile(source, &self.arch)?;
        let opened = self.opened()?;
        let module = Arc::new(CudaModule::load(source, cubin, &opened.context, &opened.stream)?);
        self.modules.lock().unwrap_or_else(|p| p.into_inner()).insert(source.path.clone(), module.clone());
        Ok(module)
    }
}

/// Device memory behind the `DeviceBuffer` trait.
struct CudaBuffer {
    memory: DeviceMemory,
    staging: Arc<Staging<PinnedMemory>>,
}

impl DeviceBuffer for CudaBuffer {
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
    function: CUfunction,
    /// Parameter sizes in order, from the cubin.
    params: Vec<u32>,
    max_threads: u32,
    /// Dynamic shared memory the function is currently allowed (cuFuncSetAttribute).
    dynamic_allowed: Mutex<u32>,
}

unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

pub struct CudaModule {
    source: KernelSource,
    cubin: Cubin,
    kernels: HashMap<String, Kernel>,
    stream: Arc<Stream>,
    context: Arc<Context>,
    // last: functions are valid while the module is loaded
    _module: LoadedModule,
}

/// Dynamic shared memory a launch may use without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

impl CudaModule {
    fn load(source: &KernelSource, cubin: Cubin, context: &Arc<Context>, stream: &Arc<Stream>) -> Result<CudaModule, EngineError> {
        let module = LoadedModule::load(context, &cubin.image).map_err(|e| EngineError::Compile {
            path: source.display_path.clone(),
            compiler: format!("cuModuleLoadData of the {} cubin", cubin.arch),
            log: e.to_string(),
        })?;
        let driver = context.driver();
        let mut kernels = HashMap::new();
        for name in &source.kernels {
            let entry = cubin.entry(name);
            let info = cubin.info.kernel(entry).ok_or_else(|| EngineError::MissingSymbol {
                library: format!("{} ({} cubin)", source.display_path, cubin.arch),
                symbol: entry.to_string(),
                hint: format!(" (the lowered name of `{name}`)"),
            })?;
            let function = module.function(entry)?;
            let max_threads = driver.function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32;
            kernels.insert(
                name.clone(),
                Kernel { function, params: info.param_sizes(), max_threads, dynamic_allowed: Mutex::new(DEFAULT_DYNAMIC_SHARED) },
            );
        }
        Ok(CudaModule { source: source.clone(), cubin, kernels, stream: stream.clone(), context: context.clone(), _module: module })
    }

    pub fn cubin(&self) -> &Cubin {
        &self.cubin
    }

    fn kernel(&self, name: &str) -> Result<&Kernel, EngineError> {
        self.kernels.get(name).ok_or_else(|| EngineError::MissingSymbol {
            library: format!("{} ({} cubin)", self.source.display_path, self.cubin.arch),
            symbol: name.to_string(),
            hint: format!(" (`{name}` is not a kernel the source was loaded with)"),
        })
    }

    pub fn live_usage(&self, kernel: &str) -> Result<LiveUsage, EngineError> {
        let function = self.kernel(kernel)?.function;
        self.context.bind()?;
        let driver = self.context.driver();
        let get = |attribute| driver.function_attribute(function, attribute).map(|v| v as u32);
        Ok(LiveUsage {
            threads: get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            registers: get(CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            shared_bytes: get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            const_bytes: get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            binary_version: get(CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }
}

impl Module for CudaModule {
    fn source(&self) -> &KernelSource {
        &self.source
    }

    /// cuFuncGetAttribute's registers, static shared and local bytes. The `threads` figure
    /// is the launch's block, which the harness adds.
    fn resource_usage(&self, kernel: &str) -> Option<Result<crate::backend::ResourceUsage, EngineError>> {
        let compiler = format!("NVRTC cubin for {}, as the driver loaded it", self.cubin.arch);
        Some(self.live_usage(kernel).map(|u| usage_figures(u.registers, u.shared_bytes, u.local_bytes, compiler)))
    }

    /// Launches on the backend's stream and waits for the whole context. `Schedule` is a
    /// host-only hint: the GPU schedules its own blocks.
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
            return Err(bad(format!("block of {threads} threads (the driver allows {} for this kernel)", k.max_threads)));
        }
        let driver = self.context.driver();
        if let Some(lost) = driver.lost() {
            return Err(EngineError::KernelFault {
                kernel: kernel.to_string(),
                source_path: self.source.display_path.clone(),
                message: format!("not launched: the CUDA context is unusable since {lost}"),
            });
        }
        self.context.bind()?;
        {
            let mut allowed = k.dynamic_allowed.lock().unwrap_or_else(|p| p.into_inner());
            if dims.dynamic_shared > *allowed {
                driver
                    .set_function_attribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dims.dynamic_shared as i32)
                    .map_err(|e| bad(format!("{} bytes of dynamic shared memory: {e}", dims.dynamic_shared)))?;
                *allowed = dims.dynamic_shared;
            }
        }

        // one 8-byte slot per argument; the driver copies each parameter's size from it
        let mut values: Vec<[u8; 8]> = args.iter().map(|a| a.bytes()).collect();
        let mut pointers: Vec<*mut c_void> = values.iter_mut().map(|v| v.as_mut_ptr() as *mut c_void).collect();
        let shape = format!("grid {:?} block {:?} dynamic shared {}", dims.grid, dims.block, dims.dynamic_shared);
        let fault = |e: EngineError, when: &str| {
            let sticky = matches!(&e, EngineError::Vendor { code, .. } if driver::is_sticky(*code));
            let message = format!("{when} ({shape}): {e}");
            if sticky {
                driver.mark_lost(format!("`{kernel}` ({}) faulted: {message}", self.source.display_path));
            }
            EngineError::KernelFault { kernel: kernel.to_string(), source_path: self.source.display_path.clone(), message }
        };
        unsafe { driver.launch(k.function, dims.grid, dims.block, dims.dynamic_shared, self.stream.raw(), &mut pointers) }.map_err(
            |e| match &e {
                EngineError::Vendor { code, .. } if !driver::is_sticky(*code) => bad(format!("{shape}: {e}")),
                _ => fault(e, "cuLaunchKernel"),
            },
        )?;
        self.context.synchronize().map_err(|e| fault(e, "cuCtxSynchronize after cuLaunchKernel"))?;
        Ok(LaunchReport {
            blocks: dims.grid.iter().map(|&d| d as u64).product(),
            switches: 0,
            inactive_lane_reads: 0,
            block_threads: dims.block.iter().product(),
            findings: Vec::new(),
        })
    }
}

/// The sm_90 static path behind the engine's `StaticCompiler`: NVRTC builds the cubin, its
/// `.nv.info` sections give the figures (no driver, no GPU).
pub struct NvrtcStatic {
    pub arch: String,
    /// `cuda/prelude.h` of the run's preludes.
    pub prelude: PathBuf,
}

impl crate::backend::StaticCompiler for NvrtcStatic {
    fn arch(&self) -> String {
        self.arch.clone()
    }

    fn identity(&self) -> String {
        // the version, not where the library was found: recorded figures name it
        Nvrtc::shared().map(|n| n.identity().split(" (").next().unwrap_or_default().to_string()).unwrap_or_else(|e| e.to_string())
    }

    fn resource_usage(&self, source: &KernelSource, kernel: &str) -> Result<crate::backend::ResourceUsage, EngineError> {
        let usage = static_cubin_with(source, &self.arch, &self.prelude)?.usage(kernel)?;
        Ok(usage_figures(usage.registers, usage.shared_bytes, usage.local_bytes, self.identity()))
    }
}

fn usage_figures(registers: u32, shared: u32, local: u32, compiler: String) -> crate::backend::ResourceUsage {
    let figures = [("registers", registers), ("shared", shared), ("local", local)];
    crate::backend::ResourceUsage { figures: figures.into_iter().map(|(k, v)| (k.to_string(), v as u64)).collect(), compiler }
}
