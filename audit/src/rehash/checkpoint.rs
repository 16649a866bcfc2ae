//! Checkpoint folders: their files against the recorded or compared manifest, the weight shards,
//! the revision file.

use super::*;
use crate::records::card::Checkpoint;

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
pub fn compare_manifests<'a>(
    found: &'a FileManifest,
    reference: &'a FileManifest,
    marker: Option<&str>,
) -> ManifestDiff {
    let by_path = |m: &'a FileManifest| -> BTreeMap<&'a str, &'a str> {
        m.entries
            .iter()
            .map(|e| (e.path.as_str(), e.sha256.as_str()))
            .collect()
    };
    let (here, there) = (by_path(found), by_path(reference));
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
            CHECKPOINT_FILES.id,
            Severity::Error,
            format!(
                "{what}: {} recorded digests of {reference} are not 8 to 64 hex digits: {}",
                d.malformed.len(),
                d.malformed.join(", ")
            ),
        )
    } else if d.weights_equal() && d.differ.is_empty() {
        Finding::new(
            CHECKPOINT_FILES.id,
            Severity::Info,
            format!(
                "{what} is weights-equal to {reference}: all {matched} files match{prefix_note}"
            ),
        )
    } else if d.weights_equal() {
        Finding::new(CHECKPOINT_FILES.id,
            Severity::Info,
            format!("{what} is weights-equal to {reference}: {matched} weight and config files match{prefix_note}; only these differ: {shown}"),
        )
    } else {
        let n = d.differ.iter().filter(|x| x.class.counts()).count();
        Finding::new(CHECKPOINT_FILES.id,
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

/// Words for a checkpoint folder found.
fn folder(seen: &CheckpointSeen) -> String {
    format!("checkpoint folder {}", seen.at.describe())
}

/// `rehash.checkpoint-files`: every checkpoint folder found against the files the card records
/// and the manifest given with `--compare`.
pub(super) fn checkpoint_files(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let recorded = recorded_manifest(&card.checkpoint);
    let mut compared = false;
    for seen in &m.checkpoints {
        compared |= files_of(card, m, seen, recorded.as_ref(), out);
    }
    compared.then_some(())
}

/// `rehash.checkpoint-shards`: the weight shards of every folder found against the card's count.
pub(super) fn checkpoint_shards(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let want = card.checkpoint.shards?;
    for seen in &m.checkpoints {
        shards(&folder(seen), want, &seen.manifest, &m.card_file, out);
    }
    (!m.checkpoints.is_empty()).then_some(())
}

/// `rehash.revision-file`: every folder's revision file and the revision a hub client's cache
/// names, against the card.
pub(super) fn revision_files(card: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let ck = &card.checkpoint;
    let mut compared = false;
    for seen in &m.checkpoints {
        let what = folder(seen);
        if let Some(rf) = &ck.revision_file {
            compared |= revision_file(card, rf, seen, &what, &m.card_file, out);
        }
        if let Some(h) = &seen.hub_revision {
            hub_revision(ck, h, &what, &m.card_file, out);
            compared = true;
        }
    }
    compared.then_some(())
}

/// The checkpoint, when no folder of it was found (`rehash.not-found`).
pub(super) fn checkpoint_not_found(card: &Card, m: &Measured, out: &mut Emit) {
    let ck = &card.checkpoint;
    if m.checkpoints.is_empty() {
        let what = format!("a checkpoint folder of {} at {}", ck.repo, ck.revision);
        unchecked(m, &what, "/checkpoint", "its files", out);
    }
}

/// The files the card records for the checkpoint, as a manifest.
fn recorded_manifest(ck: &Checkpoint) -> Option<FileManifest> {
    (!ck.files.is_empty()).then(|| FileManifest {
        origin: format!("the files the card records for {}", ck.revision),
        entries: ck
            .files
            .iter()
            .map(|f| ManifestEntry {
                path: f.path.clone(),
                sha256: f.sha256.clone(),
            })
            .collect(),
    })
}

/// One checkpoint folder against the card's files and `--compare`; whether it was compared.
fn files_of(
    card: &Card,
    m: &Measured,
    seen: &CheckpointSeen,
    recorded: Option<&FileManifest>,
    out: &mut Emit,
) -> bool {
    let ck = &card.checkpoint;
    let file = &m.card_file;
    let marker = ck.revision_file.as_ref().map(|r| r.path.as_str());
    let what = folder(seen);
    if recorded.is_none()
        && m.reference.is_none()
        && ck.shards.is_none()
        && ck.revision_file.is_none()
        && seen.hub_revision.is_none()
    {
        out.info(format!(
            "{what}: {} files hashed, but the card records no files, shard count or revision file and no --compare was given, so there is nothing to compare them with",
            seen.manifest.entries.len()
        ))
        .at(file, "/checkpoint");
    }
    for (p, e) in &seen.unreadable {
        out.finding(format!("{what}: {p} cannot be read: {e}"))
            .at(file, "/checkpoint");
    }
    let mut compared = !seen.unreadable.is_empty();
    for reference in recorded.into_iter().chain(m.reference.iter()) {
        compared = true;
        let d = compare_manifests(&seen.manifest, reference, marker);
        out.push(diff_finding(&what, &reference.origin, &d, file));
    }
    compared
}

/// The revision the hub client downloaded against the card's snapshot (or revision).
fn hub_revision(ck: &Checkpoint, h: &str, what: &str, file: &str, out: &mut Emit) {
    let (want, which) = match &ck.snapshot {
        Some(s) => (s.as_str(), "snapshot"),
        None => (ck.revision.as_str(), "revision"),
    };
    if !same_revision(h, want) {
        out.finding(format!(
            "{what} is the hub client's download of revision {h}, but the card's {which} is {want}"
        ))
        .at(
            file,
            if which == "snapshot" {
                "/checkpoint/snapshot"
            } else {
                "/checkpoint/revision"
            },
        );
    }
}

/// The same checkpoint on several boxes: every file must agree (`rehash.boxes-differ`); whether
/// there were several.
pub(super) fn checkpoint_copies(card: &Card, m: &Measured, out: &mut Emit) -> bool {
    let marker = card
        .checkpoint
        .revision_file
        .as_ref()
        .map(|r| r.path.as_str());
    if m.checkpoints.len() < 2 {
        return false;
    }
    let first = &m.checkpoints[0];
    for other in &m.checkpoints[1..] {
        let d = compare_manifests(&other.manifest, &first.manifest, marker);
        if d.differ.is_empty() {
            continue;
        }
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
        out.at_severity(
            sev,
            format!(
                "checkpoint folder {} differs from {} in {} files: {}",
                other.at.describe(),
                first.at.describe(),
                d.differ.len(),
                list.join(", ")
            ),
        )
        .at(&m.card_file, "/checkpoint")
        .data(json!({"weights_equal": d.weights_equal(), "differ": list}));
    }
    true
}

fn shards(what: &str, want: u32, manifest: &FileManifest, file: &str, out: &mut Emit) {
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
            CHECKPOINT_SHARDS.id,
            Severity::Info,
            format!("{what}: {n} weight shards, as the card says"),
        )
    } else {
        Finding::new(
            CHECKPOINT_SHARDS.id,
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
    out: &mut Emit,
) -> bool {
    let (sev, msg) = match &seen.revision_file {
        None => return false,
        Some(RevisionFileSeen::NotLocatable(why)) => (
            Severity::Warning,
            format!(
                "{what}: the revision file '{}' was not checked: {why}",
                rf.path
            ),
        ),
        Some(RevisionFileSeen::Missing) => (
            Severity::Error,
            format!(
                "{what} has no revision file '{}', which the card says names {}",
                rf.path, rf.content
            ),
        ),
        Some(RevisionFileSeen::Unreadable(e)) => (
            Severity::Error,
            format!(
                "{what}: the revision file '{}' cannot be read: {e}",
                rf.path
            ),
        ),
        Some(RevisionFileSeen::Content(text)) => revision_named(&card.checkpoint, rf, text, what),
    };
    out.at_severity(sev, msg)
        .at(file, "/checkpoint/revision_file");
    !matches!(seen.revision_file, Some(RevisionFileSeen::NotLocatable(_)))
}

/// What the revision file's first line names, against what the card says it names, the pinned
/// revision and the snapshot the folder holds.
fn revision_named(
    ck: &Checkpoint,
    rf: &crate::records::card::RevisionFile,
    text: &str,
    what: &str,
) -> (Severity, String) {
    let got = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let snapshot = ck
        .snapshot
        .as_deref()
        .filter(|s| !same_revision(s, &ck.revision));
    if !same_revision(got, &rf.content) {
        (
            Severity::Error,
            format!(
                "{what}: the revision file '{}' names '{got}', the card says it names {}",
                rf.path, rf.content
            ),
        )
    } else if let Some(s) = snapshot {
        let sev = if same_revision(got, &ck.revision) {
            Severity::Info
        } else {
            Severity::Warning
        };
        (
            sev,
            format!(
                "{what}: the revision file '{}' names {got} (written by {}), while the folder holds snapshot {s}, not the pinned revision {}; check that their weights are equal",
                rf.path, rf.written_by, ck.revision
            ),
        )
    } else if !same_revision(got, &ck.revision) {
        (
            Severity::Error,
            format!(
                "{what}: the revision file '{}' names {got}, but the card pins revision {}",
                rf.path, ck.revision
            ),
        )
    } else {
        (
            Severity::Info,
            format!(
                "{what}: the revision file '{}' names {got}, as the card says",
                rf.path
            ),
        )
    }
}
