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

/// A code object's figures as the limits gate names them (the static path and the hip
/// backend's live cross-checked figures alike).
pub fn engine_usage(usage: &ResourceUsage, compiler: &str) -> crate::backend::ResourceUsage {
    let figures = [
        ("vgprs", usage.vgprs),
        ("sgprs", usage.sgprs),
        ("lds", usage.lds_bytes),
        ("scratch", usage.scratch_bytes),
        ("vgpr_spills", usage.vgpr_spills),
        ("sgpr_spills", usage.sgpr_spills),
    ];
    crate::backend::ResourceUsage {
        figures: figures.into_iter().map(|(k, v)| (k.to_string(), v as u64)).collect(),
        compiler: compiler.to_string(),
    }
}

/// The gfx static path behind the engine's `StaticCompiler`: clang builds the code object,
/// its metadata note gives the figures.
pub struct Gfx1201Static {
    pub clang: HipClang,
    pub arch: String,
    pub prelude: std::path::PathBuf,
    pub cache_dir: std::path::PathBuf,
}

impl crate::backend::StaticCompiler for Gfx1201Static {
    fn arch(&self) -> String {
        self.arch.clone()
    }

    fn identity(&self) -> String {
        self.clang.identity.clone()
    }

    fn resource_usage(
        &self,
        source: &crate::backend::KernelSource,
        kernel: &str,
    ) -> Result<crate::backend::ResourceUsage, crate::EngineError> {
        let code_object = self.clang.build(source, &self.arch, &self.prelude, &self.cache_dir)?;
        let usage = code_object.resource_usage(kernel).map_err(crate::EngineError::from)?;
        Ok(engine_usage(&usage, &code_object.compiler))
    }
}
