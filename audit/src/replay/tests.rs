use super::*;
use crate::records::speed::{FitRow, ServerSeen, SpeedContract};
use crate::records::{AnswerTally, AnswerView, Card, Manifest};
use crate::testkit::{assert_ends_with, assert_has, assert_starts_with};

fn manifest() -> Manifest {
    serde_json::from_value(json!({
        "format": "rigaudit-bundle/1", "id": "t", "title": "t",
        "setup": {"engine": "e", "checkpoint": "c", "hardware": "h"},
        "files": []
    }))
    .expect("test manifest")
}

fn contract(depths: &[u64]) -> SpeedContract {
    serde_json::from_value(json!({
        "parts": ["decode", "prefill"], "model": "m", "prompt_ids": ["code"],
        "runs": 3, "warmups": 0, "max_tokens": 101,
        "prefill": {"depths": depths, "runs": 3, "max_tokens": 1},
        "sampling": {}, "server": {"slots": 1, "window": 2048}
    }))
    .expect("test contract")
}

fn base(step: &str) -> SpeedRequest {
    SpeedRequest {
        step: step.into(),
        prompt_id: None,
        run: None,
        repeat: None,
        warmup: false,
        depth: None,
        level: None,
        round: None,
        prompt_tokens: Some(50),
        prompt_tokens_source: "usage".into(),
        completion_tokens: Some(101),
        completion_tokens_source: "usage".into(),
        max_tokens: 101,
        finish_reason: Some("length".into()),
        sent_s: 0.0,
        first_token_s: Some(0.5),
        end_s: Some(1.5),
        cached_tokens: Some(0),
        status: 200,
        error: None,
        words: None,
        chars: None,
        server_timings: None,
    }
}

/// Decode runs of prompt `code` at these rates (100 tokens after the first).
fn decode(rates: &[f64]) -> Vec<SpeedRequest> {
    rates
        .iter()
        .enumerate()
        .map(|(i, r)| SpeedRequest {
            prompt_id: Some("code".into()),
            run: Some(i as u32 + 1),
            end_s: Some(0.5 + 100.0 / r),
            ..base("decode")
        })
        .collect()
}

/// Prefill runs at a depth with these TTFTs.
fn prefill(depth: u64, ttfts: &[f64]) -> Vec<SpeedRequest> {
    ttfts
        .iter()
        .enumerate()
        .map(|(i, t)| SpeedRequest {
            run: Some(i as u32 + 1),
            depth: Some(depth),
            prompt_tokens: Some(depth),
            completion_tokens: Some(1),
            max_tokens: 1,
            first_token_s: Some(*t),
            end_s: Some(t + 0.01),
            ..base("prefill")
        })
        .collect()
}

fn refused(depth: u64, runs: u32) -> Vec<SpeedRequest> {
    (1..=runs)
        .map(|run| SpeedRequest {
            run: Some(run),
            depth: Some(depth),
            prompt_tokens: Some(depth),
            completion_tokens: None,
            max_tokens: 1,
            finish_reason: None,
            first_token_s: None,
            end_s: None,
            status: 400,
            error: Some("maximum context length is 2048 tokens".into()),
            ..base("prefill")
        })
        .collect()
}

fn result(requests: Vec<SpeedRequest>, window: u64, start: &str) -> SpeedResult {
    SpeedResult {
        run: "r".into(),
        started: "2026-01-01T00:00:00Z".into(),
        ended: "2026-01-01T01:00:00Z".into(),
        server: ServerSeen {
            start_lines: vec![start.to_string()],
            models: json!({"data": [{"id": "m", "max_model_len": window}]}),
        },
        requests,
        drafts: vec![],
        fits: vec![],
        values: BTreeMap::new(),
        load_guard: None,
        machine_reference: None,
        gpu: None,
    }
}

fn loaded<T>(path: &str, value: T) -> Loaded<T> {
    Loaded::new(path, value)
}

fn bundle(speed: Option<SpeedResult>, depths: &[u64], quality: Vec<QualityTest>) -> Bundle {
    Bundle {
        manifest: manifest(),
        card: None,
        speed_contract: Some(loaded("speed/contract.json", contract(depths))),
        speed_result: speed.map(|r| loaded("speed/result.json", r)),
        quality,
        fit: None,
        files: Vec::new(),
    }
}

const START: &str = "rigaudit-engine version=0.1.0 streams=1 window=2048";

fn speed_bundle(decode_rates: &[f64], ttfts: &[f64]) -> Bundle {
    let mut reqs = decode(decode_rates);
    reqs.extend(prefill(512, ttfts));
    bundle(Some(result(reqs, 2048, START)), &[512], vec![])
}

#[test]
fn a_warm_up_transient_is_dropped_before_the_comparison_and_said() {
    // 30 decode runs a side around 50 tok/s (±2 %); the replay's first 10 ran at half speed.
    let steady: Vec<f64> = (0..30)
        .map(|i| 50.0 * (1.0 + 0.02 * ((i * 7 % 5) as f64 - 2.0) / 2.0))
        .collect();
    let mut cold = steady.clone();
    for x in cold.iter_mut().take(10) {
        *x *= 0.5;
    }
    let (a, b) = (
        speed_bundle(&steady, &[0.2; 3]),
        speed_bundle(&cold, &[0.2; 3]),
    );
    let found = compare(&a, &b, &Tolerance::default());
    let row = |key: &str| {
        found
            .comparisons
            .iter()
            .find(|r| r.key == key)
            .unwrap()
            .clone()
    };
    let d = row("decode.code");
    assert_eq!(d.warm_up_dropped, Some([0, 10]), "{d:?}");
    assert_eq!((d.n_recorded, d.n_replayed), (30, 20));
    assert_eq!(d.verdict, ReplayVerdict::Reproduced, "{}", d.why);
    assert!(
        d.why
            .ends_with("(a warm-up of none of the recorded and 10 replayed runs dropped (MSER-5))"),
        "{}",
        d.why
    );
    // Three runs are too few for MSER-5: nothing dropped, nothing said.
    let t = row("ttft.512");
    assert_eq!(t.warm_up_dropped, None);
    assert!(!t.why.contains("MSER"), "{}", t.why);
    // The same runs without the transient: no warm-up found on either side.
    let same = compare(&a, &a, &Tolerance::default());
    assert!(same.comparisons.iter().all(|r| r.warm_up_dropped.is_none()));
}

#[test]
fn pooled_sessions_count_every_concurrency_round() {
    // Two requests at once, in 3 rounds.
    let reqs: Vec<SpeedRequest> = (1..=3u32)
        .flat_map(|round| {
            (0..2).map(move |_| SpeedRequest {
                level: Some(2),
                round: Some(round),
                ..base("conc")
            })
        })
        .collect();
    let mut b = bundle(Some(result(reqs, 2048, START)), &[512], vec![]);
    let c = &mut b.speed_contract.as_mut().unwrap().value;
    c.parts.push("conc".into());
    c.conc = serde_json::from_value(
        json!({"levels": [2], "rounds": 3, "max_tokens": 101, "prompt": "code"}),
    )
    .ok();
    let both = pool(&b, &b);
    let found = compare(&b, &both, &Tolerance::default());
    let r = found
        .comparisons
        .iter()
        .find(|r| r.key == "conc_total.2")
        .expect("a concurrency row");
    assert_eq!((r.n_recorded, r.n_replayed), (3, 6), "{r:?}");
}

fn card(description: &str, accelerator: &str, boxes: usize) -> Card {
    let boxes: Vec<serde_json::Value> = (0..boxes)
        .map(|i| json!({"name": format!("box-{i}"), "model": accelerator, "rank": i}))
        .collect();
    serde_json::from_value(json!({
        "hardware": {"description": description, "boxes": boxes, "accelerator": accelerator},
        "engine": {"name": "rigaudit-engine"},
        "checkpoint": {"repo": "o/m", "revision": "abc"},
        "ranks": 1,
        "commands": [],
        "sampling": {"defaults": {}, "defaults_source": "x"},
        "measured": "2026-01-01T00:00:00Z"
    }))
    .expect("test card")
}

/// A quality test whose answers file has `total` records, the first `answered` answered (the
/// rest refused with HTTP 400), the first `right` right.
fn quality(test: &str, total: u64, answered: u64, right: u64) -> QualityTest {
    quality_named(test, (total, answered, right), "q")
}

/// A quality test whose questions are named `<prefix><i>`: the first `answered` of `total`
/// answered, the first `right` of them right.
fn quality_named(
    test: &str,
    (total, answered, right): (u64, u64, u64),
    prefix: &str,
) -> QualityTest {
    let mut tally = AnswerTally::default();
    for i in 0..total {
        let id = format!("{prefix}{i}");
        let ok = i < answered;
        tally.add(
            AnswerView {
                id: &id,
                prompt_tokens: Some(3000),
                max_tokens: 100,
                status: if ok { 200 } else { 400 },
                error: (!ok).then_some("maximum context length is 2048 tokens"),
                finish_reason: ok.then_some("stop"),
                extracted: None,
                gold: None,
                correct: ok && i < right,
            },
            i + 1,
        );
    }
    tally.finish();
    QualityTest {
        test: test.into(),
        contract: None,
        summary: None,
        answers: Some(loaded(&format!("quality/{test}.answers.jsonl"), tally)),
        answers_listed: None,
    }
}

/// Two bundles with only quality tests, compared by default.
fn compare_quality(recorded: Vec<QualityTest>, replayed: Vec<QualityTest>) -> Findings {
    let tol = Tolerance::default();
    compare(
        &bundle(None, &[], recorded),
        &bundle(None, &[], replayed),
        &tol,
    )
}

fn row<'a>(c: &'a Findings, key: &str) -> &'a Comparison {
    c.comparisons
        .iter()
        .find(|r| r.key == key)
        .unwrap_or_else(|| panic!("no row {key} in {:#?}", c.comparisons))
}

fn of<'a>(c: &'a Findings, id: &str) -> Vec<&'a Finding> {
    c.findings.iter().filter(|f| f.check == id).collect()
}

const REC: &[f64] = &[28.0, 28.2, 27.9, 28.1];
const TTFT: &[f64] = &[0.50, 0.51, 0.49, 0.50];

fn of_check<'a>(c: &'a Findings, check: &str) -> Vec<&'a Finding> {
    c.findings.iter().filter(|f| f.check == check).collect()
}

/// The rule of dedicated hardware (2 % session spread, ±7 % bands): the runs' own noise then
/// dominates an interval.
fn dedicated() -> Tolerance {
    Tolerance {
        rule: DecisionRule {
            setting: crate::decide::Setting::Dedicated,
            ..DecisionRule::default()
        },
        ..Tolerance::default()
    }
}

#[test]
fn a_noisy_side_gives_an_interval_across_the_band_never_reproduced() {
    // Recorded runs with a CV of about 30 %: whatever the replay, the interval of the ratio
    // is too wide to lie inside a ±7 % band, and a move of a few percent is not a drift.
    let noisy = [20.0, 28.0, 40.0, 22.0, 35.0];
    let cv = crate::stats::cv_pct(&noisy).unwrap();
    assert!(cv > 25.0 && cv < 35.0, "{cv}");
    for replay in [noisy.to_vec(), vec![28.0, 28.1, 27.9, 28.0, 28.2]] {
        let a = speed_bundle(&noisy, TTFT);
        let b = speed_bundle(&replay, TTFT);
        let c = compare(&a, &b, &dedicated());
        let r = row(&c, "decode.code");
        assert_eq!(r.verdict, ReplayVerdict::Inconclusive, "{}", r.why);
        assert_eq!(r.inconclusive, Some(Inconclusive::WideInterval));
        let [lo, hi] = r.interval90.unwrap();
        assert!(lo < -6.5 || hi > 7.0, "{lo} {hi}");
        assert!(r.why.contains("neither inside the ±7 % band"), "{}", r.why);
        assert!(r.why.contains("runs a side would settle it"), "{}", r.why);
        assert!(r.runs_needed.is_some_and(|n| n > 5), "{r:?}");
    }
    // A ±100 % band takes in the same interval.
    let wide = Tolerance {
        rule: DecisionRule {
            decode: crate::decide::rule::KindOverride {
                band: Some(1.0),
                session_sd: None,
            },
            ..dedicated().rule
        },
        ..Tolerance::default()
    };
    let c = compare(
        &speed_bundle(&noisy, TTFT),
        &speed_bundle(&noisy, TTFT),
        &wide,
    );
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Reproduced);
}

fn guard(steps: &[(&str, u32, u32, bool)]) -> crate::records::speed::LoadGuard {
    serde_json::from_value(json!({
        "rule": {"threshold_pct": 25.0, "consecutive": 2, "interval_s": 0.5},
        "samples": 40,
        "steps": steps.iter().map(|(s, t, run, kept)| json!({
            "step": s, "try": t, "longest_run_over": run, "peak_pct": 97.0,
            "peak_process": "yes", "kept": kept
        })).collect::<Vec<_>>()
    }))
    .expect("guard")
}

#[test]
fn a_step_kept_under_foreign_load_is_inconclusive_never_drifted() {
    let slow: Vec<f64> = REC.iter().map(|r| r * 0.5).collect();
    let a = speed_bundle(REC, TTFT);
    let mut b = speed_bundle(&slow, TTFT);
    b.speed_result.as_mut().unwrap().value.load_guard = Some(guard(&[
        ("decode/code/1", 1, 4, false),
        ("decode/code/1", 2, 3, false),
        ("decode/code/1", 3, 5, true),
        ("prefill/512/1", 1, 0, true),
    ]));
    let c = compare(&a, &b, &Tolerance::default());
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Inconclusive, "{}", r.why);
    assert_eq!(r.inconclusive, Some(Inconclusive::ForeignLoad));
    assert_starts_with(&r.why, "foreign load: on the replayed side");
    assert!(r.why.contains("yes at 97 %"), "{}", r.why);
    assert!(of_check(&c, "replay.drifted").is_empty());
    // A thrown-away try that was repeated quietly disturbs nothing.
    let mut q = speed_bundle(REC, TTFT);
    q.speed_result.as_mut().unwrap().value.load_guard = Some(guard(&[
        ("decode/code/1", 1, 4, false),
        ("decode/code/1", 2, 0, true),
    ]));
    let c = compare(&a, &q, &Tolerance::default());
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Reproduced);
}

fn gpu(name: &str, steps: &[(&str, &[&str], &[&str])]) -> crate::records::speed::GpuRecord {
    serde_json::from_value(json!({
        "index": 0, "name": name, "driver": "550.54",
        "steps": steps.iter().map(|(s, throttle, foreign)| json!({
            "step": s, "try": 1, "kept": true,
            "throttle_reasons": throttle, "foreign_processes": foreign
        })).collect::<Vec<_>>()
    }))
    .expect("gpu record")
}

#[test]
fn a_replay_on_a_throttling_gpu_is_inconclusive_never_drifted() {
    let slow: Vec<f64> = REC.iter().map(|r| r * 0.5).collect();
    let a = speed_bundle(REC, TTFT);
    let mut b = speed_bundle(&slow, TTFT);
    b.speed_result.as_mut().unwrap().value.gpu = Some(gpu(
        "H100",
        &[
            ("decode/code/1", &["gpu_idle", "sw_thermal_slowdown"], &[]),
            ("prefill/512/1", &["gpu_idle"], &[]),
        ],
    ));
    let c = compare(&a, &b, &Tolerance::default());
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Inconclusive, "{}", r.why);
    assert_eq!(r.inconclusive, Some(Inconclusive::GpuThrottled));
    assert_starts_with(
            &r.why,
            "GPU throttled: on the replayed side, try 1 of decode/code/1 ran on H100 throttled (sw_thermal_slowdown)",
        );
    assert!(of_check(&c, "replay.drifted").is_empty());
    // Idle alone is no throttle: the prefill row is judged as before.
    assert_eq!(row(&c, "ttft.512").inconclusive, None);
    // The recorded side's throttle is the page's (verify's speed.gpu-throttled): judged.
    let c = compare(&b, &a, &Tolerance::default());
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Drifted);
    // A foreign process on either side's GPU is foreign load.
    b.speed_result.as_mut().unwrap().value.gpu = Some(gpu(
        "H100",
        &[("decode/code/1", &[], &["pid 9 (python3) on the GPU"])],
    ));
    let c = compare(&b, &a, &Tolerance::default());
    let r = row(&c, "decode.code");
    assert_eq!(r.inconclusive, Some(Inconclusive::ForeignLoad), "{}", r.why);
    assert_starts_with(
            &r.why,
            "foreign load: on the recorded side, try 1 of decode/code/1 kept beside pid 9 (python3) on the GPU",
        );
}

#[test]
fn another_gpu_or_driver_is_a_setup_difference() {
    let mut a = speed_bundle(REC, TTFT);
    let mut b = speed_bundle(REC, TTFT);
    a.speed_result.as_mut().unwrap().value.gpu = Some(gpu("NVIDIA H100", &[]));
    b.speed_result.as_mut().unwrap().value.gpu = Some(gpu("NVIDIA H200", &[]));
    let c = compare(&a, &b, &Tolerance::default());
    let f = of(&c, "replay.setup-differs");
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0].data["what"].as_str(), f[0].severity),
        (Some("gpu"), Severity::Warning)
    );
    assert!(
        f[0].message
            .starts_with("the GPUs differ: NVIDIA H100 with driver 550.54 when recorded"),
        "{}",
        f[0].message
    );
    // The same card, or a side that names none: nothing.
    let same = compare(&a, &a, &Tolerance::default());
    assert!(of(&same, "replay.setup-differs").is_empty());
    b.speed_result.as_mut().unwrap().value.gpu = None;
    assert!(of(
        &compare(&a, &b, &Tolerance::default()),
        "replay.setup-differs"
    )
    .is_empty());
}

#[test]
fn a_drift_stands_only_when_the_confirming_session_drifts_the_same_way() {
    let a = speed_bundle(REC, TTFT);
    let slow: Vec<f64> = REC.iter().map(|r| r * 0.6).collect();
    // TTFT 50 % slower in the first session only.
    let slow_ttft: Vec<f64> = TTFT.iter().map(|t| t * 1.5).collect();
    let first_b = speed_bundle(&slow, &slow_ttft);
    let mut first = compare(&a, &first_b, &Tolerance::default());
    assert_eq!(row(&first, "decode.code").verdict, ReplayVerdict::Drifted);
    assert_eq!(row(&first, "ttft.512").verdict, ReplayVerdict::Drifted);
    // The second session repeats the decode drift but not the TTFT one.
    let second_b = speed_bundle(&slow, TTFT);
    let second = compare(&a, &second_b, &Tolerance::default());
    confirm(&mut first, &second, None);
    let d = row(&first, "decode.code");
    assert_eq!(d.verdict, ReplayVerdict::Drifted);
    assert!(d.why.contains("confirmed by a second session"), "{}", d.why);
    let t = row(&first, "ttft.512");
    assert_eq!(t.verdict, ReplayVerdict::Inconclusive);
    assert_eq!(t.inconclusive, Some(Inconclusive::SessionsDisagree));
    assert_has(&t.why, "+50.0 %");
    assert_has(&t.why, "+0.0 %");
    let drifted: Vec<_> = of_check(&first, "replay.drifted")
        .into_iter()
        .filter(|f| f.data["key"] == "ttft.512")
        .collect();
    assert!(drifted.is_empty(), "{:?}", first.findings);
    assert!(of_check(&first, "replay.inconclusive")
        .iter()
        .any(|f| f.message.starts_with("ttft.512")));
}

/// The first replay session and a confirming one: decode runs at `decode` of the recording in
/// both; TTFT at `ttft_first` and `ttft_second` of the recording's.
fn two_sessions(decode: f64, ttft_first: f64, ttft_second: f64) -> (Findings, Findings) {
    let a = speed_bundle(REC, TTFT);
    let rates: Vec<f64> = REC.iter().map(|r| r * decode).collect();
    let session = |f: f64| {
        let t: Vec<f64> = TTFT.iter().map(|t| t * f).collect();
        compare(&a, &speed_bundle(&rates, &t), &Tolerance::default())
    };
    (session(ttft_first), session(ttft_second))
}

/// The two sessions' replays pooled, compared with the spread between them measured.
fn pooled_of(decode: f64, ttft_first: f64, ttft_second: f64, s: &SessionSpread) -> Findings {
    let a = speed_bundle(REC, TTFT);
    let rates: Vec<f64> = REC.iter().map(|r| r * decode).collect();
    let side = |f: f64| {
        let t: Vec<f64> = TTFT.iter().map(|t| t * f).collect();
        speed_bundle(&rates, &t)
    };
    let both = pool(&side(ttft_first), &side(ttft_second));
    let measured = Tolerance {
        measured_session_sd: Some(s.sd()),
        ..Tolerance::default()
    };
    compare(&a, &both, &measured)
}

#[test]
fn a_confirmed_drift_is_judged_with_the_spread_between_the_replay_s_sessions() {
    // Sessions whose TTFT differs by a factor 1.5: one session's spread 20.3 %, so wide
    // that no interval fits in the band and a 40 % decode drift in both sessions is no
    // longer significant.
    let (mut first, second) = two_sessions(0.6, 1.5, 1.0);
    let s = SessionSpread::of(&first, &second).unwrap();
    assert_eq!(s.rows, 4);
    assert!((s.cv_pct - 20.27).abs() < 0.01, "{s:?}");
    assert_eq!(row(&first, "decode.code").verdict, ReplayVerdict::Drifted);
    let pooled = pooled_of(0.6, 1.5, 1.0, &s);
    confirm(&mut first, &second, Some(&pooled));
    let d = row(&first, "decode.code");
    assert_eq!(d.verdict, ReplayVerdict::Inconclusive, "{}", d.why);
    assert_eq!(d.inconclusive, Some(Inconclusive::WideInterval));
    assert_starts_with(&d.why, "over both sessions' runs, with the 20.3 % spread");
    assert!(d.why.contains("confirmed by a second session"), "{}", d.why);
    assert_eq!(
        d.runs_needed,
        Some(0),
        "no number of runs beats the session spread"
    );
    assert!(of_check(&first, "replay.drifted").is_empty());
    // Identical sessions: no spread beyond the declared one, the drift stands.
    let (mut first, second) = two_sessions(0.6, 1.0, 1.0);
    let s = SessionSpread::of(&first, &second).unwrap();
    assert_eq!(s.cv_pct, 0.0);
    let pooled = pooled_of(0.6, 1.0, 1.0, &s);
    confirm(&mut first, &second, Some(&pooled));
    assert_eq!(row(&first, "decode.code").verdict, ReplayVerdict::Drifted);
}

#[test]
fn a_row_across_the_band_is_judged_again_over_both_sessions_runs() {
    // Replay runs of one session spread by about 15 % (CV): their interval reaches across
    // the ±7 % band of dedicated hardware.
    let a = speed_bundle(&[28.0, 28.1, 27.9, 28.0, 28.2, 28.0], TTFT);
    let noisy = [22.0, 28.0, 34.0];
    let b = speed_bundle(&noisy, TTFT);
    let mut first = compare(&a, &b, &dedicated());
    assert_eq!(
        row(&first, "decode.code").inconclusive,
        Some(Inconclusive::WideInterval),
        "{}",
        row(&first, "decode.code").why
    );
    assert!(keys_to_confirm(&first).contains(&"decode.code".to_string()));
    // On other hardware the row is for information only: no second session is asked for.
    let other = Tolerance {
        same_hardware: Some(false),
        ..dedicated()
    };
    let info = compare(&a, &b, &other);
    assert!(row(&info, "decode.code").informational);
    assert!(keys_to_confirm(&info).is_empty());
    // A quiet second session of 20 runs: pooled, the interval narrows into the band.
    let quiet_runs: Vec<f64> = (0..20).map(|i| 28.0 + 0.1 * (i % 3) as f64 - 0.1).collect();
    let quiet = speed_bundle(&quiet_runs, TTFT);
    let second = compare(&a, &quiet, &dedicated());
    let both = pool(&b, &quiet);
    assert_eq!(
        both.speed_result.as_ref().unwrap().value.requests.len(),
        b.speed_result.as_ref().unwrap().value.requests.len()
            + quiet.speed_result.as_ref().unwrap().value.requests.len()
    );
    let pooled = compare(&a, &both, &dedicated());
    confirm(&mut first, &second, Some(&pooled));
    let r = row(&first, "decode.code");
    assert_eq!(r.n_replayed, 23);
    assert_eq!(r.verdict, ReplayVerdict::Reproduced, "{}", r.why);
    assert!(r.why.contains("two sessions pooled"), "{}", r.why);
}

#[test]
fn identical_samples_are_reproduced() {
    let a = speed_bundle(REC, TTFT);
    let c = compare(&a, &a.clone(), &Tolerance::default());
    let keys: Vec<&str> = c.comparisons.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["decode", "decode.code", "prefill.512", "ttft.512"]);
    for r in &c.comparisons {
        assert_eq!(r.verdict, ReplayVerdict::Reproduced, "{r:?}");
        assert_eq!(r.test, "log-ratio");
        assert!(r.p_value.unwrap() > 0.99, "{r:?}");
        assert!(r.p_adjusted.unwrap() >= r.p_value.unwrap(), "{r:?}");
        assert_eq!(r.change_pct, Some(0.0));
        assert!(r.why.starts_with("+0.0 % (90 % interval"), "{}", r.why);
        assert!(r.why.ends_with("inside the ±25 % band"), "{}", r.why);
        assert_eq!(r.band, Some(25.0));
        assert_eq!(r.n_recorded, 4);
        assert!(!r.informational);
    }
    assert!(c.findings.is_empty(), "{:?}", c.findings);
    for id in ["replay.drifted", "replay.setup-differs"] {
        assert!(c.ran.iter().any(|x| x == id), "{:?}", c.ran);
    }
    // No cards and no word from the caller: the hardware check had nothing to run on.
    assert!(!c.ran.iter().any(|x| x == "replay.hardware-differs"));
}

#[test]
fn thirty_percent_slower_is_drift_down() {
    let slow: Vec<f64> = REC.iter().map(|r| r * 0.7).collect();
    let c = compare(
        &speed_bundle(REC, TTFT),
        &speed_bundle(&slow, TTFT),
        &Tolerance::default(),
    );
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Drifted);
    assert_eq!(r.direction.as_deref(), Some("down"));
    assert!((r.change_pct.unwrap() + 30.0).abs() < 0.01, "{r:?}");
    assert!(r.p_adjusted.unwrap() < 0.05, "{r:?}");
    assert_eq!(row(&c, "decode").verdict, ReplayVerdict::Drifted);
    // Prefill did not move.
    assert_eq!(row(&c, "prefill.512").verdict, ReplayVerdict::Reproduced);
    let f = of(&c, "replay.drifted");
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(f.iter().all(|f| f.severity == Severity::Error));
    assert_starts_with(&f[1].message, "decode.code: -30.0 % (90 % interval");
    assert_eq!(f[1].data["verdict"], "drifted");
    assert_eq!(f[1].file.as_deref(), Some("speed/result.json"));
}

#[test]
fn a_small_significant_move_inside_the_band_is_reproduced() {
    let rec = [28.0, 28.05, 27.95, 28.0, 28.02];
    let rep: Vec<f64> = rec.iter().map(|r| r * 0.97).collect();
    let c = compare(
        &speed_bundle(&rec, TTFT),
        &speed_bundle(&rep, TTFT),
        &Tolerance::default(),
    );
    let r = row(&c, "decode.code");
    assert!((r.change_pct.unwrap() + 3.0).abs() < 0.01);
    assert_eq!(r.verdict, ReplayVerdict::Reproduced, "{}", r.why);
    assert!(r.why.contains("inside the ±25 % band"), "{}", r.why);
    assert!(of(&c, "replay.drifted").is_empty());
    // A ±1 % band with no session spread: the runs alone show the move, a drift.
    let tight = Tolerance {
        rule: DecisionRule {
            decode: crate::decide::rule::KindOverride {
                band: Some(0.01),
                session_sd: Some(0.0),
            },
            ..DecisionRule::default()
        },
        ..Tolerance::default()
    };
    let c = compare(&speed_bundle(&rec, TTFT), &speed_bundle(&rep, TTFT), &tight);
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Drifted, "{}", r.why);
    assert_has(&r.why, "after Holm (family-wise error) over 4 rows");
}

#[test]
fn two_runs_are_inconclusive_with_the_reason() {
    let c = compare(
        &speed_bundle(REC, TTFT),
        &speed_bundle(&REC[..2], TTFT),
        &Tolerance::default(),
    );
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Inconclusive);
    assert_eq!(r.n_replayed, 2);
    assert_eq!(r.test, "none");
    assert_eq!(r.p_value, None);
    assert_eq!(
        r.why,
        "2 runs on the replayed side; an interval needs at least 3; the figure moved +0.2 %"
    );
    let f = of(&c, "replay.inconclusive");
    assert!(f.iter().all(|f| f.severity == Severity::Info));
    assert!(f
        .iter()
        .any(|f| f.message.starts_with("decode.code: 2 runs")));
    // A large move on too few runs is still inconclusive, and says how large.
    let slow = [19.6, 19.7];
    let c = compare(
        &speed_bundle(REC, TTFT),
        &speed_bundle(&slow, TTFT),
        &Tolerance::default(),
    );
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Inconclusive);
    assert_eq!(
        r.why,
        "2 runs on the replayed side; an interval needs at least 3; the figure moved -29.9 %"
    );
}

#[test]
fn headline_only_side_is_inconclusive() {
    let mut b = speed_bundle(&[], TTFT);
    let r = b.speed_result.as_mut().unwrap();
    r.value.values.insert("decode.code".into(), Some(28.0));
    let c = compare(&b, &speed_bundle(REC, TTFT), &Tolerance::default());
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Inconclusive);
    assert_eq!((r.n_recorded, r.recorded), (1, Some(28.0)));
    assert_starts_with(&r.why, "only a headline figure on the recorded side");
}

#[test]
fn no_spread_leaves_the_session_term() {
    // Runs without spread still differ by two sessions' factors: the declared session spread
    // alone makes the interval.
    let same = [28.0, 28.0, 28.0];
    let c = compare(
        &speed_bundle(&same, TTFT),
        &speed_bundle(&same, TTFT),
        &Tolerance::default(),
    );
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Reproduced, "{}", r.why);
    assert!(r.p_value.unwrap() > 0.99 && r.change_pct.unwrap().abs() < 1e-9);
    let [lo, hi] = r.interval90.unwrap();
    assert!(lo < -10.0 && hi > 10.0, "{lo} {hi}");
    let c = compare(
        &speed_bundle(&same, TTFT),
        &speed_bundle(&[20.0, 20.0, 20.0], TTFT),
        &Tolerance::default(),
    );
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Drifted, "{}", r.why);
    assert!(r.why.contains("beyond the ±25 % band"), "{}", r.why);
    assert!(serde_json::to_string(&c.comparisons)
        .unwrap()
        .find("NaN")
        .is_none());
    let c = compare(
        &speed_bundle(&same, TTFT),
        &speed_bundle(&[27.0, 27.0, 27.0], TTFT),
        &Tolerance::default(),
    );
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Reproduced);
}

#[test]
fn step_refused_on_both_sides_is_not_comparable() {
    let side = || {
        let mut reqs = decode(REC);
        reqs.extend(prefill(512, TTFT));
        reqs.extend(refused(4096, 3));
        bundle(Some(result(reqs, 2048, START)), &[512, 4096], vec![])
    };
    let c = compare(&side(), &side(), &Tolerance::default());
    for key in ["prefill.4096", "ttft.4096"] {
        let r = row(&c, key);
        assert_eq!(r.verdict, ReplayVerdict::NotComparable);
        assert_eq!(
                r.why,
                "every counted request refused on both sides (HTTP 400: maximum context length is 2048 tokens)"
            );
        assert_eq!((r.recorded, r.replayed), (None, None));
    }
    assert_eq!(row(&c, "prefill.512").verdict, ReplayVerdict::Reproduced);
    let f = of(&c, "replay.not-comparable");
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|f| f.severity == Severity::Warning));
}

#[test]
fn step_that_does_not_fit_is_not_comparable() {
    let mut rec_reqs = decode(REC);
    rec_reqs.extend(prefill(512, TTFT));
    let mut rec = result(rec_reqs, 2048, START);
    rec.fits.push(FitRow {
        part: "prefill".into(),
        depth: 4096,
        max_tokens: 1,
        window: 2048,
        fits: false,
        sent: false,
    });
    let mut rep_reqs = decode(REC);
    rep_reqs.extend(prefill(512, TTFT));
    rep_reqs.extend(prefill(4096, &[2.0, 2.1, 2.0]));
    let c = compare(
        &bundle(Some(rec), &[512, 4096], vec![]),
        &bundle(Some(result(rep_reqs, 2048, START)), &[512, 4096], vec![]),
        &Tolerance::default(),
    );
    let r = row(&c, "prefill.4096");
    assert_eq!(r.verdict, ReplayVerdict::NotComparable);
    assert_eq!(
            r.why,
            "step does not fit the 2048-token window on the recorded side (4096 prompt + 1 reply tokens)"
        );
    assert_eq!(r.n_replayed, 3);
    assert!(r.replayed.is_some() && r.recorded.is_none());
}

#[test]
fn cached_tokens_and_cut_replies_are_not_comparable() {
    let mut rep = speed_bundle(REC, TTFT);
    let reqs = &mut rep.speed_result.as_mut().unwrap().value.requests;
    reqs[0].completion_tokens = Some(40);
    reqs[0].finish_reason = Some("stop".into());
    reqs[5].cached_tokens = Some(256);
    let c = compare(&speed_bundle(REC, TTFT), &rep, &Tolerance::default());
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::NotComparable);
    assert_starts_with(
        &r.why,
        "decode replies cut before their cap on the replayed side (1 of 4",
    );
    let r = row(&c, "prefill.512");
    assert_eq!(r.verdict, ReplayVerdict::NotComparable);
    assert_has(
        &r.why,
        "cached prompt tokens on the replayed side (1 of 4 requests, up to 256",
    );
}

#[test]
fn quality_small_move_over_few_questions_inconclusive_large_move_drifted() {
    let run = |a: u64, b: u64| {
        compare_quality(
            vec![quality("mmlu-pro", 100, 100, a)],
            vec![quality("mmlu-pro", 100, 100, b)],
        )
    };
    // The same 100 questions, two answered right only on the recorded side: paired, the
    // interval of the difference reaches past -3 points, so the ±3 points band can be
    // neither shown nor ruled out.
    let c = run(60, 58);
    let r = row(&c, "quality.mmlu-pro.pct");
    assert_eq!(r.verdict, ReplayVerdict::Inconclusive, "{}", r.why);
    assert_eq!(r.test, "mcnemar-paired");
    assert_eq!((r.recorded, r.replayed), (Some(60.0), Some(58.0)));
    assert!(r.p_value.unwrap() > 0.4, "{r:?}");
    assert!(r.why.starts_with("-2.0 points"), "{}", r.why);
    assert_has(&r.why, "60/100 recorded, 58/100 replayed");
    assert_has(
        &r.why,
        "paired over 100 questions: 2 right on the recorded side only, 0 on the replayed side only",
    );
    let [lo, hi] = r.interval90.unwrap();
    assert!(lo < -3.0 && hi < 3.0, "{lo} {hi}");
    // Questions named otherwise on each side: unpaired, a wider interval (about ±11 points).
    let c = compare_quality(
        vec![quality_named("mmlu-pro", (100, 100, 60), "q")],
        vec![quality_named("mmlu-pro", (100, 100, 58), "other-")],
    );
    let u = row(&c, "quality.mmlu-pro.pct");
    assert_eq!(u.test, "newcombe-unpaired");
    assert_eq!(u.verdict, ReplayVerdict::Inconclusive, "{}", u.why);
    let [ulo, uhi] = u.interval90.unwrap();
    assert!(uhi - ulo > 2.0 * (hi - lo), "{ulo} {uhi} against {lo} {hi}");
    let c = run(80, 40);
    let r = row(&c, "quality.mmlu-pro.pct");
    assert_eq!(r.verdict, ReplayVerdict::Drifted);
    assert_eq!(r.direction.as_deref(), Some("down"));
    assert!(r.p_value.unwrap() < 0.001);
    assert!(r.why.starts_with("-40.0 points"), "{}", r.why);
    let f = of(&c, "replay.drifted");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].severity, Severity::Error);
    assert_eq!(f[0].file.as_deref(), Some("quality/mmlu-pro.answers.jsonl"));
}

#[test]
fn quality_counts_answered_questions_only() {
    // 60 of 100 answered right, 20 more refused: 60 / 80 = 75 %.
    let c = compare_quality(
        vec![quality("gpqa", 100, 80, 60)],
        vec![quality("gpqa", 100, 100, 75)],
    );
    let r = row(&c, "quality.gpqa.pct");
    assert_eq!(r.recorded, Some(75.0));
    assert_eq!(r.n_recorded, 80);
    // Paired over the 80 questions both sides answered; the 20 the recorded side did not
    // answer are left out of the pairs.
    assert_eq!(r.test, "mcnemar-paired");
    assert_has(&r.why, "20 answered on one side only left out");
    assert_has(&r.why, "over answered questions only (80 of 100 recorded");
}

#[test]
fn quality_refused_on_both_sides_is_not_comparable() {
    let c = compare_quality(
        vec![quality("livecodebench", 40, 0, 0)],
        vec![quality("livecodebench", 40, 0, 0)],
    );
    let r = row(&c, "quality.livecodebench.pct");
    assert_eq!(r.verdict, ReplayVerdict::NotComparable);
    assert_eq!(
        r.why,
        "refused on both sides: 40 of 40 requests HTTP 400: maximum context length is 2048 tokens"
    );
    assert_eq!((r.recorded, r.replayed, r.p_value), (None, None, None));
    assert_eq!(of(&c, "replay.not-comparable").len(), 1);
    // A test the replay did not run.
    let c = compare_quality(vec![quality("ifeval", 10, 10, 5)], vec![]);
    assert_eq!(
        row(&c, "quality.ifeval.pct").why,
        "not measured on the replayed side"
    );
}

#[test]
fn other_hardware_makes_speed_informational() {
    let slow: Vec<f64> = REC.iter().map(|r| r * 0.7).collect();
    let mut a = speed_bundle(REC, TTFT);
    a.card = Some(loaded("card.json", card("2x GB10", "GB10", 2)));
    a.quality = vec![quality("mmlu-pro", 100, 100, 80)];
    let mut b = speed_bundle(&slow, TTFT);
    b.card = Some(loaded("card.json", card("1x H200", "H200", 1)));
    b.quality = vec![quality("mmlu-pro", 100, 100, 40)];
    let c = compare(&a, &b, &Tolerance::default());
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Drifted);
    assert!(r.informational);
    assert!(!row(&c, "quality.mmlu-pro.pct").informational);
    let hw = of(&c, "replay.hardware-differs");
    assert_eq!(hw.len(), 1);
    assert_eq!(hw[0].severity, Severity::Warning);
    assert!(
        hw[0].message.contains("accelerator GB10 vs H200")
            && hw[0].message.contains("2 vs 1 boxes"),
        "{}",
        hw[0].message
    );
    assert_eq!(hw[0].data["replayed"]["accelerator"], "H200");
    let drift = of(&c, "replay.drifted");
    let speed: Vec<&&Finding> = drift
        .iter()
        .filter(|f| f.message.starts_with("decode"))
        .collect();
    assert!(!speed.is_empty() && speed.iter().all(|f| f.severity == Severity::Info));
    // Quality drift stays an error whatever the hardware.
    assert!(drift
        .iter()
        .any(|f| f.message.starts_with("quality.mmlu-pro.pct") && f.severity == Severity::Error));
    // The caller may say it is the same machine after all.
    let same = Tolerance {
        same_hardware: Some(true),
        ..Tolerance::default()
    };
    let c = compare(&a, &b, &same);
    assert!(!row(&c, "decode.code").informational);
    assert!(of(&c, "replay.hardware-differs").is_empty());
    assert!(c.ran.iter().any(|x| x == "replay.hardware-differs"));
}

fn cpu_card(description: &str, model: &str, extra: serde_json::Value) -> Card {
    let mut b = json!({"name": "local", "model": model, "rank": 0});
    for (k, v) in extra.as_object().into_iter().flatten() {
        b[k] = v.clone();
    }
    let mut c = card(description, "cpu", 1);
    c.hardware.boxes = vec![serde_json::from_value(b).expect("box")];
    c
}

fn hardware_findings(a: Card, b: Card) -> Vec<Finding> {
    let mut x = speed_bundle(REC, TTFT);
    x.card = Some(loaded("card.json", a));
    let mut y = speed_bundle(REC, TTFT);
    y.card = Some(loaded("card.json", b));
    compare(&x, &y, &Tolerance::default())
        .findings
        .into_iter()
        .filter(|f| f.check == "replay.hardware-differs")
        .collect()
}

#[test]
fn hardware_is_compared_by_cpu_model_cores_memory_and_instruction_sets() {
    let xeon = "Intel(R) Xeon(R) Processor";
    // The same CPU model, worded differently in the description: the same hardware.
    let a = cpu_card("1 box: Intel Xeon, 2 cores, CPU only", xeon, json!({}));
    let b = cpu_card(
        "a 2-core VM",
        xeon,
        json!({"cores": 2, "memory_gib": 23.4, "isa": ["avx2", "fma"]}),
    );
    assert!(hardware_findings(a.clone(), b.clone()).is_empty());
    // Another CPU model.
    let epyc = cpu_card("1 box", "AMD EPYC 9B14", json!({"cores": 2}));
    let f = hardware_findings(a.clone(), epyc);
    assert_eq!(f.len(), 1);
    assert!(f[0].message.contains("AMD EPYC 9B14"), "{}", f[0].message);
    // The same model with other core counts (from the description on the recorded side).
    let four = cpu_card("x", xeon, json!({"cores": 4}));
    let f = hardware_findings(a.clone(), four);
    assert!(f[0].message.contains("2 vs 4 cores"), "{}", f[0].message);
    // Instruction sets, compared only when both sides record them.
    let c = cpu_card("x", xeon, json!({"isa": ["avx2", "fma", "avx512f"]}));
    let f = hardware_findings(b.clone(), c);
    assert!(f[0].message.contains("avx512f"), "{}", f[0].message);
    // Memory within 10 % is the same; twice as much is not.
    let m = cpu_card("x", xeon, json!({"memory_gib": 24.0}));
    assert!(hardware_findings(b.clone(), m).is_empty());
    let m = cpu_card("x", xeon, json!({"memory_gib": 48.0}));
    assert_eq!(hardware_findings(b, m).len(), 1);
}

#[test]
fn other_window_slots_and_version_are_setup_differences() {
    let a = speed_bundle(REC, TTFT);
    let mut b = speed_bundle(REC, TTFT);
    let server = &mut b.speed_result.as_mut().unwrap().value.server;
    server.models = json!({"data": [{"id": "m", "max_model_len": 4096}]});
    server.start_lines =
        vec!["rigaudit-engine version=0.2.0 streams=4 window=4096 sampling temperature=0.7".into()];
    let c = compare(&a, &b, &Tolerance::default());
    let f = of(&c, "replay.setup-differs");
    let what: Vec<&str> = f.iter().map(|f| f.data["what"].as_str().unwrap()).collect();
    assert_eq!(what, ["window", "slots", "engine_version"], "{f:?}");
    assert_eq!(f[0].severity, Severity::Error);
    assert!(
        f[0].message.contains("2048 tokens when recorded")
            && f[0].message.contains("4096 when replayed"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].pointer.as_deref(), Some("/server/models"));
    assert_eq!(f[1].severity, Severity::Error);
    assert_eq!(f[2].severity, Severity::Warning);
    assert!(f[2].message.contains("0.1.0") && f[2].message.contains("0.2.0"));
    // Same setup: nothing.
    assert!(of(
        &compare(&a, &a, &Tolerance::default()),
        "replay.setup-differs"
    )
    .is_empty());
}

#[test]
fn rows_round_trip_and_name_their_verdict_in_kebab_case() {
    let c = compare_quality(vec![quality("x", 4, 0, 0)], vec![quality("x", 4, 0, 0)]);
    let v = serde_json::to_value(&c.comparisons[0]).unwrap();
    assert_eq!(v["verdict"], "not-comparable");
    let back: Comparison = serde_json::from_value(v).unwrap();
    assert_eq!(back, c.comparisons[0]);
    assert_eq!(ReplayVerdict::NotComparable.name(), "not-comparable");
}

#[test]
fn welch_p_matches_a_worked_example() {
    use crate::stats::{two_proportion_p, welch_p};
    // Wikipedia's first Welch example: t = -2.46, df = 24.99, p = 0.0214.
    let a = [
        27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4,
    ];
    let b = [
        27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4,
    ];
    let p = welch_p(&a, &b).unwrap();
    assert!((p - 0.02138).abs() < 0.0002, "{p}");
    // Pooled two-proportion z: 80/100 vs 40/100 gives z = 5.84.
    assert!(two_proportion_p(80, 100, 40, 100) < 1e-7);
    assert_eq!(two_proportion_p(10, 10, 10, 10), 1.0);
}

fn with_reference(mut b: Bundle, kernel: &str, gbps: f64) -> Bundle {
    let samples: Vec<serde_json::Value> = (0..8)
            .map(|i| json!({"step": format!("decode/code/{i}"), "gbps": gbps * (1.0 + 0.01 * (i % 3) as f64)}))
            .collect();
    b.speed_result.as_mut().unwrap().value.machine_reference = Some(
        serde_json::from_value(json!({"kernel": kernel, "threads": 2, "samples": samples}))
            .expect("reference"),
    );
    b
}

const KERNEL: &str = "engine-q4_1-matvec-64MiB-v1-avx2";

/// A replay on a machine running at `machine` times its recorded speed, whose engine ran at
/// `engine` times: decode rates scale with it, TTFTs inversely.
fn slowed(machine: f64, engine: f64, kernel: &str) -> Findings {
    let a = with_reference(speed_bundle(REC, TTFT), KERNEL, 10.0);
    let rates: Vec<f64> = REC.iter().map(|r| r * engine).collect();
    let ttfts: Vec<f64> = TTFT.iter().map(|t| t / engine).collect();
    let b = with_reference(speed_bundle(&rates, &ttfts), kernel, 10.0 * machine);
    compare(&a, &b, &Tolerance::default())
}

#[test]
fn a_drift_the_machine_reference_explains_is_inconclusive_never_reproduced() {
    let c = slowed(0.6, 0.6, KERNEL);
    for key in ["decode", "decode.code", "prefill.512", "ttft.512"] {
        let r = row(&c, key);
        assert_eq!(r.verdict, ReplayVerdict::Inconclusive, "{key}: {}", r.why);
        assert_eq!(r.inconclusive, Some(Inconclusive::MachineSpeed), "{key}");
        assert!(r.why.starts_with("machine speed: "), "{}", r.why);
        assert!(r.why.contains("% slower on the replayed side"), "{}", r.why);
        // Judged in units of each session's reference: no move left, by its interval.
        assert!(
            r.why.contains(
                "in units of each session's reference the figure moved +0.0 % (90 % interval"
            ) && r
                .why
                .contains("), inside the band, so the drift cannot be told"),
            "{}",
            r.why
        );
    }
    assert!(
        of_check(&c, "replay.drifted").is_empty(),
        "{:?}",
        c.findings
    );
    let m = of_check(&c, "replay.machine-speed");
    assert_eq!(m.len(), 1, "{:?}", c.findings);
    assert!((m[0].data["change_pct"].as_f64().unwrap() + 40.0).abs() < 1.0);
    assert!(c.ran.iter().any(|id| id == "replay.machine-speed"));
    let summary = crate::report::ReplaySummary::of(&c.comparisons);
    assert_eq!(summary.machine_speed, 4);
    assert_has(&summary.line(false), "4 machine speed");
    // The same figures with the machine faster than recorded: explained the same way.
    let c = slowed(1.5, 1.5, KERNEL);
    assert_eq!(
        row(&c, "decode.code").inconclusive,
        Some(Inconclusive::MachineSpeed)
    );
}

#[test]
fn a_drift_the_machine_reference_does_not_explain_stands() {
    // The machine did not move: the engine did.
    let c = slowed(1.0, 0.6, KERNEL);
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Drifted);
    assert!(of_check(&c, "replay.machine-speed").is_empty());
    // The machine moved the other way.
    let c = slowed(1.3, 0.6, KERNEL);
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Drifted, "{}", r.why);
    assert_has(
        &r.why,
        "in units of each session's reference the figure moved -53.8 %",
    );
    assert_ends_with(&r.why, "still a drift beyond the band");
    // The machine moved, but far less than the figure.
    let c = slowed(0.9, 0.5, KERNEL);
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Drifted);
    // Another kernel (another SIMD level, another version): no comparison at all.
    let c = slowed(0.6, 0.6, "engine-q4_1-matvec-64MiB-v1-avx512vnni");
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Drifted);
    assert!(!c.ran.iter().any(|id| id == "replay.machine-speed"));
    // A reproduced row stays reproduced whatever the machine did.
    let c = slowed(0.6, 1.0, KERNEL);
    assert_eq!(row(&c, "decode.code").verdict, ReplayVerdict::Reproduced);
}

#[test]
fn a_drift_the_reference_only_partly_explains_is_judged_on_what_is_left() {
    // The machine ran 20 % slower and the engine 45 %: in units of the reference the figure
    // still moved about -31 %, beyond the ±25 % band: the old point rule (the move with the
    // machine's taken out beyond the band) and the interval agree: drifted.
    let c = slowed(0.8, 0.55, KERNEL);
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Drifted, "{}", r.why);
    // The machine ran 20 % slower and the engine 38 %: -22.5 % in reference units lies
    // inside the band but its interval reaches across it: inconclusive (machine speed),
    // where the point rule alone called it explained, and never reproduced.
    let c = slowed(0.8, 0.62, KERNEL);
    let r = row(&c, "decode.code");
    assert_eq!(
        r.inconclusive,
        Some(Inconclusive::MachineSpeed),
        "{}",
        r.why
    );
    assert_has(&r.why, "neither inside the band nor a drift beyond it");
}

#[test]
fn a_confirming_session_judges_a_drift_the_machine_explained() {
    let mut first = slowed(0.6, 0.6, KERNEL);
    assert!(keys_to_confirm(&first).contains(&"decode.code".to_string()));
    // The confirming session ran at the recorded speed and matched the record.
    let second = slowed(1.0, 1.0, KERNEL);
    confirm(&mut first, &second, None);
    let r = row(&first, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Reproduced, "{}", r.why);
    assert!(r.why.contains("a confirming session"), "{}", r.why);
    // A confirming session still on a slow machine leaves the row inconclusive.
    let mut first = slowed(0.6, 0.6, KERNEL);
    confirm(&mut first, &slowed(0.6, 0.6, KERNEL), None);
    assert_eq!(
        row(&first, "decode.code").inconclusive,
        Some(Inconclusive::MachineSpeed)
    );
}

#[test]
fn on_other_hardware_the_machine_reference_explains_nothing_even_when_judged() {
    // A diff of two machines judges their figures as on one machine (same_hardware); the
    // kernel's move is then the hardware's, and the figures' move is reported, not explained.
    let mut a = with_reference(speed_bundle(REC, TTFT), KERNEL, 10.0);
    a.card = Some(loaded("card.json", card("1x H200", "H200", 1)));
    let slow: Vec<f64> = REC.iter().map(|r| r * 0.6).collect();
    let mut b = with_reference(speed_bundle(&slow, TTFT), KERNEL, 6.0);
    b.card = Some(loaded("card.json", card("1x L40S", "L40S", 1)));
    let judged = Tolerance {
        same_hardware: Some(true),
        ..Tolerance::default()
    };
    let c = compare(&a, &b, &judged);
    let r = row(&c, "decode.code");
    assert_eq!(r.verdict, ReplayVerdict::Drifted, "{}", r.why);
    assert!(!r.informational);
    // The same two sides on one machine's cards: the move is the machine's.
    b.card = Some(loaded("card.json", card("1x H200", "H200", 1)));
    let c = compare(&a, &b, &judged);
    assert_eq!(
        row(&c, "decode.code").inconclusive,
        Some(Inconclusive::MachineSpeed)
    );
}
