//! The GPU beside a measurement, through NVML ([`rigaudit_engine::cuda::nvml`], loaded at run
//! time, so that a machine without NVIDIA's library measures as before): the device's facts once
//! at the start, and for every counted try the energy counter, the SM clock, the clocks'
//! throttle reasons and the processes on the GPU. A process on the GPU that is not the server's
//! (nor rigaudit) is foreign load, as a busy process on the CPU is: the guard throws the try
//! away ([`super::run::Run::guarded`]).
//!
//! NVML is read at each try's start and end, and in between by a sampler thread every
//! [`SAMPLE_EVERY`] while the try runs ([`Watch`], stopped and joined with the try): the try's row
//! keeps the union of the throttle reasons seen, the lowest and highest SM clock, and every
//! process seen on the GPU (at most [`MAX_PROCESSES`] named), so a foreign process that came and
//! went inside the try disturbs it as one present throughout does. The energy is the counter's
//! growth from the try's start to its end. A process or a throttle reason shorter than the
//! interval that falls between two samples is still not seen.

use super::guard;
use rigaudit_audit::records::speed::{GpuRecord, GpuTry};
use rigaudit_engine::cuda::nvml::Nvml;
use std::collections::BTreeMap;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often NVML is read while a try runs. A try of the shortest counted step (one decode
/// request of a few tokens) lasts some hundred milliseconds, and a GPU process that disturbs a
/// measurement holds the GPU for at least a kernel launch and its context's setup (tens of
/// milliseconds to seconds); ten readings a second see such a process inside every try while
/// costing little: one reading is five NVML queries of microseconds to a millisecond each.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The most distinct processes a try's row names (the others are counted): a machine that
/// starts a GPU process every sample must not grow the record without bound.
pub const MAX_PROCESSES: usize = 32;

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

/// What NVML showed during a try, sample by sample.
#[derive(Debug, Default)]
struct Seen {
    /// The union of the throttle reason masks.
    throttle: u64,
    clock_min: Option<u32>,
    clock_max: Option<u32>,
    /// Every process seen, with whether it is the server's (judged when first seen, while it
    /// lives) and its words (`pid N (name) on the GPU`).
    pids: BTreeMap<u32, (bool, String)>,
    /// Processes seen beyond [`MAX_PROCESSES`], not named.
    more: usize,
    samples: u32,
}

impl Seen {
    /// Reads NVML once into what was seen.
    fn sample(&mut self, nvml: &Mutex<Nvml>, server: &[u32]) {
        let (throttle, clock, procs) = {
            let n = nvml.lock().unwrap_or_else(|p| p.into_inner());
            (n.throttle_reasons(), n.clock(1), n.processes())
        };
        self.samples += 1;
        self.throttle |= throttle.unwrap_or(0);
        if let Ok(c) = clock {
            self.clock_min = Some(self.clock_min.map_or(c, |m| m.min(c)));
            self.clock_max = Some(self.clock_max.map_or(c, |m| m.max(c)));
        }
        let new: Vec<u32> = procs
            .unwrap_or_default()
            .into_iter()
            .map(|(pid, _)| pid)
            .filter(|p| !self.pids.contains_key(p))
            .collect();
        if new.is_empty() {
            return;
        }
        let own = guard::server_tree(server);
        for pid in new {
            if self.pids.len() >= MAX_PROCESSES {
                self.more += 1;
                continue;
            }
            let words = format!("pid {pid} ({}) on the GPU", guard::process_name(pid));
            self.pids.insert(pid, (own.contains(&pid), words));
        }
    }

    /// The foreign processes seen, in words.
    fn foreign(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .pids
            .values()
            .filter(|(own, _)| !own)
            .map(|(_, w)| w.clone())
            .collect();
        if self.more > 0 {
            out.push(format!(
                "{} more processes on the GPU, not named",
                self.more
            ));
        }
        out
    }
}

/// The sampler of one try: a thread reading NVML every [`SAMPLE_EVERY`] until it is told to
/// stop, or until the watch is dropped (then it is stopped and joined: no thread outlives it).
pub struct Watch {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<Seen>>,
}

impl Watch {
    fn start(nvml: Arc<Mutex<Nvml>>, server: Vec<u32>, mut seen: Seen) -> Watch {
        let (stop, rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(SAMPLE_EVERY) {
                seen.sample(&nvml, &server);
            }
            seen
        });
        Watch {
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Stops the sampler and returns what it saw (nothing if it died).
    fn finish(mut self) -> Seen {
        self.stop.take();
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What NVML said at a try's start, and the sampler watching it.
pub struct Before {
    energy_mj: Option<u64>,
    watch: Watch,
}

/// An open GPU and its record so far.
pub struct Gpu {
    nvml: Arc<Mutex<Nvml>>,
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
            nvml: Arc::new(Mutex::new(nvml)),
            record,
            server,
        })
    }

    /// A line for the log: what is read.
    pub fn describe(&self) -> String {
        let r = &self.record;
        format!(
            "gpu: device {} ({}, driver {}) read through NVML: energy, SM clock, throttle reasons and the processes on it during every counted try (every {} ms); a process on it that is not the server's is foreign load",
            r.index,
            r.name,
            r.driver.as_deref().unwrap_or("unknown"),
            SAMPLE_EVERY.as_millis()
        )
    }

    /// Reads the counters at a try's start and starts sampling the try.
    pub fn before(&self) -> Before {
        let energy_mj = self.lock().energy_mj().ok();
        let mut seen = Seen::default();
        seen.sample(&self.nvml, &self.server);
        Before {
            energy_mj,
            watch: Watch::start(Arc::clone(&self.nvml), self.server.clone(), seen),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Nvml> {
        self.nvml.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops the try's sampler, reads the counters at its end and records its row (kept until
    /// [`Gpu::set_kept`] says otherwise); returns the foreign processes seen during the try
    /// (`pid N (name) on the GPU`).
    pub fn after(
        &mut self,
        step: &str,
        attempt: u32,
        b: Before,
        tokens: Option<u64>,
    ) -> Vec<String> {
        let mut seen = b.watch.finish();
        seen.sample(&self.nvml, &self.server);
        let (end_mj, clock) = {
            let n = self.lock();
            (n.energy_mj().ok(), n.clock(1).ok())
        };
        let energy_j = match (b.energy_mj, end_mj) {
            (Some(a), Some(z)) => Some(z.saturating_sub(a) as f64 / 1000.0),
            _ => None,
        };
        let foreign = seen.foreign();
        self.record.steps.push(GpuTry {
            step: step.to_string(),
            attempt,
            kept: true,
            energy_j,
            completion_tokens: tokens,
            energy_j_per_token: energy_j
                .zip(tokens.filter(|t| *t > 0))
                .map(|(j, t)| (j / t as f64 * 1e6).round() / 1e6),
            clock_sm_mhz: clock,
            clock_sm_min_mhz: seen.clock_min,
            clock_sm_max_mhz: seen.clock_max,
            samples: Some(seen.samples),
            throttle_reasons: reason_names(seen.throttle),
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
    fn a_try_names_foreign_processes_only_and_counts_those_past_the_cap() {
        let mut seen = Seen::default();
        seen.pids
            .insert(7, (true, "pid 7 (engine) on the GPU".into()));
        seen.pids
            .insert(9, (false, "pid 9 (torch) on the GPU".into()));
        assert_eq!(seen.foreign(), ["pid 9 (torch) on the GPU"]);
        seen.more = 3;
        assert_eq!(
            seen.foreign(),
            [
                "pid 9 (torch) on the GPU",
                "3 more processes on the GPU, not named"
            ]
        );
    }

    #[test]
    fn gpu_takes_auto_off_or_an_index() {
        assert_eq!(parse_choice("auto"), Ok(Choice::Auto));
        assert_eq!(parse_choice("off"), Ok(Choice::Off));
        assert_eq!(parse_choice("1"), Ok(Choice::Index(1)));
        assert!(parse_choice("gpu0").unwrap_err().contains("auto, off"));
    }
}
