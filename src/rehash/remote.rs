//! `rehash --root BOX=DIR` for a box mapped with `--box` (or the policy's `[boxes]`): the card's
//! artifacts are looked for in DIR on that box and hashed there, over the same ssh channel as a
//! replay's remote ranks (see [`crate::ssh`]: the same client options, fixed scripts,
//! every word quoted).
//!
//! The stages are the local rehash's, with only the listing and the hashing on the box:
//! 1. [`LIST`] lists every file below DIR once (`.git` left out, links to files included, as the
//!    local walk reads);
//! 2. here, from that listing, the engine package, binary and NCCL library are picked by the file
//!    names the card records (compared exactly), and the checkpoint folders by the local rule (the
//!    topmost folder holding weights or a `config.json`), with the files the local checkpoint
//!    rehash reads (not under `.git` or `.cache`);
//! 3. [`HASH`] hashes them all with one `sha256sum` run over one channel: the paths go on its
//!    stdin, NUL-separated, to `xargs -0`, never into a command line;
//! 4. the digests go into the same [`Measured`] the local stages fill, and the same checks run.
//!
//! The NCCL library's version is read from its text on the box (never loaded), and a checkpoint's
//! revision file (at most 4 KiB) with `head -c`. A package whose binary member the card names
//! (`.tar.gz`, `.tgz`, `.tar`, `.zip`) is streamed whole with `cat` into the local member reader
//! ([`archive::hash_members_from`]: the same bounds; a zip is held in memory, at most 2 GiB), which
//! gives the package's digest and the member's in one pass; nothing is copied to disk.

use super::reach::Reach;
use crate::fatal::{fatal, Fatal};
use crate::rehash::{archive, discover, hash::Progress};
use crate::slurm::SlurmArgs;
use crate::ssh::client::{digest_of, read_bounded, said, Bounds};
use crate::ssh::script::NCCL_CHECK;
use crate::ssh::words::quote;
use crate::ssh::{Output, Ssh, SshArgs, Target};
use rigaudit_audit::records::Card;
use rigaudit_audit::rehash::{
    CheckpointSeen, FileManifest, Hashed, Location, ManifestEntry, Measured, NcclSeen, NcclVersion,
    RevisionFileSeen,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// The fixed listing: `$1` is the folder; prints `SIZE PATH` and a NUL for every regular file and
/// every link to one, at most 16 folders down, `.git` left out (GNU find and stat).
const LIST: &str = r#"d=$1
if [ ! -d "$d" ]; then echo "not a folder" >&2; exit 3; fi
cd -- "$d" || exit 3
if ! find . -maxdepth 0 -xtype d -printf '' 2>/dev/null; then
    echo "find there lacks -printf and -xtype (GNU findutils is needed)" >&2; exit 3
fi
find . -maxdepth 17 -name .git -prune -o -type f -printf '%s %P\0' \
    -o -xtype f -exec stat -L --printf '%s %n\0' -- {} + 2>/dev/null
exit 0"#;

/// The fixed hashing: `$1` is the folder; the paths inside it come on stdin, NUL-separated.
const HASH: &str = r#"cd -- "$1" || exit 3
xargs -0 sha256sum --
c=$?
if [ "$c" -eq 123 ]; then exit 0; fi
exit "$c""#;

/// The fixed read of a package, streamed to the local member reader: `$1` is its path.
const CAT: &str = r#"if [ ! -f "$1" ]; then echo "not a regular file" >&2; exit 3; fi
exec cat -- "$1""#;

/// The fixed read of a revision file: `$1` is its path; its first 4 KiB and one byte more.
const READ: &str = r#"exec head -c 4097 -- "$1""#;

/// The most bytes of file names a listing may print.
const LIST_MAX: u64 = 64 << 20;

/// A `--root BOX=DIR` on a mapped box.
#[derive(Debug, Clone)]
pub struct RemoteRoot {
    /// Where the box is.
    pub target: Target,
    /// The folder on the box.
    pub dir: String,
}

/// Splits the `--root` values into those read here and those on a box mapped with `--box`; with
/// `slurm`, the card's boxes `slurm` names: every `BOX=DIR` of one of them is read on its node
/// (the node `--box` names, or none yet: [`measure`] places it).
pub fn split_roots(
    roots: &[String],
    a: &SshArgs,
    slurm: Option<&[String]>,
) -> Result<(Vec<String>, Vec<RemoteRoot>), Fatal> {
    let mut targets = a.targets()?;
    for b in slurm.unwrap_or_default() {
        targets.entry(b.clone()).or_insert_with(|| Target {
            box_name: b.clone(),
            user: None,
            host: String::new(),
            port: None,
        });
    }
    let mut local = Vec::new();
    let mut remote = Vec::new();
    for r in roots {
        match r.split_once('=') {
            Some((b, dir)) if targets.contains_key(b) => {
                if !dir.starts_with('/') {
                    return Err(fatal(format!(
                        "--root {}: the folder on box {b} must be an absolute path",
                        crate::input::shown(r)
                    )));
                }
                remote.push(RemoteRoot {
                    target: targets[b].clone(),
                    dir: dir.to_string(),
                });
            }
            _ => local.push(r.clone()),
        }
    }
    Ok((local, remote))
}

/// What the card names a file of.
struct Names {
    package: Option<String>,
    binary: Option<String>,
    nccl: Option<String>,
    /// The binary's path inside the package (`engine.binary.path`).
    member: Option<String>,
}

impl Names {
    /// The archive kind of a package at `p` whose binary member is read, if it is one.
    fn streamed(&self, p: &str) -> Option<archive::Kind> {
        self.member.as_ref()?;
        (self.package.as_deref() == Some(base(p)))
            .then(|| archive::kind_of(base(p)))
            .flatten()
    }
}

fn base(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Looks for the card's artifacts and checkpoint folders in each remote root and records what
/// was found into `m`. An unreachable box or a folder that is not there is an error naming the
/// box.
pub fn measure(
    card: &Card,
    roots: &[RemoteRoot],
    a: &SshArgs,
    slurm: &SlurmArgs,
    m: &mut Measured,
) -> Result<(), Fatal> {
    if roots.is_empty() {
        return Ok(());
    }
    let (reach, roots) = reach(roots, a, slurm)?;
    let names = Names {
        package: card.engine.package.as_ref().map(|p| base(&p.file).into()),
        binary: card.engine.binary.as_ref().map(|b| base(&b.path).into()),
        nccl: card.nccl.as_ref().map(|n| base(&n.file).into()),
        member: card.engine.binary.as_ref().map(|b| b.path.clone()),
    };
    for r in &roots {
        let t = &r.target;
        m.searched.push(format!(
            "{} (box {}, on {})",
            r.dir,
            t.box_name,
            reach.how(t)
        ));
        let (listed, raw) = list(&reach, r)?;
        let plan = plan_root(&listed, &names);
        let sums = hash(&reach, r, &plan.all, &listed, &raw)?;
        record_named(&reach, r, &plan, &sums, &names, m);
        record_checkpoints(card, &reach, r, &plan, &sums, &listed, m);
    }
    Ok(())
}

/// The channel to the roots: `ssh`, or with `--slurm` an allocation whose nodes the roots' boxes
/// are placed on (`--box NAME=NODE`, else in the card's order); the roots with their nodes.
fn reach(
    roots: &[RemoteRoot],
    a: &SshArgs,
    slurm: &SlurmArgs,
) -> Result<(Reach, Vec<RemoteRoot>), Fatal> {
    if !slurm.slurm {
        return Ok((Reach::Ssh(Ssh::new(a)?), roots.to_vec()));
    }
    let mut mapped = BTreeMap::new();
    for r in roots.iter().filter(|r| !r.target.host.is_empty()) {
        let t = &r.target;
        if t.user.is_some() || t.port.is_some() {
            return Err(fatal(format!(
                "--box {}={t}: with --slurm, --box NAME=NODE names a node of the cluster (no user, no port)",
                t.box_name
            )));
        }
        mapped.insert(t.box_name.clone(), t.host.clone());
    }
    let boxes: Vec<String> = roots.iter().map(|r| r.target.box_name.clone()).collect();
    let (reach, nodes) = super::reach::allocate(&boxes, mapped, slurm)?;
    let mut placed = roots.to_vec();
    for r in &mut placed {
        r.target.host = nodes[&r.target.box_name].clone();
    }
    Ok((reach, placed))
}

/// Words for messages about a root.
fn what(r: &RemoteRoot) -> String {
    let t = &r.target;
    format!("--root {}={}: box {} ({t})", t.box_name, r.dir, t.box_name)
}

/// A script's failure as an error: unreachable (ssh's 255) or the script's own complaint.
fn failed(reach: &Reach, r: &RemoteRoot, doing: &str, o: &Output) -> Fatal {
    match reach.unreachable(o) {
        true => fatal(format!(
            "{}: cannot reach it over ssh: {}",
            what(r),
            said(o)
        )),
        false => fatal(format!(
            "{}: cannot {doing} {} ({}): {}",
            what(r),
            quote(&r.dir),
            reach.how(&r.target),
            said(o)
        )),
    }
}

/// Runs [`LIST`]: every file below the root by its path inside it, with its size, and the bytes
/// of the paths that are not UTF-8.
fn list(reach: &Reach, r: &RemoteRoot) -> Result<(BTreeMap<String, u64>, RawNames), Fatal> {
    let bounds = Bounds {
        input: Vec::new(),
        out_max: LIST_MAX,
        timeout: Duration::from_secs(300),
    };
    let o = reach
        .run_with(&r.target, LIST, &[&r.dir], bounds)
        .map_err(|e| fatal(format!("{}: {e}", what(r))))?;
    if o.code != Some(0) {
        return Err(failed(reach, r, "search", &o));
    }
    if o.cut {
        return Err(fatal(format!(
            "{}: the listing of {} is over {} MiB; name a smaller folder",
            what(r),
            quote(&r.dir),
            LIST_MAX >> 20
        )));
    }
    Ok(parse_listing(&o.raw))
}

/// The paths of a listing that are not UTF-8, by the path as shown (each byte sequence that is
/// not UTF-8 as U+FFFD, as every other listing and message shows it): the bytes that name the
/// file to the box, or `None` when two paths are shown alike (neither can then be named).
type RawNames = BTreeMap<String, Option<Vec<u8>>>;

/// `SIZE PATH\0` records; a path printed as `./x` (a link, by `stat`) is `x`. Paths are bytes on
/// the box: one that is not UTF-8 is kept by its shown form, with its bytes in the [`RawNames`].
fn parse_listing(out: &[u8]) -> (BTreeMap<String, u64>, RawNames) {
    let mut sizes = BTreeMap::new();
    let mut raw = RawNames::new();
    for rec in out.split(|b| *b == 0) {
        let Some(sp) = rec.iter().position(|b| *b == b' ') else {
            continue;
        };
        let path = &rec[sp + 1..];
        let path = path.strip_prefix(b"./").unwrap_or(path);
        if path.is_empty() {
            continue;
        }
        let shown = String::from_utf8_lossy(path).into_owned();
        let size = std::str::from_utf8(&rec[..sp])
            .ok()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        if sizes.insert(shown.clone(), size).is_some() {
            // `find` lists each path once: a second one shown alike differs in bytes.
            raw.insert(shown, None);
        } else if std::str::from_utf8(path).is_err() {
            raw.insert(shown, Some(path.to_vec()));
        }
    }
    (sizes, raw)
}

/// What one root holds of the card's artifacts, by path inside the root.
struct RootPlan {
    /// Files named as the card's package, binary or NCCL library.
    named: Vec<String>,
    /// Checkpoint folders (`""` for the root itself) and their files' paths inside them.
    checkpoints: Vec<(String, Vec<String>)>,
    /// Every path to hash, once.
    all: Vec<String>,
    /// The size the listing gave of each named file.
    sizes: BTreeMap<String, u64>,
}

fn listed_size(plan: &RootPlan, p: &str) -> u64 {
    plan.sizes.get(p).copied().unwrap_or(0)
}

/// Picks the named artifacts and the checkpoint folders from a listing, by the local rules.
fn plan_root(listed: &BTreeMap<String, u64>, names: &Names) -> RootPlan {
    let mut by_dir: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    for p in listed.keys() {
        let (dir, name) = p.rsplit_once('/').unwrap_or(("", p));
        by_dir
            .entry(PathBuf::from(dir))
            .or_default()
            .push(name.to_string());
    }
    let dirs: Vec<PathBuf> = by_dir
        .iter()
        .filter(|(_, names)| discover::looks_like_checkpoint(names))
        .map(|(d, _)| d.clone())
        .collect();
    let checkpoints: Vec<(String, Vec<String>)> = discover::topmost(dirs)
        .into_iter()
        .map(|d| {
            let d = d.to_string_lossy().to_string();
            (d.clone(), checkpoint_files(listed, &d))
        })
        .collect();
    let in_ckpt = |p: &str| checkpoints.iter().any(|(d, _)| inside(d, p).is_some());
    let named: Vec<String> = listed
        .keys()
        .filter(|p| {
            let n = Some(base(p));
            names.package.as_deref() == n
                || names.nccl.as_deref() == n
                || (names.binary.as_deref() == n && !in_ckpt(p))
        })
        .cloned()
        .collect();
    // A package read into for its binary is streamed whole, not hashed by `sha256sum`.
    let mut all: BTreeSet<String> = named
        .iter()
        .filter(|p| names.streamed(p).is_none())
        .cloned()
        .collect();
    for (d, files) in &checkpoints {
        all.extend(files.iter().map(|f| join(d, f)));
    }
    RootPlan {
        sizes: named.iter().map(|p| (p.clone(), listed[p])).collect(),
        named,
        checkpoints,
        all: all.into_iter().collect(),
    }
}

/// `p` relative to folder `d` (both inside the root; `""` is the root), if it lies inside.
fn inside<'a>(d: &str, p: &'a str) -> Option<&'a str> {
    if d.is_empty() {
        return Some(p);
    }
    p.strip_prefix(d)?.strip_prefix('/')
}

fn join(d: &str, rel: &str) -> String {
    if d.is_empty() {
        rel.to_string()
    } else {
        format!("{d}/{rel}")
    }
}

/// The path on the box of `p` inside the root folder `dir` (absolute).
fn on_box(dir: &str, p: &str) -> String {
    match p {
        "" => dir.to_string(),
        p => format!("{}/{p}", dir.trim_end_matches('/')),
    }
}

/// The files of checkpoint folder `d` as the local checkpoint rehash reads them.
fn checkpoint_files(listed: &BTreeMap<String, u64>, d: &str) -> Vec<String> {
    listed
        .keys()
        .filter_map(|p| inside(d, p))
        .filter(|rel| discover::in_checkpoint_listing(rel))
        .map(String::from)
        .collect()
}

/// Runs [`HASH`] over `paths` (inside the root): their digests by path. A file with no digest
/// line could not be read; the reason is looked up in what `sha256sum` said.
fn hash(
    reach: &Reach,
    r: &RemoteRoot,
    paths: &[String],
    listed: &BTreeMap<String, u64>,
    raw: &RawNames,
) -> Result<Sums, Fatal> {
    if paths.is_empty() {
        return Ok(Sums::default());
    }
    let total: u64 = paths.iter().filter_map(|p| listed.get(p)).sum();
    let mut input = Vec::new();
    let mut unnamed = BTreeSet::new();
    for p in paths {
        match raw.get(p) {
            Some(Some(bytes)) => input.extend_from_slice(bytes),
            Some(None) => {
                unnamed.insert(p.clone());
                continue;
            }
            None => input.extend_from_slice(p.as_bytes()),
        }
        input.push(0);
    }
    // Two minutes, and one more second for every 20 MiB (a slow disk).
    let bounds = Bounds {
        input,
        out_max: LIST_MAX,
        timeout: Duration::from_secs(120 + total / (20 << 20)),
    };
    let o = reach
        .run_with(&r.target, HASH, &[&r.dir], bounds)
        .map_err(|e| fatal(format!("{}: {e}", what(r))))?;
    if o.code != Some(0) || o.cut {
        return Err(failed(reach, r, "hash the files in", &o));
    }
    Ok(Sums {
        digests: parse_sums(&o.stdout),
        said: o.stderr,
        unnamed,
    })
}

/// What [`HASH`] gave.
#[derive(Default)]
struct Sums {
    digests: BTreeMap<String, String>,
    said: String,
    /// Paths not sent: shown alike with another (see [`RawNames`]).
    unnamed: BTreeSet<String>,
}

impl Sums {
    /// The digest of `p`, or why there is none.
    fn of(&self, p: &str) -> Result<String, String> {
        if let Some(d) = self.digests.get(p) {
            return Ok(d.clone());
        }
        if self.unnamed.contains(p) {
            return Err("its name on the box is not UTF-8 and reads the same as another file's once the bytes that are not are shown as U+FFFD, so neither can be told apart; rehash the folder through a local --root".into());
        }
        let why = self.said.lines().find_map(|l| {
            l.split_once(&format!(": {p}: "))
                .map(|(_, w)| w.to_string())
        });
        Err(match why {
            Some(w) => format!("sha256sum on the box: {}", crate::input::shown(&w)),
            None => "sha256sum on the box printed no digest for it".into(),
        })
    }
}

/// `sha256sum` lines: `HEX  PATH`, or `\HEX  PATH` with `\\`, `\n` and `\r` escaped in PATH.
fn parse_sums(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| {
            let (escaped, l) = match l.strip_prefix('\\') {
                Some(rest) => (true, rest),
                None => (false, l),
            };
            let d = digest_of(l)?;
            let p = l.get(66..)?;
            Some((if escaped { unescape(p) } else { p.to_string() }, d))
        })
        .collect()
}

fn unescape(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some(o) => out.push(o),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// Where a path inside a remote root is, for the report.
fn location(r: &RemoteRoot, p: &str) -> Location {
    Location {
        box_name: Some(r.target.box_name.clone()),
        path: format!("{}:{}", r.target, on_box(&r.dir, p)),
        member: None,
    }
}

/// The package, binary and NCCL library found, with the NCCL version read from its text.
fn record_named(
    reach: &Reach,
    r: &RemoteRoot,
    plan: &RootPlan,
    sums: &Sums,
    names: &Names,
    m: &mut Measured,
) {
    for p in &plan.named {
        let name = Some(base(p));
        if let Some(kind) = names.streamed(p) {
            let member = names.member.as_deref().unwrap_or_default();
            let read = stream_package(reach, r, p, kind, member, listed_size(plan, p));
            super::package_read(&location(r, p), read, Some(member), m);
            continue;
        }
        let file = Hashed {
            at: location(r, p),
            sha256: sums.of(p),
        };
        if names.package.as_deref() == name {
            m.package.push(file.clone());
        }
        if names.binary.as_deref() == name {
            m.binary.push(file.clone());
        }
        if names.nccl.as_deref() == name {
            let version = nccl_version(reach, &r.target, &on_box(&r.dir, p));
            m.nccl.push(NcclSeen { file, version });
        }
    }
}

/// Streams the package `p` from the box (`cat`, over ssh) through the local member reader, with
/// its bounds; the client is killed past two minutes and one second per 20 MiB, and reaped.
fn stream_package(
    reach: &Reach,
    r: &RemoteRoot,
    p: &str,
    kind: archive::Kind,
    member: &str,
    packed: u64,
) -> archive::PackageRead {
    let failed = |e: String| archive::PackageRead {
        whole: Some(Err(io::Error::other(format!("on the box: {e}")))),
        ..archive::PackageRead::default()
    };
    let mut child = match reach.spawn(&r.target, CAT, &[&on_box(&r.dir, p)]) {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let stdout = child.stdout.take();
    let err = read_bounded(child.stderr.take(), 64 * 1024);
    let child = Arc::new(Mutex::new(child));
    let (done, watch) = watchdog(&child, Duration::from_secs(120 + packed / (20 << 20)));
    let read = match stdout {
        Some(s) => archive::hash_members_from(s, packed, kind, member, &Progress::none()),
        None => failed("no output".into()),
    };
    let _ = done.send(());
    let timed_out = watch.join().unwrap_or(true);
    let status = child.lock().map(|mut c| c.wait());
    let said = err.join().map(|(s, _)| s).unwrap_or_default();
    let ended = matches!(status, Ok(Ok(s)) if s.success());
    // The reader's own refusal (it stopped reading, so `cat` ended on a closed pipe) stands.
    let refused = read.whole.as_ref().is_some_and(|w| w.is_err());
    if timed_out {
        failed("no end within its time; stopped".into())
    } else if ended || refused {
        read
    } else {
        failed(format!("cat failed: {}", crate::input::shown(said.trim())))
    }
}

/// Kills `child` when nothing is sent on the returned channel within `limit`; the thread
/// answers whether it did.
fn watchdog(
    child: &Arc<Mutex<std::process::Child>>,
    limit: Duration,
) -> (mpsc::Sender<()>, std::thread::JoinHandle<bool>) {
    let (tx, rx) = mpsc::channel::<()>();
    let child = Arc::clone(child);
    let watch = std::thread::spawn(move || match rx.recv_timeout(limit) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            if let Ok(mut c) = child.lock() {
                let _ = c.kill();
            }
            true
        }
        _ => false,
    });
    (tx, watch)
}

/// Each checkpoint folder found, with its files' digests, as the local stage records one.
fn record_checkpoints(
    card: &Card,
    reach: &Reach,
    r: &RemoteRoot,
    plan: &RootPlan,
    sums: &Sums,
    listed: &BTreeMap<String, u64>,
    m: &mut Measured,
) {
    for (d, files) in &plan.checkpoints {
        let at = location(r, d);
        let mut seen = CheckpointSeen {
            manifest: FileManifest {
                origin: at.path.clone(),
                entries: Vec::new(),
            },
            at,
            unreadable: Vec::new(),
            revision_file: None,
            hub_revision: None,
        };
        for rel in files {
            match sums.of(&join(d, rel)) {
                Ok(sha256) => seen.manifest.entries.push(ManifestEntry {
                    path: rel.clone(),
                    sha256,
                }),
                Err(e) => seen.unreadable.push((rel.clone(), e)),
            }
        }
        let dir = on_box(&r.dir, d);
        seen.hub_revision = super::hub_revision(Path::new(&dir));
        seen.revision_file = revision_file(card, reach, r, d, listed);
        m.checkpoints.push(seen);
    }
}

/// The card's revision file in checkpoint folder `d` on the box, read with [`READ`].
fn revision_file(
    card: &Card,
    reach: &Reach,
    r: &RemoteRoot,
    d: &str,
    listed: &BTreeMap<String, u64>,
) -> Option<RevisionFileSeen> {
    let p = card.checkpoint.revision_file.as_ref()?.path.trim();
    if let Err(m) = rigaudit_audit::schema::safe_path(p) {
        return Some(RevisionFileSeen::NotLocatable(format!(
            "the card's path {m}"
        )));
    }
    let p = p.trim_start_matches("./");
    let Some(&size) = listed.get(&join(d, p)) else {
        return Some(if p.contains(' ') {
            RevisionFileSeen::NotLocatable(
                "the card names it in words, not as a path inside the folder".to_string(),
            )
        } else {
            RevisionFileSeen::Missing
        });
    };
    if size > crate::input::REVISION_MAX {
        return Some(RevisionFileSeen::Unreadable(format!(
            "it is {size} bytes long, not a revision"
        )));
    }
    let path = on_box(&r.dir, &join(d, p));
    Some(match reach.run(&r.target, READ, &[&path]) {
        Ok(o) if o.code == Some(0) => RevisionFileSeen::Content(o.stdout),
        Ok(o) => RevisionFileSeen::Unreadable(format!("on the box: {}", said(&o))),
        Err(e) => RevisionFileSeen::Unreadable(format!("on the box: {e}")),
    })
}

/// The version an NCCL library's text names, read on the box (the library is never loaded).
fn nccl_version(reach: &Reach, t: &Target, path: &str) -> NcclVersion {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let via = match reach {
        Reach::Ssh(_) => " over ssh".to_string(),
        Reach::Slurm(_) | Reach::Job(_) => format!(", {}", reach.how(t)),
    };
    let why = format!(
        "on box {}{via}: read from its text, never loaded",
        t.box_name
    );
    match reach.run(t, NCCL_CHECK, &[file, dir]) {
        Ok(o) if o.code == Some(0) => {
            match o
                .stdout
                .lines()
                .nth(2)
                .and_then(|v| v.strip_prefix("NCCL version "))
            {
                Some(v) => NcclVersion::FromText {
                    version: v.trim_end_matches(['+', ' ']).to_string(),
                    why,
                },
                None => NcclVersion::NotQueried {
                    why: format!("{why}; its text names no NCCL version"),
                },
            }
        }
        Ok(o) => NcclVersion::NotQueried {
            why: format!("{why}; reading it failed: {}", said(&o)),
        },
        Err(e) => NcclVersion::NotQueried {
            why: format!("{why}; {e}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_is_planned_as_the_local_walk_plans() {
        let (listed, raw) = parse_listing(
            b"10 opt/bin/engine\0\
             20 models/GLM/config.json\0\
             30 models/GLM/model.safetensors\0\
             5 models/GLM/.cache/huggingface/x.lock\0\
             7 models/GLM/sub/tokenizer.json\0\
             9 models/GLM/bin/engine\0\
             3 ./models/link.gguf\0\
             4 lib/libnccl.so.2\0",
        );
        let names = Names {
            package: None,
            binary: Some("engine".into()),
            nccl: Some("libnccl.so.2".into()),
            member: None,
        };
        assert!(raw.is_empty());
        let p = plan_root(&listed, &names);
        assert_eq!(p.named, ["lib/libnccl.so.2", "opt/bin/engine"]);
        assert_eq!(p.checkpoints.len(), 1, "{:?}", p.checkpoints);
        assert_eq!(p.checkpoints[0].0, "models");
        assert!(p.checkpoints[0]
            .1
            .contains(&"GLM/sub/tokenizer.json".to_string()));
        assert!(!p.checkpoints[0].1.iter().any(|f| f.contains(".cache")));
        assert!(p.all.contains(&"models/link.gguf".to_string()));
    }

    #[test]
    fn sums_are_read_with_escaped_names_and_reasons() {
        let d = "ab".repeat(32);
        let out = format!("{d}  a b\n\\{d}  x\\\\y\\nz\n");
        let s = Sums {
            digests: parse_sums(&out),
            said: "sha256sum: gone: No such file or directory\n".into(),
            ..Sums::default()
        };
        assert_eq!(s.of("a b"), Ok(d.clone()));
        assert_eq!(s.of("x\\y\nz"), Ok(d));
        assert_eq!(
            s.of("gone").unwrap_err(),
            "sha256sum on the box: No such file or directory"
        );
    }

    #[test]
    fn a_name_that_is_not_utf8_keeps_its_bytes_and_two_shown_alike_are_named() {
        let (listed, raw) = parse_listing(
            b"3 m/bad\xffname.json\x004 m/ok.json\x005 m/x\xfe.bin\x006 m/x\xfd.bin\x00",
        );
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert_eq!(listed["m/bad\u{fffd}name.json"], 3);
        assert_eq!(
            raw["m/bad\u{fffd}name.json"].as_deref(),
            Some(&b"m/bad\xffname.json"[..])
        );
        assert!(!raw.contains_key("m/ok.json"));
        assert_eq!(raw["m/x\u{fffd}.bin"], None);
        // sha256sum prints the name's bytes as they are; read as text they are the shown name.
        let d = "cd".repeat(32);
        let out = [format!("{d}  ").as_bytes(), b"m/bad\xffname.json\n"].concat();
        let s = Sums {
            digests: parse_sums(&String::from_utf8_lossy(&out)),
            unnamed: ["m/x\u{fffd}.bin".to_string()].into(),
            ..Sums::default()
        };
        assert_eq!(s.of("m/bad\u{fffd}name.json"), Ok(d));
        assert!(s.of("m/x\u{fffd}.bin").unwrap_err().contains("not UTF-8"));
    }
}
