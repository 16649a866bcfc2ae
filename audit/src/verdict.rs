//! The verdict types of a replay: one [`Comparison`] row per figure, what it concluded
//! ([`ReplayVerdict`]) and why an inconclusive row is inconclusive ([`Inconclusive`]).
//!
//! They live at the ground with the report model, which carries the rows; `replay/` makes them.

use serde::{Deserialize, Serialize};

/// Why a row is inconclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inconclusive {
    /// Fewer runs on a side than the test needs.
    TooFewRuns,
    /// Only a headline figure on a side, no per-run records.
    HeadlineOnly,
    /// The runs' own spread puts the floor above `Tolerance::max_floor`.
    TooNoisy,
    /// The load guard saw foreign load during a kept try of the step.
    ForeignLoad,
    /// A drift the confirming session did not repeat.
    SessionsDisagree,
}

/// What the comparison of one figure concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayVerdict {
    /// The replay agrees with the record (within chance or the floor).
    Reproduced,
    /// The replay differs beyond chance (and, for speed, beyond the floor).
    Drifted,
    /// Too little to test (too few runs, or a headline figure only).
    Inconclusive,
    /// The step is invalid or missing on a side.
    NotComparable,
}

impl ReplayVerdict {
    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            ReplayVerdict::Reproduced => "reproduced",
            ReplayVerdict::Drifted => "drifted",
            ReplayVerdict::Inconclusive => "inconclusive",
            ReplayVerdict::NotComparable => "not-comparable",
        }
    }
}

/// One figure of the recorded bundle beside its replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The figure's key (`decode`, `decode.code`, `prefill.512`, `quality.mmlu-pro.pct`).
    pub key: String,
    /// The recorded figure, when the recorded side has one.
    pub recorded: Option<f64>,
    /// The replayed figure, when the replayed side has one.
    pub replayed: Option<f64>,
    /// Samples on the recorded side (runs, rounds, or answered questions).
    pub n_recorded: usize,
    /// Samples on the replayed side.
    pub n_replayed: usize,
    /// 100 (replayed - recorded) / recorded, when both exist and recorded is not 0.
    pub change_pct: Option<f64>,
    /// The test's two-sided p-value, when a test ran.
    pub p_value: Option<f64>,
    /// The test: `welch`, `two-proportion-z` or `none`.
    pub test: String,
    /// What the comparison concluded.
    pub verdict: ReplayVerdict,
    /// `up` or `down`: which way the figure moved, when it moved.
    pub direction: Option<String>,
    /// One sentence a person reads on why.
    pub why: String,
    /// Whether the row is for information only (speed measured on different hardware).
    pub informational: bool,
    /// Why an inconclusive row is inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<Inconclusive>,
}
