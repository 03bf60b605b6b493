//! Gate 4, limits: a kernel's resource usage against the contract's budget for an
//! architecture (over budget fails the gate), and against the recorded figures (a
//! difference is a limit problem: reported, not a failure, unless limits are strict).

use std::collections::BTreeMap;

use engine::backend::ResourceUsage;
use serde::Serialize;

use crate::format;

/// `[limits.<arch>]` of a contract.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Limits {
    /// The compiler that produced the recorded figures.
    pub compiler: Option<String>,
    pub recorded: BTreeMap<String, u64>,
    pub budget: BTreeMap<String, u64>,
    pub line: usize,
}

/// The figures an architecture family has, in the order reports show them.
pub fn figure_names(arch: &str) -> Option<&'static [&'static str]> {
    if arch.starts_with("gfx") {
        Some(&["threads", "vgprs", "sgprs", "lds", "scratch", "vgpr_spills", "sgpr_spills", "spills"])
    } else if arch.starts_with("sm_") {
        Some(&["threads", "registers", "shared", "local"])
    } else {
        None
    }
}

/// How a figure reads in a record line: `13 VGPRs`, `0 LDS`, `1,024 threads`.
fn figure_text(name: &str, value: u64) -> String {
    let unit = match name {
        "vgprs" => "VGPRs",
        "sgprs" => "SGPRs",
        "lds" => "LDS",
        "scratch" => "scratch",
        "vgpr_spills" => "VGPR spills",
        "sgpr_spills" => "SGPR spills",
        "spills" => "spills",
        "registers" => "registers",
        "shared" => "shared",
        "local" => "local",
        other => other,
    };
    format!("{} {unit}", format::count(value as usize))
}

/// The figures of one kernel with the derived ones (`spills`) filled in.
pub fn complete(usage: &ResourceUsage) -> BTreeMap<String, u64> {
    let mut figures = usage.figures.clone();
    if figures.contains_key("vgpr_spills") || figures.contains_key("sgpr_spills") {
        let spills = figures.get("vgpr_spills").copied().unwrap_or(0) + figures.get("sgpr_spills").copied().unwrap_or(0);
        figures.insert("spills".into(), spills);
    }
    figures
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct LimitsReport {
    pub arch: String,
    /// `live` (the runtime's figures) or `static` (the compiler's, without a device).
    pub source: String,
    pub figures: BTreeMap<String, u64>,
    pub compiler: String,
    pub over_budget: Vec<String>,
    pub problems: Vec<String>,
}

impl LimitsReport {
    /// `live limits 256 threads, 13 VGPRs, 0 LDS, as recorded`
    pub fn summary(&self, arch: &str) -> String {
        let order = figure_names(arch).unwrap_or(&[]);
        let shown: Vec<String> = order
            .iter()
            .filter(|name| **name != "spills" && **name != "vgpr_spills" && **name != "sgpr_spills")
            .filter_map(|name| self.figures.get(*name).map(|v| figure_text(name, *v)))
            .collect();
        let spills = self.figures.get("spills").map(|v| format!(", {}", figure_text("spills", *v))).unwrap_or_default();
        let verdict =
            if self.problems.is_empty() { "as recorded".to_string() } else { format!("limit problem: {}", self.problems.join("; ")) };
        format!("{} limits {}{spills}, {verdict}", self.source, shown.join(", "))
    }
}

/// Checks one kernel's figures against `[limits.<arch>]`.
pub fn check(arch: &str, source: &str, usage: &ResourceUsage, limits: Option<&Limits>) -> LimitsReport {
    let figures = complete(usage);
    let mut report = LimitsReport {
        arch: arch.to_string(),
        source: source.to_string(),
        figures: figures.clone(),
        compiler: usage.compiler.clone(),
        ..LimitsReport::default()
    };
    let Some(limits) = limits else {
        report.problems.push(format!("no recorded figures for {arch} (run `contracts record --arch {arch}`)"));
        return report;
    };
    for (name, budget) in &limits.budget {
        match figures.get(name) {
            Some(v) if v > budget => {
                report.over_budget.push(format!("{} over the budget of {}", figure_text(name, *v), format::count(*budget as usize)))
            }
            Some(_) => {}
            None => report.problems.push(format!("the budget names {name}, which {source} figures do not give")),
        }
    }
    for (name, recorded) in &limits.recorded {
        match figures.get(name) {
            Some(v) if v != recorded => {
                let by = limits.compiler.as_deref().unwrap_or("an unnamed compiler");
                report.problems.push(format!("{name} recorded {recorded} ({by}), {source} {v} ({})", usage.compiler));
            }
            Some(_) => {}
            None => report.problems.push(format!("{name} is recorded but {source} figures do not give it")),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(pairs: &[(&str, u64)]) -> ResourceUsage {
        ResourceUsage { figures: pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(), compiler: "clang version 22.1.8".into() }
    }

    fn limits(recorded: &[(&str, u64)], budget: &[(&str, u64)]) -> Limits {
        Limits {
            compiler: Some("clang version 19.1.7".into()),
            recorded: recorded.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            budget: budget.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            line: 20,
        }
    }

    #[test]
    fn budget_fails_and_recorded_differences_are_problems() {
        let u = usage(&[("threads", 256), ("vgprs", 70), ("lds", 0), ("vgpr_spills", 2), ("sgpr_spills", 1)]);
        let r = check("gfx1201", "static", &u, Some(&limits(&[("vgprs", 13), ("lds", 0)], &[("vgprs", 64), ("spills", 0)])));
        assert_eq!(r.over_budget, vec!["3 spills over the budget of 0", "70 VGPRs over the budget of 64"]);
        assert_eq!(r.problems, vec!["vgprs recorded 13 (clang version 19.1.7), static 70 (clang version 22.1.8)"]);
        let ok = check(
            "gfx1201",
            "static",
            &usage(&[("threads", 256), ("vgprs", 13), ("lds", 0)]),
            Some(&limits(&[("vgprs", 13)], &[("vgprs", 64)])),
        );
        assert!(ok.over_budget.is_empty() && ok.problems.is_empty());
        assert_eq!(ok.summary("gfx1201"), "static limits 256 threads, 13 VGPRs, 0 LDS, as recorded");
        let none = check("sm_90", "live", &usage(&[("registers", 20)]), None);
        assert_eq!(none.problems.len(), 1);
    }
}
