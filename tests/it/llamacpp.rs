//! Replay against a second, real engine: llama.cpp's server (PyPI `xllamacpp`, started by
//! engine/benches/llamacpp_server.py) on the same GGUF. The bundle is the bundled-engine fixture
//! with its recorded command replaced by one that starts llama.cpp; rigaudit launches it (python3
//! trusted explicitly, as it is not the card's binary), measures with the fixture's contracts and
//! questions, and the replayed bundle is valid, the long-prompt test refused and recorded as
//! refused, and rigaudit's decode rate agrees with llama.cpp's own `timings` within 0.5 %, beyond
//! the wait of llama.cpp's first streamed token for a core (up to three decode steps).
//! `.ci/run` and `scripts/test.sh` install xllamacpp.

use crate::common;

use common::{
    assert_decode_agrees_with_the_engines_timing, copy_with_card, python3, rigaudit_line, root,
};
use serde_json::{json, Value};

/// The tests whose verdicts need the machine to themselves: `scripts/test.sh` runs every
/// `quiet` module after the rest of the suite, one test at a time.
mod quiet {
    use super::*;

    #[test]
    fn replays_the_fixture_on_llama_cpp() {
        let _quiet = common::machine_to_myself();
        let tmp = tempfile::tempdir().unwrap();
        let b = tmp.path().join("bundle");
        copy_with_card(&root().join("fixtures/runs/smollm2-cpu"), &b, |card| {
            card["engine"] = json!({"name": "llama.cpp server (PyPI xllamacpp)", "version": null});
            card["commands"][0]["argv"] = json!([
                "python3",
                "<script>",
                "<model file>",
                "<port>",
                "4",
                "1024",
                "2",
                "smollm2"
            ]);
        });
        let python = python3();
        let script = root().join("engine/benches/llamacpp_server.py");
        let out = tmp.path().join("replay");
        // One session (`--confirm false`): nothing here is about confirming a drift (llama.cpp is
        // another engine and the card names other hardware), and a second session doubled the time.
        let line =
            "replay {} --engine {} --trust-executable --set {} --out {} --format json --quiet \
            --ready-timeout 120 --confirm false";
        let set = format!("script={}", script.display());
        let values = [
            b.to_str().unwrap(),
            python.to_str().unwrap(),
            &set,
            out.to_str().unwrap(),
        ];
        let run = rigaudit_line(line, &values);
        // Another engine, maybe other hardware: any verdict but "could not run" (3 when the replay
        // settled no value: speed for information only, quality too close to call).
        assert!(
            [0, 1, 3].contains(&run.code),
            "{}\n{}",
            run.stdout,
            run.stderr
        );
        let report = run.json();
        let rows = report["comparisons"].as_array().unwrap();
        let row = |k: &str| rows.iter().find(|r| r["key"] == k).unwrap().clone();
        assert!(row("decode")["replayed"].as_f64().unwrap() > 0.0);
        assert_eq!(row("quality.arith-long.pct")["verdict"], "not-comparable");
        assert!(row("quality.arith.pct")["replayed"].is_number());
        assert_eq!(row("ctx_decode.2048")["verdict"], "not-comparable");
        assert!(
            run.stderr.contains("trust") || report.to_string().contains("trust"),
            "the report says python3 ran on trust"
        );

        let replayed = out.join("bundle");
        let v = common::verify(&replayed);
        assert_eq!(v.code, 0, "{}", v.stdout);
        assert!(!v.has("quality.refused-counted-as-wrong"));
        let answers =
            std::fs::read_to_string(replayed.join("quality/arith-long/answers.jsonl")).unwrap();
        for line in answers.lines() {
            let a: Value = serde_json::from_str(line).unwrap();
            assert_eq!(a["status"], 400, "{a}");
            assert_eq!(a["correct"], false);
            assert!(a["extracted"].is_null());
        }

        let result = replayed.join("speed/speed-result.json");
        // llama.cpp's two compute threads take both cores of a 2-core machine and wait by spinning:
        // rigaudit's interval from the first token to the last came out 1.4-9 ms (0.25-1.7
        // steps of about 5.6 ms) shorter than llama.cpp's own in every request (2026-12-07, 40 of four runs),
        // never longer; the first token's chunk waits for the HTTP thread, the last does not.
        assert_decode_agrees_with_the_engines_timing(&result, "llama.cpp", 3.0);
    }
}
