//! Tables the engine computes on the host for a kernel, from the op's parameters and shape
//! symbols: a contract's derived tensors (`from = "rope_turns(theta, d)"`). A table is
//! computed the same way for every backend, so every backend's kernel reads the same bits.

/// One named table: its arguments, in order, and how its values are computed (in f64, then
/// stored in the derived tensor's dtype, rounding to nearest even).
pub struct Table {
    pub name: &'static str,
    /// The arguments' names, as a refusal names them.
    pub args: &'static [&'static str],
    compute: fn(&[f64]) -> Result<Vec<f64>, String>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name, self.args.join(", "))
    }
}

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.name == other.name
    }
}

impl Table {
    /// The table's values for these arguments (one per argument, in order).
    pub fn compute(&self, args: &[f64]) -> Result<Vec<f64>, String> {
        if args.len() != self.args.len() {
            return Err(format!("{self:?} takes {} arguments, not {}", self.args.len(), args.len()));
        }
        (self.compute)(args)
    }
}

static TABLES: &[Table] = &[Table { name: "rope_turns", args: &["theta", "d"], compute: rope_turns }];

/// The table called `name`.
pub fn find(name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.name == name)
}

/// Every table, as `name(args)`, for a message that lists them.
pub fn known() -> Vec<String> {
    TABLES.iter().map(|t| format!("{t:?}")).collect()
}

/// The rotary inverse frequencies theta^(-2i / d), i < d / 2, in turns per position (divided
/// by 2 pi), in f64: stored in f32, every backend rotates by the same f32 angles (in turns,
/// which the kernel reduces exactly).
fn rope_turns(args: &[f64]) -> Result<Vec<f64>, String> {
    let (theta, d) = (args[0], args[1]);
    if d.fract() != 0.0 || !(0.0..=(1u64 << 40) as f64).contains(&d) {
        return Err(format!("d = {d} is not a head size"));
    }
    let pairs = d as usize / 2;
    Ok((0..pairs).map(|i| theta.powf(-((2 * i) as f64) / d) / std::f64::consts::TAU).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rope_turns_by_hand() {
        let tau = std::f64::consts::TAU;
        let turns = find("rope_turns").unwrap();
        assert_eq!(turns.compute(&[10000.0, 4.0]).unwrap(), vec![1.0 / tau, 0.01 / tau]);
        let f = turns.compute(&[500000.0, 128.0]).unwrap();
        assert_eq!(f.len(), 64);
        assert!(f.windows(2).all(|w| w[1] < w[0]), "falling frequencies");
        assert!(turns.compute(&[10000.0, 2.5]).unwrap_err().contains("d = 2.5"));
        assert_eq!(turns.compute(&[10000.0]).unwrap_err(), "rope_turns(theta, d) takes 2 arguments, not 1");
        assert!(find("rope").is_none());
        assert_eq!(known(), ["rope_turns(theta, d)"]);
    }

    /// The values, stored in f32, are the bits the engine's own launcher gave the kernel:
    /// theta^(-2i/d) / (2 pi) with the exponent formed as `-(2i) / d` in f64.
    #[test]
    fn rope_turns_in_f32_are_the_launchers_bits() {
        for (theta, d) in [(10000.0f64, 128usize), (500000.0, 80), (10000.0, 2)] {
            let want: Vec<u32> =
                (0..d / 2).map(|i| ((theta.powf(-((2 * i) as f64) / d as f64) / std::f64::consts::TAU) as f32).to_bits()).collect();
            let got: Vec<u32> = rope_turns(&[theta, d as f64]).unwrap().iter().map(|v| (*v as f32).to_bits()).collect();
            assert_eq!(got, want, "theta {theta}, d {d}");
        }
    }
}
