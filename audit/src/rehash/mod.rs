//! `rehash.*`: the digests and versions a card records, checked against files a user has.
//!
//! The CLI finds each artifact (engine package, the binary inside it, the NCCL library of every box,
//! checkpoint folders, the bundle's own raw files), hashes it and asks the NCCL library for its
//! version; it hands what it measured to [`check`] as a [`Measured`]. Everything here is pure: no
//! file is read and no library is loaded.
//!
//! The rows are [`CHECKS`], each with its function ([`Run`]: the card and what was measured);
//! [`check`] runs them in order. The functions live with the artifact they read: `artifact` (the
//! engine package and its binary), `nccl`, `checkpoint`, `bundle_files`; the two rows that span
//! every artifact, [`BOXES_DIFFER`] (copies on several boxes) and [`NOT_FOUND`], ask each of them
//! in turn.
//!
//! A recorded digest may be full (64 hex digits) or the prefix a page shows (at least 8); a prefix
//! match is always reported as "matches the N published digits", never as a full match.

use crate::check::{Check, Emit, Ran};
use crate::records::Card;
use crate::report::{Finding, Findings, Severity};

use crate::schema::{compare_digest, DigestMatch};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

mod artifact;
mod bundle_files;
mod checkpoint;
mod nccl;

pub use artifact::{copies_agree, digest_finding};
pub use checkpoint::{
    classify, compare_manifests, same_revision, shard_series, FileClass, FileDiff, ManifestDiff,
};
pub use nccl::{nccl_code, nccl_dotted};

/// What a `rehash.*` row runs: it reads the card and what the CLI measured; `Some(())` when it
/// compared something.
pub type Run = fn(&Card, &Measured, &mut Emit) -> Ran;

/// `rehash.package-digest`.
pub const PACKAGE_DIGEST: Check<Run> = Check {
    id: "rehash.package-digest",
    severity: Severity::Error,
    doc: "The engine package's sha256 differs from the card's (a match on the published digits only is said so).",
    run: artifact::package_digest,
};

/// `rehash.binary-digest`.
pub const BINARY_DIGEST: Check<Run> = Check {
    id: "rehash.binary-digest",
    severity: Severity::Error,
    doc: "The binary inside the package (or a copy on a box) differs from the sha256 the card records.",
    run: artifact::binary_digest,
};

/// `rehash.nccl-digest`.
pub const NCCL_DIGEST: Check<Run> = Check {
    id: "rehash.nccl-digest",
    severity: Severity::Error,
    doc: "An NCCL library file differs from the sha256 the card records for its box.",
    run: nccl::nccl_digests,
};

/// `rehash.nccl-version`.
pub const NCCL_VERSION: Check<Run> = Check {
    id: "rehash.nccl-version",
    severity: Severity::Error,
    doc: "The version the NCCL file itself reports differs from the card or the engine's start line (warning: not queried, and why).",
    run: nccl::nccl_versions,
};

/// `rehash.boxes-differ`.
pub const BOXES_DIFFER: Check<Run> = Check {
    id: "rehash.boxes-differ",
    severity: Severity::Error,
    doc: "Copies of one artifact on several boxes or ranks have different digests; names the one that differs.",
    run: boxes_differ,
};

/// `rehash.checkpoint-files`.
pub const CHECKPOINT_FILES: Check<Run> = Check {
    id: "rehash.checkpoint-files",
    severity: Severity::Error,
    doc: "A weight or config file of a checkpoint differs from the recorded or compared manifest (not weights-equal).",
    run: checkpoint::checkpoint_files,
};

/// `rehash.checkpoint-shards`.
pub const CHECKPOINT_SHARDS: Check<Run> = Check {
    id: "rehash.checkpoint-shards",
    severity: Severity::Error,
    doc: "The number of weight shards differs from the card, or the numbered series has gaps.",
    run: checkpoint::checkpoint_shards,
};

/// `rehash.revision-file`.
pub const REVISION_FILE: Check<Run> = Check {
    id: "rehash.revision-file",
    severity: Severity::Error,
    doc: "The checkpoint's revision file is missing or names another revision than the card.",
    run: checkpoint::revision_files,
};

/// `rehash.bundle-file-digest`.
pub const BUNDLE_FILE_DIGEST: Check<Run> = Check {
    id: "rehash.bundle-file-digest",
    severity: Severity::Error,
    doc: "A raw file of the bundle differs from the sha256 its manifest records.",
    run: bundle_files::bundle_file_digests,
};

/// `rehash.not-found`.
pub const NOT_FOUND: Check<Run> = Check {
    id: "rehash.not-found",
    severity: Severity::Error,
    doc: "An artifact the card records was not found, so it was not checked (error when named with --file).",
    run: not_found,
};

/// `rehash.*` checks.
pub const CHECKS: &[Check<Run>] = &[
    PACKAGE_DIGEST,
    BINARY_DIGEST,
    NCCL_DIGEST,
    NCCL_VERSION,
    BOXES_DIFFER,
    CHECKPOINT_FILES,
    CHECKPOINT_SHARDS,
    REVISION_FILE,
    BUNDLE_FILE_DIGEST,
    NOT_FOUND,
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
    /// The file is no shared library at all (its ELF header is missing): it cannot be the library
    /// an engine loaded, whatever its digest.
    NotLibrary {
        /// What it is instead (`ELF header missing; it starts with "hello"`).
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

/// Runs every `rehash.*` row over what was measured: the ids of the rows that compared something
/// are its `ran` (empty when nothing was checked), and matches are findings too (as info), so a
/// reader sees what was verified.
pub fn check(card: &Card, m: &Measured) -> Findings {
    let mut out = Findings::default();
    for row in CHECKS {
        out.check(row, |run, emit| run(card, m, emit));
    }
    out
}

/// `rehash.boxes-differ`: the copies of each artifact on several boxes (the engine's package and
/// binary, the NCCL library and the card's own per-box record of it, the checkpoint folders).
fn boxes_differ(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let compared = [
        artifact::engine_copies(card, m, out),
        nccl::nccl_copies(card, m, out),
        checkpoint::checkpoint_copies(card, m, out),
    ];
    compared.contains(&true).then_some(())
}

/// `rehash.not-found`: every artifact the card records that was not found (a warning: it went
/// unchecked), and every file named with `--file` that cannot be opened (an error: the row ran).
fn not_found(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    artifact::engine_not_found(card, m, out);
    nccl::nccl_not_found(card, m, out);
    checkpoint::checkpoint_not_found(card, m, out);
    bundle_files::bundle_files_not_found(m, out);
    for miss in &m.missing {
        out.finding(format!(
            "{} given with --file cannot be opened: {}",
            miss.at.describe(),
            miss.why
        ))
        .data(json!({"kind": miss.kind, "at": miss.at.data(), "why": miss.why}));
    }
    (!m.missing.is_empty()).then_some(())
}

/// [`check`] as a command's [`Findings`]: when no artifact the card records was found (only the
/// bundle's own files were checked), an error says so and no check counts as run.
pub fn findings(card: &Card, m: &Measured) -> Findings {
    let mut checked = check(card, m);
    if checked.ran.iter().any(|c| c != BUNDLE_FILE_DIGEST.id) {
        if nothing_found(&checked, m) {
            checked.incomplete = Some(none_found(m));
        }
        return checked;
    }
    let mut found = Findings {
        findings: checked.findings,
        ..Findings::default()
    };
    let searched = if m.searched.is_empty() {
        "give --root DIR or --file NAME=PATH".to_string()
    } else {
        m.searched.join(", ")
    };
    found
        .emitter(&NOT_FOUND)
        .finding(format!(
            "no artifact the card records was found ({searched}), so nothing but the bundle's own files was checked"
        ))
        .file(&m.card_file);
    found.incomplete = Some(none_found(m));
    found
}

/// Why a rehash that found none of the card's artifacts is incomplete, and what to give it.
fn none_found(m: &Measured) -> String {
    format!(
        "none of the artifacts the card records was found ({}): give --root DIR or --file NAME=PATH where they are",
        searched(m)
    )
}

/// Whether the rehash found none of what it was asked to hash: no package, binary, NCCL library
/// or checkpoint folder was hashed, and some artifact was not found.
fn nothing_found(checked: &Findings, m: &Measured) -> bool {
    let hashed = !(m.package.is_empty()
        && m.binary.is_empty()
        && m.nccl.is_empty()
        && m.checkpoints.is_empty());
    let not_found = |sev: Severity| {
        checked
            .findings
            .iter()
            .any(|f| f.check == NOT_FOUND.id && f.severity == sev)
    };
    // A file named with --file that is not there is an error: the run fails on it.
    !hashed && not_found(Severity::Warning) && !not_found(Severity::Error)
}

fn searched(m: &Measured) -> String {
    if m.searched.is_empty() {
        "no --root or --file was given for it".to_string()
    } else {
        format!("searched {}", m.searched.join(", "))
    }
}

/// A `rehash.not-found` warning: `what` was not found, so `tail` went unchecked.
fn unchecked(m: &Measured, what: &str, pointer: &str, tail: &str, out: &mut Emit) {
    out.warning(format!(
        "{what} was not found ({}), so {tail} went unchecked",
        searched(m)
    ))
    .at(&m.card_file, pointer);
}

#[cfg(test)]
mod tests;
