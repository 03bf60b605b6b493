//! What a run selects of the contracts: `--only` ops, `--record` names, one `--case`, and a
//! CI job's share of the ops (`--partition k/n`), decided the same way in every runner.

use std::fmt;
use std::str::FromStr;

use crate::contract::{Contract, ContractError, Record};
use crate::runner::Settings;

/// Job `index` (1-based) of `count`: the ops whose name hashes to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub index: u32,
    pub count: u32,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    #[error("`{0}` is not k/n (two whole numbers, as in 2/4)")]
    Form(String),
    #[error("`{0}`: k must be from 1 to n, and n at least 1")]
    Range(String),
}

impl FromStr for Partition {
    type Err = PartitionError;

    fn from_str(text: &str) -> Result<Partition, PartitionError> {
        let form = || PartitionError::Form(text.to_string());
        let (k, n) = text.split_once('/').ok_or_else(form)?;
        let (index, count): (u32, u32) = (k.trim().parse().map_err(|_| form())?, n.trim().parse().map_err(|_| form())?);
        if count == 0 || index == 0 || index > count {
            return Err(PartitionError::Range(text.to_string()));
        }
        Ok(Partition { index, count })
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Partition {
    /// Whether `op` is this job's. By a hash of the op's name alone, so an op stays in its job
    /// when contracts are added or removed (a job's share is not balanced by count, only stable).
    pub fn holds(&self, op: &str) -> bool {
        fnv1a(op.as_bytes()) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

/// FNV-1a, 64 bits: written out here so that no library's hash change moves an op to another job
/// (or renames the harness's own cached kernel source).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

impl Settings {
    /// The op runs: named by `--only` (or no `--only`), and in this job's partition.
    pub fn selects_op(&self, op: &str) -> bool {
        (self.only.is_empty() || self.only.iter().any(|o| o == op)) && self.partition.is_none_or(|p| p.holds(op))
    }

    /// The record runs: named by `--record` (or no `--record`).
    pub fn selects_record(&self, name: &str) -> bool {
        self.records.is_empty() || self.records.iter().any(|r| r == name)
    }

    /// The case runs: the one `--case` names (or no `--case`).
    pub fn selects_case(&self, index: usize) -> bool {
        self.case.is_none_or(|c| c == index)
    }

    /// `--case N` past a contract's cases: said at its `[shapes].cases`, and the contract not run.
    pub fn drop_cases_out_of_range(&self, contracts: &mut Vec<Contract>, errors: &mut Vec<ContractError>) {
        let Some(case) = self.case else { return };
        contracts.retain(|c| {
            let fits = case < c.cases.len();
            if !fits {
                errors.push(ContractError {
                    file: c.file.clone(),
                    line: 1,
                    key: "shapes.cases".into(),
                    message: format!("--case {case}: the contract has {} cases (0 to {})", c.cases.len(), c.cases.len().saturating_sub(1)),
                });
            }
            fits
        });
    }

    /// The records of a contract that run.
    pub fn records_of<'c>(&self, contract: &'c Contract) -> impl Iterator<Item = &'c Record> {
        let names = self.records.clone();
        contract.records.iter().filter(move |r| names.is_empty() || names.contains(&r.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_parse_and_refuse_what_is_not_k_of_n() {
        assert_eq!("2/4".parse::<Partition>(), Ok(Partition { index: 2, count: 4 }));
        assert_eq!("2/4".parse::<Partition>().unwrap().to_string(), "2/4");
        assert_eq!("0/4".parse::<Partition>().unwrap_err().to_string(), "`0/4`: k must be from 1 to n, and n at least 1");
        assert!(matches!("5/4".parse::<Partition>(), Err(PartitionError::Range(_))));
        assert!(matches!("1/0".parse::<Partition>(), Err(PartitionError::Range(_))));
        assert!(matches!("half".parse::<Partition>(), Err(PartitionError::Form(_))));
        assert!(matches!("1/x".parse::<Partition>(), Err(PartitionError::Form(_))));
    }

    #[test]
    fn every_op_is_in_exactly_one_job_and_stays_there_when_ops_are_added() {
        // the ops with kernels of their own are data: defined here, not left to whichever
        // test of this process happened to load the repository's contracts first
        crate::contract::define_data_ops(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts"));
        let ops: Vec<String> = engine::ops::all().iter().map(|o| o.name.to_string()).collect();
        for count in 1..=5 {
            let jobs: Vec<Partition> = (1..=count).map(|index| Partition { index, count }).collect();
            for op in &ops {
                assert_eq!(jobs.iter().filter(|j| j.holds(op)).count(), 1, "{op} in {count} jobs");
            }
        }
        // an op's job is a function of its name alone: pinned, since a change here moves CI
        // jobs' shares (and every job of 2, 3 and 4 has an op of the engine's today)
        let job_of = |op: &str, count| (1..=count).find(|&index| Partition { index, count }.holds(op)).unwrap();
        assert_eq!(["tf_add", "tf_rms", "tf_rope", "projection_bf16"].map(|op| job_of(op, 4)), [4, 3, 1, 3]);
        for count in 2..=4 {
            assert!((1..=count).all(|index| ops.iter().any(|op| Partition { index, count }.holds(op))), "an empty job of {count}");
        }
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
