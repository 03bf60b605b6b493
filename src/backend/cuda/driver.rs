//! The driver API, layers (b) and (c): one `Result`-returning wrapper per call, with the
//! driver's own error name and message (cuGetErrorName / cuGetErrorString), and owning
//! types that give their handle back on drop (primary context, device memory, module,
//! stream). Every owner holds the context alive and makes it current before its calls, so
//! any thread may use them.

use std::ffi::{CString, c_char, c_int, c_void};
use std::sync::{Arc, Mutex};

use super::sys::*;
use crate::EngineError;
use crate::backend::Memset;
use crate::backend::staging::PinnedBytes;
use crate::backend::vendor::{self, Vendor};

/// The driver library's soname. Never the toolkit's `stubs/libcuda.so`.
pub const LIBCUDA: &str = "libcuda.so.1";

/// Error codes after which the context is unusable: every later call fails with them too.
pub fn is_sticky(code: i64) -> bool {
    // ILLEGAL_ADDRESS, LAUNCH_TIMEOUT, ASSERT, HARDWARE_STACK_ERROR, ILLEGAL_INSTRUCTION,
    // MISALIGNED_ADDRESS, INVALID_ADDRESS_SPACE, INVALID_PC, LAUNCH_FAILED
    matches!(code, 700 | 702 | 710 | 714 | 715 | 716 | 717 | 718 | 719)
}

pub struct Driver {
    api: DriverApi,
    /// What left the context unusable, once something did.
    lost: Mutex<Option<String>>,
}

impl Driver {
    /// Opens `library` (default: `KERNEL_CONTRACTS_LIBCUDA`, else `libcuda.so.1`) through the
    /// vendor layer and resolves every symbol the backend calls.
    pub fn open(library: Option<&str>) -> Result<Arc<Driver>, EngineError> {
        let lib = vendor::open(Vendor::Libcuda, &Vendor::Libcuda.candidates(library), &DriverApi::check)?;
        Ok(Arc::new(Driver { api: DriverApi::resolve(lib)?, lost: Mutex::new(None) }))
    }

    pub fn library(&self) -> &str {
        &self.api.library.name
    }

    /// The error for `code` returned by `call`, named as the driver names it.
    pub fn error(&self, call: &str, code: CUresult) -> EngineError {
        let mut name: *const c_char = std::ptr::null();
        let mut text: *const c_char = std::ptr::null();
        let name = match unsafe { (self.api.cuGetErrorName)(code, &mut name) } {
            CUDA_SUCCESS => c_str(name),
            _ => None,
        }
        .unwrap_or_else(|| format!("CUresult {code}"));
        let mut message = match unsafe { (self.api.cuGetErrorString)(code, &mut text) } {
            CUDA_SUCCESS => c_str(text),
            _ => None,
        }
        .unwrap_or_else(|| "no description from the driver".to_string());
        if let Some(lost) = self.lost() {
            message.push_str(&format!(" (the CUDA context is unusable since {lost})"));
        }
        EngineError::Vendor { library: self.library().to_string(), call: call.to_string(), code: code as i64, name, message }
    }

    fn check(&self, call: &str, code: CUresult) -> Result<(), EngineError> {
        if code == CUDA_SUCCESS { Ok(()) } else { Err(self.error(call, code)) }
    }

    /// Records the first event that left the context unusable (a faulting kernel).
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
        self.check("cuInit", unsafe { (self.api.cuInit)(0) })
    }

    /// `13000` for CUDA 13.0.
    pub fn version(&self) -> Result<i32, EngineError> {
        let mut v: c_int = 0;
        self.check("cuDriverGetVersion", unsafe { (self.api.cuDriverGetVersion)(&mut v) })?;
        Ok(v)
    }

    pub fn device_count(&self) -> Result<i32, EngineError> {
        let mut n: c_int = 0;
        self.check("cuDeviceGetCount", unsafe { (self.api.cuDeviceGetCount)(&mut n) })?;
        Ok(n)
    }

    pub fn device(&self, ordinal: i32) -> Result<CUdevice, EngineError> {
        let mut d: CUdevice = 0;
        self.check("cuDeviceGet", unsafe { (self.api.cuDeviceGet)(&mut d, ordinal) })?;
        Ok(d)
    }

    pub fn device_name(&self, device: CUdevice) -> Result<String, EngineError> {
        let mut buffer = [0 as c_char; 256];
        self.check("cuDeviceGetName", unsafe { (self.api.cuDeviceGetName)(buffer.as_mut_ptr(), buffer.len() as c_int, device) })?;
        buffer[255] = 0;
        Ok(c_str(buffer.as_ptr()).unwrap_or_default())
    }

    pub fn device_attribute(&self, device: CUdevice, attribute: c_int) -> Result<i32, EngineError> {
        let mut v: c_int = 0;
        self.check("cuDeviceGetAttribute", unsafe { (self.api.cuDeviceGetAttribute)(&mut v, attribute, device) })?;
        Ok(v)
    }

    pub fn device_memory(&self, device: CUdevice) -> Result<usize, EngineError> {
        let mut bytes = 0usize;
        self.check("cuDeviceTotalMem_v2", unsafe { (self.api.cuDeviceTotalMem_v2)(&mut bytes, device) })?;
        Ok(bytes)
    }

    pub(crate) fn function_attribute(&self, function: CUfunction, attribute: c_int) -> Result<i32, EngineError> {
        let mut v: c_int = 0;
        self.check("cuFuncGetAttribute", unsafe { (self.api.cuFuncGetAttribute)(&mut v, attribute, function) })?;
        Ok(v)
    }

    pub(crate) fn set_function_attribute(&self, function: CUfunction, attribute: c_int, value: i32) -> Result<(), EngineError> {
        self.check("cuFuncSetAttribute", unsafe { (self.api.cuFuncSetAttribute)(function, attribute, value) })
    }

    /// cuLaunchKernel. `params` holds one pointer per kernel parameter, each to its value.
    ///
    /// # Safety
    /// The values behind `params` must match the kernel's parameters in number and size.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn launch(
        &self,
        function: CUfunction,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        stream: CUstream,
        params: &mut [*mut c_void],
    ) -> Result<(), EngineError> {
        let params_ptr = if params.is_empty() { std::ptr::null_mut() } else { params.as_mut_ptr() };
        self.check("cuLaunchKernel", unsafe {
            (self.api.cuLaunchKernel)(
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

/// The device's primary context, retained for as long as this lives.
pub struct Context {
    driver: Arc<Driver>,
    device: CUdevice,
    raw: CUcontext,
}

// The driver API is thread-safe; the context is made current on each thread before use.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    pub fn retain(driver: &Arc<Driver>, device: CUdevice) -> Result<Arc<Context>, EngineError> {
        let mut raw: CUcontext = std::ptr::null_mut();
        driver.check("cuDevicePrimaryCtxRetain", unsafe { (driver.api.cuDevicePrimaryCtxRetain)(&mut raw, device) })?;
        let context = Context { driver: driver.clone(), device, raw };
        context.bind()?;
        Ok(Arc::new(context))
    }

    pub fn driver(&self) -> &Arc<Driver> {
        &self.driver
    }

    pub fn device(&self) -> CUdevice {
        self.device
    }

    /// Makes the context current on the calling thread (cheap; done before every call).
    pub fn bind(&self) -> Result<(), EngineError> {
        self.driver.check("cuCtxSetCurrent", unsafe { (self.driver.api.cuCtxSetCurrent)(self.raw) })
    }

    /// Waits for all work in the context; a fault of an earlier launch surfaces here.
    pub fn synchronize(&self) -> Result<(), EngineError> {
        self.bind()?;
        self.driver.check("cuCtxSynchronize", unsafe { (self.driver.api.cuCtxSynchronize)() })
    }

    /// Device to device (cuMemcpyDtoD_v2, on the legacy stream, which the engine's blocking
    /// stream waits for), then waits for it.
    pub fn copy(&self, to: CUdeviceptr, from: CUdeviceptr, bytes: usize) -> Result<(), EngineError> {
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        self.driver.check("cuMemcpyDtoD_v2", unsafe { (self.driver.api.cuMemcpyDtoD_v2)(to, from, bytes) })?;
        self.synchronize()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        unsafe {
            (self.driver.api.cuCtxSetCurrent)(std::ptr::null_mut());
            (self.driver.api.cuDevicePrimaryCtxRelease_v2)(self.device);
        }
    }
}

/// A device allocation (cuMemAlloc_v2), zero-filled when made, freed on drop.
pub struct DeviceMemory {
    context: Arc<Context>,
    pointer: CUdeviceptr,
    len: usize,
}

unsafe impl Send for DeviceMemory {}
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// `len` bytes (at least one: the driver refuses empty allocations).
    pub fn allocate(context: &Arc<Context>, len: usize) -> Result<DeviceMemory, EngineError> {
        let len = len.max(1);
        let driver = &context.driver;
        context.bind()?;
        let mut pointer: CUdeviceptr = 0;
        driver.check("cuMemAlloc_v2", unsafe { (driver.api.cuMemAlloc_v2)(&mut pointer, len) })?;
        let memory = DeviceMemory { context: context.clone(), pointer, len };
        memory.zero()?;
        Ok(memory)
    }

    /// Every byte set to zero (cuMemsetD8_v2).
    pub fn zero(&self) -> Result<(), EngineError> {
        self.set(0, self.len, Memset::D8(0))
    }

    /// Bytes `offset..offset + len` set by one memset (cuMemsetD8_v2, D16 or D32, on the
    /// legacy stream, which the engine's blocking stream and every later copy wait for).
    pub(crate) fn set(&self, offset: usize, len: usize, memset: Memset) -> Result<(), EngineError> {
        self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.context.bind()?;
        let (driver, at) = (&self.context.driver, self.pointer + offset as CUdeviceptr);
        match memset {
            Memset::D8(v) => driver.check("cuMemsetD8_v2", unsafe { (driver.api.cuMemsetD8_v2)(at, v, len) }),
            Memset::D16(v) => driver.check("cuMemsetD16_v2", unsafe { (driver.api.cuMemsetD16_v2)(at, v, len / 2) }),
            Memset::D32(v) => driver.check("cuMemsetD32_v2", unsafe { (driver.api.cuMemsetD32_v2)(at, v, len / 4) }),
        }
    }

    pub fn address(&self) -> CUdeviceptr {
        self.pointer
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

    /// Host to device (cuMemcpyHtoD_v2; synchronous for pageable host memory).
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), EngineError> {
        self.check_range(offset, bytes.len())?;
        if bytes.is_empty() {
            return Ok(());
        }
        self.context.bind()?;
        let driver = &self.context.driver;
        driver.check("cuMemcpyHtoD_v2", unsafe {
            (driver.api.cuMemcpyHtoD_v2)(self.pointer + offset as u64, bytes.as_ptr() as *const c_void, bytes.len())
        })
    }

    /// Device to host (cuMemcpyDtoH_v2; returns when the bytes are in `out`).
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), EngineError> {
        self.check_range(offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        self.context.bind()?;
        let driver = &self.context.driver;
        driver.check("cuMemcpyDtoH_v2", unsafe {
            (driver.api.cuMemcpyDtoH_v2)(out.as_mut_ptr() as *mut c_void, self.pointer + offset as u64, out.len())
        })
    }
}

/// Page-locked host memory (cuMemAllocHost_v2), freed on drop (cuMemFreeHost): a stage of
/// large copies, which the device reaches by DMA.
pub struct PinnedMemory {
    context: Arc<Context>,
    pointer: *mut u8,
    len: usize,
}

// only reached through `&mut self`
unsafe impl Send for PinnedMemory {}

impl PinnedMemory {
    pub fn allocate(context: &Arc<Context>, len: usize) -> Result<PinnedMemory, EngineError> {
        let driver = &context.driver;
        context.bind()?;
        let mut pointer: *mut c_void = std::ptr::null_mut();
        driver.check("cuMemAllocHost_v2", unsafe { (driver.api.cuMemAllocHost_v2)(&mut pointer, len.max(1)) })?;
        Ok(PinnedMemory { context: context.clone(), pointer: pointer as *mut u8, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl PinnedBytes for PinnedMemory {
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes the driver allocated for this value alone, alive until drop
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.len) }
    }
}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        if self.context.bind().is_ok() {
            unsafe { (self.context.driver.api.cuMemFreeHost)(self.pointer as *mut c_void) };
        }
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if self.context.bind().is_ok() {
            unsafe { (self.context.driver.api.cuMemFree_v2)(self.pointer) };
        }
    }
}

/// A loaded module (cuModuleLoadData of a cubin), unloaded on drop.
pub struct LoadedModule {
    context: Arc<Context>,
    raw: CUmodule,
}

unsafe impl Send for LoadedModule {}
unsafe impl Sync for LoadedModule {}

impl LoadedModule {
    pub fn load(context: &Arc<Context>, image: &[u8]) -> Result<LoadedModule, EngineError> {
        context.bind()?;
        let driver = &context.driver;
        let mut raw: CUmodule = std::ptr::null_mut();
        driver.check("cuModuleLoadData", unsafe { (driver.api.cuModuleLoadData)(&mut raw, image.as_ptr() as *const c_void) })?;
        Ok(LoadedModule { context: context.clone(), raw })
    }

    /// The kernel `name` (an `extern "C"` symbol). Valid while the module lives.
    pub fn function(&self, name: &str) -> Result<CUfunction, EngineError> {
        let symbol = CString::new(name).map_err(|_| EngineError::BadLaunch { kernel: name.into(), reason: "NUL in kernel name".into() })?;
        self.context.bind()?;
        let driver = &self.context.driver;
        let mut function: CUfunction = std::ptr::null_mut();
        driver.check("cuModuleGetFunction", unsafe { (driver.api.cuModuleGetFunction)(&mut function, self.raw, symbol.as_ptr()) })?;
        Ok(function)
    }
}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        if self.context.bind().is_ok() {
            unsafe { (self.context.driver.api.cuModuleUnload)(self.raw) };
        }
    }
}

/// A blocking stream (synchronises with the legacy default stream), destroyed on drop.
pub struct Stream {
    context: Arc<Context>,
    raw: CUstream,
}

unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    pub fn create(context: &Arc<Context>) -> Result<Stream, EngineError> {
        context.bind()?;
        let driver = &context.driver;
        let mut raw: CUstream = std::ptr::null_mut();
        driver.check("cuStreamCreate", unsafe { (driver.api.cuStreamCreate)(&mut raw, CU_STREAM_DEFAULT) })?;
        Ok(Stream { context: context.clone(), raw })
    }

    pub fn raw(&self) -> CUstream {
        self.raw
    }

    pub fn synchronize(&self) -> Result<(), EngineError> {
        self.context.bind()?;
        let driver = &self.context.driver;
        driver.check("cuStreamSynchronize", unsafe { (driver.api.cuStreamSynchronize)(self.raw) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.context.bind().is_ok() {
            unsafe { (self.context.driver.api.cuStreamDestroy_v2)(self.raw) };
        }
    }
}
