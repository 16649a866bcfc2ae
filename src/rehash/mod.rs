//! `rigaudit rehash BUNDLE --root DIR`: hashes the artifacts a bundle's card records (engine
//! package, the binary inside it, the NCCL library of every box, checkpoint folders, the bundle's
//! own raw files), asks each NCCL library for its version, and compares everything with the card.
//!
//! This module does the I/O, as a pipeline of named stages ([`stage`]): plan jobs -> hash ->
//! collate -> ask NCCL -> write manifest -> check; the rules live in [`rigaudit_audit::rehash`].

pub mod archive;
pub mod discover;
pub mod hash;
pub mod nccl;
pub mod reach;
pub mod remote;

use crate::bundle;
use crate::fatal::{fatal, At, Fatal};
use crate::schemas;
use archive::Kind;
use discover::{FoundFile, Root};
use hash::Progress;
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
    let text = crate::input::read_bounded(&path, crate::input::CARD_MAX, "card")?;
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
            let bytes = crate::input::read_bounded(&p, crate::input::RECORD_MAX, "speed result");
            let v: serde_json::Value = serde_json::from_slice(&bytes.ok()?).ok()?;
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

/// The rehash stage, a pipeline: plan jobs -> hash -> collate -> ask NCCL -> write manifest ->
/// check. Returns the bundle's id and what comparing the card's digests with the files found gave.
pub fn stage(args: &Args) -> Result<(String, Findings), Fatal> {
    stage_with_card(args).map(|(id, found, _)| (id, found))
}

/// The bundle's id and its card (the card's file in the bundle and its records), read and
/// checked against its schema as [`stage`] reads it, with nothing searched or hashed: what
/// `rehash --running` judges a running server against when no artifact is named.
pub fn bundle_card(path: &Path) -> Result<(String, (String, Card)), Fatal> {
    let opened = bundle::open(path)?;
    let (card_file, card, _) = read_card(&opened)?;
    Ok((opened.manifest.id.clone(), (card_file, card)))
}

/// [`stage`], with the card it read (its file in the bundle and its records) for the stages that
/// judge against it after (`rehash --running`).
pub fn stage_with_card(args: &Args) -> Result<(String, Findings, (String, Card)), Fatal> {
    let opened = bundle::open(&args.bundle)?;
    let (card_file, card, start_nccl) = read_card(&opened)?;
    let card_of = (card_file.clone(), card.clone());
    let m = Measured {
        card_file,
        start_line_nccl: start_nccl,
        ..Default::default()
    };
    let mut plan = plan_jobs(args, &opened, &card, m)?;
    let done = hash_jobs(&plan.jobs, args);
    let nccl_files = collate(&mut plan, done, opened.manifest.files.len())?;
    ask_nccl(&mut plan.m, nccl_files, args, &plan.named_nccl);
    plan.m.bundle_files = bundle_files_seen(&opened, std::mem::take(&mut plan.bundle_digests));
    write_manifest(args, &plan.m)?;
    let found = rigaudit_audit::rehash::findings(&card, &plan.m);
    Ok((opened.manifest.id.clone(), found, card_of))
}

/// What the rehash will hash, and what it learnt while planning.
struct Plan {
    /// The files to hash, largest first.
    jobs: Vec<Job>,
    /// What was measured so far (where it searched, what it could not open, checkpoint folders).
    m: Measured,
    /// The manifest to compare checkpoints with (`--compare`), entries filled by hashing when it
    /// is a folder.
    reference: Option<FileManifest>,
    /// The card's binary path inside the package.
    binary_path: Option<String>,
    /// The digest of each bundle file, by manifest index (filled by [`collate`]).
    bundle_digests: Vec<Option<Result<String, String>>>,
    /// Bundle files listed under a second name: (its index, the index of the first name).
    aliases: Vec<(usize, usize)>,
    /// Bundle files not read because their path leaves the bundle (a link out, `..`): (its
    /// index, why); each is an error of its digest, never a file merely missing.
    bundle_refused: Vec<(usize, String)>,
    /// The NCCL libraries the user named with `--file nccl=PATH` (loaded without `--load-nccl`).
    named_nccl: BTreeSet<String>,
}

/// Stage 1: every file to hash, from `--file`, the roots, checkpoint folders, `--compare` and
/// the bundle; the same artifact reached twice is hashed once.
fn plan_jobs(
    args: &Args,
    opened: &bundle::Opened,
    card: &Card,
    m: Measured,
) -> Result<Plan, Fatal> {
    // A root on a box mapped with --box (or the policy's [boxes]) is read there over ssh.
    args.ssh
        .check_names(&crate::ssh::target::card_boxes(card))?;
    let boxes = crate::ssh::target::card_boxes(card);
    let slurm_boxes = args.slurm.slurm.then_some(&boxes[..]);
    let (local_roots, remote_roots) = remote::split_roots(&args.roots, &args.ssh, slurm_boxes)?;
    let roots: Vec<Root> = local_roots
        .iter()
        .map(|r| discover::parse_root(r).map_err(fatal))
        .collect::<Result<_, _>>()?;
    let given: Vec<Given> = args
        .files
        .iter()
        .map(|f| parse_file_arg(f, card))
        .collect::<Result<_, _>>()?;
    let mut plan = Plan {
        jobs: Vec::new(),
        m,
        reference: None,
        binary_path: card.engine.binary.as_ref().map(|b| b.path.clone()),
        bundle_digests: Vec::new(),
        aliases: Vec::new(),
        bundle_refused: Vec::new(),
        named_nccl: given
            .iter()
            .filter(|g| g.what == Named::Nccl)
            .map(|g| loc(&g.path, g.box_name.as_ref()).path)
            .collect(),
    };
    plan.m.searched = searched(&roots, &given);
    remote::measure(card, &remote_roots, &args.ssh, &args.slurm, &mut plan.m)?;
    let mut ckpt_dirs = given_jobs(&given, &mut plan);
    let boxes: Vec<String> = card.hardware.boxes.iter().map(|b| b.name.clone()).collect();
    let found = discover::walk(&roots, &boxes).map_err(fatal)?;
    root_jobs(card, &found, &mut plan);
    ckpt_dirs.extend(
        found
            .checkpoints
            .iter()
            .map(|c| (c.path.clone(), c.box_name.clone())),
    );
    checkpoint_jobs(card, ckpt_dirs, &mut plan)?;
    compare_jobs(args, &mut plan)?;
    bundle_jobs(opened, &mut plan);
    dedupe(&mut plan.jobs);
    // Largest first, so the pool ends together.
    plan.jobs.sort_by_key(|j| std::cmp::Reverse(j.size));
    Ok(plan)
}

/// Where the rehash looks, each place once, for the report.
fn searched(roots: &[Root], given: &[Given]) -> Vec<String> {
    let mut all: Vec<String> = roots
        .iter()
        .map(|r| match &r.box_name {
            Some(b) => format!("{} (box {b})", r.dir.display()),
            None => r.dir.display().to_string(),
        })
        .chain(
            given
                .iter()
                .map(|g| format!("--file {}={}", g.label, g.path.display())),
        )
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    all.retain(|s| seen.insert(s.clone()));
    all
}

/// Why a path given with `--file` cannot be used, if it cannot.
fn unusable(g: &Given) -> Option<String> {
    match (std::fs::metadata(&g.path), g.what) {
        (Ok(md), Named::Checkpoint) if md.is_dir() => None,
        (Ok(md), Named::Checkpoint) => Some(format!("not a folder ({} bytes)", md.len())),
        (Ok(md), _) if md.is_file() => None,
        (Ok(_), _) => Some("not a regular file".into()),
        (Err(e), _) => Some(e.to_string()),
    }
}

/// Files named with `--file`; a path that cannot be opened is an error finding, never skipped.
/// Returns the checkpoint folders named.
fn given_jobs(given: &[Given], plan: &mut Plan) -> Vec<(PathBuf, Option<String>)> {
    let mut ckpt_dirs = Vec::new();
    for g in given {
        let at = loc(&g.path, g.box_name.as_ref());
        if let Some(why) = unusable(g) {
            plan.m.missing.push(MissingFile {
                kind: g.label.clone(),
                at,
                why,
            });
            continue;
        }
        let size = size_of(&g.path);
        let plain = |target| Job {
            target,
            path: g.path.clone(),
            size,
            member: None,
        };
        match g.what {
            Named::Package => plan.jobs.push(package_job(
                &g.path,
                g.box_name.as_ref(),
                size,
                plan.binary_path.as_deref(),
            )),
            Named::Binary => plan.jobs.push(plain(Target::Binary(at))),
            Named::Nccl => plan.jobs.push(plain(Target::Nccl(at))),
            Named::Checkpoint => ckpt_dirs.push((g.path.clone(), g.box_name.clone())),
        }
    }
    ckpt_dirs
}

/// What the roots hold of the card's package, binary and NCCL library.
fn root_jobs(card: &Card, found: &discover::Found, plan: &mut Plan) {
    if let Some(p) = &card.engine.package {
        for f in found.named(&p.file) {
            let job = package_job(
                &f.path,
                f.box_name.as_ref(),
                size_of(&f.path),
                plan.binary_path.as_deref(),
            );
            plan.jobs.push(job);
        }
    }
    let binary_name = plan
        .binary_path
        .as_deref()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
    if let Some(name) = &binary_name {
        for f in found
            .named(name)
            .into_iter()
            .filter(|f| !found.in_checkpoint(f))
        {
            let at = loc(&f.path, f.box_name.as_ref());
            plan.jobs.push(file_job(f, Target::Binary(at)));
        }
    }
    if let Some(n) = &card.nccl {
        for f in found.nccl(&n.file) {
            let at = loc(&f.path, f.box_name.as_ref());
            plan.jobs.push(file_job(f, Target::Nccl(at)));
        }
    }
}

/// Checkpoint folders, each once: every file is a job of its own.
fn checkpoint_jobs(
    card: &Card,
    mut dirs: Vec<(PathBuf, Option<String>)>,
    plan: &mut Plan,
) -> Result<(), Fatal> {
    let mut seen_dirs = std::collections::BTreeSet::new();
    dirs.retain(|(d, _)| seen_dirs.insert(d.canonicalize().unwrap_or_else(|_| d.clone())));
    for (dir, box_name) in dirs {
        let (files, unreadable) = discover::checkpoint_files(&dir).map_err(fatal)?;
        let ckpt = plan.m.checkpoints.len();
        plan.m.checkpoints.push(CheckpointSeen {
            at: loc(&dir, box_name.as_ref()),
            manifest: FileManifest {
                origin: dir.display().to_string(),
                entries: Vec::new(),
            },
            unreadable,
            revision_file: revision_file(card, &dir),
            hub_revision: hub_revision(&dir),
        });
        for f in files {
            plan.jobs.push(Job {
                target: Target::CkptFile { ckpt, rel: f.rel },
                path: f.path,
                size: f.size,
                member: None,
            });
        }
    }
    Ok(())
}

/// The folder or manifest to compare checkpoints with (`--compare`).
fn compare_jobs(args: &Args, plan: &mut Plan) -> Result<(), Fatal> {
    let Some(c) = &args.compare else {
        return Ok(());
    };
    let md = std::fs::metadata(c).at(format_args!("--compare {}", c.display()))?;
    if !md.is_dir() {
        let manifest = read_manifest_file(c).at("--compare")?;
        plan.reference = Some(manifest);
        return Ok(());
    }
    let (files, unreadable) = discover::checkpoint_files(c).map_err(fatal)?;
    if let Some((p, e)) = unreadable.first() {
        return Err(fatal(format!(
            "--compare {}: {p} cannot be read: {e}",
            c.display()
        )));
    }
    plan.reference = Some(FileManifest {
        origin: format!("the folder {}", c.display()),
        entries: Vec::new(),
    });
    for f in files {
        plan.jobs.push(Job {
            target: Target::RefFile { rel: f.rel },
            path: f.path,
            size: f.size,
            member: None,
        });
    }
    Ok(())
}

/// The bundle's own raw files: only those inside the bundle (a link out is not read, and is an
/// error of its digest), each real
/// file hashed once whatever the names it is listed under (the others are `plan.aliases`).
fn bundle_jobs(opened: &bundle::Opened, plan: &mut Plan) {
    let mut first_of = std::collections::BTreeMap::new();
    for (idx, e) in opened.manifest.files.iter().enumerate() {
        let p = match crate::input::inside(&opened.root, &e.path) {
            Ok(p) => p,
            Err(why) => {
                plan.bundle_refused.push((idx, why));
                continue;
            }
        };
        if let Some(id) = crate::input::identity(&p) {
            if let Some(&first) = first_of.get(&id) {
                plan.aliases.push((idx, first));
                continue;
            }
            first_of.insert(id, idx);
        }
        if p.is_file() {
            plan.jobs.push(Job {
                target: Target::Bundle { idx },
                size: size_of(&p),
                path: p,
                member: None,
            });
        }
    }
}

/// The same file reached twice (a root and a --file, say) is hashed and reported once.
fn dedupe(jobs: &mut Vec<Job>) {
    let mut seen = std::collections::BTreeSet::new();
    jobs.retain(|j| {
        let (kind, box_name) = match &j.target {
            Target::Package(l) => ("package", l.box_name.clone()),
            Target::Binary(l) => ("binary", l.box_name.clone()),
            Target::Nccl(l) => ("nccl", l.box_name.clone()),
            _ => return true,
        };
        seen.insert((
            kind,
            box_name,
            j.path.canonicalize().unwrap_or_else(|_| j.path.clone()),
        ))
    });
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

fn file_job(f: &FoundFile, target: Target) -> Job {
    Job {
        target,
        size: size_of(&f.path),
        path: f.path.clone(),
        member: None,
    }
}

fn package_job(path: &Path, box_name: Option<&String>, size: u64, binary: Option<&str>) -> Job {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let member = match (archive::kind_of(&name), binary) {
        (Some(k), Some(b)) => Some((k, b.to_string())),
        _ => None,
    };
    Job {
        target: Target::Package(loc(path, box_name)),
        path: path.to_path_buf(),
        size,
        member,
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
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<(String, String)>, String> {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("m");
        std::fs::write(&p, text).expect("write");
        read_manifest_file(&p).map(|m| m.entries.into_iter().map(|e| (e.path, e.sha256)).collect())
    }

    #[test]
    fn manifests_in_sha256sum_and_json_shapes_read_alike() {
        let d = "ab".repeat(32);
        let want = vec![
            ("a.safetensors".to_string(), d.clone()),
            ("dir/b.json".to_string(), d.clone()),
        ];
        let text = format!(
            "# made by sha256sum\n{}  ./a.safetensors\n\n{} *dir/b.json\n",
            d.to_uppercase(),
            d
        );
        assert_eq!(read(&text).unwrap(), want);
        let list = format!(
            r#"[{{"path": "a.safetensors", "sha256": "{d}"}}, {{"path": "dir/b.json", "sha256": "{d}"}}]"#
        );
        assert_eq!(read(&list).unwrap(), want);
        assert_eq!(read(&format!(r#"{{"files": {list}}}"#)).unwrap(), want);
    }

    #[test]
    fn a_bad_manifest_names_its_line_or_entry() {
        let d = "ab".repeat(32);
        let e = read(&format!("{d}  a\nnot-a-digest  b\n")).unwrap_err();
        assert!(e.ends_with(": line 2: expected 'SHA256  PATH'"), "{e}");
        let e = read(&format!("{d}\n")).unwrap_err();
        assert!(e.ends_with(": line 1: expected 'SHA256  PATH'"), "{e}");
        let e = read(&format!(
            r#"[{{"path": "a", "sha256": "{d}"}}, {{"path": "b"}}]"#
        ))
        .unwrap_err();
        assert!(e.ends_with(": entry 1 needs a path and a sha256"), "{e}");
        let e = read(r#"{"weights": []}"#).unwrap_err();
        assert!(e.contains("expected a list of {path, sha256}"), "{e}");
        let e = read("[{").unwrap_err();
        assert!(e.contains("line 1, column 2: not valid JSON"), "{e}");
    }
}
