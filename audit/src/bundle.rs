//! The parsed bundle the checks read, and [`verify`], which runs every check over it.

use crate::records::{
    AnswerTally, Card, FitResult, Manifest, QualityContract, QualitySummary, SpeedContract,
    SpeedResult,
};
use crate::report::{Finding, Recomputed};
use std::collections::BTreeSet;

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
}

/// What [`verify`] found.
#[derive(Debug, Clone, Default)]
pub struct Verified {
    /// Ids of the checks that had what they needed and ran.
    pub checks_run: Vec<String>,
    /// Values recomputed from raw records.
    pub recomputed: Vec<Recomputed>,
    /// Findings.
    pub findings: Vec<Finding>,
}

/// Collects the output of the checks.
#[derive(Debug, Default)]
pub(crate) struct Out {
    pub ran: BTreeSet<&'static str>,
    pub recomputed: Vec<Recomputed>,
    pub findings: Vec<Finding>,
}

impl Out {
    pub fn ran(&mut self, id: &'static str) {
        self.ran.insert(id);
    }

    pub fn push(&mut self, f: Finding) {
        self.findings.push(f);
    }
}

/// Runs every check of the catalogue over a parsed bundle.
pub fn verify(b: &Bundle) -> Verified {
    let mut out = Out::default();
    crate::quality::check(b, &mut out);
    crate::speed::check(b, &mut out);
    crate::setup::check(b, &mut out);
    crate::fit::check(b, &mut out);
    crate::claims::check(b, &mut out);
    crate::consistency::check(b, &mut out);
    Verified {
        checks_run: out.ran.into_iter().map(String::from).collect(),
        recomputed: out.recomputed,
        findings: out.findings,
    }
}
