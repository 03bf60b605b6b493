//! Oracles: what each op must compute, in f64, written independently of the kernels.
//! Inputs arrive decoded from the bytes the kernel read; outputs are exact-as-f64 values
//! that the tolerance model compares against.

use std::collections::BTreeMap;

use engine::shape_expr::Symbols;

pub struct OracleInput<'a> {
    pub symbols: &'a Symbols,
    pub params: &'a BTreeMap<String, f64>,
    pub inputs: &'a BTreeMap<String, Vec<f64>>,
}

impl OracleInput<'_> {
    fn symbol(&self, name: &str) -> Result<usize, String> {
        self.symbols.get(name).map(|v| *v as usize).ok_or_else(|| format!("oracle needs shape symbol `{name}`"))
    }

    #[allow(dead_code)]
    fn param(&self, name: &str) -> Result<f64, String> {
        self.params.get(name).copied().ok_or_else(|| format!("oracle needs parameter `{name}`"))
    }

    fn input(&self, name: &str) -> Result<&[f64], String> {
        self.inputs.get(name).map(Vec::as_slice).ok_or_else(|| format!("oracle needs input `{name}`"))
    }
}

pub type Outputs = BTreeMap<String, Vec<f64>>;
pub type Oracle = fn(&OracleInput) -> Result<Outputs, String>;

const ORACLES: &[(&str, Oracle)] = &[("gather_rows", gather_rows), ("softmax_stats", softmax_stats), ("sum_partials", sum_partials)];

pub fn find(name: &str) -> Option<Oracle> {
    ORACLES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

pub fn names() -> Vec<&'static str> {
    ORACLES.iter().map(|(n, _)| *n).collect()
}

/// out[i, :] = table[ids[i], :]
fn gather_rows(x: &OracleInput) -> Result<Outputs, String> {
    let (n, k, vocab) = (x.symbol("n")?, x.symbol("k")?, x.symbol("vocab")?);
    let (table, ids) = (x.input("table")?, x.input("ids")?);
    let mut out = Vec::with_capacity(n * k);
    for &id in &ids[..n] {
        if id < 0.0 || id as usize >= vocab {
            return Err(format!("token id {id} outside the table of {vocab} rows"));
        }
        let row = id as usize;
        out.extend_from_slice(&table[row * k..(row + 1) * k]);
    }
    Ok([("out".to_string(), out)].into())
}

/// Per row and tile of `tile` keys: the max score, and the sum of exp(score - max).
fn softmax_stats(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, keys, tile) = (x.symbol("rows")?, x.symbol("keys")?, x.symbol("tile")?);
    let scores = x.input("scores")?;
    let tiles = keys.div_ceil(tile);
    let (mut maxima, mut sums) = (Vec::with_capacity(rows * tiles), Vec::with_capacity(rows * tiles));
    for row in scores.chunks(keys).take(rows) {
        for part in row.chunks(tile) {
            let m = part.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            maxima.push(m);
            sums.push(part.iter().map(|s| (s - m).exp()).sum());
        }
    }
    Ok([("tile_max".to_string(), maxima), ("tile_sum".to_string(), sums)].into())
}

/// out[r, j] = sum_t exp(m_t - M) partial_t[j] / sum_t exp(m_t - M) sum_t, M = max_t m_t
fn sum_partials(x: &OracleInput) -> Result<Outputs, String> {
    let (rows, tiles, d) = (x.symbol("rows")?, x.symbol("tiles")?, x.symbol("d")?);
    let (partials, maxima, sums) = (x.input("partials")?, x.input("tile_max")?, x.input("tile_sum")?);
    let mut out = Vec::with_capacity(rows * d);
    for r in 0..rows {
        let m = &maxima[r * tiles..(r + 1) * tiles];
        let l = &sums[r * tiles..(r + 1) * tiles];
        let global = m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = m.iter().map(|v| (v - global).exp()).collect();
        let denominator: f64 = weights.iter().zip(l).map(|(w, s)| w * s).sum();
        for j in 0..d {
            let numerator: f64 = (0..tiles).map(|t| weights[t] * partials[(r * tiles + t) * d + j]).sum();
            out.push(numerator / denominator);
        }
    }
    Ok([("out".to_string(), out)].into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, symbols: &[(&str, i64)], inputs: &[(&str, Vec<f64>)]) -> Outputs {
        let symbols: Symbols = symbols.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let inputs: BTreeMap<String, Vec<f64>> = inputs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        find(name).unwrap()(&OracleInput { symbols: &symbols, params: &BTreeMap::new(), inputs: &inputs }).unwrap()
    }

    #[test]
    fn gather_rows_picks_rows_by_id() {
        let out = run("gather_rows", &[("n", 2), ("k", 2), ("vocab", 3)], &[("table", vec![1., 2., 3., 4., 5., 6.]), ("ids", vec![2., 0.])]);
        assert_eq!(out["out"], vec![5., 6., 1., 2.]);
    }

    #[test]
    fn softmax_stats_of_two_tiles_with_a_short_tail() {
        let out = run("softmax_stats", &[("rows", 1), ("keys", 3), ("tile", 2)], &[("scores", vec![0., 1., 5.])]);
        assert_eq!(out["tile_max"], vec![1., 5.]);
        assert_eq!(out["tile_sum"], vec![1. + (-1f64).exp(), 1.]);
    }

    #[test]
    fn sum_partials_of_one_tile_is_the_partial_over_its_sum() {
        let out = run(
            "sum_partials",
            &[("rows", 1), ("tiles", 1), ("d", 2)],
            &[("partials", vec![2., 4.]), ("tile_max", vec![3.]), ("tile_sum", vec![2.])],
        );
        assert_eq!(out["out"], vec![1., 2.]);
        // two tiles: the combine equals a softmax over all keys at once
        let out = run(
            "sum_partials",
            &[("rows", 1), ("tiles", 2), ("d", 1)],
            &[("partials", vec![10.0, 20.0]), ("tile_max", vec![0., -1.]), ("tile_sum", vec![1., 1.])],
        );
        let want = (10.0 + (-1f64).exp() * 20.0) / (1.0 + (-1f64).exp());
        assert!((out["out"][0] - want).abs() < 1e-12);
    }
}
