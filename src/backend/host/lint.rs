//! The host build's static checks of offsets. First, an offset computed as a 32-bit product
//! and only then widened to 64 bits (`p + row * k` with int `row` and `k`, `long long i = blockIdx.x *
//! blockDim.x + threadIdx.x`). It is right for every shape a host run can hold and wraps on
//! a GPU once the product passes 2^31, which no host case reaches. GCC's SSA dump of the
//! kernel source (`-fdump-tree-ssa-lineno`, written by the same compile, before any
//! optimization) gives every value its type: a conversion to a 64-bit integer of a 32-bit
//! value that is, through `+ - / % << >>`, copies, conversions between 32-bit types and named
//! 32-bit variables (`int k_base = key * d;`), a product of two non-constant 32-bit values is a
//! finding. A product the source casts to a 32-bit type explicitly (`(int)(row * k)`) is the
//! author's stated range, and a loop variable is not followed (see [`narrow_product`]).
//!
//! Second, the other way round: a 64-bit value stored into a 32-bit integer implicitly (`int
//! i = (long long)blockIdx.x * blockDim.x + threadIdx.x`, `int base = head_row * d` with a
//! 64-bit `head_row`). The front end folds such a narrowed product back into 32-bit
//! arithmetic before the SSA dump is written, so the dump cannot show it; the compiler's own
//! warning (GCC's `-Wconversion`, clang's `-Wshorten-64-to-32`) is emitted before that fold
//! and is read from the same compile. An explicit cast (`(int)(p % half)`) is the author's
//! stated range and passes.
//!
//! Third, inline assembly in kernel code ([`assembly`]): the SSA dump shows each `__asm__`
//! statement with its source line. The host runs it unchecked (the memory checks see only
//! what the compiler instruments), and no GPU compiler builds x86 code, so such code is one the
//! host build alone compiles (behind `#ifdef`), and the host's gates judge other code than a
//! GPU's. An empty template (`asm volatile("" ::: "memory")`, a compiler barrier that builds on
//! every backend) touches nothing and passes. Not seen: `asm` at file scope (a function written
//! in assembly; it is in no function's dump), and a clang build (which writes no dump). x86
//! intrinsics are the same code under another name ([`x86_builtins`]): `_mm_stream_si32` is
//! GCC's `__builtin_ia32_movnti`, a store the instrumentation does not see.

use std::collections::HashMap;

/// The flag that writes the dump beside the object (GCC only).
pub const DUMP_FLAG: &str = "-fdump-tree-ssa-lineno";

/// The warnings that name an implicit 64-to-32-bit integer conversion.
pub const NARROWING_FLAG_GCC: &str = "-Wconversion";
pub const NARROWING_FLAG_CLANG: &str = "-Wshorten-64-to-32";

/// Every static finding of one build, one per source line, in line order: the SSA dumps'
/// late-widened products, then what the compiler's `diagnostics` said was narrowed.
pub fn findings(dumps: &[String], diagnostics: &str, display_path: &str, source: &str) -> Vec<String> {
    let mut found: Vec<(u32, String)> = Vec::new();
    let mut add = |line: u32, text: String| {
        if !found.iter().any(|(l, _)| *l == line) {
            found.push((line, text));
        }
    };
    for dump in dumps {
        for function in dump.split("\n;; Function ").skip(1) {
            for (line, text) in in_function(function, display_path, source) {
                add(line, text);
            }
        }
    }
    for (line, text) in implicit_narrowing(diagnostics, display_path, source) {
        add(line, text);
    }
    found.sort();
    found.into_iter().map(|(_, text)| text).collect()
}

const NARROW: &[&str] = &["int", "unsigned int"];
const WIDE: &[&str] = &["long int", "long long int", "long unsigned int", "long long unsigned int", "sizetype"];

/// Findings of one SSA dump, for statements in `display_path` (whose text is `source`, to
/// quote the line), one per source line.
#[cfg(test)]
fn narrow_offsets(dump: &str, display_path: &str, source: &str) -> Vec<String> {
    findings(&[dump.to_string()], "", display_path, source)
}

/// The runtime's own source, whose assembly is no finding: its file name, and its text.
pub struct Prelude<'a> {
    /// As the dumps end its name (`prelude.h` precompiled, `./root/kernels/host/prelude.h`
    /// in a coverage build, which includes it whole).
    pub name: &'a str,
    pub text: &'a str,
}

impl Prelude<'_> {
    /// Whether the statement at `file:line` is the prelude's own: a file of the prelude's name,
    /// its line there an `asm`, and the template's first line (what the dump's line shows) there
    /// or on the next two lines (a template of several string literals starts below its `asm`).
    /// A kernel's `#line 1 "prelude.h"` names its own code so, but cannot bring assembly that
    /// begins otherwise than the prelude's.
    fn holds(&self, file: &str, line: u32, template: &str) -> bool {
        let at = (line as usize).saturating_sub(1);
        let mut lines = self.text.lines().skip(at).take(3);
        let first = lines.next().unwrap_or("");
        let quoted = format!("\"{template}");
        // a first line of nothing would match any quote on the line
        !template.is_empty()
            && file.rsplit('/').next() == Some(self.name)
            && first.contains("asm")
            && (first.contains(&quoted) || lines.any(|l| l.contains(&quoted)))
    }
}

/// Every `__asm__` statement with a template of its own in the SSA dumps, one per source line,
/// in line order, but the prelude's. `link` is the prefix the dumps give the repository's
/// files besides the source (its includes: `root/kernels/common.h`), left out of the names
/// shown.
pub fn assembly(dumps: &[String], prelude: &Prelude, link: &str) -> Vec<String> {
    let mut found: Vec<(String, u32, String)> = Vec::new();
    for line in dumps.iter().flat_map(|dump| dump.lines()) {
        let Some((file, line, template, whole)) = asm_statement(line) else { continue };
        // empty only when it closes on this line: `"\n\tmovl ..."` prints its first line empty
        if (whole && template.is_empty()) || prelude.holds(file, line, template) {
            continue;
        }
        let file = file.strip_prefix(link).unwrap_or(file);
        if !found.iter().any(|(f, l, _)| f == file && *l == line) {
            // the source's own text, shown on a record's line: no control character of it reaches the terminal
            let shown: String = template.chars().take(60).map(|c| if c.is_control() { ' ' } else { c }).collect();
            let more = if !whole || template.chars().count() > 60 { "..." } else { "" };
            found.push((file.to_string(), line, format!("{shown}{more}")));
        }
    }
    found.sort();
    found
        .into_iter()
        .map(|(file, line, template)| {
            format!(
                "{file}:{line}: inline assembly (`{template}`) runs unchecked on the host (no memory check sees what it \
                 loads or stores), and no GPU compiler builds it: the host's gates judge code that a GPU never runs"
            )
        })
        .collect()
}

/// The prefix of GCC's x86 builtins: `_mm_stream_ps` is `__builtin_ia32_movntps`, a store
/// the instrumentation does not see (nor is it assembly of the source's own).
const X86_BUILTIN: &str = "__builtin_ia32_";

/// Every call of an x86 builtin in kernel code (outside the compiler's intrinsics headers),
/// directly or through an intrinsic of those headers
/// that reaches one (`_mm_stream_si32` calls `__builtin_ia32_movnti`), one per source line, in
/// line order: like inline assembly, such code runs unchecked on the host (a non-temporal store
/// is no instrumented store) and builds for no GPU. `link` is as for [`assembly`].
pub fn x86_builtins(dumps: &[String], link: &str) -> Vec<String> {
    let functions: Vec<(&str, Vec<Located>)> = dumps
        .iter()
        .flat_map(|dump| dump.split("\n;; Function ").skip(1))
        .map(|function| {
            let name = function.split(' ').next().unwrap_or("");
            (name, function.lines().filter_map(located).collect())
        })
        .collect();
    let calls = |text: &str, callee: &str| {
        text.match_indices(&format!("{callee} (")).any(|(at, _)| !text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    // the compiler's intrinsics that reach a builtin, to a fixed point (one calls another)
    let in_headers = |statements: &[Located]| statements.first().is_some_and(|(file, _, _)| is_intrinsics_header(file));
    let mut intrinsics: Vec<&str> = Vec::new();
    loop {
        let before = intrinsics.len();
        for (name, statements) in &functions {
            let reaches = statements.iter().any(|(_, _, text)| text.contains(X86_BUILTIN) || intrinsics.iter().any(|i| calls(text, i)));
            if in_headers(statements) && reaches && !intrinsics.contains(name) {
                intrinsics.push(name);
            }
        }
        if intrinsics.len() == before {
            break;
        }
    }
    let mut found: Vec<(String, u32, String)> = Vec::new();
    for (file, line, text) in functions.iter().flat_map(|(_, statements)| statements) {
        if is_intrinsics_header(file) {
            continue;
        }
        let builtin = text.find(X86_BUILTIN).map(|at| text[at..].split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or(""));
        let Some(called) = builtin.or_else(|| intrinsics.iter().copied().find(|i| calls(text, i))) else { continue };
        let file = file.strip_prefix(link).unwrap_or(file);
        if !found.iter().any(|(f, l, _)| f == file && l == line) {
            found.push((file.to_string(), *line, called.to_string()));
        }
    }
    found.sort();
    found
        .into_iter()
        .map(|(file, line, called)| {
            format!(
                "{file}:{line}: x86 intrinsic (`{called}`) runs unchecked on the host (no memory check sees what it loads or \
                 stores), and no GPU compiler builds it: the host's gates judge code that a GPU never runs"
            )
        })
        .collect()
}

/// GCC's x86 intrinsics headers (`xmmintrin.h`, `emmintrin.h`, `avx512fintrin.h`: every one is
/// named so, in GCC's own include folder). Not every file at an absolute path (a kernel or a
/// control outside the repository is named so too), nor a header of the kernel's that takes such
/// a name (its builtins are the kernel's).
fn is_intrinsics_header(file: &str) -> bool {
    file.starts_with('/') && file.contains("/gcc/") && file.rsplit('/').next().is_some_and(|name| name.ends_with("intrin.h"))
}

/// A dump's statement: its file, its line and its text.
type Located<'a> = (&'a str, u32, &'a str);

/// A dump's statement `[file:line:col] text`: its file, line and text.
fn located(text: &str) -> Option<Located<'_>> {
    let text = text.trim_start().strip_prefix('[')?;
    let (location, rest) = text.split_once("] ")?;
    let mut parts = location.rsplitn(3, ':');
    let (_column, line, file) = (parts.next()?, parts.next()?.parse().ok()?, parts.next()?);
    Some((file, line, rest))
}

/// `[file:line:col] __asm__ __volatile__("template" : ...)` as the dump prints it: the file,
/// the line, the template's first line as printed (escapes kept; a template of several lines
/// goes on over the next lines of the dump), and whether that is the whole template.
fn asm_statement(text: &str) -> Option<(&str, u32, &str, bool)> {
    let (file, line, rest) = located(text)?;
    let mut rest = rest.strip_prefix("__asm__")?;
    for qualifier in [" __volatile__", " goto", " __inline__"] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    let body = rest.strip_prefix("(\"")?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some((file, line, &body[..i], true)),
            _ => escaped = false,
        }
    }
    Some((file, line, body, false))
}

/// The compiler's warnings of a 64-bit integer converted implicitly to a 32-bit one, in
/// `display_path`: GCC's `kernels/x.hip:8:46: warning: conversion from 'long long int' to
/// 'int' may change value [-Wconversion]` (quotes as the locale gives them, `{aka ...}`
/// after a typedef) and clang's `warning: implicit conversion loses integer precision: 'long
/// long' to 'int' [-Wshorten-64-to-32]`.
fn implicit_narrowing(diagnostics: &str, display_path: &str, source: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for diagnostic in diagnostics.lines() {
        let Some(rest) = diagnostic.strip_prefix(display_path).and_then(|r| r.strip_prefix(':')) else { continue };
        let Some((line, rest)) = rest.split_once(':') else { continue };
        let Ok(line) = line.parse::<u32>() else { continue };
        let Some((_, message)) = rest.split_once(": warning: ") else { continue };
        let types = message
            .strip_prefix("conversion from ")
            .or_else(|| message.strip_prefix("implicit conversion loses integer precision: "))
            .and_then(conversion_types);
        let Some((from, to)) = types else { continue };
        if !is_64_bit_integer(&from) || !is_32_bit_integer(&to) {
            continue;
        }
        let quoted = source.lines().nth(line as usize - 1).map(str::trim).unwrap_or("");
        out.push((
            line,
            format!(
                "{display_path}:{line}: a 64-bit `{from}` is narrowed to `{to}` implicitly, so an offset or count past \
                 2^31 wraps (`{quoted}`; keep it in 64 bits, or cast it explicitly where its range is known)"
            ),
        ));
    }
    out
}

/// `'long long int' to 'int' may change value` -> (`long long int`, `int`), each type as its
/// typedef stands for it (`'size_t' {aka 'long unsigned int'}`, clang's `(aka '...')`).
fn conversion_types(text: &str) -> Option<(String, String)> {
    let quote = |c: char| matches!(c, '\'' | '\u{2018}' | '\u{2019}');
    // the quoted pieces in order: from, [its aka], to, [its aka]
    let pieces: Vec<&str> = text.split(quote).collect();
    let mut types: Vec<String> = Vec::new();
    let mut i = 1;
    while i < pieces.len() {
        let between = pieces.get(i + 1).copied().unwrap_or("");
        let aka = between.trim_start().trim_start_matches(['{', '(']).trim() == "aka";
        if aka && i + 2 < pieces.len() {
            types.push(pieces[i + 2].to_string());
            i += 4;
        } else {
            types.push(pieces[i].to_string());
            i += 2;
        }
        if types.len() == 2 {
            break;
        }
    }
    let mut types = types.into_iter();
    Some((types.next()?, types.next()?))
}

fn is_64_bit_integer(ty: &str) -> bool {
    ty.split_whitespace().any(|w| w == "long") && !ty.contains("double")
}

fn is_32_bit_integer(ty: &str) -> bool {
    matches!(ty, "int" | "unsigned int" | "unsigned" | "signed int")
}

struct Statement<'a> {
    file: &'a str,
    line: u32,
    column: u32,
    /// `a * b`, `(int) _3`, `x_4`.
    rhs: &'a str,
}

/// A 32-bit product found behind a widening: its operands as the source names them, and the
/// first named 32-bit variable the chain went through (`int k_base = key * d;`), with its line.
struct Product {
    shown: String,
    kept_in: Option<(String, u32)>,
}

/// One function of a dump: its statements by the SSA name they define, in order, and types.
struct Function<'a> {
    definitions: HashMap<&'a str, Statement<'a>>,
    order: Vec<&'a str>,
    types: HashMap<String, String>,
    display_path: &'a str,
    source: &'a str,
}

impl<'a> Function<'a> {
    fn parse(function: &'a str, display_path: &'a str, source: &'a str) -> Function<'a> {
        let mut definitions = HashMap::new();
        let mut order = Vec::new();
        for line in function.lines() {
            if let Some((name, statement)) = assignment(line) {
                order.push(name);
                definitions.insert(name, statement);
            }
        }
        Function { definitions, order, types: declared_types(function), display_path, source }
    }

    fn type_of(&self, name: &str) -> Option<&str> {
        self.types.get(name).or_else(|| self.types.get(variable_of(name))).map(String::as_str)
    }

    fn quoted(&self, line: u32) -> &'a str {
        self.source.lines().nth(line as usize - 1).map(str::trim).unwrap_or("")
    }
}

fn in_function(function: &str, display_path: &str, source: &str) -> Vec<(u32, String)> {
    let f = Function::parse(function, display_path, source);
    let mut out = Vec::new();
    for statement in f.order.iter().map(|name| &f.definitions[name]) {
        let Some((to, from)) = conversion(statement.rhs) else { continue };
        if to == "int" && f.type_of(from) == Some("unsigned int") && statement.file == display_path {
            if let Some(product) = folded_signed_product(from, &f.definitions, &|n| f.type_of(n), 0) {
                out.push((
                    statement.line,
                    format!(
                        "{}:{}: {product} is narrowed to a 32-bit `int`, so it wraps once it passes 2^31 (`{}`; \
                         keep the variable 64-bit, as `long long`)",
                        statement.file,
                        statement.line,
                        f.quoted(statement.line)
                    ),
                ));
            }
            continue;
        }
        if !WIDE.contains(&to) || !f.type_of(from).is_some_and(|t| NARROW.contains(&t)) || statement.file != display_path {
            continue;
        }
        if let Some(product) = narrow_product(from, &f, &mut Vec::new()) {
            let kept = product.kept_in.map(|(name, line)| format!(", kept in the 32-bit `{name}` (line {line}),")).unwrap_or_default();
            out.push((
                statement.line,
                format!(
                    "{}:{}: {}{kept} is multiplied in 32 bits and only then widened to 64, so it wraps once it \
                     passes 2^31 (`{}`; compute it in 64 bits, as `(long long)a * b`)",
                    statement.file,
                    statement.line,
                    product.shown,
                    f.quoted(statement.line)
                ),
            ));
        }
    }
    out
}

/// The 32-bit product `name` is built from, if any: through `+ - / % << >>`, copies,
/// conversions between 32-bit types and named 32-bit variables, but not through a conversion
/// from a wider type nor a product the source casts to a 32-bit type explicitly (`(int)(p %
/// half)`, `(int)(row * k)`): those are the author's stated range. Nor through a loop
/// variable (a PHI node): a tile's first key `begin = tile_index * tile` walked by `for (int j
/// = begin + t; j < end; ...)` is an offset within a row of an `int` length, and following
/// loops would refuse it with the offsets that do wrap.
fn narrow_product<'f>(name: &'f str, f: &'f Function, seen: &mut Vec<&'f str>) -> Option<Product> {
    if seen.len() > 32 || seen.contains(&name) {
        return None;
    }
    seen.push(name);
    let statement = f.definitions.get(name)?;
    let stated = statement.file == f.display_path && explicitly_cast(f.source, statement);
    if !f.type_of(name).is_some_and(|t| NARROW.contains(&t)) || stated {
        return None;
    }
    let named = |product: Product| -> Product {
        match product.kept_in {
            None if !name.starts_with('_') && !name.contains('.') => {
                Product { kept_in: Some((variable_of(name).to_string(), statement.line)), ..product }
            }
            _ => product,
        }
    };
    if let Some((_, from)) = conversion(statement.rhs) {
        return f.type_of(from).is_some_and(|t| NARROW.contains(&t)).then(|| narrow_product(from, f, seen)).flatten().map(named);
    }
    if !statement.rhs.contains(' ') {
        return narrow_product(statement.rhs, f, seen).map(named);
    }
    let (left, op, right) = binary(statement.rhs)?;
    let constant = |s: &str| s.starts_with(|c: char| c.is_ascii_digit() || c == '-');
    match op {
        "*" if !constant(left) && !constant(right) && !block_bounded(left, right, f) => {
            // `bx.0_18` is GCC's copy of `bx` (a cast of it)
            let shown = |s: &str| (!s.starts_with('_')).then(|| variable_of(s).split('.').next().unwrap_or(s).to_string());
            let shown = match (shown(left), shown(right)) {
                (Some(a), Some(b)) => format!("`{a} * {b}`"),
                _ => "a product of two variables".to_string(),
            };
            Some(named(Product { shown, kept_in: None }))
        }
        "+" | "-" | "/" | "%" | "<<" | ">>" => [left, right].into_iter().find_map(|operand| narrow_product(operand, f, seen)).map(named),
        _ => None,
    }
}

/// Whether both factors of a product are a thread's index in its block or the block's size.
fn block_bounded(left: &str, right: &str, f: &Function) -> bool {
    within_block(left, f, 0) && within_block(right, f, 0)
}

/// Whether `name` is a thread's index in its block or the block's size (`threadIdx.y`,
/// `blockDim.x`, copies and conversions of them): a product of two such is below 1024 * 1024,
/// so `int thread = threadIdx.y * blockDim.x + threadIdx.x` can never wrap. The host prelude
/// reads each built-in whole through a function of its own (`D.5 = simt::thread_index (_1);`,
/// then `_2 = D.5.y`); a field of the fiber header read in place (`_1->thread_index.y`) counts
/// too.
fn within_block(name: &str, f: &Function, depth: usize) -> bool {
    let Some(statement) = f.definitions.get(name).filter(|_| depth < 8) else { return false };
    if statement.rhs.contains("->thread_index.") || statement.rhs.contains("->block_dim.") {
        return true;
    }
    let read = statement.rhs.strip_prefix('[').and_then(|r| r.split_once("] ")).map_or(statement.rhs, |(_, r)| r);
    let whole = (!read.contains(' ')).then(|| read.rsplit_once('.')).flatten().and_then(|(whole, _)| f.definitions.get(whole));
    if whole.is_some_and(|w| w.rhs.starts_with("simt::thread_index (") || w.rhs.starts_with("simt::block_dim (")) {
        return true;
    }
    match conversion(statement.rhs) {
        Some((_, from)) => within_block(from, f, depth + 1),
        None => !statement.rhs.contains(' ') && within_block(statement.rhs, f, depth + 1),
    }
}

/// Whether the source casts the expression `statement` computes to a 32-bit integer type
/// explicitly: its column is the cast itself (where GCC puts `(int)(id * n)` of 64-bit values,
/// which it folds into a 32-bit product), a declarator whose whole initializer is such a cast
/// (`int at = (int)(row * k);`, where GCC puts the product at `at`), or inside the
/// parentheses of one (`p + (int)(row * k)`, at its `*`).
fn explicitly_cast(source: &str, statement: &Statement) -> bool {
    let Some(text) = source.lines().nth((statement.line as usize).wrapping_sub(1)) else { return false };
    let at = (statement.column as usize).saturating_sub(1).min(text.len());
    if !text.is_char_boundary(at) {
        return false;
    }
    let after = &text[at..];
    if CASTS.iter().any(|cast| after.strip_prefix(cast).is_some_and(|rest| rest.trim_start().starts_with('('))) {
        return true;
    }
    let declarator = after.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or("");
    if let Some(initializer) = after[declarator.len()..].trim_start().strip_prefix('=').filter(|_| !declarator.is_empty()) {
        let initializer = initializer.split(';').next().unwrap_or("").trim();
        return CASTS.iter().any(|cast| initializer.strip_prefix(cast).is_some_and(|rest| wholly_parenthesized(rest.trim_start())));
    }
    let before = &text[..at];
    let mut depth = 0i32;
    for (i, c) in before.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => return CASTS.iter().any(|cast| before[..i].trim_end().ends_with(cast)),
            '(' => depth -= 1,
            _ => {}
        }
    }
    false
}

/// The spellings of an explicit cast to a 32-bit integer.
const CASTS: &[&str] = &["(int)", "(unsigned)", "(unsigned int)", "(int32_t)", "(uint32_t)", "static_cast<int>", "static_cast<unsigned>"];

/// `(a * b)` or `(a * b) ` with nothing after its closing parenthesis (a declarator's end).
fn wholly_parenthesized(text: &str) -> bool {
    if !text.starts_with('(') {
        return false;
    }
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return text[i + 1..].trim().is_empty() || text[i + 1..].trim_start().starts_with(',');
                }
            }
            _ => {}
        }
    }
    false
}

/// `row * vocab` if `name` is (a sum with) the product GCC makes of `int base = (long
/// long)row * vocab`: the front end folds a 64-bit product stored in an int into an unsigned
/// 32-bit product of the signed operands (`row.0_1 = (unsigned int) row_4(D)`, then `_3 =
/// row.0_1 * vocab.1_2` and `base_6 = (int) _3`) before any dump or warning sees it. Source
/// code rarely writes that shape itself.
fn folded_signed_product<'a>(
    name: &str,
    definitions: &HashMap<&str, Statement<'a>>,
    type_of: &dyn Fn(&str) -> Option<&'a str>,
    depth: usize,
) -> Option<String> {
    if depth > 8 || !name.starts_with(|c: char| c == '_' || c.is_alphabetic()) {
        return None;
    }
    let statement = definitions.get(name)?;
    let (left, op, right) = binary(statement.rhs)?;
    let signed_operand = |operand: &str| -> Option<String> {
        let (to, from) = conversion(definitions.get(operand)?.rhs)?;
        (to == "unsigned int" && type_of(from) == Some("int")).then(|| variable_of(from).to_string())
    };
    match op {
        "*" => Some(format!("`{} * {}`", signed_operand(left)?, signed_operand(right)?)),
        "+" | "-" => [left, right].into_iter().find_map(|operand| folded_signed_product(operand, definitions, type_of, depth + 1)),
        _ => None,
    }
}

/// `  int _1;` and `  long long int i;` before the first block, and the signature's parameters.
fn declared_types(function: &str) -> HashMap<String, String> {
    let mut types = HashMap::new();
    for line in function.lines() {
        if let Some(params) = line.strip_suffix(')').and_then(|l| l.split_once(" (")).map(|(_, p)| p)
            && !line.starts_with(' ')
        {
            for param in params.split(',') {
                if let Some((ty, name)) = param.trim().rsplit_once(' ') {
                    types.insert(name.to_string(), ty.replace("const ", "").trim().to_string());
                }
            }
        }
        let Some(decl) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(';')) else { continue };
        if decl.contains('=') || decl.contains('(') || decl.starts_with(' ') {
            continue;
        }
        if let Some((ty, name)) = decl.rsplit_once(' ') {
            types.insert(name.to_string(), ty.replace("const ", "").trim().to_string());
        }
    }
    types
}

/// `  [kernels/x.hip:13:20] _1 = row_3(D) * keys_4(D);`
fn assignment(line: &str) -> Option<(&str, Statement<'_>)> {
    let rest = line.trim_start().strip_prefix('[')?;
    let (location, rest) = rest.split_once("] ")?;
    let mut parts = location.rsplitn(3, ':');
    let (column, line_number, file) = (parts.next()?, parts.next()?, parts.next()?);
    // GCC 13 follows the column with the statement's discriminator (`34:58 discrim 1`), in
    // loops above all: a statement so named was passed over, and with it every offset of a loop
    let column = column.split(' ').next()?;
    let (name, rhs) = rest.strip_suffix(';')?.split_once(" = ")?;
    Some((name, Statement { file, line: line_number.parse().ok()?, column: column.parse().ok()?, rhs }))
}

/// `(long long int) _1` -> (`long long int`, `_1`).
fn conversion(rhs: &str) -> Option<(&str, &str)> {
    let (ty, operand) = rhs.strip_prefix('(')?.split_once(") ")?;
    (!operand.contains(' ')).then_some((ty, operand))
}

fn binary(rhs: &str) -> Option<(&str, &str, &str)> {
    let mut parts = rhs.split(' ');
    let (left, op, right) = (parts.next()?, parts.next()?, parts.next()?);
    parts.next().is_none().then_some((left, op, right))
}

/// `row_30(D)` -> `row`; `i_38` -> `i`.
fn variable_of(ssa_name: &str) -> &str {
    let name = ssa_name.strip_suffix("(D)").unwrap_or(ssa_name);
    match name.rsplit_once('_') {
        Some((base, version)) if !base.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "
;; Function kern (kern, funcdef_no=0, decl_uid=2125, cgraph_uid=1, symbol_order=0)

void kern (const float * scores, int keys, int row, unsigned int bx, unsigned int bd, unsigned int tx, int rows, int k)
{
  long long int i;
  int _1;
  long unsigned int _2;
  long long int _4;
  long long int _5;
  long long int _6;
  long unsigned int _7;
  unsigned int _9;
  unsigned int _10;
  int _15;
  long long int _16;
  int _23;
  sizetype _24;
  long long int _99;

  <bb 2> :
  [kernels/k.hip:2:33] _1 = row_30(D) * keys_31(D);
  [kernels/k.hip:2:33] _2 = (long unsigned int) _1;
  [kernels/k.hip:3:30] _4 = (long long int) row_30(D);
  [kernels/k.hip:3:47] _5 = (long long int) keys_31(D);
  [kernels/k.hip:3:45] _6 = _4 * _5;
  [kernels/k.hip:3:45] _7 = (long unsigned int) _6;
  [kernels/k.hip:4:20] _9 = bx_35(D) * bd_36(D);
  [kernels/k.hip:4:25] _10 = tx_37(D) + _9;
  [kernels/k.hip:4:13] i_38 = (long long int) _10;
  [kernels/k.hip:6:17] _15 = rows_40(D) * k_41(D);
  [kernels/k.hip:6:17] _16 = (long long int) _15;
  [kernels/k.hip:9:17] _23 = w_12 * 32;
  [kernels/k.hip:9:17] _24 = (sizetype) _23;
  [kernels/common.h:9:17] _99 = (long long int) _15;
";

    #[test]
    fn x86_builtins_in_kernel_code_are_named_directly_or_through_the_headers_intrinsics() {
        let header = "/usr/lib/gcc/x86_64-linux-gnu/12/include";
        let dump = format!(
            "\n;; Function _mm_stream_si32 (_Z15_mm_stream_si32Pii, funcdef_no=1)\n\
               [{header}/emmintrin.h:1496:25] __builtin_ia32_movnti (__A_2(D), __B_3(D));\n\
             \n;; Function _mm_wrapped (_Z11_mm_wrappedPii, funcdef_no=2)\n\
               [{header}/otherintrin.h:9:3] _mm_stream_si32 (p_1(D), v_2(D));\n\
             \n;; Function _mm_loadu_ps (_Z12_mm_loadu_psPKf, funcdef_no=3)\n\
               [{header}/xmmintrin.h:20:3] _2 = MEM[(__m128_u * {{ref-all}})__P_1(D)];\n\
             \n;; Function k (k, funcdef_no=4)\n\
               [root/kernels/k.hip:7:3] _mm_stream_si32 (_6, v_11);\n\
               [root/kernels/k.hip:8:3] v_12 = _mm_loadu_ps (_3);\n\
               [root/kernels/k.hip:9:3] my_mm_stream_si32 (_6, v_11);\n\
               [root/kernels/k.hip:10:3] __builtin_ia32_sfence ();\n\
               [root/kernels/k.hip:11:3] _mm_wrapped (_6, v_11);\n\
               [root/kernels/k.hip:11:20] _mm_wrapped (_7, v_11);\n\
             \n;; Function outside (outside, funcdef_no=5)\n\
               [/tmp/x/controls/c.hip:3:3] _mm_stream_si32 (_6, v_11);\n\
             \n;; Function sneaky (sneaky, funcdef_no=6)\n\
               [root/kernels/sneakyintrin.h:2:3] __builtin_ia32_movnti (p_1(D), v_2(D));\n"
        );
        let found = x86_builtins(&[dump], "root/");
        assert_eq!(found.len(), 5, "{found:#?}");
        // a header of the kernel's named as an intrinsics header is the kernel's all the same
        assert!(found[4].starts_with("kernels/sneakyintrin.h:2: x86 intrinsic (`__builtin_ia32_movnti`) "), "{found:#?}");
        let found = &found[..4];
        // a kernel outside the repository is named by its absolute path, and is kernel code all the same
        assert!(found[0].starts_with("/tmp/x/controls/c.hip:3: x86 intrinsic (`_mm_stream_si32`) "), "{found:#?}");
        let found = &found[1..];
        // in line order; `_mm_loadu_ps` is a plain load, `my_mm_stream_si32` another name
        assert!(found[0].starts_with("kernels/k.hip:7: x86 intrinsic (`_mm_stream_si32`) runs unchecked on the host"), "{found:#?}");
        assert!(found[1].starts_with("kernels/k.hip:10: x86 intrinsic (`__builtin_ia32_sfence`) "), "{found:#?}");
        assert!(found[2].starts_with("kernels/k.hip:11: x86 intrinsic (`_mm_wrapped`) "), "{found:#?}");
    }

    #[test]
    fn inline_assembly_outside_the_prelude_is_named_with_its_line_and_an_empty_template_passes() {
        let dump = "\n;; Function k (_Z1kPfif, funcdef_no=0)\n\nvoid k (float * out, int i, float v)\n{\n  <bb 2> :\n\
              [kernels/k.hip:2:3] __asm__ __volatile__(\"\" :  :  : \"memory\");\n\
              [kernels/k.hip:3:3] __asm__ __volatile__(\"movl %1, %0\" : \"=m\" [kernels/k.hip:3:42] *_3 : \"r\" v_12(D));\n\
              [kernels/k.hip:3:9] __asm__(\"nop\");\n\
              [root/kernels/common.h:9:3] __asm__(\"movl %3, %0\n\tmovl %4, %1\" : \"=&r\" r_2);\n\
              [prelude.h:404:17] __asm__(\"movq %%rsp, %0\" : \"=r\" sp_6);\n\
              [kernels/k.hip:5:10] _4 = (sizetype) i_10(D);\n}\n";
        let mut prelude_text = vec![""; 404];
        prelude_text[403] = r#"  uintptr_t sp; asm("movq %%rsp, %0" : "=r"(sp));"#;
        let prelude_text = prelude_text.join("\n");
        let prelude = Prelude { name: "prelude.h", text: &prelude_text };
        let found = assembly(&[dump.to_string()], &prelude, "root/");
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found[0].starts_with("kernels/common.h:9: inline assembly (`movl %3, %0...`) runs unchecked on the host"), "{found:#?}");
        assert!(found[1].starts_with("kernels/k.hip:3: inline assembly (`movl %1, %0`) "), "{found:#?}");
        assert_eq!(asm_statement(r#"  [k.hip:7:1] __asm__ goto("jmp %l0" :  :  :  : "x");"#), Some(("k.hip", 7, "jmp %l0", true)));
        assert_eq!(asm_statement(r#"  [k.hip:7:1] __asm__("a\"b" : );"#), Some(("k.hip", 7, r#"a\"b"#, true)));
        assert_eq!(asm_statement("  [k.hip:7:1] _4 = _3 + 1;"), None);
        let escape = "  [k.hip:8:1] __asm__(\"\u{1b}[2J\tnop\");";
        let nothing = Prelude { name: "prelude.h", text: "" };
        // a template whose first line is empty, its instructions on the next
        let newline_first = "  [k.hip:9:3] __asm__ __volatile__(\"";
        assert!(assembly(&[newline_first.to_string()], &nothing, "")[0].starts_with("k.hip:9: inline assembly (`...`)"));
        assert!(assembly(&[newline_first.replace("k.hip", "prelude.h")], &prelude, "").len() == 1);
        assert!(assembly(&[escape.to_string()], &nothing, "")[0].starts_with("k.hip:8: inline assembly (` [2J nop`)"));
        // a kernel's own code named as the prelude (`#line 404 "prelude.h"`) with other assembly
        let disguised = "  [prelude.h:404:3] __asm__ __volatile__(\"movl %1, %0\" : \"=m\" *_3 : \"r\" v_12(D));";
        assert_eq!(assembly(&[disguised.to_string()], &prelude, "").len(), 1);
        // a template that starts on the line after its `asm`
        let below = Prelude { name: "prelude.h", text: "\n  asm volatile(\n      \"leaq -128(%%rsp), %%rsp\\n\\t\"\n" };
        let swap = "  [prelude.h:2:3] __asm__ __volatile__(\"leaq -128(%%rsp), %%rsp";
        assert!(assembly(&[swap.to_string()], &below, "").is_empty());
        // the prelude included whole (a coverage build) is named by its path
        let whole = "  [./root/kernels/host/prelude.h:404:17] __asm__(\"movq %%rsp, %0\" : \"=r\" sp_6);";
        assert!(assembly(&[whole.to_string()], &prelude, "root/").is_empty());
    }

    #[test]
    fn products_of_two_32_bit_values_widened_to_64_bits_are_named_and_the_rest_pass() {
        let source = "x\n  const float* s = scores + row * keys;\nx\nx\nx\nx\n";
        let found = narrow_offsets(DUMP, "kernels/k.hip", source);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert_eq!(
            found[0],
            "kernels/k.hip:2: `row * keys` is multiplied in 32 bits and only then widened to 64, so it wraps once it passes \
             2^31 (`const float* s = scores + row * keys;`; compute it in 64 bits, as `(long long)a * b`)"
        );
        assert!(found[1].starts_with("kernels/k.hip:4: `bx * bd` is multiplied in 32 bits"), "{}", found[1]);
        assert!(found[2].starts_with("kernels/k.hip:6: `rows * k` is multiplied in 32 bits"), "{}", found[2]);
        // the 64-bit product on line 3 and the constant multiple on line 9 pass; common.h is another file
        assert!(narrow_offsets(DUMP, "kernels/other.hip", source).is_empty());
        // GCC 13 names a statement's discriminator after its column (in loops above all): the
        // same findings
        let discriminated = DUMP.replace(":17] ", ":17 discrim 1] ").replace(":30] ", ":30 discrim 2] ");
        assert_ne!(discriminated, DUMP);
        assert_eq!(narrow_offsets(&discriminated, "kernels/k.hip", source), found);
    }

    #[test]
    fn implicit_64_to_32_bit_narrowing_is_named_from_gcc_and_clang_warnings_and_nothing_else() {
        let source = "a\nb\n  int i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\nc\nd\n  int n = count;\n";
        let diagnostics = "\
kernels/k.hip: In function 'void k(int)':
kernels/k.hip:3:46: warning: conversion from 'long long int' to 'int' may change value [-Wconversion]
    3 |   int i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
kernels/k.hip:4:9: warning: conversion from 'int' to 'float' may change value [-Wconversion]
kernels/k.hip:5:9: warning: conversion from \u{2018}long long int\u{2019} to \u{2018}short int\u{2019} may change value [-Wconversion]
kernels/k.hip:6:11: warning: implicit conversion loses integer precision: 'size_t' (aka 'unsigned long') to 'int' [-Wshorten-64-to-32]
kernels/common.h:9:3: warning: conversion from 'long int' to 'int' may change value [-Wconversion]
kernels/k.hip:7:3: warning: conversion from \u{2018}size_t\u{2019} {aka \u{2018}long unsigned int\u{2019}} to \u{2018}unsigned int\u{2019} may change value [-Wconversion]
";
        let found = findings(&[], diagnostics, "kernels/k.hip", source);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert_eq!(
            found[0],
            "kernels/k.hip:3: a 64-bit `long long int` is narrowed to `int` implicitly, so an offset or count past 2^31 wraps \
             (`int i = (long long)blockIdx.x * blockDim.x + threadIdx.x;`; keep it in 64 bits, or cast it explicitly where its \
             range is known)"
        );
        assert!(found[1].starts_with("kernels/k.hip:6: a 64-bit `unsigned long` is narrowed to `int` implicitly"), "{}", found[1]);
        assert!(found[1].contains("(`int n = count;`;"), "{}", found[1]);
        assert!(found[2].starts_with("kernels/k.hip:7: a 64-bit `long unsigned int` is narrowed to `unsigned int`"), "{}", found[2]);
    }

    /// GCC's SSA dump of `int base = (long long)row * vocab;` on line 1 and of `int i =
    /// (int)((unsigned)bx * bd);` (unsigned builtins, no signed operand) on line 2.
    const FOLDED: &str = "
;; Function f1 (_Z2f1ii, funcdef_no=0, decl_uid=2117, cgraph_uid=1, symbol_order=0)

int f1 (int row, int vocab, unsigned int bx, unsigned int bd)
{
  int base;
  int i;
  unsigned int row.0_1;
  unsigned int vocab.1_2;
  unsigned int _3;
  unsigned int _4;

  <bb 2> :
  [kernels/k.hip:1:56] row.0_1 = (unsigned int) row_4(D);
  [kernels/k.hip:1:56] vocab.1_2 = (unsigned int) vocab_5(D);
  [kernels/k.hip:1:56] _3 = row.0_1 * vocab.1_2;
  [kernels/k.hip:1:34] base_6 = (int) _3;
  [kernels/k.hip:2:20] _4 = bx_7(D) * bd_8(D);
  [kernels/k.hip:2:13] i_9 = (int) _4;
";

    #[test]
    fn a_64_bit_product_gcc_folded_into_an_int_is_named() {
        let source = "  int base = (long long)row * vocab;\n  int i = (int)((unsigned)bx * bd);\n";
        let found = findings(&[FOLDED.to_string()], "", "kernels/k.hip", source);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(
            found[0],
            "kernels/k.hip:1: `row * vocab` is narrowed to a 32-bit `int`, so it wraps once it passes 2^31 \
             (`int base = (long long)row * vocab;`; keep the variable 64-bit, as `long long`)"
        );
    }

    #[test]
    fn a_line_with_both_kinds_of_finding_is_named_once() {
        let diagnostics = "kernels/k.hip:2:33: warning: conversion from 'long long int' to 'int' may change value [-Wconversion]\n";
        let source = "x\n  const float* s = scores + row * keys;\n";
        let found = findings(&[DUMP.to_string()], diagnostics, "kernels/k.hip", source);
        assert_eq!(found.iter().filter(|f| f.starts_with("kernels/k.hip:2:")).count(), 1, "{found:#?}");
        assert!(found[0].contains("multiplied in 32 bits"), "{}", found[0]);
    }

    /// GCC 12's dump of a source with a product kept in named 32-bit variables (`NAMED_SOURCE`).
    const NAMED: &str = "
;; Function f (f, funcdef_no=0, decl_uid=2109, cgraph_uid=1, symbol_order=0)

void f (float * x, const float * y, int row, int k, unsigned int bx, unsigned int bd, unsigned int tx)
{
  int j;
  int r2;
  int at;
  int i;
  int base;
  long unsigned int _1;
  long unsigned int _11;
  long unsigned int _15;
  int _14;
  long unsigned int _19;
  int bx.0_18;
  unsigned int _9;
  unsigned int _10;

  <bb 2> :
  [k.hip:2:7] base_26 = row_24(D) * k_25(D);
  [k.hip:3:12] j_27 = base_26;
  [k.hip:3:3] goto <bb 4>; [INV]

  <bb 3> :
  [k.hip:3:55] _1 = (long unsigned int) j_22;
  [k.hip:3:38] j_41 = j_22 + 256;

  <bb 4> :
  # j_22 = PHI <[k.hip:3:12] j_27(2), [k.hip:3:38] j_41(3)>

  <bb 5> :
  [k.hip:4:14] _9 = bx_29(D) * bd_30(D);
  [k.hip:4:19] _10 = tx_31(D) + _9;
  [k.hip:4:7] i_32 = (int) _10;
  [k.hip:5:5] _11 = (long unsigned int) i_32;
  [k.hip:6:22] _14 = row_24(D) * k_25(D);
  [k.hip:6:7] at_35 = _14 + 3;
  [k.hip:7:5] _15 = (long unsigned int) at_35;
  [k.hip:8:12] bx.0_18 = (int) bx_29(D);
  [k.hip:8:7] r2_37 = k_25(D) * bx.0_18;
  [k.hip:9:5] _19 = (long unsigned int) r2_37;
";
    const NAMED_SOURCE: &str = "extern \"C\" void f(float* x, const float* y, int row, int k, unsigned bx, unsigned bd, unsigned tx) {
  int base = row * k;
  for (int j = base; j < base + k; j += 256) x[j] = y[j];
  int i = bx * bd + tx;
  x[i] = 0;
  int at = (int)(row * k + 3);
  x[at] = 1;
  int r2 = (int)bx * k;
  x[r2] = 2;
}
";

    #[test]
    fn products_kept_in_named_32_bit_variables_are_followed_and_explicit_casts_pass() {
        let found = narrow_offsets(NAMED, "k.hip", NAMED_SOURCE);
        // line 3 widens the loop variable `j`, which is not followed
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            found[0],
            "k.hip:5: `bx * bd`, kept in the 32-bit `i` (line 4), is multiplied in 32 bits and only then widened to 64, so it \
             wraps once it passes 2^31 (`x[i] = 0;`; compute it in 64 bits, as `(long long)a * b`)"
        );
        // `(int)(row * k + 3)` on line 6 is the author's stated range; `(int)bx` casts an operand only
        assert!(found[1].starts_with("k.hip:9: `k * bx`, kept in the 32-bit `r2` (line 8), is multiplied"), "{}", found[1]);
    }

    #[test]
    fn a_product_of_a_thread_index_and_a_block_size_is_bounded_and_a_grid_product_is_not() {
        let dump = "
;; Function g (g, funcdef_no=0, decl_uid=1, cgraph_uid=1, symbol_order=0)

void g (int * out)
{
  struct Fiber * _1;
  unsigned int _2;
  unsigned int _3;
  unsigned int _4;
  unsigned int _5;
  unsigned int ty.0_6;
  unsigned int _7;
  int ty;
  int thread;
  int block;
  long unsigned int _8;
  long unsigned int _9;

  <bb 2> :
  [k.hip:2:20] _2 = [k.hip:2:20] _1->thread_index.y;
  [k.hip:2:20] ty_10 = (int) _2;
  [k.hip:3:30] _3 = [k.hip:3:30] _1->block_dim.x;
  [k.hip:3:16] ty.0_6 = (unsigned int) ty_10;
  [k.hip:3:19] _4 = _3 * ty.0_6;
  [k.hip:3:7] thread_11 = (int) _4;
  [k.hip:4:5] _8 = (long unsigned int) thread_11;
  [k.hip:5:30] _5 = [k.hip:5:30] _1->grid_dim.x;
  [k.hip:5:19] _7 = _5 * ty.0_6;
  [k.hip:5:7] block_12 = (int) _7;
  [k.hip:6:5] _9 = (long unsigned int) block_12;
  return;
}
";
        let source = "extern \"C\" void g(int* out) {\n  int ty = threadIdx.y;\n  int thread = ty * blockDim.x;\n  out[thread] = 0;\n  int block = ty * gridDim.x;\n  out[block] = 1;\n}\n";
        let found = narrow_offsets(dump, "k.hip", source);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].starts_with("k.hip:6: "), "{}", found[0]);
        // the same, each built-in read whole through the prelude's function of it
        let whole = dump
            .replace(
                "[k.hip:2:20] _2 = [k.hip:2:20] _1->thread_index.y;",
                "[k.hip:2:20] D.7 = simt::thread_index (_1);\n  [k.hip:2:20] _2 = [k.hip:2:20] D.7.y;",
            )
            .replace(
                "[k.hip:3:30] _3 = [k.hip:3:30] _1->block_dim.x;",
                "[k.hip:3:30] D.8 = simt::block_dim (_1);\n  [k.hip:3:30] _3 = [k.hip:3:30] D.8.x;",
            )
            .replace(
                "[k.hip:5:30] _5 = [k.hip:5:30] _1->grid_dim.x;",
                "[k.hip:5:30] D.9 = simt::grid_dim (_1);\n  [k.hip:5:30] _5 = [k.hip:5:30] D.9.x;",
            );
        assert_eq!(whole.matches("D.").count(), 6);
        assert_eq!(narrow_offsets(&whole, "k.hip", source), found);
    }

    #[test]
    fn an_explicit_cast_is_read_at_a_declarator_or_around_an_operator() {
        let at = |line: u32, column: u32| Statement { file: "k.hip", line, column, rhs: "" };
        let source = "  int at = (int)(row * k + 3);\n  x[(unsigned)(row * k)] = 1;\n  int r2 = (int)bx * k, r3 = (int)(a * b);\n  y[(int)(a) * b] = 0;\n";
        assert!(explicitly_cast(source, &at(1, 7)) && explicitly_cast(source, &at(1, 22)));
        assert!(explicitly_cast(source, &at(2, 22)));
        assert!(!explicitly_cast(source, &at(3, 7)) && !explicitly_cast(source, &at(3, 20)));
        assert!(!explicitly_cast(source, &at(4, 14)));
        // at the cast itself, as GCC places `(int)(id * n)` of 64-bit `id` and `n`
        assert!(explicitly_cast(source, &at(2, 5)) && !explicitly_cast(source, &at(3, 12)));
    }

    #[test]
    fn ssa_names_are_read_back_to_their_variables() {
        assert_eq!(variable_of("row_30(D)"), "row");
        assert_eq!(variable_of("tile_max_7"), "tile_max");
        assert_eq!(variable_of("_9"), "_9");
    }
}
