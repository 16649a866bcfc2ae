//! What actually ran: per rank, the executable and every file-backed mapping of the server process
//! and its children, read from `/proc` once the server is ready and again after the last request
//! ([`Inventory::read`]), then each file hashed once and asked what it is ([`Inventory::finish`]):
//! the records `loaded.*` judges against the card (`rigaudit_audit::loaded`).
//!
//! A file is pinned when it is seen: the executable through `/proc/PID/exe` (the very inode the
//! process runs, even when its path was replaced or deleted since), a mapped file by opening its
//! path and checking that the inode is the one the maps line names (a file replaced since it was
//! mapped is said, never hashed in its place). The open files are hashed after the server has
//! stopped, so hashing never competes with the measurement; a file two ranks or both reads share
//! is hashed once. Nothing is loaded: versions come from the files' text and ELF notes.

pub mod facts;
pub mod proc;
pub mod remote;

use crate::rehash::hash::{self, Progress};
use rigaudit_audit::records::loaded::{LoadedObject, LoadedRank, Role};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;

/// The most distinct files one inventory pins (and keeps open until they are hashed).
const MAX_FILES: usize = 8192;

/// One rank to read.
#[derive(Clone)]
pub struct Target {
    /// The rank.
    pub rank: u32,
    /// The card's box it runs on.
    pub box_name: String,
    /// Where its server runs and how it is read.
    pub place: Place,
}

/// Where a rank's server runs.
#[derive(Clone)]
pub enum Place {
    /// On this machine, as this pid.
    Here(u32),
    /// On a box reached over ssh: read there by fixed scripts.
    OnBox(remote::OnBox),
    /// Not read, and why.
    NotRead(String),
}

/// A file identified by device and inode.
type Key = (u64, u64);

/// What one rank showed of one path: pinned here (`key`), or listed on a box (`inode`, and the
/// executable's `digest`), and what hashing it on the box gave.
#[derive(Default)]
struct Seen {
    executable: bool,
    key: Option<Key>,
    inode: Option<u64>,
    digest: Option<String>,
    size: Option<u64>,
    elf: Option<bool>,
    version: Option<String>,
    problem: Option<String>,
    at: Vec<&'static str>,
}

/// One rank's reads so far.
struct Rank {
    target: Target,
    read_at: Vec<String>,
    processes: BTreeSet<u32>,
    loader_env: BTreeMap<String, String>,
    objects: BTreeMap<String, Seen>,
    not_read: Vec<String>,
    gone: Vec<String>,
}

/// The ranks' reads and the files they pinned.
pub struct Inventory {
    ranks: Vec<Rank>,
    files: BTreeMap<Key, File>,
    full: bool,
}

impl Inventory {
    /// An inventory of these ranks, nothing read yet; a rank that is not read is said at once.
    pub fn new(targets: Vec<Target>) -> Self {
        let ranks = targets
            .into_iter()
            .map(|t| Rank {
                not_read: match &t.place {
                    Place::NotRead(why) => vec![why.clone()],
                    _ => Vec::new(),
                },
                target: t,
                read_at: Vec::new(),
                processes: BTreeSet::new(),
                loader_env: BTreeMap::new(),
                objects: BTreeMap::new(),
                gone: Vec::new(),
            })
            .collect();
        Inventory {
            ranks,
            files: BTreeMap::new(),
            full: false,
        }
    }

    /// Reads every rank's process tree now; `at` names the moment (`ready`, `end`, `now`).
    pub fn read(&mut self, at: &'static str) {
        for i in 0..self.ranks.len() {
            match self.ranks[i].target.place.clone() {
                Place::Here(pid) => self.read_here(i, pid, at),
                Place::OnBox(b) => self.read_on_box(i, &b, at),
                Place::NotRead(_) => {}
            }
        }
    }

    /// Reads rank `i`'s tree on this machine.
    fn read_here(&mut self, i: usize, pid: u32, at: &'static str) {
        if !proc::alive(pid) {
            self.ranks[i].gone.push(format!(
                "the server (pid {pid}) had exited when it was to be read at {at}"
            ));
            return;
        }
        self.ranks[i].read_at.push(at.to_string());
        for p in proc::tree(pid) {
            self.read_process(i, p, pid, at);
        }
    }

    /// Reads rank `i`'s tree on its box.
    fn read_on_box(&mut self, i: usize, b: &remote::OnBox, at: &'static str) {
        let rank = &mut self.ranks[i];
        let listing = match remote::list(b) {
            Ok(l) => l,
            Err(e) => return rank.not_read.push(format!("at {at}: {e}")),
        };
        if listing.gone {
            let why = format!(
                "the server (pid {} on {}) had exited when it was to be read at {at}",
                b.pid, b.target
            );
            return rank.gone.push(why);
        }
        if let Some(why) = listing.refused {
            return rank.not_read.push(format!("at {at}: {why}"));
        }
        rank.read_at.push(at.to_string());
        rank.processes.extend(listing.processes);
        rank.loader_env = listing.loader_env;
        for (path, hashed) in listing.executables {
            let (digest, size) = hashed.unzip();
            let seen = Seen {
                executable: true,
                digest,
                size,
                ..Seen::default()
            };
            self.note_seen(i, path, seen, at);
        }
        for (inode, path) in listing.maps {
            let seen = Seen {
                inode: Some(inode),
                ..Seen::default()
            };
            self.note_seen(i, path, seen, at);
        }
    }

    /// Reads one process of rank `i`'s tree into its objects, pinning the files.
    fn read_process(&mut self, i: usize, pid: u32, root: u32, at: &'static str) {
        let p = proc::process(pid);
        let gone = !proc::alive(pid);
        let rank = &mut self.ranks[i];
        rank.processes.insert(pid);
        if pid == root {
            rank.loader_env = p.loader_env.clone();
        }
        if !gone {
            rank.not_read
                .extend(p.refused.iter().map(|w| format!("process {pid}: {w}")));
        }
        if let Some(exe) = &p.exe {
            let path = exe.strip_suffix(" (deleted)").unwrap_or(exe).to_string();
            let pinned = File::open(format!("/proc/{pid}/exe"));
            let seen = self.pin(pinned.map_err(|e| e.to_string()), None);
            self.note(i, path, true, seen, at);
        }
        for m in &p.maps {
            let seen = if m.deleted {
                (
                    None,
                    Some("deleted since it was mapped: not hashed".to_string()),
                )
            } else {
                self.pin(
                    File::open(&m.path).map_err(|e| e.to_string()),
                    Some(m.inode),
                )
            };
            self.note(i, m.path.clone(), false, seen, at);
        }
    }

    /// Keeps `file` open under its key (once), checking its inode against the mapped one.
    fn pin(
        &mut self,
        file: Result<File, String>,
        mapped: Option<u64>,
    ) -> (Option<Key>, Option<String>) {
        let file = match file {
            Ok(f) => f,
            Err(e) => return (None, Some(format!("cannot be opened: {e}"))),
        };
        let Ok(meta) = file.metadata() else {
            return (None, Some("cannot be read".into()));
        };
        if !meta.is_file() {
            return (None, Some("not a regular file".into()));
        }
        if let Some(ino) = mapped.filter(|ino| *ino != meta.ino()) {
            return (None, Some(replaced(ino, meta.ino())));
        }
        let key = (meta.dev(), meta.ino());
        if !self.files.contains_key(&key) {
            if self.files.len() >= MAX_FILES {
                self.full = true;
                return (
                    None,
                    Some(format!(
                        "past the {MAX_FILES} files one inventory hashes: not hashed"
                    )),
                );
            }
            self.files.insert(key, file);
        }
        (Some(key), None)
    }

    /// Records that rank `i` showed `path` at `at`, pinned here under `key` or not (why).
    fn note(
        &mut self,
        i: usize,
        path: String,
        executable: bool,
        (key, problem): (Option<Key>, Option<String>),
        at: &'static str,
    ) {
        let seen = Seen {
            executable,
            key,
            problem,
            ..Seen::default()
        };
        self.note_seen(i, path, seen, at);
    }

    /// Merges what one read showed of `path` into rank `i`'s record of it.
    fn note_seen(&mut self, i: usize, path: String, new: Seen, at: &'static str) {
        let seen = self.ranks[i].objects.entry(path).or_default();
        seen.executable |= new.executable;
        let first = seen.at.is_empty();
        let moved = (seen.key.is_some() && new.key.is_some() && seen.key != new.key)
            || (seen.inode.is_some() && new.inode.is_some() && seen.inode != new.inode);
        if first || (seen.key.is_none() && new.key.is_some()) {
            seen.key = new.key.or(seen.key);
            seen.inode = new.inode.or(seen.inode);
            seen.problem = new.problem;
        } else if moved {
            seen.problem =
                Some("another file at this path between the reads: the first is hashed".into());
        }
        seen.digest = seen.digest.take().or(new.digest);
        seen.size = seen.size.or(new.size);
        if !seen.at.contains(&at) {
            seen.at.push(at);
        }
    }

    /// Hashes every pinned file once (on every core), reads what each says of itself, and gives
    /// the ranks' records.
    pub fn finish(self) -> Vec<LoadedRank> {
        let nccl: BTreeSet<Key> = self
            .ranks
            .iter()
            .flat_map(|r| r.objects.iter())
            .filter(|(path, _)| is_nccl(path))
            .filter_map(|(_, seen)| seen.key)
            .collect();
        let files: Vec<(Key, File)> = self.files.into_iter().collect();
        let described = hash::parallel(&files, crate::host::cores(), |(k, f)| {
            describe(f, nccl.contains(k))
        });
        let by_key: BTreeMap<Key, Described> =
            files.iter().map(|(k, _)| *k).zip(described).collect();
        let mut python = facts::PythonPackages::default();
        let mut ranks: Vec<LoadedRank> = self
            .ranks
            .into_iter()
            .map(|mut r| {
                hash_on_box(&mut r);
                rank_record(r, &by_key, &mut python)
            })
            .collect();
        if self.full {
            for r in &mut ranks {
                r.not_read.push(format!(
                    "more than {MAX_FILES} distinct files were mapped: those past them are listed, not hashed"
                ));
            }
        }
        ranks
    }
}

/// Hashes on its box what a rank there mapped (the executables were hashed when listed): each
/// file whose inode is still the one mapped gets its digest, size and facts.
fn hash_on_box(r: &mut Rank) {
    let Place::OnBox(b) = &r.target.place else {
        return;
    };
    let paths: Vec<String> = r
        .objects
        .iter()
        .filter(|(_, s)| s.digest.is_none() && s.problem.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let hashed = match remote::hash(b, &paths) {
        Ok(h) => h,
        Err(e) => return r.not_read.push(e),
    };
    for (path, got) in hashed {
        let Some(seen) = r.objects.get_mut(&path) else {
            continue;
        };
        match got {
            None => seen.problem = Some("cannot be read on the box".into()),
            Some(h) if seen.inode.is_some_and(|i| i != h.inode) => {
                seen.problem = Some(replaced(seen.inode.unwrap_or(0), h.inode));
            }
            Some(h) => {
                seen.digest = Some(h.sha256);
                seen.size = Some(h.size);
                seen.elf = Some(h.elf);
                seen.version = h.version;
            }
        }
    }
}

/// Why a mapped file is not hashed: the inode at its path is not the one mapped.
fn replaced(mapped: u64, now: u64) -> String {
    format!(
        "replaced since it was mapped (inode {mapped} mapped, {now} at the path now): not hashed"
    )
}

/// Whether a path names an NCCL library (runtime or plugin).
fn is_nccl(path: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|n| n.starts_with("libnccl"))
}

/// `--running [RANK=]PID` values as (rank, pid), ranks 0, 1, ... in the order given where none is
/// named; `Err` names a value that is neither, a rank given twice, or a process not running here.
pub fn running_targets(specs: &[String]) -> Result<Vec<(u32, u32)>, crate::fatal::Fatal> {
    use crate::fatal::fatal;
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (rank, pid) = match spec.split_once('=') {
            Some((r, p)) => (r.trim().parse::<u32>().ok(), p.trim()),
            None => (u32::try_from(i).ok(), spec.trim()),
        };
        let pid = pid.parse::<u32>().ok().filter(|p| *p > 0);
        let (Some(rank), Some(pid)) = (rank, pid) else {
            return Err(fatal(format!(
                "--running {}: write PID or RANK=PID (whole numbers: the server's process id on this machine)",
                crate::input::shown(spec)
            )));
        };
        if out.iter().any(|(r, _)| *r == rank) {
            return Err(fatal(format!(
                "--running {}: rank {rank} is given twice",
                crate::input::shown(spec)
            )));
        }
        if !proc::alive(pid) {
            return Err(fatal(format!(
                "--running {}: no process {pid} is running on this machine (or it is not visible to this user)",
                crate::input::shown(spec)
            )));
        }
        out.push((rank, pid));
    }
    Ok(out)
}

/// What the running servers `targets` mapped, read now, hashed and judged against `card`: the
/// findings of `loaded.*` with the inventory.
pub fn running(
    card: &rigaudit_audit::records::Card,
    card_file: &str,
    targets: Vec<Target>,
) -> rigaudit_audit::Findings {
    let mut inventory = Inventory::new(targets);
    inventory.read("now");
    let ranks = inventory.finish();
    rigaudit_audit::loaded::judged(Some((card, card_file)), ranks, false)
}

/// What one pinned file is: digest, size, ELF facts, NCCL version.
struct Described {
    sha256: Result<String, String>,
    size: u64,
    elf: Option<facts::ElfFacts>,
    nccl: Option<String>,
}

/// Hashes `f` and reads its facts (its NCCL version too when `nccl`).
fn describe(f: &File, nccl: bool) -> Described {
    let mut size = None;
    let sha = crate::digest::once_per_file(f, |mut reader| {
        reader.seek(SeekFrom::Start(0))?;
        let (digest, n) = hash::hash_reader(&mut reader, &Progress::none())?;
        size = Some(n);
        Ok(digest)
    });
    let size = size.or_else(|| f.metadata().ok().map(|m| m.len()));
    let mut again = f;
    let version = nccl
        .then(|| again.seek(SeekFrom::Start(0)).ok())
        .flatten()
        .and_then(|_| facts::nccl_version(&mut again));
    Described {
        size: size.filter(|_| sha.is_ok()).unwrap_or(0),
        sha256: sha.map_err(|e| format!("cannot be read: {e}")),
        elf: facts::elf(f),
        nccl: version,
    }
}

fn rank_record(
    r: Rank,
    by_key: &BTreeMap<Key, Described>,
    python: &mut facts::PythonPackages,
) -> LoadedRank {
    let mut objects: Vec<LoadedObject> = r
        .objects
        .into_iter()
        .map(|(path, seen)| {
            // A Python environment's RECORDs are read here: only for files on this machine.
            let python = matches!(r.target.place, Place::Here(_)).then_some(&mut *python);
            object(path, seen, by_key, python)
        })
        .collect();
    objects.sort_by(|a, b| (a.role, &a.path).cmp(&(b.role, &b.path)));
    let (host, pid) = match &r.target.place {
        Place::Here(pid) => ("this machine".to_string(), Some(*pid)),
        Place::OnBox(b) => (b.target.to_string(), Some(b.pid)),
        Place::NotRead(_) => ("unknown".to_string(), None),
    };
    LoadedRank {
        side: None,
        rank: r.target.rank,
        box_name: r.target.box_name,
        host,
        pid,
        read_at: r.read_at,
        processes: r.processes.len() as u32,
        loader_env: r.loader_env,
        objects,
        not_read: r.not_read,
        gone: r.gone,
    }
}

fn object(
    path: String,
    seen: Seen,
    by_key: &BTreeMap<Key, Described>,
    python: Option<&mut facts::PythonPackages>,
) -> LoadedObject {
    let d = seen.key.and_then(|k| by_key.get(&k));
    let elf = d.and_then(|d| d.elf.clone());
    let is_elf = elf.is_some() || seen.elf == Some(true);
    let role = match (seen.executable, is_elf) {
        (true, _) => Role::Executable,
        (false, true) => Role::Library,
        (false, false) => Role::Data,
    };
    let mut problem = seen.problem;
    if let Some(Err(e)) = d.map(|d| &d.sha256) {
        problem = Some(e.clone());
    }
    LoadedObject {
        sha256: d.and_then(|d| d.sha256.clone().ok()).or(seen.digest),
        size: d.map_or(seen.size.unwrap_or(0), |d| d.size),
        soname: elf.as_ref().and_then(|e| e.soname.clone()),
        version: d.and_then(|d| d.nccl.clone()).or(seen.version),
        package: elf
            .and_then(|e| e.package)
            .or_else(|| python?.of(&path).map(|p| format!("pypi {p}"))),
        seen: seen.at.iter().map(|s| s.to_string()).collect(),
        problem,
        role,
        path,
    }
}
