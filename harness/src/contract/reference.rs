//! What a contract's outputs are checked against (`[reference]`): a named oracle of the
//! harness, a reference function in plain C++ (`reference = "ref/embed.cpp:embed_dense_ref"`,
//! run in double precision in the record's process), or another op's kernel that this one
//! `replaces`, bit for bit on every case (a rewrite proving it changes no bit).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use engine::backend::host::reference::ReferenceSignature;
use engine::ops::{OpSpec, Role};
use engine::shape_expr::ShapeExpr;
use toml::Spanned;

use super::paths::ContractPath;
use super::{Case, ContractError, Record, Source};
use crate::oracle::{self, Oracle};

#[derive(Clone, Debug)]
pub enum Reference {
    /// A named oracle of the harness (`oracle = "gather_rows"`).
    Oracle { name: String, function: Oracle },
    /// A C++ function of the contract's (`reference = "ref/embed.cpp:embed_dense_ref"`).
    Cpp(CppReference),
    /// Bit-equality with another op's kernel (`replaces = "scale_rows_v1"`).
    Replaces(Replaced),
}

/// A reference function: its file and name, and what it takes.
#[derive(Clone, Debug)]
pub struct CppReference {
    pub path: ContractPath,
    pub function: String,
    pub signature: ReferenceSignature,
}

/// The op a contract's kernel replaces, and where that op's kernel is.
#[derive(Clone, Debug)]
pub struct Replaced {
    pub op: &'static OpSpec,
    pub place: KernelPlace,
}

/// Where a data op's kernel and its include folders are, as its contract names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelPlace {
    /// The contract file it comes from, and that file's folder.
    pub file: String,
    pub folder: PathBuf,
    pub source: ContractPath,
    pub includes: Vec<ContractPath>,
}

impl Reference {
    /// How lines and errors name it: `add`, `ref/embed.cpp:embed_dense_ref`, `replaces tf_x`.
    pub fn name(&self) -> String {
        match self {
            Reference::Oracle { name, .. } => name.clone(),
            Reference::Cpp(r) => format!("{}:{}", r.path.text, r.function),
            Reference::Replaces(r) => format!("replaces {}", r.op.name),
        }
    }
}

/// Every data op's kernel place, by op name, as the contracts read so far give it: a contract
/// that `replaces` an op finds that op's kernel here.
static PLACES: Mutex<BTreeMap<String, KernelPlace>> = Mutex::new(BTreeMap::new());

pub(super) fn remember_place(op: &str, place: KernelPlace) {
    PLACES.lock().unwrap_or_else(|p| p.into_inner()).insert(op.to_string(), place);
}

fn place_of(op: &str) -> Option<KernelPlace> {
    PLACES.lock().unwrap_or_else(|p| p.into_inner()).get(op).cloned()
}

/// The raw keys of `[reference]` that say what is checked against: exactly one of them.
pub(super) struct Named<'a> {
    pub oracle: Option<&'a Spanned<String>>,
    pub reference: Option<&'a Spanned<String>>,
    pub replaces: Option<&'a Spanned<String>>,
}

/// The one of `oracle`, `reference` and `replaces` the table gives, checked against the op.
pub(super) fn parse(source: &Source, at: usize, named: Named, op: &'static OpSpec) -> Result<Reference, ContractError> {
    match (named.oracle, named.reference, named.replaces) {
        (Some(name), None, None) => {
            let function = oracle::find(name.get_ref()).ok_or_else(|| {
                let known = oracle::names().join(", ");
                let message = format!(
                    "unknown oracle `{}` (known: {known}; or give a C++ function with `reference = \"ref/x.cpp:name\"`)",
                    name.get_ref()
                );
                source.error(name.span().start, "reference.oracle", message)
            })?;
            Ok(Reference::Oracle { name: name.get_ref().clone(), function })
        }
        (None, Some(text), None) => cpp(source, text, op).map(Reference::Cpp),
        (None, None, Some(name)) => replaced(source, name, op).map(Reference::Replaces),
        (None, None, None) => Err(source.error(
            at,
            "reference",
            "[reference] names what the outputs are checked against: `oracle = \"name\"`, `reference = \"ref/x.cpp:function\"` \
             (C++) or `replaces = \"op\"` (bit-equality with another op's kernel)",
        )),
        (a, b, c) => {
            let second = [("oracle", a), ("reference", b), ("replaces", c)].into_iter().filter_map(|(k, v)| Some((k, v?))).nth(1);
            let (key, value) = second.expect("two of three");
            Err(source.error(value.span().start, format!("reference.{key}"), "give one of `oracle`, `reference` and `replaces`"))
        }
    }
}

/// `ref/embed.cpp:embed_dense_ref`: a path a contract may name, `:`, a C function name.
fn cpp(source: &Source, text: &Spanned<String>, op: &OpSpec) -> Result<CppReference, ContractError> {
    let (at, key) = (text.span().start, "reference.reference");
    let (file, function) = text
        .get_ref()
        .rsplit_once(':')
        .ok_or_else(|| source.error(at, key, format!("`{}`: a C++ file and the function in it, `ref/x.cpp:function`", text.get_ref())))?;
    if !engine::ops::data::is_identifier(function) {
        return Err(source.error(at, key, format!("`{function}` is not a C function name (the function is `extern \"C\"`)")));
    }
    let path = ContractPath::parse(source, at, key, file)?;
    Ok(CppReference { path, function: function.to_string(), signature: signature(op) })
}

/// What the op's reference function takes: its tensors in `[tensors]` order, its shape
/// symbols in the order the first case writes them, its parameters in `kernel.params` order.
pub fn signature(op: &OpSpec) -> ReferenceSignature {
    ReferenceSignature {
        tensors: op.tensors.iter().map(|t| (t.name.to_string(), t.role == Role::Output)).collect(),
        symbols: op.symbols.iter().map(|s| s.to_string()).collect(),
        params: op.params.iter().map(|p| p.name.to_string()).collect(),
    }
}

/// `replaces = "op"`: an op of its own kernel, with this op's tensors.
fn replaced(source: &Source, name: &Spanned<String>, op: &OpSpec) -> Result<Replaced, ContractError> {
    let (at, key) = (name.span().start, "reference.replaces");
    let refuse = |message: String| source.error(at, key, message);
    let other = engine::ops::find(name.get_ref())
        .ok_or_else(|| refuse(format!("no op `{}` (a contract with [kernel] defines one)", name.get_ref())))?;
    if other.name == op.name {
        return Err(refuse("an op cannot replace itself".into()));
    }
    let place = place_of(other.name).filter(|_| other.kernel.is_some()).ok_or_else(|| {
        refuse(format!("`{}` has no kernel of its own described by a contract ([kernel]): nothing to compare bits with", other.name))
    })?;
    let sorted = |o: &OpSpec| {
        let mut v: Vec<(String, Role)> = o.tensors.iter().map(|t| (t.name.to_string(), t.role)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    if sorted(op) != sorted(other) {
        let list = |o: &OpSpec| o.tensors.iter().map(|t| format!("{} ({:?})", t.name, t.role)).collect::<Vec<_>>().join(", ");
        return Err(refuse(format!("`{}` has other tensors: {} here, {} there", other.name, list(op), list(other))));
    }
    if let Some(s) = other.symbols.iter().find(|s| !op.symbols.contains(s)) {
        return Err(refuse(format!("`{}` reads shape symbol `{s}`, which no case of this op gives", other.name)));
    }
    Ok(Replaced { op: other, place })
}

/// A replaced op runs every record and case of this contract: each record's dtypes are its
/// tensors', each case gives its shapes the same extents and meets its kernel's conditions,
/// and each of its parameters has a value.
pub(super) fn check_replaced(
    source: &Source,
    at: usize,
    replaced: &Replaced,
    records: &[Record],
    cases: &[Case],
) -> Result<(), ContractError> {
    let other = replaced.op;
    let refuse = |message: String| source.error(at, "reference.replaces", message);
    for record in records {
        for t in other.tensors {
            let dtype = record.dtypes[t.name];
            if !t.dtypes.contains(&dtype) {
                return Err(refuse(format!("record `{}`: `{}` of `{}` does not take {dtype}", record.name, t.name, other.name)));
            }
        }
        if let Some(p) = other.params.iter().find(|p| p.default.is_none() && !record.params.contains_key(p.name)) {
            return Err(refuse(format!("record `{}` gives no value for `{}`'s parameter `{}`", record.name, other.name, p.name)));
        }
    }
    for (i, case) in cases.iter().enumerate() {
        for t in other.tensors {
            let dims = ShapeExpr::parse(t.shape).map_err(|e| e.to_string()).and_then(|s| s.evaluate(&case.symbols));
            match dims {
                Ok(dims) if dims == case.shapes[t.name] => {}
                Ok(dims) => {
                    let message =
                        format!("shapes.cases[{i}]: `{}` is {dims:?} for `{}` but {:?} here", t.name, other.name, case.shapes[t.name]);
                    return Err(refuse(message));
                }
                Err(e) => return Err(refuse(format!("shapes.cases[{i}]: `{}` of `{}`: {e}", t.name, other.name))),
            }
        }
        if let Some(kernel) = other.kernel {
            for record in records {
                let params = params_for(other, record);
                let values = engine::ops::data::expression_values(other, &case.symbols, &params);
                kernel.check_requires(&values).map_err(|u| refuse(format!("shapes.cases[{i}]: `{}`'s {u}", other.name)))?;
            }
        }
    }
    Ok(())
}

/// The replaced op's parameters for a record: the record's value of each one it names, else
/// its default.
pub fn params_for(other: &OpSpec, record: &Record) -> BTreeMap<String, f64> {
    other.params.iter().filter_map(|p| record.params.get(p.name).copied().or(p.default).map(|v| (p.name.to_string(), v))).collect()
}

/// The folder a contract file lies in, as `Contract::load` is given it.
pub(super) fn folder_of(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::Contract;
    use super::*;

    /// A data op of its own name whose `[reference]` is `reference`.
    fn contract(op: &str, reference: &str) -> Result<Contract, ContractError> {
        let text = format!(
            r#"op = "{op}"
about = "y = x * s"

[tensors]
x = {{ role = "input", dtypes = ["f32"], shape = "rows, k" }}
y = {{ role = "output", dtypes = ["f32"], shape = "rows, k" }}

[kernel]
source = "./scale.hip"
symbol = "scale<float, 2>"
include = ["include", "../vendor"]
args = ["y", "x", "long(rows * k)", "param(s)", "param(n)"]
grid = ["rows"]
block = [64]
params = {{ s = {{ kind = "float", default = 2 }}, n = {{ kind = "int", default = 1 }} }}

[[record]]
name = "f32"

[shapes]
cases = [{{ k = 8, rows = 2 }}]

[inputs]
x = "normal(0, 1)"

[nonfinite]
policy = "propagate"

[seams]
axis = "rows"

[exempt]
residues = {{ k = "a test of names and paths: one case", rows = "a test of names and paths: one case" }}
odd_multiple = {{ k = "a test of names and paths: one case" }}
past = {{ k = "a test of names and paths: one case" }}
param_values = {{ s = "a test of names and paths: one record", n = "a test of names and paths: one record" }}

[reference]
{reference}
"#
        );
        Contract::parse_in("contracts/c.toml", &text, Path::new("/repo/contracts"))
    }

    #[test]
    fn a_kernel_and_its_reference_are_named_from_the_contracts_folder_and_the_reference_takes_tensors_symbols_then_params() {
        let c = contract("reference_test_cpp", "reference = \"../ref/scale.cpp:scale_ref\"\ntolerance = \"exact\"").unwrap();
        let place = c.kernel.as_ref().unwrap();
        assert_eq!(place.source.resolve(Path::new("/k"), &place.folder), Path::new("/repo/contracts/scale.hip"));
        let includes: Vec<PathBuf> = place.includes.iter().map(|i| i.resolve(Path::new("/k"), &place.folder)).collect();
        assert_eq!(includes, [PathBuf::from("/k/include"), PathBuf::from("/repo/vendor")]);
        assert_eq!(c.op.symbol, Some("scale<float, 2>"));
        let Reference::Cpp(cpp) = &c.reference else { panic!("a C++ reference") };
        assert_eq!(cpp.path.resolve(Path::new("/k"), &c.folder), Path::new("/repo/ref/scale.cpp"));
        assert_eq!(
            cpp.signature.declaration(&cpp.function),
            "extern \"C\" int scale_ref(const double* x, double* y, long long k, long long rows, double s, double n)"
        );
        assert_eq!(c.reference.name(), "../ref/scale.cpp:scale_ref");
    }

    #[test]
    fn one_of_oracle_reference_and_replaces_is_given() {
        let e = contract("reference_test_none", "tolerance = \"exact\"").unwrap_err();
        assert!(e.key == "reference" && e.message.contains("names what the outputs are checked against"), "{e}");
        let e = contract("reference_test_two", "oracle = \"add\"\nreference = \"r.cpp:f\"\ntolerance = \"exact\"").unwrap_err();
        assert!(e.key == "reference.reference" && e.message.contains("give one of"), "{e}");
        let e = contract("reference_test_tolerance", "reference = \"r.cpp:f\"").unwrap_err();
        assert!(e.key == "reference.tolerance" && e.message.contains("missing field `tolerance`"), "{e}");
        let e = contract("reference_test_function", "reference = \"r.cpp:f-g\"\ntolerance = \"exact\"").unwrap_err();
        assert!(e.key == "reference.reference" && e.message.contains("is not a C function name"), "{e}");
    }

    #[test]
    fn a_replacement_matches_an_op_of_the_same_tensors_bit_for_bit() {
        contract("reference_test_old", "reference = \"r.cpp:f\"\ntolerance = \"exact\"").unwrap();
        let c = contract("reference_test_new", "replaces = \"reference_test_old\"").unwrap();
        let Reference::Replaces(r) = &c.reference else { panic!("a replacement") };
        assert_eq!((r.op.name, c.reference.name().as_str()), ("reference_test_old", "replaces reference_test_old"));
        assert!(c.records[0].tolerances.values().all(|b| b.tolerance == crate::tolerance::Tolerance::Exact));
        let e = contract("reference_test_loose", "replaces = \"reference_test_old\"\ntolerance = \"ulp(2)\"").unwrap_err();
        assert!(e.key == "reference.tolerance" && e.message.contains("matches its bits, `exact`"), "{e}");
        let e = contract("reference_test_self", "replaces = \"reference_test_self\"").unwrap_err();
        assert!(e.message.contains("cannot replace itself"), "{e}");
        let e = contract("reference_test_library", "replaces = \"projection_bf16\"").unwrap_err();
        assert!(e.message.contains("has no kernel of its own"), "{e}");
    }
}
