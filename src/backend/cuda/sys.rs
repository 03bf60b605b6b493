//! Layer (a): raw tables of function pointers, one per vendor library, every required
//! symbol resolved when the library opens. A field's name is the exact exported symbol
//! (the `_v2` names where cuda.h / cublas_v2.h `#define` the API name to them; the
//! unsuffixed `cuMemAlloc` and friends are the 32-bit CUDA 2.0 ABI and must never be used).
//! Nothing here checks a result code: that is layer (b), `driver.rs`, `nvrtc.rs`, `cublas.rs`.

#![allow(non_snake_case, non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::Path;

use crate::EngineError;

pub type CUresult = c_int;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUstream = *mut c_void;

pub type nvrtcResult = c_int;
pub type nvrtcProgram = *mut c_void;

pub type cublasStatus_t = c_int;
pub type cublasHandle_t = *mut c_void;

pub const CUDA_SUCCESS: CUresult = 0;
pub const NVRTC_SUCCESS: nvrtcResult = 0;
pub const NVRTC_ERROR_COMPILATION: nvrtcResult = 6;
pub const CUBLAS_STATUS_SUCCESS: cublasStatus_t = 0;

// CUdevice_attribute
pub const CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 1;
pub const CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
pub const CU_DEVICE_ATTRIBUTE_WARP_SIZE: c_int = 10;
pub const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
pub const CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;

// CUfunction_attribute
pub const CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
pub const CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: c_int = 1;
pub const CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: c_int = 2;
pub const CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: c_int = 3;
pub const CU_FUNC_ATTRIBUTE_NUM_REGS: c_int = 4;
pub const CU_FUNC_ATTRIBUTE_PTX_VERSION: c_int = 5;
pub const CU_FUNC_ATTRIBUTE_BINARY_VERSION: c_int = 6;
pub const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;

// CUstream_flags
pub const CU_STREAM_DEFAULT: c_uint = 0;

// cuBLAS (cublas_api.h, library_types.h)
pub const CUBLAS_OP_N: c_int = 0;
pub const CUBLAS_OP_T: c_int = 1;
pub const CUBLAS_DEFAULT_MATH: c_int = 0;
pub const CUBLAS_PEDANTIC_MATH: c_int = 2;
pub const CUDA_R_32F: c_int = 0;
pub const CUDA_R_16F: c_int = 2;
pub const CUDA_R_16BF: c_int = 14;
pub const CUBLAS_COMPUTE_32F: c_int = 68;
pub const CUBLAS_COMPUTE_32F_PEDANTIC: c_int = 69;
pub const CUBLAS_GEMM_DEFAULT: c_int = -1;

/// An opened shared library, shown in errors by the name it was opened with.
pub struct Dylib {
    pub name: String,
    library: libloading::Library,
}

impl std::fmt::Debug for Dylib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dylib").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Dylib {
    /// Opens a library by soname (searched by the dynamic loader) or by path. `global`
    /// makes its symbols available to libraries opened later (RTLD_GLOBAL).
    pub fn open(name: &str, global: bool) -> Result<Dylib, String> {
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_LOCAL, RTLD_NOW};
        let flags = RTLD_NOW | if global { RTLD_GLOBAL } else { RTLD_LOCAL };
        let library = unsafe { Library::open(Some(Path::new(name)), flags) }.map_err(|e| {
            // libloading's Display is only "dlopen failed"; dlerror's text is the source
            match std::error::Error::source(&e) {
                Some(detail) => detail.to_string(),
                None => e.to_string(),
            }
        })?;
        Ok(Dylib { name: name.to_string(), library: library.into() })
    }

    /// A function pointer of type `T` for `symbol`; an error naming library and symbol if
    /// the library does not export it.
    ///
    /// # Safety
    /// `T` must be the symbol's true C function type.
    pub unsafe fn function<T: Copy>(&self, symbol: &str) -> Result<T, EngineError> {
        match unsafe { self.library.get::<T>(symbol) } {
            Ok(f) => Ok(*f),
            Err(_) => Err(EngineError::MissingSymbol { library: self.name.clone(), symbol: symbol.to_string(), hint: String::new() }),
        }
    }
}

/// Declares a table of function pointers whose field names are the exported symbols.
macro_rules! api_table {
    ($(#[$meta:meta])* $table:ident { $( $symbol:ident : fn($($arg:ty),* $(,)?) -> $ret:ty; )* }) => {
        $(#[$meta])*
        pub struct $table {
            $( pub $symbol: unsafe extern "C" fn($($arg),*) -> $ret, )*
            /// Kept open for as long as the pointers above are used.
            pub library: std::sync::Arc<Dylib>,
        }

        impl $table {
            /// Every symbol the table needs, in resolution order.
            #[allow(dead_code)]
            pub const SYMBOLS: &'static [&'static str] = &[$(stringify!($symbol)),*];

            /// Resolves every symbol now; the first missing one is an error naming it and
            /// the library.
            pub fn resolve(library: std::sync::Arc<Dylib>) -> Result<$table, EngineError> {
                unsafe { Ok($table { $( $symbol: library.function(stringify!($symbol))?, )* library }) }
            }

            /// Whether `library` exports every symbol (the vendor layer's test of a candidate).
            #[allow(dead_code)]
            pub fn check(library: &Dylib) -> Result<(), EngineError> {
                for symbol in Self::SYMBOLS {
                    // SAFETY: only looked up, never called through this type
                    unsafe { library.function::<unsafe extern "C" fn()>(symbol)? };
                }
                Ok(())
            }
        }
    };
}

// the hip backend declares its tables with the same macro
pub(crate) use api_table;

api_table! {
    /// libcuda.so.1, the driver API (cuda.h 13.0).
    DriverApi {
        cuGetErrorName: fn(CUresult, *mut *const c_char) -> CUresult;
        cuGetErrorString: fn(CUresult, *mut *const c_char) -> CUresult;
        cuInit: fn(c_uint) -> CUresult;
        cuDriverGetVersion: fn(*mut c_int) -> CUresult;
        cuDeviceGetCount: fn(*mut c_int) -> CUresult;
        cuDeviceGet: fn(*mut CUdevice, c_int) -> CUresult;
        cuDeviceGetName: fn(*mut c_char, c_int, CUdevice) -> CUresult;
        cuDeviceGetAttribute: fn(*mut c_int, c_int, CUdevice) -> CUresult;
        cuDeviceTotalMem_v2: fn(*mut usize, CUdevice) -> CUresult;
        cuDevicePrimaryCtxRetain: fn(*mut CUcontext, CUdevice) -> CUresult;
        cuDevicePrimaryCtxRelease_v2: fn(CUdevice) -> CUresult;
        cuCtxSetCurrent: fn(CUcontext) -> CUresult;
        cuCtxSynchronize: fn() -> CUresult;
        cuMemAlloc_v2: fn(*mut CUdeviceptr, usize) -> CUresult;
        cuMemFree_v2: fn(CUdeviceptr) -> CUresult;
        cuMemAllocHost_v2: fn(*mut *mut c_void, usize) -> CUresult;
        cuMemFreeHost: fn(*mut c_void) -> CUresult;
        cuMemcpyHtoD_v2: fn(CUdeviceptr, *const c_void, usize) -> CUresult;
        cuMemcpyDtoH_v2: fn(*mut c_void, CUdeviceptr, usize) -> CUresult;
        cuMemcpyDtoD_v2: fn(CUdeviceptr, CUdeviceptr, usize) -> CUresult;
        cuMemsetD8_v2: fn(CUdeviceptr, u8, usize) -> CUresult;
        cuMemsetD16_v2: fn(CUdeviceptr, u16, usize) -> CUresult;
        cuMemsetD32_v2: fn(CUdeviceptr, u32, usize) -> CUresult;
        cuModuleLoadData: fn(*mut CUmodule, *const c_void) -> CUresult;
        cuModuleUnload: fn(CUmodule) -> CUresult;
        cuModuleGetFunction: fn(*mut CUfunction, CUmodule, *const c_char) -> CUresult;
        cuFuncGetAttribute: fn(*mut c_int, c_int, CUfunction) -> CUresult;
        cuFuncSetAttribute: fn(CUfunction, c_int, c_int) -> CUresult;
        cuLaunchKernel: fn(CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream, *mut *mut c_void, *mut *mut c_void) -> CUresult;
        cuStreamCreate: fn(*mut CUstream, c_uint) -> CUresult;
        cuStreamDestroy_v2: fn(CUstream) -> CUresult;
        cuStreamSynchronize: fn(CUstream) -> CUresult;
    }
}

api_table! {
    /// libnvrtc.so.13 / .12 (nvrtc.h 13.0).
    NvrtcApi {
        nvrtcGetErrorString: fn(nvrtcResult) -> *const c_char;
        nvrtcVersion: fn(*mut c_int, *mut c_int) -> nvrtcResult;
        nvrtcCreateProgram: fn(*mut nvrtcProgram, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> nvrtcResult;
        nvrtcDestroyProgram: fn(*mut nvrtcProgram) -> nvrtcResult;
        nvrtcCompileProgram: fn(nvrtcProgram, c_int, *const *const c_char) -> nvrtcResult;
        nvrtcGetCUBINSize: fn(nvrtcProgram, *mut usize) -> nvrtcResult;
        nvrtcGetCUBIN: fn(nvrtcProgram, *mut c_char) -> nvrtcResult;
        nvrtcGetProgramLogSize: fn(nvrtcProgram, *mut usize) -> nvrtcResult;
        nvrtcGetProgramLog: fn(nvrtcProgram, *mut c_char) -> nvrtcResult;
        nvrtcAddNameExpression: fn(nvrtcProgram, *const c_char) -> nvrtcResult;
        nvrtcGetLoweredName: fn(nvrtcProgram, *const c_char, *mut *const c_char) -> nvrtcResult;
    }
}

api_table! {
    /// libcublas.so.13 / .12 (cublas_api.h; cublas_v2.h maps the API names to `_v2`).
    CublasApi {
        cublasCreate_v2: fn(*mut cublasHandle_t) -> cublasStatus_t;
        cublasDestroy_v2: fn(cublasHandle_t) -> cublasStatus_t;
        cublasGetVersion_v2: fn(cublasHandle_t, *mut c_int) -> cublasStatus_t;
        cublasSetStream_v2: fn(cublasHandle_t, CUstream) -> cublasStatus_t;
        cublasSetWorkspace_v2: fn(cublasHandle_t, *mut c_void, usize) -> cublasStatus_t;
        cublasSetMathMode: fn(cublasHandle_t, c_int) -> cublasStatus_t;
        cublasGemmEx: fn(
            cublasHandle_t, c_int, c_int, c_int, c_int, c_int,
            *const c_void, *const c_void, c_int, c_int, *const c_void, c_int, c_int,
            *const c_void, *mut c_void, c_int, c_int, c_int, c_int,
        ) -> cublasStatus_t;
    }
}

/// A C string from a vendor, or `None` for a null pointer.
pub(crate) fn c_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    Some(unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
}
