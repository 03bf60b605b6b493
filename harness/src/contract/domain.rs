//! What a contract's cases, records and parameters must cover of its op's domain, checked
//! when it loads: hand-picked cases repeat their author's blind spots (every width a multiple
//! of 4, every case under a fixed buffer's size, two symbols moving together, a parameter
//! or a dtype pair never varied), so each blind spot is a class with a lint, and a contract
//! that leaves one open does not load unless `[exempt]` says why.

use std::collections::{BTreeMap, BTreeSet};

use engine::DType;
use engine::ops::{OpSpec, ParamLimit, TensorSpec};
use engine::shape_expr::{Comparison, Condition, Expr, ShapeExpr, Symbols, Test};
use toml::Spanned;

use super::{Case, ContractError, Record, Source};

/// `[exempt]`: per lint, the subjects it skips, each with its reason.
pub(super) type RawExempt = BTreeMap<String, Spanned<BTreeMap<String, Spanned<String>>>>;

/// A row wider than this is what a kernel staging a row in a fixed shared array (8192 f32:
/// 32 KiB, the common size) gets wrong; a model's hidden size reaches 16384.
const ROW_PAST: i64 = 8192;

/// Past this many blocks' worth, a count no longer fits a buffer sized a few blocks.
const BLOCKS_PAST: i64 = 4;

/// The block a launch of an op without `[kernel]` (a library) is taken to have.
const DEFAULT_BLOCK: i64 = 256;

/// Values tried when asking what `requires` allows a symbol: enough for every residue of a
/// condition with moduli up to a few hundred, few enough to stay well under a millisecond.
const SEARCH: i64 = 2048;

/// A value no fixed bound of a kernel reaches: a symbol that `requires` allows past it (in a
/// window of SEARCH values) is unbounded.
const HUGE: i64 = 1 << 40;

/// The most distinct sets of values (of cases and records) a search tries, and the most
/// values of a list `pairs` crosses: a contract has a few of each, and a hostile one must not
/// make loading slow.
const MOST_CONTEXTS: usize = 64;
const MOST_LISTED: usize = 32;

/// The lints, by their key in `[exempt]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Lint {
    Residues,
    OddMultiple,
    Bound,
    Past,
    Affine,
    Pairs,
    ParamValues,
    ParamDtype,
    DtypePairs,
}

impl Lint {
    const ALL: [Lint; 9] = [
        Lint::Residues,
        Lint::OddMultiple,
        Lint::Bound,
        Lint::Past,
        Lint::Affine,
        Lint::Pairs,
        Lint::ParamValues,
        Lint::ParamDtype,
        Lint::DtypePairs,
    ];

    fn name(self) -> &'static str {
        match self {
            Lint::Residues => "residues",
            Lint::OddMultiple => "odd_multiple",
            Lint::Bound => "bound",
            Lint::Past => "past",
            Lint::Affine => "affine",
            Lint::Pairs => "pairs",
            Lint::ParamValues => "param_values",
            Lint::ParamDtype => "param_dtype",
            Lint::DtypePairs => "dtype_pairs",
        }
    }

    fn parse(name: &str) -> Option<Lint> {
        Lint::ALL.into_iter().find(|l| l.name() == name)
    }
}

/// A class the contract leaves open: what is missing, about which subject (a symbol, a
/// condition, two symbols, a parameter, two tensors), and where the contract would close it.
struct Gap {
    lint: Lint,
    subject: String,
    at: usize,
    key: String,
    message: String,
}

/// Where the contract writes what the lints read, for their errors.
pub(super) struct Written<'a> {
    /// `shapes.cases`.
    pub cases: usize,
    /// The first `[[record]]`.
    pub records: usize,
    /// Each `kernel.requires[i]`.
    pub requires: Vec<usize>,
    /// Where each parameter's value is given, and its key: `params.eps`, or its declaration.
    pub params: BTreeMap<String, (usize, String)>,
    pub exempt: Option<&'a Spanned<RawExempt>>,
}

/// Every lint over a parsed contract; the first gap no exemption covers is the error, and so
/// is an exemption that covers nothing.
pub(super) fn check(source: &Source, op: &OpSpec, records: &[Record], cases: &[Case], written: &Written) -> Result<(), ContractError> {
    let gaps = Domain::new(op, records, cases).gaps(written);
    let exempted = exemptions(source, written.exempt)?;
    for (lint, subject, at) in &exempted {
        if !gaps.iter().any(|g| g.lint == *lint && same_subject(&g.subject, subject)) {
            let message = format!("exempts nothing: the contract covers what `{}` asks of `{subject}`; remove the exemption", lint.name());
            return Err(source.error(*at, format!("exempt.{}.{subject}", lint.name()), message));
        }
    }
    let open: Vec<Gap> = gaps
        .into_iter()
        .filter(|g| !exempted.iter().any(|(lint, subject, _)| g.lint == *lint && same_subject(&g.subject, subject)))
        .collect();
    match open.first() {
        None => Ok(()),
        Some(gap) => Err(source.error(gap.at, gap.key.clone(), described(gap, &open[1..]))),
    }
}

/// A gap's message, how to exempt it, and the rest in a word each, so that one run shows
/// everything a contract leaves open.
fn described(gap: &Gap, rest: &[Gap]) -> String {
    let hint = format!("; or say why not: `[exempt] {} = {{ \"{}\" = \"...\" }}`", gap.lint.name(), gap.subject);
    let more = match rest {
        [] => String::new(),
        rest => {
            let named: Vec<String> = rest.iter().map(|g| format!("{} ({})", g.lint.name(), g.subject)).collect();
            format!(" (also open: {})", named.join(", "))
        }
    };
    format!("{}{hint}{more}", gap.message)
}

/// `k, width` names the same two as `width, k`.
fn same_subject(a: &str, b: &str) -> bool {
    parts(a) == parts(b)
}

fn parts(subject: &str) -> BTreeSet<&str> {
    subject.split(',').map(str::trim).collect()
}

/// `[exempt]`'s entries, each a known lint with a stated reason.
fn exemptions(source: &Source, raw: Option<&Spanned<RawExempt>>) -> Result<Vec<(Lint, String, usize)>, ContractError> {
    let mut out = Vec::new();
    let Some(raw) = raw else { return Ok(out) };
    for (name, subjects) in raw.get_ref() {
        let lint = Lint::parse(name).ok_or_else(|| {
            let known: Vec<&str> = Lint::ALL.iter().map(|l| l.name()).collect();
            source.error(subjects.span().start, format!("exempt.{name}"), format!("no lint `{name}` (the lints: {})", known.join(", ")))
        })?;
        for (subject, reason) in subjects.get_ref() {
            if reason.get_ref().trim().is_empty() {
                let key = format!("exempt.{name}.{subject}");
                return Err(source.error(reason.span().start, key, "an exemption says why the contract need not cover it"));
            }
            out.push((lint, subject.trim().to_string(), reason.span().start));
        }
    }
    Ok(out)
}

/// An op's domain as its contract samples it.
struct Domain<'a> {
    op: &'a OpSpec,
    records: &'a [Record],
    cases: &'a [Case],
    requires: &'a [Condition],
    /// Each tensor's dimensions.
    dims: Vec<(&'static str, Vec<Expr>)>,
    /// Threads in a block.
    block: i64,
    /// Symbols that are a grid dimension alone: each block sees one value of them.
    grid: Vec<String>,
}

impl<'a> Domain<'a> {
    fn new(op: &'a OpSpec, records: &'a [Record], cases: &'a [Case]) -> Domain<'a> {
        let dims = op.tensors.iter().map(|t| (t.name, ShapeExpr::parse(t.shape).map(|s| s.dims).unwrap_or_default())).collect();
        let first = cases.first().map(|c| c.symbols.clone()).unwrap_or_default();
        let (requires, block, grid) = match op.kernel {
            Some(k) => {
                let threads = k.block.iter().try_fold(1i64, |a, e| e.evaluate(&first).ok().and_then(|v| a.checked_mul(v)));
                let grid = k.grid.iter().filter_map(|e| if let Expr::Symbol(s) = e { Some(s.clone()) } else { None }).collect();
                (&k.requires[..], threads.filter(|t| *t > 0).unwrap_or(DEFAULT_BLOCK), grid)
            }
            None => (&[][..], DEFAULT_BLOCK, Vec::new()),
        };
        Domain { op, records, cases, requires, dims, block, grid }
    }

    /// Every gap of every lint, in the order the lints are listed.
    fn gaps(&self, written: &Written) -> Vec<Gap> {
        let mut gaps = Vec::new();
        for symbol in self.dim_symbols() {
            gaps.extend(self.residues(symbol, written));
            gaps.extend(self.odd_multiple(symbol, written));
            gaps.extend(self.past(symbol, written));
        }
        for (index, condition) in self.requires.iter().enumerate() {
            let at = written.requires.get(index).copied().unwrap_or(written.cases);
            gaps.extend(self.bound(index, condition, at));
        }
        gaps.extend(self.affine(written));
        gaps.extend(self.pairs(written));
        gaps.extend(self.param_values(written));
        gaps.extend(self.param_dtype(written));
        gaps.extend(self.dtype_pairs(written));
        gaps
    }

    /// Every symbol that sizes a tensor dimension, in the op's order.
    fn dim_symbols(&self) -> Vec<&'static str> {
        self.op.symbols.iter().copied().filter(|s| self.dims.iter().any(|(_, d)| d.iter().any(|e| e.symbols().contains(s)))).collect()
    }

    /// The tensors of two dimensions or more whose last dimension `symbol` sizes: it is a
    /// row's width there.
    fn rows_of(&self, symbol: &str) -> Vec<&'static str> {
        let last_reads = |d: &[Expr]| d.len() >= 2 && d.last().is_some_and(|e| e.symbols().contains(&symbol));
        self.dims.iter().filter(|(_, d)| last_reads(d)).map(|(t, _)| *t).collect()
    }

    fn host_cases(&self) -> impl Iterator<Item = &Case> {
        self.cases.iter().filter(|c| c.gpu_only.is_none())
    }

    fn values(&self, symbol: &str, cases: impl Iterator<Item = &'a Case>) -> Vec<i64> {
        cases.filter_map(|c| c.symbols.get(symbol).copied()).collect()
    }

    /// What `requires` allows `symbol` to be, with the rest of some case and record.
    fn reach(&self, symbols: &[&str]) -> Reach<'a> {
        let conditions: Vec<&Condition> = self.requires.iter().filter(|c| c.symbols().iter().any(|s| symbols.contains(s))).collect();
        let read: BTreeSet<&str> = conditions.iter().flat_map(|c| c.symbols()).collect();
        let mut contexts = Vec::new();
        for case in self.cases {
            for record in self.records {
                let mut values = engine::ops::data::expression_values(self.op, &case.symbols, &record.params);
                values.retain(|k, _| read.contains(k.as_str()));
                if !contexts.contains(&values) && contexts.len() < MOST_CONTEXTS {
                    contexts.push(values);
                }
            }
        }
        Reach { conditions, contexts }
    }

    /// Lint `residues`: the symbol takes every residue mod 4 that `requires` allows. A row's
    /// width counts only in a case with two rows or more, where a row's stride shows.
    fn residues(&self, symbol: &str, written: &Written) -> Option<Gap> {
        let reach = self.reach(&[symbol]);
        let mut allowed = BTreeSet::new();
        for v in 1..=SEARCH {
            if !allowed.contains(&(v % 4)) && reach.allows(&[(symbol, v)]) {
                allowed.insert(v % 4);
                if allowed.len() == 4 {
                    break;
                }
            }
        }
        let rows = self.rows_of(symbol);
        let counts = |c: &&Case| rows.is_empty() || rows.iter().any(|t| leading(&c.shapes[*t]) >= 2);
        let taken: BTreeSet<i64> = self.values(symbol, self.host_cases().filter(counts)).iter().map(|v| v % 4).collect();
        let missing: Vec<i64> = allowed.difference(&taken).copied().collect();
        if missing.is_empty() {
            return None;
        }
        let list = |set: &[i64]| set.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ");
        let taken: Vec<i64> = taken.into_iter().collect();
        let over = if rows.is_empty() { String::new() } else { format!(" with two rows or more of `{}`", rows[0]) };
        let domain = if reach.conditions.is_empty() { "its domain" } else { "`requires`" };
        let taken = if taken.is_empty() {
            format!("no case{over} gives `{symbol}` a value")
        } else {
            format!("`{symbol}` is ≡ {} (mod 4) in the cases{over}", list(&taken))
        };
        let message = format!(
            "{taken}, but {domain} allows {} too: an unrolled or vectorised loop that mishandles the remainder passes; add a \
             case with `{symbol}` ≡ {} (mod 4)",
            list(&missing),
            missing.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(" and one ≡ ")
        );
        Some(Gap { lint: Lint::Residues, subject: symbol.to_string(), at: written.cases, key: "shapes.cases".into(), message })
    }

    /// Lint `odd_multiple`: a row's width takes an odd multiple of the block where `requires`
    /// allows one (a fast path taken at a multiple of 256 that needs a multiple of 512).
    fn odd_multiple(&self, symbol: &str, written: &Written) -> Option<Gap> {
        if self.rows_of(symbol).is_empty() {
            return None;
        }
        let block = self.block;
        let odd = |v: i64| v % block == 0 && (v / block) % 2 == 1;
        if self.values(symbol, self.host_cases()).into_iter().any(odd) {
            return None;
        }
        let reach = self.reach(&[symbol]);
        let first = (0..64).filter_map(|j| block.checked_mul(2 * j + 1)).find(|v| reach.allows(&[(symbol, *v)]))?;
        let message = format!(
            "no case gives the row width `{symbol}` an odd multiple of the block of {block} threads ({first}, {}, ...), \
             which `requires` allows: a path taken at a multiple of {block} that needs a multiple of {} passes; add one",
            first.saturating_add(block.saturating_mul(2)),
            block.saturating_mul(2)
        );
        Some(Gap { lint: Lint::OddMultiple, subject: symbol.to_string(), at: written.cases, key: "shapes.cases".into(), message })
    }

    /// Lint `past`: a symbol no `requires` bounds (and not a grid dimension alone, whose
    /// every value is a block of its own) has a case past a stated size: 8192 for a row's
    /// width, four blocks' threads for a count; a GPU-only case counts.
    fn past(&self, symbol: &str, written: &Written) -> Option<Gap> {
        if self.grid.iter().any(|g| g == symbol) {
            return None;
        }
        let reach = self.reach(&[symbol]);
        if !reach.conditions.is_empty() && !(HUGE..HUGE + SEARCH).any(|v| reach.allows(&[(symbol, v)])) {
            return None;
        }
        let width = !self.rows_of(symbol).is_empty();
        let blocks = BLOCKS_PAST.saturating_mul(self.block);
        let size = if width { ROW_PAST.max(blocks) } else { blocks };
        let largest = self.values(symbol, self.cases.iter()).into_iter().max().unwrap_or(0);
        if largest > size {
            return None;
        }
        let what = if width {
            format!("a row's width: a kernel staging a row in a fixed shared array of {size}")
        } else {
            format!("a count: a kernel staging it in a fixed buffer of {BLOCKS_PAST} blocks ({size})")
        };
        let message = format!(
            "`{symbol}` has no bound in `requires` and no case past {size} (the largest is {largest}); it is {what} passes every \
             case; add a case with `{symbol}` > {size} (`gpu_only` where the host would take long), or bound it in \
             `kernel.requires` where the kernel needs a bound, and test at the bound"
        );
        Some(Gap { lint: Lint::Past, subject: symbol.to_string(), at: written.cases, key: "shapes.cases".into(), message })
    }

    /// Lint `bound`: each inequality of `requires` is met at its bound by some case, and each
    /// value an `in` lists is taken: a buffer sized one short passes every case otherwise.
    fn bound(&self, index: usize, condition: &Condition, at: usize) -> Option<Gap> {
        let contexts = self
            .cases
            .iter()
            .flat_map(|c| self.records.iter().map(|r| engine::ops::data::expression_values(self.op, &c.symbols, &r.params)));
        let contexts: Vec<Symbols> = contexts.collect();
        let left = |s: &Symbols| condition.left.evaluate(s).ok();
        let missing = match &condition.test {
            Test::Compare(comparison, right) => {
                let tight = |s: &Symbols| match (left(s), right.evaluate(s).ok()) {
                    (Some(l), Some(r)) => match comparison {
                        Comparison::AtMost | Comparison::AtLeast => l == r,
                        Comparison::Less => l.checked_add(1) == Some(r),
                        Comparison::Greater => r.checked_add(1) == Some(l),
                        Comparison::Equal | Comparison::NotEqual => true,
                    },
                    _ => true,
                };
                if contexts.iter().any(tight) {
                    return None;
                }
                let at_bound = match comparison {
                    Comparison::Less => format!("{} = {} - 1", condition.left, right),
                    Comparison::Greater => format!("{} = {} + 1", condition.left, right),
                    _ => format!("{} = {}", condition.left, right),
                };
                format!("no case meets it at its bound ({at_bound})")
            }
            Test::OneOf(values) => {
                let taken = |v: &Expr| contexts.iter().any(|s| left(s).is_some() && v.evaluate(s).ok() == left(s));
                let untaken: Vec<String> = values.iter().filter(|v| !taken(v)).map(|v| v.to_string()).collect();
                if untaken.is_empty() {
                    return None;
                }
                format!("no case gives `{}` the listed {}", condition.left, untaken.join(", "))
            }
        };
        let message = format!(
            "`{}`: {missing}: a buffer or a path sized one short of the kernel's bound passes every case; add a case there \
             (`gpu_only` where the host would take long)",
            condition.text
        );
        Some(Gap { lint: Lint::Bound, subject: condition.text.clone(), at, key: format!("kernel.requires[{index}]"), message })
    }

    /// Lint `affine`: no two symbols lie on one line over the host's cases (`k = width + 32`
    /// in every case): a kernel that confuses them, or needs their parities to differ, passes.
    fn affine(&self, written: &Written) -> Vec<Gap> {
        let symbols = self.dim_symbols();
        let mut gaps = Vec::new();
        for (i, a) in symbols.iter().enumerate() {
            for b in &symbols[i + 1..] {
                let points: Vec<(i64, i64)> = self.host_cases().filter_map(|c| Some((*c.symbols.get(*a)?, *c.symbols.get(*b)?))).collect();
                if let Some(relation) = line_through(&points, a, b) {
                    let message = format!(
                        "`{a}` and `{b}` lie on one line in every case ({relation}): a kernel that reads one for the other, or \
                         needs them to differ in parity or by other than that, passes; add a case off that line"
                    );
                    let subject = format!("{a}, {b}");
                    gaps.push(Gap { lint: Lint::Affine, subject, at: written.cases, key: "shapes.cases".into(), message });
                }
            }
        }
        gaps
    }

    /// Lint `pairs`: two symbols that `requires` limits to listed values take every pair of
    /// them that it allows together (a path per code width that assumes one group size).
    fn pairs(&self, written: &Written) -> Vec<Gap> {
        let listed: Vec<(&str, Vec<i64>)> = self
            .requires
            .iter()
            .filter_map(|c| match (&c.left, &c.test) {
                (Expr::Symbol(s), Test::OneOf(values)) => {
                    let values: Option<Vec<i64>> = values.iter().map(|v| v.evaluate(&Symbols::new()).ok()).collect();
                    Some((s.as_str(), values.filter(|v| v.len() <= MOST_LISTED)?))
                }
                _ => None,
            })
            .collect();
        let mut gaps = Vec::new();
        for (i, (a, values_a)) in listed.iter().enumerate() {
            for (b, values_b) in &listed[i + 1..] {
                let reach = self.reach(&[a, b]);
                let taken = |x: i64, y: i64| self.host_cases().any(|c| c.symbols.get(*a) == Some(&x) && c.symbols.get(*b) == Some(&y));
                let missing: Vec<String> = values_a
                    .iter()
                    .flat_map(|x| values_b.iter().map(move |y| (*x, *y)))
                    .filter(|(x, y)| !taken(*x, *y) && reach.allows(&[(a, *x), (b, *y)]))
                    .map(|(x, y)| format!("({x}, {y})"))
                    .collect();
                if !missing.is_empty() {
                    let message = format!(
                        "no case gives (`{a}`, `{b}`) the pairs {}, which `requires` allows: a path for one value of `{a}` that \
                         assumes one value of `{b}` passes; add a case for each",
                        missing.join(", ")
                    );
                    let subject = format!("{a}, {b}");
                    gaps.push(Gap { lint: Lint::Pairs, subject, at: written.cases, key: "shapes.cases".into(), message });
                }
            }
        }
        gaps
    }

    /// The distinct values of a parameter over the records, in record order.
    fn param_values_of(&self, name: &str) -> Vec<f64> {
        let mut values: Vec<f64> = Vec::new();
        for v in self.records.iter().filter_map(|r| r.params.get(name)) {
            if !values.contains(v) {
                values.push(*v);
            }
        }
        values
    }

    fn param_at(&self, name: &str, written: &Written) -> (usize, String) {
        written.params.get(name).cloned().unwrap_or_else(|| (written.records, "record".to_string()))
    }

    /// Lint `param_values`: each parameter takes two values or more over the records, where
    /// its limits allow it: a kernel that hardcodes the one value passes otherwise.
    fn param_values(&self, written: &Written) -> Vec<Gap> {
        let mut gaps = Vec::new();
        for spec in self.op.params {
            let one_allowed = spec.limits.iter().any(|l| matches!(l, ParamLimit::OneOf(v) if v.len() == 1));
            let values = self.param_values_of(spec.name);
            if one_allowed || values.len() != 1 {
                continue;
            }
            let (at, key) = self.param_at(spec.name, written);
            let message = format!(
                "parameter `{}` is {} in every record: a kernel that hardcodes that value instead of reading it passes; give a \
                 record another value (`params = {{ {} = ... }}`)",
                spec.name, values[0], spec.name
            );
            gaps.push(Gap { lint: Lint::ParamValues, subject: spec.name.to_string(), at, key, message });
        }
        gaps
    }

    /// Lint `param_dtype`: a parameter that varies over the records is not a function of a
    /// tensor's dtype (copy_cols' start, one per dtype): a dtype's own path that ignores it
    /// passes otherwise.
    fn param_dtype(&self, written: &Written) -> Vec<Gap> {
        let mut gaps = Vec::new();
        for spec in self.op.params {
            if self.param_values_of(spec.name).len() < 2 {
                continue;
            }
            for tensor in self.op.tensors {
                let mut by_dtype: BTreeMap<DType, Vec<f64>> = BTreeMap::new();
                for r in self.records {
                    let (Some(d), Some(v)) = (r.dtypes.get(tensor.name), r.params.get(spec.name)) else { continue };
                    let seen = by_dtype.entry(*d).or_default();
                    if !seen.contains(v) {
                        seen.push(*v);
                    }
                }
                if by_dtype.len() < 2 || by_dtype.values().any(|v| v.len() >= 2) {
                    continue;
                }
                let each: Vec<String> = by_dtype.iter().map(|(d, v)| format!("{d}: {}", v[0])).collect();
                let message = format!(
                    "parameter `{}` takes one value per dtype of `{}` ({}): a path of one dtype that ignores the parameter \
                     passes; give some dtype of `{}` two values of `{}` over the records",
                    spec.name,
                    tensor.name,
                    each.join(", "),
                    tensor.name,
                    spec.name
                );
                let subject = format!("{}, {}", spec.name, tensor.name);
                gaps.push(Gap { lint: Lint::ParamDtype, subject, at: written.records, key: "record".into(), message });
            }
        }
        gaps
    }

    /// Lint `dtype_pairs`: two tensors that take their dtypes independently (not one
    /// `same_dtype` group) get different dtypes in some record: a kernel that decodes one
    /// with the other's dtype code passes otherwise.
    fn dtype_pairs(&self, written: &Written) -> Vec<Gap> {
        let groups: &[Vec<String>] = self.op.kernel.map_or(&[], |k| &k.same_dtype[..]);
        // a same_dtype group is one unit, named by its first tensor
        let mut units: Vec<&TensorSpec> = Vec::new();
        for t in self.op.tensors.iter().filter(|t| t.dtypes.len() >= 2) {
            let group = groups.iter().find(|g| g.iter().any(|n| n == t.name));
            let first = group.and_then(|g| g.iter().find_map(|n| self.op.tensor(n)));
            if first.is_none_or(|f| f.name == t.name) {
                units.push(t);
            }
        }
        let mut gaps = Vec::new();
        for (i, a) in units.iter().enumerate() {
            for b in &units[i + 1..] {
                let overlap = a.dtypes.iter().any(|d| b.dtypes.contains(d));
                let differ = self.records.iter().any(|r| r.dtypes.get(a.name) != r.dtypes.get(b.name));
                if !overlap || differ {
                    continue;
                }
                let message = format!(
                    "no record gives `{}` and `{}` different dtypes: a kernel that decodes one with the other's dtype code passes \
                     every record; add a record where they differ (or, if the kernel takes one dtype for both, name them in \
                     `kernel.same_dtype`)",
                    a.name, b.name
                );
                let subject = format!("{}, {}", a.name, b.name);
                gaps.push(Gap { lint: Lint::DtypePairs, subject, at: written.records, key: "record".into(), message });
            }
        }
        gaps
    }
}

/// The product of all dimensions but the last: a tensor's rows.
fn leading(dims: &[usize]) -> usize {
    dims[..dims.len().saturating_sub(1)].iter().product()
}

/// What `requires` allows some symbols, with the rest of some case and record.
struct Reach<'a> {
    /// The conditions that read the symbols.
    conditions: Vec<&'a Condition>,
    /// Every distinct set of values those conditions read, over the cases and records.
    contexts: Vec<Symbols>,
}

impl Reach<'_> {
    /// Whether some case and record allow these values of the symbols.
    fn allows(&self, values: &[(&str, i64)]) -> bool {
        if self.conditions.is_empty() {
            return true;
        }
        self.contexts.iter().any(|context| {
            let mut symbols = context.clone();
            for (s, v) in values {
                symbols.insert(s.to_string(), *v);
            }
            self.conditions.iter().all(|c| c.holds(&symbols).unwrap_or(false))
        })
    }
}

/// `b = p a + q` through every point, when there are three distinct points or more and
/// neither coordinate is constant; the relation as text.
fn line_through(points: &[(i64, i64)], a: &str, b: &str) -> Option<String> {
    let distinct: BTreeSet<(i64, i64)> = points.iter().copied().collect();
    let xs: BTreeSet<i64> = distinct.iter().map(|p| p.0).collect();
    let ys: BTreeSet<i64> = distinct.iter().map(|p| p.1).collect();
    if distinct.len() < 3 || xs.len() < 2 || ys.len() < 2 {
        return None;
    }
    let mut it = distinct.iter().map(|(x, y)| (*x as i128, *y as i128));
    let (x0, y0) = it.next()?;
    let (x1, y1) = distinct.iter().map(|(x, y)| (*x as i128, *y as i128)).find(|(x, _)| *x != x0)?;
    let (dx, dy) = (x1 - x0, y1 - y0);
    if !distinct.iter().all(|(x, y)| (*y as i128 - y0) * dx == dy * (*x as i128 - x0)) {
        return None;
    }
    // b = (dy / dx) a + q, q = y0 - dy x0 / dx: written with whole numbers
    let g = gcd(dy.abs(), dx.abs()).max(1);
    let (num, den) = if dx < 0 { (-dy / g, -dx / g) } else { (dy / g, dx / g) };
    let offset = y0 * den - num * x0;
    let scaled = |n: i128, s: &str| if n == 1 { s.to_string() } else { format!("{n} * {s}") };
    let plus = |o: i128| match o {
        0 => String::new(),
        o if o > 0 => format!(" + {o}"),
        o => format!(" - {}", -o),
    };
    Some(format!("{} = {}{}", scaled(den, b), scaled(num, a), plus(offset)))
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_through_the_cases_is_written_in_whole_numbers() {
        let points = [(1, 33), (256, 288), (129, 161), (257, 289)];
        assert_eq!(line_through(&points, "width", "k").as_deref(), Some("k = width + 32"));
        assert_eq!(line_through(&[(2, 1), (4, 2), (6, 3)], "k", "h").as_deref(), Some("2 * h = k"));
        assert_eq!(line_through(&[(1, 5), (2, 3), (3, 1)], "a", "b").as_deref(), Some("b = -2 * a + 7"));
        assert_eq!(line_through(&[(1, 2), (2, 3)], "a", "b"), None, "two points are always on a line");
        assert_eq!(line_through(&[(1, 2), (2, 3), (3, 5)], "a", "b"), None);
        assert_eq!(line_through(&[(1, 2), (2, 2), (3, 2)], "a", "b"), None, "a constant is the residues lint's");
    }

    #[test]
    fn subjects_name_the_same_two_in_either_order() {
        assert!(same_subject("k, width", "width,k"));
        assert!(!same_subject("k, width", "k"));
    }
}
