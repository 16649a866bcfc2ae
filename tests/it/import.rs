//! `rigaudit import` and `verify --from`: the committed result files of the field's tools
//! (`fixtures/imports/`, made by the tools themselves against the bundled engine), and hand-changed
//! copies of them that each check must catch. Needs none of the tools installed.

use crate::common;

use common::assert_has;
use common::{assert_any, read_json, rigaudit, rigaudit_line, root, Run};
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
        let mut v: Value = read_json(&p);
        match v.pointer_mut(pointer) {
            Some(x) => *x = value,
            None => {
                // A key added to an object that exists.
                let (parent, key) = pointer.rsplit_once('/').unwrap();
                let obj = v.pointer_mut(parent).and_then(Value::as_object_mut);
                let obj = obj.unwrap_or_else(|| panic!("{name} has no {parent}"));
                obj.insert(key.to_string(), value);
            }
        }
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
    rigaudit_line(
        "verify --from {} {} --format json",
        &[format, path.to_str().unwrap()],
    )
}

const SUMMARY: &str = "profile_export_aiperf.json";
const RECORDS: &str = "profile_export.jsonl";

#[test]
fn aiperf_clean_run_recomputes_every_aggregate_and_names_the_cached_prefix() {
    let run = verify_from("aiperf", &imports("aiperf", "clean"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(!run.has("import.failed-requests"));
    assert!(!run.has("import.failed-hidden"));
    assert!(!run.has("import.failed-as-zero"));
    // The engine serves the chat template's prefix from its cache: a real finding, a warning
    // naming what AIPerf's figures then include (docs/formats/aiperf.md row A9), not an error:
    // the file is what AIPerf computed.
    assert!(run.has_at("speed.cached-tokens", "warning"));
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
    // Issue 38: `benchmark_duration`, 8e-8 s off its records' sum, was a DIFFERS row printed
    // 14.028 / 14.028 with no finding behind it. Every row agrees, and the text shows none.
    let differ: Vec<&Value> = r["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["matches"] != true)
        .collect();
    assert!(differ.is_empty(), "{differ:?}");
    let text = rigaudit_line(
        "verify --from aiperf {} --verbose",
        &[imports("aiperf", "clean").to_str().unwrap()],
    );
    let duration = text
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("aiperf.benchmark_duration "))
        .unwrap_or_else(|| panic!("{}", text.stdout));
    assert!(duration.ends_with("match"), "{duration}");
}

#[test]
fn aiperf_format_is_detected_from_the_content() {
    let dir = imports("aiperf", "failures");
    let run = rigaudit_line(
        "verify {} {} --format json",
        &[
            dir.join(SUMMARY).to_str().unwrap(),
            dir.join(RECORDS).to_str().unwrap(),
        ],
    );
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
fn aiperf_import_writes_a_bundle_that_verify_reads_and_whose_digests_hold() {
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    let src = imports("aiperf", "failures");
    let run = rigaudit_line(
        "import --from aiperf {} --out {} --format json",
        &[src.to_str().unwrap(), b.to_str().unwrap()],
    );
    // A refused request and cached prompt tokens: warnings; nothing AIPerf's code contradicts.
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.has("import.failed-requests"));
    let m: Value = read_json(&b.join("bundle.json"));
    let rec: Value = read_json(&b.join("import.json"));
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
    assert_eq!(v.code, 0, "{}", v.stderr);
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
    run.assert_stderr_has("profile_export.jsonl: line 13: at /metrics/x/value: expected a number");
    // Records that are not JSON Lines: one finding on that file, the summary checked.
    std::fs::write(&p, "not json\n").unwrap();
    let run = verify_from("aiperf", c.path());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.unreadable");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(
        (&f[0]["file"], &f[0]["pointer"]),
        (&json!(RECORDS), &json!("line 1, column 2"))
    );
    assert_has(f[0]["message"].as_str().unwrap(), "not valid JSON");
    let artifacts = run.json()["artifacts"].to_string();
    assert!(
        artifacts.contains(SUMMARY) && !artifacts.contains(&format!("\"{RECORDS}\"")),
        "{artifacts}"
    );

    // Without its records the summary is read alone (as AIPerf before --export-level records):
    // nothing is recomputed from requests, and that is said.
    std::fs::remove_file(&p).unwrap();
    let run = verify_from("aiperf", c.path());
    assert!(run.code < 2, "{}", run.stderr);
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(run.findings("import.not-recomputable")[0]["message"]
        .as_str()
        .unwrap()
        .contains("time_to_first_token"));
}

#[test]
fn import_refuses_a_non_empty_output_and_unknown_files() {
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("x"), "x").unwrap();
    let src = imports("aiperf", "clean");
    let (src, to) = (src.to_str().unwrap(), out.path().to_str().unwrap());
    let run = rigaudit_line("import {} --out {}", &[src, to]);
    assert_eq!(run.code, 2);
    run.assert_stderr_has("exists and is not empty");
    let run = rigaudit_line(
        "import {} --out {}",
        &[
            out.path().join("x").to_str().unwrap(),
            out.path().join("y").to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 2);
    run.assert_stderr_has("not a result file of a format rigaudit imports");
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
        assert_any(&keys, |k| k.ends_with("exact_match,letter"));
        assert_any(&keys, |k| k.ends_with("margin95.wilson"));
    }
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
    let run = rigaudit_line(
        "diff {} {} --format json",
        &[clean.to_str().unwrap(), c.path().to_str().unwrap()],
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let r = run.json();
    let setup = r["setup_changes"].as_array().unwrap();
    assert_eq!(setup.len(), 1, "{setup:?}");
    assert_eq!(setup[0]["what"], "input_config/phases/0/concurrency");
    assert_eq!(
        (setup[0]["a"].as_str(), setup[0]["b"].as_str()),
        (Some("2"), Some("4"))
    );
    // The mean's row changed (worse: a time went up); its percentiles may too, and nothing else.
    let moved = run.findings("diff.moved");
    assert!(moved[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("aiperf.time_to_first_token +200.0 %: 90 % interval"));
    assert!(
        moved.iter().all(|f| f["message"]
            .as_str()
            .unwrap()
            .starts_with("aiperf.time_to_first_token")),
        "{}",
        run.stdout
    );
    let mean = common::entry(&r, "comparisons", "key", "aiperf.time_to_first_token");
    assert_eq!(
        (&mean["verdict"], &mean["better"]),
        (&json!("changed"), &json!(false))
    );
    // The same run against itself: nothing differs, nothing moved.
    let run = rigaudit_line(
        "diff {} {} --format json",
        &[clean.to_str().unwrap(), clean.to_str().unwrap()],
    );
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
    let run = rigaudit_line(
        "diff {} {} --format json",
        &[b.to_str().unwrap(), lm.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let rows = run.json()["comparisons"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    // The same documents by id on both sides: compared paired.
    assert_eq!(rows[0]["test"], "mcnemar-paired", "{}", rows[0]);
    let run = rigaudit_line(
        "diff {} {}",
        &[
            lm.to_str().unwrap(),
            imports("guidellm", "clean").to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 2);
    run.assert_stderr_has("is lm-eval and");
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
        let run = rigaudit_line(
            "import --from {} {} --out {} --format json",
            &[format, src.to_str().unwrap(), b.to_str().unwrap()],
        );
        assert_eq!(run.code, direct.code, "{format}: {}", run.stderr);
        let rec: Value = read_json(&b.join("import.json"));
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

/// The lm-eval fixture's samples file in a copy of the run.
fn lm_eval_samples(c: &Files) -> PathBuf {
    let found = std::fs::read_dir(c.path()).unwrap().flatten();
    let mut names = found.map(|e| e.path()).filter(|p| {
        let n = p.file_name().unwrap().to_string_lossy();
        n.starts_with("samples_")
    });
    names.next().unwrap()
}

/// A verify of an lm-eval folder whose samples file could not be read: one `import.unreadable`
/// error on that file, the results still checked (the task said not re-scored, for that reason).
fn assert_results_checked_without(run: &Run, samples: &str, pointer: Value, says: &str) {
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.unreadable");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["file"], samples, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], pointer, "{}", run.stdout);
    assert_eq!(f[0]["severity"], "error");
    assert_has(f[0]["message"].as_str().unwrap(), says);
    let ran = run.json()["checks_run"].to_string();
    assert!(ran.contains("import.subset-of-dataset"), "{ran}");
    let said = run.findings("import.not-recomputable");
    assert_any(&said, |x| {
        x["file"] == samples
            && x["message"].as_str().unwrap().contains(
                "could not be read whole (import.unreadable), so the task is not re-scored",
            )
    });
    let artifacts = run.json()["artifacts"].to_string();
    assert!(
        artifacts.contains("results_") && !artifacts.contains(samples),
        "{artifacts}"
    );
}

#[test]
fn an_lm_eval_samples_file_with_a_line_over_1_mib_is_one_finding_and_the_results_are_checked() {
    let c = Files::of("lm-eval", "clean");
    let p = lm_eval_samples(&c);
    let name = p.file_name().unwrap().to_str().unwrap().to_string();
    let mut text = std::fs::read_to_string(&p).unwrap();
    let lines = text.lines().count();
    text.push_str(&format!(
        "{{\"doc_id\": 99, \"resps\": \"{}\"}}\n",
        "a".repeat(2 << 20)
    ));
    std::fs::write(&p, &text).unwrap();
    let run = verify_from("lm-eval", c.path());
    let line = json!(format!("line {}", lines + 1));
    assert_results_checked_without(
        &run,
        &name,
        line,
        "longer than the bound for one record (1 MiB)",
    );
    // Without --from too (the format detected), and in the text report.
    let text = rigaudit(&["verify", c.path().to_str().unwrap()]);
    assert_eq!(text.code, 1, "{}{}", text.stdout, text.stderr);
    assert_has(&text.stdout, "import.unreadable");
}

#[test]
fn an_lm_eval_samples_fifo_is_one_finding_and_the_results_are_checked() {
    let c = Files::of("lm-eval", "clean");
    let p = lm_eval_samples(&c);
    let name = p.file_name().unwrap().to_str().unwrap().to_string();
    std::fs::remove_file(&p).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&p)
        .status()
        .unwrap();
    assert!(made.success());
    let run = verify_from("lm-eval", c.path());
    assert_results_checked_without(&run, &name, Value::Null, "not a regular file (a FIFO)");
    let run = rigaudit(&["verify", c.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
}

#[test]
fn an_unreadable_lm_eval_results_file_makes_the_run_incomplete_naming_it() {
    let c = Files::of("lm-eval", "clean");
    let mut results = std::fs::read_dir(c.path())
        .unwrap()
        .flatten()
        .map(|e| e.path());
    let p = results
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("results_")
        })
        .unwrap();
    let name = p.file_name().unwrap().to_str().unwrap().to_string();
    std::fs::write(&p, "{\"results\": {\"versions\": 1, \"n-shot\": ").unwrap();
    for run in [
        verify_from("lm-eval", c.path()),
        rigaudit(&["verify", c.path().to_str().unwrap(), "--format", "json"]),
    ] {
        assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
        let f = run.findings("import.unreadable");
        assert_eq!(f.len(), 1, "{}", run.stdout);
        assert_eq!(f[0]["file"], name.as_str());
        assert_has(f[0]["message"].as_str().unwrap(), "not valid JSON");
        assert_eq!(run.json()["verdict"], "incomplete");
        assert_has(&run.stdout, "the run cannot be checked");
        assert!(!run.has("import.not-recomputable"), "{}", run.stdout);
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
    run.assert_stderr_has("not a regular file");
}

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
fn llama_bench_overflowed_stddev_of_the_real_run_is_named() {
    let run = verify_from("llama-bench", &imports("llama-bench", "overflow"));
    let f = run.findings("speed.recompute-mismatch");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "/0/stddev_ns");
    assert!(f[0]["message"].as_str().unwrap().contains("wrapped"));
    assert_eq!(f[0]["data"]["printed"], 3434407237u64);
}

#[test]
fn llama_server_clean_timings_recompute_and_the_cached_prompt_is_named() {
    let run = verify_from("llama-server", &imports("llama-server", "clean"));
    // Cached prompt tokens are what llama-server counts them as (docs row S3): a warning.
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.has("speed.recompute-mismatch"), "{}", run.stdout);
    assert!(!run.has("import.failed-requests"));
    assert!(!run.has("speed.token-source"), "{}", run.stdout);
    // The same prompt asked twice: the second answer took 4 of its 5 tokens from the cache.
    let f = run.findings("speed.cached-tokens");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["pointer"], "line 2 /timings/cache_n");
    assert_eq!(f[0]["severity"], "warning");
    let n = run.json()["recomputed"].as_array().unwrap().len();
    assert_eq!(n, 16);
}

#[test]
fn llama_runs_diff_and_import_like_the_other_formats() {
    // Two real llama-bench runs of one command: the tests line up, settings that differ named.
    let run = rigaudit_line(
        "diff {} {} --format json",
        &[
            imports("llama-bench", "clean").to_str().unwrap(),
            imports("llama-bench", "jsonl").to_str().unwrap(),
        ],
    );
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
    // llama-bench's stopped run is an error; llama-server's refusal and empty reply warnings.
    for (format, dir, code) in [
        ("llama-bench", "failures", 1),
        ("llama-server", "failures", 0),
    ] {
        let out = tempfile::tempdir().unwrap();
        let b = out.path().join("b");
        let src = imports(format, dir);
        let run = rigaudit_line(
            "import {} --out {}",
            &[src.to_str().unwrap(), b.to_str().unwrap()],
        );
        assert_eq!(run.code, code, "{format}: {}", run.stderr);
        let rec: Value = read_json(&b.join("import.json"));
        assert_eq!(rec["from"], format);
        let v = common::verify(&b);
        assert_eq!(v.code, code, "{format}: {}", v.stdout);
        assert_eq!(
            v.findings("import.failed-requests").len() + v.findings("import.run-incomplete").len(),
            1
        );
    }
}

#[test]
fn llama_server_clean_streams_recompute_and_name_the_cached_prompt_and_the_chunk_count() {
    let dir = imports("llama-server", "stream-clean");
    // Detected from the content: `data:` events carrying llama.cpp's fields.
    let run = rigaudit(&["verify", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
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
    assert_has(m, &format!("at line 49 (byte {last}), ends after 40 bytes"));
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
    run.assert_stderr_has(&format!(
        "3-completion.sse: line 49 (byte {last}): malformed SSE chunk"
    ));
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
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.failed-requests");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    assert_eq!(f[0]["file"], "3-completion.sse");
    assert_eq!(f[0]["pointer"], "line 21");
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.starts_with("1 of 4 responses"), "{m}");
    assert_has(
        m,
        "3-completion.sse: 500 failed to decode the batch, after 10 chunks of text",
    );
    // A failed stream is not a cut one, and the other three are still recomputed.
    assert!(!run.has("import.run-incomplete"), "{}", run.stdout);
    assert_eq!(run.json()["recomputed"].as_array().unwrap().len(), 12);
}

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
    // Twelve requests: their p99 TTFT is the slowest one in disguise, a warning that names it;
    // the p99 ITL, over every gap of every request, has samples enough.
    let few = run.findings("import.percentile-few-samples");
    assert!(
        few.iter().any(|f| f["pointer"] == "/p99_ttft_ms"
            && f["message"]
                .as_str()
                .unwrap()
                .contains("p99 printed from 12 samples")),
        "{}",
        run.stdout
    );
    assert!(few.iter().all(|f| f["severity"] == "warning"));
    assert!(
        !few.iter().any(|f| f["pointer"] == "/p99_itl_ms"),
        "{}",
        run.stdout
    );
}

#[test]
fn vllm_results_diff_and_import() {
    let clean = imports("vllm", "clean");
    let run = rigaudit_line(
        "diff {} {} --format json",
        &[
            clean.to_str().unwrap(),
            imports("vllm", "failures").to_str().unwrap(),
        ],
    );
    // B lost 3 of 12 requests: no figure of it is comparable, so the diff compared nothing.
    assert_eq!(run.json()["verdict"], "incomplete", "{}", run.stdout);
    let rows = run.json()["comparisons"].as_array().unwrap().clone();
    assert!(rows.iter().any(|r| r["key"] == "vllm.ttft_ms"));
    let out = tempfile::tempdir().unwrap();
    let b = out.path().join("b");
    let run = rigaudit_line(
        "import {} --out {}",
        &[clean.to_str().unwrap(), b.to_str().unwrap()],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(common::verify(&b).code, 0);
}

// --- Hand-changed copies (and real runs) and the findings their verify must raise: tables of
// cases, one driver. ---

/// What one check must report in a case.
struct Expect {
    /// The check's id.
    id: &'static str,
    /// How many findings of it (exactly).
    n: usize,
    /// Their pointers, in order (checked when not empty).
    at: &'static [&'static str],
    /// Texts that each appear in one of its findings' messages.
    says: &'static [&'static str],
    /// The severity every one of its findings has, when said.
    severity: Option<&'static str>,
}

/// `n` findings of `id`.
const fn found(id: &'static str, n: usize) -> Expect {
    Expect {
        id,
        n,
        at: &[],
        says: &[],
        severity: None,
    }
}

/// One finding of `id`.
const fn one(id: &'static str) -> Expect {
    found(id, 1)
}

/// One finding of `id` or more.
const fn some(id: &'static str) -> Expect {
    found(id, usize::MAX)
}

/// No finding of `id`.
const fn none(id: &'static str) -> Expect {
    found(id, 0)
}

impl Expect {
    const fn at(mut self, at: &'static [&'static str]) -> Self {
        self.at = at;
        self
    }

    const fn says(mut self, says: &'static [&'static str]) -> Self {
        self.says = says;
        self
    }

    const fn severity(mut self, severity: &'static str) -> Self {
        self.severity = Some(severity);
        self
    }

    /// What is wrong with a run's findings of this check, if anything.
    fn wrong(&self, run: &Run) -> Option<String> {
        let f = run.findings(self.id);
        let pointers: Vec<&str> = f.iter().filter_map(|x| x["pointer"].as_str()).collect();
        let messages: Vec<&str> = f.iter().filter_map(|x| x["message"].as_str()).collect();
        let count_ok = match self.n {
            usize::MAX => !f.is_empty(),
            n => f.len() == n,
        };
        if !count_ok {
            return Some(format!(
                "{} findings of {}, expected {}",
                f.len(),
                self.id,
                self.n
            ));
        }
        if !self.at.is_empty() && pointers != self.at {
            return Some(format!(
                "{} at {pointers:?}, expected {:?}",
                self.id, self.at
            ));
        }
        if let Some(s) = self
            .says
            .iter()
            .find(|s| !messages.iter().any(|m| m.contains(**s)))
        {
            return Some(format!("no {} says '{s}': {messages:?}", self.id));
        }
        let severity = self.severity?;
        f.iter()
            .find(|x| x["severity"] != severity)
            .map(|x| format!("{} at {}, expected {severity}", self.id, x["severity"]))
    }
}

/// A copy of a fixture run, changed by `edit`, verified with `--from`.
struct Case {
    /// What the case shows.
    what: &'static str,
    /// The format and the fixture run copied.
    format: &'static str,
    run: &'static str,
    /// The change made to the copy (none for the real run).
    edit: fn(&Files),
    /// The exit code, when said.
    code: Option<i32>,
    /// What each check must report.
    expect: &'static [Expect],
}

fn unchanged(_: &Files) {}

/// Runs every case and fails naming each one whose verify did not report what it expects.
fn run_cases(cases: &[Case]) {
    let mut wrong = Vec::new();
    for c in cases {
        let files = Files::of(c.format, c.run);
        (c.edit)(&files);
        let run = verify_from(c.format, files.path());
        if c.code.is_some_and(|code| code != run.code) {
            wrong.push(format!("{}: exit {}\n{}", c.what, run.code, run.stderr));
            continue;
        }
        for e in c.expect {
            if let Some(w) = e.wrong(&run) {
                wrong.push(format!("{}: {w}\n{}", c.what, run.stdout));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// A summary figure's `avg` (or any field) as the copy prints it.
fn summary_value(c: &Files, pointer: &str) -> f64 {
    let v: Value = read_json(&c.file(SUMMARY));
    v.pointer(pointer).and_then(Value::as_f64).unwrap()
}

const AIPERF_CASES: &[Case] = &[
    Case {
        what: "the real run's refused request, counted honestly",
        format: "aiperf",
        run: "failures",
        edit: unchanged,
        code: Some(0),
        expect: &[
            one("import.failed-requests")
                .at(&["line 9"])
                .says(&["1 of 12 requests failed", "maximum context length is 256"]),
            none("import.failed-hidden"),
            none("speed.recompute-mismatch"),
        ],
    },
    Case {
        what: "the summary says no request failed; the records still hold the refused one",
        format: "aiperf",
        run: "failures",
        edit: |c| {
            c.set(SUMMARY, "/error_request_count/avg", json!(0.0));
        },
        code: Some(1),
        expect: &[one("import.failed-hidden").says(&["1 failed requests but the summary counts 0"])],
    },
    Case {
        what: "a percentile and a count (11 of 12 valid) that the records do not give",
        format: "aiperf",
        run: "clean",
        edit: |c| {
            let p50 = summary_value(c, "/time_to_first_token/p50");
            c.set(SUMMARY, "/time_to_first_token/p50", json!(p50 * 0.9));
            c.set(SUMMARY, "/request_count/avg", json!(11.0));
        },
        code: Some(1),
        expect: &[found("speed.recompute-mismatch", 3).at(&[
            // 11 requests over the run's window is a lower rate than the printed one.
            "/request_throughput/avg",
            "/time_to_first_token/p50",
            "/request_count/avg",
        ])],
    },
    Case {
        what: "a throughput over a window shorter than the run",
        format: "aiperf",
        run: "clean",
        edit: |c| {
            let t = summary_value(c, "/output_token_throughput/avg");
            c.set(SUMMARY, "/output_token_throughput/avg", json!(t * 1.5));
        },
        code: Some(1),
        expect: &[one("speed.recompute-mismatch").at(&["/output_token_throughput/avg"])],
    },
    Case {
        what: "the refused request rewritten as a success with no reply",
        format: "aiperf",
        run: "failures",
        edit: |c| {
            // A success as AIPerf writes it carries a request_latency (row A5).
            c.edit_line(RECORDS, 9, |v| {
                v.as_object_mut().unwrap().remove("error");
                v["metrics"]["output_sequence_length"] = json!({"value": 0, "unit": "tokens"});
                v["metrics"]["request_latency"] = json!({"value": 5.0, "unit": "ms"});
            });
        },
        code: Some(1),
        // The summary's error count (1) no longer matches the records (0) either.
        expect: &[
            one("import.failed-as-zero")
                .at(&["line 9"])
                .severity("warning"),
            one("import.failed-hidden").at(&["/error_request_count/avg"]),
        ],
    },
    Case {
        // AIPerf 0.1-0.2 wrote no aiperf_version and kept its metrics under `records`. Edited
        // fixture: the clean summary in that shape, the records file cut to 5 of its 12 lines.
        what: "a summary without aiperf_version, and records that are fewer than it counts",
        format: "aiperf",
        run: "clean",
        edit: |c| {
            let p = c.file(SUMMARY);
            let mut v: Value = read_json(&p);
            let o = v.as_object_mut().unwrap();
            o.remove("aiperf_version");
            let metrics: serde_json::Map<String, Value> = o
                .iter()
                .filter(|(_, m)| m.get("unit").is_some())
                .map(|(k, m)| (k.clone(), m.clone()))
                .collect();
            o.retain(|_, m| m.get("unit").is_none());
            // 0.1-0.2 divide by benchmark_duration, 0.13 by its phase's window (row A4): the
            // 0.13 throughputs have no place in a 0.1-0.2 summary.
            let metrics = metrics
                .into_iter()
                .filter(|(k, _)| !k.ends_with("_throughput"))
                .collect();
            o.insert("records".into(), Value::Object(metrics));
            std::fs::write(&p, v.to_string()).unwrap();
            let r = c.file(RECORDS);
            let text = std::fs::read_to_string(&r).unwrap();
            let kept: Vec<&str> = text.lines().take(5).collect();
            std::fs::write(&r, kept.join("\n") + "\n").unwrap();
        },
        code: Some(1),
        expect: &[
            one("import.records-missing")
                .says(&["counts 12 valid requests but profile_export.jsonl holds 5"]),
            none("speed.recompute-mismatch"),
            none("import.failed-hidden"),
        ],
    },
    Case {
        what: "a summary whose p90 is above its max and whose mean is below its min",
        format: "aiperf",
        run: "clean",
        edit: |c| {
            let max = summary_value(c, "/request_latency/max");
            c.set(SUMMARY, "/request_latency/p90", json!(max * 2.0));
            let min = summary_value(c, "/time_to_first_token/min");
            c.set(SUMMARY, "/time_to_first_token/avg", json!(min / 2.0));
        },
        code: Some(1),
        expect: &[found("import.impossible-aggregate", 2)
            .at(&["/request_latency/p90", "/time_to_first_token/avg"])],
    },
    Case {
        what: "a cancelled run",
        format: "aiperf",
        run: "clean",
        edit: |c| {
            c.set(SUMMARY, "/was_cancelled", json!(true));
        },
        code: Some(1),
        expect: &[one("import.run-incomplete").severity("error")],
    },
];

#[test]
fn aiperf_cases() {
    run_cases(AIPERF_CASES);
}

const GUIDELLM_CASES: &[Case] = &[
    Case {
        what: "the real run's errored request, and its missing values counted as 0 in the totals",
        format: "guidellm",
        run: "failures",
        edit: unchanged,
        // Warnings only: each figure is what GuideLLM 0.8.1 computed (docs/formats/guidellm.md).
        code: Some(0),
        expect: &[
            one("import.failed-requests").says(&["1 of 12 requests errored", "400 Bad Request"]),
            none("speed.recompute-mismatch"),
            found("import.failed-as-zero", 4)
                .says(&["counted as 0 in the total request_latency distribution"])
                .severity("warning"),
        ],
    },
    Case {
        what: "the errored request left out of the totals",
        format: "guidellm",
        run: "failures",
        edit: |c| {
            c.set(
                REPORT,
                "/benchmarks/0/metrics/request_totals/errored",
                json!(0),
            );
        },
        code: Some(1),
        expect: &[one("import.failed-hidden").at(&["/benchmarks/0/metrics/request_totals/errored"])],
    },
    Case {
        what: "a percentile the requests do not give",
        format: "guidellm",
        run: "clean",
        edit: |c| {
            let p = "/benchmarks/0/metrics/time_to_first_token_ms/successful/percentiles/p50";
            c.set(REPORT, p, json!(1.0));
        },
        code: Some(1),
        expect: &[one("speed.recompute-mismatch")
            .at(&["/benchmarks/0/metrics/time_to_first_token_ms/successful/percentiles/p50"])],
    },
    Case {
        what: "a success without reply tokens, and one without usage",
        format: "guidellm",
        run: "clean",
        edit: |c| {
            let at = "/benchmarks/0/requests/successful/";
            c.set(REPORT, &format!("{at}3/output_tokens"), json!(0));
            c.set(
                REPORT,
                &format!("{at}5/output_metrics/total_tokens"),
                Value::Null,
            );
        },
        code: Some(1),
        // The printed token distribution counted 24 there: it no longer matches.
        expect: &[
            one("import.failed-as-zero").at(&["/benchmarks/0/requests/successful/3"]),
            one("speed.token-source").says(&["1 of 12 requests have no usage"]),
            some("speed.recompute-mismatch").says(&["guidellm.0.output_token_count.successful"]),
        ],
    },
];

/// The edit of the GuideLLM case below: the measured window starts after request 0 ended.
fn window_after_the_first_request(c: &Files) {
    let text = std::fs::read_to_string(c.file(REPORT)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let end = v
        .pointer("/benchmarks/0/requests/successful/0/request_end_time")
        .and_then(Value::as_f64)
        .unwrap();
    let at = "/benchmarks/0/scheduler_metrics/measure_start_time";
    c.set(REPORT, at, json!(end + 1e-3));
}

const GUIDELLM_WINDOW_CASES: &[Case] = &[Case {
    what: "a measured window that leaves the first request out while the figures still count it",
    format: "guidellm",
    run: "clean",
    edit: window_after_the_first_request,
    code: Some(1),
    // GuideLLM 0.4 on count only the requests that overlap the window (docs row G2): the listed
    // request outside is named, not hidden, and the totals that still count it are one more than
    // the window's requests the file lists.
    expect: &[
        one("import.failed-hidden")
            .says(&["lie outside its measured window"])
            .severity("info"),
        one("import.records-missing").says(&["11 of 12 successful"]),
        none("speed.recompute-mismatch"),
    ],
}];

#[test]
fn guidellm_window_cases() {
    run_cases(GUIDELLM_WINDOW_CASES);
}

#[test]
fn guidellm_cases() {
    run_cases(GUIDELLM_CASES);
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

const LM_EVAL_CASES: &[Case] = &[
    Case {
        what: "an empty reply scored as a wrong answer",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            c.edit_line(&named(c.path(), "samples_"), 2, |v| {
                v["resps"] = json!([[""]]);
                v["filtered_resps"] = json!(["[invalid]"]);
            });
        },
        // lm-eval's own code scores it so (docs/formats/lm-eval.md row L12): a warning that names
        // it, not an error. 5 right of the 23 answered.
        code: Some(0),
        expect: &[one("import.empty-scored-wrong")
            .severity("warning")
            .at(&["line 2"])
            .says(&[
                "1 of 24 replies are empty, and lm-eval scores an empty reply as a wrong answer",
                "exact_match 0.2174 over the 23 answered",
            ])],
    },
    Case {
        what: "a printed score, stderr and count the samples do not give",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            let results = named(c.path(), "results_");
            let at = "/results/rigaudit_arith/exact_match";
            c.set(&results, &format!("{at},letter"), json!(0.25));
            c.set(&results, &format!("{at}_stderr,letter"), json!(0.05));
            c.set(&results, "/n-samples/rigaudit_arith/effective", json!(30));
        },
        code: Some(1),
        expect: &[
            one("quality.pct-mismatch"),
            one("import.stderr-mismatch"),
            one("import.failed-hidden"),
        ],
    },
    Case {
        what: "a wrong answer marked right: the re-scoring disagrees, and the mean moves",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            c.edit_line(&named(c.path(), "samples_"), 1, |v| {
                v["exact_match"] = json!(1.0)
            });
        },
        code: Some(1),
        expect: &[
            one("quality.scoring-disagrees").at(&["line 1"]),
            one("quality.pct-mismatch"),
        ],
    },
    Case {
        what: "a results file of lm-eval 0.4.0-0.4.8 (no lm_eval_version) is read",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            let results = named(c.path(), "results_");
            let p = c.file(&results);
            let mut v: Value = read_json(&p);
            v.as_object_mut().unwrap().remove("lm_eval_version");
            std::fs::write(&p, v.to_string()).unwrap();
        },
        code: Some(0),
        expect: &[one("import.unscorable-reply"), none("quality.pct-mismatch")],
    },
    Case {
        // Python's json writes an undefined float bare; edited fixture, only that value changed.
        what: "a score printed as Infinity (NaN stderr) is read and named",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            let p = c.file(&named(c.path(), "results_"));
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            let r = &v["results"]["rigaudit_arith"];
            let (score, stderr) = (
                r["exact_match,letter"].to_string(),
                r["exact_match_stderr,letter"].to_string(),
            );
            let text = text
                .replacen(&score, "Infinity", 1)
                .replacen(&stderr, "NaN", 1);
            std::fs::write(&p, text).unwrap();
        },
        code: Some(1),
        expect: &[
            one("import.non-finite-score").at(&["/results/rigaudit_arith/exact_match,letter"]),
            none("quality.pct-mismatch"),
            none("import.stderr-mismatch"),
        ],
    },
    Case {
        what: "a multiple-choice sample's [loglikelihood, is_greedy] responses are no empty reply",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            c.edit_line(&named(c.path(), "samples_"), 3, |v| {
                v["resps"] = json!([[["-4.5", "False"]], [["-0.25", "True"]]]);
            });
        },
        code: Some(0),
        expect: &[none("import.empty-scored-wrong")],
    },
    Case {
        what: "a task with its own process_results is not re-scored by exact match",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            let results = named(c.path(), "results_");
            c.set(
                &results,
                "/configs/rigaudit_arith/process_results",
                json!("def process_results(doc, results): ..."),
            );
            c.edit_line(&named(c.path(), "samples_"), 1, |v| {
                v["exact_match"] = json!(1.0)
            });
            c.set(
                &results,
                "/results/rigaudit_arith/exact_match,letter",
                json!(6.0 / 24.0),
            );
        },
        // Its printed stderr is now the old one: not what this case is about.
        code: None,
        expect: &[
            none("quality.scoring-disagrees"),
            one("import.not-rescored").severity("info"),
        ],
    },
    Case {
        what: "results alone: a part of the documents, a response cache, a 0 where nothing parsed",
        format: "lm-eval",
        run: "clean",
        edit: |c| {
            std::fs::remove_file(c.file(&named(c.path(), "samples_"))).unwrap();
            let results = named(c.path(), "results_");
            c.set(&results, "/n-samples/rigaudit_arith/original", json!(100));
            c.set(&results, "/config/use_cache", json!("cache/smollm2"));
            c.set(
                &results,
                "/results/rigaudit_arith/exact_match,letter",
                json!(0.0),
            );
            c.set(
                &results,
                "/results/rigaudit_arith/percent_parseable,letter",
                json!(0.0),
            );
        },
        // Not re-scored without the samples: a finding says what to add.
        code: Some(1),
        expect: &[
            one("import.not-rescored").says(&["its samples file was not given"]),
            one("import.subset-of-dataset").says(&["rigaudit_arith 24 of 100"]),
            one("import.cached-responses").severity("warning"),
            one("import.zero-unparseable")
                .says(&["exact_match printed as 0 with percent_parseable 0"]),
        ],
    },
];

#[test]
fn lm_eval_cases() {
    run_cases(LM_EVAL_CASES);
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

/// Replaces the summary line that starts with `start` by `line`.
fn set_summary_line(c: &Files, start: &str, line: &str) {
    let p = c.file(LG_SUMMARY);
    let text = std::fs::read_to_string(&p).unwrap();
    let old = text
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap()
        .to_string();
    std::fs::write(&p, text.replace(&old, line)).unwrap();
}

const LOADGEN_CASES: &[Case] = &[
    Case {
        what: "the clean run, INVALID by LoadGen's early stopping",
        format: "loadgen",
        run: "clean",
        edit: unchanged,
        code: Some(1),
        expect: &[
            one("import.run-incomplete").says(&["not met: early stopping"]),
            one("import.settings-below-rules").severity("warning"),
            none("speed.recompute-mismatch"),
            none("import.tool-errors"),
        ],
    },
    Case {
        what: "the overloaded run, ended on its query cap before its minimum duration",
        format: "loadgen",
        run: "failures",
        edit: unchanged,
        code: Some(1),
        expect: &[
            one("import.run-incomplete").says(&["minimum duration"]),
            one("import.tool-errors").says(&["Max query count reached"]),
        ],
    },
    Case {
        what: "a VALID verdict over unmet rules; the summary (INVALID, NO) then disagrees",
        format: "loadgen",
        run: "failures",
        edit: |c| {
            set_mllog(c, "result_validity", json!("VALID"));
            set_mllog(c, "result_min_duration_met", json!(true));
        },
        code: Some(1),
        expect: &[
            found("import.validity-mismatch", 2)
                .says(&["VALID though", "minimum duration is said met"]),
            some("speed.recompute-mismatch").says(&["Result is", "Min duration satisfied"]),
        ],
    },
    Case {
        what: "a summary percentile the detail log does not give",
        format: "loadgen",
        run: "clean",
        edit: |c| {
            let line = "99.00 percentile first token latency (ns)   : 100";
            set_summary_line(c, "99.00 percentile first token latency", line);
        },
        code: Some(1),
        expect: &[one("speed.recompute-mismatch")
            .says(&["result_first_token_99.00_percentile_latency_ns is printed as 100"])],
    },
    Case {
        // 0.49 printed for 0.4906 agrees; 0.52 (a move that rounds away at two decimals) does not.
        what: "a summary figure compared at the decimals it prints",
        format: "loadgen",
        run: "clean",
        edit: |c| {
            let line = "Completed samples per second    : 0.52";
            set_summary_line(c, "Completed samples per second", line);
        },
        code: Some(1),
        expect: &[one("speed.recompute-mismatch").at(&["line 7"])],
    },
    Case {
        // The shape of every published Server run above 10,000 tokens/s: the detail log writes
        // doubles at six significant digits (21028.2), the summary two decimals (21028.23).
        // Edited fixture: only the two values changed, to reproduce that shape.
        what: "a figure compared at the coarser of the detail log's and the summary's precision",
        format: "loadgen",
        run: "clean",
        edit: |c| {
            set_mllog(c, "result_completed_tokens_per_second", json!(21028.2));
            set_summary_line(
                c,
                "Completed tokens per second: 3.34",
                "Completed tokens per second: 21028.23",
            );
            set_summary_line(
                c,
                "Completed tokens per second   ",
                "Completed tokens per second : 21028.26",
            );
        },
        code: Some(1),
        // 21028.23 agrees with 21028.2 (at most 0.05 + 0.005 apart); 21028.26 does not. The
        // edited detail value no longer gives the token count result_token_throughput gives
        // (docs/formats/loadgen.md rows L5, L6): the detail log's line 114 says so.
        expect: &[found("speed.recompute-mismatch", 2)
            .at(&["line 38", "line 114"])
            .says(&["the completed tokens per second give"])],
    },
    Case {
        what: "the summary given alone is read and judged by itself",
        format: "loadgen",
        run: "failures",
        edit: |c| std::fs::remove_file(c.file(DETAIL)).unwrap(),
        code: Some(1),
        expect: &[
            one("import.run-incomplete")
                .says(&["not met: latency constraints, minimum duration, early stopping"]),
            none("import.impossible-aggregate"),
            none("speed.recompute-mismatch"),
        ],
    },
    Case {
        what: "a summary alone whose mean latency is below its min, after 2 warnings",
        format: "loadgen",
        run: "clean",
        edit: |c| {
            std::fs::remove_file(c.file(DETAIL)).unwrap();
            set_summary_line(
                c,
                "Mean latency (ns)",
                "Mean latency (ns)               : 100",
            );
            set_summary_line(
                c,
                "No warnings encountered",
                "2 warnings encountered. See detailed log.",
            );
        },
        // The run's own INVALID fails it; the mean, no scenario's metric, is a warning.
        code: Some(1),
        expect: &[
            one("import.impossible-aggregate")
                .severity("warning")
                .says(&["the mean latency (100) is outside its min"]),
            one("import.tool-errors")
                .severity("warning")
                .says(&["LoadGen logged 2 warnings"]),
        ],
    },
    Case {
        // A TEST06 verification output as compliance/nvidia/TEST06/run_verification.py writes
        // it, written here with a failed check (the published ones all pass).
        what: "a TEST06 compliance verdict with a failed check",
        format: "loadgen",
        run: "failures",
        edit: |c| {
            let text = "First token check pass: Skipped\nEOS check pass: False\nSample length check pass: True\nTEST06 verification failed\n";
            std::fs::write(c.file("verify_accuracy.txt"), text).unwrap();
        },
        code: Some(1),
        expect: &[one("import.compliance-failed")
            .at(&["line 2, 4"])
            .says(&["EOS check pass: False"])],
    },
    Case {
        what: "a passing TEST06 compliance verdict raises nothing",
        format: "loadgen",
        run: "failures",
        edit: |c| {
            let text = "First token check pass: True\nEOS check pass: True\nSample length check pass: True\nTEST06 verification complete\n";
            std::fs::write(c.file("verify_accuracy.txt"), text).unwrap();
        },
        code: Some(1),
        expect: &[none("import.compliance-failed")],
    },
];

#[test]
fn loadgen_cases() {
    run_cases(LOADGEN_CASES);
}

const BENCH: &str = "llama-bench.json";

const LLAMA_BENCH_CASES: &[Case] = &[
    Case {
        // The q4_0 V cache without flash attention cannot make a context: llama-bench stops and
        // leaves its array unclosed after the two f16 tests.
        what: "the real run stopped by a failed test",
        format: "llama-bench",
        run: "failures",
        edit: unchanged,
        code: Some(1),
        expect: &[
            one("import.run-incomplete").says(&["ends unclosed after 2 complete tests"]),
            none("speed.recompute-mismatch"),
        ],
    },
    Case {
        what: "a printed mean and a repetition's rate that its samples do not give",
        format: "llama-bench",
        run: "clean",
        edit: |c| {
            let v: Value = read_json(&c.file(BENCH));
            let ts = v[1]["avg_ts"].as_f64().unwrap();
            c.set(BENCH, "/1/avg_ts", json!(ts + 0.01));
            c.set(BENCH, "/0/samples_ts/1", json!(999.0));
        },
        code: Some(1),
        expect: &[found("speed.recompute-mismatch", 2).at(&["/0/samples_ts/1", "/1/avg_ts"])],
    },
    Case {
        // Samples of 6 s: llama-bench's unsigned sum of squares passes 2^64, and its subtraction
        // cancels the wrap, so 83248 is its formula's value (integer mean and all). Edited
        // fixture: the pp64 test's samples and the figures llama-bench derives from them.
        what: "a stddev_ns whose wrap cancels is llama-bench's value, not a meaningless one",
        format: "llama-bench",
        run: "clean",
        edit: |c| {
            let ns = [6_000_000_000u64, 6_000_030_000, 6_000_061_000];
            let ts: Vec<f64> = ns.iter().map(|x| 1e9 * 64.0 / *x as f64).collect();
            let mean = ts.iter().sum::<f64>() / 3.0;
            let sd = (ts.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
            c.set(BENCH, "/0/samples_ns", json!(ns));
            c.set(BENCH, "/0/samples_ts", json!(ts));
            c.set(BENCH, "/0/avg_ns", json!(ns.iter().sum::<u64>() / 3));
            c.set(BENCH, "/0/avg_ts", json!(mean));
            c.set(BENCH, "/0/stddev_ts", json!(sd));
            c.set(BENCH, "/0/stddev_ns", json!(83248));
        },
        code: Some(0),
        expect: &[none("speed.recompute-mismatch")],
    },
];

#[test]
fn llama_bench_cases() {
    run_cases(LLAMA_BENCH_CASES);
}

const RESPONSES: &str = "responses.jsonl";

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

const LLAMA_SERVER_CASES: &[Case] = &[
    Case {
        what: "the real run's refused request and empty reply",
        format: "llama-server",
        run: "failures",
        edit: unchanged,
        code: Some(0),
        expect: &[
            one("import.failed-requests")
                .at(&["line 6"])
                .says(&["exceeds the available context size (256 tokens)"]),
            one("import.failed-as-zero").severity("warning").says(&["an empty reply"]),
        ],
    },
    Case {
        what: "the real run's refused and empty streams",
        format: "llama-server",
        run: "stream-failures",
        edit: unchanged,
        code: Some(0),
        expect: &[
            one("import.failed-requests").says(&[
                "1 of 7 responses",
                "6-completion-refused.sse: 400 request (690 tokens) exceeds the available context size (256 tokens)",
            ]),
            one("import.failed-as-zero").says(&["5-completion-empty.sse line", "an empty reply"]),
        ],
    },
    Case {
        what: "a rate and a stated count that disagree with the timings",
        format: "llama-server",
        run: "clean",
        edit: |c| {
            c.edit_line(RESPONSES, 3, |v| {
                let x = v["timings"]["predicted_per_second"].as_f64().unwrap();
                v["timings"]["predicted_per_second"] = json!(x * 1.2);
            });
            c.edit_line(RESPONSES, 4, |v| v["usage"]["completion_tokens"] = json!(16));
        },
        code: Some(1),
        expect: &[
            one("speed.recompute-mismatch").at(&["line 3 /timings/predicted_per_second"]),
            one("speed.token-source").says(&["line 4: usage.completion_tokens is 16"]),
        ],
    },
    Case {
        what: "a stream's final rate, its stated count and one chunk of text changed",
        format: "llama-server",
        run: "stream-clean",
        edit: |c| {
            edit_event(c, "3-completion.sse", 49, |v| {
                let x = v["timings"]["predicted_per_second"].as_f64().unwrap();
                v["timings"]["predicted_per_second"] = json!(x * 1.2);
            });
            edit_event(c, "1-completion.sse", 33, |v| v["tokens_predicted"] = json!(15));
            let p = c.file("1-completion.sse");
            let text = std::fs::read_to_string(&p).unwrap();
            let mut lines: Vec<&str> = text.split('\n').collect();
            lines.drain(2..4); // the second event and its blank line
            std::fs::write(&p, lines.join("\n")).unwrap();
        },
        code: Some(1),
        expect: &[
            one("speed.recompute-mismatch").at(&["line 49 /timings/predicted_per_second"]),
            found("speed.token-source", 2).says(&[
                "1-completion.sse line 31: tokens_predicted is 15 but the timings count 16",
                "1-completion.sse line 31: the stream sent 15 chunks of text but the server generated 16",
            ]),
        ],
    },
];

#[test]
fn llama_server_cases() {
    run_cases(LLAMA_SERVER_CASES);
}

const VLLM: &str = "openai-infqps-concurrency2-smollm2.json";

const VLLM_CASES: &[Case] = &[
    Case {
        what: "the real run's refused requests",
        format: "vllm",
        run: "failures",
        edit: unchanged,
        code: Some(0),
        expect: &[
            one("import.failed-requests")
                .at(&["/errors/3,7,11"])
                .says(&["3 of 12 requests failed (3 x Bad Request)"]),
            none("import.failed-hidden"),
            none("speed.recompute-mismatch"),
        ],
    },
    Case {
        what: "the mean TTFT over every request (the refused at 0 s), no failure counted, a changed p99",
        format: "vllm",
        run: "failures",
        edit: |c| {
            let v: Value =
                read_json(&c.file(VLLM));
            let ttfts: Vec<f64> = v["ttfts"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            let over_all = 1000.0 * ttfts.iter().sum::<f64>() / ttfts.len() as f64;
            c.set(VLLM, "/mean_ttft_ms", json!(over_all));
            c.set(VLLM, "/failed", json!(0));
            c.set(VLLM, "/p99_e2el_ms", json!(1.0));
        },
        code: Some(1),
        expect: &[
            one("import.failed-as-zero").at(&["/mean_ttft_ms"]),
            one("import.failed-hidden"),
            one("speed.recompute-mismatch").at(&["/p99_e2el_ms"]),
        ],
    },
    Case {
        what: "a request rewritten as a success with no reply",
        format: "vllm",
        run: "clean",
        edit: |c| {
            c.set(VLLM, "/ttfts/5", json!(0.0));
            c.set(VLLM, "/generated_texts/5", json!(""));
        },
        code: Some(1),
        expect: &[one("import.failed-as-zero").at(&["/ttfts/5"])],
    },
    Case {
        // Without --save-detailed the per-request lists are absent: the aggregates are read and
        // checked against each other. Edited fixture: the lists removed, one throughput changed.
        what: "a result saved without --save-detailed is read, its aggregates checked together",
        format: "vllm",
        run: "clean",
        edit: |c| {
            let p = c.file(VLLM);
            let mut v: Value = read_json(&p);
            let o = v.as_object_mut().unwrap();
            for k in ["ttfts", "itls", "input_lens", "output_lens", "latencies", "start_times", "errors", "generated_texts"] {
                o.remove(k);
            }
            let t = o["output_throughput"].as_f64().unwrap();
            o.insert("output_throughput".into(), json!(t * 1.1));
            std::fs::write(&p, v.to_string()).unwrap();
        },
        code: Some(1),
        expect: &[
            one("speed.recompute-mismatch").at(&["/output_throughput"]),
            one("import.not-recomputable").says(&["no per-request lists"]),
            none("import.impossible-aggregate"),
        ],
    },
    Case {
        // --append-result writes one result a line. Edited fixture: the result twice, the second
        // with ITLs timed per chunk of about 9 tokens and a p99 TTFT below its median.
        what: "a JSON Lines file of appended results: each line read and named",
        format: "vllm",
        run: "clean",
        edit: |c| {
            let p = c.file(VLLM);
            let v: Value = read_json(&p);
            let mut w = v.clone();
            let o = w.as_object_mut().unwrap();
            for k in ["ttfts", "itls", "input_lens", "output_lens", "latencies", "start_times", "errors", "generated_texts"] {
                o.remove(k);
            }
            let tpot = o["mean_tpot_ms"].as_f64().unwrap();
            o.insert("mean_itl_ms".into(), json!(tpot * 9.0));
            o.insert("p99_ttft_ms".into(), json!(0.001));
            std::fs::write(&p, format!("{v}\n{w}\n")).unwrap();
        },
        code: Some(1),
        expect: &[
            one("speed.token-source").at(&["line 2 /mean_itl_ms"]).severity("warning").says(&["9.0 times mean_tpot_ms"]),
            one("import.impossible-aggregate").at(&["line 2 /p90_ttft_ms"]).says(&["is above its p99_ttft_ms (0.001)"]),
            none("speed.recompute-mismatch"),
        ],
    },
    Case {
        what: "more requests in flight than the client's own cap",
        format: "vllm",
        run: "clean",
        edit: |c| {
            c.set(VLLM, "/max_concurrency", json!(1));
        },
        code: Some(1),
        expect: &[one("import.impossible-aggregate").says(&["above the client's own cap max_concurrency = 1"])],
    },
];

#[test]
fn vllm_cases() {
    run_cases(VLLM_CASES);
}

#[test]
fn every_format_is_detected_from_the_content_of_its_files() {
    for (format, run_name, file) in [
        ("guidellm", "failures", Some(REPORT)),
        ("lm-eval", "clean", None),
        ("loadgen", "failures", None),
        ("llama-bench", "failures", Some(BENCH)),
        ("llama-server", "failures", Some(RESPONSES)),
        ("llama-server", "stream-failures", None),
        ("vllm", "failures", Some(VLLM)),
    ] {
        let dir = imports(format, run_name);
        let path = file.map_or(dir.clone(), |f| dir.join(f));
        let detected = rigaudit(&["verify", path.to_str().unwrap(), "--format", "json"]);
        let named = verify_from(format, &path);
        assert_eq!(detected.code, named.code, "{format}: {}", detected.stderr);
        assert_eq!(detected.stdout, named.stdout, "{format}");
        assert!(named.code < 2, "{format}: {}", named.stderr);
    }
}

#[test]
fn a_git_lfs_pointer_in_place_of_a_result_file_is_refused_naming_it() {
    // What a repository holds for a large samples file not fetched (`git lfs pointer` output).
    let c = Files::of("aiperf", "clean");
    let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n";
    std::fs::write(c.file(RECORDS), pointer).unwrap();
    // Named by itself: exit 2, naming it.
    let run = verify_from("aiperf", &c.file(RECORDS));
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_stderr_has("profile_export.jsonl: a Git LFS pointer (oid sha256:4d7a2146");
    run.assert_stderr_has("size 12345");
    // In its folder: one finding naming it, the summary checked without it.
    let run = verify_from("aiperf", c.path());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.unreadable");
    assert_eq!(
        (f.len(), &f[0]["file"]),
        (1, &json!(RECORDS)),
        "{}",
        run.stdout
    );
    assert_has(
        f[0]["message"].as_str().unwrap(),
        "a Git LFS pointer (oid sha256:4d7a2146",
    );
    assert_has(f[0]["message"].as_str().unwrap(), "size 12345");
}

/// Checks whose only real example is a published file (`fixtures/published/`, judged by hand in
/// its `expected.json`): each is raised on it, at its severity.
#[test]
fn checks_seen_only_in_published_files_are_raised_on_them() {
    let published = root().join("fixtures/published");
    for (format, case, file, id, severity) in [
        (
            "llama-bench",
            "readme-b1275-json",
            "llama-bench.json",
            "import.edited-output",
            "warning",
        ),
        (
            "aiperf",
            "examples-run1-cancellation-0.1",
            SUMMARY,
            "import.reasoning-only-replies",
            "warning",
        ),
        (
            "lm-eval",
            "nl2foam-gen-judge-qwen3-nanmean",
            "",
            "import.declared-metric-missing",
            "warning",
        ),
    ] {
        let dir = published.join(format).join(case);
        let run = verify_from(format, &dir.join(file));
        assert!(
            run.has_at(id, severity),
            "{case}: {}{}",
            run.stdout,
            run.stderr
        );
    }
}

#[test]
fn vllm_json_lines_with_a_broken_line_is_refused_naming_the_line() {
    // Two appended results and a third cut short (edited fixture copy).
    let c = Files::of("vllm", "clean");
    let p = c.file(VLLM);
    let one = std::fs::read_to_string(&p).unwrap();
    let text = format!(
        "{}\n{}\n{{\"backend\": \"vllm\", \"dur",
        one.trim(),
        one.trim()
    );
    std::fs::write(&p, text).unwrap();
    // Named by itself: exit 2, naming the file and the line.
    let run = verify_from("vllm", &p);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_stderr_has(&format!("{VLLM}: line 3, column"));
    // Its folder, of which it is the only file: one finding naming it and the line, and nothing
    // else could be checked (incomplete).
    let run = verify_from("vllm", c.path());
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let f = run.findings("import.unreadable");
    assert_eq!(
        (f.len(), &f[0]["file"]),
        (1, &json!(VLLM)),
        "{}",
        run.stdout
    );
    assert!(f[0]["pointer"]
        .as_str()
        .unwrap()
        .starts_with("line 3, column"));
}

#[test]
fn a_guidellm_yaml_report_is_read_like_its_json_twin_with_or_without_from() {
    let published = root().join("fixtures/published/guidellm");
    let yaml = published.join("stripped-sweep-0.3-yaml-twin/benchmarks_stripped.yaml");
    let json = published.join("stripped-sweep-0.3-json-v2/benchmarks_stripped.json");
    let ids = |run: &Run| -> Vec<String> {
        let mut v: Vec<String> = run.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] != "info")
            .map(|f| f["check"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let twin = verify_from("guidellm", &json);
    let from = verify_from("guidellm", &yaml);
    let detected = rigaudit(&["verify", yaml.to_str().unwrap(), "--format", "json"]);
    assert_eq!(from.code, 1, "{}", from.stderr);
    assert_eq!(detected.code, 1, "{}", detected.stderr);
    assert_eq!(ids(&from), ids(&twin));
    assert_eq!(ids(&detected), ids(&twin));
    assert!(ids(&twin).contains(&"import.records-missing".to_string()));
}

/// MLPerf's accuracy.txt beside LoadGen's logs, on a published accuracy run (NeuralMagic's open
/// v4.1 llama2-70b-99.9, whose ROUGE scores miss the class's targets) and on changed copies of it:
/// a gen_num other than the run's sample count, and the file left out beside its
/// mlperf_log_accuracy.json.
#[test]
fn mlperf_accuracy_txt_is_held_to_its_targets_and_its_sample_count() {
    let case = root().join(
        "fixtures/published/loadgen/v4.1-neuralmagic-2xrtx4090-llama2-70b-99.9-offline-accuracy",
    );
    let tmp = tempfile::tempdir().unwrap();
    // The copy's folder names the benchmark, as the submission's path does.
    let run = tmp.path().join("llama2-70b-99.9");
    common::copy_dir(&case, &run);
    std::fs::remove_file(run.join("expected.json")).unwrap();
    let published = verify_from("loadgen", &run);
    assert_eq!(published.code, 1, "{}", published.stderr);
    // One finding per score that misses its target: rouge1, rouge2 and rougeL.
    let below = published.findings("import.accuracy-below-target");
    let says: Vec<&str> = below.iter().filter_map(|f| f["message"].as_str()).collect();
    assert_eq!(says.len(), 3, "{}", published.stdout);
    for score in ["'rouge1' 44.0047", "'rouge2' 21.7276", "'rougeL' 28.4008"] {
        assert!(says.iter().any(|m| m.contains(score)), "{score}: {says:?}");
    }
    assert!(published
        .findings("import.accuracy-count-mismatch")
        .is_empty());
    let accuracy = run.join("accuracy.txt");
    let text = std::fs::read_to_string(&accuracy).unwrap();
    std::fs::write(
        &accuracy,
        text.replace("'gen_num': 24576", "'gen_num': 24000"),
    )
    .unwrap();
    let short = verify_from("loadgen", &run);
    let mismatch = short.findings("import.accuracy-count-mismatch");
    assert_eq!(mismatch.len(), 1, "{}", short.stdout);
    assert!(mismatch[0]["message"].as_str().unwrap().contains("24000"));
    std::fs::remove_file(&accuracy).unwrap();
    let missing = verify_from("loadgen", &run);
    let left_out = missing.findings("import.accuracy-missing");
    assert_eq!(left_out.len(), 1, "{}", missing.stdout);
    assert_eq!(left_out[0]["severity"], "warning");
}

/// A published v4.1 run's logs copied into `<tmp>/llama2-70b-99.9/Offline/accuracy/`, as MLPerf
/// lays an accuracy run out; the folder.
fn accuracy_folder(tmp: &Path) -> PathBuf {
    let case = root().join("fixtures/published/loadgen/v4.1-nvidia-h100x8-llama2-70b-99.9-offline");
    let run = tmp.join("llama2-70b-99.9/Offline/accuracy");
    std::fs::create_dir_all(&run).unwrap();
    for f in ["mlperf_log_summary.txt", "mlperf_log_detail.txt"] {
        std::fs::copy(case.join(f), run.join(f)).unwrap();
    }
    run
}

/// accuracy.txt as newer accuracy scripts print it (numpy 2's `np.float64(44.5)`, docs/formats/
/// loadgen.md row A1): read and judged, not refused.
#[test]
fn mlperf_accuracy_txt_of_numpy_2_is_read_and_judged() {
    let tmp = tempfile::tempdir().unwrap();
    let run = accuracy_folder(tmp.path());
    let write = |text: &str| std::fs::write(run.join("accuracy.txt"), text).unwrap();
    let np = |rouge1: &str| {
        format!("\nResults\n\n{{'rouge1': np.float64({rouge1}), 'rouge2': np.float64(22.1222), 'rougeL': np.float64(28.7396), 'gen_len': np.int64(28211344), 'gen_num': 24576, 'tokens_per_sample': np.float64(290.3)}}\n\nhash=9e7b\n")
    };
    write(&np("44.5437"));
    let good = verify_from("loadgen", &run);
    assert_eq!(good.code, 0, "{}{}", good.stdout, good.stderr);
    write(&np("44.0"));
    let below = verify_from("loadgen", &run);
    let says: Vec<String> = below
        .findings("import.accuracy-below-target")
        .iter()
        .map(|f| f["message"].to_string())
        .collect();
    assert!(
        says.len() == 1 && says[0].contains("'rouge1' 44"),
        "{says:?}"
    );
}

/// The other benchmarks' accuracy.txt (rows A2-A4) is read and said not judged; a file with no
/// score in any form is one finding naming it (row A6), given alone or in a folder given whole;
/// and a folder of a tree holding only an accuracy.txt is a run, not skipped.
#[test]
fn mlperf_accuracy_txt_is_never_refused_and_a_folder_never_passes_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let run = accuracy_folder(tmp.path());
    // resnet's form, alone in its accuracy folder: read, not judged, and said so.
    let resnet = tmp.path().join("resnet50/Offline/accuracy");
    std::fs::create_dir_all(&resnet).unwrap();
    let text = "accuracy=76.456%, good=38228, total=50000\n";
    std::fs::write(resnet.join("accuracy.txt"), text).unwrap();
    let alone = verify_from("loadgen", &resnet);
    assert_eq!(alone.code, 0, "{}{}", alone.stdout, alone.stderr);
    let notes: Vec<String> = alone
        .findings("import.not-recomputable")
        .iter()
        .map(|f| f["message"].to_string())
        .collect();
    assert!(
        notes
            .iter()
            .any(|m| m.contains("read (accuracy, good, total), not judged")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|m| m.contains("no LoadGen log was given")),
        "{notes:?}"
    );
    std::fs::remove_dir_all(tmp.path().join("resnet50")).unwrap();
    std::fs::write(run.join("accuracy.txt"), "rouge1 44.5\n").unwrap();
    for verdict in [
        verify_from("loadgen", &run),
        rigaudit_line("verify {} --format json", &[run.to_str().unwrap()]),
    ] {
        assert_ne!(verdict.code, 2, "{}", verdict.stderr);
        let missing = verdict.findings("import.accuracy-missing");
        assert!(
            missing.len() == 1
                && missing[0]["message"]
                    .as_str()
                    .unwrap()
                    .contains("accuracy.txt holds no accuracy score"),
            "{}",
            verdict.stdout
        );
    }
    // The tree: a folder with only an accuracy.txt is a run of its own, read.
    for f in ["mlperf_log_summary.txt", "mlperf_log_detail.txt"] {
        std::fs::remove_file(run.join(f)).unwrap();
    }
    let tree = rigaudit_line("verify {} --format json", &[tmp.path().to_str().unwrap()]);
    let rows = tree.json()["runs"].as_array().cloned().unwrap_or_default();
    let row = rows
        .iter()
        .find(|r| r["run"] == "llama2-70b-99.9/Offline/accuracy");
    // Its one warning: import.accuracy-missing, as verify of the file says.
    assert_eq!(
        row.map(|r| (r["tool"].clone(), r["warnings"].clone())),
        Some((json!("loadgen"), json!(1))),
        "{}",
        tree.stdout
    );
}

/// A copy of one ML.ENERGY run of `fixtures/differential/ml-energy/` (written through the
/// benchmark's own functions; see its README), to change.
fn ml_energy(case: &str) -> Files {
    let tmp = tempfile::tempdir().unwrap();
    let from = root().join("fixtures/differential/ml-energy").join(case);
    for name in ["results.json", "prometheus.json"] {
        std::fs::copy(from.join(name), tmp.path().join(name)).unwrap();
    }
    Files { tmp }
}

#[test]
fn ml_energy_is_detected_imported_and_its_validators_rules_caught_in_copies() {
    let run = ml_energy("v3.0-two-gpus");
    // Detected from its content (its results.json has vLLM's keys and lm-eval's name).
    let v = rigaudit_line("verify {} --format json", &[run.path().to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    // Imported into a bundle that verify reads with the same findings.
    let out = tempfile::tempdir().unwrap();
    let bundle = out.path().join("b");
    let imp = rigaudit_line(
        "import --from ml-energy {} {} --out {}",
        &[
            run.file("results.json").to_str().unwrap(),
            run.file("prometheus.json").to_str().unwrap(),
            bundle.to_str().unwrap(),
        ],
    );
    assert_eq!(imp.code, 0, "{}", imp.stderr);
    let again = rigaudit_line("verify {} --format json", &[bundle.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stdout);
    // A GPU that ran hot in a fifth of its samples: the validator fails it.
    let hot: Vec<Value> = (0..10)
        .map(|i| json!([i, if i < 2 { 97.0 } else { 60.0 }]))
        .collect();
    run.set("results.json", "/timeline/temperature", json!({"0": hot}));
    let v = verify_from("ml-energy", run.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.has_at("import.energy-readings", "error"), "{}", v.stdout);
    // A window of 20 s: the energy it measured is not the steady state's.
    run.set("results.json", "/steady_state_duration", json!(20.0));
    run.set(
        "results.json",
        "/steady_state_measurement/time",
        json!(20.0),
    );
    let v = verify_from("ml-energy", run.path());
    assert!(v.has_at("import.energy-window", "error"), "{}", v.stdout);
    // Without prometheus.json the batch is said not checked.
    std::fs::remove_file(run.file("prometheus.json")).unwrap();
    let v = verify_from("ml-energy", run.path());
    assert_any(&v.findings("import.not-recomputable"), |f| {
        f["message"]
            .as_str()
            .unwrap()
            .contains("prometheus.json was not given")
    });
}

#[test]
fn mlperf_endpoints_is_detected_imported_and_an_edited_figure_caught() {
    let from = root().join("fixtures/differential/mlperf-endpoints/online-poisson-streaming");
    let tmp = tempfile::tempdir().unwrap();
    for (src, name) in [
        ("performance/result_summary.json", "result_summary.json"),
        ("events.jsonl", "events.jsonl"),
        ("config.yaml", "config.yaml"),
    ] {
        std::fs::copy(from.join(src), tmp.path().join(name)).unwrap();
    }
    let run = Files { tmp };
    // A folder of the three is one run, detected from the summary's content.
    let v = rigaudit_line("verify {} --format json", &[run.path().to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let rows = v.json()["recomputed"].as_array().unwrap().len();
    assert!(rows >= 50, "{rows} figures recomputed");
    let out = tempfile::tempdir().unwrap();
    let bundle = out.path().join("b");
    let imp = rigaudit_line(
        "import --from mlperf-endpoints {} {} {} --out {}",
        &[
            run.file("result_summary.json").to_str().unwrap(),
            run.file("events.jsonl").to_str().unwrap(),
            run.file("config.yaml").to_str().unwrap(),
            bundle.to_str().unwrap(),
        ],
    );
    assert_eq!(imp.code, 0, "{}", imp.stderr);
    let again = rigaudit_line("verify {} --format json", &[bundle.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stdout);
    // The checker reads the p99 TTFT estimate: printed lower than the events give, it fails.
    run.set(
        "result_summary.json",
        "/ttft/early_stopping_percentiles/99.0",
        json!(1_500_000_000.0),
    );
    let v = verify_from("mlperf-endpoints", run.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    v.assert_finding_at(
        "speed.recompute-mismatch",
        "/ttft/early_stopping_percentiles/99.0",
    );
}

/// NVIDIA's published v6.1 deepseek-r1 Server result with its accuracy file beside its summary:
/// the file is read with the run (a folder of the three is one run) and raises nothing as
/// published; an average that is not its scores' mean, and a file without a numeric score, are
/// caught where they are.
#[test]
fn an_endpoints_accuracy_file_is_read_with_its_summary_and_held_to_its_writers_sums() {
    let published =
        root().join("fixtures/published/mlperf-endpoints/nvidia-v6.1-deepseek-r1-Server");
    let tmp = tempfile::tempdir().unwrap();
    for name in ["result_summary.json", "config.yaml"] {
        std::fs::copy(published.join(name), tmp.path().join(name)).unwrap();
    }
    std::fs::copy(
        root().join("fixtures/submissions/endpoints/accuracy_results.json"),
        tmp.path().join("accuracy_results.json"),
    )
    .unwrap();
    let run = Files { tmp };
    let v = rigaudit_line("verify {} --format json", &[run.path().to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(!v.has("import.accuracy-unscored"), "{}", v.stdout);
    assert!(
        !v.stdout.contains("not read"),
        "the accuracy file is read with its run: {}",
        v.stdout
    );
    run.set("accuracy_results.json", "/average_accuracy", json!(85.0));
    let v = verify_from("mlperf-endpoints", run.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    v.assert_finding_at("import.impossible-aggregate", "/average_accuracy");
    run.set(
        "accuracy_results.json",
        "/accuracy_scores/0/score",
        json!({"rouge1": 0.4}),
    );
    let v = verify_from("mlperf-endpoints", run.path());
    v.assert_finding_at("import.accuracy-unscored", "/accuracy_scores");
}

#[test]
fn an_mlperf_results_report_names_each_submission_rule_it_breaks() {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_dir(&root().join("fixtures/submissions/v4.1"), tmp.path());
    let red = tmp.path().join("closed/RedHat");
    let sys = "L40S-RedHat-OpenShift";
    std::fs::remove_dir_all(red.join(format!("compliance/{sys}/llama2-70b-99.9/Server/TEST06")))
        .unwrap();
    std::fs::remove_file(red.join(format!(
        "results/{sys}/llama2-70b-99.9/Server/accuracy/mlperf_log_accuracy.json"
    )))
    .unwrap();
    let drop_key = |p: PathBuf, key: &str| {
        let mut v: Value = read_json(&p);
        v.as_object_mut().unwrap().remove(key);
        std::fs::write(&p, v.to_string()).unwrap();
    };
    drop_key(red.join(format!("systems/{sys}.json")), "cooling");
    let detail = red.join(format!(
        "results/{sys}/llama2-70b-99.9/Server/performance/run_1/mlperf_log_detail.txt"
    ));
    let text = std::fs::read_to_string(&detail).unwrap().replace(
        "\"key\": \"effective_min_duration_ms\", \"value\": 600000",
        "\"key\": \"effective_min_duration_ms\", \"value\": 60000",
    );
    std::fs::write(&detail, text).unwrap();
    drop_key(
        red.join(format!(
            "measurements/{sys}/llama2-70b-99.9/Server/{sys}.json"
        )),
        "weight_data_types",
    );
    // The Offline TEST06 log's first reply (498 tokens, cut at its limit) given two
    // end-of-sequence tokens (2) at its end: its verify file says the EOS check passed.
    let log = red.join(format!(
        "compliance/{sys}/llama2-70b-99.9/Offline/TEST06/accuracy/mlperf_log_accuracy.json"
    ));
    let mut samples: Value = read_json(&log);
    let first = &mut samples[0];
    first["data"] = json!(format!(
        "{}0200000002000000",
        first["data"].as_str().unwrap()
    ));
    first["token_count"] = json!(first["token_count"].as_u64().unwrap() + 2);
    std::fs::write(&log, samples.to_string()).unwrap();
    // The Offline run configured with round v6.0's seeds, its accuracy run over 24000 of the
    // dataset's 24576 samples: the v6.0 checker fails its accuracy.
    let offline = red.join(format!("results/{sys}/llama2-70b-99.9/Offline"));
    let edit = |p: PathBuf, pairs: &[(&str, &str)]| {
        let mut text = std::fs::read_to_string(&p).unwrap();
        for (from, to) in pairs {
            assert!(text.contains(from), "{from}");
            text = text.replace(from, to);
        }
        std::fs::write(&p, text).unwrap();
    };
    edit(
        offline.join("performance/run_1/mlperf_log_detail.txt"),
        &[
            ("3066443479025735752", "2465351861681999779"),
            ("10688027786191513374", "14276810075590677512"),
            ("14962580496156340209", "3936089224930324775"),
        ],
    );
    edit(
        offline.join("accuracy/mlperf_log_detail.txt"),
        &[(
            "\"qsl_reported_total_count\", \"value\": 24576",
            "\"qsl_reported_total_count\", \"value\": 24000",
        )],
    );
    // An Interactive result beside them, a copy of the Server one: no scenario of llama2-70b-99.9
    // in round v4.1's table (its run's seeds are v4.1's), so its own result has none.
    common::copy_dir(
        &red.join(format!("results/{sys}/llama2-70b-99.9/Server")),
        &red.join(format!("results/{sys}/llama2-70b-99.9/Interactive")),
    );
    let out = tempfile::tempdir().unwrap();
    let spec = format!("json:{}", out.path().display());
    let run = rigaudit(&["verify", tmp.path().to_str().unwrap(), "--output", &spec]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let interactive = read_json(&out.path().join(format!(
        "closed__RedHat__results__{sys}__llama2-70b-99.9__Interactive.json"
    )));
    let unknown = common::findings_in(&interactive, "import.submission-scenarios");
    assert_eq!(unknown.len(), 1, "{unknown:#?}");
    assert_has(
        unknown[0]["message"].as_str().unwrap(),
        "holds Interactive, which the table neither requires nor allows (round v4.1's table for a datacenter system: llama2-70b-99.9 Server, Offline required): the submission checker gives its result none",
    );
    let report = out.path().join(format!(
        "closed__RedHat__results__{sys}__llama2-70b-99.9__Server.json"
    ));
    let r = read_json(&report);
    let ids: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["check"].as_str())
        .collect();
    for id in [
        "import.submission-files",
        "import.submission-compliance",
        "import.submission-system",
        "import.submission-measurements",
        // A note here: the run's seeds are the v4.1 round's.
        "import.submission-seeds",
        // The Server's compliance folder is left empty.
        "import.submission-folder",
        // Its run was set to one minute.
        "import.submission-settings",
    ] {
        assert!(ids.contains(&id), "{id}: {ids:?}");
    }
    let offline = read_json(&out.path().join(format!(
        "closed__RedHat__results__{sys}__llama2-70b-99.9__Offline.json"
    )));
    let contradicted = common::findings_in(&offline, "import.submission-compliance-log");
    assert_eq!(contradicted.len(), 1, "{contradicted:#?}");
    assert_eq!(contradicted[0]["severity"], "error", "{contradicted:#?}");
    assert!(contradicted[0]["message"]
        .as_str()
        .unwrap()
        .contains("ends with two end-of-sequence tokens (2)"));
    let part = common::findings_in(&offline, "import.submission-dataset-size");
    assert_eq!(part.len(), 1, "{part:#?}");
    assert_eq!(part[0]["severity"], "error", "{part:#?}");
    assert_has(
        part[0]["message"].as_str().unwrap(),
        "covered 24000 samples, not llama2-70b-99.9's whole dataset of 24576",
    );
}
