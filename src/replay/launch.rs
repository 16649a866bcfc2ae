//! Starts the ranks, waits until the server answers, and stops them again, leaving no process
//! behind.
//!
//! - Each rank runs in its own process group (its pid is the group id), with stdin closed
//!   (`/dev/null`). Stopping a rank signals the whole group, so what the rank started (a
//!   launcher's workers, a script's children) goes with it: SIGTERM, up to 5 s of grace, then
//!   SIGKILL.
//! - stdout and stderr are read by one thread each; every line is appended to
//!   `logs_dir/rank<N>.log` as it arrives (written straight to the file, no buffer, so a crash keeps
//!   the log), and the first [`KEPT_LINES`] and the last [`KEPT_LINES`] lines are kept in memory.
//!   A PMIx step (every rank a task of one srun, `--label`led) is one process with one log per
//!   task: a line `R: TEXT` goes to `rankR.log` as `TEXT`, a line without a label (srun's own)
//!   to `rank0.log`; a line cut at 64 KiB goes on in the same file.
//! - Readiness: `GET ready.url` (1 s per try, 150 ms between tries) until HTTP 200; a rank that
//!   exits meanwhile, or the timeout, stops every rank and is an error with the rank's last
//!   lines.
//! - [`Running`] stops its ranks when dropped, so an error or a panic between start and stop still
//!   ends them.
//! - Ctrl-C and SIGTERM (and SIGHUP) to rigaudit: the children sit in their own process groups,
//!   so a terminal's Ctrl-C does not reach them. A handler installed once with the `ctrlc` crate
//!   (feature `termination`; it runs the handler on its own thread, so taking a lock and sleeping
//!   there is safe) stops every live group in a global registry (SIGTERM, up to 2 s, SIGKILL) and
//!   exits with code 130. A group is registered under the registry's lock from before the spawn
//!   until it is gone, so the handler never misses a started rank. If some other part of rigaudit
//!   installed a handler first, the `ctrlc` install fails and a note says so; Drop still stops the
//!   ranks on every ordinary path.
//!
//! Signals are sent with `libc::kill`; the only `unsafe` blocks are those calls (see [`signal`]).

use super::command::Launch;
use super::remote::Launcher;
use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many lines of a rank's output are kept in memory, from the start and from the end.
pub const KEPT_LINES: usize = 50;

/// How long a stopped rank gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// What "ready" means: this URL answers HTTP 200 within `timeout` of the start.
#[derive(Debug, Clone)]
pub struct Ready {
    /// For example `http://127.0.0.1:8080/health`.
    pub url: String,
    /// How long to wait for it.
    pub timeout: Duration,
}

/// Why the ranks could not be brought up. Every started rank is already stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaunchError {
    /// A rank exited before the server was ready.
    Exited {
        /// The rank.
        rank: u32,
        /// How it ended (`exit status: 1`, `signal: 9 (SIGKILL)`).
        status: String,
        /// Its last lines.
        tail: String,
    },
    /// The server did not answer in time.
    Timeout {
        /// The rank in question, when one can be named (`None`: the service as a whole).
        rank: Option<u32>,
        /// How long it waited.
        waited: Duration,
        /// The URL polled.
        url: String,
        /// The last lines of every rank, each under a `rank N:` heading.
        tail: String,
    },
    /// A rank could not be started at all.
    Spawn {
        /// The rank.
        rank: u32,
        /// The executable.
        program: PathBuf,
        /// What the system said.
        error: String,
    },
    /// The logs folder or a log file could not be made.
    Logs {
        /// The path.
        path: PathBuf,
        /// What the system said.
        error: String,
    },
}

fn indent(tail: &str) -> String {
    if tail.trim().is_empty() {
        return "  (it printed nothing)".to_string();
    }
    tail.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Exited { rank, status, tail } => write!(
                f,
                "rank {rank} exited before the server was ready ({status}); its last lines:\n{}",
                indent(tail)
            ),
            LaunchError::Timeout {
                rank,
                waited,
                url,
                tail,
            } => {
                let who = match rank {
                    Some(r) => format!("rank {r}"),
                    None => "the server".to_string(),
                };
                write!(
                    f,
                    "{who} did not answer HTTP 200 at {url} within {:.1} s; every rank was stopped; last lines:\n{}",
                    waited.as_secs_f64(),
                    indent(tail)
                )
            }
            LaunchError::Spawn {
                rank,
                program,
                error,
            } => write!(
                f,
                "cannot start rank {rank}: {}: {error}",
                program.display()
            ),
            LaunchError::Logs { path, error } => {
                write!(
                    f,
                    "cannot write the rank logs at {}: {error}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for LaunchError {}

impl From<LaunchError> for crate::fatal::Fatal {
    fn from(e: LaunchError) -> Self {
        crate::fatal::fatal(e.to_string())
    }
}

/// Lines a rank printed so far.
#[derive(Default)]
struct Captured {
    first: Vec<String>,
    last: VecDeque<String>,
}

impl Captured {
    fn push(&mut self, line: String) {
        if self.first.len() < KEPT_LINES {
            self.first.push(line.clone());
        }
        if self.last.len() == KEPT_LINES {
            self.last.pop_front();
        }
        self.last.push_back(line);
    }
}

/// One started rank.
struct Proc {
    rank: u32,
    child: Child,
    pgid: libc::pid_t,
    captured: Arc<Mutex<Captured>>,
    readers: Vec<JoinHandle<()>>,
    /// How it ended, once reaped.
    status: Option<ExitStatus>,
    /// Its group is gone (or was stopped); nothing more to signal.
    done: bool,
    /// A remote rank's `ssh` stdin, held open while it runs (see [`Running::close_remote`]).
    stdin: Option<ChildStdin>,
}

/// The started ranks. Dropping it stops them.
pub struct Running {
    procs: Vec<Proc>,
    /// Notes from the start (a signal handler that could not be installed, say).
    notes: Vec<String>,
}

use crate::interrupt::{group_alive, lock, signal};

/// The log files one started process writes: its rank's, or with a labelled PMIx step every
/// task's (`rank0.log`, `rank1.log`, ...), task r's at index r.
struct Logs {
    files: Vec<Mutex<File>>,
    /// Whether the lines carry srun's `--label` (`R: `), by which they are split.
    labelled: bool,
}

impl Logs {
    /// The file index and the text of the line `buf` (`continued`: the index of the line this
    /// chunk continues, cut at 64 KiB, which carries no label of its own).
    fn route<'a>(&self, buf: &'a [u8], continued: Option<usize>) -> (usize, &'a [u8]) {
        if let Some(i) = continued {
            return (i, buf);
        }
        if !self.labelled {
            return (0, buf);
        }
        match task_label(buf) {
            Some((task, rest)) if task < self.files.len() => (task, rest),
            _ => (0, buf),
        }
    }
}

/// srun's `--label` before a line: the task id (padded on the left with spaces when the step
/// has ten tasks or more), `: `. The task and the rest of the line.
fn task_label(line: &[u8]) -> Option<(usize, &[u8])> {
    let start = line.iter().position(|&b| b != b' ')?;
    let digits = line[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let rest = line[start + digits..].strip_prefix(b": ")?;
    if digits == 0 || digits > 9 {
        return None;
    }
    let task = std::str::from_utf8(&line[start..start + digits])
        .ok()?
        .parse()
        .ok()?;
    Some((task, rest))
}

/// Reads one stream of a rank line by line into its log (with a labelled step, each line into
/// its task's log, the label taken off) and its captured lines (as they came, labels kept).
fn reader(
    stream: impl Read + Send + 'static,
    logs: Arc<Logs>,
    captured: Arc<Mutex<Captured>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(stream);
        let mut buf = Vec::new();
        let mut continued = None;
        loop {
            buf.clear();
            // A line is cut at 64 KiB (the rest comes as the next line): an engine printing an
            // endless line cannot grow rigaudit's memory.
            match (&mut r).take(64 * 1024).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let whole = buf.last() == Some(&b'\n');
            if !whole {
                buf.push(b'\n');
            }
            let (i, text) = logs.route(&buf, continued);
            {
                let mut f = lock(&logs.files[i]);
                let _ = f.write_all(text);
                let _ = f.flush();
            }
            continued = (!whole).then_some(i);
            let line = String::from_utf8_lossy(&buf[..buf.len() - 1])
                .trim_end_matches('\r')
                .to_string();
            lock(&captured).push(line);
        }
    })
}

/// Starts every rank, then waits until `ready.url` answers HTTP 200. On any error every started
/// rank is stopped before this returns.
// Every rank local; replay itself calls `start_ranks` (kept for the tests and other callers).
#[allow(dead_code)]
pub fn start(launches: &[Launch], logs_dir: &Path, ready: &Ready) -> Result<Running, LaunchError> {
    start_ranks(launches, &[], logs_dir, ready)
}

/// [`start`] with a launcher per rank (in the same order; a missing one is [`Launcher::Local`]).
pub fn start_ranks(
    launches: &[Launch],
    launchers: &[Launcher],
    logs_dir: &Path,
    ready: &Ready,
) -> Result<Running, LaunchError> {
    std::fs::create_dir_all(logs_dir).map_err(|e| logs_err(logs_dir, e))?;
    let mut running = Running {
        procs: Vec::new(),
        notes: crate::interrupt::install().into_iter().collect(),
    };
    for (i, l) in launches.iter().enumerate() {
        let remote = matches!(launchers.get(i), Some(Launcher::Ssh { .. }));
        let tasks = match launchers.get(i) {
            Some(Launcher::Slurm { tasks, .. }) => *tasks,
            _ => None,
        };
        // `running` stops the ranks started so far when it goes out of scope.
        let p = spawn(l, logs_dir, remote, tasks)?;
        running.procs.push(p);
    }
    wait_ready(running, ready)
}

fn logs_err(path: &Path, e: std::io::Error) -> LaunchError {
    LaunchError::Logs {
        path: path.to_path_buf(),
        error: e.to_string(),
    }
}

/// Starts one rank in a process group of its own, its output copied to its log and kept for
/// errors.
/// When rigaudit itself dies (killed, out of memory), the kernel kills the rank: it must not
/// outlive the replay that started it. The signal follows the death of the thread that spawned
/// the rank, so ranks are started from the thread that stops them. The parent may have died
/// between the fork and the prctl: then the rank stops here.
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: prctl and getppid are async-signal-safe; nothing here allocates.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// `remote`: an `ssh` client whose stdin is kept open while the rank runs (see `remote.rs`).
/// `tasks`: a PMIx step of that many tasks, its output labelled by task, one log per task.
fn spawn(
    l: &Launch,
    logs_dir: &Path,
    remote: bool,
    tasks: Option<u32>,
) -> Result<Proc, LaunchError> {
    let ranks: Vec<u32> = match tasks {
        Some(n) => (0..n).collect(),
        None => vec![l.rank],
    };
    let mut files = Vec::new();
    for r in ranks {
        let path = logs_dir.join(format!("rank{r}.log"));
        files.push(Mutex::new(
            File::create(&path).map_err(|e| logs_err(&path, e))?,
        ));
    }
    let log = Arc::new(Logs {
        files,
        labelled: tasks.is_some(),
    });
    let mut cmd = Command::new(&l.program);
    cmd.args(&l.args)
        .envs(&l.env)
        .stdin(if remote {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    die_with_parent(&mut cmd);
    // Hold the registry from before the spawn until the group is in it, so a signal in
    // between still finds it.
    let mut live = crate::interrupt::groups();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            drop(live);
            return Err(LaunchError::Spawn {
                rank: l.rank,
                program: l.program.clone(),
                error: e.to_string(),
            });
        }
    };
    let pgid = child.id() as libc::pid_t;
    live.insert(pgid);
    drop(live);
    let stdin = child.stdin.take();
    let captured = Arc::new(Mutex::new(Captured::default()));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(reader(out, log.clone(), captured.clone()));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(reader(err, log, captured.clone()));
    }
    Ok(Proc {
        rank: l.rank,
        child,
        pgid,
        captured,
        readers,
        status: None,
        done: false,
        stdin,
    })
}

/// Waits until the server answers `ready.url` with 200; a rank that exits first, or the timeout,
/// stops every rank and is an error with the ranks' last output.
fn wait_ready(mut running: Running, ready: &Ready) -> Result<Running, LaunchError> {
    let http = crate::http::builder()
        .timeout(Duration::from_secs(1))
        .no_proxy()
        .build()
        .map_err(|e| LaunchError::Spawn {
            rank: 0,
            program: PathBuf::from("(HTTP client)"),
            error: e.to_string(),
        })?;
    let t0 = Instant::now();
    loop {
        if let Some(i) = running.first_exited() {
            let p = &mut running.procs[i];
            drain(p);
            let e = LaunchError::Exited {
                rank: p.rank,
                status: describe(p.status),
                tail: tail_of(p),
            };
            running.stop();
            return Err(e);
        }
        if let Ok(r) = http.get(&ready.url).send() {
            if r.status().as_u16() == 200 {
                return Ok(running);
            }
        }
        let waited = t0.elapsed();
        if waited >= ready.timeout {
            running.stop();
            let tail = running
                .procs
                .iter_mut()
                .map(|p| {
                    drain(p);
                    format!("rank {}:\n{}", p.rank, indent(&tail_of(p)))
                })
                .collect::<Vec<_>>()
                .join("\n");
            return Err(LaunchError::Timeout {
                rank: None,
                waited,
                url: ready.url.clone(),
                tail,
            });
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => s.to_string(),
        },
        None => "still running".to_string(),
    }
}

/// Waits a little for a rank's readers to reach the end of its output (they may never, when a
/// child it left behind holds the pipe; then what was read so far is what there is).
fn drain(p: &mut Proc) {
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline && p.readers.iter().any(|r| !r.is_finished()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (done, pending): (Vec<_>, Vec<_>) = p.readers.drain(..).partition(|r| r.is_finished());
    for r in done {
        let _ = r.join();
    }
    p.readers = pending;
}

fn tail_of(p: &Proc) -> String {
    let c = lock(&p.captured);
    c.last.iter().cloned().collect::<Vec<_>>().join("\n")
}

impl Running {
    /// The first lines rank `rank` printed (stdout and stderr, up to [`KEPT_LINES`]), as read so
    /// far. Empty for a rank that is not here.
    pub fn start_lines(&self, rank: u32) -> Vec<String> {
        self.procs
            .iter()
            .find(|p| p.rank == rank)
            .map(|p| lock(&p.captured).first.clone())
            .unwrap_or_default()
    }

    /// The process ids of the ranks' leaders (their children are theirs too).
    pub fn pids(&self) -> Vec<u32> {
        self.procs.iter().map(|p| p.child.id()).collect()
    }

    /// Notes for the report about how the ranks were started.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The index of the first rank whose process has exited (reaping it).
    fn first_exited(&mut self) -> Option<usize> {
        // Interrupted: the handler is stopping every rank and exits with 130; wait for it.
        while crate::interrupt::interrupted() {
            std::thread::sleep(Duration::from_millis(100));
        }
        for (i, p) in self.procs.iter_mut().enumerate() {
            if p.status.is_none() {
                if let Ok(Some(s)) = p.child.try_wait() {
                    p.status = Some(s);
                }
            }
            if p.status.is_some() {
                return Some(i);
            }
        }
        None
    }

    /// A rank whose process has exited, with how it ended and its last lines; `None` while every
    /// rank runs. Asked again, it names the same rank (the first in the card's order).
    pub fn exited(&mut self) -> Option<(u32, String)> {
        let i = self.first_exited()?;
        let p = &mut self.procs[i];
        drain(p);
        Some((
            p.rank,
            format!(
                "{}; its last lines:\n{}",
                describe(p.status),
                indent(&tail_of(p))
            ),
        ))
    }

    /// Stops every rank: SIGTERM to its process group, up to 5 s for the group to go, then
    /// SIGKILL. Returns a note per rank on how it ended. Calling it again does nothing more.
    pub fn stop(&mut self) -> Vec<String> {
        let closed = self.close_remote();
        let pending: Vec<usize> = (0..self.procs.len())
            .filter(|&i| !self.procs[i].done)
            .collect();
        let mut already = Vec::new();
        for &i in &pending {
            let p = &mut self.procs[i];
            reap(p);
            already.push(p.status.is_some());
            // Also when the rank itself has ended: what it left in its group goes too.
            let _ = signal(-p.pgid, libc::SIGTERM);
        }
        self.wait_for_groups(&pending, Instant::now() + GRACE);
        pending
            .iter()
            .zip(&already)
            .map(|(&i, &already)| finish(&mut self.procs[i], already && !closed.contains(&i)))
            .collect()
    }

    /// Waits until every rank in `pending` has ended and its group is gone, or `deadline`.
    fn wait_for_groups(&mut self, pending: &[usize], deadline: Instant) {
        loop {
            let mut all_gone = true;
            for &i in pending {
                let p = &mut self.procs[i];
                reap(p);
                if p.status.is_none() || group_alive(p.pgid) {
                    all_gone = false;
                }
            }
            if all_gone || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Keeps the rank's exit status once it has one (without waiting).
fn reap(p: &mut Proc) {
    if p.status.is_none() {
        if let Ok(Some(s)) = p.child.try_wait() {
            p.status = Some(s);
        }
    }
}

/// After the grace: SIGKILL to a group still there, the rank waited for and forgotten; the note
/// says how it ended (`ended_before`: it had ended by itself before the stop).
fn finish(p: &mut Proc, ended_before: bool) -> String {
    let killed = p.status.is_none() || group_alive(p.pgid);
    if killed {
        let _ = signal(-p.pgid, libc::SIGKILL);
        // The leader too, in case it left its group (setpgid/setsid): `wait` below must not hang.
        if p.status.is_none() {
            let _ = signal(p.pgid, libc::SIGKILL);
        }
    }
    if p.status.is_none() {
        p.status = p.child.wait().ok();
    }
    let note = if killed {
        format!(
            "rank {} did not stop within {} s of SIGTERM; its process group was killed (SIGKILL)",
            p.rank,
            GRACE.as_secs()
        )
    } else if ended_before {
        format!("rank {} had already ended ({})", p.rank, describe(p.status))
    } else {
        format!("rank {} stopped ({})", p.rank, describe(p.status))
    };
    // SIGKILL cannot be refused; give the group a moment to be gone before forgetting it.
    let until = Instant::now() + Duration::from_secs(1);
    while group_alive(p.pgid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    crate::interrupt::forget_group(p.pgid);
    p.done = true;
    drain(p);
    note
}

impl Running {
    /// Remote ranks: closes each `ssh` client's stdin, which the wrapper on the box reads as
    /// "stop" (SIGTERM to the rank's group there, the grace, SIGKILL), and waits for the clients
    /// to end with their wrappers. Returns the ranks so closed while they ran.
    fn close_remote(&mut self) -> Vec<usize> {
        let mut closed = Vec::new();
        for (i, p) in self.procs.iter_mut().enumerate() {
            if p.stdin.take().is_some() && !p.done && p.status.is_none() {
                closed.push(i);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2 * crate::ssh::GRACE_SECS + 3);
        loop {
            let mut running = false;
            for &i in &closed {
                let p = &mut self.procs[i];
                if p.status.is_none() {
                    p.status = p.child.try_wait().ok().flatten();
                }
                running |= p.status.is_none();
            }
            if !running || Instant::now() >= deadline {
                return closed;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests;
