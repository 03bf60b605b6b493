//! Backends behind one object-safe trait: where kernels are compiled, where buffers live,
//! and how a launch runs. `host` is the embedded default and needs no GPU.

pub mod cuda;
pub mod host;

use std::path::PathBuf;
use std::sync::Arc;

use crate::EngineError;

/// A kernel source file and the kernels in it that the engine launches.
#[derive(Clone, Debug)]
pub struct KernelSource {
    /// Absolute path of the source.
    pub path: PathBuf,
    /// The path as reports show it (relative to the repository: `kernels/tf_embed_dense.hip`).
    pub display_path: String,
    /// `extern "C"` kernel symbols to export.
    pub kernels: Vec<String>,
    /// Directories searched by `#include "..."` (the shared kernel header lives in `kernels/`).
    pub include_dirs: Vec<PathBuf>,
}

/// One argument of a kernel launch, by value, in the kernel's parameter order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelArg {
    Pointer(u64),
    I32(i32),
    U32(u32),
    I64(i64),
    F32(f32),
}

impl KernelArg {
    pub fn size(&self) -> u32 {
        match self {
            KernelArg::I32(_) | KernelArg::U32(_) | KernelArg::F32(_) => 4,
            KernelArg::Pointer(_) | KernelArg::I64(_) => 8,
        }
    }

    pub fn bytes(&self) -> [u8; 8] {
        let mut out = [0u8; 8];
        match *self {
            KernelArg::Pointer(v) => out.copy_from_slice(&v.to_le_bytes()),
            KernelArg::I64(v) => out.copy_from_slice(&v.to_le_bytes()),
            KernelArg::I32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            KernelArg::U32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
            KernelArg::F32(v) => out[..4].copy_from_slice(&v.to_le_bytes()),
        }
        out
    }
}

/// In which order a launch's blocks are handed out (host backend; GPUs schedule their own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlockOrder {
    #[default]
    Linear,
    Reversed,
    Shuffled(u64),
}

/// How a launch is scheduled. A GPU backend ignores what it cannot control; the host backend
/// uses it to make scheduling-dependent results differ between repeats every time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Schedule {
    /// Fill every block's shared memory with this byte before the block starts.
    pub shared_poison: Option<u8>,
    pub block_order: BlockOrder,
    /// Release threads waiting at a barrier in reverse arrival order.
    pub wake_reverse: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared: u32,
}

/// What a launch reports besides its outputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchReport {
    pub blocks: u64,
    /// Fiber switches (host backend): one per thread per barrier or warp op.
    pub switches: u64,
    /// Shuffle reads from a lane that had exited (the reader got its own value).
    pub inactive_lane_reads: u64,
}

/// A device allocation. On the host backend it is host memory.
pub trait DeviceBuffer: Send + Sync {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn device_address(&self) -> u64;
    fn write(&mut self, offset: usize, bytes: &[u8]) -> Result<(), EngineError>;
    fn read(&self, offset: usize, bytes: &mut [u8]) -> Result<(), EngineError>;
}

/// A compiled kernel source, loaded and ready to launch.
pub trait Module: Send + Sync {
    fn source(&self) -> &KernelSource;
    fn launch(&self, kernel: &str, dims: LaunchDims, schedule: Schedule, args: &[KernelArg]) -> Result<LaunchReport, EngineError>;
}

pub trait Backend: Send + Sync {
    /// `host`, `cuda`, `hip`.
    fn name(&self) -> &'static str;
    /// The architecture the SUMMARY names: `host-x86_64`, `sm_90`, `gfx1201`.
    fn arch(&self) -> String;
    /// Compiler and runtime identity, for reports.
    fn toolchain(&self) -> String;
    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError>;
    fn load_module(&self, source: &KernelSource) -> Result<Arc<dyn Module>, EngineError>;
}
