//! The parsed bundle the checks read: typed records of every file that passed its schema, and
//! what the CLI saw of every file (the facts the `schema.*` checks judge).
//!
//! It sits above the records and the report model and below the check families; it runs nothing.

use crate::check::{Emit, Ran};
use crate::records::{
    AnswerTally, Card, FitResult, Manifest, QualityContract, QualitySummary, SpeedContract,
    SpeedResult,
};

/// What most checks read: the bundle. A family's table is a `&[Check<Run>]`.
pub type Run = fn(&Bundle, &mut Emit) -> Ran;

/// A parsed file with where it came from.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    /// Path inside the bundle.
    pub path: String,
    /// Whether the page published it.
    pub published: bool,
    /// Whether its content was reconstructed from the page.
    pub reconstructed: bool,
    /// The parsed content.
    pub value: T,
}

impl<T> Loaded<T> {
    /// A file the page published, as read (not reconstructed).
    pub fn new(path: impl Into<String>, value: T) -> Self {
        Loaded {
            path: path.into(),
            published: true,
            reconstructed: false,
            value,
        }
    }
}

/// The files of one quality test.
#[derive(Debug, Clone, Default)]
pub struct QualityTest {
    /// Test id.
    pub test: String,
    /// Its contract.
    pub contract: Option<Loaded<QualityContract>>,
    /// Its summary.
    pub summary: Option<Loaded<QualitySummary>>,
    /// The tally of its answers file.
    pub answers: Option<Loaded<AnswerTally>>,
    /// Whether the manifest lists an answers file for it (present or not).
    pub answers_listed: Option<(String, bool)>,
}

/// Everything a bundle holds that passed its schema, typed. A file that is missing or invalid is
/// absent here; the loader has already reported why.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The manifest.
    pub manifest: Manifest,
    /// The card.
    pub card: Option<Loaded<Card>>,
    /// The speed contract.
    pub speed_contract: Option<Loaded<SpeedContract>>,
    /// The speed result.
    pub speed_result: Option<Loaded<SpeedResult>>,
    /// Quality tests, in manifest order.
    pub quality: Vec<QualityTest>,
    /// The memory-fit result.
    pub fit: Option<Loaded<FitResult>>,
    /// What the CLI saw of each file the manifest lists, in manifest order.
    pub files: Vec<FileFacts>,
}

impl Bundle {
    /// A bundle of a manifest and nothing read yet.
    pub fn new(manifest: Manifest) -> Self {
        Bundle {
            manifest,
            card: None,
            speed_contract: None,
            speed_result: None,
            quality: Vec::new(),
            fit: None,
            files: Vec::new(),
        }
    }

    /// What was refused as hostile, one line each (`path: why`).
    pub fn refused(&self) -> Vec<String> {
        let mut v = Vec::new();
        for f in &self.files {
            let (Seen::Present { problems, .. }, Some(ent)) =
                (&f.seen, self.manifest.files.get(f.index))
            else {
                continue;
            };
            for p in problems.iter().filter(|p| p.refused) {
                v.push(format!("{}: {}", ent.path, p.detail));
            }
        }
        v
    }

    /// Whether any raw file a content check reads was read: the card, the speed result, the fit
    /// result, or a quality test's summary or answers. A bundle without one has nothing to check.
    pub fn has_records(&self) -> bool {
        self.card.is_some()
            || self.speed_result.is_some()
            || self.fit.is_some()
            || self
                .quality
                .iter()
                .any(|t| t.summary.is_some() || t.answers.is_some())
    }
}

/// What the CLI saw of one file the manifest lists.
#[derive(Debug, Clone)]
pub struct FileFacts {
    /// Its index in the manifest's `files`.
    pub index: usize,
    /// What was seen.
    pub seen: Seen,
}

/// What the CLI saw at a manifest path.
#[derive(Debug, Clone)]
pub enum Seen {
    /// The path is absolute or leaves the bundle (the reason).
    Escapes(String),
    /// The path was listed before (in any spelling: `./a` is `a`).
    Duplicate,
    /// The file was listed before under another name (a hard link, a link inside the bundle).
    Alias,
    /// No file is there.
    Missing,
    /// The path resolves outside the bundle through a link (the path).
    Link(String),
    /// The file is there.
    Present {
        /// Its sha256, when it could be read.
        sha256: Option<String>,
        /// Whether its content was read to be parsed and validated.
        read: bool,
        /// What was wrong with it, in the order met.
        problems: Vec<Problem>,
    },
}

/// One thing wrong with a present file.
#[derive(Debug, Clone)]
pub struct Problem {
    /// It cannot be read or is not well-formed (`schema.unreadable`), else it breaks its schema
    /// (`schema.invalid`).
    pub unreadable: bool,
    /// The file was refused as hostile (not a regular file, over its size bound): the bundle
    /// cannot be read as a whole, so a report on it is incomplete.
    pub refused: bool,
    /// The problem is in the manifest's entry of the file, not in the file.
    pub in_manifest: bool,
    /// Where: a JSON pointer, `line N` or `line L, column C`.
    pub pointer: Option<String>,
    /// What, without the file's path (`at /x: "a" is not of type "number" (schema card)`).
    pub detail: String,
}
