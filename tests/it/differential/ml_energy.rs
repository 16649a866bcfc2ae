//! Differential tests of the ML.ENERGY benchmark (see main.rs): three runs written through the
//! benchmark's own functions (`fixtures/differential/ml-energy/README.md` says how and what was
//! set by hand), read back by rigaudit; its verdict on each is held to the benchmark's validator
//! (`validator.json`, the validator's own output) where they agree, and to the named difference
//! where rigaudit sees more.

use crate::common::{rigaudit, root, Run};
use serde_json::Value;

fn verify(case: &str) -> Run {
    let dir = root().join("fixtures/differential/ml-energy").join(case);
    let (r, p) = (dir.join("results.json"), dir.join("prometheus.json"));
    rigaudit(&[
        "verify",
        r.to_str().unwrap(),
        p.to_str().unwrap(),
        "--format",
        "json",
    ])
}

fn validator(case: &str) -> Value {
    let p = root().join("fixtures/differential/ml-energy/validator.json");
    let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    v["cases"][case].clone()
}

/// (check, severity) of every finding above a note.
fn raised(run: &Run) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = run.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] != "info")
        .map(|f| {
            (
                f["check"].as_str().unwrap().into(),
                f["severity"].as_str().unwrap().into(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_figure_the_benchmark_computed_is_recomputed_and_agrees() {
    for case in ["v3.0-one-gpu", "v3.0-two-gpus", "87819b9-two-engines-short"] {
        let run = verify(case);
        let report = run.json();
        let rows = report["recomputed"].as_array().unwrap();
        assert!(rows.len() >= 30, "{case}: {} rows", rows.len());
        assert!(
            rows.iter().all(|r| r["matches"] == true),
            "{case}: {rows:#?}"
        );
        // The request figures are vLLM's (the benchmark's client is vLLM's), checked by its table.
        assert!(rows.iter().any(|r| r["key"] == "vllm.p99_itl_ms"), "{case}");
        assert!(!run.has("speed.recompute-mismatch"), "{case}");
    }
}

#[test]
fn a_run_the_validator_passes_passes_unless_its_window_holds_more_tokens_than_the_run() {
    assert_eq!(validator("v3.0-two-gpus")["validator_passed"], true);
    let run = verify("v3.0-two-gpus");
    assert_eq!((run.code, raised(&run)), (0, vec![]), "{}", run.stdout);
    assert_eq!(validator("v3.0-one-gpu")["validator_passed"], true);
    let run = verify("v3.0-one-gpu");
    let want = vec![(
        "import.impossible-aggregate".to_string(),
        "error".to_string(),
    )];
    assert_eq!((run.code, raised(&run)), (1, want), "{}", run.stdout);
    let f = &run.findings("import.impossible-aggregate")[0];
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("67500 reply tokens in the window, more than the 59377"),
        "{f}"
    );
}

#[test]
fn the_short_window_fails_as_the_validator_says_and_the_old_writers_batch_is_named() {
    let v = validator("87819b9-two-engines-short");
    let failed: Vec<&str> = v["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["Batch Size Saturation", "Steady State Duration"]);
    let run = verify("87819b9-two-engines-short");
    assert_eq!(run.code, 1, "{}", run.stdout);
    let window = run.findings("import.energy-window");
    let error = window
        .iter()
        .find(|f| f["severity"] == "error")
        .expect("the short window");
    assert!(
        error["message"].as_str().unwrap().contains("lasted 25 s"),
        "{error}"
    );
    let batch = window
        .iter()
        .find(|f| f["severity"] == "warning")
        .expect("the writer's batch");
    let m = batch["message"].as_str().unwrap();
    assert!(
        m.contains("31.79") && m.contains("63.600") && m.contains("largest engine"),
        "{m}"
    );
    // Summed over its engines the batch was saturated: no warning of an unsaturated batch.
    assert!(window
        .iter()
        .all(|f| !f["message"].as_str().unwrap().contains("ran on average")));
}
