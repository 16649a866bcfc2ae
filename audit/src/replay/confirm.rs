//! The confirmation rule: which rows a second session measures again, how its comparison
//! confirms or withdraws a drift, and the two sessions' runs pooled.

use super::*;

/// The speed keys a confirming session should measure again: rows that drifted, rows too noisy
/// to judge and drifts the machine's speed reference explained, on the same hardware only (an
/// informational row's verdict counts for nothing, so a second session would cost its time and
/// decide nothing).
pub fn keys_to_confirm(c: &Compared) -> Vec<String> {
    c.rows
        .iter()
        .filter(|r| !r.key.starts_with("quality.") && !r.informational)
        .filter(|r| {
            r.verdict == ReplayVerdict::Drifted
                || matches!(
                    r.inconclusive,
                    Some(Inconclusive::TooNoisy | Inconclusive::MachineSpeed)
                )
        })
        .map(|r| r.key.clone())
        .collect()
}

/// The confirmation rule, applied to the first session's comparison `first` with the confirming
/// session's own comparison `second` and the comparison over both sessions' runs pooled
/// (`pooled`, see [`pool`]):
/// - a drift stands only where the confirming session drifted the same way; otherwise the row is
///   inconclusive and says both moves (one session of a shared machine can run slow or fast as a
///   whole, which the runs inside it do not show);
/// - a row too noisy to judge takes the pooled row when the pooled runs are no longer too noisy
///   (more runs, a tighter estimate); otherwise it stays too noisy;
/// - a drift the machine's speed reference explained takes the confirming session's row when
///   that one is judged (reproduced, or drifted the same way with its own reference not
///   explaining it): that session's machine ran at the speed the figure needs to be told apart.
pub fn confirm(first: &mut Compared, second: &Compared, pooled: Option<&Compared>) {
    let keys = keys_to_confirm(first);
    for key in keys {
        let Some(i) = first.rows.iter().position(|r| r.key == key) else {
            continue;
        };
        let row = first.rows[i].clone();
        let again = second.rows.iter().find(|r| r.key == key);
        let new = if row.verdict == ReplayVerdict::Drifted {
            let Some(again) = again else { continue };
            confirmed_drift(row, again)
        } else if row.inconclusive == Some(Inconclusive::MachineSpeed) {
            match again.and_then(|a| judged_again(&row, a)) {
                Some(r) => r,
                None => continue,
            }
        } else {
            match pooled.and_then(|p| p.rows.iter().find(|r| r.key == key)) {
                Some(p) if p.inconclusive != Some(Inconclusive::TooNoisy) => {
                    let mut p = p.clone();
                    p.why = format!("{} (replay runs of two sessions pooled)", p.why);
                    p
                }
                _ => continue,
            }
        };
        first
            .findings
            .retain(|f| f.data.get("key").and_then(|k| k.as_str()) != Some(key.as_str()));
        if let Some(f) = row_finding(&new, None) {
            first.findings.push(f);
        }
        first.rows[i] = new;
    }
}

/// The confirming session's row for a drift the machine explained, when that session judged it:
/// reproduced, or drifted the same way.
fn judged_again(first: &Comparison, again: &Comparison) -> Option<Comparison> {
    let judged = again.verdict == ReplayVerdict::Reproduced
        || (again.verdict == ReplayVerdict::Drifted && again.direction == first.direction);
    judged.then(|| {
        let mut r = again.clone();
        r.why = format!(
            "{} (a confirming session; in the first the machine's own change of speed explained a move of {})",
            r.why,
            first.change_pct.map_or("-".to_string(), |c| format!("{c:+.1} %"))
        );
        r
    })
}

pub(super) fn confirmed_drift(mut row: Comparison, again: &Comparison) -> Comparison {
    let fmt = |c: Option<f64>| c.map_or("-".to_string(), |c| format!("{c:+.1} %"));
    if again.verdict == ReplayVerdict::Drifted && again.direction == row.direction {
        row.why = format!(
            "{}; confirmed by a second session ({})",
            row.why,
            fmt(again.change_pct)
        );
        return row;
    }
    let why = format!(
        "moved {} in the first session but {} ({}) in a confirming one: this machine's speed varies between sessions more than within one",
        fmt(row.change_pct),
        fmt(again.change_pct),
        again.verdict.name()
    );
    inconclusive(row, Inconclusive::SessionsDisagree, why)
}

/// One bundle whose speed runs are those of `a` followed by those of `b` (runs and rounds of `b`
/// numbered after `a`'s), for the pooled estimate of [`confirm`]. Everything else is `a`'s.
pub fn pool(a: &Bundle, b: &Bundle) -> Bundle {
    let mut out = a.clone();
    let (Some(ra), Some(rb)) = (out.speed_result.as_mut(), b.speed_result.as_ref()) else {
        return out;
    };
    let last_run = ra
        .value
        .requests
        .iter()
        .filter_map(|q| q.run)
        .max()
        .unwrap_or(0);
    let last_round = ra
        .value
        .requests
        .iter()
        .filter_map(|q| q.round)
        .max()
        .unwrap_or(0);
    for q in &rb.value.requests {
        let mut q = q.clone();
        q.run = q.run.map(|r| r + last_run);
        q.round = q.round.map(|r| r + last_round);
        ra.value.requests.push(q);
    }
    ra.value.values.clear();
    if let (Some(g), Some(gb)) = (ra.value.load_guard.as_mut(), rb.value.load_guard.as_ref()) {
        g.steps.extend(gb.steps.iter().cloned());
    }
    out
}
