//! rocBLAS, layers (b) and (c): discovery, one wrapper per call with the status's name and
//! meaning, and a handle that owns the engine's workspace. The product calls resolve when
//! the library opens; the workspace calls only when the BF16 projection first sets the
//! workspace, so a rocBLAS without them is refused by name at that moment and no earlier.

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use super::runtime::{DeviceMemory, Runtime, Stream};
use super::sys::*;
use crate::EngineError;
use crate::backend::vendor::{self, Vendor};

/// Sonames tried in order (the vendor layer's): the dev symlink, `.so.5` (ROCm 7), `.so.4`
/// (ROCm 6), `.so.0` (Debian's packaging of ROCm 5.x).
pub const LIBROCBLAS: &[&str] = &["librocblas.so", "librocblas.so.5", "librocblas.so.4", "librocblas.so.0"];

/// `library` (`KERNEL_CONTRACTS_LIBROCBLAS`) alone when given, else the sonames.
pub fn candidates(library: Option<&str>) -> Vec<String> {
    Vendor::Rocblas.candidates(library)
}

/// The status enumerator's name and meaning (rocblas-types.h).
pub fn status_text(status: rocblas_status) -> (&'static str, &'static str) {
    match status {
        0 => ("rocblas_status_success", "success"),
        1 => ("rocblas_status_invalid_handle", "handle not initialized, invalid or null"),
        2 => ("rocblas_status_not_implemented", "function is not implemented"),
        3 => ("rocblas_status_invalid_pointer", "invalid pointer argument"),
        4 => ("rocblas_status_invalid_size", "invalid size argument"),
        5 => ("rocblas_status_memory_error", "failed internal memory allocation, copy or dealloc"),
        6 => ("rocblas_status_internal_error", "other internal library failure"),
        7 => ("rocblas_status_perf_degraded", "performance degraded due to low device memory"),
        8 => ("rocblas_status_size_query_mismatch", "unmatched start/stop size query"),
        9 => ("rocblas_status_size_increased", "queried device memory size increased"),
        10 => ("rocblas_status_size_unchanged", "queried device memory size unchanged"),
        11 => ("rocblas_status_invalid_value", "passed argument not valid"),
        12 => ("rocblas_status_continue", "nothing preventing function to proceed"),
        13 => ("rocblas_status_check_numerics_fail", "will be set if the vector/matrix has a NaN/Infinity/denormal value"),
        _ => ("rocblas_status_unknown", "a status this engine does not know"),
    }
}

pub struct Rocblas {
    api: RocblasApi,
    /// Resolved on first use of the workspace (`workspace_api`); the error is kept.
    workspace: Mutex<Option<Result<Arc<RocblasWorkspaceApi>, EngineError>>>,
}

impl Rocblas {
    /// The first candidate that opens with every product call (the workspace calls are
    /// resolved at their first use).
    pub fn discover(candidates: &[String]) -> Result<Rocblas, EngineError> {
        let library = vendor::open(Vendor::Rocblas, candidates, &RocblasApi::check)?;
        Ok(Rocblas { api: RocblasApi::resolve(library)?, workspace: Mutex::new(None) })
    }

    pub fn library(&self) -> &str {
        &self.api.library.name
    }

    /// The workspace calls, resolved now (once): a missing one is an error naming it.
    pub fn workspace_api(&self) -> Result<Arc<RocblasWorkspaceApi>, EngineError> {
        let mut slot = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        let resolved = slot.get_or_insert_with(|| {
            RocblasWorkspaceApi::resolve(self.api.library.clone()).map(Arc::new).map_err(|e| match e {
                EngineError::MissingSymbol { library, symbol, .. } => EngineError::MissingSymbol {
                    library,
                    symbol,
                    hint: " (the BF16 projection sets the engine's planned workspace with rocblas_set_workspace: rocBLAS 2.36 / ROCm 4.1 or later)".into(),
                },
                other => other,
            })
        });
        match resolved {
            Ok(api) => Ok(api.clone()),
            Err(EngineError::MissingSymbol { library, symbol, hint }) => Err(missing(library, symbol, hint)),
            Err(other) => Err(EngineError::LoadLibrary { library: self.library().to_string(), reason: other.to_string() }),
        }
    }

    fn check(&self, call: &str, status: rocblas_status) -> Result<(), EngineError> {
        if status == ROCBLAS_STATUS_SUCCESS {
            return Ok(());
        }
        let (name, message) = status_text(status);
        Err(EngineError::Vendor {
            library: self.library().to_string(),
            call: call.to_string(),
            code: status as i64,
            name: name.into(),
            message: message.into(),
        })
    }
}

/// Row-major `y[rows, out] = x[rows, k] · w[out, k]ᵀ` with bf16 `x` and `w`, f32 compute,
/// `y` in f32 or bf16 (c = d).
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

/// A rocBLAS handle on the backend's stream, atomics not allowed, with a workspace the
/// engine owns. Dropping it destroys the handle first, then frees the workspace.
pub struct BlasHandle {
    rocblas: Arc<Rocblas>,
    runtime: Arc<Runtime>,
    raw: rocblas_handle,
    _stream: Arc<Stream>,
    workspace: Option<DeviceMemory>,
}

unsafe impl Send for BlasHandle {}
unsafe impl Sync for BlasHandle {}

impl BlasHandle {
    pub fn create(rocblas: &Arc<Rocblas>, stream: &Arc<Stream>) -> Result<BlasHandle, EngineError> {
        let runtime = stream.runtime().clone();
        runtime.bind()?;
        let mut raw: rocblas_handle = std::ptr::null_mut();
        rocblas.check("rocblas_create_handle", unsafe { (rocblas.api.rocblas_create_handle)(&mut raw) })?;
        let handle = BlasHandle { rocblas: rocblas.clone(), runtime, raw, _stream: stream.clone(), workspace: None };
        rocblas.check("rocblas_set_stream", unsafe { (rocblas.api.rocblas_set_stream)(raw, stream.raw()) })?;
        // rocBLAS 4.x defaults to atomics allowed (results may vary run to run), 5.x to not
        // allowed: the engine says which, for reproducibility
        rocblas.check("rocblas_set_atomics_mode", unsafe { (rocblas.api.rocblas_set_atomics_mode)(raw, ROCBLAS_ATOMICS_NOT_ALLOWED) })?;
        Ok(handle)
    }

    /// Gives the handle the engine's workspace of `bytes` (hipMalloc, owned here). The
    /// workspace calls are resolved here, first, before any memory is allocated.
    pub fn set_workspace(&mut self, bytes: usize) -> Result<(), EngineError> {
        let api = self.rocblas.workspace_api()?;
        self.runtime.bind()?;
        let memory = if bytes > 0 { Some(DeviceMemory::allocate(&self.runtime, bytes)?) } else { None };
        let (pointer, size) = memory.as_ref().map_or((std::ptr::null_mut(), 0), |m| (m.address() as *mut c_void, m.len()));
        self.rocblas.check("rocblas_set_workspace", unsafe { (api.rocblas_set_workspace)(self.raw, pointer, size) })?;
        self.workspace = memory;
        let mut reported = 0usize;
        self.rocblas.check("rocblas_get_device_memory_size", unsafe { (api.rocblas_get_device_memory_size)(self.raw, &mut reported) })?;
        if bytes > 0 && unsafe { (api.rocblas_is_managing_device_memory)(self.raw) } {
            return Err(EngineError::Op {
                op: "projection_bf16".into(),
                reason: format!(
                    "{}: rocblas_is_managing_device_memory is true after rocblas_set_workspace of {bytes} bytes",
                    self.rocblas.library()
                ),
            });
        }
        Ok(())
    }

    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, |m| m.len())
    }

    /// rocblas_gemm_ex, then a device synchronize. Row-major `y = x · wᵀ` is column-major
    /// `yᵀ[out, rows] = op_T(w as [k, out]) · (x as [k, rows])`: transA = T (lda = k),
    /// transB = N (ldb = k), c = d = y (ldc = ldd = out).
    pub fn projection_bf16(&self, p: ProjectionBf16) -> Result<(), EngineError> {
        self.runtime.bind()?;
        let alpha: f32 = 1.0;
        let beta: f32 = 0.0;
        let y_type: c_int = if p.y_is_bf16 { ROCBLAS_DATATYPE_BF16_R } else { ROCBLAS_DATATYPE_F32_R };
        self.rocblas.check("rocblas_gemm_ex", unsafe {
            (self.rocblas.api.rocblas_gemm_ex)(
                self.raw,
                ROCBLAS_OPERATION_TRANSPOSE,
                ROCBLAS_OPERATION_NONE,
                p.out,
                p.rows,
                p.k,
                &alpha as *const f32 as *const c_void,
                p.w as *const c_void,
                ROCBLAS_DATATYPE_BF16_R,
                p.k,
                p.x as *const c_void,
                ROCBLAS_DATATYPE_BF16_R,
                p.k,
                &beta as *const f32 as *const c_void,
                p.y as *const c_void,
                y_type,
                p.out,
                p.y as *mut c_void,
                y_type,
                p.out,
                ROCBLAS_DATATYPE_F32_R,
                ROCBLAS_GEMM_ALGO_STANDARD,
                0,
                ROCBLAS_GEMM_FLAGS_NONE,
            )
        })?;
        self.runtime.synchronize()
    }
}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        if self.runtime.bind().is_ok() {
            unsafe { (self.rocblas.api.rocblas_destroy_handle)(self.raw) };
        }
    }
}
