//! Confinement: every file the run reads on a contract's or control's behalf (the contract
//! and control files found in their folders, a control's kernel, an op's kernel, and each
//! header a kernel source includes) must resolve, after following symlinks, inside the
//! repository root or a folder the user gave on the command line. What does not is refused
//! before anything reads it.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Escape {
    #[error("`{shown}` resolves outside the repository and the folders given on the command line (to {target})")]
    Outside { shown: String, target: String },
    #[error("`{shown}` cannot be resolved: {reason}")]
    Unresolved { shown: String, reason: String },
    #[error("{file}:{line} includes `{name}`, {why}")]
    Include { file: String, line: usize, name: String, why: String },
}

/// The folders paths may resolve into, each as the file system names it (symlinks followed).
#[derive(Clone, Debug)]
pub struct Confinement {
    folders: Vec<PathBuf>,
}

impl Confinement {
    /// Folders that do not exist are left out: nothing can resolve into them.
    pub fn new<'a>(folders: impl IntoIterator<Item = &'a Path>) -> Confinement {
        Confinement { folders: folders.into_iter().filter_map(|f| f.canonicalize().ok()).collect() }
    }

    /// `path` with every symlink followed, when that lies inside a confining folder;
    /// `shown` is how a message names it (relative to the root).
    pub fn resolve(&self, path: &Path, shown: &str) -> Result<PathBuf, Escape> {
        let real = path.canonicalize().map_err(|e| Escape::Unresolved { shown: shown.to_string(), reason: e.to_string() })?;
        if self.contains(&real) {
            Ok(real)
        } else {
            Err(Escape::Outside { shown: shown.to_string(), target: crate::text::escaped(&real.display().to_string()).into_owned() })
        }
    }

    fn contains(&self, real: &Path) -> bool {
        self.folders.iter().any(|f| real.starts_with(f))
    }

    /// Every header `source` includes, and every header they include, found where the
    /// compiler would look (a quoted name beside the including file first, then in
    /// `include_dirs`), must resolve inside. A name found nowhere there is the compiler's
    /// own (`<cstdint>`), allowed only when it is relative and climbs no folder. The check
    /// reads directives as written: an include through a macro cannot be followed, so it is
    /// refused.
    pub fn includes(&self, source: &Path, shown: &str, include_dirs: &[PathBuf]) -> Result<(), Escape> {
        let mut seen = BTreeSet::new();
        self.includes_of(source, shown, include_dirs, &mut seen)
    }

    fn includes_of(&self, file: &Path, shown: &str, include_dirs: &[PathBuf], seen: &mut BTreeSet<PathBuf>) -> Result<(), Escape> {
        if !seen.insert(file.to_path_buf()) {
            return Ok(());
        }
        let Ok(bytes) = std::fs::read(file) else { return Ok(()) };
        let beside = file.parent().map(Path::to_path_buf);
        for (line, directive) in directives(&String::from_utf8_lossy(&bytes)) {
            let refuse = |name: &str, why: &str| Escape::Include {
                file: shown.to_string(),
                line,
                name: crate::text::escaped(name).into_owned(),
                why: why.to_string(),
            };
            let (name, quoted) = match directive {
                Directive::Quoted(name) => (name, true),
                Directive::Angled(name) => (name, false),
                Directive::Unreadable(text) => {
                    return Err(refuse(&text, "which names no file as written (a macro?): the harness cannot check where it leads"));
                }
            };
            let relative = Path::new(&name);
            if relative.is_absolute() {
                return Err(refuse(&name, "an absolute path: a kernel includes headers of the repository by relative name"));
            }
            let searched = beside.iter().filter(|_| quoted).chain(include_dirs);
            match searched.map(|dir| dir.join(relative)).find(|p| p.exists()) {
                Some(found) => {
                    let real = found.canonicalize().map_err(|e| refuse(&name, &e.to_string()))?;
                    if !self.contains(&real) {
                        let target = crate::text::escaped(&real.display().to_string()).into_owned();
                        return Err(refuse(&name, &format!("which resolves outside the repository (to {target})")));
                    }
                    self.includes_of(&real, &name, include_dirs, seen)?;
                }
                None if relative.components().any(|c| c == Component::ParentDir) => {
                    return Err(refuse(&name, "which climbs out of every include folder"));
                }
                None => {}
            }
        }
        Ok(())
    }
}

#[derive(Debug, PartialEq)]
enum Directive {
    Quoted(String),
    Angled(String),
    /// What follows the directive when it is not a header name.
    Unreadable(String),
}

/// The include directives of a C++ source (`#include`, `#include_next`, `#import`,
/// `#embed`), each with its 1-based line.
fn directives(text: &str) -> Vec<(usize, Directive)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix('#') else { continue };
        let rest = rest.trim_start();
        let word_end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if !matches!(&rest[..word_end], "include" | "include_next" | "import" | "embed") {
            continue;
        }
        let operand = rest[word_end..].trim();
        let header = |open: char, close: char| operand.strip_prefix(open).and_then(|r| r.split_once(close)).map(|(name, _)| name);
        let directive = match (header('"', '"'), header('<', '>')) {
            (Some(name), _) => Directive::Quoted(name.to_string()),
            (_, Some(name)) => Directive::Angled(name.to_string()),
            _ => Directive::Unreadable(crate::text::escaped(operand).into_owned()),
        };
        found.push((i + 1, directive));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with kernels/common.h and a folder beside it, outside.
    struct Layout {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn layout() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, outside) = (base.join("repo"), base.join("outside"));
        for d in [root.join("kernels"), root.join("controls"), outside.clone()] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(root.join("kernels/common.h"), "#pragma once\n").unwrap();
        std::fs::write(outside.join("secret.h"), "int secret;\n").unwrap();
        Layout { _dir: dir, root, outside }
    }

    #[test]
    fn a_path_resolves_inside_or_is_refused_naming_where_it_leads() {
        let l = layout();
        let confined = Confinement::new([l.root.as_path()]);
        assert!(confined.resolve(&l.root.join("kernels/common.h"), "kernels/common.h").is_ok());
        let link = l.root.join("controls/k.hip");
        std::os::unix::fs::symlink(l.outside.join("secret.h"), &link).unwrap();
        let e = confined.resolve(&link, "controls/k.hip").unwrap_err();
        assert!(matches!(&e, Escape::Outside { target, .. } if target.ends_with("outside/secret.h")), "{e}");
        let e = confined.resolve(&l.root.join("controls/none.hip"), "controls/none.hip").unwrap_err();
        assert!(matches!(e, Escape::Unresolved { .. }), "{e}");
        // a folder the user gave opens what lies in it
        assert!(Confinement::new([l.root.as_path(), l.outside.as_path()]).resolve(&link, "controls/k.hip").is_ok());
    }

    #[test]
    fn includes_are_followed_where_the_compiler_looks_and_must_stay_inside() {
        let l = layout();
        let confined = Confinement::new([l.root.as_path()]);
        let dirs = [l.root.join("kernels")];
        let source = l.root.join("controls/k.hip");
        let check = |text: &str| {
            std::fs::write(&source, text).unwrap();
            confined.includes(&source, "controls/k.hip", &dirs)
        };
        assert_eq!(check("#include \"common.h\"\n#include <cstdint>\n  #  include <stdio.h>\n"), Ok(()));
        let e = check("// x\n#include \"../../outside/secret.h\"\n").unwrap_err();
        assert!(matches!(&e, Escape::Include { line: 2, why, .. } if why.contains("resolves outside")), "{e}");
        let e = check("#include \"/etc/hostname\"\n").unwrap_err();
        assert!(e.to_string().contains("an absolute path"), "{e}");
        let e = check("#include <../../no/such/header.h>\n").unwrap_err();
        assert!(e.to_string().contains("climbs out of every include folder"), "{e}");
        let e = check("#define H \"x.h\"\n#include H\n").unwrap_err();
        assert!(matches!(&e, Escape::Include { line: 2, name, .. } if name == "H"), "{e}");
        // through a header of the repository that includes what lies outside
        std::fs::write(l.root.join("kernels/common.h"), "#include \"../../outside/secret.h\"\n").unwrap();
        let e = check("#include \"common.h\"\n").unwrap_err();
        assert!(e.to_string().starts_with("common.h:1 includes `../../outside/secret.h`, which resolves outside"), "{e}");
        // a header that is a symlink out
        std::fs::write(l.root.join("kernels/common.h"), "\n").unwrap();
        std::os::unix::fs::symlink(l.outside.join("secret.h"), l.root.join("kernels/linked.h")).unwrap();
        assert!(check("#embed \"linked.h\"\n").unwrap_err().to_string().contains("resolves outside"));
    }
}
