//! The measuring client's overhead: `rigaudit measure` against a loopback server (the tests' fake,
//! `tests/it/common/fake_server.rs`) that streams one-word chunks as fast as it can, and against the
//! same server pacing 10 ms per token (a 100 tok/s engine, the bundled engine's speed here).
//!
//! Reports the client's ceiling (tokens/s it can take in), its cost per token, that cost as a share
//! of a 100 tok/s engine's 10 ms per token, and the decode rate measured at 100 tok/s against the
//! true rate. Run: `cargo bench --bench client_overhead`.

#[path = "../tests/it/common/fake_server.rs"]
mod fake_server;

use fake_server::{Fake, Mode};
use serde_json::{json, Value};

fn decode(fake: &Fake, max_tokens: u64, runs: u32) -> Vec<f64> {
    let dir = tempfile::tempdir().expect("temp dir");
    let c = json!({"parts": ["decode"], "model": "fake", "prompt_ids": ["code"], "runs": runs,
        "warmups": 1, "max_tokens": max_tokens, "sampling": {"temperature": 0.0},
        "server": {"slots": 1, "window": 1_000_000}});
    let cp = dir.path().join("contract.json");
    std::fs::write(&cp, c.to_string()).expect("contract");
    let out = dir.path().join("b");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .args(["measure", "--base-url", &fake.base(), "--contract"])
        .arg(&cp)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .output()
        .expect("rigaudit measure");
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("speed/speed-result.json")).expect("result"),
    )
    .expect("json");
    r["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .filter(|q| q["warmup"] == false)
        .map(|q| {
            let n = q["completion_tokens"].as_f64().unwrap_or(0.0);
            (n - 1.0)
                / (q["end_s"].as_f64().unwrap_or(0.0) - q["first_token_s"].as_f64().unwrap_or(0.0))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let fast = Fake::start(10_000_000, 0, 0, Mode::Good);
    let ceiling = median(decode(&fast, 20_000, 5));
    let paced = Fake::start(10_000_000, 0, 10, Mode::Good);
    let at100 = median(decode(&paced, 300, 5));
    let cost_us = 1e6 / ceiling;
    println!("client ceiling (server streaming as fast as it can): {ceiling:.0} tokens/s");
    println!(
        "client cost per token: {cost_us:.1} us = {:.2} % of a 100 tok/s engine's 10 ms per token",
        cost_us / 100.0
    );
    // The fake sleeps 10 ms between tokens and then writes, so its true rate is a little under 100.
    println!("decode measured against a server pacing 10 ms per token: {at100:.2} tok/s (pace: 100 tok/s; ratio {:.4})", at100 / 100.0);
}
