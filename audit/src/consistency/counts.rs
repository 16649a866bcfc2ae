//! Counts the contracts state, against the records: counted runs and warm-ups, the requests of
//! each concurrency round, the size of each sized prompt, the answers of a quality test and the
//! fill of each memory-fit step.
//!
//! Definitions:
//! - decode: each prompt of the contract has exactly `runs` counted requests, and the decode part
//!   has exactly `warmups` warm-ups in all (the measuring client warms up once, before the first
//!   prompt) or `warmups` before each prompt (as other clients do); prefill and context steps
//!   have exactly their part's `runs` per depth; the long answer has one counted request; a
//!   concurrency level has `rounds` rounds of exactly `level` requests. A sized step that was not
//!   sent because it cannot fit the window is not counted. Two counted requests of one step with
//!   the same run (and repeat) number are a duplicate.
//! - repeats: a run of a sized step whose part states `min_try_ms` repeats its request until the
//!   requests' times to first token add up to it; it counts as one run, its repeats numbered 1, 2,
//!   ... in order (at most `MAX_REPEATS`), none after the one that reached the time. A part
//!   without `min_try_ms` has no repeats.
//! - prompt size: a prefill or context request at depth N has N prompt tokens within
//!   max(2 % of N, 8 tokens) (the measuring client builds exact-N prompts and confirms them by the
//!   server's usage; the tolerance covers a server that adds a few tokens of its own).
//! - questions: a quality test's answers file has the contract's `questions` records, and its
//!   summary's `total + excluded` is the same number.
//! - fit: a memory-fit step's prompt fills its size by the result's `fill`, less
//!   max(2 % of that, 8 tokens).

use crate::bundle::Bundle;
use crate::check::list;
use crate::check::{Emit, Ran};
use crate::records::speed::{ConcPart, SpeedContract, SpeedRequest, SpeedResult, MAX_REPEATS};
use serde_json::json;
use std::collections::BTreeSet;

/// The tolerance of a sized prompt of `n` tokens: max(2 % of n, 8 tokens).
pub fn size_tolerance(n: f64) -> f64 {
    (0.02 * n).max(8.0)
}

fn count(r: &SpeedResult, f: impl Fn(&SpeedRequest) -> bool) -> u64 {
    r.requests.iter().filter(|q| f(q)).count() as u64
}

/// Whether a sized step was rightly left out: no request, and the tool marked it as not sent or
/// it cannot fit the window.
fn left_out(c: &SpeedContract, r: &SpeedResult, part: &str, depth: u64, cap: u64) -> bool {
    let sent = count(r, |q| q.step == part && q.depth == Some(depth));
    let unsent = r
        .fits
        .iter()
        .any(|f| f.part == part && f.depth == depth && !f.sent);
    let window = crate::figures::window(Some(c), r).unwrap_or(u64::MAX);
    sent == 0 && (unsent || depth.saturating_add(cap) > window)
}

/// Decode's warm-ups (in all, or per prompt) and counted runs per prompt against the contract.
fn decode_problems(c: &SpeedContract, r: &SpeedResult) -> Vec<String> {
    let mut bad = Vec::new();
    let counted = |q: &SpeedRequest| q.step == "decode" && !q.warmup;
    let w = count(r, |q| q.step == "decode" && q.warmup);
    let per_prompt = c.prompt_ids.iter().all(|pid| {
        count(r, |q| {
            q.step == "decode" && q.warmup && q.prompt_id.as_ref() == Some(pid)
        }) == u64::from(c.warmups)
    });
    if w != u64::from(c.warmups) && !per_prompt {
        bad.push(format!(
            "{w} decode warm-ups, the contract states {}",
            c.warmups
        ));
    }
    for pid in &c.prompt_ids {
        let n = count(r, |q| counted(q) && q.prompt_id.as_ref() == Some(pid));
        if n != u64::from(c.runs) {
            bad.push(format!(
                "decode {pid}: {n} counted runs, the contract states {}",
                c.runs
            ));
        }
    }
    bad
}

/// Problems with the counts of a speed result against its contract, one line each.
fn run_problems(c: &SpeedContract, r: &SpeedResult) -> Vec<String> {
    let mut bad = Vec::new();
    let has = |p: &str| c.parts.iter().any(|x| x == p);
    let counted = |step: &'static str| move |q: &SpeedRequest| q.step == step && !q.warmup;
    if has("decode") {
        bad.extend(decode_problems(c, r));
    }
    let sized = [
        (
            "prefill",
            c.prefill
                .as_ref()
                .map(|p| (&p.depths, p.runs, p.max_tokens)),
        ),
        (
            "ctx",
            c.ctx.as_ref().map(|p| (&p.depths, p.runs, p.max_tokens)),
        ),
    ];
    for (part, spec) in sized {
        let Some((depths, runs, cap)) = spec.filter(|_| has(part)) else {
            continue;
        };
        for d in depths.iter().filter(|d| !left_out(c, r, part, **d, cap)) {
            let first_of_run = |q: &SpeedRequest| q.repeat.is_none_or(|k| k == 1);
            let n = count(r, |q| {
                counted(part)(q) && q.depth == Some(*d) && first_of_run(q)
            });
            if n != u64::from(runs) {
                bad.push(format!(
                    "{part} {d}: {n} counted runs, the contract states {runs}"
                ));
            }
        }
    }
    if let Some(cc) = c.conc.as_ref().filter(|_| has("conc")) {
        bad.extend(conc_problems(cc, r));
    }
    if let Some(l1) = c.l1.as_ref().filter(|_| has("l1")) {
        let n = count(r, counted("l1"));
        if n != 1 && !(n == 0 && left_out_l1(c, r, l1.max_tokens)) {
            bad.push(format!("l1: {n} counted requests, the long answer is one"));
        }
    }
    bad.extend(duplicates(r));
    bad.extend(repeat_problems(c, r));
    bad
}

/// The repeats of each run of a sized step: only where the part states `min_try_ms`, numbered
/// 1, 2, 3 ... in order, at most [`MAX_REPEATS`], and stopped once the try reached its time (the
/// requests before the last took less than `min_try_ms` to first token together; a run cut
/// short by a failed request stops early).
fn repeat_problems(c: &SpeedContract, r: &SpeedResult) -> Vec<String> {
    let mut bad = Vec::new();
    let parts = [
        (
            "prefill",
            c.prefill.as_ref().map(|p| (&p.depths, p.min_try_ms)),
        ),
        ("ctx", c.ctx.as_ref().map(|p| (&p.depths, p.min_try_ms))),
    ];
    for (part, spec) in parts {
        let Some((depths, min_ms)) = spec else {
            continue;
        };
        for d in depths {
            for run in crate::figures::runs_at(r, part, *d) {
                if let Some(p) = run_repeat_problem(&run, min_ms) {
                    let n = run[0].run.map_or("?".into(), |n| n.to_string());
                    bad.push(format!("{part} {d} run {n}: {p}"));
                }
            }
        }
    }
    bad
}

/// What is wrong with one run's repeats, if anything: repeats where the part states no
/// `min_try_ms`; under it, repeats not numbered 1, 2, ... in order (at most [`MAX_REPEATS`]), a
/// repeat after the one whose time to first token reached `min_try_ms` (the try went on past its
/// time, or a slow request was dropped from before the last), or a try of answered requests that
/// ended before it reached it.
pub(super) fn run_repeat_problem(run: &[&SpeedRequest], min_ms: Option<u64>) -> Option<String> {
    let numbered: Vec<Option<u32>> = run.iter().map(|q| q.repeat).collect();
    let Some(min_ms) = min_ms else {
        return (numbered.iter().any(Option::is_some) || run.len() > 1).then(|| {
            format!(
                "{} requests numbered as repeats, but the contract's part states no min_try_ms",
                run.len()
            )
        });
    };
    let in_order = numbered
        .iter()
        .enumerate()
        .all(|(i, k)| *k == Some(i as u32 + 1));
    if !in_order || run.len() > MAX_REPEATS as usize {
        return Some(format!(
            "its requests are numbered as repeats {numbered:?}, not 1 to at most {MAX_REPEATS} in order"
        ));
    }
    let ms = |qs: &[&SpeedRequest]| qs.iter().filter_map(|q| q.ttft()).sum::<f64>() * 1000.0;
    let (before_last, all) = (ms(&run[..run.len() - 1]), ms(run));
    let answered = run.iter().all(|q| q.answered());
    if run.len() > 1 && before_last >= min_ms as f64 {
        return Some(format!(
            "{} repeats, but the first {} reached min_try_ms {min_ms} ({before_last:.0} ms to first token): the try went on past its time, or a slow repeat was dropped",
            run.len(),
            run.len() - 1
        ));
    }
    (answered && run.len() < MAX_REPEATS as usize && all < min_ms as f64).then(|| {
        format!(
            "{} repeats took {all:.0} ms to first token, less than min_try_ms {min_ms}: the try ended before its time, or its last repeats were dropped",
            run.len()
        )
    })
}

/// Rounds of each concurrency level against the contract: `rounds` rounds of `level` requests.
fn conc_problems(cc: &ConcPart, r: &SpeedResult) -> Vec<String> {
    let mut bad = Vec::new();
    let counted = |step: &'static str| move |q: &SpeedRequest| q.step == step && !q.warmup;
    for level in &cc.levels {
        let rounds: BTreeSet<u32> = r
            .requests
            .iter()
            .filter(|q| counted("conc")(q) && q.level == Some(*level))
            .filter_map(|q| q.round)
            .collect();
        for round in rounds.iter().filter(|x| **x < 1 || **x > cc.rounds) {
            bad.push(format!(
                "conc {level}: round {round}, the contract states {} rounds",
                cc.rounds
            ));
        }
        for round in 1..=cc.rounds {
            let n = count(r, |q| {
                counted("conc")(q) && q.level == Some(*level) && q.round == Some(round)
            });
            if n != u64::from(*level) {
                bad.push(format!(
                    "conc {level} round {round}: {n} requests, the level is {level}"
                ));
            }
        }
    }
    bad
}

fn left_out_l1(c: &SpeedContract, r: &SpeedResult, cap: u64) -> bool {
    let unsent = r.fits.iter().any(|f| f.part == "l1" && !f.sent);
    let window = crate::figures::window(Some(c), r).unwrap_or(u64::MAX);
    unsent || cap > window
}

/// Counted requests that repeat an earlier one's step, prompt, depth and run number.
fn duplicates(r: &SpeedResult) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut bad = Vec::new();
    for q in r.requests.iter().filter(|q| !q.warmup && q.step != "conc") {
        let Some(run) = q.run else { continue };
        let key = (
            q.step.as_str(),
            q.prompt_id.as_deref(),
            q.depth,
            run,
            q.repeat,
        );
        if !seen.insert(key) {
            bad.push(format!(
                "{} {}{}: run {run}{} appears twice",
                q.step,
                q.prompt_id.as_deref().unwrap_or(""),
                q.depth.map(|d| format!(" {d}")).unwrap_or_default(),
                q.repeat.map(|k| format!(" repeat {k}")).unwrap_or_default()
            ));
        }
    }
    bad
}

/// `speed.runs-mismatch`: counted runs, warm-ups and rounds against the speed contract.
pub(crate) fn check_speed_runs(b: &Bundle, e: &mut Emit) -> Ran {
    let (Some(cl), Some(rl)) = (&b.speed_contract, &b.speed_result) else {
        return None;
    };
    for p in run_problems(&cl.value, &rl.value) {
        e.finding( format!("{p}: the records are not the runs the contract describes (a run dropped, added or moved)"))
                .file(&rl.path)
                .pointer("/requests");
    }
    Some(())
}

/// `speed.prompt-size-mismatch`: each prefill and context prompt against its depth.
pub(crate) fn check_prompt_sizes(b: &Bundle, e: &mut Emit) -> Ran {
    let rl = b.speed_result.as_ref()?;
    for (i, q) in rl.value.requests.iter().enumerate() {
        let (Some(d), Some(p)) = (q.depth, q.prompt_tokens) else {
            continue;
        };
        if !matches!(q.step.as_str(), "prefill" | "ctx") {
            continue;
        }
        let tol = size_tolerance(d as f64);
        if (p as f64 - d as f64).abs() > tol {
            e.finding(
                    format!(
                        "{} {d} run {}: the prompt has {p} tokens, not {d} (tolerance {tol:.0}); the step measured another size than it names",
                        q.step,
                        q.run.map_or("?".into(), |r| r.to_string())
                    ),
                )
                .file(&rl.path)
                .pointer(format!("/requests/{i}/prompt_tokens"))
                .data(json!({"depth": d, "prompt_tokens": p, "tolerance": tol}));
        }
    }
    Some(())
}

/// `quality.questions-mismatch`: answer records and `total + excluded` against the contract.
pub(crate) fn check_questions(b: &Bundle, e: &mut Emit) -> Ran {
    let mut ran = None;
    for t in &b.quality {
        let Some(c) = &t.contract else { continue };
        let q = c.value.questions;
        ran = Some(());
        let mut bad = Vec::new();
        if let Some(a) = t.answers.as_ref().filter(|a| a.value.total != q) {
            bad.push((
                a.path.clone(),
                format!("the answers file has {} records", a.value.total),
            ));
        }
        if let Some(s) = &t.summary {
            let n = s.value.total + s.value.excluded.unwrap_or(0);
            if n != q {
                bad.push((
                    s.path.clone(),
                    format!("the summary counts {n} (total + excluded)"),
                ));
            }
        }
        for (file, what) in bad {
            e.finding(format!(
                "{}: {what}, but the contract has {q} questions",
                t.test
            ))
            .file(file);
        }
    }
    ran
}

/// `fit.prompt-underfills`: each fit step's prompt against `fill` of its size.
pub(crate) fn check_fit_fill(b: &Bundle, e: &mut Emit) -> Ran {
    let Some(f) = &b.fit else { return None };
    let fill = f.value.fill;
    if !(fill > 0.0 && fill <= 1.0) {
        e.finding(format!(
            "the fit result's fill {fill} is not a share in (0, 1]"
        ))
        .file(&f.path)
        .pointer("/fill");
        return Some(());
    }
    let short: Vec<String> = f
        .value
        .steps
        .iter()
        .filter(|s| {
            let want = fill * s.size as f64;
            (s.prompt_tokens as f64) < want - size_tolerance(want)
        })
        .map(|s| format!("size {} with {} prompt tokens", s.size, s.prompt_tokens))
        .collect();
    if !short.is_empty() {
        e.finding(
                format!("{} fit steps do not fill {:.0} % of their size: {}; a smaller prompt needs less memory than the size claims", short.len(), fill * 100.0, list(&short, 3)),
            )
            .file(&f.path)
            .pointer("/steps");
    }
    Some(())
}
