//! Layer (a): raw tables of function pointers for libamdhip64, hiprtc and librocblas, every
//! required symbol resolved when the library opens (the same `api_table!` as the cuda
//! backend). Signatures and values are ROCm's own headers' (ROCm/HIP hip_runtime_api.h,
//! driver_types.h and hiprtc.h for ROCm 6 and later; ROCm/rocBLAS
//! library/include/internal/*.h), the integer values read by compiling those headers. Nothing here
//! checks a result code: that is layer (b), `runtime.rs`, `hiprtc.rs`, `rocblas.rs`.

#![allow(non_snake_case, non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};

use crate::EngineError;
pub use crate::backend::cuda::sys::Dylib;
use crate::backend::cuda::sys::api_table;
pub(crate) use crate::backend::cuda::sys::c_str;

pub type hipError_t = c_int;
pub type hipModule_t = *mut c_void;
pub type hipFunction_t = *mut c_void;
pub type hipStream_t = *mut c_void;
/// `hipDeviceptr_t` is `void*`.
pub type hipDeviceptr_t = *mut c_void;

pub type hiprtcResult = c_int;
pub type hiprtcProgram = *mut c_void;

pub type rocblas_status = c_int;
pub type rocblas_handle = *mut c_void;

pub const HIP_SUCCESS: hipError_t = 0;
pub const HIPRTC_SUCCESS: hiprtcResult = 0;
pub const ROCBLAS_STATUS_SUCCESS: rocblas_status = 0;

/// `sizeof(hipDeviceProp_tR0600)` (ROCm ≥ 6).
pub const DEVICE_PROP_R0600_SIZE: usize = 1472;
/// `char gcnArchName[256]` in `hipDeviceProp_tR0600`: offset 1160, measured by compiling
/// ROCm's hip_runtime_api.h (`offsetof`), and so in tinygrad's ctypes autogen of that header
/// (`field(1160, Array(c_char, 256))`, SIZE = 1472).
pub const DEVICE_PROP_R0600_GCN_ARCH_NAME: usize = 1160;
/// `char name[256]` at offset 0.
pub const DEVICE_PROP_R0600_NAME: usize = 0;

// hipFunction_attribute (same values as CUDA's)
pub const HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
pub const HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: c_int = 1;
pub const HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: c_int = 3;
pub const HIP_FUNC_ATTRIBUTE_NUM_REGS: c_int = 4;

// rocBLAS enums
pub const ROCBLAS_OPERATION_NONE: c_int = 111;
pub const ROCBLAS_OPERATION_TRANSPOSE: c_int = 112;
pub const ROCBLAS_DATATYPE_F32_R: c_int = 151;
pub const ROCBLAS_DATATYPE_BF16_R: c_int = 168;
pub const ROCBLAS_GEMM_ALGO_STANDARD: c_int = 0;
pub const ROCBLAS_GEMM_FLAGS_NONE: u32 = 0;
pub const ROCBLAS_ATOMICS_NOT_ALLOWED: c_int = 0;

api_table! {
    /// libamdhip64 (ROCm 6/7 `hip_runtime_api.h`). `hipGetDevicePropertiesR0600` is not in
    /// this table: ROCm 5.x lacks it (`HipApi::properties_symbol`).
    HipApi {
        hipGetErrorName: fn(hipError_t) -> *const c_char;
        hipGetErrorString: fn(hipError_t) -> *const c_char;
        hipInit: fn(c_uint) -> hipError_t;
        hipDriverGetVersion: fn(*mut c_int) -> hipError_t;
        hipRuntimeGetVersion: fn(*mut c_int) -> hipError_t;
        hipGetDeviceCount: fn(*mut c_int) -> hipError_t;
        hipSetDevice: fn(c_int) -> hipError_t;
        hipDeviceTotalMem: fn(*mut usize, c_int) -> hipError_t;
        hipMalloc: fn(*mut *mut c_void, usize) -> hipError_t;
        hipFree: fn(*mut c_void) -> hipError_t;
        hipMemset: fn(*mut c_void, c_int, usize) -> hipError_t;
        hipMemsetD16: fn(hipDeviceptr_t, u16, usize) -> hipError_t;
        hipMemsetD32: fn(hipDeviceptr_t, c_int, usize) -> hipError_t;
        hipMemcpyHtoD: fn(hipDeviceptr_t, *mut c_void, usize) -> hipError_t;
        hipMemcpyDtoH: fn(*mut c_void, hipDeviceptr_t, usize) -> hipError_t;
        hipMemcpyDtoD: fn(hipDeviceptr_t, hipDeviceptr_t, usize) -> hipError_t;
        hipModuleLoadData: fn(*mut hipModule_t, *const c_void) -> hipError_t;
        hipModuleUnload: fn(hipModule_t) -> hipError_t;
        hipModuleGetFunction: fn(*mut hipFunction_t, hipModule_t, *const c_char) -> hipError_t;
        hipFuncGetAttribute: fn(*mut c_int, c_int, hipFunction_t) -> hipError_t;
        hipModuleLaunchKernel: fn(hipFunction_t, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, hipStream_t, *mut *mut c_void, *mut *mut c_void) -> hipError_t;
        hipDeviceSynchronize: fn() -> hipError_t;
        hipStreamCreate: fn(*mut hipStream_t) -> hipError_t;
        hipStreamDestroy: fn(hipStream_t) -> hipError_t;
    }
}

api_table! {
    /// Page-locked host memory in libamdhip64: the stage of large copies, and nothing more, so
    /// a runtime without these calls (ROCm deprecates and renames them over versions) copies
    /// direct rather than failing to open.
    HostMemoryApi {
        hipHostMalloc: fn(*mut *mut c_void, usize, c_uint) -> hipError_t;
        hipHostFree: fn(*mut c_void) -> hipError_t;
    }
}

/// `hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600*, int)`.
pub type HipGetDevicePropertiesR0600 = unsafe extern "C" fn(*mut c_void, c_int) -> hipError_t;
pub const HIP_GET_DEVICE_PROPERTIES_R0600: &str = "hipGetDevicePropertiesR0600";

api_table! {
    /// hiprtc (libhiprtc.so.6/.7, or the hiprtc* symbols inside libamdhip64.so.5).
    HiprtcApi {
        hiprtcGetErrorString: fn(hiprtcResult) -> *const c_char;
        hiprtcVersion: fn(*mut c_int, *mut c_int) -> hiprtcResult;
        hiprtcCreateProgram: fn(*mut hiprtcProgram, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> hiprtcResult;
        hiprtcDestroyProgram: fn(*mut hiprtcProgram) -> hiprtcResult;
        hiprtcCompileProgram: fn(hiprtcProgram, c_int, *const *const c_char) -> hiprtcResult;
        hiprtcGetCodeSize: fn(hiprtcProgram, *mut usize) -> hiprtcResult;
        hiprtcGetCode: fn(hiprtcProgram, *mut c_char) -> hiprtcResult;
        hiprtcGetProgramLogSize: fn(hiprtcProgram, *mut usize) -> hiprtcResult;
        hiprtcGetProgramLog: fn(hiprtcProgram, *mut c_char) -> hiprtcResult;
        hiprtcAddNameExpression: fn(hiprtcProgram, *const c_char) -> hiprtcResult;
        hiprtcGetLoweredName: fn(hiprtcProgram, *const c_char, *mut *const c_char) -> hiprtcResult;
    }
}

api_table! {
    /// librocblas: what the BF16 product needs, resolved when the library opens.
    RocblasApi {
        rocblas_create_handle: fn(*mut rocblas_handle) -> rocblas_status;
        rocblas_destroy_handle: fn(rocblas_handle) -> rocblas_status;
        rocblas_set_stream: fn(rocblas_handle, hipStream_t) -> rocblas_status;
        rocblas_set_atomics_mode: fn(rocblas_handle, c_int) -> rocblas_status;
        rocblas_gemm_ex: fn(
            rocblas_handle, c_int, c_int, c_int, c_int, c_int,
            *const c_void, *const c_void, c_int, c_int, *const c_void, c_int, c_int,
            *const c_void, *const c_void, c_int, c_int, *mut c_void, c_int, c_int,
            c_int, c_int, i32, u32,
        ) -> rocblas_status;
    }
}

api_table! {
    /// librocblas's workspace calls, resolved only when the BF16 projection first sets the
    /// engine's workspace (rocBLAS ≥ 2.36, ROCm 4.1), so a rocBLAS without them still
    /// serves every other path.
    RocblasWorkspaceApi {
        rocblas_set_workspace: fn(rocblas_handle, *mut c_void, usize) -> rocblas_status;
        rocblas_get_device_memory_size: fn(rocblas_handle, *mut usize) -> rocblas_status;
        rocblas_is_managing_device_memory: fn(rocblas_handle) -> bool;
    }
}

/// A missing-symbol error for the optional properties call.
pub fn missing(library: &str, symbol: &str, hint: &str) -> EngineError {
    EngineError::MissingSymbol { library: library.to_string(), symbol: symbol.to_string(), hint: hint.to_string() }
}
