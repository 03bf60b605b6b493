//! `contracts record`: the figures a run measured, as each contract's `[limits.<arch>]` would
//! hold them (keeping the file's comments and layout), shown as a diff and written only when
//! accepted. A contract with no budget for the arch gets a starting one (see
//! `starting_budget`), to be tightened by its owner.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// What `contracts record` would write: one line per contract the run measured, and each
/// contract whose figures changed with its text before and after.
#[derive(Debug)]
pub struct Plan {
    pub lines: Vec<String>,
    pub changes: Vec<Change>,
}

/// One contract's recorded figures, rewritten.
#[derive(Debug)]
pub struct Change {
    /// As the report names it (`contracts/tf_add.toml`).
    pub file: String,
    pub path: PathBuf,
    pub before: String,
    pub after: String,
}

impl Change {
    /// The change as a unified diff of the file, as `cargo insta` shows a snapshot's.
    pub fn diff(&self) -> String {
        similar::TextDiff::from_lines(&self.before, &self.after)
            .unified_diff()
            .context_radius(2)
            .header(&format!("{} (recorded)", self.file), &format!("{} (measured)", self.file))
            .to_string()
    }
}

/// The recorded figures of every contract the run measured, as they would be written: nothing
/// is written here.
pub fn plan(run: &RunReport, contracts_dir: &Path) -> Result<Plan, String> {
    let mut by_file: BTreeMap<&str, (&BTreeMap<String, u64>, &str)> = BTreeMap::new();
    for record in &run.records {
        if let Some(limits) = &record.limits {
            by_file.entry(record.contract_file.as_str()).or_insert((&limits.figures, &limits.compiler));
        }
    }
    let mut plan = Plan { lines: Vec::new(), changes: Vec::new() };
    for (file, (figures, compiler)) in by_file {
        let name = Path::new(file).file_name().ok_or_else(|| format!("{file}: no file name"))?;
        let path = contracts_dir.join(name);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let shown: Vec<String> = figures.iter().map(|(k, v)| format!("{k} {v}")).collect();
        match recorded(&text, &run.arch, figures, compiler).map_err(|e| format!("{file}: {e}"))? {
            Some(after) => {
                plan.lines.push(format!("{file}: [limits.{}] {}", run.arch, shown.join(", ")));
                plan.changes.push(Change { file: file.to_string(), path, before: text, after });
            }
            None => plan.lines.push(format!("{file}: [limits.{}] {} as recorded, left as it is", run.arch, shown.join(", "))),
        }
    }
    Ok(plan)
}

/// Writes every change of the plan (`contracts record --accept`).
pub fn apply(plan: &Plan) -> Result<(), String> {
    for change in &plan.changes {
        std::fs::write(&change.path, &change.after).map_err(|e| format!("{}: {e}", change.path.display()))?;
    }
    Ok(())
}

/// The contract's text with `figures` recorded under `[limits.<arch>]`, or None when every
/// figure is already recorded as measured: then nothing is rewritten, not even the compiler
/// line (a live run and the static compiler name themselves differently for the same bits).
fn recorded(text: &str, arch: &str, figures: &BTreeMap<String, u64>, compiler: &str) -> Result<Option<String>, String> {
    let mut document: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let limits = document.entry("limits").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let limits = limits.as_table_mut().ok_or("`limits` is not a table")?;
    let table = limits.entry(arch).or_insert(Item::Table(Table::new())).as_table_mut().ok_or(format!("`limits.{arch}` is not a table"))?;
    let measured: Vec<(&String, &u64)> = figures.iter().filter(|(k, _)| k.as_str() != "spills").collect();
    let unchanged = table.contains_key("budget")
        && measured.iter().all(|(figure, v)| table.get(figure).and_then(|item| item.as_integer()) == Some(**v as i64));
    if unchanged {
        return Ok(None);
    }
    // assigned in place, so a comment above a key stays with it
    table["compiler"] = value(compiler);
    for (figure, v) in measured {
        table[figure.as_str()] = value(*v as i64);
    }
    if !table.contains_key("budget") {
        let mut budget = toml_edit::InlineTable::new();
        for (k, v) in starting_budget(arch, figures) {
            budget.insert(k, (v as i64).into());
        }
        table.insert("budget", value(budget));
    }
    Ok(Some(document.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTRACT: &str = "op = \"tf_add\"\n\n[limits.sm_90]\n# the live figures\ncompiler = \"NVRTC 13.0\"\nregisters = 14\nshared = 0\nbudget = { registers = 64, shared = 0, local = 0 }\n";

    fn figures(registers: u64) -> BTreeMap<String, u64> {
        [("registers".to_string(), registers), ("shared".to_string(), 0), ("local".to_string(), 0)].into()
    }

    #[test]
    fn figures_as_recorded_leave_the_file_alone_and_a_change_rewrites_figure_and_compiler() {
        let mut same = figures(14);
        same.remove("local");
        assert_eq!(recorded(CONTRACT, "sm_90", &same, "NVRTC cubin for sm_90, as the driver loaded it").unwrap(), None);
        let changed = recorded(CONTRACT, "sm_90", &figures(15), "live").unwrap().expect("rewritten");
        assert!(
            changed.contains("registers = 15") && changed.contains("compiler = \"live\"") && changed.contains("local = 0"),
            "{changed}"
        );
        assert!(changed.contains("# the live figures") && changed.contains("budget = { registers = 64"), "{changed}");
        let fresh = recorded("op = \"tf_add\"\n", "gfx1201", &[("vgprs".to_string(), 12)].into(), "clang").unwrap().unwrap();
        assert!(fresh.contains("[limits.gfx1201]") && fresh.contains("vgprs = 12") && fresh.contains("budget = { vgprs = 64"), "{fresh}");
    }
}
