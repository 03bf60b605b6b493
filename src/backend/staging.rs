//! Large copies between host and device through one page-locked stage per backend (CUDA's
//! cuMemAllocHost, HIP's hipHostMalloc): each piece is copied into the stage on up to 8 threads,
//! then by DMA. A GPU-only case uploads and reads back gigabytes a record, and a driver stages
//! a copy from pageable memory itself, on one thread: about 4-6 GB/s on an H100. A second,
//! 1 MiB stage for copies of 32 KiB to 1 MiB (the guard bands' 64 KiB reads) was measured on
//! an H100 and an H200 against none and changed nothing beyond the runs' noise, so small
//! copies go direct.

use std::sync::Mutex;

use crate::EngineError;

/// The stage's length, and the least copy that goes through it.
pub(crate) const STAGE_BYTES: usize = 64 << 20;
pub(crate) const STAGED_COPY_BYTES: usize = 16 << 20;

/// Page-locked host memory a vendor's runtime allocated, freed on drop.
pub(crate) trait PinnedBytes: Send {
    fn bytes(&mut self) -> &mut [u8];
}

/// A backend's stage, allocated at the first copy that needs it; where the runtime refuses it,
/// copies go direct (from pageable memory, as before), and it is not asked again.
pub(crate) struct Staging<P> {
    allocate: Box<dyn Fn(usize) -> Result<P, EngineError> + Send + Sync>,
    len: usize,
    stage: Mutex<Stage<P>>,
}

enum Stage<P> {
    NotYet,
    Ready(P),
    Refused,
}

/// A buffer's own copies, each within the buffer (the caller checked the whole range).
pub(crate) type WriteDirect<'a> = &'a dyn Fn(usize, &[u8]) -> Result<(), EngineError>;
pub(crate) type ReadDirect<'a> = &'a dyn Fn(usize, &mut [u8]) -> Result<(), EngineError>;

impl<P: PinnedBytes> Staging<P> {
    pub(crate) fn new(len: usize, allocate: impl Fn(usize) -> Result<P, EngineError> + Send + Sync + 'static) -> Staging<P> {
        Staging { allocate: Box::new(allocate), len, stage: Mutex::new(Stage::NotYet) }
    }

    /// `bytes` to the buffer at `offset`: through the stage from `STAGED_COPY_BYTES` on.
    pub(crate) fn write(&self, offset: usize, bytes: &[u8], direct: WriteDirect) -> Result<(), EngineError> {
        if bytes.len() < STAGED_COPY_BYTES {
            return direct(offset, bytes);
        }
        self.with(|stage| {
            let stage = stage.bytes();
            let len = stage.len();
            for (i, piece) in bytes.chunks(len).enumerate() {
                let staged = &mut stage[..piece.len()];
                copy_on_cores(piece, staged);
                direct(offset + i * len, staged)?;
            }
            Ok(())
        })
        .unwrap_or_else(|| direct(offset, bytes))
    }

    /// The buffer's bytes at `offset` into `out`: through the stage from `STAGED_COPY_BYTES` on.
    pub(crate) fn read(&self, offset: usize, out: &mut [u8], direct: ReadDirect) -> Result<(), EngineError> {
        if out.len() < STAGED_COPY_BYTES {
            return direct(offset, out);
        }
        let staged = self.with(|stage| {
            let stage = stage.bytes();
            let len = stage.len();
            for (i, piece) in out.chunks_mut(len).enumerate() {
                let staged = &mut stage[..piece.len()];
                direct(offset + i * len, staged)?;
                copy_on_cores(staged, piece);
            }
            Ok(())
        });
        staged.unwrap_or_else(|| direct(offset, out))
    }

    /// `copy` with the stage (one copy at a time), or `None` where there is none.
    fn with<R>(&self, copy: impl FnOnce(&mut P) -> R) -> Option<R> {
        let mut stage = self.stage.lock().unwrap_or_else(|p| p.into_inner());
        if let Stage::NotYet = *stage {
            *stage = (self.allocate)(self.len).map_or(Stage::Refused, Stage::Ready);
        }
        match &mut *stage {
            Stage::Ready(pinned) => Some(copy(pinned)),
            _ => None,
        }
    }
}

/// `from` into `to` (the same length), split over up to 8 threads: one core's copy is about a
/// third of what a PCIe 5 bus moves.
fn copy_on_cores(from: &[u8], to: &mut [u8]) {
    const LEAST_A_THREAD: usize = 1 << 20;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let piece = from.len().div_ceil(threads).max(LEAST_A_THREAD);
    if piece >= from.len() {
        to.copy_from_slice(from);
        return;
    }
    std::thread::scope(|scope| {
        for (from, to) in from.chunks(piece).zip(to.chunks_mut(piece)) {
            scope.spawn(move || to.copy_from_slice(from));
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Plain(Vec<u8>);

    impl PinnedBytes for Plain {
        fn bytes(&mut self) -> &mut [u8] {
            &mut self.0
        }
    }

    /// A stage of `len` bytes over a "device" of plain memory; the count of direct copies.
    fn device_and_stage(len: usize, refuse: bool) -> (Mutex<Vec<u8>>, Staging<Plain>, Arc<AtomicUsize>) {
        let device = Mutex::new(vec![0u8; 40 << 20]);
        let staging =
            Staging::new(len, move |len| if refuse { Err(EngineError::Buffer("refused".into())) } else { Ok(Plain(vec![0; len])) });
        (device, staging, Arc::new(AtomicUsize::new(0)))
    }

    #[test]
    fn a_copy_through_a_stage_smaller_than_it_moves_every_byte_in_pieces_at_odd_offsets() {
        for (len, refuse) in [(2_500_003, false), (STAGE_BYTES, false), (1 << 20, true)] {
            let (device, staging, copies) = device_and_stage(len, refuse);
            let bytes: Vec<u8> = (0..(17 << 20) + 5).map(|i: usize| (i * 7 % 251) as u8).collect();
            let write = |at: usize, piece: &[u8]| {
                copies.fetch_add(1, Ordering::Relaxed);
                device.lock().unwrap()[at..at + piece.len()].copy_from_slice(piece);
                Ok(())
            };
            staging.write(5, &bytes, &write).unwrap();
            let pieces = if refuse { 1 } else { bytes.len().div_ceil(len) };
            assert_eq!(copies.load(Ordering::Relaxed), pieces, "stage of {len}, refused {refuse}");
            assert!(device.lock().unwrap()[5..5 + bytes.len()] == bytes[..], "stage of {len}: written");
            let read = |at: usize, piece: &mut [u8]| {
                piece.copy_from_slice(&device.lock().unwrap()[at..at + piece.len()]);
                Ok(())
            };
            let mut back = vec![0u8; bytes.len() - 2];
            staging.read(6, &mut back, &read).unwrap();
            assert!(back == bytes[1..bytes.len() - 1], "stage of {len}: read");
        }
    }

    #[test]
    fn a_small_copy_goes_direct_and_allocates_no_stage() {
        let allocations = Arc::new(AtomicUsize::new(0));
        let counted = allocations.clone();
        let staging = Staging::new(STAGE_BYTES, move |len| {
            counted.fetch_add(1, Ordering::Relaxed);
            Ok(Plain(vec![0; len]))
        });
        let whole = vec![1u8; STAGED_COPY_BYTES - 1];
        staging.write(0, &whole, &|at, piece| if at == 0 && piece.len() == whole.len() { Ok(()) } else { panic!("split") }).unwrap();
        assert_eq!(allocations.load(Ordering::Relaxed), 0);
    }
}
