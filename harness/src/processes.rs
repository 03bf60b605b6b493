//! Nothing a run starts outlives it: the parent is a child subreaper, every child it starts is
//! registered, whatever descends from a finished child is killed and reaped, and a signal
//! (SIGINT, SIGTERM, SIGHUP) ends every process of the run before the report is written.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The signals that interrupt a run, each answered with exit status 128 + its number.
pub const INTERRUPTING: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How long a clean-up goes on killing a tree that keeps forking before it gives up.
const CLEANUP_LIMIT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("the run was interrupted by {0}: no new process starts")]
    Interrupted(&'static str),
    #[error("starting the process")]
    Spawn(#[source] io::Error),
    #[error("{call} failed")]
    System {
        call: &'static str,
        #[source]
        source: io::Error,
    },
}

/// The children the runner started and has not yet reaped (each leads its own process
/// group), and whether the run is shutting down.
struct Registry {
    live: BTreeSet<i32>,
    closed_by: Option<&'static str>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { live: BTreeSet::new(), closed_by: None });

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Orphans of this process's descendants reparent to it (not to init), so they can be found
/// and reaped when their child ends.
pub fn become_subreaper() -> Result<(), ProcessError> {
    // SAFETY: prctl on this process with plain integer arguments.
    let done = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if done == 0 { Ok(()) } else { Err(ProcessError::System { call: "prctl(PR_SET_CHILD_SUBREAPER)", source: io::Error::last_os_error() }) }
}

/// Starts `command` and registers it, under the registry's lock: a clean-up running at the
/// same moment never takes the new child for an orphan.
pub fn spawn_registered(command: &mut Command) -> Result<Child, ProcessError> {
    let mut registry = registry();
    if let Some(signal) = registry.closed_by {
        return Err(ProcessError::Interrupted(signal));
    }
    let child = command.spawn().map_err(ProcessError::Spawn)?;
    registry.live.insert(child.id() as i32);
    Ok(child)
}

/// A child that was reaped: from now on whatever is left of it is an orphan.
pub fn unregister(pid: u32) {
    registry().live.remove(&(pid as i32));
}

/// Kills every process that descends from a child this run has reaped (a compiler a timed-out
/// child started, a kernel's forked child that called setsid), and reaps them. Children still
/// registered, and what descends from them, are left alone.
pub fn end_orphans() {
    let registry = registry();
    let me = std::process::id() as i32;
    let deadline = Instant::now() + CLEANUP_LIMIT;
    loop {
        let table = process_table();
        let orphans: Vec<i32> = children_in(&table, me).into_iter().filter(|pid| !registry.live.contains(pid)).collect();
        if orphans.is_empty() || Instant::now() > deadline {
            return;
        }
        let mut doomed = orphans.clone();
        for &orphan in &orphans {
            doomed.extend(descendants_in(&table, orphan));
        }
        kill_and_reap(&table, &doomed, me);
    }
}

/// The run is interrupted: no child starts any more, and every process that descends from
/// this one is killed and reaped (within a few seconds: a tree that forks faster than it can
/// be killed is left to the process-group and parent-death signals).
pub fn end_everything(signal: &'static str) {
    let mut registry = registry();
    registry.closed_by = Some(signal);
    for &pid in &registry.live {
        // SAFETY: a signal to a process group this run created (each child leads its own).
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let me = std::process::id() as i32;
    let deadline = Instant::now() + CLEANUP_LIMIT;
    loop {
        let table = process_table();
        let doomed = descendants_in(&table, me);
        if doomed.is_empty() || Instant::now() > deadline {
            return;
        }
        kill_and_reap(&table, &doomed, me);
    }
}

/// SIGKILL to each live process of `doomed`, and a non-blocking wait on each that is this
/// process's child (a zombie goes, one still dying is reaped on the next round).
fn kill_and_reap(table: &HashMap<i32, Entry>, doomed: &[i32], me: i32) {
    for pid in doomed {
        let Some(entry) = table.get(pid) else { continue };
        if entry.state != 'Z' {
            // SAFETY: a signal to a process that descends from this one.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
    }
    let mut waited = false;
    for pid in doomed {
        if table.get(pid).is_some_and(|e| e.parent == me) {
            let mut status = 0;
            // SAFETY: waits on a child of this process that the runner no longer tracks.
            unsafe {
                libc::waitpid(*pid, &mut status, libc::WNOHANG);
            }
            waited = true;
        }
    }
    if !waited || doomed.iter().any(|pid| table.get(pid).is_some_and(|e| e.state != 'Z')) {
        // signals take effect asynchronously; the next round sees them dead
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One process as /proc shows it: its parent and its state letter (`Z` for a zombie).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    parent: i32,
    state: char,
}

fn process_table() -> HashMap<i32, Entry> {
    let mut table = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return table };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some(parsed) = parse_stat(&stat) {
            table.insert(pid, parsed);
        }
    }
    table
}

/// `/proc/<pid>/stat`: `pid (comm) state ppid ...`; the command name may hold spaces and
/// parentheses, so the fields are read after its last `)`.
fn parse_stat(stat: &str) -> Option<Entry> {
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Entry { parent, state })
}

fn children_in(table: &HashMap<i32, Entry>, parent: i32) -> Vec<i32> {
    table.iter().filter(|(_, e)| e.parent == parent).map(|(pid, _)| *pid).collect()
}

/// Every process whose chain of parents reaches `ancestor` (not `ancestor` itself).
fn descendants_in(table: &HashMap<i32, Entry>, ancestor: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let mut frontier = vec![ancestor];
    while let Some(pid) = frontier.pop() {
        for child in children_in(table, pid) {
            if !found.contains(&child) {
                found.push(child);
                frontier.push(child);
            }
        }
    }
    found
}

/// Blocks the interrupting signals in the calling thread and in every thread it starts
/// afterwards: call it first thing in `main`, then `watch_signals`. Children start with an
/// empty mask (the standard library resets it before exec).
pub fn block_interrupting_signals() -> Result<(), ProcessError> {
    let set = interrupting_set();
    // SAFETY: changes this thread's signal mask to include a valid set.
    let done = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if done == 0 { Ok(()) } else { Err(ProcessError::System { call: "pthread_sigmask", source: io::Error::from_raw_os_error(done) }) }
}

fn interrupting_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in INTERRUPTING {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// A thread that waits for an interrupting signal and hands it to `on_signal` (which ends the
/// process). The signals must be blocked in every thread (`block_interrupting_signals`).
pub fn watch_signals(on_signal: impl FnOnce(i32) + Send + 'static) {
    std::thread::spawn(move || {
        let set = interrupting_set();
        let mut signal = 0;
        // SAFETY: waits on a valid, initialised set; the signal number is written to `signal`.
        while unsafe { libc::sigwait(&set, &mut signal) } != 0 {}
        on_signal(signal);
    });
}

/// `SIGINT`, `SIGTERM`, `SIGHUP`, as reports name them.
pub fn interrupting_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_command_name_whatever_it_holds() {
        assert_eq!(parse_stat("42 (sleep) S 7 42 42 0"), Some(Entry { parent: 7, state: 'S' }));
        assert_eq!(parse_stat("43 (a (b) c) Z 1 0"), Some(Entry { parent: 1, state: 'Z' }));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn descendants_follow_parent_chains_to_any_depth() {
        let entry = |parent| Entry { parent, state: 'S' };
        let table: HashMap<i32, Entry> = [(10, entry(1)), (11, entry(10)), (12, entry(11)), (13, entry(1)), (14, entry(12))].into();
        let mut found = descendants_in(&table, 10);
        found.sort();
        assert_eq!(found, [11, 12, 14]);
        assert!(descendants_in(&table, 14).is_empty());
    }

    #[test]
    fn a_forked_grandchild_that_left_its_group_is_found_and_ended() {
        // end_orphans kills and reaps every unregistered descendant of this process: in the
        // test binary those include other tests' children (a `Command::output` then fails
        // with ECHILD), so the body runs alone, in a fresh run of this binary
        const ALONE: &str = "KERNEL_CONTRACTS_SUBREAPER_TEST_ALONE";
        if std::env::var_os(ALONE).is_none() {
            let name = "processes::tests::a_forked_grandchild_that_left_its_group_is_found_and_ended";
            let out = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--test-threads=1", "--nocapture"])
                .env(ALONE, "1")
                .output()
                .unwrap();
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success() && text.contains("1 passed"), "{text}");
            return;
        }
        // a shell that starts a sleeper in a new session and exits: the sleeper reparents to
        // this test process (a subreaper) and is an orphan of a reaped child
        become_subreaper().unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "setsid sleep 300 >/dev/null 2>&1 & echo $!"]).stdout(std::process::Stdio::piped());
        let child = spawn_registered(&mut command).unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        unregister(pid);
        let sleeper: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let alive = |pid: i32| process_table().get(&pid).is_some_and(|e| e.state != 'Z');
        let started = Instant::now();
        while !alive(sleeper) && started.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        end_orphans();
        assert!(!process_table().contains_key(&sleeper), "the sleeper {sleeper} survived");
    }
}
