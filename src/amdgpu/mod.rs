//! AMDGPU without a GPU: kernel sources built into gfx1201 code objects by an upstream
//! clang (no ROCm), and their resource usage read from the `NT_AMDGPU_METADATA` note.
//! CI holds gfx1201 limits with this; on a device the same reader runs on hiprtc's output.

pub mod metadata;
pub mod msgpack;
pub mod static_build;

#[cfg(test)]
mod tests;

pub use metadata::{CodeObjectMetadata, KernelMetadata, MetadataError, ResourceUsage, read_metadata, resource_usage};
pub use static_build::{CodeObject, HipClang, extern_c_kernels};

/// The architecture the static path targets first (RDNA4, wave32).
pub const GFX1201: &str = "gfx1201";
