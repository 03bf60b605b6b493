//! RMSNorm and the fused residual add + RMSNorm: one block of 256 threads per row.

use super::{OpCall, OpSpec, ParamSpec, Role, TensorSpec};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const FLOATS: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
/// `TF_RMS_THREADS` and `TF_ADD_RMS_THREADS` in the kernels: their reductions assume it.
const THREADS: u32 = 256;
const EPS: ParamSpec = ParamSpec { name: "eps", integer: false, default: Some(1e-6) };

/// One block per row.
fn row_grid(op: &OpCall) -> Result<LaunchDims, EngineError> {
    let rows = op.symbol("rows")?;
    let rows = u32::try_from(rows).map_err(|_| op.error(format!("{rows} rows do not fit a grid")))?;
    Ok(LaunchDims { grid: [rows, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 })
}

pub const TF_RMS: OpSpec = OpSpec {
    name: "tf_rms",
    about: "RMSNorm of each row, times a weight vector: x / sqrt(mean(x^2) + eps) * weight.",
    source: Some("tf_rms.hip"),
    symbol: Some("tf_rms"),
    params: &[EPS],
    symbols: &["rows", "k"],
    tensors: &[
        TensorSpec { name: "x", role: Role::Input, dtypes: FLOATS, shape: "rows, k" },
        TensorSpec { name: "weight", role: Role::Input, dtypes: FLOATS, shape: "k" },
        TensorSpec { name: "out", role: Role::Output, dtypes: FLOATS, shape: "rows, k" },
    ],
    launch: launch_rms,
    kernel: None,
};

fn launch_rms(op: &OpCall) -> Result<LaunchReport, EngineError> {
    op.launch(
        row_grid(op)?,
        &[
            op.pointer("x")?,
            op.dtype_code("x")?,
            op.pointer("weight")?,
            op.dtype_code("weight")?,
            op.int("k")?,
            op.float_param("eps")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}

pub const TF_ADD_RMS: OpSpec = OpSpec {
    name: "tf_add_rms",
    about: "Residual add and RMSNorm fused: sum = x + residual, out = RMSNorm(sum) * weight.",
    source: Some("tf_add_rms.hip"),
    symbol: Some("tf_add_rms"),
    params: &[EPS],
    symbols: &["rows", "k"],
    tensors: &[
        TensorSpec { name: "x", role: Role::Input, dtypes: FLOATS, shape: "rows, k" },
        TensorSpec { name: "residual", role: Role::Input, dtypes: FLOATS, shape: "rows, k" },
        TensorSpec { name: "weight", role: Role::Input, dtypes: FLOATS, shape: "k" },
        TensorSpec { name: "sum", role: Role::Output, dtypes: FLOATS, shape: "rows, k" },
        TensorSpec { name: "out", role: Role::Output, dtypes: FLOATS, shape: "rows, k" },
    ],
    launch: launch_add_rms,
    kernel: None,
};

fn launch_add_rms(op: &OpCall) -> Result<LaunchReport, EngineError> {
    op.launch(
        row_grid(op)?,
        &[
            op.pointer("x")?,
            op.dtype_code("x")?,
            op.pointer("residual")?,
            op.dtype_code("residual")?,
            op.pointer("weight")?,
            op.dtype_code("weight")?,
            op.int("k")?,
            op.float_param("eps")?,
            op.pointer("sum")?,
            op.dtype_code("sum")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}
