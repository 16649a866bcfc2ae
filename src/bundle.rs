//! Opens a bundle (a folder or a .tar.gz / .tar), checks every file against the manifest and its
//! schema, and parses what passes into the typed [`rigaudit_audit::Bundle`] the checks read.
//!
//! Everything wrong with a raw file becomes a `schema.*` finding naming the file and the place;
//! only a bundle whose manifest cannot be read at all is a [`Fatal`] error.

use crate::fatal::{fatal, Fatal};
use crate::input;
use crate::schemas;
use rigaudit_audit::bundle::Loaded;
use rigaudit_audit::records::{FileEntry, FileKind, Manifest};
use rigaudit_audit::schema::{compare_digest, safe_path, DigestMatch};
use rigaudit_audit::{Bundle, Finding, QualityTest, Severity};
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
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
    /// Inputs refused as hostile: the bundle could not be read as a whole (exit 2).
    pub refused: Vec<String>,
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
    let text = input::read_text(&mpath, input::MANIFEST_MAX, "manifest")?;
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
    let f = input::open_regular(archive, "packed bundle")?;
    let packed = f.metadata().map(|m| m.len()).unwrap_or(0);
    let shown = input::shown_path(archive);
    let name = archive.to_string_lossy().to_lowercase();
    let reader: Box<dyn Read> = if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        Box::new(TarGuard::new(flate2::read::GzDecoder::new(f)))
    } else if name.ends_with(".tar") {
        Box::new(TarGuard::new(f))
    } else {
        return Err(fatal(format!(
            "{shown}: not a bundle folder, .tar.gz or .tar"
        )));
    };
    // What the archive may unpack to: a total bound, and a ratio bound to the packed size.
    let allowed = input::UNPACK_MAX_BYTES
        .min(input::RATIO_GRACE.max(packed.saturating_mul(input::UNPACK_MAX_RATIO)));
    let mut ar = tar::Archive::new(reader);
    let entries = ar
        .entries()
        .map_err(|e| fatal(format!("{shown}: not a readable tar archive: {e}")))?;
    let mut count: u64 = 0;
    let mut total: u64 = 0;
    for entry in entries {
        let mut entry = entry.map_err(|e| fatal(format!("{shown}: broken archive entry: {e}")))?;
        count += 1;
        if count > input::UNPACK_MAX_ENTRIES {
            return Err(fatal(format!(
                "{shown}: more than {} entries, the bound for a packed bundle; refused (see docs/security.md)",
                input::UNPACK_MAX_ENTRIES
            )));
        }
        let p = entry
            .path()
            .map_err(|e| fatal(format!("{shown}: bad entry name: {e}")))?
            .to_string_lossy()
            .to_string();
        member_name_ok(&p).map_err(|m| fatal(format!("{shown}: entry {m}")))?;
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(fatal(format!(
                "{shown}: entry '{}' is a link, device or FIFO; bundles hold plain files only",
                input::shown(&p)
            )));
        }
        safe_path(&p).map_err(|m| fatal(format!("{shown}: entry {}", input::escaped(&m))))?;
        total = total.saturating_add(entry.size());
        if total > allowed {
            return Err(fatal(format!(
                "{shown}: unpacks to more than {} ({} packed; the bounds are {} in all and {} times the packed size); refused as an archive bomb (see docs/security.md)",
                input::size(allowed),
                input::size(packed),
                input::size(input::UNPACK_MAX_BYTES),
                input::UNPACK_MAX_RATIO
            )));
        }
        entry.unpack_in(into).map_err(|e| {
            fatal(format!(
                "{shown}: cannot unpack '{}': {e}",
                input::shown(&p)
            ))
        })?;
    }
    Ok(())
}

/// Passes a tar stream through and follows its headers on the way: a metadata entry (a GNU long
/// name or link, a PAX header) larger than [`input::TAR_META_MAX`] is refused before the tar
/// reader holds it in memory (it reads those entries whole).
pub struct TarGuard<R> {
    inner: R,
    hdr: Vec<u8>,
    skip: u64,
}

impl<R> TarGuard<R> {
    /// Guards `inner`, which starts at a tar header.
    pub fn new(inner: R) -> Self {
        TarGuard {
            inner,
            hdr: Vec::with_capacity(512),
            skip: 0,
        }
    }
}

fn tar_size(h: &[u8]) -> u64 {
    let f = &h[124..136];
    if f[0] & 0x80 != 0 {
        f[4..].iter().fold(0u64, |a, b| (a << 8) | u64::from(*b))
    } else {
        let t: String = f
            .iter()
            .map(|b| *b as char)
            .filter(|c| ('0'..='7').contains(c))
            .collect();
        u64::from_str_radix(&t, 8).unwrap_or(0)
    }
}

impl<R: Read> Read for TarGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut i = 0;
        while i < n {
            if self.skip > 0 {
                let m = (self.skip.min((n - i) as u64)) as usize;
                self.skip -= m as u64;
                i += m;
                continue;
            }
            let m = (512 - self.hdr.len()).min(n - i);
            self.hdr.extend_from_slice(&buf[i..i + m]);
            i += m;
            if self.hdr.len() == 512 {
                if self.hdr.iter().any(|b| *b != 0) {
                    let size = tar_size(&self.hdr);
                    if b"LKxg".contains(&self.hdr[156]) && size > input::TAR_META_MAX {
                        return Err(std::io::Error::other(format!(
                            "a tar metadata entry (long name or PAX header) of {size} bytes, more than the bound of {}; refused",
                            input::size(input::TAR_META_MAX)
                        )));
                    }
                    self.skip = size.div_ceil(512) * 512;
                }
                self.hdr.clear();
            }
        }
        Ok(n)
    }
}

/// An archive member's name: bounded in length and depth (deep names cost the unpacker time
/// that grows fast with depth), and no control characters.
pub fn member_name_ok(p: &str) -> Result<(), String> {
    if p.len() > input::MEMBER_MAX_NAME {
        return Err(format!(
            "'{}' has a name longer than {} bytes, the bound for a member name",
            input::shown(p),
            input::MEMBER_MAX_NAME
        ));
    }
    let depth = p
        .split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
        .count();
    if depth > input::MEMBER_MAX_DEPTH {
        return Err(format!(
            "'{}' is {depth} folders deep, more than the bound of {}",
            input::shown(p),
            input::MEMBER_MAX_DEPTH
        ));
    }
    if p.chars().any(char::is_control) {
        return Err(format!(
            "'{}' has a control character in its name",
            input::shown(p)
        ));
    }
    Ok(())
}

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = input::open_regular(path, "file")
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.0))?;
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
    /// Findings dropped per check once [`input::FINDINGS_PER_CHECK`] were kept.
    dropped: std::collections::BTreeMap<&'static str, usize>,
    /// Inputs refused as hostile (not a regular file, over a bound, leaving the bundle).
    refused: Vec<String>,
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
        if self.findings.iter().filter(|f| f.check == id).count() >= input::FINDINGS_PER_CHECK {
            *self.dropped.entry(id).or_default() += 1;
            return;
        }
        let mut f = Finding::new(id, sev, input::shown_n(&msg, input::MESSAGE_MAX))
            .file(input::shown(file));
        if let Some(p) = pointer {
            f = f.pointer(input::shown(&p));
        }
        self.findings.push(f);
    }

    fn refuse(&mut self, file: &str, msg: String) {
        self.ran.insert("schema.unreadable");
        self.refused.push(msg.clone());
        self.push("schema.unreadable", Severity::Error, file, None, msg);
    }
}

/// The bound on one raw file of a kind read whole.
fn limit_of(kind: FileKind) -> u64 {
    match kind {
        FileKind::Card => input::CARD_MAX,
        FileKind::SpeedContract | FileKind::QualityContract => input::CONTRACT_MAX,
        _ => input::RECORD_MAX,
    }
}

/// A manifest path in one spelling (`./a`, `././a` and `a` are one file).
fn normal(p: &str) -> String {
    p.split(['/', '\\'])
        .filter(|c| !c.is_empty() && *c != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads, checks and parses every file the manifest lists.
pub fn load(o: &Opened) -> ReadBundle {
    let m = &o.manifest;
    let mut cx = Ctx {
        findings: Vec::new(),
        ran: BTreeSet::new(),
        verified: Vec::new(),
        dropped: Default::default(),
        refused: Vec::new(),
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
    let mut seen_files = BTreeSet::new();
    for (i, e) in m.files.iter().enumerate() {
        cx.ran.insert("schema.path-escapes");
        let path = match input::inside(&o.root, &e.path) {
            Ok(p) => p,
            Err(msg) => {
                cx.push(
                    "schema.path-escapes",
                    Severity::Error,
                    "bundle.json",
                    Some(format!("/files/{i}/path")),
                    msg,
                );
                continue;
            }
        };
        if !seen_paths.insert(normal(&e.path)) {
            cx.push(
                "schema.invalid",
                Severity::Error,
                "bundle.json",
                Some(format!("/files/{i}/path")),
                format!("'{}' is listed twice", input::shown(&e.path)),
            );
            continue;
        }
        cx.ran.insert("schema.file-missing");
        let meta = std::fs::metadata(&path);
        if meta.is_err() {
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
                    input::shown(&e.path),
                    e.kind.name()
                ),
            );
            continue;
        }
        // The same real file under another name (a hard link, a link inside the bundle) is read
        // once, under its first name.
        if let Some(id) = input::identity(&path) {
            if !seen_files.insert(id) {
                cx.push(
                    "schema.invalid",
                    Severity::Error,
                    "bundle.json",
                    Some(format!("/files/{i}/path")),
                    format!(
                        "'{}' is a file already listed under another name",
                        input::shown(&e.path)
                    ),
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
        if e.kind == FileKind::Log {
            match sha256_file(&path) {
                Err(err) => cx.refuse(&e.path, input::escaped(&err.to_string())),
                Ok(got) => check_digest(e, i, &got, &mut cx),
            }
            continue;
        }
        let bytes = match input::read_bounded(&path, limit_of(e.kind), e.kind.name()) {
            Ok(b) => b,
            Err(err) => {
                cx.refuse(&e.path, err.0);
                continue;
            }
        };
        check_digest(e, i, &hex(&Sha256::digest(&bytes)), &mut cx);
        load_file(e, &bytes, &mut b, &mut cx);
    }
    for (id, n) in std::mem::take(&mut cx.dropped) {
        cx.findings.push(Finding::new(
            id,
            Severity::Error,
            format!(
                "{n} more {id} findings not listed (at most {} are kept)",
                input::FINDINGS_PER_CHECK
            ),
        ));
    }
    ReadBundle {
        bundle: b,
        findings: cx.findings,
        checks_run: cx.ran,
        verified: cx.verified,
        refused: cx.refused,
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

fn load_file(e: &FileEntry, path: &[u8], b: &mut Bundle, cx: &mut Ctx) {
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

fn read_json<T: DeserializeOwned>(e: &FileEntry, text: &[u8], cx: &mut Ctx) -> Option<T> {
    cx.ran.insert("schema.unreadable");
    cx.ran.insert("schema.invalid");
    let value: Value = match serde_json::from_slice(text) {
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
    let f = match input::open_regular(path, e.kind.name()) {
        Ok(f) => f,
        Err(err) => {
            cx.refuse(&e.path, err.0);
            return;
        }
    };
    let Some(validator) = schemas::validator(FileKind::QualityAnswers) else {
        return;
    };
    let result = crate::answers::tally(f, validator);
    if let Some(why) = &result.refused {
        cx.refused.push(format!("{}: {why}", input::shown(&e.path)));
    }
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
