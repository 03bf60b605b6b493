//! An `exit()` nobody planned (a kernel calling it, a library's fatal path) must not pass for
//! a finished run: while the guard is armed, an atexit handler runs a last hook, says why on
//! standard error and ends the process with a non-zero status.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The status of a process that some code ended with `exit()` while the guard was armed.
pub const EXIT_CALLED_STATUS: i32 = 3;

static ARMED: AtomicBool = AtomicBool::new(false);
static GUARD: OnceLock<Guard> = OnceLock::new();

struct Guard {
    message: String,
    /// Runs before the message (the binary writes what it has of its report there).
    last_words: Option<Box<dyn Fn() + Send + Sync>>,
}

/// Arms the guard: from now until `disarm`, an `exit()` anywhere in the process prints
/// `message` and ends it with `EXIT_CALLED_STATUS`. The first call sets the message and hook.
pub fn arm(message: &str, last_words: Option<Box<dyn Fn() + Send + Sync>>) {
    if GUARD.set(Guard { message: message.to_string(), last_words }).is_ok() {
        // SAFETY: registers a handler with C linkage that never unwinds.
        unsafe {
            libc::atexit(on_exit);
        }
    }
    ARMED.store(true, Ordering::SeqCst);
}

/// The process is about to end as planned (the SUMMARY is out, the child's job is done).
pub fn disarm() {
    ARMED.store(false, Ordering::SeqCst);
}

pub fn is_armed() -> bool {
    ARMED.load(Ordering::SeqCst)
}

extern "C" fn on_exit() {
    if !ARMED.swap(false, Ordering::SeqCst) {
        return;
    }
    let Some(guard) = GUARD.get() else { return };
    if let Some(hook) = &guard.last_words {
        // a panic must not unwind into libc's exit
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook));
    }
    let line = format!("{}\n", guard.message);
    // SAFETY: writes a valid buffer to standard error, then ends the process without
    // running the remaining exit handlers (one of them may be what hangs).
    unsafe {
        libc::write(2, line.as_ptr().cast(), line.len());
        libc::_exit(EXIT_CALLED_STATUS);
    }
}
