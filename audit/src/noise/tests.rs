//! The numbers of `rigaudit noise` against hand-computed values, and one case per row of
//! `noise::CHECKS` on small bundles made from the recorded CPU run.

use super::*;
use crate::decide::quality::{
    flip_rate_within, paired_half_width, questions_within, unpaired_half_width,
};
use crate::decide::ratio::{log_ratio, no_change_half_width, Runs};
use crate::decide::{Moderated, Tolerance};
use crate::report::Finding;
use crate::testkit::{assert_says, Kit, SMOLLM2};
use serde_json::{json, Value};

const ANSWERS: &str = "quality/arith/answers.jsonl";

#[track_caller]
fn close(x: f64, want: f64, tol: f64) {
    assert!((x - want).abs() < tol, "{x} is not {want} ± {tol}");
}

/// Runs whose logs are 0, 0.1 and 0.2: log variance 0.01, spread 10 %.
fn three_runs() -> [f64; 3] {
    [1.0, 0.1f64.exp(), 0.2f64.exp()]
}

#[test]
fn three_runs_tell_their_half_width_as_computed_by_hand() {
    // se within one session √(2 · 0.01 / 3) = 0.08165, t(0.95, 4) = 2.13185: h = 0.17407 (19.01 %);
    // with 7 % a session, √(0.006667 + 2 · 0.0049) = 0.12832: h = 0.27357 (31.46 %).
    let row = speed_row(
        "decode.code",
        &three_runs(),
        Some(1.1),
        &Tolerances::default(),
    );
    assert_eq!((row.basis, row.n), (NoiseBasis::Runs, 3));
    let s = row.speed.expect("a spread");
    close(s.log_sd_pct, 10.0, 1e-9);
    close(s.half_width_within_pct, 19.0132, 1e-3);
    close(s.half_width_pct, 31.4641, 1e-3);
    close(s.session_sd_pct, 7.0, 1e-9);
    // ±5 %: 2 · 0.01 / (ln 1.05 / 1.645)² = 22.7 -> 23; ±10 %: 5.96 -> 6; across sessions the
    // 2 · 0.0049 of the session term alone is wider than either.
    assert_eq!(
        (s.runs_to_tell_within.pct5, s.runs_to_tell_within.pct10),
        (23, 6)
    );
    assert_eq!((s.runs_to_tell.pct5, s.runs_to_tell.pct10), (0, 0));
    assert_says_row(&row.why, "3 runs, spread 10.0 %");
    assert_says_row(&row.why, "±31.5 %");
    assert_says_row(
        &row.why,
        "within one session, the runs' spread only, ±19.0 %",
    );
    assert_says_row(
        &row.why,
        "no number of runs across sessions (the session spread alone is wider), 23 / 6 within one session",
    );
}

#[test]
fn the_runs_to_tell_are_never_fewer_than_already_fail_to_tell() {
    // Logs 0 and 0.03: variance 0.00045; within one session h = t(0.95, 2) √0.00045 = 0.0619
    // (6.4 %). The normal plan names ⌈2 · 0.00045 / (ln 1.05 / 1.645)²⌉ = 2 runs for ±5 %, which
    // two runs already fail: 3. ±10 % is told by two (6.4 % < 10 %): 2 stays.
    let row = speed_row(
        "decode",
        &[1.0, 0.03f64.exp()],
        Some(1.0),
        &Tolerances::default(),
    );
    let s = row.speed.unwrap();
    close(s.half_width_within_pct, 6.39, 0.01);
    assert_eq!(
        (s.runs_to_tell_within.pct5, s.runs_to_tell_within.pct10),
        (3, 2)
    );
}

#[track_caller]
fn assert_says_row(why: &str, text: &str) {
    assert!(why.contains(text), "{text:?} not in: {why}");
}

#[test]
fn the_half_width_is_the_rules_interval_of_two_such_sessions_at_no_change() {
    let xs = [101.0, 97.5, 104.2, 99.1, 100.3];
    for session_sd in [0.0, 0.02, 0.07] {
        let tol = Tolerance {
            band: 0.25,
            session_sd,
        };
        let runs = Runs::one_session(&xs);
        let e = log_ratio(FigureKind::Decode, runs, runs, &tol, &Moderated::NONE);
        let var = log_moments(&xs).unwrap().1.unwrap();
        let h = no_change_half_width(var, xs.len(), 2.0 * session_sd * session_sd).unwrap();
        close(h, e.hi90, 1e-12);
        close(-h, e.lo90, 1e-12);
    }
    assert_eq!(no_change_half_width(0.01, 1, 0.0), None);
}

#[test]
fn quality_widths_as_computed_by_hand() {
    // Wilson 90 % of 5/24: 0.10527 to 0.37049; Newcombe's arm √(0.10306² + 0.16216²) = 0.19212.
    close(unpaired_half_width(5, 24).unwrap(), 19.2122, 1e-3);
    // 100 · 1.645 · √(0.25 / 24) = 16.788 points; no flip is still one question, 100 / 24.
    close(paired_half_width(0.25, 24).unwrap(), 16.7877, 1e-3);
    close(paired_half_width(0.0, 24).unwrap(), 100.0 / 24.0, 1e-12);
    // ±3 points over 24 questions: 24 (0.03 / 1.645)² = 0.80 % may flip; at 10 % flips,
    // 0.1 (164.49 / 3)² = 300.6 -> 301 questions.
    close(flip_rate_within(3.0, 24), 0.007_983_6, 1e-7);
    assert_eq!(questions_within(3.0, 0.1), 301);
    assert_eq!(unpaired_half_width(0, 0), None);
}

#[test]
fn one_run_or_a_headline_cannot_be_told() {
    let tol = Tolerances::default();
    let one = speed_row("decode", &[42.0], Some(42.0), &tol);
    assert_eq!((one.basis, one.speed), (NoiseBasis::OneRun, None));
    assert_says_row(
        &one.why,
        "decode: one run: no spread measured; the smallest difference cannot be told from this page",
    );
    let round = speed_row("conc_total.4", &[42.0], Some(42.0), &tol);
    assert_says_row(&round.why, "conc_total.4: one round: no spread measured");
    let headline = speed_row("prefill.512", &[], Some(400.0), &tol);
    assert_eq!(headline.basis, NoiseBasis::HeadlineOnly);
    assert_says_row(&headline.why, "a headline figure only, no per-run records");
    assert_eq!(
        speed_row("ttft.512", &[], None, &tol).basis,
        NoiseBasis::NoValue
    );
    let zero = speed_row("decode", &[0.0, 3.0], Some(1.5), &tol);
    assert_eq!(zero.basis, NoiseBasis::NoValue);
}

/// `noise` of a kit with the default rule.
fn noised(kit: &Kit) -> Noised {
    noise(&kit.bundle(), &DecisionRule::default())
}

fn of<'a>(n: &'a Noised, id: &str) -> Vec<&'a Finding> {
    assert!(n.found.ran.iter().any(|r| r == id), "{id} did not run");
    n.found.findings.iter().filter(|f| f.check == id).collect()
}

fn row<'a>(n: &'a Noised, key: &str) -> &'a NoiseRow {
    let found = n.rows.iter().find(|r| r.key == key);
    found.unwrap_or_else(|| panic!("no row {key}"))
}

#[test]
fn the_recorded_run_tells_each_figure_and_names_its_one_run_step() {
    let n = noised(&Kit::of(SMOLLM2));
    let told = of(&n, "noise.smallest-difference");
    assert!(told.iter().all(|f| f.severity == Severity::Info));
    assert_eq!(row(&n, "decode.code").n, 5);
    assert_eq!(row(&n, "conc_total.4").n, 3);
    assert_eq!(row(&n, "ctx_decode.256").n, 3);
    let decode = told.iter().find(|f| f.message.starts_with("decode.code:"));
    let decode = decode.expect("a finding of decode.code");
    assert_eq!(decode.file.as_deref(), Some("speed/speed-result.json"));
    assert_eq!(decode.pointer.as_deref(), Some("/values/decode.code"));
    let keys: Vec<&str> = n.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys[..3], ["decode", "decode.code", "decode.prose"]);
    assert_eq!(keys.last(), Some(&"quality.arith-long.pct"));
    let cannot = of(&n, "noise.cannot-tell");
    let l1 = cannot
        .iter()
        .find(|f| f.message.starts_with("l1_decode:"))
        .unwrap();
    assert_eq!(l1.severity, Severity::Warning);
    assert_says(l1, "one run: no spread measured");
    let beyond = cannot
        .iter()
        .find(|f| f.message.starts_with("ctx_decode.2048:"));
    assert_eq!(beyond.unwrap().severity, Severity::Info, "no value: a note");
    assert_eq!(n.found.incomplete, None);
}

#[test]
fn one_answer_per_question_says_the_flip_rate_cannot_be_measured() {
    let n = noised(&Kit::of(SMOLLM2));
    let arith = row(&n, "quality.arith.pct");
    assert_eq!((arith.basis, arith.n), (NoiseBasis::Questions, 24));
    let q = arith.quality.unwrap();
    assert_eq!(
        (q.questions, q.repeated_questions, q.flip_rate_pct),
        (24, 0, None)
    );
    close(q.half_width_unpaired_points, 19.2122, 1e-3);
    close(arith.value.unwrap(), 100.0 * 5.0 / 24.0, 1e-9);
    assert_says_row(
        &arith.why,
        "the flip rate cannot be measured from this page",
    );
    assert_says_row(
        &arith.why,
        "at most 0.8 % of them (0.2 questions) flip between runs",
    );
}

#[test]
fn repeated_answers_give_the_flip_rate_and_a_paired_width() {
    // Four questions answered a second time: two as before, two the other way.
    let kit = Kit::of(SMOLLM2).with(ANSWERS, |v| {
        let lines = v.as_array_mut().unwrap();
        let again: Vec<Value> = lines[..4].to_vec();
        for (i, mut line) in again.into_iter().enumerate() {
            if i < 2 {
                let right = line["correct"].as_bool().unwrap();
                line["correct"] = json!(!right);
            }
            lines.push(line);
        }
    });
    let n = noised(&kit);
    let q = row(&n, "quality.arith.pct").quality.unwrap();
    assert_eq!((q.questions, q.repeated_questions), (24, 4));
    close(q.flip_rate_pct.unwrap(), 50.0, 1e-9);
    // 100 · 1.645 · √(0.5 / 24) = 23.74 points; ±3 points at 50 %: 0.5 (164.49 / 3)² -> 1504.
    close(q.half_width_paired_points.unwrap(), 23.7414, 1e-3);
    assert_eq!(q.questions_for_band, Some(1504));
}

#[test]
fn a_page_of_headlines_only_is_told_what_cannot_be_told() {
    let kit = Kit::of(SMOLLM2).set("speed/speed-result.json", "/requests", json!([]));
    let n = noised(&kit);
    let decode = row(&n, "decode");
    assert_eq!(decode.basis, NoiseBasis::HeadlineOnly);
    assert!(of(&n, "noise.cannot-tell").len() >= 17);
    assert_eq!(n.found.incomplete, None, "the quality tests are told");
    let without_quality = kit.with("bundle.json", |m| {
        let files = m["files"].as_array_mut().unwrap();
        files.retain(|f| !f["path"].as_str().unwrap().starts_with("quality/"));
    });
    let n = noised(&without_quality);
    assert!(n.rows.iter().all(|r| !r.basis.told()));
    let why = n.found.incomplete.expect("nothing told");
    assert!(why.starts_with("no figure has repeated runs"), "{why}");
}
