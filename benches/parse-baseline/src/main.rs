//! `parse-baseline ignored|simd FILE`: reads FILE in 1 MiB blocks on one thread and parses each
//! line as JSON, keeping nothing (`serde::de::IgnoredAny` with serde_json, or simd-json, through its tape);
//! prints the lines parsed and those that did not parse. The floor a verifier of the same file
//! is held to: it reads and parses every line too, and checks them.

use std::io::Read;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kind), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: parse-baseline ignored|simd FILE");
        std::process::exit(2);
    };
    let simd = match kind.as_str() {
        "ignored" => false,
        "simd" => true,
        _ => {
            eprintln!("parse-baseline: the parser is ignored or simd, not {kind}");
            std::process::exit(2);
        }
    };
    let mut f = std::fs::File::open(path).unwrap_or_else(|e| {
        eprintln!("parse-baseline: {path}: {e}");
        std::process::exit(2)
    });
    let (mut lines, mut bad) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    let mut scratch = simd_json::Buffers::default();
    let mut parse = |line: &mut [u8]| {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        lines += 1;
        let ok = if simd {
            simd_json::serde::from_slice_with_buffers::<serde::de::IgnoredAny>(line, &mut scratch).is_ok()
        } else {
            serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
        };
        bad += u64::from(!ok);
    };
    loop {
        let n = f.read(&mut buf).unwrap_or_else(|e| {
            eprintln!("parse-baseline: {path}: {e}");
            std::process::exit(2)
        });
        if n == 0 {
            break;
        }
        let mut block = &mut buf[..n];
        if !carry.is_empty() {
            match block.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    carry.extend_from_slice(&block[..i]);
                    parse(&mut carry);
                    carry.clear();
                    block = &mut block[i + 1..];
                }
                None => {
                    carry.extend_from_slice(block);
                    continue;
                }
            }
        }
        let whole = block.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let (complete, rest) = block.split_at_mut(whole);
        for line in complete.split_mut(|&b| b == b'\n') {
            parse(line);
        }
        carry.extend_from_slice(rest);
    }
    if !carry.is_empty() {
        parse(&mut carry);
    }
    println!("{lines} {bad}");
}
