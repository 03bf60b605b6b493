//! The host backend, the embedded default: kernels compiled by the system C++ compiler and
//! run on the CPU with GPU block semantics (fibers, barriers, warp exchange, shared memory).

#[cfg(test)]
mod cache_tests;
mod calls;
pub(crate) mod compile;
mod findings;
mod gemm;
#[cfg(test)]
mod hip_header_tests;
mod lint;
mod predefined;
pub mod reference;
mod runtime;
mod shared_decls;
mod state;
mod targets;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub use compile::{BuildMode, Built, CoverageNotes, GCOV_STRIP_ALL, HostCompiler, StaticFindings};
pub use runtime::{start_block_workers, worker_count};

use crate::EngineError;
use crate::backend::pool::BufferPool;
use crate::backend::{Backend, DeviceBuffer, GemmBf16, KernelSource, LaunchReport, Module};

#[derive(Clone, Debug)]
pub struct HostOptions {
    /// `kernels/host/prelude.h`.
    pub prelude: PathBuf,
    /// Where built libraries are cached (`target/kernel-cache`).
    pub cache_dir: PathBuf,
    /// OS threads that run blocks; 1 gives a deterministic replay.
    pub workers: usize,
    /// 32 (gfx1201 wave32, every NVIDIA GPU) or 64.
    pub warp_size: u32,
}

pub struct HostBackend {
    options: HostOptions,
    mode: BuildMode,
    compiler: HostCompiler,
    modules: Mutex<HashMap<PathBuf, Arc<runtime::HostModule>>>,
    /// Tensors' buffers, kept for the next tensor of the same size.
    buffers: Arc<BufferPool>,
}

impl HostBackend {
    pub fn new(options: HostOptions) -> Result<HostBackend, EngineError> {
        if !options.prelude.is_file() {
            return Err(EngineError::ReadSource {
                path: options.prelude.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "host prelude not found"),
            });
        }
        if options.warp_size != 32 && options.warp_size != 64 {
            return Err(EngineError::Op { op: "host backend".into(), reason: format!("warp size {} (32 or 64)", options.warp_size) });
        }
        let compiler = HostCompiler::discover()?;
        Ok(HostBackend { options, mode: BuildMode::Normal, compiler, modules: Mutex::new(HashMap::new()), buffers: BufferPool::new() })
    }

    pub fn compiler(&self) -> &HostCompiler {
        &self.compiler
    }

    /// This backend with every kernel built for coverage (`contracts coverage`): its
    /// libraries write their counters when the process exits.
    pub fn with_coverage(mut self) -> HostBackend {
        self.mode = BuildMode::Coverage;
        self
    }

    /// The library of `source` as this backend builds it (from the cache when it can), with
    /// its coverage notes in coverage mode.
    pub fn build(&self, source: &KernelSource) -> Result<Built, EngineError> {
        self.compiler.build_as(source, &self.options.prelude, &self.options.cache_dir, self.options.warp_size, self.mode)
    }
}

impl Backend for HostBackend {
    fn name(&self) -> &'static str {
        "host"
    }

    fn arch(&self) -> String {
        format!("host-{}", std::env::consts::ARCH)
    }

    fn device_memory(&self) -> Option<u64> {
        None
    }

    fn toolchain(&self) -> String {
        format!("{} ({} block workers, warp {})", self.compiler.identity, self.options.workers, self.options.warp_size)
    }

    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
        self.buffers.allocate(bytes, |bytes| Ok(Box::new(HostBuffer::new(bytes)?)))
    }

    fn load_module(&self, source: &KernelSource) -> Result<Arc<dyn Module>, EngineError> {
        let built = self.build(source)?;
        let library = built.library;
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = modules.get(&library) {
            return Ok(m.clone());
        }
        let module = Arc::new(runtime::HostModule::open(source, &library, built.lint, self.options.workers)?);
        modules.insert(library, module.clone());
        Ok(module)
    }

    fn build_module(&self, source: &KernelSource) -> Result<(), EngineError> {
        self.build(source).map(drop)
    }

    fn gemm_bf16(&self, request: &GemmBf16) -> Result<LaunchReport, EngineError> {
        gemm::gemm_bf16(request)
    }

    fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
        crate::backend::copy_host_memory(to, from, bytes)
    }
}

/// Host memory standing in for device memory, aligned as a GPU allocation is (256 bytes).
struct HostBuffer {
    pointer: *mut u8,
    layout: std::alloc::Layout,
}

unsafe impl Send for HostBuffer {}
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    fn new(bytes: usize) -> Result<HostBuffer, EngineError> {
        let layout =
            std::alloc::Layout::from_size_align(bytes.max(1), 256).map_err(|e| EngineError::Buffer(format!("{bytes} bytes: {e}")))?;
        let pointer = unsafe { std::alloc::alloc_zeroed(layout) };
        if pointer.is_null() {
            return Err(EngineError::Buffer(format!("out of host memory for {bytes} bytes")));
        }
        Ok(HostBuffer { pointer, layout })
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), EngineError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.layout.size() => Ok(()),
            _ => Err(EngineError::Buffer(format!("access of {len} bytes at {offset} past a buffer of {}", self.layout.size()))),
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        unsafe { std::alloc::dealloc(self.pointer, self.layout) }
    }
}

impl DeviceBuffer for HostBuffer {
    fn len(&self) -> usize {
        self.layout.size()
    }

    fn device_address(&self) -> u64 {
        self.pointer as u64
    }

    fn write(&mut self, offset: usize, bytes: &[u8]) -> Result<(), EngineError> {
        self.check(offset, bytes.len())?;
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.pointer.add(offset), bytes.len()) };
        Ok(())
    }

    fn read(&self, offset: usize, bytes: &mut [u8]) -> Result<(), EngineError> {
        self.check(offset, bytes.len())?;
        unsafe { std::ptr::copy_nonoverlapping(self.pointer.add(offset), bytes.as_mut_ptr(), bytes.len()) };
        Ok(())
    }

    fn fill(&mut self, offset: usize, len: usize, pattern: &[u8]) -> Result<(), EngineError> {
        self.check(offset, len)?;
        crate::backend::check_pattern(len, pattern)?;
        // SAFETY: `check` kept the range within the allocation, which is this buffer's own
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.pointer.add(offset), len) };
        match pattern {
            [byte] => bytes.fill(*byte),
            _ => fill_repeating(bytes, pattern),
        }
        Ok(())
    }
}

/// `bytes` set to `pattern` repeated (its length a multiple of the pattern's), by doubling
/// what is already set: a copy per pattern of 2 or 4 bytes was a call of `memcpy` per element
/// of every tensor's two 64 KiB guard bands, an eighth of the host suite's CPU time.
fn fill_repeating(bytes: &mut [u8], pattern: &[u8]) {
    let Some(first) = bytes.get_mut(..pattern.len()) else { return };
    first.copy_from_slice(pattern);
    let mut set = pattern.len();
    while set < bytes.len() {
        let more = set.min(bytes.len() - set);
        bytes.copy_within(..more, set);
        set += more;
    }
}
