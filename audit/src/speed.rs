//! `speed.*`: the speed figures recomputed from the per-request records, and every invalid step
//! named (cached tokens, cut replies, steps that cannot fit the window, foreign load).
//!
//! Definitions (those of the seed pages and `shared/reference/measurement.md`):
//! - decode rate of a request = (reply tokens - 1) / (end - first token);
//! - `decode.<prompt>` = median over its counted runs; `decode` = mean over the prompts;
//! - `cv.<prompt>` = sample CV of its runs; `cv` = the largest of them (the worst prompt);
//! - `words_per_s`, `chars_per_s` = words (characters) / time after the first token, summed over
//!   the counted decode runs; `secs_500_words` = 500 / `words_per_s`;
//! - `prefill.<depth>` = median of prompt tokens / TTFT; `ttft.<depth>` = median TTFT;
//! - `conc_total.<level>` = median over rounds of all reply tokens / (last end - first send);
//!   `conc_per_request.<level>` = median over rounds of the median request's tokens / (end - send);
//! - `acceptance_pct` = accepted / drafted; `mean_accepted_len` = 1 + accepted / drafts;
//! - `ctx_decode.<depth>`, `ctx_prefill.<depth>`: medians at each context step; `l1_decode`.

use crate::bundle::{Bundle, Out};
use crate::catalogue::Check;
use crate::records::speed::{SpeedContract, SpeedRequest, SpeedResult};
use crate::report::{Finding, Recomputed, Severity};
use crate::startline;
use crate::stats::{agrees, cv_pct, fmt, mean, median, printed_decimals, written_decimals};
use serde_json::json;
use std::collections::BTreeMap;

/// `speed.*` checks.
pub const CHECKS: &[Check] = &[
    Check {
        id: "speed.recompute-mismatch",
        severity: Severity::Error,
        doc: "A speed figure differs from the value recomputed from the per-request records.",
    },
    Check {
        id: "speed.not-recomputable",
        severity: Severity::Info,
        doc: "A figure has no definition rigaudit can recompute it by; it is shown but not checked.",
    },
    Check {
        id: "speed.step-exceeds-window",
        severity: Severity::Error,
        doc: "A step's prompt plus reply cap is larger than the window (error when it has a value).",
    },
    Check {
        id: "speed.reply-not-at-limit",
        severity: Severity::Warning,
        doc: "A counted decode reply ended before its max tokens.",
    },
    Check {
        id: "speed.cached-tokens",
        severity: Severity::Error,
        doc: "A speed request was served with cached prompt tokens.",
    },
    Check {
        id: "speed.level-above-slots",
        severity: Severity::Warning,
        doc: "A concurrency level is larger than the server's slots, so its requests queued.",
    },
    Check {
        id: "speed.load-guard",
        severity: Severity::Error,
        doc: "A step kept although foreign load broke the guard's rule, or the guard did not watch it.",
    },
    Check {
        id: "speed.failed-request",
        severity: Severity::Error,
        doc: "A counted request of a step with a value was refused or failed.",
    },
    Check {
        id: "speed.token-source",
        severity: Severity::Warning,
        doc: "Reply tokens were counted from chunks or the requested cap, not the server's usage.",
    },
];

/// The counted (not warm-up) requests of a step.
pub(crate) fn counted<'a>(
    r: &'a SpeedResult,
    step: &'a str,
) -> impl Iterator<Item = &'a SpeedRequest> + 'a {
    r.requests
        .iter()
        .filter(move |q| q.step == step && !q.warmup)
}

/// The per-run samples behind each figure [`recompute`] derives, keyed like it:
/// - `decode.<prompt>`: the decode rate of each counted run of that prompt;
/// - `decode`: per run, the mean over the prompts of their `i`-th counted run's rate (as many
///   samples as the prompt with the fewest runs has);
/// - `prefill.<depth>`, `ttft.<depth>`: prompt tokens / TTFT and TTFT of each counted run;
/// - `conc_total.<level>`, `conc_per_request.<level>`: one value per round whose requests all
///   answered;
/// - `ctx_decode.<depth>`, `ctx_prefill.<depth>`: decode and prefill rate of each counted run;
/// - `l1_decode`: the decode rate of each counted run, in record order.
///
/// Every key the contract names is present, with an empty list when no run gave a value.
pub(crate) fn samples(c: &SpeedContract, r: &SpeedResult) -> BTreeMap<String, Vec<f64>> {
    let mut s: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    // Decode.
    let mut per_prompt: Vec<Vec<f64>> = Vec::new();
    for pid in &c.prompt_ids {
        let rates: Vec<f64> = counted(r, "decode")
            .filter(|q| q.prompt_id.as_deref() == Some(pid))
            .filter_map(|q| q.decode_rate())
            .collect();
        per_prompt.push(rates.clone());
        s.insert(format!("decode.{pid}"), rates);
    }
    if !c.prompt_ids.is_empty() {
        let runs = per_prompt.iter().map(Vec::len).min().unwrap_or(0);
        let means: Vec<f64> = (0..runs)
            .filter_map(|i| mean(&per_prompt.iter().map(|v| v[i]).collect::<Vec<f64>>()))
            .collect();
        s.insert("decode".into(), means);
    }
    // Prefill.
    if let Some(p) = &c.prefill {
        for d in &p.depths {
            let reqs: Vec<&SpeedRequest> = counted(r, "prefill")
                .filter(|q| q.depth == Some(*d))
                .collect();
            s.insert(
                format!("prefill.{d}"),
                reqs.iter().filter_map(|q| q.prefill_rate()).collect(),
            );
            s.insert(
                format!("ttft.{d}"),
                reqs.iter().filter_map(|q| q.ttft()).collect(),
            );
        }
    }
    // Concurrency.
    if let Some(cc) = &c.conc {
        for level in &cc.levels {
            let mut totals = Vec::new();
            let mut per = Vec::new();
            for round in 1..=cc.rounds {
                let reqs: Vec<&SpeedRequest> = counted(r, "conc")
                    .filter(|q| q.level == Some(*level) && q.round == Some(round))
                    .collect();
                if reqs.is_empty() || reqs.iter().any(|q| !q.answered()) {
                    continue;
                }
                let start = reqs.iter().map(|q| q.sent_s).fold(f64::MAX, f64::min);
                let end = reqs.iter().filter_map(|q| q.end_s).fold(f64::MIN, f64::max);
                let tokens: u64 = reqs.iter().filter_map(|q| q.completion_tokens).sum();
                if end > start {
                    totals.push(tokens as f64 / (end - start));
                }
                let rates: Vec<f64> = reqs.iter().filter_map(|q| q.e2e_rate()).collect();
                if let Some(m) = median(&rates) {
                    per.push(m);
                }
            }
            s.insert(format!("conc_total.{level}"), totals);
            s.insert(format!("conc_per_request.{level}"), per);
        }
    }
    // Context steps.
    if let Some(cx) = &c.ctx {
        for d in &cx.depths {
            let reqs: Vec<&SpeedRequest> =
                counted(r, "ctx").filter(|q| q.depth == Some(*d)).collect();
            s.insert(
                format!("ctx_decode.{d}"),
                reqs.iter().filter_map(|q| q.decode_rate()).collect(),
            );
            s.insert(
                format!("ctx_prefill.{d}"),
                reqs.iter().filter_map(|q| q.prefill_rate()).collect(),
            );
        }
    }
    if c.l1.is_some() {
        s.insert(
            "l1_decode".into(),
            counted(r, "l1").filter_map(|q| q.decode_rate()).collect(),
        );
    }
    s
}

/// Recomputes every figure the records allow. Keys are those of the speed result's `values`.
pub fn recompute(c: &SpeedContract, r: &SpeedResult) -> BTreeMap<String, Option<f64>> {
    let s = samples(c, r);
    let of = |key: &str| -> &[f64] { s.get(key).map_or(&[], Vec::as_slice) };
    let mut v: BTreeMap<String, Option<f64>> = BTreeMap::new();
    // Decode.
    let mut per_prompt = Vec::new();
    let mut cvs = Vec::new();
    for pid in &c.prompt_ids {
        let rates = of(&format!("decode.{pid}"));
        let m = median(rates);
        v.insert(format!("decode.{pid}"), m);
        if let Some(m) = m {
            per_prompt.push(m);
        }
        let cv = cv_pct(rates);
        v.insert(format!("cv.{pid}"), cv);
        if let Some(cv) = cv {
            cvs.push(cv);
        }
    }
    if !c.prompt_ids.is_empty() {
        v.insert(
            "decode".into(),
            (per_prompt.len() == c.prompt_ids.len())
                .then(|| mean(&per_prompt))
                .flatten(),
        );
        v.insert(
            "cv".into(),
            (!cvs.is_empty()).then(|| cvs.iter().cloned().fold(f64::MIN, f64::max)),
        );
        let (mut words, mut chars, mut secs) = (0u64, 0u64, 0f64);
        let mut have_text = true;
        for q in counted(r, "decode").filter(|q| q.answered()) {
            match (q.words, q.chars, q.first_token_s, q.end_s) {
                (Some(w), Some(ch), Some(f), Some(e)) => {
                    words += w;
                    chars += ch;
                    secs += e - f;
                }
                _ => have_text = false,
            }
        }
        let ok = have_text && secs > 0.0;
        let wps = ok.then(|| words as f64 / secs);
        v.insert("words_per_s".into(), wps);
        v.insert("chars_per_s".into(), ok.then(|| chars as f64 / secs));
        v.insert(
            "secs_500_words".into(),
            wps.filter(|w| *w > 0.0).map(|w| 500.0 / w),
        );
    }
    // Drafts.
    let (mut drafts, mut drafted, mut accepted) = (0u64, 0u64, 0u64);
    for d in r.drafts.iter().filter(|d| d.step == "decode") {
        drafts += d.drafts;
        drafted += d.drafted;
        accepted += d.accepted;
    }
    if drafted > 0 {
        v.insert(
            "acceptance_pct".into(),
            Some(100.0 * accepted as f64 / drafted as f64),
        );
    }
    if drafts > 0 {
        v.insert(
            "mean_accepted_len".into(),
            Some(1.0 + accepted as f64 / drafts as f64),
        );
    }
    // Prefill, concurrency and context steps: medians of their samples; the long answer: the
    // last counted run.
    for (key, xs) in &s {
        if key == "decode" || key.starts_with("decode.") {
            continue;
        }
        let value = if key == "l1_decode" {
            xs.last().copied()
        } else {
            median(xs)
        };
        v.insert(key.clone(), value);
    }
    // Slots as the start line says.
    if let Some(s) = startline::parse(&r.server.start_lines).slots {
        v.insert("slots".into(), Some(s as f64));
    }
    v
}

/// The server's window: `/v1/models`, else the start line, else the contract.
pub fn window(c: Option<&SpeedContract>, r: &SpeedResult) -> Option<u64> {
    startline::models_window(&r.server.models)
        .or_else(|| startline::parse(&r.server.start_lines).window)
        .or(c.map(|c| c.server.window))
}

pub(crate) fn check(b: &Bundle, out: &mut Out) {
    let Some(rl) = &b.speed_result else { return };
    let r = &rl.value;
    let file = rl.path.as_str();
    let contract = b.speed_contract.as_ref().map(|c| &c.value);

    // Cached tokens.
    out.ran("speed.cached-tokens");
    let cached: Vec<(usize, &SpeedRequest)> = r
        .requests
        .iter()
        .enumerate()
        .filter(|(_, q)| q.cached_tokens.unwrap_or(0) > 0)
        .collect();
    if let Some((i, q)) = cached.first() {
        out.push(
            Finding::new(
                "speed.cached-tokens",
                Severity::Error,
                format!(
                    "{} speed requests were served with cached prompt tokens (first: {} {}, {} of {} prompt tokens cached); their prefill and TTFT are not measurements",
                    cached.len(),
                    q.step,
                    q.prompt_id.as_deref().unwrap_or(""),
                    q.cached_tokens.unwrap_or(0),
                    q.prompt_tokens.map_or("?".into(), |p| p.to_string())
                ),
            )
            .file(file)
            .pointer(format!("/requests/{i}/cached_tokens"))
            .data(json!({"requests": cached.len()})),
        );
    }

    // Token sources.
    out.ran("speed.token-source");
    let odd: Vec<usize> = r
        .requests
        .iter()
        .enumerate()
        .filter(|(_, q)| q.answered() && q.completion_tokens_source != "usage")
        .map(|(i, _)| i)
        .collect();
    if let Some(i) = odd.first() {
        out.push(
            Finding::new(
                "speed.token-source",
                Severity::Warning,
                format!(
                    "{} requests count their reply tokens from '{}', not the server's usage",
                    odd.len(),
                    r.requests[*i].completion_tokens_source
                ),
            )
            .file(file)
            .pointer(format!("/requests/{i}/completion_tokens_source")),
        );
    }

    let Some(c) = contract else { return };

    // Replies that end early.
    out.ran("speed.reply-not-at-limit");
    for (i, q) in r.requests.iter().enumerate() {
        if q.step != "decode" || q.warmup || !q.answered() {
            continue;
        }
        let n = q.completion_tokens.unwrap_or(0);
        if n < q.max_tokens || q.finish_reason.as_deref() != Some("length") {
            out.push(
                Finding::new(
                    "speed.reply-not-at-limit",
                    Severity::Warning,
                    format!(
                        "decode {} run {}: the reply has {n} of {} tokens (finish reason {}); a short reply changes the rate",
                        q.prompt_id.as_deref().unwrap_or("?"),
                        q.run.unwrap_or(0),
                        q.max_tokens,
                        q.finish_reason.as_deref().unwrap_or("none")
                    ),
                )
                .file(file)
                .pointer(format!("/requests/{i}")),
            );
        }
    }

    // Failed requests in steps that have a value.
    out.ran("speed.failed-request");
    for (i, q) in r.requests.iter().enumerate() {
        if q.warmup || q.answered() || !matches!(q.step.as_str(), "decode" | "prefill" | "conc") {
            continue;
        }
        out.push(
            Finding::new(
                "speed.failed-request",
                Severity::Error,
                format!(
                    "{} request {} failed with HTTP {}{}; its step's value leaves it out",
                    q.step,
                    i,
                    q.status,
                    q.error
                        .as_deref()
                        .map(|e| format!(" '{e}'"))
                        .unwrap_or_default()
                ),
            )
            .file(file)
            .pointer(format!("/requests/{i}/status")),
        );
    }

    // Levels above slots.
    let slots = startline::parse(&r.server.start_lines)
        .slots
        .unwrap_or(c.server.slots as u64);
    if let Some(cc) = &c.conc {
        out.ran("speed.level-above-slots");
        for l in cc.levels.iter().filter(|l| **l as u64 > slots) {
            out.push(
                Finding::new(
                    "speed.level-above-slots",
                    Severity::Warning,
                    format!("{l} requests at once is more than the server's {slots} slots: some of them queued, so the level measures the queue too"),
                )
                .file(b.speed_contract.as_ref().map_or(file, |s| s.path.as_str()))
                .pointer("/conc/levels"),
            );
        }
    }

    // Recompute.
    let values = recompute(c, r);
    check_window(b, c, r, &values, out);
    check_guard(c, r, file, out);
    out.ran("speed.recompute-mismatch");
    out.ran("speed.not-recomputable");
    let page = &b.manifest.page.speed;
    let mut keys: Vec<&String> = r.values.keys().chain(page.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let shown_file = r.values.get(key).copied().flatten();
        let shown_page = page.get(key);
        match values.get(key) {
            None => {
                out.push(
                    Finding::new(
                        "speed.not-recomputable",
                        Severity::Info,
                        format!(
                            "'{key}' ({}) has no definition rigaudit can recompute; it is not checked",
                            shown_page.cloned().or(shown_file.map(|x| x.to_string())).unwrap_or_else(|| "no value".into())
                        ),
                    )
                    .file(file)
                    .pointer(format!("/values/{key}")),
                );
            }
            Some(exact) => {
                if let Some(x) = shown_file {
                    compare(
                        key,
                        *exact,
                        x,
                        written_decimals(x),
                        file,
                        &format!("/values/{key}"),
                        "the speed result",
                        out,
                    );
                }
                if let Some(s) = shown_page {
                    match s.parse::<f64>() {
                        Ok(x) => compare(
                            key,
                            *exact,
                            x,
                            printed_decimals(s),
                            "bundle.json",
                            &format!("/page/speed/{key}"),
                            "the page",
                            out,
                        ),
                        Err(_) => out.push(
                            Finding::new(
                                "speed.recompute-mismatch",
                                Severity::Error,
                                format!("the page's '{key}' is not a number: '{s}'"),
                            )
                            .file("bundle.json")
                            .pointer(format!("/page/speed/{key}")),
                        ),
                    }
                }
                out.recomputed.push(Recomputed {
                    key: key.clone(),
                    value: *exact,
                    file: shown_file,
                    page: shown_page.cloned(),
                });
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn compare(
    key: &str,
    exact: Option<f64>,
    shown: f64,
    d: usize,
    file: &str,
    ptr: &str,
    who: &str,
    out: &mut Out,
) {
    match exact {
        None => out.push(
            Finding::new(
                "speed.recompute-mismatch",
                Severity::Error,
                format!(
                    "{who} shows {shown} for '{key}', but the raw records give no result for it"
                ),
            )
            .file(file)
            .pointer(ptr),
        ),
        Some(e) if !agrees(e, shown, d) => out.push(
            Finding::new(
                "speed.recompute-mismatch",
                Severity::Error,
                format!(
                    "{who} shows {shown} for '{key}', but the raw records give {}",
                    fmt(e, d + 1)
                ),
            )
            .file(file)
            .pointer(ptr)
            .data(json!({"key": key, "shown": shown, "recomputed": e})),
        ),
        _ => {}
    }
}

fn check_window(
    b: &Bundle,
    c: &SpeedContract,
    r: &SpeedResult,
    values: &BTreeMap<String, Option<f64>>,
    out: &mut Out,
) {
    let Some(window) = window(Some(c), r) else {
        return;
    };
    out.ran("speed.step-exceeds-window");
    let file = b.speed_result.as_ref().map_or("", |s| s.path.as_str());
    let has_value = |key: &str| -> bool {
        values.get(key).copied().flatten().is_some()
            || r.values.get(key).copied().flatten().is_some()
            || b.manifest.page.speed.contains_key(key)
    };
    // Rows the tool wrote.
    for (i, f) in r.fits.iter().enumerate() {
        let need = f.depth.saturating_add(f.max_tokens);
        let key = match f.part.as_str() {
            "ctx" => format!("ctx_decode.{}", f.depth),
            "prefill" => format!("prefill.{}", f.depth),
            _ => "l1_decode".to_string(),
        };
        if need > window {
            let (sev, what) = if has_value(&key) {
                (Severity::Error, "yet it has a value")
            } else if f.fits || f.sent {
                (
                    Severity::Warning,
                    "yet the tool judged it to fit or sent it",
                )
            } else {
                (
                    Severity::Info,
                    "it was not sent and has no value, as it should",
                )
            };
            out.push(
                Finding::new(
                    "speed.step-exceeds-window",
                    sev,
                    format!("{} {}: {} prompt + {} reply tokens = {need} > the {window}-token window; {what}", f.part, f.depth, f.depth, f.max_tokens),
                )
                .file(file)
                .pointer(format!("/fits/{i}")),
            );
        } else if !f.fits {
            out.push(
                Finding::new(
                    "speed.step-exceeds-window",
                    Severity::Warning,
                    format!("{} {}: marked as not fitting, but {need} tokens fit the {window}-token window", f.part, f.depth),
                )
                .file(file)
                .pointer(format!("/fits/{i}/fits")),
            );
        }
    }
    // Requests that were sent.
    for (i, q) in r.requests.iter().enumerate() {
        if !matches!(q.step.as_str(), "ctx" | "prefill" | "l1") || q.warmup {
            continue;
        }
        let prompt = q.prompt_tokens.or(q.depth).unwrap_or(0);
        let need = prompt.saturating_add(q.max_tokens);
        if need <= window
            || r.fits.iter().any(|f| {
                f.part == q.step
                    && Some(f.depth) == q.depth
                    && f.depth.saturating_add(f.max_tokens) > window
            })
        {
            continue;
        }
        let key = match q.step.as_str() {
            "ctx" => format!("ctx_decode.{}", q.depth.unwrap_or(0)),
            "prefill" => format!("prefill.{}", q.depth.unwrap_or(0)),
            _ => "l1_decode".to_string(),
        };
        let refused = if q.answered() {
            "answered".to_string()
        } else {
            format!(
                "refused with HTTP {}{}",
                q.status,
                q.error
                    .as_deref()
                    .map(|e| format!(" '{e}'"))
                    .unwrap_or_default()
            )
        };
        let sev = if has_value(&key) {
            Severity::Error
        } else {
            Severity::Warning
        };
        let valued = if sev == Severity::Error {
            "it has a value"
        } else {
            "the step is invalid and has no value"
        };
        out.push(
            Finding::new(
                "speed.step-exceeds-window",
                sev,
                format!(
                    "{}{}: {prompt} prompt + {} reply tokens = {need} > the {window}-token window; sent and {refused}; {valued}",
                    q.step,
                    q.depth.map(|d| format!(" {d}")).unwrap_or_default(),
                    q.max_tokens
                ),
            )
            .file(file)
            .pointer(format!("/requests/{i}")),
        );
    }
}

fn check_guard(c: &SpeedContract, r: &SpeedResult, file: &str, out: &mut Out) {
    let Some(g) = &r.load_guard else {
        return;
    };
    let Some(rule) = c.load_guard.as_ref().or(g.rule.as_ref()) else {
        return;
    };
    out.ran("speed.load-guard");
    for (i, s) in g.steps.iter().enumerate() {
        if s.kept && rule.broken_by(s.longest_run_over) {
            out.push(
                Finding::new(
                    "speed.load-guard",
                    Severity::Error,
                    format!(
                        "step {} try {} was kept although a foreign process stayed above {} % of a core for {} samples in a row (the rule allows {}){}",
                        s.step,
                        s.attempt,
                        rule.threshold_pct,
                        s.longest_run_over,
                        rule.consecutive.saturating_sub(1),
                        s.peak_process.as_deref().map(|p| format!("; peak {} at {} %", p, s.peak_pct.unwrap_or(0.0))).unwrap_or_default()
                    ),
                )
                .file(file)
                .pointer(format!("/load_guard/steps/{i}")),
            );
        }
    }
    let mut kept: BTreeMap<&str, u32> = BTreeMap::new();
    for s in &g.steps {
        if s.kept {
            *kept.entry(s.step.as_str()).or_default() += 1;
        }
    }
    for (step, n) in kept.iter().filter(|(_, n)| **n > 1) {
        out.push(
            Finding::new(
                "speed.load-guard",
                Severity::Error,
                format!("step {step} has {n} tries marked as the one that counts"),
            )
            .file(file)
            .pointer("/load_guard/steps"),
        );
    }
}
