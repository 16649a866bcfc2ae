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
}

/// The verify stage: opens and reads a bundle and runs every bundle check. `Err` when the bundle
/// cannot be read at all.
pub fn check(path: &Path) -> Result<Verified, Fatal> {
    let opened = bundle::open(path)?;
    let read = bundle::load(&opened);
    Ok(Verified {
        id: opened.manifest.id.clone(),
        found: rigaudit_audit::verify(&read),
    })
}

/// Verifies a bundle. `Err` when the bundle cannot be read at all.
pub fn run(path: &Path, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let v = check(path)?;
    Ok(Report::new("verify", &v.id, fail_on, v.found))
}
