//! Hashes members of a release package (.tar.gz, .tgz, .tar, .zip) as a stream: nothing is
//! extracted to disk. For a tar package the package's own digest is computed in the same pass.

use super::hash::{hash_file, hash_reader, hex, Progress, CHUNK};
use sha2::{Digest, Sha256};
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
pub struct PackageRead {
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

impl<R> Tee<R> {
    fn new(inner: R) -> Self {
        Tee {
            inner,
            hash: Sha256::new(),
            progress_bytes: 0,
        }
    }
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.progress_bytes += n as u64;
        Ok(n)
    }
}

/// Counts the bytes an archive inflates to and stops past its bound: a total, and a ratio to the
/// package's size (an archive bomb fails here instead of inflating for hours).
struct Budget<R> {
    inner: R,
    used: u64,
    allowed: u64,
    packed: u64,
}

impl<R> Budget<R> {
    fn new(inner: R, packed: u64) -> Self {
        Budget {
            inner,
            used: 0,
            allowed: allowed_inflation(packed),
            packed,
        }
    }
}

/// What a package of `packed` bytes may inflate to.
pub fn allowed_inflation(packed: u64) -> u64 {
    crate::input::PACKAGE_MAX_INFLATED
        .min(crate::input::RATIO_GRACE.max(packed.saturating_mul(crate::input::PACKAGE_MAX_RATIO)))
}

fn bomb(allowed: u64, packed: u64) -> io::Error {
    io::Error::other(format!(
        "the package inflates to more than {} ({} packed; the bounds are {} in all and {} times the packed size); refused as an archive bomb (see docs/security.md)",
        crate::input::size(allowed),
        crate::input::size(packed),
        crate::input::size(crate::input::PACKAGE_MAX_INFLATED),
        crate::input::PACKAGE_MAX_RATIO
    ))
}

impl<R: Read> Read for Budget<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.used > self.allowed {
            return Err(bomb(self.allowed, self.packed));
        }
        let n = self.inner.read(buf)?;
        self.used += n as u64;
        if self.used > self.allowed {
            return Err(bomb(self.allowed, self.packed));
        }
        Ok(n)
    }
}

/// Reads the package once: hashes the wanted member(s) and, for tar packages, the whole file.
pub fn hash_members(path: &Path, kind: Kind, wanted: &str, progress: &Progress) -> PackageRead {
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

/// Reads a package that arrives as a stream of `packed` bytes (`cat` on a box): a tar package
/// through the same reader and bounds as a local file; a zip package, whose directory is at its
/// end, into memory first (at most [`ZIP_STREAM_MAX`]), then through the same reader. A tar
/// package's wanted members and the whole stream are hashed in one pass.
pub fn hash_members_from(
    stream: impl Read,
    packed: u64,
    kind: Kind,
    wanted: &str,
    progress: &Progress,
) -> PackageRead {
    if let Kind::Zip = kind {
        return zip_stream(stream, packed, wanted, progress);
    }
    let mut tee = Tee::new(stream);
    let mut out = {
        let reader: Box<dyn Read + '_> = match kind {
            Kind::TarGz => Box::new(crate::bundle::TarGuard::new(Budget::new(
                flate2::read::GzDecoder::new(&mut tee),
                packed,
            ))),
            _ => Box::new(crate::bundle::TarGuard::new(&mut tee)),
        };
        tar_entries(reader, wanted)
    };
    // Read what the archive reader left (padding, the gzip trailer) so the digest covers the file.
    let rest = io::copy(&mut tee, &mut io::sink());
    progress.add(tee.progress_bytes);
    out.whole = Some(rest.map(|_| hex(&tee.hash.finalize())));
    out
}

/// The largest zip package read from a stream (it is held in memory).
pub const ZIP_STREAM_MAX: u64 = 2 << 30;

fn zip_stream(stream: impl Read, packed: u64, wanted: &str, progress: &Progress) -> PackageRead {
    let mut tee = Tee::new(stream.take(ZIP_STREAM_MAX + 1));
    let mut bytes = Vec::with_capacity(packed.min(ZIP_STREAM_MAX) as usize);
    let read = tee.read_to_end(&mut bytes);
    progress.add(tee.progress_bytes);
    let mut out = PackageRead::default();
    if let Err(e) = read {
        out.whole = Some(Err(e));
        return out;
    }
    if bytes.len() as u64 > ZIP_STREAM_MAX {
        out.whole = Some(Err(io::Error::other(format!(
            "a zip package read from a stream is held in memory: more than {} refused",
            crate::input::size(ZIP_STREAM_MAX)
        ))));
        return out;
    }
    let packed = bytes.len() as u64;
    let mut out = zip_read(io::Cursor::new(bytes), packed, wanted);
    out.whole = Some(Ok(hex(&tee.hash.finalize())));
    out
}

fn tar_members(path: &Path, kind: Kind, wanted: &str, progress: &Progress) -> PackageRead {
    let f = match crate::input::open_regular(path, "package") {
        Ok(f) => f,
        Err(e) => {
            return PackageRead {
                whole: Some(Err(io::Error::new(io::ErrorKind::InvalidInput, e.0))),
                ..PackageRead::default()
            }
        }
    };
    let packed = f.metadata().map(|m| m.len()).unwrap_or(0);
    hash_members_from(
        BufReader::with_capacity(CHUNK, f),
        packed,
        kind,
        wanted,
        progress,
    )
}

/// The digests of a tar archive's wanted members, read from `reader`; a broken archive or a
/// member with a bad or unsafe name stops the reading with its error.
fn tar_entries(reader: impl Read, wanted: &str) -> PackageRead {
    let mut out = PackageRead::default();
    let mut ar = tar::Archive::new(reader);
    let entries = match ar.entries() {
        Ok(entries) => entries,
        Err(e) => {
            out.error = Some(format!("not a readable tar archive: {e}"));
            return out;
        }
    };
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
        if let Err(m) = crate::bundle::member_name_ok(&name) {
            out.error = Some(format!("entry {m}; refused"));
            break;
        }
        if !member_matches(&name, wanted) {
            continue;
        }
        out.members.push((name, entry_digest(&mut entry)));
    }
    out
}

/// The sha256 of a tar member that is a regular file, or why it is not one.
fn entry_digest(entry: &mut tar::Entry<impl Read>) -> Result<String, String> {
    let kind = entry.header().entry_type();
    if kind.is_file() {
        hash_reader(entry, &Progress::none())
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
    }
}

fn zip_members(path: &Path, wanted: &str) -> PackageRead {
    let f = match crate::input::open_regular(path, "package") {
        Ok(f) => f,
        Err(e) => {
            return PackageRead {
                error: Some(e.0),
                ..PackageRead::default()
            }
        }
    };
    let packed = f.metadata().map(|m| m.len()).unwrap_or(0);
    zip_read(BufReader::with_capacity(CHUNK, f), packed, wanted)
}

/// The wanted members of a zip package of `packed` bytes, within the inflation bound.
fn zip_read(source: impl Read + io::Seek, packed: u64, wanted: &str) -> PackageRead {
    let mut out = PackageRead::default();
    let mut z = match zip::ZipArchive::new(source) {
        Ok(z) => z,
        Err(e) => {
            out.error = Some(format!("not a readable zip archive: {e}"));
            return out;
        }
    };
    // Entries whose data overlap (many names for the same compressed bytes) are how a small zip
    // inflates to terabytes: refused before anything is inflated.
    let mut spans: Vec<(u64, u64)> = (0..z.len())
        .filter_map(|i| {
            z.by_index_raw(i)
                .ok()
                .map(|m| (m.header_start(), m.compressed_size()))
        })
        .collect();
    spans.sort_unstable();
    if spans
        .windows(2)
        .any(|w| w[0].0 == w[1].0 || w[0].0.saturating_add(w[0].1) > w[1].0)
    {
        out.error = Some(
            "entries of the zip overlap (several names for the same compressed data); refused as an archive bomb (see docs/security.md)".to_string(),
        );
        return out;
    }
    let mut budget_left = allowed_inflation(packed);
    let names: Vec<String> = z
        .file_names()
        .filter(|n| member_matches(n, wanted))
        .map(String::from)
        .collect();
    for name in names {
        if let Err(m) = crate::bundle::member_name_ok(&name) {
            out.error = Some(format!("entry {m}; refused"));
            break;
        }
        let r = match z.by_name(&name) {
            Ok(m) if m.is_file() => {
                let mut b = Budget {
                    inner: m,
                    used: 0,
                    allowed: budget_left,
                    packed,
                };
                let r = hash_reader(&mut b, &Progress::none())
                    .map(|(d, _)| d)
                    .map_err(|e| e.to_string());
                budget_left = budget_left.saturating_sub(b.used);
                r
            }
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
    use std::fs::File;
    use std::path::PathBuf;

    /// A temporary folder and the path of `name` in it.
    fn temp_file(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join(name);
        (dir, path)
    }

    /// Writes a gzipped tar at `pkg` with one executable member (name, size) read from `body`.
    fn write_tar_gz(pkg: &Path, level: flate2::Compression, member: (&str, u64), body: impl Read) {
        let gz = flate2::write::GzEncoder::new(File::create(pkg).expect("create"), level);
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(member.1);
        h.set_mode(0o755);
        h.set_cksum();
        b.append_data(&mut h, member.0, body).expect("append");
        b.into_inner().expect("tar").finish().expect("gz");
    }

    /// The error hashing the first member gave.
    fn member_error(r: &PackageRead) -> &str {
        r.members[0].1.as_ref().expect_err("an error")
    }

    /// [`hash_members_from`] of `pkg` read as a stream, for `tensorfold-native`.
    fn hash_stream(pkg: &Path, kind: Kind) -> PackageRead {
        let packed = std::fs::metadata(pkg).expect("meta").len();
        let stream = File::open(pkg).expect("open");
        hash_members_from(stream, packed, kind, "tensorfold-native", &Progress::none())
    }

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
        let (_dir, pkg) = temp_file("p.tar.gz");
        let body = b"#!/bin/sh\necho engine\n".repeat(1000);
        let member = ("tf-1.2.7/tensorfold-native", body.len() as u64);
        write_tar_gz(&pkg, flate2::Compression::fast(), member, &body[..]);
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
        let (_dir, pkg) = temp_file("p.tar");
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
        let err = member_error(&r);
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

    /// A zip whose many entries all point at the same compressed data (the way a 330 KB zip
    /// inflates to 256 GB) is refused before anything is inflated.
    #[test]
    fn overlapping_zip_is_refused() {
        use std::io::Write;
        let data = vec![0u8; 16 << 20];
        let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&data).unwrap();
        let packed = enc.finish().unwrap();
        let mut crc = flate2::Crc::new();
        crc.update(&data);
        let crc = crc.sum();
        let mut z: Vec<u8> = Vec::new();
        let first = "d0/tensorfold-native";
        let le16 = |v: &mut Vec<u8>, x: u16| v.extend_from_slice(&x.to_le_bytes());
        let le32 = |v: &mut Vec<u8>, x: u32| v.extend_from_slice(&x.to_le_bytes());
        le32(&mut z, 0x0403_4b50);
        for x in [20u16, 0, 8, 0, 0] {
            le16(&mut z, x);
        }
        le32(&mut z, crc);
        le32(&mut z, packed.len() as u32);
        le32(&mut z, data.len() as u32);
        le16(&mut z, first.len() as u16);
        le16(&mut z, 0);
        z.extend_from_slice(first.as_bytes());
        z.extend_from_slice(&packed);
        let cd_start = z.len() as u32;
        let n = 1000u16;
        for i in 0..n {
            let name = format!("d{i}/tensorfold-native");
            le32(&mut z, 0x0201_4b50);
            for x in [20u16, 20, 0, 8, 0, 0] {
                le16(&mut z, x);
            }
            le32(&mut z, crc);
            le32(&mut z, packed.len() as u32);
            le32(&mut z, data.len() as u32);
            le16(&mut z, name.len() as u16);
            for x in [0u16, 0, 0, 0] {
                le16(&mut z, x);
            }
            le32(&mut z, 0);
            le32(&mut z, 0);
            z.extend_from_slice(name.as_bytes());
        }
        let cd_size = z.len() as u32 - cd_start;
        le32(&mut z, 0x0605_4b50);
        for x in [0u16, 0, n, n] {
            le16(&mut z, x);
        }
        le32(&mut z, cd_size);
        le32(&mut z, cd_start);
        le16(&mut z, 0);
        let (_dir, pkg) = temp_file("bomb.zip");
        std::fs::write(&pkg, &z).expect("write");
        let t = std::time::Instant::now();
        let r = hash_members(&pkg, Kind::Zip, "tensorfold-native", &Progress::none());
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        let e = r.error.expect("refused");
        assert!(e.contains("overlap"), "{e}");
        assert!(r.members.is_empty());
    }

    /// A gzip package that inflates far past its size stops at the bound.
    #[test]
    fn gzip_package_bomb_is_bounded() {
        let (_dir, pkg) = temp_file("p.tar.gz");
        let size: u64 = 512 << 20;
        let member = ("tf/tensorfold-native", size);
        write_tar_gz(
            &pkg,
            flate2::Compression::best(),
            member,
            io::repeat(0).take(size),
        );
        let packed = std::fs::metadata(&pkg).expect("meta").len();
        assert!(allowed_inflation(packed) < size, "{packed}");
        let r = hash_members(&pkg, Kind::TarGz, "tensorfold-native", &Progress::none());
        assert!(member_error(&r).contains("archive bomb"), "{r:?}");
        // The same package arriving as a stream (from a box) has the same bound.
        let r = hash_stream(&pkg, Kind::TarGz);
        assert!(member_error(&r).contains("archive bomb"), "{r:?}");
    }

    /// A zip package read from a stream gives what reading the file gives.
    #[test]
    fn zip_from_a_stream_reads_as_the_file() {
        use std::io::Write;
        let (_dir, pkg) = temp_file("w.zip");
        {
            let mut z = zip::ZipWriter::new(File::create(&pkg).expect("create"));
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            z.start_file("w/tensorfold-native", opts).expect("start");
            z.write_all(&b"engine".repeat(999)).expect("write");
            z.finish().expect("finish");
        }
        let from_file = hash_members(&pkg, Kind::Zip, "tensorfold-native", &Progress::none());
        let from_stream = hash_stream(&pkg, Kind::Zip);
        assert_eq!(from_stream.members, from_file.members);
        assert_eq!(
            from_stream.whole.expect("whole").expect("ok"),
            from_file.whole.expect("whole").expect("ok")
        );
        assert!(from_stream.error.is_none());
    }
}
