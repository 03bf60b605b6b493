//! Ops described by data rather than Rust: a contract's `[kernel]` (source, symbol, the
//! argument list in order, grid, block and dynamic shared bytes as shape expressions) and
//! `[tensors]`. One launcher reads that description, so adding such an op is a kernel file
//! and a contract. The specs live for the whole process (leaked once per contract read) and
//! are found by name beside the engine's own ops.

use std::sync::RwLock;

use super::{OpCall, OpSpec, ParamSpec, Role, TensorSpec};
use crate::backend::{LaunchDims, LaunchReport};
use crate::shape_expr::Expr;
use crate::{DType, EngineError};

/// One argument of the kernel, in its parameter order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArgSpec {
    /// `a`: the tensor's device address.
    Tensor(String),
    /// `dtype(a)`: the tensor's dtype code as an `int` (0 f32, 1 f16, 2 bf16, ...).
    Dtype(String),
    /// `int(rows * k)`: a shape expression as an `int` (refused if it does not fit).
    Int(Expr),
    /// `long(rows * k)`: a shape expression as a `long long`.
    Long(Expr),
    /// `param(eps)`: a scalar parameter of the op, as a `float` or an `int` by its kind.
    Param(String),
}

impl KernelArgSpec {
    /// `a`, `dtype(a)`, `int(rows * k)`, `long(rows * k)`.
    pub fn parse(text: &str) -> Result<KernelArgSpec, String> {
        let text = text.trim();
        let inner = |prefix: &str| text.strip_prefix(prefix).and_then(|r| r.strip_suffix(')')).map(str::trim);
        if let Some(tensor) = inner("dtype(") {
            return identifier(tensor).map(|t| KernelArgSpec::Dtype(t.to_string()));
        }
        if let Some(param) = inner("param(") {
            return identifier(param).map(|p| KernelArgSpec::Param(p.to_string()));
        }
        for (prefix, wide) in [("int(", false), ("long(", true)] {
            if let Some(expression) = inner(prefix) {
                let expr = Expr::parse(expression).map_err(|e| e.to_string())?;
                return Ok(if wide { KernelArgSpec::Long(expr) } else { KernelArgSpec::Int(expr) });
            }
        }
        identifier(text).map(|t| KernelArgSpec::Tensor(t.to_string())).map_err(|_| {
            format!(
                "`{text}` is no kernel argument (a tensor's name, `dtype(tensor)`, `int(expression)`, `long(expression)` or \
                 `param(name)`)"
            )
        })
    }

    /// The tensor it names, if any.
    pub fn tensor(&self) -> Option<&str> {
        match self {
            KernelArgSpec::Tensor(t) | KernelArgSpec::Dtype(t) => Some(t),
            _ => None,
        }
    }

    fn symbols(&self) -> Vec<&str> {
        match self {
            KernelArgSpec::Int(e) | KernelArgSpec::Long(e) => e.symbols(),
            _ => Vec::new(),
        }
    }
}

/// A C identifier: what tensor, parameter, op and kernel names must be.
pub fn is_identifier(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn identifier(text: &str) -> Result<&str, String> {
    if is_identifier(text) { Ok(text) } else { Err(format!("`{text}` is not a name")) }
}

/// How the kernel of a data op is launched.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSpec {
    pub args: Vec<KernelArgSpec>,
    /// One to three dimensions each; missing ones are 1.
    pub grid: Vec<Expr>,
    pub block: Vec<Expr>,
    pub dynamic_shared: Option<Expr>,
}

impl KernelSpec {
    /// Every symbol the launch reads, in order of first use.
    fn symbols(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let all = self.args.iter().flat_map(KernelArgSpec::symbols).chain(self.grid.iter().chain(&self.block).flat_map(Expr::symbols));
        for s in all.chain(self.dynamic_shared.iter().flat_map(Expr::symbols)) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

/// A tensor of a data op as its contract gives it.
#[derive(Clone, Debug)]
pub struct DataTensor {
    pub name: String,
    pub role: Role,
    pub dtypes: Vec<DType>,
    pub shape: String,
}

/// Everything a data op is; [`define`] makes it an [`OpSpec`].
#[derive(Clone, Debug)]
pub struct DataOp {
    pub name: String,
    pub about: String,
    /// The kernel source, in the kernels folder.
    pub source: String,
    pub symbol: String,
    pub tensors: Vec<DataTensor>,
    /// Scalar parameters: name, whether an `int` (else a `float`), and the value when a
    /// contract gives none.
    pub params: Vec<(String, bool, Option<f64>)>,
    pub kernel: KernelSpec,
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

static DEFINED: RwLock<Vec<&'static OpSpec>> = RwLock::new(Vec::new());

/// The spec of `op`, found by [`super::find`] from now on (a later definition of the same
/// name replaces an earlier one: the last contract read for it wins). The shape symbols are
/// every symbol the tensors' shapes and the launch read, in that order of first use.
/// Refused for a name the engine's own ops have.
pub fn define(op: DataOp) -> Result<&'static OpSpec, EngineError> {
    if super::registry().iter().any(|o| o.name == op.name) {
        return Err(EngineError::Op {
            op: op.name.clone(),
            reason: "is an op of the engine with a launcher of its own; a contract with [kernel] names an op of its own".into(),
        });
    }
    let mut symbols: Vec<&'static str> = Vec::new();
    let shapes: Vec<crate::shape_expr::ShapeExpr> =
        op.tensors.iter().map(|t| crate::shape_expr::ShapeExpr::parse(&t.shape)).collect::<Result<_, _>>()?;
    for s in shapes.iter().flat_map(|s| s.symbols()).chain(op.kernel.symbols()) {
        if !symbols.contains(&s) {
            symbols.push(leak(s));
        }
    }
    let tensors: Vec<TensorSpec> = op
        .tensors
        .iter()
        .map(|t| TensorSpec {
            name: leak(&t.name),
            role: t.role,
            dtypes: Box::leak(t.dtypes.clone().into_boxed_slice()),
            shape: leak(&t.shape),
        })
        .collect();
    let spec: &'static OpSpec = Box::leak(Box::new(OpSpec {
        name: leak(&op.name),
        about: leak(&op.about),
        source: Some(leak(&op.source)),
        symbol: Some(leak(&op.symbol)),
        symbols: Box::leak(symbols.into_boxed_slice()),
        params: Box::leak(
            op.params.iter().map(|(name, integer, default)| ParamSpec { name: leak(name), integer: *integer, default: *default }).collect(),
        ),
        tensors: Box::leak(tensors.into_boxed_slice()),
        launch,
        kernel: Some(Box::leak(Box::new(op.kernel))),
    }));
    let mut defined = DEFINED.write().unwrap_or_else(|p| p.into_inner());
    defined.retain(|o| o.name != spec.name);
    defined.push(spec);
    Ok(spec)
}

/// The data ops defined so far, in the order they were.
pub fn defined() -> Vec<&'static OpSpec> {
    DEFINED.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The launcher of every data op: its `[kernel]` evaluated for the call's shape symbols.
pub fn launch(call: &OpCall) -> Result<LaunchReport, EngineError> {
    let spec = call.op.kernel.ok_or_else(|| call.error("has no [kernel] description"))?;
    let value = |e: &Expr, what: &str| e.evaluate(call.symbols).map_err(|m| call.error(format!("{what} `{e}`: {m}")));
    let dimensions = |dims: &[Expr], what: &str| -> Result<[u32; 3], EngineError> {
        let mut out = [1u32; 3];
        for (i, e) in dims.iter().enumerate().take(3) {
            let v = value(e, what)?;
            out[i] =
                u32::try_from(v).ok().filter(|v| *v > 0).ok_or_else(|| call.error(format!("{what} `{e}` = {v} is not 1 to 2^32 - 1")))?;
        }
        Ok(out)
    };
    let dynamic_shared = match &spec.dynamic_shared {
        Some(e) => {
            let v = value(e, "kernel.shared")?;
            u32::try_from(v).map_err(|_| call.error(format!("kernel.shared `{e}` = {v} is not a byte count")))?
        }
        None => 0,
    };
    let dims = LaunchDims { grid: dimensions(&spec.grid, "kernel.grid")?, block: dimensions(&spec.block, "kernel.block")?, dynamic_shared };
    let mut args = Vec::with_capacity(spec.args.len());
    for arg in &spec.args {
        args.push(match arg {
            KernelArgSpec::Tensor(t) => call.pointer(t)?,
            KernelArgSpec::Dtype(t) => call.dtype_code(t)?,
            KernelArgSpec::Int(e) => {
                let v = value(e, "kernel.args")?;
                crate::backend::KernelArg::I32(
                    i32::try_from(v).map_err(|_| call.error(format!("`int({e})` = {v} does not fit a kernel int")))?,
                )
            }
            KernelArgSpec::Long(e) => crate::backend::KernelArg::I64(value(e, "kernel.args")?),
            KernelArgSpec::Param(p) => match call.op.param(p) {
                Some(spec) if spec.integer => call.int_param(p)?,
                Some(_) => call.float_param(p)?,
                None => return Err(call.error(format!("`param({p})`: no parameter `{p}`"))),
            },
        });
    }
    call.launch(dims, &args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_arguments_parse_as_tensors_dtype_codes_and_shape_expressions() {
        assert_eq!(KernelArgSpec::parse("a").unwrap(), KernelArgSpec::Tensor("a".into()));
        assert_eq!(KernelArgSpec::parse(" dtype(out) ").unwrap(), KernelArgSpec::Dtype("out".into()));
        assert_eq!(KernelArgSpec::parse("int(rows * k)").unwrap(), KernelArgSpec::Int(Expr::parse("rows * k").unwrap()));
        assert_eq!(KernelArgSpec::parse("long(rows)").unwrap(), KernelArgSpec::Long(Expr::parse("rows").unwrap()));
        assert_eq!(KernelArgSpec::parse("param(eps)").unwrap(), KernelArgSpec::Param("eps".into()));
        assert!(KernelArgSpec::parse("float(eps)").unwrap_err().contains("is no kernel argument"));
        assert!(KernelArgSpec::parse("int(rows *)").is_err());
        assert!(KernelArgSpec::parse("dtype(a b)").is_err());
    }

    #[test]
    fn a_data_op_takes_its_symbols_from_shapes_then_launch_and_cannot_shadow_an_engine_op() {
        let op = |name: &str| DataOp {
            name: name.into(),
            about: "x".into(),
            source: "x.hip".into(),
            symbol: "x".into(),
            tensors: vec![DataTensor { name: "x".into(), role: Role::Input, dtypes: vec![DType::F32], shape: "rows, k".into() }],
            params: vec![("eps".into(), false, Some(1e-6))],
            kernel: KernelSpec {
                args: vec![KernelArgSpec::Tensor("x".into()), KernelArgSpec::Int(Expr::parse("rows * k * width").unwrap())],
                grid: vec![Expr::parse("ceil_div(rows * k, tile)").unwrap()],
                block: vec![Expr::parse("256").unwrap()],
                dynamic_shared: None,
            },
        };
        let spec = define(op("data_op_test")).unwrap();
        assert_eq!(spec.symbols, ["rows", "k", "width", "tile"]);
        assert_eq!((spec.params[0].name, spec.params[0].integer, spec.params[0].default), ("eps", false, Some(1e-6)));
        assert!(std::ptr::eq(super::super::find("data_op_test").unwrap(), spec));
        let again = define(op("data_op_test")).unwrap();
        assert!(std::ptr::eq(super::super::find("data_op_test").unwrap(), again), "the later definition wins");
        let shadow = define(op(super::super::registry()[0].name)).unwrap_err().to_string();
        assert!(shadow.contains("is an op of the engine"), "{shadow}");
    }
}
