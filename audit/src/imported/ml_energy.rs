//! The ML.ENERGY benchmark's LLM result (v3: `results.json`, with `prometheus.json` beside it),
//! the energy figures of ml.energy's leaderboard.
//!
//! The definitions are the benchmark's own code (`ml-energy/benchmark`, tag v3.0 `14571a8`),
//! tabled with file and line in `docs/formats/ml-energy.md` (rows R, S, P, Q; each check below
//! cites its rows). In short:
//! - `results.json` is vLLM's serving-benchmark result grown a steady-state window: its
//!   per-request records (one object a request under `/results`) and its aggregates are vLLM's,
//!   checked by vLLM's table ([`super::vllm::CHECKS`]) over the same records (R11-R31);
//! - the energy is measured over a **steady-state window** only: it opens when `max_num_seqs`
//!   requests have their first token and closes when all but `max_num_seqs + 1` have finished
//!   (S1-S2); `steady_state_energy` is the sum over GPUs of the energy meter's window
//!   (`steady_state_measurement.gpu_energy`, J) and `steady_state_duration` its time (R12-R13);
//! - `steady_state_energy_per_token` divides that energy by the reply tokens the client counted
//!   in the window (usage deltas of every stream), never written (R14); each request's `energy`
//!   is that ratio times its `output_len`, not a measurement (R29);
//! - `prometheus.json` holds the server's `/metrics` text about once a second; its
//!   `steady_state_stats` reduce the snapshots inside the window: the running batch as the mean
//!   of each snapshot's **sum** over engines (from 2025-11-24; before, the **max**, which reads a
//!   data-parallel run's batch as one engine's: row V4), (P4);
//! - the benchmark's validator (`scripts/validate_results.py`, Q1-Q10) holds a run to: every
//!   request completed and succeeded, a window of at least 30 s, a batch of at least 0.8 of
//!   `max_num_seqs` in it, energy and energy per token above 0 and at most 100 J a token, power
//!   and temperature readings within the GPU's range.

use super::vllm;
use super::{row, Row, IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE, RUN_INCOMPLETE};
use crate::check::{About, Emit, Ran};
use crate::report::Severity;
use crate::speed;
use serde_json::json;

/// `import.energy-window`.
pub const ENERGY_WINDOW: About = About {
    id: "import.energy-window",
    severity: Severity::Error,
    doc: "The window an energy figure was measured over is not the steady state its benchmark requires: shorter than its minimum (ML.ENERGY: 30 s), or with a running batch below the share of the batch limit it requires (ML.ENERGY: 0.8 of max_num_seqs, a warning), or with no record of the batch at all.",
};

/// `import.energy-readings`.
pub const ENERGY_READINGS: About = About {
    id: "import.energy-readings",
    severity: Severity::Warning,
    doc: "Energy, power or temperature readings of an imported run fall outside the ranges its benchmark's own validator accepts (ML.ENERGY: energy above 0 and at most 100 J a token, an error; power within the GPU's limits and temperatures of 20-95 °C, warnings and errors as its validator grades them), or the server's metrics were collected too rarely to reduce.",
};

/// The validator's thresholds (docs/formats/ml-energy.md rows Q5-Q10).
pub mod limits {
    /// Q6: the shortest steady state, s.
    pub const STEADY_SECONDS: f64 = 30.0;
    /// Q5: the running batch's least share of `max_num_seqs`.
    pub const BATCH_SHARE: f64 = 0.8;
    /// Q8: the most joules a token.
    pub const JOULES_PER_TOKEN: f64 = 100.0;
    /// Q7: the least share of the expected Prometheus snapshots (one a second).
    pub const SNAPSHOT_SHARE: f64 = 0.75;
    /// Q10: temperatures outside [20, 95] °C fail at 5 % of the samples.
    pub const TEMPERATURE: (f64, f64, f64) = (20.0, 95.0, 0.05);
    /// Q9: a GPU's power limit (TDP), W, by the model name's last word.
    pub const TDP: &[(&str, f64)] = &[("H100", 700.0), ("H200", 700.0), ("B200", 1000.0)];
    /// Q9: each power domain's range as (floor W, ceiling as a share of TDP).
    pub const POWER: &[(&str, f64, f64)] = &[
        ("device_instant", 70.0, 1.7),
        ("device_average", 70.0, 1.1),
        ("memory_average", 10.0, 0.5),
    ];
}

/// The steady-state window as the file records it (rows R12-R14, R20, R21).
#[derive(Debug, Clone, Default)]
pub struct Steady {
    /// `steady_state_duration`, s.
    pub duration: Option<f64>,
    /// `steady_state_energy`, J.
    pub energy: Option<f64>,
    /// `steady_state_energy_per_token`, J.
    pub per_token: Option<f64>,
    /// `steady_state_measurement.time`, s.
    pub measured_time: Option<f64>,
    /// `steady_state_measurement.gpu_energy`, J by GPU.
    pub gpu_energy: Vec<(String, f64)>,
    /// `timeline.steady_state_start_time`, `..._end_time`, Unix s.
    pub window: Option<(f64, f64)>,
}

/// One snapshot of the server's metrics (`prometheus.json` `timeline[]`), reduced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// `timestamp`, Unix s.
    pub at: f64,
    /// `vllm:num_requests_running` summed over its label sets, and their largest.
    pub running: Option<(f64, f64)>,
    /// `vllm:generation_tokens_total` summed over its label sets.
    pub generated: Option<f64>,
}

/// `prometheus.json`, read.
#[derive(Debug, Clone, Default)]
pub struct Prometheus {
    /// Its name.
    pub file: String,
    /// `steady_state_start_time`, `steady_state_end_time`.
    pub window: Option<(f64, f64)>,
    /// `steady_state_stats["vllm:num_requests_running"]`.
    pub stats_running: Option<f64>,
    /// Each snapshot, in order.
    pub snapshots: Vec<Snapshot>,
}

/// The result, typed.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// `results.json`'s name.
    pub file: String,
    /// The per-request records and aggregates, as vLLM's table reads them.
    pub requests: vllm::Run,
    /// `num_prompts`, `completed`, `max_num_seqs`, `output_throughput`.
    pub num_prompts: Option<f64>,
    pub completed: Option<f64>,
    pub max_num_seqs: Option<f64>,
    pub output_throughput: Option<f64>,
    /// `gpu_model`.
    pub gpu_model: Option<String>,
    /// The window.
    pub steady: Steady,
    /// `results[].energy`, J (None where a record has none).
    pub request_energy: Vec<Option<f64>>,
    /// `timeline.power`: (domain, GPU, watts of each sample).
    pub power: Vec<(String, String, Vec<f64>)>,
    /// `timeline.temperature`: every sample, °C.
    pub temperatures: Vec<f64>,
    /// `prometheus.json`, when given.
    pub prometheus: Option<Prometheus>,
}

/// The checks over the ML.ENERGY-only figures (vLLM's table runs over `requests` too).
pub const CHECKS: &[Row<Run>] = &[
    row(speed::RECOMPUTE_MISMATCH.about(), energy_recomputed),
    row(IMPOSSIBLE_AGGREGATE, tokens_in_window),
    row(RUN_INCOMPLETE, completion),
    row(ENERGY_WINDOW, window),
    row(ENERGY_READINGS, readings),
    row(NOT_RECOMPUTABLE, not_recomputable),
];

/// Whether `a` and `b` agree to a millionth (Python writes every digit of a float).
fn agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1e-9)
}

/// `speed.recompute-mismatch` (rows R12, R13, R29): the window's energy against the sum of its
/// GPUs' meters, its duration against the meter's time, and each request's energy against the
/// energy per token times its reply tokens.
fn energy_recomputed(r: &Run, emit: &mut Emit) -> Ran {
    let s = &r.steady;
    let mut ran = false;
    if let (Some(e), false) = (s.energy, s.gpu_energy.is_empty()) {
        ran = true;
        let sum: f64 = s.gpu_energy.iter().map(|(_, j)| j).sum();
        if !agree(e, sum) {
            emit.finding(format!("steady_state_energy is {e} J; the window's GPU meters (steady_state_measurement.gpu_energy) add up to {sum} J"))
                .at(&r.file, "/steady_state_energy")
                .data(json!({"printed": e, "recomputed": sum}));
        }
    }
    if let (Some(d), Some(t)) = (s.duration, s.measured_time) {
        ran = true;
        if !agree(d, t) {
            emit.finding(format!("steady_state_duration is {d} s; the energy meter's window (steady_state_measurement.time) lasted {t} s"))
                .at(&r.file, "/steady_state_duration")
                .data(json!({"printed": d, "recomputed": t}));
        }
    }
    if let Some(per_token) = s.per_token {
        ran |= request_energy(r, per_token, emit);
    }
    ran.then_some(())
}

/// Each `results[i].energy` against `per_token x output_len` (row R29).
fn request_energy(r: &Run, per_token: f64, emit: &mut Emit) -> bool {
    let lens = &r.requests.output_lens;
    let off: Vec<(usize, f64, f64)> = r
        .request_energy
        .iter()
        .zip(lens)
        .enumerate()
        .filter_map(|(i, (e, n))| e.map(|e| (i, e, per_token * n)))
        .filter(|(_, e, want)| !agree(*e, *want))
        .collect();
    if let Some((i, e, want)) = off.first() {
        let idx: Vec<String> = off.iter().take(20).map(|(i, _, _)| i.to_string()).collect();
        emit.finding(format!(
            "{} requests' energy is not steady_state_energy_per_token x output_len (the benchmark's own rule; request {i}: {e} J, {want} J by the rule)",
            off.len()
        ))
        .at(&r.file, format!("/results/{}/energy", idx.join(",")))
        .data(json!({"requests": off.len(), "first": i, "printed": e, "recomputed": want}));
    }
    r.request_energy.iter().any(Option::is_some)
}

/// `import.impossible-aggregate` (rows R14, S4): the reply tokens the energy per token divides by
/// (energy / energy per token) against the reply tokens of the whole run, and, with the server's
/// counter of generated tokens, against what it counted between the snapshots around the window.
fn tokens_in_window(r: &Run, emit: &mut Emit) -> Ran {
    let (Some(e), Some(per_token)) = (r.steady.energy, r.steady.per_token) else {
        return None;
    };
    if per_token <= 0.0 || e <= 0.0 {
        return None;
    }
    let tokens = e / per_token;
    let all: f64 = r.requests.output_lens.iter().sum();
    // A failed request's tokens count in the window but not in its output_len (0): the run's
    // total bounds the window's only when every request succeeded.
    let all_ok = (0..r.requests.ttfts.len()).all(|i| r.requests.ok(i));
    if all_ok && tokens > all * (1.0 + 1e-6) + 1.0 {
        emit.finding(format!("steady_state_energy / steady_state_energy_per_token = {tokens:.0} reply tokens in the window, more than the {all:.0} of the whole run"))
            .at(&r.file, "/steady_state_energy_per_token")
            .data(json!({"tokens_in_window": tokens, "tokens_in_run": all}));
    }
    if let Some((low, high)) = r.prometheus.as_ref().and_then(|p| generated_between(p, r)) {
        let slack = r.max_num_seqs.unwrap_or(0.0);
        if tokens < low - slack || tokens > high + slack {
            emit.finding(format!("the energy per token divides by {tokens:.0} reply tokens in the window; the server's vllm:generation_tokens_total counted {low:.0} to {high:.0} between the snapshots inside and around it (energy per token from the server's count: {:.4} to {:.4} J)", e / high.max(1.0), e / low.max(1.0)))
                .at(&r.file, "/steady_state_energy_per_token")
                .data(json!({"tokens_in_window": tokens, "server_low": low, "server_high": high}));
        }
    }
    Some(())
}

/// The tokens the server's counter gained between the snapshots just inside the window (low)
/// and those just around it (high), when it has the counter on both sides.
pub fn generated_between(p: &Prometheus, r: &Run) -> Option<(f64, f64)> {
    let (start, end) = r.steady.window.or(p.window)?;
    let counted: Vec<(f64, f64)> = p
        .snapshots
        .iter()
        .filter_map(|s| s.generated.map(|g| (s.at, g)))
        .collect();
    let before = counted.iter().rev().find(|(t, _)| *t <= start)?;
    let after = counted.iter().find(|(t, _)| *t >= end)?;
    let first_in = counted.iter().find(|(t, _)| *t >= start)?;
    let last_in = counted.iter().rev().find(|(t, _)| *t <= end)?;
    let low = (last_in.1 - first_in.1).max(0.0);
    Some((low, after.1 - before.1))
}

/// `import.run-incomplete` (row Q2): fewer requests completed than were sent; the benchmark
/// writes its files, then stops with an error.
fn completion(r: &Run, emit: &mut Emit) -> Ran {
    let (Some(sent), Some(done)) = (r.num_prompts, r.completed) else {
        return None;
    };
    if done < sent {
        emit.finding(format!("{done} of {sent} requests completed: the benchmark's own run fails when any did not (its files are written before it stops)"))
            .at(&r.file, "/completed")
            .data(json!({"completed": done, "num_prompts": sent}));
    }
    Some(())
}

/// The running batch in the window: the mean over in-window snapshots of each one's sum over
/// engines, and of its largest engine (row P4, V4).
pub fn running_in_window(p: &Prometheus, window: (f64, f64)) -> Option<(f64, f64)> {
    let inside: Vec<(f64, f64)> = p
        .snapshots
        .iter()
        .filter(|s| s.at >= window.0 && s.at <= window.1)
        .filter_map(|s| s.running)
        .collect();
    if inside.is_empty() {
        return None;
    }
    let n = inside.len() as f64;
    let sum = inside.iter().map(|(s, _)| s).sum::<f64>() / n;
    let max = inside.iter().map(|(_, m)| m).sum::<f64>() / n;
    Some((sum, max))
}

/// `import.energy-window` (rows Q5, Q6, P4, V4): the window's length, and its running batch
/// against `max_num_seqs`, recomputed from the snapshots when `prometheus.json` is given.
fn window(r: &Run, emit: &mut Emit) -> Ran {
    let mut ran = false;
    if let Some(d) = r.steady.duration {
        ran = true;
        if d < limits::STEADY_SECONDS {
            emit.finding(format!("the steady state the energy was measured over lasted {d} s; the benchmark's validator requires {} s (a short window's energy per token is dominated by its ends)", limits::STEADY_SECONDS))
                .at(&r.file, "/steady_state_duration")
                .data(json!({"seconds": d, "required": limits::STEADY_SECONDS}));
        }
    }
    if let (Some(limit), Some(p)) = (r.max_num_seqs, &r.prometheus) {
        ran = true;
        batch(r, p, limit, emit);
    }
    ran.then_some(())
}

/// The batch part of [`window`].
fn batch(r: &Run, p: &Prometheus, limit: f64, emit: &mut Emit) {
    let window = r.steady.window.or(p.window);
    let recomputed = window.and_then(|w| running_in_window(p, w));
    let Some(batch) = recomputed.map(|(sum, _)| sum).or(p.stats_running) else {
        emit.finding("no record of the running batch in the steady-state window (steady_state_stats has no vllm:num_requests_running and no snapshot falls inside the window): the benchmark's validator fails such a run")
            .at(&p.file, "/steady_state_stats");
        return;
    };
    if let (Some((sum, max)), Some(stated)) = (recomputed, p.stats_running) {
        if !agree(sum, stated) {
            let why = if agree(max, stated) && !agree(max, sum) {
                " — the largest engine's, as the benchmark reduced it before 2025-11-24: the batch of one data-parallel engine, not the server's"
            } else {
                ""
            };
            emit.warning(format!("steady_state_stats says {stated} requests running in the window; its snapshots give {sum:.3} (summed over engines){why}"))
                .at(&p.file, "/steady_state_stats/vllm:num_requests_running")
                .data(json!({"printed": stated, "recomputed": sum, "largest_engine": max}));
        }
    }
    if batch < limits::BATCH_SHARE * limit {
        emit.warning(format!("{batch:.1} requests ran on average in the window, {:.0} % of max_num_seqs {limit}; the benchmark's validator wants {:.0} % (the energy then is that of a batch smaller than the one named)", 100.0 * batch / limit, 100.0 * limits::BATCH_SHARE))
            .at(&p.file, "/steady_state_stats/vllm:num_requests_running")
            .data(json!({"running": batch, "max_num_seqs": limit}));
    }
}

/// `import.energy-readings` (rows Q7-Q10).
fn readings(r: &Run, emit: &mut Emit) -> Ran {
    let mut ran = metric_values(r, emit);
    ran |= power(r, emit);
    ran |= temperatures(r, emit);
    if let Some(p) = &r.prometheus {
        ran |= snapshots_collected(r, p, emit);
    }
    ran.then_some(())
}

/// Row Q8: throughput and energy above 0, energy per token in (0, 100] J.
fn metric_values(r: &Run, emit: &mut Emit) -> bool {
    let rules = [
        ("output_throughput", r.output_throughput, f64::INFINITY),
        ("steady_state_energy", r.steady.energy, f64::INFINITY),
        (
            "steady_state_energy_per_token",
            r.steady.per_token,
            limits::JOULES_PER_TOKEN,
        ),
    ];
    let mut ran = false;
    for (key, value, most) in rules {
        let Some(v) = value else { continue };
        ran = true;
        if v <= 0.0 || v > most {
            let range = if most.is_finite() {
                format!("above 0 and at most {most}")
            } else {
                "above 0".into()
            };
            emit.at_severity(
                Severity::Error,
                format!("{key} is {v}; the benchmark's validator requires it {range}"),
            )
            .at(&r.file, format!("/{key}"))
            .data(json!({"key": key, "value": v}));
        }
    }
    ran
}

/// Row Q9: each power sample within its domain's range for the GPU's power limit.
fn power(r: &Run, emit: &mut Emit) -> bool {
    let Some(tdp) = r.gpu_model.as_deref().and_then(tdp_of) else {
        return false;
    };
    for (domain, gpu, watts) in &r.power {
        let Some((_, floor, share)) = limits::POWER.iter().find(|(d, _, _)| d == domain) else {
            continue;
        };
        let ceiling = share * tdp;
        let out: Vec<f64> = watts
            .iter()
            .copied()
            .filter(|w| *w < *floor || *w > ceiling)
            .collect();
        if let Some(first) = out.first() {
            emit.finding(format!("{} of {} {domain} power samples of GPU {gpu} are outside {floor}-{ceiling} W (the validator's range for a {tdp} W GPU; the first: {first} W)", out.len(), watts.len()))
                .at(&r.file, format!("/timeline/power/{domain}/{gpu}"))
                .data(json!({"domain": domain, "gpu": gpu, "outside": out.len(), "samples": watts.len()}));
        }
    }
    !r.power.is_empty()
}

/// The power limit of a GPU model the validator knows.
fn tdp_of(model: &str) -> Option<f64> {
    limits::TDP
        .iter()
        .find(|(name, _)| model.to_ascii_uppercase().contains(name))
        .map(|(_, w)| *w)
}

/// Row Q10: 5 % or more of the temperature samples outside 20-95 °C is an error.
fn temperatures(r: &Run, emit: &mut Emit) -> bool {
    let (low, high, share) = limits::TEMPERATURE;
    let n = r.temperatures.len();
    let out = r
        .temperatures
        .iter()
        .filter(|t| **t < low || **t > high)
        .count();
    if n > 0 && out as f64 / n as f64 >= share {
        emit.at_severity(Severity::Error, format!("{out} of {n} GPU temperature samples are outside {low}-{high} °C: the benchmark's validator fails a run at {:.0} %", share * 100.0))
            .at(&r.file, "/timeline/temperature")
            .data(json!({"outside": out, "samples": n}));
    }
    n > 0
}

/// Row Q7: snapshots of the server's metrics, about one a second over the run and the window.
fn snapshots_collected(r: &Run, p: &Prometheus, emit: &mut Emit) -> bool {
    let Some(duration) = r.requests.duration else {
        return false;
    };
    let expected = duration.floor();
    let n = p.snapshots.len() as f64;
    if expected >= 1.0 && n / expected < limits::SNAPSHOT_SHARE {
        emit.finding(format!("{n} metric snapshots over a {duration} s run ({:.0} % of one a second); the benchmark's validator wants {:.0} %: the window's batch figures rest on few readings", 100.0 * n / expected, 100.0 * limits::SNAPSHOT_SHARE))
            .at(&p.file, "/timeline")
            .data(json!({"snapshots": n, "expected": expected}));
    }
    true
}

/// `import.not-recomputable`: what the files leave unchecked.
fn not_recomputable(r: &Run, emit: &mut Emit) -> Ran {
    if r.prometheus.is_none() {
        emit.info("prometheus.json was not given: the running batch in the steady-state window (the validator's batch saturation) is not checked")
            .at(&r.file, "/steady_state_stats");
    }
    let counter = r
        .prometheus
        .as_ref()
        .is_some_and(|p| p.snapshots.iter().any(|s| s.generated.is_some()));
    if !counter {
        emit.info("the reply tokens counted in the steady-state window (what steady_state_energy_per_token divides by) are not written, and no vllm:generation_tokens_total counter was given to bound them: the energy per token is checked only against the whole run's tokens")
            .at(&r.file, "/steady_state_energy_per_token");
    }
    Some(())
}
