//! The threads the engine and the harness start for a moment inside one job (a build's, a
//! copy's DMA, a hash beside a send), all under one name: a worker's picture of its own
//! threads, taken between jobs, waits for such a thread to end instead of counting it as its
//! own (one still ending, joined but not yet gone from the task list, was later "gone").

/// The name every such thread takes (Linux keeps 15 bytes of it).
pub const BRIEF: &str = "kc-brief";

/// `work` on a new thread of `scope` named [`BRIEF`]; panics where no thread can start, as
/// `Scope::spawn` does.
pub fn brief_scoped<'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new().name(BRIEF.into()).spawn_scoped(scope, work).expect("failed to spawn a thread")
}

/// `work` on a new thread named [`BRIEF`]; panics where no thread can start, as `spawn` does.
pub fn brief<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    std::thread::Builder::new().name(BRIEF.into()).spawn(work).expect("failed to spawn a thread")
}
