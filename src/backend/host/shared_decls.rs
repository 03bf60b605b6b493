//! The host build's one source rewrite: every block-scope `__shared__` array declaration
//! gets a redzone after it, so that a read or write past its declared size lands in bytes
//! the memory checks know belong to no variable (on the CPU, `__shared__` arrays are
//! thread-local variables laid out back to back, and an overrun would read the next one).
//!
//! `__shared__ float partial[256];` on line 10 becomes, on the same line,
//! `__shared__ simt::shared_array<float[256]> simt_sv_10_partial; auto& partial = simt_sv_10_partial.data;`
//! and the prelude's `shared_array<A>` is `{ A data; unsigned char redzone[64]; }`. The
//! symbol name carries the array's name and line for the findings. Declarations of another
//! form (several declarators, an initializer, `extern`, namespace scope) are left as they are:
//! they are still checked, without a redzone of their own.
//!
//! `__shared__ alignas(16) float tile[64];`, which HIP code writes and clang accepts, would be
//! `thread_local alignas(16) ...` here, which no host compiler takes (a standard attribute in
//! the middle of the decl-specifiers): the `alignas(..)` moves to the front of the
//! declaration (`alignas(16) __shared__ ...`, before `extern` too), where it means the same.

/// Bytes of the redzone after each rewritten array (`SIMT_REDZONE` in the prelude).
pub const REDZONE: u64 = 64;

/// The prefix of a rewritten array's variable: `simt_sv_<line>_<name>`.
pub const PREFIX: &str = "simt_sv_";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Ident,
    Punct,
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
    line: usize,
}

/// The source with its block-scope `__shared__` arrays rewritten (the same line count), and
/// how many were rewritten.
pub fn rewrite(source: &str) -> (String, usize) {
    let tokens = tokenize(source);
    let mut out = String::with_capacity(source.len() + 256);
    let mut copied = 0;
    let mut rewritten = 0;
    let mut depth = 0i32;
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i];
        let text = &source[token.start..token.end];
        match text {
            "{" => depth += 1,
            "}" => depth -= 1,
            _ => {}
        }
        let after_extern = i > 0 && &source[tokens[i - 1].start..tokens[i - 1].end] == "extern";
        if text == "__shared__"
            && let Some(group_end) = alignas_after(source, &tokens, i)
        {
            // `alignas(..)` to the front: before `extern` when there is one
            let start = if after_extern { tokens[i - 1].start } else { token.start };
            let alignas = &source[tokens[i + 1].start..tokens[group_end].end];
            let declared = if after_extern { "extern __shared__" } else { "__shared__" };
            out.push_str(&source[copied..start]);
            out.push_str(&format!("{alignas} {declared}"));
            out.extend(std::iter::repeat_n('\n', source[start..tokens[group_end].end].matches('\n').count()));
            copied = tokens[group_end].end;
            i = group_end + 1;
            if depth > 0 && !after_extern {
                // the rest of the declaration, as though `__shared__` stood there alone
                rewritten += rewrite_from(source, &tokens, i - 1, &mut out, &mut copied, &mut i);
            }
            continue;
        }
        if text == "__shared__"
            && depth > 0
            && !after_extern
            && let Some((end, replacement)) = declaration(source, &tokens, i)
        {
            out.push_str(&source[copied..token.start]);
            out.push_str(&replacement);
            // keep every later line where it was
            out.extend(std::iter::repeat_n('\n', source[token.start..tokens[end].end].matches('\n').count()));
            copied = tokens[end].end;
            rewritten += 1;
            i = end + 1;
            continue;
        }
        i += 1;
    }
    out.push_str(&source[copied..]);
    (out, rewritten)
}

/// The index of the `)` closing an `alignas(..)` right after `tokens[at]`.
fn alignas_after(source: &str, tokens: &[Token], at: usize) -> Option<usize> {
    let text = |j: usize| tokens.get(j).map(|t| &source[t.start..t.end]);
    if text(at + 1)? != "alignas" || text(at + 2)? != "(" {
        return None;
    }
    let mut depth = 0i32;
    for j in at + 2..tokens.len() {
        match text(j)? {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// The declaration after a moved `alignas(..)`: `tokens[last]` is the group's `)`, standing
/// where `__shared__` stood; a declaration of the one form gets its redzone as any other.
/// Returns how many were rewritten (0 or 1).
fn rewrite_from(source: &str, tokens: &[Token], last: usize, out: &mut String, copied: &mut usize, i: &mut usize) -> usize {
    let Some((end, replacement)) = declaration(source, tokens, last) else { return 0 };
    // the rewrite names `__shared__` itself: drop the one already written
    let written = out.len() - "__shared__".len();
    debug_assert!(out.ends_with("__shared__"));
    out.truncate(written);
    out.push_str(&replacement);
    out.extend(std::iter::repeat_n('\n', source[*copied..tokens[end].end].matches('\n').count()));
    *copied = tokens[end].end;
    *i = end + 1;
    1
}

/// The rewrite of the declaration starting at `tokens[at]` (`__shared__`), and the index of
/// its `;`, when it has the one form rewritten: `__shared__ TYPE NAME[D]...;`.
fn declaration(source: &str, tokens: &[Token], at: usize) -> Option<(usize, String)> {
    let text = |t: &Token| &source[t.start..t.end];
    let mut depth = 0i32;
    let mut end = None;
    for (j, t) in tokens.iter().enumerate().skip(at + 1) {
        match text(t) {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            ";" if depth == 0 => {
                end = Some(j);
                break;
            }
            "," | "=" | "alignas" | "__align__" | "__attribute__" | "extern" | "static" | "__shared__" if depth == 0 => {
                return None;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    let end = end?;
    // NAME is the identifier before the first `[` (or before `;`)
    let first_bracket = (at + 1..end).find(|&j| text(&tokens[j]) == "[").unwrap_or(end);
    let name_index = first_bracket.checked_sub(1).filter(|&j| j > at + 1)?;
    let name = tokens[name_index];
    if name.kind != Kind::Ident {
        return None;
    }
    let type_text = source[tokens[at + 1].start..name.start].trim_end();
    let dims = if first_bracket < end { &source[tokens[first_bracket].start..tokens[end - 1].end] } else { "" };
    if type_text.is_empty() || dims.contains('\n') || type_text.contains('\n') {
        return None;
    }
    let name = text(&name);
    let variable = format!("{PREFIX}{}_{name}", tokens[at].line);
    Some((end, format!("__shared__ simt::shared_array<{type_text}{dims}> {variable}; auto& {name} = {variable}.data;")))
}

/// C++ tokens outside comments, string and character literals and preprocessor lines: enough
/// to find declarations, not to parse the language.
fn tokenize(source: &str) -> Vec<Token> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    let mut at_line_start = true;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            at_line_start = true;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if at_line_start && c == b'#' {
            // a preprocessor line, with its backslash continuations
            while i < bytes.len() && bytes[i] != b'\n' {
                if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'\n') {
                    line += 1;
                    i += 1;
                }
                i += 1;
            }
            continue;
        }
        at_line_start = false;
        if source[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if source[i..].starts_with("/*") {
            let end = source[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e + 2);
            line += source[i..end].matches('\n').count();
            i = end;
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != c && bytes[j] != b'\n' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = (j + 1).min(bytes.len());
            continue;
        }
        let start = i;
        if c.is_ascii_alphanumeric() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push(Token { kind: Kind::Ident, start, end: i, line });
        } else {
            i += source[i..].chars().next().map_or(1, char::len_utf8);
            tokens.push(Token { kind: Kind::Punct, start, end: i, line });
        }
    }
    tokens
}

/// The names of the source's `extern __shared__` arrays (they all alias the dynamic pool).
pub fn extern_names(source: &str) -> Vec<String> {
    let tokens = tokenize(source);
    let text = |t: &Token| &source[t.start..t.end];
    let mut names = Vec::new();
    for (i, pair) in tokens.windows(2).enumerate() {
        if text(&pair[0]) != "extern" || text(&pair[1]) != "__shared__" {
            continue;
        }
        let bracket = tokens[i + 2..].iter().position(|t| matches!(text(t), "[" | ";")).map(|p| i + 2 + p);
        if let Some(name) = bracket.and_then(|b| b.checked_sub(1)).map(|j| tokens[j]).filter(|t| t.kind == Kind::Ident) {
            let name = text(&name).to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// A shared variable's name and declaration line from its (mangled) symbol: the rewritten
/// `..E22simt_sv_10_partial` gives `partial` and 10; another gives its last name component.
pub fn variable_of_symbol(symbol: &str) -> (String, Option<u32>, bool) {
    if let Some(at) = symbol.find(PREFIX) {
        let rest = &symbol[at + PREFIX.len()..];
        let digits = symbol[..at].bytes().rev().take_while(u8::is_ascii_digit).count();
        let length: Option<usize> = symbol[at - digits..at].parse().ok();
        let ident = length.and_then(|l| symbol.get(at..at + l)).unwrap_or(&symbol[at..]);
        let rest_of_ident = &ident[PREFIX.len().min(ident.len())..];
        if let Some((line, name)) = rest_of_ident.split_once('_')
            && let Ok(line) = line.parse()
        {
            return (name.to_string(), Some(line), true);
        }
        return (rest.to_string(), None, true);
    }
    (last_name(symbol), None, false)
}

/// `_ZZ16tf_softmax_statsE7partial` -> `partial`; an unmangled name stays as it is.
fn last_name(symbol: &str) -> String {
    let Some(body) = symbol.strip_prefix("_Z") else { return symbol.to_string() };
    let Some(e) = body.rfind('E') else { return symbol.to_string() };
    let tail = &body[e + 1..];
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    match tail[..digits].parse::<usize>() {
        Ok(len) if digits + len <= tail.len() => tail[digits..digits + len].to_string(),
        _ => symbol.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_scope_arrays_get_a_redzone_and_keep_their_lines() {
        let source = "#include \"common.h\"\n// __shared__ float not_this[4];\nextern __shared__ float dynamic[];\n\
                      __global__ void k() {\n  __shared__ float partial[256];\n  __shared__ int a[4][8];\n  \
                      __shared__ float x, y;\n  const char* s = \"__shared__ float q[2];\";\n}\n";
        let (out, n) = rewrite(source);
        assert_eq!(n, 2, "{out}");
        assert_eq!(out.lines().count(), source.lines().count());
        assert!(out.contains("__shared__ simt::shared_array<float[256]> simt_sv_5_partial; auto& partial = simt_sv_5_partial.data;"));
        assert!(out.contains("simt::shared_array<int[4][8]> simt_sv_6_a; auto& a = simt_sv_6_a.data;"), "{out}");
        assert!(out.contains("// __shared__ float not_this[4];"));
        assert!(out.contains("extern __shared__ float dynamic[];"));
        assert!(out.contains("__shared__ float x, y;"));
        assert!(out.contains("\"__shared__ float q[2];\""));
    }

    #[test]
    fn an_alignas_after_shared_moves_to_the_front_and_the_array_still_gets_its_redzone() {
        let source = "extern __shared__ alignas(16) float dynamic[];\nvoid k() {\n  __shared__ alignas(16) float tile[64];\n  \
                      __shared__ alignas(alignof(float4)) int a, b;\n}\n";
        let (out, n) = rewrite(source);
        assert_eq!(n, 1, "{out}");
        assert_eq!(out.lines().count(), source.lines().count());
        assert!(out.contains("alignas(16) extern __shared__ float dynamic[];"), "{out}");
        assert!(
            out.contains("alignas(16) __shared__ simt::shared_array<float[64]> simt_sv_3_tile; auto& tile = simt_sv_3_tile.data;"),
            "{out}"
        );
        assert!(out.contains("alignas(alignof(float4)) __shared__ int a, b;"), "{out}");
        assert_eq!(extern_names(&out), ["dynamic"]);
    }

    #[test]
    fn multi_line_dimensions_are_left_alone() {
        let (out, n) = rewrite("void k() {\n  __shared__ int a[4][\n 8];\n}\n");
        assert_eq!(n, 0);
        assert!(out.contains("__shared__ int a[4][\n 8];"));
    }

    #[test]
    fn extern_shared_arrays_are_named() {
        let source = "extern __shared__ float stage[];\nvoid k() { extern __shared__ __align__(16) unsigned char raw[]; }\n";
        assert_eq!(extern_names(source), ["stage", "raw"]);
    }

    #[test]
    fn symbols_name_the_array_and_its_line() {
        assert_eq!(variable_of_symbol("_ZZ16tf_softmax_statsE18simt_sv_10_partial"), ("partial".into(), Some(10), true));
        assert_eq!(variable_of_symbol("_ZZ3fooE21simt_sv_7_warp_values_0"), ("warp_values".into(), Some(7), true));
        assert_eq!(variable_of_symbol("_ZZ16tf_softmax_statsE7partial"), ("partial".into(), None, false));
        assert_eq!(variable_of_symbol("tile"), ("tile".into(), None, false));
    }
}
