//! `contracts record`: writes the figures a run measured into each contract's
//! `[limits.<arch>]`, keeping the file's comments and layout. A contract with no budget for
//! the arch gets a starting one (see `starting_budget`), to be tightened by its owner.

use std::collections::BTreeMap;
use std::path::Path;

use toml_edit::{DocumentMut, Item, Table, value};

use crate::runner::RunReport;

/// A first budget: what the kernel uses, with register room up to 64 (the point where
/// occupancy starts to fall on both gfx1201 and sm_90), no spills and no more shared memory.
fn starting_budget(arch: &str, figures: &BTreeMap<String, u64>) -> Vec<(&'static str, u64)> {
    let get = |k: &str| figures.get(k).copied().unwrap_or(0);
    if arch.starts_with("gfx") {
        vec![("vgprs", get("vgprs").max(64)), ("lds", get("lds")), ("scratch", get("scratch")), ("spills", 0)]
    } else {
        vec![("registers", get("registers").max(64)), ("shared", get("shared")), ("local", get("local"))]
    }
}

/// Rewrites the recorded figures of every contract the run measured; returns one line per file.
pub fn write_recorded(run: &RunReport, contracts_dir: &Path) -> Result<Vec<String>, String> {
    let mut by_file: BTreeMap<&str, (&BTreeMap<String, u64>, &str)> = BTreeMap::new();
    for record in &run.records {
        if let Some(limits) = &record.limits {
            by_file.entry(record.contract_file.as_str()).or_insert((&limits.figures, &limits.compiler));
        }
    }
    let mut lines = Vec::new();
    for (file, (figures, compiler)) in by_file {
        let name = Path::new(file).file_name().ok_or_else(|| format!("{file}: no file name"))?;
        let path = contracts_dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut document: DocumentMut = text.parse().map_err(|e| format!("{}: {e}", path.display()))?;
        let limits = document.entry("limits").or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        let limits = limits.as_table_mut().ok_or_else(|| format!("{file}: `limits` is not a table"))?;
        let table = limits
            .entry(&run.arch)
            .or_insert(Item::Table(Table::new()))
            .as_table_mut()
            .ok_or_else(|| format!("{file}: `limits.{}` is not a table", run.arch))?;
        table.insert("compiler", value(compiler));
        for (figure, v) in figures.iter().filter(|(k, _)| k.as_str() != "spills") {
            table.insert(figure, value(*v as i64));
        }
        if !table.contains_key("budget") {
            let mut budget = toml_edit::InlineTable::new();
            for (k, v) in starting_budget(&run.arch, figures) {
                budget.insert(k, (v as i64).into());
            }
            table.insert("budget", value(budget));
        }
        std::fs::write(&path, document.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
        let shown: Vec<String> = figures.iter().map(|(k, v)| format!("{k} {v}")).collect();
        lines.push(format!("{file}: [limits.{}] {}", run.arch, shown.join(", ")));
    }
    Ok(lines)
}
