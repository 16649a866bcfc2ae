//! Hashes members of a release package (.tar.gz, .tgz, .tar, .zip) as a stream: nothing is
//! extracted to disk. For a tar package the package's own digest is computed in the same pass.

use super::hash::{hash_file, hash_reader, hex, Progress, CHUNK};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

/// The kind of package a file name says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// gzip-compressed tar.
    TarGz,
    /// Plain tar.
    Tar,
    /// Zip.
    Zip,
}

/// The package kind of a file name, or `None` when it is not one rehash can read into.
pub fn kind_of(name: &str) -> Option<Kind> {
    let n = name.to_ascii_lowercase();
    if n.ends_with(".tar.gz") || n.ends_with(".tgz") {
        Some(Kind::TarGz)
    } else if n.ends_with(".tar") {
        Some(Kind::Tar)
    } else if n.ends_with(".zip") {
        Some(Kind::Zip)
    } else {
        None
    }
}

/// Whether an archive member is the one the card names: the same path, or the same path below
/// one top folder (`tensorfold-1.2.7/tensorfold-native` for `tensorfold-native`).
pub fn member_matches(member: &str, wanted: &str) -> bool {
    let m = member.trim_start_matches("./");
    let w = wanted.trim_start_matches("./");
    if m == w {
        return true;
    }
    match m.split_once('/') {
        Some((_, rest)) => rest == w,
        None => false,
    }
}

/// What reading a package gave.
#[derive(Debug, Default)]
pub struct Read2 {
    /// The package's own sha256, when it was computed in the same pass.
    pub whole: Option<io::Result<String>>,
    /// Each member that matched the wanted path, with its sha256 (or why it failed).
    pub members: Vec<(String, Result<String, String>)>,
    /// Why the package could not be read as an archive at all.
    pub error: Option<String>,
}

/// Passes reads through and hashes the bytes on the way (the compressed package's digest).
struct Tee<R> {
    inner: R,
    hash: Sha256,
    progress_bytes: u64,
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.progress_bytes += n as u64;
        Ok(n)
    }
}

/// Reads the package once: hashes the wanted member(s) and, for tar packages, the whole file.
pub fn hash_members(path: &Path, kind: Kind, wanted: &str, progress: &Progress) -> Read2 {
    match kind {
        Kind::Tar | Kind::TarGz => tar_members(path, kind, wanted, progress),
        Kind::Zip => {
            let whole = hash_file(path, progress).map(|(d, _)| d);
            let mut r = zip_members(path, wanted);
            r.whole = Some(whole);
            r
        }
    }
}

fn tar_members(path: &Path, kind: Kind, wanted: &str, progress: &Progress) -> Read2 {
    let mut out = Read2::default();
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            out.whole = Some(Err(e));
            return out;
        }
    };
    let mut tee = Tee {
        inner: BufReader::with_capacity(CHUNK, f),
        hash: Sha256::new(),
        progress_bytes: 0,
    };
    {
        let reader: Box<dyn Read + '_> = match kind {
            Kind::TarGz => Box::new(flate2::read::GzDecoder::new(&mut tee)),
            _ => Box::new(&mut tee),
        };
        let mut ar = tar::Archive::new(reader);
        match ar.entries() {
            Err(e) => out.error = Some(format!("not a readable tar archive: {e}")),
            Ok(entries) => {
                for entry in entries {
                    let mut entry = match entry {
                        Ok(e) => e,
                        Err(e) => {
                            out.error = Some(format!("broken archive entry: {e}"));
                            break;
                        }
                    };
                    let name = match entry.path() {
                        Ok(p) => p.to_string_lossy().to_string(),
                        Err(e) => {
                            out.error = Some(format!("an entry has a bad name: {e}"));
                            break;
                        }
                    };
                    if !member_matches(&name, wanted) {
                        continue;
                    }
                    let kind = entry.header().entry_type();
                    let r = if kind.is_file() {
                        hash_reader(&mut entry, &Progress::none())
                            .map(|(d, _)| d)
                            .map_err(|e| e.to_string())
                    } else if kind.is_symlink() || kind.is_hard_link() {
                        let target = entry
                            .link_name()
                            .ok()
                            .flatten()
                            .map(|t| t.to_string_lossy().to_string());
                        Err(format!(
                            "the member is a link to {}, not a file",
                            target.unwrap_or_default()
                        ))
                    } else {
                        Err("the member is not a regular file".to_string())
                    };
                    out.members.push((name, r));
                }
            }
        }
    }
    // Read what the archive reader left (padding, the gzip trailer) so the digest covers the file.
    let rest = io::copy(&mut tee, &mut io::sink());
    progress.add(tee.progress_bytes);
    out.whole = Some(rest.map(|_| hex(&tee.hash.finalize())));
    out
}

fn zip_members(path: &Path, wanted: &str) -> Read2 {
    let mut out = Read2::default();
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    let mut z = match zip::ZipArchive::new(BufReader::with_capacity(CHUNK, f)) {
        Ok(z) => z,
        Err(e) => {
            out.error = Some(format!("not a readable zip archive: {e}"));
            return out;
        }
    };
    let names: Vec<String> = z
        .file_names()
        .filter(|n| member_matches(n, wanted))
        .map(String::from)
        .collect();
    for name in names {
        let r = match z.by_name(&name) {
            Ok(mut m) if m.is_file() => hash_reader(&mut m, &Progress::none())
                .map(|(d, _)| d)
                .map_err(|e| e.to_string()),
            Ok(_) => Err("the member is not a regular file".to_string()),
            Err(e) => Err(format!("cannot read the member: {e}")),
        };
        out.members.push((name, r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_match_below_one_top_folder() {
        assert!(member_matches("tensorfold-native", "tensorfold-native"));
        assert!(member_matches("./tensorfold-native", "tensorfold-native"));
        assert!(member_matches(
            "tensorfold-1.2.7/tensorfold-native",
            "tensorfold-native"
        ));
        assert!(member_matches(
            "tf/bin/tensorfold-native",
            "bin/tensorfold-native"
        ));
        assert!(!member_matches(
            "a/b/tensorfold-native",
            "tensorfold-native"
        ));
        assert!(!member_matches(
            "tensorfold-native.sig",
            "tensorfold-native"
        ));
    }

    #[test]
    fn kinds() {
        assert_eq!(kind_of("x-1.2.7-linux-aarch64.tar.gz"), Some(Kind::TarGz));
        assert_eq!(kind_of("x.TGZ"), Some(Kind::TarGz));
        assert_eq!(kind_of("x.zip"), Some(Kind::Zip));
        assert_eq!(kind_of("x.bin"), None);
    }

    #[test]
    fn tar_gz_member_and_whole_in_one_pass() {
        let dir = tempfile::tempdir().expect("tmp");
        let pkg = dir.path().join("p.tar.gz");
        let body = b"#!/bin/sh\necho engine\n".repeat(1000);
        {
            let gz = flate2::write::GzEncoder::new(
                File::create(&pkg).expect("create"),
                flate2::Compression::fast(),
            );
            let mut b = tar::Builder::new(gz);
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o755);
            h.set_cksum();
            b.append_data(&mut h, "tf-1.2.7/tensorfold-native", &body[..])
                .expect("append");
            b.into_inner().expect("tar").finish().expect("gz");
        }
        let r = hash_members(&pkg, Kind::TarGz, "tensorfold-native", &Progress::none());
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.members.len(), 1);
        assert_eq!(
            r.members[0].1.as_deref().ok(),
            Some(hex(&Sha256::digest(&body)).as_str())
        );
        let whole = std::fs::read(&pkg).expect("read");
        assert_eq!(
            r.whole.expect("whole").expect("ok"),
            hex(&Sha256::digest(&whole))
        );
    }

    #[test]
    fn plain_tar_member_link_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let pkg = dir.path().join("p.tar");
        let body = b"engine".repeat(100);
        {
            let mut b = tar::Builder::new(File::create(&pkg).expect("create"));
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_cksum();
            b.append_data(&mut h, "tf/real-engine", &body[..])
                .expect("append");
            let mut l = tar::Header::new_gnu();
            l.set_entry_type(tar::EntryType::Symlink);
            l.set_size(0);
            b.append_link(&mut l, "tf/tensorfold-native", "real-engine")
                .expect("link");
            b.into_inner().expect("tar");
        }
        let r = hash_members(&pkg, Kind::Tar, "real-engine", &Progress::none());
        assert_eq!(
            r.members[0].1.as_deref().ok(),
            Some(hex(&Sha256::digest(&body)).as_str())
        );
        let r = hash_members(&pkg, Kind::Tar, "tensorfold-native", &Progress::none());
        let err = r.members[0].1.as_ref().expect_err("a link is no file");
        assert!(err.contains("link to real-engine"), "{err}");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tmp");
        let pkg = dir.path().join("p.tar.gz");
        std::fs::write(&pkg, b"this is not gzip at all").expect("write");
        let r = hash_members(&pkg, Kind::TarGz, "x", &Progress::none());
        assert!(r.error.is_some());
        assert!(r.members.is_empty());
        let z = dir.path().join("p.zip");
        std::fs::write(&z, b"PK garbage").expect("write");
        let r = hash_members(&z, Kind::Zip, "x", &Progress::none());
        assert!(r.error.as_deref().unwrap_or("").contains("zip"));
    }
}
