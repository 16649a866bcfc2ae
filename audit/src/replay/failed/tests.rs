//! `replay.step-failed` on two small bundles made from the recorded CPU run: quiet when the
//! replay answered what the recording answered, a finding per failed step, unanswered quality
//! test and early stop.

use super::*;
use crate::testkit::{assert_says, Kit, SMOLLM2};
use serde_json::Value;

/// The findings of [`failed_steps`] for `recorded` against `replayed`, which stopped early when
/// `stopped` says why.
fn failures(recorded: &Kit, replayed: &Kit, stopped: Option<&str>) -> Vec<Finding> {
    let mut found = Findings::default();
    failed_steps(&recorded.bundle(), &replayed.bundle(), stopped, &mut found);
    assert_eq!(
        found.ran,
        vec!["replay.step-failed".to_string()],
        "the stage decides its row"
    );
    found.findings
}

#[test]
fn a_replay_that_answered_all_the_recording_answered_has_no_failed_step() {
    let run = Kit::of(SMOLLM2);
    assert_eq!(failures(&run, &run, None), vec![]);
}

#[test]
fn a_step_the_replay_left_unanswered_is_named_with_its_status() {
    let run = Kit::of(SMOLLM2);
    let replayed = run.clone().with("speed/speed-result.json", |v| {
        let requests = v["requests"].as_array_mut().expect("requests");
        let decode = requests
            .iter_mut()
            .find(|q| q["step"] == "decode")
            .expect("a decode");
        decode["status"] = json!(503);
        decode["error"] = json!("engine exited");
    });
    let f = failures(&run, &replayed, None);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0].check.as_str(), f[0].severity),
        ("replay.step-failed", Severity::Error)
    );
    assert_says(
        &f[0],
        "decode: 1 request(s) of the replay got no answer (first: HTTP 503, engine exited)",
    );
}

#[test]
fn unanswered_questions_and_an_early_stop_are_failed_steps() {
    let run = Kit::of(SMOLLM2);
    let replayed = run.clone().lines(
        "quality/arith/answers.jsonl",
        |a| a["id"] == "arith-001",
        |a| {
            a["status"] = json!(500);
            a["error"] = json!("internal error");
            a["finish_reason"] = Value::Null;
            a["correct"] = json!(false);
        },
    );
    let f = failures(&run, &replayed, Some("interrupted"));
    assert_eq!(f.len(), 2, "{f:?}");
    assert_says(&f[0], "the replay stopped before its end: interrupted");
    assert_says(&f[1], "quality arith: 1 of");
}
