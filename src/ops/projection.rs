//! `projection_bf16`: y = x . W^T through the backend's BLAS (rocBLAS, cuBLAS, the host GEMM),
//! not a kernel of ours. A call that carries a module (only a control's: contracts give a
//! library op none) runs its kernel instead, so a faulty projection can be planted:
//! `extern "C" __global__ void projection_bf16(const unsigned short* x, const unsigned short* w,
//! void* y, int m, int n, int k, int y_dtype)`, one thread per element of y, blocks of 256.

use std::collections::BTreeMap;

use super::{OpCall, OpSpec, Role, TensorSpec};
use crate::backend::{GemmBf16, LaunchDims, LaunchReport};
use crate::shape_expr::Symbols;
use crate::{DType, EngineError};

/// Threads per block of a planted kernel.
const THREADS: u32 = 256;

pub const PROJECTION_BF16: OpSpec = OpSpec {
    name: "projection_bf16",
    about: "y = x . W^T with bf16 x [m, k] and W [n, k], products accumulated in f32, y in f32 or bf16, \
            through the backend's BLAS.",
    source: None,
    symbol: None,
    params: &[],
    symbols: &["m", "n", "k"],
    tensors: &[
        TensorSpec { name: "x", role: Role::Input, dtypes: &[DType::Bf16], shape: "m, k" },
        TensorSpec { name: "w", role: Role::Input, dtypes: &[DType::Bf16], shape: "n, k" },
        TensorSpec { name: "y", role: Role::Output, dtypes: &[DType::F32, DType::Bf16], shape: "m, n" },
    ],
    launch,
    dims: planted_dims,
    kernel: None,
};

fn launch(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let dim = |name: &str| -> Result<usize, EngineError> {
        let v = op.symbol(name)?;
        usize::try_from(v).map_err(|_| op.error(format!("`{name}` = {v}")))
    };
    let (m, n, k) = (dim("m")?, dim("n")?, dim("k")?);
    let (x, w, y) = (op.tensor("x")?, op.tensor("w")?, op.tensor("y")?);
    for (name, tensor, want, dtypes) in
        [("x", x, [m, k], &[DType::Bf16][..]), ("w", w, [n, k], &[DType::Bf16]), ("y", y, [m, n], &[DType::F32, DType::Bf16])]
    {
        if tensor.shape != want || !dtypes.contains(&tensor.dtype) {
            return Err(op.error(format!("`{name}` is {} {:?}, the call needs {want:?} of {dtypes:?}", tensor.dtype, tensor.shape)));
        }
    }
    if op.module.is_some() {
        return launch_planted(op);
    }
    let request = GemmBf16 { m, n, k, x: x.device_address(), w: w.device_address(), y: y.device_address(), y_dtype: y.dtype };
    op.backend.gemm_bf16(&request)
}

/// A control's kernel in place of the BLAS call, with the signature above.
fn launch_planted(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let dims = planted_dims(op.op, op.symbols, op.params)?;
    op.run_kernel(
        dims,
        &[op.pointer("x")?, op.pointer("w")?, op.pointer("y")?, op.int("m")?, op.int("n")?, op.int("k")?, op.dtype_code("y")?],
    )
}

/// A planted kernel's grid: one thread per element of y, in blocks of 256.
fn planted_dims(op: &OpSpec, symbols: &Symbols, _: &BTreeMap<String, f64>) -> Result<LaunchDims, EngineError> {
    let refused = |reason: String| EngineError::Op { op: op.name.to_string(), reason };
    let dim = |name: &str| symbols.get(name).copied().ok_or_else(|| refused(format!("shape symbol `{name}` not given")));
    let elements = dim("m")?.checked_mul(dim("n")?).unwrap_or(i64::MAX);
    let blocks = (elements + THREADS as i64 - 1) / THREADS as i64;
    let blocks = u32::try_from(blocks).map_err(|_| refused(format!("{elements} elements need more than 2^32 blocks")))?;
    Ok(LaunchDims { grid: [blocks, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::backend::{Backend, DeviceBuffer, KernelArg, KernelSource, Module, Schedule, WatchedTensor};
    use crate::tensor::Tensor;

    /// Buffers that are never read, and a BLAS and a module that only note being called.
    #[derive(Default)]
    struct Calls {
        gemm: Mutex<Vec<GemmBf16>>,
        launches: Mutex<Vec<(String, LaunchDims, usize)>>,
    }

    struct Buffer(usize);

    impl DeviceBuffer for Buffer {
        fn len(&self) -> usize {
            self.0
        }
        fn device_address(&self) -> u64 {
            0x1000
        }
        fn write(&mut self, _: usize, _: &[u8]) -> Result<(), EngineError> {
            Ok(())
        }
        fn read(&self, _: usize, bytes: &mut [u8]) -> Result<(), EngineError> {
            bytes.fill(0);
            Ok(())
        }
    }

    impl Backend for Calls {
        fn name(&self) -> &'static str {
            "calls"
        }
        fn arch(&self) -> String {
            String::new()
        }
        fn toolchain(&self) -> String {
            String::new()
        }
        fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
            Ok(Box::new(Buffer(bytes)))
        }
        fn load_module(&self, _: &KernelSource) -> Result<Arc<dyn Module>, EngineError> {
            Err(EngineError::Buffer("none".into()))
        }
        fn gemm_bf16(&self, request: &GemmBf16) -> Result<LaunchReport, EngineError> {
            self.gemm.lock().unwrap().push(*request);
            Ok(LaunchReport::default())
        }
    }

    struct Planted<'a>(&'a Calls, KernelSource);

    impl Module for Planted<'_> {
        fn source(&self) -> &KernelSource {
            &self.1
        }
        fn launch_watched(
            &self,
            kernel: &str,
            dims: LaunchDims,
            _: Schedule,
            args: &[KernelArg],
            _: &[WatchedTensor],
        ) -> Result<LaunchReport, EngineError> {
            self.0.launches.lock().unwrap().push((kernel.to_string(), dims, args.len()));
            Ok(LaunchReport::default())
        }
    }

    fn call(calls: &Calls, module: Option<&dyn Module>) {
        let (m, n, k) = (3usize, 300usize, 5usize);
        let mut tensors = BTreeMap::new();
        for (name, dtype, shape) in [("x", DType::Bf16, [m, k]), ("w", DType::Bf16, [n, k]), ("y", DType::F32, [m, n])] {
            tensors.insert(name.to_string(), Tensor::allocate(calls, dtype, &shape).unwrap());
        }
        let symbols = [("m", m), ("n", n), ("k", k)].into_iter().map(|(s, v)| (s.to_string(), v as i64)).collect();
        let op = OpCall {
            op: &PROJECTION_BF16,
            backend: calls,
            module,
            symbols: &symbols,
            params: &BTreeMap::new(),
            tensors: &tensors,
            schedule: Schedule::default(),
        };
        launch(&op).unwrap();
    }

    #[test]
    fn a_call_without_a_module_goes_to_the_blas_and_one_with_a_module_runs_its_kernel_instead() {
        let calls = Calls::default();
        call(&calls, None);
        assert_eq!(calls.gemm.lock().unwrap().len(), 1);
        assert!(calls.launches.lock().unwrap().is_empty());

        let source = KernelSource { path: "c.hip".into(), display_path: "c.hip".into(), kernels: vec![], include_dirs: vec![] };
        let planted = Planted(&calls, source);
        call(&calls, Some(&planted));
        assert_eq!(calls.gemm.lock().unwrap().len(), 1, "the BLAS is not called when a kernel is planted");
        let launches = calls.launches.lock().unwrap();
        let (kernel, dims, args) = &launches[0];
        assert_eq!((kernel.as_str(), dims.grid, dims.block, *args), ("projection_bf16", [4, 1, 1], [256, 1, 1], 7));
    }
}
