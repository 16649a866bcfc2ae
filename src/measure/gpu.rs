//! The GPU beside a measurement, through NVML ([`rigaudit_engine::cuda::nvml`], loaded at run
//! time, so that a machine without NVIDIA's library measures as before): the device's facts once
//! at the start, and around every counted try the energy counter, the SM clock, the clocks'
//! throttle reasons and the processes on the GPU. A process on the GPU that is not the server's
//! (nor rigaudit) is foreign load, as a busy process on the CPU is: the guard throws the try
//! away ([`super::run::Run::guarded`]).
//!
//! NVML is read at each try's start and end only, so a throttle reason or a process that came
//! and went inside a try is not seen.

use super::guard;
use rigaudit_audit::records::speed::{GpuRecord, GpuTry};
use rigaudit_engine::cuda::nvml::Nvml;
use std::collections::BTreeSet;

/// Which GPU `--gpu` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Device 0 when NVML loads and the server is on this machine; nothing otherwise.
    Auto,
    /// No GPU facts.
    Off,
    /// This device (NVML's index); measure stops when it cannot be read.
    Index(u32),
}

/// Parses `--gpu`: `auto`, `off` or a device index.
pub fn parse_choice(s: &str) -> Result<Choice, String> {
    match s {
        "auto" => Ok(Choice::Auto),
        "off" => Ok(Choice::Off),
        _ => s
            .parse()
            .map(Choice::Index)
            .map_err(|_| format!("expected auto, off or a device index (0, 1, ...), not {s:?}")),
    }
}

/// The NVML throttle reason bits (`nvmlClocksThrottleReason*`, nvml.h), by name.
const REASONS: [(u64, &str); 9] = [
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

/// The names of the reasons in a throttle mask; bits NVML may add later as `0x...`.
pub fn reason_names(mask: u64) -> Vec<String> {
    let mut out: Vec<String> = REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, name)| name.to_string())
        .collect();
    let known = REASONS.iter().fold(0, |m, (bit, _)| m | bit);
    if mask & !known != 0 {
        out.push(format!("{:#x}", mask & !known));
    }
    out
}

/// What NVML said at a try's start.
pub struct Before {
    energy_mj: Option<u64>,
    throttle: u64,
    pids: Vec<u32>,
}

/// An open GPU and its record so far.
pub struct Gpu {
    nvml: Nvml,
    record: GpuRecord,
    /// The server's processes (with their descendants, never foreign).
    server: Vec<u32>,
}

impl Gpu {
    /// Opens device `index` and reads its facts; `server` are the server's pids.
    pub fn open(index: u32, server: Vec<u32>) -> Result<Gpu, String> {
        let nvml = Nvml::open(index)?;
        let memory = nvml.memory().ok();
        let record = GpuRecord {
            index,
            name: nvml.name()?,
            driver: nvml.driver().ok(),
            memory_total_bytes: memory.map(|m| m.0),
            memory_used_bytes: memory.map(|m| m.1),
            clock_sm_mhz: nvml.clock(1).ok(),
            clock_mem_mhz: nvml.clock(2).ok(),
            power_w: nvml.power_w().ok(),
            steps: Vec::new(),
        };
        Ok(Gpu {
            nvml,
            record,
            server,
        })
    }

    /// A line for the log: what is read.
    pub fn describe(&self) -> String {
        let r = &self.record;
        format!(
            "gpu: device {} ({}, driver {}) read through NVML: energy, SM clock, throttle reasons and the processes on it around every counted try; a process on it that is not the server's is foreign load",
            r.index,
            r.name,
            r.driver.as_deref().unwrap_or("unknown")
        )
    }

    /// Reads the counters at a try's start.
    pub fn before(&self) -> Before {
        Before {
            energy_mj: self.nvml.energy_mj().ok(),
            throttle: self.nvml.throttle_reasons().unwrap_or(0),
            pids: self.pids(),
        }
    }

    fn pids(&self) -> Vec<u32> {
        let procs = self.nvml.processes().unwrap_or_default();
        procs.into_iter().map(|(pid, _)| pid).collect()
    }

    /// Reads the counters at a try's end and records its row (kept until [`Gpu::set_kept`]
    /// says otherwise); returns the foreign processes seen (`pid N (name) on the GPU`).
    pub fn after(
        &mut self,
        step: &str,
        attempt: u32,
        b: Before,
        tokens: Option<u64>,
    ) -> Vec<String> {
        let energy_j = match (b.energy_mj, self.nvml.energy_mj().ok()) {
            (Some(a), Some(z)) => Some(z.saturating_sub(a) as f64 / 1000.0),
            _ => None,
        };
        let throttle = b.throttle | self.nvml.throttle_reasons().unwrap_or(0);
        let mut pids: BTreeSet<u32> = b.pids.into_iter().collect();
        pids.extend(self.pids());
        let own = guard::server_tree(&self.server);
        let foreign: Vec<String> = pids
            .iter()
            .filter(|p| !own.contains(p))
            .map(|p| format!("pid {p} ({}) on the GPU", guard::process_name(*p)))
            .collect();
        self.record.steps.push(GpuTry {
            step: step.to_string(),
            attempt,
            kept: true,
            energy_j,
            completion_tokens: tokens,
            energy_j_per_token: energy_j
                .zip(tokens.filter(|t| *t > 0))
                .map(|(j, t)| (j / t as f64 * 1e6).round() / 1e6),
            clock_sm_mhz: self.nvml.clock(1).ok(),
            throttle_reasons: reason_names(throttle),
            foreign_processes: foreign.clone(),
        });
        foreign
    }

    /// Marks the last try's row as thrown away (or kept).
    pub fn set_kept(&mut self, kept: bool) {
        if let Some(t) = self.record.steps.last_mut() {
            t.kept = kept;
        }
    }

    /// What the speed result records.
    pub fn record(&self) -> GpuRecord {
        self.record.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_masks_name_their_reasons_and_keep_unknown_bits() {
        assert!(reason_names(0).is_empty());
        assert_eq!(reason_names(0x1), ["gpu_idle"]);
        assert_eq!(reason_names(0x44), ["sw_power_cap", "hw_thermal_slowdown"]);
        assert_eq!(reason_names(0x1000 | 0x8), ["hw_slowdown", "0x1000"]);
    }

    #[test]
    fn gpu_takes_auto_off_or_an_index() {
        assert_eq!(parse_choice("auto"), Ok(Choice::Auto));
        assert_eq!(parse_choice("off"), Ok(Choice::Off));
        assert_eq!(parse_choice("1"), Ok(Choice::Index(1)));
        assert!(parse_choice("gpu0").unwrap_err().contains("auto, off"));
    }
}
