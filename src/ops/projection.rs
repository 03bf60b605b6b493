//! `projection_bf16`: y = x . W^T through the backend's BLAS (rocBLAS, cuBLAS, the host GEMM),
//! not a kernel of ours.

use super::{OpCall, OpSpec, Role, TensorSpec};
use crate::backend::{GemmBf16, LaunchReport};
use crate::{DType, EngineError};

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
    let request = GemmBf16 { m, n, k, x: x.device_address(), w: w.device_address(), y: y.device_address(), y_dtype: y.dtype };
    op.backend.gemm_bf16(&request)
}
