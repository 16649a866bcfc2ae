//! The main job on the bundled fixture: `rigaudit audit fixtures/runs/smollm2-cpu` re-launches the
//! bundled engine with the recorded command, measures again, and the page reproduces: no speed
//! value drifted, the quality test reproduced, the refused test and the step that cannot fit the
//! window not comparable on both sides. The model comes from the cache `scripts/fetch-model.sh`
//! fills (or is fetched on first use). One test in this binary, so nothing else runs beside it.

mod common;

use common::{rigaudit, root};
use serde_json::Value;

#[test]
fn the_bundled_fixture_reproduces_and_decode_agrees_with_the_engines_own_timing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("replay");
    let fixture = root().join("fixtures/runs/smollm2-cpu");
    let run = rigaudit(&[
        "audit",
        fixture.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
    ]);
    let report = run.json();
    assert_eq!(
        run.code,
        0,
        "{}\n{}",
        serde_json::to_string_pretty(&report["comparisons"]).unwrap(),
        run.stderr
    );
    assert_eq!(report["command"], "audit");
    let rows = report["comparisons"].as_array().unwrap();
    let row = |k: &str| -> &Value {
        rows.iter()
            .find(|r| r["key"] == k)
            .unwrap_or_else(|| panic!("no row {k}"))
    };
    for r in rows {
        let key = r["key"].as_str().unwrap();
        assert!(
            r["verdict"] != "drifted" || r["informational"] == true,
            "{key} drifted: {}",
            r["why"]
        );
    }
    for k in ["decode", "prefill.512", "conc_total.4", "ctx_decode.512"] {
        let v = row(k)["verdict"].as_str().unwrap();
        assert!(v == "reproduced" || v == "inconclusive", "{k}: {v}");
    }
    assert_eq!(row("quality.arith.pct")["verdict"], "reproduced");
    let long = row("quality.arith-long.pct");
    assert_eq!(long["verdict"], "not-comparable");
    assert!(long["why"].as_str().unwrap().contains("both sides"));
    assert!(long["why"]
        .as_str()
        .unwrap()
        .contains("maximum context length is 1024 tokens"));
    assert_eq!(row("ctx_decode.2048")["verdict"], "not-comparable");

    // Decode as rigaudit measures it, against the engine's own timing of the same requests.
    let res: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("bundle/speed/speed-result.json")).unwrap(),
    )
    .unwrap();
    let mut compared = 0;
    for q in res["requests"].as_array().unwrap() {
        if q["step"] != "decode" || q["warmup"] == true {
            continue;
        }
        let n = q["completion_tokens"].as_f64().unwrap();
        let ours =
            (n - 1.0) / (q["end_s"].as_f64().unwrap() - q["first_token_s"].as_f64().unwrap());
        let t = &q["server_timings"];
        let theirs = (t["predicted_n"].as_f64().unwrap() - 1.0)
            / (t["predicted_ms"].as_f64().unwrap() / 1000.0);
        let off = (ours - theirs).abs() / theirs;
        assert!(
            off < 0.005,
            "decode {ours:.2} vs the engine's {theirs:.2}: {:.2} % apart",
            off * 100.0
        );
        compared += 1;
    }
    assert_eq!(compared, 10, "5 runs of 2 prompts");
}
