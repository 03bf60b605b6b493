//! Mutation operators fitted to GPU kernels: each makes one small change inside a function
//! body that a contract should notice (a relational or arithmetic swap, an off-by-one, a
//! deleted bounds guard or barrier, a swapped min/max, a changed initial value or shuffle
//! offset, a 64-bit offset narrowed to 32 bits, two index variables swapped). Every mutant
//! keeps the source's line count, so the lines its messages name are the original's.

use std::collections::HashSet;

use serde::Serialize;

use super::tokens::{Kind, Token, closing, tokenize};

/// The kinds of change, each with the stable name reports, `mutants.toml` and the kill
/// matrix use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operator {
    /// `<` and `<=`, `>` and `>=`, `==` and `!=` swapped.
    Relational,
    /// `+` and `-`, `*` and `/` swapped (and their compound assignments).
    Arithmetic,
    /// `+ 1` or `- 1` on the right side of a comparison (a loop or guard bound).
    Bound,
    /// `+ 1` or `- 1` on a subscript or the index argument of `tf_load`/`tf_store`.
    Index,
    /// `if (...) return;` deleted.
    Guard,
    /// `__syncthreads();` deleted.
    Barrier,
    /// `fmaxf` and `fminf`, `max` and `min` swapped.
    MinMax,
    /// An initial value changed: `-INFINITY` to `0.0f`, `= 0.0f` to `1.0f`, `= 0` to `1`.
    Init,
    /// A shuffle's mask or offset, or a reduction loop's start or end, changed.
    Shuffle,
    /// A 64-bit offset narrowed: a `(long long)`, `(size_t)` or `(int64_t)` cast removed, or
    /// a 64-bit variable declared `int`.
    Narrow,
    /// Two adjacent index variables of one index expression swapped (`row * n + col` to
    /// `col * n + row`).
    Swap,
}

impl Operator {
    pub const ALL: [Operator; 11] = [
        Operator::Relational,
        Operator::Arithmetic,
        Operator::Bound,
        Operator::Index,
        Operator::Guard,
        Operator::Barrier,
        Operator::MinMax,
        Operator::Init,
        Operator::Shuffle,
        Operator::Narrow,
        Operator::Swap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operator::Relational => "relational",
            Operator::Arithmetic => "arithmetic",
            Operator::Bound => "bound",
            Operator::Index => "index",
            Operator::Guard => "guard",
            Operator::Barrier => "barrier",
            Operator::MinMax => "min-max",
            Operator::Init => "init",
            Operator::Shuffle => "shuffle",
            Operator::Narrow => "narrow",
            Operator::Swap => "swap",
        }
    }

    pub fn from_name(name: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// One replacement of a byte range of the source.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Edit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// One mutant: one change to one file.
#[derive(Clone, Debug, Serialize)]
pub struct Mutant {
    /// The file as the repository names it (`kernels/tf_add.hip`).
    pub file: String,
    /// The line of the change's first byte.
    pub line: usize,
    pub operator: Operator,
    /// The changed text before and after (`<` and `<=`; a deleted guard's whole text and "").
    pub original: String,
    pub replacement: String,
    /// 1 for the first mutant of this file, line, operator, original and replacement, 2 for
    /// the next (two `<` on one line), so each has a name of its own.
    pub occurrence: usize,
    /// The changed line(s) before and after, trimmed and joined by spaces.
    pub before: String,
    pub after: String,
    pub edits: Vec<Edit>,
}

impl Mutant {
    /// The stable name: file, line, operator and the change, with `#2` for a repeat.
    pub fn name(&self) -> String {
        let occurrence = if self.occurrence > 1 { format!(" #{}", self.occurrence) } else { String::new() };
        format!("{}:{} {} `{}` -> `{}`{occurrence}", self.file, self.line, self.operator.name(), self.original, self.replacement)
    }

    /// The mutated source.
    pub fn apply(&self, source: &str) -> String {
        apply_edits(source, &self.edits)
    }
}

fn apply_edits(source: &str, edits: &[Edit]) -> String {
    let mut out = source.to_string();
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.start));
    for e in sorted {
        out.replace_range(e.start..e.end, &e.text);
    }
    out
}

/// Words that are not values: a `*` or `-` after one is not a binary operator, and they
/// are never index variables.
const TYPE_WORDS: &[&str] = &[
    "float", "int", "unsigned", "short", "long", "void", "char", "bool", "double", "const", "auto", "return", "case", "true", "false",
    "nullptr", "size_t", "int64_t",
];

/// Every mutant of one source file, in source order, without duplicates.
pub fn mutants(file: &str, source: &str) -> Vec<Mutant> {
    let tokens = tokenize(source);
    // names declared as pointers (`const float* p,`, `float* out = ...`): bases, not index variables
    let pointers: HashSet<String> = (2..tokens.len().saturating_sub(1))
        .filter(|&j| {
            tokens[j].kind == Kind::Ident
                && tokens[j - 1].text == "*"
                && tokens[j - 2].kind == Kind::Ident
                && matches!(tokens[j + 1].text.as_str(), "," | ")" | "=")
        })
        .map(|j| tokens[j].text.clone())
        .collect();
    let mut generator = Generator { file, source, tokens: &tokens, pointers, out: Vec::new(), seen: HashSet::new() };
    for (k, token) in tokens.iter().enumerate() {
        if token.in_body {
            generator.at(k);
        }
    }
    let mut out = generator.out;
    let mut counts: std::collections::HashMap<(usize, Operator, String, String), usize> = std::collections::HashMap::new();
    for m in &mut out {
        let count = counts.entry((m.line, m.operator, m.original.clone(), m.replacement.clone())).or_default();
        *count += 1;
        m.occurrence = *count;
    }
    out
}

struct Generator<'a> {
    file: &'a str,
    source: &'a str,
    tokens: &'a [Token],
    pointers: HashSet<String>,
    out: Vec<Mutant>,
    seen: HashSet<Vec<Edit>>,
}

impl Generator<'_> {
    fn t(&self, k: usize) -> &str {
        self.tokens.get(k).map_or("", |t| t.text.as_str())
    }

    /// A mutant from edits; a deleted range keeps its newlines, so the line count holds.
    fn add(&mut self, operator: Operator, mut edits: Vec<Edit>) {
        edits.sort_by_key(|e| e.start);
        for e in &mut edits {
            let removed = self.source[e.start..e.end].matches('\n').count();
            let added = e.text.matches('\n').count();
            if added < removed {
                e.text.push_str(&"\n".repeat(removed - added));
            }
        }
        if !self.seen.insert(edits.clone()) {
            return;
        }
        let (mut first, last) = (edits[0].start, edits.iter().map(|e| e.end).max().unwrap_or(edits[0].end));
        // a pure insertion (`+ 1` after an operand) is named with the token it follows
        if first == last
            && let Some(before) = self.tokens.iter().find(|t| t.end == first)
        {
            first = before.start;
        }
        let shift = |e: &Edit| e.start - first;
        let span = &self.source[first..last];
        let mut changed = span.to_string();
        for e in edits.iter().rev() {
            changed.replace_range(shift(e)..shift(e) + (e.end - e.start), &e.text);
        }
        let line_start = self.source[..first].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.source[last..].find('\n').map_or(self.source.len(), |i| last + i);
        let lines = &self.source[line_start..line_end];
        let delta = changed.len() as isize - span.len() as isize;
        let mutated = apply_edits(self.source, &edits);
        let mutated_lines = &mutated[line_start..(line_end as isize + delta) as usize];
        let join = |text: &str| text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        self.out.push(Mutant {
            file: self.file.to_string(),
            line: self.source[..first].matches('\n').count() + 1,
            operator,
            original: join(span),
            replacement: join(&changed),
            occurrence: 1,
            before: join(lines),
            after: join(mutated_lines),
            edits,
        });
    }

    fn replace(&mut self, operator: Operator, k: usize, text: &str) {
        let t = &self.tokens[k];
        self.add(operator, vec![Edit { start: t.start, end: t.end, text: text.to_string() }]);
    }

    /// `toks[k]` is a binary operator: it follows a value.
    fn binary(&self, k: usize) -> bool {
        let Some(p) = k.checked_sub(1).map(|j| &self.tokens[j]) else { return false };
        match p.kind {
            Kind::Number => true,
            Kind::Ident => !TYPE_WORDS.contains(&p.text.as_str()),
            _ => p.text == ")" || p.text == "]",
        }
    }

    /// One past the end of the operand starting at `k` (stops at `, ; && || ? :` or a closer).
    fn expression_end(&self, k: usize) -> usize {
        let mut depth = 0usize;
        let mut j = k;
        while j < self.tokens.len() {
            match self.t(j) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1
                }
                ";" | "," | "&&" | "||" | "?" | ":" if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        j
    }

    /// The arguments of the call whose parentheses are at `open` and `close`: (first, one past last).
    fn arguments(&self, open: usize, close: usize) -> Vec<(usize, usize)> {
        let (mut out, mut depth, mut start) = (Vec::new(), 0usize, open + 1);
        for j in open + 1..close {
            match self.t(j) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth = depth.saturating_sub(1),
                "," if depth == 0 => {
                    out.push((start, j));
                    start = j + 1;
                }
                _ => {}
            }
        }
        if start < close {
            out.push((start, close));
        }
        out
    }

    /// `[` opens the size of a `__shared__` array's declaration, not a subscript.
    fn in_shared_declaration(&self, k: usize) -> bool {
        let mut j = k;
        while j > 0 && !matches!(self.t(j - 1), ";" | "{" | "}") {
            j -= 1;
        }
        self.t(j) == "__shared__" || self.t(j) == "extern"
    }

    /// `+ 1` / `- 1` after the operand ending at `last` (wrapped in parentheses from `first`
    /// when it holds an operator that binds looser than `+`), unless it undoes a `- 1` / `+ 1`.
    fn off_by_one(&mut self, operator: Operator, first: usize, last: usize, wrap: bool) {
        for (sign, undoes) in [("+", "-"), ("-", "+")] {
            if self.t(last) == "1" && self.t(last - 1) == undoes {
                continue;
            }
            let end = self.tokens[last].end;
            if wrap {
                let start = self.tokens[first].start;
                self.add(
                    operator,
                    vec![Edit { start, end: start, text: "(".into() }, Edit { start: end, end, text: format!(") {sign} 1") }],
                );
            } else {
                self.add(operator, vec![Edit { start: end, end, text: format!(" {sign} 1") }]);
            }
        }
    }

    /// Index variables in `lo..hi`: lowercase names that are not calls, members or type words.
    fn index_variables(&self, lo: usize, hi: usize) -> Vec<usize> {
        (lo..hi)
            .filter(|&j| {
                let t = &self.tokens[j];
                t.kind == Kind::Ident
                    && !TYPE_WORDS.contains(&t.text.as_str())
                    && !self.pointers.contains(&t.text)
                    && t.text.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                    && self.t(j + 1) != "("
                    && !matches!(self.t(j.wrapping_sub(1)), "." | "->")
            })
            .collect()
    }

    fn swaps(&mut self, lo: usize, hi: usize) {
        let ids = self.index_variables(lo, hi);
        for pair in ids.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if self.t(a) == self.t(b) || (a + 1..b).any(|j| self.t(j) == "[") {
                continue;
            }
            // `a + b` or `a * b` alone: swapping them changes nothing
            if b == a + 2 && matches!(self.t(a + 1), "+" | "*") {
                let (before, after) = (self.t(a.wrapping_sub(1)), self.t(b + 1));
                let plain = match self.t(a + 1) {
                    "+" => !matches!(before, "-" | "*" | "/" | "%" | "<<" | ">>") && !matches!(after, "*" | "/" | "%"),
                    _ => !matches!(before, "/" | "%") && !matches!(after, "[" | "("),
                };
                if plain {
                    continue;
                }
            }
            let (ta, tb) = (&self.tokens[a], &self.tokens[b]);
            let edits = vec![
                Edit { start: ta.start, end: ta.end, text: tb.text.clone() },
                Edit { start: tb.start, end: tb.end, text: ta.text.clone() },
            ];
            self.add(Operator::Swap, edits);
        }
    }

    fn at(&mut self, k: usize) {
        let kind = self.tokens[k].kind;
        let x = self.tokens[k].text.clone();
        if kind == Kind::Punct {
            let relational = match x.as_str() {
                "<" => Some("<="),
                "<=" => Some("<"),
                ">" => Some(">="),
                ">=" => Some(">"),
                "==" => Some("!="),
                "!=" => Some("=="),
                _ => None,
            };
            if let Some(r) = relational {
                self.replace(Operator::Relational, k, r);
                // a bound: the right side, unless it is a literal
                if matches!(x.as_str(), "<" | "<=" | ">" | ">=") {
                    let end = self.expression_end(k + 1);
                    if end > k + 1 && !(end == k + 2 && self.tokens[k + 1].kind == Kind::Number) {
                        self.off_by_one(Operator::Bound, k + 1, end - 1, end > k + 2);
                    }
                }
            }
            let arithmetic = match x.as_str() {
                "+" => Some("-"),
                "-" => Some("+"),
                "*" => Some("/"),
                "/" => Some("*"),
                _ => None,
            };
            if let Some(r) = arithmetic
                && self.binary(k)
            {
                self.replace(Operator::Arithmetic, k, r);
            }
            let compound = match x.as_str() {
                "+=" => Some("-="),
                "-=" => Some("+="),
                "*=" => Some("/="),
                "/=" => Some("*="),
                _ => None,
            };
            if let Some(r) = compound {
                self.replace(Operator::Arithmetic, k, r);
            }
            if x == "["
                && !self.in_shared_declaration(k)
                && let Some(close) = closing(self.tokens, k)
                && close > k + 1
            {
                let wrap = (k + 1..close).any(|j| matches!(self.t(j), "<<" | ">>" | "?" | "&" | "|" | "^" | "<" | ">" | "=="));
                self.off_by_one(Operator::Index, k + 1, close - 1, wrap);
                self.swaps(k + 1, close);
            }
            if x == "-" && self.t(k + 1) == "INFINITY" {
                let (start, end) = (self.tokens[k].start, self.tokens[k + 1].end);
                self.add(Operator::Init, vec![Edit { start, end, text: "0.0f".into() }]);
            }
            if x == "=" && self.tokens.get(k + 1).is_some_and(|t| t.kind == Kind::Number) && matches!(self.t(k + 2), ";" | ",") {
                match self.t(k + 1) {
                    "0.0f" | "0.0" | "0.f" => self.replace(Operator::Init, k + 1, "1.0f"),
                    "0" => self.replace(Operator::Init, k + 1, "1"),
                    _ => {}
                }
            }
            // a 64-bit offset's initializer: its index variables swapped
            if x == "=" && self.tokens.get(k.wrapping_sub(1)).is_some_and(|t| t.kind == Kind::Ident) {
                let decl = self.t(k.wrapping_sub(2)) == "long"
                    || self.t(k.wrapping_sub(2)) == "*"
                    || (self.t(k.wrapping_sub(2)) == "," && (k.saturating_sub(12)..k).any(|j| self.t(j) == "long"));
                if decl {
                    let end = self.expression_end(k + 1);
                    self.swaps(k + 1, end);
                }
            }
            // a narrowing cast removed: `(long long)x`, `(size_t)x`, `(int64_t)x`
            if x == "(" {
                let close = match (self.t(k + 1), self.t(k + 2), self.t(k + 3)) {
                    ("long", "long", ")") => Some(k + 3),
                    ("size_t" | "int64_t", ")", _) => Some(k + 2),
                    _ => None,
                };
                if let Some(close) = close {
                    let (start, end) = (self.tokens[k].start, self.tokens[close].end);
                    self.add(Operator::Narrow, vec![Edit { start, end, text: String::new() }]);
                }
            }
            return;
        }
        if kind != Kind::Ident {
            return;
        }
        match x.as_str() {
            "if" if self.t(k + 1) == "(" => {
                if let Some(close) = closing(self.tokens, k + 1)
                    && self.t(close + 1) == "return"
                    && self.t(close + 2) == ";"
                {
                    let (start, end) = (self.tokens[k].start, self.tokens[close + 2].end);
                    self.add(Operator::Guard, vec![Edit { start, end, text: String::new() }]);
                }
            }
            "__syncthreads" if self.t(k + 1) == "(" && self.t(k + 2) == ")" && self.t(k + 3) == ";" => {
                let (start, end) = (self.tokens[k].start, self.tokens[k + 3].end);
                self.add(Operator::Barrier, vec![Edit { start, end, text: String::new() }]);
            }
            "fmaxf" | "fminf" | "max" | "min" if self.t(k + 1) == "(" => {
                let other = match x.as_str() {
                    "fmaxf" => "fminf",
                    "fminf" => "fmaxf",
                    "max" => "min",
                    _ => "max",
                };
                self.replace(Operator::MinMax, k, other);
            }
            "__shfl_xor" | "__shfl_down" | "__shfl_xor_sync" | "__shfl_down_sync" if self.t(k + 1) == "(" => {
                if let Some(close) = closing(self.tokens, k + 1) {
                    let arguments = self.arguments(k + 1, close);
                    let at = if x.ends_with("_sync") { 2 } else { 1 };
                    if let Some(&(first, end)) = arguments.get(at) {
                        let (start, stop) = (self.tokens[first].start, self.tokens[end - 1].end);
                        let offset = self.source[start..stop].to_string();
                        // the xor mask halved (another lane pairing); the down offset one more
                        let text = if x.starts_with("__shfl_xor") { format!("({offset}) >> 1") } else { format!("({offset}) + 1") };
                        self.add(Operator::Shuffle, vec![Edit { start, end: stop, text }]);
                    }
                }
            }
            "for" if self.t(k + 1) == "(" => self.reduction_loop(k),
            "tf_load" | "tf_store" if self.t(k + 1) == "(" => {
                if let Some(close) = closing(self.tokens, k + 1) {
                    let arguments = self.arguments(k + 1, close);
                    if let Some(&(first, end)) = arguments.get(2) {
                        self.off_by_one(Operator::Index, first, end - 1, false);
                        self.swaps(first, end);
                    }
                }
            }
            // a 64-bit variable declared `int`: `long long x =` (the first declarator)
            "long"
                if self.t(k + 1) == "long"
                    && !matches!(self.t(k.wrapping_sub(1)), "long" | "(")
                    && self.tokens.get(k + 2).is_some_and(|t| t.kind == Kind::Ident)
                    && self.t(k + 3) == "=" =>
            {
                let (start, end) = (self.tokens[k].start, self.tokens[k + 1].end);
                self.add(Operator::Narrow, vec![Edit { start, end, text: "int".into() }]);
            }
            "size_t" | "int64_t"
                if self.t(k.wrapping_sub(1)) != "("
                    && self.tokens.get(k + 1).is_some_and(|t| t.kind == Kind::Ident)
                    && self.t(k + 2) == "=" =>
            {
                self.replace(Operator::Narrow, k, "int");
            }
            _ => {}
        }
    }

    /// A tree or shuffle reduction's loop (`for (int offset = 16; offset > 0; offset >>= 1)`):
    /// its start halved and its end moved (`> 0` to `> 1`), so a level of the tree is lost.
    fn reduction_loop(&mut self, k: usize) {
        let Some(close) = closing(self.tokens, k + 1) else { return };
        if !(k + 2..close).any(|j| self.t(j) == ">>=") {
            return;
        }
        let semis: Vec<usize> = (k + 2..close).filter(|&j| self.t(j) == ";").collect();
        let [first_semi, second_semi] = semis[..] else { return };
        if let Some(eq) = (k + 2..first_semi).find(|&j| self.t(j) == "=") {
            if eq + 2 == first_semi
                && let Ok(v) = self.t(eq + 1).parse::<u64>()
            {
                self.replace(Operator::Shuffle, eq + 1, &(v / 2).to_string());
            } else if self.t(first_semi - 2) == "/" && self.t(first_semi - 1) == "2" {
                self.replace(Operator::Shuffle, first_semi - 1, "4");
            }
        }
        for j in first_semi..second_semi {
            if self.t(j) == ">" && self.t(j + 1) == "0" {
                self.replace(Operator::Shuffle, j + 1, "1");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
#include \"common.h\"
// i < n here is a comment
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
  return v;
}
extern \"C\" __global__ void k(const float* a, float* out, int rows, int n) {
  __shared__ float partial[256];
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)rows * n) return;
  long long row = i / n, col = i % n;
  float m = -INFINITY;
  float s = 0.0f;
  m = fmaxf(m, a[row * n + col]);
  partial[threadIdx.x] = m;
  __syncthreads();
  if (threadIdx.x == 0) out[i] = partial[0] + s;
}
";

    fn find<'a>(all: &'a [Mutant], operator: Operator, original: &str, replacement: &str) -> &'a Mutant {
        all.iter().find(|m| m.operator == operator && m.original == original && m.replacement == replacement).unwrap_or_else(|| {
            panic!(
                "no {} mutant `{original}` -> `{replacement}` in {:#?}",
                operator.name(),
                all.iter().map(Mutant::name).collect::<Vec<_>>()
            )
        })
    }

    #[test]
    fn each_operator_makes_the_expected_change() {
        let all = mutants("kernels/k.hip", SAMPLE);
        let m = find(&all, Operator::Relational, ">=", ">");
        assert_eq!((m.line, m.after.as_str()), (10, "if (i > (long long)rows * n) return;"));
        let m = find(&all, Operator::Arithmetic, "*", "/");
        assert_eq!(m.after, "long long i = (long long)blockIdx.x / blockDim.x + threadIdx.x;");
        let m = find(&all, Operator::Bound, "(long long)rows * n", "((long long)rows * n) + 1");
        assert_eq!(m.after, "if (i >= ((long long)rows * n) + 1) return;");
        let m = find(&all, Operator::Index, "col", "col - 1");
        assert_eq!(m.line, 14);
        assert_eq!(m.after, "m = fmaxf(m, a[row * n + col - 1]);");
        let m = find(&all, Operator::Guard, "if (i >= (long long)rows * n) return;", "");
        assert_eq!(m.after, "");
        find(&all, Operator::Barrier, "__syncthreads();", "");
        find(&all, Operator::MinMax, "fmaxf", "fminf");
        find(&all, Operator::Init, "-INFINITY", "0.0f");
        find(&all, Operator::Init, "0.0f", "1.0f");
        let m = find(&all, Operator::Shuffle, "offset", "(offset) >> 1");
        assert_eq!(m.line, 4);
        find(&all, Operator::Shuffle, "16", "8");
        find(&all, Operator::Shuffle, "0", "1");
        let m = find(&all, Operator::Narrow, "(long long)", "");
        assert_eq!(m.after, "long long i = blockIdx.x * blockDim.x + threadIdx.x;");
        find(&all, Operator::Narrow, "long long", "int");
        let m = find(&all, Operator::Swap, "row * n + col", "col * n + row");
        assert_eq!(m.after, "m = fmaxf(m, a[col * n + row]);");
        // a pointer is a base, never swapped with an index
        assert!(!all.iter().any(|m| m.operator == Operator::Swap && m.original.contains('a') && m.replacement.starts_with("row")));
        // never inside a comment, a string or a preprocessor line, nor a shared array's size
        assert!(all.iter().all(|m| m.line > 2));
        assert!(!all.iter().any(|m| m.line == 8));
    }

    #[test]
    fn no_mutant_changes_the_line_count_and_names_are_unique() {
        let multi_line_guard = "__global__ void g(int n) {\n  if (threadIdx.x >=\n      n) return;\n}\n";
        for (file, source) in [("k.hip", SAMPLE), ("g.hip", multi_line_guard)] {
            let all = mutants(file, source);
            assert!(!all.is_empty());
            let mut names = HashSet::new();
            for m in &all {
                assert_eq!(m.apply(source).lines().count(), source.lines().count(), "{}", m.name());
                assert!(names.insert(m.name()), "two mutants named {}", m.name());
            }
        }
    }

    #[test]
    fn the_repository_kernels_mutate_without_changing_line_counts() {
        let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
        let mut total = 0;
        for entry in std::fs::read_dir(&kernels).unwrap() {
            let path = entry.unwrap().path();
            if !matches!(path.extension().and_then(|e| e.to_str()), Some("hip" | "h")) {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            for m in mutants("kernels/x", &source) {
                assert_eq!(m.apply(&source).matches('\n').count(), source.matches('\n').count(), "{}", m.name());
                total += 1;
            }
        }
        assert!(total > 300, "{total} mutants of the repository's kernels");
    }
}
