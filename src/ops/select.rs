//! The end of a decode step: `tf_dense_rows` (a matrix-vector product, one warp per output)
//! and `tf_argmax` (the greedy token of each vocabulary row).

use super::{OpCall, OpSpec, Role, TensorSpec};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const FLOATS: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
const THREADS: u32 = 256;
/// `TF_DENSE_WARPS` in kernels/tf_dense_rows.hip: one warp per output value.
const OUTPUTS_PER_BLOCK: i64 = 8;

fn grid(op: &OpCall, what: &str, count: i64) -> Result<u32, EngineError> {
    u32::try_from(count).map_err(|_| op.error(format!("{what} = {count} does not fit a grid dimension")))
}

pub const TF_ARGMAX: OpSpec = OpSpec {
    name: "tf_argmax",
    about: "The index of the largest logit of each vocabulary row; ties go to the lowest index.",
    source: Some("tf_argmax.hip"),
    symbol: Some("tf_argmax"),
    params: &[],
    symbols: &["rows", "vocab"],
    tensors: &[
        TensorSpec { name: "logits", role: Role::Input, dtypes: FLOATS, shape: "rows, vocab" },
        TensorSpec { name: "out", role: Role::Output, dtypes: &[DType::I32], shape: "rows" },
    ],
    launch: launch_argmax,
    kernel: None,
};

fn launch_argmax(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let dims = LaunchDims { grid: [grid(op, "rows", op.symbol("rows")?)?, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(dims, &[op.pointer("logits")?, op.dtype_code("logits")?, op.int("vocab")?, op.pointer("out")?])
}

pub const TF_DENSE_ROWS: OpSpec = OpSpec {
    name: "tf_dense_rows",
    about: "y = x . W^T for a few rows: one warp per output value, a shuffle reduction, f32 accumulation.",
    source: Some("tf_dense_rows.hip"),
    symbol: Some("tf_dense_rows"),
    params: &[],
    symbols: &["rows", "n", "k"],
    tensors: &[
        TensorSpec { name: "w", role: Role::Input, dtypes: FLOATS, shape: "n, k" },
        TensorSpec { name: "x", role: Role::Input, dtypes: &[DType::F32], shape: "rows, k" },
        TensorSpec { name: "y", role: Role::Output, dtypes: &[DType::F32], shape: "rows, n" },
    ],
    launch: launch_dense_rows,
    kernel: None,
};

fn launch_dense_rows(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let n = op.symbol("n")?;
    let dims = LaunchDims {
        grid: [grid(op, "output blocks", (n + OUTPUTS_PER_BLOCK - 1) / OUTPUTS_PER_BLOCK)?, grid(op, "rows", op.symbol("rows")?)?, 1],
        block: [THREADS, 1, 1],
        dynamic_shared: 0,
    };
    op.launch(dims, &[op.pointer("w")?, op.dtype_code("w")?, op.pointer("x")?, op.int("n")?, op.int("k")?, op.pointer("y")?])
}
