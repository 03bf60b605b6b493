//! Fuzz target: any text given to the contract parser and to the control parser comes back
//! as a contract or a ContractError, never a panic, a hang or an unbounded allocation.
//! The seed corpus is the repository's own contracts and controls, so mutations start from
//! files that load and reach the checks past TOML decoding.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use harness::contract::{Contract, Control};
use libfuzzer_sys::fuzz_target;

/// A folder holding a kernel file for every kernel the repository's controls name, plus
/// `kernel.hip`, made once per process: a seed control then passes the `source` check and
/// its mutations go on to the checks after it.
fn control_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // one fixed folder, rewritten by every run, so that runs leave no trail of folders
        let dir = std::env::temp_dir().join("kernel-contracts-fuzz-controls");
        std::fs::create_dir_all(&dir).expect("temporary folder for the fuzzed controls");
        let controls = Path::new(env!("CARGO_MANIFEST_DIR")).join("../controls");
        let kernels = [controls.clone(), controls.join("limits")]
            .into_iter()
            .filter_map(|folder| std::fs::read_dir(folder).ok())
            .flatten()
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.ends_with(".hip"));
        for name in kernels.chain(["kernel.hip".to_string()]) {
            std::fs::write(dir.join(name), "// a kernel file for the fuzzed controls\n").expect("kernel file");
        }
        dir
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(contract) = Contract::parse("fuzz.toml", text) {
        // a contract that loads also describes its cases, as the reports do
        for case in &contract.cases {
            let _ = case.describe(contract.op);
        }
    }
    let dir = control_dir();
    let _ = Control::parse("fuzz.toml", text, dir, dir.parent().unwrap_or(dir));
});
