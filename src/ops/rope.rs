//! `tf_rope`: rotary position embedding at given positions, in the neox (half-split) or the
//! interleaved layout.

use super::{OpCall, OpSpec, ParamSpec, Role, TensorSpec, blocks_for};
use crate::backend::{LaunchDims, LaunchReport};
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
};

/// The inverse frequencies theta^(-2i / d), i < d / 2, computed in f64 and rounded to f32:
/// the engine computes them on the host, so every backend rotates by the same f32 angles.
pub fn inverse_frequencies(theta: f64, d: usize) -> Vec<f32> {
    (0..d / 2).map(|i| theta.powf(-((2 * i) as f64) / d as f64) as f32).collect()
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
    let table: Vec<u8> = inverse_frequencies(theta, d as usize).iter().flat_map(|f| f.to_le_bytes()).collect();
    let mut inv_freq = Tensor::allocate(op.backend, DType::F32, &[d as usize / 2])?;
    inv_freq.write(&table)?;
    let pairs = op.symbol("rows")?.checked_mul(op.symbol("heads")?).and_then(|v| v.checked_mul(d / 2)).unwrap_or(i64::MAX);
    let dims = LaunchDims { grid: [blocks_for(op, pairs, THREADS)?, 1, 1], block: [THREADS, 1, 1], dynamic_shared: 0 };
    op.launch(
        dims,
        &[
            op.pointer("x")?,
            op.dtype_code("x")?,
            op.pointer("positions")?,
            crate::backend::KernelArg::Pointer(inv_freq.device_address()),
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
    fn inverse_frequencies_by_hand() {
        assert_eq!(inverse_frequencies(10000.0, 4), vec![1.0, 0.01]);
        let f = inverse_frequencies(500000.0, 128);
        assert_eq!(f.len(), 64);
        assert_eq!(f[0], 1.0);
        assert!(f.windows(2).all(|w| w[1] < w[0]), "falling frequencies");
    }
}
