//! Ops described by data rather than Rust: a contract's `[kernel]` (source, symbol, the
//! argument list in order, grid, block and dynamic shared bytes as shape expressions, the
//! conditions the kernel needs of its shapes and parameters, the tensors that must share a
//! dtype, and tensors the engine computes for it) and `[tensors]`. One launcher reads that
//! description, so adding such an op is a kernel file and a contract. The specs live for the
//! whole process (leaked once per contract read) and are found by name beside the engine's
//! own ops.

use std::collections::BTreeMap;
use std::sync::{Mutex, RwLock};

use super::tables::Table;
use super::{OpCall, OpSpec, ParamLimit, ParamSpec, Role, TensorSpec};
use crate::backend::{KernelArg, LaunchDims, LaunchReport};
use crate::shape_expr::{Condition, Expr, ShapeExpr, Symbols};
use crate::tensor::Tensor;
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

/// A tensor the engine computes for the kernel from the op's parameters and shape symbols,
/// with a table of its own ([`super::tables`]): no caller gives it, every backend gets the
/// same bits (`turns = { role = "derived", dtypes = ["f32"], shape = "d / 2", from =
/// "rope_turns(theta, d)" }`).
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedTensor {
    pub name: String,
    pub dtype: DType,
    pub shape: ShapeExpr,
    pub table: &'static Table,
    /// The table's arguments in order: a parameter's name alone passes its value; any other
    /// is a shape expression.
    pub args: Vec<Expr>,
}

impl DerivedTensor {
    /// `rope_turns(theta, d)`: a table of the engine, called with as many arguments as it takes.
    pub fn parse_from(text: &str) -> Result<(&'static Table, Vec<Expr>), String> {
        let text = text.trim();
        let call = text.split_once('(').and_then(|(name, rest)| Some((name.trim(), rest.strip_suffix(')')?)));
        let (name, inner) = call.ok_or_else(|| format!("`{text}` is no table call: `name(argument, ...)`"))?;
        let table = super::tables::find(name)
            .ok_or_else(|| format!("unknown table `{name}` (the engine computes {})", super::tables::known().join(", ")))?;
        let args = ShapeExpr::parse(inner).map_err(|e| e.to_string())?.dims;
        if args.len() != table.args.len() {
            return Err(format!("{table:?} takes {} arguments, not {}", table.args.len(), args.len()));
        }
        Ok((table, args))
    }

    /// The tensor for one launch: its shape's elements, from its table, in its dtype.
    fn build(&self, call: &OpCall, values: &Symbols, params: &BTreeMap<String, f64>) -> Result<Tensor, EngineError> {
        let what = |m: String| call.error(format!("derived tensor `{}`: {m}", self.name));
        let shape = self.shape.evaluate(values).map_err(what)?;
        let mut args = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            args.push(match arg {
                Expr::Symbol(p) if params.contains_key(p) => params[p],
                e => e.evaluate(values).map_err(|m| what(format!("`{e}`: {m}")))? as f64,
            });
        }
        let data = self.table.compute(&args).map_err(what)?;
        let elements: usize = shape.iter().product();
        if data.len() != elements {
            let message = format!("{:?} gives {} values, its shape `{}` holds {elements}", self.table, data.len(), self.shape.text);
            return Err(what(message));
        }
        let size = self.dtype.size();
        let mut bytes = vec![0u8; elements * size];
        for (value, out) in data.iter().zip(bytes.chunks_exact_mut(size)) {
            self.dtype.encode(*value, out);
        }
        // a small table per launch; the launch returns when the kernel is done with it
        let mut tensor = Tensor::allocate(call.backend, self.dtype, &shape)?;
        tensor.write(&bytes)?;
        Ok(tensor)
    }
}

/// How the kernel of a data op is launched, and what it needs of a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSpec {
    pub args: Vec<KernelArgSpec>,
    /// One to three dimensions each; missing ones are 1.
    pub grid: Vec<Expr>,
    pub block: Vec<Expr>,
    pub dynamic_shared: Option<Expr>,
    /// Conditions on the shape symbols and integer parameters (`tiles <= 1024`): a launch
    /// where one does not hold is refused, naming it and the values.
    pub requires: Vec<Condition>,
    /// Groups of tensors that must share one dtype (a cache given in and returned).
    pub same_dtype: Vec<Vec<String>>,
    pub derived: Vec<DerivedTensor>,
}

/// What a launch asks of a data op's kernel that the kernel does not take, naming the
/// contract's key that says so.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unmet {
    /// A parameter missing, or outside what its kind and limits allow.
    #[error("{message}")]
    Param { name: String, message: String },
    #[error("kernel.same_dtype[{index}]: {message}")]
    SameDtype { index: usize, message: String },
    #[error("kernel.requires[{index}]: {message}")]
    Requires { index: usize, message: String },
}

impl KernelSpec {
    /// Every name its integer expressions read, in order of first use: shape symbols and
    /// integer parameters. A table argument that is a parameter's name alone passes that
    /// parameter's value and reads nothing.
    fn reads<'a>(&'a self, params: &[&str]) -> Vec<&'a str> {
        let mut out: Vec<&str> = Vec::new();
        let args = self.args.iter().flat_map(KernelArgSpec::symbols);
        let dims = self.grid.iter().chain(&self.block).chain(&self.dynamic_shared).flat_map(Expr::symbols);
        let requires = self.requires.iter().flat_map(Condition::symbols);
        let derived = self.derived.iter().flat_map(|d| {
            let table_args = d.args.iter().filter(|a| !matches!(a, Expr::Symbol(s) if params.contains(&s.as_str())));
            d.shape.symbols().into_iter().chain(table_args.flat_map(Expr::symbols))
        });
        for s in args.chain(dims).chain(requires).chain(derived) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// Each group of `same_dtype` has one dtype (`dtype` gives a tensor's; one not given is
    /// left to the launch, which refuses it).
    pub fn check_dtypes(&self, dtype: impl Fn(&str) -> Option<DType>) -> Result<(), Unmet> {
        for (index, group) in self.same_dtype.iter().enumerate() {
            let given: Vec<(&str, DType)> = group.iter().filter_map(|t| dtype(t).map(|d| (t.as_str(), d))).collect();
            if let Some((first, other)) = given.first().zip(given.iter().find(|(_, d)| *d != given[0].1)) {
                let message = format!("`{}` is {} but `{}` is {}: they take one dtype", first.0, first.1, other.0, other.1);
                return Err(Unmet::SameDtype { index, message });
            }
        }
        Ok(())
    }

    /// Every condition of `requires` holds for these values ([`expression_values`]).
    pub fn check_requires(&self, values: &Symbols) -> Result<(), Unmet> {
        for (index, condition) in self.requires.iter().enumerate() {
            condition.check(values).map_err(|message| Unmet::Requires { index, message })?;
        }
        Ok(())
    }

    /// The grid, block and dynamic shared bytes for these values; a dimension that does not
    /// fit is refused, naming it.
    pub fn dims(&self, values: &Symbols) -> Result<LaunchDims, String> {
        let dimensions = |dims: &[Expr], key: &str| -> Result<[u32; 3], String> {
            let mut out = [1u32; 3];
            for (i, e) in dims.iter().enumerate().take(3) {
                let v = e.evaluate(values).map_err(|m| format!("{key}[{i}] `{e}`: {m}"))?;
                out[i] = u32::try_from(v)
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| format!("{key}[{i}] `{e}` = {v} does not fit a launch dimension (1 to 2^32 - 1)"))?;
            }
            Ok(out)
        };
        let dynamic_shared = match &self.dynamic_shared {
            Some(e) => {
                let v = e.evaluate(values).map_err(|m| format!("kernel.shared `{e}`: {m}"))?;
                u32::try_from(v).map_err(|_| format!("kernel.shared `{e}` = {v} is not a byte count (0 to 2^32 - 1)"))?
            }
            None => 0,
        };
        Ok(LaunchDims { grid: dimensions(&self.grid, "kernel.grid")?, block: dimensions(&self.block, "kernel.block")?, dynamic_shared })
    }
}

/// Every parameter's value for a launch: the one given, else the default; each one the
/// kernel takes ([`ParamSpec::check`]).
pub fn param_values(op: &OpSpec, given: &BTreeMap<String, f64>) -> Result<BTreeMap<String, f64>, Unmet> {
    let mut out = BTreeMap::new();
    for p in op.params {
        let unmet = |message: String| Unmet::Param { name: p.name.to_string(), message };
        let value = given.get(p.name).copied().or(p.default).ok_or_else(|| unmet(format!("parameter `{}` not given", p.name)))?;
        p.check(value).map_err(unmet)?;
        out.insert(p.name.to_string(), value);
    }
    Ok(out)
}

/// What the launch's shape expressions read: the shape symbols, and the integer parameters
/// (`start + width <= k`).
pub fn expression_values(op: &OpSpec, symbols: &Symbols, params: &BTreeMap<String, f64>) -> Symbols {
    let mut values = symbols.clone();
    for p in op.params.iter().filter(|p| p.integer) {
        if let Some(v) = params.get(p.name) {
            values.insert(p.name.to_string(), *v as i64);
        }
    }
    values
}

/// A tensor of a data op as its contract gives it.
#[derive(Clone, Debug)]
pub struct DataTensor {
    pub name: String,
    pub role: Role,
    pub dtypes: Vec<DType>,
    pub shape: String,
}

/// A scalar parameter of a data op as its contract gives it.
#[derive(Clone, Debug)]
pub struct DataParam {
    pub name: String,
    /// An `int`, else a `float`.
    pub integer: bool,
    /// The value when a contract gives none.
    pub default: Option<f64>,
    pub limits: Vec<ParamLimit>,
}

impl DataParam {
    /// Whether the kernel takes `value` for it ([`super::check_param`]).
    pub fn check(&self, value: f64) -> Result<(), String> {
        super::check_param(&self.name, self.integer, &self.limits, value)
    }

    fn spec(&self) -> ParamSpec {
        ParamSpec {
            name: leak(&self.name),
            integer: self.integer,
            default: self.default,
            limits: Box::leak(self.limits.clone().into_boxed_slice()),
        }
    }
}

/// Everything a data op is; [`define`] makes it an [`OpSpec`].
#[derive(Clone, Debug)]
pub struct DataOp {
    pub name: String,
    pub about: String,
    /// The kernel source, in the kernels folder.
    pub source: String,
    pub symbol: String,
    /// The tensors callers give, in order (derived ones are the kernel's).
    pub tensors: Vec<DataTensor>,
    pub params: Vec<DataParam>,
    pub kernel: KernelSpec,
    /// The order in which a case's symbols are shown (as the contract's first case writes
    /// them); symbols it leaves out follow in order of first use.
    pub symbol_order: Vec<String>,
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

static DEFINED: RwLock<Vec<&'static OpSpec>> = RwLock::new(Vec::new());

/// Every spec [`define`] ever made, keyed by the definition it came from: a contract read
/// again (each record, each fuzz input) gets the spec made the first time instead of a new
/// one, and a spec a later definition replaced stays reachable, as the `&'static` handed out
/// for it promises.
static MADE: Mutex<Vec<(String, &'static OpSpec)>> = Mutex::new(Vec::new());

/// The op's shape symbols: every name its tensors' shapes and its launch read that is not a
/// parameter, those of `symbol_order` first. Refused: a shape that reads a parameter, an integer expression
/// that reads a float parameter, a default the parameter's limits refuse.
fn shape_symbols(op: &DataOp) -> Result<Vec<String>, String> {
    let params: Vec<&str> = op.params.iter().map(|p| p.name.as_str()).collect();
    let mut read: Vec<String> = Vec::new();
    let mut add = |s: &str| {
        if !read.iter().any(|r| r == s) {
            read.push(s.to_string());
        }
    };
    for t in &op.tensors {
        let shape = ShapeExpr::parse(&t.shape).map_err(|e| format!("tensor `{}`: {e}", t.name))?;
        for s in shape.symbols() {
            if params.contains(&s) {
                return Err(format!("tensor `{}`'s shape reads `{s}`, a parameter: a shape reads shape symbols only", t.name));
            }
            add(s);
        }
    }
    for s in op.kernel.reads(&params) {
        match op.params.iter().find(|p| p.name == s) {
            Some(p) if !p.integer => {
                return Err(format!("`{s}` is a float parameter: a shape expression reads shape symbols and int parameters only"));
            }
            Some(_) => {}
            None => add(s),
        }
    }
    let order = &op.symbol_order;
    let mut symbols: Vec<String> = order.iter().filter(|s| read.contains(s)).cloned().collect();
    symbols.extend(read.into_iter().filter(|s| !order.contains(s)));
    Ok(symbols)
}

/// The spec of `op`, found by [`super::find`] from now on (a later definition of the same
/// name replaces an earlier one: the last contract read for it wins). Refused for a name the
/// engine's own ops have, and as [`shape_symbols`] says.
pub fn define(op: DataOp) -> Result<&'static OpSpec, EngineError> {
    let refused = |reason: String| EngineError::Op { op: op.name.clone(), reason };
    if super::registry().iter().any(|o| o.name == op.name) {
        return Err(refused("is an op of the engine with a launcher of its own; a contract with [kernel] names an op of its own".into()));
    }
    let symbols = shape_symbols(&op).map_err(refused)?;
    for p in &op.params {
        if let Some(default) = p.default {
            p.check(default).map_err(|m| refused(format!("the default of {m}")))?;
        }
    }
    for (i, group) in op.kernel.same_dtype.iter().enumerate() {
        if let Some(t) = group.iter().find(|t| !op.tensors.iter().any(|s| &s.name == *t)) {
            return Err(refused(format!("kernel.same_dtype[{i}] names `{t}`, no tensor of the op")));
        }
    }
    let key = format!("{op:?}");
    let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
    let spec = match made.iter().find(|(k, _)| *k == key) {
        Some((_, spec)) => *spec,
        None => {
            let spec = leak_spec(&op, &symbols);
            made.push((key, spec));
            spec
        }
    };
    drop(made);
    let mut defined = DEFINED.write().unwrap_or_else(|p| p.into_inner());
    defined.retain(|o| o.name != spec.name);
    defined.push(spec);
    Ok(spec)
}

/// The `'static` spec of a checked definition, made once per distinct definition ([`MADE`]).
fn leak_spec(op: &DataOp, symbols: &[String]) -> &'static OpSpec {
    let params: Vec<ParamSpec> = op.params.iter().map(DataParam::spec).collect();
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
    Box::leak(Box::new(OpSpec {
        name: leak(&op.name),
        about: leak(&op.about),
        source: Some(leak(&op.source)),
        symbol: Some(leak(&op.symbol)),
        symbols: Box::leak(symbols.iter().map(|s| leak(s)).collect::<Box<[&'static str]>>()),
        params: Box::leak(params.into_boxed_slice()),
        tensors: Box::leak(tensors.into_boxed_slice()),
        launch,
        dims,
        kernel: Some(Box::leak(Box::new(op.kernel.clone()))),
    }))
}

/// The data ops defined so far, in the order they were.
pub fn defined() -> Vec<&'static OpSpec> {
    DEFINED.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The grid and block of a data op's launch, without launching.
pub fn dims(op: &OpSpec, symbols: &Symbols, params: &BTreeMap<String, f64>) -> Result<LaunchDims, EngineError> {
    let refused = |reason: String| EngineError::Op { op: op.name.to_string(), reason };
    let spec = op.kernel.ok_or_else(|| refused("has no [kernel] description".into()))?;
    let params = param_values(op, params).map_err(|u| refused(u.to_string()))?;
    spec.dims(&expression_values(op, symbols, &params)).map_err(refused)
}

/// The launcher of every data op: what its `[kernel]` needs checked (parameters, dtypes,
/// conditions), then the launch evaluated for the call's shape symbols.
pub fn launch(call: &OpCall) -> Result<LaunchReport, EngineError> {
    let spec = call.op.kernel.ok_or_else(|| call.error("has no [kernel] description"))?;
    let refused = |u: Unmet| call.error(u.to_string());
    let params = param_values(call.op, call.params).map_err(refused)?;
    let values = expression_values(call.op, call.symbols, &params);
    spec.check_dtypes(|t| call.tensors.get(t).map(|x| x.dtype)).map_err(refused)?;
    spec.check_requires(&values).map_err(refused)?;
    let dims = spec.dims(&values).map_err(|m| call.error(m))?;
    let mut derived: Vec<(&str, Tensor)> = Vec::with_capacity(spec.derived.len());
    for d in &spec.derived {
        derived.push((d.name.as_str(), d.build(call, &values, &params)?));
    }
    let ours = |t: &str| derived.iter().find(|(name, _)| *name == t).map(|(_, tensor)| tensor);
    let mut args = Vec::with_capacity(spec.args.len());
    for arg in &spec.args {
        args.push(match arg {
            KernelArgSpec::Tensor(t) => match ours(t) {
                Some(tensor) => KernelArg::Pointer(tensor.device_address()),
                None => call.pointer(t)?,
            },
            KernelArgSpec::Dtype(t) => match ours(t) {
                Some(tensor) => KernelArg::I32(tensor.dtype.kernel_code()?),
                None => call.dtype_code(t)?,
            },
            KernelArgSpec::Int(e) => {
                let v = e.evaluate(&values).map_err(|m| call.error(format!("kernel.args `{e}`: {m}")))?;
                KernelArg::I32(i32::try_from(v).map_err(|_| call.error(format!("`int({e})` = {v} does not fit a kernel int")))?)
            }
            KernelArgSpec::Long(e) => KernelArg::I64(e.evaluate(&values).map_err(|m| call.error(format!("kernel.args `{e}`: {m}")))?),
            KernelArgSpec::Param(p) => match call.op.param(p) {
                // checked whole and within an int by param_values
                Some(spec) if spec.integer => KernelArg::I32(params[p] as i32),
                Some(_) => KernelArg::F32(params[p] as f32),
                None => return Err(call.error(format!("`param({p})`: no parameter `{p}`"))),
            },
        });
    }
    call.run_kernel_reading(dims, &args, &derived)
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

    fn param(name: &str, integer: bool, default: Option<f64>, limits: Vec<ParamLimit>) -> DataParam {
        DataParam { name: name.into(), integer, default, limits }
    }

    fn kernel(args: &[&str], grid: &[&str]) -> KernelSpec {
        KernelSpec {
            args: args.iter().map(|a| KernelArgSpec::parse(a).unwrap()).collect(),
            grid: grid.iter().map(|g| Expr::parse(g).unwrap()).collect(),
            block: vec![Expr::parse("256").unwrap()],
            dynamic_shared: None,
            requires: Vec::new(),
            same_dtype: Vec::new(),
            derived: Vec::new(),
        }
    }

    fn op(name: &str) -> DataOp {
        DataOp {
            name: name.into(),
            about: "x".into(),
            source: "x.hip".into(),
            symbol: "x".into(),
            tensors: vec![DataTensor { name: "x".into(), role: Role::Input, dtypes: vec![DType::F32], shape: "rows, k".into() }],
            params: vec![param("eps", false, Some(1e-6), Vec::new())],
            kernel: kernel(&["x", "int(rows * k * width)"], &["ceil_div(rows * k, tile)"]),
            symbol_order: Vec::new(),
        }
    }

    #[test]
    fn a_data_op_takes_its_symbols_from_shapes_then_launch_and_cannot_shadow_an_engine_op() {
        let spec = define(op("data_op_test")).unwrap();
        assert_eq!(spec.symbols, ["rows", "k", "width", "tile"]);
        assert_eq!((spec.params[0].name, spec.params[0].integer, spec.params[0].default), ("eps", false, Some(1e-6)));
        assert!(std::ptr::eq(super::super::find("data_op_test").unwrap(), spec));
        let again = define(op("data_op_test")).unwrap();
        assert!(std::ptr::eq(super::super::find("data_op_test").unwrap(), again), "the later definition wins");
        let shadow = define(op("projection_bf16")).unwrap_err().to_string();
        assert!(shadow.contains("is an op of the engine"), "{shadow}");
    }

    #[test]
    fn symbols_follow_the_first_case_then_first_use_and_parameters_are_not_symbols() {
        let mut o = op("data_op_order_test");
        o.symbol_order = vec!["tile".into(), "k".into(), "gpu_only".into()];
        o.params.push(param("start", true, Some(0.0), vec![ParamLimit::Min(0.0)]));
        o.kernel.requires = vec![Condition::parse("start + width <= k").unwrap()];
        assert_eq!(define(o.clone()).unwrap().symbols, ["tile", "k", "rows", "width"]);
        let mut float_read = o.clone();
        float_read.kernel.requires.push(Condition::parse("eps < 1").unwrap());
        let e = define(float_read).unwrap_err().to_string();
        assert!(e.contains("`eps` is a float parameter: a shape expression reads shape symbols and int parameters only"), "{e}");
        let mut shape_read = o.clone();
        shape_read.tensors[0].shape = "rows, start".into();
        assert!(define(shape_read).unwrap_err().to_string().contains("tensor `x`'s shape reads `start`, a parameter"));
        let mut bad_default = o.clone();
        bad_default.params[1].default = Some(-1.0);
        let e = define(bad_default).unwrap_err().to_string();
        assert!(e.contains("the default of parameter `start` = -1 is not at least 0 (its `min`)"), "{e}");
        let mut unknown = o;
        unknown.kernel.same_dtype = vec![vec!["x".into(), "y".into()]];
        assert!(define(unknown).unwrap_err().to_string().contains("kernel.same_dtype[0] names `y`, no tensor of the op"));
    }

    #[test]
    fn a_parameter_is_checked_against_its_kind_and_limits() {
        let spec = |integer, limits| param("p", integer, None, limits).spec();
        assert!(spec(false, vec![ParamLimit::Above(1.0)]).check(1.5).is_ok());
        assert_eq!(spec(false, vec![ParamLimit::Above(1.0)]).check(1.0).unwrap_err(), "parameter `p` = 1 is not above 1 (its `above`)");
        assert_eq!(spec(false, vec![ParamLimit::Below(2.0)]).check(2.0).unwrap_err(), "parameter `p` = 2 is not below 2 (its `below`)");
        assert_eq!(spec(true, vec![ParamLimit::Max(3.0)]).check(4.0).unwrap_err(), "parameter `p` = 4 is not at most 3 (its `max`)");
        assert_eq!(
            spec(true, vec![ParamLimit::OneOf(vec![0.0, 1.0])]).check(2.0).unwrap_err(),
            "parameter `p` = 2 is not one of 0, 1 (its `values`)"
        );
        assert!(spec(true, Vec::new()).check(0.5).unwrap_err().contains("is not a whole number that fits an int"));
        assert!(spec(false, Vec::new()).check(f64::NAN).unwrap_err().contains("is not finite"));
        let p = op("data_op_params_test");
        let defined = define(p).unwrap();
        assert_eq!(param_values(defined, &BTreeMap::new()).unwrap()["eps"], 1e-6);
        assert_eq!(param_values(defined, &[("eps".to_string(), 0.5)].into()).unwrap()["eps"], 0.5);
    }

    #[test]
    fn same_dtype_groups_and_conditions_name_what_failed() {
        let mut spec = kernel(&[], &["1"]);
        spec.same_dtype = vec![vec!["a".into(), "b".into(), "c".into()]];
        spec.requires = vec![Condition::parse("d % 2 == 0").unwrap(), Condition::parse("tiles <= 1024").unwrap()];
        let dtypes = |b: DType| move |t: &str| [("a", DType::F16), ("b", b), ("c", DType::F16)].into_iter().find(|x| x.0 == t).map(|x| x.1);
        assert!(spec.check_dtypes(dtypes(DType::F16)).is_ok());
        let e = spec.check_dtypes(dtypes(DType::Bf16)).unwrap_err();
        assert_eq!(e.to_string(), "kernel.same_dtype[0]: `a` is f16 but `b` is bf16: they take one dtype");
        let values: Symbols = [("d".to_string(), 64), ("tiles".to_string(), 2000)].into();
        let e = spec.check_requires(&values).unwrap_err();
        assert_eq!(e, Unmet::Requires { index: 1, message: "`tiles <= 1024` does not hold: tiles = 2000".into() });
        assert_eq!(e.to_string(), "kernel.requires[1]: `tiles <= 1024` does not hold: tiles = 2000");
    }

    #[test]
    fn a_launch_that_does_not_fit_is_refused_naming_the_dimension() {
        let spec = kernel(&[], &["rows * k", "2"]);
        let values: Symbols = [("rows".to_string(), 3), ("k".to_string(), 5)].into();
        assert_eq!(spec.dims(&values).unwrap().grid, [15, 2, 1]);
        let big: Symbols = [("rows".to_string(), 1 << 20), ("k".to_string(), 1 << 20)].into();
        assert_eq!(
            spec.dims(&big).unwrap_err(),
            "kernel.grid[0] `(rows * k)` = 1099511627776 does not fit a launch dimension (1 to 2^32 - 1)"
        );
        let huge: Symbols = [("rows".to_string(), i64::MAX), ("k".to_string(), 2)].into();
        assert_eq!(spec.dims(&huge).unwrap_err(), "kernel.grid[0] `(rows * k)`: overflow");
    }

    #[test]
    fn a_derived_tensor_names_a_table_of_the_engine_with_its_arguments() {
        let (table, args) = DerivedTensor::parse_from("rope_turns(theta, d)").unwrap();
        assert_eq!((table.name, args.len()), ("rope_turns", 2));
        assert!(
            DerivedTensor::parse_from("rope(theta, d)")
                .unwrap_err()
                .contains("unknown table `rope` (the engine computes rope_turns(theta, d))")
        );
        assert_eq!(DerivedTensor::parse_from("rope_turns(theta)").unwrap_err(), "rope_turns(theta, d) takes 2 arguments, not 1");
        assert!(DerivedTensor::parse_from("rope_turns").unwrap_err().contains("is no table call"));
        assert!(DerivedTensor::parse_from("rope_turns(theta, d *)").is_err());
    }

    /// A module that notes each launch: its arguments, and the bytes of every tensor it
    /// watched, read at the launch (host memory as the device: [`crate::backend::memory`]).
    mod fake {
        use std::sync::Mutex;

        use crate::EngineError;
        pub use crate::backend::memory::Memory;
        use crate::backend::{KernelArg, KernelSource, LaunchDims, LaunchReport, Module, Schedule, WatchedTensor};

        /// A launch as the module saw it: dims, arguments, and (name, writable, bytes) of each
        /// watched tensor.
        pub type Launch = (LaunchDims, Vec<KernelArg>, Vec<(String, bool, Vec<u8>)>);

        pub struct Noting(pub KernelSource, pub Mutex<Vec<Launch>>);

        impl Module for Noting {
            fn source(&self) -> &KernelSource {
                &self.0
            }
            fn launch_watched(
                &self,
                _: &str,
                dims: LaunchDims,
                _: Schedule,
                args: &[KernelArg],
                watched: &[WatchedTensor],
            ) -> Result<LaunchReport, EngineError> {
                // SAFETY: each watched tensor is alive for the launch, `bytes` long at `data`
                let read = |w: &WatchedTensor| unsafe { std::slice::from_raw_parts(w.data as *const u8, w.bytes as usize) }.to_vec();
                let watched = watched.iter().map(|w| (w.name.to_string(), w.writable, read(w))).collect();
                self.1.lock().unwrap().push((dims, args.to_vec(), watched));
                Ok(LaunchReport::default())
            }
        }
    }

    #[test]
    fn a_launch_builds_its_derived_tensors_and_refuses_what_its_kernel_does_not_take() {
        use crate::backend::{KernelSource, Schedule};
        let mut o = op("data_op_launch_test");
        o.tensors.push(DataTensor { name: "out".into(), role: Role::Output, dtypes: vec![DType::F32], shape: "rows, k".into() });
        o.params = vec![param("theta", false, Some(10000.0), vec![ParamLimit::Above(1.0)])];
        let (table, args) = DerivedTensor::parse_from("rope_turns(theta, k)").unwrap();
        o.kernel = kernel(&["x", "turns", "dtype(turns)", "int(k)", "param(theta)", "out"], &["rows"]);
        o.kernel.derived =
            vec![DerivedTensor { name: "turns".into(), dtype: DType::F32, shape: ShapeExpr::parse("k / 2").unwrap(), table, args }];
        o.kernel.requires = vec![Condition::parse("k % 2 == 0").unwrap()];
        let spec = define(o).unwrap();
        assert_eq!(spec.symbols, ["rows", "k"]);

        let module = fake::Noting(
            KernelSource { path: "x.hip".into(), display_path: "x.hip".into(), kernels: vec![], include_dirs: vec![] },
            Default::default(),
        );
        let launch = |k: usize, params: &[(&str, f64)]| {
            let mut tensors = BTreeMap::new();
            for name in ["x", "out"] {
                tensors.insert(name.to_string(), Tensor::allocate(&fake::Memory, DType::F32, &[2, k]).unwrap());
            }
            let symbols: Symbols = [("rows".to_string(), 2), ("k".to_string(), k as i64)].into();
            let params: BTreeMap<String, f64> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            let call = OpCall {
                op: spec,
                backend: &fake::Memory,
                module: Some(&module),
                symbols: &symbols,
                params: &params,
                tensors: &tensors,
                schedule: Schedule::default(),
            };
            (spec.launch)(&call).map(|_| [tensors["x"].device_address(), tensors["out"].device_address()])
        };

        let [x, out] = launch(6, &[]).unwrap();
        let (dims, args, watched) = module.1.lock().unwrap().pop().unwrap();
        assert_eq!((dims.grid, dims.block), ([2, 1, 1], [256, 1, 1]));
        assert_eq!(args[0], KernelArg::Pointer(x));
        assert_eq!(args[2..], [KernelArg::I32(0), KernelArg::I32(6), KernelArg::F32(10000.0), KernelArg::Pointer(out)]);
        let (_, writable, bytes) = watched.iter().find(|w| w.0 == "turns").expect("the derived tensor is watched");
        assert!(!writable, "a derived tensor is an input of the kernel");
        let want: Vec<u8> =
            (0..3).flat_map(|i| ((10000f64.powf(-((2 * i) as f64) / 6.0) / std::f64::consts::TAU) as f32).to_le_bytes()).collect();
        assert_eq!(bytes, &want, "the rope turns in f32, as the engine's launcher computed them");

        let e = launch(5, &[]).unwrap_err().to_string();
        assert_eq!(e, "op `data_op_launch_test`: kernel.requires[0]: `k % 2 == 0` does not hold: k = 5");
        let e = launch(6, &[("theta", 1.0)]).unwrap_err().to_string();
        assert_eq!(e, "op `data_op_launch_test`: parameter `theta` = 1 is not above 1 (its `above`)");
        assert!(module.1.lock().unwrap().is_empty(), "a refused launch reaches no kernel");
    }
}
