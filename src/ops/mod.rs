//! The engine's ops: each op's tensor signature (names, roles, allowed dtypes, shapes over
//! named symbols), its kernel source and symbol, and its launcher. Every op with a kernel of
//! its own is data (its contract's `[kernel]`, one launcher in [`data`]); a Rust launcher
//! remains only where a library call is made (the BLAS projection). The harness launches
//! every kernel through these launchers, so what is verified is what ships.

pub mod data;
mod projection;
pub mod tables;

use std::collections::BTreeMap;

use crate::backend::{Backend, KernelArg, LaunchDims, LaunchReport, Module, Schedule, WatchedTensor};
use crate::shape_expr::Symbols;
use crate::tensor::Tensor;
use crate::{DType, EngineError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Input,
    Output,
}

#[derive(Debug)]
pub struct TensorSpec {
    pub name: &'static str,
    pub role: Role,
    pub dtypes: &'static [DType],
    /// Dimensions as shape expressions over the op's symbols (`rows, ceil_div(keys, tile)`).
    pub shape: &'static str,
}

/// A scalar parameter of an op that is not a shape (`eps`, `theta`, a layout switch).
#[derive(Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    /// Integer parameters must be whole numbers that fit an `int`.
    pub integer: bool,
    /// Used when a contract gives none.
    pub default: Option<f64>,
    /// The values the kernel takes: each limit must hold.
    pub limits: &'static [ParamLimit],
}

/// A limit on a parameter's value (`layout` one of 0 and 1, `theta` above 1).
#[derive(Clone, Debug, PartialEq)]
pub enum ParamLimit {
    OneOf(Vec<f64>),
    Min(f64),
    Max(f64),
    Above(f64),
    Below(f64),
}

impl ParamLimit {
    /// Its key in a contract's parameter table (`values`, `min`, `max`, `above`, `below`).
    pub fn key(&self) -> &'static str {
        match self {
            ParamLimit::OneOf(_) => "values",
            ParamLimit::Min(_) => "min",
            ParamLimit::Max(_) => "max",
            ParamLimit::Above(_) => "above",
            ParamLimit::Below(_) => "below",
        }
    }

    fn admits(&self, value: f64) -> bool {
        match self {
            ParamLimit::OneOf(values) => values.contains(&value),
            ParamLimit::Min(min) => value >= *min,
            ParamLimit::Max(max) => value <= *max,
            ParamLimit::Above(low) => value > *low,
            ParamLimit::Below(high) => value < *high,
        }
    }
}

impl std::fmt::Display for ParamLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamLimit::OneOf(values) => {
                let values: Vec<String> = values.iter().map(f64::to_string).collect();
                write!(f, "one of {}", values.join(", "))
            }
            ParamLimit::Min(min) => write!(f, "at least {min}"),
            ParamLimit::Max(max) => write!(f, "at most {max}"),
            ParamLimit::Above(low) => write!(f, "above {low}"),
            ParamLimit::Below(high) => write!(f, "below {high}"),
        }
    }
}

impl ParamSpec {
    /// Whether the kernel takes `value` ([`check_param`]).
    pub fn check(&self, value: f64) -> Result<(), String> {
        check_param(self.name, self.integer, self.limits, value)
    }
}

/// Whether a parameter's kernel takes `value`: finite, a whole number that fits an `int` for
/// an integer parameter, and within every limit. A refusal names the parameter, the value and
/// the limit (`parameter `theta` = 1 is not above 1 (its `above`)`).
pub fn check_param(name: &str, integer: bool, limits: &[ParamLimit], value: f64) -> Result<(), String> {
    if !value.is_finite() {
        return Err(format!("parameter `{name}` = {value} is not finite"));
    }
    if integer && (value.fract() != 0.0 || value < i32::MIN as f64 || value > i32::MAX as f64) {
        return Err(format!("parameter `{name}` = {value} is not a whole number that fits an int"));
    }
    match limits.iter().find(|limit| !limit.admits(value)) {
        Some(limit) => Err(format!("parameter `{name}` = {value} is not {limit} (its `{}`)", limit.key())),
        None => Ok(()),
    }
}

pub type Launcher = fn(&OpCall) -> Result<LaunchReport, EngineError>;

/// The grid and block a launch of the op uses for these shape symbols and parameters,
/// without launching (the static limits path takes its `threads` figure from it).
pub type Dims = fn(&OpSpec, &Symbols, &BTreeMap<String, f64>) -> Result<LaunchDims, EngineError>;

pub struct OpSpec {
    pub name: &'static str,
    pub about: &'static str,
    /// Source file under `kernels/` and its kernel symbol; none for ops served by a
    /// library (BLAS), whose launchers call the backend directly.
    pub source: Option<&'static str>,
    pub symbol: Option<&'static str>,
    /// Shape symbols every call must give.
    pub symbols: &'static [&'static str],
    pub params: &'static [ParamSpec],
    pub tensors: &'static [TensorSpec],
    pub launch: Launcher,
    pub dims: Dims,
    /// How a data op's kernel is launched (its contract's `[kernel]`); none for an op whose
    /// launcher is Rust.
    pub kernel: Option<&'static data::KernelSpec>,
}

impl std::fmt::Debug for OpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpSpec").field("name", &self.name).field("source", &self.source).finish_non_exhaustive()
    }
}

impl OpSpec {
    pub fn tensor(&self, name: &str) -> Option<&TensorSpec> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The symbol of the kernel a launch runs: the op's own, or for an op a library serves,
    /// the op's name (a control's planted kernel, see `projection`).
    pub fn kernel_symbol(&self) -> &'static str {
        self.symbol.unwrap_or(self.name)
    }
}

/// Everything a launcher needs: the backend, the op's module, symbol and parameter values,
/// and the tensors by name.
pub struct OpCall<'a> {
    pub op: &'a OpSpec,
    pub backend: &'a dyn Backend,
    /// The op's compiled kernel source: none for a library op, unless a control plants a
    /// kernel in place of the library call.
    pub module: Option<&'a dyn Module>,
    pub symbols: &'a Symbols,
    pub params: &'a BTreeMap<String, f64>,
    pub tensors: &'a BTreeMap<String, Tensor>,
    pub schedule: Schedule,
}

impl OpCall<'_> {
    fn error(&self, reason: impl Into<String>) -> EngineError {
        EngineError::Op { op: self.op.name.to_string(), reason: reason.into() }
    }

    pub fn tensor(&self, name: &str) -> Result<&Tensor, EngineError> {
        self.tensors.get(name).ok_or_else(|| self.error(format!("no tensor `{name}` given")))
    }

    pub fn pointer(&self, name: &str) -> Result<KernelArg, EngineError> {
        Ok(KernelArg::Pointer(self.tensor(name)?.device_address()))
    }

    /// The tensor's dtype code (0 f32, 1 f16, 2 bf16) as the kernel takes it.
    pub fn dtype_code(&self, name: &str) -> Result<KernelArg, EngineError> {
        Ok(KernelArg::I32(self.tensor(name)?.dtype.kernel_code()?))
    }

    pub fn symbol(&self, name: &str) -> Result<i64, EngineError> {
        self.symbols.get(name).copied().ok_or_else(|| self.error(format!("shape symbol `{name}` not given")))
    }

    /// A symbol passed to a kernel as `int`: refused if it does not fit.
    pub fn int(&self, name: &str) -> Result<KernelArg, EngineError> {
        let v = self.symbol(name)?;
        i32::try_from(v).map(KernelArg::I32).map_err(|_| self.error(format!("`{name}` = {v} does not fit a kernel int")))
    }

    /// A parameter's value: the call's, else the op's default.
    pub fn param(&self, name: &str) -> Result<f64, EngineError> {
        match self.params.get(name) {
            Some(v) => Ok(*v),
            None => self.op.param(name).and_then(|p| p.default).ok_or_else(|| self.error(format!("parameter `{name}` not given"))),
        }
    }

    /// Launches the op's kernel through its module. A library op has no kernel of its own;
    /// a control's kernel for one is named after the op.
    pub fn run_kernel(&self, dims: LaunchDims, args: &[KernelArg]) -> Result<LaunchReport, EngineError> {
        self.run_kernel_reading(dims, args, &[])
    }

    /// [`OpCall::run_kernel`] with tensors of the engine's own that the kernel reads beside the
    /// call's (a data op's derived tensors): watched as inputs, so a read past one or a store
    /// into one is seen as for any input.
    pub fn run_kernel_reading(
        &self,
        dims: LaunchDims,
        args: &[KernelArg],
        engine_tensors: &[(&str, Tensor)],
    ) -> Result<LaunchReport, EngineError> {
        let Some(module) = self.module else {
            return Err(self.error("no kernel module to launch"));
        };
        let watched: Vec<WatchedTensor> = self
            .tensors
            .iter()
            .map(|(name, tensor)| tensor.watched(name, self.op.tensor(name).is_none_or(|spec| spec.role == Role::Output)))
            .chain(engine_tensors.iter().map(|(name, tensor)| tensor.watched(name, false)))
            .collect();
        module.launch_watched(self.op.kernel_symbol(), dims, self.schedule, args, &watched)
    }
}

/// The ops whose launchers are Rust: those a library serves.
pub fn registry() -> &'static [OpSpec] {
    static OPS: &[OpSpec] = &[projection::PROJECTION_BF16];
    OPS
}

/// An op by name: the engine's own, else one a contract defined as data ([`data::define`]).
pub fn find(name: &str) -> Option<&'static OpSpec> {
    registry().iter().find(|op| op.name == name).or_else(|| data::defined().into_iter().find(|op| op.name == name))
}

/// The engine's own ops, then the data ops defined so far.
pub fn all() -> Vec<&'static OpSpec> {
    registry().iter().chain(data::defined()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape_expr::ShapeExpr;

    #[test]
    fn every_signature_parses_and_uses_only_declared_symbols() {
        for op in registry() {
            for tensor in op.tensors {
                let shape = ShapeExpr::parse(tensor.shape).unwrap();
                for symbol in shape.symbols() {
                    assert!(op.symbols.contains(&symbol), "{}: {} uses `{symbol}`", op.name, tensor.name);
                }
            }
            assert!(op.tensors.iter().any(|t| t.role == Role::Output), "{} has no output", op.name);
        }
    }
}
