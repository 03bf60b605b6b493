//! `tf_embed_rows`: MLX-style affine-quantized embedding rows, gathered by token id and
//! written in the activation type.

use super::{OpCall, OpSpec, Role, TensorSpec, blocks_for};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const THREADS: u32 = 256;
/// The code widths MLX quantizes to and the kernel decodes.
pub const BITS: &[i64] = &[2, 3, 4, 6, 8];
/// MLX's group sizes.
pub const GROUPS: &[i64] = &[32, 64, 128];

/// `bits` and `group` are shape symbols, not parameters: they decide the table's and the
/// scales' shapes (`k * bits / 32` words, `k / group` groups per row).
pub const TF_EMBED_ROWS: OpSpec = OpSpec {
    name: "tf_embed_rows",
    about: "MLX-style affine-quantized embedding rows (codes of 2, 3, 4, 6 or 8 bits packed in 32-bit words, \
            a scale and a bias per group), gathered by token id and written in the activation type.",
    source: Some("tf_embed_rows.hip"),
    symbol: Some("tf_embed_rows"),
    params: &[],
    symbols: &["n", "k", "vocab", "bits", "group"],
    tensors: &[
        TensorSpec { name: "table", role: Role::Input, dtypes: &[DType::U32], shape: "vocab, k * bits / 32" },
        TensorSpec { name: "scales", role: Role::Input, dtypes: &[DType::F16, DType::Bf16], shape: "vocab, k / group" },
        TensorSpec { name: "biases", role: Role::Input, dtypes: &[DType::F16, DType::Bf16], shape: "vocab, k / group" },
        TensorSpec { name: "ids", role: Role::Input, dtypes: &[DType::I32], shape: "n" },
        TensorSpec { name: "out", role: Role::Output, dtypes: &[DType::F32, DType::F16, DType::Bf16], shape: "n, k" },
    ],
    launch,
    kernel: None,
};

fn launch(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let (k, bits, group) = (op.symbol("k")?, op.symbol("bits")?, op.symbol("group")?);
    if !BITS.contains(&bits) {
        return Err(op.error(format!("bits = {bits} (the kernel decodes {BITS:?})")));
    }
    if !GROUPS.contains(&group) || k % group != 0 {
        return Err(op.error(format!("group = {group} must be one of {GROUPS:?} and divide k = {k}")));
    }
    // implied by k % group == 0 with group a multiple of 32, checked all the same: a row is whole words
    if (k * bits) % 32 != 0 {
        return Err(op.error(format!("k * bits = {k} * {bits} is not a whole number of 32-bit words")));
    }
    let (scales, biases) = (op.tensor("scales")?.dtype, op.tensor("biases")?.dtype);
    if scales != biases {
        return Err(op.error(format!("scales are {scales} but biases {biases}: one dtype for both")));
    }
    let elements = op.symbol("n")?.checked_mul(k).unwrap_or(i64::MAX);
    let dims = LaunchDims { grid: [blocks_for(op, elements, THREADS)?, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(
        dims,
        &[
            op.pointer("table")?,
            op.pointer("scales")?,
            op.pointer("biases")?,
            op.dtype_code("scales")?,
            op.pointer("ids")?,
            op.int("n")?,
            op.int("k")?,
            op.int("bits")?,
            op.int("group")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}
