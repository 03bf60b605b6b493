//! The gates, numbered as the SUMMARY counts them.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    Nonfinite,
    Repeat,
    Shapes,
    Limits,
    Seams,
}

impl Gate {
    pub const ALL: [Gate; 5] = [Gate::Nonfinite, Gate::Repeat, Gate::Shapes, Gate::Limits, Gate::Seams];

    pub fn number(self) -> u8 {
        self as u8 + 1
    }

    pub fn name(self) -> &'static str {
        match self {
            Gate::Nonfinite => "nonfinite",
            Gate::Repeat => "repeat",
            Gate::Shapes => "shapes",
            Gate::Limits => "limits",
            Gate::Seams => "seams",
        }
    }

    pub fn parse(text: &str) -> Result<Gate, String> {
        Gate::ALL
            .into_iter()
            .find(|g| g.name() == text)
            .ok_or_else(|| format!("unknown gate `{text}` (nonfinite, repeat, shapes, limits, seams)"))
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
