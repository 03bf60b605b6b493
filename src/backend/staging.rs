//! Large copies between host and device through two page-locked stages per backend (CUDA's
//! cuMemAllocHost, HIP's hipHostMalloc), in turn: while one stage's piece goes by DMA on a
//! thread of its own, the next piece is copied into (or out of) the other on every core.
//! A GPU-only case uploads and reads back gigabytes a record, and a driver stages a copy from
//! pageable memory itself, on one thread: about 4-6 GB/s on an H100; one stage copied into
//! and then sent, one piece after the other, moved 8 GiB at 9-12 GB/s on an H100. A small
//! stage for copies of 32 KiB to 1 MiB (the guard bands' 64 KiB reads) was measured on an
//! H100 and an H200 against none and changed nothing beyond the runs' noise, so small copies
//! go direct.

use std::sync::Mutex;
use std::sync::mpsc;

use crate::EngineError;

/// Each stage's length, and the least copy that goes through them.
pub(crate) const STAGE_BYTES: usize = 32 << 20;
pub(crate) const STAGED_COPY_BYTES: usize = 16 << 20;

/// How many stages a backend allocates: one piece in flight while the next is copied.
const STAGES: usize = 2;

/// Page-locked host memory a vendor's runtime allocated, freed on drop.
pub(crate) trait PinnedBytes: Send {
    fn bytes(&mut self) -> &mut [u8];
}

/// A backend's stages, allocated at the first copy that needs them; where the runtime refuses
/// the first, copies go direct (from pageable memory, as before), and it is not asked again;
/// where it refuses the second, one stage serves, a piece at a time.
pub(crate) struct Staging<P> {
    allocate: Box<dyn Fn(usize) -> Result<P, EngineError> + Send + Sync>,
    len: usize,
    stages: Mutex<Stages<P>>,
}

enum Stages<P> {
    NotYet,
    Ready(Vec<P>),
    Refused,
}

/// A buffer's own copies, each within the buffer (the caller checked the whole range); called
/// from the staging's DMA thread.
pub(crate) type WriteDirect<'a> = &'a (dyn Fn(usize, &[u8]) -> Result<(), EngineError> + Sync);
pub(crate) type ReadDirect<'a> = &'a (dyn Fn(usize, &mut [u8]) -> Result<(), EngineError> + Sync);

impl<P: PinnedBytes> Staging<P> {
    pub(crate) fn new(len: usize, allocate: impl Fn(usize) -> Result<P, EngineError> + Send + Sync + 'static) -> Staging<P> {
        Staging { allocate: Box::new(allocate), len, stages: Mutex::new(Stages::NotYet) }
    }

    /// `bytes` to the buffer at `offset`: through the stages from `STAGED_COPY_BYTES` on.
    pub(crate) fn write(&self, offset: usize, bytes: &[u8], direct: WriteDirect) -> Result<(), EngineError> {
        if bytes.len() < STAGED_COPY_BYTES {
            return direct(offset, bytes);
        }
        self.with(|stages, len| write_in_turn(stages, len, offset, bytes, direct)).unwrap_or_else(|| direct(offset, bytes))
    }

    /// The buffer's bytes at `offset` into `out`: through the stages from `STAGED_COPY_BYTES` on.
    pub(crate) fn read(&self, offset: usize, out: &mut [u8], direct: ReadDirect) -> Result<(), EngineError> {
        if out.len() < STAGED_COPY_BYTES {
            return direct(offset, out);
        }
        let staged = self.with(|stages, len| read_in_turn(stages, len, offset, &mut *out, direct));
        staged.unwrap_or_else(|| direct(offset, out))
    }

    /// `copy` with the stages (one copy at a time) and their length, or `None` where there are none.
    fn with<R>(&self, copy: impl FnOnce(Vec<&mut [u8]>, usize) -> R) -> Option<R> {
        let mut stages = self.stages.lock().unwrap_or_else(|p| p.into_inner());
        if let Stages::NotYet = *stages {
            let made: Vec<P> = (0..STAGES).map_while(|_| (self.allocate)(self.len).ok()).collect();
            *stages = if made.is_empty() { Stages::Refused } else { Stages::Ready(made) };
        }
        match &mut *stages {
            Stages::Ready(pinned) => Some(copy(pinned.iter_mut().map(|p| &mut p.bytes()[..self.len]).collect(), self.len)),
            _ => None,
        }
    }
}

/// Pieces of `len` to the device, each copied into a free stage here and sent by the DMA
/// thread; a failed copy stops the pieces after it and is the answer.
fn write_in_turn(stages: Vec<&mut [u8]>, len: usize, offset: usize, bytes: &[u8], direct: WriteDirect) -> Result<(), EngineError> {
    let (free, freed) = mpsc::channel::<&mut [u8]>();
    let (to_send, filled) = mpsc::channel::<(usize, &mut [u8])>();
    for stage in stages {
        free.send(stage).expect("the receiver is here");
    }
    std::thread::scope(|scope| {
        let dma = crate::threads::brief_scoped(scope, move || {
            for (index, stage) in filled {
                direct(offset + index * len, stage)?;
                let _ = free.send(stage);
            }
            Ok(())
        });
        for (index, piece) in bytes.chunks(len).enumerate() {
            // no stage comes back once the DMA thread stopped at an error
            let Ok(stage) = freed.recv() else { break };
            let staged = &mut stage[..piece.len()];
            copy_on_cores(piece, staged);
            if to_send.send((index, staged)).is_err() {
                break;
            }
        }
        drop(to_send);
        dma.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Pieces of `len` from the device, each read into a free stage by the DMA thread and copied
/// out here while the next one comes; a failed copy stops the pieces after it and is the answer.
fn read_in_turn(stages: Vec<&mut [u8]>, len: usize, offset: usize, out: &mut [u8], direct: ReadDirect) -> Result<(), EngineError> {
    let (free, freed) = mpsc::channel::<&mut [u8]>();
    let (send_filled, filled) = mpsc::channel::<&mut [u8]>();
    for stage in stages {
        free.send(stage).expect("the receiver is here");
    }
    let lengths: Vec<usize> = out.chunks(len).map(<[u8]>::len).collect();
    std::thread::scope(|scope| {
        let dma = crate::threads::brief_scoped(scope, move || {
            for (index, length) in lengths.into_iter().enumerate() {
                let Ok(stage) = freed.recv() else { break };
                let staged = &mut stage[..length];
                direct(offset + index * len, staged)?;
                if send_filled.send(staged).is_err() {
                    break;
                }
            }
            Ok(())
        });
        for piece in out.chunks_mut(len) {
            // none comes once the DMA thread stopped at an error
            let Ok(stage) = filled.recv() else { break };
            copy_on_cores(stage, piece);
            let _ = free.send(stage);
        }
        drop(free);
        dma.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// `from` into `to` (the same length), in pieces of 1 MiB or more on every core (rayon's
/// threads, not threads of its own: a stage's piece is a millisecond's copy). Reading back, `to`
/// is fresh memory whose pages fault in as it is written, and the faults bound the copy: on an
/// H100's 16-core host, 4 GiB from page-locked memory into fresh pages went at 18-23 GB/s on 8
/// threads and 26-30 GB/s on 16 (54-67 GB/s into pages touched before), where the bus moved
/// 55 GB/s; with the copy-out on 8 threads a 4 GiB read-back took 0.25-0.30 s, of which the
/// DMA 0.09 s.
fn copy_on_cores(from: &[u8], to: &mut [u8]) {
    use rayon::prelude::*;
    const LEAST_A_THREAD: usize = 1 << 20;
    let piece = from.len().div_ceil(rayon::current_num_threads()).max(LEAST_A_THREAD);
    if piece >= from.len() {
        to.copy_from_slice(from);
        return;
    }
    to.par_chunks_mut(piece).zip(from.par_chunks(piece)).for_each(|(to, from)| to.copy_from_slice(from));
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

    /// Two stages take the pieces in turn (one in flight while the next is copied); where the
    /// runtime gives one stage only, it serves every piece.
    #[test]
    fn pieces_take_the_two_stages_in_turn_and_one_serves_alone_where_the_second_is_refused() {
        for given in [2, 1] {
            let allocations = Arc::new(AtomicUsize::new(0));
            let counted = allocations.clone();
            let staging = Staging::new(3 << 20, move |len| {
                if counted.fetch_add(1, Ordering::Relaxed) < given {
                    Ok(Plain(vec![0; len]))
                } else {
                    Err(EngineError::Buffer("no more".into()))
                }
            });
            let device = Mutex::new(vec![0u8; 20 << 20]);
            let seen = Mutex::new(Vec::new());
            let bytes: Vec<u8> = (0..(17 << 20) + 1).map(|i: usize| (i * 11 % 241) as u8).collect();
            let write = |at: usize, piece: &[u8]| {
                seen.lock().unwrap().push(piece.as_ptr() as usize);
                device.lock().unwrap()[at..at + piece.len()].copy_from_slice(piece);
                Ok(())
            };
            staging.write(1, &bytes, &write).unwrap();
            let read = |at: usize, piece: &mut [u8]| {
                seen.lock().unwrap().push(piece.as_ptr() as usize);
                piece.copy_from_slice(&device.lock().unwrap()[at..at + piece.len()]);
                Ok(())
            };
            let mut back = vec![0u8; bytes.len()];
            staging.read(1, &mut back, &read).unwrap();
            assert!(back == bytes, "{given} stage(s): there and back");
            let seen = seen.into_inner().unwrap();
            assert_eq!(seen.len(), 2 * bytes.len().div_ceil(3 << 20));
            let mut stages = seen.clone();
            stages.sort();
            stages.dedup();
            assert_eq!(stages.len(), given, "{given} stage(s) used");
            assert!(seen.windows(2).all(|w| (w[0] != w[1]) == (given == 2)), "in turn: {seen:x?}");
        }
    }

    /// A piece the device refuses ends the copy: no piece after it is sent, and its error is
    /// the copy's, either way.
    #[test]
    fn a_refused_piece_ends_the_copy_with_its_error() {
        let staging = Staging::new(1 << 20, |len| Ok(Plain(vec![0; len])));
        let calls = AtomicUsize::new(0);
        let refuse_third = |at: usize| {
            calls.fetch_add(1, Ordering::Relaxed);
            if at == 2 << 20 { Err(EngineError::Buffer(format!("refused at {at}"))) } else { Ok(()) }
        };
        let bytes = vec![7u8; 20 << 20];
        let error = staging.write(0, &bytes, &|at, _| refuse_third(at)).unwrap_err();
        assert!(error.to_string().contains("refused at 2097152"), "{error}");
        assert_eq!(calls.swap(0, Ordering::Relaxed), 3, "nothing sent after the refused piece");
        let mut out = vec![0u8; 20 << 20];
        let error = staging.read(0, &mut out, &|at, _| refuse_third(at)).unwrap_err();
        assert!(error.to_string().contains("refused at 2097152"), "{error}");
        assert_eq!(calls.load(Ordering::Relaxed), 3, "nothing read after the refused piece");
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
