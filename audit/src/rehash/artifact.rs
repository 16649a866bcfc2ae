//! The engine package and the binary inside it: digests against the card, copies against each
//! other.

use super::*;

/// Compares one computed digest with a recorded one and words the result. A match is info (a prefix
/// match says how many digits were published), a difference or an unreadable file an error.
pub fn digest_finding(
    row: &Check<Staged>,
    what: &str,
    recorded: &str,
    h: &Hashed,
    file: &str,
    pointer: &str,
) -> Finding {
    let base = |sev, msg: String| Finding::new(row.id, sev, msg).file(file).pointer(pointer);
    let got = match &h.sha256 {
        Ok(g) => g,
        Err(e) => {
            return base(
                Severity::Error,
                format!("{what} {}: cannot be read: {e}", h.at.describe()),
            )
            .data(json!({"at": h.at.data(), "recorded": recorded, "error": e}));
        }
    };
    let r = compare_digest(recorded, got);
    let data = json!({
        "at": h.at.data(),
        "recorded": recorded,
        "computed": got,
        "match": match r {
            DigestMatch::Full => "full",
            DigestMatch::Prefix(_) => "prefix",
            DigestMatch::Mismatch => "mismatch",
            DigestMatch::Malformed => "malformed",
        },
        "digits": match r { DigestMatch::Prefix(n) => n, DigestMatch::Full => 64, _ => 0 },
    });
    let at = h.at.describe();
    match r {
        DigestMatch::Full => {
            base(Severity::Info, format!("{what} {at}: sha256 {got} matches the full digest the card records")).data(data)
        }
        DigestMatch::Prefix(n) => base(
            Severity::Info,
            format!(
                "{what} {at}: sha256 {got} matches the {n} published digits {} (only {n} of 64 digits were published, so this is not a full match)",
                recorded.trim()
            ),
        )
        .data(data),
        DigestMatch::Mismatch => base(
            Severity::Error,
            format!("{what} {at}: sha256 is {got}, the card records {}", recorded.trim()),
        )
        .data(data),
        DigestMatch::Malformed => base(
            Severity::Error,
            format!("{what}: the recorded sha256 '{recorded}' is not 8 to 64 hex digits, so {at} cannot be compared"),
        )
        .data(data),
    }
}

/// Checks that every copy of one artifact has the same digest. Reports the copies that differ from
/// the digest most copies share (all of them when there is no majority).
pub fn copies_agree(
    what: &str,
    copies: &[&Hashed],
    out_pointer: Option<(&str, &str)>,
) -> Option<Finding> {
    let ok: Vec<(&Hashed, &String)> = copies
        .iter()
        .filter_map(|h| h.sha256.as_ref().ok().map(|d| (*h, d)))
        .collect();
    let mut by_digest: BTreeMap<&String, Vec<&Hashed>> = BTreeMap::new();
    for (h, d) in &ok {
        by_digest.entry(d).or_default().push(h);
    }
    if by_digest.len() < 2 {
        return None;
    }
    let max = by_digest.values().map(|v| v.len()).max().unwrap_or(0);
    let majority: Vec<String> = by_digest
        .iter()
        .filter(|(_, v)| v.len() == max)
        .map(|(d, _)| d.to_string())
        .collect();
    let odd: Vec<String> = if majority.len() == 1 {
        by_digest
            .iter()
            .filter(|(d, _)| d.as_str() != majority[0])
            .flat_map(|(d, v)| {
                v.iter()
                    .map(move |h| format!("{} has {d}", h.at.describe()))
            })
            .collect()
    } else {
        ok.iter()
            .map(|(h, d)| format!("{} has {d}", h.at.describe()))
            .collect()
    };
    let lead = if majority.len() == 1 {
        format!(
            "{} of {} copies of {what} share sha256 {}; ",
            max,
            ok.len(),
            majority[0]
        )
    } else {
        format!("the {} copies of {what} differ: ", ok.len())
    };
    let mut f = Finding::new(BOXES_DIFFER.id, Severity::Error, format!("{lead}{}", odd.join("; "))).data(json!({
        "artifact": what,
        "copies": ok.iter().map(|(h, d)| json!({"at": h.at.data(), "sha256": d})).collect::<Vec<_>>(),
    }));
    if let Some((file, pointer)) = out_pointer {
        f = f.file(file).pointer(pointer);
    }
    Some(f)
}

/// The engine package and the binary inside it: one check of two artifacts.
struct EngineArtifact {
    /// Its row.
    row: &'static Check<Staged>,
    /// Words for a report (`engine package`).
    what: &'static str,
    /// The card's field (`/engine/package`).
    pointer: &'static str,
}

const PACKAGE: EngineArtifact = EngineArtifact {
    row: &PACKAGE_DIGEST,
    what: "engine package",
    pointer: "/engine/package",
};

const BINARY: EngineArtifact = EngineArtifact {
    row: &BINARY_DIGEST,
    what: "engine binary",
    pointer: "/engine/binary",
};

/// Each found copy of an engine artifact against the card's digest, and the copies against each
/// other; `name` and `recorded` are the card's name and digest of it.
fn engine_artifact(
    a: &EngineArtifact,
    (name, recorded): (&str, &str),
    found: &[Hashed],
    m: &Measured,
    out: &mut StageOut,
) {
    if found.is_empty() {
        let what = format!("the {} {name}", a.what);
        not_found(m, &what, a.pointer, "its sha256", out);
        return;
    }
    out.decided(a.row);
    let pointer = format!("{}/sha256", a.pointer);
    for h in found {
        let f = digest_finding(a.row, a.what, recorded, h, &m.card_file, &pointer);
        out.push(f);
    }
    let copies: Vec<&Hashed> = found.iter().collect();
    out.decided(&BOXES_DIFFER);
    if let Some(f) = copies_agree(name, &copies, None) {
        out.push(f);
    }
}

pub(super) fn check_package(card: &Card, m: &Measured, out: &mut StageOut) {
    if let Some(p) = &card.engine.package {
        engine_artifact(&PACKAGE, (&p.file, &p.sha256), &m.package, m, out);
    }
}

pub(super) fn check_binary(card: &Card, m: &Measured, out: &mut StageOut) {
    if let Some(b) = &card.engine.binary {
        engine_artifact(&BINARY, (&b.path, &b.sha256), &m.binary, m, out);
    }
}
