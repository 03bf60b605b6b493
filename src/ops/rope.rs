//! `tf_rope`: rotary position embedding at given positions, in the neox (half-split) or the
//! interleaved layout.

use super::{OpCall, OpSpec, ParamSpec, Role, TensorSpec, blocks_for};
use crate::backend::{KernelArg, LaunchDims, LaunchReport};
use crate::tensor::Tensor;
use crate::{DType, EngineError};

const FLOATS: &[DType] = &[DType::F32, DType::F16, DType::Bf16];
const THREADS: u32 = 256;

pub const TF_ROPE: OpSpec = OpSpec {
    name: "tf_rope",
    about: "Rotary position embedding at given positions; layout 0 = neox half-split, 1 = interleaved pairs.",
    source: Some("tf_rope.hip"),
    symbol: Some("tf_rope"),
    params: &[
        ParamSpec { name: "theta", integer: false, default: Some(10000.0) },
        ParamSpec { name: "layout", integer: true, default: Some(0.0) },
    ],
    symbols: &["rows", "heads", "d"],
    tensors: &[
        TensorSpec { name: "x", role: Role::Input, dtypes: FLOATS, shape: "rows, heads, d" },
        TensorSpec { name: "positions", role: Role::Input, dtypes: &[DType::I32], shape: "rows" },
        TensorSpec { name: "out", role: Role::Output, dtypes: FLOATS, shape: "rows, heads, d" },
    ],
    launch,
    kernel: None,
};

/// The inverse frequencies theta^(-2i / d), i < d / 2, in turns per position (divided by
/// 2 pi), computed in f64 and rounded to f32: the engine computes them on the host, so every
/// backend rotates by the same f32 angles (in turns, which the kernel reduces exactly).
pub fn turns_per_position(theta: f64, d: usize) -> Vec<f32> {
    (0..d / 2).map(|i| (theta.powf(-((2 * i) as f64) / d as f64) / std::f64::consts::TAU) as f32).collect()
}

fn launch(op: &OpCall) -> Result<LaunchReport, EngineError> {
    let (theta, layout, d) = (op.param("theta")?, op.param("layout")?, op.symbol("d")?);
    if !(theta.is_finite() && theta > 1.0) {
        return Err(op.error(format!("theta = {theta} (it must be finite and above 1)")));
    }
    if layout != 0.0 && layout != 1.0 {
        return Err(op.error(format!("layout = {layout} (0 = neox half-split, 1 = interleaved)")));
    }
    if d % 2 != 0 {
        return Err(op.error(format!("d = {d} is odd: rotary pairs need an even head size")));
    }
    // a small table per launch; the launch returns when the kernel is done with it
    let table: Vec<u8> = turns_per_position(theta, d as usize).iter().flat_map(|f| f.to_le_bytes()).collect();
    let mut turns = Tensor::allocate(op.backend, DType::F32, &[d as usize / 2])?;
    turns.write(&table)?;
    let pairs = op.symbol("rows")?.checked_mul(op.symbol("heads")?).and_then(|v| v.checked_mul(d / 2)).unwrap_or(i64::MAX);
    let dims = LaunchDims { grid: [blocks_for(op, pairs, THREADS)?, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(
        dims,
        &[
            op.pointer("x")?,
            op.dtype_code("x")?,
            op.pointer("positions")?,
            KernelArg::Pointer(turns.device_address()),
            op.int("rows")?,
            op.int("heads")?,
            op.int("d")?,
            op.int_param("layout")?,
            op.pointer("out")?,
            op.dtype_code("out")?,
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_per_position_by_hand() {
        let tau = std::f64::consts::TAU;
        assert_eq!(turns_per_position(10000.0, 4), vec![(1.0 / tau) as f32, (0.01 / tau) as f32]);
        let f = turns_per_position(500000.0, 128);
        assert_eq!(f.len(), 64);
        assert!(f.windows(2).all(|w| w[1] < w[0]), "falling frequencies");
    }
}
