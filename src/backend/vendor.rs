//! Finding and opening the vendor libraries (libcuda, NVRTC, cuBLAS, libamdhip64, hiprtc,
//! rocBLAS) one way: one candidate list per library (a path given by an option or by the
//! library's environment variable is the only candidate; a folder variable is the only place
//! looked in; else the library's sonames and the toolkit's folders), and one memoised open per
//! library and list. A failure names the library and every candidate tried with why each
//! failed, and how to get the library.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::EngineError;
use crate::backend::cuda::sys::Dylib;

/// A vendor library the engine opens at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vendor {
    Libcuda,
    Nvrtc,
    Cublas,
    Amdhip64,
    Hiprtc,
    Rocblas,
}

/// Folders the CUDA toolkit installs its libraries in.
const CUDA_FOLDERS: &[&str] = &["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"];

impl Vendor {
    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Vendor::Libcuda => "libcuda",
            Vendor::Nvrtc => "NVRTC",
            Vendor::Cublas => "cuBLAS",
            Vendor::Amdhip64 => "libamdhip64",
            Vendor::Hiprtc => "hiprtc",
            Vendor::Rocblas => "rocBLAS",
        }
    }

    /// The environment variable that names the library itself (its only candidate when set).
    pub fn env(self) -> Option<&'static str> {
        match self {
            Vendor::Libcuda => Some("KERNEL_CONTRACTS_LIBCUDA"),
            Vendor::Nvrtc => Some("KERNEL_CONTRACTS_NVRTC"),
            Vendor::Cublas => None,
            Vendor::Amdhip64 => Some("KERNEL_CONTRACTS_LIBAMDHIP64"),
            Vendor::Hiprtc => Some("KERNEL_CONTRACTS_LIBHIPRTC"),
            Vendor::Rocblas => Some("KERNEL_CONTRACTS_LIBROCBLAS"),
        }
    }

    /// The environment variable that names the one folder looked in.
    pub fn env_dir(self) -> Option<&'static str> {
        match self {
            Vendor::Nvrtc => Some("KERNEL_CONTRACTS_NVRTC_DIR"),
            Vendor::Cublas => Some("KERNEL_CONTRACTS_CUBLAS_DIR"),
            _ => None,
        }
    }

    /// Sonames in the order tried.
    pub fn sonames(self) -> &'static [&'static str] {
        match self {
            Vendor::Libcuda => &["libcuda.so.1"],
            Vendor::Nvrtc => &["libnvrtc.so.13", "libnvrtc.so.12"],
            Vendor::Cublas => &["libcublas.so.13", "libcublas.so.12"],
            // the dev symlink, ROCm 7, ROCm 6, ROCm 5 (Debian 12's libamdhip64-5)
            Vendor::Amdhip64 => &["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"],
            // ROCm 5.x has none: its hiprtc symbols live in libamdhip64 (the hip backend adds it)
            Vendor::Hiprtc => &["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"],
            // the dev symlink, ROCm 7, ROCm 6, Debian's packaging of ROCm 5.x
            Vendor::Rocblas => &["librocblas.so", "librocblas.so.5", "librocblas.so.4", "librocblas.so.0"],
        }
    }

    /// How to get it, said after the candidates.
    fn hint(self) -> &'static str {
        match self {
            Vendor::Libcuda => "no NVIDIA driver here? the cuda backend needs libcuda.so.1 (KERNEL_CONTRACTS_LIBCUDA names another)",
            Vendor::Nvrtc => crate::backend::cuda::nvrtc::NVRTC_INSTALL,
            Vendor::Cublas => "set KERNEL_CONTRACTS_CUBLAS_DIR to the folder of libcublas.so.13",
            Vendor::Amdhip64 => {
                "no ROCm here? the hip backend needs ROCm 6.3 or later; KERNEL_CONTRACTS_LIBAMDHIP64 names another libamdhip64"
            }
            Vendor::Hiprtc => "hiprtc comes with ROCm 6.3+ as libhiprtc.so.6/.7; KERNEL_CONTRACTS_LIBHIPRTC names another",
            Vendor::Rocblas => "rocBLAS comes with ROCm 6.3+; KERNEL_CONTRACTS_LIBROCBLAS names another",
        }
    }

    /// Folders looked in after the sonames (which the dynamic loader searches).
    fn folders(self) -> Vec<PathBuf> {
        match self {
            Vendor::Nvrtc | Vendor::Cublas => CUDA_FOLDERS.iter().map(PathBuf::from).collect(),
            _ => Vec::new(),
        }
    }

    /// Every candidate, in order: `given` (an option's path) alone, else the environment
    /// variable's path alone, else the sonames in the folder variable's folder alone, else
    /// the sonames, then each folder's.
    pub fn candidates(self, given: Option<&str>) -> Vec<String> {
        let set = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        if let Some(path) = given.map(str::to_string).or_else(|| self.env().and_then(set)) {
            return vec![path];
        }
        let in_folder = |dir: &Path| self.sonames().iter().map(|n| dir.join(n).display().to_string()).collect::<Vec<_>>();
        if let Some(dir) = self.env_dir().and_then(set) {
            return in_folder(Path::new(&dir));
        }
        let mut out: Vec<String> = self.sonames().iter().map(|n| n.to_string()).collect();
        for folder in self.folders() {
            out.extend(in_folder(&folder));
        }
        if self == Vendor::Nvrtc {
            // where `cargo xtask setup` installs the PyPI wheel, so a plain `cargo test` finds it
            if let Some(venv) = crate::backend::cuda::nvrtc::wheel_venv() {
                let dirs = crate::backend::cuda::nvrtc::wheel_lib_dirs(&venv);
                out.extend(dirs.iter().rev().map(|d| d.join("libnvrtc.so.13").display().to_string()));
            }
        }
        out
    }

    /// A library opened first, globally, beside a candidate given as a path, so that the
    /// candidate's own dlopen of it by soname succeeds: NVRTC's builtins, cuBLAS's Lt.
    fn companion(self, candidate: &Path) -> Option<PathBuf> {
        let dir = candidate.parent().filter(|d| !d.as_os_str().is_empty())?;
        let file = candidate.file_name()?.to_str()?;
        match self {
            Vendor::Nvrtc => {
                let major = file.strip_prefix("libnvrtc.so.")?.split('.').next()?;
                let prefix = format!("libnvrtc-builtins.so.{major}.");
                let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
                    .ok()?
                    .filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.file_name().and_then(|f| f.to_str()).is_some_and(|f| f.starts_with(&prefix)))
                    .collect();
                found.sort();
                found.pop()
            }
            Vendor::Cublas => Some(dir.join(file.replace("libcublas.", "libcublasLt."))).filter(|p| p.is_file()),
            _ => None,
        }
    }
}

/// An opened library, with the companion opened before it (both kept for the process's life:
/// the functions resolved from them are used until it ends).
struct Opened {
    library: Arc<Dylib>,
    _companion: Option<Dylib>,
}

/// Libraries opened so far, by vendor and candidate list.
type OpenedByList = HashMap<(Vendor, Vec<String>), Opened>;

/// Every library opened so far.
static OPENED: Mutex<Option<OpenedByList>> = Mutex::new(None);

/// The first of `candidates` that opens and that `usable` accepts (its required symbols
/// resolve), opened once per vendor and list: a later call gets the same library. A failure
/// names the library, every candidate with why it failed, and the vendor's hint; a failure is
/// not remembered (the next call tries again).
pub fn open(vendor: Vendor, candidates: &[String], usable: &dyn Fn(&Dylib) -> Result<(), EngineError>) -> Result<Arc<Dylib>, EngineError> {
    let key = (vendor, candidates.to_vec());
    if let Some(opened) = OPENED.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashMap::new).get(&key) {
        return Ok(opened.library.clone());
    }
    let mut reasons = Vec::new();
    for name in candidates {
        let companion = vendor.companion(Path::new(name)).and_then(|path| Dylib::open(&path.display().to_string(), true).ok());
        match Dylib::open(name, false) {
            Ok(library) => match usable(&library) {
                Ok(()) => {
                    let library = Arc::new(library);
                    let mut opened = OPENED.lock().unwrap_or_else(|p| p.into_inner());
                    let entry = opened
                        .get_or_insert_with(HashMap::new)
                        .entry(key)
                        .or_insert(Opened { library: library.clone(), _companion: companion });
                    return Ok(entry.library.clone());
                }
                // the only candidate: its own error (a missing symbol) says it best
                Err(e) if candidates.len() == 1 => return Err(e),
                Err(e) => reasons.push(format!("{name}: {e}")),
            },
            Err(reason) => reasons.push(if reason.contains(name.as_str()) { reason } else { format!("{name}: {reason}") }),
        }
    }
    Err(EngineError::LoadLibrary {
        library: format!("{} ({})", vendor.name(), candidates.join(" or ")),
        reason: format!("{}; {}", reasons.join("; "), vendor.hint()),
    })
}

/// [`open`] accepting any library that opens.
pub fn open_any(vendor: Vendor, candidates: &[String]) -> Result<Arc<Dylib>, EngineError> {
    open(vendor, candidates, &|_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_path_is_the_only_candidate_and_the_defaults_are_sonames_then_folders() {
        assert_eq!(Vendor::Amdhip64.candidates(Some("/opt/x/libamdhip64.so.6")), ["/opt/x/libamdhip64.so.6"]);
        assert_eq!(Vendor::Rocblas.candidates(Some("librocblas.so.4")), ["librocblas.so.4"]);
        if std::env::var_os("KERNEL_CONTRACTS_CUBLAS_DIR").is_none() {
            let cublas = Vendor::Cublas.candidates(None);
            assert_eq!(&cublas[..2], ["libcublas.so.13", "libcublas.so.12"]);
            assert!(cublas[2].starts_with("/usr/local/cuda/lib64/"), "{cublas:?}");
        }
    }

    #[test]
    fn a_failure_names_the_library_and_every_candidate_with_its_reason() {
        let candidates = vec!["libkernel-contracts-none.so.7".to_string(), "/nonexistent/libkernel-contracts-none.so.6".to_string()];
        let e = open_any(Vendor::Rocblas, &candidates).unwrap_err().to_string();
        assert!(e.contains("rocBLAS (libkernel-contracts-none.so.7 or /nonexistent/libkernel-contracts-none.so.6)"), "{e}");
        assert!(e.matches("libkernel-contracts-none.so").count() >= 4, "each candidate is named with its reason: {e}");
        assert!(e.contains("KERNEL_CONTRACTS_LIBROCBLAS"), "{e}");
    }

    #[test]
    fn a_library_is_opened_once_per_vendor_and_list() {
        let candidates = vec!["libm.so.6".to_string()];
        let first = open_any(Vendor::Rocblas, &candidates).unwrap();
        let second = open_any(Vendor::Rocblas, &candidates).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        let refused = open(Vendor::Hiprtc, &["libm.so.6".to_string(), "libc.so.6".to_string()], &|lib| {
            if lib.name == "libm.so.6" { Err(EngineError::Buffer("not this one".into())) } else { Ok(()) }
        })
        .unwrap();
        assert_eq!(refused.name, "libc.so.6", "a candidate `usable` refuses is passed over");
    }
}
