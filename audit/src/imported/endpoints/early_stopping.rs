//! The MLPerf Endpoints writer's early-stopping estimate (`mlcommons/endpoints`
//! `src/inference_endpoint/metrics/early_stopping.py` at `ea332753`, docs/formats/mlperf-endpoints.md
//! row S11), ported line for line: LoadGen's SingleStream construction (`sorted[n - t]`, `t` the
//! largest over-latency count a run of `n` can absorb at confidence 0.99, tolerance 0), with the
//! regularized incomplete beta by Numerical Recipes' continued fraction (modified Lentz, 400
//! iterations at most, as the writer caps it) rather than LoadGen's hypergeometric series
//! ([`crate::imported::loadgen`]'s port), whose terms grow with `t` (a 600,000-sample p50 would
//! take thousands of terms a step).

use statrs::function::gamma::ln_gamma;

/// The writer's confidence (`CONFIDENCE`, LoadGen's `results.cc`).
pub const CONFIDENCE: f64 = 0.99;

/// `_betacf`: the continued fraction of the regularized incomplete beta.
fn betacf(a: f64, b: f64, x: f64) -> f64 {
    let (eps, fpmin) = (3e-16, 1e-300);
    let guard = |v: f64| if v.abs() < fpmin { fpmin } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..400 {
        let (m, m2) = (m as f64, 2.0 * m as f64);
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let de = d * c;
        h *= de;
        if (de - 1.0).abs() < eps {
            break;
        }
    }
    h
}

/// `_betai`: I_x(a, b).
fn betai(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_bt = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let bt = ln_bt.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        bt * betacf(a, b, x) / a
    } else {
        1.0 - bt * betacf(b, a, 1.0 - x) / b
    }
}

/// `_odds`: the chance of `t` or fewer over-latency samples among `h + t`.
fn odds(h: i64, t: i64, p: f64) -> f64 {
    betai(h as f64, (1 + t) as f64, p)
}

/// `find_min_passing`: the least `h` with `odds(h, t, p) < 1 - c` (exponential bracket, then
/// binary search).
pub fn find_min_passing(t: i64, p: f64) -> i64 {
    let target = 1.0 - CONFIDENCE;
    let (mut lo, mut hi) = (1i64, 2i64);
    while odds(hi, t, p) >= target {
        hi *= 2;
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        if odds(mid, t, p) < target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// `_discard_count`: the largest `t >= 1` with `n >= find_min_passing(t) + t`; 0 below the floor.
fn discard_count(n: i64, p: f64) -> i64 {
    if find_min_passing(1, p) + 1 > n {
        return 0;
    }
    let (mut lo, mut hi) = (1i64, 2i64);
    while find_min_passing(hi, p) + hi <= n {
        hi *= 2;
    }
    while lo < hi - 1 {
        let mid = (lo + hi) / 2;
        if find_min_passing(mid, p) + mid <= n {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `es_percentile_estimate(...).estimate`: for `percentile` on the 0-100 grid, the `t`-th
/// highest of the ascending `sorted` values; `None` under the floor (`find_min_passing(1) + 1`
/// samples: 11 at p50, 64 at p90, 662 at p99, 6,636 at p99.9).
pub fn estimate(sorted: &[f64], percentile: f64) -> Option<f64> {
    let p = percentile / 100.0;
    let n = sorted.len() as i64;
    if n < find_min_passing(1, p) + 1 {
        return None;
    }
    let t = discard_count(n, p);
    sorted.get((n - t) as usize).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floors_the_writer_documents_and_loadgens_bounds() {
        // The floors of docs/formats/mlperf-endpoints.md row S11.
        let floors = [
            (50.0, 11),
            (75.0, 24),
            (80.0, 31),
            (90.0, 64),
            (95.0, 130),
            (97.0, 219),
            (99.0, 662),
            (99.9, 6636),
        ];
        for (p, floor) in floors {
            assert_eq!(find_min_passing(1, p / 100.0) + 1, floor, "p{p}");
        }
        // Equal to LoadGen's series where both converge.
        for t in [1, 5, 40] {
            assert_eq!(
                find_min_passing(t, 0.99),
                crate::imported::loadgen::early_stopping::min_passing(t, 0.99),
                "t {t}"
            );
        }
        // The writer's own code on 0..n (its early_stopping.py at ea332753, run here).
        let sorted: Vec<f64> = (0..1200).map(f64::from).collect();
        assert_eq!(estimate(&sorted[..10], 50.0), None);
        assert_eq!(estimate(&sorted, 99.0), Some(1196.0));
        assert_eq!(estimate(&sorted, 90.0), Some(1105.0));
        assert_eq!(estimate(&sorted, 50.0), Some(641.0));
        assert_eq!(
            (find_min_passing(5, 0.99), find_min_passing(40, 0.99)),
            (1302, 5687)
        );
        let big: Vec<f64> = (0..600_000).map(f64::from).collect();
        assert_eq!(estimate(&big, 50.0), Some(300_902.0));
    }
}
