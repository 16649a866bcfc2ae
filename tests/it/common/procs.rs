//! The processes a test started, found by a marker in their command line (a test's own copy of
//! the fake engine), so that a test can wait for them to be gone and never leave one behind.

use std::time::{Duration, Instant};

/// The live (not zombie) processes whose command line contains `needle`.
pub fn pids_naming(needle: &str) -> Vec<libc::pid_t> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if String::from_utf8_lossy(&cmd).contains(needle) && !zombie {
            found.push(pid);
        }
    }
    found
}

/// [`pids_naming`] as `PID: COMMAND LINE`, to show in an assertion.
pub fn processes_naming(needle: &str) -> Vec<String> {
    pids_naming(needle)
        .into_iter()
        .map(|p| {
            let c = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&c).replace('\0', " "))
        })
        .collect()
}

/// Waits up to `secs` for every process naming `needle` to be gone; what is left.
pub fn leftovers_after(needle: &str, secs: u64) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let left = processes_naming(needle);
        if left.is_empty() || t0.elapsed() > Duration::from_secs(secs) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kills (SIGKILL) every process naming `needle`: a test's last net, even when an assertion
/// failed.
pub fn kill_naming(needle: &str) {
    for pid in pids_naming(needle) {
        // SAFETY: kill(2) on a process whose command line names the test's own marker.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}
