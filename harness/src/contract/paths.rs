//! Paths a contract names (`[kernel] source`, `[kernel] include`, `[reference] reference`):
//! relative to the kernels folder (`--kernels`), or, written with a leading `./` or `../`, to
//! the contract file's own folder. Never absolute, and `..` only at the start of a path from
//! the contract's folder. Where a path leads is confined by the runner (inside the root or a
//! folder given on the command line), once every symlink is followed.

use std::path::{Component, Path, PathBuf};

use super::{ContractError, Source};

/// A path as a contract gives it, with where it is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractPath {
    pub text: String,
    pub key: String,
    pub line: usize,
}

impl ContractPath {
    /// `text` at `key`, if it is a path a contract may name.
    pub(crate) fn parse(source: &Source, at: usize, key: &str, text: &str) -> Result<ContractPath, ContractError> {
        let refuse = |why: &str| {
            source.error(
                at,
                key,
                format!(
                    "`{text}`: {why} (a path from the kernels folder, `kernels/x.hip` as `x.hip`, or from the contract's own \
                     folder, starting with `./` or `../`)"
                ),
            )
        };
        let path = Path::new(text);
        if text.is_empty() || path.is_absolute() {
            return Err(refuse("an absolute path or none"));
        }
        let from_contract = text.starts_with("./") || text.starts_with("../");
        let mut named = false;
        for component in path.components() {
            match component {
                Component::Normal(_) => named = true,
                Component::CurDir if from_contract && !named => {}
                Component::ParentDir if from_contract && !named => {}
                _ => return Err(refuse("`..` or `.` in its middle")),
            }
        }
        if !named {
            return Err(refuse("no file or folder named"));
        }
        Ok(ContractPath { text: text.to_string(), key: key.to_string(), line: source.line_of(at) })
    }

    /// Whether it is named from the contract's own folder.
    pub fn from_contract(&self) -> bool {
        self.text.starts_with("./") || self.text.starts_with("../")
    }

    /// Where it leads, before symlinks: under `contract_dir` or `kernels_dir`, its `.` and
    /// `..` taken away by name (`contracts/../ref/x.cpp` is `ref/x.cpp`), so that reports, and
    /// the compiler's file names, name it as the repository does.
    pub fn resolve(&self, kernels_dir: &Path, contract_dir: &Path) -> PathBuf {
        let joined = if self.from_contract() { contract_dir.join(&self.text) } else { kernels_dir.join(&self.text) };
        let mut out = PathBuf::new();
        for component in joined.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir if out.file_name().is_some() => {
                    out.pop();
                }
                other => out.push(other),
            }
        }
        out
    }

    /// An error at the key that names it.
    pub fn error(&self, file: &str, message: impl Into<String>) -> ContractError {
        ContractError { file: file.to_string(), line: self.line, key: self.key.clone(), message: message.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ContractPath, ContractError> {
        ContractPath::parse(&Source { file: "c.toml", text: "source = 1\n" }, 0, "kernel.source", text)
    }

    #[test]
    fn a_path_is_from_the_kernels_folder_or_from_the_contracts_own() {
        let kernels = parse("lib/x.hip").unwrap();
        assert!(!kernels.from_contract());
        assert_eq!(kernels.resolve(Path::new("/k"), Path::new("/c")), Path::new("/k/lib/x.hip"));
        let beside = parse("./x.hip").unwrap();
        assert_eq!(beside.resolve(Path::new("/k"), Path::new("/c")), Path::new("/c/x.hip"));
        let up = parse("../ref/x.cpp").unwrap();
        assert_eq!(up.resolve(Path::new("/k"), Path::new("/r/contracts")), Path::new("/r/ref/x.cpp"));
        assert!(parse("../../vendor/x.hip").unwrap().from_contract());
        for bad in ["", "/etc/x.hip", "lib/../x.hip", "../x/../y.hip", "./", ".."] {
            let e = parse(bad).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), ("kernel.source", 1), "{bad}: {e}");
        }
    }
}
