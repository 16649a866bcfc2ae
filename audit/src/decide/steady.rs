//! Steady state: where a series' warm-up transient ends, by MSER-5 (White, "An effective
//! truncation heuristic for bias reduction in simulation output", Simulation 69(6), 1997; White,
//! Cobb and Spratt, "A comparison of five steady-state truncation heuristics", WSC 2000, eq. 1).
//! The series is cut into batches of 5; for each d the statistic is
//! MSER(d) = Σ_{j>d} (Y_j - Ȳ_d)² / (k - d)², over the k batch means Y_j after the first d;
//! the truncation is 5 d* for the d* that minimises it, searched over the first half only (a
//! minimum in the second half means the series never settles).

/// What MSER found in a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steady {
    /// The first `truncate` samples are a transient (0: none).
    From {
        /// Samples to drop from the start.
        truncate: usize,
    },
    /// The minimum lies in the second half: no steady state within the series.
    NotSettled,
    /// Too short to tell (fewer than 4 batches).
    TooShort,
}

/// MSER(d) for d = 0 .. k - 2 over the k batch means of `batch` samples (a trailing partial
/// batch left out); `None` below 4 batches.
fn statistics(series: &[f64], batch: usize) -> Option<Vec<f64>> {
    let means: Vec<f64> = series
        .chunks_exact(batch.max(1))
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    let k = means.len();
    if k < 4 {
        return None;
    }
    let statistic = |d: usize| {
        let rest = &means[d..];
        let m = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / m;
        rest.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (m * m)
    };
    Some((0..k - 1).map(statistic).collect())
}

/// The d of the smallest of `stats[..end]`.
fn argmin(stats: &[f64], end: usize) -> usize {
    (0..end.min(stats.len()))
        .min_by(|&i, &j| stats[i].total_cmp(&stats[j]))
        .unwrap_or(0)
}

/// MSER with batches of `batch` samples (a trailing partial batch is left out).
pub fn mser(series: &[f64], batch: usize) -> Steady {
    let Some(stats) = statistics(series, batch) else {
        return Steady::TooShort;
    };
    let k = stats.len() + 1;
    let best = argmin(&stats, stats.len());
    if best > k / 2 {
        Steady::NotSettled
    } else {
        Steady::From {
            truncate: best * batch.max(1),
        }
    }
}

/// MSER-5.
pub fn mser5(series: &[f64]) -> Steady {
    mser(series, 5)
}

/// The level at which the runs MSER-5 would cut must differ from the rest to be dropped.
pub const TRANSIENT_ALPHA: f64 = 0.01;

/// The part of a series of runs a comparison uses: the series from where MSER-5 puts its steady
/// state, with two guards for the short series of runs a benchmark takes:
/// - the truncation is searched over the first half of the batches only (White, Cobb and
///   Spratt's rule that a cut is never more than half the series): over a few batches the
///   statistic of the last two or three is small by chance alone, so the unrestricted minimum
///   would call most short series unsettled;
/// - the cut runs are dropped only when they differ from the rest by Welch's test at
///   [`TRANSIENT_ALPHA`] (our addition: on 30 runs of a stationary series MSER-5 alone cuts at
///   least one batch more than half the time, which throws runs away for no bias removed).
///
/// Fewer than 20 runs: the whole series, [`Steady::TooShort`]; no transient: the whole series,
/// `From { truncate: 0 }`.
pub fn steady_part(series: &[f64]) -> (&[f64], Steady) {
    let Some(stats) = statistics(series, 5) else {
        return (series, Steady::TooShort);
    };
    let k = stats.len() + 1;
    let truncate = 5 * argmin(&stats, k / 2 + 1);
    let (head, rest) = series.split_at(truncate);
    let transient =
        truncate > 0 && crate::stats::welch_p(head, rest).is_some_and(|p| p < TRANSIENT_ALPHA);
    let truncate = if transient { truncate } else { 0 };
    (&series[truncate..], Steady::From { truncate })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::rng::SplitMix64;

    fn noise(rng: &mut SplitMix64, n: usize) -> Vec<f64> {
        (0..n).map(|_| 100.0 + 3.0 * rng.normal()).collect()
    }

    #[test]
    fn a_warm_up_is_found_where_it_ends() {
        let mut rng = SplitMix64::new(9);
        let mut series = noise(&mut rng, 200);
        for (i, x) in series.iter_mut().take(30).enumerate() {
            *x -= 40.0 * (1.0 - i as f64 / 30.0); // slow first requests
        }
        let Steady::From { truncate } = mser5(&series) else {
            panic!("no steady state found");
        };
        assert!((20..=40).contains(&truncate), "truncate {truncate}");
    }

    #[test]
    fn a_stationary_series_keeps_almost_everything_and_short_ones_are_too_short() {
        let mut rng = SplitMix64::new(10);
        let mut cut = 0;
        for _ in 0..50 {
            if let Steady::From { truncate } = mser5(&noise(&mut rng, 200)) {
                cut += truncate;
            }
        }
        assert!(
            cut as f64 / 50.0 < 10.0,
            "mean truncation {}",
            cut as f64 / 50.0
        );
        assert_eq!(mser5(&[1.0; 12]), Steady::TooShort);
        let ramp: Vec<f64> = (0..100).map(f64::from).collect();
        assert_eq!(mser5(&ramp), Steady::NotSettled);
    }

    #[test]
    fn the_steady_part_drops_a_planted_transient_and_keeps_short_or_steady_series() {
        let mut rng = SplitMix64::new(11);
        // 40 runs of a step whose first 8 ran a third slower (a cold cache, a clock ramping up).
        let mut runs = noise(&mut rng, 40);
        for x in runs.iter_mut().take(8) {
            *x *= 0.66;
        }
        let (kept, found) = steady_part(&runs);
        let Steady::From { truncate } = found else {
            panic!("{found:?}");
        };
        // Whole batches of 5, past the transient, at most half the series.
        assert!([10, 15, 20].contains(&truncate), "truncate {truncate}");
        assert_eq!(kept, &runs[truncate..]);
        assert!(kept.iter().all(|x| *x > 85.0), "{kept:?}");
        let short = [90.0, 100.0, 101.0, 99.0];
        assert_eq!(steady_part(&short), (&short[..], Steady::TooShort));
        // Series with no transient mostly keep every run.
        let kept_all = (0..200)
            .filter(|_| steady_part(&noise(&mut rng, 30)).1 == Steady::From { truncate: 0 })
            .count();
        assert!(kept_all >= 190, "{kept_all} of 200 kept whole");
    }
}
