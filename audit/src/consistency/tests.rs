//! Each lie built consistently over a parsed fixture (every dependent figure recomputed), caught
//! at its severity; each benign variant clean.

use crate::bundle::{Bundle, Loaded, QualityTest};
use crate::records::{
    Answer, AnswerTally, Card, FitResult, Manifest, QualityContract, QualitySummary, SpeedRequest,
};
use crate::report::Severity;
use crate::stats::{margin_pts, MarginMethod};

fn loaded<T>(path: &str, value: T) -> Loaded<T> {
    Loaded::new(path, value)
}

fn parse<T: serde::de::DeserializeOwned>(s: &str) -> T {
    serde_json::from_str(s).unwrap()
}

fn answers(text: &str) -> Vec<Answer> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(parse)
        .collect()
}

fn tally(a: &[Answer]) -> AnswerTally {
    let mut t = AnswerTally::default();
    for (i, x) in a.iter().enumerate() {
        t.add(x.view(), i as u64 + 1);
        t.add_reply(x.completion_tokens, x.max_tokens, x.seconds, i as u64 + 1);
    }
    t.finish();
    t
}

fn test(name: &str, c: &str, s: &str, a: &[Answer]) -> QualityTest {
    QualityTest {
        test: name.into(),
        contract: Some(loaded(
            &format!("quality/{name}/contract.json"),
            parse::<QualityContract>(c),
        )),
        summary: Some(loaded(
            &format!("quality/{name}/summary.json"),
            parse::<QualitySummary>(s),
        )),
        answers: Some(loaded(&format!("quality/{name}/answers.jsonl"), tally(a))),
        answers_listed: None,
    }
}

macro_rules! fx {
    ($dir:expr, $f:expr) => {
        include_str!(concat!("../../../fixtures/", $dir, "/", $f))
    };
}

/// The bundled fixture, parsed, with the answers of `arith` as records to change.
fn smollm2_with(arith: Vec<Answer>) -> Bundle {
    Bundle {
        files: Vec::new(),
        manifest: parse::<Manifest>(fx!("runs/smollm2-cpu", "bundle.json")),
        card: Some(loaded(
            "card.json",
            parse::<Card>(fx!("runs/smollm2-cpu", "card.json")),
        )),
        speed_contract: Some(loaded(
            "speed/speed-contract.json",
            parse(fx!("runs/smollm2-cpu", "speed/speed-contract.json")),
        )),
        speed_result: Some(loaded(
            "speed/speed-result.json",
            parse(fx!("runs/smollm2-cpu", "speed/speed-result.json")),
        )),
        quality: vec![
            test(
                "arith",
                fx!("runs/smollm2-cpu", "quality/arith/contract.json"),
                fx!("runs/smollm2-cpu", "quality/arith/summary.json"),
                &arith,
            ),
            test(
                "arith-long",
                fx!("runs/smollm2-cpu", "quality/arith-long/contract.json"),
                fx!("runs/smollm2-cpu", "quality/arith-long/summary.json"),
                &answers(fx!("runs/smollm2-cpu", "quality/arith-long/answers.jsonl")),
            ),
        ],
        fit: None,
    }
}

fn arith() -> Vec<Answer> {
    answers(fx!("runs/smollm2-cpu", "quality/arith/answers.jsonl"))
}

fn smollm2() -> Bundle {
    smollm2_with(arith())
}

fn tensorfold() -> Bundle {
    Bundle {
        files: Vec::new(),
        manifest: parse(fx!("pages/tensorfold-127-stock-2x", "bundle.json")),
        card: Some(loaded(
            "card.json",
            parse(fx!("pages/tensorfold-127-stock-2x", "card.json")),
        )),
        speed_contract: Some(loaded(
            "speed/speed-contract.json",
            parse(fx!(
                "pages/tensorfold-127-stock-2x",
                "speed/speed-contract.json"
            )),
        )),
        speed_result: Some(loaded(
            "speed/speed-result.json",
            parse(fx!(
                "pages/tensorfold-127-stock-2x",
                "speed/speed-result.json"
            )),
        )),
        quality: vec![],
        fit: None,
    }
}

fn mia_fit() -> Bundle {
    let mut b = tensorfold();
    b.fit = Some(loaded(
        "fit/result.json",
        parse::<FitResult>(fx!("pages/mia-recipe-1104-2x", "fit/result.json")),
    ));
    b.speed_contract = None;
    b.speed_result = None;
    b.card = None;
    b
}

/// The figures of the speed result recomputed from its records, as an honest tool writes them.
/// The index of the first request that `pred` picks.
fn index_of(requests: &[SpeedRequest], pred: impl FnMut(&SpeedRequest) -> bool) -> usize {
    requests.iter().position(pred).expect("a request that fits")
}

fn refresh(b: &mut Bundle) {
    let c = b.speed_contract.as_ref().unwrap().value.clone();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let v = crate::speed::recompute(&c, r);
    for (k, x) in r.values.iter_mut() {
        *x = v.get(k).copied().flatten();
    }
}

/// A summary's counts, percentage and margin rewritten from `right` of `total`.
fn resummarize(t: &mut QualityTest, right: u64, total: u64, excluded: Option<u64>) {
    let s = &mut t.summary.as_mut().unwrap().value;
    s.right = right;
    s.total = total;
    s.excluded = excluded;
    s.pct = Some((1000.0 * right as f64 / total as f64).round() / 10.0);
    let m = margin_pts(right, total, 1.96, MarginMethod::Wilson).unwrap();
    s.margin = Some((m * 10.0).round() / 10.0);
}

fn findings(b: &Bundle, id: &str) -> Vec<(Severity, String)> {
    crate::verify(b)
        .findings
        .into_iter()
        .filter(|f| f.check == id)
        .map(|f| (f.severity, f.message))
        .collect()
}

fn caught(b: &Bundle, id: &str, sev: Severity) {
    let f = findings(b, id);
    assert!(
        f.iter().any(|(s, _)| *s == sev),
        "{id} not at {sev:?}: {f:?}"
    );
}

fn clean(b: &Bundle, id: &str) {
    let f = findings(b, id);
    assert!(f.is_empty(), "{id} on a benign bundle: {f:?}");
}

/// The figures still recompute: only the semantic check can catch the lie.
fn consistent(b: &Bundle) {
    for id in [
        "speed.recompute-mismatch",
        "quality.pct-mismatch",
        "quality.margin-mismatch",
        "quality.answers-summary-mismatch",
    ] {
        clean(b, id);
    }
}

const NEW: &[&str] = &[
    "speed.runs-mismatch",
    "speed.prompt-size-mismatch",
    "quality.questions-mismatch",
    "fit.prompt-underfills",
    "speed.answered-beyond-window",
    "quality.answered-beyond-window",
    "quality.refusal-fits-window",
    "quality.excluded-unearned",
    "speed.impossible-record",
    "quality.impossible-record",
    "claims.no-measurement",
    "setup.sessions-overlap",
    "setup.outside-session",
];

#[test]
fn honest_fixtures_raise_no_new_error() {
    for b in [smollm2(), tensorfold(), mia_fit()] {
        for id in NEW {
            clean(&b, id);
        }
        for id in [
            "speed.load-guard",
            "setup.window-mismatch",
            "setup.version-mismatch",
            "quality.scoring-disagrees",
        ] {
            clean(&b, id);
        }
    }
    clean(&smollm2(), "claims.unbacked");
}

#[test]
fn dropped_slowest_run_is_caught() {
    let mut b = smollm2();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let slowest = (0..r.requests.len())
        .filter(|i| {
            r.requests[*i].step == "decode"
                && !r.requests[*i].warmup
                && r.requests[*i].prompt_id.as_deref() == Some("code")
        })
        .min_by(|a, b| {
            r.requests[*a]
                .decode_rate()
                .partial_cmp(&r.requests[*b].decode_rate())
                .unwrap()
        })
        .unwrap();
    r.requests.remove(slowest);
    refresh(&mut b);
    consistent(&b);
    caught(&b, "speed.runs-mismatch", Severity::Error);
}

#[test]
fn short_round_and_missing_warmup_are_caught() {
    let mut b = smollm2();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let i = index_of(&r.requests, |q| q.level == Some(4) && q.round == Some(2));
    r.requests.remove(i);
    r.requests.retain(|q| !q.warmup);
    refresh(&mut b);
    consistent(&b);
    let f = findings(&b, "speed.runs-mismatch");
    assert!(
        f.iter()
            .any(|(_, m)| m.contains("conc 4 round 2: 3 requests")),
        "{f:?}"
    );
    assert!(
        f.iter().any(|(_, m)| m.contains("0 decode warm-ups")),
        "{f:?}"
    );
}

#[test]
fn small_prompts_for_a_big_step_are_caught_and_close_sizes_pass() {
    // The 512-token prefill prompts reported as `tokens` long.
    let prompts_of = |tokens| {
        let mut b = smollm2();
        let r = &mut b.speed_result.as_mut().unwrap().value;
        for q in r
            .requests
            .iter_mut()
            .filter(|q| q.step == "prefill" && q.depth == Some(512))
        {
            q.prompt_tokens = Some(tokens);
        }
        refresh(&mut b);
        b
    };
    let b = prompts_of(256);
    consistent(&b);
    caught(&b, "speed.prompt-size-mismatch", Severity::Error);
    clean(&prompts_of(505), "speed.prompt-size-mismatch");
}

#[test]
fn answers_dropped_with_the_contract_unchanged_are_caught() {
    let mut a = arith();
    let wrong: Vec<usize> = (0..a.len()).filter(|i| !a[*i].correct).take(4).collect();
    for i in wrong.iter().rev() {
        a.remove(*i);
    }
    let mut b = smollm2_with(a);
    resummarize(&mut b.quality[0], 5, 20, Some(0));
    b.quality[0].summary.as_mut().unwrap().value.cutoffs =
        Some(b.quality[0].answers.as_ref().unwrap().value.cutoffs);
    consistent(&b);
    caught(&b, "quality.questions-mismatch", Severity::Error);
}

#[test]
fn an_underfilled_fit_step_is_caught() {
    let mut b = mia_fit();
    let s = &mut b.fit.as_mut().unwrap().value.steps[5];
    s.prompt_tokens = 65000;
    caught(&b, "fit.prompt-underfills", Severity::Error);
    let mut b = mia_fit();
    b.fit.as_mut().unwrap().value.steps[5].prompt_tokens = 124000;
    clean(&b, "fit.prompt-underfills");
}

#[test]
fn an_answered_step_beyond_the_window_is_caught() {
    let mut b = smollm2();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let mut q = r
        .requests
        .iter()
        .find(|q| q.step == "ctx" && q.depth == Some(512))
        .unwrap()
        .clone();
    q.depth = Some(2048);
    q.prompt_tokens = Some(2048);
    for run in 1..=3 {
        q.run = Some(run);
        r.requests.push(q.clone());
    }
    r.fits.retain(|f| f.depth != 2048);
    refresh(&mut b);
    caught(&b, "speed.answered-beyond-window", Severity::Error);
}

/// The refusals of arith-long rewritten as answered wrong replies, the summary recounted.
#[test]
fn refusals_rewritten_as_wrong_answers_are_caught() {
    let mut b = smollm2();
    let mut a = answers(fx!("runs/smollm2-cpu", "quality/arith-long/answers.jsonl"));
    for x in &mut a {
        x.status = 200;
        x.error = None;
        x.finish_reason = Some("stop".into());
        x.prompt_tokens = Some(1736);
        x.completion_tokens = Some(2);
        x.extracted = Some("A".into());
        x.gold = Some("B".into());
    }
    let t = &mut b.quality[1];
    t.answers.as_mut().unwrap().value = tally(&a);
    let s = &mut t.summary.as_mut().unwrap().value;
    (s.total, s.excluded, s.errors, s.pct, s.margin) = (24, Some(0), Some(0), Some(0.0), Some(0.0));
    resummarize(t, 0, 24, Some(0));
    caught(&b, "quality.answered-beyond-window", Severity::Error);
}

#[test]
fn wrong_answers_rewritten_as_refusals_are_caught() {
    let mut a = arith();
    let mut n = 0;
    for x in a.iter_mut().filter(|x| !x.correct).take(6) {
        x.status = 400;
        x.error = Some(
            "This model's maximum context length is 1024 tokens. However, you requested 83 tokens."
                .into(),
        );
        x.finish_reason = None;
        x.completion_tokens = None;
        x.extracted = None;
        n += 1;
    }
    let mut b = smollm2_with(a);
    resummarize(&mut b.quality[0], 5, 24 - n, Some(n));
    b.quality[0].summary.as_mut().unwrap().value.errors = Some(n);
    consistent(&b);
    caught(&b, "quality.refusal-fits-window", Severity::Error);
    clean(&smollm2(), "quality.refusal-fits-window");
}

#[test]
fn a_window_claimed_larger_than_the_refusals_say_is_caught() {
    let mut b = smollm2();
    b.speed_contract.as_mut().unwrap().value.server.window = 2048;
    let r = &mut b.speed_result.as_mut().unwrap().value;
    r.server.start_lines[0] = r.server.start_lines[0].replace("window=1024", "window=2048");
    r.server.models = serde_json::json!({"data": [{"id": "smollm2", "max_model_len": 2048}]});
    let f = findings(&b, "setup.window-mismatch");
    assert!(
        f.iter()
            .any(|(s, m)| *s == Severity::Error && m.contains("a refusal")),
        "{f:?}"
    );
    assert!(findings(&smollm2(), "setup.window-mismatch").is_empty());
}

#[test]
fn refusal_wordings_of_the_engines_are_read() {
    use crate::startline::named_window as w;
    assert_eq!(w("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens"), Some(8192));
    assert_eq!(w("request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it"), Some(4096));
    assert_eq!(
        w("the request exceeds the available context size, n_ctx = 2048"),
        Some(2048)
    );
    assert_eq!(
        w("The input (9000 tokens) is longer than the model's context length (8192 tokens)."),
        Some(8192)
    );
    assert_eq!(w("`inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`"), Some(4096));
    assert_eq!(
        w("the request exceeds the available context size, try increasing it"),
        None
    );
    assert_eq!(w("server busy"), None);
}

#[test]
fn wrong_answers_moved_into_excluded_are_caught() {
    let mut b = smollm2();
    resummarize(&mut b.quality[0], 5, 19, Some(5));
    consistent(&b);
    caught(&b, "quality.excluded-unearned", Severity::Error);
}

#[test]
fn a_cut_off_answer_marked_right_is_caught_where_the_contract_counts_it_wrong() {
    let mut a = arith();
    let x = a
        .iter_mut()
        .find(|x| x.finish_reason.as_deref() == Some("length"))
        .unwrap();
    x.correct = true;
    x.extracted = x.gold.clone();
    let mut b = smollm2_with(a.clone());
    resummarize(&mut b.quality[0], 6, 24, Some(0));
    consistent(&b);
    caught(&b, "quality.scoring-disagrees", Severity::Error);
    let mut b = smollm2_with(a);
    resummarize(&mut b.quality[0], 6, 24, Some(0));
    b.quality[0]
        .contract
        .as_mut()
        .unwrap()
        .value
        .cutoff_counts_as_wrong = false;
    clean(&b, "quality.scoring-disagrees");
}

#[test]
fn an_unwatched_step_is_caught() {
    let mut b = tensorfold();
    let g = b
        .speed_result
        .as_mut()
        .unwrap()
        .value
        .load_guard
        .as_mut()
        .unwrap();
    g.steps.retain(|s| s.step != "conc/8/2");
    caught(&b, "speed.load-guard", Severity::Error);
    let mut b = tensorfold();
    b.speed_result.as_mut().unwrap().value.load_guard = None;
    caught(&b, "speed.load-guard", Severity::Error);
}

#[test]
fn impossible_speed_records_are_findings() {
    let mut b = smollm2();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let i = index_of(&r.requests, |q| q.step == "decode" && !q.warmup);
    let q = &mut r.requests[i];
    q.first_token_s = Some(q.sent_s - 0.1);
    r.drafts[0].drafted = 10;
    r.drafts[0].accepted = 12;
    let q = r.requests.iter_mut().find(|q| q.step == "conc").unwrap();
    q.completion_tokens = Some(40);
    refresh(&mut b);
    let f = findings(&b, "speed.impossible-record");
    assert!(f.len() >= 3, "{f:?}");
    assert!(f.iter().all(|(s, _)| *s == Severity::Error));
}

#[test]
fn impossible_quality_counts_are_findings() {
    let mut b = smollm2();
    let s = &mut b.quality[0].summary.as_mut().unwrap().value;
    s.right = 30;
    s.pct = Some(125.0);
    caught(&b, "quality.impossible-record", Severity::Error);
}

#[test]
fn figures_without_a_measurement_are_caught() {
    let mut b = smollm2();
    b.speed_result
        .as_mut()
        .unwrap()
        .value
        .values
        .insert("prefill.2048".into(), Some(390.0));
    b.manifest
        .page
        .speed
        .insert("conc_total.8".into(), "120.5".into());
    let f = findings(&b, "claims.no-measurement");
    assert_eq!(f.len(), 2, "{f:?}");
    caught(&tensorfold(), "claims.unbacked", Severity::Warning);
    clean(&tensorfold(), "claims.no-measurement");
}

#[test]
fn another_engine_build_than_the_card_says_is_caught() {
    let mut b = tensorfold();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    r.server.start_lines[0] = r.server.start_lines[0].replace("93a2e93e", "5c0ffee1");
    caught(&b, "setup.version-mismatch", Severity::Error);
    assert_eq!(
        crate::startline::start_build(&[
            "rigaudit-engine start version=0.1.0 commit=450f12732141 sha256=ab".into()
        ])
        .as_deref(),
        Some("450f12732141")
    );
    assert_eq!(
        crate::startline::start_build(&["TensorFold native f350cd3e (Zig 0.17.0)".into()])
            .as_deref(),
        Some("f350cd3e")
    );
    assert_eq!(
        crate::startline::start_build(&["main: build = 4567 (abc1234)".into()]).as_deref(),
        Some("abc1234")
    );
}

#[test]
fn a_speed_run_inside_a_quality_run_is_caught() {
    let mut b = smollm2();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    r.started = "2026-12-03T04:04:00Z".into();
    r.ended = "2026-12-03T04:05:10Z".into();
    let s = &mut b.quality[0].summary.as_mut().unwrap().value;
    s.started = Some("2026-12-03T04:03:30Z".into());
    s.ended = Some("2026-12-03T04:05:30Z".into());
    b.manifest.sessions[0].started = "2026-12-03T04:04:00Z".into();
    b.manifest.sessions[0].ended = Some("2026-12-03T04:05:10Z".into());
    b.manifest.sessions[1].started = "2026-12-03T04:03:30Z".into();
    b.manifest.sessions[1].ended = Some("2026-12-03T04:05:30Z".into());
    caught(&b, "setup.sessions-overlap", Severity::Error);
    clean(&b, "setup.outside-session");
}

#[test]
fn a_result_dated_outside_its_session_is_caught() {
    let mut b = smollm2();
    let s = &mut b.quality[0].summary.as_mut().unwrap().value;
    s.started = Some("2026-12-03T05:04:20Z".into());
    s.ended = Some("2026-12-03T05:04:25Z".into());
    caught(&b, "setup.outside-session", Severity::Error);
}

#[test]
fn warm_ups_before_each_prompt_are_benign() {
    let mut b = smollm2();
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let mut w = r.requests.iter().find(|q| q.warmup).unwrap().clone();
    w.prompt_id = Some("prose".into());
    let at = r
        .requests
        .iter()
        .position(|q| q.prompt_id.as_deref() == Some("prose"))
        .unwrap();
    r.requests.insert(at, w);
    clean(&b, "speed.runs-mismatch");
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let w = r.requests.iter().find(|q| q.warmup).unwrap().clone();
    r.requests.insert(0, w);
    caught(&b, "speed.runs-mismatch", Severity::Error);
}

/// The smollm2 bundle's prefill runs as a contract stating `min_try_ms` has them: each run's
/// request repeated (copies, numbered) until their times to first token reach `min_ms`.
fn with_repeated_prefill(min_ms: u64) -> Bundle {
    let mut b = smollm2();
    let c = &mut b.speed_contract.as_mut().unwrap().value;
    c.prefill.as_mut().unwrap().min_try_ms = Some(min_ms);
    let r = &mut b.speed_result.as_mut().unwrap().value;
    let mut requests = Vec::new();
    for q in r.requests.drain(..) {
        if q.step != "prefill" || q.warmup {
            requests.push(q);
            continue;
        }
        let repeats = (min_ms as f64 / 1000.0 / q.ttft().unwrap()).ceil() as u32;
        for repeat in 1..=repeats.max(1) {
            requests.push(SpeedRequest {
                repeat: Some(repeat),
                ..q.clone()
            });
        }
    }
    r.requests = requests;
    refresh(&mut b);
    b
}

#[test]
fn a_run_repeated_to_its_time_counts_once_and_its_repeats_are_checked() {
    // Prefill 128's runs took 0.228-0.253 s to first token, 512's 1.1-1.3 s: at 1,000 ms a run
    // of 128 repeats its request 5 times (4 for the run of 0.253 s), one of 512 once.
    let b = with_repeated_prefill(1000);
    let r = &b.speed_result.as_ref().unwrap().value;
    let runs_128 = r.requests.iter().filter(|q| q.depth == Some(128));
    assert_eq!(runs_128.count(), 24);
    consistent(&b);
    clean(&b, "speed.runs-mismatch");
    // The last repeat of one run dropped: the try ends before its time.
    let mut short = b.clone();
    let r = &mut short.speed_result.as_mut().unwrap().value;
    let last = index_of(&r.requests, |q| q.depth == Some(128) && q.repeat == Some(5));
    r.requests.remove(last);
    refresh(&mut short);
    let f = findings(&short, "speed.runs-mismatch");
    assert!(
        f.iter()
            .any(|(_, m)| m.contains("prefill 128 run 1: 4 repeats took")
                && m.contains("less than min_try_ms 1000")),
        "{f:?}"
    );
    // Repeats where the contract states no min_try_ms.
    let mut unasked = b.clone();
    let c = &mut unasked.speed_contract.as_mut().unwrap().value;
    c.prefill.as_mut().unwrap().min_try_ms = None;
    let f = findings(&unasked, "speed.runs-mismatch");
    assert!(
        f.iter().any(|(_, m)| m.contains(
            "5 requests numbered as repeats, but the contract's part states no min_try_ms"
        )),
        "{f:?}"
    );
}

#[test]
fn repeats_out_of_order_or_past_their_time_are_named() {
    let q = |ttft: f64, repeat: Option<u32>| SpeedRequest {
        step: "prefill".into(),
        status: 200,
        sent_s: 1.0,
        first_token_s: Some(1.0 + ttft),
        end_s: Some(1.0 + ttft),
        repeat,
        ..SpeedRequest::default()
    };
    let problem = |run: &[SpeedRequest], min: Option<u64>| {
        let run: Vec<&SpeedRequest> = run.iter().collect();
        super::counts::run_repeat_problem(&run, min)
    };
    let timed = [q(0.04, Some(1)), q(0.04, Some(2)), q(0.04, Some(3))];
    assert_eq!(problem(&timed, Some(100)), None);
    assert_eq!(problem(&[q(0.04, None)], None), None);
    let past = [q(0.04, Some(1)), q(0.07, Some(2)), q(0.04, Some(3))];
    let says = problem(&past, Some(100)).unwrap();
    assert!(
        says.contains("the first 2 reached min_try_ms 100 (110 ms"),
        "{says}"
    );
    let gap = [q(0.04, Some(1)), q(0.04, Some(3)), q(0.04, Some(4))];
    let says = problem(&gap, Some(100)).unwrap();
    assert!(says.contains("[Some(1), Some(3), Some(4)]"), "{says}");
    let unnumbered = [q(0.2, None)];
    assert!(problem(&unnumbered, Some(100)).is_some());
    // A failed request ends its try early: not a problem of the repeats.
    let mut failed = q(0.04, Some(2));
    (failed.status, failed.first_token_s) = (500, None);
    assert_eq!(problem(&[q(0.04, Some(1)), failed], Some(100)), None);
}
