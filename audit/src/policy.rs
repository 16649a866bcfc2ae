//! A gate's policy: what a CI job decides beyond the catalogue. Per check id a severity or
//! `ignore` with a reason the report repeats; the fail level; the decision rule of replay, audit
//! and diff ([`crate::decide::DecisionRule`]); which setup subjects fail a diff. The file is TOML, read by the CLI (`--policy FILE`);
//! this module holds the parsed policy and applies it to findings.
//!
//! ```toml
//! fail_on = "warning"
//!
//! [checks."speed.token-source"]
//! severity = "error"
//! reason = "our pages count reply tokens from usage only"
//!
//! [checks."claims.unbacked"]
//! severity = "ignore"
//! reason = "the page's footnote figures are not measurements"
//!
//! [decide]
//! setting = "dedicated"
//! multiplicity = "benjamini-hochberg"
//! decode = { band = 0.05, session_sd = 0.015 }
//! quality = { band = 2.0 }
//!
//! [diff]
//! setup_fails_on = ["engine", "checkpoint", "command", "server"]
//!
//! # Where the card's boxes are reached (replay, rehash, audit); a `--box` wins.
//! [boxes]
//! atom = "auditor@spark-a"
//! pgx = "auditor@spark-b:2222"
//!
//! [ssh]
//! config = "ssh_config"
//! options = ["StrictHostKeyChecking=yes", "UserKnownHostsFile=/ci/known_hosts"]
//! ```

use crate::diff::Subject;
use crate::report::{Finding, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a policy does to one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Report at error.
    Error,
    /// Report at warning.
    Warning,
    /// Report at info.
    Info,
    /// Leave out of the findings (the report lists how many, with the reason).
    Ignore,
}

/// The fail level a policy sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailLevel {
    /// Fail on errors.
    Error,
    /// Fail on warnings and errors.
    Warning,
    /// Fail on any finding.
    Info,
    /// Never fail on findings.
    Never,
}

impl FailLevel {
    /// The lowest severity that fails, `None` for never.
    pub fn severity(self) -> Option<Severity> {
        match self {
            FailLevel::Error => Some(Severity::Error),
            FailLevel::Warning => Some(Severity::Warning),
            FailLevel::Info => Some(Severity::Info),
            FailLevel::Never => None,
        }
    }
}

/// One check's rule.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRule {
    /// The severity to report at, or `ignore`.
    pub severity: Action,
    /// Why; required, and repeated in the report.
    pub reason: String,
}

/// What fails a diff.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DiffRules {
    /// Setup subjects whose differences are errors.
    pub setup_fails_on: Option<Vec<Subject>>,
}

/// The ssh client's options for every box.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SshRules {
    /// An ssh_config file (`ssh -F`), relative to the policy file's folder unless absolute.
    pub config: Option<String>,
    /// `KEY=VALUE` options (`ssh -o`), each KEY on the CLI's allowed list.
    #[serde(default)]
    pub options: Vec<String>,
}

/// A parsed policy file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Where it was read from (set by the reader).
    #[serde(skip)]
    pub file: String,
    /// The fail level (overrides `--fail-on`).
    pub fail_on: Option<FailLevel>,
    /// Rules per check id.
    #[serde(default)]
    pub checks: BTreeMap<String, CheckRule>,
    /// The decision rule of replay, audit and diff: bands, session spread, multiplicity.
    #[serde(default)]
    pub decide: crate::decide::DecisionRule,
    /// What fails a diff.
    #[serde(default)]
    pub diff: DiffRules,
    /// The card's box names mapped to `[USER@]HOST[:PORT]` (checked by the CLI).
    #[serde(default)]
    pub boxes: BTreeMap<String, String>,
    /// The ssh client's options for those boxes.
    #[serde(default)]
    pub ssh: SshRules,
}

pub use crate::report::{Applied, Ignored};

impl Policy {
    /// Check ids the policy names that the catalogue does not have.
    pub fn unknown_checks(&self) -> Vec<String> {
        self.checks
            .keys()
            .filter(|id| crate::table::find(id).is_none())
            .cloned()
            .collect()
    }

    /// Re-weighs findings: a check's rule sets its severity, or leaves it out.
    pub fn apply(&self, findings: Vec<Finding>) -> (Vec<Finding>, Vec<Ignored>) {
        let mut ignored: BTreeMap<String, usize> = BTreeMap::new();
        let mut kept = Vec::with_capacity(findings.len());
        for mut f in findings {
            match self.checks.get(&f.check).map(|r| r.severity) {
                Some(Action::Ignore) => *ignored.entry(f.check.clone()).or_default() += 1,
                Some(Action::Error) => {
                    f.severity = Severity::Error;
                    kept.push(f);
                }
                Some(Action::Warning) => {
                    f.severity = Severity::Warning;
                    kept.push(f);
                }
                Some(Action::Info) => {
                    f.severity = Severity::Info;
                    kept.push(f);
                }
                None => kept.push(f),
            }
        }
        let ignored = ignored
            .into_iter()
            .map(|(check, n)| Ignored {
                reason: self.checks[&check].reason.clone(),
                check,
                findings: n,
            })
            .collect();
        (kept, ignored)
    }
}

/// A policy over a report.
impl crate::report::Report {
    /// Applies a policy: per check a severity or `ignore` (the finding leaves the findings and its
    /// reason is listed in `policy`), and the fail level; then counts and the verdict again
    /// (`Report::redecide`). An incomplete report stays incomplete, but for a replay that settled
    /// nothing, which fails when a finding now reaches the fail level and passes never.
    pub fn apply_policy(&mut self, p: &Policy) {
        let (kept, ignored) = p.apply(std::mem::take(&mut self.findings));
        self.findings = kept;
        if let Some(f) = p.fail_on {
            self.fail_on = f.severity();
        }
        self.policy = Some(Applied {
            file: p.file.clone(),
            ignored,
        });
        self.redecide();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_raises_lowers_or_ignores_with_its_reason() {
        let p = Policy {
            checks: BTreeMap::from([
                (
                    "a.x".to_string(),
                    CheckRule {
                        severity: Action::Error,
                        reason: "r1".into(),
                    },
                ),
                (
                    "a.y".to_string(),
                    CheckRule {
                        severity: Action::Ignore,
                        reason: "not ours".into(),
                    },
                ),
            ]),
            ..Policy::default()
        };
        let fs = vec![
            Finding::new("a.x", Severity::Warning, "m"),
            Finding::new("a.y", Severity::Error, "m"),
            Finding::new("a.y", Severity::Error, "m"),
            Finding::new("a.z", Severity::Info, "m"),
        ];
        let (kept, ignored) = p.apply(fs);
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].severity, Severity::Error);
        assert_eq!(kept[1].check, "a.z");
        assert_eq!(ignored.len(), 1);
        assert_eq!(
            (ignored[0].findings, ignored[0].reason.as_str()),
            (2, "not ours")
        );
    }
}
