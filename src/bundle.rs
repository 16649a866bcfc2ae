//! Opens a bundle (a folder or a .tar.gz / .tar), checks every file against the manifest and its
//! schema, and parses what passes into the typed [`rigaudit_audit::Bundle`] the checks read.
//!
//! Everything wrong with a raw file becomes a `schema.*` finding naming the file and the place;
//! only a bundle whose manifest cannot be read at all is a [`Fatal`] error.

use crate::fatal::{fatal, Fatal};
use crate::schemas;
use rigaudit_audit::bundle::Loaded;
use rigaudit_audit::records::{FileEntry, FileKind, Manifest};
use rigaudit_audit::schema::{compare_digest, safe_path, DigestMatch};
use rigaudit_audit::{Bundle, Finding, QualityTest, Severity};
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};
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

/// What loading found: the typed bundle, findings about its files, and the schema checks that ran.
pub struct ReadBundle {
    /// Typed records of every file that passed.
    pub bundle: Bundle,
    /// `schema.*` findings.
    pub findings: Vec<Finding>,
    /// `schema.*` checks that ran.
    pub checks_run: BTreeSet<&'static str>,
    /// Every raw file whose sha256 matched the manifest's in full: path and digest (the subject of
    /// an attestation).
    pub verified: Vec<rigaudit_audit::report::Artifact>,
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

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

struct Ctx {
    findings: Vec<Finding>,
    ran: BTreeSet<&'static str>,
    verified: Vec<rigaudit_audit::report::Artifact>,
}

impl Ctx {
    fn push(
        &mut self,
        id: &'static str,
        sev: Severity,
        file: &str,
        pointer: Option<String>,
        msg: String,
    ) {
        let mut f = Finding::new(id, sev, msg).file(file);
        if let Some(p) = pointer {
            f = f.pointer(p);
        }
        self.findings.push(f);
    }
}

/// Reads, checks and parses every file the manifest lists.
pub fn load(o: &Opened) -> ReadBundle {
    let m = &o.manifest;
    let mut cx = Ctx {
        findings: Vec::new(),
        ran: BTreeSet::new(),
        verified: Vec::new(),
    };
    let mut b = Bundle {
        manifest: m.clone(),
        card: None,
        speed_contract: None,
        speed_result: None,
        quality: Vec::new(),
        fit: None,
    };
    let mut seen_paths = BTreeSet::new();
    for (i, e) in m.files.iter().enumerate() {
        cx.ran.insert("schema.path-escapes");
        if let Err(msg) = safe_path(&e.path) {
            cx.push(
                "schema.path-escapes",
                Severity::Error,
                "bundle.json",
                Some(format!("/files/{i}/path")),
                msg,
            );
            continue;
        }
        if !seen_paths.insert(e.path.clone()) {
            cx.push(
                "schema.invalid",
                Severity::Error,
                "bundle.json",
                Some(format!("/files/{i}/path")),
                format!("'{}' is listed twice", e.path),
            );
            continue;
        }
        let path = o.root.join(&e.path);
        cx.ran.insert("schema.file-missing");
        if !path.is_file() {
            let (sev, tail) = if e.published {
                (Severity::Error, "the page published it")
            } else {
                (
                    Severity::Info,
                    "the page did not publish it, so claims resting on it cannot be checked",
                )
            };
            cx.push(
                "schema.file-missing",
                sev,
                &e.path,
                None,
                format!(
                    "{} is listed as {} but is not in the bundle; {tail}",
                    e.path,
                    e.kind.name()
                ),
            );
            continue;
        }
        // Stay inside the bundle through links too.
        if let (Ok(real), Ok(root)) = (path.canonicalize(), o.root.canonicalize()) {
            if !real.starts_with(&root) {
                cx.push(
                    "schema.path-escapes",
                    Severity::Error,
                    "bundle.json",
                    Some(format!("/files/{i}/path")),
                    format!("'{}' resolves outside the bundle (a link)", e.path),
                );
                continue;
            }
        }
        cx.ran.insert("schema.digest-mismatch");
        cx.ran.insert("schema.no-digest");
        if e.kind == FileKind::QualityAnswers {
            // Hashed in the same pass that validates it: the file is read once.
            load_answers(e, i, &path, &mut b, &mut cx);
            continue;
        }
        match sha256_file(&path) {
            Err(err) => {
                cx.ran.insert("schema.unreadable");
                cx.push(
                    "schema.unreadable",
                    Severity::Error,
                    &e.path,
                    None,
                    format!("{}: cannot read: {err}", e.path),
                );
                continue;
            }
            Ok(got) => check_digest(e, i, &got, &mut cx),
        }
        load_file(e, &path, &mut b, &mut cx);
    }
    ReadBundle {
        bundle: b,
        findings: cx.findings,
        checks_run: cx.ran,
        verified: cx.verified,
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
                cx.push(
                    "schema.invalid",
                    Severity::Error,
                    "bundle.json",
                    None,
                    format!("{}: a quality file needs its test id", e.path),
                );
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
    cx.ran.insert("schema.unreadable");
    cx.ran.insert("schema.invalid");
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(err) => {
            cx.push(
                "schema.unreadable",
                Severity::Error,
                &e.path,
                None,
                format!("{}: cannot read: {err}", e.path),
            );
            return None;
        }
    };
    let value: Value = match serde_json::from_slice(&text) {
        Ok(v) => v,
        Err(err) => {
            cx.push(
                "schema.unreadable",
                Severity::Error,
                &e.path,
                Some(format!("line {}, column {}", err.line(), err.column())),
                format!(
                    "{}: line {}, column {}: not valid JSON: {err}",
                    e.path,
                    err.line(),
                    err.column()
                ),
            );
            return None;
        }
    };
    let validator = schemas::validator(e.kind)?;
    let errs = schemas::errors(validator, &value, 20);
    if !errs.is_empty() {
        for (p, msg) in &errs {
            cx.push(
                "schema.invalid",
                Severity::Error,
                &e.path,
                Some(p.clone()),
                format!("{}: at {p}: {msg} (schema {})", e.path, e.kind.name()),
            );
        }
        return None;
    }
    match serde_json::from_value(value) {
        Ok(v) => Some(v),
        Err(err) => {
            cx.push(
                "schema.invalid",
                Severity::Error,
                &e.path,
                None,
                format!("{}: {err}", e.path),
            );
            None
        }
    }
}

fn check_digest(e: &FileEntry, index: usize, got: &str, cx: &mut Ctx) {
    match &e.sha256 {
        None => cx.push(
            "schema.no-digest",
            Severity::Warning,
            &e.path,
            None,
            format!("{} has no sha256 in the manifest", e.path),
        ),
        Some(want) => {
            let r = compare_digest(want, got);
            if r == DigestMatch::Full {
                cx.verified.push(rigaudit_audit::report::Artifact {
                    path: e.path.clone(),
                    sha256: got.to_string(),
                });
            } else {
                cx.push(
                    "schema.digest-mismatch",
                    Severity::Error,
                    "bundle.json",
                    Some(format!("/files/{index}/sha256")),
                    format!(
                        "{}: sha256 is {got}, the manifest records {want} ({})",
                        e.path,
                        r.describe()
                    ),
                );
            }
        }
    }
}

/// Streams an answers file: digest, schema and tally in one pass. A file is never held whole, so
/// memory stays flat whatever its size.
fn load_answers(e: &FileEntry, index: usize, path: &Path, b: &mut Bundle, cx: &mut Ctx) {
    cx.ran.insert("schema.unreadable");
    cx.ran.insert("schema.invalid");
    let Some(test) = e.test.clone() else {
        cx.push(
            "schema.invalid",
            Severity::Error,
            "bundle.json",
            Some(format!("/files/{index}/test")),
            format!("{}: a quality file needs its test id", e.path),
        );
        return;
    };
    test_slot(b, &test).answers_listed = Some((e.path.clone(), e.published));
    let f = match File::open(path) {
        Ok(f) => f,
        Err(err) => {
            cx.push(
                "schema.unreadable",
                Severity::Error,
                &e.path,
                None,
                format!("{}: cannot read: {err}", e.path),
            );
            return;
        }
    };
    let Some(validator) = schemas::validator(FileKind::QualityAnswers) else {
        return;
    };
    let result = crate::answers::tally(f, validator);
    check_digest(e, index, &result.sha256, cx);
    for p in &result.problems {
        let id = if p.unreadable {
            "schema.unreadable"
        } else {
            "schema.invalid"
        };
        cx.push(
            id,
            Severity::Error,
            &e.path,
            Some(p.pointer.clone()),
            format!("{}: {}: {}", e.path, p.pointer, p.message),
        );
    }
    if result.problem_count > result.problems.len() {
        cx.push(
            "schema.invalid",
            Severity::Error,
            &e.path,
            None,
            format!(
                "{}: {} more bad lines not listed",
                e.path,
                result.problem_count - result.problems.len()
            ),
        );
    }
    if result.problem_count == 0 {
        test_slot(b, &test).answers = Some(loaded(e, result.tally));
    }
}
