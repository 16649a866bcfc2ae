//! `rigaudit verify BUNDLE`: the static audit. Reads a bundle, validates every file against its
//! schema, runs every check and builds the report. Needs no network and runs nothing.

use crate::bundle;
use crate::fatal::Fatal;
use crate::import;
use crate::subject::{Other, Subject};
use rigaudit_audit::report::Verified;
use rigaudit_audit::{Report, Severity};

/// The verify stage on a bundle already opened: reads it and runs every bundle check.
pub fn check_opened(opened: &bundle::Opened) -> Verified {
    check_loaded(opened, &bundle::load(opened))
}

/// [`check_opened`] of a bundle already read (`read`, its records).
pub fn check_loaded(opened: &bundle::Opened, read: &rigaudit_audit::Bundle) -> Verified {
    // A file refused as hostile (not a regular file, over its bound) is said here too, as the
    // reason the result is incomplete.
    for r in read.refused() {
        crate::progress::say(format_args!(
            "rigaudit: {}",
            crate::input::shown_n(&r, crate::input::MESSAGE_MAX)
        ));
    }
    Verified {
        id: opened.manifest.id.clone(),
        found: rigaudit_audit::verify(read),
        artifacts: rigaudit_audit::schema::verified(read),
    }
}

/// Verifies what the user's paths are: a bundle, or another tool's files (given, or copied into a
/// bundle `rigaudit import` wrote). `Err` when what they hold cannot be read at all.
pub fn run(subject: &Subject, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let verified = match subject {
        Subject::Bundle(opened) => check_opened(opened),
        Subject::Other(other) => other_files(other)?,
    };
    Ok(verified.report("verify", fail_on))
}

/// `verify` of another tool's files: an imported bundle's digests and its sources' checks, or the
/// files themselves.
pub fn other_files(other: &Other) -> Result<Verified, Fatal> {
    match &other.imported {
        Some(opened) => import::verify_bundle(opened, other.format, &other.files),
        None => import::verify_files(Some(other.format), &other.files),
    }
}
