//! The baseline `benches/rehash.sh` measures rigaudit against: a plain loop over the sha2 crate,
//! read(2) into a 1 MiB buffer and hash it, one file after another on each of N threads; and the
//! same hash over a buffer already in memory (no reading at all), the ceiling of one core.
//!
//! `cargo bench --bench rehash_baseline -- [--threads N] [--mem] FILE...` prints one line:
//! `bytes=B seconds=S gbps=G`.

use sha2::{Digest, Sha256};
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

fn hash_file(path: &str) -> u64 {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n_total = 0u64;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(2);
            }
        };
        h.update(&buf[..n]);
        n_total += n as u64;
    }
    std::hint::black_box(h.finalize());
    n_total
}

fn main() {
    let mut threads = 1usize;
    let mut mem = false;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = args.next().and_then(|t| t.parse().ok()).unwrap_or(1),
            "--mem" => mem = true,
            "--bench" => {}
            _ => files.push(a),
        }
    }
    if mem {
        // 1 GiB per thread, hashed from memory: the compute ceiling.
        let buf = vec![0x5au8; 1 << 30];
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| std::hint::black_box(Sha256::digest(&buf)));
            }
        });
        let secs = t.elapsed().as_secs_f64();
        let bytes = (threads as u64) << 30;
        println!(
            "bytes={bytes} seconds={secs:.4} gbps={:.4}",
            bytes as f64 / secs / 1e9
        );
        return;
    }
    let next = AtomicUsize::new(0);
    let total = AtomicUsize::new(0);
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                total.fetch_add(hash_file(f) as usize, Ordering::Relaxed);
            });
        }
    });
    let secs = t.elapsed().as_secs_f64();
    let bytes = total.load(Ordering::Relaxed) as u64;
    println!(
        "bytes={bytes} seconds={secs:.4} gbps={:.4}",
        bytes as f64 / secs / 1e9
    );
}
