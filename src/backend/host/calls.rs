//! The host build's static check of what kernel code uses from outside its own source: a
//! function or object its object file leaves for the link to find (`strcpy`, `sprintf`, `write`,
//! `fork`, `getenv`, `std::__throw_length_error`) that no GPU compiler provides to device code.
//! The host runs such a routine from the C library unchecked (no memory check sees what it
//! loads or stores: `strcpy` into a tensor is a store no race or bounds check judges), and no
//! GPU build links it, so code that uses it is code the host build alone compiles (behind
//! `#ifdef`): the host's gates judge other code than a GPU's. It is read off the object's
//! undefined symbols, which every compiler writes (GCC and clang alike), against what device
//! code may use: the runtime's own (the prelude's), the instrumentation's entry points, the C
//! math library in `float` and `double` (CUDA and HIP give device code the same functions),
//! and the few C routines device code has (`printf`, `malloc`, `memcpy`, `assert`'s handler;
//! `memmove` too, which GCC makes of a copy loop).
//! The allowed routines that store through a pointer (`memcpy`, `sincosf`, `frexpf`, `modff`,
//! `remquof`, `printf`'s `%n`) are pointed at the prelude's checked ones before the link.
//! Not seen: a routine reached without a symbol (a function pointer read out of a library's
//! image), and what an allowed routine reads through a pointer (`printf`'s `%s`, `nanf`).

use object::{Object, ObjectSymbol, SymbolKind};

/// One finding a line for each symbol the compiled kernel's object `file` uses from outside
/// that no GPU compiler provides to device code, in the source's line order (unfound ones last).
pub fn findings(file: &object::File, source: &super::state::SourceText) -> Vec<String> {
    let mut names: Vec<String> = file
        .symbols()
        .filter(|s| s.is_undefined() && s.kind() != SymbolKind::Tls)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|name| !name.is_empty() && !allowed(name))
        .collect();
    names.sort();
    names.dedup();
    let mut found: Vec<(usize, String)> = super::state::demangle(&names).into_iter().map(|name| finding(&name, source)).collect();
    found.sort();
    found.into_iter().map(|(_, text)| text).collect()
}

/// The runtime's symbols (namespace `simt`, `__simt_*`, `simt_*`), the instrumentation's
/// (`__tsan_*`, `__ubsan_*`, a coverage build's `__gcov*`), what the compiler and linker make
/// of any code (the GOT, the TLS base, unwinding, the stack protector, `extern __shared__`
/// arrays' thread-local init functions, renamed before the link), and what device code has.
fn allowed(name: &str) -> bool {
    const PREFIXES: &[&str] =
        &["_ZN4simt", "_ZZN4simt", "__simt", "simt_", "__tsan_", "__ubsan_", "__sanitizer_", "__gcov", "_ZTH", "_ZTW"];
    const COMPILER: &[&str] = &[
        "_GLOBAL_OFFSET_TABLE_",
        "_TLS_MODULE_BASE_",
        "__tls_get_addr",
        "__dso_handle",
        "__stack_chk_fail",
        "__stack_chk_guard",
        "__gxx_personality_v0",
        "_Unwind_Resume",
        "__cxa_pure_virtual",
        "__cxa_deleted_virtual",
    ];
    // what CUDA and HIP give device code of the C library and C++'s runtime, and memmove, which
    // GCC makes of a copy loop whose ends may overlap (the build points the three copies at the
    // prelude's checked ones)
    const DEVICE_LIBRARY: &[&str] = &[
        "printf",
        "puts",
        "putchar",
        "vprintf",
        "malloc",
        "free",
        "memcpy",
        "memmove",
        "memset",
        "__assert_fail",
        "abort",
        "_Znwm",
        "_Znam",
        "_ZdlPv",
        "_ZdaPv",
        "_ZdlPvm",
        "_ZdaPvm",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p)) || COMPILER.contains(&name) || DEVICE_LIBRARY.contains(&name) || is_device_math(name)
}

/// The C math library's functions in `double` and their `float` forms (`sin`, `sinf`), and
/// the GNU ones device code has too (`sincos`, `exp10`): no `long double` (`sinl`), which no
/// GPU has.
fn is_device_math(name: &str) -> bool {
    const MATH: &[&str] = &[
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "cbrt",
        "ceil",
        "copysign",
        "cos",
        "cosh",
        "erf",
        "erfc",
        "exp",
        "exp10",
        "exp2",
        "expm1",
        "fabs",
        "fdim",
        "floor",
        "fma",
        "fmax",
        "fmin",
        "fmod",
        "frexp",
        "hypot",
        "ilogb",
        "j0",
        "j1",
        "jn",
        "ldexp",
        "lgamma",
        "llrint",
        "llround",
        "log",
        "log10",
        "log1p",
        "log2",
        "logb",
        "lrint",
        "lround",
        "modf",
        "nan",
        "nearbyint",
        "nextafter",
        "pow",
        "remainder",
        "remquo",
        "rint",
        "round",
        "scalbln",
        "scalbn",
        "sin",
        "sincos",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "tgamma",
        "trunc",
        "y0",
        "y1",
        "yn",
    ];
    MATH.contains(&name) || name.strip_suffix('f').is_some_and(|double| MATH.contains(&double))
}

/// The finding of one symbol (where the source first names it, what is wrong and what to do),
/// with its line to order the findings by (headers and unfound ones last).
fn finding(name: &str, source: &super::state::SourceText) -> (usize, String) {
    // `std::__throw_length_error(char const*)` is named in a source as `__throw_length_error`
    let head = name.split('(').next().unwrap_or(name);
    let word = head.rsplit("::").next().unwrap_or(head);
    let named = super::state::first_line_naming(word, source);
    let order = super::state::line_order(&named, source);
    let place = named
        .map(|(file, line, text)| format!("{file}:{line}: uses `{name}` (`{text}`)"))
        .unwrap_or_else(|| format!("{}: uses `{name}`", source.source.display_path));
    let text = format!(
        "{place}, which no GPU compiler provides to device code: the host runs it unchecked (no memory check sees what it \
         loads or stores), and the host's gates judge code that a GPU never runs"
    );
    (order, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_code_s_library_and_the_runtime_are_allowed_and_the_rest_of_the_c_library_is_not() {
        for name in ["expf", "sqrt", "sincosf", "fmaxf", "exp10", "printf", "memcpy", "__assert_fail", "_Znwm"] {
            assert!(allowed(name), "{name}");
        }
        for name in ["_ZN4simt11syncthreadsEPKci", "__tsan_read4", "__ubsan_handle_out_of_bounds", "_GLOBAL_OFFSET_TABLE_"] {
            assert!(allowed(name), "{name}");
        }
        for name in ["strcpy", "sprintf", "write", "fork", "getenv", "syscall", "dlsym", "sinl", "f", "_ZSt20__throw_length_errorPKc"] {
            assert!(!allowed(name), "{name}");
        }
    }
}
