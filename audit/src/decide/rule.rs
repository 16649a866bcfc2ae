//! The decision rule as a policy file sets it and a report states it: the setting whose
//! defaults apply ([`Setting`]), per-kind overrides of band and session spread, and the
//! multiplicity control. The CLI reads the policy's TOML into JSON, so this deserializes from
//! either:
//!
//! ```toml
//! [decide]
//! setting = "dedicated"
//! multiplicity = "benjamini-hochberg"
//! decode = { band = 0.05, session_sd = 0.015 }
//! quality = { band = 2.0 }
//! ```

use super::tolerance::{FigureKind, Setting, Tolerance, Tolerances};
use super::Multiplicity;
use serde::{Deserialize, Serialize};

/// One kind's overrides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindOverride {
    /// The band's half-width (a fraction for speed, points for quality).
    pub band: Option<f64>,
    /// One session's spread, log scale.
    pub session_sd: Option<f64>,
}

/// The rule of one report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecisionRule {
    /// Whose defaults apply.
    pub setting: Setting,
    /// How the report's "drifted" claims are controlled.
    pub multiplicity: Multiplicity,
    /// Decode overrides.
    pub decode: KindOverride,
    /// Prefill overrides.
    pub prefill: KindOverride,
    /// TTFT overrides.
    pub ttft: KindOverride,
    /// Throughput overrides.
    pub throughput: KindOverride,
    /// Quality overrides.
    pub quality: KindOverride,
}

impl DecisionRule {
    /// The tolerances: the setting's defaults with the overrides applied.
    pub fn tolerances(&self) -> Tolerances {
        let d = Tolerances::defaults(self.setting);
        let with = |t: Tolerance, o: &KindOverride| Tolerance {
            band: o.band.unwrap_or(t.band),
            session_sd: o.session_sd.unwrap_or(t.session_sd),
        };
        Tolerances {
            decode: with(d.decode, &self.decode),
            prefill: with(d.prefill, &self.prefill),
            ttft: with(d.ttft, &self.ttft),
            throughput: with(d.throughput, &self.throughput),
            quality: with(d.quality, &self.quality),
        }
    }

    /// The tolerances with each speed kind's session spread raised to `measured` (one session's
    /// spread measured from two sessions, as replay's `SessionSpread::cv_pct` / 100) where that
    /// is larger than the declared one.
    pub fn tolerances_with_measured(&self, measured: f64) -> Tolerances {
        let mut t = self.tolerances();
        for k in [
            &mut t.decode,
            &mut t.prefill,
            &mut t.ttft,
            &mut t.throughput,
        ] {
            k.session_sd = k.session_sd.max(measured);
        }
        t
    }

    /// Why the rule cannot work, if so: a band that is not positive, a negative spread, or a
    /// speed band no interval can fit in (at most 1.645 √2 σs: never reproduced).
    pub fn problems(&self) -> Vec<String> {
        let t = self.tolerances();
        let mut out = Vec::new();
        for kind in [
            FigureKind::Decode,
            FigureKind::Prefill,
            FigureKind::Ttft,
            FigureKind::Throughput,
            FigureKind::Quality,
        ] {
            let k = t.of(kind);
            let valid = k.band > 0.0 && k.session_sd >= 0.0; // false for NaN too
            if !valid {
                out.push(format!(
                    "{}: the band must be positive and the session spread at least 0",
                    kind.name()
                ));
                continue;
            }
            let floor = 1.644_853_626_951_472_2 * std::f64::consts::SQRT_2 * k.session_sd;
            if kind != FigureKind::Quality && k.band_in_estimate_units(kind) <= floor {
                out.push(format!(
                    "{}: a ±{:.1} % band is within the ±{:.1} % that a {:.1} % session spread alone puts on every 90 % interval, so no figure could be reproduced",
                    kind.name(),
                    100.0 * k.band,
                    100.0 * floor.exp_m1(),
                    100.0 * k.session_sd
                ));
            }
        }
        out
    }

    /// The lines a report prints: the tolerances and the multiplicity rule, in replay's words
    /// (reproduced, drifted) or, for a diff (`diff`), in words of change between two runs
    /// (unchanged, changed).
    pub fn describe(&self, diff: bool) -> Vec<String> {
        let (same, moved) = if diff {
            ("unchanged", "changed")
        } else {
            ("reproduced", "drifted")
        };
        let mut lines = vec![format!(
            "decision rule: {same} when the 90 % interval of the change lies inside the band; {moved} when significant after {} at 5 % and beyond the band; else inconclusive",
            self.multiplicity.name()
        )];
        lines.extend(self.tolerances().describe());
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::assert_starts_with;

    #[test]
    fn a_policy_table_sets_setting_overrides_and_multiplicity() {
        let json = r#"{"setting": "dedicated", "multiplicity": "benjamini-hochberg",
                       "decode": {"band": 0.05, "session_sd": 0.015}, "quality": {"band": 2.0}}"#;
        let rule: DecisionRule = serde_json::from_str(json).unwrap();
        let t = rule.tolerances();
        assert_eq!(t.decode.band, 0.05);
        assert_eq!(t.ttft.band, 0.07);
        assert_eq!(t.quality.band, 2.0);
        assert!(rule.describe(false)[0].contains("Benjamini-Hochberg"));
        assert!(rule.describe(true)[0].starts_with("decision rule: unchanged when"));
        assert!(rule.problems().is_empty(), "{:?}", rule.problems());
        assert!(serde_json::from_str::<DecisionRule>(r#"{"alpha": 0.1}"#).is_err());
    }

    #[test]
    fn a_band_inside_the_session_floor_is_named() {
        let rule = DecisionRule {
            decode: KindOverride {
                band: Some(0.15),
                session_sd: None,
            },
            ..DecisionRule::default()
        };
        let problems = rule.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_starts_with(&problems[0], "decode: a ±15.0 % band");
        let measured = rule.tolerances_with_measured(0.09);
        assert_eq!(measured.prefill.session_sd, 0.09);
        assert_eq!(measured.quality.session_sd, 0.0);
    }
}
