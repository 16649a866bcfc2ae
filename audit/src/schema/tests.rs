//! One case per row of `schema::CHECKS`: each check, run alone by its id over every file, finds
//! what the CLI saw wrong with a file and stays quiet when every file was seen as listed.

use super::*;
use crate::bundle::{Problem, Seen};
use crate::report::Severity::Error;
use crate::testkit::{assert_cases, case, Case, Kit, MIA};
use serde_json::Value;

/// The log file of the speed test, the manifest's fourth entry.
const LOG: usize = 3;

/// Seen present, with the digest `sha256` and the problems met reading it.
fn present(sha256: Option<&str>, problems: Vec<Problem>) -> Seen {
    Seen::Present {
        sha256: sha256.map(String::from),
        read: true,
        problems,
    }
}

/// A problem the CLI met reading the file (`unreadable`: not well-formed, else off its schema).
fn problem(unreadable: bool, detail: &str) -> Problem {
    Problem {
        unreadable,
        refused: false,
        in_manifest: false,
        pointer: Some("line 1, column 2".into()),
        detail: detail.into(),
    }
}

fn seen_cases(mia: &Kit) -> Vec<Case> {
    let seen = |s: Seen| mia.clone().seen(LOG, s);
    let other = "0".repeat(64);
    let no_digest = mia
        .clone()
        .set("bundle.json", "/files/3/sha256", Value::Null);
    vec![
        case(
            "schema.path-escapes",
            mia,
            seen(Seen::Link("/etc/passwd".into())),
            Error,
        )
        .saying("'/etc/passwd' resolves outside the bundle (a link)"),
        case("schema.file-missing", mia, seen(Seen::Missing), Error)
            .saying("speed/log.txt is listed as log but is not in the bundle"),
        case(
            "schema.no-digest",
            mia,
            no_digest.seen(LOG, present(Some(&other), vec![])),
            crate::report::Severity::Warning,
        )
        .saying("speed/log.txt has no sha256 in the manifest"),
        case(
            "schema.digest-mismatch",
            mia,
            seen(present(Some(&other), vec![])),
            Error,
        )
        .saying("speed/log.txt: sha256 is 0000"),
        case(
            "schema.unreadable",
            mia,
            seen(present(None, vec![problem(true, "not valid JSON")])),
            Error,
        )
        .saying("speed/log.txt: not valid JSON"),
        case(
            "schema.invalid",
            mia,
            seen(present(None, vec![problem(false, "at /x: off")])),
            Error,
        )
        .saying("speed/log.txt: at /x: off"),
        case("schema.invalid", mia, seen(Seen::Duplicate), Error)
            .saying("'speed/log.txt' is listed twice"),
    ]
}

#[test]
fn every_schema_row_finds_what_was_seen_wrong() {
    assert_cases(seen_cases(&Kit::of(MIA)));
}

#[test]
fn paths() {
    assert!(safe_path("speed/result.json").is_ok());
    assert!(safe_path("a/../b.json").is_ok());
    assert!(safe_path("../x").is_err());
    assert!(safe_path("a/../../x").is_err());
    assert!(safe_path("/etc/passwd").is_err());
    assert!(safe_path("C:/x").is_err());
    assert!(safe_path("").is_err());
}

#[test]
fn digests() {
    let full = "250b7cd3".to_string() + &"0".repeat(56);
    assert_eq!(compare_digest(&full, &full), DigestMatch::Full);
    assert_eq!(compare_digest("250b7cd3", &full), DigestMatch::Prefix(8));
    assert_eq!(compare_digest("250b7cd4", &full), DigestMatch::Mismatch);
    assert_eq!(compare_digest("250b7", &full), DigestMatch::Malformed);
    assert_eq!(compare_digest("zzzzzzzz", &full), DigestMatch::Malformed);
    assert!(!DigestMatch::Prefix(8).describe().contains("full"));
}
