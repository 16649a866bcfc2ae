//! `rehash.*`: the digests and versions a card records, checked against files a user has.
//!
//! The CLI finds each artifact (engine package, the binary inside it, the NCCL library of every box,
//! checkpoint folders, the bundle's own raw files), hashes it and asks the NCCL library for its
//! version; it hands what it measured to [`check`] as a [`Measured`]. Everything here is pure: no
//! file is read and no library is loaded.
//!
//! A recorded digest may be full (64 hex digits) or the prefix a page shows (at least 8); a prefix
//! match is always reported as "matches the N published digits", never as a full match.

use crate::catalogue::Check;
use crate::records::Card;
use crate::report::{Finding, Severity};
use crate::schema::{compare_digest, DigestMatch};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

/// `rehash.*` checks.
pub const CHECKS: &[Check] = &[
    Check {
        id: "rehash.package-digest",
        severity: Severity::Error,
        doc: "The engine package's sha256 differs from the card's (a match on the published digits only is said so).",
    },
    Check {
        id: "rehash.binary-digest",
        severity: Severity::Error,
        doc: "The binary inside the package (or a copy on a box) differs from the sha256 the card records.",
    },
    Check {
        id: "rehash.nccl-digest",
        severity: Severity::Error,
        doc: "An NCCL library file differs from the sha256 the card records for its box.",
    },
    Check {
        id: "rehash.nccl-version",
        severity: Severity::Error,
        doc: "The version the NCCL file itself reports differs from the card or the engine's start line (warning: not queried, and why).",
    },
    Check {
        id: "rehash.boxes-differ",
        severity: Severity::Error,
        doc: "Copies of one artifact on several boxes or ranks have different digests; names the one that differs.",
    },
    Check {
        id: "rehash.checkpoint-files",
        severity: Severity::Error,
        doc: "A weight or config file of a checkpoint differs from the recorded or compared manifest (not weights-equal).",
    },
    Check {
        id: "rehash.checkpoint-shards",
        severity: Severity::Error,
        doc: "The number of weight shards differs from the card, or the numbered series has gaps.",
    },
    Check {
        id: "rehash.revision-file",
        severity: Severity::Error,
        doc: "The checkpoint's revision file is missing or names another revision than the card.",
    },
    Check {
        id: "rehash.bundle-file-digest",
        severity: Severity::Error,
        doc: "A raw file of the bundle differs from the sha256 its manifest records.",
    },
    Check {
        id: "rehash.not-found",
        severity: Severity::Error,
        doc: "An artifact the card records was not found, so it was not checked (error when named with --file).",
    },
];

/// Where a measured file was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The box it belongs to, when known (`--root BOX=DIR`, or a folder named after the box).
    pub box_name: Option<String>,
    /// The file or folder as the user has it.
    pub path: String,
    /// The member inside an archive, when the file was read from one.
    pub member: Option<String>,
}

impl Location {
    /// A file on no particular box.
    pub fn file(path: impl Into<String>) -> Self {
        Location {
            box_name: None,
            path: path.into(),
            member: None,
        }
    }

    /// The same place on a box.
    pub fn on(mut self, box_name: impl Into<String>) -> Self {
        self.box_name = Some(box_name.into());
        self
    }

    /// A member of this archive.
    pub fn member(mut self, member: impl Into<String>) -> Self {
        self.member = Some(member.into());
        self
    }

    /// Words for a message: `PATH`, `PATH!MEMBER`, with ` (box B)` when the box is known.
    pub fn describe(&self) -> String {
        let mut s = self.path.clone();
        if let Some(m) = &self.member {
            s.push('!');
            s.push_str(m);
        }
        if let Some(b) = &self.box_name {
            s.push_str(&format!(" (box {b})"));
        }
        s
    }

    fn data(&self) -> serde_json::Value {
        json!({"path": self.path, "member": self.member, "box": self.box_name})
    }
}

/// One hashed file: its digest (64 lower-case hex digits) or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hashed {
    /// Where it is.
    pub at: Location,
    /// The sha256, or the reason it could not be computed.
    pub sha256: Result<String, String>,
}

/// What the NCCL library file said about its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NcclVersion {
    /// `ncclGetVersion` of that very file returned this code (2.30.7 is 23007).
    Queried {
        /// The version code.
        code: i64,
    },
    /// The file could not be loaded here, but its text names this version (`NCCL version 2.30.7+cuda13.3`).
    FromText {
        /// The dotted version found in the file.
        version: String,
        /// Why it was not queried.
        why: String,
    },
    /// Neither loaded nor read.
    NotQueried {
        /// Why.
        why: String,
    },
}

/// One NCCL library found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NcclSeen {
    /// The file and its digest.
    pub file: Hashed,
    /// What it reports about its version.
    pub version: NcclVersion,
}

/// One file of a per-file digest manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestEntry {
    /// Path inside the folder, `/`-separated.
    pub path: String,
    /// sha256: full, or (for a recorded manifest) a prefix of at least 8 hex digits.
    pub sha256: String,
}

/// A per-file digest manifest of a checkpoint folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileManifest {
    /// Where it came from (a folder, a manifest file, `the card`).
    pub origin: String,
    /// Its files.
    pub entries: Vec<ManifestEntry>,
}

/// What the revision file of a checkpoint folder holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionFileSeen {
    /// Its text.
    Content(String),
    /// The folder has no such file.
    Missing,
    /// It exists but could not be read.
    Unreadable(String),
    /// The card's path is not a path inside the folder (it describes a file in words).
    NotLocatable(String),
}

/// One checkpoint folder found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointSeen {
    /// The folder.
    pub at: Location,
    /// The digest of every file in it.
    pub manifest: FileManifest,
    /// Files that could not be read, with the reason.
    pub unreadable: Vec<(String, String)>,
    /// The revision file, when the card records one.
    pub revision_file: Option<RevisionFileSeen>,
    /// The revision a hub client's cache folder names (`.../snapshots/<revision>/`), when it is one.
    pub hub_revision: Option<String>,
}

/// One raw file of the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFileSeen {
    /// Path inside the bundle.
    pub path: String,
    /// The sha256 the manifest records.
    pub recorded: Option<String>,
    /// Whether the page published it.
    pub published: bool,
    /// The computed digest; `None` when the file is not in the bundle.
    pub sha256: Option<Result<String, String>>,
}

/// An artifact named with `--file` that could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFile {
    /// What it was given as (`nccl`, `package`, ...).
    pub kind: String,
    /// Where.
    pub at: Location,
    /// Why it could not be opened.
    pub why: String,
}

/// Everything the CLI measured, ready for [`check`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measured {
    /// The card's path inside the bundle (findings about recorded values point there).
    pub card_file: String,
    /// The places searched, in words (for "not found under ...").
    pub searched: Vec<String>,
    /// Every copy of the engine package found.
    pub package: Vec<Hashed>,
    /// The binary: members of packages and copies found on their own.
    pub binary: Vec<Hashed>,
    /// Every NCCL library found.
    pub nccl: Vec<NcclSeen>,
    /// Every checkpoint folder found.
    pub checkpoints: Vec<CheckpointSeen>,
    /// A manifest to compare each checkpoint with (another revision, say), when given.
    pub reference: Option<FileManifest>,
    /// The bundle's raw files.
    pub bundle_files: Vec<BundleFileSeen>,
    /// The NCCL version the engine's recorded start line reports, dotted.
    pub start_line_nccl: Option<String>,
    /// Artifacts named explicitly that could not be opened.
    pub missing: Vec<MissingFile>,
}

/// What [`check`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// Ids of the checks that compared something. Empty when nothing was checked.
    pub checks_run: Vec<String>,
    /// Findings, matches included (as info), so a reader sees what was verified.
    pub findings: Vec<Finding>,
}

#[derive(Default)]
struct Out {
    ran: BTreeSet<&'static str>,
    findings: Vec<Finding>,
}

impl Out {
    fn push(&mut self, f: Finding) {
        self.findings.push(f);
    }
}

/// Runs every `rehash.*` check over what was measured.
pub fn check(card: &Card, m: &Measured) -> Checked {
    let mut out = Out::default();
    check_package(card, m, &mut out);
    check_binary(card, m, &mut out);
    check_nccl(card, m, &mut out);
    check_checkpoints(card, m, &mut out);
    check_bundle_files(m, &mut out);
    for miss in &m.missing {
        out.ran.insert("rehash.not-found");
        out.push(
            Finding::new(
                "rehash.not-found",
                Severity::Error,
                format!(
                    "{} given with --file cannot be opened: {}",
                    miss.at.describe(),
                    miss.why
                ),
            )
            .data(json!({"kind": miss.kind, "at": miss.at.data(), "why": miss.why})),
        );
    }
    Checked {
        checks_run: out.ran.iter().map(|s| s.to_string()).collect(),
        findings: out.findings,
    }
}

fn searched(m: &Measured) -> String {
    if m.searched.is_empty() {
        "no --root or --file was given for it".to_string()
    } else {
        format!("searched {}", m.searched.join(", "))
    }
}

fn not_found(m: &Measured, what: &str, pointer: &str, tail: &str, out: &mut Out) {
    out.push(
        Finding::new(
            "rehash.not-found",
            Severity::Warning,
            format!(
                "{what} was not found ({}), so {tail} went unchecked",
                searched(m)
            ),
        )
        .file(&m.card_file)
        .pointer(pointer),
    );
}

/// Compares one computed digest with a recorded one and words the result. A match is info (a prefix
/// match says how many digits were published), a difference or an unreadable file an error.
pub fn digest_finding(
    check_id: &'static str,
    what: &str,
    recorded: &str,
    h: &Hashed,
    file: &str,
    pointer: &str,
) -> Finding {
    let base = |sev, msg: String| Finding::new(check_id, sev, msg).file(file).pointer(pointer);
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
    let mut f = Finding::new("rehash.boxes-differ", Severity::Error, format!("{lead}{}", odd.join("; "))).data(json!({
        "artifact": what,
        "copies": ok.iter().map(|(h, d)| json!({"at": h.at.data(), "sha256": d})).collect::<Vec<_>>(),
    }));
    if let Some((file, pointer)) = out_pointer {
        f = f.file(file).pointer(pointer);
    }
    Some(f)
}

fn check_package(card: &Card, m: &Measured, out: &mut Out) {
    let Some(p) = &card.engine.package else {
        return;
    };
    if m.package.is_empty() {
        not_found(
            m,
            &format!("the engine package {}", p.file),
            "/engine/package",
            "its sha256",
            out,
        );
        return;
    }
    out.ran.insert("rehash.package-digest");
    for h in &m.package {
        out.push(digest_finding(
            "rehash.package-digest",
            "engine package",
            &p.sha256,
            h,
            &m.card_file,
            "/engine/package/sha256",
        ));
    }
    let copies: Vec<&Hashed> = m.package.iter().collect();
    out.ran.insert("rehash.boxes-differ");
    if let Some(f) = copies_agree(&p.file, &copies, None) {
        out.push(f);
    }
}

fn check_binary(card: &Card, m: &Measured, out: &mut Out) {
    let Some(b) = &card.engine.binary else { return };
    if m.binary.is_empty() {
        not_found(
            m,
            &format!("the engine binary {}", b.path),
            "/engine/binary",
            "its sha256",
            out,
        );
        return;
    }
    out.ran.insert("rehash.binary-digest");
    for h in &m.binary {
        out.push(digest_finding(
            "rehash.binary-digest",
            "engine binary",
            &b.sha256,
            h,
            &m.card_file,
            "/engine/binary/sha256",
        ));
    }
    let copies: Vec<&Hashed> = m.binary.iter().collect();
    out.ran.insert("rehash.boxes-differ");
    if let Some(f) = copies_agree(&b.path, &copies, None) {
        out.push(f);
    }
}

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

fn check_nccl(card: &Card, m: &Measured, out: &mut Out) {
    let Some(n) = &card.nccl else { return };
    let file = &m.card_file;
    // The card's own per-box record must agree with itself before any file is looked at.
    // Two records agree when one is a prefix of the other (a page may show 8 digits of one).
    let norm = |d: &str| d.trim().to_ascii_lowercase();
    let conflict = n.per_box.iter().any(|a| {
        n.per_box.iter().any(|b| {
            let (x, y) = (norm(&a.sha256), norm(&b.sha256));
            !(x.starts_with(&y) || y.starts_with(&x))
        })
    });
    if conflict {
        out.ran.insert("rehash.boxes-differ");
        let list: Vec<String> = n
            .per_box
            .iter()
            .map(|b| format!("{} {}", b.box_name, b.sha256))
            .collect();
        out.push(
            Finding::new(
                "rehash.boxes-differ",
                Severity::Error,
                format!(
                    "the card records different NCCL digests per box: {}",
                    list.join(", ")
                ),
            )
            .file(file)
            .pointer("/nccl/per_box"),
        );
    }
    // The version the card states against the one the recorded start line reports.
    let card_code = nccl_code(&n.version);
    let start_code = m.start_line_nccl.as_deref().and_then(nccl_code);
    if let (Some(c), Some(s)) = (card_code, start_code) {
        out.ran.insert("rehash.nccl-version");
        if c != s {
            out.push(
                Finding::new(
                    "rehash.nccl-version",
                    Severity::Error,
                    format!(
                        "the card says NCCL {} ({c}) but the engine's recorded start line reports {} ({s})",
                        n.version,
                        nccl_dotted(s)
                    ),
                )
                .file(file)
                .pointer("/nccl/version"),
            );
        }
    }
    if m.nccl.is_empty() {
        not_found(
            m,
            &format!("the NCCL library {}", n.file),
            "/nccl",
            "its sha256 and version",
            out,
        );
        return;
    }
    for seen in &m.nccl {
        nccl_digest(n, seen, file, out);
        nccl_version(
            n,
            card_code,
            m.start_line_nccl.as_deref(),
            start_code,
            seen,
            file,
            out,
        );
    }
    // Every box the card lists should have had its library found, once any box-tagged copy was.
    let found_boxes: BTreeSet<&str> = m
        .nccl
        .iter()
        .filter_map(|s| s.file.at.box_name.as_deref())
        .collect();
    if !found_boxes.is_empty() {
        for (i, b) in n.per_box.iter().enumerate() {
            if !found_boxes.contains(b.box_name.as_str()) {
                out.push(
                    Finding::new(
                        "rehash.not-found",
                        Severity::Warning,
                        format!("no NCCL library was found for box {} ({}), so its copy was not checked", b.box_name, searched(m)),
                    )
                    .file(file)
                    .pointer(format!("/nccl/per_box/{i}")),
                );
            }
        }
    }
    let copies: Vec<&Hashed> = m.nccl.iter().map(|s| &s.file).collect();
    out.ran.insert("rehash.boxes-differ");
    if let Some(f) = copies_agree(&n.file, &copies, Some((file, "/nccl/per_box"))) {
        out.push(f);
    }
}

fn nccl_digest(n: &crate::records::card::Nccl, seen: &NcclSeen, file: &str, out: &mut Out) {
    let h = &seen.file;
    if let Err(e) = &h.sha256 {
        out.ran.insert("rehash.nccl-digest");
        out.push(
            Finding::new(
                "rehash.nccl-digest",
                Severity::Error,
                format!("NCCL library {}: cannot be read: {e}", h.at.describe()),
            )
            .file(file)
            .pointer("/nccl"),
        );
        return;
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
        out.push(
            Finding::new(
                "rehash.nccl-digest",
                Severity::Warning,
                format!(
                    "NCCL library {}: sha256 {} not compared: {why}",
                    h.at.describe(),
                    h.sha256.as_deref().unwrap_or("")
                ),
            )
            .file(file)
            .pointer("/nccl/per_box"),
        );
        return;
    }
    out.ran.insert("rehash.nccl-digest");
    // One finding per distinct recorded digest (both boxes usually record the same one).
    let mut done = BTreeSet::new();
    for (i, r) in records {
        if done.insert(r.sha256.trim().to_ascii_lowercase()) {
            let what = format!("NCCL library (recorded for box {})", r.box_name);
            out.push(digest_finding(
                "rehash.nccl-digest",
                &what,
                &r.sha256,
                h,
                file,
                &format!("/nccl/per_box/{i}/sha256"),
            ));
        }
    }
}

fn nccl_version(
    n: &crate::records::card::Nccl,
    card_code: Option<i64>,
    start: Option<&str>,
    start_code: Option<i64>,
    seen: &NcclSeen,
    file: &str,
    out: &mut Out,
) {
    let at = seen.file.at.describe();
    let (code, how) = match &seen.version {
        NcclVersion::Queried { code } => (*code, "ncclGetVersion of that file returns".to_string()),
        NcclVersion::FromText { version, why } => match nccl_code(version) {
            Some(c) => (
                c,
                format!("not queried ({why}); the file's own text names version"),
            ),
            None => {
                out.push(
                    Finding::new(
                        "rehash.nccl-version",
                        Severity::Warning,
                        format!("NCCL library {at}: version not queried: {why}; its text names '{version}', which is no version"),
                    )
                    .file(file)
                    .pointer("/nccl/version"),
                );
                return;
            }
        },
        NcclVersion::NotQueried { why } => {
            out.push(
                Finding::new(
                    "rehash.nccl-version",
                    Severity::Warning,
                    format!("NCCL library {at}: version not queried: {why}"),
                )
                .file(file)
                .pointer("/nccl/version")
                .data(json!({"at": seen.file.at.data(), "queried": false, "why": why})),
            );
            return;
        }
    };
    out.ran.insert("rehash.nccl-version");
    let dotted = nccl_dotted(code);
    let mut wrong = Vec::new();
    match card_code {
        Some(c) if c != code => wrong.push(format!("the card says {} ({c})", n.version)),
        None => wrong.push(format!(
            "the card's version '{}' is not a version",
            n.version
        )),
        _ => {}
    }
    if let (Some(s), Some(sc)) = (start, start_code) {
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
        "start_line": start,
        "queried": matches!(seen.version, NcclVersion::Queried { .. }),
    });
    let f = if wrong.is_empty() {
        let also = if start.is_some() {
            " and with the engine's recorded start line"
        } else {
            " (no start line records one)"
        };
        Finding::new(
            "rehash.nccl-version",
            Severity::Info,
            format!("NCCL library {at}: {how} {dotted} ({code}), the same as the card{also}"),
        )
    } else {
        Finding::new(
            "rehash.nccl-version",
            Severity::Error,
            format!(
                "NCCL library {at}: {how} {dotted} ({code}), but {}",
                wrong.join(" and ")
            ),
        )
    };
    out.push(f.file(file).pointer("/nccl/version").data(data));
}

/// What kind of file a checkpoint holds: two revisions are weights-equal when every weight, config
/// and code file matches; docs (the model card) and the revision marker may differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileClass {
    /// Weights (`*.safetensors`, `*.gguf`, `*.bin`, ...).
    Weight,
    /// Configuration, tokenizer and code: everything that is neither a weight nor a doc.
    Config,
    /// The model card and other text for people (`README.md`, `LICENSE`, images).
    Doc,
    /// The revision marker file the card names.
    Marker,
}

impl FileClass {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            FileClass::Weight => "weight",
            FileClass::Config => "config",
            FileClass::Doc => "doc",
            FileClass::Marker => "marker",
        }
    }

    /// Whether a difference in such a file breaks weights-equality.
    pub fn counts(self) -> bool {
        matches!(self, FileClass::Weight | FileClass::Config)
    }
}

/// Classifies a checkpoint file by its path. `marker` is the revision file's path, when known.
pub fn classify(path: &str, marker: Option<&str>) -> FileClass {
    if marker.is_some_and(|m| m.trim_start_matches("./") == path) {
        return FileClass::Marker;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    const WEIGHT: &[&str] = &[
        "safetensors",
        "gguf",
        "bin",
        "pt",
        "pth",
        "ckpt",
        "h5",
        "msgpack",
        "onnx",
        "npz",
        "npy",
    ];
    const DOC_EXT: &[&str] = &[
        "md", "rst", "png", "jpg", "jpeg", "gif", "svg", "webp", "pdf",
    ];
    const DOC_NAME: &[&str] = &[
        "readme",
        "license",
        "licence",
        "notice",
        "copying",
        "citation",
        "use_policy",
        ".gitattributes",
        ".gitignore",
    ];
    if WEIGHT.contains(&ext) {
        FileClass::Weight
    } else if DOC_EXT.contains(&ext)
        || DOC_NAME
            .iter()
            .any(|d| lower == *d || lower.starts_with(&format!("{d}.")))
    {
        FileClass::Doc
    } else {
        FileClass::Config
    }
}

/// How one file of a checkpoint compares with a reference manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Path inside the folder.
    pub path: String,
    /// Its class.
    pub class: FileClass,
    /// `changed`, `only-here` (not in the reference) or `missing` (only in the reference).
    pub kind: &'static str,
}

/// A checkpoint folder compared with a reference manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManifestDiff {
    /// Files that differ, are extra or are missing.
    pub differ: Vec<FileDiff>,
    /// Files whose full digest matches.
    pub full: usize,
    /// Files that match only on a recorded prefix.
    pub prefix: usize,
    /// Reference digests that are not 8 to 64 hex digits.
    pub malformed: Vec<String>,
}

impl ManifestDiff {
    /// Whether every weight and config file matches.
    pub fn weights_equal(&self) -> bool {
        self.malformed.is_empty() && !self.differ.iter().any(|d| d.class.counts())
    }
}

/// Compares a folder's manifest with a reference (another revision's folder, a manifest file, or the
/// files the card records).
pub fn compare_manifests(
    found: &FileManifest,
    reference: &FileManifest,
    marker: Option<&str>,
) -> ManifestDiff {
    let here: BTreeMap<&str, &str> = found
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.sha256.as_str()))
        .collect();
    let there: BTreeMap<&str, &str> = reference
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.sha256.as_str()))
        .collect();
    let mut d = ManifestDiff::default();
    for (p, want) in &there {
        let class = classify(p, marker);
        match here.get(p) {
            None => d.differ.push(FileDiff {
                path: p.to_string(),
                class,
                kind: "missing",
            }),
            Some(got) => match compare_digest(want, got) {
                DigestMatch::Full => d.full += 1,
                DigestMatch::Prefix(_) => d.prefix += 1,
                DigestMatch::Mismatch => d.differ.push(FileDiff {
                    path: p.to_string(),
                    class,
                    kind: "changed",
                }),
                DigestMatch::Malformed => d.malformed.push(p.to_string()),
            },
        }
    }
    for p in here.keys() {
        if !there.contains_key(p) {
            d.differ.push(FileDiff {
                path: p.to_string(),
                class: classify(p, marker),
                kind: "only-here",
            });
        }
    }
    d.differ
        .sort_by(|a, b| (a.class, &a.path).cmp(&(b.class, &b.path)));
    d
}

fn diff_finding(what: &str, reference: &str, d: &ManifestDiff, file: &str) -> Finding {
    let list: Vec<String> = d
        .differ
        .iter()
        .map(|x| format!("{} ({}, {})", x.path, x.class.name(), x.kind))
        .collect();
    let shown = if list.len() > 12 {
        format!("{} and {} more", list[..12].join(", "), list.len() - 12)
    } else {
        list.join(", ")
    };
    let prefix_note = if d.prefix > 0 {
        format!(" ({} of them on published prefixes only)", d.prefix)
    } else {
        String::new()
    };
    let matched = d.full + d.prefix;
    let data = json!({
        "reference": reference,
        "weights_equal": d.weights_equal(),
        "matched_full": d.full,
        "matched_prefix": d.prefix,
        "malformed": d.malformed,
        "differ": d.differ.iter().map(|x| json!({"path": x.path, "class": x.class.name(), "kind": x.kind})).collect::<Vec<_>>(),
    });
    let f = if !d.malformed.is_empty() {
        Finding::new(
            "rehash.checkpoint-files",
            Severity::Error,
            format!(
                "{what}: {} recorded digests of {reference} are not 8 to 64 hex digits: {}",
                d.malformed.len(),
                d.malformed.join(", ")
            ),
        )
    } else if d.weights_equal() && d.differ.is_empty() {
        Finding::new(
            "rehash.checkpoint-files",
            Severity::Info,
            format!(
                "{what} is weights-equal to {reference}: all {matched} files match{prefix_note}"
            ),
        )
    } else if d.weights_equal() {
        Finding::new(
            "rehash.checkpoint-files",
            Severity::Info,
            format!("{what} is weights-equal to {reference}: {matched} weight and config files match{prefix_note}; only these differ: {shown}"),
        )
    } else {
        let n = d.differ.iter().filter(|x| x.class.counts()).count();
        Finding::new(
            "rehash.checkpoint-files",
            Severity::Error,
            format!("{what} is not weights-equal to {reference}: {n} weight or config files differ; {shown}"),
        )
    };
    f.file(file).pointer("/checkpoint").data(data)
}

/// Whether two revisions (git hashes, full or abbreviated to at least 7 digits) name the same commit.
pub fn same_revision(a: &str, b: &str) -> bool {
    let a = a.trim().to_ascii_lowercase();
    let b = b.trim().to_ascii_lowercase();
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    short.len() >= 7
        && short.bytes().all(|c| c.is_ascii_hexdigit())
        && long.starts_with(short.as_str())
}

/// The weight shards of a manifest and the gaps of a numbered series (`model-00007-of-00083`).
/// Returns (shard count, the `of` total when every shard names the same one, missing numbers).
pub fn shard_series(files: &FileManifest) -> (usize, Option<u32>, Vec<u32>) {
    let shards: Vec<&str> = files
        .entries
        .iter()
        .map(|e| e.path.as_str())
        .filter(|p| classify(p, None) == FileClass::Weight)
        .collect();
    let mut totals = BTreeSet::new();
    let mut numbers = BTreeSet::new();
    let mut numbered = 0usize;
    for p in &shards {
        let name = p.rsplit('/').next().unwrap_or(p);
        if let Some((n, of)) = series_numbers(name) {
            totals.insert(of);
            numbers.insert(n);
            numbered += 1;
        }
    }
    if totals.len() == 1 && numbered == shards.len() {
        let of = *totals.iter().next().unwrap_or(&0);
        let missing: Vec<u32> = (1..=of)
            .filter(|i| !numbers.contains(i))
            .take(1000)
            .collect();
        (shards.len(), Some(of), missing)
    } else {
        (shards.len(), None, Vec::new())
    }
}

fn series_numbers(name: &str) -> Option<(u32, u32)> {
    // `...-00007-of-00083.ext`
    let (head, rest) = name.split_once("-of-")?;
    let n: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let of: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((n.parse().ok()?, of.parse().ok()?))
}

fn check_checkpoints(card: &Card, m: &Measured, out: &mut Out) {
    let ck = &card.checkpoint;
    let file = &m.card_file;
    if m.checkpoints.is_empty() {
        not_found(
            m,
            &format!("a checkpoint folder of {} at {}", ck.repo, ck.revision),
            "/checkpoint",
            "its files",
            out,
        );
        return;
    }
    let marker = ck.revision_file.as_ref().map(|r| r.path.as_str());
    let recorded = (!ck.files.is_empty()).then(|| FileManifest {
        origin: format!("the files the card records for {}", ck.revision),
        entries: ck
            .files
            .iter()
            .map(|f| ManifestEntry {
                path: f.path.clone(),
                sha256: f.sha256.clone(),
            })
            .collect(),
    });
    for seen in &m.checkpoints {
        let what = format!("checkpoint folder {}", seen.at.describe());
        if recorded.is_none()
            && m.reference.is_none()
            && ck.shards.is_none()
            && ck.revision_file.is_none()
            && seen.hub_revision.is_none()
        {
            out.push(
                Finding::new(
                    "rehash.checkpoint-files",
                    Severity::Info,
                    format!(
                        "{what}: {} files hashed, but the card records no files, shard count or revision file and no --compare was given, so there is nothing to compare them with",
                        seen.manifest.entries.len()
                    ),
                )
                .file(file)
                .pointer("/checkpoint"),
            );
        }
        for (p, e) in &seen.unreadable {
            out.ran.insert("rehash.checkpoint-files");
            out.push(
                Finding::new(
                    "rehash.checkpoint-files",
                    Severity::Error,
                    format!("{what}: {p} cannot be read: {e}"),
                )
                .file(file)
                .pointer("/checkpoint"),
            );
        }
        for reference in recorded.iter().chain(m.reference.iter()) {
            out.ran.insert("rehash.checkpoint-files");
            let d = compare_manifests(&seen.manifest, reference, marker);
            out.push(diff_finding(&what, &reference.origin, &d, file));
        }
        if let Some(want) = ck.shards {
            out.ran.insert("rehash.checkpoint-shards");
            shards(&what, want, &seen.manifest, file, out);
        }
        if let Some(rf) = &ck.revision_file {
            revision_file(card, rf, seen, &what, file, out);
        }
        if let Some(h) = &seen.hub_revision {
            out.ran.insert("rehash.revision-file");
            let (want, which) = match &ck.snapshot {
                Some(s) => (s.as_str(), "snapshot"),
                None => (ck.revision.as_str(), "revision"),
            };
            if !same_revision(h, want) {
                out.push(
                    Finding::new(
                        "rehash.revision-file",
                        Severity::Error,
                        format!("{what} is the hub client's download of revision {h}, but the card's {which} is {want}"),
                    )
                    .file(file)
                    .pointer(if which == "snapshot" { "/checkpoint/snapshot" } else { "/checkpoint/revision" }),
                );
            }
        }
    }
    // The same checkpoint on several boxes: every file must agree.
    if m.checkpoints.len() > 1 {
        out.ran.insert("rehash.boxes-differ");
        let first = &m.checkpoints[0];
        for other in &m.checkpoints[1..] {
            let d = compare_manifests(&other.manifest, &first.manifest, marker);
            if !d.differ.is_empty() {
                let list: Vec<String> = d
                    .differ
                    .iter()
                    .map(|x| format!("{} ({}, {})", x.path, x.class.name(), x.kind))
                    .collect();
                let sev = if d.weights_equal() {
                    Severity::Warning
                } else {
                    Severity::Error
                };
                out.push(
                    Finding::new(
                        "rehash.boxes-differ",
                        sev,
                        format!(
                            "checkpoint folder {} differs from {} in {} files: {}",
                            other.at.describe(),
                            first.at.describe(),
                            d.differ.len(),
                            list.join(", ")
                        ),
                    )
                    .file(file)
                    .pointer("/checkpoint")
                    .data(json!({"weights_equal": d.weights_equal(), "differ": list})),
                );
            }
        }
    }
}

fn shards(what: &str, want: u32, manifest: &FileManifest, file: &str, out: &mut Out) {
    let (n, of, missing) = shard_series(manifest);
    let mut wrong = Vec::new();
    if n != want as usize {
        wrong.push(format!("it holds {n} weight shards, the card says {want}"));
    }
    if let Some(of) = of {
        if of != want {
            wrong.push(format!("the shard names count to {of}"));
        }
        if !missing.is_empty() {
            let shown: Vec<String> = missing.iter().take(10).map(|x| format!("{x:05}")).collect();
            wrong.push(format!(
                "{} numbered shards are missing ({})",
                missing.len(),
                shown.join(", ")
            ));
        }
    }
    let data = json!({"found": n, "card": want, "series_total": of, "missing": missing});
    let f = if wrong.is_empty() {
        Finding::new(
            "rehash.checkpoint-shards",
            Severity::Info,
            format!("{what}: {n} weight shards, as the card says"),
        )
    } else {
        Finding::new(
            "rehash.checkpoint-shards",
            Severity::Error,
            format!("{what}: {}", wrong.join("; ")),
        )
    };
    out.push(f.file(file).pointer("/checkpoint/shards").data(data));
}

fn revision_file(
    card: &Card,
    rf: &crate::records::card::RevisionFile,
    seen: &CheckpointSeen,
    what: &str,
    file: &str,
    out: &mut Out,
) {
    let ck = &card.checkpoint;
    let ptr = "/checkpoint/revision_file";
    let push = |out: &mut Out, sev, msg: String| {
        out.push(
            Finding::new("rehash.revision-file", sev, msg)
                .file(file)
                .pointer(ptr),
        )
    };
    match &seen.revision_file {
        None => {}
        Some(RevisionFileSeen::NotLocatable(why)) => push(
            out,
            Severity::Warning,
            format!(
                "{what}: the revision file '{}' was not checked: {why}",
                rf.path
            ),
        ),
        Some(RevisionFileSeen::Missing) => {
            out.ran.insert("rehash.revision-file");
            push(
                out,
                Severity::Error,
                format!(
                    "{what} has no revision file '{}', which the card says names {}",
                    rf.path, rf.content
                ),
            )
        }
        Some(RevisionFileSeen::Unreadable(e)) => {
            out.ran.insert("rehash.revision-file");
            push(
                out,
                Severity::Error,
                format!(
                    "{what}: the revision file '{}' cannot be read: {e}",
                    rf.path
                ),
            )
        }
        Some(RevisionFileSeen::Content(text)) => {
            out.ran.insert("rehash.revision-file");
            let got = text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("");
            if !same_revision(got, &rf.content) {
                push(
                    out,
                    Severity::Error,
                    format!(
                        "{what}: the revision file '{}' names '{got}', the card says it names {}",
                        rf.path, rf.content
                    ),
                );
            } else if let Some(s) = ck
                .snapshot
                .as_deref()
                .filter(|s| !same_revision(s, &ck.revision))
            {
                let sev = if same_revision(got, &ck.revision) {
                    Severity::Info
                } else {
                    Severity::Warning
                };
                push(
                    out,
                    sev,
                    format!(
                        "{what}: the revision file '{}' names {got} (written by {}), while the folder holds snapshot {s}, not the pinned revision {}; check that their weights are equal",
                        rf.path, rf.written_by, ck.revision
                    ),
                );
            } else if !same_revision(got, &ck.revision) {
                push(
                    out,
                    Severity::Error,
                    format!(
                        "{what}: the revision file '{}' names {got}, but the card pins revision {}",
                        rf.path, ck.revision
                    ),
                );
            } else {
                push(
                    out,
                    Severity::Info,
                    format!(
                        "{what}: the revision file '{}' names {got}, as the card says",
                        rf.path
                    ),
                );
            }
        }
    }
}

fn check_bundle_files(m: &Measured, out: &mut Out) {
    let mut matched = 0usize;
    for b in &m.bundle_files {
        let Some(want) = &b.recorded else { continue };
        match &b.sha256 {
            None if b.published => out.push(
                Finding::new(
                    "rehash.not-found",
                    Severity::Warning,
                    format!("{} is listed as published but is not in the bundle, so its sha256 was not checked", b.path),
                )
                .file(&b.path),
            ),
            None => {}
            Some(Err(e)) => {
                out.ran.insert("rehash.bundle-file-digest");
                out.push(
                    Finding::new("rehash.bundle-file-digest", Severity::Error, format!("{}: cannot be read: {e}", b.path)).file(&b.path),
                )
            }
            Some(Ok(got)) => {
                out.ran.insert("rehash.bundle-file-digest");
                let r = compare_digest(want, got);
                if r.ok() {
                    matched += 1;
                } else {
                    out.push(
                        Finding::new(
                            "rehash.bundle-file-digest",
                            Severity::Error,
                            format!("{}: sha256 is {got}, the manifest records {want} ({})", b.path, r.describe()),
                        )
                        .file(&b.path)
                        .data(json!({"recorded": want, "computed": got})),
                    );
                }
            }
        }
    }
    if matched > 0 {
        out.push(Finding::new(
            "rehash.bundle-file-digest",
            Severity::Info,
            format!("{matched} raw files of the bundle match the sha256 their manifest records"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL_PKG: &str = "250b7cd3aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const FULL_BIN: &str = "441a3847bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const FULL_NCCL: &str = "fc7ea663cccccccccccccccccccccccccccccccccccccccccccccccccccccccc";
    const OTHER: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    fn card() -> Card {
        serde_json::from_value(json!({
            "hardware": {"description": "2x GB10", "boxes": [{"name": "atom", "rank": 0}, {"name": "pgx", "rank": 1}]},
            "engine": {
                "name": "TensorFold", "version": "1.2.7",
                "package": {"file": "tensorfold-1.2.7-linux-aarch64.tar.gz", "sha256": "250b7cd3"},
                "binary": {"path": "tensorfold-native", "sha256": "441a3847"}
            },
            "nccl": {"version": "2.30.7", "file": "libnccl.so.2.30.7",
                     "per_box": [{"box": "atom", "sha256": "fc7ea663"}, {"box": "pgx", "sha256": "fc7ea663"}]},
            "checkpoint": {"repo": "Mia-AiLab/GLM", "revision": "76c0b517", "shards": 3,
                           "revision_file": {"path": "revision", "content": "76c0b517", "written_by": "download"}},
            "ranks": 2,
            "commands": [],
            "sampling": {"defaults": {}, "defaults_source": "x"},
            "measured": "2026-11-12T02:06:00Z"
        }))
        .expect("test card")
    }

    fn measured() -> Measured {
        Measured {
            card_file: "card.json".into(),
            searched: vec!["/roots".into()],
            ..Default::default()
        }
    }

    fn hashed(path: &str, d: &str) -> Hashed {
        Hashed {
            at: Location::file(path),
            sha256: Ok(d.to_string()),
        }
    }

    fn of<'a>(c: &'a Checked, id: &str) -> Vec<&'a Finding> {
        c.findings.iter().filter(|f| f.check == id).collect()
    }

    fn errors(c: &Checked) -> Vec<&Finding> {
        c.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .collect()
    }

    #[test]
    fn package_prefix_match_is_never_called_full() {
        let mut m = measured();
        m.package
            .push(hashed("/r/tensorfold-1.2.7-linux-aarch64.tar.gz", FULL_PKG));
        let c = check(&card(), &m);
        let f = of(&c, "rehash.package-digest");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].message.contains("matches the 8 published digits"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("full digest"));
        assert_eq!(f[0].data["match"], "prefix");
        assert!(c.checks_run.contains(&"rehash.package-digest".to_string()));
    }

    #[test]
    fn package_mismatch_fails() {
        let mut m = measured();
        m.package.push(hashed("/r/p.tar.gz", OTHER));
        let c = check(&card(), &m);
        let f = of(&c, "rehash.package-digest");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("the card records 250b7cd3"));
        assert_eq!(f[0].pointer.as_deref(), Some("/engine/package/sha256"));
    }

    #[test]
    fn full_digest_is_called_full() {
        let mut cd = card();
        cd.engine.package.as_mut().expect("package").sha256 = FULL_PKG.into();
        let mut m = measured();
        m.package.push(hashed("/r/p.tar.gz", FULL_PKG));
        let c = check(&cd, &m);
        assert!(of(&c, "rehash.package-digest")[0]
            .message
            .contains("matches the full digest"));
    }

    #[test]
    fn malformed_record_is_an_error() {
        let mut cd = card();
        cd.engine.package.as_mut().expect("package").sha256 = "250b7".into();
        let mut m = measured();
        m.package.push(hashed("/r/p.tar.gz", FULL_PKG));
        let c = check(&cd, &m);
        assert_eq!(of(&c, "rehash.package-digest")[0].severity, Severity::Error);
    }

    #[test]
    fn binary_member_pass_and_fail() {
        let mut m = measured();
        m.binary.push(Hashed {
            at: Location::file("/r/p.tar.gz").member("tf/tensorfold-native"),
            sha256: Ok(FULL_BIN.into()),
        });
        let c = check(&card(), &m);
        assert!(errors(&c).is_empty(), "{:?}", errors(&c));
        assert!(of(&c, "rehash.binary-digest")[0]
            .message
            .contains("/r/p.tar.gz!tf/tensorfold-native"));
        m.binary[0].sha256 = Ok(OTHER.into());
        let c = check(&card(), &m);
        assert_eq!(of(&c, "rehash.binary-digest")[0].severity, Severity::Error);
    }

    #[test]
    fn unreadable_file_is_an_error() {
        let mut m = measured();
        m.binary.push(Hashed {
            at: Location::file("/r/x"),
            sha256: Err("permission denied".into()),
        });
        let c = check(&card(), &m);
        let f = of(&c, "rehash.binary-digest");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(f[0].message.contains("permission denied"));
    }

    #[test]
    fn nothing_found_warns_and_runs_nothing() {
        let c = check(&card(), &measured());
        assert!(c.checks_run.is_empty(), "{:?}", c.checks_run);
        let nf = of(&c, "rehash.not-found");
        assert_eq!(nf.len(), 4, "{nf:?}");
        assert!(nf.iter().all(|f| f.severity == Severity::Warning));
        assert!(nf[0].message.contains("searched /roots"));
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        let mut m = measured();
        m.missing.push(MissingFile {
            kind: "nccl".into(),
            at: Location::file("/nope/libnccl.so.2"),
            why: "No such file".into(),
        });
        let c = check(&card(), &m);
        let nf: Vec<_> = of(&c, "rehash.not-found")
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        assert_eq!(nf.len(), 1);
        assert!(nf[0].message.contains("/nope/libnccl.so.2"));
    }

    fn nccl(box_name: Option<&str>, d: &str, v: NcclVersion) -> NcclSeen {
        let mut at = Location::file(format!("/{}/libnccl.so.2.30.7", box_name.unwrap_or("here")));
        at.box_name = box_name.map(String::from);
        NcclSeen {
            file: Hashed {
                at,
                sha256: Ok(d.into()),
            },
            version: v,
        }
    }

    #[test]
    fn nccl_digest_and_version_pass() {
        let mut m = measured();
        m.start_line_nccl = Some("2.30.7".into());
        m.nccl.push(nccl(
            Some("atom"),
            FULL_NCCL,
            NcclVersion::Queried { code: 23007 },
        ));
        m.nccl.push(nccl(
            Some("pgx"),
            FULL_NCCL,
            NcclVersion::Queried { code: 23007 },
        ));
        let c = check(&card(), &m);
        assert!(errors(&c).is_empty(), "{:?}", errors(&c));
        let v = of(&c, "rehash.nccl-version");
        assert_eq!(v.len(), 2);
        assert!(v[0].message.contains("2.30.7 (23007)"));
        assert!(v[0].message.contains("start line"));
        assert_eq!(of(&c, "rehash.nccl-digest").len(), 2);
        assert!(of(&c, "rehash.boxes-differ").is_empty());
        assert!(of(&c, "rehash.not-found")
            .iter()
            .all(|f| !f.message.contains("NCCL")));
    }

    #[test]
    fn nccl_digest_fails_on_one_box_and_names_it() {
        let mut m = measured();
        m.nccl.push(nccl(
            Some("atom"),
            FULL_NCCL,
            NcclVersion::Queried { code: 23007 },
        ));
        m.nccl.push(nccl(
            Some("pgx"),
            OTHER,
            NcclVersion::Queried { code: 23007 },
        ));
        m.nccl
            .push(nccl(None, FULL_NCCL, NcclVersion::Queried { code: 23007 }));
        let c = check(&card(), &m);
        let d = of(&c, "rehash.nccl-digest");
        assert_eq!(
            d.iter().filter(|f| f.severity == Severity::Error).count(),
            1
        );
        assert!(d
            .iter()
            .any(|f| f.severity == Severity::Error && f.message.contains("(box pgx)")));
        let b = of(&c, "rehash.boxes-differ");
        assert_eq!(b.len(), 1);
        assert!(b[0].message.contains("2 of 3 copies"), "{}", b[0].message);
        assert!(
            b[0].message.contains("(box pgx) has 0000"),
            "{}",
            b[0].message
        );
        assert!(!b[0].message.contains("(box atom) has"), "{}", b[0].message);
    }

    #[test]
    fn nccl_version_fails_against_card_and_start_line() {
        let mut m = measured();
        m.start_line_nccl = Some("2.30.7".into());
        m.nccl.push(nccl(
            Some("atom"),
            FULL_NCCL,
            NcclVersion::Queried { code: 23203 },
        ));
        let c = check(&card(), &m);
        let v = of(&c, "rehash.nccl-version");
        assert_eq!(v[0].severity, Severity::Error);
        assert!(v[0].message.contains("2.32.3 (23203)"), "{}", v[0].message);
        assert!(v[0].message.contains("the card says 2.30.7 (23007)"));
        assert!(v[0].message.contains("start line reports 2.30.7"));
    }

    #[test]
    fn card_and_start_line_disagree() {
        let mut m = measured();
        m.start_line_nccl = Some("2.28.3".into());
        let c = check(&card(), &m);
        let v = of(&c, "rehash.nccl-version");
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].severity, Severity::Error);
    }

    #[test]
    fn nccl_not_queried_is_a_warning_with_the_reason() {
        let mut m = measured();
        m.nccl.push(nccl(
            None,
            FULL_NCCL,
            NcclVersion::NotQueried {
                why: "built for aarch64".into(),
            },
        ));
        let c = check(&card(), &m);
        let v = of(&c, "rehash.nccl-version");
        assert_eq!(v[0].severity, Severity::Warning);
        assert!(v[0].message.contains("not queried: built for aarch64"));
        m.nccl[0].version = NcclVersion::FromText {
            version: "2.30.7".into(),
            why: "built for aarch64".into(),
        };
        let c = check(&card(), &m);
        let v = of(&c, "rehash.nccl-version");
        assert_eq!(v[0].severity, Severity::Info);
        assert!(v[0].message.contains("not queried (built for aarch64)"));
    }

    #[test]
    fn card_records_different_digests_per_box() {
        let mut cd = card();
        cd.nccl.as_mut().expect("nccl").per_box[1].sha256 = "deadbeef".into();
        let c = check(&cd, &measured());
        assert_eq!(of(&c, "rehash.boxes-differ")[0].severity, Severity::Error);
        // A full digest and its published prefix agree.
        cd.nccl.as_mut().expect("nccl").per_box[1].sha256 = FULL_NCCL.into();
        let c = check(&cd, &measured());
        assert!(of(&c, "rehash.boxes-differ").is_empty());
    }

    #[test]
    fn versions() {
        assert_eq!(nccl_code("2.30.7"), Some(23007));
        assert_eq!(nccl_code("2.32.3"), Some(23203));
        assert_eq!(nccl_code("2.30.7-1+cuda13.3"), Some(23007));
        assert_eq!(nccl_code("2.8.4"), Some(2804));
        assert_eq!(nccl_code("2.x"), None);
        assert_eq!(nccl_dotted(23007), "2.30.7");
        assert_eq!(nccl_dotted(2804), "2.8.4");
    }

    #[test]
    fn classes() {
        assert_eq!(
            classify("model-00001-of-00083.safetensors", None),
            FileClass::Weight
        );
        assert_eq!(classify("config.json", None), FileClass::Config);
        assert_eq!(
            classify("model.safetensors.index.json", None),
            FileClass::Config
        );
        assert_eq!(classify("merges.txt", None), FileClass::Config);
        assert_eq!(classify("README.md", None), FileClass::Doc);
        assert_eq!(classify("LICENSE", None), FileClass::Doc);
        assert_eq!(classify("revision", Some("revision")), FileClass::Marker);
    }

    fn mf(origin: &str, files: &[(&str, &str)]) -> FileManifest {
        FileManifest {
            origin: origin.into(),
            entries: files
                .iter()
                .map(|(p, d)| ManifestEntry {
                    path: p.to_string(),
                    sha256: d.to_string(),
                })
                .collect(),
        }
    }

    fn ckpt(files: &[(&str, &str)], rev: Option<&str>) -> CheckpointSeen {
        CheckpointSeen {
            at: Location::file("/m/GLM"),
            manifest: mf("/m/GLM", files),
            unreadable: vec![],
            revision_file: rev.map(|r| RevisionFileSeen::Content(format!("{r}\n"))),
            hub_revision: None,
        }
    }

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn three_shards(readme: &str, config: &str) -> Vec<(&'static str, String)> {
        vec![
            ("model-00001-of-00003.safetensors", A.to_string()),
            ("model-00002-of-00003.safetensors", A.to_string()),
            ("model-00003-of-00003.safetensors", A.to_string()),
            ("config.json", config.to_string()),
            ("README.md", readme.to_string()),
        ]
    }

    fn as_refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
        v.iter().map(|(p, d)| (*p, d.as_str())).collect()
    }

    #[test]
    fn snapshot_weights_equal_when_only_the_model_card_differs() {
        // 078455ff vs 76c0b517: same weights and config, another README.
        let pin = three_shards(A, A);
        let snap = three_shards(B, A);
        let mut m = measured();
        m.checkpoints.push(ckpt(&as_refs(&snap), Some("76c0b517")));
        m.reference = Some(mf("folder of revision 76c0b517", &as_refs(&pin)));
        let c = check(&card(), &m);
        let f = of(&c, "rehash.checkpoint-files");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Info, "{}", f[0].message);
        assert!(f[0].message.contains("is weights-equal"));
        assert!(
            f[0].message.contains("README.md (doc, changed)"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].data["weights_equal"], true);
    }

    #[test]
    fn changed_config_breaks_weights_equality_and_is_listed() {
        let pin = three_shards(A, A);
        let snap = three_shards(A, B);
        let mut m = measured();
        m.checkpoints.push(ckpt(&as_refs(&snap), Some("76c0b517")));
        m.reference = Some(mf("pin", &as_refs(&pin)));
        let c = check(&card(), &m);
        let f = of(&c, "rehash.checkpoint-files");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message.contains("config.json (config, changed)"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("README"));
    }

    #[test]
    fn recorded_files_with_prefixes_and_a_missing_shard() {
        let mut cd = card();
        cd.checkpoint.files = serde_json::from_value(json!([
            {"path": "model-00001-of-00003.safetensors", "sha256": "aaaaaaaa"},
            {"path": "model-00002-of-00003.safetensors", "sha256": A},
        ]))
        .expect("files");
        let mut m = measured();
        m.checkpoints.push(ckpt(
            &[("model-00001-of-00003.safetensors", A)],
            Some("76c0b517"),
        ));
        let c = check(&cd, &m);
        let f = of(&c, "rehash.checkpoint-files");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message
                .contains("model-00002-of-00003.safetensors (weight, missing)"),
            "{}",
            f[0].message
        );
        let s = of(&c, "rehash.checkpoint-shards");
        assert_eq!(s[0].severity, Severity::Error);
        assert!(
            s[0].message
                .contains("holds 1 weight shards, the card says 3"),
            "{}",
            s[0].message
        );
        assert!(
            s[0].message
                .contains("2 numbered shards are missing (00002, 00003)"),
            "{}",
            s[0].message
        );
    }

    #[test]
    fn shard_count_passes() {
        let mut m = measured();
        m.checkpoints
            .push(ckpt(&as_refs(&three_shards(A, A)), Some("76c0b517")));
        let c = check(&card(), &m);
        let s = of(&c, "rehash.checkpoint-shards");
        assert_eq!(s[0].severity, Severity::Info);
        assert!(errors(&c).is_empty(), "{:?}", errors(&c));
    }

    #[test]
    fn revision_file_pass_and_fail() {
        let mut m = measured();
        m.checkpoints
            .push(ckpt(&as_refs(&three_shards(A, A)), Some("76c0b517f00d")));
        let c = check(&card(), &m);
        assert_eq!(of(&c, "rehash.revision-file")[0].severity, Severity::Info);
        m.checkpoints[0].revision_file = Some(RevisionFileSeen::Content("078455ff".into()));
        let c = check(&card(), &m);
        let r = of(&c, "rehash.revision-file");
        assert_eq!(r[0].severity, Severity::Error);
        assert!(r[0].message.contains("names '078455ff'"));
        m.checkpoints[0].revision_file = Some(RevisionFileSeen::Missing);
        let c = check(&card(), &m);
        assert_eq!(of(&c, "rehash.revision-file")[0].severity, Severity::Error);
    }

    #[test]
    fn hand_written_marker_over_a_snapshot_is_said() {
        let mut cd = card();
        cd.checkpoint.snapshot = Some("078455ff".into());
        let mut m = measured();
        m.checkpoints
            .push(ckpt(&as_refs(&three_shards(A, A)), Some("76c0b517")));
        m.checkpoints[0].hub_revision = Some("078455ff0123456789abcdef0123456789abcdef".into());
        let c = check(&cd, &m);
        let r = of(&c, "rehash.revision-file");
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].message.contains("snapshot 078455ff"));
        m.checkpoints[0].hub_revision = Some("11111111aaaa".into());
        let c = check(&cd, &m);
        assert!(of(&c, "rehash.revision-file")
            .iter()
            .any(|f| f.severity == Severity::Error));
    }

    #[test]
    fn checkpoints_on_two_boxes_differ() {
        let mut m = measured();
        m.checkpoints
            .push(ckpt(&as_refs(&three_shards(A, A)), Some("76c0b517")));
        let mut other = ckpt(&as_refs(&three_shards(A, A)), Some("76c0b517"));
        other.manifest.entries[1].sha256 = B.into();
        other.at = other.at.on("pgx");
        m.checkpoints.push(other);
        let c = check(&card(), &m);
        let b = of(&c, "rehash.boxes-differ");
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].severity, Severity::Error);
        assert!(b[0].message.contains("model-00002-of-00003.safetensors"));
        assert!(b[0].message.contains("(box pgx)"));
    }

    #[test]
    fn bundle_files() {
        let mut m = measured();
        m.bundle_files.push(BundleFileSeen {
            path: "card.json".into(),
            recorded: Some(A.into()),
            published: true,
            sha256: Some(Ok(A.into())),
        });
        m.bundle_files.push(BundleFileSeen {
            path: "speed/x.json".into(),
            recorded: Some(A.into()),
            published: true,
            sha256: Some(Ok(B.into())),
        });
        m.bundle_files.push(BundleFileSeen {
            path: "gone.json".into(),
            recorded: Some(A.into()),
            published: true,
            sha256: None,
        });
        let c = check(&card(), &m);
        let d = of(&c, "rehash.bundle-file-digest");
        assert_eq!(
            d.iter().filter(|f| f.severity == Severity::Error).count(),
            1
        );
        assert!(d.iter().any(|f| f.message.starts_with("1 raw files")));
        assert!(of(&c, "rehash.not-found")
            .iter()
            .any(|f| f.file.as_deref() == Some("gone.json")));
    }

    #[test]
    fn revisions() {
        assert!(same_revision("76c0b517", "76c0b517abcdef"));
        assert!(!same_revision("76c0b51", "76c0b527"));
        assert!(!same_revision("76c0", "76c0b517"));
        assert!(!same_revision("", ""));
    }

    #[test]
    fn ids_are_in_the_catalogue() {
        let c = check(&card(), &measured());
        for f in &c.findings {
            assert!(
                CHECKS.iter().any(|k| k.id == f.check),
                "{} not in CHECKS",
                f.check
            );
        }
    }
}
