//! Device buffers kept for the next tensor of the same size in this process. A run allocates
//! and frees the same few sizes over and over (every case, every planted copy, every piece of
//! a seam plan: a 1,025-row case cut into single rows is 1,025 pieces of three tensors each),
//! and on a GPU each allocation and each free is a driver call that may wait for the device.
//! A kept buffer is zeroed before it is handed out again, so a tensor never sees what an
//! earlier tensor held: every allocation is zero-filled, as `Backend::allocate` promises.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::DeviceBuffer;
use crate::EngineError;

/// A buffer larger than this is freed, not kept: a gigabyte case's tensors would hold device
/// memory that the next case may need.
const MAX_KEPT_BUFFER: usize = 64 << 20;

/// The most bytes kept at once, over every size.
const MAX_KEPT_BYTES: usize = 256 << 20;

pub struct BufferPool {
    kept: Mutex<Kept>,
    max_buffer: usize,
    max_bytes: usize,
}

#[derive(Default)]
struct Kept {
    by_size: HashMap<usize, Vec<Box<dyn DeviceBuffer>>>,
    bytes: usize,
}

impl BufferPool {
    pub fn new() -> Arc<BufferPool> {
        BufferPool::with_limits(MAX_KEPT_BUFFER, MAX_KEPT_BYTES)
    }

    fn with_limits(max_buffer: usize, max_bytes: usize) -> Arc<BufferPool> {
        Arc::new(BufferPool { kept: Mutex::default(), max_buffer, max_bytes })
    }

    /// A zero-filled buffer of `bytes`: a kept one, zeroed, else `fresh(bytes)`.
    pub fn allocate(
        self: &Arc<Self>,
        bytes: usize,
        fresh: impl FnOnce(usize) -> Result<Box<dyn DeviceBuffer>, EngineError>,
    ) -> Result<Box<dyn DeviceBuffer>, EngineError> {
        let kept = {
            let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            let buffer = kept.by_size.get_mut(&bytes).and_then(Vec::pop);
            if buffer.is_some() {
                kept.bytes -= bytes;
            }
            buffer
        };
        let buffer = match kept {
            Some(mut buffer) => {
                buffer.zero()?;
                buffer
            }
            None => fresh(bytes)?,
        };
        Ok(Box::new(Pooled { buffer: Some(buffer), bytes, pool: self.clone() }))
    }

    fn keep(&self, bytes: usize, buffer: Box<dyn DeviceBuffer>) {
        if bytes > self.max_buffer {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.bytes + bytes <= self.max_bytes {
            kept.bytes += bytes;
            kept.by_size.entry(bytes).or_default().push(buffer);
        }
    }

    /// Bytes kept now, over every size.
    pub fn kept_bytes(&self) -> usize {
        self.kept.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

/// A buffer that goes back to its pool when dropped.
struct Pooled {
    buffer: Option<Box<dyn DeviceBuffer>>,
    /// The size it was asked for (a backend may round an empty one up).
    bytes: usize,
    pool: Arc<BufferPool>,
}

impl Pooled {
    fn buffer(&self) -> &dyn DeviceBuffer {
        self.buffer.as_deref().expect("a pooled buffer is taken only when dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            self.pool.keep(self.bytes, buffer);
        }
    }
}

impl DeviceBuffer for Pooled {
    fn len(&self) -> usize {
        self.buffer().len()
    }

    fn device_address(&self) -> u64 {
        self.buffer().device_address()
    }

    fn write(&mut self, offset: usize, bytes: &[u8]) -> Result<(), EngineError> {
        self.buffer.as_deref_mut().expect("a pooled buffer is taken only when dropped").write(offset, bytes)
    }

    fn read(&self, offset: usize, bytes: &mut [u8]) -> Result<(), EngineError> {
        self.buffer().read(offset, bytes)
    }

    fn fill(&mut self, offset: usize, len: usize, pattern: &[u8]) -> Result<(), EngineError> {
        self.buffer.as_deref_mut().expect("a pooled buffer is taken only when dropped").fill(offset, len, pattern)
    }

    fn zero(&mut self) -> Result<(), EngineError> {
        self.buffer.as_deref_mut().expect("a pooled buffer is taken only when dropped").zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::backend::memory::Memory;

    fn fresh(bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
        Memory.allocate(bytes)
    }

    #[test]
    fn a_dropped_buffer_comes_back_zeroed_for_the_same_size_only() {
        let pool = BufferPool::new();
        let mut first = pool.allocate(4096, fresh).unwrap();
        first.write(0, &[0xa5; 4096]).unwrap();
        let address = first.device_address();
        drop(first);
        assert_eq!(pool.kept_bytes(), 4096);
        let other = pool.allocate(4095, fresh).unwrap();
        assert_ne!(other.device_address(), address, "another size is a fresh buffer");
        let again = pool.allocate(4096, fresh).unwrap();
        assert_eq!(again.device_address(), address, "the same size takes the kept buffer");
        assert_eq!(pool.kept_bytes(), 0);
        let mut bytes = vec![0xff; 4096];
        again.read(0, &mut bytes).unwrap();
        assert!(bytes.iter().all(|&b| b == 0), "what the last tensor held is gone");
    }

    #[test]
    fn large_buffers_and_bytes_past_the_limit_are_freed() {
        let pool = BufferPool::with_limits(1000, 3000);
        drop(pool.allocate(1001, fresh).unwrap());
        assert_eq!(pool.kept_bytes(), 0);
        let held: Vec<_> = (0..4).map(|_| pool.allocate(1000, fresh).unwrap()).collect();
        drop(held);
        assert_eq!(pool.kept_bytes(), 3000);
    }
}
