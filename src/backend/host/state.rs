//! The host build's static check of state between launches: writable storage of kernel code
//! that outlives a launch (a `__device__` launch counter, a function-local `static` flag). On
//! a GPU it lives as long as the module, so a kernel that reads it can change its result
//! after any number of launches, and no number of launches in a test certifies it. Its
//! existence is read off the compiled object's symbol table, which is exact: every object
//! symbol in a writable data section (`.data`, `.bss`; not `.data.rel.ro`, which is
//! read-only once relocated) that is not thread-local (`__shared__` is) and not the host
//! prelude's own. `__constant__` variables (read-only on a GPU, plain globals here) are
//! named from the source and left out, as are `const` ones (in `.rodata`). Its line is found
//! in the source by its name.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind, SymbolSection};

use crate::backend::KernelSource;

/// Where a kernel source's text and its directly included headers are.
pub struct SourceText<'a> {
    pub source: &'a KernelSource,
    /// The source as written (the build's rewrite keeps its lines).
    pub text: &'a str,
}

/// One finding a line for each writable module-scope object of kernel code in `file`, the
/// compiled kernel's object.
pub fn findings(file: &object::File, source: &SourceText) -> Vec<String> {
    let constant = constant_names(source.text);
    let mut symbols: Vec<String> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0)
        .filter(|s| match s.section() {
            SymbolSection::Section(index) => file.section_by_index(index).is_ok_and(|section| is_writable_data(&section)),
            _ => false,
        })
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|name| !is_runtimes(name))
        .collect();
    symbols.sort();
    symbols.dedup();
    let mut found: Vec<(usize, String)> =
        demangle(&symbols).into_iter().filter(|name| !constant.iter().any(|c| c == name)).map(|name| finding(&name, source)).collect();
    found.sort();
    found.into_iter().map(|(_, text)| text).collect()
}

/// `.data`, `.bss` and their `-fdata-sections` pieces; never `.data.rel.ro` (read-only after
/// relocation, where a table of pointers lies) nor thread-local sections.
fn is_writable_data(section: &object::Section) -> bool {
    let name = section.name().unwrap_or("");
    let writable = matches!(section.kind(), SectionKind::Data | SectionKind::UninitializedData);
    writable && !name.starts_with(".data.rel.ro") && !name.starts_with(".tdata") && !name.starts_with(".tbss")
}

/// The host prelude's own objects (namespace `simt`, `__simt_*`, the kernel descriptors) and a
/// coverage build's counters (`__gcov*`): state of the runtime, not of kernel code.
fn is_runtimes(symbol: &str) -> bool {
    ["_ZN4simt", "_ZZN4simt", "__simt", "simt_k_", "__gcov"].iter().any(|p| symbol.starts_with(p))
}

/// Symbols as the source names them (`_ZZ5callsvE1n` -> `calls()::n`), through `c++filt`,
/// which binutils (needed for `addr2line` already) provides; a name it cannot read stays as is.
pub(super) fn demangle(symbols: &[String]) -> Vec<String> {
    if symbols.is_empty() {
        return Vec::new();
    }
    let out = Command::new("c++filt").args(symbols).output();
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let names: Vec<String> = text.lines().map(str::to_string).collect();
            if names.len() == symbols.len() { names } else { symbols.to_vec() }
        }
        _ => symbols.to_vec(),
    }
}

/// The finding of one object (its declaration's file, line and text, what is wrong and what
/// to do instead), with its line to order the findings by (headers and unfound ones last).
fn finding(name: &str, source: &SourceText) -> (usize, String) {
    let declared = declaration(name, source);
    let order = line_order(&declared, source);
    let place = declared
        .map(|(file, line, text)| format!("{file}:{line}: `{name}` (`{text}`)"))
        .unwrap_or_else(|| format!("{}: `{name}`", source.source.display_path));
    let text = format!(
        "{place} is writable module-scope storage: it keeps its value from one launch to the next, so a result can change \
         after any number of launches, which no test run certifies (pass it as an argument, keep it in `__shared__` \
         memory, or make it `const` or `__constant__`)"
    );
    (order, text)
}

/// Where a finding found at `place` (a file, a line, its text) goes among the source's: its
/// line in the kernel source, and after all of them in a header or when not found.
pub(super) fn line_order(place: &Option<(String, usize, String)>, source: &SourceText) -> usize {
    match place {
        Some((file, line, _)) if *file == source.source.display_path => *line,
        _ => usize::MAX,
    }
}

/// `calls()::n` -> (`calls`, `n`); `ns::count` -> (no function, `count`).
fn split(name: &str) -> (Option<&str>, &str) {
    let variable = name.rsplit("::").next().unwrap_or(name);
    let function = name.find("()::").or_else(|| name.find(")::")).map(|end| {
        let before = &name[..end];
        let head = before.split('(').next().unwrap_or(before);
        head.rsplit("::").next().unwrap_or(head)
    });
    (function, variable)
}

/// Where `name` is declared: in the kernel source, else in a header it includes with quotes
/// (beside it or in an include folder); the first line naming it (after its function's first
/// line, for a function's `static`), as C++ declares a name before any use.
fn declaration(name: &str, source: &SourceText) -> Option<(String, usize, String)> {
    let (function, variable) = split(name);
    let look = |text: &str| -> Option<(usize, String)> {
        let lines: Vec<&str> = text.lines().collect();
        let start = match function {
            Some(f) => lines.iter().position(|l| has_word(l, f))?,
            None => 0,
        };
        let at = (start..lines.len()).find(|&i| has_word(lines[i], variable) && (function.is_none() || lines[i].contains("static")))?;
        Some((at + 1, lines[at].split("//").next().unwrap_or("").trim().to_string()))
    };
    in_source_or_headers(source, look)
}

/// The first line of the kernel source, else of a header it includes with quotes, that names
/// `word` (outside a `//` comment), with its file and its code.
pub(super) fn first_line_naming(word: &str, source: &SourceText) -> Option<(String, usize, String)> {
    in_source_or_headers(source, |text| {
        let (at, line) = text.lines().enumerate().find(|(_, line)| has_word(line, word))?;
        Some((at + 1, line.split("//").next().unwrap_or("").trim().to_string()))
    })
}

/// What `look` finds (a line and its text) in the kernel source, else in the first header it
/// includes with quotes where it finds anything, with the file's name to show.
fn in_source_or_headers(source: &SourceText, look: impl Fn(&str) -> Option<(usize, String)>) -> Option<(String, usize, String)> {
    if let Some((line, text)) = look(source.text) {
        return Some((source.source.display_path.clone(), line, text));
    }
    for (path, display) in quoted_includes(source) {
        if let Some((line, text)) = std::fs::read_to_string(&path).ok().as_deref().and_then(&look) {
            return Some((display, line, text));
        }
    }
    None
}

/// The source's `#include "x.h"` headers that exist beside it or in an include folder, with the
/// names to show them by (`kernels/x.h`).
fn quoted_includes(source: &SourceText) -> Vec<(PathBuf, String)> {
    let beside = Path::new(&source.source.display_path).parent().map(Path::to_path_buf).unwrap_or_default();
    let mut found = Vec::new();
    for line in source.text.lines() {
        let Some(name) = line.trim().strip_prefix("#include \"").and_then(|r| r.split('"').next()) else { continue };
        let dirs = source.source.path.parent().into_iter().chain(source.source.include_dirs.iter().map(PathBuf::as_path));
        if let Some(path) = dirs.map(|d| d.join(name)).find(|p| p.is_file()) {
            found.push((path, beside.join(name).to_string_lossy().into_owned()));
        }
    }
    found
}

/// Whether `word` stands as a whole identifier in `line`, outside a `//` comment.
fn has_word(line: &str, word: &str) -> bool {
    let code = line.split("//").next().unwrap_or(line);
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The names `__constant__` declarations of `text` define (`__constant__ float table[4] = ...;`
/// -> `table`): read-only on a GPU, so not state, though the host keeps them writable.
fn constant_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("__constant__") {
        rest = &rest[at + "__constant__".len()..];
        let declaration = rest.split(';').next().unwrap_or("");
        for declarator in top_level_pieces(declaration) {
            let head = declarator.split(['=', '[', '{', '(']).next().unwrap_or("");
            if let Some(name) = head.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).rfind(|w| !w.is_empty()) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// `text` split at its commas outside brackets (`a = {1, 2}, b` -> `a = {1, 2}`, ` b`).
fn top_level_pieces(text: &str) -> Vec<&str> {
    let (mut pieces, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                pieces.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_function_and_variable() {
        assert_eq!(split("calls()::n"), (Some("calls"), "n"));
        assert_eq!(split("tf_add_launches"), (None, "tf_add_launches"));
        assert_eq!(split("ns::count"), (None, "count"));
        assert_eq!(split("ns::step(int, float)::done"), (Some("step"), "done"));
    }

    #[test]
    fn constant_declarations_are_named_and_nothing_else() {
        let text = "__constant__ float table[4] = {1, 2, 3, 4};\n__constant__ int a = 1, b[2];\n__device__ unsigned launches;\n";
        assert_eq!(constant_names(text), ["table", "a", "b"]);
    }

    #[test]
    fn words_are_whole_identifiers_outside_comments() {
        assert!(has_word("__device__ unsigned launches;", "launches"));
        assert!(!has_word("__device__ unsigned launches2;", "launches"));
        assert!(!has_word("int x; // launches", "launches"));
    }

    #[test]
    fn runtime_symbols_are_the_prelude_s() {
        assert!(is_runtimes("_ZN4simtL13stack_regionsE"));
        assert!(is_runtimes("__gcov0.tf_add"));
        assert!(!is_runtimes("tf_add_launches"));
        assert!(!is_runtimes("_ZZ5callsvE1n"));
    }
}
