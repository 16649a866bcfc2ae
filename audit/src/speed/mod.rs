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

mod gpu;
mod guard;
mod reference;

pub(crate) use crate::figures::{counted, samples};
pub use crate::figures::{recompute, window};

use crate::bundle::{Bundle, Loaded, Run};
use crate::check::{Check, Emit, Ran};
use crate::records::speed::{SpeedContract, SpeedRequest, SpeedResult};
use crate::report::{Recomputed, Severity};
use crate::startline;
use crate::stats::{agrees, fmt, printed_decimals, written_decimals};
use serde_json::json;
use std::collections::BTreeMap;

/// `speed.load-guard` (a replay lowers it: foreign load during a replay is the comparison's).
pub const LOAD_GUARD: Check<Run> = Check {
    id: "speed.load-guard",
    severity: Severity::Error,
    doc: "A step kept although foreign load broke the guard's rule, or the guard did not watch it.",
    run: load_guard,
};

/// `speed.cached-tokens`.
pub const CACHED_TOKENS: Check<Run> = Check {
    id: "speed.cached-tokens",
    severity: Severity::Error,
    doc: "A speed request was served with cached prompt tokens.",
    run: cached_tokens,
};

/// `speed.token-source`.
pub const TOKEN_SOURCE: Check<Run> = Check {
    id: "speed.token-source",
    severity: Severity::Warning,
    doc: "Reply tokens were counted from chunks or the requested cap, not the server's usage.",
    run: token_source,
};

/// `speed.recompute-mismatch`.
pub const RECOMPUTE_MISMATCH: Check<Run> = Check {
    id: "speed.recompute-mismatch",
    severity: Severity::Error,
    doc: "A speed figure differs from the value recomputed from the per-request records.",
    run: recompute_mismatch,
};

/// `speed.*` checks, in the order they run.
pub const CHECKS: &[Check<Run>] = &[
    CACHED_TOKENS,
    TOKEN_SOURCE,
    Check {
        id: "speed.reply-not-at-limit",
        severity: Severity::Warning,
        doc: "A counted decode reply ended before its max tokens.",
        run: reply_not_at_limit,
    },
    Check {
        id: "speed.failed-request",
        severity: Severity::Error,
        doc: "A counted request of a step with a value was refused or failed.",
        run: failed_request,
    },
    Check {
        id: "speed.level-above-slots",
        severity: Severity::Warning,
        doc: "A concurrency level is larger than the server's slots, so its requests queued.",
        run: level_above_slots,
    },
    Check {
        id: "speed.step-exceeds-window",
        severity: Severity::Error,
        doc:
            "A step's prompt plus reply cap is larger than the window (error when it has a value).",
        run: step_exceeds_window,
    },
    LOAD_GUARD,
    Check {
        id: "speed.machine-unsteady",
        severity: Severity::Warning,
        doc: "The machine's speed reference recorded with the result moved more than 25 % from its median during the recording (the machine ran slower or faster as a whole), or a probe names a step never measured.",
        run: reference::check_machine_steady,
    },
    Check {
        id: "speed.gpu-foreign",
        severity: Severity::Warning,
        doc: "A kept try ran beside a process on the GPU that was not the server's (measure's `gpu` record, read through NVML).",
        run: gpu::check_gpu_foreign,
    },
    Check {
        id: "speed.gpu-throttled",
        severity: Severity::Warning,
        doc: "The GPU's clocks were throttled (a reason other than idle: power cap, thermal or hardware slowdown) during a kept try.",
        run: gpu::check_gpu_throttled,
    },
    RECOMPUTE_MISMATCH,
    Check {
        id: "speed.not-recomputable",
        severity: Severity::Info,
        doc:
            "A figure has no definition rigaudit can recompute it by; it is shown but not checked.",
        run: not_recomputable,
    },
];

/// The speed result, and its contract when the bundle has one.
fn parts(b: &Bundle) -> Option<(&Loaded<SpeedResult>, Option<&SpeedContract>)> {
    let r = b.speed_result.as_ref()?;
    Some((r, b.speed_contract.as_ref().map(|c| &c.value)))
}

/// The speed result and its contract, when the bundle has both.
fn with_contract(b: &Bundle) -> Option<(&Loaded<SpeedResult>, &SpeedContract)> {
    let (r, c) = parts(b)?;
    Some((r, c?))
}

/// ` 'error text'` when a request has one.
fn error_text(q: &SpeedRequest) -> String {
    q.error
        .as_deref()
        .map(|e| format!(" '{e}'"))
        .unwrap_or_default()
}

fn cached_tokens(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, _) = parts(b)?;
    let cached: Vec<(usize, &SpeedRequest)> = rl
        .value
        .requests
        .iter()
        .enumerate()
        .filter(|(_, q)| q.cached_tokens.unwrap_or(0) > 0)
        .collect();
    if let Some((i, q)) = cached.first() {
        e.finding(format!(
            "{} speed requests were served with cached prompt tokens (first: {} {}, {} of {} prompt tokens cached); their prefill and TTFT are not measurements",
            cached.len(),
            q.step,
            q.prompt_id.as_deref().unwrap_or(""),
            q.cached_tokens.unwrap_or(0),
            q.prompt_tokens.map_or("?".into(), |p| p.to_string())
        ))
        .at(&rl.path, format!("/requests/{i}/cached_tokens"))
        .data(json!({"requests": cached.len()}));
    }
    Some(())
}

fn token_source(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, _) = parts(b)?;
    let r = &rl.value;
    let odd: Vec<usize> = r
        .requests
        .iter()
        .enumerate()
        .filter(|(_, q)| q.answered() && q.completion_tokens_source != "usage")
        .map(|(i, _)| i)
        .collect();
    if let Some(i) = odd.first() {
        e.finding(format!(
            "{} requests count their reply tokens from '{}', not the server's usage",
            odd.len(),
            r.requests[*i].completion_tokens_source
        ))
        .at(&rl.path, format!("/requests/{i}/completion_tokens_source"));
    }
    Some(())
}

fn reply_not_at_limit(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, _) = with_contract(b)?;
    for (i, q) in rl.value.requests.iter().enumerate() {
        if q.step != "decode" || q.warmup || !q.answered() {
            continue;
        }
        let n = q.completion_tokens.unwrap_or(0);
        if n < q.max_tokens || q.finish_reason.as_deref() != Some("length") {
            e.finding(format!(
                "decode {} run {}: the reply has {n} of {} tokens (finish reason {}); a short reply changes the rate",
                q.prompt_id.as_deref().unwrap_or("?"),
                q.run.unwrap_or(0),
                q.max_tokens,
                q.finish_reason.as_deref().unwrap_or("none")
            ))
            .at(&rl.path, format!("/requests/{i}"));
        }
    }
    Some(())
}

fn failed_request(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, _) = with_contract(b)?;
    for (i, q) in rl.value.requests.iter().enumerate() {
        if q.warmup || q.answered() || !matches!(q.step.as_str(), "decode" | "prefill" | "conc") {
            continue;
        }
        e.finding(format!(
            "{} request {} failed with HTTP {}{}; its step's value leaves it out",
            q.step,
            i,
            q.status,
            error_text(q)
        ))
        .at(&rl.path, format!("/requests/{i}/status"));
    }
    Some(())
}

fn level_above_slots(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, c) = with_contract(b)?;
    let cc = c.conc.as_ref()?;
    let slots = startline::parse(&rl.value.server.start_lines)
        .slots
        .unwrap_or(c.server.slots as u64);
    let file = b.speed_contract.as_ref().map_or(&rl.path, |s| &s.path);
    for l in cc.levels.iter().filter(|l| **l as u64 > slots) {
        e.finding(format!("{l} requests at once is more than the server's {slots} slots: some of them queued, so the level measures the queue too"))
            .at(file, "/conc/levels");
    }
    Some(())
}

/// The figure a windowed step gives (`ctx_decode.<depth>`, `prefill.<depth>`, `l1_decode`).
fn step_key(part: &str, depth: u64) -> String {
    match part {
        "ctx" => format!("ctx_decode.{depth}"),
        "prefill" => format!("prefill.{depth}"),
        _ => "l1_decode".to_string(),
    }
}

/// Whether a figure has a value: recomputed, in the speed result or on the page.
fn has_value(
    b: &Bundle,
    values: &BTreeMap<String, Option<f64>>,
    r: &SpeedResult,
    key: &str,
) -> bool {
    values.get(key).copied().flatten().is_some()
        || r.values.get(key).copied().flatten().is_some()
        || b.manifest.page.speed.contains_key(key)
}

fn step_exceeds_window(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, c) = with_contract(b)?;
    let r = &rl.value;
    let window = window(Some(c), r)?;
    let values = recompute(c, r);
    let w = Window {
        b,
        values: &values,
        r,
        window,
        file: &rl.path,
    };
    fit_rows_exceeding(w, e);
    requests_exceeding(w, e);
    Some(())
}

/// What both halves of `speed.step-exceeds-window` read: the bundle, the values recomputed from
/// the speed result `r`, its file, and the server's window in tokens.
#[derive(Clone, Copy)]
struct Window<'a> {
    b: &'a Bundle,
    values: &'a BTreeMap<String, Option<f64>>,
    r: &'a SpeedResult,
    window: u64,
    file: &'a str,
}

/// The fit rows the tool wrote that do not fit the window, or are marked wrongly.
fn fit_rows_exceeding(w: Window, e: &mut Emit) {
    let (b, values, r, window, file) = (w.b, w.values, w.r, w.window, w.file);
    for (i, f) in r.fits.iter().enumerate() {
        let need = f.depth.saturating_add(f.max_tokens);
        if need > window {
            let (sev, what) = if has_value(b, values, r, &step_key(&f.part, f.depth)) {
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
            e.at_severity(
                sev,
                format!("{} {}: {} prompt + {} reply tokens = {need} > the {window}-token window; {what}", f.part, f.depth, f.depth, f.max_tokens),
            )
            .at(file, format!("/fits/{i}"));
        } else if !f.fits {
            e.warning(format!(
                "{} {}: marked as not fitting, but {need} tokens fit the {window}-token window",
                f.part, f.depth
            ))
            .at(file, format!("/fits/{i}/fits"));
        }
    }
}

/// Requests sent for a step that cannot fit the window (and that no fit row already names).
fn requests_exceeding(w: Window, e: &mut Emit) {
    let (b, values, r, window, file) = (w.b, w.values, w.r, w.window, w.file);
    for (i, q) in r.requests.iter().enumerate() {
        if !matches!(q.step.as_str(), "ctx" | "prefill" | "l1") || q.warmup {
            continue;
        }
        let prompt = q.prompt_tokens.or(q.depth).unwrap_or(0);
        let need = prompt.saturating_add(q.max_tokens);
        let named = r.fits.iter().any(|f| {
            f.part == q.step
                && Some(f.depth) == q.depth
                && f.depth.saturating_add(f.max_tokens) > window
        });
        if need <= window || named {
            continue;
        }
        let refused = if q.answered() {
            "answered".to_string()
        } else {
            format!("refused with HTTP {}{}", q.status, error_text(q))
        };
        let (sev, valued) = if has_value(b, values, r, &step_key(&q.step, q.depth.unwrap_or(0))) {
            (Severity::Error, "it has a value")
        } else {
            (Severity::Warning, "the step is invalid and has no value")
        };
        e.at_severity(
            sev,
            format!(
                "{}{}: {prompt} prompt + {} reply tokens = {need} > the {window}-token window; sent and {refused}; {valued}",
                q.step,
                q.depth.map(|d| format!(" {d}")).unwrap_or_default(),
                q.max_tokens
            ),
        )
        .at(file, format!("/requests/{i}"));
    }
}

/// `speed.load-guard`: steps kept under load, a contract's rule with no guard summary, counted
/// steps the guard did not watch (the last two in consistency/guard.rs).
fn load_guard(b: &Bundle, e: &mut Emit) -> Ran {
    let kept = kept_under_load(b, e);
    let present = guard::check_guard_present(b, e);
    let coverage = guard::check_guard_coverage(b, e);
    kept.or(present).or(coverage)
}

/// Steps kept although the guard's rule was broken.
fn kept_under_load(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, c) = with_contract(b)?;
    let (r, file) = (&rl.value, &rl.path);
    let g = r.load_guard.as_ref()?;
    let rule = c.load_guard.as_ref().or(g.rule.as_ref())?;
    for (i, s) in g.steps.iter().enumerate() {
        if s.kept && rule.broken_by(s.longest_run_over) {
            e.finding(format!(
                "step {} try {} was kept although a foreign process stayed above {} % of a core for {} samples in a row (the rule allows {}){}",
                s.step,
                s.attempt,
                rule.threshold_pct,
                s.longest_run_over,
                rule.consecutive.saturating_sub(1),
                s.peak_process.as_deref().map(|p| format!("; peak {} at {} %", p, s.peak_pct.unwrap_or(0.0))).unwrap_or_default()
            ))
            .at(file, format!("/load_guard/steps/{i}"));
        }
    }
    let mut kept: BTreeMap<&str, u32> = BTreeMap::new();
    for s in g.steps.iter().filter(|s| s.kept) {
        *kept.entry(s.step.as_str()).or_default() += 1;
    }
    for (step, n) in kept.iter().filter(|(_, n)| **n > 1) {
        e.finding(format!(
            "step {step} has {n} tries marked as the one that counts"
        ))
        .at(file, "/load_guard/steps");
    }
    Some(())
}

/// The keys the speed result's `values` or the page show, sorted.
fn shown_keys(b: &Bundle, r: &SpeedResult) -> Vec<String> {
    let mut keys: Vec<String> = r
        .values
        .keys()
        .chain(b.manifest.page.speed.keys())
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn recompute_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, c) = with_contract(b)?;
    let r = &rl.value;
    let values = recompute(c, r);
    for key in shown_keys(b, r) {
        let Some(exact) = values.get(&key).copied() else {
            continue;
        };
        let shown_file = r.values.get(&key).copied().flatten();
        let shown_page = b.manifest.page.speed.get(&key);
        if let Some(x) = shown_file {
            let shown = Shown {
                value: x,
                decimals: written_decimals(x),
                file: &rl.path,
                pointer: format!("/values/{key}"),
                who: "the speed result",
            };
            compare(&key, exact, &shown, e);
        }
        if let Some(s) = shown_page {
            let pointer = format!("/page/speed/{key}");
            match s.parse::<f64>() {
                Ok(x) => {
                    let shown = Shown {
                        value: x,
                        decimals: printed_decimals(s),
                        file: "bundle.json",
                        pointer,
                        who: "the page",
                    };
                    compare(&key, exact, &shown, e);
                }
                Err(_) => {
                    e.finding(format!("the page's '{key}' is not a number: '{s}'"))
                        .at("bundle.json", pointer);
                }
            }
        }
        e.recomputed(Recomputed::new(key, exact, shown_file, shown_page.cloned()));
    }
    Some(())
}

fn not_recomputable(b: &Bundle, e: &mut Emit) -> Ran {
    let (rl, c) = with_contract(b)?;
    let r = &rl.value;
    let values = recompute(c, r);
    for key in shown_keys(b, r)
        .into_iter()
        .filter(|k| !values.contains_key(k))
    {
        let shown = b
            .manifest
            .page
            .speed
            .get(&key)
            .cloned()
            .or(r.values.get(&key).copied().flatten().map(|x| x.to_string()))
            .unwrap_or_else(|| "no value".into());
        e.finding(format!(
            "'{key}' ({shown}) has no definition rigaudit can recompute; it is not checked"
        ))
        .at(&rl.path, format!("/values/{key}"));
    }
    Some(())
}

/// A figure as a file or the page shows it.
struct Shown<'a> {
    value: f64,
    decimals: usize,
    file: &'a str,
    pointer: String,
    who: &'a str,
}

fn compare(key: &str, exact: Option<f64>, s: &Shown, e: &mut Emit) {
    let (who, shown) = (s.who, s.value);
    match exact {
        None => {
            e.finding(format!(
                "{who} shows {shown} for '{key}', but the raw records give no result for it"
            ))
            .at(s.file, &s.pointer);
        }
        Some(x) if !agrees(x, shown, s.decimals) => {
            e.finding(format!(
                "{who} shows {shown} for '{key}', but the raw records give {}",
                fmt(x, s.decimals + 1)
            ))
            .at(s.file, &s.pointer)
            .data(json!({"key": key, "shown": shown, "recomputed": x}));
        }
        _ => {}
    }
}

crate::consistency::across_files! { "speed":
    RUNS_MISMATCH: "speed.runs-mismatch", Error, counts::check_speed_runs, "Counted runs, warm-ups, rounds or requests per round differ from what the speed contract states, or a run's repeats break its part's min_try_ms (repeats it did not ask for, out of order, past the time or short of it).";
    PROMPT_SIZE_MISMATCH: "speed.prompt-size-mismatch", Error, counts::check_prompt_sizes, "A prefill or context request's prompt is not the size its step names (tolerance max(2 %, 8 tokens)).";
    ANSWERED_BEYOND_WINDOW: "speed.answered-beyond-window", Error, window::check_answered_speed, "A speed request recorded as answered needs more tokens (prompt + reply cap) than the server's window.";
    IMPOSSIBLE_RECORD: "speed.impossible-record", Error, impossible::check_speed_records, "A speed record cannot be: times out of order, more tokens than the cap, accepted above drafted, a rate or percentage out of range.";
}

#[cfg(test)]
mod tests;
