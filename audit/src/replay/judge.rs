//! The decision rule of [`crate::decide`] over one report's rows: the rows a comparison could
//! test wait as [`Pending`] until every row is built, since the rows of one report are one
//! family: the moderated variance's prior is fitted to every speed row's runs, and the p-values
//! of "drifted" are adjusted over every tested row ([`crate::decide::decide_family`]).

use super::*;
use crate::decide::ratio::{self, Runs};
use crate::decide::{self, quality, Decision, Evidence, FigureKind, Judgement, Moderated};
use crate::decide::{RunsNeeded, Tolerances};
use crate::verdict::RunsToTell;

/// What a row that can be tested holds for its evidence.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Pending {
    /// One value per run on each side (recorded, replayed).
    Speed(Vec<f64>, Vec<f64>),
    /// Right of answered questions on each side, the questions paired by id when both sides'
    /// answers name them (with the answered questions only one side has), and the tallies' words
    /// for the reason.
    Quality {
        a: (u64, u64),
        b: (u64, u64),
        paired: Option<(quality::Paired, usize)>,
        detail: String,
    },
}

/// One row of the comparison: the row, the file it points at, and what it waits on.
pub(super) struct Row {
    pub(super) row: Comparison,
    pub(super) file: Option<String>,
    pub(super) pending: Option<Pending>,
}

/// Decides every pending row of one report by the rule of `opts`, then judges a speed drift
/// again in units of each session's machine-speed reference when the machine moved
/// ([`super::machine::explained`]).
pub(super) fn decide_rows(rows: &mut [Row], opts: &Tolerance, machine: Option<&MachineMove>) {
    let judged = judge_family(rows, opts, None);
    let machine = machine.filter(|m| m.moved());
    let scaled = machine.map(|m| judge_family(rows, opts, Some(m)));
    for (k, (i, j)) in judged.into_iter().enumerate() {
        let r = &mut rows[i];
        let detail = match &r.pending {
            Some(Pending::Quality { detail, paired, .. }) => Some(match paired {
                Some((t, unmatched)) => format!(
                    "{detail}; paired over {} questions: {} right on the recorded side only, {} on the replayed side only{}",
                    t.n(),
                    t.only_a,
                    t.only_b,
                    if *unmatched > 0 {
                        format!(", {unmatched} answered on one side only left out")
                    } else {
                        String::new()
                    }
                ),
                None => detail.clone(),
            }),
            _ => r
                .row
                .warm_up_dropped
                .map(|cut| super::speed::warm_up_text(cut, ("recorded", "replayed"))),
        };
        apply(&mut r.row, &j, detail.as_deref());
        if let (Some(m), Some(s)) = (machine, scaled.as_ref()) {
            if j.evidence.kind != FigureKind::Quality {
                r.row = explained(r.row.clone(), &s[k].1, m);
            }
        }
    }
}

/// Every pending row's judgement, one family: the evidence of each, speed runs taken in units of
/// each side's machine-speed reference when `reference` is given ([`per_reference`]).
fn judge_family(
    rows: &[Row],
    opts: &Tolerance,
    reference: Option<&MachineMove>,
) -> Vec<(usize, Judgement)> {
    let tolerances = opts.tolerances();
    let prior = prior_of(rows);
    let (at, evidence): (Vec<usize>, Vec<Evidence>) = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let pending = r.pending.as_ref()?;
            let scaled = reference.and_then(|m| per_reference(&r.row.key, pending, m));
            let e = evidence(
                &r.row.key,
                scaled.as_ref().unwrap_or(pending),
                &tolerances,
                &prior,
            );
            Some((i, e))
        })
        .unzip();
    at.into_iter()
        .zip(decide::decide_family(evidence, opts.rule.multiplicity))
        .collect()
}

/// A speed row's runs in units of each side's machine-speed reference: a rate divided by the
/// side's reference (GB/s), a time multiplied by it, so the machine's own move drops out of
/// their log ratio (issue 25's covariate). Moderated variances are unchanged: one factor a side.
fn per_reference(key: &str, p: &Pending, m: &MachineMove) -> Option<Pending> {
    let Pending::Speed(a, b) = p else {
        return None;
    };
    let scale = |xs: &[f64], gbps: f64| -> Vec<f64> {
        if super::machine::is_time(key) {
            xs.iter().map(|x| x * gbps).collect()
        } else {
            ratio::per_reference(xs, gbps)
        }
    };
    Some(Pending::Speed(scale(a, m.recorded), scale(b, m.replayed)))
}

/// The prior every speed row's variance is shrunk toward: fitted to both sides of every row.
fn prior_of(rows: &[Row]) -> Moderated {
    let sides: Vec<&[f64]> = rows
        .iter()
        .filter_map(|r| match &r.pending {
            Some(Pending::Speed(a, b)) => Some([a.as_slice(), b.as_slice()]),
            _ => None,
        })
        .flatten()
        .collect();
    let (vars, dfs) = ratio::variances_of(&sides);
    Moderated::fit(&vars, &dfs)
}

/// The evidence of one row: a log ratio for speed (its kind by its key); for quality, exact
/// McNemar with Newcombe's paired interval over the questions both sides answered, else
/// Newcombe's interval of two independent tallies.
fn evidence(key: &str, p: &Pending, t: &Tolerances, prior: &Moderated) -> Evidence {
    match p {
        Pending::Speed(a, b) => {
            let kind = FigureKind::of_key(key).unwrap_or(FigureKind::Decode);
            let (a, b) = (Runs::one_session(a), Runs::one_session(b));
            ratio::log_ratio(kind, a, b, &t.of(kind), prior)
        }
        Pending::Quality {
            paired: Some((pairs, _)),
            ..
        } => quality::paired_evidence(pairs, &t.quality),
        Pending::Quality { a, b, .. } => quality::unpaired_evidence(a.0, a.1, b.0, b.1, &t.quality),
    }
}

/// The name of a method as the report's `test` field holds it.
pub fn test_name(e: &Evidence) -> &'static str {
    match (e.kind, e.p_zero) {
        (_, None) => "none",
        (FigureKind::Quality, _) if e.method.starts_with("paired") => "mcnemar-paired",
        (FigureKind::Quality, _) => "newcombe-unpaired",
        _ => "log-ratio",
    }
}

/// A judgement written into its row: the verdict, the change it judged, the raw and adjusted p,
/// the 90 % interval and band as the report shows them (percent for speed, points for quality),
/// the runs that would settle an inconclusive row, and the reason (with the tallies `detail`
/// names, for quality).
pub fn apply(row: &mut Comparison, j: &Judgement, detail: Option<&str>) {
    let e = &j.evidence;
    let shown = |x: f64| match e.kind {
        FigureKind::Quality => x,
        _ => 100.0 * x.exp_m1(),
    };
    row.verdict = match j.decision {
        Decision::Reproduced => ReplayVerdict::Reproduced,
        Decision::Drifted => ReplayVerdict::Drifted,
        Decision::Inconclusive => ReplayVerdict::Inconclusive,
    };
    row.inconclusive = match (j.decision, e.note) {
        (Decision::Inconclusive, Some(_)) => Some(Inconclusive::TooFewRuns),
        (Decision::Inconclusive, None) => Some(Inconclusive::WideInterval),
        _ => None,
    };
    // The one change the row shows is the one the rule judged: percent of the ratio for speed
    // (of the geometric means), points for quality (never a relative percent of a score).
    match e.kind {
        FigureKind::Quality => {
            row.change_pct = None;
            row.change_points = e.estimate.is_finite().then_some(e.estimate);
        }
        _ if e.estimate.is_finite() => row.change_pct = Some(shown(e.estimate)),
        _ => {}
    }
    if e.estimate.is_finite() {
        row.direction = crate::verdict::direction(Some(e.estimate));
    }
    row.p_value = e.p_zero;
    row.p_adjusted = j.p_adjusted;
    row.test = test_name(e).into();
    row.interval90 =
        (e.lo90.is_finite() && e.hi90.is_finite()).then(|| [shown(e.lo90), shown(e.hi90)]);
    row.band = Some(shown(e.band));
    row.runs_needed = match (j.decision, e.runs_needed) {
        (Decision::Inconclusive, Some(RunsNeeded::Runs(n))) => Some(n),
        (Decision::Inconclusive, Some(RunsNeeded::NotByRuns)) => Some(0),
        _ => None,
    };
    let count = |n: RunsNeeded| match n {
        RunsNeeded::Runs(n) => n,
        RunsNeeded::NotByRuns => 0,
    };
    row.runs_needed_replayed = match j.decision {
        Decision::Inconclusive => e.runs_on_b.map(count),
        _ => None,
    };
    row.runs_to_tell = e.plan.map(|p| RunsToTell {
        pct5: count(p.pct5),
        pct10: count(p.pct10),
    });
    row.why = match detail {
        Some(d) => format!("{} ({d})", j.reason),
        None => j.reason.clone(),
    };
}
