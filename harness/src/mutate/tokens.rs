//! A tokenizer for the kernels' HIP/C++ dialect, just enough for mutation: comments,
//! string and character literals and preprocessor lines are recognised so that no mutant is
//! ever made inside them, and the tokens inside function bodies are marked as the only
//! places a mutant may change.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ident,
    Number,
    /// A string or character literal, kept whole (never mutated).
    Literal,
    Punct,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub text: String,
    /// Byte offsets in the source.
    pub start: usize,
    pub end: usize,
    /// 1-based line of the token's first byte.
    pub line: usize,
    /// Inside a function body (the body's own braces excluded).
    pub in_body: bool,
}

/// Multi-character punctuators, longest first, so `>>=` is never read as `>` `>=`.
const PUNCT: &[&str] =
    &[">>=", "<<=", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "::"];

/// The tokens of `source`, with comments and preprocessor lines (continuations included)
/// left out and function bodies marked: a body is a `{` at brace depth 0 right after `)`
/// (a function's parameter list, `__global__`, `__device__` or plain inline alike).
pub fn tokenize(source: &str) -> Vec<Token> {
    let bytes = source.as_bytes();
    let n = bytes.len();
    let mut tokens = Vec::new();
    let (mut i, mut line, mut line_start) = (0usize, 1usize, true);
    while i < n {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            line_start = true;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            continue;
        }
        if line_start && c == b'#' {
            while i < n && bytes[i] != b'\n' {
                if bytes[i] == b'\\' && i + 1 < n && bytes[i + 1] == b'\n' {
                    i += 1;
                    line += 1;
                }
                i += 1;
            }
            continue;
        }
        line_start = false;
        if source[i..].starts_with("//") {
            while i < n && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if source[i..].starts_with("/*") {
            let end = source[i + 2..].find("*/").map_or(n, |j| i + 2 + j + 2);
            line += source[i..end].matches('\n').count();
            i = end;
            continue;
        }
        let start = i;
        let kind = if c == b'"' || c == b'\'' {
            i += 1;
            while i < n && bytes[i] != c && bytes[i] != b'\n' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(n);
            Kind::Literal
        } else if c.is_ascii_digit() || (c == b'.' && i + 1 < n && bytes[i + 1].is_ascii_digit()) {
            i = number_end(bytes, i);
            Kind::Number
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < n && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            Kind::Ident
        } else {
            i += PUNCT
                .iter()
                .find(|p| source[i..].starts_with(*p))
                .map_or_else(|| source[i..].chars().next().map_or(1, char::len_utf8), |p| p.len());
            Kind::Punct
        };
        tokens.push(Token { kind, text: source[start..i].to_string(), start, end: i, line, in_body: false });
    }
    mark_bodies(&mut tokens);
    tokens
}

/// One past a number: hex or decimal, a fraction, an exponent, suffixes (`0x7fffu`, `1.0e-3f`).
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    let n = bytes.len();
    if bytes[i] == b'0' && i + 1 < n && (bytes[i + 1] | 0x20) == b'x' {
        i += 2;
        while i < n && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
    } else {
        while i < n && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        if i < n && (bytes[i] | 0x20) == b'e' {
            let mut j = i + 1;
            if j < n && (bytes[j] == b'+' || bytes[j] == b'-') {
                j += 1;
            }
            if j < n && bytes[j].is_ascii_digit() {
                i = j;
                while i < n && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
        }
    }
    while i < n && matches!(bytes[i] | 0x20, b'u' | b'l' | b'f') {
        i += 1;
    }
    i
}

fn mark_bodies(tokens: &mut [Token]) {
    let (mut depth, mut in_body) = (0usize, false);
    for k in 0..tokens.len() {
        let text = tokens[k].text.as_str();
        if text == "{" {
            if depth == 0 && k > 0 && tokens[k - 1].text == ")" {
                in_body = true;
                depth += 1;
                continue;
            }
            depth += 1;
        } else if text == "}" {
            depth = depth.saturating_sub(1);
            if depth == 0 && in_body {
                in_body = false;
                continue;
            }
        }
        tokens[k].in_body = in_body;
    }
}

/// The index of the bracket closing the one at `open`, if any.
pub fn closing(tokens: &[Token], open: usize) -> Option<usize> {
    let (o, c) = match tokens[open].text.as_str() {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        "{" => ("{", "}"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        if t.text == o {
            depth += 1;
        } else if t.text == c {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(source: &str) -> Vec<String> {
        tokenize(source).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn comments_strings_and_preprocessor_lines_are_not_code() {
        let source = "#define A(x) \\\n  (x < 1)\n// a < b\nint f(int a) { /* a < b\n */ return a < 2 ? 'a' : \"x < y\"[0]; }\n";
        let tokens = tokenize(source);
        let lt: Vec<&Token> = tokens.iter().filter(|t| t.text == "<").collect();
        assert_eq!(lt.len(), 1, "only the code's `<`: {:?}", texts(source));
        assert_eq!(lt[0].line, 5);
        assert!(tokens.iter().any(|t| t.kind == Kind::Literal && t.text == "\"x < y\""));
        assert!(tokens.iter().any(|t| t.kind == Kind::Literal && t.text == "'a'"));
    }

    #[test]
    fn numbers_and_punctuators_are_whole() {
        assert_eq!(texts("x >>= 1.0e-3f + 0x7fffu;"), ["x", ">>=", "1.0e-3f", "+", "0x7fffu", ";"]);
        assert_eq!(texts("a<=b!=c"), ["a", "<=", "b", "!=", "c"]);
    }

    #[test]
    fn only_function_bodies_are_marked() {
        let source = "struct S { int a[4]; };\n__device__ float g(float x) { if (x < 0) { return 0; } return x; }\n";
        let tokens = tokenize(source);
        let marked: Vec<&str> = tokens.iter().filter(|t| t.in_body).map(|t| t.text.as_str()).collect();
        assert_eq!(marked, ["if", "(", "x", "<", "0", ")", "{", "return", "0", ";", "}", "return", "x", ";"]);
    }
}
