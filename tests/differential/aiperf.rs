//! Differential tests of AIPerf (see main.rs): the files `aiperf profile` itself wrote at each
//! pinned version (`fixtures/differential/aiperf/<version>/<case>/`, made by
//! `scripts/differential/aiperf.sh` against the bundled engine) are read whole, every figure they
//! print is recomputed as that version computed it (docs/formats/aiperf.md rows A3, A4, A7) or
//! named as not recomputable, and nothing is raised that AIPerf's own code contradicts.

use crate::common::{rigaudit, root, Run};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The warnings a genuine file may carry. Each names what AIPerf did (rows A5, A6, A8, A9) or a
/// property of the figures as printed that AIPerf's code does not dispute (percentiles of a few
/// requests, row A7); none says a figure is not what AIPerf computed.
const NAMED_BEHAVIOUR: &[&str] = &[
    "import.failed-requests",
    "speed.token-source",
    "speed.cached-tokens",
    "import.percentile-few-samples",
];

/// The cases every version ran, and those from 0.2.0 on (no duration limit or cancellation in
/// 0.1.1).
const CASES: &[&str] = &["count", "rate", "shapes", "timeout"];
const CASES_0_2: &[&str] = &["duration", "cancel"];

const SUMMARY: &str = "profile_export_aiperf.json";
const RECORDS: &str = "profile_export.jsonl";

fn base() -> PathBuf {
    root().join("fixtures/differential/aiperf")
}

/// The pinned versions (`[aiperf] versions` of pins.toml).
fn pinned() -> Vec<String> {
    let pins = std::fs::read_to_string(root().join("fixtures/differential/pins.toml")).unwrap();
    let section = pins.split("[aiperf]").nth(1).unwrap();
    let line = section
        .lines()
        .find(|l| l.starts_with("versions"))
        .expect("[aiperf] versions in pins.toml");
    let list = line.split_once('[').unwrap().1.trim_end_matches(']');
    list.split(',')
        .map(|v| v.trim().trim_matches('"').to_string())
        .collect()
}

/// Whether a version is 0.1.x (summary only, no duration limit or cancellation).
fn first(v: &str) -> bool {
    v.starts_with("0.1.")
}

/// Every case folder: (version, case, the tool's files in it).
fn cases() -> Vec<(String, String, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for v in pinned() {
        let more = if first(&v) { &[][..] } else { CASES_0_2 };
        for case in CASES.iter().chain(more) {
            let dir = base().join(&v).join(case);
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.unwrap().path())
                .filter(|p| {
                    let n = name(p);
                    n.ends_with(".json") || n.ends_with(".jsonl")
                })
                .collect();
            files.sort();
            out.push((v.clone(), case.to_string(), files));
        }
    }
    out
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn verify(files: &[PathBuf], format: &str) -> Run {
    let mut args = vec!["verify".to_string(), "--from".into(), "aiperf".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--format".into(), format.into()]);
    rigaudit(&args)
}

fn summary_of(files: &[PathBuf]) -> Value {
    let p = files
        .iter()
        .find(|f| name(f) == SUMMARY)
        .expect("a summary");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn every_pinned_version_wrote_every_case() {
    let versions = pinned();
    assert!(versions.len() >= 3, "{versions:?}");
    let all = cases();
    for v in &versions {
        let n = all.iter().filter(|(x, _, _)| x == v).count();
        assert_eq!(n, if first(v) { 4 } else { 6 }, "{v}");
    }
    for (v, case, files) in &all {
        let names: Vec<String> = files.iter().map(|f| name(f)).collect();
        assert!(
            names.contains(&SUMMARY.to_string()),
            "{v}/{case}: {names:?}"
        );
        // Row A1: per-request records from 0.2.0 on.
        let records = names.contains(&RECORDS.to_string());
        assert_eq!(records, !first(v), "{v}/{case}: {names:?}");
        for f in files {
            let size = std::fs::metadata(f).unwrap().len();
            assert!(size < 400_000, "{}: {size} bytes", f.display());
        }
    }
}

#[test]
fn a_genuine_file_raises_nothing_its_tool_contradicts() {
    let mut wrong = Vec::new();
    for (v, case, files) in cases() {
        let run = verify(&files, "json");
        let report: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        if run.code != 0 || report["verdict"] != "pass" {
            wrong.push(format!("{v}/{case}: exit {}: {}", run.code, run.stderr));
            continue;
        }
        for f in report["findings"].as_array().unwrap() {
            let check = f["check"].as_str().unwrap_or_default();
            let raised = f["severity"] == "error" || f["severity"] == "warning";
            if raised && !NAMED_BEHAVIOUR.contains(&check) {
                wrong.push(format!("{v}/{case}: {check}: {}", f["message"]));
            }
        }
        let differ = report["recomputed"].as_array().unwrap();
        for r in differ.iter().filter(|r| r["matches"] != true) {
            wrong.push(format!("{v}/{case}: {r}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The printed figures of a summary, as the keys rigaudit records them under: `aiperf.<tag>`
/// for a single figure, `aiperf.<tag>.<field>` for each field of a distribution.
fn printed_keys(summary: &Value) -> Vec<(String, String)> {
    let metrics = summary
        .get("records")
        .unwrap_or(summary)
        .as_object()
        .unwrap();
    let mut out = Vec::new();
    for (tag, m) in metrics.iter().filter(|(_, m)| m.get("unit").is_some()) {
        let spread = m["p50"].is_number() || m["min"].is_number();
        for (f, x) in m.as_object().unwrap() {
            match (spread, x.is_number()) {
                (true, true) => out.push((tag.clone(), format!("aiperf.{tag}.{f}"))),
                (false, true) if f == "avg" => out.push((tag.clone(), format!("aiperf.{tag}"))),
                _ => {}
            }
        }
    }
    out
}

#[test]
fn every_printed_figure_is_recomputed_as_its_version_did_or_named() {
    let mut wrong = Vec::new();
    for (v, case, files) in cases().into_iter().filter(|(v, _, _)| !first(v)) {
        let report = verify(&files, "json").json();
        let recomputed: Vec<&str> = report["recomputed"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["key"].as_str())
            .collect();
        let named: String = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == "import.not-recomputable")
            .filter_map(|f| f["message"].as_str())
            .collect();
        for (tag, key) in printed_keys(&summary_of(&files)) {
            let listed = named.split([' ', ',', ':']).any(|w| w == tag);
            if !recomputed.contains(&key.as_str()) && !listed {
                wrong.push(format!("{v}/{case}: {key} neither recomputed nor named"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_summary_alone_says_what_it_checked_and_what_it_could_not() {
    for (v, case, files) in cases().into_iter().filter(|(v, _, _)| first(v)) {
        let run = verify(&files, "text");
        assert_eq!(run.code, 0, "{v}/{case}: {}", run.stdout);
        // The verdict's line, whatever its wrapping.
        let said = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        let head = said.split(" (0 errors").next().unwrap();
        assert!(
            head.contains(": PASS, summary only: ")
                && head.ends_with(" distributions not recomputed (no per-request records given)"),
            "{v}/{case}: {}",
            run.stdout
        );
        // Row A4 at 0.1.x: output_token_throughput from request_throughput and the OSL sum.
        let report = verify(&files, "json").json();
        let keys: Vec<&str> = report["recomputed"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["key"].as_str())
            .collect();
        assert_eq!(keys, ["aiperf.output_token_throughput"], "{v}/{case}");
    }
}

#[test]
fn every_failed_request_is_counted_and_named_as_aiperf_counted_it() {
    for (v, case, files) in cases() {
        let summary = summary_of(&files);
        let metrics = summary.get("records").unwrap_or(&summary);
        let errors = metrics["error_request_count"]["avg"]
            .as_f64()
            .unwrap_or(0.0);
        let run = verify(&files, "json");
        let found = run.findings("import.failed-requests");
        if errors == 0.0 {
            assert!(found.is_empty(), "{v}/{case}: {found:?}");
            continue;
        }
        assert_eq!(found.len(), 1, "{v}/{case}");
        let said = found[0]["message"].as_str().unwrap();
        let n = errors as u64;
        assert!(
            said.contains(&format!("counts {n} failed")) || said.contains(&format!("{n} of ")),
            "{v}/{case}: {said}"
        );
        // Row A5: before 0.7.0 a reply with no content is failed with no error named.
        let named = metrics["error_summary"]
            .as_array()
            .or(summary["error_summary"].as_array());
        let with_error: f64 = named
            .into_iter()
            .flatten()
            .filter_map(|e| e["count"].as_f64())
            .sum();
        if with_error < errors {
            assert!(said.contains("no error named"), "{v}/{case}: {said}");
        }
    }
}

/// A copy of a case's files with `edit` applied to its summary.
fn edited_summary(version: &str, case: &str, edit: impl Fn(&mut Value)) -> Vec<PathBuf> {
    let from = base().join(version).join(case);
    let to = std::env::temp_dir().join(format!(
        "rigaudit-aiperf-{version}-{case}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&to).unwrap();
    let mut out = Vec::new();
    for e in std::fs::read_dir(&from).unwrap() {
        let p = e.unwrap().path();
        if name(&p).ends_with(".csv") || name(&p).ends_with(".log") || name(&p).ends_with(".txt") {
            continue;
        }
        let mut text = std::fs::read_to_string(&p).unwrap();
        if name(&p) == SUMMARY {
            let mut v: Value = serde_json::from_str(&text).unwrap();
            edit(&mut v);
            text = serde_json::to_string_pretty(&v).unwrap();
        }
        let dest = to.join(name(&p));
        std::fs::write(&dest, text).unwrap();
        out.push(dest);
    }
    out.sort();
    out
}

#[test]
fn each_version_is_held_to_its_own_rule_not_another_versions() {
    // 0.13 (row A4): the throughputs are over end_time - start_time; a request_throughput over
    // benchmark_duration, 0.11's rule, is not what 0.13 computed.
    let files = edited_summary("0.13.0", "count", |v| {
        let rate = v["request_count"]["avg"].as_f64().unwrap()
            / v["benchmark_duration"]["avg"].as_f64().unwrap();
        v["request_throughput"]["avg"] = rate.into();
    });
    let run = verify(&files, "json");
    let found = run.findings("speed.recompute-mismatch");
    assert_eq!(found.len(), 1, "{}", run.stdout);
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains("aiperf.request_throughput"));
    // 0.7 (row A3): the duration is the valid requests' start + request_latency, not their last
    // request_end_ns; 1 ms more is caught.
    let files = edited_summary("0.7.0", "count", |v| {
        let d = v["benchmark_duration"]["avg"].as_f64().unwrap();
        v["benchmark_duration"]["avg"] = (d + 0.001).into();
    });
    let run = verify(&files, "json");
    let keys: Vec<String> = run
        .findings("speed.recompute-mismatch")
        .iter()
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect();
    assert!(
        keys.iter()
            .any(|m| m.starts_with("aiperf.benchmark_duration")),
        "{keys:?}"
    );
}
