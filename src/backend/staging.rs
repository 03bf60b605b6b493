//! Copies between host and device through page-locked stages, two per backend (CUDA's
//! cuMemAllocHost, HIP's hipHostMalloc): a large one for large copies, each piece copied into it
//! on up to 8 threads, then by DMA (a GPU-only case uploads and reads back gigabytes a record,
//! and a driver stages a copy from pageable memory itself, on one thread: about 4-6 GB/s on an
//! H100); and a small one for copies of 32 KiB to 1 MiB, the commonest of them
//! a tensor's 64 KiB guard bands, read back after every case (from pageable memory one took
//! 46 us on an H100, 1.4 GB/s: 40,767 of them were 1.9 s of the 19 small ops' 7.6 s in one
//! process).

use std::sync::Mutex;

use crate::EngineError;

/// The large stage's length, and the least copy that goes through it.
pub(crate) const STAGE_BYTES: usize = 64 << 20;
pub(crate) const STAGED_COPY_BYTES: usize = 16 << 20;
/// The small stage's length (at most the large one's) and the most a copy through it moves (one
/// piece: copies between it and `STAGED_COPY_BYTES` go direct, as they did before it was
/// measured), and the least copy that goes through it: below it a copy costs the call's
/// latency alone, staged or not.
pub(crate) const SMALL_STAGE_BYTES: usize = 1 << 20;
pub(crate) const SMALL_STAGED_COPY_BYTES: usize = 32 << 10;

/// Page-locked host memory a vendor's runtime allocated, freed on drop.
pub(crate) trait PinnedBytes: Send {
    fn bytes(&mut self) -> &mut [u8];
}

/// A backend's stages, each allocated at the first copy that needs it; where the runtime
/// refuses one, the copies it would take go direct (from pageable memory), and it is not asked
/// again.
pub(crate) struct Staging<P> {
    allocate: Box<dyn Fn(usize) -> Result<P, EngineError> + Send + Sync>,
    large: (usize, Mutex<Stage<P>>),
    small: (usize, Mutex<Stage<P>>),
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
    /// Stages of `len` bytes (the large one) and of `SMALL_STAGE_BYTES` (at most `len`).
    pub(crate) fn new(len: usize, allocate: impl Fn(usize) -> Result<P, EngineError> + Send + Sync + 'static) -> Staging<P> {
        Staging {
            allocate: Box::new(allocate),
            large: (len, Mutex::new(Stage::NotYet)),
            small: (SMALL_STAGE_BYTES.min(len), Mutex::new(Stage::NotYet)),
        }
    }

    /// The stage a copy of `len` bytes goes through: the large one from `STAGED_COPY_BYTES`
    /// on, the small one from `SMALL_STAGED_COPY_BYTES` to its own length, else none.
    fn stage_for(&self, len: usize) -> Option<&(usize, Mutex<Stage<P>>)> {
        match len {
            _ if len >= STAGED_COPY_BYTES => Some(&self.large),
            _ if len >= SMALL_STAGED_COPY_BYTES && len <= self.small.0 => Some(&self.small),
            _ => None,
        }
    }

    /// `bytes` to the buffer at `offset`, through a stage where its length asks for one.
    pub(crate) fn write(&self, offset: usize, bytes: &[u8], direct: WriteDirect) -> Result<(), EngineError> {
        let Some(stage) = self.stage_for(bytes.len()) else { return direct(offset, bytes) };
        self.with(stage, |stage| {
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

    /// The buffer's bytes at `offset` into `out`, through a stage where its length asks for one.
    pub(crate) fn read(&self, offset: usize, out: &mut [u8], direct: ReadDirect) -> Result<(), EngineError> {
        let Some(stage) = self.stage_for(out.len()) else { return direct(offset, out) };
        let staged = self.with(stage, |stage| {
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
    fn with<R>(&self, (len, stage): &(usize, Mutex<Stage<P>>), copy: impl FnOnce(&mut P) -> R) -> Option<R> {
        let mut stage = stage.lock().unwrap_or_else(|p| p.into_inner());
        if let Stage::NotYet = *stage {
            *stage = (self.allocate)(*len).map_or(Stage::Refused, Stage::Ready);
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
    fn each_copy_goes_direct_or_through_the_stage_its_length_asks_for() {
        let allocations = Arc::new(std::sync::Mutex::new(Vec::new()));
        let counted = allocations.clone();
        let staging = Staging::new(STAGE_BYTES, move |len| {
            counted.lock().unwrap().push(len);
            Ok(Plain(vec![0; len]))
        });
        let device = Mutex::new(vec![0u8; STAGED_COPY_BYTES + 7]);
        let pieces = Arc::new(Mutex::new(Vec::new()));
        let write = |at: usize, piece: &[u8]| {
            pieces.lock().unwrap().push(piece.len());
            device.lock().unwrap()[at..at + piece.len()].copy_from_slice(piece);
            Ok(())
        };
        let read = |at: usize, piece: &mut [u8]| {
            pieces.lock().unwrap().push(piece.len());
            piece.copy_from_slice(&device.lock().unwrap()[at..at + piece.len()]);
            Ok(())
        };
        // (length, the pieces it is copied in, the stages allocated by then)
        let cases = [
            (SMALL_STAGED_COPY_BYTES - 1, vec![SMALL_STAGED_COPY_BYTES - 1], vec![]),
            (SMALL_STAGED_COPY_BYTES, vec![SMALL_STAGED_COPY_BYTES], vec![SMALL_STAGE_BYTES]),
            (SMALL_STAGE_BYTES, vec![SMALL_STAGE_BYTES], vec![SMALL_STAGE_BYTES]),
            (SMALL_STAGE_BYTES + 1, vec![SMALL_STAGE_BYTES + 1], vec![SMALL_STAGE_BYTES]),
            (STAGED_COPY_BYTES - 1, vec![STAGED_COPY_BYTES - 1], vec![SMALL_STAGE_BYTES]),
            (STAGED_COPY_BYTES + 5, vec![STAGED_COPY_BYTES + 5], vec![SMALL_STAGE_BYTES, STAGE_BYTES]),
        ];
        for (len, want_pieces, stages) in cases {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 13 % 253) as u8).collect();
            pieces.lock().unwrap().clear();
            staging.write(2, &bytes, &write).unwrap();
            let mut back = vec![0u8; len];
            staging.read(2, &mut back, &read).unwrap();
            assert!(back == bytes, "{len} bytes there and back");
            let twice: Vec<usize> = want_pieces.iter().chain(&want_pieces).copied().collect();
            assert_eq!(*pieces.lock().unwrap(), twice, "{len} bytes");
            assert_eq!(*allocations.lock().unwrap(), stages, "{len} bytes");
        }
    }

    #[test]
    fn a_stage_the_runtime_refuses_leaves_its_copies_direct_and_is_not_asked_again() {
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = asked.clone();
        let staging: Staging<Plain> = Staging::new(STAGE_BYTES, move |_| {
            counted.fetch_add(1, Ordering::Relaxed);
            Err(EngineError::Buffer("refused".into()))
        });
        let bytes = vec![3u8; SMALL_STAGED_COPY_BYTES * 3];
        for _ in 0..2 {
            staging.write(0, &bytes, &|_, piece| if piece.len() == bytes.len() { Ok(()) } else { panic!("split") }).unwrap();
        }
        assert_eq!(asked.load(Ordering::Relaxed), 1);
    }
}
