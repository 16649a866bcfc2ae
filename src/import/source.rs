//! The files one import reads: each read once, whole, with its digest; a folder expanded to its
//! result files; Git LFS pointers and unreadable files named.

use super::*;

/// One source file, read (bounded) and hashed.
#[derive(Debug, Clone)]
pub struct Source {
    /// Its file name (the name it keeps in an imported bundle).
    pub name: String,
    /// Where it was read from, as shown in messages.
    pub shown: String,
    /// Its content.
    pub bytes: Vec<u8>,
    /// Its sha256, hex.
    pub sha256: String,
    /// What the importer took it as (`summary`, `records`, ...); set by the format's reader.
    pub role: String,
}

impl Source {
    /// Its content as text; an error naming the file when it is not UTF-8.
    pub fn text(&self) -> Result<&str, Fatal> {
        std::str::from_utf8(&self.bytes).map_err(|e| {
            self.unreadable(
                None,
                format!("not UTF-8 text: {e}; expected the tool's text output"),
            )
        })
    }

    /// The error of a source that cannot be read whole at `place` (`line 3`): it names the file,
    /// and marks it, so that a run of several files is checked without it ([`import_read`]).
    pub fn unreadable(&self, place: Option<String>, why: impl Into<String>) -> Fatal {
        crate::fatal::unreadable(
            &self.shown,
            Unreadable {
                file: self.name.clone(),
                place,
                why: why.into(),
            },
        )
    }

    /// [`Source::unreadable`] for a JSON parse error `e` at its line and column.
    pub(super) fn not_json(&self, line: usize, e: &serde_json::Error) -> Fatal {
        self.unreadable(
            Some(format!("line {line}, column {}", e.column())),
            format!("not valid JSON: {e}"),
        )
    }
}

/// Another tool's files as read: those read whole, and those that could not be (one finding
/// each, `import.unreadable`, while the rest is checked).
#[derive(Debug, Clone, Default)]
pub struct Read {
    /// The files read whole.
    pub sources: Vec<Source>,
    /// The files that could not be read whole, each with where and why.
    pub unread: Vec<Unreadable>,
    /// Whether a file that cannot be read stops the command (exit 2): one file named by itself,
    /// which is all that was asked for.
    pub strict: bool,
}

impl Read {
    /// Sources already read (a tree's run): strict when it is one file.
    pub fn of(sources: Vec<Source>) -> Read {
        Read {
            strict: sources.len() == 1,
            sources,
            unread: Vec::new(),
        }
    }

    /// The format of the files: by the content of those read ([`detect`]), else by the name of
    /// one that could not be read ([`named`]).
    pub fn detect(&self) -> Option<Format> {
        detect(&self.sources).or_else(|| self.unread.iter().find_map(|u| named(&u.file)))
    }
}

/// Reads the given files (a folder stands for the files directly inside it, every one that is not
/// a folder). One file named by itself that cannot be read is an error (exit 2); of a folder or of
/// several files, each that cannot be read whole (not a regular file, over its bound, a Git LFS
/// pointer) is kept in [`Read::unread`], and the others are read.
pub fn read_sources(files: &[PathBuf]) -> Result<Read, Fatal> {
    let strict = matches!(files, [one] if !one.is_dir());
    let mut out = Read {
        strict,
        ..Read::default()
    };
    for p in expand(files)? {
        let (name, shown) = (name_of(&p), input::shown_path(&p));
        if out
            .sources
            .iter()
            .map(|s| &s.name)
            .chain(out.unread.iter().map(|u| &u.file))
            .any(|n| *n == name)
        {
            return Err(fatal(format!(
                "{shown}: two sources are named '{name}'; give each file once"
            )));
        }
        match read_source(&p) {
            Ok(src) => out.sources.push(src),
            Err(e) if !strict => {
                let why = input::without_path(&e.0, &p);
                let why = why.strip_suffix("; refused").unwrap_or(why);
                out.unread.push(Unreadable {
                    file: name,
                    place: None,
                    why: why.to_string(),
                });
            }
            Err(e) => return Err(e),
        }
    }
    if out.sources.is_empty() && out.unread.is_empty() {
        return Err(fatal("no file to import was given"));
    }
    Ok(out)
}

/// A path's file name as an import names the source (made safe to show when it is not UTF-8).
pub(super) fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| input::shown(&n.to_string_lossy()))
        .unwrap_or_else(|| input::shown_path(p))
}

/// Reads one file (bounded, a regular file only) and hashes it; `Err` naming it when it cannot
/// be read, its name is not a plain UTF-8 file name, or it is a Git LFS pointer.
pub fn read_source(p: &Path) -> Result<Source, Fatal> {
    let bytes = input::read_bounded(p, input::RECORD_MAX, "imported file")?;
    let name = p.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        fatal(format!(
            "{}: the file name is not UTF-8",
            input::shown_path(p)
        ))
    })?;
    let name = input::safe_name(name, "imported file name")?.to_string();
    if let Some(pointer) = lfs_pointer(&bytes) {
        return Err(fatal(format!(
            "{}: a Git LFS pointer ({pointer}), not the file it stands for: fetch the file (git lfs pull) and give it",
            input::shown_path(p)
        )));
    }
    let sha256 = hex(&sha2::Sha256::digest(&bytes));
    Ok(Source {
        name,
        shown: input::shown_path(p),
        bytes,
        sha256,
        role: String::new(),
    })
}

/// The object a Git LFS pointer file names (`oid sha256:..., size N`), when the bytes are one:
/// what a repository holds in place of a large file not fetched.
pub(super) fn lfs_pointer(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes.get(..bytes.len().min(1024))?).ok()?;
    if !text.starts_with("version https://git-lfs.github.com/spec/") {
        return None;
    }
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| input::shown(v.trim()))
    };
    Some(format!(
        "oid {}, size {}",
        field("oid ").unwrap_or_else(|| "not stated".into()),
        field("size ").unwrap_or_else(|| "not stated".into())
    ))
}

pub(super) fn expand(files: &[PathBuf]) -> Result<Vec<PathBuf>, Fatal> {
    let mut out = Vec::new();
    for f in files {
        if f.is_dir() {
            let rd = std::fs::read_dir(f)
                .map_err(|e| fatal(format!("{}: cannot list: {e}", input::shown_path(f))))?;
            let mut inner: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                // Every entry but a folder: a FIFO, a socket or a link to nothing is read, refused and
                // named (`import.unreadable`), never skipped in silence.
                .filter(|p| !p.is_dir())
                .collect();
            inner.sort();
            if inner.len() > SOURCES_MAX {
                return Err(fatal(format!(
                    "{}: the folder holds {} files, more than the {SOURCES_MAX} a run of a tool writes; give the files themselves",
                    input::shown_path(f),
                    inner.len()
                )));
            }
            out.extend(inner);
        } else {
            out.push(f.clone());
        }
    }
    Ok(out)
}

/// The sources as shown, comma-separated (for messages).
pub fn names(sources: &[Source]) -> String {
    sources
        .iter()
        .map(|s| s.shown.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `needle` occurs in `hay` (the formats are told apart by a key only they write).
pub fn holds(hay: &[u8], needle: &str) -> bool {
    memchr::memmem::find(hay, needle.as_bytes()).is_some()
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
