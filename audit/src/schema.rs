//! `schema.*`: a bundle's files are present, readable, valid against their schemas and match the
//! manifest's digests.
//!
//! The CLI does the reading and the schema validation (that is I/O) and records what it saw of
//! each file as [`FileFacts`]; the checks here judge those facts, one file at a time in manifest
//! order. This module also holds the pure rules the CLI applies: safe paths inside a bundle and
//! digest comparison.

use crate::bundle::{Bundle, FileFacts, Problem, Seen};
use crate::check::{Check, Emit, Ran};
use crate::records::FileEntry;
use crate::report::{Cap, Findings, Severity, FINDINGS_PER_CHECK};

/// What a schema check reads: the bundle and what the CLI saw of one of its files.
pub type Run = fn(&Bundle, &FileFacts, &mut Emit) -> Ran;

/// `schema.file-missing`, also reported when no file could be read at all.
const FILE_MISSING: Check<Run> = Check {
    id: "schema.file-missing",
    severity: Severity::Error,
    doc: "A file the manifest lists is not in the bundle (info when the page did not publish it).",
    run: file_missing,
};

/// `schema.*` checks, in the order they run over each file.
pub const CHECKS: &[Check<Run>] = &[
    Check {
        id: "schema.path-escapes",
        severity: Severity::Error,
        doc: "A manifest path is absolute or leaves the bundle.",
        run: path_escapes,
    },
    FILE_MISSING,
    Check {
        id: "schema.no-digest",
        severity: Severity::Warning,
        doc: "A file has no recorded sha256, so nobody can tell whether it changed.",
        run: no_digest,
    },
    Check {
        id: "schema.digest-mismatch",
        severity: Severity::Error,
        doc: "A file's sha256 differs from the digest the manifest records.",
        run: digest_mismatch,
    },
    Check {
        id: "schema.unreadable",
        severity: Severity::Error,
        doc: "A file cannot be read or is not well-formed JSON / JSON Lines.",
        run: unreadable,
    },
    Check {
        id: "schema.invalid",
        severity: Severity::Error,
        doc: "A file does not follow the JSON Schema of its kind (the pointer names the place).",
        run: invalid,
    },
];

/// At most [`FINDINGS_PER_CHECK`] findings of one schema check are listed; the rest are counted
/// in one line (a manifest of 100,000 missing files is one finding's worth of news, not 100,000).
const CAP: Cap = Cap {
    per_check: FINDINGS_PER_CHECK,
    note: |id, more, per_check| {
        format!("{more} more {id} findings not listed (at most {per_check} are kept)")
    },
};

/// Runs every schema check over each file the CLI saw, in manifest order. A file refused as
/// hostile makes the result incomplete: the bundle could not be read as a whole.
pub fn run(b: &Bundle, out: &mut Findings) {
    let cap = out.cap.replace(CAP);
    for f in &b.files {
        for c in CHECKS {
            out.check(c, |run, e| run(b, f, e));
        }
    }
    out.list_dropped();
    out.cap = cap;
    if let Some(first) = b.refused().first() {
        out.incomplete = Some(format!(
            "a file was refused: {}: publish it as a regular file within rigaudit's bounds (a \
             file's size, a line's length) and run again",
            first.trim_end_matches("; refused")
        ));
    }
}

/// Says that no raw file could be read, so nothing was checked: the report is incomplete.
pub fn nothing_checked(out: &mut Findings) {
    out.ran.clear();
    out.incomplete = Some(
        "no raw file of the bundle could be read: publish the files bundle.json lists beside it"
            .into(),
    );
    out.emitter(&FILE_MISSING)
        .finding("no raw file of the bundle could be read, so nothing was checked");
}

/// The raw files whose sha256 matched the manifest's in full: the subjects of an attestation.
pub fn verified(b: &Bundle) -> Vec<crate::report::Artifact> {
    let mut v = Vec::new();
    for f in &b.files {
        let (
            Seen::Present {
                sha256: Some(got), ..
            },
            Some(ent),
        ) = (&f.seen, b.manifest.files.get(f.index))
        else {
            continue;
        };
        if ent.sha256.as_deref().map(|w| compare_digest(w, got)) == Some(DigestMatch::Full) {
            v.push(crate::report::Artifact {
                path: ent.path.clone(),
                sha256: got.clone(),
            });
        }
    }
    v
}

/// The manifest's entry of a file.
fn entry<'a>(b: &'a Bundle, f: &FileFacts) -> Option<&'a FileEntry> {
    b.manifest.files.get(f.index)
}

fn path_escapes(_: &Bundle, f: &FileFacts, e: &mut Emit) -> Ran {
    let why = match &f.seen {
        Seen::Escapes(why) => why.clone(),
        Seen::Link(path) => format!("'{path}' resolves outside the bundle (a link)"),
        _ => return Some(()),
    };
    e.finding(why)
        .at("bundle.json", format!("/files/{}/path", f.index));
    Some(())
}

fn file_missing(b: &Bundle, f: &FileFacts, e: &mut Emit) -> Ran {
    let ent = entry(b, f)?;
    match &f.seen {
        Seen::Escapes(_) | Seen::Duplicate | Seen::Alias => return None,
        Seen::Missing => {}
        _ => return Some(()),
    }
    let tail = if ent.published {
        "the page published it"
    } else {
        "the page did not publish it, so claims resting on it cannot be checked"
    };
    let msg = format!(
        "{} is listed as {} but is not in the bundle; {tail}",
        ent.path,
        ent.kind.name()
    );
    let m = if ent.published {
        e.finding(msg)
    } else {
        e.info(msg)
    };
    m.file(&ent.path);
    Some(())
}

fn no_digest(b: &Bundle, f: &FileFacts, e: &mut Emit) -> Ran {
    let Seen::Present { sha256, .. } = &f.seen else {
        return None;
    };
    let ent = entry(b, f)?;
    if sha256.is_some() && ent.sha256.is_none() {
        e.finding(format!("{} has no sha256 in the manifest", ent.path))
            .file(&ent.path);
    }
    Some(())
}

fn digest_mismatch(b: &Bundle, f: &FileFacts, e: &mut Emit) -> Ran {
    let Seen::Present { sha256, .. } = &f.seen else {
        return None;
    };
    let ent = entry(b, f)?;
    if let (Some(got), Some(want)) = (sha256, &ent.sha256) {
        let r = compare_digest(want, got);
        if r != DigestMatch::Full {
            e.finding(format!(
                "{}: sha256 is {got}, the manifest records {want} ({})",
                ent.path,
                r.describe()
            ))
            .at("bundle.json", format!("/files/{}/sha256", f.index));
        }
    }
    Some(())
}

/// Reports the problems of one kind the CLI met reading a file.
fn problems(b: &Bundle, f: &FileFacts, unreadable: bool, e: &mut Emit) {
    let (Seen::Present { problems, .. }, Some(ent)) = (&f.seen, entry(b, f)) else {
        return;
    };
    for p in problems.iter().filter(|p| p.unreadable == unreadable) {
        let Problem {
            in_manifest,
            pointer,
            detail,
            ..
        } = p;
        let m = e
            .finding(format!("{}: {detail}", ent.path))
            .file(if *in_manifest {
                "bundle.json"
            } else {
                &ent.path
            });
        if let Some(ptr) = pointer {
            m.pointer(ptr);
        }
    }
}

fn unreadable(b: &Bundle, f: &FileFacts, e: &mut Emit) -> Ran {
    problems(b, f, true, e);
    match &f.seen {
        Seen::Present { sha256, read, .. } => (*read || sha256.is_none()).then_some(()),
        _ => None,
    }
}

fn invalid(b: &Bundle, f: &FileFacts, e: &mut Emit) -> Ran {
    let twice = match (&f.seen, entry(b, f)) {
        (Seen::Duplicate, Some(ent)) => Some(format!("'{}' is listed twice", ent.path)),
        (Seen::Alias, Some(ent)) => Some(format!(
            "'{}' is a file already listed under another name",
            ent.path
        )),
        _ => None,
    };
    if let Some(msg) = twice {
        e.finding(msg)
            .at("bundle.json", format!("/files/{}/path", f.index));
    }
    problems(b, f, false, e);
    match &f.seen {
        Seen::Present { read: true, .. } => Some(()),
        _ => None,
    }
}

/// Checks that a manifest path is relative and stays inside the bundle.
pub fn safe_path(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("the path is empty".into());
    }
    if p.starts_with('/') || p.starts_with('\\') || p.contains(':') {
        return Err(format!(
            "'{p}' is absolute; paths must be relative to the bundle"
        ));
    }
    let mut depth: i32 = 0;
    for part in p.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("'{p}' leaves the bundle through '..'"));
                }
            }
            _ => depth += 1,
        }
    }
    Ok(())
}

/// How a recorded digest compares with a computed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigestMatch {
    /// All 64 hex digits match.
    Full,
    /// The recorded prefix of this many hex digits matches (never called a full match).
    Prefix(usize),
    /// They differ.
    Mismatch,
    /// The recorded digest is not 8 to 64 hex digits.
    Malformed,
}

impl DigestMatch {
    /// Whether the digests agree as far as the record goes.
    pub fn ok(self) -> bool {
        matches!(self, DigestMatch::Full | DigestMatch::Prefix(_))
    }

    /// Words for a report.
    pub fn describe(self) -> String {
        match self {
            DigestMatch::Full => "matches the full digest".into(),
            DigestMatch::Prefix(n) => format!("matches the {n} published digits"),
            DigestMatch::Mismatch => "differs".into(),
            DigestMatch::Malformed => "the recorded digest is not 8 to 64 hex digits".into(),
        }
    }
}

/// A recorded sha256 as [`compare_digest`] reads it (lower case, without `sha256:`), when it is
/// 8 to 64 hex digits.
pub fn recorded_digest(recorded: &str) -> Option<String> {
    let r = recorded.trim().to_ascii_lowercase();
    let r = r.strip_prefix("sha256:").unwrap_or(&r).to_string();
    let ok = (8..=64).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then_some(r)
}

/// Compares a recorded sha256 (full or a prefix of at least 8 hex digits) with a computed one.
pub fn compare_digest(recorded: &str, computed_hex: &str) -> DigestMatch {
    let Some(r) = recorded_digest(recorded) else {
        return DigestMatch::Malformed;
    };
    let r = r.as_str();
    let c = computed_hex.to_ascii_lowercase();
    if !c.starts_with(r) {
        DigestMatch::Mismatch
    } else if r.len() == 64 {
        DigestMatch::Full
    } else {
        DigestMatch::Prefix(r.len())
    }
}

#[cfg(test)]
mod tests;
