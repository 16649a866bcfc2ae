//! Consistent lies end to end: a copy of a fixture rewritten so that every dependent figure is
//! recomputed at its rounding and the manifest's digests re-recorded, so that only a semantic
//! check can catch it; `rigaudit verify` must. Benign variants stay clean.

use crate::common;

use common::assert_has;
use common::{fixture, verify, Copy};
use serde_json::{json, Value};

const RUN: &str = "../runs/smollm2-cpu";
const TF: &str = "tensorfold-127-stock-2x";
const MIA: &str = "mia-recipe-1104-2x";
const SPEED: &str = "speed/speed-result.json";
const ARITH: &str = "quality/arith/summary.json";

/// Changes the speed result of the copy by `edit` and re-records its digest.
fn edit_speed(c: &Copy, edit: impl FnOnce(&mut Value)) {
    let mut r = c.read_json(SPEED);
    edit(&mut r);
    c.write_json(SPEED, &r);
    c.rehash();
}

/// A copy of the recorded run whose speed result `edit` changed, its figures recomputed.
fn lie_in_speed(edit: impl FnOnce(&mut Value)) -> Copy {
    let c = Copy::of(RUN);
    edit_speed(&c, edit);
    recompute_speed(&c);
    c
}

/// Writes back into the speed result's `values` what `verify` recomputes from the records, so
/// the figures agree with the (changed) records as an honest tool would write them.
fn recompute_speed(c: &Copy) {
    let r = verify(c.path()).json();
    let mut v = c.read_json(SPEED);
    for x in r["recomputed"].as_array().unwrap() {
        let k = x["key"].as_str().unwrap();
        if let Some(slot) = v["values"].get_mut(k) {
            *slot = x["value"].clone();
        }
    }
    c.write_json(SPEED, &v);
    c.rehash();
}

fn wilson(right: u64, n: u64) -> f64 {
    let (nf, z) = (n as f64, 1.96f64);
    let p = right as f64 / nf;
    let m = z * (p * (1.0 - p) / nf + z * z / (4.0 * nf * nf)).sqrt() / (1.0 + z * z / nf);
    (1000.0 * m).round() / 10.0
}

/// Rewrites a summary's counts, percentage and margin (Wilson, as the fixture's contract says).
fn resummarize(c: &Copy, file: &str, right: u64, total: u64, excluded: u64) {
    let mut s = c.read_json(file);
    s["right"] = json!(right);
    s["total"] = json!(total);
    s["excluded"] = json!(excluded);
    s["errors"] = json!(excluded);
    s["pct"] = json!((1000.0 * right as f64 / total as f64).round() / 10.0);
    s["margin"] = json!(wilson(right, total));
    c.write_json(file, &s);
    c.rehash();
}

/// Rewrites the lines of a JSON Lines file.
fn rewrite_lines(c: &Copy, file: &str, f: impl Fn(&mut Vec<Value>)) {
    let p = c.path().join(file);
    let mut v: Vec<Value> = std::fs::read_to_string(&p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    f(&mut v);
    let text: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    std::fs::write(&p, text.join("\n") + "\n").unwrap();
    c.rehash();
}

/// Verifies; asserts the figures still recompute and `check` is reported at `severity`.
fn caught(c: &Copy, check: &str, severity: &str) -> common::Run {
    let run = verify(c.path());
    for quiet in [
        "speed.recompute-mismatch",
        "quality.pct-mismatch",
        "quality.margin-mismatch",
        "schema.digest-mismatch",
    ] {
        assert!(
            !run.has(quiet),
            "the lie is not consistent: {quiet}: {:?}",
            run.findings(quiet)
        );
    }
    assert!(
        run.has_at(check, severity),
        "{check} not at {severity}: {}",
        run.stdout
    );
    run
}

/// A builder of a lie: a copy of a fixture changed into it.
type Lie = fn() -> Copy;

/// Each lie kept internally consistent (figures recomputed, digests rewritten) is caught at error
/// by its check.
#[test]
fn each_consistent_lie_is_caught() {
    let lies: [(&str, Lie); 11] = [
        ("speed.runs-mismatch", dropped_slowest_decode_run),
        (
            "speed.prompt-size-mismatch",
            prefill_at_512_measured_with_256_token_prompts,
        ),
        (
            "quality.questions-mismatch",
            wrong_answers_dropped_and_recounted,
        ),
        ("fit.prompt-underfills", fit_step_with_half_its_prompt),
        (
            "speed.answered-beyond-window",
            long_answer_answered_beyond_the_window,
        ),
        (
            "quality.answered-beyond-window",
            refusals_rewritten_as_answered_wrong_replies,
        ),
        (
            "quality.refusal-fits-window",
            wrong_answers_rewritten_as_refusals,
        ),
        (
            "quality.excluded-unearned",
            wrong_answers_moved_into_excluded,
        ),
        ("quality.scoring-disagrees", a_cut_off_answer_marked_right),
        (
            "speed.impossible-record",
            a_first_token_before_the_request_was_sent,
        ),
        (
            "setup.outside-session",
            a_quality_run_dated_outside_its_session,
        ),
    ];
    for (check, lie) in lies {
        caught(&lie(), check, "error");
    }
}

#[test]
fn honest_fixtures_stay_clean_of_the_new_errors() {
    let ids = "speed.runs-mismatch speed.prompt-size-mismatch quality.questions-mismatch \
        fit.prompt-underfills speed.answered-beyond-window quality.answered-beyond-window \
        quality.refusal-fits-window quality.excluded-unearned speed.impossible-record \
        quality.impossible-record claims.no-measurement setup.sessions-overlap \
        setup.outside-session";
    for name in [RUN, TF, MIA] {
        let run = verify(&fixture(name));
        for id in ids.split_whitespace() {
            assert!(!run.has(id), "{name}: {id}: {:?}", run.findings(id));
        }
    }
    assert!(verify(&fixture(RUN)).json()["verdict"] == "pass");
}

/// The lie: dropped slowest decode run, kept consistent.
fn dropped_slowest_decode_run() -> Copy {
    let c = lie_in_speed(|r| {
        r["requests"].as_array_mut().unwrap().remove(3);
    });
    c
}

/// The lie: prefill at 512 measured with 256 token prompts, kept consistent.
fn prefill_at_512_measured_with_256_token_prompts() -> Copy {
    let c = lie_in_speed(|r| {
        for q in r["requests"].as_array_mut().unwrap() {
            if q["step"] == "prefill" && q["depth"] == 512 {
                q["prompt_tokens"] = json!(256);
            }
        }
    });
    c
}

/// The lie: wrong answers dropped and recounted, kept consistent.
fn wrong_answers_dropped_and_recounted() -> Copy {
    let c = Copy::of(RUN);
    rewrite_lines(&c, "quality/arith/answers.jsonl", |v| {
        let mut n = 0;
        v.retain(|x| {
            x["correct"] == true || x["finish_reason"] == "length" || {
                n += 1;
                n > 4
            }
        });
    });
    resummarize(&c, ARITH, 5, 20, 0);
    c
}

/// The lie: fit step with half its prompt, kept consistent.
fn fit_step_with_half_its_prompt() -> Copy {
    let c = Copy::of(MIA);
    c.set("fit/result.json", "/steps/5/prompt_tokens", json!(65000));
    c
}

/// The lie: long answer answered beyond the window, kept consistent.
fn long_answer_answered_beyond_the_window() -> Copy {
    let c = lie_in_speed(|r| {
        let q = r["requests"].as_array_mut().unwrap().last_mut().unwrap();
        assert_eq!(q["step"], "l1");
        q["prompt_tokens"] = json!(700);
    });
    c
}

/// The lie: refusals rewritten as answered wrong replies, kept consistent.
fn refusals_rewritten_as_answered_wrong_replies() -> Copy {
    let c = Copy::of(RUN);
    rewrite_lines(&c, "quality/arith-long/answers.jsonl", |v| {
        for x in v.iter_mut() {
            x["status"] = json!(200);
            x["error"] = Value::Null;
            x["finish_reason"] = json!("stop");
            x["prompt_tokens"] = json!(1736);
            x["completion_tokens"] = json!(2);
            x["extracted"] = json!("A");
            x["gold"] = json!("B");
        }
    });
    let s = "quality/arith-long/summary.json";
    let mut v = c.read_json(s);
    (
        v["total"],
        v["excluded"],
        v["errors"],
        v["pct"],
        v["margin"],
    ) = (
        json!(24),
        json!(0),
        json!(0),
        json!(0.0),
        json!(wilson(0, 24)),
    );
    c.write_json(s, &v);
    c.rehash();
    c
}

/// The lie: wrong answers rewritten as refusals, kept consistent.
fn wrong_answers_rewritten_as_refusals() -> Copy {
    let c = Copy::of(RUN);
    rewrite_lines(&c, "quality/arith/answers.jsonl", |v| {
        for x in v
            .iter_mut()
            .filter(|x| x["correct"] == false && x["finish_reason"] == "stop")
            .take(4)
        {
            x["status"] = json!(400);
            x["error"] = json!("This model's maximum context length is 1024 tokens. However, you requested 83 tokens.");
            x["finish_reason"] = Value::Null;
            x["completion_tokens"] = Value::Null;
            x["extracted"] = Value::Null;
        }
    });
    resummarize(&c, ARITH, 5, 20, 4);
    c
}

/// The lie: wrong answers moved into excluded, kept consistent.
fn wrong_answers_moved_into_excluded() -> Copy {
    let c = Copy::of(RUN);
    resummarize(&c, ARITH, 5, 19, 5);
    c
}

/// The lie: a cut off answer marked right, kept consistent.
fn a_cut_off_answer_marked_right() -> Copy {
    let c = Copy::of(RUN);
    rewrite_lines(&c, "quality/arith/answers.jsonl", |v| {
        let x = v
            .iter_mut()
            .find(|x| x["finish_reason"] == "length")
            .unwrap();
        x["correct"] = json!(true);
        x["extracted"] = x["gold"].clone();
    });
    resummarize(&c, ARITH, 6, 24, 0);
    c
}

#[test]
fn an_unwatched_concurrency_round() {
    let c = Copy::of(TF);
    let mut r = c.read_json("speed/speed-result.json");
    r["load_guard"]["steps"]
        .as_array_mut()
        .unwrap()
        .retain(|s| s["step"] != "conc/8/2");
    c.write_json("speed/speed-result.json", &r);
    c.rehash();
    let run = caught(&c, "speed.load-guard", "error");
    assert!(run.findings("speed.load-guard")[0]["message"]
        .as_str()
        .unwrap()
        .contains("conc/8/2"));
}

/// The lie: a first token before the request was sent, kept consistent.
fn a_first_token_before_the_request_was_sent() -> Copy {
    let c = Copy::of(RUN);
    c.set(SPEED, "/requests/2/first_token_s", json!(5.0));
    recompute_speed(&c);
    c
}

#[test]
fn more_right_than_asked() {
    let c = Copy::of(RUN);
    let mut s = c.read_json(ARITH);
    // A percentage above 100 is refused by the schema; counts that make one are not.
    (s["right"], s["total"], s["pct"], s["margin"]) =
        (json!(30), json!(24), Value::Null, Value::Null);
    c.write_json(ARITH, &s);
    c.rehash();
    let run = verify(c.path());
    run.assert_has_at("quality.impossible-record", "error");
}

#[test]
fn a_figure_no_step_measured() {
    let c = Copy::of(RUN);
    edit_speed(&c, |r| {
        r["values"]["prefill.2048"] = json!(390.2);
    });
    let run = caught(&c, "claims.no-measurement", "error");
    assert!(run.findings("claims.no-measurement")[0]["message"]
        .as_str()
        .unwrap()
        .contains("prefill.2048"));
}

#[test]
fn the_stock_pages_window_1_figure_is_unbacked() {
    let run = verify(&fixture(TF));
    let f = run.findings("claims.unbacked");
    assert!(
        f.iter().any(|x| x["severity"] == "warning"
            && x["message"].as_str().unwrap().contains("decode_window1")),
        "{f:?}"
    );
    assert!(!verify(&fixture(RUN)).has("claims.unbacked"));
}

#[test]
fn a_larger_window_claimed_than_the_refusals_name() {
    let c = Copy::of(RUN);
    let mut r = c.read_json(SPEED);
    replace_in_start_line(&mut r, "window=1024", "window=2048");
    r["server"]["models"]["data"][0]["max_model_len"] = json!(2048);
    r["server"]["models"]["data"][0]["context_window"] = json!(2048);
    r["server"]["models"]["data"][0]["meta"]["n_ctx"] = json!(2048);
    c.write_json(SPEED, &r);
    c.set("speed/speed-contract.json", "/server/window", json!(2048));
    let run = verify(c.path());
    let f = run.findings("setup.window-mismatch");
    assert!(
        f.iter()
            .any(|x| x["message"].as_str().unwrap().contains("a refusal")),
        "{f:?}"
    );
}

#[test]
fn an_engine_build_other_than_the_cards() {
    let c = Copy::of(TF);
    let p = "speed/speed-result.json";
    let mut r = c.read_json(p);
    replace_in_start_line(&mut r, "93a2e93e", "5c0ffee1");
    c.write_json(p, &r);
    c.rehash();
    let run = verify(c.path());
    assert!(run
        .findings("setup.version-mismatch")
        .iter()
        .any(|f| f["message"].as_str().unwrap().contains("5c0ffee1")));
}

#[test]
fn a_speed_run_inside_a_quality_run() {
    let c = Copy::of(RUN);
    c.set(ARITH, "/started", json!("2026-12-03T04:03:10Z"));
    c.set(
        "bundle.json",
        "/sessions/1/started",
        json!("2026-12-03T04:03:10Z"),
    );
    let run = caught(&c, "setup.sessions-overlap", "error");
    run.assert_lacks("setup.outside-session");
}

/// The lie: a quality run dated outside its session, kept consistent.
fn a_quality_run_dated_outside_its_session() -> Copy {
    let c = Copy::of(RUN);
    c.set(ARITH, "/started", json!("2026-12-03T05:04:20Z"));
    c.set(ARITH, "/ended", json!("2026-12-03T05:04:25Z"));
    c
}

#[test]
fn a_page_row_with_no_result_and_its_question_count() {
    let c = Copy::of(RUN);
    let mut m = c.read_json("bundle.json");
    m["page"] = json!({"quality": [{"test": "arith-long", "total": 24}]});
    c.write_json("bundle.json", &m);
    let run = verify(c.path());
    run.assert_lacks("quality.count-mismatch");
    assert_eq!(run.json()["verdict"], "pass");
}

/// Replaces `from` with `to` in a speed result's first start line.
fn replace_in_start_line(r: &mut Value, from: &str, to: &str) {
    let line = &mut r["server"]["start_lines"][0];
    *line = json!(line.as_str().unwrap().replace(from, to));
}

/// Gives the fixture's speed result a machine-speed reference: one probe before each counted
/// decode run, at the figures `gbps` gives by probe number.
fn with_reference(c: &Copy, gbps: impl Fn(usize) -> f64, extra_step: Option<&str>) {
    edit_speed(c, |r| {
        let mut steps: Vec<String> = r["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|q| q["step"] == "decode" && q["warmup"] != true)
            .map(|q| format!("decode/{}/{}", q["prompt_id"].as_str().unwrap(), q["run"]))
            .collect();
        steps.dedup();
        steps.extend(extra_step.map(String::from));
        let samples: Vec<Value> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"step": s, "gbps": gbps(i)}))
            .collect();
        assert!(samples.len() >= 4, "{samples:?}");
        r["machine_reference"] =
            json!({"kernel": "engine-q4_1-matvec-64MiB-v1-avx2", "threads": 2, "samples": samples});
    });
}

#[test]
fn a_recording_on_a_machine_whose_speed_moved_is_named() {
    // Steady within a few percent: nothing to say.
    let steady = Copy::of(RUN);
    with_reference(&steady, |i| 10.0 + 0.2 * (i % 3) as f64, None);
    let run = verify(steady.path());
    run.assert_lacks("speed.machine-unsteady");
    assert_eq!(run.json()["verdict"], "pass");
    // Two probes 40 % below the rest: the machine ran slower for those steps.
    let slowed = Copy::of(RUN);
    with_reference(&slowed, |i| if i == 1 || i == 2 { 6.0 } else { 10.0 }, None);
    let run = caught(&slowed, "speed.machine-unsteady", "warning");
    let f = &run.findings("speed.machine-unsteady")[0];
    let msg = f["message"].as_str().unwrap();
    assert_has(msg, "2 of ");
    assert_has(msg, "median of 10.00 GB/s");
    assert_eq!(f["pointer"], "/machine_reference/samples/1");
    // A probe named for a step the result never measured.
    let stray = Copy::of(RUN);
    with_reference(&stray, |_| 10.0, Some("decode/code/99"));
    let run = caught(&stray, "speed.machine-unsteady", "warning");
    assert!(run.findings("speed.machine-unsteady")[0]["message"]
        .as_str()
        .unwrap()
        .contains("'decode/code/99'"));
}
