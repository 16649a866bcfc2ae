//! The engine package and the binary inside it: digests against the card, copies against each
//! other.

use super::*;

/// Compares one computed digest with a recorded one and words the result. A match is info (a prefix
/// match says how many digits were published), a difference or an unreadable file an error.
pub fn digest_finding(
    check: &'static str,
    what: &str,
    recorded: &str,
    h: &Hashed,
    file: &str,
    pointer: &str,
) -> Finding {
    let base = |sev, msg: String| Finding::new(check, sev, msg).file(file).pointer(pointer);
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

/// The engine package or the binary inside it.
struct EngineArtifact {
    /// Words for a report (`engine package`).
    what: &'static str,
    /// The card's field (`/engine/package`).
    pointer: &'static str,
}

const PACKAGE: EngineArtifact = EngineArtifact {
    what: "engine package",
    pointer: "/engine/package",
};

const BINARY: EngineArtifact = EngineArtifact {
    what: "engine binary",
    pointer: "/engine/binary",
};

/// Each of the card's engine artifacts that it records, with its name and digest and the copies
/// found of it.
fn engine_artifacts<'a>(
    card: &'a Card,
    m: &'a Measured,
) -> impl Iterator<Item = (&'static EngineArtifact, (&'a str, &'a str), &'a [Hashed])> {
    let package = card.engine.package.as_ref().map(|p| {
        let named = (p.file.as_str(), p.sha256.as_str());
        (&PACKAGE, named, m.package.as_slice())
    });
    let binary = card.engine.binary.as_ref().map(|b| {
        let named = (b.path.as_str(), b.sha256.as_str());
        (&BINARY, named, m.binary.as_slice())
    });
    package.into_iter().chain(binary)
}

/// Each found copy of one engine artifact against the card's digest.
fn engine_digests(
    a: &EngineArtifact,
    recorded: &str,
    found: &[Hashed],
    m: &Measured,
    out: &mut Emit,
) -> Ran {
    if found.is_empty() {
        return None;
    }
    let pointer = format!("{}/sha256", a.pointer);
    let id = out.id();
    for h in found {
        out.push(digest_finding(
            id,
            a.what,
            recorded,
            h,
            &m.card_file,
            &pointer,
        ));
    }
    Some(())
}

/// `rehash.package-digest`.
pub(super) fn package_digest(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let p = card.engine.package.as_ref()?;
    engine_digests(&PACKAGE, &p.sha256, &m.package, m, out)
}

/// `rehash.binary-digest`.
pub(super) fn binary_digest(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let b = card.engine.binary.as_ref()?;
    engine_digests(&BINARY, &b.sha256, &m.binary, m, out)
}

/// The copies found of each engine artifact against each other (`rehash.boxes-differ`); whether
/// any was found.
pub(super) fn engine_copies(card: &Card, m: &Measured, out: &mut Emit) -> bool {
    let mut compared = false;
    for (_, (name, _), found) in engine_artifacts(card, m) {
        if found.is_empty() {
            continue;
        }
        compared = true;
        let copies: Vec<&Hashed> = found.iter().collect();
        if let Some(f) = copies_agree(name, &copies, None) {
            out.push(f);
        }
    }
    compared
}

/// The engine artifacts the card records that were not found (`rehash.not-found`).
pub(super) fn engine_not_found(card: &Card, m: &Measured, out: &mut Emit) {
    for (a, (name, _), found) in engine_artifacts(card, m) {
        if found.is_empty() {
            let what = format!("the {} {name}", a.what);
            unchecked(m, &what, a.pointer, "its sha256", out);
        }
    }
}
