//! Quality figures in points (B - A). Paired runs over the same questions: the exact McNemar
//! test, a binomial test on the discordant questions (McNemar, Psychometrika 12, 1947; exact
//! form as in Fagerland, Lydersen and Laake, BMC Med. Res. Methodol. 13:91, 2013, eq. 2), with
//! Newcombe's score interval of a paired difference (Newcombe, "Improved confidence intervals
//! for the difference between binomial proportions based on paired data", Stat. Med. 17, 1998,
//! method 10, with its adjustment of φ; as in Altman et al., Statistics with
//! Confidence, 2nd ed., 2000, ch. 6). Unpaired runs: Newcombe's hybrid score interval (Newcombe, "Interval estimation
//! for the difference between independent proportions", Stat. Med. 17, 1998, method 10) built
//! on Wilson's score intervals (Wilson, JASA 22, 1927), and the pooled z-test for p.

use super::tolerance::{FigureKind, Tolerance};
use super::Evidence;
use crate::stats::two_proportion_p;
use statrs::distribution::{Binomial, DiscreteCDF};

/// z for a two-sided 90 % interval.
const Z90: f64 = 1.644_853_626_951_472_2;

/// Two runs over the same questions, tallied by answer pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paired {
    /// Right on both sides.
    pub both_right: u64,
    /// Right on A only.
    pub only_a: u64,
    /// Right on B only.
    pub only_b: u64,
    /// Wrong on both.
    pub both_wrong: u64,
}

impl Paired {
    /// The tally of two runs' per-question results (true = right), question by question.
    pub fn tally(a: &[bool], b: &[bool]) -> Paired {
        let mut t = Paired {
            both_right: 0,
            only_a: 0,
            only_b: 0,
            both_wrong: 0,
        };
        for (x, y) in a.iter().zip(b) {
            match (x, y) {
                (true, true) => t.both_right += 1,
                (true, false) => t.only_a += 1,
                (false, true) => t.only_b += 1,
                (false, false) => t.both_wrong += 1,
            }
        }
        t
    }

    /// The tally of two runs' answers matched by question id (`(id, right)`); questions only
    /// one side answered are left out and counted (the second value).
    pub fn by_id<'a>(a: &[(&'a str, bool)], b: &[(&'a str, bool)]) -> (Paired, usize) {
        let on_b: std::collections::BTreeMap<&str, bool> = b.iter().copied().collect();
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for (id, right) in a {
            if let Some(other) = on_b.get(id) {
                xs.push(*right);
                ys.push(*other);
            }
        }
        let unmatched = a.len() + b.len() - 2 * xs.len();
        (Paired::tally(&xs, &ys), unmatched)
    }

    /// Questions in all.
    pub fn n(&self) -> u64 {
        self.both_right + self.only_a + self.only_b + self.both_wrong
    }
}

/// Exact McNemar p: two-sided binomial test of the discordant questions against a fair coin.
pub fn mcnemar_exact_p(only_a: u64, only_b: u64) -> f64 {
    let m = only_a + only_b;
    if m == 0 {
        return 1.0;
    }
    let coin = Binomial::new(0.5, m).expect("0.5 is a probability");
    (2.0 * coin.cdf(only_a.min(only_b))).min(1.0)
}

/// Wilson's score interval of `right` of `n` (as proportions); (0, 1) when `n` is 0.
pub fn wilson(right: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (p, n) = (right as f64 / n as f64, n as f64);
    let centre = p + z * z / (2.0 * n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    let denominator = 1.0 + z * z / n;
    ((centre - half) / denominator, (centre + half) / denominator)
}

/// Newcombe's hybrid score interval of pB - pA, unpaired (1998a, method 10).
pub fn newcombe_unpaired(ra: u64, na: u64, rb: u64, nb: u64, z: f64) -> (f64, f64) {
    let (pa, pb) = (ra as f64 / na as f64, rb as f64 / nb as f64);
    let (la, ua) = wilson(ra, na, z);
    let (lb, ub) = wilson(rb, nb, z);
    let d = pb - pa;
    let down = ((pb - lb).powi(2) + (ua - pa).powi(2)).sqrt();
    let up = ((ub - pb).powi(2) + (pa - la).powi(2)).sqrt();
    (d - down, d + up)
}

/// Newcombe's score interval of pB - pA for paired runs (1998b, method 10): Wilson limits of
/// each margin combined with the correlation φ of the 2x2 table.
pub fn newcombe_paired(t: &Paired, z: f64) -> (f64, f64) {
    let n = t.n();
    let (a, b, c, d) = (
        t.both_right as f64,
        t.only_a as f64,
        t.only_b as f64,
        t.both_wrong as f64,
    );
    let (ra, rb) = (t.both_right + t.only_a, t.both_right + t.only_b);
    let (pa, pb) = (ra as f64 / n as f64, rb as f64 / n as f64);
    let (la, ua) = wilson(ra, n, z);
    let (lb, ub) = wilson(rb, n, z);
    let margins = (a + b) * (c + d) * (a + c) * (b + d);
    // φ with Newcombe's adjustment: ad - bc above n/2 is reduced by n/2, between 0 and n/2 is 0.
    let cross = a * d - b * c;
    let half_n = n as f64 / 2.0;
    let adjusted = if cross > half_n {
        cross - half_n
    } else if cross >= 0.0 {
        0.0
    } else {
        cross
    };
    let phi = if margins > 0.0 {
        adjusted / margins.sqrt()
    } else {
        0.0
    };
    let down = ((pb - lb).powi(2) - 2.0 * phi * (pb - lb) * (ua - pa) + (ua - pa).powi(2)).sqrt();
    let up = ((ub - pb).powi(2) - 2.0 * phi * (ub - pb) * (pa - la) + (pa - la).powi(2)).sqrt();
    (pb - pa - down, pb - pa + up)
}

/// The evidence of two paired runs, in points.
pub fn paired_evidence(t: &Paired, tol: &Tolerance) -> Evidence {
    let n = t.n() as usize;
    if n == 0 {
        let band = tol.band_in_estimate_units(FigureKind::Quality);
        return Evidence::unbounded(FigureKind::Quality, f64::NAN, band, "no question answered");
    }
    let (lo, hi) = newcombe_paired(t, Z90);
    let d = (t.only_b as f64 - t.only_a as f64) / n as f64;
    Evidence {
        kind: FigureKind::Quality,
        estimate: 100.0 * d,
        lo90: 100.0 * lo,
        hi90: 100.0 * hi,
        p_zero: Some(mcnemar_exact_p(t.only_a, t.only_b)),
        band: tol.band_in_estimate_units(FigureKind::Quality),
        runs_needed: None,
        plan: None,
        runs_on_b: None,
        method: "paired: exact McNemar, Newcombe paired score interval",
        note: None,
        sizes: (n, n),
    }
}

/// The evidence of two unpaired runs (`ra` right of `na` on A, `rb` of `nb` on B), in points.
pub fn unpaired_evidence(ra: u64, na: u64, rb: u64, nb: u64, tol: &Tolerance) -> Evidence {
    let band = tol.band_in_estimate_units(FigureKind::Quality);
    if na == 0 || nb == 0 {
        let mut e =
            Evidence::unbounded(FigureKind::Quality, f64::NAN, band, "no question answered");
        e.sizes = (na as usize, nb as usize);
        return e;
    }
    let (lo, hi) = newcombe_unpaired(ra, na, rb, nb, Z90);
    let d = rb as f64 / nb as f64 - ra as f64 / na as f64;
    Evidence {
        kind: FigureKind::Quality,
        estimate: 100.0 * d,
        lo90: 100.0 * lo,
        hi90: 100.0 * hi,
        p_zero: Some(two_proportion_p(ra, na, rb, nb)),
        band,
        runs_needed: None,
        plan: None,
        runs_on_b: None,
        method: "unpaired: pooled z-test, Newcombe hybrid score interval",
        note: None,
        sizes: (na as usize, nb as usize),
    }
}

/// The half-width in points of the 90 % interval of the difference of two unpaired runs over
/// `n` questions that each got `right` right: Newcombe's hybrid score interval at no change, whose
/// two arms are then equal. `None` for no question.
pub fn unpaired_half_width(right: u64, n: u64) -> Option<f64> {
    (n > 0).then(|| -100.0 * newcombe_unpaired(right, n, right, n, Z90).0)
}

/// The half-width in points of the 90 % interval of a paired comparison over `n` questions of
/// which a share `flip_rate` is discordant (right on one run, wrong on the other), at no change:
/// 100 z √(f / n), the normal approximation of McNemar's (the difference of two paired
/// proportions has variance ((b + c) / n - ((b - c) / n)²) / n, f / n when b = c), and never
/// less than one question, 100 / n. `None` for no question.
pub fn paired_half_width(flip_rate: f64, n: u64) -> Option<f64> {
    (n > 0).then(|| {
        let n = n as f64;
        (100.0 * Z90 * (flip_rate / n).sqrt()).max(100.0 / n)
    })
}

/// The largest discordant share at which a paired comparison over `n` questions has a 90 %
/// half-width within `band` points: n (band / (100 z))², [`paired_half_width`] solved for f.
pub fn flip_rate_within(band: f64, n: u64) -> f64 {
    n as f64 * (band / (100.0 * Z90)).powi(2)
}

/// The questions a paired comparison needs for a 90 % half-width within `band` points at a
/// discordant share `flip_rate`: ⌈f (100 z / band)²⌉, at least 1.
pub fn questions_within(band: f64, flip_rate: f64) -> u64 {
    (flip_rate * (100.0 * Z90 / band).powi(2)).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_and_newcombe_unpaired_match_newcombe_1998a() {
        // Newcombe 1998a, table II example (a): 56/70 vs 48/80, 95 %: 0.0524 to 0.3339 for pA - pB.
        let (lo, hi) = newcombe_unpaired(48, 80, 56, 70, 1.959_963_984_540_054);
        assert!(
            (lo - 0.0524).abs() < 5e-4 && (hi - 0.3339).abs() < 5e-4,
            "{lo} {hi}"
        );
    }

    #[test]
    fn newcombe_paired_covers_about_90_percent() {
        // 200 questions: both right 50 %, A only 8 %, B only 6 %; true B - A = -2 points.
        let mut rng = crate::decide::rng::SplitMix64::new(5);
        let (trials, mut covered) = (2000, 0);
        for _ in 0..trials {
            let mut t = Paired {
                both_right: 0,
                only_a: 0,
                only_b: 0,
                both_wrong: 0,
            };
            for _ in 0..200 {
                match rng.uniform() {
                    u if u < 0.50 => t.both_right += 1,
                    u if u < 0.58 => t.only_a += 1,
                    u if u < 0.64 => t.only_b += 1,
                    _ => t.both_wrong += 1,
                }
            }
            let (lo, hi) = newcombe_paired(&t, Z90);
            covered += usize::from(lo < -0.02 && -0.02 < hi);
        }
        let coverage = covered as f64 / trials as f64;
        assert!((0.87..0.94).contains(&coverage), "coverage {coverage}");
    }

    #[test]
    fn answers_pair_by_question_id() {
        let a = [("q1", true), ("q2", false), ("q3", true), ("q9", true)];
        let b = [("q3", false), ("q1", true), ("q2", true), ("q7", false)];
        let (t, unmatched) = Paired::by_id(&a, &b);
        assert_eq!(
            (t.both_right, t.only_a, t.only_b, t.both_wrong),
            (1, 1, 1, 0)
        );
        assert_eq!(unmatched, 2);
    }

    #[test]
    fn exact_mcnemar_is_the_binomial_tail() {
        // 1 of 9 discordant: 2 (1 + 9) / 512 = 0.0390625.
        assert!((mcnemar_exact_p(1, 8) - 0.039_062_5).abs() < 1e-12);
        assert_eq!(mcnemar_exact_p(0, 0), 1.0);
        assert_eq!(mcnemar_exact_p(5, 5), 1.0);
    }

    #[test]
    fn pairing_narrows_the_interval() {
        // 400 questions, 236 right on each side, 20 discordant each way.
        let t = Paired {
            both_right: 216,
            only_a: 20,
            only_b: 20,
            both_wrong: 144,
        };
        let tol = Tolerance {
            band: 3.0,
            session_sd: 0.0,
        };
        let paired = paired_evidence(&t, &tol);
        let unpaired = unpaired_evidence(236, 400, 236, 400, &tol);
        assert!(paired.inside_band(), "{paired:?}");
        assert!(!unpaired.inside_band(), "{unpaired:?}");
        assert!(paired.hi90 - paired.lo90 < 0.5 * (unpaired.hi90 - unpaired.lo90));
    }
}
