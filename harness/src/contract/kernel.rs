//! The op a contract describes as data: its `[tensors]` (in the file's order) and `[kernel]`
//! (the launch, the parameters and their limits, the conditions the kernel needs, the tensors
//! that share a dtype, the tensors the engine derives), checked here so every error names its
//! file, line and key, then defined for the engine to find.

use std::collections::BTreeMap;

use engine::DType;
use engine::ops::data::{self, DataOp, DataParam, DataTensor, DerivedTensor, KernelArgSpec, KernelSpec};
use engine::ops::{OpSpec, ParamLimit, Role};
use engine::shape_expr::{Condition, Expr, ShapeExpr};
use serde::Deserialize;
use toml::Spanned;

use super::{ContractError, ContractPath, RawContract, Source};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKernel {
    source: Spanned<String>,
    symbol: Spanned<String>,
    /// Folders the kernel's includes are found in, as paths a contract names.
    #[serde(default)]
    include: Vec<Spanned<String>>,
    args: Spanned<Vec<Spanned<String>>>,
    grid: Spanned<Vec<Spanned<toml::Value>>>,
    block: Spanned<Vec<Spanned<toml::Value>>>,
    shared: Option<Spanned<toml::Value>>,
    /// Scalar parameters: `eps = "float"`, or `{ kind = "float", default = 1e-6 }` with
    /// optional limits (`values`, `min`, `max`, `above`, `below`).
    #[serde(default)]
    params: BTreeMap<String, Spanned<toml::Value>>,
    /// Conditions on shape symbols and int parameters: `["tiles <= 1024", "d % 2 == 0"]`.
    #[serde(default)]
    requires: Vec<Spanned<String>>,
    /// Groups of tensors of one dtype: `[["k_cache_in", "k_cache"]]`.
    #[serde(default)]
    same_dtype: Vec<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTensor {
    role: Spanned<String>,
    dtypes: Spanned<Vec<Spanned<String>>>,
    shape: Spanned<String>,
    /// A derived tensor's table: `rope_turns(theta, d)`.
    from: Option<Spanned<String>>,
}

pub(super) type RawTensors = Spanned<BTreeMap<String, Spanned<RawTensor>>>;

/// Where each `kernel.requires[i]` is written.
pub(super) fn requires_offsets(kernel: &RawKernel) -> Vec<usize> {
    kernel.requires.iter().map(|r| r.span().start).collect()
}

/// Where each parameter is declared in `kernel.params`.
pub(super) fn param_offsets(kernel: &RawKernel) -> BTreeMap<String, usize> {
    kernel.params.iter().map(|(name, v)| (name.clone(), v.span().start)).collect()
}

/// The op `raw` describes with `kernel` and `tensors`, defined in the engine, with its kernel's
/// source and include folders as the contract names them.
pub(super) fn data_op(
    source: &Source,
    raw: &RawContract,
    kernel: &Spanned<RawKernel>,
    tensors: &RawTensors,
) -> Result<(&'static OpSpec, ContractPath, Vec<ContractPath>), ContractError> {
    let name = raw.op.get_ref().trim();
    if !data::is_identifier(name) {
        return Err(source.error(raw.op.span().start, "op", format!("`{name}` is not an op name (letters, digits and `_`)")));
    }
    let params = params(source, kernel.get_ref())?;
    let (given, derived) = tensor_specs(source, tensors, &params)?;
    if !given.iter().any(|t| t.role == Role::Output) {
        return Err(source.error(tensors.span().start, "tensors", "an op needs at least one output tensor"));
    }
    let k = kernel.get_ref();
    let file = k.source.get_ref();
    let kernel_path = ContractPath::parse(source, k.source.span().start, "kernel.source", file)?;
    let mut includes = Vec::new();
    for (i, dir) in k.include.iter().enumerate() {
        includes.push(ContractPath::parse(source, dir.span().start, &format!("kernel.include[{i}]"), dir.get_ref())?);
    }
    let symbol = k.symbol.get_ref();
    engine::backend::symbols::check(symbol).map_err(|e| source.error(k.symbol.span().start, "kernel.symbol", e))?;
    let spec = kernel_spec(source, k, &given, derived, &params)?;
    let op = DataOp {
        name: name.to_string(),
        about: raw.about.clone(),
        source: file.clone(),
        symbol: symbol.clone(),
        tensors: given,
        params,
        kernel: spec,
        symbol_order: keys_in_file_order(source.text, &["shapes", "cases", "0"]),
    };
    let op = data::define(op).map_err(|e| source.error(kernel.span().start, "kernel", e.to_string()))?;
    Ok((op, kernel_path, includes))
}

/// The keys of the table at `path` in the file's order (serde's maps are sorted); a number in
/// the path indexes an array (`shapes.cases.0`: the first case, inline or `[[shapes.cases]]`).
fn keys_in_file_order(text: &str, path: &[&str]) -> Vec<String> {
    let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else { return Vec::new() };
    let mut item: &toml_edit::Item = doc.as_item();
    for step in path {
        let next = match step.parse::<usize>() {
            Ok(i) => match item {
                toml_edit::Item::ArrayOfTables(tables) => tables.get(i).map(|t| t as &dyn toml_edit::TableLike),
                _ => item.as_array().and_then(|a| a.get(i)).and_then(|v| v.as_inline_table()).map(|t| t as &dyn toml_edit::TableLike),
            }
            .map(|t| t.iter().map(|(k, _)| k.to_string()).collect()),
            Err(_) => {
                let Some(found) = item.get(step) else { return Vec::new() };
                item = found;
                continue;
            }
        };
        return next.unwrap_or_default();
    }
    item.as_table_like().map(|t| t.iter().map(|(k, _)| k.to_string()).collect()).unwrap_or_default()
}

/// `kernel.params`: each a kind, an optional default and optional limits.
fn params(source: &Source, kernel: &RawKernel) -> Result<Vec<DataParam>, ContractError> {
    let mut params = Vec::new();
    // in the file's order: a reference function takes them so
    let mut order = keys_in_file_order(source.text, &["kernel", "params"]);
    order.retain(|k| kernel.params.contains_key(k));
    order.extend(kernel.params.keys().filter(|k| !order.contains(k)).cloned().collect::<Vec<_>>());
    for (name, v) in order.iter().map(|n| (n, &kernel.params[n])) {
        let key = format!("kernel.params.{name}");
        let at = v.span().start;
        let bad =
            |why: &str| source.error(at, &key, format!("{why}: give `\"float\"`, `\"int\"` or `{{ kind = \"float\", default = 1e-6 }}`"));
        let (kind, default, limits) = match v.get_ref() {
            toml::Value::String(kind) => (kind.as_str(), None, Vec::new()),
            toml::Value::Table(t) => {
                const KEYS: [&str; 7] = ["kind", "default", "values", "min", "max", "above", "below"];
                if let Some(extra) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
                    return Err(bad(&format!("unknown key `{extra}` (a parameter has {})", KEYS.join(", "))));
                }
                let kind = t.get("kind").and_then(|k| k.as_str()).ok_or_else(|| bad("no `kind`"))?;
                let default = match t.get("default") {
                    None => None,
                    Some(d) => Some(number(d).ok_or_else(|| bad("a `default` that is not a number"))?),
                };
                (kind, default, limits(source, at, &key, t)?)
            }
            _ => return Err(bad("not a kind")),
        };
        let integer = match kind {
            "float" => false,
            "int" => true,
            other => return Err(bad(&format!("kind `{other}`"))),
        };
        super::identifier_or(source, at, &key, name)?;
        let param = DataParam { name: name.clone(), integer, default, limits };
        if let Some(d) = default {
            param.check(d).map_err(|e| source.error(at, format!("{key}.default"), format!("the default of {e}")))?;
        }
        params.push(param);
    }
    Ok(params)
}

fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Float(f) if f.is_finite() => Some(*f),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// A parameter's limits: `values = [0, 1]` (one of them), `min`/`max` (inclusive),
/// `above`/`below` (exclusive), each a finite number.
fn limits(source: &Source, at: usize, key: &str, table: &toml::Table) -> Result<Vec<ParamLimit>, ContractError> {
    let mut out = Vec::new();
    for (name, v) in table.iter().filter(|(k, _)| !matches!(k.as_str(), "kind" | "default")) {
        let lkey = format!("{key}.{name}");
        let limit = if name == "values" {
            let values: Option<Vec<f64>> = v.as_array().filter(|a| !a.is_empty()).and_then(|a| a.iter().map(number).collect());
            let values =
                values.ok_or_else(|| source.error(at, &lkey, "the values the kernel takes, a list of one number or more: `[0, 1]`"))?;
            ParamLimit::OneOf(values)
        } else {
            let bound = number(v).ok_or_else(|| source.error(at, &lkey, format!("`{name}` is a finite number, not `{v}`")))?;
            match name.as_str() {
                "min" => ParamLimit::Min(bound),
                "max" => ParamLimit::Max(bound),
                "above" => ParamLimit::Above(bound),
                _ => ParamLimit::Below(bound),
            }
        };
        out.push(limit);
    }
    Ok(out)
}

/// `[tensors]`, in the file's order: the ones callers give (`input`, `output`) and the ones
/// the engine derives (`derived`, with `from`).
fn tensor_specs(
    source: &Source,
    tensors: &RawTensors,
    params: &[DataParam],
) -> Result<(Vec<DataTensor>, Vec<DerivedTensor>), ContractError> {
    let mut order = keys_in_file_order(source.text, &["tensors"]);
    order.retain(|k| tensors.get_ref().contains_key(k));
    for k in tensors.get_ref().keys() {
        if !order.contains(k) {
            order.push(k.clone());
        }
    }
    let (mut given, mut derived) = (Vec::new(), Vec::new());
    for tensor in &order {
        let t = &tensors.get_ref()[tensor];
        let key = |field: &str| format!("tensors.{tensor}.{field}");
        // a kernel argument names it, and so does every later key
        super::identifier_or(source, t.span().start, &format!("tensors.{tensor}"), tensor)?;
        let t = t.get_ref();
        let role = match t.role.get_ref().as_str() {
            "input" => Some(Role::Input),
            "output" => Some(Role::Output),
            "derived" => None,
            other => {
                return Err(source.error(
                    t.role.span().start,
                    key("role"),
                    format!(
                        "role `{other}`: a tensor is an `input`, an `output`, or `derived` (computed by the engine, with `from`); an \
                         in-out tensor is not supported yet: give the input and the output as two tensors"
                    ),
                ));
            }
        };
        let mut dtypes = Vec::new();
        for d in t.dtypes.get_ref() {
            let dtype: DType =
                d.get_ref().parse().map_err(|e: engine::EngineError| source.error(d.span().start, key("dtypes"), e.to_string()))?;
            if !dtypes.contains(&dtype) {
                dtypes.push(dtype);
            }
        }
        if dtypes.is_empty() {
            return Err(source.error(t.dtypes.span().start, key("dtypes"), "name at least one dtype"));
        }
        let shape = t.shape.get_ref().clone();
        let parsed = ShapeExpr::parse(&shape).map_err(|e| source.error(t.shape.span().start, key("shape"), e.to_string()))?;
        match (role, &t.from) {
            (Some(role), None) => given.push(DataTensor { name: tensor.clone(), role, dtypes, shape }),
            (Some(_), Some(from)) => {
                let message = "only a `derived` tensor is computed `from` a table: an input or an output is given by the caller";
                return Err(source.error(from.span().start, key("from"), message));
            }
            (None, None) => {
                let message = "a derived tensor names the table that computes it: `from = \"rope_turns(theta, d)\"`";
                return Err(source.error(t.role.span().start, key("from"), message));
            }
            (None, Some(from)) => {
                let [dtype] = dtypes[..] else {
                    return Err(source.error(t.dtypes.span().start, key("dtypes"), "a derived tensor has one dtype, its table's"));
                };
                let at = from.span().start;
                let (table, args) = DerivedTensor::parse_from(from.get_ref()).map_err(|e| source.error(at, key("from"), e))?;
                for arg in &args {
                    if let Some(p) = float_read(arg.symbols(), params).filter(|_| !matches!(arg, Expr::Symbol(_))) {
                        let message = format!("`{arg}` reads `{p}`, a float parameter: pass a float parameter alone, as `{p}`");
                        return Err(source.error(at, key("from"), message));
                    }
                }
                derived.push(DerivedTensor { name: tensor.clone(), dtype, shape: parsed, table, args });
            }
        }
    }
    Ok((given, derived))
}

/// The first float parameter among `names`.
fn float_read<'a>(names: Vec<&'a str>, params: &[DataParam]) -> Option<&'a str> {
    names.into_iter().find(|s| params.iter().any(|p| p.name == *s && !p.integer))
}

/// `[kernel]`'s launch and what it needs of a launch.
fn kernel_spec(
    source: &Source,
    k: &RawKernel,
    given: &[DataTensor],
    derived: Vec<DerivedTensor>,
    params: &[DataParam],
) -> Result<KernelSpec, ContractError> {
    let names: Vec<&str> = given.iter().map(|t| t.name.as_str()).chain(derived.iter().map(|d| d.name.as_str())).collect();
    let mut args = Vec::new();
    for (i, a) in k.args.get_ref().iter().enumerate() {
        let akey = format!("kernel.args[{i}]");
        let arg = KernelArgSpec::parse(a.get_ref()).map_err(|e| source.error(a.span().start, &akey, e))?;
        if let Some(t) = arg.tensor().filter(|t| !names.contains(t)) {
            return Err(source.error(a.span().start, &akey, format!("no tensor `{t}` in [tensors] (there: {})", names.join(", "))));
        }
        if let KernelArgSpec::Param(p) = &arg
            && !params.iter().any(|q| &q.name == p)
        {
            return Err(source.error(a.span().start, &akey, format!("no parameter `{p}` in kernel.params")));
        }
        args.push(arg);
    }
    let expression = |v: &Spanned<toml::Value>, key: &str| -> Result<Expr, ContractError> {
        let text = match v.get_ref() {
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::String(t) => t.clone(),
            other => return Err(source.error(v.span().start, key, format!("a {}: give a number or a shape expression", other.type_str()))),
        };
        Expr::parse(&text).map_err(|e| source.error(v.span().start, key, e.to_string()))
    };
    let dims = |list: &Spanned<Vec<Spanned<toml::Value>>>, key: &str| -> Result<Vec<Expr>, ContractError> {
        if !(1..=3).contains(&list.get_ref().len()) {
            return Err(source.error(list.span().start, key, "one to three dimensions"));
        }
        list.get_ref().iter().enumerate().map(|(i, v)| expression(v, &format!("{key}[{i}]"))).collect()
    };
    Ok(KernelSpec {
        args,
        grid: dims(&k.grid, "kernel.grid")?,
        block: dims(&k.block, "kernel.block")?,
        dynamic_shared: k.shared.as_ref().map(|v| expression(v, "kernel.shared")).transpose()?,
        requires: requires(source, &k.requires, params)?,
        same_dtype: same_dtype(source, &k.same_dtype, given)?,
        derived,
    })
}

/// `kernel.requires`: conditions over shape symbols and int parameters.
fn requires(source: &Source, raw: &[Spanned<String>], params: &[DataParam]) -> Result<Vec<Condition>, ContractError> {
    let mut out = Vec::new();
    for (i, text) in raw.iter().enumerate() {
        let (at, key) = (text.span().start, format!("kernel.requires[{i}]"));
        let condition = Condition::parse(text.get_ref()).map_err(|e| source.error(at, &key, e.to_string()))?;
        if let Some(p) = float_read(condition.symbols(), params) {
            let message = format!(
                "`{p}` is a float parameter: a condition reads shape symbols and int parameters; bound `{p}` on the parameter \
                 (`min`, `max`, `above`, `below`, `values`)"
            );
            return Err(source.error(at, &key, message));
        }
        out.push(condition);
    }
    Ok(out)
}

/// `kernel.same_dtype`: groups of two tensors or more, each a tensor callers give.
fn same_dtype(source: &Source, raw: &[Spanned<Vec<Spanned<String>>>], given: &[DataTensor]) -> Result<Vec<Vec<String>>, ContractError> {
    let mut out = Vec::new();
    for (i, group) in raw.iter().enumerate() {
        let key = format!("kernel.same_dtype[{i}]");
        if group.get_ref().len() < 2 {
            let message = "a group names two tensors or more that take one dtype: `[\"k_cache_in\", \"k_cache\"]`";
            return Err(source.error(group.span().start, &key, message));
        }
        for name in group.get_ref() {
            if !given.iter().any(|t| &t.name == name.get_ref()) {
                let there: Vec<&str> = given.iter().map(|t| t.name.as_str()).collect();
                let message = format!("no tensor `{}` in [tensors] given by the caller (there: {})", name.get_ref(), there.join(", "));
                return Err(source.error(name.span().start, &key, message));
            }
        }
        out.push(group.get_ref().iter().map(|n| n.get_ref().clone()).collect());
    }
    Ok(out)
}
