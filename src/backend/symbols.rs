//! Kernel symbols as a contract names them: an `extern "C"` name (`tf_add`) or a C++ name,
//! a template instantiation included (`scale_rows<float, 4>`, `ops::norm<__half>`), and how
//! each backend finds the one it compiled: the host by a descriptor of its own name, NVRTC and
//! hiprtc by name expressions (their lowered names), the static gfx1201 build by demangling
//! the code object's kernel names.

use sha2::{Digest, Sha256};

/// A C identifier: an `extern "C"` kernel's name, found in every backend's output as written.
pub fn is_plain(symbol: &str) -> bool {
    symbol.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && symbol.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Characters a C++ kernel name may hold besides letters, digits and `_`: the name is written
/// into generated source (the host's descriptor, the gfx build's instantiation), so nothing
/// that could end a declaration, start a comment or a directive is taken.
const NAME_PUNCTUATION: &str = " :<>,*&+-.";

/// Whether `symbol` is a kernel name this engine takes: a C identifier, or a C++ name of
/// identifiers, `::`, and template arguments in balanced `<>` (types, numbers, `*`, `&`).
pub fn check(symbol: &str) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "`{symbol}` is no kernel name: {why} (an `extern \"C\"` name such as `scale_rows`, or a C++ name such as \
             `scale_rows<float, 4>`)"
        ))
    };
    if is_plain(symbol) {
        return Ok(());
    }
    let trimmed = symbol.trim();
    if trimmed.is_empty() || trimmed != symbol {
        return refuse("empty, or with spaces around it");
    }
    if let Some(c) = symbol.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || NAME_PUNCTUATION.contains(*c))) {
        return refuse(&format!("`{c}` cannot stand in one"));
    }
    if !symbol.trim_start_matches("::").starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return refuse("it starts with neither a name nor `::`");
    }
    let mut depth = 0i32;
    for c in symbol.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return refuse("a `>` closes no `<`");
        }
    }
    if depth != 0 {
        return refuse("a `<` is not closed");
    }
    Ok(())
}

/// The name the host build gives the kernel's descriptor (`simt_k_<name>`): the symbol itself
/// when it is a C identifier, else one made from its hash (a template instantiation has no
/// C name of its own).
pub fn host_alias(symbol: &str) -> String {
    if is_plain(symbol) {
        return symbol.to_string();
    }
    let digest = Sha256::digest(symbol.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("kc_t_{hex}")
}

/// `symbol` without spaces, for comparing names as a demangler writes them with names as a
/// contract writes them (`scale_rows<float,4>` and `scale_rows<float, 4>` are one).
fn compact(name: &str) -> String {
    name.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Whether `demangled` (a demangler's `void scale_rows<float, 4>(float const*, float*, int)`)
/// names the kernel `symbol`: the name between the return type and the parameter list, spaces
/// aside. A name written as the demangler does not write it (`4u`, `unsigned int`) does not
/// match, and the error lists the demangled names to copy from.
pub fn demangled_is(demangled: &str, symbol: &str) -> bool {
    let text = compact(demangled);
    let Some(open) = outer_parenthesis(&text) else { return false };
    let before = &text[..open];
    let name = before.strip_prefix("void").unwrap_or(before);
    name == compact(symbol) || name.trim_start_matches("::") == compact(symbol).trim_start_matches("::")
}

/// Where the parameter list of a demangled function starts: the first `(` outside `<>`.
fn outer_parenthesis(text: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extern_c_names_and_template_instantiations_are_kernel_names_and_nothing_else_is() {
        for good in ["tf_add", "scale_rows<float, 4>", "ops::norm<__half>", "::k<unsigned int, -1>", "k<float*, 2u>"] {
            assert!(check(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("", "empty"),
            (" k<float>", "spaces around"),
            ("k<float>; int x", "`;` cannot"),
            ("k<float>//", "`/` cannot"),
            ("k<float", "not closed"),
            ("k>float<", "closes no"),
            ("4k", "starts with neither"),
            ("k<\"x\">", "`\"` cannot"),
        ] {
            let e = check(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_template_gets_a_host_alias_of_its_own_and_a_c_name_keeps_its_name() {
        assert_eq!(host_alias("tf_add"), "tf_add");
        let alias = host_alias("scale_rows<float, 4>");
        assert!(alias.starts_with("kc_t_") && is_plain(&alias), "{alias}");
        assert_ne!(alias, host_alias("scale_rows<float, 8>"));
    }

    #[test]
    fn a_demangled_name_matches_the_symbol_spaces_aside() {
        let demangled = "void scale_rows<float, 4>(float const*, float*, int)";
        assert!(demangled_is(demangled, "scale_rows<float,4>"));
        assert!(demangled_is(demangled, "scale_rows<float, 4>"));
        assert!(!demangled_is(demangled, "scale_rows<float, 8>"));
        assert!(!demangled_is("void scale_rows<float, 4>()", "scale_rows"));
        assert!(demangled_is("void ops::norm<(anonymous namespace)::T>(int)", "ops::norm<(anonymous namespace)::T>"));
        assert!(demangled_is("void k<a<b>, 2>(int)", "k<a<b>,2>"));
    }
}
