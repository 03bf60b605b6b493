//! Host and device memory shared out among the units whose cases hold gigabytes: such a
//! unit's process holds its inputs, their read-backs and the oracle's values at once (about 1
//! to 1.6 times its case's tensor bytes in host memory, measured on sm_90) and its case's
//! tensors on the device, so the units that fit both run side by side and the rest wait
//! (their threads running the small units meanwhile), where one lock ran them one after another.

use std::sync::{Condvar, Mutex};

/// What a unit of a case of gigabytes holds at its peak. In host memory: each input of the
/// case in every type its records take it in (a large input is drawn once for all of them and
/// kept for the unit's records), the outputs' read-backs and the oracle's f64 values, an eighth
/// more, and the process's own (its device context, libraries, copy stages) — measured on
/// sm_90: 9.4 GB for a case of 8.25 GiB of f32 partials, 13.5 GB for an 8 GiB f32 table whose
/// records also take it in bf16 (4 GiB). On the device: the case's tensors (a kept input in
/// another type is freed before the next is allocated) and gate 5's pieces of its row tensors
/// beside them (1.75 GiB of rows for a case of 8.25 GiB), as numerator and denominator.
/// Counting every case at twice its largest record's bytes, as this did before, took the five
/// units of gigabytes of a GPU run to hold 65 GiB, past half of a 128 GiB host's memory: one
/// of them waited for another to end (inferred from the budget, not seen: nothing said so then).
const HOST_OVER_KEPT: (u64, u64) = (9, 8);
const HOST_OF_A_PROCESS: u64 = 512 << 20;
pub const DEVICE_OF_CASE_BYTES: (u64, u64) = (5, 4);

/// The share of the host memory available when the run starts, and of the device's memory,
/// that the large units may hold together: the rest is the other jobs' (a GPU run's sixteen
/// small ones hold well under 1 GiB each), the driver's, the contexts' and the page cache's.
const SHARE_OF_HOST: (u64, u64) = (2, 3);
const SHARE_OF_DEVICE: (u64, u64) = (3, 4);

/// Host and device bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bytes {
    pub host: u64,
    pub device: u64,
}

impl Bytes {
    /// What a unit whose case of gigabytes keeps `kept_on_host` bytes of tensors in host
    /// memory, and whose largest record's case has `case_bytes` of them, is taken to hold.
    pub fn of_case(kept_on_host: u64, case_bytes: u64) -> Bytes {
        let share = |bytes: u64, (numerator, denominator): (u64, u64)| bytes.saturating_mul(numerator) / denominator;
        Bytes {
            host: share(kept_on_host, HOST_OVER_KEPT).saturating_add(HOST_OF_A_PROCESS),
            device: share(case_bytes, DEVICE_OF_CASE_BYTES),
        }
    }

    fn fits_beside(self, held: Bytes, total: Bytes) -> bool {
        held.host.saturating_add(self.host) <= total.host && held.device.saturating_add(self.device) <= total.device
    }
}

/// Bytes the large units may hold at once, and how many they hold now.
pub struct MemoryBudget {
    total: Bytes,
    held: Mutex<Bytes>,
    given_back: Condvar,
}

/// A unit's bytes of the budget, given back when dropped.
pub struct Held<'a> {
    budget: &'a MemoryBudget,
    bytes: Bytes,
}

impl MemoryBudget {
    pub fn new(total: Bytes) -> MemoryBudget {
        MemoryBudget { total, held: Mutex::new(Bytes::default()), given_back: Condvar::new() }
    }

    /// Two thirds of what `/proc/meminfo` says is available now (or of what this process's memory
    /// cgroup has left below its limit, where that is less), and three quarters of the device's
    /// memory (`None`: a backend that cannot say). What cannot be read counts as nothing: then
    /// every large unit runs alone, as `hold` admits one whatever its size.
    pub fn of_this_machine(device_memory: Option<u64>) -> MemoryBudget {
        let available = std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(available_bytes).unwrap_or(0);
        let available = cgroup_room().map_or(available, |room| room.min(available));
        let share = |bytes: u64, (numerator, denominator): (u64, u64)| bytes / denominator * numerator;
        MemoryBudget::new(Bytes { host: share(available, SHARE_OF_HOST), device: share(device_memory.unwrap_or(0), SHARE_OF_DEVICE) })
    }

    pub fn total(&self) -> Bytes {
        self.total
    }

    /// Waits until `bytes` fit beside what is held, or nothing is held (a unit larger than
    /// the whole budget still runs, alone), and holds them.
    pub fn hold(&self, bytes: Bytes) -> Held<'_> {
        self.hold_first(&[bytes]).map(|(_, held)| held).expect("one wanted")
    }

    /// The first of `wanted` (each unit's bytes, in the order they should start) that fits
    /// beside what is held now, held, with its index; where none fits, waits for bytes given
    /// back. A unit that holds none of the budget always fits, so a thread of the run never
    /// waits for a large unit while a small one is left to run (a 16 GiB card holds one unit
    /// of an 8 GiB case: its other jobs ran the small units, not waited). `None` for nothing
    /// wanted.
    pub fn hold_first(&self, wanted: &[Bytes]) -> Option<(usize, Held<'_>)> {
        if wanted.is_empty() {
            return None;
        }
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let fits = |bytes: &Bytes| *bytes == Bytes::default() || *held == Bytes::default() || bytes.fits_beside(*held, self.total);
            if let Some(index) = wanted.iter().position(fits) {
                let bytes = wanted[index];
                held.host += bytes.host;
                held.device += bytes.device;
                return Some((index, Held { budget: self, bytes }));
            }
            held = self.given_back.wait(held).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut held = self.budget.held.lock().unwrap_or_else(|p| p.into_inner());
        held.host -= self.bytes.host;
        held.device -= self.bytes.device;
        self.budget.given_back.notify_all();
    }
}

/// What this process's memory cgroup may still take (its limit less its usage), where one
/// limits it: inside a container `/proc/meminfo` shows the host's memory, often far more than
/// the container's limit, and a unit past that limit is killed, not slowed. cgroup v2, then v1.
fn cgroup_room() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let v2 = || room_below(&read("/sys/fs/cgroup/memory.max")?, &read("/sys/fs/cgroup/memory.current")?);
    let v1 = || room_below(&read("/sys/fs/cgroup/memory/memory.limit_in_bytes")?, &read("/sys/fs/cgroup/memory/memory.usage_in_bytes")?);
    v2().or_else(v1)
}

/// A cgroup's limit less its usage, from their files' texts; `None` where it has no limit
/// (v2's `max`, v1's page-rounded 2^63) or a text is not a number.
fn room_below(limit: &str, usage: &str) -> Option<u64> {
    let limit: u64 = limit.trim().parse().ok().filter(|bytes| *bytes < 1 << 62)?;
    Some(limit.saturating_sub(usage.trim().parse().ok()?))
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
        let budget = MemoryBudget::of_this_machine(Some(80 << 30));
        assert!(budget.total().host > 0, "this machine's /proc/meminfo has MemAvailable");
        assert_eq!(budget.total().device, 60 << 30);
        assert_eq!(MemoryBudget::of_this_machine(None).total().device, 0, "a device that cannot say: one unit at a time");
        assert_eq!(Bytes::of_case(12 << 30, 8 << 30), Bytes { host: (27 << 29) + (1 << 29), device: 10 << 30 });
    }

    #[test]
    fn a_memory_cgroup_limit_is_read_as_the_room_below_it() {
        assert_eq!(room_below("137438953472\n", "4294967296\n"), Some(124 << 30));
        assert_eq!(room_below("max\n", "4294967296\n"), None, "v2: no limit");
        assert_eq!(room_below("9223372036854771712\n", "972902400\n"), None, "v1: no limit");
        assert_eq!(room_below("1000", "2000"), Some(0), "over its limit: no room");
        assert_eq!(room_below("1000", "many"), None);
    }

    /// Runs units of `sizes` on threads of their own and gives the most bytes held at once.
    fn most_held_at_once(budget: &MemoryBudget, sizes: &[Bytes]) -> u64 {
        let (most, now) = (AtomicU64::new(0), AtomicU64::new(0));
        let run = |bytes: Bytes| {
            let _held = budget.hold(bytes);
            let at = now.fetch_add(bytes.host, Ordering::SeqCst) + bytes.host;
            most.fetch_max(at, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(30));
            now.fetch_sub(bytes.host, Ordering::SeqCst);
        };
        std::thread::scope(|scope| {
            for bytes in sizes {
                let run = &run;
                scope.spawn(move || run(*bytes));
            }
        });
        assert_eq!(*budget.held.lock().unwrap(), Bytes::default(), "every unit gave its bytes back");
        most.load(Ordering::SeqCst)
    }

    /// The first unit that fits is given: a small one (none of the budget) past a large one
    /// that must wait, even beside a unit larger than the whole budget; where none fits, the
    /// thread waits for bytes given back.
    #[test]
    fn the_first_unit_that_fits_is_given_and_a_small_one_never_waits() {
        let both = |host, device| Bytes { host, device };
        let small = Bytes::default();
        let budget = MemoryBudget::new(both(10, 10));
        assert!(budget.hold_first(&[]).is_none());
        let (at, first) = budget.hold_first(&[both(6, 1), both(6, 1), small]).unwrap();
        assert_eq!(at, 0);
        let (at, _small) = budget.hold_first(&[both(6, 1), small]).unwrap();
        assert_eq!(at, 1, "6 does not fit beside 6 of 10: the small unit goes first");
        let (at, third) = budget.hold_first(&[both(6, 1), both(3, 10), both(3, 1)]).unwrap();
        assert_eq!(at, 2, "3 fits, but 10 of the device's 10 not beside 1");
        drop(third);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| budget.hold_first(&[both(6, 1)]).map(|(at, _)| at));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!waiter.is_finished(), "6 waits while 6 is held");
            drop(first);
            assert_eq!(waiter.join().unwrap(), Some(0), "and goes once it is given back");
        });
        let _alone = budget.hold(both(25, 1));
        assert_eq!(budget.hold_first(&[both(1, 1), small]).unwrap().0, 1, "beside one past the budget, a small one still goes");
    }

    /// Units that fit run side by side, one that does not waits for the others to give their
    /// bytes back, and one larger than the whole budget runs alone; host and device alike.
    #[test]
    fn units_hold_the_budget_side_by_side_while_they_fit() {
        let both = |host, device| Bytes { host, device };
        let budget = MemoryBudget::new(both(10, 100));
        assert_eq!(most_held_at_once(&budget, &[both(4, 1); 4]), 8, "two of 4 fit in 10, a third waits");
        assert!([25, 3].contains(&most_held_at_once(&budget, &[both(25, 1), both(3, 1)])), "25 is past the budget: it runs alone");
        let device_bound = MemoryBudget::new(both(100, 10));
        assert_eq!(most_held_at_once(&device_bound, &[both(1, 6); 3]), 1, "6 and 6 of the device's 10 do not fit: one at a time");
        let unknown_device = MemoryBudget::new(both(100, 0));
        assert_eq!(most_held_at_once(&unknown_device, &[both(1, 1); 3]), 1, "no device budget: one at a time");
    }
}
