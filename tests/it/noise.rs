//! `rigaudit noise`: the smallest difference each figure of a page could show, from its own runs,
//! on the recorded CPU run (5 runs a decode prompt and prefill depth, 3 rounds a concurrency
//! level, two quality tests), on a copy of it with one run a step, on a page of headlines only,
//! and on paths that are no bundle.

use crate::common;

use common::{copy_dir, fixture, rigaudit, root, Run};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn smollm2() -> PathBuf {
    root().join("fixtures/runs/smollm2-cpu")
}

fn noise(bundle: &Path, format: &str) -> Run {
    rigaudit(&["noise", bundle.to_str().unwrap(), "--format", format])
}

/// The row of `key` in a JSON report's `noise`.
fn row<'a>(report: &'a Value, key: &str) -> &'a Value {
    let rows = report["noise"].as_array().expect("noise rows");
    let found = rows.iter().find(|r| r["key"] == key);
    found.unwrap_or_else(|| panic!("no row {key}: {report:#}"))
}

/// A text report with its wrapped lines joined: each run of white space one space.
fn unwrapped(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn follows_the_report_schema(report: &Value) {
    let text = std::fs::read_to_string(root().join("schemas/report.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errs: Vec<String> = v.iter_errors(report).map(|e| e.to_string()).collect();
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn the_recorded_run_tells_each_figure_from_its_runs() {
    let run = noise(&smollm2(), "json");
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let r = run.json();
    follows_the_report_schema(&r);
    assert_eq!(r["command"], "noise");
    assert_eq!(r["verdict"], "pass");
    let decode = row(&r, "decode.code");
    assert_eq!(
        (decode["basis"].as_str(), decode["n"].as_u64()),
        (Some("runs"), Some(5))
    );
    let s = &decode["speed"];
    let (across, within) = (
        s["half_width_pct"].as_f64().unwrap(),
        s["half_width_within_pct"].as_f64().unwrap(),
    );
    assert!(within > 0.0 && within < across, "{s:#}");
    assert!(
        across > 16.0,
        "the 7 % session spread alone sets ±16 %: {s:#}"
    );
    assert!(
        (s["session_sd_pct"].as_f64().unwrap() - 7.0).abs() < 1e-9,
        "{s:#}"
    );
    assert_eq!(s["runs_to_tell"], json!({"pct5": 0, "pct10": 0}));
    assert_eq!(row(&r, "prefill.128")["n"], 5);
    assert_eq!(row(&r, "conc_total.4")["n"], 3);
    let arith = row(&r, "quality.arith.pct");
    assert_eq!(
        (arith["basis"].as_str(), arith["n"].as_u64()),
        (Some("questions"), Some(24))
    );
    assert!(arith["quality"]["flip_rate_pct"].is_null(), "{arith:#}");
    let why = arith["why"].as_str().unwrap();
    assert!(
        why.contains("the flip rate cannot be measured from this page"),
        "{why}"
    );
    let l1 = row(&r, "l1_decode");
    assert_eq!(l1["basis"], "one-run");
    let cannot = common::findings_in(&r, "noise.cannot-tell");
    assert!(cannot.iter().any(|f| f["severity"] == "warning"
        && f["message"]
            .as_str()
            .unwrap()
            .starts_with("l1_decode: one run: no spread measured")));
}

#[test]
fn the_text_report_prints_a_table_of_the_rows() {
    let run = noise(&smollm2(), "text");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    assert!(out.starts_with("rigaudit noise "), "{out}");
    assert!(
        out.contains("smallest difference each figure could show"),
        "{out}"
    );
    let decode = out
        .lines()
        .find(|l| l.trim_start().starts_with("decode.code "))
        .unwrap();
    assert!(decode.contains(" 5 ") && decode.contains("±"), "{decode}");
    let arith = out
        .lines()
        .find(|l| l.trim_start().starts_with("quality.arith.pct "))
        .unwrap();
    assert!(
        arith.contains("points unpaired") && arith.contains("flip rate not measured"),
        "{arith}"
    );
    let said = "l1_decode: one run: no spread measured; the smallest difference cannot be told from this page";
    assert!(unwrapped(out).contains(said), "{out}");
    for format in ["markdown", "html", "sarif", "junit"] {
        let run = noise(&smollm2(), format);
        assert_eq!(run.code, 0, "{format}: {}", run.stderr);
        assert!(
            run.stdout.contains("noise.smallest-difference"),
            "{format}: {}",
            run.stdout
        );
    }
}

/// A copy of the recorded run with one counted run a step (the first; one round a level).
fn one_run_a_step(dir: &Path) {
    copy_dir(&smollm2(), dir);
    let path = dir.join("speed/speed-result.json");
    let mut result = common::read_json(&path);
    let requests = result["requests"].as_array_mut().unwrap();
    requests
        .retain(|q| q["run"].as_u64().unwrap_or(0) <= 1 && q["round"].as_u64().unwrap_or(1) == 1);
    std::fs::write(&path, serde_json::to_string_pretty(&result).unwrap()).unwrap();
}

#[test]
fn a_page_of_one_run_a_step_says_what_it_cannot_tell() {
    let tmp = tempfile::tempdir().unwrap();
    one_run_a_step(tmp.path());
    let run = noise(tmp.path(), "text");
    assert_eq!(
        run.code, 0,
        "warnings do not fail by default: {}",
        run.stderr
    );
    let text = unwrapped(&run.stdout);
    for key in ["decode.code", "prefill.512", "ctx_decode.256"] {
        let said = format!("{key}: one run: no spread measured; the smallest difference cannot be told from this page");
        assert!(text.contains(&said), "{said}\n{}", run.stdout);
    }
    assert!(
        text.contains("conc_total.2: one round: no spread measured"),
        "{}",
        run.stdout
    );
    let r = noise(tmp.path(), "json").json();
    follows_the_report_schema(&r);
    assert_eq!(row(&r, "decode")["basis"], "one-run");
    assert_eq!(
        row(&r, "quality.arith.pct")["basis"],
        "questions",
        "answers still tell"
    );
    let gated = rigaudit(&[
        "noise",
        tmp.path().to_str().unwrap(),
        "--fail-on",
        "warning",
    ]);
    assert_eq!(gated.code, 1, "{}", gated.stdout);
}

#[test]
fn a_page_of_headlines_only_tells_nothing_and_is_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&smollm2(), tmp.path());
    let path = tmp.path().join("speed/speed-result.json");
    let mut result = common::read_json(&path);
    result["requests"] = json!([]);
    std::fs::write(&path, serde_json::to_string(&result).unwrap()).unwrap();
    let manifest = tmp.path().join("bundle.json");
    let mut m = common::read_json(&manifest);
    let files = m["files"].as_array_mut().unwrap();
    files.retain(|f| !f["path"].as_str().unwrap().starts_with("quality/"));
    std::fs::write(&manifest, serde_json::to_string(&m).unwrap()).unwrap();
    let run = noise(tmp.path(), "text");
    assert_eq!(run.code, 3, "{}", run.stdout);
    let text = unwrapped(&run.stdout);
    assert!(
        text.contains("no figure has repeated runs"),
        "{}",
        run.stdout
    );
    assert!(
        text.contains("decode: a headline figure only, no per-run records"),
        "{}",
        run.stdout
    );
}

#[test]
fn the_seed_page_tells_its_two_run_steps_widely() {
    let r = noise(&fixture("tensorfold-127-stock-2x"), "json").json();
    follows_the_report_schema(&r);
    let decode = row(&r, "decode.code");
    assert_eq!(
        (decode["basis"].as_str(), decode["n"].as_u64()),
        (Some("runs"), Some(2))
    );
    let ctx = row(&r, "ctx_decode.16384");
    assert_eq!(ctx["basis"], "no-value", "beyond the window: {ctx:#}");
}

#[test]
fn a_path_that_is_no_bundle_is_named_and_exits_2() {
    let card = smollm2().join("card.json");
    let run = rigaudit(&["noise", card.to_str().unwrap()]);
    run.assert_exit_saying(2, "card.json");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("results.txt");
    std::fs::write(&other, "decode 42 tok/s\n").unwrap();
    let run = rigaudit(&["noise", other.to_str().unwrap()]);
    run.assert_exit_saying(2, "results.txt: not a rigaudit bundle");
    let missing = tmp.path().join("nowhere");
    rigaudit(&["noise", missing.to_str().unwrap()]).assert_exit_saying(2, "nowhere");
}
