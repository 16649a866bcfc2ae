//! `bundle.json`: the manifest of a published bundle.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The manifest of a bundle: what page it reconstructs, its files, and the figures the page prints.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Always `rigaudit-bundle/1` for this version of the format.
    pub format: String,
    /// Stable id of the page (for example `tensorfold-127-stock-2x`).
    pub id: String,
    /// The page's title.
    pub title: String,
    /// Where the page came from (an address or a file name).
    #[serde(default)]
    pub source: Option<String>,
    /// One line each on engine, checkpoint and hardware.
    pub setup: Setup,
    /// Every raw file of the page.
    pub files: Vec<FileEntry>,
    /// The figures the page prints, as printed.
    #[serde(default)]
    pub page: Page,
    /// The sessions of the measurement in the order the page says they ran.
    #[serde(default)]
    pub sessions: Vec<Session>,
    /// Free notes (for a reconstructed bundle: what was taken from the page and what was made).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A short description of the setup.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Setup {
    /// Engine name and version.
    pub engine: String,
    /// Checkpoint repository and revision.
    pub checkpoint: String,
    /// The machines.
    pub hardware: String,
}

/// The kind of a raw file; each has its own schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// The setup card.
    Card,
    /// The speed test's contract.
    SpeedContract,
    /// The speed test's result with one record per request.
    SpeedResult,
    /// A quality test's contract.
    QualityContract,
    /// A quality test's summary.
    QualitySummary,
    /// A quality test's answers, JSON Lines, one record per question.
    QualityAnswers,
    /// The memory-fit test's result.
    FitResult,
    /// Plain text: a log or an output file.
    Log,
}

impl FileKind {
    /// The kebab-case name used in manifests and messages.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Card => "card",
            FileKind::SpeedContract => "speed-contract",
            FileKind::SpeedResult => "speed-result",
            FileKind::QualityContract => "quality-contract",
            FileKind::QualitySummary => "quality-summary",
            FileKind::QualityAnswers => "quality-answers",
            FileKind::FitResult => "fit-result",
            FileKind::Log => "log",
        }
    }
}

/// One raw file of the bundle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    /// What the file is.
    pub kind: FileKind,
    /// Path inside the bundle, `/`-separated, relative.
    pub path: String,
    /// The file's sha256 as recorded (64 hex digits).
    #[serde(default)]
    pub sha256: Option<String>,
    /// Whether the page published this file. Files that exist but were not published may be
    /// present in a reconstructed bundle, or absent.
    pub published: bool,
    /// Whether the file's content was reconstructed from the page rather than copied.
    #[serde(default)]
    pub reconstructed: bool,
    /// For quality files: the test id (`mmlu-pro`, `gpqa-diamond`, ...).
    #[serde(default)]
    pub test: Option<String>,
    /// A note on the file.
    #[serde(default)]
    pub note: Option<String>,
}

/// The figures the page prints, as printed (strings keep the page's rounding).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Page {
    /// Speed figures keyed like the speed result's `values` (`decode`, `prefill.2048`, ...).
    #[serde(default)]
    pub speed: BTreeMap<String, String>,
    /// One row per quality test shown.
    #[serde(default)]
    pub quality: Vec<PageQuality>,
    /// The memory-fit figures.
    #[serde(default)]
    pub fit: Option<PageFit>,
}

/// A quality row as the page shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageQuality {
    /// Test id, matching the quality files' `test`.
    pub test: String,
    /// Percentage as printed, or absent when the page shows "no result".
    #[serde(default)]
    pub pct: Option<String>,
    /// 95 % margin in points as printed, or absent.
    #[serde(default)]
    pub margin: Option<String>,
    /// Right answers as printed.
    #[serde(default)]
    pub right: Option<u64>,
    /// Questions as printed.
    #[serde(default)]
    pub total: Option<u64>,
    /// Answers cut off at their limit, as printed.
    #[serde(default)]
    pub cutoffs: Option<u64>,
}

/// The memory-fit figures as the page shows them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageFit {
    /// Largest size that answered.
    #[serde(default)]
    pub largest_answered: Option<u64>,
    /// The memory figure shown, GiB, as printed.
    #[serde(default)]
    pub memory_gib: Option<String>,
    /// Highest rise per box as printed in the notes.
    #[serde(default)]
    pub peak_gib_per_box: BTreeMap<String, String>,
}

/// One measuring session as the page dates it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Session {
    /// What ran (`speed`, `mmlu-pro`, ...).
    pub name: String,
    /// Start, RFC 3339.
    pub started: String,
    /// End, RFC 3339.
    #[serde(default)]
    pub ended: Option<String>,
}
