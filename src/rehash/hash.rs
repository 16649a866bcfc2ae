//! Streaming sha256: large buffers, a reader thread that keeps the next buffer filled while the
//! current one is hashed, and a pool of workers that takes the largest files first.
//!
//! sha2 0.10 picks the SHA extensions (SHA-NI) at run time when the CPU has them.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sha2::{Digest, Sha256};
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;

/// Size of one read.
pub const CHUNK: usize = 1 << 20;
/// Buffers in flight between the reader thread and the hasher.
const BUFFERS: usize = 4;
/// Files smaller than this are read and hashed on one thread.
const PIPELINE_MIN: u64 = 8 << 20;

pub use crate::digest::hex;

/// Counts bytes for the progress bar without touching it on every read.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A progress bar over `total` bytes on stderr, or none (`quiet`, or stderr is not a terminal).
    pub fn new(total: u64, quiet: bool) -> Self {
        use std::io::IsTerminal;
        if quiet || !io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} hashing [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} {eta} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        Progress { bar: Some(bar) }
    }

    /// No bar at all.
    pub fn none() -> Self {
        Progress { bar: None }
    }

    /// Adds bytes done.
    pub fn add(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// sha256 of everything a reader yields, read in [`CHUNK`]s. Returns the hex digest and the length.
pub fn hash_reader(r: &mut dyn Read, progress: &Progress) -> io::Result<(String, u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        total += n as u64;
        progress.add(n as u64);
    }
    Ok((hex(&h.finalize()), total))
}

/// Fills `buf` as far as the reader goes; returns how much it filled (less only at the end).
fn fill(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A buffer the reader filled, with how much of it holds data.
type Filled = io::Result<(Vec<u8>, usize)>;

/// Files being hashed right now by [`parallel`]'s workers.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// sha256 of a file. When a core is idle (fewer files in flight than cores), a large file is read
/// by a second thread while this one hashes, so reading costs no hashing time; when every core
/// already hashes a file of its own, an extra reader thread would only take turns with them.
/// A file hashed earlier in the run is not read again ([`crate::digest::once_per_file`]); its
/// bytes still count as done for the progress bar.
pub fn hash_file(path: &Path, progress: &Progress) -> io::Result<(String, u64)> {
    let f = crate::input::open_regular(path, "file")
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.0))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut read = None;
    let digest = crate::digest::once_per_file(&f, |f| {
        let (digest, n) = hash_open(f, len, progress)?;
        read = Some(n);
        Ok(digest)
    })?;
    if read.is_none() {
        progress.add(len);
    }
    Ok((digest, read.unwrap_or(len)))
}

/// sha256 of an open file of `len` bytes: see [`hash_file`].
fn hash_open(mut f: &std::fs::File, len: u64, progress: &Progress) -> io::Result<(String, u64)> {
    if len < PIPELINE_MIN || ACTIVE.load(Ordering::Relaxed) >= crate::host::cores() {
        return hash_reader(&mut f, progress);
    }
    let (full_tx, full_rx): (SyncSender<Filled>, Receiver<Filled>) = sync_channel(BUFFERS);
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(BUFFERS);
    for _ in 0..BUFFERS {
        // Cannot fail: the channel has room for every buffer and the receiver is alive.
        let _ = empty_tx.send(vec![0u8; CHUNK]);
    }
    std::thread::scope(|s| {
        s.spawn(move || {
            while let Ok(mut buf) = empty_rx.recv() {
                let r = fill(&mut f, &mut buf);
                let last = !matches!(r, Ok(n) if n == buf.len());
                if full_tx.send(r.map(|n| (buf, n))).is_err() || last {
                    break;
                }
            }
        });
        let mut h = Sha256::new();
        let mut total = 0u64;
        loop {
            let (buf, n) = match full_rx.recv() {
                Ok(Ok(x)) => x,
                Ok(Err(e)) => return Err(e),
                Err(_) => break,
            };
            h.update(&buf[..n]);
            total += n as u64;
            progress.add(n as u64);
            if n < buf.len() {
                break;
            }
            // The reader may have stopped already; then the buffer is simply dropped.
            let _ = empty_tx.send(buf);
        }
        drop(empty_tx);
        Ok((hex(&h.finalize()), total))
    })
}

/// Runs `work` over `items` on `jobs` threads, the items in the order given (put the largest
/// first), and returns the results in the items' order.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let jobs = jobs.clamp(1, items.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                ACTIVE.fetch_add(1, Ordering::Relaxed);
                let r = work(item);
                ACTIVE.fetch_sub(1, Ordering::Relaxed);
                if let Ok(mut v) = results.lock() {
                    v[i] = Some(r);
                }
            });
        }
    });
    // A worker that panicked leaves a poisoned lock; its item then has no result.
    let v = results.into_inner().unwrap_or_else(|p| p.into_inner());
    v.into_iter()
        .map(|r| r.expect("every item was processed by a worker"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        let p = Progress::none();
        let (d, n) = hash_reader(&mut &b"abc"[..], &p).expect("hash");
        assert_eq!(
            d,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(n, 3);
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("big");
        // Larger than the pipeline threshold and not a multiple of the chunk.
        let data: Vec<u8> = (0..(9u32 << 20) + 12345).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let (d, n) = hash_file(&path, &p).expect("hash");
        assert_eq!(n, data.len() as u64);
        assert_eq!(d, hex(&Sha256::digest(&data)));
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").expect("write");
        assert_eq!(
            hash_file(&empty, &p).expect("hash").0,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn parallel_keeps_order() {
        let v: Vec<u32> = (0..100).collect();
        let r = parallel(&v, 3, |x| x * 2);
        assert_eq!(r, (0..100).map(|x| x * 2).collect::<Vec<_>>());
    }
}
