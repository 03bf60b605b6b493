//! `projection_bf16`: y = x . W^T through the backend's BLAS (rocBLAS, cuBLAS, the host GEMM),
//! not a kernel of ours. A call that carries a module (only a control's: contracts give a
//! library op none) runs its kernel instead, so a faulty projection can be planted:
//! `extern "C" __global__ void projection_bf16(const unsigned short* x, const unsigned short* w,
//! void* y, int m, int n, int k, int y_dtype)`, one thread per element of y, blocks of 256.
//!
//! Pinned chunks: a BLAS picks its kernel by the row count, so the same row can come out with
//! other bits when a batch is cut otherwise (cuBLAS does, for m of 1 to 16 against 4,096). With
//! `chunk` above 0 every BLAS call is made with `chunk` rows: the rows in whole chunks in place,
//! the last few copied into a zero-filled scratch of `chunk` rows, and only their rows of the
//! scratch output copied back. `chunk = 0` calls the BLAS once with the rows as they come.

use std::collections::BTreeMap;

use super::{OpCall, OpSpec, ParamLimit, ParamSpec, Role, TensorSpec};
use crate::backend::{GemmBf16, LaunchDims, LaunchReport};
use crate::shape_expr::Symbols;
use crate::{DType, EngineError};

/// Threads per block of a planted kernel.
const THREADS: u32 = 256;

/// The row count of every BLAS call where the caller gives no `chunk`.
pub const DEFAULT_CHUNK: usize = 1024;

pub const PROJECTION_BF16: OpSpec = OpSpec {
    name: "projection_bf16",
    about: "y = x . W^T with bf16 x [m, k] and W [n, k], products accumulated in f32, y in f32 or bf16, \
            through the backend's BLAS.",
    source: None,
    symbol: None,
    params: &[ParamSpec { name: "chunk", integer: true, default: Some(DEFAULT_CHUNK as f64), limits: &[ParamLimit::Min(0.0)] }],
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
    // a multiple of 8 keeps every call's row pointers 16-byte aligned, as the first's: a
    // library may choose its kernel by alignment too
    let chunk = match op.param("chunk")? {
        c if c >= 0.0 && c.fract() == 0.0 && c <= i32::MAX as f64 => c as usize,
        other => return Err(op.error(format!("`chunk` = {other}: a row count, or 0 for unpinned calls"))),
    };
    let call = GemmBf16 { m, rows: m, n, k, x: x.device_address(), w: w.device_address(), y: y.device_address(), y_dtype: y.dtype };
    if chunk == 0 {
        return op.backend.gemm_bf16(&call);
    }
    let mut report = LaunchReport::default();
    for start in (0..m).step_by(chunk) {
        let rows = chunk.min(m - start);
        let calls = if rows == chunk { gemm_in_place(op, call, start, chunk)? } else { gemm_padded(op, call, start, rows, chunk)? };
        report.blocks += calls.blocks;
    }
    Ok(report)
}

/// Rows `start..start + chunk` of x and y as one call of `chunk` rows, in place.
fn gemm_in_place(op: &OpCall, whole: GemmBf16, start: usize, chunk: usize) -> Result<LaunchReport, EngineError> {
    let (x_row, y_row) = ((whole.k * 2) as u64, (whole.n * whole.y_dtype.size()) as u64);
    let request = GemmBf16 { m: chunk, rows: chunk, x: whole.x + start as u64 * x_row, y: whole.y + start as u64 * y_row, ..whole };
    op.backend.gemm_bf16(&request)
}

/// The last `rows` rows (fewer than a chunk) as one call of `chunk` rows: copied into a
/// zero-filled scratch x, multiplied into a scratch y, and only their rows of it copied back,
/// so the padding's results are never read.
fn gemm_padded(op: &OpCall, whole: GemmBf16, start: usize, rows: usize, chunk: usize) -> Result<LaunchReport, EngineError> {
    let (x_row, y_row) = (whole.k * 2, whole.n * whole.y_dtype.size());
    let bytes = |rows: usize, row: usize| rows.checked_mul(row).ok_or_else(|| op.error(format!("{rows} rows of {row} bytes overflow")));
    let x = op.backend.allocate(bytes(chunk, x_row)?)?;
    let y = op.backend.allocate(bytes(chunk, y_row)?)?;
    op.backend.copy(x.device_address(), whole.x + (start * x_row) as u64, bytes(rows, x_row)?)?;
    let request = GemmBf16 { m: chunk, rows, x: x.device_address(), y: y.device_address(), ..whole };
    let report = op.backend.gemm_bf16(&request)?;
    op.backend.copy(whole.y + (start * y_row) as u64, y.device_address(), bytes(rows, y_row)?)?;
    Ok(report)
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
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::backend::{Backend, DeviceBuffer, KernelArg, KernelSource, Module, Schedule, WatchedTensor};
    use crate::tensor::{GUARD_BYTES, Tensor};

    /// Buffers that are never read, each at an address of its own, and a BLAS, a device copy
    /// and a module that only note being called.
    #[derive(Default)]
    struct Calls {
        next: AtomicU64,
        gemm: Mutex<Vec<GemmBf16>>,
        copies: Mutex<Vec<(u64, u64, usize)>>,
        launches: Mutex<Vec<(String, LaunchDims, usize)>>,
    }

    struct Buffer(usize, u64);

    impl DeviceBuffer for Buffer {
        fn len(&self) -> usize {
            self.0
        }
        fn device_address(&self) -> u64 {
            self.1
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
        fn device_memory(&self) -> Option<u64> {
            None
        }
        fn allocate(&self, bytes: usize) -> Result<Box<dyn DeviceBuffer>, EngineError> {
            Ok(Box::new(Buffer(bytes, (self.next.fetch_add(1, Ordering::Relaxed) + 1) << 32)))
        }
        fn load_module(&self, _: &KernelSource) -> Result<Arc<dyn Module>, EngineError> {
            Err(EngineError::Buffer("none".into()))
        }
        fn gemm_bf16(&self, request: &GemmBf16) -> Result<LaunchReport, EngineError> {
            self.gemm.lock().unwrap().push(*request);
            Ok(LaunchReport { blocks: 1, ..LaunchReport::default() })
        }
        fn copy(&self, to: u64, from: u64, bytes: usize) -> Result<(), EngineError> {
            self.copies.lock().unwrap().push((to, from, bytes));
            Ok(())
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

    const N: usize = 300;
    const K: usize = 5;

    /// A projection of `m` rows (y in f32) with these parameters; the x and y addresses.
    fn call(calls: &Calls, module: Option<&dyn Module>, m: usize, params: &[(&str, f64)]) -> Result<(u64, u64), EngineError> {
        let mut tensors = BTreeMap::new();
        for (name, dtype, shape) in [("x", DType::Bf16, [m, K]), ("w", DType::Bf16, [N, K]), ("y", DType::F32, [m, N])] {
            tensors.insert(name.to_string(), Tensor::allocate(calls, dtype, &shape).unwrap());
        }
        let symbols = [("m", m), ("n", N), ("k", K)].into_iter().map(|(s, v)| (s.to_string(), v as i64)).collect();
        let params = params.iter().map(|(p, v)| (p.to_string(), *v)).collect();
        let op = OpCall {
            op: &PROJECTION_BF16,
            backend: calls,
            module,
            symbols: &symbols,
            params: &params,
            tensors: &tensors,
            schedule: Schedule::default(),
        };
        launch(&op)?;
        Ok((tensors["x"].device_address(), tensors["y"].device_address()))
    }

    #[test]
    fn a_call_without_a_module_goes_to_the_blas_and_one_with_a_module_runs_its_kernel_instead() {
        let calls = Calls::default();
        call(&calls, None, 3, &[]).unwrap();
        assert_eq!(calls.gemm.lock().unwrap().len(), 1);
        assert!(calls.launches.lock().unwrap().is_empty());

        let source = KernelSource { path: "c.hip".into(), display_path: "c.hip".into(), kernels: vec![], include_dirs: vec![] };
        let planted = Planted(&calls, source);
        call(&calls, Some(&planted), 3, &[]).unwrap();
        assert_eq!(calls.gemm.lock().unwrap().len(), 1, "the BLAS is not called when a kernel is planted");
        let launches = calls.launches.lock().unwrap();
        let (kernel, dims, args) = &launches[0];
        assert_eq!((kernel.as_str(), dims.grid, dims.block, *args), ("projection_bf16", [4, 1, 1], [256, 1, 1], 7));
    }

    #[test]
    fn every_blas_call_is_made_with_the_chunks_rows_the_last_padded_in_a_scratch_and_only_its_rows_copied_back() {
        let calls = Calls::default();
        let (m, chunk) = (2 * 8 + 3, 8);
        let (x, y) = call(&calls, None, m, &[("chunk", chunk as f64)]).unwrap();
        let gemm = calls.gemm.lock().unwrap().clone();
        let shape: Vec<(usize, usize)> = gemm.iter().map(|g| (g.m, g.rows)).collect();
        assert_eq!(shape, [(8, 8), (8, 8), (8, 3)], "every call of 8 rows, the last reading back 3");
        let (x_row, y_row) = ((K * 2) as u64, (N * 4) as u64);
        assert_eq!((gemm[0].x, gemm[0].y, gemm[1].x, gemm[1].y), (x, y, x + 8 * x_row, y + 8 * y_row), "whole chunks in place");
        let copies = calls.copies.lock().unwrap().clone();
        assert_eq!(copies.len(), 2, "{copies:?}");
        // the last 3 rows of x into the scratch x, and its 3 rows of the scratch y back into y
        assert_eq!(copies[0], (gemm[2].x, x + 16 * x_row, 3 * x_row as usize));
        assert_eq!(copies[1], (y + 16 * y_row, gemm[2].y, 3 * y_row as usize));
        assert!(![x, y].contains(&gemm[2].x) && gemm[2].x != gemm[2].y && gemm[2].x & (GUARD_BYTES as u64 - 1) == 0);

        // the default chunk pads a decode row to 1,024 rows; chunk 0 calls with the rows as they come
        let calls = Calls::default();
        call(&calls, None, 1, &[]).unwrap();
        call(&calls, None, 1500, &[("chunk", 0.0)]).unwrap();
        let shape: Vec<(usize, usize)> = calls.gemm.lock().unwrap().iter().map(|g| (g.m, g.rows)).collect();
        assert_eq!(shape, [(DEFAULT_CHUNK, 1), (1500, 1500)]);
        let e = call(&calls, None, 4, &[("chunk", -1.0)]).unwrap_err().to_string();
        assert!(e.contains("`chunk` = -1: a row count, or 0 for unpinned calls"), "{e}");
    }
}
