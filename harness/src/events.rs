//! What the runner tells as a run goes, beside its record results: each finished case, and
//! where asked (`--dump`) each case's data. The `Event` enum itself is the runner's.

use std::cell::RefCell;

use serde::Serialize;

use crate::runner::Event;

/// A case of a record that finished: which, and how many failures it had.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct CaseDone {
    pub op: String,
    pub record: String,
    /// The bug of the control, for a control's case.
    pub control: Option<String>,
    pub case_index: usize,
    pub case: String,
    pub planted: bool,
    pub failures: usize,
}

/// One tensor of a case as bytes: an input, an output (its first launch) or the oracle's values.
pub struct TensorData<'a> {
    pub name: &'a str,
    pub dtype: engine::DType,
    pub shape: &'a [usize],
    pub bytes: &'a [u8],
}

/// What a case ran on and gave, for `--dump`.
pub struct CaseData<'a> {
    pub op: &'a str,
    pub record: &'a str,
    pub control: Option<&'a str>,
    pub case_index: usize,
    pub planted: bool,
    pub inputs: Vec<TensorData<'a>>,
    pub outputs: Vec<TensorData<'a>>,
    /// The oracle's f64 values of each output.
    pub oracle: Vec<(&'a str, &'a [usize], &'a [f64])>,
}

/// Told of each case as it finishes (and, where asked, of its data): how an isolated child
/// and an in-process run pass case events on.
pub trait CaseWatcher {
    fn case_finished(&self, done: &CaseDone);
    fn case_data(&self, _data: &CaseData) {}
}

/// An in-process run's event callback, shared by the run and the case watcher of its records.
pub(crate) struct Forward<'a, 'f>(RefCell<&'a mut (dyn FnMut(&Event) + 'f)>);

impl<'a, 'f> Forward<'a, 'f> {
    pub fn new(on_event: &'a mut (dyn FnMut(&Event) + 'f)) -> Self {
        Forward(RefCell::new(on_event))
    }

    pub fn emit(&self, event: &Event) {
        (self.0.borrow_mut())(event)
    }
}

impl CaseWatcher for Forward<'_, '_> {
    fn case_finished(&self, done: &CaseDone) {
        self.emit(&Event::CaseFinished(done))
    }
    fn case_data(&self, data: &CaseData) {
        self.emit(&Event::CaseData(data))
    }
}
