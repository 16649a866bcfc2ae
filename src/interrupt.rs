//! Ctrl-C, SIGTERM and SIGHUP: one handler per process, installed by the commands that start
//! things which must not outlive rigaudit (replay's ranks, Slurm allocations), and the registries
//! it empties: the process groups of started ranks (SIGTERM, 2 s, then SIGKILL) and the jobs held
//! (each cancelled by the function its holder gave). It imports nothing of the crate, so replay,
//! rehash and the Slurm room can all stand on it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

/// How a held job is cancelled: its id in, what went wrong (if anything) out.
pub type Cancel = fn(&str) -> Option<String>;

/// The process groups alive now.
static GROUPS: Mutex<BTreeSet<libc::pid_t>> = Mutex::new(BTreeSet::new());
/// The jobs alive now: id -> (what it is, in words: `Slurm job`; how to cancel it).
static JOBS: Mutex<BTreeMap<String, (&'static str, Cancel)>> = Mutex::new(BTreeMap::new());
static HANDLER: Once = Once::new();
static HANDLER_ERROR: Mutex<Option<String>> = Mutex::new(None);
/// Set by the handler before it stops the ranks: it will exit with 130, so a rank it stopped must
/// not be reported as "exited" by the replay's own thread meanwhile.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A lock that a panicked holder does not poison for the handler.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Installs the handler (once per process); a note when it could not be.
pub fn install() -> Option<String> {
    HANDLER.call_once(|| {
        let r = ctrlc::set_handler(|| {
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            // The replay's own thread waits for this exit: nothing in the handler may end it
            // early, so a panic is caught and the exit still comes.
            let _ = std::panic::catch_unwind(stop_groups_and_jobs);
            std::process::exit(130);
        });
        if let Err(e) = r {
            *lock(&HANDLER_ERROR) = Some(format!(
                "no Ctrl-C handler could be installed ({e}); an interrupted rigaudit may leave the engine running"
            ));
        }
    });
    lock(&HANDLER_ERROR).clone()
}

/// Whether the handler has begun (it exits with 130 once done).
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// The registry of held process groups, locked: a spawner holds it from before the spawn until
/// the new group is in it, so a signal in between still finds the group.
pub fn groups() -> MutexGuard<'static, BTreeSet<libc::pid_t>> {
    lock(&GROUPS)
}

/// Forgets process group `pgid` (its owner stopped it).
pub fn forget_group(pgid: libc::pid_t) {
    lock(&GROUPS).remove(&pgid);
}

/// Whether process group `pgid` is held.
#[cfg(test)]
pub fn holds_group(pgid: libc::pid_t) -> bool {
    lock(&GROUPS).contains(&pgid)
}

/// Holds job `id` (`what` it is, in words) for the handler, which cancels it with `cancel`.
pub fn hold_job(id: &str, what: &'static str, cancel: Cancel) {
    lock(&JOBS).insert(id.to_string(), (what, cancel));
}

/// Forgets job `id` (its owner cancels it).
pub fn forget_job(id: &str) {
    lock(&JOBS).remove(id);
}

/// A line on stderr that never panics: when the reader of stderr is gone (a CI job cancelled,
/// a pipe closed) `eprintln!` panics on EPIPE, and in the handler that panic once left the
/// replay waiting for an exit that never came.
pub fn say(line: std::fmt::Arguments) {
    crate::progress::say(line);
}

/// The handler's work: SIGTERM to every held group, up to 2 s, SIGKILL to what is left, then
/// every job still held cancelled.
fn stop_groups_and_jobs() {
    let groups: Vec<libc::pid_t> = lock(&GROUPS).iter().copied().collect();
    if !groups.is_empty() {
        say(format_args!(
            "rigaudit: interrupted; stopping {} engine process group(s)",
            groups.len()
        ));
    }
    for &g in &groups {
        let _ = signal(-g, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && groups.iter().any(|&g| group_alive(g)) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for &g in &groups {
        if group_alive(g) {
            let _ = signal(-g, libc::SIGKILL);
        }
        let _ = signal(g, libc::SIGKILL);
    }
    let jobs: Vec<(String, (&str, Cancel))> =
        lock(&JOBS).iter().map(|(k, v)| (k.clone(), *v)).collect();
    for (id, (what, cancel)) in jobs {
        say(format_args!(
            "rigaudit: interrupted; cancelling {what} {id}"
        ));
        if let Some(e) = cancel(&id) {
            say(format_args!("rigaudit: {e}"));
        }
    }
    say(format_args!(
        "rigaudit: interrupted; exiting with code 130, no report written (the engine logs written so far are kept)"
    ));
}

/// Sends `sig` to `target` (a pid, or minus a process-group id). Returns the errno on failure
/// (`ESRCH`: no such process or group).
pub fn signal(target: libc::pid_t, sig: libc::c_int) -> Result<(), i32> {
    // Never signal 0, -1 or 1 (our own group, every process, init): only a started rank's group.
    if target == 0 || target == -1 || target == 1 || target == i32::MIN {
        return Err(libc::EINVAL);
    }
    // SAFETY: kill(2) takes two plain integers and touches no memory of ours; the target is a
    // process or a group we started (checked above not to be one of the special values).
    let r = unsafe { libc::kill(target, sig) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ESRCH))
    }
}

/// Whether `pid` is a zombie (dead, not yet reaped by its parent). On systems without /proc this
/// says no.
pub fn zombie(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']))
        })
        .unwrap_or(false)
}

/// Whether any process in group `pgid` still runs. A zombie does not count: in a container whose
/// pid 1 does not reap, a killed grandchild stays a zombie, and that is gone for our purposes.
pub fn group_alive(pgid: libc::pid_t) -> bool {
    if signal(-pgid, 0) == Err(libc::ESRCH) {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    let want = pgid.to_string();
    dir.flatten().any(|e| {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // Fields after the command: state ppid pgrp ...
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.len() > 2 && f[2] == want && !zombie(pid)
    })
}
