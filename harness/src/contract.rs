//! Contracts (`contracts/<op>.toml`) and controls (`controls/<name>.toml`): parsed strictly
//! and checked against the engine's op signature. Every error names the file, the line and
//! the key, and one contract that cannot load never stops the others.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engine::DType;
use engine::ops::{OpSpec, Role};
use engine::shape_expr::{ShapeExpr, Symbols};
use serde::Deserialize;
use toml::Spanned;

use crate::confine::{Confinement, Escape};
use crate::gate::{Fault, Gate, Planted};
use crate::inputs::{Generator, InputSpec};
use crate::limits::{self, Limits};
use crate::oracle;
use crate::tolerance::Tolerance;

mod domain;
mod kernel;
mod paths;
mod reference;
use kernel::{RawKernel, RawTensor, RawTensors};
pub use paths::ContractPath;
pub use reference::{CppReference, KernelPlace, Reference, Replaced, params_for, signature};

/// A tensor larger than this is refused before anything is allocated.
pub const MAX_TENSOR_BYTES: usize = 1 << 30;

/// The cap of a GPU-only case (`gpu_only = "why"`): large enough for element offsets past
/// 2^31 in f32, which is what such a case is for.
pub const MAX_GPU_ONLY_TENSOR_BYTES: usize = 1 << 34;

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{file}:{line}: `{key}`: {message}")]
pub struct ContractError {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

#[derive(Debug)]
pub struct Contract {
    pub file: String,
    pub op: &'static OpSpec,
    /// Where `op` is, for an error found across files (a second contract for the op).
    pub op_line: usize,
    pub about: String,
    pub records: Vec<Record>,
    pub cases: Vec<Case>,
    pub inputs: BTreeMap<String, InputSpec>,
    /// What the outputs are checked against: a named oracle, a C++ function, or a kernel
    /// this op's replaces bit for bit.
    pub reference: Reference,
    /// Where a data op's kernel and include folders are (none for a library op).
    pub kernel: Option<KernelPlace>,
    /// The folder the contract file lies in (paths written `./x` are found from there).
    pub folder: PathBuf,
    pub findings: Vec<Finding>,
    /// `[limits.<arch>]`: recorded figures and budget per architecture.
    pub limits: BTreeMap<String, Limits>,
    /// `timeout_seconds`: each record's time limit, where the contract sets one.
    pub timeout_seconds: Option<u64>,
    /// `[nonfinite]`: what the op does with NaN and infinite inputs.
    pub nonfinite: NonfinitePolicy,
    /// `[seams]` or `seams = "none: ..."`: whether a row's bytes may depend on how the batch
    /// was cut (gate 5).
    pub seams: Seams,
}

/// What a contract says about seams: the row axis gate 5 cuts along, or why its rows are not
/// independent.
#[derive(Clone, Debug, PartialEq)]
pub enum Seams {
    Rows(RowAxis),
    /// `seams = "none: <reason>"`: the rows share an output (a cache every row writes), so a
    /// row has no bytes of its own to compare.
    None(String),
}

/// `[seams]`: the shape symbol that counts rows (the first dimension of every tensor that
/// uses it), the cuts and the decode batches gate 5 runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RowAxis {
    pub axis: String,
    /// `cuts = [..]`; when absent, each row alone, a prime and the op's own chunk.
    pub cuts: Option<Vec<usize>>,
    /// `batches = [..]`: each row must equal itself alone inside a batch of each size.
    pub batches: Vec<usize>,
}

/// The prime cut of the default cuts: pieces that line up with no power-of-two blocking.
pub const PRIME_CUT: usize = 7;

/// The parameter that names an op's own row chunk (the pinned BLAS row count of
/// `projection_bf16`): a default cut where a record gives it one above 0.
pub const CHUNK_PARAM: &str = "chunk";

impl Seams {
    /// The row axis gate 5 cuts along, when the contract declares one.
    pub fn axis(&self) -> Option<&RowAxis> {
        match self {
            Seams::Rows(axis) => Some(axis),
            Seams::None(_) => None,
        }
    }
}

impl RowAxis {
    /// The cut sizes for a record, smallest first: the contract's, else each row alone, a
    /// prime and the record's chunk (its `chunk` parameter, where it has one above 0).
    pub fn cuts_for(&self, record: &Record) -> Vec<usize> {
        let mut cuts = match &self.cuts {
            Some(cuts) => cuts.clone(),
            None => {
                let chunk = record.params.get(CHUNK_PARAM).filter(|c| **c >= 1.0).map(|c| *c as usize);
                [1, PRIME_CUT].into_iter().chain(chunk).collect()
            }
        };
        cuts.sort_unstable();
        cuts.dedup();
        cuts
    }
}

/// What an op does with NaN and infinite inputs, as its contract states and gate 1 checks on
/// copies of the cases with NaN and infinities planted in every float input.
#[derive(Clone, Debug, PartialEq)]
pub enum NonfinitePolicy {
    /// The outputs are non-finite exactly where the oracle's are on the planted inputs (IEEE
    /// arithmetic in f64), and within tolerance of it elsewhere.
    Propagate,
    /// The outputs are the oracle's on the inputs with the NaNs left out (infinities stay, as
    /// values); only for an oracle that defines that.
    Ignore,
    /// Nothing is said about the values (the reason says why): the planted cases still run
    /// under the repeat gate, the guard bands and the input check, and must not crash.
    Unspecified(String),
}

impl NonfinitePolicy {
    pub fn name(&self) -> &'static str {
        match self {
            NonfinitePolicy::Propagate => "propagate",
            NonfinitePolicy::Ignore => "ignore",
            NonfinitePolicy::Unspecified(_) => "unspecified",
        }
    }
}

/// One output's tolerance in one record, and where the contract gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub tolerance: Tolerance,
    pub reason: Option<String>,
    /// `reference.tolerance` or `record[1].tolerance.out`, and its line, for errors found later.
    pub key: String,
    pub line: usize,
}

#[derive(Clone, Debug)]
pub struct Record {
    pub name: String,
    /// A dtype for every tensor of the op.
    pub dtypes: BTreeMap<String, DType>,
    /// The tolerance of every output, with its reason.
    pub tolerances: BTreeMap<String, Bound>,
    /// Every parameter of the op: the record's, else the contract's, else the op's default.
    pub params: BTreeMap<String, f64>,
    /// The record's own input generators (`inputs = { x = "..." }`), in place of the
    /// contract's for those tensors: a record whose sums must round, beside exact ones.
    pub inputs: BTreeMap<String, InputSpec>,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub symbols: Symbols,
    /// Each tensor's shape for this case.
    pub shapes: BTreeMap<String, Vec<usize>>,
    /// `gpu_only = "why"`: the host lists the case as not run, with this reason (a case whose
    /// element offsets pass 2^31 needs more memory than a host run should take).
    pub gpu_only: Option<String>,
}

impl Case {
    /// `{n = 7, k = 130, vocab = 1024}`, in the op's symbol order.
    pub fn describe(&self, op: &OpSpec) -> String {
        let parts: Vec<String> = op.symbols.iter().filter_map(|s| self.symbols.get(*s).map(|v| format!("{s} = {v}"))).collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// A known failure a record may have and still pass: one gate, on one arch, on one tensor,
/// with a message that holds `matches`, and optionally only some records and cases. Narrow on
/// purpose: a failure it does not match fails the record.
#[derive(Clone, Debug)]
pub struct Finding {
    pub gate: Gate,
    pub arch: String,
    /// The record it covers; every record when absent.
    pub record: Option<String>,
    /// The tensor whose failure it covers (`kernel` for the limits gate).
    pub tensor: String,
    /// A piece of the failure's message, matched as written (no wildcards).
    pub matches: String,
    /// Indices into `[shapes].cases`; every case when absent.
    pub cases: Option<Vec<usize>>,
    pub reason: String,
    pub line: usize,
}

impl Finding {
    /// Whether it covers a failure at `gate` of `tensor` in case `case` saying `message`.
    pub fn covers(&self, gate: Gate, tensor: &str, case: usize, message: &str) -> bool {
        self.gate == gate
            && self.tensor == tensor
            && message.contains(&self.matches)
            && self.cases.as_ref().is_none_or(|cases| cases.contains(&case))
    }
}

/// The tensor a limits failure is about: the kernel as a whole.
pub const KERNEL_TENSOR: &str = "kernel";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContract {
    op: Spanned<String>,
    about: String,
    record: Vec<Spanned<RawRecord>>,
    shapes: RawShapes,
    inputs: Spanned<BTreeMap<String, Spanned<String>>>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<f64>>,
    reference: RawReference,
    #[serde(default)]
    finding: Vec<Spanned<RawFinding>>,
    #[serde(default)]
    limits: BTreeMap<String, Spanned<toml::Table>>,
    timeout_seconds: Option<Spanned<i64>>,
    nonfinite: Option<Spanned<RawNonfinite>>,
    /// `[seams]` (a table) or `seams = "none: <reason>"` (a string).
    seams: Option<Spanned<toml::Value>>,
    /// An op of its own, as data: how its kernel launches, and its tensors.
    kernel: Option<Spanned<RawKernel>>,
    tensors: Option<Spanned<BTreeMap<String, Spanned<RawTensor>>>>,
    /// What a lint of the op's domain may leave uncovered, each with its reason.
    exempt: Option<Spanned<domain::RawExempt>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNonfinite {
    policy: Spanned<String>,
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord {
    name: Spanned<String>,
    #[serde(default)]
    dtypes: BTreeMap<String, Spanned<String>>,
    tolerance: Option<Spanned<RawTolerance>>,
    reason: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<f64>>,
    #[serde(default)]
    inputs: BTreeMap<String, Spanned<String>>,
}

/// The `[seams]` table, read in a second pass once `seams` is known to be a table (so its
/// keys carry their lines).
#[derive(Deserialize)]
struct SeamsTableOnly {
    seams: Spanned<RawSeams>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeams {
    axis: Spanned<String>,
    cuts: Option<Spanned<Vec<Spanned<i64>>>>,
    batches: Option<Spanned<Vec<Spanned<i64>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShapes {
    cases: Spanned<Vec<RawCase>>,
}

/// `{ rows = 4, k = 64 }`, and `gpu_only = "why"` in a case only a GPU runs
type RawCase = Spanned<BTreeMap<String, Spanned<toml::Value>>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    oracle: Option<Spanned<String>>,
    /// A C++ function: `ref/embed.cpp:embed_dense_ref`.
    reference: Option<Spanned<String>>,
    /// An op whose kernel this one must match bit for bit.
    replaces: Option<Spanned<String>>,
    tolerance: Option<Spanned<RawTolerance>>,
    reason: Option<String>,
}

#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum RawTolerance {
    All(String),
    PerOutput(BTreeMap<String, String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFinding {
    gate: Spanned<String>,
    arch: String,
    record: Option<String>,
    tensor: Option<Spanned<String>>,
    matches: Option<Spanned<String>>,
    cases: Option<Spanned<Vec<Spanned<i64>>>>,
    reason: String,
}

/// `name` as a C identifier, else an error at `key`.
fn identifier_or(source: &Source, at: usize, key: &str, name: &str) -> Result<(), ContractError> {
    if engine::ops::data::is_identifier(name) {
        Ok(())
    } else {
        Err(source.error(at, key, format!("`{name}` is not a name (letters, digits and `_`)")))
    }
}

/// Line numbers and errors for one file.
pub(crate) struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].bytes().filter(|b| *b == b'\n').count() + 1
    }

    pub fn error(&self, offset: usize, key: impl Into<String>, message: impl Into<String>) -> ContractError {
        ContractError { file: self.file.to_string(), line: self.line_of(offset), key: key.into(), message: message.into() }
    }

    /// Every string and key plain text: each may end up in a printed line.
    pub fn plain_text(&self) -> Result<(), ContractError> {
        match crate::text::first_unprintable(self.text) {
            Some(u) => Err(self.error(u.offset, &u.key, u.message())),
            None => Ok(()),
        }
    }

    /// A TOML syntax or type error, with the key named where the message or the line tells it.
    pub fn toml_error(&self, e: &toml::de::Error) -> ContractError {
        let offset = e.span().map_or(0, |s| s.start);
        let message = e.message().trim().to_string();
        let named = ["unknown field `", "missing field `", "duplicate key `", "duplicate field `"]
            .iter()
            .find_map(|p| message.split_once(p).and_then(|(_, rest)| rest.split_once('`')).map(|(k, _)| k.to_string()));
        let key = named.unwrap_or_else(|| self.key_at(offset));
        self.error(offset, key, message)
    }

    /// The key an error at `offset` is about: the key written there, else the key whose
    /// value holds the offset (`k` in `{ rows = 4, k = "64" }`, not the line's first key),
    /// else the line itself (a broken table header).
    fn key_at(&self, offset: usize) -> String {
        let offset = (0..=offset.min(self.text.len())).rev().find(|o| self.text.is_char_boundary(*o)).unwrap_or(0);
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[offset..].find('\n').map_or(self.text.len(), |i| offset + i);
        let (before, after) = (&self.text[start..offset], &self.text[offset..end]);
        let key_like = |k: &str| !k.trim().is_empty() && k.trim().chars().all(|c| c.is_ascii_alphanumeric() || "_-.\"' ".contains(c));
        let holding_value = before.rsplit_once('=').map(|(head, _)| head.rsplit(['{', ',']).next().unwrap_or(head));
        let key = match (after.split_once('='), holding_value) {
            (Some((written, _)), _) if key_like(written) => written,
            (_, Some(holding)) if key_like(holding) => holding,
            _ => &self.text[start..end],
        };
        let key = key.trim();
        if key.is_empty() { "(document)".to_string() } else { key.to_string() }
    }
}

/// A contract's or control's text; a file that is not UTF-8 is refused at its first bad byte.
fn read_text(path: &Path, display: &str) -> Result<String, ContractError> {
    let bytes = std::fs::read(path).map_err(|e| ContractError {
        file: display.to_string(),
        line: 0,
        key: "(file)".into(),
        message: e.to_string(),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let text = String::from_utf8_lossy(e.as_bytes());
        let source = Source { file: display, text: &text };
        let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
        let message = format!("not UTF-8: byte {:#04x} at column {column} (save the file as UTF-8)", e.as_bytes()[at]);
        source.error(at, source.key_at(at), message)
    })
}

/// Defines the data ops of every contract in `dir` (those with `[kernel]`), so that `--only`,
/// controls and mutation targets can name them before the run loads its contracts. A contract
/// that does not load is left to the run, which reports it.
pub fn define_data_ops(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
    files.sort();
    for path in files {
        if let Ok(text) = std::fs::read_to_string(&path)
            && text.lines().any(|l| l.trim_start().starts_with("[kernel]"))
        {
            let _ = Contract::define_op(&path.display().to_string(), &text, &reference::folder_of(&path));
        }
    }
}

impl Contract {
    pub fn load(path: &Path, display: &str) -> Result<Contract, ContractError> {
        Contract::parse_in(display, &read_text(path, display)?, &reference::folder_of(path))
    }

    pub fn parse(file: &str, text: &str) -> Result<Contract, ContractError> {
        Contract::parse_in(file, text, Path::new(""))
    }

    /// The op a contract with `[kernel]` describes, defined in the engine and its kernel's
    /// place remembered, and nothing more of the contract read: every process of a run defines
    /// the data ops of every contract (any contract may name another's op), and the rest of a
    /// load (its domain lints above all) was most of a child's start-up. A contract that
    /// defines its op and then fails to load fails where the run loads it in full.
    fn define_op(file: &str, text: &str, folder: &Path) -> Result<(), ContractError> {
        let source = Source { file, text };
        source.plain_text()?;
        let raw: RawContract = toml::from_str(text).map_err(|e| source.toml_error(&e))?;
        if let (Some(kernel), Some(tensors)) = (&raw.kernel, &raw.tensors) {
            Contract::define_data_op(&source, &raw, kernel, tensors, folder)?;
        }
        Ok(())
    }

    fn define_data_op(
        source: &Source,
        raw: &RawContract,
        kernel: &Spanned<RawKernel>,
        tensors: &RawTensors,
        folder: &Path,
    ) -> Result<(&'static OpSpec, KernelPlace), ContractError> {
        let (op, kernel_source, includes) = kernel::data_op(source, raw, kernel, tensors)?;
        let found = KernelPlace { file: source.file.to_string(), folder: folder.to_path_buf(), source: kernel_source, includes };
        reference::remember_place(op.name, found.clone());
        Ok((op, found))
    }

    /// A contract whose file lies in `folder` (paths written `./x` are found from there).
    pub fn parse_in(file: &str, text: &str, folder: &Path) -> Result<Contract, ContractError> {
        let source = Source { file, text };
        source.plain_text()?;
        let raw: RawContract = toml::from_str(text).map_err(|e| source.toml_error(&e))?;

        let mut place = None;
        let op = match (&raw.kernel, &raw.tensors) {
            (Some(kernel), Some(tensors)) => {
                let (op, found) = Contract::define_data_op(&source, &raw, kernel, tensors, folder)?;
                place = Some(found);
                op
            }
            (Some(kernel), None) => {
                return Err(source.error(kernel.span().start, "tensors", "a contract with [kernel] needs [tensors] too"));
            }
            (None, Some(tensors)) => {
                return Err(source.error(tensors.span().start, "kernel", "a contract with [tensors] needs [kernel] too"));
            }
            (None, None) => engine::ops::find(raw.op.get_ref()).ok_or_else(|| {
                let known: Vec<&str> = engine::ops::all().iter().map(|o| o.name).collect();
                source.error(
                    raw.op.span().start,
                    "op",
                    format!(
                        "unknown op `{}` (the engine has: {}; an op of your own needs [kernel] and [tensors])",
                        raw.op.get_ref(),
                        known.join(", ")
                    ),
                )
            })?,
        };
        let tensor_names = || op.tensors.iter().map(|t| t.name).collect::<Vec<_>>().join(", ");
        let outputs: Vec<&str> = op.tensors.iter().filter(|t| t.role == Role::Output).map(|t| t.name).collect();

        // the reference (an oracle, a C++ function, or the kernel this one replaces) and the
        // default tolerance of every output: bit-equality for a replacement
        let r = &raw.reference;
        let named = reference::Named { oracle: r.oracle.as_ref(), reference: r.reference.as_ref(), replaces: r.replaces.as_ref() };
        let reference_at = text.find("[reference]").unwrap_or(0);
        let reference = reference::parse(&source, reference_at, named, op)?;
        let exact = Spanned::new(reference_at..reference_at, RawTolerance::All("exact".into()));
        let tolerance = match (&r.tolerance, &reference) {
            (Some(t), _) => t,
            (None, Reference::Replaces(_)) => &exact,
            (None, _) => return Err(source.error(reference_at, "reference.tolerance", "missing field `tolerance`")),
        };
        let default_tolerances = tolerances(&source, "reference", tolerance, r.reason.as_deref(), &outputs, None)?;

        // records
        if raw.record.is_empty() {
            return Err(source.error(0, "record", "a contract needs at least one [[record]]"));
        }
        let mut records: Vec<Record> = Vec::new();
        for (i, spanned) in raw.record.iter().enumerate() {
            let r = spanned.get_ref();
            let key = format!("record[{i}]");
            let name = r.name.get_ref().trim().to_string();
            let taken = records.iter().position(|x| x.name == name);
            if name.is_empty() || taken.is_some() {
                let message = match taken {
                    Some(first) => format!("record name `{name}` is used twice (record[{first}] has it too)"),
                    None => "a record needs a name".to_string(),
                };
                return Err(source.error(r.name.span().start, format!("{key}.name"), message));
            }
            let mut dtypes = BTreeMap::new();
            for (tensor, dtype) in &r.dtypes {
                let at = dtype.span().start;
                let dkey = format!("{key}.dtypes.{tensor}");
                let spec = op.tensor(tensor).ok_or_else(|| {
                    source.error(at, &dkey, format!("op {} has no tensor `{tensor}` (its tensors: {})", op.name, tensor_names()))
                })?;
                let d: DType = dtype.get_ref().parse().map_err(|e: engine::EngineError| source.error(at, &dkey, e.to_string()))?;
                if !spec.dtypes.contains(&d) {
                    let allowed: Vec<&str> = spec.dtypes.iter().map(|d| d.name()).collect();
                    return Err(source.error(
                        at,
                        &dkey,
                        format!("tensor `{tensor}` of {} takes {}, not {d}", op.name, allowed.join(" or ")),
                    ));
                }
                dtypes.insert(tensor.clone(), d);
            }
            for spec in op.tensors {
                if !dtypes.contains_key(spec.name) {
                    if let [only] = spec.dtypes {
                        dtypes.insert(spec.name.to_string(), *only);
                    } else {
                        let allowed: Vec<&str> = spec.dtypes.iter().map(|d| d.name()).collect();
                        return Err(source.error(
                            spanned.span().start,
                            format!("{key}.dtypes"),
                            format!("no dtype for tensor `{}` (it takes {})", spec.name, allowed.join(", ")),
                        ));
                    }
                }
            }
            let tolerances = match &r.tolerance {
                Some(t) => tolerances(&source, &key, t, r.reason.as_deref(), &outputs, Some(&default_tolerances))?,
                None => default_tolerances.clone(),
            };
            for (output, bound) in &tolerances {
                bound.tolerance.check_for(dtypes[output]).map_err(|e| ContractError {
                    file: file.to_string(),
                    line: bound.line,
                    key: bound.key.clone(),
                    message: format!("record `{name}`, output `{output}`: {e}"),
                })?;
            }
            let mut params = BTreeMap::new();
            for spec in op.params {
                let (value, at, pkey) = match (r.params.get(spec.name), raw.params.get(spec.name)) {
                    (Some(v), _) => (*v.get_ref(), v.span().start, format!("{key}.params.{}", spec.name)),
                    (None, Some(v)) => (*v.get_ref(), v.span().start, format!("params.{}", spec.name)),
                    (None, None) => match spec.default {
                        Some(d) => (d, 0, String::new()),
                        None => {
                            return Err(source.error(
                                spanned.span().start,
                                format!("{key}.params"),
                                format!("no value for parameter `{}` of {}", spec.name, op.name),
                            ));
                        }
                    },
                };
                // finite, whole for an int, and within the limits the op's kernel gives it
                spec.check(value).map_err(|e| source.error(at, pkey, e))?;
                params.insert(spec.name.to_string(), value);
            }
            let given = r.params.iter().map(|(n, v)| (n, v, format!("{key}.params.{n}")));
            let contract_wide = raw.params.iter().map(|(n, v)| (n, v, format!("params.{n}")));
            for (name, value, pkey) in given.chain(contract_wide) {
                if op.param(name).is_none() {
                    let known: Vec<&str> = op.params.iter().map(|p| p.name).collect();
                    let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                    return Err(source.error(
                        value.span().start,
                        pkey,
                        format!("op {} has no parameter `{name}` (its parameters: {known})", op.name),
                    ));
                }
            }
            if let Some(kernel) = op.kernel {
                kernel
                    .check_dtypes(|t| dtypes.get(t).copied())
                    .map_err(|e| source.error(spanned.span().start, format!("{key}.dtypes"), format!("record `{name}`: {e}")))?;
            }
            records.push(Record { name, dtypes, tolerances, params, inputs: BTreeMap::new() });
        }

        // shape cases: every symbol of the op given, nothing else, every shape positive and bounded
        if raw.shapes.cases.get_ref().is_empty() {
            return Err(source.error(raw.shapes.cases.span().start, "shapes.cases", "a contract needs at least one shape case"));
        }
        let shapes: Vec<(&str, ShapeExpr)> =
            op.tensors.iter().map(|t| (t.name, ShapeExpr::parse(t.shape).expect("engine signature"))).collect();
        let mut cases = Vec::new();
        for (i, case) in raw.shapes.cases.get_ref().iter().enumerate() {
            let key = format!("shapes.cases[{i}]");
            let at = case.span().start;
            let mut symbols = Symbols::new();
            let mut gpu_only = None;
            for (name, spanned) in case.get_ref() {
                let vkey = format!("{key}.{name}");
                if name == "gpu_only" {
                    let why = spanned.get_ref().as_str().map(str::trim).filter(|w| !w.is_empty() && !w.contains('\n'));
                    let why = why.ok_or_else(|| {
                        source.error(spanned.span().start, &vkey, "`gpu_only` says in one line why only a GPU runs the case")
                    })?;
                    gpu_only = Some(why.to_string());
                    continue;
                }
                let value = match spanned.get_ref() {
                    toml::Value::Integer(v) => Spanned::new(spanned.span(), *v),
                    other => {
                        let message = format!("invalid type: {} {other}, expected i64", other.type_str());
                        return Err(source.error(spanned.span().start, &vkey, message));
                    }
                };
                if !op.symbols.contains(&name.as_str()) {
                    return Err(source.error(
                        value.span().start,
                        format!("{key}.{name}"),
                        format!("undefined shape symbol `{name}`: op {} has {}", op.name, op.symbols.join(", ")),
                    ));
                }
                if *value.get_ref() <= 0 {
                    return Err(source.error(
                        value.span().start,
                        format!("{key}.{name}"),
                        format!("`{name}` = {} must be positive", value.get_ref()),
                    ));
                }
                symbols.insert(name.clone(), *value.get_ref());
            }
            if let Some(missing) = op.symbols.iter().find(|s| !symbols.contains_key(**s)) {
                return Err(source.error(
                    at,
                    &key,
                    format!("undefined shape symbol `{missing}`: the case must give {}", op.symbols.join(", ")),
                ));
            }
            let mut tensor_shapes = BTreeMap::new();
            for (name, shape) in &shapes {
                let dims = shape.evaluate(&symbols).map_err(|e| source.error(at, &key, format!("tensor `{name}`: {e}")))?;
                let bytes = dims
                    .iter()
                    .try_fold(op.tensor(name).unwrap().dtypes.iter().map(|d| d.size()).max().unwrap_or(1), |a, d| a.checked_mul(*d));
                let cap = if gpu_only.is_some() { MAX_GPU_ONLY_TENSOR_BYTES } else { MAX_TENSOR_BYTES };
                match bytes {
                    Some(b) if b <= cap => {}
                    _ => {
                        return Err(source.error(at, &key, format!("tensor `{name}` of shape {dims:?} is over the {} MiB cap", cap >> 20)));
                    }
                }
                tensor_shapes.insert(name.to_string(), dims);
            }
            cases.push(Case { symbols, shapes: tensor_shapes, gpu_only });
        }
        requires_hold(&source, op, &records, &cases, raw.shapes.cases.get_ref())?;
        reference_tolerances(&source, &reference, &records)?;
        if let Reference::Replaces(replaced) = &reference {
            let at = r.replaces.as_ref().map_or(0, |s| s.span().start);
            reference::check_replaced(&source, at, replaced, &records, &cases)?;
        }
        if cases.iter().all(|c| c.gpu_only.is_some()) {
            return Err(source.error(raw.shapes.cases.span().start, "shapes.cases", "every case is GPU-only: the host would run nothing"));
        }

        // inputs: a generator for every input tensor, none for anything else; a record may
        // give some tensors generators of its own
        let mut inputs = BTreeMap::new();
        for (name, text) in raw.inputs.get_ref() {
            inputs.insert(name.clone(), input_spec(&source, op, &cases, &format!("inputs.{name}"), name, text)?);
        }
        if let Some(missing) = op.tensors.iter().find(|t| t.role == Role::Input && !inputs.contains_key(t.name)) {
            return Err(source.error(raw.inputs.span().start, "inputs", format!("no generator for input tensor `{}`", missing.name)));
        }
        for (i, (record, spanned)) in records.iter_mut().zip(&raw.record).enumerate() {
            for (name, text) in &spanned.get_ref().inputs {
                record.inputs.insert(name.clone(), input_spec(&source, op, &cases, &format!("record[{i}].inputs.{name}"), name, text)?);
            }
        }

        let mut findings = Vec::new();
        for (i, f) in raw.finding.iter().enumerate() {
            findings.push(finding(&source, op, &records, cases.len(), i, f)?);
        }

        let mut limits = BTreeMap::new();
        for (arch, table) in &raw.limits {
            limits.insert(arch.clone(), parse_limits(&source, arch, table)?);
        }

        let timeout_seconds = raw.timeout_seconds.as_ref().map(|t| timeout(&source, t)).transpose()?;
        let nonfinite = nonfinite_policy(&source, raw.nonfinite.as_ref(), &reference)?;
        domain::check(&source, op, &records, &cases, &written(&raw))?;
        let seams = seams(&source, raw.seams.as_ref(), op)?;
        if let (Seams::None(_), Some((i, f))) = (&seams, findings.iter().enumerate().find(|(_, f)| f.gate == Gate::Seams)) {
            return Err(ContractError {
                file: file.to_string(),
                line: f.line,
                key: format!("finding[{i}].gate"),
                message: "a finding at gate seams in a contract whose seams are `none`: gate 5 never runs here".into(),
            });
        }

        Ok(Contract {
            nonfinite,
            seams,
            file: file.to_string(),
            limits,
            timeout_seconds,
            op,
            op_line: source.line_of(raw.op.span().start),
            about: raw.about,
            records,
            cases,
            inputs,
            reference,
            kernel: place,
            folder: folder.to_path_buf(),
            findings,
        })
    }

    pub fn record(&self, name: &str) -> Option<&Record> {
        self.records.iter().find(|r| r.name == name)
    }
}

/// Where the contract writes what the domain's lints read.
fn written(raw: &RawContract) -> domain::Written<'_> {
    let declared = raw.kernel.as_ref().map(|k| kernel::param_offsets(k.get_ref())).unwrap_or_default();
    let mut params: BTreeMap<String, (usize, String)> =
        declared.into_iter().map(|(name, at)| (name.clone(), (at, format!("kernel.params.{name}")))).collect();
    for (name, value) in &raw.params {
        params.insert(name.clone(), (value.span().start, format!("params.{name}")));
    }
    domain::Written {
        cases: raw.shapes.cases.span().start,
        records: raw.record.first().map_or(0, |r| r.span().start),
        requires: raw.kernel.as_ref().map(|k| kernel::requires_offsets(k.get_ref())).unwrap_or_default(),
        params,
        exempt: raw.exempt.as_ref(),
    }
}

/// What a reference asks of the tolerances: a replacement is bit-equal (`exact` only), and a
/// C++ function's outputs bound no `atol` (the check of an atol against the outputs' size runs
/// when contracts load, and a C++ function runs only in a record's process).
fn reference_tolerances(source: &Source, reference: &Reference, records: &[Record]) -> Result<(), ContractError> {
    for record in records {
        for (output, bound) in &record.tolerances {
            let refused = match (reference, &bound.tolerance) {
                (Reference::Replaces(r), t) if *t != Tolerance::Exact => {
                    Some(format!("`{t}` for `{output}`: a kernel that replaces `{}` matches its bits, `exact`", r.op.name))
                }
                (Reference::Cpp(_), Tolerance::Relative { atol, .. }) if *atol > 0.0 => Some(format!(
                    "atol={atol:e} for `{output}`: a C++ reference runs only in a record's process, so an atol cannot be held to the \
                     outputs' size when contracts load; bound it by rtol (atol=0) or ulp(N)"
                )),
                _ => None,
            };
            if let Some(message) = refused {
                return Err(ContractError { file: source.file.to_string(), line: bound.line, key: bound.key.clone(), message });
            }
        }
    }
    Ok(())
}

/// Every case meets the conditions the op's kernel requires (`kernel.requires`), for every
/// record's parameters: a case the launch would refuse is refused here, where it is written.
fn requires_hold(source: &Source, op: &OpSpec, records: &[Record], cases: &[Case], raw: &[RawCase]) -> Result<(), ContractError> {
    let Some(kernel) = op.kernel else { return Ok(()) };
    for ((i, case), written) in cases.iter().enumerate().zip(raw) {
        for record in records {
            let values = engine::ops::data::expression_values(op, &case.symbols, &record.params);
            if let Err(unmet) = kernel.check_requires(&values) {
                // a condition that reads a parameter holds or not by the record
                let by_record = match &unmet {
                    engine::ops::data::Unmet::Requires { index, .. } => {
                        kernel.requires[*index].symbols().iter().any(|s| op.param(s).is_some())
                    }
                    _ => false,
                };
                let record = if by_record { format!(" (record `{}`)", record.name) } else { String::new() };
                return Err(source.error(written.span().start, format!("shapes.cases[{i}]"), format!("{unmet}{record}")));
            }
        }
    }
    Ok(())
}

/// One input tensor's generator at `key`: the tensor must be an input of the op, its shape
/// symbols the op's, and an `int` range non-empty and within i64 in every case.
fn input_spec(
    source: &Source,
    op: &OpSpec,
    cases: &[Case],
    key: &str,
    name: &str,
    text: &Spanned<String>,
) -> Result<InputSpec, ContractError> {
    let at = text.span().start;
    let tensor_names = || op.tensors.iter().map(|t| t.name).collect::<Vec<_>>().join(", ");
    match op.tensor(name) {
        Some(t) if t.role == Role::Input => {}
        Some(_) => return Err(source.error(at, key, format!("`{name}` is an output of {}, not an input", op.name))),
        None => return Err(source.error(at, key, format!("op {} has no tensor `{name}` (its tensors: {})", op.name, tensor_names()))),
    }
    let generator = InputSpec::parse(text.get_ref()).map_err(|e| source.error(at, key, e))?;
    if let Some(s) = generator.symbols().into_iter().find(|s| !op.symbols.contains(s)) {
        return Err(source.error(at, key, format!("undefined shape symbol `{s}`: op {} has {}", op.name, op.symbols.join(", "))));
    }
    if let Generator::Int { low, high } = &generator.generator {
        for (i, case) in cases.iter().enumerate() {
            let range = low.evaluate(&case.symbols).and_then(|l| Ok((l, high.evaluate(&case.symbols)?)));
            let problem = match range {
                Ok((l, h)) if l < h && h.checked_sub(l).is_some() => continue,
                Ok((l, h)) if l < h => format!("int({l}, {h}) is wider than i64 holds (its width {h} - {l} overflows)"),
                Ok((l, h)) => format!("int({l}, {h}) is an empty range"),
                Err(e) => e,
            };
            let message = format!("`{}`: {problem} in shapes.cases[{i}] {}", text.get_ref(), case.describe(op));
            return Err(source.error(at, key, message));
        }
    }
    Ok(generator)
}

/// One `[[finding]]`: it must name its tensor and a piece of the failure's message, and any
/// record or case it narrows to must exist.
fn finding(
    source: &Source,
    op: &OpSpec,
    records: &[Record],
    case_count: usize,
    i: usize,
    f: &Spanned<RawFinding>,
) -> Result<Finding, ContractError> {
    let raw = f.get_ref();
    let key = |k: &str| format!("finding[{i}].{k}");
    let at = f.span().start;
    let gate = Gate::parse(raw.gate.get_ref()).map_err(|e| source.error(raw.gate.span().start, key("gate"), e))?;
    if raw.reason.trim().is_empty() {
        return Err(source.error(at, key("reason"), "a finding needs its reason"));
    }
    if let Some(record) = &raw.record
        && !records.iter().any(|r| &r.name == record)
    {
        return Err(source.error(at, key("record"), format!("no record named `{record}`")));
    }
    // `kernel` names what is about the kernel as a whole: its limits, or (shapes) the host
    // build's static check of its offsets
    let tensors: Vec<&str> = if gate == Gate::Limits {
        vec![KERNEL_TENSOR]
    } else {
        op.tensors.iter().map(|t| t.name).chain(std::iter::once(KERNEL_TENSOR)).collect()
    };
    let example =
        if gate == Gate::Limits { KERNEL_TENSOR } else { op.tensors.iter().find(|t| t.role == Role::Output).map_or("", |t| t.name) };
    let tensor = raw
        .tensor
        .as_ref()
        .ok_or_else(|| source.error(at, key("tensor"), format!("a finding names the tensor it covers (`tensor = \"{example}\"`)")))?;
    if !tensors.contains(&tensor.get_ref().as_str()) {
        let name = tensor.get_ref();
        let message = if gate == Gate::Limits {
            format!("unknown tensor `{name}`: a limits finding covers the whole kernel, `tensor = \"{KERNEL_TENSOR}\"`")
        } else {
            format!("unknown tensor `{name}`: op {} has {}", op.name, tensors.join(", "))
        };
        return Err(source.error(tensor.span().start, key("tensor"), message));
    }
    let matches = raw.matches.as_ref().ok_or_else(|| {
        source.error(at, key("matches"), "a finding gives a piece of the failure's message it covers (`matches = \"...\"`)")
    })?;
    if matches.get_ref().trim().is_empty() {
        return Err(source.error(matches.span().start, key("matches"), "an empty `matches` would cover any message"));
    }
    let cases = match &raw.cases {
        None => None,
        Some(list) if gate == Gate::Limits => {
            return Err(source.error(list.span().start, key("cases"), "a limits finding covers the kernel, not shape cases"));
        }
        Some(list) if list.get_ref().is_empty() => {
            return Err(source.error(
                list.span().start,
                key("cases"),
                "an empty list covers nothing: leave `cases` out to cover every case",
            ));
        }
        Some(list) => Some(
            list.get_ref()
                .iter()
                .map(|c| match usize::try_from(*c.get_ref()) {
                    Ok(index) if index < case_count => Ok(index),
                    _ => Err(source.error(
                        c.span().start,
                        key("cases"),
                        format!("case {} is out of range: [shapes].cases has {case_count} (0 to {})", c.get_ref(), case_count - 1),
                    )),
                })
                .collect::<Result<Vec<usize>, _>>()?,
        ),
    };
    Ok(Finding {
        gate,
        arch: raw.arch.clone(),
        record: raw.record.clone(),
        tensor: tensor.get_ref().clone(),
        matches: matches.get_ref().clone(),
        cases,
        reason: raw.reason.clone(),
        line: source.line_of(at),
    })
}

/// `[seams]` (`axis`, optional `cuts` and `batches`) or `seams = "none: <reason>"`: every
/// contract says one or the other. The axis must be a shape symbol that every tensor using it
/// has as exactly its first dimension (the rows a cut slices), and every output must use it:
/// an output without rows (a cache all rows write) has no row of its own to compare.
fn seams(source: &Source, raw: Option<&Spanned<toml::Value>>, op: &OpSpec) -> Result<Seams, ContractError> {
    let Some(raw) = raw else {
        return Err(source.error(
            0,
            "seams",
            "no statement on seams: add [seams] with the row axis (`axis = \"rows\"`), or `seams = \"none: <why the rows are not independent>\"`",
        ));
    };
    let at = raw.span().start;
    match raw.get_ref() {
        toml::Value::String(text) => match text.strip_prefix("none:").map(str::trim) {
            Some(reason) if !reason.is_empty() => Ok(Seams::None(reason.to_string())),
            _ => Err(source.error(
                at,
                "seams",
                format!("`{text}`: give the table [seams] with the row axis, or `none: <why the rows are not independent>`"),
            )),
        },
        toml::Value::Table(_) => {
            let table: SeamsTableOnly = toml::from_str(source.text).map_err(|e| source.toml_error(&e))?;
            row_axis(source, table.seams.get_ref(), op).map(Seams::Rows)
        }
        other => Err(source.error(at, "seams", format!("`seams = {other}`: give the table [seams] or `seams = \"none: <reason>\"`"))),
    }
}

/// The largest cut or batch `[seams]` takes: a piece of more rows than this is a whole batch
/// of any case a host holds.
pub const MAX_SEAM_ROWS: i64 = 1 << 16;

fn row_axis(source: &Source, raw: &RawSeams, op: &OpSpec) -> Result<RowAxis, ContractError> {
    let axis = raw.axis.get_ref().trim();
    let at = raw.axis.span().start;
    if !op.symbols.contains(&axis) {
        return Err(source.error(
            at,
            "seams.axis",
            format!("no shape symbol `{axis}` in op {} (its symbols: {})", op.name, op.symbols.join(", ")),
        ));
    }
    for tensor in op.tensors {
        let shape = ShapeExpr::parse(tensor.shape).expect("engine signature");
        let first_is_axis = matches!(shape.dims.first(), Some(engine::shape_expr::Expr::Symbol(s)) if s == axis);
        let elsewhere = shape.dims.iter().skip(1).any(|d| d.symbols().contains(&axis));
        let uses = shape.symbols().contains(&axis);
        if uses && (!first_is_axis || elsewhere) {
            return Err(source.error(
                at,
                "seams.axis",
                format!("tensor `{}` ({}) uses `{axis}` other than as exactly its first dimension: gate 5 cuts rows along the first dimension only", tensor.name, tensor.shape),
            ));
        }
        if tensor.role == Role::Output && !uses {
            return Err(source.error(
                at,
                "seams.axis",
                format!(
                    "output `{}` ({}) has no `{axis}` rows: every row writes the same output, so no row has bytes of its own; say `seams = \"none: <why>\"`",
                    tensor.name, tensor.shape
                ),
            ));
        }
    }
    let sizes = |list: &Option<Spanned<Vec<Spanned<i64>>>>, key: &str, least: i64| -> Result<Option<Vec<usize>>, ContractError> {
        let Some(list) = list else { return Ok(None) };
        if list.get_ref().is_empty() {
            return Err(source.error(list.span().start, key, "an empty list: leave the key out for the default"));
        }
        list.get_ref()
            .iter()
            .map(|v| match *v.get_ref() {
                n if (least..=MAX_SEAM_ROWS).contains(&n) => Ok(n as usize),
                n => Err(source.error(v.span().start, key, format!("{n} rows: a size is {least} to {MAX_SEAM_ROWS}"))),
            })
            .collect::<Result<Vec<usize>, _>>()
            .map(Some)
    };
    let cuts = sizes(&raw.cuts, "seams.cuts", 1)?;
    // a batch of one row is the row alone: cut 1 already runs it
    let mut batches = sizes(&raw.batches, "seams.batches", 2)?.unwrap_or_default();
    batches.sort_unstable();
    batches.dedup();
    Ok(RowAxis { axis: axis.to_string(), cuts, batches })
}

/// `[nonfinite]`: `policy = "propagate"`, `"ignore"` (where the oracle defines its value with
/// NaN left out) or `"unspecified"` with a `reason`. Every contract states one.
fn nonfinite_policy(source: &Source, raw: Option<&Spanned<RawNonfinite>>, reference: &Reference) -> Result<NonfinitePolicy, ContractError> {
    let Some(raw) = raw else {
        return Err(source.error(
            0,
            "nonfinite",
            "no policy for non-finite inputs: add [nonfinite] with policy = \"propagate\", \"ignore\" or \"unspecified\" (with a reason)",
        ));
    };
    let (policy, at) = (raw.get_ref().policy.get_ref().as_str(), raw.get_ref().policy.span().start);
    let reason = raw.get_ref().reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
    match policy {
        "propagate" => Ok(NonfinitePolicy::Propagate),
        // a C++ function or a replaced kernel defines its value on NaN inputs itself
        "ignore" if !matches!(reference, Reference::Oracle { name, .. } if !oracle::ignores_nan(name)) => Ok(NonfinitePolicy::Ignore),
        "ignore" => Err(source.error(
            at,
            "nonfinite.policy",
            format!("oracle `{}` does not define its value with NaN inputs left out: use propagate or unspecified", reference.name()),
        )),
        "unspecified" => match reason {
            Some(r) => Ok(NonfinitePolicy::Unspecified(r.to_string())),
            None => Err(source.error(at, "nonfinite.policy", "`unspecified` needs a stated reason: add `reason = \"...\"` to [nonfinite]")),
        },
        other => Err(source.error(at, "nonfinite.policy", format!("unknown policy `{other}` (propagate, ignore, unspecified)"))),
    }
}

/// A record's time limit: whole seconds, at least 1, at most a day.
fn timeout(source: &Source, value: &Spanned<i64>) -> Result<u64, ContractError> {
    match *value.get_ref() {
        seconds @ 1..=86_400 => Ok(seconds as u64),
        other => Err(source.error(value.span().start, "timeout_seconds", format!("{other} is not a time limit (1 to 86400 seconds)"))),
    }
}

/// `[limits.gfx1201]`: `compiler = "..."`, recorded figures as integers, `budget = { .. }`.
fn parse_limits(source: &Source, arch: &str, table: &Spanned<toml::Table>) -> Result<Limits, ContractError> {
    let at = table.span().start;
    let key = format!("limits.{arch}");
    let names = limits::figure_names(arch)
        .ok_or_else(|| source.error(at, &key, format!("unknown architecture `{arch}` (gfx targets such as gfx1201, or sm_90)")))?;
    let figure = |name: &str, value: &toml::Value, key: String| -> Result<u64, ContractError> {
        if !names.contains(&name) {
            return Err(source.error(at, key, format!("unknown figure `{name}` for {arch} (known: {})", names.join(", "))));
        }
        value
            .as_integer()
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| source.error(at, key, format!("`{name}` must be a non-negative integer")))
    };
    let mut limits = Limits { line: source.line_of(at), ..Limits::default() };
    for (name, value) in table.get_ref() {
        match name.as_str() {
            "compiler" => {
                limits.compiler =
                    Some(value.as_str().ok_or_else(|| source.error(at, format!("{key}.compiler"), "must be a string"))?.to_string())
            }
            "budget" => {
                let budget = value.as_table().ok_or_else(|| source.error(at, format!("{key}.budget"), "must be a table of figures"))?;
                for (figure_name, v) in budget {
                    limits.budget.insert(figure_name.clone(), figure(figure_name, v, format!("{key}.budget.{figure_name}"))?);
                }
            }
            other => {
                limits.recorded.insert(other.to_string(), figure(other, value, format!("{key}.{other}"))?);
            }
        }
    }
    Ok(limits)
}

type ToleranceMap = BTreeMap<String, Bound>;

fn tolerances(
    source: &Source,
    table: &str,
    raw: &Spanned<RawTolerance>,
    reason: Option<&str>,
    outputs: &[&str],
    defaults: Option<&ToleranceMap>,
) -> Result<ToleranceMap, ContractError> {
    let at = raw.span().start;
    let key = format!("{table}.tolerance");
    let reason = reason.map(str::trim).filter(|r| !r.is_empty()).map(str::to_string);
    let parse = |text: &str, key: &str| -> Result<Bound, ContractError> {
        let t = Tolerance::parse(text).map_err(|e| source.error(at, key, e))?;
        if t.needs_reason() && reason.is_none() {
            let loose = if matches!(t, Tolerance::Ulp(_)) {
                format!(" (more than {} ulp is loose)", crate::tolerance::LOOSE_ULP)
            } else {
                String::new()
            };
            return Err(source.error(at, key, format!("`{text}` needs a stated reason{loose}: add `reason = \"...\"` to [{table}]")));
        }
        Ok(Bound { tolerance: t, reason: reason.clone(), key: key.to_string(), line: source.line_of(at) })
    };
    let mut map = ToleranceMap::new();
    match raw.get_ref() {
        RawTolerance::All(text) => {
            let t = parse(text, &key)?;
            for o in outputs {
                map.insert(o.to_string(), t.clone());
            }
        }
        RawTolerance::PerOutput(per) => {
            for (output, text) in per {
                if !outputs.contains(&output.as_str()) {
                    return Err(source.error(
                        at,
                        format!("{key}.{output}"),
                        format!("`{output}` is not an output (outputs: {})", outputs.join(", ")),
                    ));
                }
                map.insert(output.clone(), parse(text, &format!("{key}.{output}"))?);
            }
            for o in outputs {
                if !map.contains_key(*o) {
                    match defaults.and_then(|d| d.get(*o)) {
                        Some(t) => {
                            map.insert(o.to_string(), t.clone());
                        }
                        None => return Err(source.error(at, &key, format!("no tolerance for output `{o}`"))),
                    }
                }
            }
        }
    }
    Ok(map)
}

/// A planted fault and where it must go red: at a gate, or with a fault (a crash, a timeout,
/// a device fault) that the runner sees from outside the record's process. What is planted is
/// a faulty kernel (`source`), parameters that change the op's launch (`params`: the unpinned
/// BLAS path of `projection_bf16`), or both.
#[derive(Clone, Debug)]
pub struct Control {
    pub file: String,
    /// Only on these architectures (a limits control tuned to one compiler's figures, a
    /// fault that only a GPU shows); every architecture when empty. `host` means any host.
    pub arch: Vec<String>,
    pub contract: String,
    pub record: String,
    pub planted: Planted,
    pub bug: String,
    /// The faulty kernel source (absolute) and as reports show it; none where the control
    /// plants only parameters (the op's own kernel, or its library, runs).
    pub source: Option<PathBuf>,
    pub source_display: Option<String>,
    /// Parameters of the op in place of the record's (`params = { chunk = 0 }`), each with
    /// its line: the runner checks them against the op.
    pub params: BTreeMap<String, (f64, usize)>,
    /// `cases = [{ m = 4096, n = 4096, k = 4096 }]`: the contract's cases it runs, each named
    /// by every symbol's value (an index would silently name another case once the contract's
    /// list changes), a GPU-only one among them where its fault shows only at that size; when
    /// absent, every case that is not GPU-only. [`Control::case_indices`] finds them.
    pub cases: Option<Vec<Symbols>>,
    /// The control's own time limit (a kernel that never returns need not wait the default).
    pub timeout_seconds: Option<u64>,
    /// Planted for `--strict-limits` (figures that moved within budget): runs only under it.
    pub strict_limits: bool,
    /// Where `contract` and `record` are: only the runner can tell they name nothing. And
    /// where `source` is: only the runner knows the include folders its kernel is built with.
    contract_line: usize,
    record_line: usize,
    source_line: usize,
    gate_line: usize,
    cases_line: usize,
}

/// A control's case, `{ m = 4096, n = 4096, k = 4096 }`: each symbol a whole number.
fn case_named(value: &toml::Value) -> Result<Symbols, String> {
    let Some(table) = value.as_table() else {
        return Err(format!(
            "`{value}` names no case: name it by its symbols, as `{{ m = 4096, n = 4096, k = 4096 }}` (an index would name another \
             case once the contract's list changes)"
        ));
    };
    if table.is_empty() {
        return Err("an empty table names no case: give every symbol of the case".into());
    }
    table
        .iter()
        .map(|(name, v)| match v.as_integer() {
            Some(n) => Ok((name.clone(), n)),
            None => Err(format!("`{name} = {v}` is not a whole number")),
        })
        .collect()
}

/// `{m = 4096, n = 4096}`, in the symbols' sorted order (a control's case that matches none).
fn describe_symbols(symbols: &Symbols) -> String {
    let parts: Vec<String> = symbols.iter().map(|(name, v)| format!("{name} = {v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawControl {
    #[serde(default)]
    arch: Option<Spanned<OneOrMany>>,
    contract: Spanned<String>,
    record: Spanned<String>,
    gate: Option<Spanned<String>>,
    fault: Option<Spanned<String>>,
    bug: Spanned<String>,
    source: Option<Spanned<String>>,
    #[serde(default)]
    params: BTreeMap<String, Spanned<f64>>,
    cases: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    timeout_seconds: Option<Spanned<i64>>,
    strict_limits: Option<Spanned<bool>>,
}

/// A control's `source`: a file beside it by name that, with every symlink followed, still
/// resolves in the repository or in the control's own folder (one the user gave on the
/// command line).
fn control_source(source: &Source, file: &Spanned<String>, dir: &Path, repository: &Path) -> Result<PathBuf, ContractError> {
    let at = file.span().start;
    let relative = Path::new(file.get_ref());
    if relative.is_absolute() || relative.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(source.error(at, "source", format!("`{}` must be a file beside the control", relative.display())));
    }
    let kernel = dir.join(relative);
    let shown = kernel.strip_prefix(repository).unwrap_or(&kernel).display().to_string();
    let shown = crate::text::escaped(&shown).into_owned();
    match Confinement::new([repository, dir]).resolve(&kernel, &shown) {
        Ok(real) if real.is_file() => Ok(kernel),
        Ok(_) => Err(source.error(at, "source", format!("`{shown}` is not a file"))),
        Err(Escape::Unresolved { .. }) => Err(source.error(at, "source", format!("no such file {shown}"))),
        Err(e) => Err(source.error(at, "source", e.to_string())),
    }
}

impl Control {
    /// `dir` is the folder of the control; `repository` the root reports name paths from.
    pub fn parse(file: &str, text: &str, dir: &Path, repository: &Path) -> Result<Control, ContractError> {
        let source = Source { file, text };
        source.plain_text()?;
        let raw: RawControl = toml::from_str(text).map_err(|e| source.toml_error(&e))?;
        let planted = match (&raw.gate, &raw.fault) {
            (Some(gate), None) => Planted::Gate(Gate::parse(gate.get_ref()).map_err(|e| source.error(gate.span().start, "gate", e))?),
            (None, Some(fault)) => Planted::Fault(Fault::parse(fault.get_ref()).map_err(|e| source.error(fault.span().start, "fault", e))?),
            (Some(_), Some(fault)) => {
                return Err(source.error(fault.span().start, "fault", "a control is planted at a gate or with a fault, not both"));
            }
            (None, None) => return Err(source.error(0, "gate", "a control names the gate where it must go red (or a `fault`)")),
        };
        let bug = raw.bug.get_ref().trim().to_string();
        if bug.is_empty() || bug.contains('\n') {
            return Err(source.error(raw.bug.span().start, "bug", "the bug must be said in one line"));
        }
        let arch = match raw.arch.as_ref().map(|a| (a.span().start, a.get_ref())) {
            None => Vec::new(),
            Some((_, OneOrMany::One(one))) => vec![one.clone()],
            Some((at, OneOrMany::Many(many))) => {
                if many.is_empty() {
                    return Err(source.error(at, "arch", "an empty list runs the control nowhere: leave `arch` out to run it everywhere"));
                }
                many.clone()
            }
        };
        let timeout_seconds = raw.timeout_seconds.as_ref().map(|t| timeout(&source, t)).transpose()?;
        let strict_limits = raw.strict_limits.as_ref().is_some_and(|s| *s.get_ref());
        if let (Some(strict), true) = (&raw.strict_limits, strict_limits && planted != Planted::Gate(Gate::Limits)) {
            return Err(source.error(
                strict.span().start,
                "strict_limits",
                "only a control planted at gate limits can need --strict-limits",
            ));
        }
        let (kernel, source_line) = match &raw.source {
            Some(file) => (Some(control_source(&source, file, dir, repository)?), source.line_of(file.span().start)),
            None if raw.params.is_empty() => {
                return Err(source.error(
                    0,
                    "source",
                    "a control plants a faulty kernel (`source`, a file beside it) or parameters that change the op's launch (`params`)",
                ));
            }
            None => (None, 0),
        };
        let cases = match &raw.cases {
            None => None,
            Some(list) if list.get_ref().is_empty() => {
                return Err(source.error(list.span().start, "cases", "an empty list runs nothing: leave `cases` out to run every case"));
            }
            Some(list) => Some(
                list.get_ref()
                    .iter()
                    .map(|c| case_named(c.get_ref()).map_err(|e| source.error(c.span().start, "cases", e)))
                    .collect::<Result<Vec<Symbols>, _>>()?,
            ),
        };
        Ok(Control {
            file: file.to_string(),
            arch,
            contract: raw.contract.get_ref().clone(),
            record: raw.record.get_ref().clone(),
            planted,
            bug,
            source_display: kernel.as_ref().map(|k| k.strip_prefix(repository).unwrap_or(k).display().to_string()),
            source: kernel,
            params: raw.params.iter().map(|(name, v)| (name.clone(), (*v.get_ref(), source.line_of(v.span().start)))).collect(),
            cases,
            timeout_seconds,
            strict_limits,
            contract_line: source.line_of(raw.contract.span().start),
            record_line: source.line_of(raw.record.span().start),
            source_line,
            gate_line: raw.gate.as_ref().map_or(1, |g| source.line_of(g.span().start)),
            cases_line: raw.cases.as_ref().map_or(1, |c| source.line_of(c.span().start)),
        })
    }

    /// Whether the control runs on `arch` (`host` in its list means any `host-<cpu>`).
    pub fn runs_on(&self, arch: &str) -> bool {
        self.arch.is_empty() || self.arch.iter().any(|a| a == arch || (a == "host" && arch.starts_with("host-")))
    }

    /// An error at the control's `contract`, `record` or `source`, found when the contracts
    /// are loaded.
    pub fn error(&self, key: &str, message: impl Into<String>) -> ContractError {
        let line = match key {
            "record" => self.record_line,
            "source" => self.source_line,
            "gate" => self.gate_line,
            "cases" => self.cases_line,
            _ => match key.strip_prefix("params.").and_then(|p| self.params.get(p)) {
                Some((_, line)) => *line,
                None => self.contract_line,
            },
        };
        ContractError { file: self.file.clone(), line, key: key.to_string(), message: message.into() }
    }

    /// Checks what only the contract can tell: its record, the cases it names, and its
    /// parameters against the op's (each a parameter the op has, an integer one whole).
    pub fn check_against(&self, contract: &Contract) -> Result<(), ContractError> {
        if contract.record(&self.record).is_none() {
            let names: Vec<&str> = contract.records.iter().map(|r| r.name.as_str()).collect();
            return Err(self.error("record", format!("{} has no record `{}` (records: {})", contract.file, self.record, names.join("; "))));
        }
        if let Some(missing) = self.cases.iter().flatten().find(|named| !contract.cases.iter().any(|c| &c.symbols == *named)) {
            let listed: Vec<String> = contract.cases.iter().map(|c| c.describe(contract.op)).collect();
            return Err(self.error(
                "cases",
                format!("{} has no case {} (its cases: {})", contract.file, describe_symbols(missing), listed.join(", ")),
            ));
        }
        for (name, (value, _)) in &self.params {
            let key = format!("params.{name}");
            let Some(spec) = contract.op.param(name) else {
                let known: Vec<&str> = contract.op.params.iter().map(|p| p.name).collect();
                let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                return Err(self.error(&key, format!("op {} has no parameter `{name}` (its parameters: {known})", contract.op.name)));
            };
            if !value.is_finite() || (spec.integer && (value.fract() != 0.0 || value.abs() > i32::MAX as f64)) {
                let kind = if spec.integer { "a whole number that fits an int" } else { "finite" };
                return Err(self.error(&key, format!("`{name}` = {value} is not {kind}")));
            }
        }
        if self.planted == Planted::Gate(Gate::Seams) && contract.seams.axis().is_none() {
            return Err(self.error("gate", format!("{} says its seams are `none`: gate 5 never runs for it", contract.file)));
        }
        Ok(())
    }

    /// The indices of the contract's cases this control names; `None` where it names none
    /// (it runs every case that is not GPU-only). A named case the contract no longer has is
    /// left out here and refused by [`Control::check_against`].
    pub fn case_indices(&self, contract: &Contract) -> Option<Vec<usize>> {
        let named = self.cases.as_ref()?;
        Some((0..contract.cases.len()).filter(|i| named.contains(&contract.cases[*i].symbols)).collect())
    }

    /// The record as the control runs it: its parameters in place of the record's.
    pub fn applied_to(&self, record: &Record) -> Record {
        let mut record = record.clone();
        for (name, (value, _)) in &self.params {
            record.params.insert(name.clone(), *value);
        }
        record
    }

    pub fn load(path: &Path, display: &str, repository: &Path) -> Result<Control, ContractError> {
        let text = read_text(path, display)?;
        Control::parse(display, &text, path.parent().unwrap_or(Path::new(".")), repository)
    }
}

#[cfg(test)]
mod control_tests {
    use super::*;

    fn control(text: &str) -> Result<Control, ContractError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.hip"), "").unwrap();
        Control::parse("controls/c.toml", text, dir.path(), dir.path())
    }

    const BASE: &str = "contract = \"tf_add\"\nrecord = \"f32\"\nbug = \"spins\"\nsource = \"k.hip\"\n";

    #[test]
    fn a_control_is_planted_at_a_gate_or_with_a_fault_never_both_or_neither() {
        assert_eq!(control(&format!("{BASE}gate = \"repeat\"")).unwrap().planted, Planted::Gate(Gate::Repeat));
        assert_eq!(control(&format!("{BASE}fault = \"device-fault\"")).unwrap().planted, Planted::Fault(Fault::DeviceFault));
        let both = control(&format!("{BASE}gate = \"repeat\"\nfault = \"crash\"")).unwrap_err();
        assert_eq!((both.line, both.key.as_str()), (6, "fault"), "{both}");
        let neither = control(BASE).unwrap_err();
        assert!(neither.message.contains("names the gate"), "{neither}");
        let unknown = control(&format!("{BASE}fault = \"hang\"")).unwrap_err();
        assert_eq!((unknown.line, unknown.key.as_str()), (5, "fault"), "{unknown}");
        assert!(unknown.message.contains("crash, timeout, device-fault"), "{unknown}");
    }

    #[test]
    fn time_limits_are_whole_seconds_within_a_day() {
        let c = control(&format!("{BASE}fault = \"timeout\"\ntimeout_seconds = 5")).unwrap();
        assert_eq!(c.timeout_seconds, Some(5));
        for bad in ["0", "-3", "86401"] {
            let e = control(&format!("{BASE}fault = \"timeout\"\ntimeout_seconds = {bad}")).unwrap_err();
            assert_eq!((e.line, e.key.as_str()), (6, "timeout_seconds"), "{e}");
        }
        let e = control(&format!("{BASE}fault = \"timeout\"\ntimeout_seconds = 2.5")).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
    }

    #[test]
    fn arch_takes_one_name_or_a_list_and_host_means_any_host() {
        let one = control(&format!("{BASE}gate = \"limits\"\narch = \"gfx1201\"")).unwrap();
        assert!(one.runs_on("gfx1201") && !one.runs_on("sm_90"));
        let many = control(&format!("{BASE}fault = \"device-fault\"\narch = [\"sm_90\", \"gfx1201\"]")).unwrap();
        assert!(many.runs_on("sm_90") && many.runs_on("gfx1201") && !many.runs_on("host-x86_64"));
        let host = control(&format!("{BASE}fault = \"crash\"\narch = \"host\"")).unwrap();
        assert!(host.runs_on("host-x86_64") && host.runs_on("host-aarch64") && !host.runs_on("sm_90"));
        assert!(control(&format!("{BASE}gate = \"shapes\"")).unwrap().runs_on("sm_90"));
        let empty = control(&format!("{BASE}gate = \"shapes\"\narch = []")).unwrap_err();
        assert_eq!(empty.key, "arch", "{empty}");
    }

    #[test]
    fn every_gate_may_be_planted_but_no_other_and_text_that_is_not_plain_is_refused() {
        for gate in Gate::ALL {
            assert_eq!(control(&format!("{BASE}gate = \"{gate}\"")).unwrap().planted, Planted::Gate(gate));
        }
        let e = control(&format!("{BASE}gate = \"seam\"")).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (5, "gate"), "{e}");
        assert!(e.message.contains("unknown gate `seam` (nonfinite, repeat, shapes, limits, seams)"), "{e}");
        for escape in ["\\n", "\\u001b[31m", "\\u0000", "\\u202e"] {
            for (key, line) in [("contract", 1), ("record", 2), ("bug", 3)] {
                let text = format!("{BASE}gate = \"repeat\"").replacen(&format!("{key} = \""), &format!("{key} = \"x{escape}"), 1);
                let e = control(&text).unwrap_err();
                assert_eq!((e.line, e.key.as_str()), (line, key), "{text}: {e}");
                assert!(e.message.contains("plain printable text in one line"), "{e}");
            }
        }
    }

    #[test]
    fn a_source_that_leads_outside_by_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (repository, outside) = (dir.path().join("repo"), dir.path().join("outside.hip"));
        std::fs::create_dir_all(repository.join("controls")).unwrap();
        std::fs::write(&outside, "").unwrap();
        std::os::unix::fs::symlink(&outside, repository.join("controls/k.hip")).unwrap();
        let e =
            Control::parse("controls/c.toml", &format!("{BASE}gate = \"repeat\""), &repository.join("controls"), &repository).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (4, "source"), "{e}");
        assert!(e.message.contains("`controls/k.hip` resolves outside the repository"), "{e}");
        let e = control(&format!("{BASE}gate = \"repeat\"").replace("k.hip", "none.hip")).unwrap_err();
        assert_eq!(e.message, "no such file none.hip", "{e}");
    }

    fn contract_of(op: &str) -> Contract {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../contracts/{op}.toml"));
        Contract::load(&path, &format!("contracts/{op}.toml")).unwrap()
    }

    #[test]
    fn a_control_plants_a_kernel_or_parameters_and_may_name_its_cases() {
        let params_only = BASE.replace("source = \"k.hip\"\n", "params = { chunk = 0 }\ncases = [{ m = 2, n = 6, k = 11 }]\n");
        let c = control(&format!("{params_only}gate = \"seams\"")).unwrap();
        let named: Symbols = [("k".to_string(), 11), ("m".to_string(), 2), ("n".to_string(), 6)].into();
        assert_eq!((c.source.as_ref(), c.params.get("chunk"), c.cases.as_deref()), (None, Some(&(0.0, 4)), Some(&[named][..])));
        let neither = BASE.replace("source = \"k.hip\"\n", "");
        let e = control(&format!("{neither}gate = \"seams\"")).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (1, "source"), "{e}");
        assert!(e.message.contains("a faulty kernel (`source`") && e.message.contains("(`params`)"), "{e}");
        for (cases, words) in [
            ("cases = []", "an empty list runs nothing"),
            ("cases = [5]", "`5` names no case: name it by its symbols"),
            ("cases = [{}]", "an empty table names no case"),
            ("cases = [{ m = 1.5 }]", "`m = 1.5` is not a whole number"),
        ] {
            let e = control(&format!("{BASE}gate = \"seams\"\n{cases}")).unwrap_err();
            assert_eq!((e.line, e.key.as_str()), (6, "cases"), "{e}");
            assert!(e.message.contains(words), "{e}");
        }
    }

    #[test]
    fn a_controls_record_cases_and_parameters_are_checked_against_its_contract() {
        let projection = contract_of("projection_bf16");
        let text = |extra: &str| format!("contract = \"projection_bf16\"\nrecord = \"f32 out\"\nbug = \"b\"\ngate = \"seams\"\n{extra}\n");
        let good = control(&text("params = { chunk = 0 }")).unwrap();
        assert!(good.check_against(&projection).is_ok());
        assert_eq!(good.applied_to(&projection.records[0]).params["chunk"], 0.0);
        let cases = [
            ("params = { chunk = 0.5 }", "params.chunk", 5, "`chunk` = 0.5 is not a whole number"),
            ("params = { eps = 1 }", "params.eps", 5, "op projection_bf16 has no parameter `eps` (its parameters: chunk)"),
            (
                "params = { chunk = 0 }\ncases = [{ m = 3, n = 6, k = 11 }]",
                "cases",
                6,
                "has no case {k = 11, m = 3, n = 6} (its cases: {m = 1",
            ),
        ];
        for (extra, key, line, words) in cases {
            let e = control(&text(extra)).unwrap().check_against(&projection).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, line), "{extra}: {e}");
            assert!(e.message.contains(words), "{extra}: {e}");
        }
        let e = control(&text("params = { chunk = 0 }").replace("f32 out", "f64 out")).unwrap().check_against(&projection).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("record", 2), "{e}");
        // a control planted at seams for an op whose rows are not independent could never go red
        let kv = contract_of("tf_kv_append");
        let at_seams = format!(
            "contract = \"tf_kv_append\"\nrecord = \"{}\"\nbug = \"b\"\nsource = \"k.hip\"\ngate = \"seams\"\n",
            kv.records[0].name
        );
        let e = control(&at_seams).unwrap().check_against(&kv).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("gate", 5), "{e}");
        assert!(e.message.contains("says its seams are `none`"), "{e}");
    }

    #[test]
    fn only_a_limits_control_can_be_planted_for_strict_limits() {
        assert!(control(&format!("{BASE}gate = \"limits\"\nstrict_limits = true")).unwrap().strict_limits);
        assert!(!control(&format!("{BASE}gate = \"limits\"")).unwrap().strict_limits);
        let e = control(&format!("{BASE}gate = \"shapes\"\nstrict_limits = true")).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (6, "strict_limits"), "{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A contract with no [kernel]: only an op of the engine's own (a library op) loads so.
    macro_rules! good_body {
        () => {
            r#"op = "tf_embed_dense"
about = "gather"

[[record]]
name = "fp32 table, f32 out"
dtypes = { table = "f32", out = "f32" }

[shapes]
cases = [ { n = 1, k = 64, vocab = 16 }, { n = 2, k = 257, vocab = 3 }, { n = 3, k = 8195, vocab = 5 }, { n = 1028, k = 2, vocab = 1026 }, { n = 5, k = 768, vocab = 6 } ]

[inputs]
table = "normal(0, 1)"
ids = "int(0, vocab)"

[nonfinite]
policy = "propagate"

[reference]
oracle = "gather_rows"
tolerance = "exact"
"#
        };
    }

    /// tf_embed_dense as data, after the rest so that the lines the tests name stay put.
    const GOOD: &str = concat!(
        good_body!(),
        r#"
[tensors]
table = { role = "input", dtypes = ["f32", "f16", "bf16"], shape = "vocab, k" }
ids = { role = "input", dtypes = ["i32"], shape = "n" }
out = { role = "output", dtypes = ["f32", "f16", "bf16"], shape = "n, k" }

[kernel]
source = "tf_embed_dense.hip"
symbol = "tf_embed_dense"
args = ["table", "dtype(table)", "ids", "int(n)", "int(k)", "out", "dtype(out)"]
grid = ["ceil_div(n * k, 256)"]
block = [256]

[[record]]
name = "bf16 table, f16 out"
dtypes = { table = "bf16", out = "f16" }

[seams]
axis = "n"
"#
    );

    fn error(text: &str) -> ContractError {
        Contract::parse("contracts/bad.toml", text).expect_err("malformed contract parsed")
    }

    #[test]
    fn a_good_contract_fills_single_dtype_tensors_and_shapes() {
        let c = Contract::parse("contracts/good.toml", GOOD).unwrap();
        assert_eq!(c.records[0].dtypes["ids"], DType::I32);
        assert_eq!(c.cases[0].shapes["table"], vec![16, 64]);
        assert_eq!(c.cases[0].describe(c.op), "{n = 1, k = 64, vocab = 16}");
    }

    #[test]
    fn an_unknown_key_names_file_line_and_key() {
        let e = error(&GOOD.replace("about = \"gather\"", "about = \"gather\"\ncolour = \"red\""));
        assert_eq!((e.file.as_str(), e.line, e.key.as_str()), ("contracts/bad.toml", 3, "colour"));
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn an_unknown_dtype_names_the_record_and_tensor() {
        let e = error(&GOOD.replace("out = \"f32\"", "out = \"fp8\""));
        assert_eq!((e.line, e.key.as_str()), (6, "record[0].dtypes.out"));
        assert!(e.message.contains("unknown dtype `fp8`"), "{e}");
        let e = error(&GOOD.replace("table = \"f32\"", "table = \"i32\""));
        assert!(e.message.contains("takes f32 or f16 or bf16, not i32"), "{e}");
        let e = error(&GOOD.replace("table = \"f32\"", "tabel = \"f32\""));
        assert!(e.message.contains("no tensor `tabel`"), "{e}");
    }

    #[test]
    fn undefined_shape_symbols_are_refused_where_they_appear() {
        let e = error(&GOOD.replace("{ n = 1, k = 64, vocab = 16 }", "{ n = 1, k = 64 }"));
        assert_eq!((e.line, e.key.as_str()), (9, "shapes.cases[0]"));
        assert!(e.message.contains("undefined shape symbol `vocab`"), "{e}");
        let e = error(&GOOD.replace("vocab = 16 }", "vocab = 16, m = 2 }"));
        assert_eq!(e.key, "shapes.cases[0].m");
        let e = error(&GOOD.replace("int(0, vocab)", "int(0, vocabulary)"));
        assert_eq!((e.line, e.key.as_str()), (13, "inputs.ids"));
        assert!(e.message.contains("undefined shape symbol `vocabulary`"), "{e}");
    }

    #[test]
    fn every_contract_states_its_policy_for_non_finite_inputs() {
        let c = Contract::parse("contracts/good.toml", GOOD).unwrap();
        assert_eq!(c.nonfinite, NonfinitePolicy::Propagate);
        let e = error(&GOOD.replace("[nonfinite]\npolicy = \"propagate\"\n", ""));
        assert_eq!((e.line, e.key.as_str()), (1, "nonfinite"), "{e}");
        assert!(e.message.contains("no policy for non-finite inputs"), "{e}");
        let e = error(&GOOD.replace("policy = \"propagate\"", "policy = \"unspecified\""));
        assert_eq!((e.line, e.key.as_str()), (16, "nonfinite.policy"), "{e}");
        assert!(e.message.contains("needs a stated reason"), "{e}");
        let unspecified = GOOD.replace("policy = \"propagate\"", "policy = \"unspecified\"\nreason = \"a library's\"");
        assert_eq!(Contract::parse("c.toml", &unspecified).unwrap().nonfinite, NonfinitePolicy::Unspecified("a library's".into()));
        let e = error(&GOOD.replace("policy = \"propagate\"", "policy = \"ignore\""));
        assert!(e.message.contains("oracle `gather_rows` does not define its value with NaN inputs left out"), "{e}");
        let e = error(&GOOD.replace("policy = \"propagate\"", "policy = \"clamp\""));
        assert!(e.message.contains("unknown policy `clamp`"), "{e}");
    }

    #[test]
    fn every_contract_says_its_row_axis_or_why_its_rows_are_not_independent() {
        let c = Contract::parse("contracts/good.toml", GOOD).unwrap();
        let axis = c.seams.axis().unwrap();
        assert_eq!((axis.axis.as_str(), axis.cuts.as_ref(), axis.batches.as_slice()), ("n", None, &[][..]));
        assert_eq!(axis.cuts_for(&c.records[0]), [1, PRIME_CUT]);
        let e = error(&GOOD.replace("\n[seams]\naxis = \"n\"\n", ""));
        assert_eq!((e.line, e.key.as_str()), (1, "seams"), "{e}");
        assert!(e.message.contains("no statement on seams"), "{e}");
        let none = GOOD
            .replace("\n[seams]\naxis = \"n\"\n", "")
            .replace("about = \"gather\"", "about = \"gather\"\nseams = \"none: a shared cache\"");
        assert_eq!(Contract::parse("c.toml", &none).unwrap().seams, Seams::None("a shared cache".into()));
        for bad in ["none", "none: ", "rows"] {
            let e = error(&none.replace("none: a shared cache", bad));
            assert_eq!((e.line, e.key.as_str()), (3, "seams"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_seams_table_names_what_is_wrong_by_its_key() {
        let line = GOOD.lines().position(|l| l == "axis = \"n\"").unwrap() + 1;
        let cases = [
            ("axis = \"n\"", "axis = \"rows\"", "seams.axis", line, "no shape symbol `rows` in op tf_embed_dense"),
            (
                "axis = \"n\"",
                "axis = \"k\"",
                "seams.axis",
                line,
                "tensor `table` (vocab, k) uses `k` other than as exactly its first dimension",
            ),
            ("axis = \"n\"", "axis = \"vocab\"", "seams.axis", line, "output `out` (n, k) has no `vocab` rows"),
            ("axis = \"n\"", "axis = \"n\"\ncolour = \"red\"", "colour", line + 1, "unknown field `colour`"),
            ("axis = \"n\"", "axis = \"n\"\ncuts = [1, 0]", "seams.cuts", line + 1, "0 rows: a size is 1 to 65536"),
            ("axis = \"n\"", "axis = \"n\"\ncuts = []", "seams.cuts", line + 1, "an empty list"),
            ("axis = \"n\"", "axis = \"n\"\nbatches = [1]", "seams.batches", line + 1, "1 rows: a size is 2 to 65536"),
        ];
        for (from, to, key, at, words) in cases {
            let e = error(&GOOD.replace(from, to));
            assert_eq!((e.key.as_str(), e.line), (key, at), "{to}: {e}");
            assert!(e.message.contains(words), "{to}: {e}");
        }
        let given = Contract::parse("c.toml", &GOOD.replace("axis = \"n\"", "axis = \"n\"\ncuts = [16, 3, 3]\nbatches = [32, 2]")).unwrap();
        let axis = given.seams.axis().unwrap();
        assert_eq!((axis.cuts_for(&given.records[0]), axis.batches.clone()), (vec![3, 16], vec![2, 32]));
        let e = error(&GOOD.replace("\n[seams]\naxis = \"n\"\n", "").replace("about = \"gather\"", "about = \"gather\"\nseams = 3"));
        assert!(e.key == "seams" && e.message.contains("`seams = 3`"), "{e}");
    }

    #[test]
    fn a_seams_finding_needs_a_row_axis_to_cover() {
        let text = with_finding("tensor = \"out\"\nmatches = \"rows differ\"").replace("gate = \"shapes\"", "gate = \"seams\"");
        assert_eq!(Contract::parse("c.toml", &text).unwrap().findings[0].gate, Gate::Seams);
        let none = text
            .replace("\n[seams]\naxis = \"n\"\n", "")
            .replace("about = \"gather\"", "about = \"gather\"\nseams = \"none: a shared cache\"");
        let e = error(&none);
        assert_eq!(e.key, "finding[0].gate", "{e}");
        assert!(e.message.contains("seams are `none`"), "{e}");
    }

    #[test]
    fn a_record_may_give_some_inputs_generators_of_its_own() {
        let text = GOOD.replace(
            "dtypes = { table = \"f32\", out = \"f32\" }",
            "dtypes = { table = \"f32\", out = \"f32\" }\ninputs = { table = \"uniform(-1, 1)\" }",
        );
        let c = Contract::parse("c.toml", &text).unwrap();
        assert_eq!(c.records[0].inputs.keys().collect::<Vec<_>>(), ["table"]);
        assert!(matches!(c.records[0].inputs["table"].generator, Generator::Uniform { .. }), "{:?}", c.records[0].inputs);
        let e = error(&text.replace("{ table = \"uniform(-1, 1)\" }", "{ out = \"uniform(-1, 1)\" }"));
        assert_eq!((e.key.as_str(), e.line), ("record[0].inputs.out", 7), "{e}");
        assert!(e.message.contains("an output of tf_embed_dense"), "{e}");
        let e = error(&text.replace("uniform(-1, 1)", "int(0, width)"));
        assert!(e.key == "record[0].inputs.table" && e.message.contains("undefined shape symbol `width`"), "{e}");
    }

    #[test]
    fn a_gpu_only_case_says_why_and_may_pass_the_host_cap() {
        let big = GOOD.replace("vocab = 6 } ]", "vocab = 6 }, { n = 1, k = 4096, vocab = 600000, gpu_only = \"offsets past 2^31\" } ]");
        let c = Contract::parse("contracts/good.toml", &big).unwrap();
        assert_eq!((c.cases[0].gpu_only.as_deref(), c.cases[5].gpu_only.as_deref()), (None, Some("offsets past 2^31")));
        let e = error(&big.replace(", gpu_only = \"offsets past 2^31\"", ""));
        assert!(e.message.contains("over the 1024 MiB cap"), "{e}");
        let e = error(&big.replace("\"offsets past 2^31\"", "true"));
        assert_eq!((e.line, e.key.as_str()), (9, "shapes.cases[5].gpu_only"), "{e}");
        let cases = GOOD.lines().find(|l| l.starts_with("cases = ")).unwrap();
        let e = error(&GOOD.replace(cases, "cases = [ { n = 1, k = 64, vocab = 16, gpu_only = \"why\" } ]"));
        assert!(e.message.contains("every case is GPU-only"), "{e}");
        let e = error(&GOOD.replace("k = 64", "k = 64.5"));
        assert_eq!(e.key, "shapes.cases[0].k", "{e}");
        assert!(e.message.contains("invalid type: float 64.5, expected i64"), "{e}");
    }

    #[test]
    fn a_tolerance_is_checked_against_each_records_output_type() {
        let e = error(&GOOD.replace("tolerance = \"exact\"", "tolerance = \"ulp(100)\""));
        assert_eq!((e.line, e.key.as_str()), (20, "reference.tolerance"), "{e}");
        assert!(e.message.contains("needs a stated reason (more than 64 ulp is loose)"), "{e}");
        let bf16 = GOOD
            .replace("out = \"f32\"", "out = \"bf16\"")
            .replace("tolerance = \"exact\"", "tolerance = \"ulp(1000000)\"\nreason = \"r\"");
        let e = error(&bf16);
        assert_eq!((e.line, e.key.as_str()), (20, "reference.tolerance"), "{e}");
        assert!(e.message.contains("record `fp32 table, f32 out`, output `out`: ulp(1000000) means nothing for bf16"), "{e}");
        assert!(Contract::parse("c.toml", &bf16.replace("ulp(1000000)", "ulp(100)")).is_ok());
    }

    #[test]
    fn other_mistakes_are_named_too() {
        let e = error(&good_body!().replace("op = \"tf_embed_dense\"", "op = \"tf_embed\""));
        assert!(e.key == "op" && e.message.contains("unknown op `tf_embed` (the engine has: projection_bf16"), "{e}");
        let cases = [
            ("tolerance = \"exact\"", "tolerance = \"rtol=1e-3\"", "reference.tolerance", "needs a stated reason"),
            ("tolerance = \"exact\"", "tolerance = \"close\"", "reference.tolerance", "unknown tolerance model"),
            ("oracle = \"gather_rows\"", "oracle = \"gather\"", "reference.oracle", "unknown oracle"),
            ("n = 1,", "n = 0,", "shapes.cases[0].n", "must be positive"),
            ("vocab = 16 }", "vocab = 100000000000 }", "shapes.cases[0]", "cap"),
            ("table = \"normal(0, 1)\"", "table = \"gauss(0, 1)\"", "inputs.table", "unknown generator"),
            ("table = \"normal(0, 1)\"", "out = \"normal(0, 1)\"", "inputs.out", "an output"),
        ];
        for (from, to, key, words) in cases {
            let e = error(&GOOD.replace(from, to));
            assert_eq!(e.key, key, "{to}: {e}");
            assert!(e.message.contains(words), "{to}: {e}");
        }
        let e = error("op = [");
        assert_eq!(e.line, 1, "{e}");
    }

    #[test]
    fn names_and_texts_are_plain_text_in_one_line() {
        let cases = [
            ("op = \"tf_embed_dense\"", "op = \"tf_embed_dense\\u001b[2J\"", "op", 1),
            ("name = \"fp32 table, f32 out\"", "name = \"fp32\\u0000 table\"", "record[0].name", 5),
            ("about = \"gather\"", "about = \"gather\\nrows\"", "about", 2),
            ("out = \"f32\" }", "\"o\\tut\" = \"f32\" }", "record[0].dtypes.o\\tut", 6),
        ];
        for (from, to, key, line) in cases {
            let e = error(&GOOD.replace(from, to));
            assert_eq!((e.key.as_str(), e.line), (key, line), "{to}: {e}");
            assert!(e.message.contains("plain printable text in one line"), "{to}: {e}");
        }
        let e = error(&with_finding("tensor = \"out\"\nmatches = \"differ\"").replace("flushes subnormals", "flushes\\nsubnormals"));
        assert_eq!(e.key, "finding[0].reason", "{e}");
        assert!(e.message.contains("a line break (U+000A)"), "{e}");
    }

    #[test]
    fn an_int_range_wider_than_i64_is_refused_not_wrapped() {
        let e = error(&GOOD.replace("int(0, vocab)", "int(-9223372036854775807, 9223372036854775807)"));
        assert_eq!((e.key.as_str(), e.line), ("inputs.ids", 13), "{e}");
        assert!(e.message.contains("is wider than i64 holds"), "{e}");
        let e = error(&GOOD.replace("int(0, vocab)", "int(0, 9223372036854775808)"));
        assert!(e.key == "inputs.ids" && e.message.contains("out of range"), "{e}");
        let e = error(&GOOD.replace("int(0, vocab)", "int(0, 9223372036854775807 + vocab)"));
        assert!(e.key == "inputs.ids" && e.message.contains("overflow"), "{e}");
    }

    /// The line of `[[finding]]` in `with_finding`'s contract: after GOOD and a blank line.
    fn finding_line() -> usize {
        GOOD.lines().count() + 2
    }

    fn with_finding(lines: &str) -> String {
        format!("{GOOD}\n[[finding]]\ngate = \"shapes\"\narch = \"sm_90\"\nreason = \"flushes subnormals\"\n{lines}\n")
    }

    #[test]
    fn a_finding_names_its_tensor_and_a_piece_of_the_message_and_may_narrow_to_cases() {
        let c = Contract::parse("contracts/good.toml", &with_finding("tensor = \"out\"\nmatches = \"differ\"\ncases = [0]")).unwrap();
        let f = &c.findings[0];
        assert_eq!(
            (f.tensor.as_str(), f.matches.as_str(), f.cases.as_deref(), f.line),
            ("out", "differ", Some(&[0usize][..]), finding_line())
        );
        assert!(f.covers(Gate::Shapes, "out", 0, "3 of 64 elements differ, first [0, 1]"));
        assert!(!f.covers(Gate::Shapes, "table", 0, "3 of 64 elements differ"), "another tensor");
        assert!(!f.covers(Gate::Shapes, "out", 0, "guard band written"), "another message");
        assert!(!f.covers(Gate::Shapes, "out", 1, "3 of 64 elements differ"), "another case");
        assert!(!f.covers(Gate::Repeat, "out", 0, "3 of 64 elements differ"), "another gate");
    }

    #[test]
    fn a_finding_without_tensor_or_matches_or_with_one_that_names_nothing_is_refused() {
        let cases = [
            ("matches = \"differ\"", "finding[0].tensor", finding_line(), "names the tensor it covers"),
            ("tensor = \"out\"", "finding[0].matches", finding_line(), "piece of the failure's message"),
            (
                "tensor = \"y\"\nmatches = \"differ\"",
                "finding[0].tensor",
                finding_line() + 4,
                "unknown tensor `y`: op tf_embed_dense has table, ids, out, kernel",
            ),
            ("tensor = \"out\"\nmatches = \" \"", "finding[0].matches", finding_line() + 5, "would cover any message"),
            ("tensor = \"out\"\nmatches = \"differ\"\ncases = [5]", "finding[0].cases", finding_line() + 6, "case 5 is out of range"),
            ("tensor = \"out\"\nmatches = \"differ\"\ncases = [-1]", "finding[0].cases", finding_line() + 6, "case -1 is out of range"),
            ("tensor = \"out\"\nmatches = \"differ\"\ncases = []", "finding[0].cases", finding_line() + 6, "covers nothing"),
        ];
        for (lines, key, line, words) in cases {
            let e = error(&with_finding(lines));
            assert_eq!((e.key.as_str(), e.line), (key, line), "{lines}: {e}");
            assert!(e.message.contains(words), "{lines}: {e}");
        }
        let limits = with_finding("tensor = \"out\"\nmatches = \"vgprs\"").replace("gate = \"shapes\"", "gate = \"limits\"");
        let e = error(&limits);
        assert!(e.key == "finding[0].tensor" && e.message.contains("tensor = \"kernel\""), "{e}");
        assert!(Contract::parse("c.toml", &limits.replace("tensor = \"out\"", "tensor = \"kernel\"")).is_ok());
    }

    /// GOOD under another op's name with `kernel` lines added after `block`: the tests below
    /// change what a launch needs, which must not change tf_embed_dense for the rest.
    fn with_kernel(op: &str, lines: &str) -> String {
        GOOD.replace("op = \"tf_embed_dense\"", &format!("op = \"{op}\"")).replace("block = [256]\n", &format!("block = [256]\n{lines}\n"))
    }

    #[test]
    fn a_case_that_fails_a_condition_of_the_kernel_is_refused_where_it_is_written() {
        let e = error(&with_kernel("contract_test_requires", "requires = [\"k % 2 == 0\", \"k <= 32\"]"));
        assert_eq!((e.line, e.key.as_str()), (9, "shapes.cases[0]"), "{e}");
        assert_eq!(e.message, "kernel.requires[1]: `k <= 32` does not hold: k = 64");
        let params = "params = { first = { kind = \"int\", default = 40 } }\nrequires = [\"first + k <= vocab + 64\"]";
        let e = error(&with_kernel("contract_test_requires", params));
        assert_eq!(
            e.message,
            "kernel.requires[0]: `first + k <= vocab + 64` does not hold: first = 40, k = 64, vocab = 16 (record `fp32 table, f32 out`)"
        );
        let e = error(&with_kernel("contract_test_requires", "requires = [\"eps > 0\"]\nparams = { eps = \"float\" }"));
        assert_eq!(e.key, "kernel.requires[0]", "{e}");
        assert!(e.message.contains("`eps` is a float parameter"), "{e}");
    }

    /// GOOD with its second record, the one whose table and out differ, left out.
    fn one_record() -> String {
        GOOD.replace("[[record]]\nname = \"bf16 table, f16 out\"\ndtypes = { table = \"bf16\", out = \"f16\" }\n", "")
    }

    #[test]
    fn a_case_set_that_leaves_a_class_of_the_domain_open_is_refused_at_shapes_cases() {
        // vocab = n + 1 in every case: 2, 3, 4, 1029, 6
        let on_a_line =
            GOOD.replace("vocab = 16 }", "vocab = 2 }").replace("vocab = 5 }", "vocab = 4 }").replace("vocab = 1026 }", "vocab = 1029 }");
        let cases = [
            (
                GOOD.replace("k = 2,", "k = 4,"),
                "residues",
                "`k` is ≡ 0, 1, 3 (mod 4) in the cases with two rows or more of `table`, but its domain allows 2 too",
            ),
            (
                GOOD.replace("k = 768,", "k = 1024,"),
                "odd_multiple",
                "no case gives the row width `k` an odd multiple of the block of 256 threads (256, 768, ...)",
            ),
            (GOOD.replace("k = 8195,", "k = 8191,"), "past", "`k` has no bound in `requires` and no case past 8192 (the largest is 8191)"),
            (GOOD.replace("n = 1028,", "n = 1024,"), "past", "`n` has no bound in `requires` and no case past 1024 (the largest is 1024)"),
            (on_a_line, "affine", "`n` and `vocab` lie on one line in every case (vocab = n + 1)"),
        ];
        for (text, lint, words) in cases {
            let e = error(&text);
            assert_eq!((e.line, e.key.as_str()), (9, "shapes.cases"), "{lint}: {e}");
            assert!(e.message.contains(words), "{lint}: {e}");
            assert!(e.message.contains(&format!("`[exempt] {lint} = {{")), "{lint}: {e}");
        }
    }

    #[test]
    fn a_bound_of_requires_is_met_by_a_case_and_every_listed_value_taken() {
        assert!(Contract::parse("c.toml", &with_kernel("contract_test_bound", "requires = [\"k <= 8195\"]")).is_ok());
        let e = error(&with_kernel("contract_test_bound_short", "requires = [\"k <= 9000\"]"));
        assert_eq!(e.key, "kernel.requires[0]", "{e}");
        assert!(e.message.contains("`k <= 9000`: no case meets it at its bound (k = 9000)"), "{e}");
        let e = error(&with_kernel("contract_test_listed", "requires = [\"n in [1, 2, 3, 5, 7, 1028]\"]"));
        assert!(e.key == "kernel.requires[0]" && e.message.contains("no case gives `n` the listed 7"), "{e}");
        let listed = "requires = [\"n in [1, 2, 3, 5, 1028]\", \"vocab in [16, 3, 5, 6, 1026]\"]";
        let e = error(&with_kernel("contract_test_pairs", listed));
        assert_eq!(e.key, "shapes.cases", "{e}");
        assert!(e.message.contains("no case gives (`n`, `vocab`) the pairs (1, 3), (1, 5)"), "{e}");
    }

    #[test]
    fn parameters_vary_over_the_records_and_not_with_a_dtype() {
        let declared = "params = { scale = { kind = \"float\", default = 2 } }";
        let e = error(&with_kernel("contract_test_param_once", declared));
        assert_eq!(e.key, "kernel.params.scale", "{e}");
        assert!(e.message.contains("parameter `scale` is 2 in every record: a kernel that hardcodes that value"), "{e}");
        let last = "dtypes = { table = \"bf16\", out = \"f16\" }\n";
        let per_dtype = with_kernel("contract_test_param_dtype", declared).replace(last, &format!("{last}params = {{ scale = 3 }}\n"));
        let e = error(&per_dtype);
        assert_eq!((e.line, e.key.as_str()), (4, "record"), "{e}");
        assert!(e.message.contains("parameter `scale` takes one value per dtype of `table` (f32: 2, bf16: 3)"), "{e}");
    }

    #[test]
    fn two_tensors_of_independent_dtypes_differ_in_some_record_or_an_exemption_says_why() {
        let e = error(&one_record());
        assert_eq!((e.line, e.key.as_str()), (4, "record"), "{e}");
        assert!(e.message.contains("no record gives `table` and `out` different dtypes"), "{e}");
        let exempt = "\n[exempt]\ndtype_pairs = { \"out, table\" = \"a test of the exemption\" }\n";
        assert!(Contract::parse("c.toml", &format!("{}{exempt}", one_record())).is_ok());
        let e = error(&format!("{GOOD}{exempt}"));
        assert_eq!(e.key, "exempt.dtype_pairs.out, table", "{e}");
        assert!(e.message.contains("exempts nothing"), "{e}");
        let e = error(&format!("{GOOD}\n[exempt]\nresidue = {{ k = \"x\" }}\n"));
        assert!(e.key == "exempt.residue" && e.message.contains("no lint `residue` (the lints: residues, odd_multiple"), "{e}");
        let e = error(&format!("{}\n[exempt]\ndtype_pairs = {{ \"table, out\" = \" \" }}\n", one_record()));
        assert!(e.key == "exempt.dtype_pairs.table, out" && e.message.contains("says why"), "{e}");
    }

    #[test]
    fn the_lints_neither_overflow_nor_panic_on_a_block_past_any_size() {
        let huge = GOOD
            .replace("op = \"tf_embed_dense\"", "op = \"contract_test_huge_block\"")
            .replace("block = [256]", "block = [4294967295, 1073741824]");
        let e = error(&huge);
        assert!(e.key == "shapes.cases" && e.message.contains("no case past 9223372036854775807"), "{e}");
    }

    #[test]
    fn a_record_or_parameter_the_kernel_does_not_take_is_refused_where_it_is_given() {
        let e = error(
            &with_kernel("contract_test_same_dtype", "same_dtype = [[\"table\", \"out\"]]").replace("out = \"f32\"", "out = \"bf16\""),
        );
        assert_eq!((e.line, e.key.as_str()), (4, "record[0].dtypes"), "{e}");
        assert_eq!(e.message, "record `fp32 table, f32 out`: kernel.same_dtype[0]: `table` is f32 but `out` is bf16: they take one dtype");
        let limited = with_kernel("contract_test_limits", "params = { scale = { kind = \"float\", default = 2, above = 1, below = 4 } }");
        let varied =
            format!("{limited}\n[[record]]\nname = \"scale 3\"\ndtypes = {{ table = \"f32\", out = \"f32\" }}\nparams = {{ scale = 3 }}\n");
        assert!(Contract::parse("c.toml", &varied).is_ok());
        let e = error(&format!("{limited}\n[params]\nscale = 4\n"));
        assert_eq!(e.key, "params.scale", "{e}");
        assert_eq!(e.message, "parameter `scale` = 4 is not below 4 (its `below`)");
        let e = error(&limited.replace("default = 2", "default = 1"));
        assert_eq!(e.key, "kernel.params.scale.default", "{e}");
        assert_eq!(e.message, "the default of parameter `scale` = 1 is not above 1 (its `above`)");
    }
}
