//! `rigaudit ab`: two setups measured in one session, interleaved, judged by paired ratios
//! (issue 36). A fake engine with a set token delay (tests/fixtures/fake_engine.py) and the bundled
//! engine slowed with `--decode-delay-us` are compared with themselves and with a slower self.

use crate::common;

use common::{decode_contract, fake_engine, fake_engine_card, rigaudit, root, write_bundle};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The flags that run the fake engine's card: python3 as the engine, trusted.
fn fake_engine_flags() -> Vec<String> {
    let py = common::python3();
    vec![
        "--engine".into(),
        py.display().to_string(),
        "--trust-executable".into(),
    ]
}

/// A bundle of the fake engine at `token_delay` seconds a token: decode only, 3 runs of 24 tokens.
fn fake_bundle(tmp: &Path, token_delay: &str) -> PathBuf {
    let script = fake_engine(tmp, "ab_fake_engine.py");
    let card = fake_engine_card(&script, &["--token-delay", token_delay], json!({}));
    let dir = tmp.join("fake-bundle");
    write_bundle(
        &dir,
        ("fake-ab", "fake engine"),
        &card,
        &decode_contract(3, 24),
    );
    dir
}

fn row<'a>(report: &'a Value, key: &str) -> &'a Value {
    report["comparisons"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["key"] == key))
        .unwrap_or_else(|| panic!("no row {key}: {report}"))
}

/// The comparison of `bundle` with itself changed by `extra`, as JSON, and its exit code.
fn ab(bundle: &Path, out: &Path, extra: &[&str]) -> (Value, i32) {
    let mut args = vec![
        "ab".to_string(),
        bundle.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--seed".into(),
        "36".into(),
        "--format".into(),
        "json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = rigaudit(&args);
    assert!(
        run.code == 0 || run.code == 1 || run.code == 3,
        "exit {}: {}",
        run.code,
        run.stderr
    );
    (run.json(), run.code)
}

/// A short contract of the bundled engine: decode (one prompt, 2 runs of 32 tokens) and prefill
/// (128 tokens, 2 runs).
fn short_contract(dir: &Path) -> PathBuf {
    let path = dir.join("short-contract.json");
    let mut c: Value =
        common::read_json(&root().join("fixtures/runs/smollm2-cpu/speed/speed-contract.json"));
    c["parts"] = json!(["decode", "prefill"]);
    c["prompt_ids"] = json!(["prose"]);
    c["runs"] = json!(2);
    c["max_tokens"] = json!(32);
    c["prefill"] = json!({"depths": [128], "runs": 2, "max_tokens": 1});
    for k in ["conc", "ctx", "l1"] {
        c.as_object_mut().unwrap().remove(k);
    }
    std::fs::write(&path, c.to_string()).unwrap();
    path
}

#[test]
fn a_flag_that_is_not_a_flag_and_a_missing_bundle_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = fake_bundle(tmp.path(), "0.001");
    let bad = rigaudit(&["ab", bundle.to_str().unwrap(), "--arg-b=rm -rf /"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("expected FLAG or FLAG=VALUE"),
        "{}",
        bad.stderr
    );
    let missing = tmp.path().join("no-such-bundle");
    let flags = fake_engine_flags();
    let mut args = vec!["ab", bundle.to_str().unwrap(), missing.to_str().unwrap()];
    args.extend(flags.iter().map(String::as_str));
    // Run where its default output folder (`ab-<bundle>` in the current folder) would go.
    let here = tmp.path().join("here");
    std::fs::create_dir(&here).unwrap();
    let run = common::Run::of(
        std::process::Command::new(env!("CARGO_BIN_EXE_rigaudit"))
            .args(&args)
            .current_dir(&here),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no-such-bundle"), "{}", run.stderr);
    // Refused before anything was written: no output folder left behind.
    let left: Vec<_> = std::fs::read_dir(&here).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// The tests whose verdicts need the machine to themselves: `scripts/test.sh` runs every
/// `quiet` module after the rest of the suite, one test at a time. The fake engine's test is one
/// of them though its tokens are sleeps: beside the rest of the suite its A/A quartets moved by up
/// to 19 % (2026-12-07), inconclusive at a 10 % band within its budget, and it became the rest's
/// longest test (the rest 237 s, from 185 s).
mod quiet {
    use super::*;

    #[test]
    fn a_fake_engine_twenty_percent_slower_is_changed_worse_and_the_same_engine_is_not_changed() {
        let _quiet = common::machine_to_myself();
        let tmp = tempfile::tempdir().unwrap();
        let bundle = fake_bundle(tmp.path(), "0.004");
        let flags = fake_engine_flags();
        let mut extra: Vec<&str> = flags.iter().map(String::as_str).collect();
        let html = tmp.path().join("ab.html");
        let markdown = tmp.path().join("ab.md");
        let outputs = [
            format!("html:{}", html.display()),
            format!("markdown:{}", markdown.display()),
        ];
        extra.extend(["--arg-b=--token-delay=0.005", "--budget", "3m"]);
        extra.extend(["--output", &outputs[0], "--output", &outputs[1]]);
        let (slower, code) = ab(&bundle, &tmp.path().join("slower"), &extra);
        let decode = row(&slower, "decode");
        assert_eq!(decode["verdict"], "changed", "{decode}");
        assert_eq!(decode["better"], false, "{decode}");
        assert_eq!(code, 1, "a changed figure fails the comparison");
        let change = decode["change_pct"].as_f64().unwrap();
        assert!((-25.0..-10.0).contains(&change), "{change}");
        assert!(decode["unit_changes"].as_array().unwrap().len() >= 3);
        // The blocks ran in ABBA / BAAB quartets, recorded with the seed.
        let record = common::read_json(&tmp.path().join("slower/ab.json"));
        assert_eq!(record["seed"], 36);
        let sides: Vec<&str> = record["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["side"].as_str().unwrap())
            .collect();
        for q in sides.chunks(4) {
            assert!(q[0] == q[3] && q[1] == q[2] && q[0] != q[1], "{sides:?}");
        }
        // Both servers were started a quartet and kept up through it (both run here): one log a
        // side and quartet, not one a block.
        assert_eq!(record["servers"], "each-quartet", "{record}");
        let quartets = sides.len() / 4;
        for q in 1..=quartets {
            for side in ["a", "b"] {
                let log = tmp
                    .path()
                    .join(format!("slower/servers/{q:03}/{side}/rank0.log"));
                assert!(log.is_file(), "{}", log.display());
            }
        }
        let past = tmp
            .path()
            .join(format!("slower/servers/{:03}", quartets + 1));
        assert!(!past.exists(), "{}", past.display());
        assert!(!tmp.path().join("slower/blocks/001-b/engine-logs").exists());
        // Each side's first block read what its server mapped: one rank a side, labelled.
        let loaded = slower["loaded"].as_array().unwrap();
        let labelled: Vec<&str> = loaded.iter().map(|r| r["side"].as_str().unwrap()).collect();
        assert_eq!(labelled.len(), 2, "{loaded:#?}");
        assert!(
            labelled.contains(&"A") && labelled.contains(&"B"),
            "{labelled:?}"
        );
        assert!(loaded.iter().all(|r| r["objects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["role"] == "executable" && o["sha256"].is_string())));
        // HTML draws each quartet's change; Markdown speaks of A and B in words of change.
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains("Paired changes, B over A, per quartet"),
            "{page}"
        );
        assert!(
            page.matches("<circle").count() >= 6,
            "a dot a quartet and row"
        );
        let md = std::fs::read_to_string(&markdown).unwrap();
        assert!(md.contains("changed") && md.contains("decode"), "{md}");
        assert!(
            slower["setup_changes"]
                .to_string()
                .contains("--token-delay"),
            "the setup difference comes first: {}",
            slower["setup_changes"]
        );
        // A/A with a launch a block (as where both cannot run at once): each block's own log.
        let mut extra: Vec<&str> = flags.iter().map(String::as_str).collect();
        extra.extend(["--band", "5", "--budget", "90s", "--launches", "each-block"]);
        let (same, code) = ab(&bundle, &tmp.path().join("same"), &extra);
        let record = common::read_json(&tmp.path().join("same/ab.json"));
        assert_eq!(record["servers"], "each-block", "{record}");
        assert!(tmp
            .path()
            .join("same/blocks/001-b/engine-logs/rank0.log")
            .is_file());
        for r in same["comparisons"].as_array().unwrap() {
            assert_eq!(r["verdict"], "unchanged", "A/A: {r}");
        }
        assert_eq!(code, 0);
        assert!(
            same["verdict_qualifier"]
                .as_str()
                .is_some_and(|q| q.contains("unchanged")),
            "{}",
            same["verdict_qualifier"]
        );
    }

    #[test]
    fn the_bundled_engine_with_a_decode_delay_is_slower_on_decode_and_not_on_prefill() {
        let _quiet = common::machine_to_myself();
        let tmp = tempfile::tempdir().unwrap();
        let contract = short_contract(tmp.path());
        let bundle = root().join("fixtures/runs/smollm2-cpu");
        let (r, _) = ab(
            &bundle,
            &tmp.path().join("delay"),
            &[
                "--arg-b=--decode-delay-us=8000",
                "--contract",
                contract.to_str().unwrap(),
                "--no-quality",
                // Three quartets of this contract's blocks (about 5.5 s each on the 2-core VM) and
                // a fourth fit: the decode rows are decided at the first look, at three quartets.
                // A band of 15 %: the delay slows decode by half or more, and a leak into prefill
                // of even one step of it would slow a 128-token prefill beyond 15 %; within its
                // default band (at most 10 %) prefill rarely settled as unchanged, and the budget
                // was spent whole (89 s).
                "--band",
                "15",
                "--budget",
                "90s",
            ],
        );
        let decode = row(&r, "decode.prose");
        assert_eq!(decode["verdict"], "changed", "{decode}");
        assert_eq!(decode["better"], false, "{decode}");
        // A delay that leaked into prefill would slow it: never changed worse. Changed better
        // has been seen on this VM (2026-12-07: side B's prefill +8 % and +9.6 % in two of four
        // runs, p 0.006 and 0.02, bands of 6.5 % and 9 %; the two before and after, unchanged): a
        // side whose decode sleeps leaves the machine readier for its next prompt, an effect of
        // the setup that `ab` rightly reports, and not the delay reaching prefill.
        let prefill = row(&r, "prefill.128");
        let worse = prefill["verdict"] == "changed" && prefill["better"] == false;
        assert!(!worse, "a decode delay slowed prefill: {prefill}");
        if prefill["verdict"] == "changed" {
            eprintln!("prefill changed better with a decode delay on B: {prefill}");
        }
        let session = r["findings"].to_string();
        assert!(session.contains("ab.session"), "{session}");
        assert!(
            session.contains("--decode-delay-us 8000"),
            "side B's command: {session}"
        );
    }
}
