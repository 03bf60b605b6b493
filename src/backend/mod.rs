//! Backends behind one object-safe trait: where kernels are compiled, where buffers live,
//! and how a launch runs. `host` is the embedded default and needs no GPU.

pub mod cache;
pub mod cuda;
pub mod hip;
pub mod host;
#[doc(hidden)]
pub mod memory;
pub mod pool;
pub mod preludes;
pub(crate) mod staging;
pub mod static_checks;
pub mod symbols;
pub mod vendor;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::{DType, EngineError};

/// A kernel source file and the kernels in it that the engine launches.
#[derive(Clone, Debug)]
pub struct KernelSource {
    /// Absolute path of the source.
    pub path: PathBuf,
    /// The path as reports show it (relative to the repository: `kernels/tf_embed_dense.hip`).
    pub display_path: String,
    /// Kernel symbols to export: `extern "C"` names, or C++ names such as template
    /// instantiations (`scale_rows<float, 4>`), as [`symbols`] takes them.
    pub kernels: Vec<String>,
    /// Directories searched by `#include "..."` (the shared kernel header lives in `kernels/`).
    pub include_dirs: Vec<PathBuf>,
}

/// `text` as the inside of a C string literal, for the file name of a generated `#line`
/// directive: quotes and backslashes escaped, and every control character (a newline in a
/// folder's name) as an octal escape, so the name still names that file and the directive
/// stays one line.
pub fn c_string_body(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            // three digits always: a digit after the escape cannot extend it
            c if c.is_ascii_control() => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out
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

/// The launch's arguments against the sizes the kernel declares (a cubin's parameter table,
/// a code object's `.args`): a GPU runtime copies each parameter's size from its own list,
/// so a launcher that passes other sizes would hand the kernel garbage.
pub fn check_argument_sizes(kernel: &str, expected: &[u32], args: &[KernelArg]) -> Result<(), EngineError> {
    let given_sizes: Vec<u32> = args.iter().map(|a| a.size()).collect();
    if given_sizes == expected {
        return Ok(());
    }
    Err(EngineError::ArgumentMismatch {
        kernel: kernel.to_string(),
        expected: expected.len(),
        expected_sizes: expected.to_vec(),
        given: given_sizes.len(),
        given_sizes,
    })
}

/// In which order a launch's blocks are handed out (host backend; GPUs schedule their own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BlockOrder {
    #[default]
    Linear,
    Reversed,
    Shuffled(u64),
}

/// In which order a block's threads start (host backend). Each thread runs until it blocks at
/// a barrier or a warp op, so the first threads in the order run ahead of the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ThreadOrder {
    #[default]
    Forward,
    Reversed,
    Shuffled(u64),
    /// One warp, chosen by the seed, runs ahead until it blocks; then the rest in order.
    WarpAhead(u64),
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
    pub thread_order: ThreadOrder,
}

/// A tensor of a launch as the host backend's memory checks see it: an access within
/// `guard_bytes` before or after its data is out of bounds, named by `name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WatchedTensor<'a> {
    pub name: &'a str,
    /// Device address of the first data element.
    pub data: u64,
    pub bytes: u64,
    pub element_bytes: u32,
    pub guard_bytes: u64,
    /// An output: the kernel may write it (once per element, or atomically). An input
    /// written at all is a finding.
    pub writable: bool,
}

/// What kind of wrong access a launch made (host backend).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemoryFindingKind {
    /// A read of a tensor's guard band: past either end of its data.
    OutOfBoundsRead,
    OutOfBoundsWrite,
    /// A `__shared__` array accessed past its declared size (or the dynamic pool past the
    /// launch's dynamic bytes).
    SharedOutOfBounds,
    /// A read of shared memory no thread of the block wrote since the block began.
    SharedUnwrittenRead,
    /// A store into an input tensor.
    InputWrite,
    /// Two threads' plain stores to one output element with nothing ordering them: two
    /// blocks, or two threads of a block in one barrier interval.
    GlobalRace,
    /// An offset computed as a 32-bit product and widened to 64 bits afterwards: right for
    /// every host case, wrong past 2^31 elements (the host build's static check).
    NarrowOffset,
    /// Two threads' accesses to the same shared byte in one barrier interval, one a write.
    SharedRace,
    /// Writable module-scope storage of kernel code: it keeps its value between launches
    /// (the host build's static check).
    ModuleState,
    /// An N-byte load or store of a tensor or shared memory at an address that is not a
    /// multiple of N: a GPU faults on it, x86 does not (host backend).
    Misaligned,
    /// Inline assembly in kernel code: the host runs it unchecked, and a GPU never builds it
    /// (the host build's static check).
    InlineAssembly,
    /// A function or object kernel code uses from outside (a C library routine: `strcpy`,
    /// `write`) that no GPU compiler provides to device code: the host runs it unchecked, and a
    /// GPU never builds it (the host build's static check).
    HostOnlyCall,
    /// Lines of the kernel's own files that the host build compiles and a GPU build does not,
    /// or the reverse (an `#if` on the target), or a compiler's own macro whose value differs
    /// by target read by its code: the host's checks see other code than a GPU runs (the host
    /// build's static check).
    PerTargetCode,
    /// An index of an array whose size the source declares (a thread's local array above all,
    /// which no access check watches) past that size or below 0; the block stopped there.
    ArrayIndexOutOfBounds,
}

impl MemoryFindingKind {
    /// Whether the access may have stored where its kernel had no business: past a tensor,
    /// into an input, past a `__shared__` array (the host keeps those beside its runtime's own
    /// data), or misaligned (a load or a store). A process whose kernel did so is not trusted
    /// with a later job.
    pub fn may_have_written_outside(self) -> bool {
        matches!(
            self,
            MemoryFindingKind::OutOfBoundsWrite
                | MemoryFindingKind::InputWrite
                | MemoryFindingKind::SharedOutOfBounds
                | MemoryFindingKind::Misaligned
        )
    }
}

/// One kind of wrong access: the first one seen, in words (tensor or array, element, source
/// line, block and thread), and how many accesses of that kind the launch made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFinding {
    pub kind: MemoryFindingKind,
    /// The tensor or `__shared__` array it is about.
    pub subject: String,
    pub count: u64,
    pub message: String,
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
    /// Threads per block of the launch (the `threads` figure of the limits gate).
    pub block_threads: u32,
    /// Wrong accesses the backend saw (host backend), one per kind.
    pub findings: Vec<MemoryFinding>,
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
    /// Bytes `offset..offset + len` set to `pattern` repeated (`len` a multiple of its
    /// length). On a GPU a pattern of 1, 2 or 4 bytes is a memset on the device, where a copy
    /// of as many bytes from the host was every tensor's guard bands and every output's poison
    /// before each launch (a synchronous copy each, and a gigabyte output's poison gigabytes).
    fn fill(&mut self, offset: usize, len: usize, pattern: &[u8]) -> Result<(), EngineError> {
        fill_by_writes(self, offset, len, pattern)
    }
    /// Every byte set to zero, as a fresh allocation's (a buffer used again, `pool`).
    fn zero(&mut self) -> Result<(), EngineError> {
        self.fill(0, self.len(), &[0])
    }
}

/// `Backend::copy` where a device address is a host address (the host and memory backends):
/// the caller's buffers own `bytes` at each for the call.
pub(crate) fn copy_host_memory(to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
    if bytes == 0 {
        return Ok(());
    }
    if to == 0 || from == 0 || to.abs_diff(from) < bytes as u64 {
        return Err(EngineError::Buffer(format!("a copy of {bytes} bytes from {from:#x} to {to:#x}: null or overlapping")));
    }
    // SAFETY: both addresses are host memory of at least `bytes` that the caller's buffers own
    // for the call, and they do not overlap (checked above)
    unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes) };
    Ok(())
}

/// A fill's pattern covers `len` bytes whole: not empty, and `len` a multiple of its length.
pub(crate) fn check_pattern(len: usize, pattern: &[u8]) -> Result<(), EngineError> {
    if pattern.is_empty() || !len.is_multiple_of(pattern.len()) {
        return Err(EngineError::Buffer(format!("a fill of {len} bytes with a pattern of {}", pattern.len())));
    }
    Ok(())
}

/// `DeviceBuffer::fill` by copies of the repeated pattern from the host, a piece at a time.
pub(crate) fn fill_by_writes<B: DeviceBuffer + ?Sized>(
    buffer: &mut B,
    offset: usize,
    len: usize,
    pattern: &[u8],
) -> Result<(), EngineError> {
    check_pattern(len, pattern)?;
    let piece = (1 << 20) / pattern.len() * pattern.len();
    let bytes = pattern.repeat(piece.min(len) / pattern.len());
    for start in (0..len).step_by(piece) {
        let end = (start + piece).min(len);
        buffer.write(offset + start, &bytes[..end - start])?;
    }
    Ok(())
}

/// How a device sets a pattern with one memset: by bytes, by 16-bit or by 32-bit words (its
/// value little-endian, as the buffer holds it), when the range is aligned to the word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Memset {
    D8(u8),
    D16(u16),
    D32(u32),
}

impl Memset {
    /// The memset that sets `pattern` over `offset..offset + len`, if one does (none for a
    /// pattern that does not cover `len` whole: `fill_by_writes` refuses it).
    pub(crate) fn of(offset: usize, len: usize, pattern: &[u8]) -> Option<Memset> {
        check_pattern(len, pattern).ok()?;
        let aligned = |n: usize| offset.is_multiple_of(n) && len.is_multiple_of(n);
        match *pattern {
            [b] => Some(Memset::D8(b)),
            [a, b] if a == b => Some(Memset::D8(a)),
            [a, b] if aligned(2) => Some(Memset::D16(u16::from_le_bytes([a, b]))),
            [a, b, c, d] if a == b && b == c && c == d => Some(Memset::D8(a)),
            [a, b, c, d] if aligned(4) => Some(Memset::D32(u32::from_le_bytes([a, b, c, d]))),
            _ => None,
        }
    }
}

/// Resource usage of one compiled kernel, as its compiler or the runtime reports it, by
/// figure name: `vgprs`, `sgprs`, `lds`, `scratch`, `vgpr_spills`, `sgpr_spills` (AMD);
/// `registers`, `shared`, `local` (NVIDIA); `threads` is the most a block may have.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    pub figures: BTreeMap<String, u64>,
    /// Who produced the figures: `clang version 22.1.8`, `NVRTC 13.0 (driver 13000)`.
    pub compiler: String,
}

/// A compiled kernel source, loaded and ready to launch.
pub trait Module: Send + Sync {
    fn source(&self) -> &KernelSource;
    /// A launch whose tensors are known, for backends that check accesses against them.
    fn launch_watched(
        &self,
        kernel: &str,
        dims: LaunchDims,
        schedule: Schedule,
        args: &[KernelArg],
        tensors: &[WatchedTensor],
    ) -> Result<LaunchReport, EngineError>;
    fn launch(&self, kernel: &str, dims: LaunchDims, schedule: Schedule, args: &[KernelArg]) -> Result<LaunchReport, EngineError> {
        self.launch_watched(kernel, dims, schedule, args, &[])
    }
    /// Live resource usage of a kernel, where the backend can tell (not the host).
    fn resource_usage(&self, kernel: &str) -> Option<Result<ResourceUsage, EngineError>> {
        let _ = kernel;
        None
    }
}

/// Builds kernels for an architecture without a device and reads their resource usage
/// from the compiler's output (a gfx1201 code object's metadata, an sm_90 cubin).
pub trait StaticCompiler: Send + Sync {
    /// `gfx1201`, `sm_90`.
    fn arch(&self) -> String;
    fn identity(&self) -> String;
    fn resource_usage(&self, source: &KernelSource, kernel: &str) -> Result<ResourceUsage, EngineError>;
}

/// A BF16 GEMM through the backend's BLAS: `y[m, n] = x[m, k] . w[n, k]^T`, all row-major,
/// bf16 `x` and `w`, products accumulated in f32, `y` in f32 or bf16 (rounded to nearest
/// even). Addresses are device addresses of the first element of each matrix. A column-major
/// BLAS computes it as `y^T[n, m] = op(w)[n, k] . x^T[k, m]` with `w` transposed (lda = k),
/// `x` as is (ldb = k) and ldc = n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmBf16 {
    /// The row count of the BLAS call: what a library picks its kernel by.
    pub m: usize,
    /// The rows of `y` the caller reads back, the first ones (at most `m`): the rest are
    /// zero padding of a pinned call, never read. A backend whose row results never depend
    /// on `m` (the host's) may compute these alone; a library is called with `m`.
    pub rows: usize,
    pub n: usize,
    pub k: usize,
    pub x: u64,
    pub w: u64,
    pub y: u64,
    pub y_dtype: DType,
}

pub trait Backend: Send + Sync {
    /// `host`, `cuda`, `hip`.
    fn name(&self) -> &'static str;
    /// The architecture the SUMMARY names: `host-x86_64`, `sm_90`, `gfx1201`.
    fn arch(&self) -> String;
    /// Compiler and runtime identity, for reports.
    fn toolchain(&self) -> String;
    /// The device's memory in bytes, where the backend can say (how many of the cases of
    /// gigabytes may run at once); `None` where it cannot, or has no device. No default: a
    /// wrapper that forgot to pass it on would say `None` for its device.
    fn device_memory(&self) -> Option<u64>;
    /// A buffer of `bytes`, zero-filled (every backend's allocation is: a pinned projection
    /// pads its last chunk with the zeros of a fresh buffer).
    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError>;
    fn load_module(&self, source: &KernelSource) -> Result<Arc<dyn Module>, EngineError>;
    /// Builds what `load_module` loads without loading it, where building writes files (the
    /// host's library cache): no code of the module runs, so a process can build first and
    /// load under tighter limits. Backends that compile in memory build at load.
    fn build_module(&self, source: &KernelSource) -> Result<(), EngineError> {
        let _ = source;
        Ok(())
    }
    /// Opens what launches need (a GPU's device context) now rather than at the first call
    /// that needs it: a process that will launch opens it before its first job arrives.
    fn open(&self) -> Result<(), EngineError> {
        Ok(())
    }
    /// Whether modules report live resource usage (gate 4 runs).
    fn has_live_limits(&self) -> bool {
        false
    }
    /// What left the device context unusable (an illegal address, a memory fault), once
    /// something did: every later call fails, so the run needs a fresh process and context.
    fn device_lost(&self) -> Option<String> {
        None
    }
    /// The BLAS BF16 projection (`projection_bf16`); a backend without one says so.
    fn gemm_bf16(&self, request: &GemmBf16) -> Result<LaunchReport, EngineError> {
        let _ = request;
        Err(EngineError::Op { op: "gemm_bf16".into(), reason: format!("the {} backend has no BF16 GEMM", self.name()) })
    }
    /// Copies `bytes` from device address `from` to `to` (buffers that do not overlap), and
    /// returns when the copy is done; a backend without device copies says so.
    fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
        let _ = (to, from, bytes);
        Err(EngineError::Op { op: "copy".into(), reason: format!("the {} backend has no device copy", self.name()) })
    }
}

#[cfg(test)]
mod memset_tests {
    use super::Memset;

    #[test]
    fn a_pattern_is_one_memset_by_its_narrowest_word_and_only_where_the_range_is_aligned() {
        assert_eq!(Memset::of(3, 5, &[7]), Some(Memset::D8(7)));
        assert_eq!(Memset::of(3, 6, &[7, 7]), Some(Memset::D8(7)));
        assert_eq!(Memset::of(4, 8, &[9, 9, 9, 9]), Some(Memset::D8(9)));
        assert_eq!(Memset::of(2, 6, &[0x01, 0x7c]), Some(Memset::D16(0x7c01)));
        assert_eq!(Memset::of(8, 16, &[0x01, 0x00, 0x81, 0x7f]), Some(Memset::D32(0x7f81_0001)));
        assert_eq!(Memset::of(1, 6, &[0x01, 0x7c]), None, "an odd start");
        assert_eq!(Memset::of(4, 6, &[1, 2, 3, 4]), None, "a length of one and a half words");
        assert_eq!(Memset::of(0, 6, &[1, 2, 3]), None);
        assert_eq!(Memset::of(0, 16, &[1, 2, 3, 4, 5, 6, 7, 8]), None);
        // a pattern that does not cover the range whole is no memset (the fill refuses it)
        assert_eq!(Memset::of(0, 5, &[7, 7]), None);
        assert_eq!(Memset::of(0, 6, &[9, 9, 9, 9]), None);
        assert_eq!(Memset::of(0, 0, &[]), None);
    }
}
