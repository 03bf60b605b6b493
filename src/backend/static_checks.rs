//! The host build's static checks (32-bit products widened late, 64-bit values narrowed to
//! 32 bits, writable module-scope storage, inline assembly, what kernel code uses of the C library
//! that no GPU has) for a GPU backend's kernels. They read the kernel
//! source and its host build, not the device: the same source is built for the host with the
//! host prelude (cached as every host build is), and its findings ride on every launch of the
//! GPU module, so a GPU run fails an offset that wraps past 2^31 elements, or a launch counter
//! that changes a result after the thousandth launch, as the host run does, without a case
//! that large or that many launches.

use std::path::PathBuf;
use std::sync::Arc;

use crate::EngineError;
use crate::backend::host::{HostCompiler, StaticFindings};
use crate::backend::{
    Backend, DeviceBuffer, GemmBf16, KernelArg, KernelSource, LaunchDims, LaunchReport, MemoryFinding, MemoryFindingKind, Module,
    ResourceUsage, Schedule, WatchedTensor,
};

/// The findings a launch carries for a source whose build had static findings, one of each
/// kind (offsets, module state, assembly): the first, and how many more, on the tensor `kernel`.
pub fn static_findings(lint: &StaticFindings) -> Vec<MemoryFinding> {
    let of = |kind: MemoryFindingKind, lines: &[String], more: &str| {
        let first = lines.first()?;
        let more = match lines.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more {more})"),
        };
        Some(MemoryFinding { kind, subject: "kernel".into(), count: lines.len() as u64, message: format!("{first}{more}") })
    };
    [
        of(MemoryFindingKind::NarrowOffset, &lint.offsets, "such offsets"),
        of(MemoryFindingKind::ModuleState, &lint.state, "such objects"),
        of(MemoryFindingKind::InlineAssembly, &lint.assembly, "such statements"),
        of(MemoryFindingKind::HostOnlyCall, &lint.calls, "such symbols"),
        of(MemoryFindingKind::PerTargetCode, &lint.targets, "for this or another build or macro"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Where and how the host build runs for the checks.
#[derive(Clone, Debug)]
pub struct StaticCheckOptions {
    /// `kernels/host/prelude.h` of the run's kernels folder.
    pub prelude: PathBuf,
    pub cache_dir: PathBuf,
    pub warp_size: u32,
}

/// A GPU backend whose modules carry the host build's static findings.
pub struct StaticChecked {
    inner: Box<dyn Backend>,
    compiler: HostCompiler,
    options: StaticCheckOptions,
}

impl StaticChecked {
    /// Fails when no host C++ compiler runs or the host prelude is missing: a GPU run then
    /// says so at its start rather than skip the checks quietly.
    pub fn new(inner: Box<dyn Backend>, options: StaticCheckOptions) -> Result<StaticChecked, EngineError> {
        if !options.prelude.is_file() {
            return Err(EngineError::ReadSource {
                path: options.prelude.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "host prelude not found (the static checks build with it)"),
            });
        }
        let compiler = HostCompiler::discover()?;
        Ok(StaticChecked { inner, compiler, options })
    }

    fn lint(&self, source: &KernelSource) -> Result<StaticFindings, EngineError> {
        let built = self.compiler.build(source, &self.options.prelude, &self.options.cache_dir, self.options.warp_size)?;
        Ok(built.lint)
    }
}

impl Backend for StaticChecked {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn arch(&self) -> String {
        self.inner.arch()
    }

    fn device_memory(&self) -> Option<u64> {
        self.inner.device_memory()
    }

    fn toolchain(&self) -> String {
        format!("{}; static checks by {}", self.inner.toolchain(), self.compiler.identity)
    }

    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
        self.inner.allocate(bytes)
    }

    fn load_module(&self, source: &KernelSource) -> Result<Arc<dyn Module>, EngineError> {
        let lint = self.lint(source)?;
        let inner = self.inner.load_module(source)?;
        Ok(Arc::new(CheckedModule { inner, findings: static_findings(&lint) }))
    }

    fn build_module(&self, source: &KernelSource) -> Result<(), EngineError> {
        self.lint(source)?;
        self.inner.build_module(source)
    }

    fn open(&self) -> Result<(), EngineError> {
        self.inner.open()
    }

    fn has_live_limits(&self) -> bool {
        self.inner.has_live_limits()
    }

    fn device_lost(&self) -> Option<String> {
        self.inner.device_lost()
    }

    fn gemm_bf16(&self, request: &GemmBf16) -> Result<LaunchReport, EngineError> {
        self.inner.gemm_bf16(request)
    }

    fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
        self.inner.copy(to, from, bytes)
    }
}

struct CheckedModule {
    inner: Arc<dyn Module>,
    findings: Vec<MemoryFinding>,
}

impl Module for CheckedModule {
    fn source(&self) -> &KernelSource {
        self.inner.source()
    }

    fn launch_watched(
        &self,
        kernel: &str,
        dims: LaunchDims,
        schedule: Schedule,
        args: &[KernelArg],
        tensors: &[WatchedTensor],
    ) -> Result<LaunchReport, EngineError> {
        let mut report = self.inner.launch_watched(kernel, dims, schedule, args, tensors)?;
        report.findings.extend(self.findings.iter().cloned());
        Ok(report)
    }

    fn resource_usage(&self, kernel: &str) -> Option<Result<ResourceUsage, EngineError>> {
        self.inner.resource_usage(kernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend whose device has 24 GiB; its buffers are host memory's.
    struct Sized;

    impl Backend for Sized {
        fn name(&self) -> &'static str {
            "sized"
        }
        fn arch(&self) -> String {
            "sm_90".into()
        }
        fn toolchain(&self) -> String {
            String::new()
        }
        fn device_memory(&self) -> Option<u64> {
            Some(24 << 30)
        }
        fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
            crate::backend::memory::Memory.allocate(bytes)
        }
        fn load_module(&self, source: &KernelSource) -> Result<Arc<dyn Module>, EngineError> {
            crate::backend::memory::Memory.load_module(source)
        }
    }

    /// What the run asks of its backend about the device reaches the backend inside, through
    /// the static checks' wrapper (a method the wrapper did not pass on once said `None`).
    #[test]
    fn the_wrapper_passes_on_what_the_device_says() {
        let dir = tempfile::tempdir().unwrap();
        let options = StaticCheckOptions {
            prelude: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/host/prelude.h"),
            cache_dir: dir.path().to_path_buf(),
            warp_size: 32,
        };
        let checked = StaticChecked::new(Box::new(Sized), options).unwrap();
        assert_eq!(checked.device_memory(), Some(24 << 30));
        assert_eq!((checked.name(), checked.arch()), ("sized", "sm_90".to_string()));
    }
}
