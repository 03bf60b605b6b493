//! Host memory shared out among the units whose cases hold gigabytes: such a unit's process
//! holds its inputs, their read-backs and the oracle's values at once (about 1 to 1.6 times
//! its case's tensor bytes, measured on sm_90), so the units that fit the machine's available
//! memory run side by side and the rest wait, where one lock ran them one after another.

use std::sync::{Condvar, Mutex};

/// How much of a case's tensor bytes its process is taken to hold at its peak (measured: 9.4
/// GB for a case of 8.25 GiB, 13.5 GB for an 8 GiB table whose records also make a 4 GiB
/// one in another type).
pub const FOOTPRINT_OF_CASE_BYTES: u64 = 2;

/// The share of the memory available when the run starts that the large units may hold
/// together: the rest is the other jobs', the driver's and the page cache's.
const SHARE_OF_AVAILABLE: (u64, u64) = (1, 2);

/// Bytes the large units may hold at once, and how many they hold now.
pub struct MemoryBudget {
    total: u64,
    held: Mutex<u64>,
    given_back: Condvar,
}

/// A unit's bytes of the budget, given back when dropped.
pub struct Held<'a> {
    budget: &'a MemoryBudget,
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(total: u64) -> MemoryBudget {
        MemoryBudget { total, held: Mutex::new(0), given_back: Condvar::new() }
    }

    /// Half of what `/proc/meminfo` says is available now; nothing where it cannot be read
    /// (then every large unit runs alone, as `hold` admits one whatever its size).
    pub fn of_this_machine() -> MemoryBudget {
        let available = std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(available_bytes).unwrap_or(0);
        MemoryBudget::new(available / SHARE_OF_AVAILABLE.1 * SHARE_OF_AVAILABLE.0)
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Waits until `bytes` fit beside what is held, or nothing is held (a unit larger than
    /// the whole budget still runs, alone), and holds them.
    pub fn hold(&self, bytes: u64) -> Held<'_> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        while *held > 0 && held.saturating_add(bytes) > self.total {
            held = self.given_back.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        *held += bytes;
        Held { budget: self, bytes }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut held = self.budget.held.lock().unwrap_or_else(|p| p.into_inner());
        *held -= self.bytes;
        self.budget.given_back.notify_all();
    }
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn available_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|line| line.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let kib: u64 = words.next()?.parse().ok()?;
    (words.next() == Some("kB")).then_some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use super::*;

    #[test]
    fn available_memory_is_read_from_meminfo_in_bytes() {
        let text = "MemTotal:       131072000 kB\nMemFree:         1000 kB\nMemAvailable:   120000000 kB\nBuffers: 1 kB\n";
        assert_eq!(available_bytes(text), Some(120_000_000 * 1024));
        assert_eq!(available_bytes("MemTotal: 5 kB\n"), None);
        assert_eq!(available_bytes("MemAvailable: many kB\n"), None);
        assert_eq!(available_bytes("MemAvailable: 5 MB\n"), None);
        assert!(MemoryBudget::of_this_machine().total() > 0, "this machine's /proc/meminfo has MemAvailable");
    }

    /// Units that fit run side by side, one that does not waits for the others to give their
    /// bytes back, and one larger than the whole budget runs alone.
    #[test]
    fn units_hold_the_budget_side_by_side_while_they_fit() {
        let budget = MemoryBudget::new(10);
        let (most, now) = (AtomicU64::new(0), AtomicU64::new(0));
        let run = |bytes: u64| {
            let _held = budget.hold(bytes);
            let at = now.fetch_add(bytes, Ordering::SeqCst) + bytes;
            most.fetch_max(at, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(30));
            now.fetch_sub(bytes, Ordering::SeqCst);
        };
        std::thread::scope(|scope| {
            for bytes in [4, 4, 4, 4] {
                scope.spawn(move || run(bytes));
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 8, "two of 4 fit in 10, a third waits");
        most.store(0, Ordering::SeqCst);
        std::thread::scope(|scope| {
            for bytes in [25, 3] {
                scope.spawn(move || run(bytes));
            }
        });
        assert!([25, 3].contains(&most.load(Ordering::SeqCst)), "25 is past the budget: it runs alone");
        assert_eq!(*budget.held.lock().unwrap(), 0);
    }
}
