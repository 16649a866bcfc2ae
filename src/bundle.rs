//! Opens a bundle (a folder or a .tar.gz / .tar), checks every file against the manifest and its
//! schema, and parses what passes into the typed [`rigaudit_audit::Bundle`] the checks read.
//!
//! What it sees of each raw file (missing, outside the bundle, its digest, what is wrong reading
//! it, whether it was refused as hostile) is recorded in the bundle as facts, which the `schema.*`
//! checks of `rigaudit_audit` turn into findings; only a bundle whose manifest cannot be read at
//! all is a [`Fatal`] error. Every read is bounded and of regular files only (`input.rs`).

use crate::fatal::{fatal, Fatal};
use crate::input;
use crate::schemas;
use rigaudit_audit::bundle::{FileFacts, Loaded, Problem, Seen};
use rigaudit_audit::records::{FileEntry, FileKind, Manifest};
use rigaudit_audit::schema::safe_path;
use rigaudit_audit::{Bundle, QualityTest};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A bundle opened on disk (a packed bundle is unpacked into a temporary folder kept alive here).
pub struct Opened {
    /// The folder that holds `bundle.json`.
    pub root: PathBuf,
    /// The parsed manifest.
    pub manifest: Manifest,
    /// The members of a packed bundle that were not unpacked because they are no regular file (a
    /// link, a FIFO, a device): each one's path inside the bundle folder and what it is. A file
    /// the manifest lists among them is one finding; the rest of the bundle is checked.
    pub skipped: Vec<(String, &'static str)>,
    _tmp: Option<tempfile::TempDir>,
}

/// Opens a bundle folder or packed bundle and reads its manifest.
pub fn open(path: &Path) -> Result<Opened, Fatal> {
    let meta = std::fs::metadata(path).map_err(|e| {
        fatal(format!(
            "{}: cannot open the bundle: {e}",
            input::shown_path(path)
        ))
    })?;
    let mut skipped = Vec::new();
    let (root, tmp) = if meta.is_dir() {
        (path.to_path_buf(), None)
    } else {
        let tmp = tempfile::tempdir()
            .map_err(|e| fatal(format!("cannot make a temporary folder: {e}")))?;
        let members = unpack(path, tmp.path())?;
        let Some(root) = find_manifest_root(tmp.path()) else {
            let manifest = members
                .iter()
                .find(|(p, _)| Path::new(p).file_name().is_some_and(|n| n == "bundle.json"));
            return Err(fatal(match manifest {
                Some((p, what)) => format!(
                    "{}: the archive's manifest '{}' is {what}, not a regular file; a bundle's files are plain files",
                    input::shown_path(path),
                    input::shown(p)
                ),
                None => format!(
                    "{}: the archive holds no bundle.json",
                    input::shown_path(path)
                ),
            }));
        };
        // Each member not unpacked, by its path inside the bundle folder.
        for (p, what) in members {
            if let Ok(rel) = tmp.path().join(&p).strip_prefix(&root) {
                skipped.push((normal(&rel.to_string_lossy()), what));
            }
        }
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
    schemas::follows(schemas::bundle(), &value).map_err(|list| {
        fatal(format!(
            "{}: the manifest does not follow schemas/bundle.schema.json: {list}",
            mpath.display()
        ))
    })?;
    let manifest: Manifest = serde_json::from_value(value).map_err(|e| {
        fatal(format!(
            "{}: the manifest cannot be read: {e}",
            mpath.display()
        ))
    })?;
    Ok(Opened {
        root,
        manifest,
        skipped,
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

/// The error for a bundle's manifest (a file `bundle.json`) given in place of its folder, naming
/// the folder to give instead; `None` for any other path.
pub fn manifest_given(path: &Path) -> Option<Fatal> {
    if path.file_name().is_none_or(|n| n != "bundle.json") || !path.is_file() {
        return None;
    }
    let folder = path.parent().filter(|d| !d.as_os_str().is_empty());
    Some(fatal(format!(
        "{}: a bundle's manifest; a bundle is the folder that holds it: give {} instead",
        input::shown_path(path),
        input::shown_path(folder.unwrap_or(Path::new(".")))
    )))
}

/// What a tar member that is no regular file or folder is, in words.
fn member_kind(kind: tar::EntryType) -> &'static str {
    use tar::EntryType as T;
    match kind {
        T::Symlink => "a symbolic link",
        T::Link => "a hard link",
        T::Fifo => "a FIFO",
        T::Char | T::Block => "a device",
        _ => "no regular file",
    }
}

/// Unpacks a packed bundle into `into`, within its bounds. A member that is no regular file or
/// folder (a link, a FIFO, a device) is not unpacked: it is returned, with what it is, so that
/// the file the manifest lists there is one finding and the rest is checked.
fn unpack(archive: &Path, into: &Path) -> Result<Vec<(String, &'static str)>, Fatal> {
    let f = input::open_regular(archive, "packed bundle")?;
    let packed = f.metadata().map(|m| m.len()).unwrap_or(0);
    let shown = input::shown_path(archive);
    let name = archive.to_string_lossy().to_lowercase();
    let reader: Box<dyn Read> = if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        Box::new(TarGuard::new(flate2::read::GzDecoder::new(f)))
    } else if name.ends_with(".tar") {
        Box::new(TarGuard::new(f))
    } else {
        return Err(manifest_given(archive)
            .unwrap_or_else(|| fatal(format!("{shown}: not a bundle folder, .tar.gz or .tar"))));
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
    let mut skipped = Vec::new();
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
        safe_path(&p).map_err(|m| fatal(format!("{shown}: entry {}", input::escaped(&m))))?;
        if !(kind.is_file() || kind.is_dir()) {
            skipped.push((p, member_kind(kind)));
            continue;
        }
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
    Ok(skipped)
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

pub use crate::digest::sha256_file;

/// What loading one present file found: problems in the order met, whether its content was read.
#[derive(Default)]
struct Ctx {
    read: bool,
    problems: Vec<Problem>,
}

impl Ctx {
    /// A problem in the file (`unreadable`: not readable or not well-formed; else invalid). The
    /// detail may quote the file: it is escaped and bounded.
    fn problem(&mut self, unreadable: bool, pointer: Option<String>, detail: String) {
        self.problems.push(Problem {
            unreadable,
            refused: false,
            in_manifest: false,
            pointer: pointer.map(|p| input::shown(&p)),
            detail: input::shown_n(&detail, input::MESSAGE_MAX),
        });
    }

    /// The file was refused as hostile (not a regular file, over its bound): unreadable, and the
    /// bundle cannot be read as a whole.
    fn refuse(&mut self, detail: String) {
        self.problem(true, None, detail);
        if let Some(p) = self.problems.last_mut() {
            p.refused = true;
        }
    }

    /// A quality file listed without its test id (a problem of the manifest's entry).
    fn no_test(&mut self, pointer: Option<String>) {
        self.problems.push(Problem {
            unreadable: false,
            refused: false,
            in_manifest: true,
            pointer,
            detail: "a quality file needs its test id".into(),
        });
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

/// The bytes of the files a replay copies or asks again (the card, the contracts, the answers),
/// kept from the one read that loaded them, by their path in the bundle; empty unless asked for.
#[derive(Debug, Default)]
pub struct Kept {
    /// Whether to keep them.
    on: bool,
    bytes: std::collections::BTreeMap<String, Vec<u8>>,
}

impl Kept {
    /// The bytes kept of the file at `path` in the bundle.
    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.bytes.get(path).map(Vec::as_slice)
    }

    /// Keeps `bytes` as the file at `path`, when keeping.
    fn keep(&mut self, path: &str, bytes: &[u8]) {
        if self.on {
            self.bytes.insert(path.to_string(), bytes.to_vec());
        }
    }
}

/// Reads and parses every file the manifest lists, and records what it saw of each (whether it is
/// there, its digest, what was wrong reading it) for the `schema.*` checks. A path listed twice
/// (in any spelling) or a file listed under a second name is read once, under its first.
pub fn load(o: &Opened) -> Bundle {
    load_into(o, &mut Kept::default())
}

/// [`load`], keeping the bytes of the files a replay copies or asks again (the card, the
/// contracts, an answers file within the questions' bound), so that it need not read them again.
pub fn load_keeping(o: &Opened) -> (Bundle, Kept) {
    let mut kept = Kept {
        on: true,
        ..Kept::default()
    };
    (load_into(o, &mut kept), kept)
}

fn load_into(o: &Opened, kept: &mut Kept) -> Bundle {
    let m = &o.manifest;
    let mut b = Bundle::new(m.clone());
    let mut seen_paths = BTreeSet::new();
    let mut seen_files = BTreeSet::new();
    for (index, e) in m.files.iter().enumerate() {
        let skipped = o.skipped.iter().find(|(p, _)| *p == normal(&e.path));
        let seen = match input::inside(&o.root, &e.path) {
            Err(msg) => Seen::Escapes(msg),
            Ok(_) if !seen_paths.insert(normal(&e.path)) => Seen::Duplicate,
            Ok(_) if skipped.is_some() => not_unpacked(e, skipped.map_or("", |(_, w)| w)),
            Ok(path) => match std::fs::metadata(&path) {
                Err(_) => Seen::Missing,
                Ok(_) if input::identity(&path).is_some_and(|id| !seen_files.insert(id)) => {
                    Seen::Alias
                }
                Ok(_) => look(e, &path, index, (&mut b, &mut *kept)),
            },
        };
        b.files.push(FileFacts { index, seen });
    }
    b
}

/// A file the manifest lists that the packed bundle holds as no regular file (a link, a FIFO, a
/// device), so it was not unpacked: refused, one finding, the rest of the bundle still read.
fn not_unpacked(e: &FileEntry, what: &str) -> Seen {
    let mut cx = Ctx {
        read: true,
        ..Ctx::default()
    };
    cx.refuse(format!(
        "the {} is {what} in the packed bundle, not a regular file; refused",
        e.kind.name()
    ));
    Seen::Present {
        sha256: None,
        read: cx.read,
        problems: cx.problems,
    }
}

/// A reading error of the file at `path` without the path it starts with: the finding names the
/// file by its path in the bundle (a packed bundle's temporary folder is gone by then).
fn in_bundle(message: String, path: &Path) -> String {
    let prefix = format!("{}: ", input::shown_path(path));
    match message.strip_prefix(&prefix) {
        Some(rest) => rest.to_string(),
        None => message,
    }
}

/// What is in a file that is inside the bundle and listed once: read (bounded, regular files
/// only), hashed and parsed. A log is only hashed, streamed; an answers file is streamed.
fn look(e: &FileEntry, path: &Path, index: usize, (b, kept): (&mut Bundle, &mut Kept)) -> Seen {
    let mut cx = Ctx::default();
    let sha256 = match e.kind {
        // Hashed in the same pass that validates it: the file is read once.
        FileKind::QualityAnswers => load_answers(e, index, path, (b, kept), &mut cx),
        FileKind::Log => match sha256_file(path) {
            Err(err) => {
                cx.refuse(in_bundle(input::escaped(&err.to_string()), path));
                None
            }
            Ok(got) => Some(got),
        },
        _ => match crate::digest::read_whole(path, limit_of(e.kind), e.kind.name()) {
            Err(err) => {
                cx.refuse(in_bundle(err.0, path));
                None
            }
            Ok((bytes, sha256)) => {
                load_file(e, &bytes, b, &mut cx);
                if matches!(
                    e.kind,
                    FileKind::Card | FileKind::SpeedContract | FileKind::QualityContract
                ) {
                    kept.keep(&e.path, &bytes);
                }
                Some(sha256)
            }
        },
    };
    Seen::Present {
        sha256,
        read: cx.read,
        problems: cx.problems,
    }
}

/// An answers file's tally, from its one read: its digest goes to the run's cache (a rehash of
/// the bundle's files takes it from there), and its bytes are kept when asked ([`read_ahead`]).
fn tally_once(
    f: &std::fs::File,
    validator: &jsonschema::Validator,
    (path, kept): (&str, &mut Kept),
) -> crate::answers::Tallied {
    let mut tallied = None;
    let _ = crate::digest::once_per_file(f, |f| {
        let result = tally_keeping(f, validator, (path, &mut *kept));
        let digest = result.sha256.clone();
        let complete = result.refused.is_none();
        tallied = Some(result);
        match complete {
            true => Ok(digest),
            false => Err(std::io::Error::other("read stopped before its end")),
        }
    });
    // The digest came from the cache: the records are read here, once.
    tallied.unwrap_or_else(|| {
        input::count_read(f);
        tally_keeping(f, validator, (path, kept))
    })
}

/// An answers file's tally, its bytes kept when asked.
fn tally_keeping(
    f: &std::fs::File,
    validator: &jsonschema::Validator,
    (path, kept): (&str, &mut Kept),
) -> crate::answers::Tallied {
    let (head, whole) = read_ahead(f, kept);
    let result = crate::answers::tally(head.as_slice().chain(f), validator);
    if whole {
        kept.keep(path, &head);
    }
    result
}

/// The bytes of an answers file read ahead to be kept: all of it when it is to be kept and within
/// the questions' bound (a replay asks its questions again), else none; `whole` says whether
/// they are all of it (a read that failed midway leaves the rest to the stream, which names it).
fn read_ahead(f: &std::fs::File, kept: &Kept) -> (Vec<u8>, bool) {
    let len = f.metadata().map_or(u64::MAX, |m| m.len());
    let mut head = Vec::new();
    if !kept.on || len > input::QUESTIONS_MAX {
        return (head, false);
    }
    let whole = f.take(len + 1).read_to_end(&mut head).is_ok() && head.len() as u64 == len;
    (head, whole)
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

fn load_file(e: &FileEntry, bytes: &[u8], b: &mut Bundle, cx: &mut Ctx) {
    match e.kind {
        FileKind::Log => {}
        FileKind::QualityAnswers => {}
        FileKind::Card => b.card = read_json(e, bytes, cx).map(|v| loaded(e, v)),
        FileKind::SpeedContract => b.speed_contract = read_json(e, bytes, cx).map(|v| loaded(e, v)),
        FileKind::SpeedResult => b.speed_result = read_json(e, bytes, cx).map(|v| loaded(e, v)),
        FileKind::FitResult => b.fit = read_json(e, bytes, cx).map(|v| loaded(e, v)),
        FileKind::QualityContract | FileKind::QualitySummary => {
            let Some(test) = e.test.clone() else {
                cx.no_test(None);
                return;
            };
            if e.kind == FileKind::QualityContract {
                let v = read_json(e, bytes, cx).map(|v| loaded(e, v));
                test_slot(b, &test).contract = v;
            } else {
                let v = read_json(e, bytes, cx).map(|v| loaded(e, v));
                test_slot(b, &test).summary = v;
            }
        }
    }
}

fn read_json<T: DeserializeOwned>(e: &FileEntry, text: &[u8], cx: &mut Ctx) -> Option<T> {
    cx.read = true;
    let value: Value = match serde_json::from_slice(text) {
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
    (b, kept): (&mut Bundle, &mut Kept),
    cx: &mut Ctx,
) -> Option<String> {
    cx.read = true;
    let Some(test) = e.test.clone() else {
        cx.no_test(Some(format!("/files/{index}/test")));
        return None;
    };
    test_slot(b, &test).answers_listed = Some((e.path.clone(), e.published));
    let f = match input::open_regular(path, e.kind.name()) {
        Ok(f) => f,
        Err(err) => {
            cx.refuse(in_bundle(err.0, path));
            return None;
        }
    };
    let validator = schemas::validator(FileKind::QualityAnswers)?;
    let result = tally_once(&f, validator, (&e.path, kept));
    for p in &result.problems {
        let detail = format!("{}: {}", p.pointer, p.message);
        cx.problem(p.unreadable, Some(p.pointer.clone()), detail);
    }
    let more = result.problem_count.saturating_sub(result.lines_listed());
    if more > 0 {
        cx.problem(false, None, format!("{more} more bad lines not listed"));
    }
    if let Some(why) = &result.refused {
        // The line over its bound is among the problems unless more were listed before it.
        match cx.problems.iter_mut().rev().find(|p| p.unreadable) {
            Some(p) => p.refused = true,
            None => cx.refuse(why.clone()),
        }
    }
    if result.problem_count == 0 {
        test_slot(b, &test).answers = Some(loaded(e, result.tally));
    }
    Some(result.sha256)
}
