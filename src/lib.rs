//! The engine under contract: backends, kernel modules, guarded tensors and the op registry
//! with its launchers. The harness depends on it, never the reverse.

pub mod amdgpu;
pub mod backend;
pub mod dtype;
pub mod error;
pub mod host_buffer;
pub mod ops;
pub mod shape_expr;
pub mod tensor;
pub mod threads;
pub mod toolchain;

pub use dtype::DType;
pub use error::EngineError;
