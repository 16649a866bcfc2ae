//! Statistics the checks recompute with: medians, spreads, margins of proportions, Welch's t-test
//! and the pooled two-proportion z-test, and comparison of a recomputed value with a figure at the
//! rounding it was printed with.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Median of the values (mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Arithmetic mean; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation (n - 1 in the denominator); `None` for fewer than two values.
pub fn sd(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let var = values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    Some(var.sqrt())
}

/// Coefficient of variation in percent: sample standard deviation over the mean. `None` for fewer
/// than two values.
pub fn cv_pct(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    let s = sd(values)?;
    (m != 0.0).then(|| 100.0 * s / m)
}

/// The method of a margin of a proportion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarginMethod {
    /// `z sqrt(p (1 - p) / n)`.
    Normal,
    /// Half the width of the Wilson score interval.
    Wilson,
}

impl MarginMethod {
    /// Parses `normal` or `wilson`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "normal" => Some(MarginMethod::Normal),
            "wilson" => Some(MarginMethod::Wilson),
            _ => None,
        }
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            MarginMethod::Normal => "normal",
            MarginMethod::Wilson => "wilson",
        }
    }
}

/// The margin of `right` of `n` in percentage points; `None` when `n` is 0.
pub fn margin_pts(right: u64, n: u64, z: f64, method: MarginMethod) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let p = right as f64 / nf;
    let m = match method {
        MarginMethod::Normal => z * (p * (1.0 - p) / nf).sqrt(),
        MarginMethod::Wilson => {
            let z2 = z * z;
            z * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / (1.0 + z2 / nf)
        }
    };
    Some(100.0 * m)
}

/// Decimals of a figure as printed (`"28.0"` has 1, `"8"` has 0).
pub fn printed_decimals(s: &str) -> usize {
    s.split_once('.').map_or(0, |(_, f)| f.len())
}

/// One unit of the last place a number's text prints: `28.0` 0.1, `8` 1, and in the exponent
/// form a C or Python `%g` writes large and small numbers in, `1.13553e+06` 10 and `2.5E-3`
/// 0.0001 (six significant digits, not nine decimals).
pub fn printed_unit(s: &str) -> f64 {
    let s = s.trim();
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (s, 0),
    };
    let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    10f64.powi(exponent - decimals)
}

/// Whether `exact` rounds to the number `text` prints, at its last printed place
/// ([`printed_unit`]); false when `text` is no number.
pub fn agrees_printed(exact: f64, text: &str) -> bool {
    let Ok(shown) = text.trim().parse::<f64>() else {
        return false;
    };
    let half = 0.5 * printed_unit(text);
    (exact - shown).abs() <= half * (1.0 + 1e-9) + 1e-12 * exact.abs().max(1.0)
}

/// Decimals of a number as written in a raw file: its shortest round-trip form, at least one.
pub fn written_decimals(x: f64) -> usize {
    printed_decimals(&format!("{x}")).max(1)
}

/// Whether `exact` rounds to `shown` at `decimals` (half-way cases either way, with a little slack
/// for binary floating point).
pub fn agrees(exact: f64, shown: f64, decimals: usize) -> bool {
    let half = 0.5 * 10f64.powi(-(decimals as i32));
    (exact - shown).abs() <= half * (1.0 + 1e-9) + 1e-12 * exact.abs().max(1.0)
}

/// Formats `x` at `decimals`.
pub fn fmt(x: f64, decimals: usize) -> String {
    format!("{x:.decimals$}")
}

/// Two-sided p of Welch's t-test on the means; `None` when neither side has any spread.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a)?, mean(b)?);
    let var = |xs: &[f64], m: f64| {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() as f64 - 1.0)
    };
    let (sa, sb) = (var(a, ma) / na, var(b, mb) / nb);
    let se2 = sa + sb;
    let scale = ma.abs().max(mb.abs()).max(f64::MIN_POSITIVE);
    if !se2.is_finite() || se2.sqrt() <= 1e-12 * scale {
        return None;
    }
    let t = ((mb - ma) / se2.sqrt()).abs();
    let df = se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let tail = match StudentsT::new(0.0, 1.0, df) {
        Ok(d) if df.is_finite() => d.sf(t),
        _ => Normal::standard().sf(t),
    };
    Some((2.0 * tail).clamp(0.0, 1.0))
}

/// Two-sided p of the pooled two-proportion z-test.
pub fn two_proportion_p(r1: u64, n1: u64, r2: u64, n2: u64) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let (p1, p2) = (r1 as f64 / n1f, r2 as f64 / n2f);
    let pooled = (r1 + r2) as f64 / (n1f + n2f);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1f + 1.0 / n2f)).sqrt();
    if se <= 0.0 || !se.is_finite() {
        return 1.0;
    }
    let z = ((p2 - p1) / se).abs();
    (2.0 * Normal::standard().sf(z)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn margins_of_the_seed_page() {
        // MMLU-Pro 236/400 is 59.0 % +- 4.8 either way.
        let n = margin_pts(236, 400, 1.96, MarginMethod::Normal).unwrap();
        assert!(agrees(n, 4.8, 1), "{n}");
        // IFEval 128/200: the normal approximation gives 6.65 (prints 6.7); Wilson gives 6.60.
        let n = margin_pts(128, 200, 1.96, MarginMethod::Normal).unwrap();
        let w = margin_pts(128, 200, 1.96, MarginMethod::Wilson).unwrap();
        assert!(!agrees(n, 6.6, 1), "{n}");
        assert!(agrees(w, 6.6, 1), "{w}");
        // A test with nothing right still has a Wilson margin: the 0.0 % +- 4.4 of 40 refusals.
        let w0 = margin_pts(0, 40, 1.96, MarginMethod::Wilson).unwrap();
        assert!(agrees(w0, 4.4, 1), "{w0}");
    }

    #[test]
    fn the_exponent_form_rounds_at_its_last_significant_digit() {
        assert_eq!(printed_unit("28.0"), 0.1);
        assert_eq!(printed_unit("8"), 1.0);
        assert_eq!(printed_unit("1.13553e+06"), 10.0);
        assert!((printed_unit("2.5E-3") - 1e-4).abs() < 1e-18);
        // Published: H3C's v2.1 dlrm Offline summary prints 1.13553e+06 samples per second.
        assert!(agrees_printed(1_135_534.2, "1.13553e+06"));
        assert!(!agrees_printed(1_135_600.0, "1.13553e+06"));
        assert!(agrees_printed(28.04, "28.0") && !agrees_printed(28.06, "28.0"));
        assert!(!agrees_printed(1.0, "n/a"));
    }

    #[test]
    fn rounding_is_at_the_printed_decimals() {
        assert_eq!(printed_decimals("28.0"), 1);
        assert_eq!(printed_decimals("8"), 0);
        assert_eq!(written_decimals(44.95), 2);
        assert_eq!(written_decimals(59.0), 1);
        assert!(agrees(40.575, 40.58, 2));
        assert!(agrees(28.04, 28.0, 1));
        assert!(!agrees(28.06, 28.0, 1));
    }

    #[test]
    fn cv_of_two_runs() {
        let cv = cv_pct(&[28.24, 27.96]).unwrap();
        assert!(agrees(cv, 0.7, 1), "{cv}");
        assert_eq!(cv_pct(&[1.0]), None);
    }
}
