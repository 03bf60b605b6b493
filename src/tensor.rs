//! Device tensors with guard bands on both sides. Guards hold the dtype's guard pattern (a
//! NaN for float types), so a write past either end is seen and a read past it poisons.

use crate::backend::{Backend, DeviceBuffer, WatchedTensor};
use crate::{DType, EngineError};

/// Guard band on each side, in bytes.
pub const GUARD_BYTES: usize = 4096;

pub struct Tensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    buffer: Box<dyn DeviceBuffer>,
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
        let guard = guard_fill(dtype, GUARD_BYTES);
        buffer.write(0, &guard)?;
        buffer.write(GUARD_BYTES + bytes, &guard)?;
        Ok(Tensor { dtype, shape: shape.to_vec(), buffer })
    }

    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn bytes(&self) -> usize {
        self.elements() * self.dtype.size()
    }

    /// This tensor as a launch's memory checks see it.
    pub fn watched<'a>(&self, name: &'a str) -> WatchedTensor<'a> {
        WatchedTensor {
            name,
            data: self.device_address(),
            bytes: self.bytes() as u64,
            element_bytes: self.dtype.size() as u32,
            guard_bytes: GUARD_BYTES as u64,
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

    /// Fills the data with a repeated byte pattern (poison before a launch).
    pub fn fill(&mut self, pattern: &[u8]) -> Result<(), EngineError> {
        let data: Vec<u8> = pattern.iter().copied().cycle().take(self.bytes()).collect();
        self.buffer.write(GUARD_BYTES, &data)
    }

    pub fn read(&self) -> Result<Vec<u8>, EngineError> {
        let mut out = vec![0u8; self.bytes()];
        self.buffer.read(GUARD_BYTES, &mut out)?;
        Ok(out)
    }

    /// The first overwritten guard element, before or after the data, and how many differ.
    pub fn guard_damage(&self) -> Result<Option<GuardDamage>, EngineError> {
        let size = self.dtype.size();
        let want = guard_fill(self.dtype, GUARD_BYTES);
        let mut before = vec![0u8; GUARD_BYTES];
        let mut after = vec![0u8; GUARD_BYTES];
        self.buffer.read(0, &mut before)?;
        self.buffer.read(GUARD_BYTES + self.bytes(), &mut after)?;
        let differs = |a: &[u8], b: &[u8]| a.chunks(size).zip(b.chunks(size)).map(|(x, y)| x != y).collect::<Vec<_>>();
        let before_bad = differs(&before, &want);
        let after_bad = differs(&after, &want);
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

fn guard_fill(dtype: DType, bytes: usize) -> Vec<u8> {
    dtype.guard_pattern().iter().copied().cycle().take(bytes).collect()
}
