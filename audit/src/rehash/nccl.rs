//! NCCL: the library of every box against the card's digests, and the version the file reports
//! against the card and the engine's start line.

use super::*;
use crate::records::card::Nccl;

/// The version code `ncclGetVersion` returns for a dotted version: `2.30.7` is 23007, and before
/// 2.9 the code was `major*1000 + minor*100 + patch` (2.8.4 is 2804). Extra text after the three
/// numbers (`2.30.7-1+cuda13.3`) is ignored.
pub fn nccl_code(version: &str) -> Option<i64> {
    let v = version.trim().trim_start_matches(['v', 'V']);
    let mut it = v.split(|c: char| !c.is_ascii_digit());
    let major: i64 = it.next()?.parse().ok()?;
    let minor: i64 = it.next()?.parse().ok()?;
    let patch: i64 = it.next()?.parse().ok()?;
    if minor > 99 || patch > 99 {
        return None;
    }
    Some(if major <= 2 && minor <= 8 {
        major * 1000 + minor * 100 + patch
    } else {
        major * 10000 + minor * 100 + patch
    })
}

/// The dotted version of an `ncclGetVersion` code (23007 is `2.30.7`, 2804 is `2.8.4`).
pub fn nccl_dotted(code: i64) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    }
}

/// `rehash.nccl-digest`: every NCCL library found against the digest the card records for its
/// box.
pub(super) fn nccl_digests(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let n = card.nccl.as_ref()?;
    let mut compared = false;
    for seen in &m.nccl {
        compared |= nccl_digest(n, seen, &m.card_file, out);
    }
    compared.then_some(())
}

/// `rehash.nccl-version`: the version the card states against the one the recorded start line
/// reports, and the version every library found reports against both.
pub(super) fn nccl_versions(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let n = card.nccl.as_ref()?;
    let file = &m.card_file;
    let card_code = nccl_code(&n.version);
    let start_code = m.start_line_nccl.as_deref().and_then(nccl_code);
    let mut compared = false;
    if let (Some(c), Some(s)) = (card_code, start_code) {
        compared = true;
        if c != s {
            out.finding(format!(
                "the card says NCCL {} ({c}) but the engine's recorded start line reports {} ({s})",
                n.version,
                nccl_dotted(s)
            ))
            .at(file, "/nccl/version");
        }
    }
    let codes = Codes {
        card: card_code,
        start: m.start_line_nccl.as_deref(),
        start_code,
    };
    for seen in &m.nccl {
        compared |= nccl_version(n, &codes, seen, file, out);
    }
    compared.then_some(())
}

/// The card's per-box record against itself and the libraries found against each other
/// (`rehash.boxes-differ`); whether either was compared.
pub(super) fn nccl_copies(card: &Card, m: &Measured, out: &mut Emit) -> bool {
    let Some(n) = &card.nccl else { return false };
    let file = &m.card_file;
    let records_differ = per_box_records_agree(n, file, out);
    if m.nccl.is_empty() {
        return records_differ;
    }
    let copies: Vec<&Hashed> = m.nccl.iter().map(|s| &s.file).collect();
    if let Some(f) = copies_agree(&n.file, &copies, Some((file, "/nccl/per_box"))) {
        out.push(f);
    }
    true
}

/// The NCCL library the card records, when no copy was found, or the boxes none was found for
/// (`rehash.not-found`).
pub(super) fn nccl_not_found(card: &Card, m: &Measured, out: &mut Emit) {
    let Some(n) = &card.nccl else { return };
    if m.nccl.is_empty() {
        let what = format!("the NCCL library {}", n.file);
        unchecked(m, &what, "/nccl", "its sha256 and version", out);
    } else {
        boxes_without_library(n, m, out);
    }
}

/// The card's own per-box record must agree with itself before any file is looked at. Two
/// records agree when one is a prefix of the other (a page may show 8 digits of one). Whether they
/// conflict.
fn per_box_records_agree(n: &Nccl, file: &str, out: &mut Emit) -> bool {
    let norm = |d: &str| d.trim().to_ascii_lowercase();
    let conflict = n.per_box.iter().any(|a| {
        n.per_box.iter().any(|b| {
            let (x, y) = (norm(&a.sha256), norm(&b.sha256));
            !(x.starts_with(&y) || y.starts_with(&x))
        })
    });
    if conflict {
        let list: Vec<String> = n
            .per_box
            .iter()
            .map(|b| format!("{} {}", b.box_name, b.sha256))
            .collect();
        out.finding(format!(
            "the card records different NCCL digests per box: {}",
            list.join(", ")
        ))
        .at(file, "/nccl/per_box");
    }
    conflict
}

/// Every box the card lists should have had its library found, once any box-tagged copy was.
fn boxes_without_library(n: &Nccl, m: &Measured, out: &mut Emit) {
    let found_boxes: BTreeSet<&str> = m
        .nccl
        .iter()
        .filter_map(|s| s.file.at.box_name.as_deref())
        .collect();
    if found_boxes.is_empty() {
        return;
    }
    for (i, b) in n.per_box.iter().enumerate() {
        if !found_boxes.contains(b.box_name.as_str()) {
            out.warning(format!(
                "no NCCL library was found for box {} ({}), so its copy was not checked",
                b.box_name,
                searched(m)
            ))
            .at(&m.card_file, format!("/nccl/per_box/{i}"));
        }
    }
}

/// One library found against the card's records for its box; whether it was compared.
fn nccl_digest(n: &Nccl, seen: &NcclSeen, file: &str, out: &mut Emit) -> bool {
    let h = &seen.file;
    if let Err(e) = &h.sha256 {
        out.finding(format!(
            "NCCL library {}: cannot be read: {e}",
            h.at.describe()
        ))
        .at(file, "/nccl");
        return true;
    }
    // The record of this file's box, or, for a file on no known box, every record.
    let records: Vec<(usize, &crate::records::card::BoxDigest)> = match &h.at.box_name {
        Some(b) => n
            .per_box
            .iter()
            .enumerate()
            .filter(|(_, r)| &r.box_name == b)
            .collect(),
        None => n.per_box.iter().enumerate().collect(),
    };
    if records.is_empty() {
        let why = match &h.at.box_name {
            Some(b) if !n.per_box.is_empty() => {
                format!("the card records no NCCL digest for box {b}")
            }
            _ => "the card records no NCCL digest".to_string(),
        };
        out.warning(format!(
            "NCCL library {}: sha256 {} not compared: {why}",
            h.at.describe(),
            h.sha256.as_deref().unwrap_or("")
        ))
        .at(file, "/nccl/per_box");
        return false;
    }
    // One finding per distinct recorded digest (both boxes usually record the same one).
    let mut done = BTreeSet::new();
    for (i, r) in records {
        if done.insert(r.sha256.trim().to_ascii_lowercase()) {
            let what = format!("NCCL library (recorded for box {})", r.box_name);
            let mut f = digest_finding(
                NCCL_DIGEST.id,
                &what,
                &r.sha256,
                h,
                file,
                &format!("/nccl/per_box/{i}/sha256"),
            );
            // A file that is no shared library is named as one: a digest that differs says less.
            if let NcclVersion::NotLibrary { why } = &seen.version {
                let head = format!("{what} {}: ", h.at.describe());
                let rest = f
                    .message
                    .strip_prefix(&head)
                    .unwrap_or(&f.message)
                    .to_string();
                f.severity = Severity::Error;
                f.message = format!(
                    "{head}not a shared library ({why}), so not the library an engine loads; {rest}"
                );
            }
            out.push(f);
        }
    }
    true
}

/// The NCCL version codes to compare a file's with: the card's, and the start line's (as written
/// and as a code).
struct Codes<'a> {
    card: Option<i64>,
    start: Option<&'a str>,
    start_code: Option<i64>,
}

/// The version code a file reports (queried, or named in its text), with how it was learnt; a
/// warning when there is none.
fn version_of(seen: &NcclSeen, file: &str, out: &mut Emit) -> Option<(i64, String)> {
    let at = seen.file.at.describe();
    match &seen.version {
        NcclVersion::Queried { code } => {
            Some((*code, "ncclGetVersion of that file returns".to_string()))
        }
        NcclVersion::FromText { version, why } => match nccl_code(version) {
            Some(c) => Some((
                c,
                format!("not queried ({why}); the file's own text names version"),
            )),
            None => {
                out.warning(format!("NCCL library {at}: version not queried: {why}; its text names '{version}', which is no version"))
                    .at(file, "/nccl/version");
                None
            }
        },
        NcclVersion::NotQueried { why } => {
            out.warning(format!("NCCL library {at}: version not queried: {why}"))
                .at(file, "/nccl/version")
                .data(json!({"at": seen.file.at.data(), "queried": false, "why": why}));
            None
        }
        NcclVersion::NotLibrary { why } => {
            let why = format!("not a shared library ({why})");
            out.warning(format!("NCCL library {at}: version not queried: {why}"))
                .at(file, "/nccl/version")
                .data(json!({"at": seen.file.at.data(), "queried": false, "why": why}));
            None
        }
    }
}

/// The version one library reports against the card's and the start line's; whether it was
/// compared.
fn nccl_version(n: &Nccl, codes: &Codes, seen: &NcclSeen, file: &str, out: &mut Emit) -> bool {
    let Some((code, how)) = version_of(seen, file, out) else {
        return false;
    };
    let (at, dotted) = (seen.file.at.describe(), nccl_dotted(code));
    let mut wrong = Vec::new();
    match codes.card {
        Some(c) if c != code => wrong.push(format!("the card says {} ({c})", n.version)),
        None => wrong.push(format!(
            "the card's version '{}' is not a version",
            n.version
        )),
        _ => {}
    }
    if let (Some(s), Some(sc)) = (codes.start, codes.start_code) {
        if sc != code {
            wrong.push(format!(
                "the engine's recorded start line reports {s} ({sc})"
            ));
        }
    }
    let data = json!({
        "at": seen.file.at.data(),
        "code": code,
        "version": dotted,
        "card": n.version,
        "start_line": codes.start,
        "queried": matches!(seen.version, NcclVersion::Queried { .. }),
    });
    let e = out;
    let mark = if wrong.is_empty() {
        let also = if codes.start.is_some() {
            " and with the engine's recorded start line"
        } else {
            " (no start line records one)"
        };
        e.info(format!(
            "NCCL library {at}: {how} {dotted} ({code}), the same as the card{also}"
        ))
    } else {
        e.finding(format!(
            "NCCL library {at}: {how} {dotted} ({code}), but {}",
            wrong.join(" and ")
        ))
    };
    mark.at(file, "/nccl/version").data(data);
    true
}
