//! Where a record's time goes: each case's wall time split into the phases of `run_case`
//! (inputs, copies to and from the device, launches, oracle, gates), summed per record, the
//! start-up of the process that ran it, and the `--timings` table that ranks records by them.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::runner::{RunReport, Timing};

/// Seconds spent in each phase of one case, or summed over a record's cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    /// Generating the inputs (or taking them from the run's cache) and decoding them to f64.
    pub inputs: f64,
    /// Copying inputs to the device and poisoning outputs before each launch.
    pub upload: f64,
    pub launches: f64,
    /// Copying outputs back after each launch, and inputs back to see they did not change.
    pub download: f64,
    pub oracle: f64,
    /// Every comparison: repeats, the oracle's tolerance, non-finite outputs, guard bands.
    pub gates: f64,
    /// From the job being handed to a process (a new one: its start, its backend's; a worker
    /// of the pool: none of that) to its first record starting: loading the contract, the
    /// cache lookups, the limits, loading the kernels. Charged to the job's first record;
    /// 0 for a run in process.
    #[serde(default)]
    pub startup: f64,
}

impl Phases {
    pub fn add(&mut self, other: &Phases) {
        self.inputs += other.inputs;
        self.upload += other.upload;
        self.launches += other.launches;
        self.download += other.download;
        self.oracle += other.oracle;
        self.gates += other.gates;
        self.startup += other.startup;
    }

    pub fn total(&self) -> f64 {
        self.inputs + self.upload + self.launches + self.download + self.oracle + self.gates + self.startup
    }

    fn columns(&self) -> [f64; 7] {
        [self.startup, self.inputs, self.upload, self.launches, self.download, self.oracle, self.gates]
    }
}

/// A running clock whose laps are charged to phases: `phases.oracle += lap.take()`.
pub struct Lap(Instant);

impl Lap {
    pub fn start() -> Lap {
        Lap(Instant::now())
    }

    /// Seconds since the last lap (or the start), and a new lap begins.
    pub fn take(&mut self) -> f64 {
        let now = Instant::now();
        let seconds = now.duration_since(self.0).as_secs_f64();
        self.0 = now;
        seconds
    }
}

/// The run's kernel builds and its records, as the closing line and the `--timings` table say
/// them: side by side where the records started while kernels still built (a cold run: each
/// unit starts once its own kernels are built), else one after the other.
/// `modules`: with the count of modules built.
pub fn builds_and_records(timing: &Timing, modules: bool, records: &str) -> String {
    let (builds, run) = (timing.build_seconds, timing.run_seconds);
    let modules = match (modules, timing.modules_built) {
        (false, _) => String::new(),
        (true, 1) => " (1 module)".to_string(),
        (true, n) => format!(" ({} modules)", crate::format::count(n)),
    };
    // 10 ms for the start of the first unit after its builds
    let joined = if builds + run > timing.total_seconds + 0.01 { " beside" } else { "," };
    format!("kernel builds {builds:.2} s{modules}{joined} {records} {run:.2} s")
}

/// ` after 0.15 s of this process's start (...)`, where the run knows it.
fn before_the_run(timing: &Timing) -> String {
    if timing.before_seconds < 0.005 {
        return String::new();
    }
    format!(" after {:.2} s of this process's own start (the contracts' data ops defined, its backend opened)", timing.before_seconds)
}

/// `, N processes started (A ahead of the first jobs, ...)`, or nothing in one process.
fn processes_started(timing: &Timing) -> String {
    let starts = &timing.process_starts;
    let spares = if starts.spare == 1 { "as a spare" } else { "as spares" };
    let parts: Vec<String> = [
        (starts.ahead, "ahead of the first jobs"),
        (starts.build, "for the builds"),
        (starts.spare, spares),
        (starts.on_demand, "on demand"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{} {why}", crate::format::count(*n)))
    .collect();
    let why = if parts.is_empty() { String::new() } else { format!(" ({})", parts.join(", ")) };
    match timing.processes {
        0 => String::new(),
        1 => format!(", 1 process started{why}"),
        n => format!(", {} processes started{why}", crate::format::count(n)),
    }
}

/// The processes that ended after a job, counted by why (the JSON names each one's unit).
fn processes_ended(timing: &Timing) -> Option<String> {
    let mut by_why: Vec<(&str, usize)> = Vec::new();
    for ended in &timing.processes_ended {
        match by_why.iter_mut().find(|(why, _)| *why == ended.why) {
            Some((_, n)) => *n += 1,
            None => by_why.push((&ended.why, 1)),
        }
    }
    by_why.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let parts: Vec<String> = by_why.iter().map(|(why, n)| format!("{} {why}", crate::format::count(*n))).collect();
    (!parts.is_empty())
        .then(|| format!("processes that ended after a job: {} ({})", crate::format::count(timing.processes_ended.len()), parts.join("; ")))
}

/// The units of cases of gigabytes and the memory they shared: when each ran, so that one that
/// waited for another's bytes shows (the JSON has the same, in bytes).
fn large_units(timing: &Timing) -> Option<String> {
    let large = &timing.large_units;
    let gib = |bytes: u64| format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64);
    let each: Vec<String> = large
        .units
        .iter()
        .map(|u| format!("{} {:.2} to {:.2} s ({} host, {} device)", u.unit, u.started, u.ended, gib(u.host), gib(u.device)))
        .collect();
    (!each.is_empty()).then(|| {
        let budget = format!("{} of host memory and {} of the device's at once", gib(large.host_budget), gib(large.device_budget));
        format!("units of cases of gigabytes, sharing {budget}: {}", each.join(", "))
    })
}

const HEADINGS: [&str; 7] = ["start-up", "inputs", "upload", "launches", "download", "oracle", "gates"];

/// The `--timings` table: the run's builds, then every record and control by its wall time
/// (the slowest first, at most `rows`), each split into its phases; `other` is what the
/// phases do not hold (live limits, the results' way back).
pub fn timings_table(run: &RunReport, rows: usize) -> Vec<String> {
    let mut lines = vec![format!(
        "timings: {:.2} s in all{}, {}{}",
        run.timing.total_seconds,
        before_the_run(&run.timing),
        builds_and_records(&run.timing, true, "records and controls"),
        processes_started(&run.timing)
    )];
    lines.extend(processes_ended(&run.timing));
    lines.extend(large_units(&run.timing));
    let mut results: Vec<_> = run.records.iter().chain(&run.controls).collect();
    results.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    let header = format!("{:>8} {}{:>8}  record", "seconds", HEADINGS.map(|h| format!("{h:>9}")).concat(), "other");
    lines.push(header);
    let mut sum = Phases::default();
    let mut seconds = 0.0;
    for r in &results {
        sum.add(&r.phases);
        seconds += r.seconds;
    }
    let row = |total: f64, phases: &Phases, name: &str| {
        let cells: String = phases.columns().iter().map(|s| format!("{s:>9.3}")).collect();
        format!("{total:>8.3} {cells}{:>8.3}  {name}", (total - phases.total()).max(0.0))
    };
    for r in results.iter().take(rows) {
        let name = match &r.control {
            Some(c) => format!("{} (control: {})", r.op, c.bug),
            None => format!("{} / {}", r.op, r.record),
        };
        lines.push(row(r.seconds, &r.phases, &name));
    }
    if results.len() > rows {
        lines.push(format!("... {} more", results.len() - rows));
    }
    lines.push(row(seconds, &sum, &format!("all {} (summed over records; with --jobs they overlap)", results.len())));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laps_are_charged_once_and_phases_add_up() {
        let mut lap = Lap::start();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let first = lap.take();
        let second = lap.take();
        assert!(first >= 0.005 && second < first, "{first} {second}");
        let mut a = Phases { inputs: 1.0, gates: 2.0, ..Phases::default() };
        a.add(&Phases { inputs: 0.5, oracle: 0.25, startup: 0.125, ..Phases::default() });
        assert_eq!(a, Phases { inputs: 1.5, oracle: 0.25, gates: 2.0, startup: 0.125, ..Phases::default() });
        assert_eq!(a.total(), 3.875);
    }

    #[test]
    fn builds_and_records_are_said_side_by_side_only_where_they_overlapped() {
        let timing = |build_seconds, run_seconds, total_seconds| Timing {
            build_seconds,
            run_seconds,
            total_seconds,
            modules_built: 83,
            ..Timing::default()
        };
        assert_eq!(
            builds_and_records(&timing(0.08, 10.57, 10.95), false, "launches and gates"),
            "kernel builds 0.08 s, launches and gates 10.57 s"
        );
        assert_eq!(
            builds_and_records(&timing(16.94, 17.95, 18.30), true, "records and controls"),
            "kernel builds 16.94 s (83 modules) beside records and controls 17.95 s"
        );
    }

    #[test]
    fn the_processes_own_start_is_said_where_it_took_time() {
        let timing = |before_seconds| Timing { before_seconds, ..Timing::default() };
        assert_eq!(
            before_the_run(&timing(0.153)),
            " after 0.15 s of this process's own start (the contracts' data ops defined, its backend opened)"
        );
        assert_eq!(before_the_run(&timing(0.004)), "", "nothing worth a word");
        assert_eq!(before_the_run(&Timing::default()), "", "a run that does not know it");
    }

    #[test]
    fn the_processes_are_said_by_why_each_started_and_why_each_ended() {
        let ended = |unit: &str, why: &str| crate::runner::ProcessEnded { unit: unit.into(), why: why.into() };
        let timing = Timing {
            processes: 19,
            process_starts: crate::runner::ProcessStarts { ahead: 4, build: 1, spare: 13, on_demand: 1 },
            processes_ended: vec![
                ended("control controls/a.toml", "a record stored outside its tensors"),
                ended("control controls/faults/far_write_host.toml", "crashed: SIGSEGV"),
                ended("control controls/b.toml", "a record stored outside its tensors"),
            ],
            ..Timing::default()
        };
        assert_eq!(
            processes_started(&timing),
            ", 19 processes started (4 ahead of the first jobs, 1 for the builds, 13 as spares, 1 on demand)"
        );
        assert_eq!(
            processes_ended(&timing).unwrap(),
            "processes that ended after a job: 3 (2 a record stored outside its tensors; 1 crashed: SIGSEGV)"
        );
        let one_spare = Timing {
            processes: 2,
            process_starts: crate::runner::ProcessStarts { spare: 1, build: 1, ..Default::default() },
            ..Timing::default()
        };
        assert_eq!(processes_started(&one_spare), ", 2 processes started (1 for the builds, 1 as a spare)");
        // one process: nothing said
        assert_eq!(processes_started(&Timing::default()), "");
        assert_eq!(processes_ended(&Timing::default()), None);
    }

    #[test]
    fn the_units_of_gigabytes_are_said_with_when_they_ran_and_what_they_held() {
        let unit = |unit: &str, gib: u64, started, ended| crate::runner::LargeUnitRun {
            unit: unit.into(),
            host: gib << 30,
            device: (gib << 30) / 2,
            started,
            ended,
        };
        let timing = Timing {
            large_units: crate::runner::LargeUnits {
                host_budget: 60 << 30,
                device_budget: 45 << 29,
                units: vec![unit("tf_embed_dense", 14, 0.31, 4.8), unit("tf_sum_partials", 10, 4.81, 9.126)],
            },
            ..Timing::default()
        };
        assert_eq!(
            large_units(&timing).unwrap(),
            "units of cases of gigabytes, sharing 60.0 GiB of host memory and 22.5 GiB of the device's at once: \
             tf_embed_dense 0.31 to 4.80 s (14.0 GiB host, 7.0 GiB device), tf_sum_partials 4.81 to 9.13 s (10.0 GiB host, 5.0 GiB device)"
        );
        assert_eq!(large_units(&Timing::default()), None);
    }
}
