//! The foreign-load guard: while a step is measured, another program's CPU use on the same machine
//! slows the engine and the measurement with it. The guard samples every other process's CPU use
//! about every `interval_s` (the seeds: twice a second) and judges each **try** of a step (one
//! counted request, or one concurrency round): a try during which one foreign process used more
//! than `threshold_pct` % of a core in `consecutive` samples in a row is disturbed, thrown away
//! and repeated, up to `max_tries` tries; the last try is kept even when disturbed, and its guard
//! row then shows it (`speed.load-guard` flags it, and replay calls its figures inconclusive).
//!
//! # Definitions
//! - A process's share of a core over one sample is the growth of its user + system CPU time
//!   (`/proc/PID/stat` fields 14 and 15, in clock ticks) divided by the wall time since the last
//!   sample; a process that started since the last sample counts with all its CPU time.
//! - A **program** is the processes of one name (`/proc/PID/stat` field 2) together, and the
//!   rule's "one process" is read as one program: a build that starts a compiler per file, or a
//!   tool that forks a worker per task, loads the machine as one program although each of its
//!   processes lives for less than two samples.
//! - The machine's **unattributed** CPU time counts as one more program,
//!   [`UNATTRIBUTED`]: the growth of the machine's busy time (`/proc/stat`: user, nice, system,
//!   irq, softirq and steal) less the growth of every process's time seen in both samples and of
//!   the new ones. It is what no process seen holds: processes that started and ended between two
//!   samples, interrupt work charged to no process, and on a virtual machine the time the
//!   hypervisor gave the host's other guests (steal). Any of these slows the engine as much as a
//!   foreign process does, and none shows in a process's own figures.
//! - Foreign: every process except rigaudit's own and the server under measurement, which is
//!   the processes given as the server's (replay: its ranks; measure: `--server-pid`, and the
//!   owner of the loopback port it measures) **with all their descendants**.
//! - The samples a try is judged by: those that end between one interval before the try starts
//!   and one interval after it ends, so a try shorter than an interval still spans two samples.
//!   At the try's end the guard asks for a sample at once rather than waiting out the interval
//!   (which cost a quarter of a second a try on average, as much as a short request), though never
//!   sooner than [`MIN_SAMPLE`] after the last one, so that one clock tick of a process is at most
//!   a tenth of a core; it waits for that sample (at most two intervals).
//! - `longest_run_over`: the longest run of consecutive samples in which the **same** foreign
//!   program was above the threshold; `peak_pct`/`peak_process`: the highest foreign sample;
//!   `over_processes`: every program above the threshold in a sample of the try, with its pids.
//!
//! Linux only (it reads `/proc`); elsewhere the guard samples nothing and says so in the log.

use rigaudit_audit::records::speed::{GuardedStep, LoadGuard, LoadGuardRule};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One process seen in `/proc`.
#[derive(Debug, Clone)]
struct ProcStat {
    ppid: u32,
    name: String,
    ticks: u64,
}

/// Every process in `/proc`, by pid.
fn read_procs() -> BTreeMap<u32, ProcStat> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(p) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| parse_stat(&t))
        {
            out.insert(pid, p);
        }
    }
    out
}

/// Parses `/proc/PID/stat`: `pid (comm) state ppid ... utime stime ...`. The name may hold spaces
/// and parentheses, so the fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let ppid = rest.get(1)?.parse().ok()?;
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some(ProcStat {
        ppid,
        name,
        ticks: utime + stime,
    })
}

/// `roots` and every process descending from them.
fn with_descendants(procs: &BTreeMap<u32, ProcStat>, roots: &BTreeSet<u32>) -> BTreeSet<u32> {
    let mut set = roots.clone();
    loop {
        let before = set.len();
        for (pid, p) in procs {
            if set.contains(&p.ppid) {
                set.insert(*pid);
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

/// The server's processes with all their descendants, and rigaudit itself: what is never
/// foreign (the GPU's processes are judged by it, [`super::gpu`]).
pub fn server_tree(server: &[u32]) -> BTreeSet<u32> {
    let roots: BTreeSet<u32> = server.iter().copied().collect();
    let mut set = with_descendants(&read_procs(), &roots);
    set.insert(std::process::id());
    set
}

/// A process's name (`/proc/PID/comm`), or `?` when it cannot be read (gone, or in another pid
/// namespace than NVML's).
pub fn process_name(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The name the guard gives the machine's unattributed CPU time (see the module docs).
pub const UNATTRIBUTED: &str = "(unattributed: steal, interrupts, processes that came and went)";

/// The machine's busy time in clock ticks, all cores: `/proc/stat`'s first line, user + nice +
/// system + irq + softirq + steal (idle and iowait left out; guest time is inside user).
fn machine_busy() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    busy_of_stat(text.lines().next()?)
}

/// The busy ticks of a `/proc/stat` `cpu` line.
fn busy_of_stat(line: &str) -> Option<u64> {
    let f: Vec<u64> = line
        .strip_prefix("cpu ")?
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal ...
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    Some(at(0) + at(1) + at(2) + at(5) + at(6) + at(7))
}

/// What one sample saw: the foreign processes above the threshold, and the busiest one.
#[derive(Debug, Clone)]
struct Sample {
    at: Instant,
    /// Programs above the threshold, with their pids.
    over: BTreeMap<String, BTreeSet<u32>>,
    peak: Option<(String, f64)>,
}

/// The shortest sample the guard takes when a try's end asks for one: at 100 clock ticks a
/// second one tick is 10 % of a core, under the 25 % threshold of the seeds' rule.
pub const MIN_SAMPLE: Duration = Duration::from_millis(100);

/// What the sampling thread is told between samples.
enum Wake {
    /// A try ended: a sample now (at least [`MIN_SAMPLE`] after the last one).
    Now,
    /// The guard is dropped.
    Stop,
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The sampler's state between samples.
struct Sampler {
    threshold: f64,
    own: BTreeSet<u32>,
    ticks_per_s: f64,
    last: Option<(Instant, BTreeMap<u32, ProcStat>, Option<u64>)>,
}

impl Sampler {
    /// How long until a sample would be [`MIN_SAMPLE`] long.
    fn until_min_sample(&self) -> Duration {
        self.last.as_ref().map_or(Duration::ZERO, |(t, ..)| {
            MIN_SAMPLE.saturating_sub(t.elapsed())
        })
    }

    /// Reads `/proc` once; returns the sample against the previous reading (none the first time).
    fn sample(&mut self, exclude: &BTreeSet<u32>) -> Option<Sample> {
        let now = Instant::now();
        let busy = machine_busy();
        let procs = read_procs();
        // The server with its children; rigaudit itself, but not its other children (a test's
        // CPU hog is one).
        let mut skip = with_descendants(&procs, exclude);
        skip.extend(self.own.iter().copied());
        let prev = self.last.replace((now, procs, busy));
        let (t0, before, busy_before) = prev?;
        let (_, procs, _) = self.last.as_ref()?;
        let secs = now.duration_since(t0).as_secs_f64().max(1e-3);
        let mut s = Sample {
            at: now,
            over: BTreeMap::new(),
            peak: None,
        };
        let pct_of = |ticks: u64| 100.0 * ticks as f64 / self.ticks_per_s / secs;
        // Each foreign program's share: its processes' shares added up.
        let mut programs: BTreeMap<&str, (f64, BTreeSet<u32>)> = BTreeMap::new();
        let mut attributed: u64 = 0;
        for (pid, p) in procs {
            // A process new since the last sample spent all its CPU time in this interval.
            let grew = before
                .get(pid)
                .map_or(p.ticks, |b| p.ticks.saturating_sub(b.ticks));
            attributed += grew;
            if skip.contains(pid) {
                continue;
            }
            let e = programs.entry(p.name.as_str()).or_default();
            e.0 += pct_of(grew);
            e.1.insert(*pid);
        }
        if let (Some(b0), Some(b1)) = (busy_before, busy) {
            let rest = b1.saturating_sub(b0).saturating_sub(attributed);
            programs.insert(UNATTRIBUTED, (pct_of(rest), BTreeSet::new()));
        }
        for (name, (pct, pids)) in programs {
            if pct > self.threshold {
                s.over.insert(name.to_string(), pids.clone());
            }
            if s.peak.as_ref().is_none_or(|(_, x)| pct > *x) {
                s.peak = Some((program(name, &pids), pct));
            }
        }
        Some(s)
    }
}

/// A program and its pids, for a person: `rustc (pid 12)`, `rustc (pids 12, 13)`.
fn program(name: &str, pids: &BTreeSet<u32>) -> String {
    let list: Vec<String> = pids.iter().take(8).map(|p| p.to_string()).collect();
    let more = if pids.len() > 8 { ", ..." } else { "" };
    match pids.len() {
        0 => name.to_string(),
        1 => format!("{name} (pid {})", list[0]),
        _ => format!("{name} (pids {}{more})", list.join(", ")),
    }
}

/// How one try went under the guard.
#[derive(Debug, Clone, PartialEq)]
pub struct TryLoad {
    /// Longest run of samples with one foreign process above the threshold.
    pub longest_run_over: u32,
    /// The highest foreign sample, percent of a core.
    pub peak_pct: Option<f64>,
    /// Its process.
    pub peak_process: Option<String>,
    /// Samples the try was judged by.
    pub samples: usize,
    /// The foreign programs above the threshold in any of them, with their pids.
    pub over: BTreeMap<String, BTreeSet<u32>>,
}

/// The longest run of consecutive samples in which one program stayed above the threshold.
fn longest_run(samples: &[&Sample]) -> u32 {
    let mut best = 0;
    let mut runs: BTreeMap<&str, u32> = BTreeMap::new();
    for s in samples {
        runs = s
            .over
            .keys()
            .map(|name| {
                (
                    name.as_str(),
                    runs.get(name.as_str()).copied().unwrap_or(0) + 1,
                )
            })
            .collect();
        best = best.max(runs.values().copied().max().unwrap_or(0));
    }
    best
}

/// A running guard: a sampling thread, stopped when dropped.
pub struct Guard {
    /// The rule it applies.
    pub rule: LoadGuardRule,
    samples: Arc<Mutex<VecDeque<Sample>>>,
    taken: Arc<Mutex<u64>>,
    wake: mpsc::Sender<Wake>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// One row per try, in order.
    pub rows: Vec<GuardedStep>,
}

impl Guard {
    /// Starts sampling. `server` are the pids of the server under measurement (with their
    /// descendants, never counted as foreign).
    pub fn start(rule: LoadGuardRule, server: Vec<u32>) -> Guard {
        let samples = Arc::new(Mutex::new(VecDeque::new()));
        let taken = Arc::new(Mutex::new(0u64));
        let (wake, woken) = mpsc::channel();
        let mut sampler = Sampler {
            threshold: rule.threshold_pct,
            own: BTreeSet::from([std::process::id()]),
            ticks_per_s: clock_ticks(),
            last: None,
        };
        let exclude: BTreeSet<u32> = server.into_iter().collect();
        let interval = Duration::from_secs_f64(rule.interval_s.clamp(0.05, 60.0));
        let (s2, t2) = (Arc::clone(&samples), Arc::clone(&taken));
        let thread = std::thread::spawn(move || loop {
            if let Some(s) = sampler.sample(&exclude) {
                let mut q = s2.lock().unwrap_or_else(|p| p.into_inner());
                // Bounded: a try older than an hour of samples is long judged.
                if q.len() > 8 * 3600 {
                    q.pop_front();
                }
                q.push_back(s);
                *t2.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            }
            match woken.recv_timeout(interval) {
                Ok(Wake::Now) => std::thread::sleep(sampler.until_min_sample()),
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            }
        });
        Guard {
            rule,
            samples,
            taken,
            wake,
            thread: Some(thread),
            rows: Vec::new(),
        }
    }

    fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.rule.interval_s.clamp(0.05, 60.0))
    }

    /// Judges the try that ran from `start` to now: waits for the sample after its end (at most
    /// two intervals), then reads the samples that end within one interval of the try.
    pub fn judge(&self, start: Instant) -> TryLoad {
        let end = Instant::now();
        let iv = self.interval();
        let _ = self.wake.send(Wake::Now);
        let deadline = end + 2 * iv + Duration::from_millis(200);
        loop {
            let q = self.samples.lock().unwrap_or_else(|p| p.into_inner());
            let done = q.back().is_some_and(|s| s.at >= end);
            drop(q);
            if done || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let q = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let from = start.checked_sub(iv).unwrap_or(start);
        let inside: Vec<&Sample> = q
            .iter()
            .filter(|s| s.at >= from && s.at <= end + iv)
            .collect();
        let peak = inside
            .iter()
            .filter_map(|s| s.peak.clone())
            .max_by(|a, b| a.1.total_cmp(&b.1));
        TryLoad {
            longest_run_over: longest_run(&inside),
            peak_pct: peak.as_ref().map(|p| (p.1 * 10.0).round() / 10.0),
            peak_process: peak.map(|p| p.0),
            samples: inside.len(),
            over: inside.iter().fold(BTreeMap::new(), |mut m, s| {
                for (name, pids) in &s.over {
                    m.entry(name.clone())
                        .or_insert_with(BTreeSet::new)
                        .extend(pids.iter().copied());
                }
                m
            }),
        }
    }

    /// The tries a step may take.
    pub fn max_tries(&self) -> u32 {
        self.rule.max_tries.unwrap_or(3).max(1)
    }

    /// Whether a try broke the rule: a foreign program busy too long on the CPU, or any foreign
    /// process on the GPU.
    pub fn disturbed(&self, load: &TryLoad, gpu: &[String]) -> bool {
        self.rule.broken_by(load.longest_run_over) || !gpu.is_empty()
    }

    /// Records a try's row, with the foreign processes seen on the GPU.
    pub fn record(&mut self, step: &str, attempt: u32, load: &TryLoad, gpu: &[String], kept: bool) {
        self.rows.push(GuardedStep {
            step: step.to_string(),
            attempt,
            longest_run_over: load.longest_run_over,
            peak_pct: load.peak_pct,
            peak_process: load.peak_process.clone(),
            over_processes: (!load.over.is_empty()).then(|| {
                load.over
                    .iter()
                    .map(|(name, pids)| program(name, pids))
                    .collect()
            }),
            gpu_processes: (!gpu.is_empty()).then(|| gpu.to_vec()),
            kept,
        });
    }

    /// The summary the speed result records.
    pub fn summary(&self) -> LoadGuard {
        LoadGuard {
            rule: Some(self.rule.clone()),
            samples: *self.taken.lock().unwrap_or_else(|p| p.into_inner()),
            steps: self.rows.clone(),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.wake.send(Wake::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The pids listening on a loopback TCP port (the server a `measure` of a local URL talks to),
/// found through `/proc/net/tcp{,6}` and the processes' open sockets. Empty when not found.
pub fn port_owners(port: u16) -> Vec<u32> {
    let mut inodes = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let p = local
                .rsplit(':')
                .next()
                .and_then(|h| u16::from_str_radix(h, 16).ok());
            if *state == "0A" && p == Some(port) {
                inodes.insert(format!("socket:[{inode}]"));
            }
        }
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for pid in read_procs().keys() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let owns = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .ok()
                .and_then(|l| l.to_str().map(|s| inodes.contains(s)))
                .unwrap_or(false)
        });
        if owns {
            out.push(*pid);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that start busy processes run one at a time: each one's load is the others'
    /// foreign load, and on two cores they would starve each other's hog below the threshold.
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static ONE: Mutex<()> = Mutex::new(());
        ONE.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[test]
    fn stat_lines_with_spaces_and_parentheses_in_the_name_parse() {
        let line = "4242 (my (odd) proc) R 17 4242 4242 0 -1 4194304 100 0 0 0 250 30 0 0 20 0 1 0 1000 0 0";
        let p = parse_stat(line).unwrap();
        assert_eq!(p.name, "my (odd) proc");
        assert_eq!(p.ppid, 17);
        assert_eq!(p.ticks, 280);
    }

    fn sample(over: &[u32]) -> Sample {
        Sample {
            at: Instant::now(),
            over: over
                .iter()
                .map(|p| (format!("p{p}"), BTreeSet::from([*p])))
                .collect(),
            peak: None,
        }
    }

    #[test]
    fn a_run_counts_the_same_process_in_samples_in_a_row() {
        let s = [
            sample(&[1]),
            sample(&[2]),
            sample(&[1, 2]),
            sample(&[2]),
            sample(&[]),
        ];
        let refs: Vec<&Sample> = s.iter().collect();
        // Process 2 is over in samples 2, 3 and 4; process 1 never twice in a row.
        assert_eq!(longest_run(&refs), 3);
        let alternating = [sample(&[1]), sample(&[2]), sample(&[1]), sample(&[2])];
        let refs: Vec<&Sample> = alternating.iter().collect();
        assert_eq!(longest_run(&refs), 1);
    }

    #[test]
    fn descendants_of_the_server_are_the_server() {
        let p = |ppid| ProcStat {
            ppid,
            name: "x".into(),
            ticks: 0,
        };
        let procs = BTreeMap::from([(10, p(1)), (11, p(10)), (12, p(11)), (20, p(1))]);
        let set = with_descendants(&procs, &BTreeSet::from([10]));
        assert_eq!(set, BTreeSet::from([10, 11, 12]));
    }

    /// The load a guard judges over `ms` ms while a shell starts a new busy process every
    /// `secs` s (killing each when its time is up), asserted to be over for two samples running.
    fn load_of_churn(secs: &str, ms: u64) -> TryLoad {
        let _one = serial();
        use std::os::unix::process::CommandExt;
        let mut churn = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("while :; do timeout -s KILL {secs} sh -c 'while :; do :; done'; done"),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("sh");
        let g = Guard::start(rule_fast(), Vec::new());
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(ms));
        let load = g.judge(t0);
        // The whole group: the loop, its `timeout` and the busy shell under it.
        // SAFETY: kill has no memory preconditions; the group is the one spawned above.
        unsafe { libc::kill(-(churn.id() as i32), libc::SIGKILL) };
        let _ = churn.wait();
        assert!(load.longest_run_over >= 2, "{load:?}");
        load
    }

    #[test]
    fn short_lived_processes_of_one_program_add_up() {
        // A shell that starts a new busy process every 0.15 s: no process lives through two
        // samples, the program does.
        let load = load_of_churn("0.15", 1500);
        assert!(
            load.over.get("sh").is_some_and(|p| p.len() >= 2),
            "{load:?}"
        );
    }

    #[test]
    fn busy_time_is_read_from_the_cpu_line() {
        let line = "cpu  100 5 20 900 7 3 2 4 0 0";
        assert_eq!(busy_of_stat(line), Some(100 + 5 + 20 + 3 + 2 + 4));
        assert_eq!(busy_of_stat("cpu0 1 2 3"), None);
        assert!(machine_busy().is_some_and(|b| b > 0));
    }

    #[test]
    fn processes_that_come_and_go_between_samples_are_unattributed_load() {
        // A loop of processes of 20 ms each: most live and die between two samples of 0.1 s and are
        // never seen, so their time shows only as the machine's unattributed busy time; those a
        // sample does catch add up under their program's name ("sh"). Which of the two crosses
        // the threshold first depends on the timing, so either may be named; the load is seen.
        let load = load_of_churn("0.02", 2000);
        assert!(
            load.over.contains_key(UNATTRIBUTED) || load.over.contains_key("sh"),
            "{load:?}"
        );
    }

    #[test]
    fn a_busy_process_is_seen_and_this_one_is_not() {
        let _one = serial();
        // A real CPU hog in another process, and this process spinning too: only the hog counts.
        let hog = busy_shell();
        let g = Guard::start(rule_fast(), Vec::new());
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(1500) {
            std::hint::black_box(0u64);
        }
        let load = g.judge(t0);
        let hog_pid = end(hog);
        assert!(load.longest_run_over >= 2, "{load:?}");
        assert!(
            load.over.get("sh").is_some_and(|p| p.contains(&hog_pid)),
            "{load:?}"
        );
        let me = std::process::id();
        assert!(load.over.values().all(|p| !p.contains(&me)), "{load:?}");
        assert!(load.peak_pct.is_some_and(|x| x > 25.0), "{load:?}");
        // A guard told that the hog is the server: the hog is not foreign.
        let hog = busy_shell();
        let g = Guard::start(rule_fast(), vec![hog.id()]);
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(1200));
        let load = g.judge(t0);
        let hog_pid = end(hog);
        assert!(load.samples >= 2, "{load:?}");
        assert!(
            load.over.values().all(|p| !p.contains(&hog_pid)),
            "{load:?}"
        );
    }

    /// A try's end asks for a sample at once: with a ten-second interval the judge still gets a
    /// sample after the try's end, no sooner than [`MIN_SAMPLE`] after the one before it, long
    /// before the interval would give one; and a dropped guard's thread ends without waiting it
    /// out.
    #[test]
    fn a_try_s_end_is_sampled_at_once_and_not_sooner_than_the_shortest_sample() {
        let _one = serial();
        let slow = LoadGuardRule {
            interval_s: 10.0,
            ..rule_fast()
        };
        let g = Guard::start(slow, Vec::new());
        let t0 = Instant::now();
        let load = g.judge(t0);
        let waited = t0.elapsed();
        assert!(waited >= MIN_SAMPLE, "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        assert_eq!(load.samples, 1, "the sample after the try's end: {load:?}");
        let t1 = Instant::now();
        drop(g);
        assert!(t1.elapsed() < Duration::from_secs(5), "{:?}", t1.elapsed());
    }

    /// A shell spinning in a process of its own.
    fn busy_shell() -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh")
    }

    /// Kills and reaps `child`; its pid.
    fn end(mut child: std::process::Child) -> u32 {
        let pid = child.id();
        let _ = child.kill();
        let _ = child.wait();
        pid
    }

    fn rule_fast() -> LoadGuardRule {
        LoadGuardRule {
            threshold_pct: 25.0,
            consecutive: 2,
            interval_s: 0.2,
            max_tries: Some(2),
        }
    }
}
