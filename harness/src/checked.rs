//! What a case's outputs are checked against, from its contract's reference: a named oracle on
//! the decoded inputs; a C++ reference function on the same values, in double precision; or
//! the outputs of the kernel this one replaces, launched on the same input bytes, whose bits a
//! replacement must match (a NaN's payload and a zero's sign included).

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::DType;
use engine::backend::{Backend, Schedule};
use engine::ops::{OpCall, Role};
use engine::tensor::Tensor;

use crate::builds::Checker;
use crate::contract::{Case, Contract, Record, Reference, params_for};
use crate::format;
use crate::gates::Failure;
use crate::oracle::{InputValues, OracleInput, Outputs, Params};
use crate::runner::error_chain;

/// Each output's bytes as a replaced kernel wrote them.
pub(crate) type Bits = BTreeMap<String, Vec<u8>>;

/// The parameters an oracle read, each with its value's bits (none: it had none).
pub(crate) type ParamsRead = Vec<(String, Option<u64>)>;

/// The values each output must have for this case, and for a replacement the bits too; for
/// an oracle of the harness, the parameters it read (the values follow from those alone).
pub(crate) fn want(
    checker: &Checker,
    backend: &dyn Backend,
    contract: &Contract,
    record: &Record,
    case: &Case,
    values: &BTreeMap<String, InputValues>,
    bytes: &BTreeMap<String, Arc<Vec<u8>>>,
) -> Result<(Outputs, Option<Bits>, ParamsRead), String> {
    let name = contract.reference.name();
    match checker {
        Checker::Oracle(function) => {
            let params = Params::new(&record.params);
            let input = OracleInput { symbols: &case.symbols, params: &params, inputs: values };
            function(&input).map(|w| (w, None, params.read())).map_err(|e| format!("oracle {name}: {e}"))
        }
        Checker::Cpp(library) => {
            let op = contract.op;
            let mut tensors: Vec<Vec<f64>> = op
                .tensors
                .iter()
                .map(|t| match t.role {
                    Role::Input => values[t.name].whole().to_vec(),
                    // an element the function leaves unwritten compares as NaN, which no value matches
                    Role::Output => vec![f64::NAN; case.shapes[t.name].iter().product()],
                })
                .collect();
            let symbols: Vec<i64> = op.symbols.iter().map(|s| case.symbols[*s]).collect();
            let params: Vec<f64> = op.params.iter().map(|p| record.params[p.name]).collect();
            library.call(&mut tensors, &symbols, &params)?;
            let outputs = op.tensors.iter().zip(tensors).filter(|(t, _)| t.role == Role::Output).map(|(t, v)| (t.name.to_string(), v));
            Ok((outputs.collect(), None, Vec::new()))
        }
        Checker::Replaces { op, module } => {
            let text = |e: engine::EngineError| format!("the kernel of `{}`, which this one replaces: {}", op.name, error_chain(&e));
            let mut tensors = BTreeMap::new();
            for t in op.tensors {
                let mut tensor = Tensor::allocate(backend, record.dtypes[t.name], &case.shapes[t.name]).map_err(text)?;
                match bytes.get(t.name) {
                    Some(input) => tensor.write(input).map_err(text)?,
                    None => tensor.fill(&vec![0xff; tensor.dtype.size()]).map_err(text)?,
                }
                tensors.insert(t.name.to_string(), tensor);
            }
            let params = params_for(op, record);
            let call = OpCall {
                op,
                backend,
                module: Some(module.as_ref()),
                symbols: &case.symbols,
                params: &params,
                tensors: &tensors,
                schedule: Schedule::default(),
            };
            (op.launch)(&call).map_err(text)?;
            let (mut want, mut bits) = (Outputs::new(), Bits::new());
            for t in op.tensors.iter().filter(|t| t.role == Role::Output) {
                let tensor = &tensors[t.name];
                let read = tensor.read().map_err(text)?;
                want.insert(t.name.to_string(), read.chunks(tensor.dtype.size()).map(|c| tensor.dtype.decode(c)).collect());
                bits.insert(t.name.to_string(), read);
            }
            Ok((want, Some(bits), Vec::new()))
        }
    }
}

/// A replacement's output against its predecessor's bits: how many elements differ, and the
/// first, as values and bits.
pub(crate) fn bits_differ(contract: &Contract, dtype: DType, shape: &[usize], got: &[u8], want: &[u8]) -> Option<Failure> {
    let Reference::Replaces(replaced) = &contract.reference else { return None };
    let size = dtype.size();
    let differ: Vec<usize> = got.chunks(size).zip(want.chunks(size)).enumerate().filter(|(_, (a, b))| a != b).map(|(i, _)| i).collect();
    let first = *differ.first()?;
    let at = |b: &[u8]| format::value_and_bits(dtype, dtype.decode(&b[first * size..]), dtype.bits(&b[first * size..]));
    Some(Failure {
        count: differ.len(),
        total: got.len() / size,
        first: Some(format::coordinates(shape, first)),
        message: format!(
            "{} of {} elements differ in bits from `{}`'s, first {}: got {} want {}",
            format::count(differ.len()),
            format::count(got.len() / size),
            replaced.op.name,
            format::coordinates_text(shape, first),
            at(got),
            at(want)
        ),
    })
}
