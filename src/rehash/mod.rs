//! `rigaudit rehash BUNDLE --root DIR`: hashes the artifacts a bundle's card records (engine
//! package, the binary inside it, the NCCL library of every box, checkpoint folders, the bundle's
//! own raw files), asks each NCCL library for its version, and compares everything with the card.
//!
//! This module does the I/O, as a pipeline of named stages ([`stage_with_card`]): plan jobs -> hash ->
//! collate -> ask NCCL -> write manifest -> check; the rules live in [`rigaudit_audit::rehash`].

pub mod archive;
pub mod discover;
pub mod hash;
pub mod nccl;
mod plan;
pub mod reach;
pub mod remote;

use crate::bundle;
use crate::fatal::{fatal, At, Fatal};
use crate::schemas;
use archive::Kind;
use discover::{FoundFile, Root};
use hash::Progress;
use plan::*;
use rigaudit_audit::records::{Card, FileKind};
use rigaudit_audit::rehash::{
    BundleFileSeen, CheckpointSeen, FileManifest, Hashed, Location, ManifestEntry, Measured,
    MissingFile, NcclSeen, NcclVersion, RevisionFileSeen,
};
use rigaudit_audit::schema::safe_path;
use rigaudit_audit::Findings;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Options of `rigaudit rehash`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar).
    pub bundle: PathBuf,
    /// A folder to search for what the card records; `BOX=DIR` ties it to one of the card's boxes
    /// (otherwise a folder named after a box inside it does). Repeatable.
    #[arg(long = "root", value_name = "[BOX=]DIR")]
    pub roots: Vec<String>,
    /// One artifact by name: package, binary, nccl or checkpoint (or the file name the card
    /// records), with `@BOX` for a box: `--file nccl@atom=/mnt/atom/libnccl.so.2`. Repeatable.
    #[arg(long = "file", value_name = "NAME[@BOX]=PATH")]
    pub files: Vec<String>,
    /// Compare every checkpoint folder found with this folder or manifest file (sha256sum format, or
    /// JSON `[{path, sha256}]`): weights-equal when every weight and config file matches.
    #[arg(long, value_name = "DIR|FILE")]
    pub compare: Option<PathBuf>,
    /// Write the per-file digest manifest of the checkpoint folder found (sha256sum format).
    #[arg(long, value_name = "FILE")]
    pub write_manifest: Option<PathBuf>,
    /// Files hashed at once (default: every core).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// No progress bar: the global `--quiet`, set by `main`.
    #[arg(skip)]
    pub quiet: bool,
    /// Do not load NCCL libraries to ask their version; digests only.
    #[arg(long)]
    pub no_load: bool,
    /// Also load NCCL libraries found by walking `--root` to ask their version. Loading runs the
    /// library's own start-up code; a library named with `--file nccl=PATH` is loaded without it.
    #[arg(long)]
    pub load_nccl: bool,
    /// Boxes reached over ssh (`--box BOX=[USER@]HOST[:PORT]`): a `--root BOX=DIR` of such a box
    /// is searched and hashed on it (see `rehash/remote.rs`).
    #[command(flatten)]
    pub ssh: crate::ssh::SshArgs,
    /// `--slurm`: a `--root BOX=DIR` of one of the card's boxes is searched and hashed on the
    /// box's node, in steps of one allocation (see `rehash/reach.rs`).
    #[command(flatten)]
    pub slurm: crate::slurm::SlurmArgs,
    /// A server someone already runs on this machine, as `[RANK=]PID` (rank 0, 1, ... in the
    /// order given when no rank is named): what it and its children mapped is read now, each file
    /// hashed, and judged against the card (`loaded.*`), with no replay. Repeatable.
    #[arg(long = "running", value_name = "[RANK=]PID")]
    pub running: Vec<String>,
}

/// What an artifact named with `--file` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Package,
    Binary,
    Nccl,
    Checkpoint,
}

struct Given {
    what: Named,
    box_name: Option<String>,
    path: PathBuf,
    label: String,
}

fn parse_file_arg(s: &str, card: &Card) -> Result<Given, Fatal> {
    let Some((name, path)) = s.split_once('=') else {
        return Err(fatal(format!(
            "--file {s}: write NAME=PATH (NAME: package, binary, nccl, checkpoint)"
        )));
    };
    let (name, box_name) = match name.split_once('@') {
        Some((n, b)) if !b.is_empty() => (n, Some(b.to_string())),
        _ => (name, None),
    };
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let what = match name {
        "package" => Named::Package,
        "binary" => Named::Binary,
        "nccl" => Named::Nccl,
        "checkpoint" => Named::Checkpoint,
        n if card.engine.package.as_ref().is_some_and(|p| p.file == n) => Named::Package,
        n if card.engine.binary.as_ref().is_some_and(|b| b.path == n || base(&b.path) == n) => Named::Binary,
        n if card.nccl.as_ref().is_some_and(|x| x.file == n) => Named::Nccl,
        n => {
            return Err(fatal(format!(
                "--file {s}: '{n}' is no artifact name; use package, binary, nccl or checkpoint, or a file name the card records"
            )))
        }
    };
    if path.is_empty() {
        return Err(fatal(format!("--file {s}: the path is empty")));
    }
    Ok(Given {
        what,
        box_name,
        path: PathBuf::from(path),
        label: name.to_string(),
    })
}

/// One file to hash and where its result goes.
#[derive(Debug, Clone)]
enum Target {
    Package(Location),
    Binary(Location),
    Nccl(Location),
    CkptFile { ckpt: usize, rel: String },
    RefFile { rel: String },
    Bundle { idx: usize },
}

#[derive(Debug, Clone)]
struct Job {
    target: Target,
    path: PathBuf,
    size: u64,
    /// Read into this package for the binary member.
    member: Option<(Kind, String)>,
}

enum Done {
    Digest(Result<String, String>),
    Package(archive::PackageRead),
}

fn loc(path: &Path, box_name: Option<&String>) -> Location {
    Location {
        box_name: box_name.cloned(),
        path: path.display().to_string(),
        member: None,
    }
}

fn size_of(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Reads the card (and the start line NCCL version) of an opened bundle.
fn read_card(o: &bundle::Opened) -> Result<(String, Card, Option<String>), Fatal> {
    let entry = o
        .manifest
        .files
        .iter()
        .find(|e| e.kind == FileKind::Card)
        .ok_or_else(|| {
            fatal(format!(
                "{}: the manifest lists no card; rehash checks what a card records",
                o.root.display()
            ))
        })?;
    let path = crate::input::inside(&o.root, &entry.path)
        .map_err(|m| fatal(format!("bundle.json: the card's path {m}")))?;
    let (text, _) = crate::digest::read_whole(&path, crate::input::CARD_MAX, "card")?;
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| {
        fatal(format!(
            "{}: line {}, column {}: not valid JSON: {e}",
            entry.path,
            e.line(),
            e.column()
        ))
    })?;
    if let Some(v) = schemas::validator(FileKind::Card) {
        schemas::follows(v, &value).map_err(|list| {
            fatal(format!(
                "{}: the card does not follow its schema: {list}",
                entry.path
            ))
        })?;
    }
    let card: Card = serde_json::from_value(value)
        .at(format_args!("{}: the card cannot be read", entry.path))?;
    // The start lines are in the speed result; a missing or broken one only means no comparison.
    let start = o
        .manifest
        .files
        .iter()
        .filter(|e| e.kind == FileKind::SpeedResult)
        .find_map(|e| {
            let p = crate::input::inside(&o.root, &e.path).ok()?;
            let read = crate::digest::read_whole(&p, crate::input::RECORD_MAX, "speed result");
            let v: serde_json::Value = serde_json::from_slice(&read.ok()?.0).ok()?;
            let lines: Vec<String> = v
                .get("server")?
                .get("start_lines")?
                .as_array()?
                .iter()
                .filter_map(|l| l.as_str().map(String::from))
                .collect();
            rigaudit_audit::startline::parse(&lines).nccl
        });
    Ok((entry.path.clone(), card, start))
}

/// Reads a manifest file: sha256sum lines (`HEX  PATH`, `HEX *PATH`) or JSON `[{path, sha256}]`
/// (also `{"files": [...]}`).
pub fn read_manifest_file(path: &Path) -> Result<FileManifest, String> {
    let text = crate::input::read_text(path, crate::input::COMPARE_MAX, "--compare manifest")
        .map_err(|e| e.0)?;
    let origin = format!("the manifest {}", path.display());
    let t = text.trim_start();
    let entries = if t.starts_with('[') || t.starts_with('{') {
        json_entries(path, t)?
    } else {
        sha256sum_entries(path, &text)?
    };
    Ok(FileManifest { origin, entries })
}

/// A JSON manifest's entries: `[{path, sha256}]` or `{"files": [...]}`.
fn json_entries(path: &Path, t: &str) -> Result<Vec<ManifestEntry>, String> {
    let v: serde_json::Value = serde_json::from_str(t).map_err(|e| {
        format!(
            "{}: line {}, column {}: not valid JSON: {e}",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    let arr = v
        .as_array()
        .or_else(|| v.get("files").and_then(|f| f.as_array()))
        .ok_or_else(|| {
            format!(
                "{}: expected a list of {{path, sha256}} or {{\"files\": [...]}}",
                path.display()
            )
        })?;
    arr.iter()
        .enumerate()
        .map(|(i, e)| {
            let p = e.get("path").and_then(|x| x.as_str());
            let d = e.get("sha256").and_then(|x| x.as_str());
            match (p, d) {
                (Some(p), Some(d)) => Ok(ManifestEntry {
                    path: p.to_string(),
                    sha256: d.to_string(),
                }),
                _ => Err(format!(
                    "{}: entry {i} needs a path and a sha256",
                    path.display()
                )),
            }
        })
        .collect()
}

/// A sha256sum manifest's entries (`HEX  PATH`, `HEX *PATH`; `#` comments and blank lines skipped).
fn sha256sum_entries(path: &Path, text: &str) -> Result<Vec<ManifestEntry>, String> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || {
            format!(
                "{}: line {}: expected 'SHA256  PATH'",
                path.display(),
                i + 1
            )
        };
        let (d, p) = line.split_once(' ').ok_or_else(bad)?;
        let p = p
            .strip_prefix(' ')
            .or_else(|| p.strip_prefix('*'))
            .unwrap_or(p);
        if d.len() < 8 || !d.bytes().all(|b| b.is_ascii_hexdigit()) || p.is_empty() {
            return Err(bad());
        }
        entries.push(ManifestEntry {
            path: p.trim_start_matches("./").to_string(),
            sha256: d.to_ascii_lowercase(),
        });
    }
    Ok(entries)
}

/// The sha256sum text of a manifest (`sha256sum -c` can check it inside the folder).
pub fn manifest_text(m: &FileManifest) -> String {
    m.entries
        .iter()
        .map(|e| format!("{}  {}\n", e.sha256, e.path))
        .collect()
}

/// The revision a hub client's cache folder names (`.../snapshots/<40 hex>`).
pub(crate) fn hub_revision(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?;
    let parent = dir.parent()?.file_name()?.to_str()?;
    (parent == "snapshots" && name.len() == 40 && name.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| name.to_string())
}

fn revision_file(card: &Card, dir: &Path) -> Option<RevisionFileSeen> {
    let rf = card.checkpoint.revision_file.as_ref()?;
    let p = rf.path.trim();
    if let Err(m) = safe_path(p) {
        return Some(RevisionFileSeen::NotLocatable(format!(
            "the card's path {m}"
        )));
    }
    let full = match crate::input::inside(dir, p) {
        Ok(f) => f,
        Err(m) => {
            return Some(RevisionFileSeen::NotLocatable(format!(
                "the card's path {m}"
            )))
        }
    };
    if !full.exists() && p.contains(' ') {
        return Some(RevisionFileSeen::NotLocatable(
            "the card names it in words, not as a path inside the folder".to_string(),
        ));
    }
    if let Ok(md) = std::fs::metadata(&full) {
        if md.len() > 4096 {
            return Some(RevisionFileSeen::Unreadable(format!(
                "it is {} bytes long, not a revision",
                md.len()
            )));
        }
    }
    if std::fs::symlink_metadata(&full).is_err() {
        return Some(RevisionFileSeen::Missing);
    }
    Some(
        match crate::input::read_bounded(&full, crate::input::REVISION_MAX, "revision file") {
            Ok(b) => RevisionFileSeen::Content(String::from_utf8_lossy(&b).to_string()),
            Err(e) => RevisionFileSeen::Unreadable(e.0),
        },
    )
}

/// The bundle's id and its card (the card's file in the bundle and its records), read and
/// checked against its schema as [`stage_with_card`] reads it, with nothing searched or hashed: what
/// `rehash --running` judges a running server against when no artifact is named.
pub fn bundle_card(path: &Path) -> Result<(String, (String, Card)), Fatal> {
    let opened = bundle::open(path)?;
    let (card_file, card, _) = read_card(&opened)?;
    Ok((opened.manifest.id.clone(), (card_file, card)))
}

/// The rehash stage, a pipeline: plan jobs -> hash -> collate -> ask NCCL -> write manifest ->
/// check. Returns the bundle's id, what comparing the card's digests with the files found gave,
/// and the card it read (its file in the bundle and its records) for the stages that judge
/// against it after (`rehash --running`).
pub fn stage_with_card(args: &Args) -> Result<(String, Findings, (String, Card)), Fatal> {
    let opened = bundle::open(&args.bundle)?;
    let (card_file, card, start_nccl) = read_card(&opened)?;
    let card_of = (card_file.clone(), card.clone());
    let found = rehash_opened(args, &opened, (card_file, &card, start_nccl))?;
    Ok((opened.manifest.id.clone(), found, card_of))
}

/// [`stage_with_card`] of a bundle already opened and read (`read`, its records: the audit's), its card and
/// start line taken from them, so no file of it is read again; a bundle whose card could not be
/// read is read the rehash's way, which names why.
pub fn stage_read(
    args: &Args,
    opened: &bundle::Opened,
    read: &rigaudit_audit::Bundle,
) -> Result<Findings, Fatal> {
    let Some(card) = &read.card else {
        let (card_file, card, start_nccl) = read_card(opened)?;
        return rehash_opened(args, opened, (card_file, &card, start_nccl));
    };
    let start_nccl = read
        .speed_result
        .as_ref()
        .and_then(|s| rigaudit_audit::startline::parse(&s.value.server.start_lines).nccl);
    rehash_opened(args, opened, (card.path.clone(), &card.value, start_nccl))
}

/// Stages 1 to 4 over an opened bundle and its card (its file in the bundle, its records, the NCCL
/// version its start line reports): plan, hash, collate, ask NCCL, judge.
fn rehash_opened(
    args: &Args,
    opened: &bundle::Opened,
    (card_file, card, start_nccl): (String, &Card, Option<String>),
) -> Result<Findings, Fatal> {
    let m = Measured {
        card_file,
        start_line_nccl: start_nccl,
        ..Default::default()
    };
    let mut plan = plan_jobs(args, opened, card, m)?;
    let done = hash_jobs(&plan.jobs, args);
    let nccl_files = collate(&mut plan, done, opened.manifest.files.len())?;
    ask_nccl(&mut plan.m, nccl_files, args, &plan.named_nccl);
    plan.m.bundle_files = bundle_files_seen(opened, std::mem::take(&mut plan.bundle_digests));
    write_manifest(args, &plan.m)?;
    Ok(rigaudit_audit::rehash::findings(card, &plan.m))
}

/// Stage 2: hashes every job on `--jobs` threads (default: one per core), with a progress bar.
fn hash_jobs(jobs: &[Job], args: &Args) -> Vec<Done> {
    let threads = args.jobs.unwrap_or_else(crate::host::cores).max(1);
    let total: u64 = jobs.iter().map(|j| j.size).sum();
    let progress = Progress::new(total, args.quiet);
    let done = hash::parallel(jobs, threads, |j| run_job(j, &progress));
    progress.finish();
    done
}

/// Stage 3: each digest to what it measures, in a stable order. Returns the NCCL files hashed.
fn collate(plan: &mut Plan, done: Vec<Done>, bundle_files: usize) -> Result<Vec<Hashed>, Fatal> {
    plan.bundle_digests = vec![None; bundle_files];
    let mut ref_entries = Vec::new();
    let mut nccl_files: Vec<Hashed> = Vec::new();
    let m = &mut plan.m;
    for (j, d) in plan.jobs.iter().zip(done) {
        match (&j.target, d) {
            (Target::Package(at), Done::Package(r)) => {
                package_read(at, r, plan.binary_path.as_deref(), m)
            }
            (Target::Package(at), Done::Digest(d)) => m.package.push(hashed(at, d)),
            (Target::Binary(at), Done::Digest(d)) => m.binary.push(hashed(at, d)),
            (Target::Nccl(at), Done::Digest(d)) => nccl_files.push(hashed(at, d)),
            (Target::CkptFile { ckpt, rel }, Done::Digest(d)) => match d {
                Ok(sha256) => m.checkpoints[*ckpt].manifest.entries.push(ManifestEntry {
                    path: rel.clone(),
                    sha256,
                }),
                Err(e) => m.checkpoints[*ckpt].unreadable.push((rel.clone(), e)),
            },
            (Target::RefFile { rel }, Done::Digest(d)) => match d {
                Ok(sha256) => ref_entries.push(ManifestEntry {
                    path: rel.clone(),
                    sha256,
                }),
                Err(e) => return Err(fatal(format!("--compare: {rel} cannot be read: {e}"))),
            },
            (Target::Bundle { idx }, Done::Digest(d)) => plan.bundle_digests[*idx] = Some(d),
            (_, _) => {}
        }
    }
    for (alias, first) in std::mem::take(&mut plan.aliases) {
        plan.bundle_digests[alias] = plan.bundle_digests[first].clone();
    }
    for (idx, why) in std::mem::take(&mut plan.bundle_refused) {
        plan.bundle_digests[idx] = Some(Err(why));
    }
    if let Some(r) = plan.reference.as_mut() {
        if r.entries.is_empty() {
            r.entries = ref_entries;
        }
        r.entries.sort_by(|a, b| a.path.cmp(&b.path));
    }
    m.reference = plan.reference.take();
    for c in &mut m.checkpoints {
        c.manifest.entries.sort_by(|a, b| a.path.cmp(&b.path));
        c.unreadable.sort();
    }
    m.package.sort_by_key(|h| h.at.describe());
    m.binary.sort_by_key(|h| h.at.describe());
    nccl_files.sort_by_key(|h| h.at.describe());
    Ok(nccl_files)
}

fn hashed(at: &Location, sha256: Result<String, String>) -> Hashed {
    Hashed {
        at: at.clone(),
        sha256,
    }
}

/// A package read as an archive: its own digest, and the binary member's (or why there is none).
pub(crate) fn package_read(
    at: &Location,
    r: archive::PackageRead,
    binary_path: Option<&str>,
    m: &mut Measured,
) {
    let whole = r
        .whole
        .map(|w| w.map_err(|e| e.to_string()))
        .unwrap_or_else(|| Err("not read".into()));
    m.package.push(Hashed {
        at: at.clone(),
        sha256: whole,
    });
    if let Some(e) = &r.error {
        m.binary.push(Hashed {
            at: at.clone().member(binary_path.unwrap_or_default()),
            sha256: Err(format!("the package cannot be read as an archive: {e}")),
        });
    }
    if r.error.is_none() && r.members.is_empty() {
        if let Some(b) = binary_path {
            m.binary.push(Hashed {
                at: at.clone().member(b),
                sha256: Err(format!("the package holds no member named {b}")),
            });
        }
    }
    for (name, digest) in r.members {
        m.binary.push(Hashed {
            at: at.clone().member(name),
            sha256: digest,
        });
    }
}

/// Stage 4: asks each NCCL library for its version (in a child process), unless told not to or
/// the file cannot be read.
fn ask_nccl(m: &mut Measured, nccl_files: Vec<Hashed>, args: &Args, named_nccl: &BTreeSet<String>) {
    for h in nccl_files {
        // A file that is no shared library is said so, whatever else is asked of it.
        let not_library = h
            .sha256
            .is_ok()
            .then(|| nccl::not_library(Path::new(&h.at.path)))
            .flatten();
        let version = if let Some(why) = not_library {
            NcclVersion::NotLibrary { why }
        } else if args.no_load {
            NcclVersion::NotQueried {
                why: "--no-load was given".into(),
            }
        } else if h.sha256.is_err() {
            NcclVersion::NotQueried {
                why: "the file cannot be read".into(),
            }
        } else if !args.load_nccl && !named_nccl.contains(&h.at.path) {
            nccl::from_text(
                Path::new(&h.at.path),
                "not loaded: it was found under --root, and loading a library runs its code (name it with --file nccl=PATH, or pass --load-nccl)".into(),
            )
        } else {
            nccl::probe(Path::new(&h.at.path))
        };
        m.nccl.push(NcclSeen { file: h, version });
    }
}

/// Each bundle file with its recorded and computed digest.
fn bundle_files_seen(
    opened: &bundle::Opened,
    digests: Vec<Option<Result<String, String>>>,
) -> Vec<BundleFileSeen> {
    opened
        .manifest
        .files
        .iter()
        .zip(digests)
        .map(|(e, d)| BundleFileSeen {
            path: e.path.clone(),
            recorded: e.sha256.clone(),
            published: e.published,
            sha256: d,
        })
        .collect()
}

/// Stage 5: `--write-manifest`: the one checkpoint folder's manifest, written atomically.
fn write_manifest(args: &Args, m: &Measured) -> Result<(), Fatal> {
    let Some(out) = &args.write_manifest else {
        return Ok(());
    };
    match m.checkpoints.as_slice() {
        [one] => crate::output::write_atomic(out, manifest_text(&one.manifest).as_bytes()),
        [] => Err(fatal("--write-manifest: no checkpoint folder was found")),
        many => Err(fatal(format!(
            "--write-manifest: {} checkpoint folders were found; name one with --file checkpoint=DIR",
            many.len()
        ))),
    }
}

fn run_job(j: &Job, progress: &Progress) -> Done {
    // A reader that panics on a malformed archive becomes a finding about that file, not a crash.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &j.member {
        Some((kind, wanted)) => {
            Done::Package(archive::hash_members(&j.path, *kind, wanted, progress))
        }
        None => Done::Digest(
            hash::hash_file(&j.path, progress)
                .map(|(d, _)| d)
                .map_err(|e| e.to_string()),
        ),
    }));
    r.unwrap_or_else(|_| {
        Done::Digest(Err(
            "reading it failed inside rigaudit (a panic); please report this file".into(),
        ))
    })
}

#[cfg(test)]
mod tests;
