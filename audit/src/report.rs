//! The one report model every command produces and every renderer reads.

use crate::replay::Comparison;
use serde::{Deserialize, Serialize};

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Context worth knowing; never fails a run by default.
    Info,
    /// Something a reader should question.
    Warning,
    /// A figure that is wrong or a step that is invalid.
    Error,
}

impl Severity {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The check's stable id (`quality.refused-counted-as-wrong`).
    pub check: String,
    /// Severity of this finding (a check may report below its catalogue severity).
    pub severity: Severity,
    /// The bundle file the finding is about, relative to the bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// JSON pointer (or `line N` for JSON Lines) inside that file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// One sentence a person can act on.
    pub message: String,
    /// Machine-readable details (counts, expected and found values).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}

impl Finding {
    /// A finding with no file, pointer or data.
    pub fn new(check: &str, severity: Severity, message: impl Into<String>) -> Self {
        Finding {
            check: check.to_string(),
            severity,
            file: None,
            pointer: None,
            message: message.into(),
            data: serde_json::Value::Null,
        }
    }

    /// Sets the file.
    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Sets the pointer.
    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    /// Sets the details.
    pub fn data(mut self, data: serde_json::Value) -> Self {
        self.data = data;
        self
    }
}

/// The overall result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// No finding reaches the failure threshold.
    Pass,
    /// At least one finding reaches the failure threshold.
    Fail,
    /// Nothing could be checked, or the tool could not finish.
    Incomplete,
}

/// A value recomputed from raw records, beside what the file and the page show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recomputed {
    /// Key (`decode`, `quality.mmlu-pro.pct`).
    pub key: String,
    /// The recomputed value, or `None` when there is no result.
    pub value: Option<f64>,
    /// What the raw file shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<f64>,
    /// What the page shows, as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
}

/// The report of one run of rigaudit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// `rigaudit/report/1`.
    pub format: String,
    /// The command that produced it (`verify`, `rehash`, ...).
    pub command: String,
    /// The bundle's id, or its path when the manifest could not be read.
    pub bundle: String,
    /// Overall verdict.
    pub verdict: Verdict,
    /// Threshold that decides the verdict.
    pub fail_on: Option<Severity>,
    /// Count of findings by severity.
    pub counts: Counts,
    /// The checks that ran (ids).
    pub checks_run: Vec<String>,
    /// The values recomputed from raw records.
    pub recomputed: Vec<Recomputed>,
    /// Every finding, in the order found.
    pub findings: Vec<Finding>,
    /// A recorded bundle's figures beside its replay's (`replay` only; absent when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
    /// The raw files whose sha256 matched the manifest in full (verify, audit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The policy applied, if any: its file and the findings it ignored, with its reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::policy::Applied>,
    /// The version of the rules (the catalogue) the report was judged by.
    #[serde(default)]
    pub rules_version: String,
    /// The setup differences of two bundles (`diff` only; absent when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_changes: Vec<crate::diff::SetupChange>,
    /// The comparison rows counted by verdict (`replay` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_summary: Option<ReplaySummary>,
}

/// A raw file whose digest was verified: the subject of an attestation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Path inside the bundle.
    pub path: String,
    /// Its sha256, hex.
    pub sha256: String,
}

/// The comparison rows of a replay counted by verdict, inconclusive ones also by reason, so a
/// replay too noisy to judge shows as such and not among the reproduced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// Rows reproduced.
    pub reproduced: usize,
    /// Rows drifted (informational ones included).
    pub drifted: usize,
    /// Rows inconclusive, for any reason.
    pub inconclusive: usize,
    /// Rows not comparable.
    pub not_comparable: usize,
    /// Rows for information only (other hardware).
    pub informational: usize,
    /// Inconclusive: the runs' spread is above the floor's ceiling.
    pub too_noisy: usize,
    /// Inconclusive: the load guard saw foreign load.
    pub foreign_load: usize,
    /// Inconclusive: too few runs on a side.
    pub too_few_runs: usize,
    /// Inconclusive: a drift the confirming session did not repeat.
    pub sessions_disagree: usize,
    /// Inconclusive: only a headline figure on a side.
    pub headline_only: usize,
}

impl ReplaySummary {
    /// Counts the rows.
    pub fn of(rows: &[Comparison]) -> Self {
        use crate::replay::{Inconclusive as I, ReplayVerdict as V};
        let mut s = ReplaySummary::default();
        for r in rows {
            match r.verdict {
                V::Reproduced => s.reproduced += 1,
                V::Drifted => s.drifted += 1,
                V::Inconclusive => s.inconclusive += 1,
                V::NotComparable => s.not_comparable += 1,
            }
            s.informational += usize::from(r.informational);
            match r.inconclusive {
                Some(I::TooNoisy) => s.too_noisy += 1,
                Some(I::ForeignLoad) => s.foreign_load += 1,
                Some(I::TooFewRuns) => s.too_few_runs += 1,
                Some(I::SessionsDisagree) => s.sessions_disagree += 1,
                Some(I::HeadlineOnly) => s.headline_only += 1,
                None => {}
            }
        }
        s
    }

    /// One line for people: `12 reproduced, 1 drifted, 3 inconclusive (2 too noisy, 1 too few
    /// runs), 2 not comparable`.
    pub fn line(&self) -> String {
        let why: Vec<String> = [
            (self.too_noisy, "too noisy"),
            (self.foreign_load, "foreign load"),
            (self.too_few_runs, "too few runs"),
            (self.sessions_disagree, "sessions disagree"),
            (self.headline_only, "headline only"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect();
        let mut line = format!(
            "{} reproduced, {} drifted, {} inconclusive",
            self.reproduced, self.drifted, self.inconclusive
        );
        if !why.is_empty() {
            line.push_str(&format!(" ({})", why.join(", ")));
        }
        line.push_str(&format!(", {} not comparable", self.not_comparable));
        if self.informational > 0 {
            line.push_str(&format!(
                "; {} for information only (other hardware)",
                self.informational
            ));
        }
        line
    }
}

/// Counts of findings by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Errors.
    pub error: usize,
    /// Warnings.
    pub warning: usize,
    /// Infos.
    pub info: usize,
}

impl Report {
    /// Builds a report and decides its verdict. `fail_on` of `None` never fails; a report whose
    /// `checks_run` is empty is incomplete whatever it found.
    pub fn new(
        command: &str,
        bundle: &str,
        fail_on: Option<Severity>,
        checks_run: Vec<String>,
        recomputed: Vec<Recomputed>,
        findings: Vec<Finding>,
    ) -> Self {
        let mut counts = Counts::default();
        for f in &findings {
            match f.severity {
                Severity::Error => counts.error += 1,
                Severity::Warning => counts.warning += 1,
                Severity::Info => counts.info += 1,
            }
        }
        let failed = fail_on.is_some_and(|t| findings.iter().any(|f| f.severity >= t));
        let verdict = if checks_run.is_empty() {
            Verdict::Incomplete
        } else if failed {
            Verdict::Fail
        } else {
            Verdict::Pass
        };
        Report {
            format: "rigaudit/report/1".into(),
            command: command.into(),
            bundle: bundle.into(),
            verdict,
            fail_on,
            counts,
            checks_run,
            recomputed,
            findings,
            comparisons: Vec::new(),
            rules_version: crate::catalogue::version(),
            policy: None,
            artifacts: Vec::new(),
            setup_changes: Vec::new(),
            replay_summary: None,
        }
    }

    /// Sets the rows comparing a recorded bundle with its replay.
    pub fn with_comparisons(mut self, rows: Vec<Comparison>) -> Self {
        self.replay_summary = (!rows.is_empty()).then(|| ReplaySummary::of(&rows));
        self.comparisons = rows;
        self
    }

    /// Applies a policy: per check a severity or `ignore` (the finding leaves the findings and its
    /// reason is listed in `policy`), and the fail level; then counts and the verdict again. An
    /// incomplete report stays incomplete.
    pub fn apply_policy(&mut self, p: &crate::policy::Policy) {
        let (kept, ignored) = p.apply(std::mem::take(&mut self.findings));
        self.findings = kept;
        if let Some(f) = p.fail_on {
            self.fail_on = f.severity();
        }
        self.policy = Some(crate::policy::Applied {
            file: p.file.clone(),
            ignored,
        });
        let mut counts = Counts::default();
        for f in &self.findings {
            match f.severity {
                Severity::Error => counts.error += 1,
                Severity::Warning => counts.warning += 1,
                Severity::Info => counts.info += 1,
            }
        }
        self.counts = counts;
        if self.verdict != Verdict::Incomplete {
            let failed = self
                .fail_on
                .is_some_and(|t| self.findings.iter().any(|f| f.severity >= t));
            self.verdict = if failed { Verdict::Fail } else { Verdict::Pass };
        }
    }

    /// The process exit code the verdict maps to: 0 pass, 1 fail, 2 incomplete.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Incomplete => 2,
        }
    }
}
