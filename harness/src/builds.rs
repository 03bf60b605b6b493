//! What a contract's records build and load besides the gates: its kernel (found where the
//! contract names it, with its include folders, the `--include` folders, the kernels folder
//! and the HIP header shims), and what its outputs are checked against (a named oracle, a C++
//! reference function built by the host compiler, or the module of the op it replaces). Every
//! file is confined before anything reads it, and a kernel is keyed by its file and symbol.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::backend::host::HostCompiler;
use engine::backend::host::reference::{ReferenceLibrary, ReferenceSource};
use engine::backend::{KernelSource, Module};
use engine::ops::OpSpec;

use crate::confine::Confinement;
use crate::contract::{Contract, ContractError, ContractPath, Control, KernelPlace, Reference};
use crate::oracle::Oracle;
use crate::runner::{Settings, error_chain};

/// A kernel build as the run keys it: its file and its symbol (two ops may name two
/// instantiations of one template file).
pub type SourceKey = (PathBuf, String);

pub fn key(source: &KernelSource) -> SourceKey {
    (source.path.clone(), source.kernels.join(","))
}

/// Modules by their key, or why one did not build or load.
pub type Built = HashMap<SourceKey, Result<Arc<dyn Module>, String>>;

fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The folders a kernel of `place` includes from, in the order they are searched: the
/// contract's `[kernel] include`, the `--include` folders, the kernels folder, then the HIP
/// header shims (the backends without ROCm find `hip/hip_runtime.h` there).
pub fn include_dirs(settings: &Settings, place: Option<&KernelPlace>) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        place.map(|p| p.includes.iter().map(|i| i.resolve(&settings.kernels_dir, &p.folder)).collect()).unwrap_or_default();
    dirs.extend(settings.include_dirs.iter().cloned());
    dirs.push(settings.kernels_dir.clone());
    dirs.extend(settings.hip_headers.iter().cloned());
    dirs
}

/// A kernel source of a record: `path`, its kernel `symbol`, its contract's include folders.
pub fn kernel_source(settings: &Settings, place: Option<&KernelPlace>, path: &Path, symbol: &str) -> KernelSource {
    KernelSource {
        path: path.to_path_buf(),
        display_path: display(&settings.root, path),
        kernels: vec![symbol.to_string()],
        include_dirs: include_dirs(settings, place),
    }
}

/// Where a place's kernel source lies.
pub fn kernel_path(settings: &Settings, place: &KernelPlace) -> PathBuf {
    place.source.resolve(&settings.kernels_dir, &place.folder)
}

/// The kernel a record runs: its control's faulty copy, else (a control that plants only
/// parameters too) its contract's kernel; none for an op a library serves, whose records
/// always go through the library (a control for one may plant a kernel named after the op,
/// which its launcher runs in place of the library call).
pub fn source_of(settings: &Settings, contract: &Contract, control: Option<&Control>) -> Option<KernelSource> {
    let op = contract.op;
    let place = contract.kernel.as_ref();
    match (control.and_then(|c| c.source.as_ref()), place, op.symbol) {
        (Some(path), _, _) => Some(kernel_source(settings, place, path, op.kernel_symbol())),
        (None, Some(place), Some(symbol)) => Some(kernel_source(settings, Some(place), &kernel_path(settings, place), symbol)),
        _ => None,
    }
}

/// The kernel of the op a contract replaces, where it does.
pub fn replaced_source(settings: &Settings, contract: &Contract) -> Option<KernelSource> {
    let Reference::Replaces(replaced) = &contract.reference else { return None };
    let symbol = replaced.op.symbol?;
    Some(kernel_source(settings, Some(&replaced.place), &kernel_path(settings, &replaced.place), symbol))
}

/// What a record's own process builds: its kernel, and the kernel it replaces.
pub fn sources_of(settings: &Settings, contract: &Contract, control: Option<&Control>) -> Vec<KernelSource> {
    source_of(settings, contract, control).into_iter().chain(replaced_source(settings, contract)).collect()
}

/// Every kernel a run builds, once each: each contract's (and what it replaces), then each
/// control's.
pub fn kernel_sources(settings: &Settings, contracts: &[Contract], controls: &[Control]) -> Vec<KernelSource> {
    let of_contracts = contracts.iter().flat_map(|c| sources_of(settings, c, None));
    let of_controls = controls.iter().filter_map(|c| {
        let contract = contracts.iter().find(|k| k.op.name == c.contract)?;
        source_of(settings, contract, Some(c))
    });
    let mut out: Vec<KernelSource> = Vec::new();
    for source in of_contracts.chain(of_controls) {
        if !out.iter().any(|s| key(s) == key(&source)) {
            out.push(source);
        }
    }
    out
}

/// The contract's kernel, its include folders, every header the kernel includes, and its C++
/// reference function, inside the root or a folder given on the command line; each refusal at
/// the key that names the file.
pub fn files_inside(confined: &Confinement, settings: &Settings, contract: &Contract) -> Result<(), ContractError> {
    let dirs = include_dirs(settings, contract.kernel.as_ref());
    if let Reference::Cpp(cpp) = &contract.reference {
        file_inside(confined, settings, contract, &cpp.path, &cpp.path.resolve(&settings.kernels_dir, &contract.folder), &dirs)?;
    }
    let Some(place) = &contract.kernel else { return Ok(()) };
    for include in &place.includes {
        let dir = include.resolve(&settings.kernels_dir, &place.folder);
        let shown = display(&settings.root, &dir);
        let real = confined.resolve(&dir, &shown).map_err(|e| include.error(&contract.file, e.to_string()))?;
        if !real.is_dir() {
            return Err(include.error(&contract.file, format!("`{shown}` is not a folder")));
        }
    }
    file_inside(confined, settings, contract, &place.source, &kernel_path(settings, place), &dirs)
}

/// One file a contract names, and what it includes, inside; a missing one is the build's to
/// report (a record error with the compiler's words).
fn file_inside(
    confined: &Confinement,
    settings: &Settings,
    contract: &Contract,
    named: &ContractPath,
    path: &Path,
    dirs: &[PathBuf],
) -> Result<(), ContractError> {
    if path.symlink_metadata().is_err() {
        return Ok(());
    }
    let shown = display(&settings.root, path);
    let checked = confined.resolve(path, &shown).and_then(|_| confined.includes(path, &shown, dirs));
    checked.map_err(|e| named.error(&contract.file, e.to_string()))
}

/// What a record's outputs are checked against, loaded.
#[derive(Clone)]
pub enum Checker {
    Oracle(Oracle),
    Cpp(Arc<ReferenceLibrary>),
    /// The replaced op and its module, launched on the same inputs.
    Replaces {
        op: &'static OpSpec,
        module: Arc<dyn Module>,
    },
}

/// A C++ reference function as the engine builds it.
fn reference_source(settings: &Settings, contract: &Contract) -> Option<ReferenceSource> {
    let Reference::Cpp(cpp) = &contract.reference else { return None };
    let path = cpp.path.resolve(&settings.kernels_dir, &contract.folder);
    Some(ReferenceSource {
        display_path: display(&settings.root, &path),
        path,
        function: cpp.function.clone(),
        signature: cpp.signature.clone(),
        include_dirs: include_dirs(settings, contract.kernel.as_ref()),
    })
}

/// Builds a contract's C++ reference function (before its process limits itself: a build
/// writes the cache), where it has one.
pub fn build_reference(settings: &Settings, contract: &Contract) -> Option<Result<PathBuf, String>> {
    let source = reference_source(settings, contract)?;
    Some(HostCompiler::discover().and_then(|c| c.build_reference(&source, &settings.cache_dir)).map_err(|e| error_chain(&e)))
}

/// The checker of a contract's records: its oracle; its reference function's library, built
/// (`built`) and now loaded; or the replaced op with its module from `modules`.
pub fn load_checker(
    settings: &Settings,
    contract: &Contract,
    built: Option<Result<PathBuf, String>>,
    modules: &Built,
) -> Result<Checker, String> {
    match &contract.reference {
        Reference::Oracle { function, .. } => Ok(Checker::Oracle(*function)),
        Reference::Cpp(_) => {
            let source = reference_source(settings, contract).expect("a C++ reference");
            let library = built.unwrap_or_else(|| Err("the reference function was not built".into()))?;
            let what = |e: String| format!("reference function {}:{}: {e}", source.display_path, source.function);
            ReferenceLibrary::open(&library, &source).map(|l| Checker::Cpp(Arc::new(l))).map_err(|e| what(error_chain(&e)))
        }
        Reference::Replaces(replaced) => {
            let source = replaced_source(settings, contract).ok_or("the replaced op has no kernel")?;
            let module = modules.get(&key(&source)).cloned().unwrap_or_else(|| Err("not built".into()));
            let module = module.map_err(|e| format!("the kernel of `{}`, which this one replaces: {e}", replaced.op.name))?;
            Ok(Checker::Replaces { op: replaced.op, module })
        }
    }
}
