//! Paired blocks, for `rigaudit ab`: both setups measured in one session, interleaved, so the
//! session factor that dominates a comparison of two sessions (±25 % on a shared VM, see
//! [`super::tolerance`]) cancels.
//!
//! # The design
//!
//! Blocks run in quartets, `A B B A` or `B A A B` (the order shuffled by a recorded seed). A
//! quartet's change is the mean log of its two B blocks minus the mean log of its two A blocks:
//! a drift of the machine that is linear over the quartet cancels inside it (each side has one
//! early and one late block), so neighbouring blocks' shared drift does not reach the estimate.
//! Quartets are the units; what dependence is left between neighbouring quartets is measured by
//! their lag-1 autocorrelation, and a positive one widens the interval by the usual factor
//! (1 + ρ) / (1 - ρ) on the variance ([`unit_stats`]). Each row's variance is shrunk toward a
//! prior fitted to every row of the report ([`Moderated`], as the replay rule does).
//!
//! # Looks and error rates
//!
//! The comparison looks at its data after quartets [`look_schedule`] (3, 4, 6, 8, 12, 17, ...)
//! and stops once every row is decided or the budget is spent. Each look spends a share of the
//! error rates ([`Spending`]): an interim look spends half of them divided over the planned
//! interim looks, the last look all that is left, so the shares sum to at most one whenever the
//! comparison stops (the union bound over looks: Bonferroni alpha spending, valid for any
//! stopping time that the data of later looks cannot change). At a look with share w:
//!
//! - **unchanged**: the interval at level 1 - 2 × 0.05 × w lies inside ±band (two one-sided tests
//!   at 5 % × w each: at most 5 % over every look);
//! - **changed**: the p of no change, divided by w, is below 5 % after Holm over the report's
//!   rows, and the estimate lies beyond the band ([`super::decide_family`]);
//! - **inconclusive** otherwise, with the quartets that would settle it ([`units_needed`]).
//!
//! A row's first decision stands (a later look could only spend more error rate on it).
//!
//! # The band
//!
//! Without a band given, each kind's band is the change this run can resolve: twice the half-width
//! (at 95 %) of the interval the planned quartets would reach at the spread measured so far
//! (moderated), at least 1 %, rounded up to half a percent, at most 10 % ([`resolved_band`],
//! [`BAND_CAP_PCT`]); the report says so.

use super::ratio::{t_quantile, t_upper};
use super::{Evidence, FigureKind, Moderated, RunsNeeded};

/// The one-sided level of each of the two one-sided tests of "unchanged", and the level of
/// "changed", over all looks.
pub const ALPHA: f64 = 0.05;

/// The first look, in quartets: fewer leave too few degrees of freedom to decide anything.
pub const FIRST_LOOK: usize = 3;

/// The looks at most `max_units` quartets allow: 3, 4, 6, 8, 12, 17, 24, ... (each about √2
/// times the one before), and `max_units` itself last when it is not on the schedule. Empty when
/// `max_units` is below the first look.
pub fn look_schedule(max_units: usize) -> Vec<usize> {
    let mut looks = Vec::new();
    let mut at = FIRST_LOOK as f64;
    while (at.round() as usize) <= max_units {
        let n = at.round() as usize;
        if looks.last() != Some(&n) {
            looks.push(n);
        }
        at = (at * std::f64::consts::SQRT_2).max(at + 1.0);
    }
    if max_units >= FIRST_LOOK && looks.last() != Some(&max_units) {
        looks.push(max_units);
    }
    looks
}

/// How the error rates are spent over one comparison's looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spending {
    /// Looks planned (at least one).
    pub planned: usize,
    /// Looks made so far.
    pub made: usize,
    /// The share spent so far (at most 1).
    pub spent: f64,
}

impl Spending {
    /// Spending over the looks of [`look_schedule`]`(max_units)`.
    pub fn for_units(max_units: usize) -> Spending {
        Spending {
            planned: look_schedule(max_units).len().max(1),
            made: 0,
            spent: 0.0,
        }
    }

    /// The share of the next look: an interim look half the error rates over the planned interim
    /// looks; the last (`last`, or the last planned) what is left.
    pub fn next_share(&mut self, last: bool) -> f64 {
        let final_look = last || self.made + 1 >= self.planned;
        let share = if final_look {
            (1.0 - self.spent).max(0.0)
        } else {
            0.5 / (self.planned - 1) as f64
        };
        self.made += 1;
        self.spent += share;
        share
    }
}

/// One quartet's change: the mean log of its B blocks minus the mean log of its A blocks; `None`
/// when a block has no positive finite value.
pub fn unit_change(a: [f64; 2], b: [f64; 2]) -> Option<f64> {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    if !a.iter().chain(&b).all(|&x| ok(x)) {
        return None;
    }
    Some((b[0].ln() + b[1].ln() - a[0].ln() - a[1].ln()) / 2.0)
}

/// The lag-1 autocorrelation of `xs` (time order), clipped to [0, 0.5]; 0 below six values,
/// where it cannot be told from noise.
pub fn lag1(xs: &[f64]) -> f64 {
    if xs.len() < 6 {
        return 0.0;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    if var <= 0.0 {
        return 0.0;
    }
    let cov: f64 = xs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    (cov / var).clamp(0.0, 0.5)
}

/// The units' mean, their variance (widened for a positive lag-1 autocorrelation) and its
/// degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitStats {
    /// Mean change (log ratio).
    pub mean: f64,
    /// Variance of one unit, widened by (1 + ρ) / (1 - ρ).
    pub var: f64,
    /// Degrees of freedom of `var`.
    pub df: f64,
    /// Units.
    pub n: usize,
}

/// [`UnitStats`] of the units `xs`; `None` below two.
pub fn unit_stats(xs: &[f64]) -> Option<UnitStats> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let rho = lag1(xs);
    Some(UnitStats {
        mean,
        var: var * (1.0 + rho) / (1.0 - rho),
        df: n - 1.0,
        n: xs.len(),
    })
}

/// The prior every row's unit variance is shrunk toward, fitted to the distinct rows only: a row
/// whose changes repeat another's, or mirror them (`decode` is `decode.prose` when the contract
/// has one prompt; a prompt's TTFT is its prefill rate turned over), is one variance, not two,
/// and counting it twice would give the prior degrees of freedom it does not have (and pull a
/// noisy row toward a quiet one's spread).
pub fn prior_of(rows: &[&[f64]]) -> Moderated {
    let mut seen: Vec<&[f64]> = Vec::new();
    let mut vars = Vec::new();
    let mut dfs = Vec::new();
    for xs in rows {
        let same = |o: &&[f64]| {
            o.len() == xs.len()
                && o.iter()
                    .zip(xs.iter())
                    .all(|(a, b)| (a.abs() - b.abs()).abs() < 1e-9)
        };
        if seen.iter().any(same) {
            continue;
        }
        seen.push(xs);
        if let Some(s) = unit_stats(xs) {
            vars.push(s.var);
            dfs.push(s.df);
        }
    }
    Moderated::fit(&vars, &dfs)
}

/// The evidence of one row: its quartets' changes `units` in time order, its `band` (log), the
/// look's `share` of the error rates and the family's `prior`.
pub fn evidence(
    kind: FigureKind,
    units: &[f64],
    band: f64,
    share: f64,
    prior: &Moderated,
) -> Evidence {
    let Some(s) = unit_stats(units) else {
        let mean = units.first().copied().unwrap_or(f64::NAN);
        let mut e = Evidence::unbounded(kind, mean, band, "fewer than two quartets");
        e.sizes = (2 * units.len(), 2 * units.len());
        return e;
    };
    let (var, df) = prior.posterior(s.var, s.df);
    let se = (var / s.n as f64).sqrt();
    let share = share.clamp(1e-9, 1.0);
    let half = t_quantile(1.0 - ALPHA * share, df) * se;
    let p = if se > 0.0 {
        2.0 * t_upper(s.mean.abs() / se, df)
    } else {
        f64::from(u8::from(s.mean == 0.0))
    };
    Evidence {
        kind,
        estimate: s.mean,
        lo90: s.mean - half,
        hi90: s.mean + half,
        p_zero: Some((p / share).min(1.0)),
        band,
        runs_needed: Some(units_needed(s.mean, band, var, s.n)),
        plan: None,
        runs_on_b: None,
        method: "paired ABBA quartets, moderated t, error rates spent over looks",
        note: None,
        sizes: (2 * s.n, 2 * s.n),
    }
}

/// Quartets that would settle a row at its estimate `mean` and unit variance `var` at a last
/// look's level (normal quantiles): its interval inside the band, or, beyond it, a p of no change
/// below [`ALPHA`]; more than the `present` quartets; no number above 1000.
pub fn units_needed(mean: f64, band: f64, var: f64, present: usize) -> RunsNeeded {
    let z_eq = 1.959_963_984_540_054; // one-sided 2.5 %: a last look with half the rates left
    let z_sig = 2.241_402_727_604_947; // two-sided 2.5 %
    let (margin, z) = if mean.abs() < band {
        (band - mean.abs(), z_eq)
    } else {
        (mean.abs(), z_sig)
    };
    if margin <= 0.0 || !var.is_finite() {
        return RunsNeeded::NotByRuns;
    }
    let n = (z * z * var / (margin * margin)).ceil() as usize;
    match n.max(present + 1) {
        n if n > 1000 => RunsNeeded::NotByRuns,
        n => RunsNeeded::Runs(n),
    }
}

/// The widest band a run sets itself, in percent: a machine whose spread would resolve only more
/// leaves its rows inconclusive rather than calling them unchanged within a band too wide to
/// matter (`--band` sets a wider one on purpose).
pub const BAND_CAP_PCT: f64 = 10.0;

/// The band a run resolves from the unit variances `vars` of one kind's rows (their median), at
/// `planned` quartets: twice the 95 % half-width, at least 1 %, rounded up to half a percent, at
/// most [`BAND_CAP_PCT`]; in log units. `None` without a variance.
pub fn resolved_band(vars: &[f64], planned: usize) -> Option<f64> {
    let mut v: Vec<f64> = vars.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    let half = 1.959_963_984_540_054 * (median / planned.max(1) as f64).sqrt();
    let pct = (200.0 * half).max(1.0);
    let rounded = ((pct * 2.0).ceil() / 2.0).min(BAND_CAP_PCT);
    Some((rounded / 100.0).ln_1p())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::rng::SplitMix64;

    #[test]
    fn looks_grow_by_about_root_two_and_end_at_the_last_quartet() {
        assert_eq!(look_schedule(2), Vec::<usize>::new());
        assert_eq!(look_schedule(3), vec![3]);
        assert_eq!(look_schedule(5), vec![3, 4, 5]);
        assert_eq!(look_schedule(16), vec![3, 4, 6, 8, 12, 16]);
        assert_eq!(look_schedule(20), vec![3, 4, 6, 8, 12, 17, 20]);
    }

    #[test]
    fn shares_never_sum_past_one_however_the_comparison_stops() {
        for planned in [1usize, 2, 5, 9] {
            for stop_at in 1..=planned {
                let mut s = Spending {
                    planned,
                    made: 0,
                    spent: 0.0,
                };
                let mut total = 0.0;
                for look in 1..=stop_at {
                    total += s.next_share(look == stop_at);
                }
                assert!(total <= 1.0 + 1e-12, "{planned} {stop_at}: {total}");
                if stop_at == planned {
                    assert!((total - 1.0).abs() < 1e-12, "the last look spends the rest");
                }
            }
        }
        let mut s = Spending::for_units(16);
        assert_eq!(s.planned, 6);
        assert!(
            (s.next_share(false) - 0.1).abs() < 1e-12,
            "0.5 over 5 interim looks"
        );
    }

    #[test]
    fn a_quartet_cancels_a_linear_drift() {
        // A B B A at times 0..3 with the machine 2 % slower each block and B 5 % faster.
        let speed = |t: f64| (1.0 - 0.02 * t) * 100.0;
        let (a, b) = (
            [speed(0.0), speed(3.0)],
            [speed(1.0) * 1.05, speed(2.0) * 1.05],
        );
        let d = unit_change(a, b).unwrap();
        assert!((d.exp() - 1.05).abs() < 0.002, "{}", d.exp());
        assert_eq!(unit_change([1.0, 0.0], b), None);
    }

    #[test]
    fn a_positive_autocorrelation_widens_the_variance() {
        let trend: Vec<f64> = (0..10).map(|i| 0.01 * f64::from(i)).collect();
        assert!(lag1(&trend) > 0.3);
        let alternating: Vec<f64> = (0..10).map(|i| f64::from(i % 2)).collect();
        assert_eq!(
            lag1(&alternating),
            0.0,
            "a negative one is not used to narrow"
        );
        let s = unit_stats(&trend).unwrap();
        let plain = trend.iter().map(|x| (x - s.mean).powi(2)).sum::<f64>() / 9.0;
        assert!(s.var > plain * 1.5, "{} vs {plain}", s.var);
        assert_eq!(lag1(&trend[..5]), 0.0, "too few to tell");
    }

    #[test]
    fn a_tight_series_inside_the_band_and_a_clear_slowdown_are_told_apart() {
        let units_a: Vec<f64> = [0.004, -0.006, 0.002, -0.001, 0.003, -0.004].to_vec();
        let e = evidence(FigureKind::Decode, &units_a, 0.03, 0.5, &Moderated::NONE);
        assert!(e.inside_band(), "{e:?}");
        let slower: Vec<f64> = units_a.iter().map(|x| x - 0.05).collect();
        let e = evidence(FigureKind::Decode, &slower, 0.03, 0.5, &Moderated::NONE);
        assert!(!e.inside_band() && e.p_zero.unwrap() < 0.01, "{e:?}");
        // A smaller share widens the interval and raises p.
        let wide = evidence(FigureKind::Decode, &slower, 0.03, 0.05, &Moderated::NONE);
        assert!(wide.hi90 - wide.lo90 > e.hi90 - e.lo90);
        assert!(wide.p_zero.unwrap() > e.p_zero.unwrap());
    }

    #[test]
    fn a_repeated_or_mirrored_row_counts_once_in_the_prior() {
        let noisy = [0.05, -0.04, 0.03, -0.05];
        let quiet = [0.002, -0.001, 0.001, -0.002];
        let mirror: Vec<f64> = quiet.iter().map(|x| -x).collect();
        // Two distinct rows: too few for a prior, so the noisy row keeps its own spread.
        assert_eq!(
            prior_of(&[&noisy, &noisy, &quiet, &mirror]),
            Moderated::NONE
        );
        let third = [0.01, -0.02, 0.015, 0.0];
        assert_ne!(prior_of(&[&noisy, &quiet, &third]), Moderated::NONE);
    }

    #[test]
    fn units_needed_shrink_with_the_margin_and_say_when_none_suffice() {
        let near = units_needed(0.0, 0.02, 0.0016, 0);
        let far = units_needed(0.0, 0.05, 0.0016, 0);
        match (near, far) {
            (RunsNeeded::Runs(a), RunsNeeded::Runs(b)) => assert!(a > b, "{a} {b}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(units_needed(0.0, 0.001, 1.0, 3), RunsNeeded::NotByRuns);
    }

    #[test]
    fn the_resolved_band_follows_the_spread_and_has_a_floor() {
        // Unit sd 2 % over 16 quartets: 1.96 × 0.02 / 4 = 0.98 %, twice is 1.96 %, to 2.0 %.
        let b = resolved_band(&[0.0004], 16).unwrap();
        assert!((b.exp_m1() - 0.02).abs() < 1e-9, "{}", b.exp_m1());
        let floor = resolved_band(&[1e-8], 16).unwrap();
        assert!((floor.exp_m1() - 0.01).abs() < 1e-9);
        assert_eq!(resolved_band(&[], 16), None);
        let capped = resolved_band(&[0.25], 4).unwrap();
        assert!(
            (capped.exp_m1() - BAND_CAP_PCT / 100.0).abs() < 1e-9,
            "a wide spread is capped"
        );
    }

    /// A/A under the stopping rule, simulated: a row is called changed (p / share below 5 % and
    /// beyond a 2 % band) in at most 5 % of comparisons however early they stop.
    #[test]
    fn stopping_early_keeps_the_false_change_rate() {
        let mut rng = SplitMix64::new(7);
        let (mut false_changes, trials) = (0, 2000);
        for _ in 0..trials {
            let mut units = Vec::new();
            let mut spending = Spending::for_units(16);
            let mut changed = false;
            for n in 1..=16 {
                units.push(0.015 * rng.normal());
                if !look_schedule(16).contains(&n) {
                    continue;
                }
                let share = spending.next_share(n == 16);
                let e = evidence(FigureKind::Decode, &units, 0.005, share, &Moderated::NONE);
                if e.p_zero.unwrap() < ALPHA && e.estimate.abs() > e.band {
                    changed = true;
                    break;
                }
            }
            false_changes += usize::from(changed);
        }
        let rate = false_changes as f64 / trials as f64;
        assert!(rate <= 0.05, "{rate}");
    }
}
