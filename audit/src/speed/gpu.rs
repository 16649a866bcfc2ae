//! `speed.gpu-foreign` and `speed.gpu-throttled`: what `measure` read of the GPU through NVML
//! (`gpu`, one row per counted try) says about the tries kept.
//!
//! Definitions: a kept try is a row of `gpu.steps` with `kept: true` (the try whose records
//! count); it ran beside a foreign GPU process when its `foreign_processes` is not empty (a
//! process on the GPU at any reading during the try (its start, every 100 ms, its end) that was
//! neither the server's nor rigaudit's);
//! it ran throttled when its `throttle_reasons` hold a reason other than `gpu_idle` (a power cap,
//! a thermal or hardware slowdown, clocks set low: the GPU ran below its clocks). Results
//! without `gpu` are not judged.

use crate::bundle::Bundle;
use crate::check::{list, Emit, Ran};
use crate::records::speed::{GpuRecord, GpuTry};

/// The kept tries of a GPU record that `pred` picks: (index in `gpu.steps`, step name).
fn kept_tries(gpu: &GpuRecord, pred: impl Fn(&GpuTry) -> bool) -> Vec<(usize, &str)> {
    gpu.steps
        .iter()
        .enumerate()
        .filter(|(_, t)| t.kept && pred(t))
        .map(|(i, t)| (i, t.step.as_str()))
        .collect()
}

/// `speed.gpu-foreign` (speed.rs): kept tries with a foreign process on the GPU.
pub(crate) fn check_gpu_foreign(b: &Bundle, e: &mut Emit) -> Ran {
    let rl = b.speed_result.as_ref()?;
    let gpu = rl.value.gpu.as_ref()?;
    let hit = kept_tries(gpu, |t| !t.foreign_processes.is_empty());
    if let Some((first, _)) = hit.first() {
        let procs = &gpu.steps[*first].foreign_processes;
        e.finding(format!(
            "{} kept tries ran beside a foreign process on the GPU ({}), steps {}: their figures share the GPU with another program",
            hit.len(),
            list(procs, 3),
            list(&hit.iter().map(|(_, s)| *s).collect::<Vec<_>>(), 8)
        ))
        .file(&rl.path)
        .pointer(format!("/gpu/steps/{first}/foreign_processes"));
    }
    Some(())
}

/// A throttle reason that slowed the clocks (`gpu_idle` is a GPU with nothing to do).
fn slowing(reason: &str) -> bool {
    reason != "gpu_idle"
}

/// `speed.gpu-throttled` (speed.rs): kept tries during which the GPU's clocks were throttled.
pub(crate) fn check_gpu_throttled(b: &Bundle, e: &mut Emit) -> Ran {
    let rl = b.speed_result.as_ref()?;
    let gpu = rl.value.gpu.as_ref()?;
    let hit = kept_tries(gpu, |t| t.throttle_reasons.iter().any(|r| slowing(r)));
    if let Some((first, _)) = hit.first() {
        let reasons: Vec<&str> = gpu.steps[*first]
            .throttle_reasons
            .iter()
            .map(String::as_str)
            .filter(|r| slowing(r))
            .collect();
        e.finding(format!(
            "the GPU's clocks were throttled ({}) during {} kept tries, steps {}: their figures were measured below the GPU's clocks",
            list(&reasons, 4),
            hit.len(),
            list(&hit.iter().map(|(_, s)| *s).collect::<Vec<_>>(), 8)
        ))
        .file(&rl.path)
        .pointer(format!("/gpu/steps/{first}/throttle_reasons"));
    }
    Some(())
}
