//! The confirmation rule: which rows a second session measures again, how its comparison
//! confirms or withdraws a drift, and the two sessions' runs pooled.

use super::*;

/// The speed keys a confirming session should measure again ("looks twice"): rows that drifted,
/// rows whose interval reached across the band's edge and drifts the machine's speed reference
/// explained, on the same hardware only (an
/// informational row's verdict counts for nothing, so a second session would cost its time and
/// decide nothing).
pub fn keys_to_confirm(c: &Findings) -> Vec<String> {
    c.comparisons
        .iter()
        .filter(|r| !r.key.starts_with("quality.") && !r.informational)
        .filter(|r| {
            r.verdict == ReplayVerdict::Drifted
                || matches!(
                    r.inconclusive,
                    Some(Inconclusive::WideInterval | Inconclusive::MachineSpeed)
                )
        })
        .map(|r| r.key.clone())
        .collect()
}

/// The confirmation rule, applied to the first session's comparison `first` with the confirming
/// session's own comparison `second` and the comparison over both sessions' runs pooled
/// (`pooled`, see [`pool`], judged with the spread between the two sessions measured, see
/// [`SessionSpread`]):
/// - a drift stands only where the confirming session drifted the same way; otherwise the row is
///   inconclusive and says both moves (one session of a shared machine can run slow or fast as a
///   whole, which the runs inside it do not show); where it did, the pooled row decides (the
///   recorded figure is one session too, so the spread between sessions widens its interval);
/// - a row whose interval reached across the band takes the pooled row (more runs, a tighter
///   interval, whatever it now says);
/// - a drift the machine's speed reference explained takes the confirming session's row when
///   that one is judged (reproduced, or drifted the same way with its own reference not
///   explaining it): that session's machine ran at the speed the figure needs to be told apart.
pub fn confirm(first: &mut Findings, second: &Findings, pooled: Option<&Findings>) {
    let keys = keys_to_confirm(first);
    let spread = SessionSpread::of(first, second);
    for key in keys {
        let Some(i) = first.comparisons.iter().position(|r| r.key == key) else {
            continue;
        };
        let row = first.comparisons[i].clone();
        let again = second.comparisons.iter().find(|r| r.key == key);
        let pooled_row = pooled.and_then(|p| p.comparisons.iter().find(|r| r.key == key));
        let new = if row.verdict == ReplayVerdict::Drifted {
            let Some(again) = again else { continue };
            let row = confirmed_drift(row, again);
            match pooled_row {
                Some(p) if row.verdict == ReplayVerdict::Drifted => {
                    over_both(p, &row.why, spread.as_ref())
                }
                _ => row,
            }
        } else if row.inconclusive == Some(Inconclusive::MachineSpeed) {
            match again.and_then(|a| judged_again(&row, a)) {
                Some(r) => r,
                None => continue,
            }
        } else {
            match pooled_row {
                Some(p) => over_both(p, "", spread.as_ref()),
                None => continue,
            }
        };
        first
            .findings
            .retain(|f| f.data.get("key").and_then(|k| k.as_str()) != Some(key.as_str()));
        if let Some(f) = row_finding(&new, None) {
            first.findings.push(f);
        }
        first.comparisons[i] = new;
    }
}

/// The pooled row, its reason saying it is over both sessions' runs, the spread between them it
/// was judged with, and (`first`) what the first session said.
fn over_both(pooled: &Comparison, first: &str, spread: Option<&SessionSpread>) -> Comparison {
    let mut p = pooled.clone();
    let spread = spread.map_or(String::new(), |s| {
        format!(
            ", with the {:.1} % spread between the replay's two sessions (over {} figures)",
            s.cv_pct, s.rows
        )
    });
    p.why = if first.is_empty() {
        format!("{} (replay runs of two sessions pooled{spread})", p.why)
    } else {
        format!(
            "over both sessions' runs{spread}: {}; the first session: {first}",
            p.why
        )
    };
    p
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
    let last = |of: fn(&SpeedRequest) -> Option<u32>| {
        ra.value.requests.iter().filter_map(of).max().unwrap_or(0)
    };
    let (last_run, last_round) = (last(|q| q.run), last(|q| q.round));
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
    // The concurrency samples are read round by round up to the contract's rounds: count b's.
    let rounds = ra.value.requests.iter().filter_map(|q| q.round).max();
    if let (Some(c), Some(rounds)) = (out.speed_contract.as_mut(), rounds) {
        if let Some(conc) = c.value.conc.as_mut() {
            conc.rounds = conc.rounds.max(rounds);
        }
    }
    out
}

/// How far the replay's two sessions differ, figure by figure, pooled over every speed row both
/// measured (same hardware, comparable, no foreign load): the root mean square of ln(second / first)
/// over the rows, divided by the square root of 2, is one session's spread about the machine's
/// own speed (a log-scale CV). The pooled comparison is judged with it as the session spread
/// where it is larger than the declared one ([`crate::decide::DecisionRule::tolerances_with_measured`]).
///
/// Why: on the 2-core VM of issue 9 a step's runs, even spread over an 18-second session, varied
/// 9 % (CV) while its session medians varied 13 %: the machine's speed wanders over about a minute.
/// Runs inside one session cannot show that; two sessions can, and it applies to the recording,
/// made on the same hardware, as to the replay.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSpread {
    /// One session's spread, percent (log scale).
    pub cv_pct: f64,
    /// The rows it is pooled over.
    pub rows: usize,
}

impl SessionSpread {
    /// The fewest rows the spread is pooled over.
    pub const MIN_ROWS: usize = 3;

    /// The spread of the two sessions' replayed values, over the rows both measured.
    pub fn of(first: &Findings, second: &Findings) -> Option<SessionSpread> {
        let measured = |r: &Comparison| {
            !r.key.starts_with("quality.")
                && !r.informational
                && r.verdict != ReplayVerdict::NotComparable
                && !matches!(
                    r.inconclusive,
                    Some(Inconclusive::ForeignLoad | Inconclusive::GpuThrottled)
                )
        };
        let logs: Vec<f64> = first
            .comparisons
            .iter()
            .filter(|r| measured(r))
            .filter_map(|a| {
                let b = second
                    .comparisons
                    .iter()
                    .find(|b| b.key == a.key && measured(b))?;
                let (x, y) = (a.replayed?, b.replayed?);
                (x > 0.0 && y > 0.0).then(|| (y / x).ln())
            })
            .collect();
        if logs.len() < Self::MIN_ROWS {
            return None;
        }
        let ms = logs.iter().map(|d| d * d).sum::<f64>() / logs.len() as f64;
        Some(SessionSpread {
            cv_pct: 100.0 * (ms / 2.0).sqrt(),
            rows: logs.len(),
        })
    }

    /// One session's spread as a fraction (log scale), for [`Tolerance::measured_session_sd`].
    pub fn sd(&self) -> f64 {
        self.cv_pct / 100.0
    }
}
