//! The HIP runtime, layers (b) and (c): one `Result`-returning wrapper per call with HIP's
//! own error name and text (hipGetErrorName / hipGetErrorString), and owning types that give
//! their handle back on drop (device memory, module, stream). HIP's current device is per
//! host thread, so every owner selects the runtime's device (hipSetDevice) before its calls
//! and any thread may use them.

use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::{Arc, Mutex};

use super::sys::*;
use crate::EngineError;
use crate::backend::Memset;
use crate::backend::staging::PinnedBytes;
use crate::backend::vendor::{self, Vendor};

/// Sonames tried in order (the vendor layer's): the dev symlink, ROCm 7, ROCm 6, ROCm 5
/// (Debian 12's libamdhip64-5). ROCm 5.x has no libhiprtc of its own: its hiprtc symbols live
/// in libamdhip64 (see `hiprtc::candidates`).
pub const LIBAMDHIP64: &[&str] = &["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"];

/// What is tried: `library` (`KERNEL_CONTRACTS_LIBAMDHIP64`) alone when given, else the sonames.
pub fn candidates(library: Option<&str>) -> Vec<String> {
    Vendor::Amdhip64.candidates(library)
}

/// Error codes after which the device is unusable (a faulting kernel): hipErrorIllegalAddress,
/// hipErrorLaunchTimeOut, hipErrorAssert, hipErrorLaunchFailure and friends.
pub fn is_sticky(code: i64) -> bool {
    matches!(code, 700 | 702 | 710 | 714 | 715 | 716 | 717 | 718 | 719)
}

/// What `hipGetDevicePropertiesR0600` says about a device (only the fields the engine reads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProperties {
    pub name: String,
    /// `gcnArchName` as the runtime gives it: `gfx1201` or `gfx1201:sramecc-:xnack-`.
    pub gcn_arch_name: String,
}

impl DeviceProperties {
    /// The processor alone (`gfx1201`): what `--offload-arch` takes; the feature suffix is
    /// the device's, and hiprtc derives it itself.
    pub fn arch(&self) -> &str {
        self.gcn_arch_name.split(':').next().unwrap_or_default()
    }

    /// Decodes the two strings out of a `hipDeviceProp_tR0600` image.
    pub fn from_r0600(bytes: &[u8]) -> DeviceProperties {
        let text = |at: usize| {
            let field = &bytes[at..(at + 256).min(bytes.len())];
            let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
            String::from_utf8_lossy(&field[..end]).into_owned()
        };
        DeviceProperties { name: text(DEVICE_PROP_R0600_NAME), gcn_arch_name: text(DEVICE_PROP_R0600_GCN_ARCH_NAME) }
    }
}

pub struct Runtime {
    pub(crate) api: HipApi,
    /// `hipGetDevicePropertiesR0600`, or why it is missing (ROCm 5.x exports only the old
    /// layout): resolved at open, its absence reported once a device is asked about, so that
    /// a ROCm 5 runtime without a GPU still says "no device".
    properties: Result<HipGetDevicePropertiesR0600, EngineError>,
    /// hipHostMalloc and hipHostFree, or the first missing (`PinnedMemory`).
    host_memory: Result<HostMemoryApi, EngineError>,
    device: Mutex<i32>,
    lost: Mutex<Option<String>>,
}

impl Runtime {
    /// Opens the first of `candidates` that loads and resolves every symbol the backend calls.
    pub fn open(candidates: &[String]) -> Result<Arc<Runtime>, EngineError> {
        let lib = vendor::open_any(Vendor::Amdhip64, candidates)?;
        let properties = unsafe { lib.function::<HipGetDevicePropertiesR0600>(HIP_GET_DEVICE_PROPERTIES_R0600) }.map_err(|_| {
            missing(&lib.name, HIP_GET_DEVICE_PROPERTIES_R0600, " (a ROCm 5 runtime: the hip backend needs ROCm 6.3 or later for gfx1201)")
        });
        let host_memory = HostMemoryApi::resolve(lib.clone());
        Ok(Arc::new(Runtime { api: HipApi::resolve(lib)?, properties, host_memory, device: Mutex::new(0), lost: Mutex::new(None) }))
    }

    pub fn library(&self) -> &str {
        &self.api.library.name
    }

    /// The error for `code` returned by `call`, named as HIP names it.
    pub fn error(&self, call: &str, code: hipError_t) -> EngineError {
        let name =
            c_str(unsafe { (self.api.hipGetErrorName)(code) }).filter(|n| !n.is_empty()).unwrap_or_else(|| format!("hipError_t {code}"));
        let mut message = c_str(unsafe { (self.api.hipGetErrorString)(code) }).unwrap_or_else(|| "no description from HIP".to_string());
        if let Some(lost) = self.lost() {
            message.push_str(&format!(" (the HIP device is unusable since {lost})"));
        }
        EngineError::Vendor { library: self.library().to_string(), call: call.to_string(), code: code as i64, name, message }
    }

    pub(crate) fn check(&self, call: &str, code: hipError_t) -> Result<(), EngineError> {
        if code == HIP_SUCCESS { Ok(()) } else { Err(self.error(call, code)) }
    }

    pub fn mark_lost(&self, what: String) {
        let mut lost = self.lost.lock().unwrap_or_else(|p| p.into_inner());
        if lost.is_none() {
            *lost = Some(what);
        }
    }

    pub fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn init(&self) -> Result<(), EngineError> {
        self.check("hipInit", unsafe { (self.api.hipInit)(0) })
    }

    /// `(driver, runtime)`: 50221153 for ROCm 5.2; HIP_VERSION = major * 10^7 + minor * 10^5 + patch.
    pub fn versions(&self) -> Result<(i32, i32), EngineError> {
        let (mut driver, mut runtime): (c_int, c_int) = (0, 0);
        self.check("hipDriverGetVersion", unsafe { (self.api.hipDriverGetVersion)(&mut driver) })?;
        self.check("hipRuntimeGetVersion", unsafe { (self.api.hipRuntimeGetVersion)(&mut runtime) })?;
        Ok((driver, runtime))
    }

    pub fn device_count(&self) -> Result<i32, EngineError> {
        let mut n: c_int = 0;
        self.check("hipGetDeviceCount", unsafe { (self.api.hipGetDeviceCount)(&mut n) })?;
        Ok(n)
    }

    /// The device's global memory in bytes (hipDeviceTotalMem).
    pub fn device_memory(&self, device: i32) -> Result<usize, EngineError> {
        let mut bytes = 0usize;
        self.check("hipDeviceTotalMem", unsafe { (self.api.hipDeviceTotalMem)(&mut bytes, device) })?;
        Ok(bytes)
    }

    /// Makes `device` the one every later call of the runtime (on any thread) uses.
    pub fn select(&self, device: i32) -> Result<(), EngineError> {
        *self.device.lock().unwrap_or_else(|p| p.into_inner()) = device;
        self.bind()
    }

    /// Selects the runtime's device on the calling thread (cheap; done before every call).
    pub fn bind(&self) -> Result<(), EngineError> {
        let device = *self.device.lock().unwrap_or_else(|p| p.into_inner());
        self.check("hipSetDevice", unsafe { (self.api.hipSetDevice)(device) })
    }

    pub fn properties(&self, device: i32) -> Result<DeviceProperties, EngineError> {
        let call = self.properties.as_ref().map_err(missing_again)?;
        // 8-byte aligned and larger than the struct, in case a later ROCm grows it
        let mut image = vec![0u64; DEVICE_PROP_R0600_SIZE.div_ceil(8) + 64];
        self.check(HIP_GET_DEVICE_PROPERTIES_R0600, unsafe { call(image.as_mut_ptr() as *mut c_void, device) })?;
        let bytes = unsafe { std::slice::from_raw_parts(image.as_ptr() as *const u8, image.len() * 8) };
        Ok(DeviceProperties::from_r0600(bytes))
    }

    pub fn synchronize(&self) -> Result<(), EngineError> {
        self.bind()?;
        self.check("hipDeviceSynchronize", unsafe { (self.api.hipDeviceSynchronize)() })
    }

    /// Device to device (hipMemcpyDtoD), then waits for the device.
    pub fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        self.check("hipMemcpyDtoD", unsafe { (self.api.hipMemcpyDtoD)(to as hipDeviceptr_t, from as hipDeviceptr_t, bytes) })?;
        self.synchronize()
    }

    pub(crate) fn function_attribute(&self, function: hipFunction_t, attribute: c_int) -> Result<i32, EngineError> {
        let mut v: c_int = 0;
        self.check("hipFuncGetAttribute", unsafe { (self.api.hipFuncGetAttribute)(&mut v, attribute, function) })?;
        Ok(v)
    }

    /// hipModuleLaunchKernel. `params` holds one pointer per kernel parameter, each to its value.
    ///
    /// # Safety
    /// The values behind `params` must match the kernel's parameters in number and size.
    pub unsafe fn launch(
        &self,
        function: hipFunction_t,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        stream: hipStream_t,
        params: &mut [*mut c_void],
    ) -> Result<(), EngineError> {
        self.bind()?;
        let params_ptr = if params.is_empty() { std::ptr::null_mut() } else { params.as_mut_ptr() };
        self.check("hipModuleLaunchKernel", unsafe {
            (self.api.hipModuleLaunchKernel)(
                function,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                dynamic_shared,
                stream,
                params_ptr,
                std::ptr::null_mut(),
            )
        })
    }
}

fn missing_again(e: &EngineError) -> EngineError {
    match e {
        EngineError::MissingSymbol { library, symbol, hint } => missing(library, symbol, hint),
        other => EngineError::Op { op: "hip backend".into(), reason: other.to_string() },
    }
}

/// A device allocation (hipMalloc), zero-filled when made, freed on drop.
pub struct DeviceMemory {
    runtime: Arc<Runtime>,
    pointer: *mut c_void,
    len: usize,
}

unsafe impl Send for DeviceMemory {}
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// `len` bytes (at least one).
    pub fn allocate(runtime: &Arc<Runtime>, len: usize) -> Result<DeviceMemory, EngineError> {
        let len = len.max(1);
        runtime.bind()?;
        let mut pointer: *mut c_void = std::ptr::null_mut();
        runtime.check("hipMalloc", unsafe { (runtime.api.hipMalloc)(&mut pointer, len) })?;
        let memory = DeviceMemory { runtime: runtime.clone(), pointer, len };
        memory.zero()?;
        Ok(memory)
    }

    /// Every byte set to zero on the device (hipMemset, on the null stream, which the
    /// engine's blocking stream and every later copy wait for): a gigabyte case's tensor was
    /// zeroed by copying as many zero bytes from the host.
    pub fn zero(&self) -> Result<(), EngineError> {
        self.set(0, self.len, Memset::D8(0))
    }

    /// Bytes `offset..offset + len` set by one memset on the device (hipMemset, hipMemsetD16
    /// or hipMemsetD32, on the null stream as `zero`).
    pub(crate) fn set(&self, offset: usize, len: usize, memset: Memset) -> Result<(), EngineError> {
        self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.runtime.bind()?;
        let (api, at) = (&self.runtime.api, unsafe { (self.pointer as *mut u8).add(offset) } as *mut c_void);
        match memset {
            Memset::D8(v) => self.runtime.check("hipMemset", unsafe { (api.hipMemset)(at, c_int::from(v), len) }),
            Memset::D16(v) => self.runtime.check("hipMemsetD16", unsafe { (api.hipMemsetD16)(at, v, len / 2) }),
            Memset::D32(v) => self.runtime.check("hipMemsetD32", unsafe { (api.hipMemsetD32)(at, v as c_int, len / 4) }),
        }
    }

    pub fn address(&self) -> u64 {
        self.pointer as u64
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn check_range(&self, offset: usize, len: usize) -> Result<(), EngineError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(EngineError::Buffer(format!("access of {len} bytes at {offset} past a device buffer of {}", self.len))),
        }
    }

    /// Host to device (hipMemcpyHtoD; synchronous).
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), EngineError> {
        self.check_range(offset, bytes.len())?;
        if bytes.is_empty() {
            return Ok(());
        }
        self.runtime.bind()?;
        self.runtime.check("hipMemcpyHtoD", unsafe {
            (self.runtime.api.hipMemcpyHtoD)((self.address() + offset as u64) as hipDeviceptr_t, bytes.as_ptr() as *mut c_void, bytes.len())
        })
    }

    /// Device to host (hipMemcpyDtoH; returns when the bytes are in `out`).
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), EngineError> {
        self.check_range(offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        self.runtime.bind()?;
        self.runtime.check("hipMemcpyDtoH", unsafe {
            (self.runtime.api.hipMemcpyDtoH)(out.as_mut_ptr() as *mut c_void, (self.address() + offset as u64) as hipDeviceptr_t, out.len())
        })
    }
}

/// Page-locked host memory (hipHostMalloc, default flags), freed on drop (hipHostFree): a
/// stage of large copies (`staging`).
pub struct PinnedMemory {
    runtime: Arc<Runtime>,
    pointer: *mut u8,
    len: usize,
}

// only reached through `&mut self`
unsafe impl Send for PinnedMemory {}

impl PinnedMemory {
    pub fn allocate(runtime: &Arc<Runtime>, len: usize) -> Result<PinnedMemory, EngineError> {
        let api = runtime.host_memory.as_ref().map_err(missing_again)?;
        runtime.bind()?;
        let mut pointer: *mut c_void = std::ptr::null_mut();
        runtime.check("hipHostMalloc", unsafe { (api.hipHostMalloc)(&mut pointer, len.max(1), 0) })?;
        Ok(PinnedMemory { runtime: runtime.clone(), pointer: pointer as *mut u8, len })
    }
}

impl PinnedBytes for PinnedMemory {
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes the runtime allocated for this value alone, alive until drop
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.len) }
    }
}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        if let (Ok(api), Ok(())) = (&self.runtime.host_memory, self.runtime.bind()) {
            unsafe { (api.hipHostFree)(self.pointer as *mut c_void) };
        }
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if self.runtime.bind().is_ok() {
            unsafe { (self.runtime.api.hipFree)(self.pointer) };
        }
    }
}

/// A loaded code object (hipModuleLoadData), unloaded on drop.
pub struct LoadedModule {
    runtime: Arc<Runtime>,
    raw: hipModule_t,
}

unsafe impl Send for LoadedModule {}
unsafe impl Sync for LoadedModule {}

impl LoadedModule {
    pub fn load(runtime: &Arc<Runtime>, image: &[u8]) -> Result<LoadedModule, EngineError> {
        runtime.bind()?;
        let mut raw: hipModule_t = std::ptr::null_mut();
        runtime.check("hipModuleLoadData", unsafe { (runtime.api.hipModuleLoadData)(&mut raw, image.as_ptr() as *const c_void) })?;
        Ok(LoadedModule { runtime: runtime.clone(), raw })
    }

    /// The kernel `name` (the `extern "C"` symbol, not `name.kd`). Valid while the module lives.
    pub fn function(&self, name: &str) -> Result<hipFunction_t, EngineError> {
        let symbol = CString::new(name).map_err(|_| EngineError::BadLaunch { kernel: name.into(), reason: "NUL in kernel name".into() })?;
        self.runtime.bind()?;
        let mut function: hipFunction_t = std::ptr::null_mut();
        self.runtime.check("hipModuleGetFunction", unsafe {
            (self.runtime.api.hipModuleGetFunction)(&mut function, self.raw, symbol.as_ptr() as *const c_char)
        })?;
        Ok(function)
    }
}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        if self.runtime.bind().is_ok() {
            unsafe { (self.runtime.api.hipModuleUnload)(self.raw) };
        }
    }
}

/// A stream (hipStreamCreate: blocking with respect to the null stream), destroyed on drop.
pub struct Stream {
    runtime: Arc<Runtime>,
    raw: hipStream_t,
}

unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    pub fn create(runtime: &Arc<Runtime>) -> Result<Stream, EngineError> {
        runtime.bind()?;
        let mut raw: hipStream_t = std::ptr::null_mut();
        runtime.check("hipStreamCreate", unsafe { (runtime.api.hipStreamCreate)(&mut raw) })?;
        Ok(Stream { runtime: runtime.clone(), raw })
    }

    pub fn raw(&self) -> hipStream_t {
        self.raw
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.runtime.bind().is_ok() {
            unsafe { (self.runtime.api.hipStreamDestroy)(self.raw) };
        }
    }
}
