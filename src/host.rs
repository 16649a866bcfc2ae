//! This machine, described the way a card describes hardware, so a replay can say whether it ran
//! on the recorded hardware.

use serde_json::{json, Value};

fn cpuinfo_field(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The CPU model name (`/proc/cpuinfo`), or the architecture when it is not known.
pub fn cpu_model() -> String {
    cpuinfo_field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Cores available to this process.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One line: `1 box: <cpu>, N cores, CPU only`.
pub fn describe() -> String {
    format!("1 box: {}, {} cores, CPU only", cpu_model(), cores())
}

/// This machine as a card's `hardware` object (one box, accelerator `cpu`).
pub fn hardware() -> Value {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    json!({
        "description": describe(),
        "boxes": [{"name": "local", "model": cpu_model(), "rank": 0}],
        "link": null,
        "driver": null,
        "kernel": kernel,
        "gpu_clock_mhz": null,
        "accelerator": "cpu",
    })
}
