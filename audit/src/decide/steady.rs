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

/// MSER with batches of `batch` samples (a trailing partial batch is left out).
pub fn mser(series: &[f64], batch: usize) -> Steady {
    let means: Vec<f64> = series
        .chunks_exact(batch.max(1))
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    let k = means.len();
    if k < 4 {
        return Steady::TooShort;
    }
    let statistic = |d: usize| {
        let rest = &means[d..];
        let m = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / m;
        rest.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (m * m)
    };
    let best = (0..k - 1)
        .min_by(|&i, &j| statistic(i).total_cmp(&statistic(j)))
        .unwrap_or(0);
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
}
