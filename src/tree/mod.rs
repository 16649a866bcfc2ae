//! `rigaudit verify DIR` on a tree of many runs: an MLPerf submitter's results folder, an lm-eval
//! output folder of many models, a folder of vLLM results, a folder of bundles.
//!
//! The walk ([`walk`]) lists the tree's folders without following a symbolic link (in or out of
//! the tree), reads no file that is not a regular one, and stops with an error past
//! [`LIMITS`] (depth, entries). Each folder is then one piece of work on a small queue over the
//! machine's cores: a bundle, as the front door tells one ([`subject::looks_like_bundle`]: a folder
//! with `bundle.json`, or a packed one), is one run; any other folder's files are read and grouped
//! into runs as each tool writes them, by the importers' own detection ([`group`]). Every run is
//! verified by itself, as `verify` of it alone would; one that cannot be read is a row of the table
//! that names the file and why (verdict incomplete), and the other runs are verified all the same.
//! [`table`] prints the table and writes each run's report; the exit code is the worst run's.
//! An MLPerf submitter's folder is read as its submission checker reads it: one run per result
//! ([`submission`]).
//! On a terminal a line of [`progress`] says folders done, runs verified, runs a second and the
//! time left.
//!
//! It sits above the front door ([`subject`]) and the verify stage: only `commands.rs` calls it,
//! with plain values and a closure that finishes each report (the policy), and nothing it imports
//! imports it back (`layers.rs` tests this).

mod group;
mod progress;
mod submission;
mod table;

pub use table::{verify, Options};

use crate::fatal::{fatal, Fatal};
use crate::import::Format;
use crate::input;
use crate::subject;
use rigaudit_audit::{Report, Severity};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A folder of many runs, as the user gave it.
pub struct Tree {
    /// The folder.
    pub root: PathBuf,
    /// `--from`: only the runs of this tool are verified.
    pub from: Option<Format>,
    /// The submitters' system descriptions read so far, by path: a system's description is read
    /// once for all its results.
    pub descriptions: submission::Descriptions,
}

impl Tree {
    /// The folder `root`, its runs of the tool `from` only when given.
    pub fn new(root: PathBuf, from: Option<Format>) -> Tree {
        Tree {
            root,
            from,
            descriptions: Default::default(),
        }
    }
}

/// The bounds of a walk.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The deepest folder below the root that is read (the root is 0).
    pub depth: usize,
    /// The most entries (files and folders) the walk lists.
    pub entries: usize,
}

/// The bounds of `verify DIR`: an MLPerf results tree is 7 folders deep
/// (`closed/ORG/results/SYSTEM/MODEL/SCENARIO/performance/run_1`), and a whole round of some 7,000
/// results holds about 200,000 files and folders (each path kept, some 100 bytes: tens of MiB).
pub const LIMITS: Limits = Limits {
    depth: 16,
    entries: 500_000,
};

/// One folder of the tree to look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A bundle (a folder with `bundle.json`, or a packed one): one run.
    Bundle(PathBuf),
    /// A folder and the regular files directly inside it, sorted.
    Files(PathBuf, Vec<PathBuf>),
    /// A result of an MLPerf submission, read through its submitter's folders ([`submission`]).
    Result(submission::ResultDir),
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Walked {
    /// The folders to look at, in the order walked.
    pub places: Vec<Place>,
    /// Folders below the root that could not be listed, with why: each a run not checked (it
    /// may hold runs).
    pub unlisted: Vec<(PathBuf, String)>,
    /// What the walk did not read, with why: symbolic links (not followed) and entries neither a
    /// regular file nor a folder (FIFOs, sockets, devices).
    pub left_out: Vec<LeftOut>,
}

/// Something in the tree that is no run rigaudit checked, and why: named in the table and
/// counted in its last line, so a tree never reads as whole when it was not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Its path.
    pub path: PathBuf,
    /// Why it was left out.
    pub why: String,
}

impl LeftOut {
    pub fn new(path: &Path, why: impl Into<String>) -> LeftOut {
        LeftOut {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

/// One run of the tree and what verifying it gave.
pub struct Row {
    /// Its path relative to the root (its folder, or its file when the folder holds more runs).
    pub run: String,
    /// Its tool's name, or `bundle`.
    pub tool: String,
    /// Its report, or why it could not be checked.
    pub report: Result<Report, String>,
}

impl Row {
    /// The run's exit code: 0 pass, 1 fail, 3 incomplete (its own report's, or a run that could
    /// not be read: the tree was read, one of its runs was not).
    pub fn exit_code(&self) -> i32 {
        self.report.as_ref().map_or(3, Report::exit_code)
    }
}

/// Whether a path the user gave is a tree of runs: a folder that is not a bundle (as the front door,
/// [`subject::looks_like_bundle`], tells one) whose own files are more than one run, or are none
/// while it holds a sub-folder. A folder whose files are one run stays that run, sub-folders and
/// all (an AIPerf artifact folder keeps its `logs/`), as `verify` read it before.
pub fn is_tree(path: &Path) -> bool {
    if !path.is_dir() || subject::looks_like_bundle(path) {
        return false;
    }
    let Ok(rd) = std::fs::read_dir(path) else {
        return false;
    };
    let mut files = Vec::new();
    let mut has_folder = false;
    for e in rd.flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => has_folder = true,
            Ok(t) if t.is_file() => files.push(e.path()),
            _ => {}
        }
    }
    files.sort();
    let (runs, _) = group::runs(path, path, &files);
    // A file that cannot be read does not make a tree: the one run's reader names it.
    let readable = runs.iter().filter(|r| r.job.is_ok()).count();
    readable > 1 || (runs.is_empty() && has_folder)
}

/// Lists the tree's folders within `limits`; `Err` naming the bound passed, or a folder that
/// cannot be listed.
pub fn walk(root: &Path, limits: Limits) -> Result<Walked, Fatal> {
    let mut out = Walked::default();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut entries = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        if depth > 0 && subject::looks_like_bundle(&dir) {
            out.places.push(Place::Bundle(dir));
            continue;
        }
        let mut listed = match list(&dir) {
            Ok(l) => l,
            Err(e) if depth > 0 => {
                out.unlisted.push((dir, e.0));
                continue;
            }
            Err(e) => return Err(e),
        };
        entries += listed.len();
        if entries > limits.entries {
            return Err(fatal(format!(
                "{}: the tree holds more than {} files and folders; refused (give a sub-folder)",
                input::shown_path(root),
                limits.entries
            )));
        }
        listed.sort();
        let mut files = Vec::new();
        for (path, kind) in listed.into_iter().rev() {
            match kind {
                Kind::Dir if depth + 1 > limits.depth => {
                    return Err(fatal(format!(
                        "{}: deeper than {} folders below {}; refused (give a sub-folder)",
                        input::shown_path(&path),
                        limits.depth,
                        input::shown_path(root)
                    )))
                }
                Kind::Dir => stack.push((path, depth + 1)),
                // A packed bundle is a run by itself, as the front door tells one.
                Kind::File if subject::looks_like_bundle(&path) => {
                    out.places.push(Place::Bundle(path))
                }
                Kind::File => files.push(path),
                Kind::Link => out
                    .left_out
                    .push(LeftOut::new(&path, "a symbolic link, not followed")),
                Kind::Other => out.left_out.push(LeftOut::new(
                    &path,
                    "neither a regular file nor a folder (a FIFO, a socket or a device), not read",
                )),
            }
        }
        if !files.is_empty() {
            files.reverse();
            out.places.push(Place::Files(dir, files));
        }
    }
    Ok(out)
}

/// What a folder's entry is, by its own type (a symbolic link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Dir,
    File,
    Link,
    Other,
}

fn list(dir: &Path) -> Result<Vec<(PathBuf, Kind)>, Fatal> {
    let rd = std::fs::read_dir(dir)
        .map_err(|e| fatal(format!("{}: cannot list: {e}", input::shown_path(dir))))?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| fatal(format!("{}: cannot list: {e}", input::shown_path(dir))))?;
        let kind = match e.file_type() {
            Ok(t) if t.is_symlink() => Kind::Link,
            Ok(t) if t.is_dir() => Kind::Dir,
            Ok(t) if t.is_file() => Kind::File,
            _ => Kind::Other,
        };
        out.push((e.path(), kind));
    }
    Ok(out)
}

/// Verifies every run of the places, on `workers` threads taking places off one queue; the rows
/// come back sorted by run, with what the places held that is no run. `finish` applies the policy
/// to each report; `quiet` keeps the progress line off a terminal.
pub fn verify_all(
    tree: &Tree,
    places: &[Place],
    (fail_on, quiet): (Option<Severity>, bool),
    finish: &(dyn Fn(Report) -> Report + Sync),
) -> (Vec<Row>, Vec<LeftOut>) {
    let progress = progress::Progress::new(places.len(), quiet);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, places.len().max(1));
    let next = AtomicUsize::new(0);
    let (mut rows, mut left_out) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let (mut rows, mut left_out) = (Vec::new(), Vec::new());
                    while let Some(place) = places.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let (r, l) = group::verify_place(tree, place, fail_on, finish);
                        progress.folder_done(r.len());
                        rows.extend(r);
                        left_out.extend(l);
                    }
                    (rows, left_out)
                })
            })
            .collect();
        let (mut rows, mut left_out) = (Vec::new(), Vec::new());
        for h in handles {
            let (r, l) = h.join().unwrap_or_default();
            rows.extend(r);
            left_out.extend(l);
        }
        (rows, left_out)
    });
    progress.finish();
    rows.sort_by(|a, b| a.run.cmp(&b.run));
    left_out.sort_by(|a, b| a.path.cmp(&b.path));
    (rows, left_out)
}

/// A path shown relative to the root (`.` for the root itself).
pub fn relative(root: &Path, p: &Path) -> String {
    match p.strip_prefix(root) {
        Ok(r) if r.as_os_str().is_empty() => ".".into(),
        Ok(r) => input::shown_path(r),
        Err(_) => input::shown_path(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }

    #[test]
    fn the_walk_stops_at_its_bounds_and_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c/d");
        touch(&deep.join("f.json"));
        let small = Limits {
            depth: 3,
            entries: 100,
        };
        let e = walk(dir.path(), small).unwrap_err().0;
        assert!(
            e.contains("deeper than 3 folders") && e.contains("a/b/c/d"),
            "{e}"
        );
        for i in 0..10 {
            touch(&dir.path().join(format!("f{i}.json")));
        }
        let few = Limits {
            depth: 8,
            entries: 8,
        };
        let e = walk(dir.path(), few).unwrap_err().0;
        assert!(e.contains("more than 8 files and folders"), "{e}");
        assert!(walk(dir.path(), LIMITS).is_ok());
    }

    #[test]
    fn links_are_not_followed_nor_fifos_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        touch(&outside.path().join("secret.json"));
        touch(&dir.path().join("run/results.json"));
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("run/loop")).unwrap();
        let fifo = dir.path().join("run/pipe.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let w = walk(dir.path(), LIMITS).unwrap();
        let run = dir.path().join("run");
        let only = Place::Files(run.clone(), vec![run.join("results.json")]);
        assert_eq!(w.places, vec![only]);
        let why =
            |w: &Walked, what: &str| w.left_out.iter().filter(|l| l.why.contains(what)).count();
        assert_eq!((why(&w, "symbolic link"), why(&w, "FIFO")), (2, 1));
        assert!(w.left_out.iter().any(|l| l.path == fifo));
    }
}
