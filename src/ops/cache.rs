//! `tf_kv_append`: new K and V rows written into a paged KV cache at given slots.

use super::{OpCall, OpSpec, Role, TensorSpec};
use crate::backend::{LaunchDims, LaunchReport};
use crate::{DType, EngineError};

const ACTIVATIONS: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
const CACHES: &[DType] = &[DType::F16, DType::Bf16];
/// `TF_APPEND_THREADS` in kernels/tf_kv_append.hip.
const THREADS: u32 = 64;

/// The cache is an input (`*_cache_in`) and an output (`*_cache`) of the same shape: the
/// harness poisons outputs before each launch, so the op copies the untouched rows and
/// scatters the new ones, writing every element once. Writing the whole cache keeps the
/// guard band right after the last page, where a write into "the next page" lands.
pub const TF_KV_APPEND: OpSpec = OpSpec {
    name: "tf_kv_append",
    about: "New K and V rows written into a paged KV cache at given slots (negative slots are padding).",
    source: Some("tf_kv_append.hip"),
    symbol: Some("tf_kv_append"),
    params: &[],
    symbols: &["n", "pages", "page_size", "d"],
    tensors: &[
        TensorSpec { name: "k_new", role: Role::Input, dtypes: ACTIVATIONS, shape: "n, d" },
        TensorSpec { name: "v_new", role: Role::Input, dtypes: ACTIVATIONS, shape: "n, d" },
        TensorSpec { name: "slots", role: Role::Input, dtypes: &[DType::I32], shape: "n" },
        TensorSpec { name: "k_cache_in", role: Role::Input, dtypes: CACHES, shape: "pages, page_size, d" },
        TensorSpec { name: "v_cache_in", role: Role::Input, dtypes: CACHES, shape: "pages, page_size, d" },
        TensorSpec { name: "k_cache", role: Role::Output, dtypes: CACHES, shape: "pages, page_size, d" },
        TensorSpec { name: "v_cache", role: Role::Output, dtypes: CACHES, shape: "pages, page_size, d" },
    ],
    launch,
    kernel: None,
};

fn launch(op: &OpCall) -> Result<LaunchReport, EngineError> {
    for (given, returned) in [("k_cache_in", "k_cache"), ("v_cache_in", "v_cache")] {
        let (a, b) = (op.tensor(given)?.dtype, op.tensor(returned)?.dtype);
        if a != b {
            return Err(op.error(format!("`{given}` is {a} but `{returned}` is {b}: the cache keeps its type")));
        }
    }
    let cache_rows = op.symbol("pages")?.checked_mul(op.symbol("page_size")?).unwrap_or(i64::MAX);
    let blocks = cache_rows.checked_add(op.symbol("n")?).unwrap_or(i64::MAX);
    let grid_x = u32::try_from(blocks).map_err(|_| op.error(format!("{blocks} blocks (cache rows plus new rows) do not fit a grid")))?;
    let dims = LaunchDims { grid: [grid_x, 2, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(
        dims,
        &[
            op.pointer("k_new")?,
            op.dtype_code("k_new")?,
            op.pointer("v_new")?,
            op.dtype_code("v_new")?,
            op.pointer("slots")?,
            op.int("n")?,
            op.pointer("k_cache_in")?,
            op.pointer("v_cache_in")?,
            op.int("pages")?,
            op.int("page_size")?,
            op.int("d")?,
            op.pointer("k_cache")?,
            op.dtype_code("k_cache")?,
            op.pointer("v_cache")?,
            op.dtype_code("v_cache")?,
        ],
    )
}
