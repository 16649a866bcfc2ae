//! `rigaudit verify BUNDLE`: the static audit. Reads a bundle, validates every file against its
//! schema, runs every check and builds the report. Needs no network and runs nothing.

use crate::bundle;
use crate::fatal::Fatal;
use rigaudit_audit::{Findings, Report, Severity};
use std::path::Path;

/// What verifying a bundle found, with the bundle's id.
pub struct Verified {
    /// The bundle's id.
    pub id: String,
    /// What the checks found.
    pub found: Findings,
    /// The raw files whose digest matched the manifest in full.
    pub artifacts: Vec<rigaudit_audit::report::Artifact>,
}

/// The verify stage: opens and reads a bundle and runs every bundle check. `Err` when the bundle
/// cannot be read at all.
pub fn check(path: &Path) -> Result<Verified, Fatal> {
    Ok(check_opened(&bundle::open(path)?))
}

/// The verify stage on a bundle already opened.
fn check_opened(opened: &bundle::Opened) -> Verified {
    let read = bundle::load(opened);
    // A file refused as hostile (not a regular file, over its bound) is said here too, as the
    // reason the result is incomplete.
    for r in read.refused() {
        eprintln!(
            "rigaudit: {}",
            crate::input::shown_n(&r, crate::input::MESSAGE_MAX)
        );
    }
    Verified {
        id: opened.manifest.id.clone(),
        found: rigaudit_audit::verify(&read),
        artifacts: rigaudit_audit::schema::verified(&read),
    }
}

/// Verifies a bundle. `Err` when the bundle cannot be read at all.
pub fn run(path: &Path, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let opened = bundle::open(path)?;
    if crate::import::is_imported(&opened.manifest) {
        return crate::import::verify_bundle(&opened, fail_on);
    }
    let v = check_opened(&opened);
    let mut report = Report::new("verify", &v.id, fail_on, v.found);
    report.artifacts = v.artifacts;
    Ok(report)
}
