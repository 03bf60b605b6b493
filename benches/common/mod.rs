//! What the engine's benches share: how they measure, and the host backend over
//! `benches/kernels/bench.hip`.

pub mod measure;

use std::path::PathBuf;
use std::sync::Arc;

use engine::EngineError;
use engine::backend::host::{HostBackend, HostOptions};
use engine::backend::{Backend, KernelSource, Module};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The host backend with `workers` block workers, or None (said on stderr) when no C++
/// compiler is found: these benches build a kernel with it.
pub fn host(workers: usize) -> Option<HostBackend> {
    let options = HostOptions {
        prelude: root().join("kernels/host/prelude.h"),
        cache_dir: root().join("target/kernel-cache"),
        workers,
        warp_size: 32,
    };
    match HostBackend::new(options) {
        Ok(backend) => Some(backend),
        Err(e @ EngineError::NoHostCompiler { .. }) => {
            eprintln!("skipped: the host backend needs a C++ compiler ({e})");
            None
        }
        Err(e) => panic!("host backend: {e}"),
    }
}

/// The bench kernels, built (or taken from the kernel cache) and loaded.
pub fn module(backend: &HostBackend) -> Arc<dyn Module> {
    let display_path = "benches/kernels/bench.hip".to_string();
    let source = KernelSource {
        path: root().join(&display_path),
        display_path,
        kernels: vec!["scale_add".into(), "barriers".into(), "shuffles".into()],
        include_dirs: vec![root().join("kernels")],
    };
    backend.load_module(&source).unwrap_or_else(|e| panic!("{e}"))
}
