//! Finds the artifacts a card records under the folders a user names (`--root [BOX=]DIR`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Deepest folder level searched below a root.
const MAX_DEPTH: usize = 16;
/// Most entries looked at below one root.
const MAX_ENTRIES: usize = 2_000_000;

/// A folder to search, tied to a box when the user said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The box (`--root atom=/mnt/atom`).
    pub box_name: Option<String>,
    /// The folder.
    pub dir: PathBuf,
}

/// Splits `BOX=DIR` (a box name has no `/`) from a plain `DIR`; an existing path is always a plain
/// folder, so a folder whose name holds `=` still works.
pub fn split_labelled(s: &str) -> (Option<String>, String) {
    if !Path::new(s).exists() {
        if let Some((b, d)) = s.split_once('=') {
            if !b.is_empty() && !b.contains('/') && !d.is_empty() {
                return (Some(b.to_string()), d.to_string());
            }
        }
    }
    (None, s.to_string())
}

/// Parses a `--root` value and checks that it is a folder.
pub fn parse_root(s: &str) -> Result<Root, String> {
    let (box_name, dir) = split_labelled(s);
    let dir = PathBuf::from(dir);
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => Ok(Root { box_name, dir }),
        Ok(_) => Err(format!("--root {s}: {} is not a folder", dir.display())),
        Err(e) => Err(format!("--root {s}: {}: {e}", dir.display())),
    }
}

/// A file found below a root.
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// The path as found.
    pub path: PathBuf,
    /// Its name.
    pub name: String,
    /// The box it belongs to.
    pub box_name: Option<String>,
    /// Where it really is (links resolved), to count a file reached twice once.
    pub real: PathBuf,
}

/// A folder that holds a checkpoint.
#[derive(Debug, Clone)]
pub struct FoundDir {
    /// The folder.
    pub path: PathBuf,
    /// The box it belongs to.
    pub box_name: Option<String>,
}

/// Everything interesting below the roots.
#[derive(Debug, Default)]
pub struct Found {
    /// Files (links to files included).
    pub files: Vec<FoundFile>,
    /// Checkpoint folders (the topmost folder that holds weights or a `config.json`).
    pub checkpoints: Vec<FoundDir>,
}

/// The box a path below a root belongs to: the root's own label, or the first folder named after
/// one of the card's boxes.
fn box_of(root: &Root, path: &Path, boxes: &[String]) -> Option<String> {
    if root.box_name.is_some() {
        return root.box_name.clone();
    }
    let rel = path.strip_prefix(&root.dir).ok()?;
    rel.components()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|c| boxes.iter().any(|b| b == c))
        .map(String::from)
}

/// Whether a folder whose files have these names holds a checkpoint (weights or `config.json`).
pub fn looks_like_checkpoint(names: &[String]) -> bool {
    names.iter().any(|n| {
        let l = n.to_ascii_lowercase();
        l.ends_with(".safetensors")
            || l.ends_with(".gguf")
            || (l.starts_with("pytorch_model") && l.ends_with(".bin"))
            || l == "config.json"
    })
}

/// Walks every root. Folder links are not followed (no loops); file links are.
pub fn walk(roots: &[Root], boxes: &[String]) -> Result<Found, String> {
    let mut found = Found::default();
    for root in roots {
        let mut stack = vec![(root.dir.clone(), 0usize)];
        let mut seen = 0usize;
        let mut ckpt_dirs: Vec<PathBuf> = Vec::new();
        while let Some((dir, depth)) = stack.pop() {
            let rd = match std::fs::read_dir(&dir) {
                Ok(r) => r,
                // A folder we may not read is skipped; the artifact then shows up as not found.
                Err(_) => continue,
            };
            let mut names = Vec::new();
            for e in rd.flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    return Err(format!(
                        "--root {}: more than {MAX_ENTRIES} entries; name a smaller folder or the files with --file",
                        root.dir.display()
                    ));
                }
                let path = e.path();
                let name = e.file_name().to_string_lossy().to_string();
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    if depth < MAX_DEPTH && name != ".git" {
                        stack.push((path, depth + 1));
                    }
                    continue;
                }
                let is_file = ft.is_file()
                    || (ft.is_symlink()
                        && std::fs::metadata(&path)
                            .map(|m| m.is_file())
                            .unwrap_or(false));
                if !is_file {
                    continue;
                }
                names.push(name.clone());
                let real = path.canonicalize().unwrap_or_else(|_| path.clone());
                found.files.push(FoundFile {
                    box_name: box_of(root, &path, boxes),
                    path,
                    name,
                    real,
                });
            }
            if looks_like_checkpoint(&names) {
                ckpt_dirs.push(dir);
            }
        }
        for d in topmost(ckpt_dirs) {
            found.checkpoints.push(FoundDir {
                box_name: box_of(root, &d, boxes),
                path: d,
            });
        }
    }
    Ok(found)
}

/// The topmost of these folders: one inside another is left out (a checkpoint's sub-folder).
pub fn topmost(mut dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    dirs.sort();
    let mut kept: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if !kept.iter().any(|k| d.starts_with(k)) {
            kept.push(d);
        }
    }
    kept
}

/// Whether a path inside a checkpoint folder is one of its files: not under `.git` or the hub
/// client's `.cache`, at most [`MAX_DEPTH`] folders down (as [`checkpoint_files`] reads).
pub fn in_checkpoint_listing(rel: &str) -> bool {
    let folders: Vec<&str> = rel.split('/').collect();
    let folders = &folders[..folders.len().saturating_sub(1)];
    folders.len() <= MAX_DEPTH && !folders.iter().any(|f| *f == ".git" || *f == ".cache")
}

impl Found {
    /// Files named exactly `name`, one per real file.
    pub fn named(&self, name: &str) -> Vec<&FoundFile> {
        dedupe(self.files.iter().filter(|f| f.name == name).collect())
    }

    /// NCCL libraries: files named as the card records, or else any `libnccl.so*`, one per real file.
    pub fn nccl(&self, name: &str) -> Vec<&FoundFile> {
        let exact = self.named(name);
        if !exact.is_empty() {
            return exact;
        }
        dedupe(
            self.files
                .iter()
                .filter(|f| f.name.starts_with("libnccl.so"))
                .collect(),
        )
    }

    /// Whether a file lies inside one of the checkpoint folders found.
    pub fn in_checkpoint(&self, f: &FoundFile) -> bool {
        self.checkpoints.iter().any(|c| f.path.starts_with(&c.path))
    }
}

fn dedupe(v: Vec<&FoundFile>) -> Vec<&FoundFile> {
    let mut seen = BTreeSet::new();
    // Prefer the longest name for one real file (`libnccl.so.2.30.7` over `libnccl.so.2`).
    let mut v = v;
    v.sort_by(|a, b| b.name.len().cmp(&a.name.len()).then(a.path.cmp(&b.path)));
    let mut out: Vec<&FoundFile> = v
        .into_iter()
        .filter(|f| seen.insert((f.real.clone(), f.box_name.clone())))
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// One file of a checkpoint folder.
#[derive(Debug, Clone)]
pub struct CkptFile {
    /// Path inside the folder, `/`-separated.
    pub rel: String,
    /// The file.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
}

/// A file that could not be read: its path inside the folder and why.
pub type Unreadable = (String, String);

/// Every file of a checkpoint folder, sorted; `.git` and the hub client's `.cache` are left out.
pub fn checkpoint_files(dir: &Path) -> Result<(Vec<CkptFile>, Vec<Unreadable>), String> {
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new(), 0usize)];
    let mut seen = 0usize;
    while let Some((d, prefix, depth)) = stack.pop() {
        let rd = match std::fs::read_dir(&d) {
            Ok(r) => r,
            Err(e) => {
                if prefix.is_empty() {
                    return Err(format!("{}: {e}", d.display()));
                }
                unreadable.push((prefix.trim_end_matches('/').to_string(), e.to_string()));
                continue;
            }
        };
        for e in rd.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(format!("{}: more than {MAX_ENTRIES} files", dir.display()));
            }
            let name = e.file_name().to_string_lossy().to_string();
            let rel = format!("{prefix}{name}");
            let path = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                if name != ".git" && name != ".cache" && depth < MAX_DEPTH {
                    stack.push((path, format!("{rel}/"), depth + 1));
                }
                continue;
            }
            match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => files.push(CkptFile {
                    rel,
                    path,
                    size: m.len(),
                }),
                Ok(_) => {}
                Err(e) => unreadable.push((rel, e.to_string())),
            }
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok((files, unreadable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(
            split_labelled("atom=/mnt/atom"),
            (Some("atom".into()), "/mnt/atom".into())
        );
        assert_eq!(split_labelled("/mnt/atom"), (None, "/mnt/atom".into()));
        assert_eq!(split_labelled("/a=b/c"), (None, "/a=b/c".into()));
    }

    #[test]
    fn finds_boxes_libraries_and_checkpoints() {
        let t = tempfile::tempdir().expect("tmp");
        let r = t.path();
        for b in ["atom", "pgx"] {
            std::fs::create_dir_all(r.join(b).join("nccl")).expect("mkdir");
            std::fs::write(r.join(b).join("nccl/libnccl.so.2.30.7"), b"x").expect("write");
            let ck = r.join(b).join("models/GLM");
            std::fs::create_dir_all(ck.join("original")).expect("mkdir");
            std::fs::write(ck.join("model-00001-of-00001.safetensors"), b"w").expect("write");
            std::fs::write(ck.join("original/config.json"), b"{}").expect("write");
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink("libnccl.so.2.30.7", r.join("atom/nccl/libnccl.so.2"))
            .expect("link");
        let roots = vec![Root {
            box_name: None,
            dir: r.to_path_buf(),
        }];
        let f = walk(&roots, &["atom".into(), "pgx".into()]).expect("walk");
        let n = f.nccl("libnccl.so.2.30.7");
        assert_eq!(n.len(), 2);
        assert_eq!(n[0].box_name.as_deref(), Some("atom"));
        assert_eq!(n[1].box_name.as_deref(), Some("pgx"));
        assert_eq!(f.checkpoints.len(), 2, "{:?}", f.checkpoints);
        assert!(f.checkpoints.iter().all(|c| c.path.ends_with("models/GLM")));
        // Not the recorded name: any libnccl.so* is taken, one per real file.
        assert_eq!(f.nccl("libnccl.so.9.9.9").len(), 2);
        let (files, bad) = checkpoint_files(&r.join("atom/models/GLM")).expect("files");
        assert!(bad.is_empty());
        let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            vec!["model-00001-of-00001.safetensors", "original/config.json"]
        );
    }
}
