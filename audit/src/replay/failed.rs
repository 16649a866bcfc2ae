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
/// a replay that stopped before its end (`stopped`, the reason the replay gives).
pub fn failed_steps(recorded: &Bundle, replayed: &Bundle, stopped: Option<&str>) -> Vec<Finding> {
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
    let failed = |q: &SpeedRequest| q.status != 200 || q.error.is_some();
    if let Some(rep) = &replayed.speed_result {
        let rec_ok: BTreeSet<String> = recorded
            .speed_result
            .as_ref()
            .map(|r| {
                r.value
                    .requests
                    .iter()
                    .filter(|q| !failed(q))
                    .map(step_label)
                    .collect()
            })
            .unwrap_or_default();
        let mut by_step: BTreeMap<String, Vec<&SpeedRequest>> = BTreeMap::new();
        for q in rep.value.requests.iter().filter(|q| failed(q)) {
            by_step.entry(step_label(q)).or_default().push(q);
        }
        for (step, qs) in by_step {
            if !rec_ok.contains(&step) {
                continue;
            }
            let first = qs[0];
            out.push(
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
                .data(json!({"step": step, "failed": qs.len(), "status": first.status, "error": first.error})),
            );
        }
    }
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
