//! One case per row of `quality::CHECKS`: each check, run alone by its id over every test, finds
//! a problem planted in a small bundle and stays quiet on the bundle without it.

use crate::report::Severity::{Error, Info, Warning};
use crate::testkit::{assert_cases, case, one_value_cases, run_check, Kit};
use crate::testkit::{MIA, SMOLLM2, TENSORFOLD as TF};
use serde_json::{json, Value};

const GPQA: &str = "quality/gpqa-diamond/answers.jsonl";

/// The recipe page with its answers of gpqa-diamond changed by `edit`.
fn mia_answers(edit: impl FnOnce(&mut [Value])) -> Kit {
    let mut kit = Kit::of(MIA);
    edit(kit.json(GPQA).as_array_mut().unwrap());
    kit
}

/// The recorded run with its answers cut off at their limit (`length`) ended at `stop` instead.
fn arith_with_no_cutoff() -> Kit {
    let mut kit = Kit::of(SMOLLM2);
    let lines = kit
        .json("quality/arith/answers.jsonl")
        .as_array_mut()
        .unwrap();
    for a in lines.iter_mut().filter(|a| a["finish_reason"] == "length") {
        a["finish_reason"] = json!("stop");
    }
    kit
}

/// Three wrong answers turned into HTTP 500 refusals the summary still counts as wrong.
fn refuse_three_wrong(lines: &mut [Value]) {
    let wrong = lines
        .iter_mut()
        .filter(|a| a["correct"] == false && a["finish_reason"] == "stop");
    for a in wrong.take(3) {
        a["status"] = json!(500);
        a["error"] = json!("internal error");
        a["finish_reason"] = Value::Null;
    }
}

/// The first answer marked right, marked wrong.
fn mark_a_right_answer_wrong(lines: &mut [Value]) {
    let right = lines.iter_mut().find(|a| a["correct"] == true).unwrap();
    right["correct"] = json!(false);
}

#[test]
fn every_quality_row_finds_its_planted_problem() {
    let tf = Kit::of(TF);
    let mia = Kit::of(MIA);
    let summary = "quality/livecodebench/summary.json";
    let no_result = tf.clone().set(summary, "/pct", Value::Null);
    let no_result = no_result.set(summary, "/margin", Value::Null);
    let normal = "/margin/method";
    let normal = tf
        .clone()
        .set("quality/ifeval/contract.json", normal, json!("normal"));
    let mut cases = one_value_cases("quality.");
    cases.extend([
        case(
            "quality.scoring-disagrees",
            &mia,
            mia_answers(mark_a_right_answer_wrong),
            Error,
        ),
        case(
            "quality.refused-counted-as-wrong",
            &mia,
            mia_answers(refuse_three_wrong),
            Error,
        )
        .saying("3 x HTTP 500: internal error"),
        case("quality.no-result-has-value", &no_result, tf.clone(), Error).saying("livecodebench"),
        case(
            "quality.no-result",
            &Kit::of(SMOLLM2).lines(LONG, |_| true, answered),
            Kit::of(SMOLLM2),
            Warning,
        )
        .saying("arith-long: no result: all 24 of its requests were refused (24 x HTTP 400"),
        case("quality.margin-mismatch", &tf, normal, Error).saying("wilson gives"),
        case(
            "quality.cutoffs",
            &arith_with_no_cutoff(),
            Kit::of(SMOLLM2),
            Info,
        )
        .saying("arith: 3 of 24 answers were cut off"),
    ]);
    assert_cases(cases);
}

const ARITH: &str = "quality/arith/answers.jsonl";
const LONG: &str = "quality/arith-long/answers.jsonl";
const ARITH_SUMMARY: &str = "quality/arith/summary.json";

/// A refusal of arith-long rewritten as an answered wrong reply.
fn answered(a: &mut Value) {
    let answered = json!({"status": 200, "error": null, "finish_reason": "stop",
        "prompt_tokens": 1736, "completion_tokens": 2, "extracted": "A", "gold": "B"});
    for (k, v) in answered.as_object().unwrap() {
        a[k] = v.clone();
    }
}

/// A wrong answer rewritten as a refusal at a window it fits.
fn refused(a: &mut Value) {
    let error = "This model's maximum context length is 1024 tokens. \
        However, you requested 83 tokens.";
    let refused = json!({"status": 400, "error": error, "finish_reason": null,
        "completion_tokens": null, "extracted": null});
    for (k, v) in refused.as_object().unwrap() {
        a[k] = v.clone();
    }
}

/// The rows the consistency tables hold under `quality.` ids, run by id wherever they live.
#[test]
fn every_quality_consistency_row_finds_its_planted_problem() {
    let run = Kit::of(SMOLLM2);
    let all = |_: &Value| true;
    let long = "quality/arith-long/answers.jsonl";
    let beyond = run.clone().lines(long, all, answered);
    let wrong = |a: &Value| a["correct"] == false;
    let fits = run.clone().lines(ARITH, wrong, refused);
    let dropped = run.clone().with(ARITH, |v| {
        let lines = v.as_array_mut().unwrap();
        for _ in 0..4 {
            let i = lines.iter().position(wrong).unwrap();
            lines.remove(i);
        }
    });
    let excluded = run.clone().set(ARITH_SUMMARY, "/total", json!(19));
    let excluded = excluded.set(ARITH_SUMMARY, "/excluded", json!(5));
    let impossible = run.clone().set(ARITH_SUMMARY, "/right", json!(30));
    assert_cases(vec![
        case("quality.answered-beyond-window", &run, beyond, Error),
        case("quality.refusal-fits-window", &run, fits, Error),
        case("quality.questions-mismatch", &run, dropped, Error),
        case("quality.excluded-unearned", &run, excluded, Error),
        case("quality.impossible-record", &run, impossible, Error),
    ]);
}

/// A test whose every request was refused has no result: a warning names it, and its recomputed
/// rows do not match (there is no value to agree with), however honestly the summary leaves its
/// figures empty. A summary that counts such refusals as wrong answers is named by the error
/// `quality.refused-counted-as-wrong` alone.
#[test]
fn a_test_whose_every_request_was_refused_has_no_result_and_does_not_match() {
    let b = Kit::of(SMOLLM2).bundle();
    let found = run_check(&b, "quality.no-result");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].severity, Warning);
    assert_eq!(found[0].data["refused"], 24);
    let mut out = crate::report::Findings::default();
    super::run(&b, &mut out);
    let long: Vec<_> = out
        .recomputed
        .iter()
        .filter(|r| r.key.starts_with("quality.arith-long."))
        .collect();
    assert_eq!(long.len(), 2, "{long:?}");
    for r in long {
        assert!(r.value.is_none() && !r.matches, "{r:?}");
        let json = serde_json::to_value(r).unwrap();
        assert_eq!(json["matches"], false);
    }
    let arith = out.recomputed.iter().find(|r| r.key == "quality.arith.pct");
    assert!(arith.is_some_and(|r| r.matches), "{arith:?}");
    let counted = run_check(&Kit::of(TF).bundle(), "quality.no-result");
    assert!(counted.is_empty(), "{counted:?}");
}
