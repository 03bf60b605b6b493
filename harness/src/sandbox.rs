//! The limits a record's child process runs its kernel under: rlimits from its job, and on the
//! host backend, where Linux has Landlock, a file system it can only read but for its own
//! temporary folder. They stop accidents (a runaway allocation, a stray write, a leak of file
//! descriptors), not a kernel that sets out to escape: see the README's security model.
//! A worker of the pool serves job after job under one sandbox: each job gets its own soft
//! limits, and `ProcessState` is what the process must still look like after a job for a
//! later one to run in it.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::contract::Contract;

/// Every host case's tensors together, times this, is what a record's address space may
/// grow to beyond its fixed part: inputs, their guarded device copies, the repeat gate's
/// outputs, the oracle's f64 values and the input cache, with room to spare.
const PLANNED_BYTES_FACTOR: u64 = 24;

/// The fixed part of a host record's address space: the binary, its libraries and heaps.
const ADDRESS_SPACE_BASE: u64 = 2 << 30;

/// Per block worker: its thread's stack, its malloc arena and its fibers' stacks (up to 1024
/// threads of 256 KiB each, reserved as one aligned mapping).
const ADDRESS_SPACE_PER_WORKER: u64 = 768 << 20;

/// Open files of a host record's process: a few dozen are used (the standard streams, the
/// channel, the kernel library, a pipe to addr2line).
pub const OPEN_FILES: u64 = 256;

/// CPU seconds a record may use beyond its time limit times its threads (start-up, the oracle).
const CPU_SLACK_SECONDS: u64 = 10;

/// The hard CPU limit of a worker that may serve several jobs, from its first job on: hard
/// limits can only go down, so it covers the worker's life, and the parent retires a worker
/// before a job whose records' limits would not fit under what is left of it.
pub const WORKER_CPU_SECONDS: u64 = 3600;

fn default_worker_cpu_seconds() -> u64 {
    WORKER_CPU_SECONDS
}

/// What a child applies to itself after its kernels are built and before any is loaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// RLIMIT_AS, where it cannot break the backend (not on GPU backends: their drivers map
    /// the device's memory into the address space).
    pub address_space: Option<u64>,
    /// RLIMIT_CPU for one record: its time limit times the threads that run its blocks, plus
    /// slack; the soft limit is moved on before each record, the hard one covers the job.
    pub cpu_seconds_per_record: u64,
    pub records: u64,
    /// A process that may serve later jobs (a worker of the pool): its hard limits are set for
    /// its life (CPU: `WORKER_CPU_SECONDS`; address space: left as it was, so that each later
    /// job's soft limit can be its own), and only the soft ones are the job's.
    pub pooled: bool,
    /// A pooled worker's hard CPU limit, from its first job on (at least that job's need):
    /// the run's largest job's, so that no worker must be passed over for a job whose records'
    /// limits would not fit under what is left (on a GPU host of 16 cores, tf_embed_dense's
    /// six records of 120 s are 11,590 s, and a worker that began with a small job was
    /// passed over for it and for tf_sum_partials, a process start each). The soft limit is
    /// each record's; a record's wall time limit ends it whatever its CPU time.
    #[serde(default = "default_worker_cpu_seconds")]
    pub worker_cpu_seconds: u64,
    /// RLIMIT_FSIZE 0: a write to any file kills the process (SIGXFSZ).
    pub no_file_writes: bool,
    pub open_files: Option<u64>,
    /// The only folder the process may write to, under Landlock; none: no Landlock.
    pub writable: Option<PathBuf>,
}

impl Plan {
    /// The plan for a job of `records` records of `contract` on `backend` (`host`, `cuda`,
    /// `hip`) with `workers` block workers, each record limited to `time_limit_seconds`.
    pub fn for_job(backend: &str, contract: &Contract, records: usize, time_limit_seconds: u64, workers: usize, temp: &Path) -> Plan {
        let workers = workers.max(1) as u64;
        let records = records.max(1) as u64;
        let cpu_seconds_per_record = time_limit_seconds.saturating_mul(workers).saturating_add(CPU_SLACK_SECONDS);
        if backend != "host" {
            // the GPU drivers need their device files, large mappings and caches of their own
            return Plan {
                address_space: None,
                cpu_seconds_per_record,
                records,
                pooled: false,
                worker_cpu_seconds: WORKER_CPU_SECONDS,
                no_file_writes: false,
                open_files: None,
                writable: None,
            };
        }
        let address_space =
            ADDRESS_SPACE_BASE + workers * ADDRESS_SPACE_PER_WORKER + planned_bytes(contract).saturating_mul(PLANNED_BYTES_FACTOR);
        Plan {
            address_space: Some(address_space),
            cpu_seconds_per_record,
            records,
            pooled: false,
            worker_cpu_seconds: WORKER_CPU_SECONDS,
            no_file_writes: true,
            open_files: Some(OPEN_FILES),
            writable: Some(temp.to_path_buf()),
        }
    }
}

/// The largest host case of the contract: all its tensors, each at its widest dtype.
pub fn planned_bytes(contract: &Contract) -> u64 {
    contract
        .cases
        .iter()
        .filter(|case| case.gpu_only.is_none())
        .map(|case| {
            case.shapes
                .iter()
                .map(|(name, dims)| {
                    let size = contract.op.tensor(name).and_then(|t| t.dtypes.iter().map(|d| d.size()).max()).unwrap_or(8);
                    dims.iter().fold(size as u64, |bytes, d| bytes.saturating_mul(*d as u64))
                })
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("setrlimit({resource}, {value})")]
    Limit {
        resource: &'static str,
        value: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("Landlock: making the file system read-only but for {}", folder.display())]
    Landlock {
        folder: PathBuf,
        #[source]
        source: landlock::RulesetError,
    },
}

/// What applying the plan did, for the notice a run prints once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileSystem {
    /// Read-only but for the temporary folder.
    Confined,
    /// This kernel has no Landlock: only the rlimits hold.
    Unconfined,
    /// The plan asks for no confinement (a GPU backend).
    NotAsked,
}

impl Plan {
    /// CPU seconds the job's records may use in all, with the slack: a pooled worker takes no
    /// job that needs more than its hard limit leaves.
    pub fn cpu_seconds_needed(&self) -> u64 {
        self.cpu_seconds_per_record.saturating_mul(self.records).saturating_add(CPU_SLACK_SECONDS)
    }
}

/// Applies the rlimits, then Landlock. Called in the child, after building and before loading.
pub fn apply(plan: &Plan) -> Result<FileSystem, SandboxError> {
    if let Some(bytes) = plan.address_space {
        let hard = if plan.pooled { current_limit(libc::RLIMIT_AS).1 } else { bytes };
        set_limit(libc::RLIMIT_AS, "RLIMIT_AS", bytes, hard)?;
    }
    let used = cpu_seconds_used();
    let hard =
        if plan.pooled { used.saturating_add(plan.worker_cpu_seconds.max(plan.cpu_seconds_needed())) } else { plan.cpu_seconds_needed() };
    set_limit(libc::RLIMIT_CPU, "RLIMIT_CPU", used + plan.cpu_seconds_per_record, hard)?;
    if plan.no_file_writes {
        set_limit(libc::RLIMIT_FSIZE, "RLIMIT_FSIZE", 0, 0)?;
    }
    if let Some(files) = plan.open_files {
        set_limit(libc::RLIMIT_NOFILE, "RLIMIT_NOFILE", files, files)?;
    }
    match &plan.writable {
        Some(folder) => confine(folder),
        None => Ok(FileSystem::NotAsked),
    }
}

/// Before each record after the first: its own CPU time from now, within the job's hard limit.
pub fn next_record(plan: &Plan) -> Result<(), SandboxError> {
    let soft = cpu_seconds_used() + plan.cpu_seconds_per_record;
    let hard = current_limit(libc::RLIMIT_CPU).1;
    set_limit(libc::RLIMIT_CPU, "RLIMIT_CPU", soft.min(hard), hard)
}

/// A later job of a worker already sandboxed: the job's own soft limits under the hard ones
/// its first job set. Its address space is the plan's plus what earlier jobs left mapped
/// (`left_mapped` bytes: their kernel libraries, never unloaded, and fiber stacks), so it
/// has the room a fresh process would; its CPU time starts from now. The file-size and
/// open-files limits and Landlock hold for the process's life, unchanged.
pub fn next_job(plan: &Plan, left_mapped: u64) -> Result<(), SandboxError> {
    if let Some(bytes) = plan.address_space {
        let hard = current_limit(libc::RLIMIT_AS).1;
        set_limit(libc::RLIMIT_AS, "RLIMIT_AS", bytes.saturating_add(left_mapped), hard)?;
    }
    next_record(plan)
}

/// CPU seconds the process may still use under its hard limit.
pub fn cpu_seconds_left() -> u64 {
    current_limit(libc::RLIMIT_CPU).1.saturating_sub(cpu_seconds_used())
}

fn cpu_seconds_used() -> u64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) as u64 + 1
}

fn current_limit(resource: libc::__rlimit_resource_t) -> (u64, u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills the struct it is given.
    unsafe {
        libc::getrlimit(resource, &mut limit);
    }
    (limit.rlim_cur, limit.rlim_max)
}

/// Never above the hard limit the process already has (raising it needs privileges).
fn set_limit(resource: libc::__rlimit_resource_t, name: &'static str, soft: u64, hard: u64) -> Result<(), SandboxError> {
    let (_, current_hard) = current_limit(resource);
    let hard = hard.min(current_hard);
    let limit = libc::rlimit { rlim_cur: soft.min(hard), rlim_max: hard };
    // SAFETY: setrlimit reads a valid struct.
    if unsafe { libc::setrlimit(resource, &limit) } == 0 {
        Ok(())
    } else {
        Err(SandboxError::Limit { resource: name, value: soft, source: std::io::Error::last_os_error() })
    }
}

/// Landlock, best effort: every write access handled, allowed only beneath `folder` (and on
/// /dev/null); reads and execution stay open (the runner reads kernels, runs addr2line).
fn confine(folder: &Path) -> Result<FileSystem, SandboxError> {
    use landlock::{ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope};
    let error = |source| SandboxError::Landlock { folder: folder.to_path_buf(), source };
    // ABI 3's write rights (truncation included), not ABI 5's device ioctls: a kernel may
    // still ioctl the terminal or pipe it inherited
    let abi = ABI::V3;
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_write(abi)).map_err(error)?;
    // signals to processes outside the sandbox (the parent) where the kernel has scopes
    ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(error)?;
    let mut created = ruleset.create().map_err(error)?;
    if let Ok(fd) = PathFd::new(folder) {
        created = created.add_rule(PathBeneath::new(fd, AccessFs::from_write(abi))).map_err(error)?;
    }
    if let Ok(fd) = PathFd::new("/dev/null") {
        created = created.add_rule(PathBeneath::new(fd, AccessFs::from_file(abi) & AccessFs::from_write(abi))).map_err(error)?;
    }
    let status = created.restrict_self().map_err(error)?;
    Ok(if status.ruleset == RulesetStatus::NotEnforced { FileSystem::Unconfined } else { FileSystem::Confined })
}

/// Whether this kernel has Landlock (its ABI version, 0 for none): the parent says once when
/// host children will run without it.
pub fn landlock_abi() -> i64 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query of landlock_create_ruleset takes no ruleset and no size.
    let version = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, LANDLOCK_CREATE_RULESET_VERSION)
    };
    version.max(0)
}

/// The rlimits a job could change, each named.
const LIMITS: [(libc::__rlimit_resource_t, &str); 11] = [
    (libc::RLIMIT_AS, "RLIMIT_AS"),
    (libc::RLIMIT_CPU, "RLIMIT_CPU"),
    (libc::RLIMIT_FSIZE, "RLIMIT_FSIZE"),
    (libc::RLIMIT_NOFILE, "RLIMIT_NOFILE"),
    (libc::RLIMIT_CORE, "RLIMIT_CORE"),
    (libc::RLIMIT_STACK, "RLIMIT_STACK"),
    (libc::RLIMIT_DATA, "RLIMIT_DATA"),
    (libc::RLIMIT_NPROC, "RLIMIT_NPROC"),
    (libc::RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"),
    (libc::RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING"),
    (libc::RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE"),
];

/// What a worker's process is, as far as a job can change it and a later job could notice:
/// its threads (one left spinning), open descriptors, child processes, rlimits, signal
/// handlers and mask, environment, working folder, umask and what its temporary folder
/// holds. Taken after a job and compared with the worker's first picture, any difference
/// retires the worker. Memory a kernel scribbled on is not in it: no picture can hold it, so
/// the jobs most likely to do that (controls, and anything that faulted) never share a
/// process with a later job.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessState {
    threads: BTreeSet<i32>,
    descriptors: BTreeSet<(i32, String)>,
    children: BTreeSet<i32>,
    /// (resource, soft, hard); the soft address-space and CPU limits are each job's own and
    /// are left out.
    limits: Vec<(&'static str, u64, u64)>,
    /// Each signal's handler and flags.
    handlers: Vec<(i32, usize, i32)>,
    blocked: Vec<i32>,
    environment: Vec<(OsString, OsString)>,
    folder: Option<PathBuf>,
    umask: Option<String>,
    temp_entries: Option<usize>,
    /// Its threads' names, in a worker's first picture alone ([`ProcessState::settled`]): a
    /// later picture that misses one names it.
    names: BTreeMap<i32, String>,
}

impl ProcessState {
    /// The process as it is now; `temp` is the folder whose entries count (a host worker's
    /// temporary folder, the only one it may write in).
    pub fn now(temp: Option<&Path>) -> ProcessState {
        let numbers = |dir: &str| -> BTreeSet<i32> {
            std::fs::read_dir(dir).map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default()
        };
        let threads = numbers("/proc/self/task");
        let descriptors = std::fs::read_dir("/proc/self/fd")
            .map(|d| {
                d.flatten()
                    .filter_map(|e| {
                        let fd = e.file_name().to_str()?.parse().ok()?;
                        let target = std::fs::read_link(e.path()).ok()?.display().to_string();
                        // the listing's own descriptor
                        (!target.starts_with("/proc/")).then_some((fd, target))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let children = threads
            .iter()
            .filter_map(|t| std::fs::read_to_string(format!("/proc/self/task/{t}/children")).ok())
            .flat_map(|text| text.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<i32>>())
            .collect();
        let limits = LIMITS
            .iter()
            .map(|&(resource, name)| {
                let (soft, hard) = current_limit(resource);
                let soft = if resource == libc::RLIMIT_AS || resource == libc::RLIMIT_CPU { 0 } else { soft };
                (name, soft, hard)
            })
            .collect();
        let handlers = (1..libc::SIGRTMAX())
            .filter(|&signal| signal != libc::SIGKILL && signal != libc::SIGSTOP)
            .filter_map(|signal| {
                // SAFETY: sigaction with a null new action only reads the current one into `old`.
                let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                let read = unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
                (read == 0).then_some((signal, old.sa_sigaction, old.sa_flags))
            })
            .collect();
        // SAFETY: a null new set only reads this thread's mask into `mask`; sigismember reads it.
        let blocked = unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
            (1..libc::SIGRTMAX()).filter(|&s| libc::sigismember(&mask, s) == 1).collect()
        };
        let mut environment: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        environment.sort();
        let umask =
            std::fs::read_to_string("/proc/self/status").ok().and_then(|s| s.lines().find(|l| l.starts_with("Umask:")).map(str::to_string));
        ProcessState {
            threads,
            descriptors,
            children,
            limits,
            handlers,
            blocked,
            environment,
            folder: std::env::current_dir().ok(),
            umask,
            temp_entries: temp.map(|t| std::fs::read_dir(t).map(|d| d.count()).unwrap_or(usize::MAX)),
            names: BTreeMap::new(),
        }
    }

    /// `now`, once three pictures 2 ms apart list the same threads (at most 30 tries) and no
    /// brief thread ([`engine::threads::BRIEF`]) is among them (at most 100 tries), with its
    /// threads' names, brief ones left out: the first picture of a worker, which every later
    /// job's end is held to. A thread that is ending as the picture is taken (one that has been
    /// joined but not yet left the task list) is gone by the next job's end, and was retiring
    /// about one host worker a run as "1 of its own gone"; three equal pictures still let a
    /// build thread through on a loaded 2-core machine, so every thread started for a moment
    /// is named as such and waited for.
    pub fn settled(temp: Option<&Path>) -> ProcessState {
        let mut picture = ProcessState::now(temp);
        let mut same = 0;
        for tries in 1..=100 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            let again = ProcessState::now(temp);
            same = if again.threads == picture.threads { same + 1 } else { 0 };
            picture = again;
            if (same >= 2 || tries >= 30) && !picture.threads.iter().any(|&tid| is_brief(tid)) {
                break;
            }
        }
        picture.threads.retain(|&tid| !is_brief(tid));
        picture.names = picture.threads.iter().filter_map(|&tid| Some((tid, thread_name(tid)?))).collect();
        picture
    }

    /// Why the process, at a job's end, differs from `first`; None: it does not. Where only
    /// its threads differ, the pictures are taken again for up to 20 ms (300 ms while the new
    /// ones are all brief threads): a thread a job joined
    /// (the scoped helper that hashes an input while it is sent) leaves the task list a moment
    /// after its join returns, and such a thread, unnamed, retired GPU workers as "2 thread(s)
    /// it did not start with (contracts, contracts)". One that lives on is still seen.
    pub fn changed_at_job_end(first: &ProcessState, temp: Option<&Path>) -> Option<String> {
        changed_once_threads_settle(first, || ProcessState::now(temp))
    }

    /// Why this picture, taken after a job, differs from `first`; None: it does not.
    pub fn changed_since(&self, first: &ProcessState) -> Option<String> {
        let added = |now: &BTreeSet<i32>, then: &BTreeSet<i32>| now.difference(then).count();
        let why = if self.threads != first.threads {
            let gone: Vec<&str> =
                first.threads.difference(&self.threads).filter_map(|tid| first.names.get(tid)).map(String::as_str).collect();
            let gone = if gone.is_empty() { String::new() } else { format!(" ({})", gone.join(", ")) };
            format!(
                "{} thread(s) it did not start with{}, {} of its own gone{gone}",
                added(&self.threads, &first.threads),
                thread_names(self.threads.difference(&first.threads)),
                added(&first.threads, &self.threads)
            )
        } else if self.descriptors != first.descriptors {
            let new: Vec<String> = self.descriptors.difference(&first.descriptors).map(|(fd, to)| format!("{fd} -> {to}")).collect();
            format!("its open file descriptors changed ({})", if new.is_empty() { "some closed".to_string() } else { new.join(", ") })
        } else if self.children != first.children {
            format!("{} child process(es) still running", self.children.len())
        } else if self.limits != first.limits {
            let changed: Vec<&str> = self.limits.iter().zip(&first.limits).filter(|(a, b)| a != b).map(|(a, _)| a.0).collect();
            format!("its limits changed ({})", changed.join(", "))
        } else if self.handlers != first.handlers {
            let changed: Vec<String> =
                self.handlers.iter().zip(&first.handlers).filter(|(a, b)| a != b).map(|(a, _)| a.0.to_string()).collect();
            format!("the handlers of signal(s) {} changed", changed.join(", "))
        } else if self.blocked != first.blocked {
            "its blocked signals changed".to_string()
        } else if self.environment != first.environment {
            "its environment changed".to_string()
        } else if self.folder != first.folder {
            "its working folder changed".to_string()
        } else if self.umask != first.umask {
            "its umask changed".to_string()
        } else if self.temp_entries != first.temp_entries {
            "its temporary folder holds what it did not".to_string()
        } else {
            return None;
        };
        Some(why)
    }
}

/// [`ProcessState::changed_at_job_end`] over the pictures `take` gives: at most 21, 1 ms apart,
/// while the only difference is threads that were not there at first, or 300 while those are
/// all brief threads ([`engine::threads::BRIEF`]: a job's own, ending on a loaded machine).
fn changed_once_threads_settle(first: &ProcessState, mut take: impl FnMut() -> ProcessState) -> Option<String> {
    let mut now = take();
    for tries in 0..300 {
        let why = now.changed_since(first)?;
        if now.threads.is_subset(&first.threads) || tries >= 20 && !now.threads.difference(&first.threads).all(|&tid| is_brief(tid)) {
            return Some(why);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        now = take();
    }
    now.changed_since(first)
}

/// ` (cuda-EvtHandlr, ...)`: the names of the first few of `threads` that are still there to
/// ask, so that a worker retired for them says whose they were (a GPU driver's late threads,
/// a library's pool); nothing where none answers. A name is the thread's own choice (any
/// bytes but NUL): escaped, so none can start a line of the run's output.
fn thread_names<'a>(threads: impl Iterator<Item = &'a i32>) -> String {
    const NAMED: usize = 4;
    let names: Vec<String> = threads.take(NAMED).filter_map(|&tid| thread_name(tid)).collect();
    if names.is_empty() { String::new() } else { format!(" ({})", names.join(", ")) }
}

/// Whether thread `tid` of this process is one started for a moment (`engine::threads`).
fn is_brief(tid: i32) -> bool {
    thread_name(tid).is_some_and(|name| name == engine::threads::BRIEF)
}

/// What thread `tid` of this process calls itself, escaped (a name is the thread's own
/// choice); none once it is gone.
fn thread_name(tid: i32) -> Option<String> {
    let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
    Some(name.strip_suffix('\n').unwrap_or(&name).escape_debug().to_string())
}

/// The bytes the process's address space spans now (`VmSize`).
pub fn mapped_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmSize:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()))
        .map_or(0, |kb| kb << 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(name: &str) -> Contract {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let text = std::fs::read_to_string(root.join(format!("contracts/{name}.toml"))).unwrap();
        Contract::parse(&format!("contracts/{name}.toml"), &text).unwrap()
    }

    #[test]
    fn a_host_plan_limits_everything_and_a_gpu_plan_only_cpu_time() {
        let tf_add = contract("tf_add");
        let temp = Path::new("/tmp/kc-test");
        let host = Plan::for_job("host", &tf_add, 3, 30, 2, temp);
        assert_eq!(host.cpu_seconds_per_record, 70);
        assert!(host.no_file_writes && host.open_files == Some(OPEN_FILES) && host.writable.as_deref() == Some(temp));
        let planned = planned_bytes(&tf_add);
        assert!(planned > 0);
        assert_eq!(host.address_space, Some(ADDRESS_SPACE_BASE + 2 * ADDRESS_SPACE_PER_WORKER + planned * PLANNED_BYTES_FACTOR));
        let gpu = Plan::for_job("cuda", &tf_add, 3, 30, 2, temp);
        assert_eq!((gpu.address_space, gpu.no_file_writes, gpu.open_files, gpu.writable), (None, false, None, None));
    }

    #[test]
    fn a_jobs_end_waits_out_a_thread_that_is_ending_and_not_one_that_lives_on() {
        let first = ProcessState::now(None);
        let with_one_more = || {
            let mut later = first.clone();
            later.threads.insert(i32::MAX);
            later
        };
        let mut taken = 0;
        let mut pictures = [with_one_more(), with_one_more(), first.clone()].into_iter();
        let ending = changed_once_threads_settle(&first, || {
            taken += 1;
            pictures.next().unwrap()
        });
        assert_eq!((ending, taken), (None, 3));
        let mut taken = 0;
        let lives_on = changed_once_threads_settle(&first, || {
            taken += 1;
            with_one_more()
        });
        assert!(lives_on.unwrap().starts_with("1 thread(s) it did not start with, 0 of its own gone"));
        assert_eq!(taken, 21);
        // a change of another kind, or a thread of its own gone, is not waited for
        for change in
            [&(|s: &mut ProcessState| s.umask = Some("Umask: 0777".into())) as &dyn Fn(&mut ProcessState), &|s: &mut ProcessState| {
                s.threads.pop_first();
            }]
        {
            let mut taken = 0;
            let why = changed_once_threads_settle(&first, || {
                taken += 1;
                let mut later = first.clone();
                change(&mut later);
                later
            });
            assert!(why.is_some());
            assert_eq!(taken, 1);
        }
    }

    #[test]
    fn a_brief_thread_is_waited_for_longer_and_is_never_one_of_the_first_pictures_own() {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let brief = engine::threads::brief(move || {
            // SAFETY: gettid has no preconditions
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            let _ = stop_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        assert!(is_brief(tid));
        // the first picture leaves it out, however long it takes to end
        assert!(!ProcessState::settled(None).threads.contains(&tid));
        let mut first = ProcessState::now(None);
        first.threads.remove(&tid);
        // at a job's end, one that ends after 40 pictures (twice the usual wait) is no change
        let mut taken = 0;
        let ending = changed_once_threads_settle(&first, || {
            taken += 1;
            let mut later = first.clone();
            if taken < 40 {
                later.threads.insert(tid);
            }
            later
        });
        assert_eq!((ending, taken), (None, 40));
        // one that lives on is still seen
        let mut taken = 0;
        let lives_on = changed_once_threads_settle(&first, || {
            taken += 1;
            let mut later = first.clone();
            later.threads.insert(tid);
            later
        });
        assert!(lives_on.unwrap().starts_with("1 thread(s) it did not start with (kc-brief), 0 of its own gone"));
        assert_eq!(taken, 301);
        stop_tx.send(()).unwrap();
        brief.join().unwrap();
    }

    #[test]
    fn a_picture_of_the_process_names_what_a_job_left_changed() {
        let first = ProcessState::now(None);
        assert_eq!(first.changed_since(&first), None);
        assert!(!first.threads.is_empty(), "{first:?}");
        let changed = |change: &dyn Fn(&mut ProcessState)| {
            let mut later = first.clone();
            change(&mut later);
            later.changed_since(&first).expect("a change is seen")
        };
        assert!(
            changed(&|s| {
                s.threads.insert(i32::MAX);
            })
            .starts_with("1 thread(s) it did not start with, 0 of its own gone")
        );
        // a thread of the first picture that is gone is named as that picture knew it
        let mut named_first = first.clone();
        let gone_tid = *first.threads.iter().next().unwrap();
        named_first.names.insert(gone_tid, "kc-block-0".into());
        let mut later = named_first.clone();
        later.threads.remove(&gone_tid);
        let gone = later.changed_since(&named_first).unwrap();
        assert!(gone.ends_with("0 thread(s) it did not start with, 1 of its own gone (kc-block-0)"), "{gone}");
        // a live thread is named by what it calls itself; one gone (or never there) is not
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let named = std::thread::Builder::new()
            .name("kc-late-pool".into())
            .spawn(move || {
                // SAFETY: gettid has no preconditions
                tid_tx.send(unsafe { libc::gettid() }).unwrap();
                let _ = stop_rx.recv();
            })
            .unwrap();
        let tid = tid_rx.recv().unwrap();
        assert_eq!(thread_names([tid, i32::MAX].iter()), " (kc-late-pool)");
        stop_tx.send(()).unwrap();
        named.join().unwrap();
        assert_eq!(thread_names([i32::MAX].iter()), "");
        // a name with a line break in it stays on its line
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let named = std::thread::spawn(move || {
            let name = std::ffi::CString::new("x\nSUMMARY ok").unwrap();
            // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes, this thread's
            unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
            // SAFETY: gettid has no preconditions
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            let _ = stop_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        assert_eq!(thread_names([tid].iter()), " (x\\nSUMMARY ok)");
        stop_tx.send(()).unwrap();
        named.join().unwrap();
        assert!(
            changed(&|s| {
                s.descriptors.insert((900, "/tmp/x".into()));
            })
            .contains("900 -> /tmp/x")
        );
        // changed from whatever they are (a run under nohup starts with SIGHUP ignored: handler 1)
        assert!(changed(&|s| s.limits[5].1 ^= 1).contains("RLIMIT_STACK"));
        assert!(changed(&|s| s.handlers[0].1 ^= 2).starts_with("the handlers of signal(s) 1 "));
        assert!(changed(&|s| s.environment.push(("KC".into(), "1".into()))).contains("environment"));
        assert!(changed(&|s| s.temp_entries = Some(1)).contains("temporary folder"));
        assert!(
            changed(&|s| {
                s.children.insert(7);
            })
            .contains("child process")
        );
        // the soft address-space and CPU limits are each job's own
        assert!(first.limits.iter().filter(|l| l.0 == "RLIMIT_AS" || l.0 == "RLIMIT_CPU").all(|l| l.1 == 0));
        assert!(mapped_bytes() > 0);
    }

    #[test]
    fn planned_bytes_are_the_largest_case_at_the_widest_dtypes() {
        // tf_add: a, b and out of [rows, k], f32 at the widest
        let tf_add = contract("tf_add");
        let want = tf_add.cases.iter().map(|c| c.shapes.values().map(|d| d.iter().product::<usize>() as u64 * 4).sum::<u64>()).max();
        assert_eq!(Some(planned_bytes(&tf_add)), want);
    }
}
