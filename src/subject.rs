//! The front door: the user's paths opened into what they are, once, for `verify`, `diff`,
//! `import` and `audit`, which take the [`Subject`] and never ask again.
//!
//! A path is a rigaudit bundle when it is a folder with `bundle.json` or a packed bundle (`.tar.gz`,
//! `.tgz`, `.tar`); a bundle whose manifest lists `import.json` is one `rigaudit import` wrote, and
//! stands for the tool's files it copied. Anything else is another tool's result files (a folder
//! stands for the files directly inside it), their format named with `--from` or detected from
//! their content. With `--from`, a plain bundle folder is read as the named tool's files too.

use crate::advice;
use crate::bundle::{self, Opened};
use crate::fatal::{fatal, Fatal};
use crate::import::{self, Format};
use crate::input;
use std::path::{Path, PathBuf};

/// What the user's paths are.
pub enum Subject {
    /// A rigaudit bundle, opened.
    Bundle(Opened),
    /// Another tool's result files.
    Other(Other),
}

/// Another tool's result files, with their format.
pub struct Other {
    /// Their format, named with `--from`, recorded by the import, or detected.
    pub format: Format,
    /// The files (or folders of them) to read.
    pub files: Vec<PathBuf>,
    /// The bundle `rigaudit import` wrote that holds them, when they are its copied sources.
    pub imported: Option<Opened>,
}

impl Subject {
    /// Opens the user's paths: one bundle (plain or imported), or another tool's files. `Err`
    /// when a bundle cannot be read, or when the paths are neither (naming the formats and
    /// `--from`).
    pub fn open(paths: &[PathBuf], from: Option<Format>) -> Result<Subject, Fatal> {
        if let (None, Some(e)) = (from, paths.iter().find_map(|p| bundle::manifest_given(p))) {
            return Err(e);
        }
        // An archive rigaudit does not unpack is named as one, with the tool that unpacks it,
        // whatever --from says.
        if let Some(e) = paths.iter().find_map(|p| advice::archive(p)) {
            return Err(e);
        }
        if let [path] = paths {
            if from.is_none() && !path.exists() {
                // Says that it cannot be opened, as a bundle: what a missing path most likely is.
                return bundle::open(path).map(Subject::Bundle);
            }
            if looks_like_bundle(path) {
                let opened = bundle::open(path)?;
                if is_imported(&opened) {
                    return imported(opened, from).map(Subject::Other);
                }
                if from.is_none() {
                    return Ok(Subject::Bundle(opened));
                }
            }
        }
        if let (None, [_, _, ..]) = (from, paths) {
            if let Some(b) = paths.iter().find(|p| looks_like_bundle(p)) {
                return Err(fatal(format!(
                    "{}: a rigaudit bundle, given with other paths; a run checks one bundle, or one tool's result files: give it on its own (one run per bundle; `rigaudit diff A B` compares two)",
                    input::shown_path(b)
                )));
            }
        }
        let format = match from {
            Some(f) => f,
            None => detected(paths)?,
        };
        Ok(Subject::Other(Other {
            format,
            files: paths.to_vec(),
            imported: None,
        }))
    }

    /// What it is, for a message: "a rigaudit bundle" or "FORMAT result files".
    pub fn kind(&self) -> String {
        match self {
            Subject::Bundle(_) => "a rigaudit bundle".into(),
            Subject::Other(o) => format!("{} result files", o.format.name()),
        }
    }
}

/// Whether a path is a bundle by its shape: a folder with `bundle.json` (of whatever kind: the
/// bundle reader says why one that is not a regular file is refused), or a packed one.
pub fn looks_like_bundle(path: &Path) -> bool {
    if path.is_dir() {
        return path.join("bundle.json").symlink_metadata().is_ok();
    }
    let n = path.to_string_lossy().to_lowercase();
    n.ends_with(".tar.gz") || n.ends_with(".tgz") || n.ends_with(".tar")
}

/// Whether an opened bundle is one `rigaudit import` wrote (its manifest lists `import.json`).
fn is_imported(opened: &Opened) -> bool {
    opened
        .manifest
        .files
        .iter()
        .any(|f| f.path == "import.json")
}

/// The format of files given without `--from`, detected from their content. Files that are no
/// tool's are first asked what mistake they are ([`advice::undetected`]: a file of a bundle,
/// lm-eval samples without their results), and only then told to name the format.
fn detected(paths: &[PathBuf]) -> Result<Format, Fatal> {
    let read = import::read_sources(paths).map_err(|e| {
        if let Some(advice) = advice::undetected(paths) {
            return advice;
        }
        match paths {
            [one] if !one.is_file() => fatal(format!(
                "{}: not a bundle (a folder with bundle.json, or .tar.gz / .tar), and its files cannot be read as another tool's: {e}",
                input::shown_path(one)
            )),
            _ => e,
        }
    })?;
    read.detect().ok_or_else(|| {
        advice::undetected(paths).unwrap_or_else(|| {
            fatal(format!(
                "{}: not a bundle (a folder with bundle.json, or .tar.gz / .tar), and not a result file of a format rigaudit imports ({}); name the format with --from FORMAT",
                import::names(&read.sources),
                Format::all_names()
            ))
        })
    })
}

/// The tool's files an imported bundle copied, with the format its `import.json` records
/// (`--from` wins over it).
fn imported(opened: Opened, from: Option<Format>) -> Result<Other, Fatal> {
    let rec_path = input::shown_path(&opened.root.join("import.json"));
    let rec = import::read_import_record(&opened.root)?;
    let format = match from {
        Some(f) => f,
        None => {
            let named = rec.get("from").and_then(|v| v.as_str()).unwrap_or("");
            Format::parse(named).ok_or_else(|| {
                fatal(format!(
                    "{rec_path}: at /from: expected a format rigaudit imports ({}), found '{}'",
                    Format::all_names(),
                    input::shown(named)
                ))
            })?
        }
    };
    let mut files = Vec::new();
    let sources = rec.get("sources").and_then(|v| v.as_array());
    for (i, s) in sources.into_iter().flatten().enumerate() {
        let p = s.get("path").and_then(|v| v.as_str()).ok_or_else(|| {
            fatal(format!(
                "{rec_path}: at /sources/{i}/path: expected the source's path in the bundle"
            ))
        })?;
        let inside = input::inside(&opened.root, p)
            .map_err(|m| fatal(format!("{rec_path}: at /sources/{i}/path: {m}")))?;
        files.push(inside);
    }
    Ok(Other {
        format,
        files,
        imported: Some(opened),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(rel)
    }

    /// An imported bundle of the committed lm-eval run, in `dir`.
    fn imported_lm_eval(dir: &Path) -> PathBuf {
        let out = dir.join("b");
        let files = [fixture("imports/lm-eval/clean")];
        import::run(Some(Format::LmEval), &files, &out).unwrap();
        out
    }

    fn other(s: Subject) -> Other {
        match s {
            Subject::Other(o) => o,
            Subject::Bundle(b) => panic!("a bundle: {}", b.manifest.id),
        }
    }

    #[test]
    fn a_bundle_folder_is_a_bundle_and_a_tools_folder_its_files() {
        let s = Subject::open(&[fixture("runs/smollm2-cpu")], None).unwrap();
        assert!(matches!(&s, Subject::Bundle(b) if b.root.ends_with("smollm2-cpu")));
        let o = other(Subject::open(&[fixture("imports/lm-eval/clean")], None).unwrap());
        assert_eq!((o.format, o.imported.is_none()), (Format::LmEval, true));
        // --from names the format of a plain bundle folder's files.
        let o = other(Subject::open(&[fixture("runs/smollm2-cpu")], Some(Format::Vllm)).unwrap());
        assert_eq!(o.format, Format::Vllm);
    }

    #[test]
    fn an_imported_bundle_stands_for_its_copied_sources() {
        let dir = tempfile::tempdir().unwrap();
        let b = imported_lm_eval(dir.path());
        let o = other(Subject::open(std::slice::from_ref(&b), None).unwrap());
        assert_eq!(o.format, Format::LmEval);
        assert_eq!(o.files.len(), 2, "{:?}", o.files);
        assert!(o.files.iter().all(|f| f.starts_with(b.join("sources"))));
        assert!(o.imported.is_some());
    }

    #[test]
    fn neither_names_the_formats_and_from() {
        let dir = tempfile::tempdir().unwrap();
        let x = dir.path().join("x.txt");
        std::fs::write(&x, "hello").unwrap();
        let e = Subject::open(&[x], None).err().unwrap().0;
        assert!(e.contains("not a bundle"), "{e}");
        assert!(
            e.contains("--from FORMAT") && e.contains(&Format::all_names()),
            "{e}"
        );
        let e = Subject::open(&[dir.path().join("nope")], None)
            .err()
            .unwrap()
            .0;
        assert!(e.contains("cannot open the bundle"), "{e}");
    }
}
