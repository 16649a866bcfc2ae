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
/// GenAI-Perf's cases (perf_analyzer aborts on an HTTP error: no timeout case).
const CASES_GENAI: &[&str] = &["count", "rate", "shapes"];

const SUMMARY: &str = "profile_export_aiperf.json";
const RECORDS: &str = "profile_export.jsonl";
const GENAI_SUMMARY: &str = "profile_export_genai_perf.json";
const GENAI_RECORDS: &str = "profile_export.json";

fn base() -> PathBuf {
    root().join("fixtures/differential/aiperf")
}

/// A pinned list of the `[aiperf]` section of pins.toml (`versions`, `genai_perf_versions`).
fn pins(key: &str) -> Vec<String> {
    let pins = std::fs::read_to_string(root().join("fixtures/differential/pins.toml")).unwrap();
    let section = pins.split("[aiperf]").nth(1).unwrap();
    let line = section
        .lines()
        .find(|l| l.split_once(" =").is_some_and(|(k, _)| k == key))
        .unwrap_or_else(|| panic!("[aiperf] {key} in pins.toml"));
    let list = line.split_once('[').unwrap().1.trim_end_matches(']');
    list.split(',')
        .map(|v| v.trim().trim_matches('"').to_string())
        .collect()
}

/// The pinned AIPerf versions, then GenAI-Perf's as `genai-perf-<version>` (their folders).
fn pinned() -> Vec<String> {
    let genai = pins("genai_perf_versions");
    let mut all = pins("versions");
    all.extend(genai.iter().map(|v| format!("genai-perf-{v}")));
    all
}

fn genai(v: &str) -> bool {
    v.starts_with("genai-perf-")
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
        let all: Vec<&&str> = match genai(&v) {
            true => CASES_GENAI.iter().collect(),
            false => CASES.iter().chain(more).collect(),
        };
        for case in all {
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
        .find(|f| name(f) == SUMMARY || name(f) == GENAI_SUMMARY)
        .expect("a summary");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn every_pinned_version_wrote_every_case() {
    assert!(pins("versions").len() >= 3 && pins("genai_perf_versions").len() >= 3);
    let all = cases();
    for v in &pinned() {
        let n = all.iter().filter(|(x, _, _)| x == v).count();
        let want = match (genai(v), first(v)) {
            (true, _) => 3,
            (false, true) => 4,
            (false, false) => 6,
        };
        assert_eq!(n, want, "{v}");
    }
    for (v, case, files) in &all {
        let names: Vec<String> = files.iter().map(|f| name(f)).collect();
        let (summary, records) = match genai(v) {
            true => (GENAI_SUMMARY, GENAI_RECORDS),
            false => (SUMMARY, RECORDS),
        };
        assert!(
            names.contains(&summary.to_string()),
            "{v}/{case}: {names:?}"
        );
        // Row A1: per-request records from 0.2.0 on (G1: perf_analyzer's export always).
        let has_records = names.contains(&records.to_string());
        assert_eq!(has_records, !first(v), "{v}/{case}: {names:?}");
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
        let errors = match genai(&v) {
            true => without_content(&files) as f64,
            false => metrics["error_request_count"]["avg"]
                .as_f64()
                .unwrap_or(0.0),
        };
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

/// GenAI-Perf (row G2): the requests of perf_analyzer's export none of whose response chunks
/// carries text, counted here apart from the reader (a non-empty `"content"` or `"text"`).
fn without_content(files: &[PathBuf]) -> usize {
    let p = files.iter().find(|f| name(f) == GENAI_RECORDS).unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let requests = v["experiments"][0]["requests"].as_array().unwrap();
    let texted = |o: &Value| {
        let r = o["response"].as_str().unwrap_or_default();
        ["\"content\":\"", "\"text\":\""]
            .iter()
            .any(|k| r.split(k).skip(1).any(|rest| !rest.starts_with('"')))
    };
    let outputs = |r: &Value| {
        r["response_outputs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    requests
        .iter()
        .filter(|r| !outputs(r).iter().any(texted))
        .count()
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
        if name(&p) == SUMMARY || name(&p) == GENAI_SUMMARY {
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
    // GenAI-Perf (row G2, G3): request_throughput counts the 2 requests without content that
    // request_count leaves out; the same rate over the 6 counted is not what it computed.
    let files = edited_summary("genai-perf-0.0.16", "shapes", |v| {
        let rate = v["request_throughput"]["avg"].as_f64().unwrap();
        v["request_throughput"]["avg"] = (rate * 6.0 / 8.0).into();
    });
    let run = verify(&files, "json");
    let found = run.findings("speed.recompute-mismatch");
    assert_eq!(found.len(), 1, "{}", run.stdout);
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
