//! How every bench of the workspace measures (the harness's benches include this file too):
//! whether this run measures at all (`cargo bench` passes `--bench`; `cargo test` runs each
//! bench once, small, to keep them working), and wall time or process CPU time.
//!
//! CPU time is for a machine shared with other work: the time this process's threads ran,
//! which busy neighbours inflate far less than wall time (a run on several threads counts each
//! one's time). `KERNEL_CONTRACTS_BENCH_CPU_TIME=1` picks it; its groups are named
//! `... (CPU time)`, so that criterion never compares them with wall-time figures.

use criterion::Criterion;
use criterion::measurement::{Measurement, ValueFormatter, WallTime};

/// `cargo bench` runs a bench binary with `--bench`; `cargo test` without it.
pub fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn cpu_time() -> bool {
    std::env::var("KERNEL_CONTRACTS_BENCH_CPU_TIME").is_ok_and(|v| v == "1")
}

/// A group's name in this run: `name`, or `name (CPU time)`.
pub fn group(name: &str) -> String {
    if cpu_time() { format!("{name} (CPU time)") } else { name.to_string() }
}

/// Runs `measure` under wall time, or under process CPU time when asked, with criterion
/// configured from the command line.
pub fn criterion(measure: impl Measure) {
    if cpu_time() {
        measure.run(Criterion::default().with_measurement(ProcessCpuTime).configure_from_args());
    } else {
        measure.run(Criterion::default().configure_from_args());
    }
}

/// A bench's measurements, under whichever measurement [`criterion`] picked.
pub trait Measure {
    fn run<M: Measurement + 'static>(self, c: Criterion<M>);
}

struct ProcessCpuTime;

fn nanoseconds() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a timespec to write into; Linux has this clock
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Wall time's formatter reads nanoseconds, as these values are.
static NANOSECONDS: WallTime = WallTime;

impl Measurement for ProcessCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        nanoseconds()
    }
    fn end(&self, start: u64) -> u64 {
        nanoseconds() - start
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        NANOSECONDS.formatter()
    }
}
