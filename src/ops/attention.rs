//! Split-K attention decode: per-tile softmax statistics and the combine of tile partials.

use super::{OpCall, OpSpec, Role, TensorSpec};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const THREADS: u32 = 256;
/// `TF_COMBINE_MAX_TILES` in kernels/tf_sum_partials.hip: the tile weights live in shared memory.
pub const MAX_TILES: i64 = 1024;

pub const TF_SOFTMAX_STATS: OpSpec = OpSpec {
    name: "tf_softmax_stats",
    about: "Per tile of keys, the max score and the sum of exp(score - max).",
    source: Some("tf_softmax_stats.hip"),
    symbol: Some("tf_softmax_stats"),
    params: &[],
    symbols: &["rows", "keys", "tile"],
    tensors: &[
        TensorSpec { name: "scores", role: Role::Input, dtypes: &[DType::F32], shape: "rows, keys" },
        TensorSpec { name: "tile_max", role: Role::Output, dtypes: &[DType::F32], shape: "rows, ceil_div(keys, tile)" },
        TensorSpec { name: "tile_sum", role: Role::Output, dtypes: &[DType::F32], shape: "rows, ceil_div(keys, tile)" },
    ],
    launch: launch_softmax_stats,
};

fn launch_softmax_stats(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let (keys, tile) = (op.symbol("keys")?, op.symbol("tile")?);
    if tile <= 0 {
        return Err(EngineError::Op { op: op.op.name.into(), reason: format!("tile = {tile}") });
    }
    let tiles = (keys + tile - 1) / tile;
    let grid_x = u32::try_from(tiles).map_err(|_| EngineError::Op { op: op.op.name.into(), reason: format!("{tiles} tiles") })?;
    let rows = u32::try_from(op.symbol("rows")?).map_err(|_| EngineError::Op { op: op.op.name.into(), reason: "rows".into() })?;
    let dims = LaunchDims { grid: [grid_x, rows, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(dims, &[op.pointer("scores")?, op.int("keys")?, op.int("tile")?, op.pointer("tile_max")?, op.pointer("tile_sum")?])
}

pub const TF_SUM_PARTIALS: OpSpec = OpSpec {
    name: "tf_sum_partials",
    about: "The split-K attention decode combine of tile partial rows into the final row.",
    source: Some("tf_sum_partials.hip"),
    symbol: Some("tf_sum_partials"),
    params: &[],
    symbols: &["rows", "tiles", "d"],
    tensors: &[
        TensorSpec { name: "partials", role: Role::Input, dtypes: &[DType::F32], shape: "rows, tiles, d" },
        TensorSpec { name: "tile_max", role: Role::Input, dtypes: &[DType::F32], shape: "rows, tiles" },
        TensorSpec { name: "tile_sum", role: Role::Input, dtypes: &[DType::F32], shape: "rows, tiles" },
        TensorSpec { name: "out", role: Role::Output, dtypes: &[DType::F32, DType::F16, DType::Bf16], shape: "rows, d" },
    ],
    launch: launch_sum_partials,
};

fn launch_sum_partials(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let tiles = op.symbol("tiles")?;
    if tiles > MAX_TILES {
        return Err(EngineError::Op { op: op.op.name.into(), reason: format!("{tiles} tiles (the kernel holds at most {MAX_TILES})") });
    }
    let rows = u32::try_from(op.symbol("rows")?).map_err(|_| EngineError::Op { op: op.op.name.into(), reason: "rows".into() })?;
    let dims = LaunchDims { grid: [rows, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(
        dims,
        &[
            op.pointer("partials")?,
            op.pointer("tile_max")?,
            op.pointer("tile_sum")?,
            op.int("tiles")?,
            op.int("d")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}
