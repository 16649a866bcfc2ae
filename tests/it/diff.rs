//! `rigaudit diff A B`: the setup differences first, then the figures with replay's statistics;
//! exit 1 when the setup differs in what matters or a figure moved, 0 otherwise, 2 when it could
//! not compare.

use crate::common;

use common::{assert_has, fixture, rigaudit, root, Copy};
use serde_json::Value;

fn diff(a: &std::path::Path, b: &std::path::Path, extra: &[&str]) -> (common::Run, Value) {
    let mut args = vec!["diff", a.to_str().unwrap(), b.to_str().unwrap()];
    args.extend(["--format", "json"]);
    args.extend_from_slice(extra);
    let run = rigaudit(&args);
    let report = run.json();
    (run, report)
}

fn change<'a>(report: &'a Value, what: &str) -> &'a Value {
    common::entry(report, "setup_changes", "what", what)
}

fn row<'a>(report: &'a Value, key: &str) -> &'a Value {
    common::entry(report, "comparisons", "key", key)
}

#[test]
fn the_two_seed_pages_differ_in_setup_first_then_in_figures() {
    let (run, r) = diff(
        &fixture("tensorfold-127-stock-2x"),
        &fixture("mia-recipe-1104-2x"),
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(r["command"], "diff");
    // The setup: engine commit, patches, drafts, window, KV cache type.
    let commit = change(&r, "card engine.commit");
    assert_eq!(commit["a"], "93a2e93ecebff8aa52b88e58c5dd222516e69c5f");
    assert_eq!(commit["b"], "f350cd3e");
    assert_eq!(commit["where_a"], "card.json /engine/commit");
    assert_eq!(change(&r, "card engine.patches")["b"], "105");
    assert_eq!(change(&r, "server drafts")["b"], "DFlash2");
    let w = change(&r, "server window");
    assert_eq!(
        (w["a"].as_str(), w["b"].as_str()),
        (Some("8192"), Some("1048576"))
    );
    let kv = change(&r, "server KV cache type");
    assert_eq!(
        (kv["a"].as_str(), kv["b"].as_str()),
        (Some("bf16"), Some("fp8"))
    );
    // A change made on both ranks is one row naming both, its places joined.
    let parallel = change(&r, "ranks 0, 1 env PARALLEL (added)");
    assert_eq!(parallel["b"], "8");
    assert_eq!(
        parallel["where_b"],
        "card.json /commands/0/env, /commands/1/env"
    );
    let rows = r["setup_changes"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|c| !c["what"].as_str().unwrap().contains(" env PARALLEL ") || c == parallel),
        "{rows:#?}"
    );
    // Setup differences come before any figure in the text report.
    let text = rigaudit(&[
        "diff",
        fixture("tensorfold-127-stock-2x").to_str().unwrap(),
        fixture("mia-recipe-1104-2x").to_str().unwrap(),
    ])
    .stdout;
    let (setup, figures) = (
        text.find("setup differences").unwrap(),
        text.find("A beside B").unwrap(),
    );
    assert!(setup < figures, "{text}");
    // Each setup difference once: a place both record is named once, every line fits.
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("f350cd3e (card.json /engine/commit) ["),
        "{text}"
    );
    assert!(
        words.contains(
            "(card.json /commands/1/env, /commands/0/env; /commands/0/env, /commands/1/env)"
        ),
        "{text}"
    );
    assert!(!text.contains("  [command] rank 1 env PARALLEL"), "{text}");
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.len()
        );
    }
}

#[test]
fn the_two_seed_pages_figures_are_judged_by_the_rule_the_report_states() {
    let (a, b) = (
        fixture("tensorfold-127-stock-2x"),
        fixture("mia-recipe-1104-2x"),
    );
    let (_, r) = diff(&a, &b, &[]);
    let text = rigaudit(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]).stdout;
    let figures = text.find("A beside B").unwrap();
    // The text states the rule the rows were judged by, in the diff's words, with its bands.
    let rule = text.find("decision rule: unchanged when").expect(&text);
    assert!(figures < rule, "{text}");
    assert_has(&text, "  quality: ±3.0 points");
    assert_has(&text, "  ttft: ±25 %");
    // Quality: both answers files name the same questions, so compared paired (exact McNemar)
    // where both answered; not comparable where one side's requests were all refused.
    for t in ["mmlu-pro", "gpqa-diamond", "ifeval"] {
        let q = row(&r, &format!("quality.{t}.pct"));
        assert_eq!(q["test"], "mcnemar-paired", "{q}");
        assert!(q["why"].as_str().unwrap().contains("paired over"), "{q}");
    }
    for t in ["livecodebench", "gpqa-think"] {
        let q = row(&r, &format!("quality.{t}.pct"));
        assert_eq!(q["verdict"], "not-comparable");
        assert!(q["why"].as_str().unwrap().contains("refused on A"), "{q}");
    }
    // A figure that changed: prefill at 2,048 tokens (3 runs a side), in diff's words, and the
    // rule the rows were judged by.
    let p = row(&r, "prefill.2048");
    assert_eq!(p["verdict"], "changed", "{p}");
    // The pages' runs (3-5 a step) are too few for MSER-5: every series is compared whole.
    let rows = r["comparisons"].as_array().unwrap();
    assert!(
        rows.iter().all(|c| c.get("warm_up_dropped").is_none()),
        "{rows:?}"
    );
    assert!(p["better"].is_boolean(), "{p}");
    assert!(r["decision_rule"][0]
        .as_str()
        .unwrap()
        .starts_with("decision rule: unchanged when"));
    assert!(r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "diff.moved" && f["severity"] == "error"));
}

#[test]
fn a_bundle_against_itself_has_no_difference_and_passes() {
    let p = root().join("fixtures/runs/smollm2-cpu");
    let (run, r) = diff(&p, &p, &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(r["setup_changes"].as_array().is_none_or(|a| a.is_empty()));
    for row in r["comparisons"].as_array().unwrap() {
        assert_ne!(row["verdict"], "changed", "{row}");
        assert_ne!(row["verdict"], "drifted", "{row}");
    }
    // The same 24 answers on both sides, paired: no question differs, yet 24 questions cannot
    // bound the difference within ±3 points (its 90 % interval is about ±9), so the row is
    // inconclusive, never unchanged; the speed rows with 5 runs a side are unchanged.
    let q = row(&r, "quality.arith.pct");
    assert_eq!(q["verdict"], "inconclusive", "{q}");
    assert_eq!(q["test"], "mcnemar-paired", "{q}");
    assert_eq!(row(&r, "decode")["verdict"], "unchanged");
    // Markdown: the diff's words in the summary and the table's better column, then the rule.
    let s = p.to_str().unwrap();
    let md = rigaudit(&["diff", s, s, "--format", "markdown"]).stdout;
    assert_has(&md, " unchanged, 0 changed, ");
    assert_has(&md, "| verdict | better | why |");
    assert_has(&md, "decision rule: unchanged when");
    assert_has(&md, "\n- quality: ±3.0 points");
}

#[test]
fn a_changed_flag_is_a_setup_difference_and_the_policy_decides_whether_it_fails() {
    let b = Copy::of("tensorfold-127-stock-2x");
    let mut card = b.read_json("card.json");
    for c in card["commands"].as_array_mut().unwrap() {
        let argv = c["argv"].as_array_mut().unwrap();
        let i = argv.iter().position(|a| a == "--parallel").unwrap();
        argv[i + 1] = Value::String("4".into());
    }
    b.write_json("card.json", &card);
    b.rehash();
    let a = fixture("tensorfold-127-stock-2x");
    let (run, r) = diff(&a, b.path(), &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let c = change(&r, "ranks 0, 1 flag --parallel (changed)");
    assert_eq!((c["a"].as_str(), c["b"].as_str()), (Some("8"), Some("4")));
    assert_eq!(c["subject"], "command");
    // The same change on both ranks is one difference naming both, each rank's place kept.
    assert_eq!(
        r["setup_changes"].as_array().unwrap().len(),
        1,
        "one row for both ranks"
    );
    assert_eq!(c["where_a"], "card.json /commands/1/argv, /commands/0/argv");
    assert_eq!(common::findings_in(&r, "diff.setup-differs").len(), 1);
    // A policy in which commands do not fail: a warning, exit 0.
    let (run, r) = diff(&a, b.path(), &["--setup-fails-on", "engine,checkpoint"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "diff.setup-differs")
        .all(|f| f["severity"] == "warning"));
    // An unknown subject is a usage error.
    let (run, _) = (
        rigaudit(&[
            "diff",
            a.to_str().unwrap(),
            b.path().to_str().unwrap(),
            "--setup-fails-on",
            "colour",
        ]),
        (),
    );
    assert_eq!(run.code, 2);
    run.assert_stderr_has("'colour' is not a subject");
}

#[test]
fn a_bundle_that_cannot_be_read_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let run = rigaudit(&[
        "diff",
        fixture("tensorfold-127-stock-2x").to_str().unwrap(),
        tmp.path().join("nothing-here").to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_stderr_has("nothing-here");
}

/// A copy of the recorded run whose speed result carries a machine-speed reference at `gbps`.
fn with_reference(gbps: f64) -> Copy {
    let c = Copy::of("../runs/smollm2-cpu");
    let file = "speed/speed-result.json";
    let mut r = c.read_json(file);
    let samples: Vec<Value> = (1..=6)
        .map(|i| serde_json::json!({"step": format!("decode/code/{i}"), "gbps": gbps}))
        .collect();
    r["machine_reference"] = serde_json::json!({
        "kernel": "engine-q4_1-matvec-64MiB-v1-avx2", "threads": 2, "samples": samples
    });
    c.write_json(file, &r);
    c.rehash();
    c
}

#[test]
fn two_runs_on_a_machine_whose_speed_moved_say_so() {
    let (a, b) = (with_reference(10.0), with_reference(6.0));
    let (run, report) = diff(a.path(), b.path(), &[]);
    let f = common::findings_in(&report, "diff.machine-speed");
    assert_eq!(f.len(), 1, "{}", run.stdout);
    let m = f[0]["message"].as_str().unwrap();
    assert_has(m, "ran 40.0 % slower on B than on A (10.00 -> 6.00 GB/s");
    assert_eq!(f[0]["severity"], "info");
    // The figures are the same on both sides: nothing moved, and the run passes.
    assert_eq!(run.code, 0, "{}", run.stdout);
    // The same references on both sides: nothing to say.
    let (_, same) = diff(a.path(), with_reference(10.0).path(), &[]);
    assert!(!same["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "diff.machine-speed"));
}

#[test]
fn diff_reports_follow_the_report_schema_and_state_the_rule() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/report.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let vllm = root().join("fixtures/imports/vllm");
    for (a, b) in [
        (
            fixture("tensorfold-127-stock-2x"),
            fixture("mia-recipe-1104-2x"),
        ),
        (vllm.join("clean"), vllm.join("failures")),
    ] {
        let (run, r) = diff(&a, &b, &[]);
        let errs: Vec<String> = v.iter_errors(&r).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{errs:?}\n{}", run.stdout);
        // The rule, then one band per kind of figure.
        let rule = r["decision_rule"].as_array().unwrap();
        assert_eq!(rule.len(), 6, "{rule:?}");
        assert!(rule[0].as_str().unwrap().contains("Holm"), "{rule:?}");
    }
    // Other tools' per-request times are compared by their percentiles too.
    let (_, r) = diff(&vllm.join("clean"), &vllm.join("clean"), &[]);
    let p99 = row(&r, "vllm.ttft_ms.p99");
    assert_eq!(p99["test"], "order-statistic", "{p99}");
    assert_eq!(p99["verdict"], "inconclusive", "{p99}");
}

#[test]
fn a_policy_sets_the_decision_rule_and_one_no_figure_could_meet_is_refused() {
    let p = root().join("fixtures/runs/smollm2-cpu");
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("gate.toml");
    std::fs::write(
        &policy,
        "[decide]\nsetting = \"dedicated\"\nmultiplicity = \"benjamini-hochberg\"\nquality = { band = 10.0 }\n",
    )
    .unwrap();
    let (run, r) = diff(&p, &p, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let rule: Vec<&str> = r["decision_rule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(rule[0].contains("Benjamini-Hochberg"), "{rule:?}");
    assert!(rule[1].starts_with("decode: ±7 %"), "{rule:?}");
    assert_eq!(rule[5], "quality: ±10.0 points");
    // The same 24 answers, paired: their ±9 point interval lies inside a ±10 point band.
    let q = row(&r, "quality.arith.pct");
    assert_eq!(q["verdict"], "unchanged", "{q}");
    assert_eq!(q["band"], 10.0);
    // A ±5 % band on a shared VM (7 % a session) could never be met: refused, naming why.
    std::fs::write(&policy, "[decide]\ndecode = { band = 0.05 }\n").unwrap();
    let s = p.to_str().unwrap();
    let run = rigaudit(&["diff", s, s, "--policy", policy.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("at /decide"), "{}", run.stderr);
    assert_has(&run.stderr, "decode: a ±5.0 % band");
}

#[test]
fn the_report_says_how_many_runs_a_step_needs_to_tell_5_and_10_percent() {
    let p = root().join("fixtures/runs/smollm2-cpu");
    let s = p.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let policy = tmp.path().join("gate.toml");
    std::fs::write(&policy, "[decide]\nsetting = \"dedicated\"\n").unwrap();
    let dedicated = ["--policy", policy.to_str().unwrap()];
    let (_, r) = diff(&p, &p, &dedicated);
    // Every speed row with an interval carries its plan, from its own spread; quality none.
    let rows = r["comparisons"].as_array().unwrap();
    let planned: Vec<&Value> = rows
        .iter()
        .filter(|c| c["runs_to_tell"].is_object())
        .collect();
    assert!(planned.len() >= 5, "{rows:?}");
    for c in &planned {
        let (five, ten) = (&c["runs_to_tell"]["pct5"], &c["runs_to_tell"]["pct10"]);
        let (five, ten) = (five.as_u64().unwrap(), ten.as_u64().unwrap());
        assert!(five == 0 || five >= ten, "{c}");
        assert_eq!(c["test"], "log-ratio", "{c}");
    }
    assert!(row(&r, "quality.arith.pct").get("runs_to_tell").is_none());
    // The text report prints them on one line, the same numbers as the JSON.
    let cell = |n: &Value| match n.as_u64().unwrap() {
        0 => "–".to_string(),
        n => n.to_string(),
    };
    let first = planned
        .iter()
        .find(|c| c["runs_to_tell"]["pct10"].as_u64() != Some(0))
        .expect("a step ±10 % can be told for on dedicated hardware");
    let t = &first["runs_to_tell"];
    // The text report wraps long lines: read it with its words joined by single spaces.
    let flat = |out: &str| out.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = flat(&rigaudit(&["diff", s, s, dedicated[0], dedicated[1]]).stdout);
    let head = "runs a side to tell ±5 % / ±10 % at the spread measured: ";
    let at = text.find(head).unwrap_or_else(|| panic!("{text}"));
    let line = &text[at..];
    let shown = format!(
        "{} {}/{}",
        first["key"].as_str().unwrap(),
        cell(&t["pct5"]),
        cell(&t["pct10"])
    );
    assert!(line.contains(&shown), "{shown} in {line}");
    // On a shared VM (7 % a session, the default) no number of runs tells ±10 %: said once.
    let shared = flat(&rigaudit(&["diff", s, s]).stdout);
    assert!(
        shared.contains(&format!(
            "at the spread measured: no number of runs, for any of the {} steps",
            planned.len()
        )),
        "{shared}"
    );
}

#[test]
fn a_run_that_lost_requests_is_never_better_its_findings_carried_as_its_own() {
    // Issue 38: B lost 3 of 12 requests to HTTP 400, which `verify B` reports; the diff said TPOT
    // "better -54.9 %" and the throughputs +156 %.
    let vllm = root().join("fixtures/imports/vllm");
    let (a, b) = (vllm.join("clean"), vllm.join("failures"));
    let (run, r) = diff(&a, &b, &[]);
    let lost = common::findings_in(&r, "import.failed-requests");
    assert_eq!(lost.len(), 1, "{}", run.stdout);
    assert_eq!(lost[0]["severity"], "warning", "as verify of B says it");
    assert_eq!(lost[0]["data"]["side"], "B");
    assert!(
        lost[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("B: 3 of 12 requests failed (3 x Bad Request)"),
        "{}",
        lost[0]
    );
    for key in [
        "vllm.tpot_ms",
        "vllm.ttft_ms.p50",
        "vllm.output_throughput",
        "vllm.request_throughput",
    ] {
        let row = row(&r, key);
        assert_eq!(row["verdict"], "not-comparable", "{row}");
        assert!(row.get("better").is_none(), "{row}");
        assert_eq!(row["change_pct"], Value::Null, "{row}");
        assert_eq!(row["test"], "none", "{row}");
        assert!(
            row["why"]
                .as_str()
                .unwrap()
                .starts_with("not comparable: B lost requests: 3 of 12 requests failed"),
            "{row}"
        );
    }
    // No figure could be compared: the diff is incomplete and exits as its verdict says (2, or
    // 3 where incomplete has a code of its own), never 0.
    assert_eq!(r["verdict"], "incomplete", "{}", run.stdout);
    assert!(matches!(run.code, 2 | 3), "{}", run.code);
    let text = rigaudit(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(text.code, run.code);
    let better = |l: &str| l.trim_start().starts_with("better");
    assert!(!text.stdout.lines().any(better), "{}", text.stdout);
    assert!(!text.stdout.contains("-54.9"), "{}", text.stdout);
    assert_has(&text.stdout, "B: 3 of 12 requests failed");
    // The other way round the lost requests are A's.
    let (_, r) = diff(&b, &a, &[]);
    let lost = common::findings_in(&r, "import.failed-requests");
    assert_eq!(lost[0]["data"]["side"], "A");
    assert!(row(&r, "vllm.tpot_ms")["why"]
        .as_str()
        .unwrap()
        .starts_with("not comparable: A lost requests"));
    // A clean run against itself carries nothing and compares every figure.
    let (run, r) = diff(&a, &a, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(common::findings_in(&r, "import.failed-requests").is_empty());
    assert_eq!(row(&r, "vllm.ttft_ms.p99")["test"], "order-statistic");
}

#[test]
fn each_row_shows_one_change_the_judged_one_quality_in_points() {
    let (a, b) = (
        fixture("tensorfold-127-stock-2x"),
        fixture("mia-recipe-1104-2x"),
    );
    let (_, r) = diff(&a, &b, &[]);
    // A speed row the rule judged: its change is the one judged (inside its own interval), and
    // its reason does not say it again.
    let p = row(&r, "prefill.2048");
    let change = p["change_pct"].as_f64().unwrap();
    let [lo, hi] = [&p["interval90"][0], &p["interval90"][1]].map(|x| x.as_f64().unwrap());
    assert!(lo < change && change < hi, "{p}");
    let why = p["why"].as_str().unwrap();
    assert!(why.starts_with("90 % interval"), "{p}");
    assert!(!why.contains(&format!("{change:+.1} %")), "{p}");
    // A quality row: points, never a relative percent.
    let q = row(&r, "quality.mmlu-pro.pct");
    assert_eq!(q["change_pct"], Value::Null, "{q}");
    let points = q["change_points"].as_f64().unwrap();
    let (qa, qb) = (
        q["recorded"].as_f64().unwrap(),
        q["replayed"].as_f64().unwrap(),
    );
    assert!((points - (qb - qa)).abs() < 0.05, "{q}");
    assert!(!q["why"].as_str().unwrap().contains("points (90 %"), "{q}");
    // Every row's judged change is not repeated in its reason.
    for c in r["comparisons"].as_array().unwrap() {
        if let Some(x) = c["change_pct"].as_f64() {
            let why = c["why"].as_str().unwrap();
            assert!(!why.contains(&format!("{x:+.1} %")), "{c}");
        }
    }
    // Each format shows the one change: text, Markdown and HTML alike.
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let text = rigaudit(&["diff", sa, sb]).stdout;
    let line = text
        .lines()
        .find(|l| l.starts_with("  quality.mmlu-pro.pct "))
        .unwrap();
    assert_has(line, &format!("{points:+.1} pp"));
    assert_has(&text, "(key / A / B / change / p / verdict / better / why)");
    let md = rigaudit(&["diff", sa, sb, "--format", "markdown"]).stdout;
    assert_has(&md, &format!("| {points:+.1} pp |"));
    assert_has(&md, &format!("| {change:+.1} % |"));
    let html = rigaudit(&["diff", sa, sb, "--format", "html"]).stdout;
    assert_has(&html, &format!("<td>{points:+.1} pp</td>"));
}
