//! Everything rigaudit reads comes from someone else; this module is the one place that reads it.
//!
//! - [`read_bounded`] / [`read_text`] / [`open_regular`]: an input file is opened without blocking
//!   (`O_NONBLOCK`, so a FIFO cannot hang the open), the opened descriptor is checked to be a
//!   regular file (a FIFO, a device such as `/dev/zero`, a socket or a folder is refused), and it
//!   is read with a bound: one byte past the bound is an error naming the input and the bound.
//! - [`safe_name`]: the one function through which a name taken from input (a quality test id)
//!   becomes part of a file name.
//! - [`inside`]: the one function that turns a bundle-relative path into a path on disk, refusing
//!   anything that leaves the bundle (`..`, an absolute path, or a link pointing out).
//! - [`shown`]: text quoted from input, made safe for a terminal (control characters escaped) and
//!   cut to a bounded length with the full size said.
//!
//! Every limit is a named constant here; `docs/security.md` lists them with the trust model.

use crate::fatal::{fatal, Fatal};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

const MIB: u64 = 1 << 20;

/// A bundle's manifest (`bundle.json`).
pub const MANIFEST_MAX: u64 = 8 * MIB;
/// A card.
pub const CARD_MAX: u64 = 4 * MIB;
/// A speed or quality contract.
pub const CONTRACT_MAX: u64 = 4 * MIB;
/// Any other JSON raw file read whole (speed result, quality summary, fit result).
pub const RECORD_MAX: u64 = 256 * MIB;
/// A questions file for `measure --quality` (JSON Lines, read whole).
pub const QUESTIONS_MAX: u64 = 256 * MIB;
/// One line of an answers file (answers files are streamed, so only a line is bounded).
pub const ANSWERS_LINE_MAX: usize = MIB as usize;
/// A checkpoint's revision file.
pub const REVISION_MAX: u64 = 4096;
/// A `--compare` manifest file (sha256sum lines or JSON).
pub const COMPARE_MAX: u64 = 64 * MIB;
/// A `--start-log` file or a `--tokenizer` file given to `measure`.
pub const SIDE_FILE_MAX: u64 = 64 * MIB;
/// A TEST06 accuracy log: 100 replies of at most a few thousand tokens, some MiB as hex.
pub const TEST06_LOG_MAX: u64 = 64 * MIB;
/// Entries of a packed bundle.
pub const UNPACK_MAX_ENTRIES: u64 = 10_000;
/// Bytes a packed bundle may unpack to, in all.
pub const UNPACK_MAX_BYTES: u64 = 8 << 30;
/// Unpacked bytes per packed byte, once more than [`RATIO_GRACE`] bytes are out.
pub const UNPACK_MAX_RATIO: u64 = 200;
/// Bytes any archive may inflate to before the ratio bound applies.
pub const RATIO_GRACE: u64 = 64 * MIB;
/// A tar metadata entry (GNU long name or link, PAX header), which the tar reader holds whole.
pub const TAR_META_MAX: u64 = 64 * 1024;
/// Path components of an archive member's name.
pub const MEMBER_MAX_DEPTH: usize = 32;
/// Bytes of an archive member's name.
pub const MEMBER_MAX_NAME: usize = 1024;
/// Bytes a release package (rehash) may inflate to while its members are hashed, in all.
pub const PACKAGE_MAX_INFLATED: u64 = 64 << 30;
/// Inflated bytes per package byte (rehash), once more than [`RATIO_GRACE`] bytes are out.
pub const PACKAGE_MAX_RATIO: u64 = 1000;
/// A server's `/v1/models` reply, an error body, a `/metrics` page.
pub const HTTP_BODY_MAX: u64 = 8 * MIB;
/// One SSE line of a streamed reply.
pub const SSE_LINE_MAX: usize = MIB as usize;
/// All the bytes of one streamed reply.
pub const STREAM_MAX: u64 = 64 * MIB;
/// Levels a YAML document may nest (flow and block collections together), checked by a linear
/// scan before the YAML parser sees it (`import::yaml_depth`).
pub const YAML_DEPTH_MAX: usize = 64;
/// Characters of a value quoted from input in a message.
pub const QUOTE_MAX: usize = 200;
/// Characters of one message (a finding, an error) printed or reported.
pub const MESSAGE_MAX: usize = 4000;

/// A size for people: `8 MiB`, `4096 bytes`.
pub fn size(n: u64) -> String {
    if n >= 1 << 30 && n.is_multiple_of(1 << 30) {
        format!("{} GiB", n >> 30)
    } else if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

/// Opens an input file for reading: refuses what is not a regular file (checked on the opened
/// descriptor, so nothing can be swapped in between), without ever blocking on the open.
pub fn open_regular(path: &Path, what: &str) -> Result<File, Fatal> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| fatal(format!("{}: cannot read the {what}: {e}", shown_path(path))))?;
    let md = f
        .metadata()
        .map_err(|e| fatal(format!("{}: cannot read the {what}: {e}", shown_path(path))))?;
    if !md.is_file() {
        return Err(fatal(format!(
            "{}: the {what} is not a regular file ({}); refused",
            shown_path(path),
            file_type_name(&md)
        )));
    }
    count_open(path, &md);
    Ok(f)
}

/// Every file this run read, by identity (device, inode): a path it was opened by, and how many
/// times its content was read, logged under `--verbose` only ([`log_reads`]), which names any read
/// more than once: a file is read once a run, by whichever stage comes first; the others take its
/// digest from [`crate::digest`]'s cache or its records from what was parsed.
static READ: std::sync::Mutex<BTreeMap<(u64, u64), (PathBuf, u32)>> =
    std::sync::Mutex::new(BTreeMap::new());

fn read_log() -> std::sync::MutexGuard<'static, BTreeMap<(u64, u64), (PathBuf, u32)>> {
    READ.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether this run logs the files it reads (`--verbose`): a tree of many thousand files keeps no
/// entry per file otherwise.
static LOGGING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Logs the files this run reads from now on, for [`read_files`].
pub fn log_reads() {
    LOGGING.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn logging() -> bool {
    LOGGING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Notes the path a file was opened by, for [`count_read`] to name it.
fn count_open(path: &Path, md: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    if !logging() {
        return;
    }
    read_log()
        .entry((md.dev(), md.ino()))
        .or_insert_with(|| (path.to_path_buf(), 0));
}

/// Counts one reading of the content of `file`, opened by [`open_regular`].
pub fn count_read(file: &File) {
    use std::os::unix::fs::MetadataExt;
    if !logging() {
        return;
    }
    let Ok(md) = file.metadata() else { return };
    if let Some(seen) = read_log().get_mut(&(md.dev(), md.ino())) {
        seen.1 += 1;
    }
}

/// How many files this run read, and those it read more than once, with how often.
pub fn read_files() -> (usize, Vec<(PathBuf, u32)>) {
    let read = read_log();
    let again = read.values().filter(|(_, n)| *n > 1).cloned().collect();
    (read.values().filter(|(_, n)| *n > 0).count(), again)
}

fn file_type_name(md: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = md.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a plain file"
    }
}

/// Reads `r` to its end, at most `limit` bytes; one more is an error naming `what` and the bound.
pub fn read_all_bounded(
    r: impl Read,
    limit: u64,
    what: &str,
    place: &str,
) -> Result<Vec<u8>, Fatal> {
    let mut buf = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| fatal(format!("{place}: cannot read the {what}: {e}")))?;
    if buf.len() as u64 > limit {
        return Err(fatal(too_big(place, what, limit)));
    }
    Ok(buf)
}

/// The message of an input over its bound.
pub fn too_big(place: &str, what: &str, limit: u64) -> String {
    format!(
        "{place}: the {what} is larger than {}, the bound for a {what}; refused (see docs/security.md)",
        size(limit)
    )
}

/// Reads a whole regular file of at most `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, Fatal> {
    let f = open_regular(path, what)?;
    count_read(&f);
    read_all_bounded(f, limit, what, &shown_path(path))
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, Fatal> {
    let b = read_bounded(path, limit, what)?;
    String::from_utf8(b).map_err(|e| {
        fatal(format!(
            "{}: the {what} is not UTF-8 text: {e}",
            shown_path(path)
        ))
    })
}

/// A name taken from input that is to become (part of) a file name: refused when it is empty,
/// `.` or `..`, holds a separator, or holds a control character (or is absurdly long).
pub fn safe_name<'a>(name: &'a str, what: &str) -> Result<&'a str, Fatal> {
    let bad = if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("it is . or ..")
    } else if name.contains(['/', '\\']) {
        Some("it holds a path separator")
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character")
    } else if name.len() > 200 {
        Some("it is longer than 200 bytes")
    } else {
        None
    };
    match bad {
        Some(why) => Err(fatal(format!(
            "the {what} '{}' cannot be used in a file name: {why}",
            shown(name)
        ))),
        None => Ok(name),
    }
}

/// The path on disk of `rel` inside `root`: refused when `rel` is absolute, climbs out with
/// `..`, or resolves (through links) to a place outside `root`. A path that does not exist yet is
/// checked lexically only (there is no link to follow).
pub fn inside(root: &Path, rel: &str) -> Result<PathBuf, String> {
    rigaudit_audit::schema::safe_path(rel)?;
    let mut clean = PathBuf::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => clean.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if !clean.pop() {
                    return Err(format!("'{}' leaves the bundle through '..'", shown(rel)));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("'{}' is absolute", shown(rel)))
            }
        }
    }
    let joined = root.join(&clean);
    match (joined.canonicalize(), root.canonicalize()) {
        (Ok(real), Ok(base)) if !real.starts_with(&base) => Err(format!(
            "'{}' resolves outside the bundle (through a link)",
            shown(rel)
        )),
        _ => Ok(joined),
    }
}

/// The canonical identity of a file, for reading each real file once whatever its aliases.
pub fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Text quoted from input, safe to print: control characters (escape sequences included) are
/// escaped, and text longer than [`QUOTE_MAX`] characters is cut with its full size said.
pub fn shown(s: &str) -> String {
    shown_n(s, QUOTE_MAX)
}

/// [`shown`] with another length: at most `max` characters are kept.
pub fn shown_n(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4) + 16);
    for (i, c) in s.chars().enumerate() {
        if i == max {
            out.push_str(&format!("… [cut: {} bytes in all]", s.len()));
            break;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// Control characters of a whole message escaped (no cut): for messages that are built by
/// rigaudit but may carry input somewhere inside.
pub fn escaped(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\n' {
            out.push(c);
        } else {
            push_escaped(&mut out, c);
        }
    }
    out
}

/// A line of text for a terminal or a CI log that does not start, after its indent, with `::`
/// (which the Actions runner reads as a workflow command wherever the line comes from): such a
/// line gets a `\` before it. Wrapping can start a line with any word of a value, so the text
/// renderers pass each line they write through this.
pub fn no_command(line: &str) -> std::borrow::Cow<'_, str> {
    let text = line.trim_start();
    if !text.starts_with("::") {
        return line.into();
    }
    let indent = &line[..line.len() - text.len()];
    format!("{indent}\\{text}").into()
}

/// A character shown escaped: controls (C0 but the line feed, DEL, C1), the bidirectional marks,
/// embeddings, overrides and isolates, and the Unicode line and paragraph separators (which some
/// readers take as line breaks).
fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

fn push_escaped(out: &mut String, c: char) {
    if needs_escape(c) {
        match c {
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push_str(&c.escape_unicode().to_string()),
        }
    } else if c == '\n' {
        out.push_str("\\n");
    } else {
        out.push(c);
    }
}

/// A path quoted from input (an archive member, a file name): [`shown`] of its text; an argument
/// that is a URL (`SCHEME://...`) without its credentials ([`without_credentials`]).
/// An error `message` about the file `p` without its leading `PATH: `, for a place that names the
/// file already.
pub fn without_path<'a>(message: &'a str, p: &Path) -> &'a str {
    message
        .strip_prefix(&shown_path(p))
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
}

pub fn shown_path(p: &Path) -> String {
    let text = p.to_string_lossy();
    match scheme_end(&text) {
        Some(_) => shown(&without_credentials(&text)),
        None => shown(&text),
    }
}

/// Where `SCHEME://` ends in text that starts with a URL's scheme (letters, digits, `+-.`).
fn scheme_end(text: &str) -> Option<usize> {
    let at = text.find("://")?;
    let scheme = &text[..at];
    let ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    ok.then_some(at + 3)
}

/// A URL's text as it may be shown: without the user name and password (`USER:PASSWORD@`)
/// whether it parses as a URL or not. Of a URL that parses, the userinfo is what the URL parser
/// takes for it: up to the last `@` before the first `/`, `?`, `#` or `\`; of one that does not
/// parse (a bad port, an unclosed `[`), everything between `://` and the last `@` anywhere, so that
/// a password holding one of those characters is not shown either. Text that is not a URL is
/// returned as it is.
pub fn without_credentials(text: &str) -> String {
    let Some(from) = scheme_end(text) else {
        return text.to_string();
    };
    let rest = &text[from..];
    let authority = match reqwest::Url::parse(text) {
        Ok(_) => &rest[..rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len())],
        Err(_) => rest,
    };
    match authority.rfind('@') {
        Some(i) => format!("{}{}", &text[..from], &rest[i + 1..]),
        None => text.to_string(),
    }
}

/// `message` with the credentials of every argument that is a URL taken out: the argument's text
/// replaced by [`without_credentials`] of it, then its `USER:PASSWORD` and its password (of 3
/// characters or more) wherever they still appear by `***`. The last line of defence of the one
/// error sink, for a message that quoted an argument some other way.
pub fn scrubbed(message: &str, args: &[String]) -> String {
    let mut out = message.to_string();
    for arg in args {
        let shown = without_credentials(arg);
        let Some(from) = scheme_end(arg).filter(|_| shown != *arg) else {
            continue;
        };
        let userinfo = &arg[from..from + (arg.len() - shown.len()) - 1];
        out = out.replace(arg.as_str(), &shown);
        out = out.replace(userinfo, "***");
        if let Some((_, password)) = userinfo.split_once(':').filter(|(_, p)| p.len() >= 3) {
            out = out.replace(password, "***");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(safe_name("gsm-mini", "test").is_ok());
        for bad in [
            "", ".", "..", "a/b", "../x", "/etc", "a\\b", "a\x1b[2J", "a\nb",
        ] {
            assert!(safe_name(bad, "test").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn inside_refuses_leaving() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), b"x").unwrap();
        assert!(inside(d.path(), "./a").is_ok());
        assert!(inside(d.path(), "../a").is_err());
        assert!(inside(d.path(), "/etc/passwd").is_err());
        std::os::unix::fs::symlink("/etc/hostname", d.path().join("l")).unwrap();
        assert!(inside(d.path(), "l").unwrap_err().contains("outside"));
    }

    #[test]
    fn credentials_are_taken_out_of_urls_that_parse_and_that_do_not() {
        for (given, want) in [
            (
                "https://me:s3cret@example.org/a.tar.gz",
                "https://example.org/a.tar.gz",
            ),
            ("https://user:secret@host:bad/x", "https://host:bad/x"),
            ("http://user:pass@[::1", "http://[::1"),
            ("https://u:p@ss@host/a", "https://host/a"),
            ("https://u:pa/ss@host/a", "https://host/a"),
            ("https://u:pa#ss@host:x/a", "https://host:x/a"),
            ("ftp://u:secret@host/f", "ftp://host/f"),
            ("https://host/@scope/pkg", "https://host/@scope/pkg"),
            ("plain/path@x", "plain/path@x"),
            ("dir/a://u:p@h", "dir/a://u:p@h"),
        ] {
            assert_eq!(without_credentials(given), want, "{given}");
        }
        assert_eq!(
            shown_path(Path::new("https://user:secret@host:bad/x")),
            "https://host:bad/x"
        );
        let args = ["https://user:hunter2@host:bad/x".to_string()];
        let msg = "https://user:hunter2@host:bad/x: bad; user:hunter2 again; hunter2 alone";
        let s = scrubbed(msg, &args);
        assert!(!s.contains("hunter2"), "{s}");
        assert!(s.starts_with("https://host:bad/x: bad"), "{s}");
    }

    #[test]
    fn shown_escapes_and_cuts() {
        assert_eq!(shown("a\x1b[31mb"), "a\\u{1b}[31mb");
        let long = "x".repeat(10_000);
        let s = shown(&long);
        assert!(s.len() < 300 && s.contains("10000 bytes"), "{s}");
    }

    #[test]
    fn devices_and_fifos_are_refused_and_bounds_hold() {
        let e = read_bounded(Path::new("/dev/zero"), 10, "card").unwrap_err();
        assert!(e.0.contains("not a regular file"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("fifo");
        let c = std::ffi::CString::new(f.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_bounded(&f, 10, "card").unwrap_err();
        assert!(e.0.contains("a FIFO"), "{e}");
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'x'; 11]).unwrap();
        let e = read_bounded(&big, 10, "card").unwrap_err();
        assert!(e.0.contains("larger than 10 bytes"), "{e}");
        std::fs::write(&big, vec![b'x'; 10]).unwrap();
        assert_eq!(read_bounded(&big, 10, "card").unwrap().len(), 10);
    }
}
