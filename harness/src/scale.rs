//! An absolute tolerance against the output it bounds: an atol above a thousandth of the
//! typical magnitude of the oracle's output accepts a wrong value in most elements, so a
//! contract with one does not load. Checked when contracts load, from the oracle's output on
//! the contract's own cases and inputs (the run's seed), for the records with an atol.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use engine::DType;
use engine::ops::Role;

use crate::contract::{Contract, ContractError, Record};
use crate::inputs::tensor_seed;
use crate::oracle::{InputValues, OracleInput, Params};
use crate::runner::{Inputs, generate_input};
use crate::tolerance::Tolerance;

/// An atol above this fraction of the output's typical magnitude is refused.
pub const ATOL_OF_TYPICAL: f64 = 1e-3;

pub fn check_absolute_tolerances(contract: &Contract, seed: u64) -> Result<(), ContractError> {
    let mut inputs = Decoded::new();
    for record in &contract.records {
        let bounded: Vec<(&String, f64)> = record
            .tolerances
            .iter()
            .filter_map(|(output, b)| match b.tolerance {
                Tolerance::Relative { atol, .. } if atol > 0.0 => Some((output, atol)),
                _ => None,
            })
            .collect();
        if bounded.is_empty() {
            continue;
        }
        let magnitudes = oracle_magnitudes(contract, record, seed, &mut inputs).map_err(|e| ContractError {
            file: contract.file.clone(),
            line: contract.op_line,
            key: "reference.oracle".into(),
            message: format!("record `{}`: the oracle on the contract's cases: {e}", record.name),
        })?;
        for (output, atol) in bounded {
            let typical = median(magnitudes.get(output.as_str()).cloned().unwrap_or_default());
            if atol > ATOL_OF_TYPICAL * typical {
                let bound = &record.tolerances[output];
                return Err(ContractError {
                    file: contract.file.clone(),
                    line: bound.line,
                    key: bound.key.clone(),
                    message: format!(
                        "atol={atol:e} is loose for `{output}` of record `{}`: above {ATOL_OF_TYPICAL:e} times the oracle's typical \
                         |{output}| (median {typical:.3e} over the contract's cases), so it accepts a value wrong by a thousandth \
                         of its size in most elements; tighten it (an rtol scales with each element)",
                        record.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// An input's decoded values by tensor, case, dtype and the record whose own generator made
/// it (none: the contract's): records of one op that share an input's type share its values.
type Decoded = HashMap<(&'static str, usize, DType, Option<String>), Arc<Vec<f64>>>;

/// Every finite |value| of every output of the oracle over the cases a host runs.
fn oracle_magnitudes(contract: &Contract, record: &Record, seed: u64, inputs: &mut Decoded) -> Result<BTreeMap<String, Vec<f64>>, String> {
    let op = contract.op;
    let mut magnitudes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (index, case) in contract.cases.iter().enumerate().filter(|(_, c)| c.gpu_only.is_none()) {
        let mut values = BTreeMap::new();
        for spec in op.tensors.iter().filter(|t| t.role == Role::Input) {
            let dtype = record.dtypes[spec.name];
            let own = record.inputs.contains_key(spec.name).then(|| record.name.clone());
            let decoded = match inputs.entry((spec.name, index, dtype, own)) {
                Entry::Occupied(kept) => kept.get().clone(),
                Entry::Vacant(slot) => {
                    let tensor_seed = tensor_seed(seed, op.name, spec.name, index);
                    let bytes = generate_input(contract, record, spec.name, case, tensor_seed, Inputs::AsGenerated, None)?;
                    slot.insert(Arc::new(bytes.chunks(dtype.size()).map(|c| dtype.decode(c)).collect())).clone()
                }
            };
            values.insert(spec.name.to_string(), InputValues::decoded(dtype, Arc::default(), decoded));
        }
        // the check runs where contracts load: only a named oracle of the harness runs there
        let crate::contract::Reference::Oracle { function, .. } = &contract.reference else { return Ok(magnitudes) };
        let outputs = function(&OracleInput { symbols: &case.symbols, params: &Params::new(&record.params), inputs: &values })?;
        for (name, out) in outputs {
            magnitudes.entry(name).or_default().extend(out.iter().map(|v| v.abs()).filter(|v| v.is_finite()));
        }
    }
    Ok(magnitudes)
}

fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let middle = values.len() / 2;
    *values.select_nth_unstable_by(middle, f64::total_cmp).1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tf_add as data under a name of its own (the test changes nothing of the real op).
    const CONTRACT: &str = r#"op = "scale_test_add"
about = "add"

[[record]]
name = "f32"
dtypes = { a = "f32", b = "f32", out = "f32" }

[shapes]
cases = [ { rows = 2, k = 64 }, { rows = 3, k = 257 }, { rows = 4, k = 8195 }, { rows = 1025, k = 6 }, { rows = 5, k = 768 } ]

[inputs]
a = "normal(0, 1)"
b = "normal(0, 1)"

[nonfinite]
policy = "propagate"

[reference]
oracle = "add"
tolerance = "atol=ATOL"
reason = "a test"

[tensors]
a = { role = "input", dtypes = ["f32"], shape = "rows, k" }
b = { role = "input", dtypes = ["f32"], shape = "rows, k" }
out = { role = "output", dtypes = ["f32"], shape = "rows, k" }

[kernel]
source = "tf_add.hip"
symbol = "tf_add"
args = ["a", "dtype(a)", "b", "dtype(b)", "int(rows)", "int(k)", "out", "dtype(out)"]
grid = ["ceil_div(rows * k, 256)"]
block = [256]

[seams]
axis = "rows"
"#;

    #[test]
    fn an_atol_above_a_thousandth_of_the_typical_output_is_refused_where_it_is_given() {
        // a + b of two standard normals: |out| has a median near 0.95
        let ok = Contract::parse("contracts/t.toml", &CONTRACT.replace("ATOL", "5e-4")).unwrap();
        assert!(check_absolute_tolerances(&ok, 1).is_ok());
        let loose = Contract::parse("contracts/t.toml", &CONTRACT.replace("ATOL", "5e-2")).unwrap();
        let e = check_absolute_tolerances(&loose, 1).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (20, "reference.tolerance"), "{e}");
        assert!(e.message.contains("loose for `out` of record `f32`"), "{e}");
    }

    #[test]
    fn the_median_of_magnitudes() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
