//! Elementwise ops of a decoder whose launchers are still Rust: the residual add and the column
//! split of a fused projection's output (tf_cast and tf_silu_mul are data: their contracts'
//! `[kernel]`). One thread per output element.

use super::{OpCall, OpSpec, ParamSpec, Role, TensorSpec, blocks_for};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const FLOATS: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
const THREADS: u32 = 256;

/// A 1-D grid of 256-thread blocks over `elements`.
fn grid(op: &OpCall, elements: i64) -> Result<LaunchDims, EngineError> {
    Ok(LaunchDims { grid: [blocks_for(op, elements, THREADS)?, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 })
}

fn product(op: &OpCall, a: &str, b: &str) -> Result<i64, EngineError> {
    Ok(op.symbol(a)?.checked_mul(op.symbol(b)?).unwrap_or(i64::MAX))
}

pub const TF_ADD: OpSpec = OpSpec {
    name: "tf_add",
    about: "Elementwise a + b in the activation type (the residual add).",
    source: Some("tf_add.hip"),
    symbol: Some("tf_add"),
    params: &[],
    symbols: &["rows", "k"],
    tensors: &[
        TensorSpec { name: "a", role: Role::Input, dtypes: FLOATS, shape: "rows, k" },
        TensorSpec { name: "b", role: Role::Input, dtypes: FLOATS, shape: "rows, k" },
        TensorSpec { name: "out", role: Role::Output, dtypes: FLOATS, shape: "rows, k" },
    ],
    launch: launch_add,
    kernel: None,
};

fn launch_add(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let dims = grid(op, product(op, "rows", "k")?)?;
    op.launch(
        dims,
        &[
            op.pointer("a")?,
            op.dtype_code("a")?,
            op.pointer("b")?,
            op.dtype_code("b")?,
            op.int("rows")?,
            op.int("k")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}

pub const TF_COPY_COLS: OpSpec = OpSpec {
    name: "tf_copy_cols",
    about: "Columns [start, start + width) of every row copied out (the split of a fused projection).",
    source: Some("tf_copy_cols.hip"),
    symbol: Some("tf_copy_cols"),
    params: &[ParamSpec { name: "start", integer: true, default: Some(0.0) }],
    symbols: &["rows", "k", "width"],
    tensors: &[
        TensorSpec { name: "in", role: Role::Input, dtypes: FLOATS, shape: "rows, k" },
        TensorSpec { name: "out", role: Role::Output, dtypes: FLOATS, shape: "rows, width" },
    ],
    launch: launch_copy_cols,
    kernel: None,
};

fn launch_copy_cols(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let (start, k, width) = (op.param("start")?, op.symbol("k")?, op.symbol("width")?);
    if start < 0.0 || start + width as f64 > k as f64 {
        return Err(op.error(format!("columns [{start}, {}) are not inside a row of {k}", start + width as f64)));
    }
    let dims = grid(op, product(op, "rows", "width")?)?;
    op.launch(
        dims,
        &[
            op.pointer("in")?,
            op.dtype_code("in")?,
            op.int("rows")?,
            op.int("k")?,
            op.int_param("start")?,
            op.int("width")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}
