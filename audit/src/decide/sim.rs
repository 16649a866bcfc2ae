//! The seeded calibration simulation of issue 25: reports of many rows, each row a figure whose
//! runs are lognormal around a true value, times a session factor shared by every row of a
//! session, with a true drift on side B. Used by the calibration tests and by the
//! `decide_curves` example; `legacy` is the rule replay used before (Welch's test on means, a
//! change of medians beyond the larger of 10 % and twice the noisier side's CV, a 25 % ceiling).

use super::ratio::{log_ratio, variances_of, Runs};
use super::rng::SplitMix64;
use super::{decide_family, Decision, FigureKind, Moderated, Multiplicity, Tolerances};
use crate::stats::{cv_pct, median, welch_p};

/// One cell of the simulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// The runs' coefficient of variation inside a session (0.08 = 8 %).
    pub cv: f64,
    /// Runs a side.
    pub runs: usize,
    /// The true drift of B over A (0.2 = 20 % faster; a time row is 1/1.2 as long).
    pub drift: f64,
    /// One session's spread, log scale (0.06 = 6 %).
    pub session_sd: f64,
    /// Rows in a report.
    pub rows: usize,
    /// Sessions side B's runs come from, each with its own session factor (2: a replay with its
    /// confirming session pooled; `runs` a session then).
    pub sessions_b: usize,
}

impl Default for Scenario {
    /// CV 8 %, 4 runs, no drift, no session spread, 17 rows, one session a side.
    fn default() -> Self {
        Scenario {
            cv: 0.08,
            runs: 4,
            drift: 0.0,
            session_sd: 0.0,
            rows: 17,
            sessions_b: 1,
        }
    }
}

/// The rows of one simulated report: each row's runs on side A and side B.
pub type Report = Vec<(Vec<f64>, Vec<f64>)>;

/// Whether row `r` is a time (TTFT-like: lower is faster) rather than a rate; every third.
pub fn is_time(r: usize) -> bool {
    r % 3 == 2
}

/// Draws one report of `s`.
pub fn draw(rng: &mut SplitMix64, s: &Scenario) -> Report {
    let within = (1.0 + s.cv * s.cv).ln().sqrt();
    let session_a = s.session_sd * rng.normal();
    let sessions_b: Vec<f64> = (0..s.sessions_b.max(1))
        .map(|_| s.session_sd * rng.normal())
        .collect();
    let drift = s.drift.ln_1p();
    (0..s.rows)
        .map(|r| {
            let base = (1.0 + r as f64).ln() + 2.0;
            let sign = if is_time(r) { -1.0 } else { 1.0 };
            let mut run = |shift: f64| (base + sign * shift + within * rng.normal()).exp();
            let a: Vec<f64> = (0..s.runs).map(|_| run(session_a)).collect();
            let b: Vec<f64> = sessions_b
                .iter()
                .flat_map(|f| vec![*f; s.runs])
                .map(|f| run(f + drift))
                .collect();
            (a, b)
        })
        .collect()
}

/// The new rule's verdicts on a report, every row judged with the decode tolerance; side B's
/// runs came from `sessions_b` sessions.
pub fn judge(
    report: &Report,
    tol: &Tolerances,
    rule: Multiplicity,
    sessions_b: usize,
) -> Vec<Decision> {
    let sides: Vec<&[f64]> = report
        .iter()
        .flat_map(|(a, b)| [a.as_slice(), b.as_slice()])
        .collect();
    let (vars, dfs) = variances_of(&sides);
    let prior = Moderated::fit(&vars, &dfs);
    let tol = tol.of(FigureKind::Decode);
    let evidence = report
        .iter()
        .map(|(a, b)| {
            let b = Runs {
                values: b,
                sessions: sessions_b.max(1),
            };
            let a = Runs::one_session(a);
            log_ratio(FigureKind::Decode, a, b, &tol, &prior)
        })
        .collect();
    decide_family(evidence, rule)
        .into_iter()
        .map(|j| j.decision)
        .collect()
}

/// The rule replay and diff used before issue 25, row by row.
pub fn legacy(report: &Report) -> Vec<Decision> {
    report
        .iter()
        .map(|(a, b)| {
            let (Some(ma), Some(mb)) = (median(a), median(b)) else {
                return Decision::Inconclusive;
            };
            let cv = cv_pct(a).unwrap_or(0.0).max(cv_pct(b).unwrap_or(0.0));
            let floor = (10.0f64).max(2.0 * cv);
            if a.len() < 3 || b.len() < 3 || floor > 25.0 {
                return Decision::Inconclusive;
            }
            let beyond = (100.0 * (mb - ma) / ma).abs() > floor;
            match welch_p(a, b) {
                Some(p) if p < 0.05 && beyond => Decision::Drifted,
                None if beyond => Decision::Drifted,
                _ => Decision::Reproduced,
            }
        })
        .collect()
}

/// Counts over the reports of one cell.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Reports drawn.
    pub reports: usize,
    /// Rows judged.
    pub rows: usize,
    /// Rows called drifted.
    pub drifted: usize,
    /// Rows called reproduced.
    pub reproduced: usize,
    /// Rows called inconclusive.
    pub inconclusive: usize,
    /// Reports with at least one drifted row (a diff or replay that fails).
    pub failed_reports: usize,
}

impl Tally {
    /// Adds one report's verdicts.
    pub fn add(&mut self, verdicts: &[Decision]) {
        self.reports += 1;
        self.rows += verdicts.len();
        let count = |d: Decision| verdicts.iter().filter(|v| **v == d).count();
        self.drifted += count(Decision::Drifted);
        self.reproduced += count(Decision::Reproduced);
        self.inconclusive += count(Decision::Inconclusive);
        self.failed_reports += usize::from(count(Decision::Drifted) > 0);
    }

    /// Share of rows called `d`.
    pub fn row_rate(&self, d: Decision) -> f64 {
        let k = match d {
            Decision::Drifted => self.drifted,
            Decision::Reproduced => self.reproduced,
            Decision::Inconclusive => self.inconclusive,
        };
        k as f64 / self.rows.max(1) as f64
    }

    /// Share of reports with a drifted row.
    pub fn failed_rate(&self) -> f64 {
        self.failed_reports as f64 / self.reports.max(1) as f64
    }
}

/// Which rule a simulation runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// This module's rule with these tolerances and multiplicity control.
    Decide(Tolerances, Multiplicity),
    /// The rule before issue 25.
    Legacy,
}

/// `reports` reports of scenario `s` from `seed`, judged by `rule`.
pub fn run(s: &Scenario, rule: Rule, reports: usize, seed: u64) -> Tally {
    let mut rng = SplitMix64::new(seed);
    let mut tally = Tally::default();
    for _ in 0..reports {
        let report = draw(&mut rng, s);
        let verdicts = match rule {
            Rule::Decide(tol, m) => judge(&report, &tol, m, s.sessions_b),
            Rule::Legacy => legacy(&report),
        };
        tally.add(&verdicts);
    }
    tally
}
