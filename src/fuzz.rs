//! Fuzz-style tests: seeded random mutations of valid inputs fed to the parsers that read input
//! from someone else (manifest and records, the answers stream, the start-line parser, the SSE
//! line reader, the tar member readers). Each target runs for a bounded time
//! (`RIGAUDIT_FUZZ_SECS`, default 2 s) and fails on a panic or on one input that takes more than
//! a second. The seed is printed, and `RIGAUDIT_FUZZ_SEED` replays one. Seeds of the corpus are the
//! committed fixtures; anything found is kept in `tests/fuzz/`.

use std::path::Path;
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const INTERESTING: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\n",
    b"\x1b[2J",
    b"..",
    b"/",
    b"-1",
    b"1e999",
    b"null",
    b"\xff\xfe",
    b"\0",
    b"\"../../x\"",
    b"data: ",
    b"data: [DONE]",
    b"=",
    b" ",
];

/// One mutation of `input`.
fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let n = v.len();
        match rng.below(7) {
            0 if n > 0 => {
                let i = rng.below(n);
                v[i] ^= 1 << rng.below(8);
            }
            1 if n > 0 => v.truncate(rng.below(n)),
            2 => {
                let i = rng.below(n + 1);
                let s = INTERESTING[rng.below(INTERESTING.len())];
                v.splice(i..i, s.iter().copied());
            }
            3 if n > 0 => {
                let a = rng.below(n);
                let b = (a + rng.below(64)).min(n);
                v.drain(a..b);
            }
            4 if n > 0 => {
                // Repeat a slice (deep nesting, long lines).
                let a = rng.below(n);
                let b = (a + 1 + rng.below(16)).min(n);
                let piece = v[a..b].to_vec();
                let times = 1 + rng.below(2000);
                let at = rng.below(n + 1);
                let rep: Vec<u8> = piece
                    .iter()
                    .copied()
                    .cycle()
                    .take(piece.len() * times)
                    .collect();
                v.splice(at..at, rep);
            }
            5 if n > 0 => {
                let i = rng.below(n);
                v[i] = rng.next() as u8;
            }
            _ => {
                let i = rng.below(n + 1);
                let b = rng.next() as u8;
                v.insert(i, b);
            }
        }
    }
    v
}

fn secs() -> Duration {
    Duration::from_secs_f64(
        std::env::var("RIGAUDIT_FUZZ_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.0),
    )
}

/// Runs `target` on mutations of the seeds for the time budget; returns the number of inputs.
fn run(name: &str, seeds: &[Vec<u8>], mut target: impl FnMut(&[u8])) -> u64 {
    let seed = std::env::var("RIGAUDIT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0000_u64 ^ name.len() as u64 ^ (name.as_bytes()[0] as u64) << 8);
    let mut rng = Rng(seed | 1);
    let budget = secs();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget {
        let base = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, base);
        let t = Instant::now();
        target(&input);
        let took = t.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "{name}: one input took {took:?} (seed {seed}, input {n}, {} bytes)",
            input.len()
        );
        n += 1;
    }
    eprintln!(
        "fuzz {name}: {n} inputs in {:?} (seed {seed})",
        start.elapsed()
    );
    n
}

fn fixture_files(dir: &str) -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(&root).unwrap().to_string_lossy().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn fuzz_manifest_and_records() {
    let files = fixture_files("fixtures/runs/smollm2-cpu");
    let tmp = tempfile::tempdir().unwrap();
    for (rel, b) in &files {
        let p = tmp.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b).unwrap();
    }
    let jsons: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].0.ends_with(".json"))
        .collect();
    let seeds: Vec<Vec<u8>> = jsons.iter().map(|&i| files[i].1.clone()).collect();
    let mut k = 0usize;
    run("manifest+records", &seeds, |input| {
        // Write the mutation over one JSON file in turn, load the bundle, restore the file.
        let i = jsons[k % jsons.len()];
        k += 1;
        let p = tmp.path().join(&files[i].0);
        std::fs::write(&p, input).unwrap();
        if let Ok(o) = crate::bundle::open(tmp.path()) {
            let r = crate::bundle::load(&o);
            let _ = rigaudit_audit::verify(&r);
        }
        std::fs::write(&p, &files[i].1).unwrap();
    });
}

#[test]
fn fuzz_answers_stream() {
    let files = fixture_files("fixtures/runs/smollm2-cpu/quality");
    let seeds: Vec<Vec<u8>> = files
        .into_iter()
        .filter(|(p, _)| p.ends_with(".jsonl"))
        .map(|(_, b)| b)
        .collect();
    let v = crate::schemas::validator(rigaudit_audit::records::FileKind::QualityAnswers).unwrap();
    run("answers", &seeds, |input| {
        let _ = crate::answers::tally(std::io::Cursor::new(input), v);
    });
}

#[test]
fn fuzz_start_line_parser() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/runs/smollm2-cpu/speed/speed-result.json"),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut seeds: Vec<Vec<u8>> = v["server"]["start_lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().as_bytes().to_vec())
        .collect();
    seeds.push(b"tensorfold-native 1.2.7 NCCL version 2.30.7+cuda13.0 window=4096".to_vec());
    run("startline", &seeds, |input| {
        let s = String::from_utf8_lossy(input);
        let lines: Vec<String> = s.lines().map(String::from).collect();
        let _ = rigaudit_audit::startline::parse(&lines);
    });
}

#[test]
fn fuzz_sse_lines() {
    let seed = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n".to_vec();
    run("sse", &[seed], |input| {
        let _ = crate::measure::sse::parse(input);
    });
}

#[test]
fn fuzz_tar_readers() {
    let mut tar_bytes = Vec::new();
    {
        let mut b = tar::Builder::new(&mut tar_bytes);
        for (name, body) in [
            ("b/bundle.json", &b"{}"[..]),
            ("b/tf/tensorfold-native", &b"engine"[..]),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, body).unwrap();
        }
        b.finish().unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("p.tar");
    run("tar", &[tar_bytes], |input| {
        std::fs::write(&pkg, input).unwrap();
        let _ = crate::rehash::archive::hash_members(
            &pkg,
            crate::rehash::archive::Kind::Tar,
            "tensorfold-native",
            &crate::rehash::hash::Progress::none(),
        );
        let _ = crate::bundle::open(&pkg);
    });
}
