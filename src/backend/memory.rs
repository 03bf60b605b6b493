//! A backend for unit tests and the harness's benches: device buffers in plain host memory (a buffer's device address is
//! its host address, so a test module can read what a launch was given), and no modules.

use std::sync::Arc;

use crate::EngineError;
use crate::backend::{Backend, DeviceBuffer, KernelSource, Module};

pub struct Memory;

struct Buffer(Vec<u8>);

impl DeviceBuffer for Buffer {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn device_address(&self) -> u64 {
        self.0.as_ptr() as u64
    }
    fn write(&mut self, offset: usize, bytes: &[u8]) -> Result<(), EngineError> {
        self.0[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }
    fn read(&self, offset: usize, bytes: &mut [u8]) -> Result<(), EngineError> {
        bytes.copy_from_slice(&self.0[offset..offset + bytes.len()]);
        Ok(())
    }
}

impl Backend for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }
    fn arch(&self) -> String {
        String::new()
    }

    fn device_memory(&self) -> Option<u64> {
        None
    }
    fn toolchain(&self) -> String {
        String::new()
    }
    fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
        Ok(Box::new(Buffer(vec![0; bytes])))
    }
    fn load_module(&self, _: &KernelSource) -> Result<Arc<dyn Module>, EngineError> {
        Err(EngineError::Buffer("no modules here".into()))
    }
    fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
        crate::backend::copy_host_memory(to, from, bytes)
    }
}
