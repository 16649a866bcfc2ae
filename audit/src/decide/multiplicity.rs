//! Multiplicity control over the rows of one report (one family): Holm's step-down adjustment
//! for the family-wise error rate (Holm, "A simple sequentially rejective multiple test
//! procedure", Scand. J. Statist. 6, 1979) and the Benjamini–Hochberg step-up adjustment for the
//! false discovery rate (Benjamini and Hochberg, J. R. Statist. Soc. B 57, 1995, sec. 3; adjusted
//! p-values as in Wright, "Adjusted p-values for simultaneous inference", Biometrics 48, 1992).

use serde::{Deserialize, Serialize};

/// How the "drifted" claims of one report are controlled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Multiplicity {
    /// Holm: the chance that any drifted row of the report is false stays below alpha (valid
    /// under any dependence between rows, such as a session factor they share).
    #[default]
    Holm,
    /// Benjamini–Hochberg: the expected share of false rows among the drifted stays below
    /// alpha (valid for independent or positively dependent rows).
    BenjaminiHochberg,
}

impl Multiplicity {
    /// The name a report prints.
    pub fn name(self) -> &'static str {
        match self {
            Multiplicity::Holm => "Holm (family-wise error)",
            Multiplicity::BenjaminiHochberg => "Benjamini-Hochberg (false discovery rate)",
        }
    }

    /// The adjusted p-values, in the order given.
    pub fn adjust(self, ps: &[f64]) -> Vec<f64> {
        match self {
            Multiplicity::Holm => holm(ps),
            Multiplicity::BenjaminiHochberg => benjamini_hochberg(ps),
        }
    }
}

/// Indices of `ps` from the smallest p to the largest.
fn ascending(ps: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    order
}

/// Holm's adjusted p: max over j <= i of (m - j) p_(j), capped at 1 (Wright 1992, eq. 6).
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in ascending(ps).iter().enumerate() {
        running = running.max(((m - rank) as f64 * ps[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Benjamini–Hochberg adjusted p: min over j >= i of m p_(j) / j, capped at 1.
pub fn benjamini_hochberg(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut adjusted = vec![0.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in ascending(ps).iter().enumerate().rev() {
        running = running.min(m as f64 * ps[i] / (rank + 1) as f64);
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn holm_matches_r_p_adjust() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
        let got = holm(&[0.01, 0.04, 0.03, 0.005]);
        assert!(close(&got, &[0.03, 0.06, 0.06, 0.02]), "{got:?}");
    }

    #[test]
    fn bh_matches_r_p_adjust() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") = 0.02 0.04 0.04 0.02
        let got = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]);
        assert!(close(&got, &[0.02, 0.04, 0.04, 0.02]), "{got:?}");
    }

    #[test]
    fn adjusted_never_below_raw_and_capped() {
        let ps = [0.9, 0.5, 0.2];
        for rule in [Multiplicity::Holm, Multiplicity::BenjaminiHochberg] {
            let adj = rule.adjust(&ps);
            assert!(adj.iter().zip(&ps).all(|(a, p)| a >= p && *a <= 1.0));
        }
    }
}
