//! Differential tests of MLPerf Endpoints (see main.rs): report folders the writer wrote itself
//! (`fixtures/differential/mlperf-endpoints/README.md`), read back with their events; every
//! count, window, qps and latency/TTFT figure rigaudit recomputes from the events must equal the
//! writer's own recomputation (`expected.json`) and the summary, with no error raised.

use crate::common::{rigaudit, root, Run};
use serde_json::Value;
use std::path::PathBuf;

const CASES: &[&str] = &[
    "online-poisson-streaming",
    "offline-max-throughput",
    "online-audit",
];

fn dir(case: &str) -> PathBuf {
    root()
        .join("fixtures/differential/mlperf-endpoints")
        .join(case)
}

fn verify(case: &str) -> Run {
    let d = dir(case);
    let files = [
        d.join("performance/result_summary.json"),
        d.join("events.jsonl"),
        d.join("config.yaml"),
    ];
    let mut args = vec!["verify".to_string()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--format".into(), "json".into()]);
    rigaudit(&args)
}

/// The writer's recomputation: field (`ttft.percentiles.99.0`) to value.
fn writer(case: &str) -> Vec<(String, f64)> {
    let v: Value =
        serde_json::from_slice(&std::fs::read(dir(case).join("expected.json")).unwrap()).unwrap();
    assert_eq!(v["all_equal"], true, "{case}");
    v["figures"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| Some((f["field"].as_str()?.to_string(), f["recomputed"].as_f64()?)))
        .collect()
}

#[test]
fn every_figure_the_events_give_equals_the_writers_own_recomputation() {
    for case in CASES {
        let run = verify(case);
        let report = run.json();
        let errors: Vec<&Value> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "error")
            .collect();
        assert!(errors.is_empty(), "{case}: {errors:#?}");
        let rows = report["recomputed"].as_array().unwrap();
        assert!(
            rows.iter().all(|r| r["matches"] == true),
            "{case}: {rows:#?}"
        );
        let mine = |key: &str| {
            rows.iter()
                .find(|r| r["key"] == key)
                .and_then(|r| r["value"].as_f64())
        };
        let mut compared = 0;
        for (field, value) in writer(case) {
            // The writer's `ttft.percentiles.99.0` is rigaudit's `endpoints.ttft.percentiles/99.0`.
            let key = match field.split_once('.') {
                Some((series @ ("ttft" | "latency"), rest)) => {
                    let rest = rest.replacen("percentiles.", "percentiles/", 1);
                    format!("endpoints.{series}.{rest}")
                }
                None => format!("endpoints.{field}"),
                _ => continue,
            };
            if let Some(got) = mine(&key) {
                compared += 1;
                assert!(
                    (got - value).abs() <= 1e-9 * value.abs().max(1.0),
                    "{case} {key}: {got} vs the writer's {value}"
                );
            }
        }
        let streaming = *case != "offline-max-throughput";
        assert!(
            compared >= if streaming { 40 } else { 20 },
            "{case}: {compared} figures compared"
        );
    }
}

#[test]
fn the_writers_negative_tpots_are_named_as_its_stamping() {
    let run = verify("online-poisson-streaming");
    let f = run.findings("import.impossible-aggregate");
    let tpot = f
        .iter()
        .find(|f| f["message"].as_str().unwrap().contains("tpot's min"))
        .expect("the negative TPOT");
    assert_eq!(tpot["severity"], "warning");
    // The config's min_duration_ms 0 is below the rules.
    assert!(run.has("import.settings-below-rules"));
}
