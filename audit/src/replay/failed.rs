//! `replay.step-failed`: requests of the replay that got no answer where the recorded run's
//! same step was answered, and a replay that stopped before its end.

use super::*;

/// The label of a speed request's step: `decode`, `prefill 512`, `conc 4`, `ctx 1024`, `l1`.
pub(super) fn step_label(q: &SpeedRequest) -> String {
    match (q.depth, q.level) {
        (Some(d), _) => format!("{} {d}", q.step),
        (None, Some(l)) => format!("{} {l}", q.step),
        _ => q.step.clone(),
    }
}

/// `replay.step-failed`: requests of the replay that got no answer where the recorded run's same
/// step was answered (a refusal on both sides is [`compare`]'s not-comparable, not a failure), and
/// a replay that stopped before its end (`stopped`, the reason the replay gives): the
/// [`FAILED_STEPS`] stage, which always decides its row.
pub fn failed_steps(
    recorded: &Bundle,
    replayed: &Bundle,
    stopped: Option<&str>,
    found: &mut Findings,
) {
    found.stage(&FAILED_STEPS, |s| {
        s.decided(&STEP_FAILED);
        for f in step_failures(recorded, replayed, stopped) {
            s.push(f);
        }
    });
}

fn step_failures(recorded: &Bundle, replayed: &Bundle, stopped: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(why) = stopped {
        out.push(
            Finding::new(
                STEP_FAILED.id,
                Severity::Error,
                format!(
                    "the replay stopped before its end: {why}; what it measured before is kept"
                ),
            )
            .data(json!({"stopped": why})),
        );
    }
    out.extend(failed_speed_steps(recorded, replayed));
    out.extend(unanswered_quality(recorded, replayed));
    out
}

/// Whether a speed request got no answer.
fn failed(q: &SpeedRequest) -> bool {
    q.status != 200 || q.error.is_some()
}

/// The speed steps whose replayed requests failed where the recorded run answered that step.
fn failed_speed_steps(recorded: &Bundle, replayed: &Bundle) -> Vec<Finding> {
    let Some(rep) = &replayed.speed_result else {
        return Vec::new();
    };
    let rec_ok: BTreeSet<String> = recorded
        .speed_result
        .iter()
        .flat_map(|r| r.value.requests.iter())
        .filter(|q| !failed(q))
        .map(step_label)
        .collect();
    let mut by_step: BTreeMap<String, Vec<&SpeedRequest>> = BTreeMap::new();
    for q in rep.value.requests.iter().filter(|q| failed(q)) {
        by_step.entry(step_label(q)).or_default().push(q);
    }
    by_step
        .into_iter()
        .filter(|(step, _)| rec_ok.contains(step))
        .map(|(step, qs)| {
            let first = qs[0];
            Finding::new(STEP_FAILED.id,
                Severity::Error,
                format!(
                    "{step}: {} request(s) of the replay got no answer (first: HTTP {}{}) where the recorded run was answered",
                    qs.len(),
                    first.status,
                    first.error.as_deref().map(|e| format!(", {e}")).unwrap_or_default()
                ),
            )
            .file(&rep.path)
            .data(json!({"step": step, "failed": qs.len(), "status": first.status, "error": first.error}))
        })
        .collect()
}

/// The quality tests with questions unanswered on replay where the recorded run answered all.
fn unanswered_quality(recorded: &Bundle, replayed: &Bundle) -> Vec<Finding> {
    let mut out = Vec::new();
    for t in &replayed.quality {
        let Some(a) = &t.answers else { continue };
        let rec = recorded
            .quality
            .iter()
            .find(|r| r.test == t.test)
            .and_then(|r| r.answers.as_ref());
        let unanswered = a.value.total - a.value.answered;
        if unanswered > 0 && rec.is_some_and(|r| r.value.answered == r.value.total) {
            out.push(
                Finding::new(STEP_FAILED.id,
                    Severity::Error,
                    format!(
                        "quality {}: {unanswered} of {} questions got no answer on replay ({}) where the recorded run answered all",
                        t.test,
                        a.value.total,
                        a.value.refusals.keys().cloned().collect::<Vec<_>>().join("; ")
                    ),
                )
                .file(&a.path),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
