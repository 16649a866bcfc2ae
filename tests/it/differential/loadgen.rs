//! Differential tests of LoadGen (see main.rs): what mlcommons-loadgen itself wrote at each
//! version `fixtures/differential/pins.toml` pins, over the bundled engine, for each case of
//! `scripts/differential/loadgen.sh`'s matrix (scenarios, modes, token settings, reply shapes),
//! read back by rigaudit. On every genuine file rigaudit must recompute every printed figure as
//! that version did (docs/formats/loadgen.md rows L1-L19) and raise no error or warning but those
//! LoadGen's own output states: INVALID (`import.run-incomplete`), errors or warnings it logged
//! (`import.tool-errors`), the short minimum duration these runs ask for
//! (`import.settings-below-rules`), and, where LoadGen's code makes a figure meaningless (a sample
//! with no first token enters the TTFT figures as INT64_MIN, row L9), `import.impossible-aggregate`.

use super::common::{rigaudit, root};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every case folder, `<version>/<case>`, sorted.
fn cases() -> Vec<PathBuf> {
    let base = root().join("fixtures/differential/loadgen");
    let mut out = Vec::new();
    for version in dirs(&base) {
        out.extend(dirs(&version));
    }
    out
}

fn dirs(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The files LoadGen wrote in a case folder (not the case's own `case.json`).
fn written(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n != "case.json"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    files
}

fn verify(files: &[String]) -> Value {
    let mut args = vec!["verify", "--from", "loadgen", "--format", "json"];
    args.extend(files.iter().map(String::as_str));
    let run = rigaudit(&args);
    assert_ne!(run.code, 2, "{files:?}: refused: {}", run.stderr);
    run.json()
}

/// The error and warning ids LoadGen's own files state, so rigaudit may raise them.
fn stated(dir: &Path) -> BTreeSet<&'static str> {
    let summary = std::fs::read_to_string(dir.join("mlperf_log_summary.txt")).unwrap();
    let detail = std::fs::read_to_string(dir.join("mlperf_log_detail.txt")).unwrap();
    let mut ids = BTreeSet::new();
    if summary.contains("Result is : INVALID") {
        ids.insert("import.run-incomplete");
    }
    // Errors LoadGen logged, but its error about its own build (a note: the submission checker
    // ignores it).
    let logged = detail.lines().any(|l| {
        (l.contains("\"is_error\": true") && !l.contains("uncommitted changes"))
            || l.contains("\"is_warning\": true")
    });
    if logged {
        ids.insert("import.tool-errors");
    }
    let short = summary
        .lines()
        .filter_map(|l| l.strip_prefix("min_duration (ms): "))
        .any(|v| v.trim().parse::<f64>().is_ok_and(|ms| ms < 600_000.0));
    let accuracy_run =
        detail.contains("\"key\": \"effective_test_mode\", \"value\": \"AccuracyOnly\"");
    if short && !accuracy_run {
        ids.insert("import.settings-below-rules");
    }
    // An accuracy run's log without the accuracy script's output (not run here): not stated.
    if accuracy_run {
        ids.insert("import.accuracy-missing");
    }
    // Row A7: an accuracy log's empty replies (a refused request), counted and named.
    let log = std::fs::read_to_string(dir.join("mlperf_log_accuracy.json")).unwrap_or_default();
    if log.contains("\"data\" : \"\"") {
        ids.insert("import.empty-scored-wrong");
    }
    // Row L9: a sample with no first token enters the TTFT figures as INT64_MIN.
    if detail.contains("before it's first token latency") {
        ids.insert("import.impossible-aggregate");
    }
    ids
}

fn loud(report: &Value) -> BTreeSet<String> {
    let found = report["findings"].as_array().cloned().unwrap_or_default();
    found
        .iter()
        .filter(|f| f["severity"] == "error" || f["severity"] == "warning")
        .filter_map(|f| f["check"].as_str().map(String::from))
        .collect()
}

/// An accuracy-mode case: LoadGen computes no figure there.
fn is_accuracy(dir: &Path) -> bool {
    dir.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("offline-accuracy"))
}

fn ran(report: &Value, id: &str) -> bool {
    let list = report["checks_run"].as_array().cloned().unwrap_or_default();
    list.iter().any(|c| c == id || c["id"] == id)
}

/// Every genuine file: read whole, every summary figure recomputed from the detail log at its
/// rounding and agreeing, no error or warning but those LoadGen's files state.
#[test]
fn every_file_loadgen_wrote_is_recomputed_and_raises_only_what_loadgen_states() {
    let cases = cases();
    assert!(cases.len() >= 30, "only {} LoadGen cases", cases.len());
    let mut wrong = Vec::new();
    for dir in &cases {
        let name = dir.strip_prefix(root()).unwrap().display().to_string();
        let report = verify(&written(dir));
        let expected: BTreeSet<String> = stated(dir).iter().map(|s| s.to_string()).collect();
        let raised = loud(&report);
        if raised != expected {
            let all = report["findings"].to_string();
            wrong.push(format!(
                "{name}: raised {raised:?}, LoadGen states {expected:?}: {all}"
            ));
        }
        let recomputed = report["recomputed"].as_array().cloned().unwrap_or_default();
        if !is_accuracy(dir) && recomputed.len() < 3 {
            wrong.push(format!(
                "{name}: only {} figures recomputed",
                recomputed.len()
            ));
        }
        for r in recomputed.iter().filter(|r| r["matches"] == false) {
            wrong.push(format!("{name}: {r}"));
        }
        for id in ["speed.recompute-mismatch", "import.validity-mismatch"] {
            if !is_accuracy(dir) && !ran(&report, id) {
                wrong.push(format!("{name}: {id} did not run"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The summary alone: judged by itself, with a note that the detail log is missing and what
/// that leaves unchecked; never more errors than the pair gives.
#[test]
fn a_summary_alone_says_its_detail_log_is_missing() {
    for dir in cases().iter().filter(|d| !is_accuracy(d)) {
        let summary = dir.join("mlperf_log_summary.txt").display().to_string();
        let report = verify(std::slice::from_ref(&summary));
        let notes = report["findings"].as_array().cloned().unwrap_or_default();
        let says = notes.iter().any(|f| {
            f["check"] == "import.not-recomputable"
                && f["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("mlperf_log_detail.txt was not given"))
        });
        assert!(says, "{}: {}", dir.display(), report["findings"]);
        // No error the pair does not raise; a warning only for a count of errors the summary
        // states without saying which (LoadGen's build error among them, which the pair names).
        let both = verify(&written(dir));
        let errors = |r: &Value, sev: &str| -> BTreeSet<String> {
            let all = r["findings"].as_array().cloned().unwrap_or_default();
            all.iter()
                .filter(|f| f["severity"] == sev)
                .filter_map(|f| f["check"].as_str().map(String::from))
                .collect()
        };
        let extra: Vec<String> = errors(&report, "error")
            .difference(&errors(&both, "error"))
            .cloned()
            .collect();
        assert!(extra.is_empty(), "{}: {extra:?}", dir.display());
        let warned: Vec<String> = errors(&report, "warning")
            .difference(&loud(&both))
            .filter(|id| *id != "import.tool-errors")
            .cloned()
            .collect();
        assert!(warned.is_empty(), "{}: {warned:?}", dir.display());
    }
}

/// The recomputations are not vacuous: one figure of a genuine file changed is caught by the row
/// that recomputes it.
#[test]
fn a_changed_figure_of_a_genuine_file_is_caught() {
    let edits: &[(&str, &str, &str, &str)] = &[
        // Row L2: Offline samples per second doubled.
        (
            "offline",
            "result_samples_per_second",
            "double",
            "speed.recompute-mismatch",
        ),
        // Row L13: early stopping said met where the counts say not.
        (
            "server-latency",
            "early_stopping_met",
            "flip",
            "import.validity-mismatch",
        ),
        // Row L11: the minimum query count flipped.
        (
            "singlestream",
            "result_min_queries_met",
            "flip",
            "import.validity-mismatch",
        ),
    ];
    let versions = dirs(&root().join("fixtures/differential/loadgen"));
    for (case, key, how, id) in edits {
        for version in &versions {
            let dir = version.join(case);
            let tmp = tempfile::tempdir().unwrap();
            for f in written(&dir) {
                let to = tmp.path().join(Path::new(&f).file_name().unwrap());
                std::fs::copy(&f, to).unwrap();
            }
            edit_detail(&tmp.path().join("mlperf_log_detail.txt"), key, how);
            let files = vec![tmp
                .path()
                .join("mlperf_log_detail.txt")
                .display()
                .to_string()];
            let report = verify(&files);
            assert!(
                loud(&report).contains(*id),
                "{}: {key} {how}: {}",
                dir.display(),
                report["findings"]
            );
        }
    }
}

/// Changes one entry of a detail log: a number doubled or a flag flipped.
fn edit_detail(p: &Path, key: &str, how: &str) {
    let text = std::fs::read_to_string(p).unwrap();
    let mut hit = false;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let Some(json) = l.strip_prefix(":::MLLOG ") else {
                return l.to_string();
            };
            let mut v: Value = serde_json::from_str(json).unwrap();
            if v["key"] != key {
                return l.to_string();
            }
            hit = true;
            v["value"] = match how {
                "double" => serde_json::json!(v["value"].as_f64().unwrap() * 2.0),
                _ => Value::Bool(!v["value"].as_bool().unwrap()),
            };
            format!(":::MLLOG {v}")
        })
        .collect();
    assert!(hit, "{}: no {key}", p.display());
    std::fs::write(p, lines.join("\n") + "\n").unwrap();
}
