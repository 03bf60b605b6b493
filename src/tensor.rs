//! Device tensors with guard bands on both sides. Each tensor and each side has its own
//! guard pattern (a signaling NaN for float types, see `DType::guard_pattern`), so a write
//! past either end is seen, even of a value read past the end of another tensor, and a read
//! past it poisons.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::backend::{Backend, DeviceBuffer, WatchedTensor};
use crate::dtype::{GUARD_IDS, GuardSide};
use crate::{DType, EngineError};

/// Guard band on each side, in bytes. A read or write into it is a finding that names the
/// tensor, the side and the distance, on every backend; past it, an access lands in memory
/// nobody owns (a crash at best). 64 KiB holds a whole row past the end of the widest rows
/// we gather (16,384 f32 elements), where a 4 KiB band let a gather of the next row of a
/// 4096-wide f32 table fault at random instead of failing as the read it is.
pub const GUARD_BYTES: usize = 64 << 10;

pub struct Tensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Which guard patterns this tensor's bands hold (1 to `GUARD_IDS`).
    guard_id: u8,
    buffer: Box<dyn DeviceBuffer>,
}

/// Guard ids go round the process: a case holds under ten tensors, twice that with
/// `--compare-host`, so the tensors alive at once never share one.
static NEXT_GUARD: AtomicU32 = AtomicU32::new(0);

fn next_guard_id() -> u8 {
    (NEXT_GUARD.fetch_add(1, Ordering::Relaxed) % GUARD_IDS as u32) as u8 + 1
}

/// Guard ids start again from the first. Called where no tensor is alive (a job's start, each
/// contract and control of a run in one process), so that the patterns a record's tensors get,
/// and what a kernel reading past one sees, do not hang on what ran before it in the process.
pub fn restart_guard_ids() {
    NEXT_GUARD.store(0, Ordering::Relaxed);
}

/// Where a guard band was overwritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardDamage {
    /// Element offset from the start of the data: negative before it, >= len after it.
    pub first_element: i64,
    pub elements: usize,
}

impl Tensor {
    pub fn allocate(backend: &dyn Backend, dtype: DType, shape: &[usize]) -> Result<Tensor, EngineError> {
        let elements = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d));
        let bytes = elements
            .and_then(|e| e.checked_mul(dtype.size()))
            .ok_or_else(|| EngineError::Buffer(format!("shape {shape:?} of {dtype} overflows")))?;
        let mut buffer = backend.allocate(bytes + 2 * GUARD_BYTES)?;
        let guard_id = next_guard_id();
        buffer.fill(0, GUARD_BYTES, &dtype.guard_pattern(guard_id, GuardSide::Before))?;
        buffer.fill(GUARD_BYTES + bytes, GUARD_BYTES, &dtype.guard_pattern(guard_id, GuardSide::After))?;
        Ok(Tensor { dtype, shape: shape.to_vec(), guard_id, buffer })
    }

    /// One element of this tensor's guard band on `side`.
    pub fn guard_pattern(&self, side: GuardSide) -> Vec<u8> {
        self.dtype.guard_pattern(self.guard_id, side)
    }

    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn bytes(&self) -> usize {
        self.elements() * self.dtype.size()
    }

    /// This tensor as a launch's memory checks see it.
    pub fn watched<'a>(&self, name: &'a str, writable: bool) -> WatchedTensor<'a> {
        WatchedTensor {
            name,
            data: self.device_address(),
            bytes: self.bytes() as u64,
            element_bytes: self.dtype.size() as u32,
            guard_bytes: GUARD_BYTES as u64,
            writable,
        }
    }

    /// The address kernels get: the first data element.
    pub fn device_address(&self) -> u64 {
        self.buffer.device_address() + GUARD_BYTES as u64
    }

    pub fn write(&mut self, data: &[u8]) -> Result<(), EngineError> {
        if data.len() != self.bytes() {
            return Err(EngineError::Buffer(format!("writing {} bytes into a tensor of {}", data.len(), self.bytes())));
        }
        self.buffer.write(GUARD_BYTES, data)
    }

    /// Fills the data with a repeated pattern (poison before a launch), on the device where
    /// it can (`DeviceBuffer::fill`).
    pub fn fill(&mut self, pattern: &[u8]) -> Result<(), EngineError> {
        self.buffer.fill(GUARD_BYTES, self.bytes(), pattern)
    }

    pub fn read(&self) -> Result<Vec<u8>, EngineError> {
        let mut out = crate::host_buffer::zeroed(self.bytes());
        self.buffer.read(GUARD_BYTES, &mut out)?;
        Ok(out)
    }

    /// Bytes `first_byte..first_byte + out.len()` of the data, into `out` (a slice of a large
    /// tensor into a buffer the caller reuses).
    pub fn read_part(&self, first_byte: usize, out: &mut [u8]) -> Result<(), EngineError> {
        if first_byte.checked_add(out.len()).is_none_or(|end| end > self.bytes()) {
            return Err(EngineError::Buffer(format!("reading {} bytes from byte {first_byte} of a tensor of {}", out.len(), self.bytes())));
        }
        self.buffer.read(GUARD_BYTES + first_byte, out)
    }

    /// `data` into bytes `first_byte..first_byte + data.len()` of the data (the words of a large
    /// input the host changed after it was drawn on the device, sent alone).
    pub fn write_part(&mut self, first_byte: usize, data: &[u8]) -> Result<(), EngineError> {
        if first_byte.checked_add(data.len()).is_none_or(|end| end > self.bytes()) {
            return Err(EngineError::Buffer(format!("writing {} bytes at byte {first_byte} of a tensor of {}", data.len(), self.bytes())));
        }
        self.buffer.write(GUARD_BYTES + first_byte, data)
    }

    /// The first overwritten guard element, before or after the data, and how many differ.
    pub fn guard_damage(&self) -> Result<Option<GuardDamage>, EngineError> {
        let size = self.dtype.size();
        let mut before = vec![0u8; GUARD_BYTES];
        let mut after = vec![0u8; GUARD_BYTES];
        self.buffer.read(0, &mut before)?;
        self.buffer.read(GUARD_BYTES + self.bytes(), &mut after)?;
        // the common case, a whole band: one comparison of each side
        if before == guard_fill(self.dtype, self.guard_id, GuardSide::Before)
            && after == guard_fill(self.dtype, self.guard_id, GuardSide::After)
        {
            return Ok(None);
        }
        let differs = |a: &[u8], side| {
            let want = self.guard_pattern(side);
            a.chunks(size).map(|x| x != want.as_slice()).collect::<Vec<_>>()
        };
        let before_bad = differs(&before, GuardSide::Before);
        let after_bad = differs(&after, GuardSide::After);
        let count = before_bad.iter().chain(&after_bad).filter(|b| **b).count();
        if count == 0 {
            return Ok(None);
        }
        // the element nearest the data is the informative one: last bad before, first bad after
        let first = if let Some(i) = after_bad.iter().position(|b| *b) {
            (self.elements() + i) as i64
        } else {
            let i = before_bad.iter().rposition(|b| *b).unwrap();
            i as i64 - before_bad.len() as i64
        };
        Ok(Some(GuardDamage { first_element: first, elements: count }))
    }
}

fn guard_fill(dtype: DType, id: u8, side: GuardSide) -> Vec<u8> {
    let pattern = dtype.guard_pattern(id, side);
    pattern.repeat(GUARD_BYTES / pattern.len())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::backend::memory::Memory;

    /// Element `index` of the tensor's whole buffer, counted from the data's start.
    fn element(t: &Tensor, index: i64) -> Vec<u8> {
        let mut bytes = vec![0u8; t.dtype.size()];
        t.buffer.read((GUARD_BYTES as i64 + index * t.dtype.size() as i64) as usize, &mut bytes).unwrap();
        bytes
    }

    fn store(t: &mut Tensor, index: i64, bytes: &[u8]) {
        let at = (GUARD_BYTES as i64 + index * t.dtype.size() as i64) as usize;
        t.buffer.write(at, bytes).unwrap();
    }

    /// A fill of one byte value (a set on the device) or of a pattern (a copy) covers the
    /// data and leaves the guard bands as they were.
    pub(crate) fn fills_the_data_alone(backend: &dyn Backend) {
        for pattern in [&[0x5a][..], &[0xa5, 0xa5], &[0x01, 0x02]] {
            let mut t = Tensor::allocate(backend, DType::F16, &[3, 5]).unwrap();
            t.fill(pattern).unwrap();
            let want: Vec<u8> = (0..30).map(|i| pattern[i % pattern.len()]).collect();
            assert_eq!(t.read().unwrap(), want, "{} {pattern:?}", backend.name());
            assert_eq!(t.guard_damage().unwrap(), None, "{} {pattern:?}", backend.name());
        }
    }

    #[test]
    fn a_fill_sets_the_data_alone_by_one_byte_or_by_a_pattern() {
        fills_the_data_alone(&Memory);
    }

    #[test]
    fn a_guard_copied_into_another_tensors_guard_is_damage() {
        let a = Tensor::allocate(&Memory, DType::F32, &[4]).unwrap();
        let mut out = Tensor::allocate(&Memory, DType::F32, &[4]).unwrap();
        assert_eq!(out.guard_damage().unwrap(), None);
        // out[i] = a[i] one past the end of both
        let past_a = element(&a, 4);
        assert_eq!(past_a, a.guard_pattern(GuardSide::After));
        store(&mut out, 4, &past_a);
        assert_eq!(out.guard_damage().unwrap(), Some(GuardDamage { first_element: 4, elements: 1 }));
    }

    #[test]
    fn a_guard_copied_to_the_other_side_or_widened_from_bf16_is_damage() {
        let mut t = Tensor::allocate(&Memory, DType::F32, &[3]).unwrap();
        let before = element(&t, -1);
        store(&mut t, 3, &before);
        assert_eq!(t.guard_damage().unwrap(), Some(GuardDamage { first_element: 3, elements: 1 }));

        let half = Tensor::allocate(&Memory, DType::Bf16, &[8]).unwrap();
        let mut out = Tensor::allocate(&Memory, DType::F32, &[8]).unwrap();
        let widened = (u16::from_le_bytes(element(&half, -1).try_into().unwrap()) as u32) << 16;
        store(&mut out, -2, &widened.to_le_bytes());
        assert_eq!(out.guard_damage().unwrap(), Some(GuardDamage { first_element: -2, elements: 1 }));
    }

    #[test]
    fn a_part_read_is_those_bytes_of_the_data_and_never_past_it() {
        let mut t = Tensor::allocate(&Memory, DType::U8, &[6]).unwrap();
        t.write(&[1, 2, 3, 4, 5, 6]).unwrap();
        let mut part = [0u8; 3];
        t.read_part(2, &mut part).unwrap();
        assert_eq!(part, [3, 4, 5]);
        assert!(t.read_part(4, &mut part).is_err(), "bytes 4..7 of 6 reach the guard band");
        assert!(t.read_part(usize::MAX, &mut part).is_err());
    }

    #[test]
    fn a_part_written_is_those_bytes_of_the_data_and_never_past_it() {
        let mut t = Tensor::allocate(&Memory, DType::U8, &[6]).unwrap();
        t.write(&[1, 2, 3, 4, 5, 6]).unwrap();
        t.write_part(3, &[9, 8]).unwrap();
        assert_eq!(t.read().unwrap(), [1, 2, 3, 9, 8, 6]);
        assert!(t.write_part(5, &[7, 7]).is_err(), "bytes 5..7 of 6 reach the guard band");
        assert!(t.write_part(usize::MAX, &[7]).is_err());
        assert_eq!(t.read().unwrap(), [1, 2, 3, 9, 8, 6]);
        assert_eq!(t.guard_damage().unwrap(), None);
    }

    #[test]
    fn tensors_alive_together_have_different_guards() {
        let tensors: Vec<Tensor> = (0..20).map(|_| Tensor::allocate(&Memory, DType::Bf16, &[1]).unwrap()).collect();
        for (i, a) in tensors.iter().enumerate() {
            for b in &tensors[i + 1..] {
                assert_ne!(a.guard_pattern(GuardSide::After), b.guard_pattern(GuardSide::After));
            }
        }
    }
}
