//! `rigaudit verify` end to end: the seed fixtures, every check triggered by a one-value change to
//! a copy of a fixture, malformed input, packed bundles, exit codes and the report schema.

use crate::common;

use common::assert_has;
use common::{fixture, read_json, rigaudit, rigaudit_line, root, verify, Copy};
use serde_json::{json, Value};

const TF: &str = "tensorfold-127-stock-2x";
const MIA: &str = "mia-recipe-1104-2x";
/// The speed result and the GPQA Diamond answers of a seed page.
const RESULT: &str = "speed/speed-result.json";
const GPQA_ANSWERS: &str = "quality/gpqa-diamond/answers.jsonl";

fn recomputed(r: &Value, key: &str) -> Value {
    r["recomputed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["key"] == key)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn tensorfold_page_fails_on_its_refusals() {
    let run = verify(&fixture(TF));
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["verdict"], "fail");
    let refused = run.findings("quality.refused-counted-as-wrong");
    let msgs: Vec<&str> = refused
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(refused.len(), 2, "{msgs:?}");
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("livecodebench") && m.contains("40 refused")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("gpqa-think") && m.contains("30 refused")),
        "{msgs:?}"
    );
    assert!(msgs.iter().all(|m| m.contains("HTTP 400")
        && m.contains("maximum context length is 8192 tokens")
        && m.contains("no result")));
    assert!(run
        .findings("speed.step-exceeds-window")
        .iter()
        .any(|f| f["message"].as_str().unwrap().starts_with("l1")));
    // The headline figures recompute with no mismatch.
    for check in [
        "speed.recompute-mismatch",
        "quality.pct-mismatch",
        "quality.margin-mismatch",
        "quality.count-mismatch",
    ] {
        assert!(!run.has(check), "{check}: {:?}", run.findings(check));
    }
    let close = |key: &str, want: f64, tol: f64| {
        let v = recomputed(&r, key)["value"].as_f64().unwrap_or(f64::NAN);
        assert!((v - want).abs() <= tol, "{key}: {v} vs {want}");
    };
    close("decode", 28.0, 0.05);
    close("prefill.2048", 1150.2, 0.05);
    close("quality.mmlu-pro.pct", 59.0, 0.05);
    close("quality.mmlu-pro.margin", 4.8, 0.05);
    close("quality.gpqa-diamond.pct", 44.9, 0.05);
    close("quality.gpqa-diamond.margin", 6.9, 0.05);
    close("quality.ifeval.pct", 64.0, 0.05);
    close("quality.ifeval.margin", 6.6, 0.05);
    assert!(recomputed(&r, "quality.livecodebench.pct")["value"].is_null());
}

#[test]
fn mia_page_passes_with_its_warnings() {
    let run = verify(&fixture(MIA));
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(run.json()["verdict"], "pass");
    assert!(run.has_at("setup.revision-marker", "warning"));
    assert_eq!(run.findings("setup.citation-commit").len(), 2);
    let cut = run.findings("quality.cutoffs");
    assert!(
        cut.iter().any(|f| f["message"]
            .as_str()
            .unwrap()
            .contains("livecodebench: 16 of 40")),
        "{cut:?}"
    );
    assert!(!run.has("quality.refused-counted-as-wrong"));
    assert!(!run.has("speed.not-recomputable"));
}

#[test]
fn report_follows_its_schema_and_names_checks_of_the_catalogue() {
    let schema: Value = read_json(&common::root().join("schemas/report.schema.json"));
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let ids = common::catalogue_ids();
    for name in [TF, MIA] {
        let r = verify(&fixture(name)).json();
        let errs: Vec<String> = v.iter_errors(&r).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{errs:?}");
        for f in r["findings"].as_array().unwrap() {
            assert!(ids.iter().any(|id| f["check"] == **id), "{f}");
        }
        for c in r["checks_run"].as_array().unwrap() {
            assert!(ids.iter().any(|id| c == id), "{c}");
        }
    }
}

#[test]
fn text_output_groups_by_severity_and_check() {
    let run = rigaudit(&["verify", fixture(TF).to_str().unwrap()]);
    assert_eq!(run.code, 1);
    // The verdict line first, then the findings, errors before warnings.
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("rigaudit verify tensorfold-127-stock-2x: FAIL"),
        "{first}"
    );
    let errors = run.stdout.find("\nerrors\n").unwrap();
    let warnings = run.stdout.find("\nwarnings\n").unwrap();
    assert!(errors < warnings, "{}", run.stdout);
    assert!(run.stdout.contains("quality.refused-counted-as-wrong"));
}

#[test]
fn sarif_output_has_a_rule_per_check_and_a_result_per_finding() {
    let json = verify(&fixture(TF)).json();
    let run = rigaudit(&["verify", fixture(TF).to_str().unwrap(), "--format", "sarif"]);
    assert_eq!(run.code, 1);
    let s: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(s["version"], "2.1.0");
    let results = s["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), json["findings"].as_array().unwrap().len());
    let rules = s["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    for r in results {
        assert!(rules.iter().any(|x| x["id"] == r["ruleId"]), "{r}");
    }
    assert!(results
        .iter()
        .any(|r| r["ruleId"] == "quality.refused-counted-as-wrong" && r["level"] == "error"));
}

#[test]
fn fail_on_and_report_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report.json");
    let line = "verify {} --fail-on warning --report {}";
    let run = rigaudit_line(
        line,
        &[fixture(MIA).to_str().unwrap(), out.to_str().unwrap()],
    );
    assert_eq!(run.code, 1);
    let saved: Value = read_json(&out);
    assert_eq!(saved["verdict"], "fail");
    let run = rigaudit_line(
        "verify {} --fail-on never",
        &[fixture(TF).to_str().unwrap()],
    );
    assert_eq!(run.code, 0);
}

// ---- every check: a one-value change triggers it; the pristine fixture does not (or the other one)

fn triggers(c: &Copy, check: &str) -> common::Run {
    let run = verify(c.path());
    assert!(run.has(check), "{check} not reported: {}", run.stdout);
    run
}

/// The first finding of `check`, which the copy must trigger.
fn first(c: &Copy, check: &str) -> Value {
    triggers(c, check).findings(check)[0].clone()
}

/// The message of the first finding of `check`, which the copy must trigger.
fn message(c: &Copy, check: &str) -> String {
    first(c, check)["message"].as_str().unwrap().to_string()
}

fn pristine_lacks(name: &str, check: &str) {
    assert!(
        !verify(&fixture(name)).has(check),
        "{check} reported on pristine {name}"
    );
}

/// One-value changes that each trigger a check: `(check, fixture, file, JSON pointer, the new
/// value as JSON)`.
#[rustfmt::skip]
const TRIGGERS: &[(&str, &str, &str, &str, &str)] = &[
    ("speed.reply-not-at-limit", TF, RESULT, "/requests/1/completion_tokens", "500"),
    ("speed.level-above-slots", TF, "speed/speed-contract.json", "/conc/levels", "[1, 2, 4, 8, 16]"),
    ("speed.load-guard", TF, RESULT, "/load_guard/steps/5/longest_run_over", "2"),
    ("speed.failed-request", TF, RESULT, "/requests/2/status", "500"),
    ("speed.token-source", TF, RESULT, "/requests/3/completion_tokens_source", "\"chunks\""),
    ("setup.slots-mismatch", TF, "speed/speed-contract.json", "/server/slots", "4"),
    ("setup.slots-mismatch", TF, "card.json", "/commands/1/argv/6", "\"4\""),
    ("setup.window-mismatch", TF, "speed/speed-contract.json", "/server/window", "16384"),
    ("setup.window-mismatch", MIA, "fit/result.json", "/window", "262144"),
    ("setup.sampling-mismatch", TF, "card.json", "/sampling/defaults/top_p", "0.9"),
    ("setup.sampling-mismatch", TF, "quality/ifeval/contract.json", "/sampling/top_k", "40"),
    ("setup.version-mismatch", TF, "card.json", "/engine/version", "\"1.2.8\""),
    ("setup.version-mismatch", TF, "card.json", "/nccl/version", "\"2.30.8\""),
    ("setup.model-mismatch", TF, "speed/speed-contract.json", "/model", "\"GLM-5.3\""),
    ("setup.ranks-mismatch", TF, "card.json", "/ranks", "3"),
    ("setup.ranks-mismatch", TF, "card.json", "/commands/0/argv/4", "\"GLM\""),
    ("setup.date-order", TF, "card.json", "/engine/published", "\"2026-11-13T09:00:00Z\""),
    ("setup.date-order", TF, "bundle.json", "/sessions/2/started", "\"2026-11-12T01:00:00Z\""),
    ("setup.date-order", TF, "quality/ifeval/summary.json", "/ended", "\"2026-11-12T02:00:00Z\""),
    ("setup.revision-marker", TF, "card.json", "/checkpoint/revision_file/written_by", "\"hand\""),
    ("fit.recompute-mismatch", MIA, "bundle.json", "/page/fit/memory_gib", "\"99.0\""),
    ("fit.recompute-mismatch", MIA, "fit/result.json", "/steps/4/rise_gib/box-4", "101.2"),
    ("fit.recompute-mismatch", MIA, "fit/result.json", "/steps/5/answered", "false"),
    ("fit.step-exceeds-window", MIA, "fit/result.json", "/steps/0/prompt_tokens", "5000"),
    ("schema.no-digest", MIA, "bundle.json", "/files/3/sha256", "null"),
    ("quality.answers-summary-mismatch", TF, "quality/gpqa-diamond/summary.json", "/cutoffs", "3"),
    ("quality.count-mismatch", TF, "bundle.json", "/page/quality/0/right", "237"),
    ("quality.count-mismatch", TF, "bundle.json", "/page/quality/2/cutoffs", "7"),
];

/// Checks a pristine fixture does not report: `(fixture, check)`.
#[rustfmt::skip]
const PRISTINE_LACKS: &[(&str, &str)] = &[
    (TF, "speed.reply-not-at-limit"),
    (TF, "speed.level-above-slots"),
    // Mia's page threw two tries away: kept once, so no finding.
    (MIA, "speed.load-guard"),
    (TF, "speed.load-guard"),
    (TF, "speed.failed-request"),
    (TF, "speed.token-source"),
    (TF, "setup.slots-mismatch"),
    (TF, "setup.window-mismatch"),
    (MIA, "setup.window-mismatch"),
    (TF, "setup.sampling-mismatch"),
    (MIA, "setup.sampling-mismatch"),
    (TF, "setup.version-mismatch"),
    (TF, "setup.model-mismatch"),
    (TF, "setup.ranks-mismatch"),
    (TF, "setup.date-order"),
    (MIA, "setup.date-order"),
    (TF, "setup.revision-marker"),
    (MIA, "fit.recompute-mismatch"),
    (MIA, "fit.step-exceeds-window"),
    (MIA, "schema.no-digest"),
    (TF, "quality.answers-summary-mismatch"),
];

#[test]
fn each_one_value_change_triggers_its_check() {
    for (check, page, file, pointer, value) in TRIGGERS {
        let c = Copy::of(page);
        c.set(file, pointer, serde_json::from_str(value).unwrap());
        triggers(&c, check);
    }
}

/// One-value changes whose check's first finding names a place: `(check, fixture, file, JSON
/// pointer, the new value as JSON text, the place named)`.
const POINTED: &[(&str, &str, &str, &str, &str, &str)] = &[
    (
        "quality.pct-mismatch",
        TF,
        "bundle.json",
        "/page/quality/1/pct",
        r#""45.0""#,
        "/page/quality/gpqa-diamond/pct",
    ),
    (
        "speed.recompute-mismatch",
        TF,
        "bundle.json",
        "/page/speed/decode",
        r#""28.3""#,
        "/page/speed/decode",
    ),
    (
        "speed.cached-tokens",
        TF,
        RESULT,
        "/requests/6/cached_tokens",
        "1024",
        "/requests/6/cached_tokens",
    ),
    (
        "setup.citation-commit",
        TF,
        "card.json",
        "/citations/5/commit",
        r#""0a1b2c3d""#,
        "/citations/5",
    ),
];

#[test]
fn each_pointed_change_names_its_place() {
    for (check, page, file, pointer, value, at) in POINTED {
        let c = Copy::of(page);
        c.set(file, pointer, serde_json::from_str(value).unwrap());
        assert_eq!(first(&c, check)["pointer"], *at, "{check}");
    }
}

#[test]
fn the_pristine_fixtures_lack_what_they_do_not_do() {
    for (page, check) in PRISTINE_LACKS {
        pristine_lacks(page, check);
    }
}

#[test]
fn schema_file_missing() {
    let c = Copy::of(MIA);
    std::fs::remove_file(c.path().join("quality/gpqa-diamond/summary.json")).unwrap();
    let run = triggers(&c, "schema.file-missing");
    assert!(run.has_at("schema.file-missing", "error"));
    assert_eq!(run.code, 1);
    pristine_lacks(MIA, "schema.file-missing");
}

#[test]
fn schema_unreadable_names_line_and_column() {
    let c = Copy::of(MIA);
    let p = c.path().join(RESULT);
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, &text[..text.len() / 2]).unwrap();
    c.rehash();
    let run = triggers(&c, "schema.unreadable");
    let f = &run.findings("schema.unreadable")[0];
    assert_eq!(f["file"], RESULT);
    assert!(f["pointer"].as_str().unwrap().starts_with("line "), "{f}");
    assert_eq!(run.code, 1);
    pristine_lacks(MIA, "schema.unreadable");
}

/// A value of the wrong type, in a JSON file and on a line of an answers file: named at its place.
#[test]
fn schema_invalid_names_the_pointer_or_the_line() {
    let cases = [
        (
            RESULT,
            None,
            "/requests/0/status",
            json!("200"),
            "/requests/0/status",
        ),
        (
            GPQA_ANSWERS,
            Some(7),
            "/correct",
            json!("yes"),
            "line 7/correct",
        ),
    ];
    for (file, line, pointer, value, at) in cases {
        let c = Copy::of(MIA);
        match line {
            None => c.set(file, pointer, value),
            Some(n) => c.set_line(file, n, pointer, value),
        };
        triggers(&c, "schema.invalid").assert_finding_at("schema.invalid", at);
    }
    pristine_lacks(MIA, "schema.invalid");
}

#[test]
fn schema_unreadable_in_answers_names_the_line() {
    // A broken line is not JSON at all.
    let c = Copy::of(MIA);
    c.append(GPQA_ANSWERS, "{\"id\": \n").rehash();
    let run = triggers(&c, "schema.unreadable");
    assert!(run.findings("schema.unreadable")[0]["pointer"]
        .as_str()
        .unwrap()
        .starts_with("line 199"));
}

#[test]
fn schema_digest_mismatch() {
    let c = Copy::of(MIA);
    c.append("speed/log.txt", "x");
    assert_eq!(
        first(&c, "schema.digest-mismatch")["pointer"],
        "/files/3/sha256"
    );
    pristine_lacks(MIA, "schema.digest-mismatch");
}

#[test]
fn schema_path_escapes() {
    let c = Copy::of(MIA);
    c.set("bundle.json", "/files/3/path", json!("../outside.txt"));
    let run = triggers(&c, "schema.path-escapes");
    assert_eq!(run.code, 1);
    pristine_lacks(MIA, "schema.path-escapes");
}

#[test]
fn quality_refused_counted_as_wrong_reports_answered_figure() {
    pristine_lacks(MIA, "quality.refused-counted-as-wrong");
    // Refuse 3 of GPQA Diamond's wrong answers on the recipe page: the figure over answered questions follows.
    let c = Copy::of(MIA);
    let text = std::fs::read_to_string(c.path().join(GPQA_ANSWERS)).unwrap();
    let wrong: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("\"correct\": false") && l.contains("\"stop\""))
        .map(|(i, _)| i + 1)
        .take(3)
        .collect();
    for n in wrong {
        c.set_line(GPQA_ANSWERS, n, "/status", json!(500));
        c.set_line(GPQA_ANSWERS, n, "/error", json!("internal error"));
        c.set_line(GPQA_ANSWERS, n, "/finish_reason", Value::Null);
    }
    let m = message(&c, "quality.refused-counted-as-wrong");
    assert!(
        m.contains("3 refused")
            && m.contains("3 x HTTP 500: internal error")
            && m.contains("over the 195 answered questions: 104 right, 53.3 %"),
        "{m}"
    );
}

#[test]
fn quality_no_result_has_value() {
    let c = Copy::of(TF);
    c.set("quality/livecodebench/summary.json", "/pct", Value::Null);
    c.set("quality/livecodebench/summary.json", "/margin", Value::Null);
    let run = verify(c.path());
    let msgs: Vec<String> = run
        .findings("quality.no-result-has-value")
        .iter()
        .map(|f| f["message"].to_string())
        .collect();
    assert!(
        msgs.iter().all(|m| !m.contains("livecodebench")),
        "{msgs:?}"
    );
    assert!(msgs.iter().any(|m| m.contains("gpqa-think")), "{msgs:?}");
    // The page showing a value for a test with no result is reported too.
    let c = Copy::of(TF);
    c.set("bundle.json", "/page/quality/3/pct", json!("0.0"));
    assert!(verify(c.path())
        .findings("quality.no-result-has-value")
        .iter()
        .any(|f| f["file"] == "bundle.json"));
}

/// The recorded run's arith-long: every one of its 24 requests refused (the prompts do not fit the
/// window) and excluded, its figures left empty: no result, said as a warning, and its recomputed
/// rows not `matches`. Where a summary counts such refusals as wrong answers (the stock page),
/// `quality.refused-counted-as-wrong` says it, and this check stays quiet.
#[test]
fn quality_no_result() {
    let run = verify(&common::root().join("fixtures/runs/smollm2-cpu"));
    assert_eq!(run.code, 0, "{}", run.stdout);
    let found = run.findings("quality.no-result");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["severity"], "warning");
    assert_eq!(found[0]["file"], "quality/arith-long/summary.json");
    assert_has(
        found[0]["message"].as_str().unwrap(),
        "arith-long: no result: all 24 of its requests were refused",
    );
    let r = run.json();
    for key in ["quality.arith-long.pct", "quality.arith-long.margin"] {
        let row = common::entry(&r, "recomputed", "key", key);
        assert!(row["value"].is_null() && row["matches"] == false, "{row}");
    }
    pristine_lacks(TF, "quality.no-result");
}

#[test]
fn quality_pct_mismatch() {
    let c = Copy::of(TF);
    c.set("quality/mmlu-pro/summary.json", "/pct", json!(59.5));
    triggers(&c, "quality.pct-mismatch");
}

#[test]
fn quality_margin_mismatch_hints_at_the_other_method() {
    let c = Copy::of(TF);
    c.set("bundle.json", "/page/quality/0/margin", json!("5.8"));
    triggers(&c, "quality.margin-mismatch");
    // Under the normal approximation IFEval's 6.6 does not match; Wilson would, and the message says so.
    let c = Copy::of(TF);
    c.set(
        "quality/ifeval/contract.json",
        "/margin/method",
        json!("normal"),
    );
    let m = message(&c, "quality.margin-mismatch");
    assert!(m.contains("ifeval") && m.contains("wilson gives"), "{m}");
}

#[test]
fn quality_cutoffs() {
    let run = verify(&fixture(TF));
    let cut = run.findings("quality.cutoffs");
    assert!(cut.iter().any(|f| f["message"]
        .as_str()
        .unwrap()
        .starts_with("gpqa-diamond: 2 of 198")));
    assert!(cut.iter().any(|f| f["message"]
        .as_str()
        .unwrap()
        .starts_with("ifeval: 8 of 200")));
    assert!(!cut
        .iter()
        .any(|f| f["message"].as_str().unwrap().starts_with("mmlu-pro")));
    assert!(cut.iter().all(|f| f["severity"] == "info"));
}

#[test]
fn quality_scoring_disagrees() {
    let c = Copy::of(MIA);
    let text = std::fs::read_to_string(c.path().join(GPQA_ANSWERS)).unwrap();
    let n = text
        .lines()
        .position(|l| l.contains("\"correct\": true"))
        .unwrap()
        + 1;
    c.set_line(GPQA_ANSWERS, n, "/correct", json!(false));
    assert_eq!(
        first(&c, "quality.scoring-disagrees")["pointer"],
        format!("line {n}")
    );
    pristine_lacks(MIA, "quality.scoring-disagrees");
}

#[test]
fn quality_limit_mismatch() {
    let c = Copy::of(MIA);
    c.set_line(GPQA_ANSWERS, 3, "/max_tokens", json!(48));
    triggers(&c, "quality.limit-mismatch");
    pristine_lacks(MIA, "quality.limit-mismatch");
}

#[test]
fn speed_recompute_mismatch() {
    let c = Copy::of(TF);
    c.set(RESULT, "/values/conc_total.8", json!(58.9));
    triggers(&c, "speed.recompute-mismatch");
    // A record changed under a figure: the fourth decode run (prose, run 2) ends earlier.
    let c = Copy::of(TF);
    let r = c.read_json(RESULT);
    let end = r["requests"][4]["end_s"].as_f64().unwrap();
    c.set(RESULT, "/requests/4/end_s", json!(end - 1.0));
    triggers(&c, "speed.recompute-mismatch");
    pristine_lacks(MIA, "speed.recompute-mismatch");
}

#[test]
fn speed_not_recomputable() {
    assert!(verify(&fixture(TF))
        .findings("speed.not-recomputable")
        .iter()
        .any(|f| f["message"].as_str().unwrap().contains("decode_window1")));
    pristine_lacks(MIA, "speed.not-recomputable");
}

#[test]
fn speed_step_exceeds_window() {
    // A value for a step that cannot fit is an error.
    let c = Copy::of(TF);
    let mut m = c.read_json("bundle.json");
    m["page"]["speed"]["ctx_decode.16384"] = json!("25.0");
    c.write_json("bundle.json", &m);
    let run = triggers(&c, "speed.step-exceeds-window");
    assert!(run.has_at("speed.step-exceeds-window", "error"));
    // A step marked as not fitting that does fit.
    let c = Copy::of(MIA);
    c.set(RESULT, "/fits/0/fits", json!(false));
    triggers(&c, "speed.step-exceeds-window");
    pristine_lacks(MIA, "speed.step-exceeds-window");
}

#[test]
fn speed_cached_tokens() {
    pristine_lacks(TF, "speed.cached-tokens");
}

#[test]
fn setup_citation_commit() {
    pristine_lacks(TF, "setup.citation-commit");
}

#[test]
fn claims_unpublished() {
    assert!(verify(&fixture(TF))
        .findings("claims.unpublished")
        .iter()
        .any(|f| f["file"] == "quality/mmlu-pro/answers.jsonl"));
    let c = Copy::of(TF);
    c.set("bundle.json", "/files/2/published", json!(false));
    let run = triggers(&c, "claims.unpublished");
    assert!(run
        .findings("claims.unpublished")
        .iter()
        .any(|f| f["file"] == RESULT && f["severity"] == "warning"));
}

#[test]
fn claims_reconstructed() {
    assert!(verify(&fixture(MIA)).has("claims.reconstructed"));
    let c = Copy::of(MIA);
    let mut m = c.read_json("bundle.json");
    for f in m["files"].as_array_mut().unwrap() {
        f["reconstructed"] = json!(false);
    }
    c.write_json("bundle.json", &m);
    assert!(!verify(c.path()).has("claims.reconstructed"));
}

// ---- malformed input and exit codes

#[test]
fn unreadable_bundles_exit_2_with_the_file_and_place() {
    let run = rigaudit(&["verify", "/nonexistent/bundle"]);
    assert_eq!(run.code, 2);
    run.assert_stderr_has("/nonexistent/bundle");
    let c = Copy::of(MIA);
    std::fs::write(
        c.path().join("bundle.json"),
        "{\"format\": \"rigaudit-bundle/1\",\n  \"id\": ",
    )
    .unwrap();
    let run = verify(c.path());
    assert_eq!(run.code, 2);
    run.assert_stderr_has("bundle.json: line 2");
    let c = Copy::of(MIA);
    c.set("bundle.json", "/files/0/published", json!("yes"));
    let run = verify(c.path());
    assert_eq!(run.code, 2);
    run.assert_stderr_has("/files/0/published");
    assert!(!run.stderr.contains("panicked"));
}

/// Exit 3 is an incomplete report (the bundle was read, not everything in it could be checked);
/// 2 is a command line the tool could not act on (a path typed wrong): never the same code.
#[test]
fn nothing_checked_is_exit_3_never_0_and_a_typo_is_2() {
    let c = Copy::of(MIA);
    let m = c.read_json("bundle.json");
    for f in m["files"].as_array().unwrap() {
        let _ = std::fs::remove_file(c.path().join(f["path"].as_str().unwrap()));
    }
    let run = verify(c.path());
    assert_eq!(run.code, 3, "{}", run.stdout);
    let r = run.json();
    assert_eq!(r["verdict"], "incomplete");
    assert_eq!(r["verdict_qualifier"], r["incomplete"], "{r:#}");
    let text = rigaudit(&["verify", c.path().to_str().unwrap()]);
    assert_eq!(text.code, 3, "{}", text.stdout);
    assert_has(
        text.stdout.lines().next().unwrap_or_default(),
        ": INCOMPLETE (",
    );
    // The same folder's name with a letter wrong: nothing was read, no report, exit 2.
    let typo = format!("{}x", c.path().display());
    let run = rigaudit(&["verify", &typo, "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    run.assert_stderr_has(&typo);
}

#[test]
fn packed_bundle_verifies_like_the_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let packed = tmp.path().join("mia.tar.gz");
    let f = std::fs::File::create(&packed).unwrap();
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        f,
        flate2::Compression::fast(),
    ));
    tar.append_dir_all("mia-recipe-1104-2x", fixture(MIA))
        .unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let a = verify(&packed);
    let b = verify(&fixture(MIA));
    assert_eq!(a.code, 0, "{}{}", a.stdout, a.stderr);
    assert_eq!(a.json()["findings"], b.json()["findings"]);
}

#[test]
fn packed_bundle_that_leaves_its_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let packed = tmp.path().join("evil.tar");
    let f = std::fs::File::create(&packed).unwrap();
    let mut b = tar::Builder::new(f);
    let data = b"{}";
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    // Write the raw name so the builder's own check does not stop the test from making it.
    h.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"../escape.txt");
    h.set_cksum();
    b.append(&h, &data[..]).unwrap();
    b.finish().unwrap();
    let run = verify(&packed);
    assert_eq!(run.code, 2);
    run.assert_stderr_has("leaves the bundle");
    assert!(!tmp.path().join("escape.txt").exists());
}

#[test]
fn every_check_in_the_catalogue_has_a_test_here() {
    // The consistency checks' end-to-end tests are in lies.rs, the imported formats' in import.rs,
    // an MLPerf submitter's folder's in tree.rs, the GPU facts' in measure.rs (measured against a
    // fake NVML, then verified).
    let me = concat!(
        include_str!("verify.rs"),
        include_str!("lies.rs"),
        include_str!("import.rs"),
        include_str!("tree.rs"),
        include_str!("measure.rs")
    );
    let ids = rigaudit(&["checks", "--format", "json"]).json();
    for c in ids.as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        // rehash and replay compare a bundle with what they measured, loaded what a server
        // mapped, diff two bundles, ab two setups it ran, noise a bundle's own repeats; their own
        // tests cover them (tests/it/rehash.rs, tests/it/replay.rs with audit/src/loaded/tests.rs,
        // tests/it/diff.rs, tests/it/ab.rs, tests/it/noise.rs).
        let own = ["rehash.", "replay.", "loaded.", "diff.", "ab.", "noise."];
        if own.iter().any(|p| id.starts_with(p)) {
            continue;
        }
        assert!(me.contains(&format!("\"{id}\"")), "no test names {id}");
    }
}

/// Random one-value changes anywhere in the fixtures' JSON files (wrong types, extremes, huge
/// strings): verify always answers with 0, 1, 2 or 3 and never panics.
#[test]
fn random_changes_never_panic() {
    fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| {
                leaves(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                )
            }),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| leaves(x, format!("{at}/{i}"), out)),
            _ => out.push(at),
        }
    }
    let weird = [
        json!(null),
        json!(-1),
        json!(1e308),
        json!(u64::MAX),
        json!("x".repeat(10_000)),
        json!([]),
        json!({}),
        json!(0),
        json!(""),
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for name in [TF, MIA] {
        let m: Value = read_json(&fixture(name).join("bundle.json"));
        let mut files: Vec<String> = m["files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["path"].as_str().unwrap().ends_with(".json"))
            .map(|f| f["path"].as_str().unwrap().to_string())
            .collect();
        files.push("bundle.json".into());
        for _ in 0..20 {
            let file = &files[(next() % files.len() as u64) as usize];
            let c = Copy::of(name);
            let v = c.read_json(file);
            let mut all = Vec::new();
            leaves(&v, String::new(), &mut all);
            let at = &all[(next() % all.len() as u64) as usize];
            let w = weird[(next() % weird.len() as u64) as usize].clone();
            c.set(file, at, w.clone());
            let run = verify(c.path());
            assert!(
                [0, 1, 2, 3].contains(&run.code),
                "{file} {at} = {w}: exit {}: {}",
                run.code,
                run.stderr
            );
            assert!(
                !run.stderr.contains("panicked"),
                "{file} {at}: {}",
                run.stderr
            );
        }
    }
}

/// One raw file that cannot be read (a FIFO where the speed log should be) is one finding: every
/// other check still runs, and the incomplete verdict carries a finding saying what to add.
#[test]
fn one_unreadable_raw_file_is_one_finding_and_the_rest_is_checked() {
    let c = Copy::of(TF);
    let log = c.path().join("speed/log.txt");
    std::fs::remove_file(&log).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&log)
        .status()
        .unwrap();
    assert!(status.success());
    let run = verify(c.path());
    assert_eq!(run.code, 3, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["verdict"], "incomplete");
    let unreadable = run.findings("schema.unreadable");
    assert_eq!(unreadable.len(), 1, "{unreadable:#?}");
    assert_eq!(unreadable[0]["file"], "speed/log.txt");
    // The page's own errors are still found: the checks did not stop at the bad file.
    assert_eq!(run.findings("quality.refused-counted-as-wrong").len(), 2);
    let pristine = verify(&fixture(TF)).json();
    assert_eq!(r["checks_run"], pristine["checks_run"]);
    // The finding every incomplete report carries: what was not checked and what to add.
    let why = run.findings("coverage.incomplete");
    assert_eq!(why.len(), 1, "{why:#?}");
    let says = why[0]["message"].as_str().unwrap();
    assert_has(says, "speed/log.txt");
    assert_has(says, "(a FIFO)");
    assert_has(
        says,
        "publish it as a regular file within rigaudit's bounds",
    );
    assert!(pristine["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["check"] != "coverage.incomplete"));
}

/// Every regular file below `dir`, by its path inside it (`/`-separated), sorted.
fn files_below(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy();
                out.push(rel.replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// A packed bundle (`.tar.gz`) whose answers file is a FIFO member and whose speed log is a
/// symbolic link to a file outside: each is one finding on that file, nothing is unpacked as a
/// FIFO or a link, and every other check still runs.
#[test]
fn a_fifo_or_link_member_of_a_packed_bundle_is_one_finding_and_the_rest_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let packed = dir.path().join("tf.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&packed).unwrap(),
        flate2::Compression::fast(),
    );
    let mut tar = tar::Builder::new(gz);
    let src = fixture(TF);
    let (fifo, link) = ("quality/ifeval/answers.jsonl", "speed/log.txt");
    for rel in files_below(&src) {
        let name = format!("tf/{rel}");
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        if rel == fifo {
            h.set_entry_type(tar::EntryType::Fifo);
            h.set_size(0);
            tar.append_data(&mut h, &name, std::io::empty()).unwrap();
        } else if rel == link {
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            tar.append_link(&mut h, &name, "/etc/passwd").unwrap();
        } else {
            let bytes = std::fs::read(src.join(&rel)).unwrap();
            h.set_size(bytes.len() as u64);
            tar.append_data(&mut h, &name, &bytes[..]).unwrap();
        }
    }
    tar.into_inner().unwrap().finish().unwrap();
    let run = verify(&packed);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["verdict"], "incomplete", "{}", run.stderr);
    let unreadable = run.findings("schema.unreadable");
    assert_eq!(unreadable.len(), 2, "{unreadable:#?}");
    for (file, what) in [(fifo, "a FIFO"), (link, "a symbolic link")] {
        let f = unreadable
            .iter()
            .find(|f| f["file"] == file)
            .unwrap_or_else(|| panic!("{file}: {unreadable:#?}"));
        let says = f["message"].as_str().unwrap();
        assert_has(
            says,
            &format!("is {what} in the packed bundle, not a regular file"),
        );
        // The finding names the file in the bundle, not the temporary folder it was unpacked to.
        assert!(!says.contains("/tmp"), "{says}");
    }
    // The page's own errors are still found, by the same checks as the folder's.
    assert_eq!(run.findings("quality.refused-counted-as-wrong").len(), 2);
    let pristine = verify(&fixture(TF)).json();
    assert_eq!(r["checks_run"], pristine["checks_run"]);
    assert_eq!(run.findings("coverage.incomplete").len(), 1);
}

/// A raw file with a line over its bound (2 MiB, in the middle) is one finding where the line
/// is, and every other check still runs.
#[test]
fn a_line_over_its_bound_in_a_raw_file_is_one_finding_and_the_rest_is_checked() {
    let c = Copy::of(TF);
    let file = "quality/ifeval/answers.jsonl";
    let answers = c.path().join(file);
    let text = std::fs::read_to_string(&answers).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines.insert(100, format!("{{\"id\": \"{}\"}}", "x".repeat(2 << 20)));
    std::fs::write(&answers, lines.join("\n") + "\n").unwrap();
    c.rehash();
    let run = verify(c.path());
    assert_eq!(run.code, 3, "{}", run.stderr);
    let r = run.json();
    let of_file: Vec<&Value> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"] == file && f["check"].as_str().unwrap().starts_with("schema."))
        .collect();
    assert_eq!(of_file.len(), 1, "{of_file:#?}");
    let says = of_file[0]["message"].as_str().unwrap();
    assert_has(says, "line 101 is longer than 1 MiB");
    assert_eq!(run.findings("quality.refused-counted-as-wrong").len(), 2);
    let pristine = verify(&fixture(TF)).json();
    assert_eq!(r["checks_run"], pristine["checks_run"]);
    assert_eq!(run.findings("coverage.incomplete").len(), 1);
}

/// What `--verbose` says of the files a run read: how many, and any read more than once.
fn read_more_than_once(args: &[&str]) -> (usize, Vec<String>) {
    let mut all = args.to_vec();
    all.push("--verbose");
    let run = rigaudit(&all);
    assert_ne!(run.code, 2, "{args:?}: {}", run.stderr);
    let read = run
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("rigaudit: ")?
                .strip_suffix(" input files read")
        })
        .unwrap_or_else(|| panic!("{args:?} said no count of what it read: {}", run.stderr))
        .parse()
        .unwrap();
    let again = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("rigaudit: ") && l.contains(" read ") && l.ends_with(" times"))
        .map(String::from)
        .collect();
    (read, again)
}

/// A file is read once a run, whichever stages need it: verify of a bundle, of another tool's
/// files and of an MLPerf submission tree (whose rules and LoadGen reader share each log), rehash (which hashes the card it parsed without reading it again), the audit's verify,
/// rehash and replay (which take the bundle the audit read: its card, contracts and answers; the
/// replay here stops after its plan, its engine given no time to come up), and diff of two
/// bundles each read once.
#[test]
fn every_input_file_is_read_once_a_run() {
    let run = root().join("fixtures/runs/smollm2-cpu");
    let page = fixture("tensorfold-127-stock-2x");
    let lm_eval = root().join("fixtures/imports/lm-eval");
    let fixtures = root().join("fixtures");
    let submission = root().join("fixtures/submissions/v4.1");
    let tmp = tempfile::tempdir().unwrap();
    let out = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    let (audit, rehashed, replayed) = (out("audit"), out("rehashed"), out("replayed"));
    let (run_s, page_s) = (run.to_str().unwrap(), page.to_str().unwrap());
    let cases: [&[&str]; 8] = [
        &["verify", run_s],
        &["verify", lm_eval.to_str().unwrap()],
        &["verify", submission.to_str().unwrap()],
        &["rehash", run_s],
        &["audit", run_s, "--no-replay", "--out", &audit],
        &[
            "audit",
            run_s,
            "--no-replay",
            "--root",
            fixtures.to_str().unwrap(),
            "--out",
            &rehashed,
        ],
        &["audit", run_s, "--ready-timeout", "0", "--out", &replayed],
        &["diff", run_s, page_s],
    ];
    for args in cases {
        let (read, again) = read_more_than_once(args);
        assert!(read >= 2, "{args:?} read {read} files");
        assert!(again.is_empty(), "{args:?}: {again:#?}");
    }
}
