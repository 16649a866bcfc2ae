//! What to type instead, for a path that is no bundle and no result file rigaudit detects, by the
//! mistake it most likely is: an archive rigaudit does not unpack (say which tool does), a file or
//! folder inside a bundle (give the bundle's folder, named), an lm-eval samples file given without
//! its results file (give the folder that holds both, or the results file named). Each is one
//! line, the cause and the way out; [`crate::subject`] asks before it falls back to naming the
//! formats and `--from FORMAT`.

use crate::fatal::{fatal, Fatal};
use crate::input;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How many folders up a file is looked for inside a bundle (a bundle's files are a few deep).
const BUNDLE_DEPTH: usize = 8;

/// A word as it may be pasted into a shell: as it is when plain, else single-quoted.
fn word(p: &Path) -> String {
    let s = input::shown_path(p);
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A compressed file or archive, by its name or its first bytes: what it is and the command that
/// unpacks it (`{}` for the file), and whether it unpacks to a folder (else to one file).
struct Packed {
    what: &'static str,
    unpack: &'static str,
    folder: bool,
}

const ZIP: Packed = Packed {
    what: "a zip archive",
    unpack: "mkdir DIR && unzip {} -d DIR",
    folder: true,
};
const TAR_XZ: Packed = Packed {
    what: "an xz-compressed tar archive",
    unpack: "mkdir DIR && tar -xJf {} -C DIR",
    folder: true,
};
const TAR_BZ2: Packed = Packed {
    what: "a bzip2-compressed tar archive",
    unpack: "mkdir DIR && tar -xjf {} -C DIR",
    folder: true,
};
const TAR_ZST: Packed = Packed {
    what: "a zstd-compressed tar archive",
    unpack: "mkdir DIR && tar --zstd -xf {} -C DIR",
    folder: true,
};
const SEVEN_Z: Packed = Packed {
    what: "a 7-Zip archive",
    unpack: "7z x {} -oDIR",
    folder: true,
};
const RAR: Packed = Packed {
    what: "a RAR archive",
    unpack: "mkdir DIR && unrar x {} DIR/",
    folder: true,
};
const XZ: Packed = Packed {
    what: "an xz-compressed file",
    unpack: "xz -dk {}",
    folder: false,
};
const BZ2: Packed = Packed {
    what: "a bzip2-compressed file",
    unpack: "bzip2 -dk {}",
    folder: false,
};
const ZST: Packed = Packed {
    what: "a zstd-compressed file",
    unpack: "zstd -d {}",
    folder: false,
};
const GZ: Packed = Packed {
    what: "a gzip-compressed file",
    unpack: "gunzip -k {}",
    folder: false,
};

/// What a file is packed as, by its name's ending, else (for a name that says nothing) by its
/// first bytes; `None` for a bundle packed as rigaudit reads it (`.tar.gz`, `.tgz`, `.tar`) and
/// for anything not packed.
fn packed(path: &Path) -> Option<&'static Packed> {
    let n = path.file_name()?.to_string_lossy().to_lowercase();
    let ends = |e: &[&str]| e.iter().any(|x| n.ends_with(x));
    if ends(&[".tar.gz", ".tgz", ".tar"]) {
        return None;
    }
    let by_name = [
        (ends(&[".zip"]), &ZIP),
        (ends(&[".tar.xz", ".txz"]), &TAR_XZ),
        (ends(&[".tar.bz2", ".tbz2", ".tbz"]), &TAR_BZ2),
        (ends(&[".tar.zst", ".tzst"]), &TAR_ZST),
        (ends(&[".7z"]), &SEVEN_Z),
        (ends(&[".rar"]), &RAR),
        (ends(&[".xz"]), &XZ),
        (ends(&[".bz2"]), &BZ2),
        (ends(&[".zst"]), &ZST),
        (ends(&[".gz"]), &GZ),
    ];
    if let Some((_, p)) = by_name.iter().find(|(hit, _)| *hit) {
        return Some(p);
    }
    // The first bytes, of a regular file only (a FIFO is not opened here).
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut head = [0u8; 8];
    let n = input::open_regular(path, "file")
        .ok()?
        .read(&mut head)
        .ok()?;
    let head = &head[..n];
    let magic: [(&[u8], &Packed); 5] = [
        (b"PK\x03\x04", &ZIP),
        (b"\xfd7zXZ\x00", &XZ),
        (b"7z\xbc\xaf\x27\x1c", &SEVEN_Z),
        (b"Rar!\x1a\x07", &RAR),
        (b"\x28\xb5\x2f\xfd", &ZST),
    ];
    magic
        .iter()
        .find(|(m, _)| head.starts_with(m))
        .map(|(_, p)| *p)
}

/// The error for an archive or compressed file rigaudit does not unpack (a zip, a `.tar.xz`, a
/// 7-Zip, ...): what it is, and the command that unpacks it; `None` for any other path.
pub fn archive(path: &Path) -> Option<Fatal> {
    let p = packed(path)?;
    let cmd = p.unpack.replace("{}", &word(path));
    let then = if p.folder {
        "and give the folder (the bundle's, with bundle.json; or the one of the tool's result files)"
    } else {
        "and give the file it unpacks to"
    };
    Some(fatal(format!(
        "{}: {}, which rigaudit does not unpack (it reads a bundle folder, a bundle packed as .tar.gz or .tar, or a tool's result files); unpack it ({cmd}) {then}",
        input::shown_path(path),
        p.what
    )))
}

/// The advice for paths whose format was not detected (or that could not be read as a tool's),
/// by the mistake they most likely are: a file or folder inside a bundle, or lm-eval samples
/// without their results file. `None` when they are none of these.
pub fn undetected(paths: &[PathBuf]) -> Option<Fatal> {
    paths
        .iter()
        .find_map(|p| inside_bundle(p))
        .or_else(|| lone_samples(paths))
}

/// The folder above `path` (at most [`BUNDLE_DEPTH`] up) that holds a `bundle.json`, as the user
/// would write it (`.` for the current folder).
fn bundle_above(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .skip(1)
        .take(BUNDLE_DEPTH)
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| {
            std::fs::symlink_metadata(a.join("bundle.json")).is_ok_and(|m| m.file_type().is_file())
        })
        .map(Path::to_path_buf)
}

/// The error for a file or folder inside a bundle given in place of the bundle: which bundle, what
/// its manifest lists it as, and the folder to give.
fn inside_bundle(path: &Path) -> Option<Fatal> {
    let bundle = bundle_above(path)?;
    let rel = if bundle == Path::new(".") {
        Some(path)
    } else {
        path.strip_prefix(&bundle).ok()
    }
    .map(|r| r.to_string_lossy().replace('\\', "/"));
    let kind = rel.as_deref().and_then(|r| listed_as(&bundle, r));
    let what = match (kind, path.is_dir()) {
        (_, true) => format!("a folder of the bundle {}", input::shown_path(&bundle)),
        (Some(k), _) => format!(
            "a file of the bundle {} (its bundle.json lists it as the {})",
            input::shown_path(&bundle),
            input::shown(&k)
        ),
        (None, _) => format!("a file in the bundle folder {}", input::shown_path(&bundle)),
    };
    Some(fatal(format!(
        "{}: {what}; a bundle is checked as a whole, each file against the others: give its folder, {}",
        input::shown_path(path),
        word(&bundle)
    )))
}

/// The kind a bundle's manifest lists the file at `rel` as (`card`, `quality-answers`), read
/// within the manifest's bound; `None` when it cannot be read or does not list it.
fn listed_as(bundle: &Path, rel: &str) -> Option<String> {
    let text =
        input::read_text(&bundle.join("bundle.json"), input::MANIFEST_MAX, "manifest").ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let norm = |p: &str| {
        p.split(['/', '\\'])
            .filter(|c| !c.is_empty() && *c != ".")
            .collect::<Vec<_>>()
            .join("/")
    };
    let want = norm(rel);
    v.get("files")?
        .as_array()?
        .iter()
        .find(|f| f.get("path").and_then(Value::as_str).map(norm) == Some(want.clone()))
        .and_then(|f| f.get("kind")?.as_str().map(String::from))
}

/// Whether a file name is lm-eval's samples file (`samples_<task>_<time>.jsonl`) or its results
/// file (`results_<time>.json`, `results.json`).
fn lm_eval_name(p: &Path) -> (bool, bool) {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    (
        n.starts_with("samples_") && n.ends_with(".jsonl"),
        n.starts_with("results") && n.ends_with(".json"),
    )
}

/// The error for lm-eval samples files given without their results file: lm_eval writes the
/// figures in `results_<time>.json` beside them; named when the folder holds one.
fn lone_samples(paths: &[PathBuf]) -> Option<Fatal> {
    let files: Vec<&PathBuf> = paths.iter().filter(|p| !p.is_dir()).collect();
    if files.is_empty() || files.len() != paths.len() || !files.iter().all(|p| lm_eval_name(p).0) {
        return None;
    }
    let first = files[0];
    let folder = first
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut beside: Vec<PathBuf> = std::fs::read_dir(folder)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| lm_eval_name(p).1 && p.is_file())
        .collect();
    beside.sort();
    let shown: Vec<String> = files.iter().map(|p| input::shown_path(p)).collect();
    let named = match beside.last() {
        Some(r) => format!(
            "give the folder that holds both, {} (or add its results file {})",
            word(folder),
            word(r)
        ),
        None => format!(
            "give the results file with it, or the folder that holds both (none is in {})",
            input::shown_path(folder)
        ),
    };
    Some(fatal(format!(
        "{}: an lm-eval samples file given without its results file; lm_eval writes the figures in results_<time>.json beside its samples, and the samples are checked against them: {named}",
        shown.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(rel)
    }

    #[test]
    fn archives_are_named_by_name_or_first_bytes_with_the_tool_that_unpacks_them() {
        let d = tempfile::tempdir().unwrap();
        let cases = [
            ("run.zip", &b"PK\x03\x04rest"[..], "a zip archive", "unzip"),
            (
                "run.tar.xz",
                b"\xfd7zXZ\x00",
                "xz-compressed tar",
                "tar -xJf",
            ),
            ("run.tar.bz2", b"BZh9", "bzip2-compressed tar", "tar -xjf"),
            ("run.tar.zst", b"x", "zstd-compressed tar", "tar --zstd"),
            ("run.7z", b"x", "7-Zip", "7z x"),
            (
                "results.json.gz",
                b"\x1f\x8b",
                "gzip-compressed file",
                "gunzip -k",
            ),
            ("results.bin", b"PK\x03\x04", "a zip archive", "unzip"),
        ];
        for (name, bytes, what, tool) in cases {
            let p = d.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            let e = archive(&p).expect(name).0;
            assert!(e.contains(what) && e.contains(tool), "{name}: {e}");
            assert!(e.contains("rigaudit does not unpack"), "{e}");
        }
        for name in ["b.tar.gz", "b.tgz", "b.tar", "results.json"] {
            let p = d.path().join(name);
            std::fs::write(&p, b"{}").unwrap();
            assert!(archive(&p).is_none(), "{name}");
        }
        // A name a shell would split is quoted in the command.
        let p = d.path().join("my run.zip");
        std::fs::write(&p, b"PK").unwrap();
        assert!(archive(&p).unwrap().0.contains("unzip '"));
    }

    #[test]
    fn a_file_inside_a_bundle_names_the_bundle_and_what_it_lists_it_as() {
        let b = fixture("runs/smollm2-cpu");
        let e = undetected(&[b.join("quality/arith/answers.jsonl")])
            .unwrap()
            .0;
        assert!(e.contains("a file of the bundle"), "{e}");
        assert!(e.contains("lists it as the quality-answers"), "{e}");
        assert!(
            e.contains(&format!("give its folder, {}", b.display())),
            "{e}"
        );
        let e = undetected(&[b.join("quality")]).unwrap().0;
        assert!(e.contains("a folder of the bundle"), "{e}");
    }

    #[test]
    fn lone_samples_name_the_folder_and_the_results_file_beside_them() {
        let clean = fixture("imports/lm-eval/clean");
        let samples: Vec<PathBuf> = std::fs::read_dir(&clean)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| lm_eval_name(p).0)
            .collect();
        let e = undetected(&samples).unwrap().0;
        assert!(e.contains("without its results file"), "{e}");
        assert!(e.contains(&clean.display().to_string()), "{e}");
        assert!(e.contains("results_2026-12-03T12-31-10.536410.json"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let alone = d.path().join("samples_arith_2026.jsonl");
        std::fs::write(&alone, "{}\n").unwrap();
        let e = undetected(std::slice::from_ref(&alone)).unwrap().0;
        assert!(e.contains("none is in"), "{e}");
        // Other files are none of these mistakes.
        let other = d.path().join("x.json");
        std::fs::write(&other, "{}").unwrap();
        assert!(undetected(&[other]).is_none());
    }
}
