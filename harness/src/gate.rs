//! The gates, numbered as the SUMMARY counts them.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
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

/// What takes a record's process or device context down, rather than turning a gate red:
/// the runner sees it from outside the child process that ran the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// The process died (SIGSEGV, SIGABRT, a panic).
    Crash,
    /// The record ran past its time limit and its process was killed.
    Timeout,
    /// The GPU context became unusable (CUDA_ERROR_ILLEGAL_ADDRESS, a HIP memory fault).
    DeviceFault,
}

impl Fault {
    pub const ALL: [Fault; 3] = [Fault::Crash, Fault::Timeout, Fault::DeviceFault];

    pub fn name(self) -> &'static str {
        match self {
            Fault::Crash => "crash",
            Fault::Timeout => "timeout",
            Fault::DeviceFault => "device-fault",
        }
    }

    pub fn parse(text: &str) -> Result<Fault, String> {
        Fault::ALL.into_iter().find(|f| f.name() == text).ok_or_else(|| format!("unknown fault `{text}` (crash, timeout, device-fault)"))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a control must go red: at a gate, or with a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Planted {
    Gate(Gate),
    Fault(Fault),
}

impl fmt::Display for Planted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Planted::Gate(g) => g.fmt(f),
            Planted::Fault(x) => x.fmt(f),
        }
    }
}
