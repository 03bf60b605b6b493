//! Mutation testing of the contracts (`contracts mutate`): one-change mutants of the
//! kernels, each run against its op's records, to measure how many wrong kernels the
//! contracts catch. What killed each mutant, what survived, what the repository judged
//! equivalent (`mutants.toml`) and the score against its floor.

pub mod exec;
pub mod operators;
pub mod tokens;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use operators::{Mutant, Operator, mutants};

/// The file, at the repository root, that lists mutants judged equivalent and the floor.
pub const CONFIG_FILE: &str = "mutants.toml";

/// The shared header: a mutant of it runs against every op whose kernel includes it.
pub const COMMON_HEADER: &str = "common.h";

#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    #[error("{path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{file}: {message}")]
    Config { file: String, message: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the unmutated kernels do not pass, so no mutant can be judged: {0}")]
    Baseline(String),
    #[error("{0}")]
    Run(String),
}

/// A mutant judged equivalent: it changes nothing any input could show.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Equivalent {
    pub file: String,
    pub line: usize,
    pub operator: String,
    pub original: String,
    pub replacement: String,
    /// Which of several identical changes on the line (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurrence: Option<usize>,
    /// The backends it holds for (`host`, `cuda`, `hip`; default every one): a survivor only
    /// a GPU run leaves, because only the host checks accesses, is listed for the GPU ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<String>,
    pub reason: String,
}

/// The backends an entry of mutants.toml may name.
pub const BACKENDS: &[&str] = &["host", "cuda", "hip"];

impl Equivalent {
    pub fn matches(&self, m: &Mutant) -> bool {
        self.file == m.file
            && self.line == m.line
            && self.operator == m.operator.name()
            && self.original == m.original
            && self.replacement == m.replacement
            && self.occurrence.unwrap_or(1) == m.occurrence
    }

    pub fn describe(&self) -> String {
        format!("{}:{} {} `{}` -> `{}`", self.file, self.line, self.operator, self.original, self.replacement)
    }
}

/// `mutants.toml`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The least score a run may have (exit 1 below it).
    pub floor: f64,
    #[serde(default)]
    pub equivalent: Vec<Equivalent>,
    /// Survivors that are real bugs no contract catches yet, each with why: printed as known,
    /// still counted against the score (an entry of the same form as `equivalent`).
    #[serde(default)]
    pub known_gap: Vec<Equivalent>,
}

impl Config {
    pub fn load(path: &Path, display: &str) -> Result<Config, MutateError> {
        let text = std::fs::read_to_string(path).map_err(|source| MutateError::Read { path: display.to_string(), source })?;
        Config::parse(&text, display)
    }

    pub fn parse(text: &str, display: &str) -> Result<Config, MutateError> {
        let error = |message: String| MutateError::Config { file: display.to_string(), message };
        let config: Config = toml::from_str(text).map_err(|e| error(e.to_string().trim_end().to_string()))?;
        if !(0.0..=1.0).contains(&config.floor) {
            return Err(error(format!("key `floor`: {} is not a score between 0 and 1", config.floor)));
        }
        let tables = config.equivalent.iter().map(|e| ("equivalent", e)).enumerate();
        let gaps = config.known_gap.iter().map(|e| ("known_gap", e)).enumerate();
        for (i, (table, e)) in tables.chain(gaps) {
            if Operator::from_name(&e.operator).is_none() {
                let known: Vec<&str> = Operator::ALL.iter().map(|o| o.name()).collect();
                return Err(error(format!("key `{table}[{i}].operator`: `{}` is no operator (known: {})", e.operator, known.join(", "))));
            }
            if e.reason.trim().is_empty() || e.reason.contains('\n') {
                return Err(error(format!("key `{table}[{i}].reason`: give one line saying why")));
            }
            if let Some(b) = e.backends.iter().find(|b| !BACKENDS.contains(&b.as_str())) {
                return Err(error(format!("key `{table}[{i}].backends`: `{b}` is no backend (known: {})", BACKENDS.join(", "))));
            }
        }
        Ok(config)
    }

    /// The entries that hold for a run on `backend`: the others neither explain its
    /// survivors nor count as stale or killed there.
    pub fn for_backend(mut self, backend: &str) -> Config {
        let holds = |e: &Equivalent| e.backends.is_empty() || e.backends.iter().any(|b| b == backend);
        self.equivalent.retain(holds);
        self.known_gap.retain(holds);
        self
    }
}

/// A kernel file under mutation and the ops whose records judge its mutants.
#[derive(Clone, Debug)]
pub struct Target {
    /// `kernels/tf_add.hip`, `kernels/common.h`.
    pub file: String,
    pub ops: Vec<String>,
}

/// The files to mutate: each selected op's kernel source, and, when every op is selected
/// (no `--only`), `common.h`, judged by every op whose kernel includes it (a header mutant
/// judged by a few ops would survive for want of the op that uses the changed helper).
pub fn targets(kernels_dir: &Path, only: &[String]) -> Result<Vec<Target>, MutateError> {
    let mut out: Vec<Target> = Vec::new();
    let mut header_ops = Vec::new();
    for op in engine::ops::all() {
        let Some(source) = op.source else { continue };
        // a kernel named from its contract's folder is another library's, not the kernels folder's
        if source.starts_with("./") || source.starts_with("../") {
            continue;
        }
        if !only.is_empty() && !only.iter().any(|o| o == op.name) {
            continue;
        }
        let path = kernels_dir.join(source);
        let text = std::fs::read_to_string(&path).map_err(|source| MutateError::Read { path: format!("kernels/{source}"), source })?;
        if text.contains(&format!("#include \"{COMMON_HEADER}\"")) {
            header_ops.push(op.name.to_string());
        }
        let file = format!("kernels/{source}");
        match out.iter_mut().find(|t| t.file == file) {
            Some(t) => t.ops.push(op.name.to_string()),
            None => out.push(Target { file, ops: vec![op.name.to_string()] }),
        }
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    if !header_ops.is_empty() && only.is_empty() {
        out.push(Target { file: format!("kernels/{COMMON_HEADER}"), ops: header_ops });
    }
    Ok(out)
}

/// Every mutant of the targets, in file then source order.
pub fn generate(kernels_dir: &Path, targets: &[Target]) -> Result<Vec<Mutant>, MutateError> {
    let mut out = Vec::new();
    for target in targets {
        let name = target.file.trim_start_matches("kernels/");
        let path = kernels_dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|source| MutateError::Read { path: target.file.clone(), source })?;
        out.extend(mutants(&target.file, &text));
    }
    Ok(out)
}

/// splitmix64: a seeded order for the sample, the same on every machine.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` of the mutants' indices for `seed`, spread round-robin over (file, operator) groups
/// so every kernel and operator gets its share, returned in generation order.
pub fn sample(all: &[Mutant], n: usize, seed: u64) -> Vec<usize> {
    if n >= all.len() {
        return (0..all.len()).collect();
    }
    let mut groups: BTreeMap<(&str, Operator), Vec<usize>> = BTreeMap::new();
    for (i, m) in all.iter().enumerate() {
        groups.entry((m.file.as_str(), m.operator)).or_default().push(i);
    }
    let mut state = seed;
    let mut queues: Vec<Vec<usize>> = groups
        .into_values()
        .map(|mut g| {
            // Fisher-Yates, then taken from the end
            for i in (1..g.len()).rev() {
                let j = (next(&mut state) % (i as u64 + 1)) as usize;
                g.swap(i, j);
            }
            g
        })
        .collect();
    // the groups' turn order is seeded too, so a small sample is not always the first files'
    for i in (1..queues.len()).rev() {
        let j = (next(&mut state) % (i as u64 + 1)) as usize;
        queues.swap(i, j);
    }
    let mut chosen = Vec::with_capacity(n);
    while chosen.len() < n {
        for q in &mut queues {
            if chosen.len() < n
                && let Some(i) = q.pop()
            {
                chosen.push(i);
            }
        }
    }
    chosen.sort_unstable();
    chosen
}

/// What became of one mutant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// A record went red: the gate (`nonfinite`, `repeat`, `shapes`, `limits`, `seams`) or how it
    /// errored (`error`, `timeout`, `crash`, `device-fault`).
    Killed {
        gate: String,
        record: String,
        message: String,
    },
    Survived,
    /// Its source did not build: not a kill.
    DidNotCompile {
        message: String,
    },
    /// Its compiled code is byte-identical to the original's: equivalent by construction.
    IdenticalCode,
    /// The harness could not judge it (its run ended without a report).
    NotJudged {
        why: String,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct MutantResult {
    pub name: String,
    #[serde(flatten)]
    pub mutant: Mutant,
    /// The op whose score it counts in (the file's op, or `common.h`).
    pub op: String,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Survived, and `mutants.toml` lists it as equivalent: its reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equivalent: Option<String>,
    /// Survived, and `mutants.toml` lists it as a known gap: its reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_gap: Option<String>,
    pub seconds: f64,
}

impl MutantResult {
    fn counts_as_equivalent(&self) -> bool {
        self.outcome == Outcome::IdenticalCode || (self.outcome == Outcome::Survived && self.equivalent.is_some())
    }

    fn is_gap(&self) -> bool {
        matches!(self.outcome, Outcome::Survived | Outcome::NotJudged { .. }) && self.equivalent.is_none()
    }
}

/// The op a mutant of `file` counts under.
pub fn op_of(file: &str) -> String {
    let name = file.trim_start_matches("kernels/");
    name.strip_suffix(".hip").unwrap_or(name).to_string()
}

/// Counts over a set of mutants, and the score.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    pub mutants: usize,
    pub killed: usize,
    pub survived: usize,
    pub equivalent: usize,
    pub identical_code: usize,
    pub did_not_compile: usize,
    pub not_judged: usize,
    /// Survivors neither equivalent nor known: what a contract must still catch.
    pub gaps: usize,
    /// Survivors `mutants.toml` lists as known gaps (counted against the score).
    pub known_gaps: usize,
}

impl Tally {
    pub fn of<'a>(results: impl IntoIterator<Item = &'a MutantResult>) -> Tally {
        let mut t = Tally::default();
        for r in results {
            t.mutants += 1;
            match &r.outcome {
                Outcome::Killed { .. } => t.killed += 1,
                Outcome::Survived => t.survived += 1,
                Outcome::DidNotCompile { .. } => t.did_not_compile += 1,
                Outcome::IdenticalCode => t.identical_code += 1,
                Outcome::NotJudged { .. } => t.not_judged += 1,
            }
            if r.counts_as_equivalent() {
                t.equivalent += 1;
            }
            if r.is_gap() {
                if r.known_gap.is_some() {
                    t.known_gaps += 1;
                } else {
                    t.gaps += 1;
                }
            }
        }
        t
    }

    /// killed / (mutants - did not compile - equivalent); 1 when nothing counts.
    pub fn score(&self) -> f64 {
        let judged = self.mutants - self.did_not_compile - self.equivalent;
        if judged == 0 { 1.0 } else { self.killed as f64 / judged as f64 }
    }
}

/// The whole result of a `contracts mutate` run.
#[derive(Clone, Debug, Serialize)]
pub struct MutateReport {
    pub arch: String,
    pub backend: String,
    pub generated: usize,
    pub sample: Option<usize>,
    pub seed: u64,
    pub floor: f64,
    pub score: f64,
    pub total: Tally,
    pub per_op: BTreeMap<String, Tally>,
    /// operator -> gate (or `survived`, `equivalent`, `did-not-compile`) -> count.
    pub kill_matrix: BTreeMap<String, BTreeMap<String, usize>>,
    pub stale_equivalents: Vec<String>,
    /// Entries of mutants.toml (equivalent or known gap) whose mutant ran and was killed:
    /// the entry no longer says anything true.
    pub killed_but_listed: Vec<String>,
    pub results: Vec<MutantResult>,
    pub seconds: f64,
    pub summary_line: String,
}

/// The columns of the kill matrix, in order.
pub const MATRIX_COLUMNS: &[&str] = &[
    "nonfinite",
    "repeat",
    "shapes",
    "limits",
    "seams",
    "error",
    "timeout",
    "crash",
    "device-fault",
    "survived",
    "equivalent",
    "no-build",
];

fn column_of(r: &MutantResult) -> String {
    match &r.outcome {
        Outcome::Killed { gate, .. } => gate.clone(),
        _ if r.counts_as_equivalent() => "equivalent".into(),
        Outcome::Survived | Outcome::NotJudged { .. } => "survived".into(),
        Outcome::DidNotCompile { .. } => "no-build".into(),
        Outcome::IdenticalCode => "equivalent".into(),
    }
}

impl MutateReport {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        arch: &str,
        backend: &str,
        all: &[Mutant],
        sample: Option<usize>,
        seed: u64,
        config: &Config,
        files: &[String],
        results: Vec<MutantResult>,
        seconds: f64,
    ) -> MutateReport {
        let total = Tally::of(&results);
        let mut per_op: BTreeMap<String, Vec<&MutantResult>> = BTreeMap::new();
        let mut kill_matrix: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        for r in &results {
            per_op.entry(r.op.clone()).or_default().push(r);
            *kill_matrix.entry(r.mutant.operator.name().to_string()).or_default().entry(column_of(r)).or_default() += 1;
        }
        let per_op = per_op.into_iter().map(|(op, rs)| (op, Tally::of(rs))).collect();
        let stale_equivalents = config
            .equivalent
            .iter()
            .chain(&config.known_gap)
            .filter(|e| files.contains(&e.file) && !all.iter().any(|m| e.matches(m)))
            .map(Equivalent::describe)
            .collect();
        let killed_but_listed = results
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Killed { gate, .. } => config
                    .equivalent
                    .iter()
                    .chain(&config.known_gap)
                    .find(|e| e.matches(&r.mutant))
                    .map(|e| format!("{} was killed at {gate}", e.describe())),
                _ => None,
            })
            .collect();
        let score = total.score();
        let summary_line = format!(
            "SUMMARY mutate {arch} {} mutants{}: {} killed, {} survived ({} equivalent, {} known gaps, {} gaps), {} identical code, {} did not compile, {} not judged; score {:.3} (floor {:.2}){}",
            total.mutants,
            match sample {
                Some(_) => format!(" (a sample of {} generated, seed {seed:#x})", all.len()),
                None => " (all generated)".to_string(),
            },
            total.killed,
            total.survived + total.not_judged,
            total.equivalent - total.identical_code,
            total.known_gaps,
            total.gaps,
            total.identical_code,
            total.did_not_compile,
            total.not_judged,
            score,
            config.floor,
            if score < config.floor { ": BELOW THE FLOOR" } else { "" }
        );
        MutateReport {
            arch: arch.to_string(),
            backend: backend.to_string(),
            generated: all.len(),
            sample,
            seed,
            floor: config.floor,
            score,
            total,
            per_op,
            kill_matrix,
            stale_equivalents,
            killed_but_listed,
            results,
            seconds,
            summary_line,
        }
    }

    /// 0 at or above the floor, 1 below it.
    pub fn exit_code(&self) -> i32 {
        if self.score < self.floor { 1 } else { 0 }
    }

    /// Everything printed after the progress lines, the SUMMARY last.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let survivors: Vec<&MutantResult> =
            self.results.iter().filter(|r| matches!(r.outcome, Outcome::Survived | Outcome::NotJudged { .. })).collect();
        out.push(format!("{} survivor(s):", survivors.len()));
        for r in &survivors {
            let verdict = match (&r.equivalent, &r.outcome) {
                (Some(reason), _) => format!("equivalent: {reason}"),
                (None, _) if r.known_gap.is_some() => format!("KNOWN GAP: {}", r.known_gap.as_deref().unwrap_or_default()),
                (None, Outcome::NotJudged { why }) => format!("GAP (not judged: {why})"),
                (None, _) => "GAP: no contract caught it; strengthen a contract or list it in mutants.toml".to_string(),
            };
            out.push(format!("SURVIVED {} [{}] {verdict}", r.mutant.file, r.mutant.operator.name()));
            out.push(format!("    line {}: {}  ->  {}", r.mutant.line, r.mutant.before, r.mutant.after));
        }
        let unbuilt: Vec<&MutantResult> = self.results.iter().filter(|r| matches!(r.outcome, Outcome::DidNotCompile { .. })).collect();
        if !unbuilt.is_empty() {
            out.push(format!("{} did not compile (not counted):", unbuilt.len()));
            for r in unbuilt {
                out.push(format!("    {}", r.name));
            }
        }
        for stale in &self.stale_equivalents {
            out.push(format!("STALE {CONFIG_FILE}: {stale} matches no generated mutant; correct or remove it"));
        }
        for killed in &self.killed_but_listed {
            out.push(format!("KILLED BUT LISTED {CONFIG_FILE}: {killed}; remove its entry"));
        }
        out.push("kill matrix (operator x what killed it):".into());
        let width = 12;
        let mut header = format!("    {:<width$}", "operator");
        for c in MATRIX_COLUMNS {
            header.push_str(&format!(" {c:>w$}", w = c.len().max(6)));
        }
        out.push(header);
        for (operator, row) in &self.kill_matrix {
            let mut line = format!("    {operator:<width$}");
            for c in MATRIX_COLUMNS {
                line.push_str(&format!(" {:>w$}", row.get(*c).copied().unwrap_or(0), w = c.len().max(6)));
            }
            out.push(line);
        }
        out.push("score per op (killed / (mutants - did not compile - equivalent)):".into());
        for (op, t) in &self.per_op {
            out.push(format!(
                "    {op:<20} {:.3}  {} mutants: {} killed, {} survived, {} equivalent, {} did not compile",
                t.score(),
                t.mutants,
                t.killed,
                t.survived + t.not_judged,
                t.equivalent,
                t.did_not_compile
            ));
        }
        out.push(format!("    {:<20} {:.3}", "overall", self.score));
        out.push(self.summary_line.clone());
        out
    }
}

/// Marks survivors that `mutants.toml` lists as equivalent or as known gaps.
pub fn apply_equivalents(results: &mut [MutantResult], config: &Config) {
    for r in results {
        if matches!(r.outcome, Outcome::Survived) {
            r.equivalent = config.equivalent.iter().find(|e| e.matches(&r.mutant)).map(|e| e.reason.clone());
            r.known_gap = config.known_gap.iter().find(|e| e.matches(&r.mutant)).map(|e| e.reason.clone());
        }
    }
}

/// The files `targets` names (for stale checks: entries of other files are not judged).
pub fn target_files(targets: &[Target]) -> Vec<String> {
    let set: HashSet<&str> = targets.iter().map(|t| t.file.as_str()).collect();
    let mut files: Vec<String> = set.into_iter().map(str::to_string).collect();
    files.sort();
    files
}

/// `<root>/reports/last/mutate-<arch>.json`.
pub fn default_report(root: &Path, arch: &str) -> PathBuf {
    root.join("reports/last").join(format!("mutate-{arch}.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(operator: Operator, outcome: Outcome, equivalent: Option<&str>) -> MutantResult {
        let mutant = mutants("kernels/k.hip", "__global__ void k(int n) { if (threadIdx.x < n) return; }\n")
            .into_iter()
            .find(|m| m.operator == operator)
            .unwrap();
        MutantResult {
            name: mutant.name(),
            mutant,
            op: "k".into(),
            outcome,
            equivalent: equivalent.map(str::to_string),
            known_gap: None,
            seconds: 0.0,
        }
    }

    #[test]
    fn the_score_leaves_out_unbuilt_and_equivalent_mutants() {
        let killed = || Outcome::Killed { gate: "shapes".into(), record: "r".into(), message: "m".into() };
        let results = vec![
            result(Operator::Relational, killed(), None),
            result(Operator::Relational, killed(), None),
            result(Operator::Guard, killed(), None),
            result(Operator::Guard, Outcome::Survived, None),
            result(Operator::Guard, Outcome::Survived, Some("cannot be seen")),
            result(Operator::Guard, Outcome::IdenticalCode, None),
            result(Operator::Bound, Outcome::DidNotCompile { message: "x".into() }, None),
        ];
        let t = Tally::of(&results);
        assert_eq!((t.killed, t.survived, t.equivalent, t.did_not_compile, t.gaps), (3, 2, 2, 1, 1));
        assert_eq!(t.score(), 3.0 / 4.0);
        let config = Config { floor: 0.97, equivalent: vec![], known_gap: vec![] };
        let report = MutateReport::new("host-x", "host", &[], Some(7), 1, &config, &[], results, 1.0);
        let lines = report.lines();
        assert!(lines.last().unwrap().starts_with("SUMMARY mutate host-x 7 mutants"));
        assert!(lines.last().unwrap().ends_with("BELOW THE FLOOR"), "{lines:#?}");
        assert!(lines.iter().any(|l| l.starts_with("SURVIVED kernels/k.hip [guard] GAP")), "{lines:#?}");
        assert!(lines.iter().any(|l| l.contains("line 1: ") && l.contains("  ->  ")), "{lines:#?}");
        assert_eq!(report.exit_code(), 1);

        // a known gap is printed as known and still counts against the score
        let mut known = result(Operator::Relational, Outcome::Survived, None);
        known.known_gap = Some("no case reaches it".into());
        let t = Tally::of([&known, &result(Operator::Relational, killed(), None)]);
        assert_eq!((t.killed, t.equivalent, t.gaps, t.known_gaps, t.score()), (1, 0, 0, 1, 0.5));
        let report = MutateReport::new("host-x", "host", &[], None, 1, &config, &[], vec![known], 1.0);
        assert!(report.lines().iter().any(|l| l.ends_with("[relational] KNOWN GAP: no case reaches it")), "{:#?}", report.lines());
    }

    #[test]
    fn a_listed_mutant_that_was_killed_is_named_for_removal() {
        let killed = result(Operator::Guard, Outcome::Killed { gate: "shapes".into(), record: "r".into(), message: "m".into() }, None);
        let entry = Equivalent {
            file: killed.mutant.file.clone(),
            line: killed.mutant.line,
            operator: "guard".into(),
            original: killed.mutant.original.clone(),
            replacement: killed.mutant.replacement.clone(),
            occurrence: None,
            backends: vec![],
            reason: "no case reaches it".into(),
        };
        let config = Config { floor: 0.5, equivalent: vec![], known_gap: vec![entry] };
        let report = MutateReport::new("host-x", "host", &[], None, 1, &config, &[], vec![killed], 1.0);
        let line = report.lines().into_iter().find(|l| l.starts_with("KILLED BUT LISTED")).expect("a KILLED BUT LISTED line");
        assert!(line.contains("kernels/k.hip:1 guard") && line.contains("was killed at shapes; remove its entry"), "{line}");
        assert_eq!(report.killed_but_listed.len(), 1);
    }

    #[test]
    fn mutants_toml_errors_name_the_file_and_key() {
        let bad = "floor = 0.97\n[[equivalent]]\nfile = \"kernels/a.hip\"\nline = 3\noperator = \"nope\"\noriginal = \"<\"\nreplacement = \"<=\"\nreason = \"x\"\n";
        let e = Config::parse(bad, "mutants.toml").unwrap_err().to_string();
        assert!(e.contains("mutants.toml") && e.contains("equivalent[0].operator"), "{e}");
        let e = Config::parse("floor = 0.97\nflor = 1\n", "mutants.toml").unwrap_err().to_string();
        assert!(e.contains("mutants.toml") && e.contains("flor"), "{e}");
        let e = Config::parse("floor = 2.0\n", "mutants.toml").unwrap_err().to_string();
        assert!(e.contains("floor"), "{e}");
        let entry = "file = \"kernels/a.hip\"\nline = 3\noperator = \"guard\"\noriginal = \"x\"\nreplacement = \"\"\nreason = \"y\"\n";
        let e =
            Config::parse(&format!("floor = 0.9\n[[known_gap]]\n{entry}backends = [\"cpu\"]\n"), "mutants.toml").unwrap_err().to_string();
        assert!(e.contains("known_gap[0].backends") && e.contains("`cpu` is no backend"), "{e}");
        let config =
            Config::parse(&format!("floor = 0.9\n[[known_gap]]\n{entry}backends = [\"cuda\", \"hip\"]\n[[known_gap]]\n{entry}"), "m")
                .unwrap();
        assert_eq!(config.clone().for_backend("host").known_gap.len(), 1);
        assert_eq!(config.for_backend("cuda").known_gap.len(), 2);
    }

    #[test]
    fn the_repository_mutants_toml_loads_and_none_of_its_entries_is_stale() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let config = Config::load(&root.join(CONFIG_FILE), CONFIG_FILE).unwrap();
        // the ops with kernels of their own are data: the binary defines them before it mutates
        crate::contract::define_data_ops(&root.join("contracts"));
        let targets = targets(&root.join("kernels"), &[]).unwrap();
        let all = generate(&root.join("kernels"), &targets).unwrap();
        // the known gaps too: those of GPU backends alone would otherwise show only on a GPU run
        for e in config.equivalent.iter().chain(&config.known_gap) {
            assert!(all.iter().any(|m| e.matches(m)), "stale entry in mutants.toml: {}", e.describe());
        }
    }

    #[test]
    fn a_sample_is_seeded_spread_and_in_order() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        crate::contract::define_data_ops(&root.join("contracts"));
        let targets = targets(&root.join("kernels"), &[]).unwrap();
        let all = generate(&root.join("kernels"), &targets).unwrap();
        let a = sample(&all, 40, 7);
        assert_eq!(a, sample(&all, 40, 7));
        assert_ne!(a, sample(&all, 40, 8));
        assert_eq!(a.len(), 40);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        let files: HashSet<&str> = a.iter().map(|&i| all[i].file.as_str()).collect();
        assert!(files.len() >= 10, "{files:?}");
    }
}
