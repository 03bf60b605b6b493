//! The engine's errors: each names what failed (library, symbol, kernel, file) and why.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("unknown dtype `{0}` (known: f32, f16, bf16, i32, u32, u8)")]
    UnknownDtype(String),

    #[error("dtype {dtype} has no kernel dtype code (kernels take f32, f16 or bf16 by code)")]
    NoKernelCode { dtype: crate::DType },

    #[error("shape expression `{expression}`: {reason}")]
    ShapeExpression { expression: String, reason: String },

    #[error("no C++ compiler for the host backend: tried {tried}")]
    NoHostCompiler { tried: String },

    #[error("no compiler for {target} code objects: tried {tried}")]
    NoDeviceCompiler { target: String, tried: String },

    #[error(transparent)]
    AmdgpuMetadata(#[from] crate::amdgpu::MetadataError),

    #[error("cannot read kernel source {path}")]
    ReadSource {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("compiling {path} with {compiler} failed:\n{log}")]
    Compile { path: String, compiler: String, log: String },

    #[error("{tool} failed for {path}: {reason}")]
    Tool { tool: String, path: String, reason: String },

    #[error("kernel cache {path}")]
    Cache {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("kernel cache folder {path}: {reason}")]
    CacheFolder { path: PathBuf, reason: String },

    #[error("cannot load library {library}: {reason}")]
    LoadLibrary { library: String, reason: String },

    #[error("library {library} has no symbol `{symbol}`{hint}")]
    MissingSymbol { library: String, symbol: String, hint: String },

    #[error(
        "kernel `{kernel}` takes {expected} parameters ({expected_sizes:?} bytes) but the launcher passes {given} ({given_sizes:?} bytes)"
    )]
    ArgumentMismatch { kernel: String, expected: usize, expected_sizes: Vec<u32>, given: usize, given_sizes: Vec<u32> },

    #[error("kernel `{kernel}` ({source_path}): {message}")]
    KernelFault { kernel: String, source_path: String, message: String },

    #[error("launch of `{kernel}` refused: {reason}")]
    BadLaunch { kernel: String, reason: String },

    #[error("op `{op}`: {reason}")]
    Op { op: String, reason: String },

    #[error("device buffer: {0}")]
    Buffer(String),

    /// A vendor library call that failed, with the vendor's own name and message for the code.
    #[error("{call} failed in {library}: {name} ({code}): {message}")]
    Vendor { library: String, call: String, code: i64, name: String, message: String },
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
