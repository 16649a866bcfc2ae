//! The memory-fit test.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The result of a memory-fit test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitResult {
    /// The server's window.
    pub window: u64,
    /// Share of each size the prompt fills (0.95).
    pub fill: f64,
    /// One row per size.
    pub steps: Vec<FitStep>,
    /// What the tool wrote as its figures.
    #[serde(default)]
    pub shown: Option<FitShown>,
}

/// One size of the memory-fit test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitStep {
    /// The size in tokens.
    pub size: u64,
    /// Prompt tokens sent.
    pub prompt_tokens: u64,
    /// Whether the model answered.
    pub answered: bool,
    /// HTTP status.
    #[serde(default)]
    pub status: Option<u16>,
    /// Error text.
    #[serde(default)]
    pub error: Option<String>,
    /// Rise of used memory over idle per box, GiB.
    pub rise_gib: BTreeMap<String, f64>,
}

/// The figures the fit tool wrote.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FitShown {
    /// Largest size that answered.
    pub largest_answered: Option<u64>,
    /// The memory figure, GiB.
    pub memory_gib: Option<f64>,
}
