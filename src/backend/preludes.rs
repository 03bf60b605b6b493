//! The backend preludes and the HIP header shims, built into the binary, so that a kernels
//! folder of any library (`--kernels` pointing at another engine's sources) compiles with
//! them. A kernels folder that holds `host/prelude.h` brings its own (the repository's does,
//! so an edit to a prelude takes effect at once); any other gets the copies built in, written
//! once under the kernel cache in a folder named by their hash.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::EngineError;

/// Each file as it lies under a kernels folder, and its text at build time.
const FILES: &[(&str, &str)] = &[
    ("host/prelude.h", include_str!("../../kernels/host/prelude.h")),
    ("hip/prelude.h", include_str!("../../kernels/hip/prelude.h")),
    ("hip/hiprtc_prelude.h", include_str!("../../kernels/hip/hiprtc_prelude.h")),
    ("cuda/prelude.h", include_str!("../../kernels/cuda/prelude.h")),
    ("hip-headers/hip/kernel_contracts_detail.h", include_str!("../../kernels/hip-headers/hip/kernel_contracts_detail.h")),
    ("hip-headers/hip/hip_vector_types.h", include_str!("../../kernels/hip-headers/hip/hip_vector_types.h")),
    ("hip-headers/hip/hip_runtime.h", include_str!("../../kernels/hip-headers/hip/hip_runtime.h")),
    ("hip-headers/hip/hip_fp16.h", include_str!("../../kernels/hip-headers/hip/hip_fp16.h")),
    ("hip-headers/hip/hip_bf16.h", include_str!("../../kernels/hip-headers/hip/hip_bf16.h")),
    ("hip-headers/hip/hip_bfloat16.h", include_str!("../../kernels/hip-headers/hip/hip_bfloat16.h")),
];

/// The preludes' and header shims' files under a kernels folder (`host/prelude.h`, ...).
pub fn file_names() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(name, _)| *name)
}

/// Where a run's preludes and HIP header shims are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preludes {
    /// The folder they lie under (the kernels folder, or the copy in the cache).
    pub folder: PathBuf,
    /// Whether they are the copies built into the binary.
    pub built_in: bool,
}

impl Preludes {
    /// The kernels folder's own when it has `host/prelude.h`, else the built-in copies, written
    /// under `cache_dir` if they are not there yet.
    pub fn locate(kernels_dir: &Path, cache_dir: &Path) -> Result<Preludes, EngineError> {
        if kernels_dir.join("host/prelude.h").is_file() {
            return Ok(Preludes { folder: kernels_dir.to_path_buf(), built_in: false });
        }
        let folder = cache_dir.join("preludes").join(built_in_hash());
        for (name, text) in FILES {
            write_once(&folder.join(name), text)?;
        }
        Ok(Preludes { folder, built_in: true })
    }

    /// `kernels/host/prelude.h`: the host backend's (and the static offset checks').
    pub fn host(&self) -> PathBuf {
        self.folder.join("host/prelude.h")
    }

    /// `kernels/hip/prelude.h`: the static gfx1201 build's (clang, no ROCm).
    pub fn hip_static(&self) -> PathBuf {
        self.folder.join("hip/prelude.h")
    }

    /// `kernels/hip/hiprtc_prelude.h`: the hip backend's (hiprtc, with ROCm's headers).
    pub fn hiprtc(&self) -> PathBuf {
        self.folder.join("hip/hiprtc_prelude.h")
    }

    /// `kernels/cuda/prelude.h`: NVRTC's.
    pub fn cuda(&self) -> PathBuf {
        self.folder.join("cuda/prelude.h")
    }

    /// `kernels/hip-headers`: `hip/hip_runtime.h`, `hip/hip_fp16.h`, `hip/hip_bf16.h` and
    /// `hip/hip_bfloat16.h` for the host, the static gfx1201 build and NVRTC (an include
    /// folder after the source's own; hiprtc has ROCm's).
    pub fn hip_headers(&self) -> PathBuf {
        self.folder.join("hip-headers")
    }
}

/// Whether `dir` is a folder of the HIP header shims: a backend with ROCm's own headers
/// (hiprtc) leaves it off its include path.
pub fn is_hip_headers(dir: &Path) -> bool {
    dir.join("hip/kernel_contracts_detail.h").is_file()
}

/// The first 16 hex digits of the hash of every built-in file, names and texts.
fn built_in_hash() -> String {
    let mut hash = Sha256::new();
    for (name, text) in FILES {
        hash.update((name.len() as u64).to_le_bytes());
        hash.update(name.as_bytes());
        hash.update((text.len() as u64).to_le_bytes());
        hash.update(text.as_bytes());
    }
    hash.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `text` at `path` unless it holds it already, by rename from a name of this process
/// (so a concurrent reader sees a whole file or none).
fn write_once(path: &Path, text: &str) -> Result<(), EngineError> {
    if fs::read(path).is_ok_and(|bytes| bytes == text.as_bytes()) {
        return Ok(());
    }
    let error = |e: std::io::Error| EngineError::Cache { path: path.to_path_buf(), source: e };
    let folder = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(folder).map_err(error)?;
    let staged = folder.join(format!(".{}.{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("prelude"), std::process::id()));
    fs::write(&staged, text).map_err(error)?;
    fs::rename(&staged, path).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernels_folder_with_a_host_prelude_brings_its_own_and_any_other_gets_the_built_in_copies() {
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        let cache = tempfile::tempdir().unwrap();
        let own = Preludes::locate(&repository, cache.path()).unwrap();
        assert_eq!((own.folder.as_path(), own.built_in), (repository.as_path(), false));
        let foreign = tempfile::tempdir().unwrap();
        let built_in = Preludes::locate(foreign.path(), cache.path()).unwrap();
        assert!(built_in.built_in && built_in.folder.starts_with(cache.path()));
        for (name, _) in FILES {
            let copy = fs::read(built_in.folder.join(name)).unwrap();
            assert_eq!(copy, fs::read(repository.join(name)).unwrap(), "{name} is built in as it is in the repository");
        }
        assert!(is_hip_headers(&built_in.hip_headers()) && !is_hip_headers(&repository));
        assert_eq!(Preludes::locate(foreign.path(), cache.path()).unwrap(), built_in, "a second run finds the same copies");
    }
}
