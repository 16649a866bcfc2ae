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

/// Main memory in GiB (`/proc/meminfo`), to one decimal.
pub fn memory_gib() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: f64 = text
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((kib / 1024.0 / 1024.0 * 10.0).round() / 10.0)
}

/// The instruction sets engines choose CPU kernels by (the bundled engine's: AVX2 with FMA and
/// F16C, AVX-512 with VNNI; llama.cpp's also AVX-VNNI and AMX), those this CPU has, as
/// `/proc/cpuinfo` names them.
pub fn isa() -> Vec<String> {
    const KERNEL_ISAS: &[&str] = &[
        "avx2",
        "fma",
        "f16c",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512_vnni",
        "avx512_bf16",
        "avx_vnni",
        "amx_tile",
        "asimd",
        "asimddp",
        "sve",
    ];
    let flags = cpuinfo_field("flags")
        .or_else(|| cpuinfo_field("Features"))
        .unwrap_or_default();
    let have: Vec<&str> = flags.split_whitespace().collect();
    KERNEL_ISAS
        .iter()
        .filter(|f| have.contains(f))
        .map(|f| f.to_string())
        .collect()
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
        "boxes": [{
            "name": "local",
            "model": cpu_model(),
            "rank": 0,
            "cores": cores(),
            "memory_gib": memory_gib(),
            "isa": isa(),
        }],
        "link": null,
        "driver": null,
        "kernel": kernel,
        "gpu_clock_mhz": null,
        "accelerator": "cpu",
    })
}
