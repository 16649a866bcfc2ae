//! `rigaudit verify BUNDLE`: the static audit. Reads a bundle, validates every file against its
//! schema, runs every check and builds the report. Needs no network and runs nothing.

use crate::bundle;
use crate::fatal::Fatal;
use rigaudit_audit::{Report, Severity};
use std::path::Path;

/// Verifies a bundle. `Err` when the bundle cannot be read at all.
pub fn run(path: &Path, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let opened = bundle::open(path)?;
    if crate::import::is_imported(&opened.manifest) {
        return crate::import::verify_bundle(&opened, fail_on);
    }
    let read = bundle::load(&opened);
    let refused = read.refused.clone();
    let checked = rigaudit_audit::verify(&read.bundle);
    let verified = read.verified;
    let mut findings = read.findings;
    findings.extend(checked.findings);
    let mut ran: Vec<String> = read.checks_run.iter().map(|s| s.to_string()).collect();
    // Only the content checks count as "something was checked": a bundle whose every file is
    // missing or broken ran schema checks alone and is incomplete, never a pass.
    let content_ran = !checked.checks_run.is_empty()
        && (read.bundle.card.is_some()
            || read.bundle.speed_result.is_some()
            || read.bundle.fit.is_some()
            || read
                .bundle
                .quality
                .iter()
                .any(|t| t.summary.is_some() || t.answers.is_some()));
    ran.extend(checked.checks_run);
    let mut report = Report::new(
        "verify",
        &opened.manifest.id,
        fail_on,
        ran,
        checked.recomputed,
        findings,
    );
    if !content_ran {
        report.findings.push(rigaudit_audit::Finding::new(
            "schema.file-missing",
            Severity::Error,
            "no raw file of the bundle could be read, so nothing was checked",
        ));
        report = Report::new(
            "verify",
            &opened.manifest.id,
            fail_on,
            Vec::new(),
            report.recomputed,
            report.findings,
        );
    }
    report.artifacts = verified;
    if !refused.is_empty() {
        // A file refused as hostile (not a regular file, over its bound): the bundle could not be
        // read as a whole, so the run is incomplete (exit 2), whatever else was found.
        for r in &refused {
            eprintln!(
                "rigaudit: {}",
                crate::input::shown_n(r, crate::input::MESSAGE_MAX)
            );
        }
        report.verdict = rigaudit_audit::Verdict::Incomplete;
    }
    Ok(report)
}
