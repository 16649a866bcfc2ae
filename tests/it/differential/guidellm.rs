//! Differential tests of GuideLLM (see main.rs): the `benchmarks.json` GuideLLM itself wrote at
//! each pinned version (`fixtures/differential/pins.toml`, `[guidellm]`) over a matrix of options
//! and reply shapes (`scripts/differential/guidellm.sh`). For every file, rigaudit must recompute
//! every printed per-request figure as that version computed it (docs/formats/guidellm.md rows G2
//! to G6), raise no error, and name every warning's cause as GuideLLM's own behaviour.

use crate::common::{rigaudit, root, Run};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

/// One file GuideLLM wrote: its version, its case and its report.
struct Fixture {
    version: String,
    case: String,
    file: PathBuf,
}

impl Fixture {
    fn name(&self) -> String {
        format!("{}/{}", self.version, self.case)
    }

    fn report(&self) -> Value {
        let text = std::fs::read_to_string(&self.file).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn verify(&self) -> Value {
        let file = self.file.display().to_string();
        let run: Run = rigaudit(&["verify", "--from", "guidellm", &file, "--format", "json"]);
        assert!(
            run.code == 0 || run.code == 1,
            "{}: {}",
            self.name(),
            run.stderr
        );
        run.json()
    }
}

/// `versions = [...]` or `cases = [...]` of pins.toml's `[guidellm]` section (arrays may span
/// lines).
fn pinned(key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root().join("fixtures/differential/pins.toml")).unwrap();
    let section = text.split("[guidellm]").nth(1).unwrap();
    let section = section.split("\n[").next().unwrap();
    let start = section.find(&format!("{key} = [")).unwrap();
    let list = &section[start..];
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    list.split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn fixtures() -> Vec<Fixture> {
    let base = root().join("fixtures/differential/guidellm");
    let mut out = Vec::new();
    for version in pinned("versions") {
        for case in pinned("cases") {
            let file = base.join(&version).join(&case).join("benchmarks.json");
            out.push(Fixture {
                version: version.clone(),
                case,
                file,
            });
        }
    }
    out
}

#[test]
fn every_pinned_version_and_case_has_the_file_guidellm_wrote() {
    let all = fixtures();
    assert!(all.len() >= 3 * 9, "{} fixtures", all.len());
    for f in &all {
        assert!(
            f.file.is_file(),
            "{} missing: run scripts/differential/guidellm.sh",
            f.name()
        );
        let r = f.report();
        // 0.5 on state their version; 0.2-0.4 do not (docs row G1).
        if let Some(v) = r.pointer("/metadata/guidellm_version") {
            assert_eq!(v.as_str(), Some(f.version.as_str()), "{}", f.name());
        }
        let command = std::fs::read_to_string(f.file.with_file_name("command.txt")).unwrap();
        assert!(
            command.starts_with(&format!("guidellm=={}\n", f.version)),
            "{}",
            f.name()
        );
    }
}

/// The per-request distributions each version prints and computes from its requests (row G4).
fn distributions(version: &str) -> &'static [&'static str] {
    if version.starts_with("0.2.") || version.starts_with("0.3.") {
        return &[
            "request_latency",
            "prompt_token_count",
            "output_token_count",
            "time_to_first_token_ms",
            "time_per_output_token_ms",
            "inter_token_latency_ms",
        ];
    }
    &[
        "request_latency",
        "request_streaming_iterations_count",
        "prompt_token_count",
        "output_token_count",
        "total_token_count",
        "time_to_first_token_ms",
        "time_to_first_output_token_ms",
        "time_to_last_round_trip_ms",
        "avg_round_trip_time_ms",
        "time_per_output_token_ms",
        "inter_token_latency_ms",
    ]
}

/// Every figure of one printed distribution, as rigaudit keys it (`mean`, `percentiles.p99`).
fn figures(d: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in d.as_object().into_iter().flatten() {
        if v.is_number() {
            out.push(k.clone());
        }
        if k == "percentiles" {
            for (p, x) in v.as_object().into_iter().flatten() {
                if x.is_number() {
                    out.push(format!("percentiles.{p}"));
                }
            }
        }
    }
    out
}

/// The benchmarks rigaudit names as sampled (not recomputable), by index.
fn sampled(verdict: &Value) -> BTreeSet<usize> {
    let findings = verdict["findings"].as_array().unwrap();
    findings
        .iter()
        .filter(|f| f["check"] == "import.not-recomputable")
        .filter_map(|f| f["pointer"].as_str()?.split('/').nth(2)?.parse().ok())
        .collect()
}

/// What is wrong with rigaudit's reading of one fixture: a figure not recomputed or not agreeing.
fn unrecomputed(f: &Fixture, verdict: &Value) -> Vec<String> {
    let report = f.report();
    let recomputed: Vec<&Value> = verdict["recomputed"].as_array().unwrap().iter().collect();
    let skip = sampled(verdict);
    let mut wrong = Vec::new();
    let benchmarks = report["benchmarks"].as_array().unwrap();
    for (i, b) in benchmarks
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
    {
        for name in distributions(&f.version) {
            let Some(by_status) = b["metrics"][name].as_object() else {
                continue;
            };
            for (status, d) in by_status {
                for k in figures(d) {
                    let key = format!("guidellm.{i}.{name}.{status}.{k}");
                    match recomputed.iter().find(|r| r["key"] == key.as_str()) {
                        Some(r) if r["matches"] == true => {}
                        Some(r) => wrong.push(format!("{}: {r}", f.name())),
                        None => wrong.push(format!("{}: {key} not recomputed", f.name())),
                    }
                }
            }
        }
    }
    wrong
}

#[test]
fn rigaudit_recomputes_every_figure_as_each_version_did_and_raises_no_error() {
    let mut wrong = Vec::new();
    let mut compared = 0;
    for f in fixtures() {
        let verdict = f.verify();
        for finding in verdict["findings"].as_array().unwrap() {
            if finding["severity"] == "error" {
                wrong.push(format!("{}: error {finding}", f.name()));
            }
        }
        wrong.extend(unrecomputed(&f, &verdict));
        compared += verdict["recomputed"].as_array().unwrap().len();
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(compared > 5000, "only {compared} figures recomputed");
}

#[test]
fn every_warning_names_guidellms_own_behaviour() {
    // The warnings that describe the run (failed or empty requests, token source, cache) name the
    // version's rule; a percentile of too few samples is a caution of statistics, said as such.
    let describes = [
        "import.failed-requests",
        "import.failed-as-zero",
        "speed.token-source",
        "speed.cached-tokens",
    ];
    let mut wrong = Vec::new();
    for f in fixtures() {
        let verdict = f.verify();
        for w in verdict["findings"].as_array().unwrap() {
            let (id, message) = (w["check"].as_str().unwrap(), w["message"].as_str().unwrap());
            if w["severity"] != "warning" || id == "import.percentile-few-samples" {
                continue;
            }
            if !describes.contains(&id) || !message.contains("GuideLLM") {
                wrong.push(format!("{}: {id}: {message}", f.name()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The listed requests per status of benchmark 0, and the totals it prints.
fn listed_and_totals(r: &Value) -> (usize, f64) {
    let b = &r["benchmarks"][0];
    let listed = ["successful", "incomplete", "errored"]
        .iter()
        .map(|s| b["requests"][s].as_array().map_or(0, Vec::len))
        .sum();
    let totals = b
        .pointer("/metrics/request_totals/total")
        .or_else(|| b.pointer("/request_totals/total"))
        .and_then(Value::as_f64)
        .unwrap();
    (listed, totals)
}

#[test]
fn warm_up_and_cool_down_requests_are_named_and_left_out_as_guidellm_leaves_them() {
    for f in fixtures().iter().filter(|f| f.case.contains("warmup")) {
        let (listed, totals) = listed_and_totals(&f.report());
        let verdict = f.verify();
        let named = verdict["findings"].as_array().unwrap().iter().any(|x| {
            x["severity"] == "info"
                && x["message"]
                    .as_str()
                    .unwrap()
                    .contains("outside its measured window")
        });
        if f.version.starts_with("0.2.") {
            // 0.2-0.3 drop them before listing (row G2): nothing to name.
            assert_eq!(listed as f64, totals, "{}", f.name());
            assert!(!named, "{}", f.name());
        } else if f.case == "concurrent-warmup-cooldown" {
            // 0.4 on list them (row G2): 10 listed, fewer counted, and named at info.
            assert!(
                (listed as f64) > totals,
                "{}: {listed} vs {totals}",
                f.name()
            );
            assert!(named, "{}", f.name());
        }
    }
}

#[test]
fn sampled_lists_are_named_where_the_version_applied_the_sampling() {
    for f in fixtures().iter().filter(|f| f.case == "poisson-sampled") {
        let (listed, totals) = listed_and_totals(&f.report());
        let verdict = f.verify();
        let named = !sampled(&verdict).is_empty();
        if f.version == "0.4.0" {
            // 0.4.0-0.5.3 never pass --sample-requests to the lists (row G9).
            assert!(listed as f64 >= totals, "{}", f.name());
            assert!(!named, "{}", f.name());
        } else {
            assert!(
                (listed as f64) < totals,
                "{}: {listed} vs {totals}",
                f.name()
            );
            assert!(named, "{}", f.name());
        }
    }
}

/// The messages of one check's findings.
fn messages(verdict: &Value, id: &str) -> Vec<String> {
    let findings = verdict["findings"].as_array().unwrap();
    findings
        .iter()
        .filter(|x| x["check"] == id)
        .map(|x| x["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn refusals_are_named_as_failed_requests_at_every_version() {
    for f in fixtures().iter().filter(|f| f.case.contains("refused")) {
        let failed = messages(&f.verify(), "import.failed-requests");
        assert_eq!(failed.len(), 1, "{}", f.name());
        assert!(
            failed[0].contains("400 Bad Request"),
            "{}: {failed:?}",
            f.name()
        );
    }
}

#[test]
fn each_reply_shape_is_named_as_the_version_counts_it() {
    for f in fixtures().iter().filter(|f| f.case.contains("shapes")) {
        let verdict = f.verify();
        let (zero, failed) = (
            messages(&verdict, "import.failed-as-zero").join("\n"),
            messages(&verdict, "import.failed-requests").join("\n"),
        );
        let name = f.name();
        match f.version.as_str() {
            // A success with no first token keeps first_token_time -1: a TTFT of minus the epoch.
            "0.2.1" => assert!(zero.contains("first_token_time -1"), "{name}: {zero}"),
            // A stream cut by an error is a success counted at the request's target of tokens.
            "0.4.0" => {
                assert!(
                    zero.contains("more output tokens than their reply"),
                    "{name}: {zero}"
                );
                assert!(failed.contains("3 of 12"), "{name}: {failed}");
            }
            // The cut stream and the reply with no token are errors.
            _ => assert!(
                failed.contains("5 of 12")
                    && failed.contains("Streaming response returned an error"),
                "{name}: {failed}"
            ),
        }
    }
}
