//! Opens a bundle (a folder or a .tar.gz / .tar), checks every file against the manifest and its
//! schema, and parses what passes into the typed [`rigaudit_audit::Bundle`] the checks read.
//!
//! What it sees of each raw file (missing, outside the bundle, its digest, what is wrong reading
//! it) is recorded in the bundle as facts, which the `schema.*` checks of `rigaudit_audit` turn
//! into findings; only a bundle whose manifest cannot be read at all is a [`Fatal`] error.

use crate::fatal::{fatal, Fatal};
use crate::schemas;
use rigaudit_audit::bundle::{FileFacts, Loaded, Problem, Seen};
use rigaudit_audit::records::{FileEntry, FileKind, Manifest};
use rigaudit_audit::schema::safe_path;
use rigaudit_audit::{Bundle, QualityTest};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A bundle opened on disk (a packed bundle is unpacked into a temporary folder kept alive here).
pub struct Opened {
    /// The folder that holds `bundle.json`.
    pub root: PathBuf,
    /// The parsed manifest.
    pub manifest: Manifest,
    _tmp: Option<tempfile::TempDir>,
}

/// Opens a bundle folder or packed bundle and reads its manifest.
pub fn open(path: &Path) -> Result<Opened, Fatal> {
    let meta = std::fs::metadata(path)
        .map_err(|e| fatal(format!("{}: cannot open the bundle: {e}", path.display())))?;
    let (root, tmp) = if meta.is_dir() {
        (path.to_path_buf(), None)
    } else {
        let tmp = tempfile::tempdir()
            .map_err(|e| fatal(format!("cannot make a temporary folder: {e}")))?;
        unpack(path, tmp.path())?;
        let root = find_manifest_root(tmp.path()).ok_or_else(|| {
            fatal(format!(
                "{}: the archive holds no bundle.json",
                path.display()
            ))
        })?;
        (root, Some(tmp))
    };
    let mpath = root.join("bundle.json");
    let text = std::fs::read_to_string(&mpath).map_err(|e| {
        fatal(format!(
            "{}: cannot read the manifest: {e}",
            mpath.display()
        ))
    })?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        fatal(format!(
            "{}: line {}, column {}: not valid JSON: {e}",
            mpath.display(),
            e.line(),
            e.column()
        ))
    })?;
    let errs = schemas::errors(schemas::bundle(), &value, 10);
    if !errs.is_empty() {
        let list: Vec<String> = errs.iter().map(|(p, m)| format!("at {p}: {m}")).collect();
        return Err(fatal(format!(
            "{}: the manifest does not follow schemas/bundle.schema.json: {}",
            mpath.display(),
            list.join("; ")
        )));
    }
    let manifest: Manifest = serde_json::from_value(value).map_err(|e| {
        fatal(format!(
            "{}: the manifest cannot be read: {e}",
            mpath.display()
        ))
    })?;
    Ok(Opened {
        root,
        manifest,
        _tmp: tmp,
    })
}

fn find_manifest_root(dir: &Path) -> Option<PathBuf> {
    if dir.join("bundle.json").is_file() {
        return Some(dir.to_path_buf());
    }
    let mut subdirs = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().is_dir());
    let first = subdirs.next()?;
    subdirs
        .next()
        .is_none()
        .then(|| first.path())
        .filter(|p| p.join("bundle.json").is_file())
}

fn unpack(archive: &Path, into: &Path) -> Result<(), Fatal> {
    let f = File::open(archive).map_err(|e| fatal(format!("{}: {e}", archive.display())))?;
    let name = archive.to_string_lossy().to_lowercase();
    let reader: Box<dyn Read> = if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        Box::new(flate2::read::GzDecoder::new(f))
    } else if name.ends_with(".tar") {
        Box::new(f)
    } else {
        return Err(fatal(format!(
            "{}: not a bundle folder, .tar.gz or .tar",
            archive.display()
        )));
    };
    let mut ar = tar::Archive::new(reader);
    let entries = ar.entries().map_err(|e| {
        fatal(format!(
            "{}: not a readable tar archive: {e}",
            archive.display()
        ))
    })?;
    for entry in entries {
        let mut entry = entry
            .map_err(|e| fatal(format!("{}: broken archive entry: {e}", archive.display())))?;
        let p = entry
            .path()
            .map_err(|e| fatal(format!("{}: bad entry name: {e}", archive.display())))?
            .to_string_lossy()
            .to_string();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(fatal(format!(
                "{}: entry '{p}' is a link or device; bundles hold plain files only",
                archive.display()
            )));
        }
        safe_path(&p).map_err(|m| fatal(format!("{}: entry {m}", archive.display())))?;
        entry
            .unpack_in(into)
            .map_err(|e| fatal(format!("{}: cannot unpack '{p}': {e}", archive.display())))?;
    }
    Ok(())
}

pub use crate::digest::sha256_file;

/// What loading one present file found: problems in the order met, whether its content was read.
#[derive(Default)]
struct Ctx {
    read: bool,
    problems: Vec<Problem>,
}

impl Ctx {
    /// A problem in the file (`unreadable`: not readable or not well-formed; else invalid).
    fn problem(&mut self, unreadable: bool, pointer: Option<String>, detail: String) {
        self.problems.push(Problem {
            unreadable,
            in_manifest: false,
            pointer,
            detail,
        });
    }

    /// A quality file listed without its test id (a problem of the manifest's entry).
    fn no_test(&mut self, pointer: Option<String>) {
        self.problems.push(Problem {
            unreadable: false,
            in_manifest: true,
            pointer,
            detail: "a quality file needs its test id".into(),
        });
    }
}

/// Reads and parses every file the manifest lists, and records what it saw of each (whether it is
/// there, its digest, what was wrong reading it) for the `schema.*` checks.
pub fn load(o: &Opened) -> Bundle {
    let m = &o.manifest;
    let mut b = Bundle::new(m.clone());
    let mut seen_paths = BTreeSet::new();
    for (index, e) in m.files.iter().enumerate() {
        let seen = if let Err(msg) = safe_path(&e.path) {
            Seen::Escapes(msg)
        } else if !seen_paths.insert(e.path.clone()) {
            Seen::Duplicate
        } else {
            look(o, e, index, &mut b)
        };
        b.files.push(FileFacts { index, seen });
    }
    b
}

/// What is at a manifest path that is safe and listed once; a present file is read and parsed.
fn look(o: &Opened, e: &FileEntry, index: usize, b: &mut Bundle) -> Seen {
    let path = o.root.join(&e.path);
    if !path.is_file() {
        return Seen::Missing;
    }
    // Stay inside the bundle through links too.
    if let (Ok(real), Ok(root)) = (path.canonicalize(), o.root.canonicalize()) {
        if !real.starts_with(&root) {
            return Seen::Link(e.path.clone());
        }
    }
    let mut cx = Ctx::default();
    let sha256 = if e.kind == FileKind::QualityAnswers {
        // Hashed in the same pass that validates it: the file is read once.
        load_answers(e, index, &path, b, &mut cx)
    } else {
        match sha256_file(&path) {
            Err(err) => {
                cx.problem(true, None, format!("cannot read: {err}"));
                None
            }
            Ok(got) => {
                load_file(e, &path, b, &mut cx);
                Some(got)
            }
        }
    };
    Seen::Present {
        sha256,
        read: cx.read,
        problems: cx.problems,
    }
}

fn test_slot<'a>(b: &'a mut Bundle, test: &str) -> &'a mut QualityTest {
    if let Some(i) = b.quality.iter().position(|t| t.test == test) {
        return &mut b.quality[i];
    }
    b.quality.push(QualityTest {
        test: test.to_string(),
        ..Default::default()
    });
    b.quality.last_mut().expect("just pushed")
}

fn loaded<T>(e: &FileEntry, value: T) -> Loaded<T> {
    Loaded {
        path: e.path.clone(),
        published: e.published,
        reconstructed: e.reconstructed,
        value,
    }
}

fn load_file(e: &FileEntry, path: &Path, b: &mut Bundle, cx: &mut Ctx) {
    match e.kind {
        FileKind::Log => {}
        FileKind::QualityAnswers => {}
        FileKind::Card => b.card = read_json(e, path, cx).map(|v| loaded(e, v)),
        FileKind::SpeedContract => b.speed_contract = read_json(e, path, cx).map(|v| loaded(e, v)),
        FileKind::SpeedResult => b.speed_result = read_json(e, path, cx).map(|v| loaded(e, v)),
        FileKind::FitResult => b.fit = read_json(e, path, cx).map(|v| loaded(e, v)),
        FileKind::QualityContract | FileKind::QualitySummary => {
            let Some(test) = e.test.clone() else {
                cx.no_test(None);
                return;
            };
            if e.kind == FileKind::QualityContract {
                let v = read_json(e, path, cx).map(|v| loaded(e, v));
                test_slot(b, &test).contract = v;
            } else {
                let v = read_json(e, path, cx).map(|v| loaded(e, v));
                test_slot(b, &test).summary = v;
            }
        }
    }
}

fn read_json<T: DeserializeOwned>(e: &FileEntry, path: &Path, cx: &mut Ctx) -> Option<T> {
    cx.read = true;
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(err) => {
            cx.problem(true, None, format!("cannot read: {err}"));
            return None;
        }
    };
    let value: Value = match serde_json::from_slice(&text) {
        Ok(v) => v,
        Err(err) => {
            let at = format!("line {}, column {}", err.line(), err.column());
            cx.problem(
                true,
                Some(at.clone()),
                format!("{at}: not valid JSON: {err}"),
            );
            return None;
        }
    };
    let validator = schemas::validator(e.kind)?;
    let errs = schemas::errors(validator, &value, 20);
    if !errs.is_empty() {
        for (p, msg) in errs {
            let detail = format!("at {p}: {msg} (schema {})", e.kind.name());
            cx.problem(false, Some(p), detail);
        }
        return None;
    }
    match serde_json::from_value(value) {
        Ok(v) => Some(v),
        Err(err) => {
            cx.problem(false, None, err.to_string());
            None
        }
    }
}

/// Streams an answers file: digest, schema and tally in one pass. A file is never held whole, so
/// memory stays flat whatever its size. Returns its sha256 when it could be read.
fn load_answers(
    e: &FileEntry,
    index: usize,
    path: &Path,
    b: &mut Bundle,
    cx: &mut Ctx,
) -> Option<String> {
    cx.read = true;
    let Some(test) = e.test.clone() else {
        cx.no_test(Some(format!("/files/{index}/test")));
        return None;
    };
    test_slot(b, &test).answers_listed = Some((e.path.clone(), e.published));
    let f = match File::open(path) {
        Ok(f) => f,
        Err(err) => {
            cx.problem(true, None, format!("cannot read: {err}"));
            return None;
        }
    };
    let validator = schemas::validator(FileKind::QualityAnswers)?;
    let result = crate::answers::tally(f, validator);
    for p in &result.problems {
        let detail = format!("{}: {}", p.pointer, p.message);
        cx.problem(p.unreadable, Some(p.pointer.clone()), detail);
    }
    if result.problem_count > result.problems.len() {
        let more = result.problem_count - result.problems.len();
        cx.problem(false, None, format!("{more} more bad lines not listed"));
    }
    if result.problem_count == 0 {
        test_slot(b, &test).answers = Some(loaded(e, result.tally));
    }
    Some(result.sha256)
}
