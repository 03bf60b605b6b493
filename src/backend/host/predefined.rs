//! The compilers' own macros whose values differ between the host build and a GPU build
//! (`__cplusplus`: 202002L for the host's C++20, 201703L under NVRTC's C++17; `__GNUC__`: 12 for
//! g++, 4 for clang), wherever a kernel's own code names one outside a conditional directive:
//! such code computes one thing on the host and another on that GPU without an `#if` the
//! comparison of lines ([`super::targets`]) could see. Read off each build's `-dM` (NVRTC's
//! from the host preprocessor that stands in for it), once per process and host compiler.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

/// A macro's value for the host build and for one GPU build that differs from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Differs {
    pub target: &'static str,
    pub host: String,
    pub device: String,
}

/// By name, the GPU builds whose value of a macro differs from the host's.
pub(super) type Differing = BTreeMap<String, Vec<Differs>>;

/// Every macro both the host compiler (with `host_flags`) and a GPU build predefine with
/// values that differ; a GPU build whose list cannot be had (no clang) is left out.
pub(super) fn differing(host_program: &str, host_flags: &[String]) -> Arc<Differing> {
    static KNOWN: OnceLock<Mutex<HashMap<Vec<String>, Arc<Differing>>>> = OnceLock::new();
    let key: Vec<String> = std::iter::once(host_program.to_string()).chain(host_flags.iter().cloned()).collect();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(found) = known.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return found.clone();
    }
    let mut host = Command::new(host_program);
    host.args(host_flags).arg("-x").arg("c++");
    let host = macros(host).unwrap_or_default();
    let mut found = Differing::new();
    for (target, device) in
        [("a gfx1201", super::targets::gfx1201_compiler().ok()), ("an sm_90", Some(super::targets::sm_90_stand_in(host_program)))]
    {
        for (name, value) in device.and_then(macros).unwrap_or_default() {
            let Some(own) = host.get(&name) else { continue };
            if normalised(own) != normalised(&value) {
                found.entry(name).or_default().push(Differs { target, host: own.clone(), device: value });
            }
        }
    }
    let found = Arc::new(found);
    known.lock().unwrap_or_else(|p| p.into_inner()).insert(key, found.clone());
    found
}

/// Name -> value of what `command` predefines (`-dM -E` of no source); None if it fails.
fn macros(mut command: Command) -> Option<BTreeMap<String, String>> {
    let out = command.args(["-dM", "-E", "-"]).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter_map(|l| l.strip_prefix("#define "))
            .filter_map(|l| {
                let (name, value) = l.split_once(' ').unwrap_or((l, ""));
                // a function-like macro's parameters are part of its name here: not a value read
                (!name.contains('(')).then(|| (name.to_string(), value.trim().to_string()))
            })
            .collect(),
    )
}

/// A value as it compares: a number by its value (`16UL` and `16ul`, `3.40282347e+38F` and
/// `3.40282346638528859811704183484516925e+38F`), a type by its words (`short int`, `short`).
fn normalised(value: &str) -> String {
    let v = value.trim();
    let digits = v.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        if let Ok(n) = u128::from_str_radix(hex, 16) {
            return n.to_string();
        }
    } else if let Ok(n) = digits.parse::<i128>() {
        return n.to_string();
    }
    let float = v.trim_end_matches(['f', 'F', 'l', 'L']).trim_start_matches('(').trim_end_matches(')');
    if let Ok(x) = float.parse::<f64>() {
        return format!("{:e}", x as f32 as f64);
    }
    v.replace("short int", "short").replace("long int", "long").replace("long long int", "long long")
}

/// The first line of each of `files` that names a macro of `differing` outside a comment, a
/// string and a conditional directive (whose lines the comparison of lines judges), once for
/// each macro, as (file, line, name).
pub(super) fn named(files: &[PathBuf], differing: &Differing) -> Vec<(PathBuf, usize, String)> {
    let mut found = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in files {
        let Ok(bytes) = std::fs::read(file) else { continue };
        for (line, name) in identifiers(&String::from_utf8_lossy(&bytes)) {
            if differing.contains_key(name) && seen.insert(name.to_string()) {
                found.push((file.clone(), line, name.to_string()));
            }
        }
    }
    found
}

/// The identifiers of C++ `text` with their lines, past comments, string and character
/// literals and the lines of conditional directives (`#if`, `#elif`, `#ifdef`, `#ifndef`).
fn identifiers(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let (mut at, mut line, mut line_start) = (0, 1, true);
    let mut in_condition = false;
    while at < bytes.len() {
        let b = bytes[at];
        if b == b'\n' {
            // a directive continues past a backslash-newline
            let continued = at > 0 && bytes[at - 1] == b'\\';
            in_condition &= continued;
            line += 1;
            line_start = true;
            at += 1;
            continue;
        }
        if bytes[at..].starts_with(b"//") {
            at += bytes[at..].iter().position(|&c| c == b'\n').unwrap_or(bytes.len() - at);
            continue;
        }
        if bytes[at..].starts_with(b"/*") {
            let end = bytes[at + 2..].windows(2).position(|w| w == b"*/").map_or(bytes.len(), |p| at + 2 + p + 2);
            line += bytes[at..end].iter().filter(|&&c| c == b'\n').count();
            at = end;
            continue;
        }
        if b == b'"' || b == b'\'' {
            at += 1;
            while at < bytes.len() && bytes[at] != b && bytes[at] != b'\n' {
                at += if bytes[at] == b'\\' { 2 } else { 1 };
            }
            at += 1;
            continue;
        }
        if line_start && b == b'#' {
            let rest = text[at + 1..].trim_start();
            in_condition = ["if", "elif"].iter().any(|d| rest.starts_with(d));
        }
        if !b.is_ascii_whitespace() {
            line_start = false;
        }
        if b.is_ascii_alphabetic() || b == b'_' {
            let start = at;
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
            if !in_condition {
                found.push((line, &text[start..at]));
            }
            continue;
        }
        if b.is_ascii_digit() {
            // a number's letters (`0x1f`, `1e5f`) are no identifier
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'.' || bytes[at] == b'_') {
                at += 1;
            }
            continue;
        }
        at += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_read_past_comments_strings_and_conditions() {
        let text = "int a = __GNUC__; // __cplusplus\n/* __VERSION__\n */ const char* s = \"__cplusplus\";\n\
                    #if __cplusplus > 201703L\nint b = __cplusplus;\n#endif\n#define V __cplusplus \\\n + 1\n";
        let names: Vec<(usize, &str)> = identifiers(text).into_iter().filter(|(_, n)| n.starts_with("__")).collect();
        assert_eq!(names, [(1, "__GNUC__"), (5, "__cplusplus"), (7, "__cplusplus")]);
    }

    #[test]
    fn values_compare_as_numbers_and_types() {
        assert_eq!(normalised("16UL"), normalised("16ul"));
        assert_eq!(normalised("3.40282346638528859811704183484516925e+38F"), normalised("3.40282347e+38F"));
        assert_eq!(normalised("short int"), normalised("short"));
        assert_ne!(normalised("202002L"), normalised("201703L"));
        assert_ne!(normalised("12"), normalised("4"));
    }

    /// The host compiler and NVRTC's stand-in differ on `__cplusplus` (C++20 against C++17).
    #[test]
    fn the_host_and_nvrtc_differ_on_the_language_version() {
        let Ok(host) = super::super::compile::HostCompiler::discover() else { return };
        let flags = host.flags(32, super::super::compile::BuildMode::Normal);
        let differing = differing(&host.program, &flags);
        let cplusplus = &differing["__cplusplus"];
        assert!(cplusplus.iter().any(|d| d.target == "an sm_90" && d.host == "202002L" && d.device == "201703L"), "{cplusplus:?}");
    }
}
