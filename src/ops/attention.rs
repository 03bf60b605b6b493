//! Split-K attention decode: scores over the key cache, the probabilities times the value
//! cache per tile, and the combine of tile partials (plain and gated). The per-tile softmax
//! statistics are data (contracts/tf_softmax_stats.toml's `[kernel]`).

use super::{OpCall, OpSpec, ParamSpec, Role, TensorSpec};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const THREADS: u32 = 256;
/// `TF_COMBINE_MAX_TILES` in kernels/tf_sum_partials.hip: the tile weights live in shared memory.
pub const MAX_TILES: i64 = 1024;

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
    kernel: None,
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

const ACTIVATIONS: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
const CACHES: &[DType] = &[DType::F16, DType::Bf16];
/// `TF_SCORE_WARPS` in kernels/tf_score_keys.hip: one warp per key.
const KEYS_PER_BLOCK: i64 = 8;

/// A grid dimension from a count, refused if it does not fit.
fn grid(op: &OpCall, what: &str, count: i64) -> Result<u32, EngineError> {
    u32::try_from(count).map_err(|_| op.error(format!("{what} = {count} does not fit a grid dimension")))
}

pub const TF_SCORE_KEYS: OpSpec = OpSpec {
    name: "tf_score_keys",
    about: "Attention decode scores: scale times the dot product of each query row with each key of the cache.",
    source: Some("tf_score_keys.hip"),
    symbol: Some("tf_score_keys"),
    params: &[ParamSpec { name: "scale", integer: false, default: None }],
    symbols: &["rows", "keys", "d"],
    tensors: &[
        TensorSpec { name: "q", role: Role::Input, dtypes: ACTIVATIONS, shape: "rows, d" },
        TensorSpec { name: "k_cache", role: Role::Input, dtypes: CACHES, shape: "keys, d" },
        TensorSpec { name: "scores", role: Role::Output, dtypes: &[DType::F32], shape: "rows, keys" },
    ],
    launch: launch_score_keys,
    kernel: None,
};

fn launch_score_keys(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let keys = op.symbol("keys")?;
    let dims = LaunchDims {
        grid: [grid(op, "key blocks", (keys + KEYS_PER_BLOCK - 1) / KEYS_PER_BLOCK)?, grid(op, "rows", op.symbol("rows")?)?, 1],
        block: [THREADS, 1, 1],
        dynamic_shared: 0,
    };
    op.launch(
        dims,
        &[
            op.pointer("q")?,
            op.dtype_code("q")?,
            op.pointer("k_cache")?,
            op.dtype_code("k_cache")?,
            op.int("keys")?,
            op.int("d")?,
            op.float_param("scale")?,
            op.pointer("scores")?,
        ],
    )
}

pub const TF_APPLY_VALUES: OpSpec = OpSpec {
    name: "tf_apply_values",
    about: "Attention decode per tile of keys: the sum of exp(score - tile max) times each key's value row.",
    source: Some("tf_apply_values.hip"),
    symbol: Some("tf_apply_values"),
    params: &[],
    symbols: &["rows", "keys", "tile", "d"],
    tensors: &[
        TensorSpec { name: "scores", role: Role::Input, dtypes: &[DType::F32], shape: "rows, keys" },
        TensorSpec { name: "tile_max", role: Role::Input, dtypes: &[DType::F32], shape: "rows, ceil_div(keys, tile)" },
        TensorSpec { name: "v_cache", role: Role::Input, dtypes: CACHES, shape: "keys, d" },
        TensorSpec { name: "partials", role: Role::Output, dtypes: &[DType::F32], shape: "rows, ceil_div(keys, tile), d" },
    ],
    launch: launch_apply_values,
    kernel: None,
};

fn launch_apply_values(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let (keys, tile) = (op.symbol("keys")?, op.symbol("tile")?);
    if tile <= 0 {
        return Err(op.error(format!("tile = {tile}")));
    }
    let tiles = (keys + tile - 1) / tile;
    let dims = LaunchDims {
        grid: [grid(op, "tiles", tiles)?, grid(op, "rows", op.symbol("rows")?)?, 1],
        block: [THREADS, 1, 1],
        dynamic_shared: 0,
    };
    op.launch(
        dims,
        &[
            op.pointer("scores")?,
            op.pointer("tile_max")?,
            op.pointer("v_cache")?,
            op.dtype_code("v_cache")?,
            op.int("keys")?,
            op.int("tile")?,
            op.int("d")?,
            op.pointer("partials")?,
        ],
    )
}

pub const TF_SUM_PARTIALS_ACT: OpSpec = OpSpec {
    name: "tf_sum_partials_act",
    about: "The split-K attention decode combine, the combined row multiplied by sigmoid of a gate row.",
    source: Some("tf_sum_partials_act.hip"),
    symbol: Some("tf_sum_partials_act"),
    params: &[],
    symbols: &["rows", "tiles", "d"],
    tensors: &[
        TensorSpec { name: "partials", role: Role::Input, dtypes: &[DType::F32], shape: "rows, tiles, d" },
        TensorSpec { name: "tile_max", role: Role::Input, dtypes: &[DType::F32], shape: "rows, tiles" },
        TensorSpec { name: "tile_sum", role: Role::Input, dtypes: &[DType::F32], shape: "rows, tiles" },
        TensorSpec { name: "gate", role: Role::Input, dtypes: ACTIVATIONS, shape: "rows, d" },
        TensorSpec { name: "out", role: Role::Output, dtypes: ACTIVATIONS, shape: "rows, d" },
    ],
    launch: launch_sum_partials_act,
    kernel: None,
};

fn launch_sum_partials_act(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let tiles = op.symbol("tiles")?;
    if tiles > MAX_TILES {
        return Err(op.error(format!("{tiles} tiles (the kernel holds at most {MAX_TILES})")));
    }
    let dims = LaunchDims { grid: [grid(op, "rows", op.symbol("rows")?)?, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(
        dims,
        &[
            op.pointer("partials")?,
            op.pointer("tile_max")?,
            op.pointer("tile_sum")?,
            op.pointer("gate")?,
            op.dtype_code("gate")?,
            op.int("tiles")?,
            op.int("d")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}
