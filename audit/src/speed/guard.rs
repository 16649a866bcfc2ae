//! The load guard does what the catalogue says: a contract that states a guard rule needs a guard
//! summary in the result, and every counted step needs its kept guard row, named
//! `decode/<prompt>/<run>`, `prefill/<depth>/<run>`, `conc/<level>/<round>`, `ctx/<depth>/<run>`
//! or `l1`. A step without one was not watched.
//!
//! Both checks report under `speed.load-guard` (speed.rs).

use crate::bundle::Bundle;
use crate::check::list;
use crate::check::{Emit, Ran};
use crate::records::speed::{SpeedRequest, SpeedResult};
use std::collections::{BTreeMap, BTreeSet};

/// The guard's name of the step a counted request belongs to; `nth` is its 1-based place among
/// the counted requests of its prompt or depth, used when it has no run number.
pub fn step_name(q: &SpeedRequest, nth: u32) -> Option<String> {
    let n = |x: Option<u64>| x.map_or("?".to_string(), |v| v.to_string());
    let run = q.run.unwrap_or(nth);
    Some(match q.step.as_str() {
        "decode" => format!("decode/{}/{run}", q.prompt_id.as_deref()?),
        "prefill" => format!("prefill/{}/{run}", n(q.depth)),
        "ctx" => format!("ctx/{}/{run}", n(q.depth)),
        "conc" => format!(
            "conc/{}/{}",
            n(q.level.map(u64::from)),
            n(q.round.map(u64::from))
        ),
        "l1" => "l1".to_string(),
        _ => return None,
    })
}

/// The guard's names of the counted steps of a result, each once, in the order first met.
pub fn counted_step_names(r: &SpeedResult) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut nth: BTreeMap<(&str, Option<&str>, Option<u64>), u32> = BTreeMap::new();
    for q in r.requests.iter().filter(|q| !q.warmup) {
        let k = nth
            .entry((q.step.as_str(), q.prompt_id.as_deref(), q.depth))
            .or_default();
        *k += 1;
        if let Some(name) = step_name(q, *k) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// `speed.load-guard` (speed.rs): a contract's guard rule with no guard summary in the result.
pub(crate) fn check_guard_present(b: &Bundle, e: &mut Emit) -> Ran {
    let (Some(c), Some(r)) = (&b.speed_contract, &b.speed_result) else {
        return None;
    };
    c.value.load_guard.as_ref()?;
    if r.value.load_guard.is_none() {
        e.finding(
                "the contract states a load-guard rule, but the result has no guard summary: the guard did not watch any step",
            )
            .file(&r.path)
            .pointer("/load_guard");
    }
    Some(())
}

/// `speed.load-guard` (speed.rs): counted steps with no kept guard row.
pub(crate) fn check_guard_coverage(b: &Bundle, e: &mut Emit) -> Ran {
    let rl = b.speed_result.as_ref()?;
    let g = rl.value.load_guard.as_ref()?;
    let kept: BTreeSet<&str> = g
        .steps
        .iter()
        .filter(|s| s.kept)
        .map(|s| s.step.as_str())
        .collect();
    let missing: Vec<String> = counted_step_names(&rl.value)
        .into_iter()
        .filter(|name| !kept.contains(name.as_str()))
        .collect();
    if !missing.is_empty() {
        e.finding(format!(
            "{} counted steps have no kept guard row, so the guard did not watch them: {}",
            missing.len(),
            list(&missing, 5)
        ))
        .file(&rl.path)
        .pointer("/load_guard/steps");
    }
    Some(())
}
