//! `rehash.*`: the digests and versions a card records, checked against files a user has.
//!
//! The CLI finds each artifact (engine package, the binary inside it, the NCCL library of every box,
//! checkpoint folders, the bundle's own raw files), hashes it and asks the NCCL library for its
//! version; it hands what it measured to [`check`] as a [`Measured`]. Everything here is pure: no
//! file is read and no library is loaded.
//!
//! The rows are [`CHECKS`], all decided by one stage, [`ARTIFACTS`]: [`check`] runs its passes
//! ([`PASSES`]) in order, one per artifact: `artifact` (the engine package and its binary, one
//! check of two artifacts), `nccl`, `checkpoint`, `bundle_files`, and the files named with
//! `--file` that cannot be opened. A pass reports under every row its artifact concerns (an NCCL
//! library's digest, its version, its copies on several boxes, the artifact not found).
//!
//! A recorded digest may be full (64 hex digits) or the prefix a page shows (at least 8); a prefix
//! match is always reported as "matches the N published digits", never as a full match.

use crate::check::{Check, Stage, StageOut, Staged};
use crate::records::Card;
use crate::report::{Finding, Findings, Severity};

use crate::schema::{compare_digest, DigestMatch};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

mod artifact;
mod bundle_files;
mod checkpoint;
mod nccl;

use artifact::{check_binary, check_package};
pub use artifact::{copies_agree, digest_finding};
use bundle_files::check_bundle_files;
use checkpoint::check_checkpoints;
pub use checkpoint::{
    classify, compare_manifests, same_revision, shard_series, FileClass, FileDiff, ManifestDiff,
};
use nccl::check_nccl;
pub use nccl::{nccl_code, nccl_dotted};

/// One pass of the rehash stage: it reads the card and what the CLI measured and reports about
/// one artifact, under any row of [`ARTIFACTS`].
pub type Pass = fn(&Card, &Measured, &mut StageOut);

/// What every `rehash.*` row holds: the stage that decides it.
const BY_ARTIFACTS: Staged = Staged("rehash.artifacts");

/// `rehash.package-digest`.
pub const PACKAGE_DIGEST: Check<Staged> = Check {
    id: "rehash.package-digest",
    severity: Severity::Error,
    doc: "The engine package's sha256 differs from the card's (a match on the published digits only is said so).",
    run: BY_ARTIFACTS,
};

/// `rehash.binary-digest`.
pub const BINARY_DIGEST: Check<Staged> = Check {
    id: "rehash.binary-digest",
    severity: Severity::Error,
    doc: "The binary inside the package (or a copy on a box) differs from the sha256 the card records.",
    run: BY_ARTIFACTS,
};

/// `rehash.nccl-digest`.
pub const NCCL_DIGEST: Check<Staged> = Check {
    id: "rehash.nccl-digest",
    severity: Severity::Error,
    doc: "An NCCL library file differs from the sha256 the card records for its box.",
    run: BY_ARTIFACTS,
};

/// `rehash.nccl-version`.
pub const NCCL_VERSION: Check<Staged> = Check {
    id: "rehash.nccl-version",
    severity: Severity::Error,
    doc: "The version the NCCL file itself reports differs from the card or the engine's start line (warning: not queried, and why).",
    run: BY_ARTIFACTS,
};

/// `rehash.boxes-differ`.
pub const BOXES_DIFFER: Check<Staged> = Check {
    id: "rehash.boxes-differ",
    severity: Severity::Error,
    doc: "Copies of one artifact on several boxes or ranks have different digests; names the one that differs.",
    run: BY_ARTIFACTS,
};

/// `rehash.checkpoint-files`.
pub const CHECKPOINT_FILES: Check<Staged> = Check {
    id: "rehash.checkpoint-files",
    severity: Severity::Error,
    doc: "A weight or config file of a checkpoint differs from the recorded or compared manifest (not weights-equal).",
    run: BY_ARTIFACTS,
};

/// `rehash.checkpoint-shards`.
pub const CHECKPOINT_SHARDS: Check<Staged> = Check {
    id: "rehash.checkpoint-shards",
    severity: Severity::Error,
    doc: "The number of weight shards differs from the card, or the numbered series has gaps.",
    run: BY_ARTIFACTS,
};

/// `rehash.revision-file`.
pub const REVISION_FILE: Check<Staged> = Check {
    id: "rehash.revision-file",
    severity: Severity::Error,
    doc: "The checkpoint's revision file is missing or names another revision than the card.",
    run: BY_ARTIFACTS,
};

/// `rehash.bundle-file-digest`.
pub const BUNDLE_FILE_DIGEST: Check<Staged> = Check {
    id: "rehash.bundle-file-digest",
    severity: Severity::Error,
    doc: "A raw file of the bundle differs from the sha256 its manifest records.",
    run: BY_ARTIFACTS,
};

/// `rehash.not-found`.
pub const NOT_FOUND: Check<Staged> = Check {
    id: "rehash.not-found",
    severity: Severity::Error,
    doc: "An artifact the card records was not found, so it was not checked (error when named with --file).",
    run: BY_ARTIFACTS,
};

/// The rehash stage: every artifact the card records, against what was measured.
pub const ARTIFACTS: Stage = Stage {
    name: BY_ARTIFACTS.0,
    rows: &[
        PACKAGE_DIGEST.about(),
        BINARY_DIGEST.about(),
        NCCL_DIGEST.about(),
        NCCL_VERSION.about(),
        BOXES_DIFFER.about(),
        CHECKPOINT_FILES.about(),
        CHECKPOINT_SHARDS.about(),
        REVISION_FILE.about(),
        BUNDLE_FILE_DIGEST.about(),
        NOT_FOUND.about(),
    ],
};

/// The passes of [`ARTIFACTS`], in the order [`check`] runs them.
pub const PASSES: &[Pass] = &[
    check_package,
    check_binary,
    check_nccl,
    check_checkpoints,
    check_bundle_files,
    check_missing,
];

/// `rehash.*` checks.
pub const CHECKS: &[Check<Staged>] = &[
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

/// Runs the rehash stage over what was measured: the ids of the rows that compared something
/// are its `ran` (empty when nothing was checked), and matches are findings too (as info), so a
/// reader sees what was verified.
pub fn check(card: &Card, m: &Measured) -> Findings {
    let mut out = Findings::default();
    out.stage(&ARTIFACTS, |s| {
        for pass in PASSES {
            pass(card, m, s);
        }
    });
    out
}

/// Artifacts named with `--file` that cannot be opened.
fn check_missing(_: &Card, m: &Measured, out: &mut StageOut) {
    for miss in &m.missing {
        out.decided(&NOT_FOUND);
        out.row(&NOT_FOUND)
            .finding(format!(
                "{} given with --file cannot be opened: {}",
                miss.at.describe(),
                miss.why
            ))
            .data(json!({"kind": miss.kind, "at": miss.at.data(), "why": miss.why}));
    }
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
    found.stage(&ARTIFACTS, |s| {
        s.row(&NOT_FOUND)
            .finding(format!(
                "no artifact the card records was found ({searched}), so nothing but the bundle's own files was checked"
            ))
            .file(&m.card_file);
    });
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

fn not_found(m: &Measured, what: &str, pointer: &str, tail: &str, out: &mut StageOut) {
    out.row(&NOT_FOUND)
        .warning(format!(
            "{what} was not found ({}), so {tail} went unchecked",
            searched(m)
        ))
        .at(&m.card_file, pointer);
}

#[cfg(test)]
mod tests;
