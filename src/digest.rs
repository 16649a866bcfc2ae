//! The one sha256 plumbing of the CLI: hex of a digest, a file's sha256 streamed, and the digest
//! cache that hashes one file once in a run. The bundle reader, the checkpoint fetch, rehash and
//! the inventory of what ran use it (rehash's parallel reader in `rehash/hash.rs` builds on
//! [`hex`] and [`once_per_file`]).
//!
//! **The cache.** A tree of runs may cite one file many times (runs copied as hard links, one
//! checkpoint on two roots, the NCCL library rehash hashes and the inventory finds mapped), and a
//! checkpoint is hundreds of gigabytes. A digest is kept for the length of one process, keyed by
//! what names the file's content without reading it: device, inode, size, and the modification
//! and change times to the nanosecond. Writing to a file changes its change time, which no user
//! can set back, so a file rewritten between two reads is hashed again; one that changed while
//! it was read is not kept, nor one changed in the second before its reading began (the kernel
//! stamps times from a clock that ticks every few milliseconds: two writes within one tick would
//! leave the same times, the "racy" case git's index knows). Two threads asking for one file at
//! once wait for one reading. Nothing is kept across runs: an audit states the digests of what is
//! there when it runs.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[(b >> 4) as usize] as char);
        s.push(D[(b & 15) as usize] as char);
    }
    s
}

/// sha256 of a file, streamed, once a run (see the module's doc); a path that is not a regular
/// file (a FIFO, a device) is refused rather than read without end.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let f = crate::input::open_regular(path, "file")
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.0))?;
    once_per_file(&f, |mut f| {
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        Ok(hex(&h.finalize()))
    })
}

/// A whole file of at most `limit` bytes read once (as [`crate::input::read_bounded`]), with its
/// sha256 made from the same bytes and kept in the cache: a later digest of the file in this run
/// (rehash hashing a bundle's files) is taken without reading it again.
pub fn read_whole(
    path: &Path,
    limit: u64,
    what: &str,
) -> Result<(Vec<u8>, String), crate::fatal::Fatal> {
    let f = crate::input::open_regular(path, what)?;
    let place = crate::input::shown_path(path);
    let mut read = None;
    let made = once_per_file(&f, |mut file| {
        let bytes = crate::input::read_all_bounded(&mut file, limit, what, &place)
            .map_err(|e| std::io::Error::other(e.0))?;
        let digest = hex(&Sha256::digest(&bytes));
        read = Some(bytes);
        Ok(digest)
    });
    let digest = made.map_err(|e| crate::fatal::fatal(e.to_string()))?;
    let bytes = match read {
        Some(bytes) => bytes,
        // The digest came from the cache: the bytes are read here, once.
        None => {
            crate::input::count_read(&f);
            crate::input::read_all_bounded(&f, limit, what, &place)?
        }
    };
    Ok((bytes, digest))
}

/// What names a file's content without reading it, for the length of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

/// How long before a reading began a file must have last changed for its digest to be kept.
const SETTLED_SECS: i64 = 1;

impl FileId {
    /// Whether the file last changed a while before `began` (seconds since the epoch): see
    /// the module's doc.
    fn settled(&self, began: i64) -> bool {
        self.modified.0 < began - SETTLED_SECS && self.changed.0 < began - SETTLED_SECS
    }

    fn of(file: &File) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata().ok()?;
        Some(FileId {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: (m.mtime(), m.mtime_nsec()),
            changed: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// A digest being made or made: `None` when its reading failed or the file changed meanwhile.
type Cell = Arc<OnceLock<Option<String>>>;

fn cells() -> &'static Mutex<HashMap<FileId, Cell>> {
    static CELLS: OnceLock<Mutex<HashMap<FileId, Cell>>> = OnceLock::new();
    CELLS.get_or_init(Default::default)
}

/// Files read and hashed, and digests served from the cache, in this process.
static HASHED: AtomicU64 = AtomicU64::new(0);
static SERVED: AtomicU64 = AtomicU64::new(0);

/// How many files this process hashed and how many digests the cache served instead.
pub fn cache_counts() -> (u64, u64) {
    (
        HASHED.load(Ordering::Relaxed),
        SERVED.load(Ordering::Relaxed),
    )
}

/// The digest of an open file: the one made earlier in this run for the same content (see the
/// module's doc), or `hash(file)`'s, kept when the file did not change while it was read.
pub fn once_per_file(
    file: &File,
    hash: impl FnOnce(&File) -> std::io::Result<String>,
) -> std::io::Result<String> {
    let Some(id) = FileId::of(file) else {
        crate::input::count_read(file);
        return hash(file);
    };
    let cell = {
        let mut map = cells().lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id).or_default().clone()
    };
    let began = chrono::Utc::now().timestamp();
    let mut hash = Some(hash);
    let mut own: Option<std::io::Result<String>> = None;
    let kept = cell.get_or_init(|| {
        let h = hash.take()?;
        crate::input::count_read(file);
        let made = h(file);
        HASHED.fetch_add(1, Ordering::Relaxed);
        let kept = match &made {
            Ok(d) if id.settled(began) && FileId::of(file) == Some(id) => Some(d.clone()),
            _ => None,
        };
        own = Some(made);
        kept
    });
    match (own, kept) {
        (Some(made), kept) => {
            if kept.is_none() {
                forget(id, &cell);
            }
            made
        }
        (None, Some(d)) => {
            SERVED.fetch_add(1, Ordering::Relaxed);
            Ok(d.clone())
        }
        // Another thread's reading failed or saw the file change: read it here.
        (None, None) => match hash.take() {
            Some(h) => {
                crate::input::count_read(file);
                h(file)
            }
            None => Err(std::io::Error::other("the file could not be hashed")),
        },
    }
}

/// Drops a cell that holds no digest, so that a later call reads the file again.
fn forget(id: FileId, cell: &Cell) {
    let mut map = cells().lock().unwrap_or_else(|p| p.into_inner());
    if map.get(&id).is_some_and(|c| Arc::ptr_eq(c, cell)) {
        map.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Waits until files written now count as settled.
    fn settle() {
        std::thread::sleep(std::time::Duration::from_millis(2100));
    }

    fn counts_after(f: impl FnOnce()) -> (u64, u64) {
        let (h0, s0) = cache_counts();
        f();
        let (h1, s1) = cache_counts();
        (h1 - h0, s1 - s0)
    }

    #[test]
    fn a_hard_link_is_hashed_once_and_a_rewritten_file_again() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.bin"), dir.path().join("b.bin"));
        std::fs::write(&a, b"abc").unwrap();
        std::fs::hard_link(&a, &b).unwrap();
        settle();
        let want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let (da, db) = (sha256_file(&a).unwrap(), sha256_file(&b).unwrap());
        assert_eq!((da.as_str(), db.as_str()), (want, want));
        let (_, served) = counts_after(|| assert_eq!(sha256_file(&b).unwrap(), want));
        assert!(served >= 1);
        // Appending changes size and change time: the new content is read.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&a)
            .unwrap()
            .write_all(b"d")
            .unwrap();
        assert_eq!(sha256_file(&b).unwrap(), hex(&Sha256::digest(b"abcd")));
        // Same size, the modification time set back: the change time still tells.
        let modified = std::fs::metadata(&a).unwrap().modified().unwrap();
        settle();
        assert_eq!(sha256_file(&b).unwrap(), hex(&Sha256::digest(b"abcd")));
        std::fs::write(&a, b"abce").unwrap();
        File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(sha256_file(&b).unwrap(), hex(&Sha256::digest(b"abce")));
    }

    #[test]
    fn one_file_asked_for_by_many_threads_is_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.bin");
        std::fs::write(&p, vec![7u8; 4 << 20]).unwrap();
        let links: Vec<_> = (0..6)
            .map(|i| {
                let l = dir.path().join(format!("l{i}"));
                std::fs::hard_link(&p, &l).unwrap();
                l
            })
            .collect();
        settle();
        let mut digests = Vec::new();
        let (hashed, served) = counts_after(|| {
            digests = std::thread::scope(|s| {
                let hs: Vec<_> = links
                    .iter()
                    .map(|l| s.spawn(|| sha256_file(l).unwrap()))
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            });
        });
        assert!(digests.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(digests[0], hex(&Sha256::digest(vec![7u8; 4 << 20])));
        // Other tests of this binary hash files meanwhile: at least five of these six were served.
        assert!(served >= 5, "hashed {hashed}, served {served}");
    }

    #[test]
    fn a_failed_reading_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        std::fs::write(&p, b"x").unwrap();
        let f = File::open(&p).unwrap();
        let e = once_per_file(&f, |_| Err(std::io::Error::other("boom")));
        assert!(e.is_err());
        let d = sha256_file(&p).unwrap();
        assert_eq!(d, hex(&Sha256::digest(b"x")));
    }
}
