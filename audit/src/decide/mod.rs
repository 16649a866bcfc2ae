//! The decision rule of issue 25: three verdicts from intervals, with multiplicity control, for
//! replay, audit and diff alike. Pure functions, used by `replay` (its rows, so `audit` and the
//! diff of bundles) and by `imported::compare` (the diff of other tools' files).
//!
//! # The rule in plain words
//!
//! Every figure is compared as B over A (replayed over recorded; for diff, the second run over
//! the first). A speed figure's change is the log ratio of the two sides' geometric means, so a
//! rate and the time it implies get the same verdict; a quality figure's change is the
//! difference in points. Each kind of figure has a declared tolerance band ([`Tolerances`]).
//!
//! - **reproduced** only when the whole 90 % interval of the change lies inside the band: two
//!   one-sided tests at 5 % each (Schuirmann, "A comparison of the two one-sided tests
//!   procedure and the power approach for assessing the equivalence of average
//!   bioavailability", J. Pharmacokinet. Biopharm. 15, 1987).
//! - **drifted** when the change differs from zero after multiplicity control over the report's
//!   rows (Holm by default, or Benjamini–Hochberg; [`Multiplicity`]) **and** its estimate lies
//!   beyond the band.
//! - **inconclusive** otherwise, with the runs a side that would settle it at the spread
//!   measured, or that no number of runs can (the session spread alone is too wide: more
//!   sessions are needed, or a wider band).
//!
//! The noise of a speed figure uses all the data: each side's variance is shrunk toward a prior
//! fitted to every variance of the report ([`Moderated`], Smyth 2004), and the declared session
//! spread is added, since runs of one session share its machine. See [`ratio`] for the interval,
//! [`quality`] for points, [`percentile`] for order-statistic intervals, [`steady`] for warm-up.
//!
//! # Using it
//!
//! One report is one family, so the rule runs in two passes: first every row's [`Evidence`]
//! (speed: fit [`Moderated::fit`] on [`ratio::variances_of`] over both sides of every speed row,
//! then [`ratio::log_ratio`] per row with [`Tolerances::of`] its [`FigureKind::of_key`];
//! quality: [`quality::paired_evidence`] on [`quality::Paired::by_id`] when both sides have
//! per-question answers, else [`quality::unpaired_evidence`]; a row with nothing to test:
//! [`Evidence::unbounded`]), then [`decide_family`] with the report's [`Multiplicity`]. The
//! report prints [`Tolerances::describe`] and [`Multiplicity::name`]. Calibration: [`sim`], the
//! tests, and `cargo run -p rigaudit-audit --example decide_curves --release`
//! (docs/statistics.md).

pub mod moderated;
pub mod multiplicity;
pub mod paired;
pub mod percentile;
pub mod quality;
pub mod ratio;
pub mod rng;
pub mod rule;
pub mod sim;
pub mod steady;
pub mod tolerance;

pub use moderated::Moderated;
pub use multiplicity::Multiplicity;
pub use rule::DecisionRule;
pub use tolerance::{FigureKind, Setting, Tolerance, Tolerances};

use serde::Serialize;

/// The significance level of "drifted", after multiplicity control.
pub const ALPHA: f64 = 0.05;

/// The verdict on one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// The 90 % interval lies inside the band.
    Reproduced,
    /// Significant after multiplicity control and the estimate beyond the band.
    Drifted,
    /// Neither.
    Inconclusive,
}

impl Decision {
    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Decision::Reproduced => "reproduced",
            Decision::Drifted => "drifted",
            Decision::Inconclusive => "inconclusive",
        }
    }
}

/// How many runs a side would settle an inconclusive figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunsNeeded {
    /// About this many runs a side, at the spread measured and the same estimate.
    Runs(usize),
    /// No number of runs: the session spread alone leaves the interval across the band's edge.
    NotByRuns,
}

/// How many runs a side a step needs to tell a move of ±5 % and of ±10 % at the spread
/// measured ([`ratio::runs_to_tell`]): the report's planning line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunsPlan {
    /// Runs a side for a 90 % interval of at most ±5 %.
    pub pct5: RunsNeeded,
    /// Runs a side for a 90 % interval of at most ±10 %.
    pub pct10: RunsNeeded,
}

/// What one figure's comparison found, before the family's multiplicity control.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The kind of figure.
    pub kind: FigureKind,
    /// The change: a log ratio for speed, points for quality.
    pub estimate: f64,
    /// The 90 % interval of the change, in the same units.
    pub lo90: f64,
    /// Its upper end.
    pub hi90: f64,
    /// The two-sided p of no change; `None` when no test could run.
    pub p_zero: Option<f64>,
    /// The band's half-width in the estimate's units.
    pub band: f64,
    /// Runs a side that would settle it (speed).
    pub runs_needed: Option<RunsNeeded>,
    /// Runs a side that would tell ±5 % and ±10 % at the spread measured (speed).
    pub plan: Option<RunsPlan>,
    /// Runs on side B alone, side A's as they are, that would settle it (speed; what replay's
    /// `--runs auto` adds toward).
    pub runs_on_b: Option<RunsNeeded>,
    /// The method, as the report names it.
    pub method: &'static str,
    /// Why there is no interval, when there is none.
    pub note: Option<&'static str>,
    /// Samples on side A and side B.
    pub sizes: (usize, usize),
}

impl Evidence {
    /// Evidence with no interval (too few samples), which can only be inconclusive.
    pub fn unbounded(kind: FigureKind, estimate: f64, band: f64, note: &'static str) -> Self {
        Evidence {
            kind,
            estimate,
            lo90: f64::NEG_INFINITY,
            hi90: f64::INFINITY,
            p_zero: None,
            band,
            runs_needed: None,
            plan: None,
            runs_on_b: None,
            method: "none",
            note: Some(note),
            sizes: (0, 0),
        }
    }

    /// Whether the 90 % interval lies inside the band.
    pub fn inside_band(&self) -> bool {
        self.lo90 > -self.band && self.hi90 < self.band
    }
}

/// One figure's verdict with what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    /// The verdict.
    pub decision: Decision,
    /// The comparison it rests on.
    pub evidence: Evidence,
    /// The p of no change after multiplicity control over the report's rows.
    pub p_adjusted: Option<f64>,
    /// One sentence on why.
    pub reason: String,
}

/// The verdicts of one report's rows (one family): p-values adjusted by `rule` over the rows
/// that have one, then the rule of this module's doc at level [`ALPHA`].
pub fn decide_family(rows: Vec<Evidence>, rule: Multiplicity) -> Vec<Judgement> {
    let tested: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].p_zero.is_some())
        .collect();
    let raw: Vec<f64> = tested
        .iter()
        .map(|&i| rows[i].p_zero.unwrap_or(1.0))
        .collect();
    let mut adjusted = vec![None; rows.len()];
    for (&i, p) in tested.iter().zip(rule.adjust(&raw)) {
        adjusted[i] = Some(p);
    }
    let family = tested.len();
    rows.into_iter()
        .zip(adjusted)
        .map(|(evidence, p_adjusted)| judge(evidence, p_adjusted, rule, family))
        .collect()
}

fn judge(evidence: Evidence, p_adj: Option<f64>, rule: Multiplicity, family: usize) -> Judgement {
    let beyond = evidence.estimate.abs() > evidence.band;
    let significant = p_adj.is_some_and(|p| p < ALPHA);
    let decision = if evidence.inside_band() {
        Decision::Reproduced
    } else if significant && beyond {
        Decision::Drifted
    } else {
        Decision::Inconclusive
    };
    let reason = reason(decision, &evidence, p_adj, rule, family);
    Judgement {
        decision,
        evidence,
        p_adjusted: p_adj,
        reason,
    }
}

/// A change as the report prints it: percent for speed, points for quality (a change that rounds
/// to zero is `+0.0`, never `-0.0`).
pub fn show_change(kind: FigureKind, x: f64) -> String {
    let tenths = |v: f64| if v.abs() < 0.05 { 0.0 } else { v };
    match kind {
        FigureKind::Quality => format!("{:+.1} points", tenths(x)),
        _ => format!("{:+.1} %", tenths(100.0 * x.exp_m1())),
    }
}

/// A p-value after `p` as a report prints it: `= 0.23`, `= 0.0012`, `< 0.0001`.
pub fn show_p(p: f64) -> String {
    if p < 1e-4 {
        "< 0.0001".to_string()
    } else if p < 0.01 {
        format!("= {p:.4}")
    } else {
        format!("= {p:.2}")
    }
}

/// A p-value as a table's cell writes it, the same way as [`show_p`]: `0.23`, `0.0012`,
/// `< 0.0001`.
pub fn p_cell(p: f64) -> String {
    let shown = show_p(p);
    shown.strip_prefix("= ").unwrap_or(&shown).to_string()
}

fn reason(
    decision: Decision,
    e: &Evidence,
    p_adj: Option<f64>,
    rule: Multiplicity,
    family: usize,
) -> String {
    let show = |x: f64| show_change(e.kind, x);
    let band = match e.kind {
        FigureKind::Quality => format!("±{:.1} points", e.band),
        _ => format!("±{:.0} %", 100.0 * e.band.exp_m1()),
    };
    let (na, nb) = e.sizes;
    if let Some(note) = e.note {
        return format!("inconclusive: {note} ({na} and {nb} samples); the {band} band stands");
    }
    let interval = format!("90 % interval {} to {}", show(e.lo90), show(e.hi90));
    let tested = match (e.p_zero, p_adj) {
        (Some(p), Some(q)) => {
            format!(
                "p {}, {} after {} over {family} row{}",
                show_p(p),
                show_p(q),
                rule.name(),
                if family == 1 { "" } else { "s" }
            )
        }
        _ => "no test".to_string(),
    };
    let moved = format!("{} ({interval}; {na} and {nb} samples)", show(e.estimate));
    match decision {
        Decision::Reproduced => format!("{moved}: inside the {band} band"),
        Decision::Drifted => format!("{moved}: beyond the {band} band; {tested}"),
        Decision::Inconclusive => {
            let settle = match e.runs_needed {
                Some(RunsNeeded::Runs(n)) => {
                    format!("about {n} runs a side would settle it at this spread")
                }
                Some(RunsNeeded::NotByRuns) => "no number of runs settles it at the declared session spread: more sessions, or a wider band".to_string(),
                None => "more samples would settle it".to_string(),
            };
            format!("{moved}: neither inside the {band} band nor a drift beyond it ({tested}); {settle}")
        }
    }
}

#[cfg(test)]
mod tests;
