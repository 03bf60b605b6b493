//! cuBLAS, layers (b) and (c): discovery, one wrapper per call with the status's name
//! and meaning, and a handle that owns its workspace. The engine sizes the workspace when
//! it plans a run and sets it with cublasSetWorkspace_v2, so the memory plan is exact.

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::driver::{Context, DeviceMemory, Stream};
use super::sys::*;
use crate::EngineError;
use crate::backend::vendor::{self, Vendor};

/// Where cuBLAS is looked for (the vendor layer's list): the sonames in
/// `KERNEL_CONTRACTS_CUBLAS_DIR` alone when set, else the sonames, then the toolkit's folders.
pub fn candidates() -> Vec<PathBuf> {
    Vendor::Cublas.candidates(None).into_iter().map(PathBuf::from).collect()
}

/// The status enumerator's name and meaning (cublas_api.h).
pub fn status_text(status: cublasStatus_t) -> (&'static str, &'static str) {
    match status {
        0 => ("CUBLAS_STATUS_SUCCESS", "success"),
        1 => ("CUBLAS_STATUS_NOT_INITIALIZED", "the library was not initialized"),
        3 => ("CUBLAS_STATUS_ALLOC_FAILED", "resource allocation failed"),
        7 => ("CUBLAS_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed"),
        8 => ("CUBLAS_STATUS_ARCH_MISMATCH", "the device does not support the operation"),
        11 => ("CUBLAS_STATUS_MAPPING_ERROR", "access to GPU memory space failed"),
        13 => ("CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"),
        14 => ("CUBLAS_STATUS_INTERNAL_ERROR", "an internal cuBLAS operation failed"),
        15 => ("CUBLAS_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"),
        16 => ("CUBLAS_STATUS_LICENSE_ERROR", "license error"),
        _ => ("CUBLAS_STATUS_UNKNOWN", "a status this engine does not know"),
    }
}

pub struct Cublas {
    api: CublasApi,
}

impl Cublas {
    /// cuBLAS from the first candidate that opens with every symbol (libcublasLt beside it
    /// opened first, so that its dependency resolves).
    pub fn discover() -> Result<Cublas, EngineError> {
        let library = vendor::open(Vendor::Cublas, &Vendor::Cublas.candidates(None), &CublasApi::check)?;
        Ok(Cublas { api: CublasApi::resolve(library)? })
    }

    pub fn open(library: &Path) -> Result<Cublas, EngineError> {
        let library = vendor::open(Vendor::Cublas, &[library.display().to_string()], &CublasApi::check)?;
        Ok(Cublas { api: CublasApi::resolve(library)? })
    }

    pub fn library(&self) -> &str {
        &self.api.library.name
    }

    fn check(&self, call: &str, status: cublasStatus_t) -> Result<(), EngineError> {
        if status == CUBLAS_STATUS_SUCCESS {
            return Ok(());
        }
        let (name, message) = status_text(status);
        Err(EngineError::Vendor {
            library: self.library().to_string(),
            call: call.to_string(),
            code: status as i64,
            name: name.to_string(),
            message: message.to_string(),
        })
    }
}

/// Row-major `y[rows, out] = x[rows, k] · w[out, k]ᵀ` with bf16 `x` and `w`, f32
/// accumulation (CUBLAS_COMPUTE_32F), `y` in f32 or bf16.
#[derive(Clone, Copy, Debug)]
pub struct ProjectionBf16 {
    pub x: u64,
    pub w: u64,
    pub y: u64,
    pub y_is_bf16: bool,
    pub rows: i32,
    pub k: i32,
    pub out: i32,
}

/// A cuBLAS handle bound to the backend's stream, with a workspace the engine owns.
/// Dropping it destroys the handle first, then frees the workspace.
pub struct BlasHandle {
    cublas: Arc<Cublas>,
    context: Arc<Context>,
    raw: cublasHandle_t,
    _stream: Arc<Stream>,
    workspace: Option<DeviceMemory>,
}

unsafe impl Send for BlasHandle {}
unsafe impl Sync for BlasHandle {}

impl BlasHandle {
    pub fn create(cublas: &Arc<Cublas>, context: &Arc<Context>, stream: &Arc<Stream>) -> Result<BlasHandle, EngineError> {
        context.bind()?;
        let mut raw: cublasHandle_t = std::ptr::null_mut();
        cublas.check("cublasCreate_v2", unsafe { (cublas.api.cublasCreate_v2)(&mut raw) })?;
        let handle = BlasHandle { cublas: cublas.clone(), context: context.clone(), raw, _stream: stream.clone(), workspace: None };
        cublas.check("cublasSetStream_v2", unsafe { (cublas.api.cublasSetStream_v2)(raw, stream.raw()) })?;
        cublas.check("cublasSetMathMode", unsafe { (cublas.api.cublasSetMathMode)(raw, CUBLAS_DEFAULT_MATH) })?;
        Ok(handle)
    }

    /// `cublasGetVersion_v2`: 130000-style (major * 10000 + minor * 100 + patch).
    pub fn version(&self) -> Result<i32, EngineError> {
        let mut v: c_int = 0;
        self.cublas.check("cublasGetVersion_v2", unsafe { (self.cublas.api.cublasGetVersion_v2)(self.raw, &mut v) })?;
        Ok(v)
    }

    /// Gives the handle a workspace of `bytes` owned by the engine (0: none, so cuBLAS may
    /// only use algorithms that need no workspace).
    pub fn set_workspace(&mut self, bytes: usize) -> Result<(), EngineError> {
        self.context.bind()?;
        let memory = if bytes > 0 { Some(DeviceMemory::allocate(&self.context, bytes)?) } else { None };
        let (pointer, size) = memory.as_ref().map_or((std::ptr::null_mut(), 0), |m| (m.address() as *mut c_void, m.len()));
        self.cublas.check("cublasSetWorkspace_v2", unsafe { (self.cublas.api.cublasSetWorkspace_v2)(self.raw, pointer, size) })?;
        self.workspace = memory;
        Ok(())
    }

    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, |m| m.len())
    }

    pub fn set_math_mode(&self, mode: c_int) -> Result<(), EngineError> {
        self.cublas.check("cublasSetMathMode", unsafe { (self.cublas.api.cublasSetMathMode)(self.raw, mode) })
    }

    /// The projection through cublasGemmEx, then a stream synchronize. Row-major
    /// `y = x · wᵀ` is column-major `yᵀ[out, rows] = op_T(w as [k, out]) · (x as [k, rows])`.
    pub fn projection_bf16(&self, p: ProjectionBf16, stream: &Stream) -> Result<(), EngineError> {
        self.context.bind()?;
        let alpha: f32 = 1.0;
        let beta: f32 = 0.0;
        let y_type = if p.y_is_bf16 { CUDA_R_16BF } else { CUDA_R_32F };
        self.cublas.check("cublasGemmEx", unsafe {
            (self.cublas.api.cublasGemmEx)(
                self.raw,
                CUBLAS_OP_T,
                CUBLAS_OP_N,
                p.out,
                p.rows,
                p.k,
                &alpha as *const f32 as *const c_void,
                p.w as *const c_void,
                CUDA_R_16BF,
                p.k,
                p.x as *const c_void,
                CUDA_R_16BF,
                p.k,
                &beta as *const f32 as *const c_void,
                p.y as *mut c_void,
                y_type,
                p.out,
                CUBLAS_COMPUTE_32F,
                CUBLAS_GEMM_DEFAULT,
            )
        })?;
        stream.synchronize()
    }
}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        if self.context.bind().is_ok() {
            unsafe { (self.cublas.api.cublasDestroy_v2)(self.raw) };
        }
        // `workspace` is freed after this body: the handle no longer refers to it
    }
}
