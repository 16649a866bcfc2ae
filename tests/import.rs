//! `rigaudit import` and `verify --from`: the committed result files of the field's tools
//! (`fixtures/imports/`, made by the tools themselves against the bundled engine), and hand-changed
//! copies of them that each check must catch. Needs none of the tools installed.

mod common;

use common::{rigaudit, root, Run};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn imports(format: &str, run: &str) -> PathBuf {
    root().join("fixtures/imports").join(format).join(run)
}

/// A copy of one fixture run in a temporary folder, to change.
struct Files {
    tmp: tempfile::TempDir,
}

impl Files {
    fn of(format: &str, run: &str) -> Files {
        let tmp = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(imports(format, run)).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).unwrap();
        }
        Files { tmp }
    }

    fn path(&self) -> &Path {
        self.tmp.path()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    fn set(&self, name: &str, pointer: &str, value: Value) -> &Self {
        let p = self.file(name);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        *v.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{name} has no {pointer}")) = value;
        std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
        self
    }

    /// Rewrites line `n` (1-based) of a JSON Lines file with `f`.
    fn edit_line(&self, name: &str, n: usize, f: impl FnOnce(&mut Value)) -> &Self {
        let p = self.file(name);
        let text = std::fs::read_to_string(&p).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let mut v: Value = serde_json::from_str(&lines[n - 1]).unwrap();
        f(&mut v);
        lines[n - 1] = serde_json::to_string(&v).unwrap();
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        self
    }
}

fn verify_from(format: &str, path: &Path) -> Run {
    rigaudit(&[
        "verify",
        "--from",
        format,
        path.to_str().unwrap(),
        "--format",
        "json",
    ])
}

const SUMMARY: &str = "profile_export_aiperf.json";
const RECORDS: &str = "profile_export.jsonl";

/// The line of the failed request in the failures run.
fn failed_line(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join(RECORDS)).unwrap();
    let n = text
        .lines()
        .position(|l| l.contains("\"error\":{"))
        .expect("a failed record")
        + 1;
    n
}

#[test]
fn aiperf_clean_run_recomputes_every_aggregate_and_names_the_cached_prefix() {
    let run = verify_from("aiperf", &imports("aiperf", "clean"));
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = run.json();
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(!run.has("import.failed-requests"));
    assert!(!run.has("import.failed-hidden"));
    assert!(!run.has("import.failed-as-zero"));
    // The engine serves the chat template's prefix from its cache: a real finding.
    assert!(run.has_at("speed.cached-tokens", "error"));
    // The time-sliced figures have no per-request records: named, not checked.
    let n = run.findings("import.not-recomputable");
    assert_eq!(n.len(), 1);
    assert!(n[0]["message"]
        .as_str()
        .unwrap()
        .contains("effective_concurrency"));
    let keys: Vec<&str> = r["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["key"].as_str().unwrap())
        .collect();
    for k in [
        "aiperf.time_to_first_token.p99",
        "aiperf.request_latency.std",
        "aiperf.request_count",
        "aiperf.total_osl",
        "aiperf.benchmark_duration",
        "aiperf.inter_chunk_latency.count",
    ] {
        assert!(keys.contains(&k), "{k} not recomputed");
    }
    assert!(keys.len() > 300, "{}", keys.len());
}

#[test]
fn aiperf_failed_request_of_the_real_run_is_named() {
    let dir = imports("aiperf", "failures");
    let run = verify_from("aiperf", &dir);
    let f = run.findings("import.failed-requests");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    let msg = f[0]["message"].as_str().unwrap();
    assert!(msg.starts_with("1 of 12 requests failed"), "{msg}");
    assert!(msg.contains("maximum context length is 256"), "{msg}");
    assert_eq!(f[0]["pointer"], format!("line {}", failed_line(&dir)));
    // AIPerf counted it honestly: no hidden failure, every aggregate recomputes.
    assert!(!run.has("import.failed-hidden"));
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
}

#[test]
fn aiperf_format_is_detected_from_the_content() {
    let dir = imports("aiperf", "failures");
    let run = rigaudit(&[
        "verify",
        dir.join(SUMMARY).to_str().unwrap(),
        dir.join(RECORDS).to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        run.has("import.failed-requests"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    // The files read are the report's artifacts, with their digests.
    let arts = run.json()["artifacts"].as_array().unwrap().clone();
    let names: Vec<&str> = arts.iter().map(|a| a["path"].as_str().unwrap()).collect();
    assert_eq!(names, [SUMMARY, RECORDS]);
}

#[test]
fn aiperf_dropped_failed_request_is_caught() {
    // The summary says no request failed; the records still hold the refused one.
    let c = Files::of("aiperf", "failures");
    c.set(SUMMARY, "/error_request_count/avg", json!(0.0));
    let run = verify_from("aiperf", c.path());
    assert_eq!(run.code, 1);
    let f = run.findings("import.failed-hidden");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert!(f[0]["message"]
        .as_str()
        .unwrap()
        .contains("1 failed requests but the summary counts 0"));
}

#[test]
fn aiperf_aggregate_that_does_not_match_its_records_is_caught() {
    let c = Files::of("aiperf", "clean");
    let p50: f64 = {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(c.file(SUMMARY)).unwrap()).unwrap();
        v["time_to_first_token"]["p50"].as_f64().unwrap()
    };
    c.set(SUMMARY, "/time_to_first_token/p50", json!(p50 * 0.9));
    c.set(SUMMARY, "/request_count/avg", json!(13.0));
    let run = verify_from("aiperf", c.path());
    let f = run.findings("speed.recompute-mismatch");
    let at: Vec<&str> = f.iter().map(|x| x["pointer"].as_str().unwrap()).collect();
    assert_eq!(
        at,
        ["/time_to_first_token/p50", "/request_count/avg"],
        "{}",
        run.stdout
    );
    assert_eq!(f[0]["data"]["recomputed"].as_f64().unwrap(), p50);
}

#[test]
fn aiperf_throughput_over_a_window_shorter_than_the_run_is_caught() {
    let c = Files::of("aiperf", "clean");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(c.file(SUMMARY)).unwrap()).unwrap();
    let t = v["output_token_throughput"]["avg"].as_f64().unwrap();
    c.set(SUMMARY, "/output_token_throughput/avg", json!(t * 1.5));
    let run = verify_from("aiperf", c.path());
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "/output_token_throughput/avg");
}

#[test]
fn aiperf_failed_request_counted_as_a_zero_token_success_is_caught() {
    // The refused request rewritten as a success with no reply: no error, zero tokens.
    let c = Files::of("aiperf", "failures");
    let n = failed_line(c.path());
    c.edit_line(RECORDS, n, |v| {
        v.as_object_mut().unwrap().remove("error");
        v["metrics"]["output_sequence_length"] = json!({"value": 0, "unit": "tokens"});
    });
    let run = verify_from("aiperf", c.path());
    let f = run.findings("import.failed-as-zero");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], format!("line {n}"));
    // And the summary's counts no longer match the records.
    assert!(run.has("import.failed-hidden") || run.has("speed.recompute-mismatch"));
}

#[test]
fn aiperf_cancelled_run_is_an_error() {
    let c = Files::of("aiperf", "clean");
    c.set(SUMMARY, "/was_cancelled", json!(true));
    let run = verify_from("aiperf", c.path());
    assert!(
        run.has_at("import.run-incomplete", "error"),
        "{}",
        run.stdout
    );
}

#[test]
fn aiperf_import_writes_a_bundle_that_verify_reads_and_whose_digests_hold() {
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    let src = imports("aiperf", "failures");
    let run = rigaudit(&[
        "import",
        "--from",
        "aiperf",
        src.to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.has("import.failed-requests"));
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("bundle.json")).unwrap()).unwrap();
    let rec: Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("import.json")).unwrap()).unwrap();
    assert_eq!(rec["from"], "aiperf");
    assert_eq!(rec["tool_version"], "0.13.0");
    assert!(rec["importer"]
        .as_str()
        .unwrap()
        .starts_with("rigaudit-import/1"));
    let sha = |p: &Path| {
        use sha2::Digest;
        sha2::Sha256::digest(std::fs::read(p).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    for s in rec["sources"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        assert_eq!(s["sha256"], sha(&src.join(name)), "{name}");
    }
    assert!(m["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().starts_with("not taken:")));
    let v = common::verify(&b);
    assert_eq!(v.code, 1, "{}", v.stderr);
    assert!(v.has("import.failed-requests"));
    assert!(!v.has("schema.digest-mismatch"));
    assert_eq!(v.json()["artifacts"].as_array().unwrap().len(), 4);
    // A source changed after the import: its digest no longer holds.
    let p = b.join("sources").join(RECORDS);
    let text = std::fs::read_to_string(&p).unwrap().replacen(
        "\"output_sequence_length\":{\"value\":24",
        "\"output_sequence_length\":{\"value\":25",
        1,
    );
    std::fs::write(&p, text).unwrap();
    let v = common::verify(&b);
    assert!(v.has("schema.digest-mismatch"), "{}", v.stdout);
    assert!(v.has("speed.recompute-mismatch"));
}

#[test]
fn aiperf_bad_input_is_exit_2_naming_the_file_and_line() {
    let c = Files::of("aiperf", "clean");
    let p = c.file(RECORDS);
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("{\"metadata\": {}, \"metrics\": {\"x\": {\"value\": \"fast\"}}}\n");
    std::fs::write(&p, &text).unwrap();
    let run = verify_from("aiperf", c.path());
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("profile_export.jsonl: line 13: at /metrics/x/value: expected a number"),
        "{}",
        run.stderr
    );
    std::fs::write(&p, "not json\n").unwrap();
    let run = verify_from("aiperf", c.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("profile_export.jsonl: line 1, column 2: not valid JSON"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(&p).unwrap();
    let run = verify_from("aiperf", c.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no AIPerf records among them"),
        "{}",
        run.stderr
    );
}

#[test]
fn import_refuses_a_non_empty_output_and_unknown_files() {
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("x"), "x").unwrap();
    let src = imports("aiperf", "clean");
    let run = rigaudit(&[
        "import",
        src.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("exists and is not empty"),
        "{}",
        run.stderr
    );
    let run = rigaudit(&[
        "import",
        out.path().join("x").to_str().unwrap(),
        "--out",
        out.path().join("y").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("not a result file of a format rigaudit imports"),
        "{}",
        run.stderr
    );
}

const REPORT: &str = "benchmarks.json";

#[test]
fn guidellm_clean_run_recomputes_every_distribution() {
    let run = verify_from("guidellm", &imports("guidellm", "clean"));
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(!run.has("import.failed-requests"));
    assert!(!run.has("import.failed-as-zero"));
    let r = run.json();
    let keys: Vec<&str> = r["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["key"].as_str().unwrap())
        .collect();
    for k in [
        "guidellm.0.time_to_first_token_ms.successful.percentiles.p99",
        "guidellm.0.inter_token_latency_ms.successful.mean",
        "guidellm.0.time_per_output_token_ms.total.count",
        "guidellm.0.request_latency.successful.std_dev",
    ] {
        assert!(keys.contains(&k), "{k} not recomputed");
    }
}

#[test]
fn guidellm_errored_request_of_the_real_run_is_named_and_detected() {
    let dir = imports("guidellm", "failures");
    let run = rigaudit(&[
        "verify",
        dir.join(REPORT).to_str().unwrap(),
        "--format",
        "json",
    ]);
    let f = run.findings("import.failed-requests");
    assert_eq!(f.len(), 1, "{}{}", run.stdout, run.stderr);
    let msg = f[0]["message"].as_str().unwrap();
    assert!(msg.contains("1 of 12 requests errored"), "{msg}");
    assert!(msg.contains("400 Bad Request"), "{msg}");
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    // GuideLLM's total distributions take the errored request's missing values as zero.
    let z = run.findings("import.failed-as-zero");
    let at: Vec<&str> = z.iter().map(|x| x["pointer"].as_str().unwrap()).collect();
    assert!(
        at.contains(&"/benchmarks/0/metrics/request_latency/total"),
        "{at:?}"
    );
    assert!(z.iter().all(|x| x["severity"] == "warning"));
}

#[test]
fn guidellm_hidden_error_and_a_changed_aggregate_are_caught() {
    let c = Files::of("guidellm", "failures");
    c.set(
        REPORT,
        "/benchmarks/0/metrics/request_totals/errored",
        json!(0),
    );
    let run = verify_from("guidellm", c.path());
    let f = run.findings("import.failed-hidden");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(
        f[0]["pointer"],
        "/benchmarks/0/metrics/request_totals/errored"
    );

    let c = Files::of("guidellm", "clean");
    c.set(
        REPORT,
        "/benchmarks/0/metrics/time_to_first_token_ms/successful/percentiles/p50",
        json!(1.0),
    );
    let run = verify_from("guidellm", c.path());
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(
        f[0]["pointer"],
        "/benchmarks/0/metrics/time_to_first_token_ms/successful/percentiles/p50"
    );
}

#[test]
fn guidellm_success_without_tokens_or_usage_is_caught() {
    let c = Files::of("guidellm", "clean");
    c.set(
        REPORT,
        "/benchmarks/0/requests/successful/3/output_tokens",
        json!(0),
    );
    c.set(
        REPORT,
        "/benchmarks/0/requests/successful/5/output_metrics/text_tokens",
        Value::Null,
    );
    let run = verify_from("guidellm", c.path());
    let f = run.findings("import.failed-as-zero");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "/benchmarks/0/requests/successful/3");
    // The printed token distribution counted 24 there: it no longer matches.
    assert!(run
        .findings("speed.recompute-mismatch")
        .iter()
        .any(|x| x["pointer"]
            .as_str()
            .unwrap()
            .contains("output_token_count/successful")));
    let t = run.findings("speed.token-source");
    assert_eq!(t.len(), 1, "{}", run.stdout);
    assert!(t[0]["message"]
        .as_str()
        .unwrap()
        .contains("1 of 12 requests have no usage"));
}

/// The one file of a fixture copy whose name starts with `prefix`.
fn named(dir: &Path, prefix: &str) -> String {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

#[test]
fn lm_eval_run_is_rescored_and_its_unextractable_replies_named() {
    for run_name in ["clean", "failures"] {
        let dir = imports("lm-eval", run_name);
        let run = rigaudit(&["verify", dir.to_str().unwrap(), "--format", "json"]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert!(!run.has("quality.pct-mismatch"), "{}", run.stdout);
        assert!(!run.has("import.stderr-mismatch"), "{}", run.stdout);
        assert!(!run.has("quality.scoring-disagrees"), "{}", run.stdout);
        let f = run.findings("import.unscorable-reply");
        assert_eq!(f.len(), 1, "{}", run.stdout);
        assert!(f[0]["message"]
            .as_str()
            .unwrap()
            .contains("3 of 24 replies gave the filter no answer"));
        let keys: Vec<String> = run.json()["recomputed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["key"].as_str().unwrap().to_string())
            .collect();
        assert!(
            keys.iter().any(|k| k.ends_with("exact_match,letter")),
            "{keys:?}"
        );
        assert!(
            keys.iter().any(|k| k.ends_with("margin95.wilson")),
            "{keys:?}"
        );
    }
}

#[test]
fn lm_eval_empty_reply_scored_wrong_is_caught() {
    let c = Files::of("lm-eval", "clean");
    let samples = named(c.path(), "samples_");
    c.edit_line(&samples, 2, |v| {
        v["resps"] = json!([[""]]);
        v["filtered_resps"] = json!(["[invalid]"]);
    });
    let run = verify_from("lm-eval", c.path());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.empty-scored-wrong");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "line 2");
    let msg = f[0]["message"].as_str().unwrap();
    assert!(msg.contains("1 of 24 replies are empty"), "{msg}");
    // 5 right of the 23 answered.
    assert!(
        msg.contains("exact_match 0.2174 over the 23 answered"),
        "{msg}"
    );
}

#[test]
fn lm_eval_printed_score_stderr_count_and_marks_that_disagree_are_caught() {
    let c = Files::of("lm-eval", "clean");
    let results = named(c.path(), "results_");
    c.set(
        &results,
        "/results/rigaudit_arith/exact_match,letter",
        json!(0.25),
    );
    c.set(
        &results,
        "/results/rigaudit_arith/exact_match_stderr,letter",
        json!(0.05),
    );
    c.set(&results, "/n-samples/rigaudit_arith/effective", json!(30));
    let run = verify_from("lm-eval", c.path());
    assert_eq!(
        run.findings("quality.pct-mismatch").len(),
        1,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.findings("import.stderr-mismatch").len(),
        1,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.findings("import.failed-hidden").len(),
        1,
        "{}",
        run.stdout
    );

    // A wrong answer marked right: the re-scoring disagrees, and the mean moves.
    let c = Files::of("lm-eval", "clean");
    let samples = named(c.path(), "samples_");
    c.edit_line(&samples, 1, |v| v["exact_match"] = json!(1.0));
    let run = verify_from("lm-eval", c.path());
    let f = run.findings("quality.scoring-disagrees");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "line 1");
    assert!(run.has("quality.pct-mismatch"));
}

const DETAIL: &str = "mlperf_log_detail.txt";
const LG_SUMMARY: &str = "mlperf_log_summary.txt";

/// Rewrites the value of one `:::MLLOG` key in a detail log copy.
fn set_mllog(c: &Files, key: &str, value: Value) {
    let p = c.file(DETAIL);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut hit = false;
    let lines: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix(":::MLLOG ") {
            Some(j) => {
                let mut v: Value = serde_json::from_str(j).unwrap();
                if v["key"] == key {
                    v["value"] = value.clone();
                    hit = true;
                }
                format!(":::MLLOG {}", serde_json::to_string(&v).unwrap())
            }
            None => l.to_string(),
        })
        .collect();
    assert!(hit, "{key}");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
}

#[test]
fn loadgen_runs_are_judged_by_their_own_rules() {
    let run = rigaudit(&[
        "verify",
        imports("loadgen", "clean").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let f = run.findings("import.run-incomplete");
    assert_eq!(f.len(), 1);
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .ends_with("not met: early stopping"),
        "{}",
        f[0]["message"]
    );
    assert!(run.has_at("import.settings-below-rules", "warning"));
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(!run.has("import.tool-errors"));
    assert!(run.json()["recomputed"].as_array().unwrap().len() >= 30);

    // The overloaded run ended on its query cap before its minimum duration: LoadGen says so.
    let run = verify_from("loadgen", &imports("loadgen", "failures"));
    let f = run.findings("import.run-incomplete");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("minimum duration"),
        "{}",
        f[0]["message"]
    );
    let e = run.findings("import.tool-errors");
    assert_eq!(e.len(), 1, "{}", run.stdout);
    assert!(e[0]["message"]
        .as_str()
        .unwrap()
        .contains("Max query count reached"));
}

#[test]
fn loadgen_valid_verdict_over_unmet_rules_and_a_changed_summary_are_caught() {
    let c = Files::of("loadgen", "failures");
    set_mllog(&c, "result_validity", json!("VALID"));
    set_mllog(&c, "result_min_duration_met", json!(true));
    let run = verify_from("loadgen", c.path());
    let f = run.findings("import.validity-mismatch");
    let msgs: Vec<&str> = f.iter().map(|x| x["message"].as_str().unwrap()).collect();
    assert_eq!(f.len(), 2, "{msgs:?}");
    assert!(msgs[0].contains("VALID though"), "{msgs:?}");
    assert!(msgs[1].contains("minimum duration is said met"), "{msgs:?}");
    // The summary still prints INVALID and NO: it disagrees with the (changed) detail log.
    assert!(
        run.findings("speed.recompute-mismatch").len() >= 2,
        "{}",
        run.stdout
    );

    let c = Files::of("loadgen", "clean");
    let p = c.file(LG_SUMMARY);
    let text = std::fs::read_to_string(&p).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("99.00 percentile first token latency"))
        .unwrap()
        .to_string();
    std::fs::write(
        &p,
        text.replace(&line, "99.00 percentile first token latency (ns)   : 100"),
    )
    .unwrap();
    let run = verify_from("loadgen", c.path());
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert!(f[0]["message"]
        .as_str()
        .unwrap()
        .contains("result_first_token_99.00_percentile_latency_ns is printed as 100"));
}

#[test]
fn aiperf_ttft_taken_at_the_empty_first_chunk_is_caught() {
    let c = Files::of("aiperf", "clean");
    let raw = std::fs::read_to_string(c.file("profile_export_raw.jsonl")).unwrap();
    let first: Value = serde_json::from_str(raw.lines().next().unwrap()).unwrap();
    let start = first["start_perf_ns"].as_i64().unwrap();
    // The stream's first chunk carries only the role: its time is what a careless TTFT takes.
    let chunk = first["responses"][0]["perf_ns"].as_i64().unwrap();
    assert!(first["responses"][0]["packets"][0]["value"]
        .as_str()
        .unwrap()
        .contains("\"content\":\"\""));
    let id = first["metadata"]["x_request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let text = std::fs::read_to_string(c.file(RECORDS)).unwrap();
    let n = text.lines().position(|l| l.contains(&id)).unwrap() + 1;
    c.edit_line(RECORDS, n, |v| {
        v["metrics"]["time_to_first_token"]["value"] = json!((chunk - start) as f64 / 1e6);
    });
    let run = verify_from("aiperf", c.path());
    let f = run.findings("import.ttft-empty-chunk");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "line 1");
    assert_eq!(f[0]["data"]["record_line"], n);
}

#[test]
fn diff_of_two_aiperf_runs_names_the_changed_setting_and_a_moved_latency() {
    let c = Files::of("aiperf", "clean");
    // Every request three times as slow to its first token.
    let p = c.file(RECORDS);
    let text = std::fs::read_to_string(&p).unwrap();
    let n = text.lines().count();
    for i in 1..=n {
        c.edit_line(RECORDS, i, |v| {
            if let Some(x) = v["metrics"]["time_to_first_token"]["value"].as_f64() {
                v["metrics"]["time_to_first_token"]["value"] = json!(x * 3.0);
            }
        });
    }
    c.set(SUMMARY, "/input_config/phases/0/concurrency", json!(4));
    let clean = imports("aiperf", "clean");
    let run = rigaudit(&[
        "diff",
        clean.to_str().unwrap(),
        c.path().to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let r = run.json();
    let setup = r["setup_changes"].as_array().unwrap();
    assert_eq!(setup.len(), 1, "{setup:?}");
    assert_eq!(setup[0]["what"], "input_config/phases/0/concurrency");
    assert_eq!(
        (setup[0]["a"].as_str(), setup[0]["b"].as_str()),
        (Some("2"), Some("4"))
    );
    let moved = run.findings("diff.moved");
    assert_eq!(moved.len(), 1, "{}", run.stdout);
    assert!(moved[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("aiperf.time_to_first_token: moved +200.0 %"));
    // The same run against itself: nothing differs, nothing moved.
    let run = rigaudit(&[
        "diff",
        clean.to_str().unwrap(),
        clean.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.has("diff.moved") && !run.has("diff.setup-differs"));
}

#[test]
fn diff_of_an_imported_bundle_and_files_and_of_two_tools() {
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    let lm = imports("lm-eval", "clean");
    let run = rigaudit(&["import", lm.to_str().unwrap(), "--out", b.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = rigaudit(&[
        "diff",
        b.to_str().unwrap(),
        lm.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let rows = run.json()["comparisons"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["test"], "two-proportion-z");
    let run = rigaudit(&[
        "diff",
        lm.to_str().unwrap(),
        imports("guidellm", "clean").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("is lm-eval and"), "{}", run.stderr);
}

#[test]
fn every_format_imports_into_a_bundle_whose_verify_gives_the_same_findings() {
    for (format, run_name) in [
        ("aiperf", "failures"),
        ("guidellm", "failures"),
        ("lm-eval", "clean"),
        ("loadgen", "failures"),
        ("llama-bench", "failures"),
        ("llama-server", "failures"),
        ("llama-server", "stream-failures"),
        ("vllm", "failures"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let b = out.path().join("b");
        let src = imports(format, run_name);
        let direct = verify_from(format, &src);
        let run = rigaudit(&[
            "import",
            "--from",
            format,
            src.to_str().unwrap(),
            "--out",
            b.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(run.code, direct.code, "{format}: {}", run.stderr);
        let rec: Value =
            serde_json::from_str(&std::fs::read_to_string(b.join("import.json")).unwrap()).unwrap();
        assert_eq!(rec["from"], format);
        // A tool version the file records, or a note that it records none (vLLM, llama-server).
        let version_said = rec["not_taken"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("version"));
        assert!(
            rec["tool_version"].is_string() || version_said,
            "{format}: {rec}"
        );
        assert!(!rec["taken"].as_array().unwrap().is_empty());
        assert!(!rec["not_taken"].as_array().unwrap().is_empty());
        let v = common::verify(&b);
        let checks = |r: &Run| {
            let mut c: Vec<String> = r.json()["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| format!("{} {}", f["check"], f["message"]))
                .collect();
            c.sort();
            c
        };
        assert_eq!(checks(&v), checks(&direct), "{format}");
        assert_eq!(v.code, direct.code, "{format}");
    }
}

#[test]
fn a_fifo_given_as_a_result_file_is_refused_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("profile_export_aiperf.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let run = verify_from("aiperf", &fifo);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
}

#[test]
fn loadgen_summary_is_compared_at_the_decimals_it_prints() {
    // 0.49 printed for 0.4906 agrees; 0.52 (a move that rounds away at two decimals) does not.
    let c = Files::of("loadgen", "clean");
    let p = c.file(LG_SUMMARY);
    let text = std::fs::read_to_string(&p).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Completed samples per second"))
        .unwrap()
        .to_string();
    std::fs::write(
        &p,
        text.replace(&line, "Completed samples per second    : 0.52"),
    )
    .unwrap();
    let run = verify_from("loadgen", c.path());
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "line 7");
}

const BENCH: &str = "llama-bench.json";

#[test]
fn llama_bench_clean_run_recomputes_every_mean_and_spread() {
    for run_name in ["clean", "jsonl"] {
        let run = verify_from("llama-bench", &imports("llama-bench", run_name));
        assert_eq!(run.code, 0, "{run_name}: {}{}", run.stdout, run.stderr);
        let keys: Vec<String> = run.json()["recomputed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["key"].as_str().unwrap().to_string())
            .collect();
        for k in [
            "llama-bench.pp64.avg_ts",
            "llama-bench.pp64.stddev_ts",
            "llama-bench.tg16.avg_ns",
            "llama-bench.tg16.stddev_ns",
            "llama-bench.tg16.samples_ts.2",
        ] {
            assert!(
                keys.iter().any(|x| x == k),
                "{run_name}: {k} not recomputed"
            );
        }
    }
}

#[test]
fn llama_bench_run_stopped_by_a_failed_test_is_incomplete() {
    // The real run: the q4_0 V cache without flash attention cannot make a context; llama-bench
    // stops and leaves its array unclosed after the two f16 tests.
    let run = rigaudit(&[
        "verify",
        imports("llama-bench", "failures")
            .join(BENCH)
            .to_str()
            .unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.run-incomplete");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert!(f[0]["message"]
        .as_str()
        .unwrap()
        .contains("ends unclosed after 2 complete tests"));
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
}

#[test]
fn llama_bench_overflowed_stddev_of_the_real_run_is_named() {
    let run = verify_from("llama-bench", &imports("llama-bench", "overflow"));
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "/0/stddev_ns");
    assert!(f[0]["message"].as_str().unwrap().contains("wrapped"));
    assert_eq!(f[0]["data"]["printed"], 3434407237u64);
}

#[test]
fn llama_bench_printed_mean_that_disagrees_with_its_samples_is_caught() {
    let c = Files::of("llama-bench", "clean");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(c.file(BENCH)).unwrap()).unwrap();
    let ts = v[1]["avg_ts"].as_f64().unwrap();
    c.set(BENCH, "/1/avg_ts", json!(ts + 0.01));
    c.set(BENCH, "/0/samples_ts/1", json!(999.0));
    let run = verify_from("llama-bench", c.path());
    assert_eq!(run.code, 1);
    let at: Vec<String> = run
        .findings("speed.recompute-mismatch")
        .iter()
        .map(|f| f["pointer"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(at, ["/0/samples_ts/1", "/1/avg_ts"], "{}", run.stdout);
}

const RESPONSES: &str = "responses.jsonl";

#[test]
fn llama_server_clean_timings_recompute_and_the_cached_prompt_is_named() {
    let run = verify_from("llama-server", &imports("llama-server", "clean"));
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(!run.has("import.failed-requests"));
    assert!(!run.has("speed.token-source"), "{}", run.stdout);
    // The same prompt asked twice: the second answer took 4 of its 5 tokens from the cache.
    let f = run.findings("speed.cached-tokens");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "line 2 /timings/cache_n");
    let n = run.json()["recomputed"].as_array().unwrap().len();
    assert_eq!(n, 16);
}

#[test]
fn llama_server_refused_and_empty_responses_of_the_real_run_are_named() {
    let dir = imports("llama-server", "failures");
    let run = rigaudit(&[
        "verify",
        dir.join(RESPONSES).to_str().unwrap(),
        "--format",
        "json",
    ]);
    let f = run.findings("import.failed-requests");
    assert_eq!(f.len(), 1, "{}{}", run.stdout, run.stderr);
    assert!(f[0]["message"]
        .as_str()
        .unwrap()
        .contains("exceeds the available context size (256 tokens)"));
    assert_eq!(f[0]["pointer"], "line 6");
    let e = run.findings("import.failed-as-zero");
    assert_eq!(e.len(), 1, "{}", run.stdout);
    assert_eq!(e[0]["severity"], "warning");
    assert!(e[0]["message"].as_str().unwrap().contains("an empty reply"));
}

#[test]
fn llama_server_rate_that_disagrees_with_its_counts_is_caught() {
    let c = Files::of("llama-server", "clean");
    c.edit_line(RESPONSES, 3, |v| {
        let x = v["timings"]["predicted_per_second"].as_f64().unwrap();
        v["timings"]["predicted_per_second"] = json!(x * 1.2);
    });
    c.edit_line(RESPONSES, 4, |v| {
        v["usage"]["completion_tokens"] = json!(16);
    });
    let run = verify_from("llama-server", c.path());
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "line 3 /timings/predicted_per_second");
    let t = run.findings("speed.token-source");
    assert_eq!(t.len(), 1, "{}", run.stdout);
    assert!(t[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("line 4: usage.completion_tokens is 16"));
}

#[test]
fn llama_runs_diff_and_import_like_the_other_formats() {
    // Two real llama-bench runs of one command: the tests line up, settings that differ named.
    let run = rigaudit(&[
        "diff",
        imports("llama-bench", "clean").to_str().unwrap(),
        imports("llama-bench", "jsonl").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(run.code < 2, "{}{}", run.stdout, run.stderr);
    let rows = run.json()["comparisons"].as_array().unwrap().clone();
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "llama-bench.pp64.prefill_tokens_per_s",
            "llama-bench.tg16.decode_tokens_per_s"
        ]
    );
    for (format, dir) in [("llama-bench", "failures"), ("llama-server", "failures")] {
        let out = tempfile::tempdir().unwrap();
        let b = out.path().join("b");
        let src = imports(format, dir);
        let run = rigaudit(&[
            "import",
            src.to_str().unwrap(),
            "--out",
            b.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 1, "{format}: {}", run.stderr);
        let rec: Value =
            serde_json::from_str(&std::fs::read_to_string(b.join("import.json")).unwrap()).unwrap();
        assert_eq!(rec["from"], format);
        let v = common::verify(&b);
        assert_eq!(v.code, 1, "{format}: {}", v.stdout);
        assert_eq!(
            v.findings("import.failed-requests").len() + v.findings("import.run-incomplete").len(),
            1
        );
    }
}

/// Rewrites the `data: {...}` event on line `n` (1-based) of a saved stream with `f`.
fn edit_event(c: &Files, name: &str, n: usize, f: impl FnOnce(&mut Value)) {
    let p = c.file(name);
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<String> = text.split('\n').map(String::from).collect();
    let mut v: Value = serde_json::from_str(lines[n - 1].strip_prefix("data: ").unwrap()).unwrap();
    f(&mut v);
    lines[n - 1] = format!("data: {}", serde_json::to_string(&v).unwrap());
    std::fs::write(&p, lines.join("\n")).unwrap();
}

#[test]
fn llama_server_clean_streams_recompute_and_name_the_cached_prompt_and_the_chunk_count() {
    let dir = imports("llama-server", "stream-clean");
    // Detected from the content: `data:` events carrying llama.cpp's fields.
    let run = rigaudit(&["verify", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(!run.has("import.failed-requests"));
    assert!(!run.has("import.run-incomplete"));
    let f = run.findings("speed.cached-tokens");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["file"], "2-completion-cached.sse");
    assert_eq!(f[0]["pointer"], "line 33 /timings/cache_n");
    // The chat stream ended at the end-of-generation token: 7 chunks of text for 8 tokens, as the
    // server sends it (that token has no text), so nothing is said.
    assert!(!run.has("speed.token-source"), "{}", run.stdout);
    let chat = std::fs::read_to_string(dir.join("4-chat.sse")).unwrap();
    assert!(chat.contains("\"finish_reason\":\"stop\""));
    assert_eq!(run.json()["recomputed"].as_array().unwrap().len(), 16);
}

#[test]
fn llama_server_refused_and_empty_streams_of_the_real_run_are_named() {
    let run = verify_from("llama-server", &imports("llama-server", "stream-failures"));
    let f = run.findings("import.failed-requests");
    assert_eq!(f.len(), 1, "{}{}", run.stdout, run.stderr);
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.contains("6-completion-refused.sse: 400 request (690 tokens) exceeds the available context size (256 tokens)"), "{m}");
    assert!(m.starts_with("1 of 7 responses"), "{m}");
    let e = run.findings("import.failed-as-zero");
    assert_eq!(e.len(), 1, "{}", run.stdout);
    assert_eq!(e[0]["file"], "5-completion-empty.sse");
    assert!(e[0]["message"].as_str().unwrap().contains("an empty reply"));
}

#[test]
fn llama_server_stream_whose_timings_disagree_with_its_counts_is_caught() {
    let c = Files::of("llama-server", "stream-clean");
    // The final chunk's printed rate, its stated token count, and one chunk of text dropped.
    edit_event(&c, "3-completion.sse", 49, |v| {
        let x = v["timings"]["predicted_per_second"].as_f64().unwrap();
        v["timings"]["predicted_per_second"] = json!(x * 1.2);
    });
    edit_event(&c, "1-completion.sse", 33, |v| {
        v["tokens_predicted"] = json!(15)
    });
    let p = c.file("1-completion.sse");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut lines: Vec<&str> = text.split('\n').collect();
    lines.drain(2..4); // the second event and its blank line
    std::fs::write(&p, lines.join("\n")).unwrap();
    let run = verify_from("llama-server", c.path());
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(f[0]["file"], "3-completion.sse");
    assert_eq!(f[0]["pointer"], "line 49 /timings/predicted_per_second");
    let t = run.findings("speed.token-source");
    let msgs: Vec<&str> = t.iter().map(|x| x["message"].as_str().unwrap()).collect();
    assert_eq!(t.len(), 2, "{msgs:?}");
    assert!(
        msgs.iter().any(|m| m.starts_with(
            "1-completion.sse line 31: tokens_predicted is 15 but the timings count 16"
        )),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|m| m.starts_with(
            "1-completion.sse line 31: the stream sent 15 chunks of text but the timings count 16"
        )),
        "{msgs:?}"
    );
}

#[test]
fn llama_server_stream_cut_mid_event_is_named_and_a_broken_line_refused() {
    let c = Files::of("llama-server", "stream-clean");
    let p = c.file("3-completion.sse");
    let bytes = std::fs::read(&p).unwrap();
    let last = bytes.windows(7).rposition(|w| w == b"\ndata: ").unwrap() + 1;
    std::fs::write(&p, &bytes[..last + 40]).unwrap();
    let run = verify_from("llama-server", c.path());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.run-incomplete");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["file"], "3-completion.sse");
    assert_eq!(f[0]["pointer"], "line 49");
    let m = f[0]["message"].as_str().unwrap();
    assert!(
        m.contains(&format!("at line 49 (byte {last}), ends after 40 bytes")),
        "{m}"
    );
    // The rest of the set is still checked.
    assert_eq!(run.json()["recomputed"].as_array().unwrap().len(), 12);
    // Cut inside the closing `data: [DONE]`, after the final chunk: nothing is missing.
    let d = Files::of("llama-server", "stream-clean");
    let chat = std::fs::read(d.file("4-chat.sse")).unwrap();
    std::fs::write(d.file("4-chat.sse"), &chat[..chat.len() - 6]).unwrap();
    let run = verify_from("llama-server", d.path());
    assert!(!run.has("import.run-incomplete"), "{}", run.stdout);
    // A broken event inside a stream (not at its end) is bad input: exit 2, file, line and byte.
    let mut broken = bytes[..last + 40].to_vec();
    broken.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    std::fs::write(&p, &broken).unwrap();
    let run = verify_from("llama-server", c.path());
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!(
            "3-completion.sse: line 49 (byte {last}): malformed SSE chunk"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn llama_server_stream_that_fails_mid_reply_is_a_failed_request_not_a_cut_one() {
    // llama.cpp's server ends a stream that fails after it started with one `data:` event holding
    // an OpenAI-shaped error object (`format_oai_sse` of `{"error": {...}}`). The real stream is
    // kept up to its tenth chunk of text and ended that way.
    let c = Files::of("llama-server", "stream-clean");
    let p = c.file("3-completion.sse");
    let text = std::fs::read_to_string(&p).unwrap();
    let mut kept: Vec<&str> = text.split('\n').take(20).collect();
    let error = r#"data: {"error":{"code":500,"message":"failed to decode the batch","type":"server_error"}}"#;
    kept.extend([error, "", ""]);
    std::fs::write(&p, kept.join("\n")).unwrap();
    let run = verify_from("llama-server", c.path());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.failed-requests");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["file"], "3-completion.sse");
    assert_eq!(f[0]["pointer"], "line 21");
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.starts_with("1 of 4 responses"), "{m}");
    assert!(
        m.contains("3-completion.sse: 500 failed to decode the batch, after 10 chunks of text"),
        "{m}"
    );
    // A failed stream is not a cut one, and the other three are still recomputed.
    assert!(!run.has("import.run-incomplete"), "{}", run.stdout);
    assert_eq!(run.json()["recomputed"].as_array().unwrap().len(), 12);
}

const VLLM: &str = "openai-infqps-concurrency2-smollm2.json";

#[test]
fn vllm_clean_result_recomputes_every_aggregate_from_its_requests() {
    let run = verify_from("vllm", &imports("vllm", "clean"));
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let keys: Vec<String> = run.json()["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["key"].as_str().unwrap().to_string())
        .collect();
    for k in [
        "vllm.completed",
        "vllm.p99_ttft_ms",
        "vllm.std_tpot_ms",
        "vllm.median_itl_ms",
        "vllm.p90_e2el_ms",
        "vllm.total_token_throughput",
        "vllm.max_concurrent_requests",
        "vllm.max_output_tokens_per_s",
    ] {
        assert!(keys.iter().any(|x| x == k), "{k} not recomputed");
    }
}

#[test]
fn vllm_refused_requests_of_the_real_run_are_named_and_detected() {
    let dir = imports("vllm", "failures");
    let run = rigaudit(&[
        "verify",
        dir.join(VLLM).to_str().unwrap(),
        "--format",
        "json",
    ]);
    let f = run.findings("import.failed-requests");
    assert_eq!(f.len(), 1, "{}{}", run.stdout, run.stderr);
    assert!(f[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("3 of 12 requests failed (3 x Bad Request)"));
    assert_eq!(f[0]["pointer"], "/errors/3,7,11");
    assert!(!run.has("import.failed-hidden") && !run.has("speed.recompute-mismatch"));
}

#[test]
fn vllm_failed_requests_inside_success_figures_and_a_changed_aggregate_are_caught() {
    let dir = imports("vllm", "failures");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(VLLM)).unwrap()).unwrap();
    let ttfts: Vec<f64> = v["ttfts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    // The mean TTFT over all 12 requests, the 3 refused ones at 0 s; and no failure counted.
    let over_all = 1000.0 * ttfts.iter().sum::<f64>() / ttfts.len() as f64;
    let c = Files::of("vllm", "failures");
    c.set(VLLM, "/mean_ttft_ms", json!(over_all));
    c.set(VLLM, "/failed", json!(0));
    c.set(VLLM, "/p99_e2el_ms", json!(1.0));
    let run = verify_from("vllm", c.path());
    assert_eq!(run.code, 1);
    let z = run.findings("import.failed-as-zero");
    assert_eq!(z.len(), 1, "{}", run.stdout);
    assert_eq!(z[0]["pointer"], "/mean_ttft_ms");
    assert!(run.has("import.failed-hidden"));
    let m = run.findings("speed.recompute-mismatch");
    assert_eq!(m.len(), 1, "{}", run.stdout);
    assert_eq!(m[0]["pointer"], "/p99_e2el_ms");
    // A refused request rewritten as a success with no reply.
    let c = Files::of("vllm", "clean");
    c.set(VLLM, "/ttfts/5", json!(0.0));
    c.set(VLLM, "/generated_texts/5", json!(""));
    let run = verify_from("vllm", c.path());
    let z = run.findings("import.failed-as-zero");
    assert_eq!(z.len(), 1, "{}", run.stdout);
    assert_eq!(z[0]["pointer"], "/ttfts/5");
}

#[test]
fn vllm_results_diff_import_and_refuse_a_summary_without_its_requests() {
    let clean = imports("vllm", "clean");
    let run = rigaudit(&[
        "diff",
        clean.to_str().unwrap(),
        imports("vllm", "failures").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(run.code < 2, "{}{}", run.stdout, run.stderr);
    let rows = run.json()["comparisons"].as_array().unwrap().clone();
    assert!(rows.iter().any(|r| r["key"] == "vllm.ttft_ms"));
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    let run = rigaudit(&[
        "import",
        clean.to_str().unwrap(),
        "--out",
        b.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(common::verify(&b).code, 0);
    // Without --save-detailed the per-request lists are absent: refused, naming what is missing.
    let c = Files::of("vllm", "clean");
    let p = c.file(VLLM);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("ttfts");
    std::fs::write(&p, v.to_string()).unwrap();
    let run = verify_from("vllm", c.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("at /ttfts: expected a list"),
        "{}",
        run.stderr
    );
}
