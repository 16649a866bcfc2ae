//! Moderated (empirical-Bayes) variances: every figure's sample variance shrunk toward a prior
//! fitted to all the variances of the report, with the prior's degrees of freedom added to the
//! figure's own. Smyth, "Linear models and empirical Bayes methods for assessing differential
//! expression in microarray experiments", Stat. Appl. Genet. Mol. Biol. 3(1), 2004: the
//! posterior variance is eq. 2 (s~² = (d0 s0² + d s²) / (d0 + d)), the prior is fitted by the
//! moments of log s² (sec. 6, eqs. 6-8), as limma's `fitFDist` and `trigammaInverse` do.

use statrs::function::gamma::digamma;

/// The prior a family of sample variances is shrunk toward.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moderated {
    /// s0²: the prior variance.
    pub prior_var: f64,
    /// d0: its degrees of freedom (0: no shrinkage), at most the pooled degrees of freedom of the
    /// variances it was fitted to.
    pub prior_df: f64,
}

impl Moderated {
    /// No prior: each variance stands alone.
    pub const NONE: Moderated = Moderated {
        prior_var: 0.0,
        prior_df: 0.0,
    };

    /// The prior fitted to sample variances `vars` with degrees of freedom `dfs` (Smyth 2004,
    /// sec. 6). Pairs with a zero variance or no degree of freedom are left out; fewer than three
    /// left give [`Moderated::NONE`].
    pub fn fit(vars: &[f64], dfs: &[f64]) -> Moderated {
        let used: Vec<(f64, f64)> = vars
            .iter()
            .zip(dfs)
            .filter(|(v, d)| **v > 0.0 && v.is_finite() && **d > 0.0)
            .map(|(v, d)| (*v, *d))
            .collect();
        let g = used.len() as f64;
        if used.len() < 3 {
            return Moderated::NONE;
        }
        // e_g = log s_g² - digamma(d_g/2) + log(d_g/2): unbiased for log s0² (eq. 6).
        let e: Vec<f64> = used
            .iter()
            .map(|(v, d)| v.ln() - digamma(d / 2.0) + (d / 2.0).ln())
            .collect();
        let e_mean = e.iter().sum::<f64>() / g;
        let spread = e.iter().map(|x| (x - e_mean).powi(2)).sum::<f64>() / (g - 1.0);
        let sampling = used.iter().map(|(_, d)| trigamma(d / 2.0)).sum::<f64>() / g;
        let excess = spread - sampling; // trigamma(d0/2) (eq. 7)
                                        // The prior is itself estimated from the pooled degrees of freedom: it is never given
                                        // more (limma would give infinity here, and the p of a 17-row family's smallest row
                                        // would then come from the normal instead of t on that many df: too small by a third).
        let pooled_df: f64 = used.iter().map(|(_, d)| d).sum();
        if excess <= 0.0 {
            // No spread beyond sampling: one common variance, best estimated by the pooled
            // sample variance Σ d s² / Σ d (unbiased; exp(mean e) would be low by Jensen).
            let pooled_var = used.iter().map(|(v, d)| v * d).sum::<f64>() / pooled_df;
            return Moderated {
                prior_var: pooled_var,
                prior_df: pooled_df,
            };
        }
        let d0 = 2.0 * trigamma_inverse(excess);
        let prior_var = (e_mean + digamma(d0 / 2.0) - (d0 / 2.0).ln()).exp(); // eq. 8
        Moderated {
            prior_var,
            prior_df: d0.min(pooled_df),
        }
    }

    /// The moderated variance of a sample variance `var` on `df` degrees of freedom, and its
    /// degrees of freedom d0 + d (Smyth 2004, eq. 2 and sec. 4).
    pub fn posterior(&self, var: f64, df: f64) -> (f64, f64) {
        if self.prior_df.is_infinite() {
            return (self.prior_var, f64::INFINITY);
        }
        let total = self.prior_df + df;
        if total <= 0.0 {
            return (var, 0.0);
        }
        ((self.prior_df * self.prior_var + df * var) / total, total)
    }
}

/// The trigamma function psi'(x), x > 0: the recurrence psi'(x) = psi'(x + 1) + 1/x² up to
/// x >= 10, then the asymptotic series in Bernoulli numbers (Abramowitz and Stegun 6.4.12).
pub fn trigamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc += 1.0 / (x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc + 1.0 / x
        + x2 / 2.0
        + x2 / x * (1.0 / 6.0 - x2 * (1.0 / 30.0 - x2 * (1.0 / 42.0 - x2 / 30.0)))
}

/// The tetragamma function psi''(x), x > 0: the derivative of [`trigamma`]'s recurrence and
/// series (Abramowitz and Stegun 6.4.11, 6.4.13).
pub fn tetragamma(mut x: f64) -> f64 {
    let mut acc = 0.0;
    while x < 10.0 {
        acc -= 2.0 / (x * x * x);
        x += 1.0;
    }
    let x2 = 1.0 / (x * x);
    acc - x2 - x2 / x - x2 * x2 * (0.5 - x2 * (1.0 / 6.0 - x2 * (1.0 / 6.0 - x2 * 0.3)))
}

/// The y with trigamma(y) = x, by Newton's method on 1/trigamma as in limma's
/// `trigammaInverse` (Smyth 2004, sec. 6).
pub fn trigamma_inverse(x: f64) -> f64 {
    if x > 1e7 {
        return 1.0 / x.sqrt();
    }
    if x < 1e-6 {
        return 1.0 / x;
    }
    let mut y = 0.5 + 1.0 / x;
    for _ in 0..50 {
        let tri = trigamma(y);
        let step = tri * (1.0 - tri / x) / tetragamma(y);
        y += step;
        if -step / y < 1e-8 {
            break;
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::rng::SplitMix64;

    #[test]
    fn polygammas_match_known_values() {
        // psi'(1) = pi²/6, psi''(1) = -2 zeta(3).
        assert!((trigamma(1.0) - std::f64::consts::PI.powi(2) / 6.0).abs() < 1e-10);
        assert!((tetragamma(1.0) + 2.0 * 1.202_056_903_159_594).abs() < 1e-9);
        assert!((trigamma(trigamma_inverse(0.3)) - 0.3).abs() < 1e-9);
    }

    /// Sample variances of `df` degrees of freedom drawn around a common variance.
    fn chi2_variances(rng: &mut SplitMix64, sigma2: f64, df: usize, count: usize) -> Vec<f64> {
        (0..count)
            .map(|_| {
                let ss: f64 = (0..df).map(|_| rng.normal().powi(2)).sum();
                sigma2 * ss / df as f64
            })
            .collect()
    }

    #[test]
    fn common_variance_gives_a_large_prior_df_and_the_right_prior() {
        let mut rng = SplitMix64::new(11);
        let vars = chi2_variances(&mut rng, 0.0064, 3, 1000);
        let fit = Moderated::fit(&vars, &vec![3.0; 1000]);
        assert!(fit.prior_df > 10.0, "d0 {}", fit.prior_df);
        assert!(
            (fit.prior_var / 0.0064 - 1.0).abs() < 0.1,
            "s0² {}",
            fit.prior_var
        );
    }

    #[test]
    fn heterogeneous_variances_give_a_small_prior_df() {
        let mut rng = SplitMix64::new(12);
        let mut vars = chi2_variances(&mut rng, 0.0009, 3, 100);
        vars.extend(chi2_variances(&mut rng, 0.0225, 3, 100));
        let fit = Moderated::fit(&vars, &vec![3.0; 200]);
        assert!(fit.prior_df < 5.0, "d0 {}", fit.prior_df);
    }

    #[test]
    fn posterior_lies_between_and_adds_df() {
        let prior = Moderated {
            prior_var: 0.01,
            prior_df: 4.0,
        };
        let (v, d) = prior.posterior(0.03, 2.0);
        assert!((v - (0.04 + 0.06) / 6.0).abs() < 1e-12);
        assert_eq!(d, 6.0);
        assert_eq!(Moderated::fit(&[0.1, 0.2], &[2.0, 2.0]), Moderated::NONE);
    }
}
