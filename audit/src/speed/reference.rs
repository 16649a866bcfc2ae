//! `speed.machine-unsteady`: the machine's speed reference (`machine_reference`, a fixed kernel
//! `measure` probes before every counted step) says the machine itself ran slower or faster
//! during parts of the recording, which no foreign process shows (a shared VM whose neighbours
//! take the cache, memory bandwidth or clock).
//!
//! Definitions: the recording's reference figure is the median of its probes; a probe is *off*
//! when it is more than [`OFF_PCT`] below or above that median; the figures of the steps measured
//! after an off probe were measured on a machine running at another speed than the rest. A probe
//! that names a step the result has no counted request of was not taken before a measured step.
//! Needs at least [`MIN_PROBES`] probes.

use super::guard::counted_step_names;
use crate::bundle::Bundle;
use crate::check::{list, Emit, Ran};
use std::collections::BTreeSet;

/// How far from the recording's median (percent) a probe is off.
pub const OFF_PCT: f64 = 25.0;
/// The fewest probes a median is taken over.
pub const MIN_PROBES: usize = 3;

/// `speed.machine-unsteady` (speed.rs): off probes, and probes of steps never measured.
pub(crate) fn check_machine_steady(b: &Bundle, e: &mut Emit) -> Ran {
    let rl = b.speed_result.as_ref()?;
    let r = &rl.value;
    let reference = r.machine_reference.as_ref()?;
    if reference.samples.len() < MIN_PROBES {
        return None;
    }
    let median = reference.median()?;
    let off: Vec<(usize, &str, f64)> = reference
        .samples
        .iter()
        .enumerate()
        .filter(|(_, s)| (100.0 * (s.gbps / median - 1.0)).abs() > OFF_PCT)
        .map(|(i, s)| (i, s.step.as_str(), s.gbps))
        .collect();
    if let Some((first, _, _)) = off.first() {
        let (lo, hi) = off
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), (_, _, g)| {
                (lo.min(*g), hi.max(*g))
            });
        e.finding(format!(
            "the machine's speed reference moved during the recording: {} of {} probes more than {OFF_PCT:.0} % off its median of {median:.2} GB/s ({lo:.2} to {hi:.2} GB/s), before steps {}; their figures were measured on a machine running at another speed than the rest",
            off.len(),
            reference.samples.len(),
            list(&off.iter().map(|(_, s, _)| *s).collect::<Vec<_>>(), 8)
        ))
        .file(&rl.path)
        .pointer(format!("/machine_reference/samples/{first}"));
    }
    unmeasured_probes(b, e);
    Some(())
}

/// Probes naming a step of which the result has no counted request.
fn unmeasured_probes(b: &Bundle, e: &mut Emit) {
    let Some(rl) = b.speed_result.as_ref() else {
        return;
    };
    let Some(reference) = rl.value.machine_reference.as_ref() else {
        return;
    };
    let measured: BTreeSet<String> = counted_step_names(&rl.value).into_iter().collect();
    for (i, s) in reference.samples.iter().enumerate() {
        if !measured.contains(&s.step) {
            e.finding(format!(
                "probe {i} of the machine's speed reference names step '{}', of which the result has no counted request",
                s.step
            ))
            .file(&rl.path)
            .pointer(format!("/machine_reference/samples/{i}/step"));
        }
    }
}
