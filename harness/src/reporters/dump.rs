//! `--dump DIR`: each case's inputs, its outputs as the first launch left them, and the
//! oracle's values, as NumPy `.npy` files (format 1.0, written here). f16 and bf16 tensors are
//! stored as their raw 16-bit patterns (`<u2`, the dtype in the file name: `out.bf16-bits.npy`),
//! so NaN payloads and guard patterns survive; the oracle is f64.

use std::path::{Path, PathBuf};

use engine::DType;

use super::{Output, Reporter, Written, slug};
use crate::report::{self, Summary};
use crate::runner::{CaseData, Event, RunReport, TensorData};

pub struct DumpReporter {
    dir: PathBuf,
    files: usize,
    /// The first file that could not be written, and why: the run goes on, and says so.
    failed: Option<String>,
}

impl DumpReporter {
    pub fn new(dir: PathBuf) -> DumpReporter {
        DumpReporter { dir, files: 0, failed: None }
    }

    fn dump(&mut self, data: &CaseData) {
        let folder = self.dir.join(case_folder(data));
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for t in &data.inputs {
            files.push((format!("input-{}", file_name(t)), npy_of(t)));
        }
        for t in &data.outputs {
            files.push((format!("output-{}", file_name(t)), npy_of(t)));
        }
        for (name, shape, values) in &data.oracle {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            files.push((format!("oracle-{name}.f64.npy"), npy("<f8", shape, &bytes)));
        }
        for (name, bytes) in files {
            let path = folder.join(name);
            match report::write_bytes(&path, &bytes) {
                Ok(()) => self.files += 1,
                Err(e) => {
                    self.failed.get_or_insert_with(|| format!("{}: {e}", path.display()));
                }
            }
        }
    }
}

impl Reporter for DumpReporter {
    fn event(&mut self, event: &Event) {
        if let Event::CaseData(data) = event {
            self.dump(data);
        }
    }

    fn write(&mut self, _run: &RunReport, _summary: &Summary) -> Option<Written> {
        let outcome = match &self.failed {
            Some(why) => Err(why.clone()),
            None => Ok(Some(format!("{} files", self.files))),
        };
        Some(Written { output: Output::Dump, path: self.dir.clone(), outcome })
    }
}

/// `<op>/<record or control bug>/case<N>` (`-planted` for the copy with NaN and infinities).
pub fn case_folder(data: &CaseData) -> PathBuf {
    let whose = match data.control {
        Some(bug) => format!("control-{}", slug(bug)),
        None => slug(data.record),
    };
    let case = format!("case{}{}", data.case_index, if data.planted { "-planted" } else { "" });
    Path::new(data.op).join(whose).join(case)
}

/// `x.f32.npy`, `out.bf16-bits.npy`.
fn file_name(t: &TensorData) -> String {
    match t.dtype {
        DType::F16 | DType::Bf16 => format!("{}.{}-bits.npy", t.name, t.dtype.name()),
        _ => format!("{}.{}.npy", t.name, t.dtype.name()),
    }
}

/// NumPy's type string of a tensor's bytes as stored.
fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 | DType::Bf16 => "<u2",
        DType::I32 => "<i4",
        DType::U32 => "<u4",
        DType::U8 => "|u1",
    }
}

fn npy_of(t: &TensorData) -> Vec<u8> {
    npy(descr(t.dtype), t.shape, t.bytes)
}

/// An `.npy` file, format 1.0: the magic, the version, the header's length, a header of a
/// Python dict padded with spaces to a multiple of 64 bytes with its newline, then the data
/// in C order.
pub fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_are_aligned_and_hold_the_type_and_shape() {
        let file = npy("<f4", &[2, 3], &[0; 24]);
        assert_eq!(&file[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([file[8], file[9]]) as usize;
        assert_eq!((10 + header_len) % 64, 0);
        let header = std::str::from_utf8(&file[10..10 + header_len]).unwrap();
        assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"), "{header}");
        assert!(header.ends_with('\n'));
        assert_eq!(file.len(), 10 + header_len + 24);
        let one = npy("<u2", &[5], &[0; 10]);
        assert!(String::from_utf8_lossy(&one).contains("'shape': (5,)"));
        assert!(String::from_utf8_lossy(&npy("<f8", &[], &[0; 8])).contains("'shape': ()"));
    }
}
