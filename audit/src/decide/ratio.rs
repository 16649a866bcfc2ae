//! Speed figures: the log ratio of the two sides' geometric means (B over A, replayed over
//! recorded) with a Welch-type interval on moderated variances and the session term.
//!
//! With x the logs of side A's runs and y those of side B:
//! - estimate d = mean(y) - mean(x); change = exp(d) - 1;
//! - se² = s~a²/na + s~b²/nb + σs² (1/ka + 1/kb), s~² the moderated variances (Smyth 2004,
//!   eq. 2), k the sessions a side's runs came from, σs the declared session spread;
//! - degrees of freedom by Welch–Satterthwaite (Welch, Biometrika 34, 1947, eq. 8;
//!   Satterthwaite, Biometrics Bull. 2, 1946) with each side's moderated df d0 + n - 1 and the
//!   session term known (infinite df), at most d0 + (na - 1) + (nb - 1): both sides shrink
//!   toward the same prior, so its d0 counts once (counted twice, the family's smallest p
//!   came out too small and a 17-row report failed 5.8 % of the time instead of 5 %);
//! - the 90 % interval d ± t(0.95, df) se; p of no change 2 (1 - T(|d| / se)).
//!
//! In logs a rate and the time it implies differ only by sign, so they get one verdict.

use super::tolerance::{FigureKind, Tolerance};
use super::{Evidence, Moderated, RunsNeeded, RunsPlan};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// One side's runs of a figure.
#[derive(Debug, Clone, Copy)]
pub struct Runs<'a> {
    /// One positive value per run (a rate or a time).
    pub values: &'a [f64],
    /// The sessions the runs came from (1 for one launch; 2 when a confirming session's runs
    /// are pooled in).
    pub sessions: usize,
}

impl<'a> Runs<'a> {
    /// Runs from one session.
    pub fn one_session(values: &'a [f64]) -> Self {
        Runs {
            values,
            sessions: 1,
        }
    }
}

/// Each run's value in units of its session's machine-speed reference (the covariate):
/// a figure divided by the reference kernel's GB/s measured in the same session.
pub fn per_reference(values: &[f64], reference: f64) -> Vec<f64> {
    values.iter().map(|v| v / reference).collect()
}

/// Mean and sample variance of the logs of positive values; the variance is `None` below two.
pub fn log_moments(values: &[f64]) -> Option<(f64, Option<f64>)> {
    if values.is_empty()
        || values
            .iter()
            .any(|v| v.is_nan() || *v <= 0.0 || !v.is_finite())
    {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let var =
        (logs.len() > 1).then(|| logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0));
    Some((mean, var))
}

/// The sample variances of the logs and their degrees of freedom, for [`Moderated::fit`]: one
/// pair per side of every row with two runs or more.
pub fn variances_of(sides: &[&[f64]]) -> (Vec<f64>, Vec<f64>) {
    sides
        .iter()
        .filter_map(|v| Some((log_moments(v)?.1?, (v.len() - 1) as f64)))
        .unzip()
}

/// The upper `q` quantile of Student's t on `df` degrees of freedom (the normal's above 1e6).
pub fn t_quantile(q: f64, df: f64) -> f64 {
    if df > 1e6 {
        return Normal::standard().inverse_cdf(q);
    }
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(q))
        .unwrap_or(f64::INFINITY)
}

/// P(T > t) on `df` degrees of freedom.
pub fn t_upper(t: f64, df: f64) -> f64 {
    if df > 1e6 {
        return 1.0 - Normal::standard().cdf(t);
    }
    StudentsT::new(0.0, 1.0, df)
        .map(|d| 1.0 - d.cdf(t))
        .unwrap_or(1.0)
}

/// One side after moderation: mean of logs, s~²/n, its df, and s~².
struct Side {
    mean: f64,
    var_of_mean: f64,
    df: f64,
    var: f64,
}

fn moderated_side(runs: &Runs, prior: &Moderated) -> Option<Side> {
    let (mean, var) = log_moments(runs.values)?;
    let n = runs.values.len() as f64;
    let (var, df) = prior.posterior(var.unwrap_or(0.0), n - 1.0);
    (df > 0.0).then_some(Side {
        mean,
        var_of_mean: var / n,
        df,
        var,
    })
}

/// The evidence on a speed figure: B's runs over A's, judged against `tol`. A side with too few
/// runs to estimate a spread (one run and no prior) gives an unbounded interval.
pub fn log_ratio(
    kind: FigureKind,
    a: Runs,
    b: Runs,
    tol: &Tolerance,
    prior: &Moderated,
) -> Evidence {
    let band = tol.band_in_estimate_units(kind);
    let session_var = tol.session_sd.powi(2) * (1.0 / a.sessions as f64 + 1.0 / b.sessions as f64);
    let (Some(sa), Some(sb)) = (moderated_side(&a, prior), moderated_side(&b, prior)) else {
        let d = match (log_moments(a.values), log_moments(b.values)) {
            (Some(x), Some(y)) => y.0 - x.0,
            _ => f64::NAN,
        };
        let mut e = Evidence::unbounded(kind, d, band, "too few runs to estimate a spread");
        e.sizes = (a.values.len(), b.values.len());
        return e;
    };
    let d = sb.mean - sa.mean;
    let runs_var = sa.var_of_mean + sb.var_of_mean;
    let se = (runs_var + session_var).sqrt();
    // Both sides' variances lean on the same prior, so they are not independent estimates: the
    // prior's df count once, not once a side as Welch–Satterthwaite would count them.
    let own_df = (a.values.len() + b.values.len()) as f64 - 2.0;
    let df = welch_df(se, &sa, &sb).min(prior.prior_df + own_df);
    let half = t_quantile(0.95, df) * se;
    let p = if se > 0.0 {
        2.0 * t_upper(d.abs() / se, df)
    } else if d == 0.0 {
        1.0
    } else {
        0.0
    };
    let pooled_var = (sa.var + sb.var) / 2.0;
    Evidence {
        kind,
        estimate: d,
        lo90: d - half,
        hi90: d + half,
        p_zero: Some(p),
        band,
        runs_needed: Some(more_than(
            runs_needed(d, band, pooled_var, session_var),
            a.values.len().max(b.values.len()),
        )),
        plan: Some(runs_plan(pooled_var, session_var)),
        runs_on_b: Some(more_than(
            runs_needed_on_b(d, band, sa.var_of_mean, sb.var, session_var),
            b.values.len(),
        )),
        method: "log ratio, moderated Welch interval",
        note: None,
        sizes: (a.values.len(), b.values.len()),
    }
}

/// Runs a side, more than the `present` a side already has: [`runs_needed`] takes the normal
/// quantile for t, so at few degrees of freedom it can name fewer runs than an interval that is
/// still undecided already rests on.
fn more_than(needed: RunsNeeded, present: usize) -> RunsNeeded {
    match needed {
        RunsNeeded::Runs(n) => RunsNeeded::Runs(n.max(present + 1)),
        not => not,
    }
}

/// Welch–Satterthwaite df of se² with the session term taken as known.
fn welch_df(se: f64, a: &Side, b: &Side) -> f64 {
    let part = |s: &Side| {
        if s.df.is_infinite() {
            0.0
        } else {
            s.var_of_mean.powi(2) / s.df
        }
    };
    let denominator = part(a) + part(b);
    if denominator <= 0.0 {
        f64::INFINITY
    } else {
        se.powi(4) / denominator
    }
}

/// Runs a side that would make the 90 % interval, at the same estimate and spread, stop
/// straddling the band's edge: inside it (reproduced) or beyond it (drifted, before
/// multiplicity). The normal quantile stands for t.
pub fn runs_needed(d: f64, band: f64, run_var: f64, session_var: f64) -> RunsNeeded {
    let margin = (band - d.abs()).abs();
    let z = 1.644_853_626_951_472_2;
    let allowed = (margin / z).powi(2) - session_var;
    if allowed <= 0.0 || !allowed.is_finite() {
        return RunsNeeded::NotByRuns;
    }
    let n = (2.0 * run_var / allowed).ceil().max(2.0);
    if n > 1000.0 {
        RunsNeeded::NotByRuns
    } else {
        RunsNeeded::Runs(n as usize)
    }
}

/// Runs a side that make the 90 % interval of a log ratio at most ±`effect` (0.05 = ±5 %) wide,
/// for runs of log variance `run_var` and a session term `session_var`: how many runs a step
/// needs to tell a move of that size.
pub fn runs_to_tell(effect: f64, run_var: f64, session_var: f64) -> RunsNeeded {
    runs_needed(0.0, effect.ln_1p(), run_var, session_var)
}

/// Runs on side B alone that would make the 90 % interval stop straddling the band's edge, at
/// the same estimate, when side A's runs cannot change (replay adds runs to its own side only;
/// the record is what it is): the smallest nb with
/// z √(var_of_mean_a + s_b²/nb + session_var) <= | band − |d| |, z = 1.645 (as [`runs_needed`],
/// with side A's moderated variance of its mean kept); no number when side A's part and the
/// session term alone are wider, or past 1000 runs.
pub fn runs_needed_on_b(
    d: f64,
    band: f64,
    var_of_mean_a: f64,
    var_b: f64,
    session_var: f64,
) -> RunsNeeded {
    let margin = (band - d.abs()).abs();
    let z = 1.644_853_626_951_472_2;
    let allowed = (margin / z).powi(2) - session_var - var_of_mean_a;
    if allowed <= 0.0 || !allowed.is_finite() {
        return RunsNeeded::NotByRuns;
    }
    let n = (var_b / allowed).ceil().max(2.0);
    if n > 1000.0 {
        RunsNeeded::NotByRuns
    } else {
        RunsNeeded::Runs(n as usize)
    }
}

/// The planning figures of one step: [`runs_to_tell`] ±5 % and ±10 %, for runs of log
/// variance `run_var` (the two sides' moderated variances pooled) and the comparison's session
/// term `session_var` = σs² (1/ka + 1/kb). With n runs a side the 90 % interval of a log ratio
/// at no change is ±z √(2 s²/n + session_var), z = 1.645, solved for n (the normal
/// approximation of the two one-sided tests' sample size: Chow, Shao and Wang, "Sample Size
/// Calculations in Clinical Research", 2nd ed., 2008, section 3.2.3, at zero true difference
/// and with the interval's half-width for the margin); "no number" when the session term alone
/// is that wide.
pub fn runs_plan(run_var: f64, session_var: f64) -> RunsPlan {
    RunsPlan {
        pct5: runs_to_tell(0.05, run_var, session_var),
        pct10: runs_to_tell(0.10, run_var, session_var),
    }
}

/// The half-width of the 90 % interval of the log ratio of two sessions of `n` runs each at no
/// change, for runs of log variance `run_var` and the session term `session_var` (σs² (1/ka +
/// 1/kb): 2 σs² for one session a side, 0 for two halves of one session):
/// t(0.95, 2 (n - 1)) √(2 run_var / n + session_var). It is the interval [`log_ratio`] gives two
/// such sides with no prior ([`Moderated::NONE`]: its degrees of freedom are then capped at the
/// runs' own, 2 (n - 1)): the smallest difference two runs of this size could tell apart.
/// `None` below two runs.
pub fn no_change_half_width(run_var: f64, n: usize, session_var: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let se = (2.0 * run_var / n as f64 + session_var).sqrt();
    Some(t_quantile(0.95, 2.0 * (n as f64 - 1.0)) * se)
}
