//! LoadGen's early-stopping bound (`loadgen/early_stopping.cc`, unchanged from v4.0 to 6.0.17),
//! ported so that a verdict can be recomputed from the counts the detail log gives
//! (docs/formats/loadgen.md row L13).
//!
//! For `t` queries over the latency bound, `h(t)` is the least number of queries under it for
//! which the odds of `t` or fewer over-bound queries among `h + t`, were the true percentile `p`,
//! fall below `1 - c` (c = 0.99, tolerance 0). A Server run meets early stopping when it issued
//! at least `h(t) + t` queries; a SingleStream or MultiStream run needs `h(1) + 1`.

use statrs::function::gamma::ln_gamma;

/// The confidence LoadGen asks for (`results.cc`, `EarlyStopping`: `confidence = 0.99`).
pub const CONFIDENCE: f64 = 0.99;

fn lbeta(x: i64, y: i64) -> f64 {
    ln_gamma(x as f64) + ln_gamma(y as f64) - ln_gamma((x + y) as f64)
}

/// `hypergeometric_2F1_A1`: the series of 2F1(1, b; c; x), summed until a term is below 2^-33.
fn hypergeometric_2f1_a1(b: i64, c: i64, x: f64) -> f64 {
    let tolerance = 1.0 / (1u64 << 33) as f64;
    let (mut term, mut result) = (1.0f64, 1.0f64);
    let mut i = 0i64;
    while term.abs() > tolerance {
        term *= (b + i) as f64 * x / (c + i) as f64;
        result += term;
        i += 1;
    }
    result
}

fn beta_regularized(x: f64, a: i64, b: i64) -> f64 {
    let lead = (a as f64 * x.ln() + (b - 1) as f64 * (1.0 - x).ln() - lbeta(a, b)).exp();
    lead / a as f64 * hypergeometric_2f1_a1(1 - b, 1 + a, x / (x - 1.0))
}

/// The odds of `t` or fewer over-bound queries in `h + t`.
fn odds(h: i64, t: i64, p: f64) -> f64 {
    beta_regularized(p, h, 1 + t)
}

/// The least `h` in `[min_h, max_h)` with `odds(h, t, p) < 1 - c` (LoadGen's binary search).
fn search(mut min_h: i64, max_h: i64, t: i64, p: f64) -> i64 {
    let mut count = max_h - min_h;
    while count > 0 {
        let step = count / 2;
        let h = min_h + step;
        if odds(h, t, p) < 1.0 - CONFIDENCE {
            count = step;
        } else {
            min_h = h + 1;
            count -= step + 1;
        }
    }
    min_h
}

/// `h(t)` as a fresh `MinPassingQueriesFinder` gives it (each `EarlyStopping` call makes a new
/// one, so its first search starts from the bounds of an empty cache).
pub fn min_passing(t: i64, p: f64) -> i64 {
    let y1 = ((1.0 - CONFIDENCE).ln() / p.ln()).ceil() as i64;
    if t == 0 {
        return search(y1, y1 + 1, 0, p);
    }
    let min_slope = p / (1.0 - p);
    let min_h = (t as f64 * min_slope + y1 as f64) as i64;
    let max_h = t * y1 + y1 + 1;
    search(min_h, max_h, t, p)
}

/// Whether a Server run of `n` queries, `t` of them over the latency bound, meets early
/// stopping at percentile `p`; with the queries it lacks when not.
pub fn server(n: i64, t: i64, p: f64) -> (bool, i64) {
    let need = min_passing(t, p) + t;
    (n >= need, (need - n).max(0))
}

/// The least query count with which a SingleStream or MultiStream run meets early stopping at
/// percentile `p` (`h(1) + 1`).
pub fn streams_minimum(p: f64) -> i64 {
    min_passing(1, p) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_loadgen_prints_are_recomputed() {
        // 12 queries, none over the bound, p99: LoadGen 6.0.17 printed "Would need to run at
        // least 447 more queries" (fixtures/imports/loadgen/clean).
        assert_eq!(server(12, 0, 0.99), (false, 447));
        assert_eq!(min_passing(0, 0.5), 7);
        // A p90 SingleStream run needs 63 + 1 queries (the MLPerf rules' 64 for 90 %).
        assert_eq!(streams_minimum(0.9), 64);
        assert_eq!(streams_minimum(0.5), 11);
        assert!(server(187_152, 774, 0.99).0);
        assert!(!server(1000, 20, 0.99).0);
    }
}
