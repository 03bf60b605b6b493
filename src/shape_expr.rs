//! Shape expressions: integer arithmetic over shape symbols (`n * k`, `ceil_div(keys, tile)`),
//! used by op signatures and contracts, and conditions over them (`tiles <= 1024`, `bits in
//! [2, 4, 8]`) that a kernel needs of its shapes. Checked arithmetic, bounded size and depth,
//! so any input gives a value or an error, never a panic or an unbounded allocation.

use std::collections::BTreeMap;

use crate::EngineError;

const MAX_LENGTH: usize = 1024;
const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Number(i64),
    Symbol(String),
    Negate(Box<Expr>),
    Binary(Box<Expr>, Operator, Box<Expr>),
    Call(Function, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operator {
    Add,
    Subtract,
    Multiply,
    Divide,
    Remainder,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Function {
    CeilDiv,
    Min,
    Max,
}

pub type Symbols = BTreeMap<String, i64>;

fn error(expression: &str, reason: impl Into<String>) -> EngineError {
    EngineError::ShapeExpression { expression: expression.to_string(), reason: reason.into() }
}

impl Expr {
    pub fn parse(text: &str) -> Result<Expr, EngineError> {
        if text.len() > MAX_LENGTH {
            // the first 64 characters name it; a byte slice could cut a character in two
            let head: String = text.chars().take(64).collect();
            return Err(error(&head, format!("longer than {MAX_LENGTH} characters")));
        }
        let mut parser = Parser { text, bytes: text.as_bytes(), at: 0, depth: 0 };
        let expr = parser.expression()?;
        parser.skip_space();
        if parser.at != parser.bytes.len() {
            return Err(error(text, format!("unexpected `{}` at column {}", &text[parser.at..], parser.at + 1)));
        }
        Ok(expr)
    }

    /// Every symbol the expression reads, in order of first use.
    pub fn symbols(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Number(_) => {}
            Expr::Symbol(s) => {
                if !out.contains(&s.as_str()) {
                    out.push(s)
                }
            }
            Expr::Negate(e) => e.collect(out),
            Expr::Binary(a, _, b) => {
                a.collect(out);
                b.collect(out)
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.collect(out)),
        }
    }

    pub fn evaluate(&self, symbols: &Symbols) -> Result<i64, String> {
        match self {
            Expr::Number(v) => Ok(*v),
            Expr::Symbol(s) => symbols.get(s).copied().ok_or_else(|| format!("undefined shape symbol `{s}`")),
            Expr::Negate(e) => e.evaluate(symbols)?.checked_neg().ok_or_else(|| "overflow".to_string()),
            Expr::Binary(a, op, b) => {
                let (a, b) = (a.evaluate(symbols)?, b.evaluate(symbols)?);
                let value = match op {
                    Operator::Add => a.checked_add(b),
                    Operator::Subtract => a.checked_sub(b),
                    Operator::Multiply => a.checked_mul(b),
                    Operator::Divide | Operator::Remainder if b == 0 => return Err("division by zero".into()),
                    Operator::Divide => a.checked_div(b),
                    Operator::Remainder => a.checked_rem(b),
                };
                value.ok_or_else(|| "overflow".to_string())
            }
            Expr::Call(function, args) => {
                let values = args.iter().map(|a| a.evaluate(symbols)).collect::<Result<Vec<_>, _>>()?;
                match function {
                    Function::CeilDiv => {
                        let (a, b) = (values[0], values[1]);
                        if b <= 0 {
                            return Err("ceil_div by a divisor that is not positive".into());
                        }
                        if a < 0 {
                            return Err("ceil_div of a negative number".into());
                        }
                        Ok(a / b + i64::from(a % b != 0))
                    }
                    Function::Min => Ok(values[0].min(values[1])),
                    Function::Max => Ok(values[0].max(values[1])),
                }
            }
        }
    }
}

/// The expression written back, every binary operation in parentheses.
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&show(self))
    }
}

/// A condition a kernel needs of its shapes: two expressions compared (`tiles <= 1024`,
/// `d % 2 == 0`), or one that must be one of a list (`bits in [2, 3, 4, 6, 8]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// As written: refusals quote it.
    pub text: String,
    pub left: Expr,
    pub test: Test,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Test {
    Compare(Comparison, Expr),
    OneOf(Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Comparison {
    Equal,
    NotEqual,
    Less,
    AtMost,
    Greater,
    AtLeast,
}

/// Two-character operators first, so `<=` is not read as `<`.
const COMPARISONS: [(&str, Comparison); 6] = [
    ("==", Comparison::Equal),
    ("!=", Comparison::NotEqual),
    ("<=", Comparison::AtMost),
    (">=", Comparison::AtLeast),
    ("<", Comparison::Less),
    (">", Comparison::Greater),
];

impl Condition {
    pub fn parse(text: &str) -> Result<Condition, EngineError> {
        if text.len() > MAX_LENGTH {
            let head: String = text.chars().take(64).collect();
            return Err(error(&head, format!("longer than {MAX_LENGTH} characters")));
        }
        // an error inside one side names the whole condition
        let side = |part: &str| Expr::parse(part).map_err(|e| within(text, e));
        let condition = |left, test| Ok(Condition { text: text.trim().to_string(), left, test });
        // no expression holds `=`, `!`, `<` or `>`: the first one starts the comparison
        if let Some(at) = text.find(['=', '!', '<', '>']) {
            let rest = &text[at..];
            let Some((symbol, comparison)) = COMPARISONS.iter().find(|(s, _)| rest.starts_with(s)) else {
                let written: String = rest.chars().take(2).collect();
                return Err(error(text, format!("`{written}` is no comparison (==, !=, <, <=, >, >=)")));
            };
            return condition(side(&text[..at])?, Test::Compare(*comparison, side(&rest[symbol.len()..])?));
        }
        let Some((left, list)) = split_at_in(text) else {
            return Err(error(text, "no comparison: write `a <= b` (==, !=, <, <=, >, >=) or `a in [x, y]`"));
        };
        let inner = list.trim().strip_prefix('[').and_then(|l| l.strip_suffix(']'));
        let inner = inner.ok_or_else(|| error(text, "`in` takes a list in brackets: `bits in [2, 4, 8]`"))?;
        if inner.trim().is_empty() {
            return Err(error(text, "`in` an empty list holds for nothing"));
        }
        let values = split_top_level(inner).into_iter().map(side).collect::<Result<_, _>>()?;
        condition(side(left)?, Test::OneOf(values))
    }

    /// Every symbol the condition reads, in order of first use.
    pub fn symbols(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.left.collect(&mut out);
        match &self.test {
            Test::Compare(_, right) => right.collect(&mut out),
            Test::OneOf(values) => values.iter().for_each(|v| v.collect(&mut out)),
        }
        out
    }

    /// Whether it holds for these symbols; an error where a side has no value.
    pub fn holds(&self, symbols: &Symbols) -> Result<bool, String> {
        let left = self.left.evaluate(symbols)?;
        match &self.test {
            Test::Compare(comparison, right) => {
                let right = right.evaluate(symbols)?;
                Ok(match comparison {
                    Comparison::Equal => left == right,
                    Comparison::NotEqual => left != right,
                    Comparison::Less => left < right,
                    Comparison::AtMost => left <= right,
                    Comparison::Greater => left > right,
                    Comparison::AtLeast => left >= right,
                })
            }
            Test::OneOf(values) => {
                for value in values {
                    if value.evaluate(symbols)? == left {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    /// Nothing when it holds, else why not, naming the condition and the values it read:
    /// ``` `tiles <= 1024` does not hold: tiles = 2000 ```.
    pub fn check(&self, symbols: &Symbols) -> Result<(), String> {
        match self.holds(symbols) {
            Ok(true) => Ok(()),
            Ok(false) => {
                let values: Vec<String> = self.symbols().iter().filter_map(|s| symbols.get(*s).map(|v| format!("{s} = {v}"))).collect();
                Err(format!("`{}` does not hold: {}", self.text, values.join(", ")))
            }
            Err(e) => Err(format!("`{}`: {e}", self.text)),
        }
    }
}

/// An expression's parse error restated for the condition that holds it.
fn within(condition: &str, e: EngineError) -> EngineError {
    match e {
        EngineError::ShapeExpression { reason, .. } => error(condition, reason),
        other => other,
    }
}

/// `left in [list]`: the text before and after the last `in` that is a word of its own,
/// outside parentheses and brackets (so a symbol may still be called `in`).
fn split_at_in(text: &str) -> Option<(&str, &str)> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut depth = 0i32;
    let mut found = None;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ if depth == 0 && text[i..].starts_with("in") => {
                let (before, after) = (&text[..i], &text[i + 2..]);
                if !before.ends_with(word) && !after.starts_with(word) {
                    found = Some((before, after));
                }
            }
            _ => {}
        }
    }
    found
}

/// A comma-separated list of dimensions, e.g. `rows, tiles * d`; `""` is a scalar.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeExpr {
    pub text: String,
    pub dims: Vec<Expr>,
}

impl ShapeExpr {
    pub fn parse(text: &str) -> Result<ShapeExpr, EngineError> {
        let dims = if text.trim().is_empty() {
            Vec::new()
        } else {
            split_top_level(text).into_iter().map(Expr::parse).collect::<Result<_, _>>()?
        };
        Ok(ShapeExpr { text: text.to_string(), dims })
    }

    pub fn symbols(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for d in &self.dims {
            for s in d.symbols() {
                if !out.contains(&s) {
                    out.push(s)
                }
            }
        }
        out
    }

    /// The dimensions for these symbols; each must be positive.
    pub fn evaluate(&self, symbols: &Symbols) -> Result<Vec<usize>, String> {
        self.dims
            .iter()
            .map(|d| {
                let v = d.evaluate(symbols)?;
                if v <= 0 {
                    Err(format!("dimension `{}` of `{}` is {v}; dimensions must be positive", show(d), self.text))
                } else {
                    usize::try_from(v).map_err(|_| "dimension too large".to_string())
                }
            })
            .collect()
    }
}

fn show(e: &Expr) -> String {
    match e {
        Expr::Number(v) => v.to_string(),
        Expr::Symbol(s) => s.clone(),
        Expr::Negate(e) => format!("-{}", show(e)),
        Expr::Binary(a, op, b) => {
            let op = match op {
                Operator::Add => "+",
                Operator::Subtract => "-",
                Operator::Multiply => "*",
                Operator::Divide => "/",
                Operator::Remainder => "%",
            };
            format!("({} {op} {})", show(a), show(b))
        }
        Expr::Call(f, args) => {
            let name = match f {
                Function::CeilDiv => "ceil_div",
                Function::Min => "min",
                Function::Max => "max",
            };
            format!("{name}({})", args.iter().map(show).collect::<Vec<_>>().join(", "))
        }
    }
}

/// Splits at commas outside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes.get(self.at).copied()
    }

    fn expression(&mut self) -> Result<Expr, EngineError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(error(self.text, format!("nested deeper than {MAX_DEPTH}")));
        }
        let mut left = self.term()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.at += 1;
            let op = if c == b'+' { Operator::Add } else { Operator::Subtract };
            left = Expr::Binary(Box::new(left), op, Box::new(self.term()?));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn term(&mut self) -> Result<Expr, EngineError> {
        let mut left = self.factor()?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            self.at += 1;
            let op = match c {
                b'*' => Operator::Multiply,
                b'/' => Operator::Divide,
                _ => Operator::Remainder,
            };
            left = Expr::Binary(Box::new(left), op, Box::new(self.factor()?));
        }
        Ok(left)
    }

    fn factor(&mut self) -> Result<Expr, EngineError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(error(self.text, format!("nested deeper than {MAX_DEPTH}")));
        }
        let result = match self.peek() {
            None => Err(error(self.text, "ends where a number or symbol was expected")),
            Some(b'-') => {
                self.at += 1;
                Ok(Expr::Negate(Box::new(self.factor()?)))
            }
            Some(b'(') => {
                self.at += 1;
                let inner = self.expression()?;
                if self.peek() != Some(b')') {
                    return Err(error(self.text, format!("missing `)` at column {}", self.at + 1)));
                }
                self.at += 1;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.at;
                while self.at < self.bytes.len() && (self.bytes[self.at].is_ascii_digit() || self.bytes[self.at] == b'_') {
                    self.at += 1;
                }
                let digits: String = self.text[start..self.at].chars().filter(|c| *c != '_').collect();
                digits.parse::<i64>().map(Expr::Number).map_err(|_| error(self.text, format!("number `{digits}` out of range")))
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let start = self.at;
                while self.at < self.bytes.len() && (self.bytes[self.at].is_ascii_alphanumeric() || self.bytes[self.at] == b'_') {
                    self.at += 1;
                }
                let name = &self.text[start..self.at];
                if self.peek() == Some(b'(') { self.call(name) } else { Ok(Expr::Symbol(name.to_string())) }
            }
            Some(_) => {
                let rest: String = self.text[self.at..].chars().take(8).collect();
                Err(error(self.text, format!("unexpected `{rest}` at column {}", self.at + 1)))
            }
        };
        self.depth -= 1;
        result
    }

    fn call(&mut self, name: &str) -> Result<Expr, EngineError> {
        let function = match name {
            "ceil_div" => Function::CeilDiv,
            "min" => Function::Min,
            "max" => Function::Max,
            other => return Err(error(self.text, format!("unknown function `{other}` (known: ceil_div, min, max)"))),
        };
        self.at += 1; // (
        let mut args = vec![self.expression()?];
        while self.peek() == Some(b',') {
            self.at += 1;
            args.push(self.expression()?);
        }
        if self.peek() != Some(b')') {
            return Err(error(self.text, format!("missing `)` after the arguments of {name}")));
        }
        self.at += 1;
        if args.len() != 2 {
            return Err(error(self.text, format!("{name} takes 2 arguments, not {}", args.len())));
        }
        Ok(Expr::Call(function, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbols(pairs: &[(&str, i64)]) -> Symbols {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn evaluates_with_precedence_and_functions() {
        let s = symbols(&[("n", 7), ("k", 130), ("tile", 64)]);
        assert_eq!(Expr::parse("n * k + 1").unwrap().evaluate(&s), Ok(911));
        assert_eq!(Expr::parse("(n + 1) * 2 - k % 7").unwrap().evaluate(&s), Ok(12));
        assert_eq!(Expr::parse("ceil_div(k, tile)").unwrap().evaluate(&s), Ok(3));
        assert_eq!(Expr::parse("min(n, k) - max(1, 2)").unwrap().evaluate(&s), Ok(5));
        assert_eq!(Expr::parse("-n + 10").unwrap().evaluate(&s), Ok(3));
        assert_eq!(ShapeExpr::parse("n, k").unwrap().evaluate(&s), Ok(vec![7, 130]));
        assert_eq!(ShapeExpr::parse("n, ceil_div(k, tile), 2").unwrap().symbols(), vec!["n", "k", "tile"]);
    }

    #[test]
    fn reports_undefined_symbols_zero_division_and_overflow() {
        let s = symbols(&[("n", 4)]);
        assert_eq!(Expr::parse("n * vocab").unwrap().evaluate(&s), Err("undefined shape symbol `vocab`".into()));
        assert_eq!(Expr::parse("n / (n - 4)").unwrap().evaluate(&s), Err("division by zero".into()));
        assert_eq!(Expr::parse("9223372036854775807 + n").unwrap().evaluate(&s), Err("overflow".into()));
        let zero = ShapeExpr::parse("n - 4, n").unwrap().evaluate(&s).unwrap_err();
        assert!(zero.contains("is 0; dimensions must be positive"), "{zero}");
    }

    #[test]
    fn refuses_malformed_text() {
        for bad in ["", "n *", "(n", "n)", "2 $ 3", "foo(1, 2)", "min(1)", "99999999999999999999"] {
            assert!(Expr::parse(bad).is_err(), "{bad} parsed");
        }
        let deep = "(".repeat(200) + "1" + &")".repeat(200);
        assert!(Expr::parse(&deep).unwrap_err().to_string().contains("nested deeper"));
        let deeper = "(".repeat(100_000) + "1" + &")".repeat(100_000);
        assert!(Expr::parse(&deeper).unwrap_err().to_string().contains("longer than 1024 characters"));
    }

    #[test]
    fn conditions_compare_or_look_up_and_say_why_they_fail() {
        let s = symbols(&[("tiles", 2000), ("d", 64), ("bits", 5), ("k", 96), ("in", 2)]);
        let holds = |text: &str| Condition::parse(text).unwrap().holds(&s);
        assert_eq!(holds("tiles <= 1024"), Ok(false));
        assert_eq!(holds("d % 2 == 0"), Ok(true));
        assert_eq!(holds("d != 64"), Ok(false));
        assert_eq!(holds("k * bits % 32 == 0"), Ok(true));
        assert_eq!(holds("min(tiles, d) >= 64"), Ok(true));
        assert_eq!(holds("d < tiles"), Ok(true));
        assert_eq!(holds("bits in [2, 3, 4, 6, 8]"), Ok(false));
        assert_eq!(holds("k / 32 in [1, d / 32, 3]"), Ok(true));
        assert_eq!(holds("in in [1, 2]"), Ok(true), "a symbol may be called `in`");
        assert_eq!(Condition::parse(" tiles <= 1024 ").unwrap().text, "tiles <= 1024");
        let why = Condition::parse("tiles + d <= 1024").unwrap().check(&s).unwrap_err();
        assert_eq!(why, "`tiles + d <= 1024` does not hold: tiles = 2000, d = 64");
        assert_eq!(Condition::parse("bits in [2, 4]").unwrap().check(&s).unwrap_err(), "`bits in [2, 4]` does not hold: bits = 5");
        assert_eq!(Condition::parse("d / (d - 64) == 1").unwrap().check(&s).unwrap_err(), "`d / (d - 64) == 1`: division by zero");
        assert_eq!(Condition::parse("tiles <= width").unwrap().symbols(), ["tiles", "width"]);
        assert!(Condition::parse("d % 2 == 0").unwrap().check(&s).is_ok());
    }

    #[test]
    fn a_malformed_condition_is_an_error_that_quotes_it() {
        for (bad, words) in [
            ("tiles", "no comparison"),
            ("tiles = 1024", "`= ` is no comparison"),
            ("tiles => 3", "`=>` is no comparison"),
            ("!tiles", "`!t` is no comparison"),
            ("tiles <= ", "ends where a number or symbol was expected"),
            ("< 3", "ends where a number or symbol was expected"),
            ("tiles <= 3 <= 4", "unexpected `<= 4`"),
            ("bits in 2, 4", "a list in brackets"),
            ("bits in []", "an empty list"),
            ("bits in [2, ]", "ends where"),
            ("bits in [2, 4] == 1", "unexpected"),
        ] {
            let e = Condition::parse(bad).unwrap_err().to_string();
            assert!(e.contains(words), "{bad}: {e}");
            assert!(e.starts_with(&format!("shape expression `{bad}`")), "{bad}: {e}");
        }
        assert!(Condition::parse(&"a".repeat(2000)).unwrap_err().to_string().contains("longer than 1024"));
    }

    /// Fuzzing found it: an over-long expression whose 64th byte falls inside a character
    /// panicked while cutting the text that names it in the error.
    #[test]
    fn an_over_long_expression_with_wide_characters_is_an_error() {
        let text = "a".repeat(63) + "\u{510}" + &"1".repeat(1000);
        let e = Expr::parse(&text).unwrap_err().to_string();
        assert!(e.contains("longer than 1024 characters"), "{e}");
        assert!(e.contains(&("a".repeat(63) + "\u{510}`")), "{e}");
    }
}
