//! Two ranks of the fake engine in one test (tests/it/ssh.rs, tests/it/slurm.rs): a copy of the engine
//! at a path unique to the test (its marker in /proc), the argv file each rank writes, the
//! replay's `--set` words that point the ranks at them, and no rank left behind on drop.

use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A test's folder and its copy of the fake engine.
pub struct TwoRanks {
    pub tmp: tempfile::TempDir,
    pub script: PathBuf,
}

impl TwoRanks {
    /// A new folder holding the fake engine's `text` as `name`.
    pub fn new(name: &str, text: &str) -> TwoRanks {
        let tmp = tempfile::tempdir().unwrap();
        let script = tmp.path().join(name);
        std::fs::write(&script, text).unwrap();
        TwoRanks { tmp, script }
    }

    /// Where rank `rank` writes its argv and environment.
    pub fn argv_file(&self, rank: u32) -> PathBuf {
        self.tmp.path().join(format!("argv{rank}.json"))
    }

    /// The replay's `--out`.
    pub fn out(&self) -> PathBuf {
        self.tmp.path().join("out")
    }

    /// What rank `rank` wrote, once it started.
    pub fn argv_info(&self, rank: u32) -> Option<Value> {
        let t = std::fs::read_to_string(self.argv_file(rank)).ok()?;
        serde_json::from_str(&t).ok()
    }

    /// The `--set` words: `mode`/`delay` for the ranks, a free port for rank 1, the argv files.
    pub fn sets(&self, mode: &str, delay: &str) -> Vec<String> {
        [
            format!("mode={mode}"),
            format!("delay={delay}"),
            format!("port1={}", free_port()),
            format!("argv0={}", self.argv_file(0).display()),
            format!("argv1={}", self.argv_file(1).display()),
        ]
        .into_iter()
        .flat_map(|s| ["--set".to_string(), s])
        .collect()
    }

    /// Waits up to 60 s for both ranks to have written their argv; whether they did.
    pub fn both_started(&self) -> bool {
        let t0 = Instant::now();
        loop {
            let started = self.argv_info(0).is_some() && self.argv_info(1).is_some();
            if started || t0.elapsed() > Duration::from_secs(60) {
                return started;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Live processes whose command line names this test's copy of the fake engine.
    pub fn leftovers(&self) -> Vec<String> {
        super::procs::processes_naming(self.script.to_str().unwrap())
    }

    /// Waits up to `secs` for every rank to be gone; what is left.
    pub fn leftovers_after(&self, secs: u64) -> Vec<String> {
        super::procs::leftovers_after(self.script.to_str().unwrap(), secs)
    }
}

impl Drop for TwoRanks {
    fn drop(&mut self) {
        // Never leave a rank behind, even when an assertion failed: its pid, found by this
        // test's own copy of the fake engine in its command line.
        super::procs::kill_naming(self.script.to_str().unwrap());
    }
}

/// A TCP port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
