//! Where a finding is in the repository a report is read from: its file as a path relative to the
//! repository root (`--repo-root`, else the git work tree holding the subject, found by walking up
//! to the folder with `.git`; no git process), and the line its pointer names in that file
//! ([`super::lines`]). Annotations and SARIF link with it; the other formats keep the bundle's
//! own paths.

use super::lines::line_of;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// The most of one raw file read to find a line: a finding in a larger file has no line.
const LINE_SOURCE_MAX: u64 = 256 << 20;

/// Where the findings' files are on disk, and the repository they are shown in.
#[derive(Debug, Default)]
pub struct Places {
    /// The folder the findings' file names are relative to, when it can be read (a bundle folder;
    /// none for a packed bundle, whose files live in a temporary folder).
    base: Option<PathBuf>,
    /// The repository root, absolute, when there is one.
    root: Option<PathBuf>,
    /// The text of each file asked about (none when it cannot be read).
    texts: RefCell<HashMap<String, Option<String>>>,
}

impl Places {
    /// Places under `base` (the subject's folder), shown relative to `repo_root` when given, else
    /// to the git work tree that holds `base`.
    pub fn new(base: Option<&Path>, repo_root: Option<&Path>) -> Places {
        let mut base = base.and_then(|b| std::path::absolute(b).ok()).map(clean);
        let mut root = match repo_root {
            Some(r) => std::path::absolute(r).ok().map(clean),
            None => base.as_deref().and_then(work_tree),
        };
        if let (Some(b), Some(r)) = (&base, &root) {
            if !b.starts_with(r) {
                // Spelled differently (a symbolic link on one side): compare where they lead.
                let real = |p: &Path| std::fs::canonicalize(p).ok();
                match (real(b), real(r)) {
                    (Some(b), Some(r)) if b.starts_with(&r) => (base, root) = (Some(b), Some(r)),
                    _ => root = None,
                }
            }
        }
        Places {
            base,
            root,
            texts: RefCell::default(),
        }
    }

    /// The repository root as a `file://` URI ending in `/`, when there is one.
    pub fn root_uri(&self) -> Option<String> {
        self.root.as_deref().map(dir_uri)
    }

    /// Whether files are shown relative to a repository root (the subject is inside it).
    pub fn in_repository(&self) -> bool {
        self.root.is_some() && self.base.is_some()
    }

    /// A finding's file as shown: relative to the repository root when the subject is inside it,
    /// else as the finding names it (relative to the bundle).
    pub fn path(&self, file: &str) -> String {
        let (Some(base), Some(root)) = (&self.base, &self.root) else {
            return file.to_string();
        };
        match clean(base.join(file)).strip_prefix(root) {
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => file.to_string(),
        }
    }

    /// The line a finding's pointer names in its file, when the file can be read and the pointer
    /// resolved.
    pub fn line(&self, file: &str, pointer: Option<&str>) -> Option<usize> {
        let pointer = pointer?;
        if pointer.starts_with("line ") {
            return line_of("", pointer);
        }
        let base = self.base.as_ref()?;
        let mut texts = self.texts.borrow_mut();
        let text = texts
            .entry(file.to_string())
            .or_insert_with(|| read_text(&base.join(file)));
        line_of(text.as_deref()?, pointer)
    }
}

/// A file's text, through the bounded regular-file reader; none when it cannot be read.
fn read_text(path: &Path) -> Option<String> {
    let f = crate::input::open_regular(path, "raw file").ok()?;
    let bytes = crate::input::read_all_bounded(f, LINE_SOURCE_MAX, "raw file", "").ok()?;
    String::from_utf8(bytes).ok()
}

/// The nearest folder at or above `dir` holding `.git` (a folder, or the file of a linked work
/// tree or submodule).
fn work_tree(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .take(64)
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// A path with `.` and `..` resolved by its text (no symbolic links followed).
fn clean(path: PathBuf) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `file:///abs/dir/`, with the characters a URI cannot hold percent-encoded.
fn dir_uri(dir: &Path) -> String {
    let mut uri = String::from("file://");
    for b in dir.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                uri.push(b as char)
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    if !uri.ends_with('/') {
        uri.push('/');
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_show_relative_to_the_work_tree_found_by_walking_up() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let page = repo.path().join("pages/my page");
        std::fs::create_dir_all(page.join("speed")).unwrap();
        std::fs::write(page.join("speed/r.json"), "{\n  \"a\": [\n    1\n  ]\n}").unwrap();
        let places = Places::new(Some(&page.join("../my page")), None);
        assert!(places.in_repository());
        assert_eq!(places.path("speed/r.json"), "pages/my page/speed/r.json");
        assert_eq!(places.line("speed/r.json", Some("/a/0")), Some(3));
        assert_eq!(places.line("speed/r.json", None), None);
        assert_eq!(places.line("speed/none.json", Some("/a")), None);
        let uri = places.root_uri().unwrap();
        assert!(uri.starts_with("file:///") && uri.ends_with('/'), "{uri}");
        let page_uri = dir_uri(&page);
        assert!(page_uri.ends_with("/pages/my%20page/"), "{page_uri}");
    }

    #[test]
    fn without_a_work_tree_files_keep_the_bundles_paths() {
        let dir = tempfile::tempdir().unwrap();
        let places = Places::new(Some(dir.path()), None);
        let in_git = dir.path().ancestors().any(|d| d.join(".git").exists());
        assert_eq!(places.in_repository(), in_git);
        let places = Places::new(None, Some(dir.path()));
        assert!(!places.in_repository());
        // A subject outside the root named keeps its own paths.
        let other = tempfile::tempdir().unwrap();
        let places = Places::new(Some(other.path()), Some(dir.path()));
        assert!(!places.in_repository());
        assert_eq!(places.path("speed/r.json"), "speed/r.json");
        // A root named through a symbolic link still holds the subject.
        let link = other.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        std::fs::create_dir(dir.path().join("page")).unwrap();
        let places = Places::new(Some(&dir.path().join("page")), Some(&link));
        assert!(places.in_repository());
        assert_eq!(places.path("r.json"), "page/r.json");
        assert_eq!(places.line("x.jsonl", Some("line 12")), Some(12));
    }
}
