//! `rigaudit-engine make-model`: the same seed writes the same file, and the engine serves the
//! random-weights model it made (CPU), generating tokens through its HTTP API.

use crate::common;

use std::path::Path;
use std::process::Command;

/// Runs `make-model --preset tiny --seed SEED --out OUT`; its printed line.
fn make(seed: &str, out: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
        .args(["make-model", "--preset", "tiny", "--seed", seed, "--out"])
        .arg(out)
        .output()
        .expect("run make-model");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn digest_of(line: &str) -> &str {
    line.split("sha256=").nth(1).expect("sha256= in the line")
}

#[test]
fn made_twice_is_the_same_file_and_the_engine_serves_it() {
    let dir = std::env::temp_dir().join(format!("engine-synth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, c) = (dir.join("a.gguf"), dir.join("b.gguf"), dir.join("c.gguf"));
    let (la, lb, lc) = (make("11", &a), make("11", &b), make("12", &c));
    assert_eq!(digest_of(&la), digest_of(&lb), "same seed, other digest");
    assert_ne!(digest_of(&la), digest_of(&lc), "another seed, same digest");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());

    let s = common::Server::start(&a, &[]);
    let body = serde_json::json!({
        "model": "test", "prompt": "hello world", "max_tokens": 8, "temperature": 0
    });
    let (st, v) = s.post_json("/v1/completions", &body);
    assert_eq!(st, 200, "{v}");
    let made = v["usage"]["completion_tokens"].as_u64().unwrap_or(0);
    assert!(made >= 1, "no tokens generated: {v}");
    let again = s.post_json("/v1/completions", &body).1;
    assert_eq!(
        v["choices"][0]["text"], again["choices"][0]["text"],
        "greedy not repeatable"
    );
    drop(s);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn from_a_model_its_first_layers_are_kept() {
    let dir = std::env::temp_dir().join(format!("engine-synth-from-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, cut) = (dir.join("src.gguf"), dir.join("cut.gguf"));
    make("5", &src);
    let o = Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
        .args(["make-model", "--layers", "1", "--from"])
        .arg(&src)
        .arg("--out")
        .arg(&cut)
        .output()
        .expect("run make-model --from");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let g = rigaudit_engine::gguf::Gguf::open(&cut).unwrap();
    assert_eq!(g.get_u64("llama.block_count"), Some(1));
    assert!(g.tensors.contains_key("blk.0.attn_q.weight"));
    assert!(!g.tensors.contains_key("blk.1.attn_q.weight"));
    rigaudit_engine::model::Model::load(g).expect("the cut model loads");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unknown_preset_is_refused_naming_the_choices() {
    let o = Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
        .args([
            "make-model",
            "--preset",
            "huge",
            "--out",
            "/nonexistent/x.gguf",
        ])
        .output()
        .expect("run make-model");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("--preset huge: unknown preset (expected smollm2-135m or tiny)"),
        "{err}"
    );
}
