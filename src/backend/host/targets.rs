//! One source, one program: the lines of a kernel's own files that its host build compiles,
//! against those a gfx1201 build and an sm_90 build compile. A kernel whose `#if` on the
//! target (`__HIP_DEVICE_COMPILE__`, `__CUDA_ARCH__`, `__x86_64__`) gives the host other code
//! than a GPU passes every host check with code no GPU runs, while the GPU's own code goes
//! unchecked (a CI runner without a GPU sees green). Any line one build compiles and another
//! leaves out is a static finding. Only a kernel whose own files hold a directive that can make
//! builds differ is preprocessed (the repository's kernels hold none), and a comparison that
//! cannot be made is a finding too.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::backend::KernelSource;

/// The CUDA version whose NVRTC the sm_90 preprocessing stands for (the one the sm_90 limits
/// are recorded with): its `__CUDACC_VER_*__`.
pub(super) const NVRTC_VERSION: (i32, i32) = (13, 0);

/// Preprocess only, keeping each `#define` and `#undef` at its line: a macro defined one way
/// on the host and another on a GPU (`#if __CUDA_ARCH__` ... `#define KEEP 1` ... `#else` ...
/// `#define KEEP 0`) changes no code line's place, only which directive lines are taken.
pub(super) const PREPROCESS: [&str; 2] = ["-E", "-dD"];

/// How the three builds preprocess.
pub(super) struct Builds<'a> {
    /// The host build's own compile, to preprocess: the same wrapper, copy, flags and
    /// precompiled prelude (so a source cannot tell it from the build: `__has_include` of the
    /// wrapper, `__INCLUDE_LEVEL__`), run in `work`.
    pub host: &'a dyn Fn() -> Command,
    pub host_program: &'a str,
    /// The host build's flags (for the compiler's own macros, [`super::predefined`]).
    pub host_flags: &'a [String],
    /// `kernels/host/prelude.h`: its folder's parent holds the device preludes.
    pub host_prelude: &'a Path,
    /// Toolchain files of the host build's own beyond the preludes (the precompiled prelude's
    /// copy in the cache).
    pub host_toolchain: &'a [PathBuf],
    /// The build folder: its files (the wrapper, the copy) are the build's, not the kernel's.
    pub work: &'a Path,
}

/// The preludes and the HIP header shims beside `host_prelude`: the toolchain's files, each
/// build's own by design, not the kernel's (named file by file: a kernel's own header in a
/// folder named `host/` is still the kernel's).
fn toolchain_files(host_prelude: &Path) -> BTreeSet<PathBuf> {
    let Some(root) = host_prelude.parent().and_then(Path::parent) else { return BTreeSet::new() };
    crate::backend::preludes::file_names().map(|name| canonical(&root.join(name))).collect()
}

/// The preludes of the two GPU builds, as a digest for the host build's cache key: they decide
/// which lines those builds compile.
pub(super) fn device_preludes_digest(host_prelude: &Path) -> String {
    let root = host_prelude.parent().and_then(Path::parent).unwrap_or(Path::new(""));
    let bytes: Vec<u8> = ["hip/prelude.h", "cuda/prelude.h"].iter().flat_map(|p| std::fs::read(root.join(p)).unwrap_or_default()).collect();
    crate::backend::cache::digest_hex(&bytes)
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Which files of a build's preprocessed text are the kernel's: every file that is neither
/// under the compiler's system include folders, nor one of the toolchain's, nor the build
/// folder's (wherever it lies: a header only a device build includes, or one named by an
/// absolute path, counts), each named as its line markers name it.
struct Own {
    system: Vec<PathBuf>,
    toolchain: BTreeSet<PathBuf>,
    work: PathBuf,
    /// The source and the name the host build's copy gives it (its display path).
    source: (PathBuf, String),
}

impl Own {
    fn of(system: Vec<PathBuf>, source: &KernelSource, builds: &Builds) -> Own {
        let mut toolchain = toolchain_files(builds.host_prelude);
        toolchain.extend(builds.host_toolchain.iter().map(|f| canonical(f)));
        Own {
            system: system.iter().map(|d| canonical(d)).collect(),
            toolchain,
            work: canonical(builds.work),
            source: (canonical(&source.path), source.display_path.clone()),
        }
    }

    /// `file` (canonical) is the kernel's.
    fn holds(&self, file: &Path) -> bool {
        !self.toolchain.contains(file) && !self.system.iter().any(|d| file.starts_with(d)) && !file.starts_with(&self.work)
    }

    /// The kernel's file a line marker names, if it is one: names relative to the build folder
    /// (where the host build runs), the copy's `#line` name for the source.
    fn resolve(&self, name: &str) -> Option<PathBuf> {
        if name == self.source.1 {
            return Some(self.source.0.clone());
        }
        let path = canonical(&self.work.join(name));
        self.holds(&path).then_some(path)
    }
}

/// The kernel's own files among those its host build read (`read`), the source first.
pub(super) fn own_files(source: &KernelSource, read: &[PathBuf], builds: &Builds) -> Vec<PathBuf> {
    let own = Own::of(host_system_dirs(builds), source, builds);
    let mut files = vec![canonical(&source.path)];
    for file in read.iter().map(|f| canonical(f)) {
        if own.holds(&file) && !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

fn host_system_dirs(builds: &Builds) -> Vec<PathBuf> {
    crate::backend::cache::system_include_dirs(builds.host_program, &["-x".into(), "c++".into()])
}

/// The static findings of `source`: the compilers' own macros its own code reads whose values
/// differ by target, and the lines one target's build compiles and another's does not (only
/// where its own files hold a directive that can make the builds differ).
pub(super) fn findings(source: &KernelSource, own: &[PathBuf], builds: &Builds) -> Vec<String> {
    let shown = |file: &Path| shown(source, file);
    let differing = super::predefined::differing(builds.host_program, builds.host_flags);
    let mut findings: Vec<String> = super::predefined::named(own, &differing)
        .into_iter()
        .flat_map(|(file, line, name)| {
            let at = format!("{}:{line}", shown(&file));
            differing[&name]
                .iter()
                .map(|d| {
                    format!(
                        "{at}: `{name}` is {} for the host build and {} for {} build: code that reads it runs otherwise on the host \
                         than on that GPU",
                        d.host, d.device, d.target
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    findings.extend(directive_findings(source, own, builds, &shown));
    findings
}

/// The lines one target's build compiles and another's does not: none when the kernel's own
/// files hold no directive that can make the builds differ.
fn directive_findings(source: &KernelSource, own: &[PathBuf], builds: &Builds, shown: &dyn Fn(&Path) -> String) -> Vec<String> {
    let Some((file, line, directive)) =
        own.iter().find_map(|f| std::fs::read(f).ok().and_then(|bytes| first_divergent_directive(&bytes)).map(|(l, d)| (f, l, d)))
    else {
        return Vec::new();
    };
    let at = format!("{}:{line}", shown(file));
    // lines are compared by number: a kernel's own `#line` could give two builds' code one
    // number (GCC takes `# 20 "file"` as `#line` too)
    if renumbers(&directive) {
        return vec![format!(
            "{at}: `#{directive}` renumbers the kernel's own lines, by which the lines each target compiles are compared: \
             the host's and a GPU's code cannot be told apart"
        )];
    }
    compare(source, builds, &format!("`#{directive}` at {at}"), shown)
}

/// `#line 20` and GCC's `# 20 "file"`.
fn renumbers(directive: &str) -> bool {
    directive == "line" || directive.starts_with(|c: char| c.is_ascii_digit())
}

/// `file` as reports name it: the source by its display path, a file beside it or under it
/// from there, one of its repository from the repository, any other as it is.
fn shown(source: &KernelSource, file: &Path) -> String {
    let main = canonical(&source.path);
    if file == main {
        return source.display_path.clone();
    }
    let beside = main.parent().and_then(|dir| file.strip_prefix(dir).ok());
    let display_dir = Path::new(&source.display_path).parent();
    if let (Some(relative), Some(display_dir)) = (beside, display_dir) {
        return display_dir.join(relative).display().to_string();
    }
    let root = crate::backend::cache::repository_root(source).map(|r| canonical(&r));
    match root.as_deref().and_then(|r| file.strip_prefix(r).ok()) {
        Some(relative) => relative.display().to_string(),
        None => file.display().to_string(),
    }
}

/// The lines of the kernel's own files that the host build and a GPU build do not both
/// compile, each run of them a finding that names `origin` (the directive that can make them
/// differ).
fn compare(source: &KernelSource, builds: &Builds, origin: &str, shown: &dyn Fn(&Path) -> String) -> Vec<String> {
    let main = shown(&canonical(&source.path));
    let mut host = (builds.host)();
    host.current_dir(builds.work);
    let host = match lines_of(host, &Own::of(host_system_dirs(builds), source, builds)) {
        Ok(lines) => lines,
        Err(why) => return vec![format!("{main}: {origin}: the host build's lines could not be listed: {why}")],
    };
    let mut findings = Vec::new();
    for (target, command) in [("a gfx1201", gfx1201_command(source, builds)), ("an sm_90", Ok((sm_90_command(source, builds), Vec::new())))]
    {
        let device = match command.and_then(|(command, system)| lines_of(command, &Own::of(system, source, builds))) {
            Ok(lines) => lines,
            Err(why) => {
                findings.push(format!(
                    "{main}: {origin} may give the host other code than {target} build, whose lines could not be listed: {why}"
                ));
                continue;
            }
        };
        for (only, other, what) in [
            (
                &host,
                &device,
                format!("compiled by the host build and not by {target} build: the host's checks vouch for code that GPU never runs"),
            ),
            (&device, &host, format!("compiled by {target} build and not by the host build: no host check sees code that GPU runs")),
        ] {
            for (file, lines) in by_file(only.difference(other)) {
                findings.push(format!("{}:{}: {} {what} ({origin})", shown(&file), lines[0], described(&lines)));
            }
        }
    }
    findings
}

/// The static gfx1201 build's compiler with its flags, or why there is none (looked for once).
pub(super) fn gfx1201_compiler() -> Result<Command, String> {
    static CLANG: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    let clang = CLANG.get_or_init(|| crate::amdgpu::HipClang::discover().map(|c| c.program).map_err(|e| e.to_string())).clone()?;
    let mut command = Command::new(clang);
    command.args(crate::amdgpu::HipClang::flags("gfx1201"));
    Ok(command)
}

/// The host preprocessor as NVRTC 13.0 for sm_90: its predefined macros, none of the host
/// compiler's, no system headers.
pub(super) fn sm_90_stand_in(host_program: &str) -> Command {
    let mut command = Command::new(host_program);
    command.args(["-x", "c++", "-std=c++17"]).args(crate::backend::cuda::nvrtc::host_preprocessor_defines("90", NVRTC_VERSION));
    command
}

/// A gfx1201 build's preprocessing, with its prelude, and clang's system include folders.
fn gfx1201_command(source: &KernelSource, builds: &Builds) -> Result<(Command, Vec<PathBuf>), String> {
    let mut command = gfx1201_compiler()?;
    let args: Vec<String> = command.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    let system = crate::backend::cache::system_include_dirs(&command.get_program().to_string_lossy(), &args);
    let prelude = builds.host_prelude.parent().and_then(Path::parent).map(|root| root.join("hip/prelude.h")).unwrap_or_default();
    command.args(includes(source)).arg("-include").arg(prelude).args(PREPROCESS).arg(&source.path);
    Ok((command, system))
}

/// An sm_90 build's, with the CUDA prelude.
fn sm_90_command(source: &KernelSource, builds: &Builds) -> Command {
    let prelude = builds.host_prelude.parent().and_then(Path::parent).map(|root| root.join("cuda/prelude.h")).unwrap_or_default();
    let mut command = sm_90_stand_in(builds.host_program);
    command.args(includes(source)).arg("-include").arg(prelude).args(PREPROCESS).arg(&source.path);
    command
}

fn includes(source: &KernelSource) -> Vec<std::ffi::OsString> {
    source.include_dirs.iter().flat_map(|d| ["-I".into(), d.clone().into_os_string()]).collect()
}

/// The lines `command` compiles of the `own` files; an error where the compiler fails or
/// compiles no line of the source (it read it as something else).
fn lines_of(command: Command, own: &Own) -> Result<BTreeSet<(PathBuf, u32)>, String> {
    let lines = active_lines(&preprocess(command)?, own);
    match lines.iter().any(|(file, _)| *file == own.source.0) {
        true => Ok(lines),
        false => Err("its preprocessed text holds no line of the source".into()),
    }
}

/// The preprocessed text, or why there is none (the compiler's first lines of complaint).
fn preprocess(mut command: Command) -> Result<String, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let out = command.stdin(Stdio::null()).output().map_err(|e| format!("{program}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).take(3).collect();
        return Err(format!("{program} failed: {}", said.join(" / ")));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The (file, line) of every line of `own` files that gives the preprocessed text a token or
/// a directive passed on,
/// read through its line markers (`# 12 "file" flags`, GCC's and clang's alike; their flags
/// are not read: a header's `#pragma GCC system_header` makes it no less the kernel's).
fn active_lines(text: &str, own: &Own) -> BTreeSet<(PathBuf, u32)> {
    let mut resolved: HashMap<String, Option<PathBuf>> = HashMap::new();
    let mut current: Option<PathBuf> = None;
    let mut line = 0u32;
    let mut active = BTreeSet::new();
    for text_line in text.split('\n') {
        if let Some((number, name)) = line_marker(text_line) {
            current = resolved.entry(name.clone()).or_insert_with(|| own.resolve(&name)).clone();
            line = number;
            continue;
        }
        // code, and the directives the preprocessor passes on (`#define`, `#undef`, `#pragma`)
        if let Some(file) = &current
            && !text_line.trim().is_empty()
        {
            active.insert((file.clone(), line));
        }
        line += 1;
    }
    active
}

/// `# 12 "kernels/x.hip" 2` as (12, the file's name unescaped).
fn line_marker(line: &str) -> Option<(u32, String)> {
    let rest = line.strip_prefix("# ").or_else(|| line.strip_prefix("#line "))?;
    let (number, rest) = rest.split_once(' ')?;
    let number = number.parse().ok()?;
    let quoted = rest.strip_prefix('"')?;
    let mut name = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some((number, name)),
            '\\' => {
                let escaped = chars.next()?;
                if escaped.is_digit(8) {
                    let digits: String = std::iter::once(escaped).chain(chars.clone().take_while(|c| c.is_digit(8)).take(2)).collect();
                    for _ in 1..digits.len() {
                        chars.next();
                    }
                    name.push(u8::from_str_radix(&digits, 8).ok()? as char);
                } else {
                    name.push(escaped);
                }
            }
            c => name.push(c),
        }
    }
    None
}

/// The lines by file, each file's in order.
fn by_file<'a>(lines: impl Iterator<Item = &'a (PathBuf, u32)>) -> BTreeMap<PathBuf, Vec<u32>> {
    let mut files: BTreeMap<PathBuf, Vec<u32>> = BTreeMap::new();
    for (file, line) in lines {
        files.entry(file.clone()).or_default().push(*line);
    }
    files
}

/// `line 7` or `lines 7-9, 12`.
fn described(lines: &[u32]) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &line in lines {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == line => *end = line,
            _ => ranges.push((line, line)),
        }
    }
    let words: Vec<String> = ranges.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    format!("{} {}", if lines.len() == 1 { "line" } else { "lines" }, words.join(", "))
}

/// The first directive of `text` that can make two builds of it compile other lines, with its
/// line and name: a conditional (`#if`, `#ifdef`, `#elif`...), a computed `#include`, and any
/// directive but `#define`, `#undef`, `#pragma`, `#error`, `#warning` and `#include` of a
/// quoted or bracketed name. Read as the preprocessor does where it matters: backslash-newlines
/// joined, comments before the `#` and between it and the name skipped (one that starts a line
/// and ends on a later one leaves that `#` first on its line), `%:` as `#`. Where it is unsure
/// (a raw string's lines), it says yes: a yes costs three preprocessings, a no would let a
/// target's `#if` through.
fn first_divergent_directive(bytes: &[u8]) -> Option<(usize, String)> {
    // physical line numbers of the joined text's bytes
    let mut joined = Vec::with_capacity(bytes.len());
    let mut line_of = Vec::with_capacity(bytes.len());
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            let mut j = i + 1;
            if bytes.get(j) == Some(&b'\r') {
                j += 1;
            }
            if bytes.get(j) == Some(&b'\n') {
                line += 1;
                i = j + 1;
                continue;
            }
        }
        joined.push(bytes[i]);
        line_of.push(line);
        if bytes[i] == b'\n' {
            line += 1;
        }
        i += 1;
    }
    let text = &joined;
    let mut at = 0;
    while at < text.len() {
        // the line's first token, past blanks and comments
        at = skip_blanks_and_comments(text, at);
        let hash_at = at;
        let hash = if text[at..].starts_with(b"#") {
            Some(at + 1)
        } else if text[at..].starts_with(b"%:") {
            Some(at + 2)
        } else {
            None
        };
        if let Some(after) = hash {
            let name_at = skip_blanks_and_comments(text, after);
            let name: String =
                text[name_at..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').map(|&b| b as char).collect();
            let rest_at = skip_blanks_and_comments(text, name_at + name.len());
            let plain_include = name == "include" && matches!(text.get(rest_at), Some(b'"' | b'<'));
            let harmless = matches!(name.as_str(), "" | "define" | "undef" | "pragma" | "error" | "warning") || plain_include;
            if !harmless {
                return Some((line_of[hash_at], name));
            }
        }
        // on to the next line
        match text[at..].iter().position(|&b| b == b'\n') {
            Some(offset) => at += offset + 1,
            None => break,
        }
    }
    None
}

/// `at` moved past blanks (not a newline) and comments (a block comment across lines too).
fn skip_blanks_and_comments(text: &[u8], mut at: usize) -> usize {
    loop {
        while at < text.len() && matches!(text[at], b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c') {
            at += 1;
        }
        if text[at..].starts_with(b"/*") {
            match text[at + 2..].windows(2).position(|w| w == b"*/") {
                Some(end) => at += 2 + end + 2,
                None => return text.len(),
            }
        } else if text[at..].starts_with(b"//") {
            // to the end of the line: nothing more on it
            return at + text[at..].iter().position(|&b| b == b'\n').unwrap_or(text.len() - at);
        } else {
            return at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(text: &str) -> Option<(usize, String)> {
        first_divergent_directive(text.as_bytes())
    }

    #[test]
    fn a_directive_that_can_make_builds_differ_is_found_however_it_is_written() {
        assert_eq!(first("#include \"common.h\"\n#define A 1\n#pragma once\nint x;\n"), None);
        assert_eq!(first("int x;\n#if A\n#endif\n"), Some((2, "if".into())));
        assert_eq!(first("  #  ifdef __CUDA_ARCH__\n"), Some((1, "ifdef".into())));
        assert_eq!(first("%:ifndef X\n"), Some((1, "ifndef".into())));
        assert_eq!(first("/* a */ # /* b */ elif X\n"), Some((1, "elif".into())));
        // a comment that starts its line and ends on a later one leaves the `#` first on it
        assert_eq!(first("int y;\n/* one\n two */ #if X\n"), Some((3, "if".into())));
        // a backslash-newline between `#` and the name
        assert_eq!(first("x\n#\\\nif X\n"), Some((2, "if".into())));
        assert_eq!(first("#include MACRO\n"), Some((1, "include".into())));
        assert_eq!(first("#line 7 \"other.hip\"\n"), Some((1, "line".into())));
        assert_eq!(first("# 20 \"other.hip\"\n"), Some((1, "20".into())));
        assert!(renumbers("line") && renumbers("20") && !renumbers("if") && !renumbers("include"));
        // not first on its line: no directive
        assert_eq!(first("int z; #if X\n"), None);
        assert_eq!(first("// #if X\n"), None);
    }

    /// Every kernel, control and test kernel of the repository, compared whether or not it has
    /// a directive: the three preprocessors must map every line alike (no finding for a source
    /// without a target's `#if`), and those that branch on the target must be found.
    #[test]
    fn the_repositorys_sources_compile_the_same_lines_on_every_target_unless_they_branch_on_it() {
        if !crate::toolchain::available_for_test(crate::toolchain::Toolchain::AmdgpuClang) {
            return;
        }
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let compiler = super::super::compile::HostCompiler::discover().unwrap();
        let flags = compiler.flags(32, super::super::compile::BuildMode::Normal);
        let prelude = root.join("kernels/host/prelude.h");
        let work = tempfile::tempdir().unwrap();
        let mut sources: Vec<PathBuf> = ["kernels", "controls", "src/backend/host/test_kernels"]
            .iter()
            .flat_map(|folder| std::fs::read_dir(root.join(folder)).unwrap().map(|e| e.unwrap().path()))
            .filter(|p| p.extension().is_some_and(|e| e == "hip"))
            .collect();
        sources.sort();
        let results: Vec<(String, bool, Vec<String>)> = {
            use rayon::prelude::*;
            sources
                .par_iter()
                .map(|path| {
                    let display = path.strip_prefix(&root).unwrap().display().to_string();
                    let source = KernelSource {
                        path: path.clone(),
                        display_path: display.clone(),
                        kernels: vec![],
                        include_dirs: vec![root.join("kernels"), root.join("kernels/hip-headers")],
                    };
                    let branches = first_divergent_directive(&std::fs::read(path).unwrap()).is_some();
                    let shown = |f: &Path| f.strip_prefix(&root).map(|r| r.display().to_string()).unwrap_or_default();
                    // the host's preprocessing as the build's, without its wrapper and copy
                    let host = || {
                        let mut command = Command::new(&compiler.program);
                        command
                            .args(&flags)
                            .args(includes(&source))
                            .arg("-include")
                            .arg(&prelude)
                            .args(PREPROCESS)
                            .args(["-x", "c++"])
                            .arg(path);
                        command
                    };
                    let builds = Builds {
                        host: &host,
                        host_program: &compiler.program,
                        host_flags: &flags,
                        host_prelude: &prelude,
                        host_toolchain: &[],
                        work: work.path(),
                    };
                    (display, branches, compare(&source, &builds, "(test)", &shown))
                })
                .collect()
        };
        assert!(results.len() > 90, "{}", results.len());
        for (display, branches, findings) in &results {
            if !branches {
                assert!(findings.is_empty(), "{display}: {findings:?}");
            }
        }
        let branching: Vec<&String> = results.iter().filter(|(_, b, f)| *b && !f.is_empty()).map(|(d, _, _)| d).collect();
        assert!(branching.contains(&&"controls/add_host_path_in_plain_code.hip".to_string()), "{branching:?}");
    }

    #[test]
    fn line_markers_of_gcc_and_clang_are_read_and_code_lines_counted() {
        let own = Own {
            system: vec![PathBuf::from("/nonexistent/system")],
            toolchain: [PathBuf::from("/nonexistent/host/prelude.h")].into(),
            work: PathBuf::from("/nonexistent/work"),
            source: (PathBuf::from("/nonexistent/k.hip"), "kernels/k.hip".into()),
        };
        // the copy's `#line` name, the build folder's wrapper, a system header, a prelude, and
        // a header of the kernel's that calls itself a system header
        let text = "# 1 \"kernels/k.hip\"\nint a;\n\n# 5 \"/nonexistent/k.hip\"\nint b;\n#pragma unroll\n#define KEEP 1\n\
                    # 2 \"wrap.cpp\"\nint w;\n# 1 \"/nonexistent/system/x.h\" 1 3\nint c;\n\
                    # 1 \"/nonexistent/host/prelude.h\" 1\nint d;\n# 3 \"/nonexistent/own.h\" 1 3\nint e;\n";
        let lines: Vec<(PathBuf, u32)> = active_lines(text, &own).into_iter().collect();
        // code, a pragma and a macro's definition (`-dD`) count
        let at = |line| (PathBuf::from("/nonexistent/k.hip"), line);
        assert_eq!(lines, [at(1), at(5), at(6), at(7), (PathBuf::from("/nonexistent/own.h"), 3)]);
        assert_eq!(line_marker("# 3 \"a\\\"b\\\\c\\012d\" 1 3"), Some((3, "a\"b\\c\nd".into())));
        assert_eq!(described(&[7]), "line 7");
        assert_eq!(described(&[7, 8, 9, 12]), "lines 7-9, 12");
    }
}
