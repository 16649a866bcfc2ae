//! Percentiles (p50, p90, p95, p99) with distribution-free intervals from order statistics:
//! the number of samples below the true q-quantile is Binomial(n, q), so
//! P(x_(l) <= ξq < x_(u)) = F(u - 1) - F(l - 1) with F that binomial's CDF (David and Nagaraja,
//! Order Statistics, 3rd ed., 2003, sec. 7.1, eq. 7.1.5; Conover, Practical Nonparametric
//! Statistics, 3rd ed., 1999, sec. 3.2).

use super::{Decision, FigureKind, Tolerance};
use statrs::distribution::{Binomial, DiscreteCDF};

/// A sample percentile with its distribution-free interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PercentileInterval {
    /// The nearest-rank estimate: the ceil(n q)-th smallest sample.
    pub estimate: f64,
    /// The lower end, `None` when even the smallest sample is not a bound at this confidence.
    pub lo: Option<f64>,
    /// The upper end, `None` when even the largest sample is not a bound: the percentile lies
    /// beyond the samples (a p99 of 12 requests).
    pub hi: Option<f64>,
}

/// The fewest samples a q-percentile should be printed from: 1 / (1 - q) (and 1 / q), so that
/// at least one sample is expected beyond it; p99 needs 100, p95 20, p90 10. Below that the
/// printed figure is the maximum (or an interpolation next to it) in disguise.
pub fn min_samples_for(q: f64) -> usize {
    let tail = q.min(1.0 - q);
    (1.0 / tail - 1e-9).ceil() as usize
}

/// What verify says of a q-percentile printed from `n` samples, when they are too few
/// ([`min_samples_for`]): the percentile is the largest (or smallest) sample in disguise.
pub fn too_few_samples(q: f64, n: usize) -> Option<String> {
    let need = min_samples_for(q);
    if n >= need {
        return None;
    }
    // p99, p99.9, p0.1: the percentile to one decimal, without a trailing ".0".
    let pct = format!("{:.1}", 100.0 * q);
    let name = format!("p{}", pct.trim_end_matches(".0"));
    Some(format!(
        "{name} printed from {n} samples: a {name} needs at least {need} (below that it is the {} sample in disguise), and a 90 % interval for it needs {}",
        if q >= 0.5 { "largest" } else { "smallest" },
        min_samples_for_interval(q, 0.90)
    ))
}

/// The fewest samples for a two-sided distribution-free interval at `confidence` to have both
/// ends: q^n <= (1 - c)/2 and (1 - q)^n <= (1 - c)/2. p99 at 90 %: 299.
pub fn min_samples_for_interval(q: f64, confidence: f64) -> usize {
    let alpha_half = (1.0 - confidence) / 2.0;
    let worst = q.max(1.0 - q);
    (alpha_half.ln() / worst.ln()).ceil() as usize
}

/// The q-percentile of `samples` with its interval at `confidence` (0.90 for 90 %); `None`
/// when there are no samples.
pub fn percentile_interval(samples: &[f64], q: f64, confidence: f64) -> Option<PercentileInterval> {
    let n = samples.len();
    if n == 0 {
        return None;
    }
    let mut xs = samples.to_vec();
    xs.sort_by(f64::total_cmp);
    let rank = ((n as f64 * q).ceil() as usize).clamp(1, n);
    let below = Binomial::new(q, n as u64).ok()?;
    let alpha_half = (1.0 - confidence) / 2.0;
    // l: the largest rank with F(l - 1) <= α/2; u: the smallest with F(u - 1) >= 1 - α/2.
    let lo = (1..=n)
        .rev()
        .find(|&l| below.cdf(l as u64 - 1) <= alpha_half)
        .map(|l| xs[l - 1]);
    let hi = (1..=n)
        .find(|&u| below.cdf(u as u64 - 1) >= 1.0 - alpha_half)
        .map(|u| xs[u - 1]);
    Some(PercentileInterval {
        estimate: xs[rank - 1],
        lo,
        hi,
    })
}

/// The q-percentile of B over A as a log ratio, with the ratio's interval from each side's
/// distribution-free interval at √confidence (so both hold together with probability
/// `confidence`, the sides being independent): `(estimate, lo, hi)`, an open end infinite;
/// `None` when a side has no samples or a non-positive percentile.
pub fn ratio_interval(a: &[f64], b: &[f64], q: f64, confidence: f64) -> Option<(f64, f64, f64)> {
    let each = confidence.sqrt();
    let (x, y) = (
        percentile_interval(a, q, each)?,
        percentile_interval(b, q, each)?,
    );
    if x.estimate <= 0.0 || y.estimate <= 0.0 {
        return None;
    }
    let lo = match (y.lo, x.hi) {
        (Some(yl), Some(xh)) if yl > 0.0 && xh > 0.0 => (yl / xh).ln(),
        _ => f64::NEG_INFINITY,
    };
    let hi = match (y.hi, x.lo) {
        (Some(yh), Some(xl)) if yh > 0.0 && xl > 0.0 => (yh / xl).ln(),
        _ => f64::INFINITY,
    };
    Some(((y.estimate / x.estimate).ln(), lo, hi))
}

/// A percentile of two sides judged by its intervals ([`ratio_interval`]). Reproduced when the
/// 90 % ratio interval lies inside the band; drifted when the ratio interval at
/// `drift_confidence` (the family's level, e.g. 1 - 0.05/rows) excludes no change and the
/// estimate lies beyond the band; else inconclusive.
pub fn judge_percentile(
    a: &[f64],
    b: &[f64],
    q: f64,
    tol: &Tolerance,
    kind: FigureKind,
    drift_confidence: f64,
) -> Decision {
    let band = tol.band_in_estimate_units(kind);
    let Some((d, lo90, hi90)) = ratio_interval(a, b, q, 0.90) else {
        return Decision::Inconclusive;
    };
    if lo90 > -band && hi90 < band {
        return Decision::Reproduced;
    }
    match ratio_interval(a, b, q, drift_confidence) {
        Some((_, lo, hi)) if (lo > 0.0 || hi < 0.0) && d.abs() > band => Decision::Drifted,
        _ => Decision::Inconclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::rng::SplitMix64;

    #[test]
    fn sample_sizes_for_tail_percentiles() {
        assert_eq!(min_samples_for(0.99), 100);
        assert_eq!(min_samples_for(0.95), 20);
        assert_eq!(min_samples_for(0.5), 2);
        // 0.99^299 = 0.0495 <= 0.05 < 0.99^298.
        assert_eq!(min_samples_for_interval(0.99, 0.90), 299);
        let why = too_few_samples(0.99, 12).unwrap();
        assert!(
            why.starts_with("p99 printed from 12 samples: a p99 needs at least 100"),
            "{why}"
        );
        assert_eq!(too_few_samples(0.95, 20), None);
    }

    #[test]
    fn p99_of_12_has_no_upper_end() {
        let xs: Vec<f64> = (1..=12).map(f64::from).collect();
        let p = percentile_interval(&xs, 0.99, 0.90).unwrap();
        assert_eq!(p.estimate, 12.0);
        assert_eq!(p.hi, None);
        assert!(p.lo.is_some());
    }

    #[test]
    fn median_interval_covers_at_least_its_level() {
        let mut rng = SplitMix64::new(3);
        let (trials, mut covered) = (2000, 0);
        for _ in 0..trials {
            let xs: Vec<f64> = (0..25).map(|_| rng.normal()).collect();
            let p = percentile_interval(&xs, 0.5, 0.90).unwrap();
            let (lo, hi) = (p.lo.unwrap_or(f64::MIN), p.hi.unwrap_or(f64::MAX));
            covered += usize::from(lo <= 0.0 && 0.0 <= hi);
        }
        let coverage = covered as f64 / trials as f64;
        assert!((0.89..0.97).contains(&coverage), "coverage {coverage}");
    }

    #[test]
    fn percentiles_judged_by_their_intervals() {
        let mut rng = SplitMix64::new(4);
        let draw = |rng: &mut SplitMix64, scale: f64| -> Vec<f64> {
            (0..400)
                .map(|_| scale * (0.05 * rng.normal()).exp())
                .collect()
        };
        let tol = Tolerance {
            band: 0.10,
            session_sd: 0.0,
        };
        let (a, same, slower) = (
            draw(&mut rng, 1.0),
            draw(&mut rng, 1.0),
            draw(&mut rng, 1.5),
        );
        let judge = |b: &[f64]| judge_percentile(&a, b, 0.9, &tol, FigureKind::Ttft, 0.99);
        assert_eq!(judge(&same), Decision::Reproduced);
        assert_eq!(judge(&slower), Decision::Drifted);
        let few: Vec<f64> = a[..12].to_vec();
        assert_eq!(
            judge_percentile(&few, &few, 0.99, &tol, FigureKind::Ttft, 0.99),
            Decision::Inconclusive
        );
    }
}
