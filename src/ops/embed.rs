//! `tf_embed_dense`: rows of a table gathered by token id, in the activation type.

use super::{OpCall, OpSpec, Role, TensorSpec, blocks_for};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const FLOATS: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
const THREADS: u32 = 256;

pub const TF_EMBED_DENSE: OpSpec = OpSpec {
    name: "tf_embed_dense",
    about: "Rows of a table gathered by token id, written in the activation type.",
    source: Some("tf_embed_dense.hip"),
    symbol: Some("tf_embed_dense"),
    params: &[],
    symbols: &["n", "k", "vocab"],
    tensors: &[
        TensorSpec { name: "table", role: Role::Input, dtypes: FLOATS, shape: "vocab, k" },
        TensorSpec { name: "ids", role: Role::Input, dtypes: &[DType::I32], shape: "n" },
        TensorSpec { name: "out", role: Role::Output, dtypes: FLOATS, shape: "n, k" },
    ],
    launch,
    kernel: None,
};

fn launch(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let elements = op.symbol("n")?.checked_mul(op.symbol("k")?).unwrap_or(i64::MAX);
    let dims = LaunchDims { grid: [blocks_for(op, elements, THREADS)?, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(
        dims,
        &[
            op.pointer("table")?,
            op.dtype_code("table")?,
            op.pointer("ids")?,
            op.int("n")?,
            op.int("k")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}
