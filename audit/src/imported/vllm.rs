//! vLLM's serving-benchmark result (`vllm bench serve --save-result`, before it
//! `benchmarks/benchmark_serving.py`): one JSON object with the run's setup, its aggregates and,
//! with the per-request lists (`--save-detailed` from 0.9.1, always before), per request in order
//! `input_lens`, `output_lens`, `ttfts`, `itls`, `generated_texts`, `errors` and, in later
//! versions, `start_times` (0.16), `latencies` and `queue_times` (0.30).
//!
//! The definitions are vLLM's own code at each version, tabled with file and line in
//! `docs/formats/vllm.md` (rows V1-V17, cited by each check below). In short:
//! - units: per-request times in seconds; aggregates `*_ms` in milliseconds; `duration` in s;
//!   throughputs per second; lengths in tokens (V1);
//! - which requests: every aggregate is over the successes (no error): `completed`,
//!   `total_input_tokens`, each mean/median/std (numpy, ddof 0)/percentile (numpy's linear rule)
//!   of TTFT, TPOT (`(latency - ttft) / (output_len - 1)`, requests with more than one output
//!   token), ITL (every gap of every success) and E2EL; `total_output_tokens` adds every
//!   `output_lens` (0 for failures); throughputs divide by `duration`; an empty list counts as
//!   `[0]` (V2, V8, V9);
//! - what a success is depends on the version (V2, V3): to 0.6.3 any HTTP 200 stream that ended
//!   with `[DONE]` (one with no text: TTFT 0, no token); 0.6.4 to 0.6.6 one with a chunk of text;
//!   from 0.7 one with a chunk with `choices`, its text possibly empty (TTFT at that chunk);
//! - to 0.6.3 the file's `mean_e2el_ms` is the median and `median_e2el_ms` the mean (V10);
//! - `max_concurrent_requests` and `max_output_tokens_per_s` (0.11+) count whole-second buckets
//!   from the first success's start: a request counts in every second from its start's to its
//!   end's, so the figure can exceed `max_concurrency` (V13).

use super::{
    compare, impossible, not_checked, percentile_linear, row, std_population, Row, Spread,
};
use super::{
    FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE,
    PERCENTILE_FEW_SAMPLES, TTFT_EMPTY_CHUNK,
};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

mod recompute;
use recompute::*;

/// The result file, typed.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Its name (findings point into it).
    pub file: String,
    /// Its line, for one result of a JSON Lines file (`--append-result`).
    pub line: Option<usize>,
    /// Whether it holds the per-request lists (`--save-detailed`); without them only its
    /// aggregates are checked, against each other.
    pub detailed: bool,
    /// `duration`, s (not saved by every writer).
    pub duration: Option<f64>,
    /// `ttfts`, s.
    pub ttfts: Vec<f64>,
    /// `itls`, s, per request.
    pub itls: Vec<Vec<f64>>,
    /// `input_lens`.
    pub input_lens: Vec<f64>,
    /// `output_lens`.
    pub output_lens: Vec<f64>,
    /// `latencies`, s (absent in files of older vLLM).
    pub latencies: Option<Vec<f64>>,
    /// `start_times`, s.
    pub start_times: Option<Vec<f64>>,
    /// `queue_times`, s.
    pub queue_times: Option<Vec<f64>>,
    /// `generated_texts`.
    pub texts: Option<Vec<String>>,
    /// `errors` ("" for a success).
    pub errors: Vec<String>,
    /// Every top-level number the file prints, by key.
    pub printed: BTreeMap<String, f64>,
    /// Every top-level key of the result (which keys a version writes tells its writer).
    pub keys: BTreeSet<String>,
    /// `backend` (the client's request function: `vllm`, `openai`, `openai-chat`, ...).
    pub backend: Option<String>,
    /// Where the per-request values stand: in vLLM's lists (`/ttfts/3`), or one object a request
    /// under `/results` (`/results/3/ttft`), as the ML.ENERGY benchmark, built on vLLM's client,
    /// writes them.
    pub per_request_objects: bool,
}

/// Which writer the result's keys show (docs/formats/vllm.md row V1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// vLLM's `benchmark_serving.py` to 0.6.3.post1: neither `burstiness` nor `max_concurrency`
    /// (both written from 0.6.4). A 200 reply with no text is a success at TTFT 0 (row V3), and
    /// `mean_e2el_ms`/`median_e2el_ms` are each the other (row V10).
    Early,
    /// vLLM 0.6.4 and later (and the forks of that code).
    Later,
    /// SGLang's `bench_serving` (`*_e2e_latency_ms`, `total_output_tokens_retokenized`): the same
    /// lists and rules for TTFT, ITL, counts and throughputs; its E2E latency and TPOT need the
    /// latencies it does not save (row V17).
    Sglang,
}

/// The backends whose request functions stream (a success has a TTFT above 0): all of vLLM's
/// but the non-streaming `deepspeed-mii` (its TTFT is 0 by design) and the pooling ones.
const STREAMING: &[&str] = &[
    "vllm",
    "openai",
    "openai-chat",
    "openai-audio",
    "openai-responses",
    "tgi",
    "lmdeploy",
    "tensorrt-llm",
    "scalellm",
    "sglang",
];

impl Run {
    /// Whether request `i` succeeded (no error), as vLLM's aggregates take it.
    pub fn ok(&self, i: usize) -> bool {
        self.errors.get(i).is_none_or(|e| e.is_empty())
    }

    /// A pointer into the result: `/key`, or `line N /key` for a line of a JSON Lines file.
    pub fn at(&self, pointer: impl AsRef<str>) -> String {
        match self.line {
            Some(n) => format!("line {n} {}", pointer.as_ref()),
            None => pointer.as_ref().to_string(),
        }
    }

    /// A pointer to request values: `list` is vLLM's list name (`ttfts`), `idx` one index or
    /// several joined by commas.
    pub fn request_at(&self, list: &str, idx: &str) -> String {
        if !self.per_request_objects {
            return self.at(format!("/{list}/{idx}"));
        }
        let field = match list {
            "ttfts" => "ttft",
            "itls" => "itl",
            "input_lens" => "input_len",
            "output_lens" => "output_len",
            "latencies" => "latency",
            "errors" => "error",
            "generated_texts" => "output_text",
            other => other,
        };
        if idx.is_empty() {
            return self.at(format!("/results/*/{field}"));
        }
        self.at(format!("/results/{idx}/{field}"))
    }

    fn ok_idx(&self) -> Vec<usize> {
        (0..self.ttfts.len()).filter(|i| self.ok(*i)).collect()
    }

    /// The writer its keys show (row V1).
    pub fn writer(&self) -> Writer {
        let has = |k: &str| self.keys.contains(k);
        if has("total_output_tokens_retokenized")
            || self.keys.iter().any(|k| k.ends_with("_e2e_latency_ms"))
        {
            Writer::Sglang
        } else if !has("burstiness") && !has("max_concurrency") {
            Writer::Early
        } else {
            Writer::Later
        }
    }

    /// Whether its backend streams (a success then has a TTFT above 0); unknown backends do not
    /// count as streaming.
    fn streams(&self) -> bool {
        self.backend
            .as_deref()
            .is_some_and(|b| STREAMING.contains(&b))
    }
}

/// The per-request values (ms) behind a distribution, over the requests `idx`.
pub fn values(r: &Run, metric: &str, idx: &[usize]) -> Option<Vec<f64>> {
    let lat = |i: usize| r.latencies.as_ref().map(|l| l[i]);
    let q = |i: usize| r.queue_times.as_ref().map(|l| l[i]);
    let mut v = Vec::new();
    for &i in idx {
        match metric {
            "ttft" => v.push(r.ttfts[i]),
            "itl" => v.extend(&r.itls[i]),
            "e2el" => v.push(lat(i)?),
            "client_queue_time" => v.push(q(i)?),
            "e2el_including_client_queue" => v.push(lat(i)? + q(i)?),
            "tpot" if r.output_lens[i] > 1.0 => {
                v.push((lat(i)? - r.ttfts[i]) / (r.output_lens[i] - 1.0))
            }
            "tpot" => {}
            _ => return None,
        }
    }
    Some(v.iter().map(|x| x * 1000.0).collect())
}

/// One statistic as numpy gives it (an empty list as `[0]`).
fn stat(v: &[f64], name: &str) -> Option<f64> {
    let mut s: Vec<f64> = if v.is_empty() { vec![0.0] } else { v.to_vec() };
    s.sort_by(f64::total_cmp);
    match name {
        "mean" => Some(s.iter().sum::<f64>() / s.len() as f64),
        "std" => std_population(&s),
        "median" => percentile_linear(&s, 50.0),
        p => p
            .strip_prefix('p')
            .and_then(|q| q.parse::<f64>().ok())
            .and_then(|q| percentile_linear(&s, q)),
    }
}

/// Splits `p99_ttft_ms` into (`p99`, `ttft`).
fn split_key(k: &str) -> Option<(&str, &str)> {
    let body = k.strip_suffix("_ms")?;
    let (s, m) = body.split_once('_')?;
    let stat_ok = matches!(s, "mean" | "median" | "std")
        || s.strip_prefix('p')
            .is_some_and(|q| q.parse::<f64>().is_ok());
    stat_ok.then_some((s, m))
}

/// Every vLLM check, in the order they run.
pub const CHECKS: &[Row<Run>] = &[
    row(FAILED_HIDDEN, failed_hidden),
    row(speed::RECOMPUTE_MISMATCH.about(), recompute),
    row(FAILED_REQUESTS, failed_requests),
    row(FAILED_AS_ZERO, failed_as_zero),
    row(TTFT_EMPTY_CHUNK, textless_successes),
    row(NOT_RECOMPUTABLE, not_recomputable),
    row(IMPOSSIBLE_AGGREGATE, impossible_aggregates),
    row(speed::TOKEN_SOURCE.about(), token_counts),
    row(PERCENTILE_FEW_SAMPLES, percentile_few_samples),
];

/// `import.percentile-few-samples` (docs/formats/vllm.md row V11): each printed percentile (`p99_ttft_ms`) against the samples
/// it was taken from: the per-request values with the lists, else `completed` for a
/// distribution of one value a request (ITL, one value a gap, has no count without the lists).
fn percentile_few_samples(r: &Run, emit: &mut Emit) -> Ran {
    let completed = r.printed.get("completed").copied();
    let mut ran = false;
    for (key, _) in r.printed.iter() {
        let Some((stat, metric)) = split_key(key) else {
            continue;
        };
        let Some(q) = stat.strip_prefix('p').and_then(|q| q.parse::<f64>().ok()) else {
            continue;
        };
        let n = if r.detailed {
            values(r, metric, &r.ok_idx()).map(|v| v.len())
        } else {
            completed.filter(|_| metric != "itl").map(|c| c as usize)
        };
        let Some(n) = n else { continue };
        ran = true;
        if let Some(why) = crate::decide::percentile::too_few_samples(q / 100.0, n) {
            emit.finding(format!("{key} is a {why}"))
                .at(&r.file, r.at(format!("/{key}")))
                .data(json!({"key": key, "samples": n}));
        }
    }
    ran.then_some(())
}

/// `import.failed-hidden` (docs/formats/vllm.md row V8): a printed `failed` (0.11.1 on) below the
/// requests with an error. Before 0.11.1 vLLM writes no `failed`: its failures are named by
/// `import.failed-requests`, not hidden.
fn failed_hidden(r: &Run, emit: &mut Emit) -> Ran {
    let shown_failed = r.printed.get("failed").copied();
    let (true, Some(shown)) = (r.detailed, shown_failed) else {
        return None;
    };
    let n = r.ttfts.len() as f64;
    let ok = r.ok_idx().len() as f64;
    if n - ok > shown {
        emit.finding(format!("{} of the {n} requests carry an error but `failed` says {shown}: vLLM counts every request without success there (serve.py calculate_metrics), so the file was changed", n - ok))
        .at(&r.file, r.at("/failed"))
        .data(json!({"errors": n - ok, "printed": shown}));
    }
    Some(())
}

/// `speed.recompute-mismatch` (docs/formats/vllm.md rows V8, V9, V13, V14): `completed`, every distribution (but one printed over every
/// request, failed ones at 0: `import.failed-as-zero`), the totals and throughputs, and the peaks.
fn recompute(r: &Run, emit: &mut Emit) -> Ran {
    if !r.detailed {
        return aggregates(r, emit).then_some(());
    }
    let mut compared = false;
    if let Some(c) = r.printed.get("completed") {
        let ok = r.ok_idx().len() as f64;
        compare(
            emit,
            (&r.file, &r.at("/completed")),
            "vllm.completed",
            ok,
            *c,
        );
        compared = true;
    }
    compared |= distributions(r, emit);
    compared |= totals(r, emit);
    compared |= peaks_compared(r, emit);
    compared.then_some(())
}

/// `import.failed-requests` (docs/formats/vllm.md row V2): the requests that failed, with their
/// errors' last lines.
fn failed_requests(r: &Run, emit: &mut Emit) -> Ran {
    if !r.detailed {
        return failed_by_count(r, emit);
    }
    let failed: Vec<usize> = (0..r.ttfts.len()).filter(|i| !r.ok(*i)).collect();
    if failed.is_empty() {
        return Some(());
    }
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for &i in &failed {
        let last = r.errors[i].trim().lines().last().unwrap_or("").trim();
        *why.entry(last.chars().take(160).collect()).or_default() += 1;
    }
    let list: Vec<String> = why.iter().map(|(k, n)| format!("{n} x {k}")).collect();
    let idx: Vec<String> = failed.iter().map(|i| i.to_string()).collect();
    emit.finding(format!(
        "{} of {} requests failed ({}); vLLM's figures are over the other {}, its throughputs over the whole run's duration",
        failed.len(),
        r.ttfts.len(),
        list.join("; "),
        r.ttfts.len() - failed.len()
    ))
    .at(&r.file, r.request_at("errors", &idx.join(",")))
    .data(json!({"failed": failed.len(), "total": r.ttfts.len(), "requests": failed}));
    Some(())
}

/// [`failed_requests`] of a file without the per-request lists: from its printed `completed`
/// and `failed` (or `num_prompts`), the errors themselves not in the file. Published: three
/// `llm-benchmaq` runs print `completed 0, failed 100` (no server was up).
fn failed_by_count(r: &Run, emit: &mut Emit) -> Ran {
    let completed = r.printed.get("completed").copied()?;
    let failed = match r.printed.get("failed") {
        Some(f) => *f,
        None => r.printed.get("num_prompts").copied()? - completed,
    };
    if failed <= 0.0 {
        return Some(());
    }
    let total = completed + failed;
    let over = if completed == 0.0 {
        "no request completed: every latency and throughput figure is over none".to_string()
    } else {
        format!("vLLM's figures are over the other {completed}")
    };
    emit.finding(format!(
        "{failed} of {total} requests failed (the file holds no per-request lists, so not their errors); {over}"
    ))
    .at(&r.file, r.at("/completed"))
    .data(json!({"failed": failed, "total": total, "completed": completed}));
    Some(())
}

/// `import.failed-as-zero` (docs/formats/vllm.md rows V2, V3, V8): a success with no first token
/// where the writer's code cannot record one (completions from 0.6.4, chat from 0.30; where
/// vLLM itself records a reply with no text so, named at warning), a failed
/// request whose output tokens are counted (vLLM writes 0 for every failure), and a printed
/// distribution that is the value over every request with the failed ones at 0.
fn failed_as_zero(r: &Run, emit: &mut Emit) -> Ran {
    if !r.detailed {
        return None;
    }
    let no_ttft: Vec<usize> = r
        .ok_idx()
        .into_iter()
        .filter(|&i| r.ttfts[i] <= 0.0)
        .collect();
    match zero_ttft(r) {
        _ if no_ttft.is_empty() => {}
        ZeroTtft::Vllms(how) => textless_at_zero(r, emit, &no_ttft, how),
        ZeroTtft::Impossible => {
            for &i in &no_ttft {
                emit.finding(format!("request {i} has no error but no first token (TTFT {}): vLLM's completions request function fails a reply without a chunk from 0.6.4 (its chat one from 0.30: \"Never received a valid chunk to calculate TTFT\"), so this success is not as vLLM recorded it", r.ttfts[i]))
                    .at(&r.file, r.request_at("ttfts", &i.to_string()))
                    .data(json!({"ttft": r.ttfts[i], "output_len": r.output_lens[i], "error": r.errors.get(i)}));
            }
        }
        ZeroTtft::Unknown => {}
    }
    for i in (0..r.ttfts.len()).filter(|&i| !r.ok(i) && r.output_lens[i] > 0.0) {
        emit.finding(format!("request {i} failed, yet its output tokens ({}) are added to total_output_tokens and the throughputs: vLLM writes 0 for a failed request", r.output_lens[i]))
            .at(&r.file, r.request_at("output_lens", &i.to_string()))
            .data(json!({"output_len": r.output_lens[i], "error": r.errors.get(i)}));
    }
    let (ok, all) = (r.ok_idx().len(), r.ttfts.len());
    for (k, shown, exact) in printed_distributions(r) {
        if let Some(Judged::OverAll(exact)) = exact.map(|x| judge(r, k, x, *shown)) {
            emit.finding(format!("{k} is printed as {shown}, its value over all {all} requests with the failed ones at 0; over the {ok} successes it is {exact}"))
                .at(&r.file, r.at(format!("/{k}")))
                .data(json!({"printed": shown, "recomputed": exact}));
        }
    }
    Some(())
}

/// What a success with TTFT 0 is under the file's writer and backend (rows V2, V3).
enum ZeroTtft {
    /// vLLM's own code records a reply with no text so (how, for the warning).
    Vllms(&'static str),
    /// vLLM's code fails such a reply (completions from 0.6.4; chat and audio from 0.30, when
    /// `latencies` came in).
    Impossible,
    /// A non-streaming or unknown backend, or SGLang: nothing is said.
    Unknown,
}

fn zero_ttft(r: &Run) -> ZeroTtft {
    let backend = r.backend.as_deref().unwrap_or("");
    match r.writer() {
        Writer::Early if r.streams() => ZeroTtft::Vllms("vLLM to 0.6.3 records a 200 reply whose stream carried no text (an end-of-sequence token first, or no token) as a success with TTFT 0 (backend_request_func.py:266-291 at 0.6.2)"),
        Writer::Later if matches!(backend, "vllm" | "openai") => ZeroTtft::Impossible,
        Writer::Later if r.streams() && r.keys.contains("latencies") => ZeroTtft::Impossible,
        Writer::Later if r.streams() => ZeroTtft::Vllms("vLLM's chat and audio request functions before 0.30 record a 200 reply with no content chunk as a success with TTFT 0 (backend_request_func.py:354-391 at 0.6.6)"),
        _ => ZeroTtft::Unknown,
    }
}

/// The successes `idx` with TTFT 0 that vLLM's own code records so (`how`), named at warning:
/// vLLM's own figures hold them.
fn textless_at_zero(r: &Run, emit: &mut Emit, idx: &[usize], how: &str) {
    let list: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    emit.warning(format!(
        "{} of the {} successes have TTFT 0 and no text: {how}, so completed, the throughputs and every TTFT figure (at 0 s) include them",
        idx.len(),
        r.ok_idx().len()
    ))
    .at(&r.file, r.request_at("ttfts", &list.join(",")))
    .data(json!({"requests": idx}));
}

/// `import.ttft-empty-chunk` (docs/formats/vllm.md rows V3, V6): successes with a TTFT but no
/// text. vLLM from 0.7 takes the first streamed chunk with `choices` as the first token even when
/// its text is empty (a special token, or the finish chunk), and counts the reply a success; its
/// TTFT is the time to that textless chunk and its output tokens the server's count (or the
/// tokenizer's count of no text: 0). Named at warning, as vLLM computed it.
fn textless_successes(r: &Run, emit: &mut Emit) -> Ran {
    let texts = r
        .texts
        .as_ref()
        .filter(|_| r.detailed && r.writer() == Writer::Later)?;
    let idx: Vec<usize> = r
        .ok_idx()
        .into_iter()
        .filter(|&i| r.ttfts[i] > 0.0 && texts.get(i).is_some_and(|t| t.is_empty()))
        .collect();
    if idx.is_empty() {
        return Some(());
    }
    let tokens: f64 = idx.iter().map(|&i| r.output_lens[i]).sum();
    let list: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    emit.finding(format!(
        "{} of the {} successes carry no text: vLLM from 0.7 takes the first streamed chunk with choices as the first token even when its text is empty, and counts such a reply as a success; their TTFT is the time to that textless chunk, and they add {tokens} output tokens",
        idx.len(),
        r.ok_idx().len()
    ))
    .at(&r.file, r.request_at("generated_texts", &list.join(",")))
    .data(json!({"requests": idx, "output_tokens": tokens}));
    Some(())
}

/// `import.not-recomputable` (docs/formats/vllm.md rows V9-V15): printed figures the file's
/// records cannot give (goodput: its SLOs are not saved; TPOT and E2EL without `latencies`, before
/// 0.30; the peaks without `start_times`, before 0.16; an unknown metric), and, to 0.6.3, the
/// E2EL mean and median written under each other's names.
fn not_recomputable(r: &Run, emit: &mut Emit) -> Ran {
    if r.writer() == Writer::Early && r.printed.contains_key("median_e2el_ms") {
        emit.finding("mean_e2el_ms holds the median end-to-end latency and median_e2el_ms the mean: vLLM to 0.6.3 computes each under the other's name (benchmark_serving.py:376-378 at 0.6.2, fixed in 0.6.4); neither is recomputed (no latencies are saved)")
            .at(&r.file, r.at("/median_e2el_ms"))
            .data(json!({"writer": "vllm<=0.6.3"}));
    }
    if !r.detailed {
        let compared = aggregates_compared(r);
        let keys: Vec<&str> = r
            .printed
            .keys()
            .filter(|k| is_figure(k) && !compared.contains(&k.as_str()))
            .map(String::as_str)
            .collect();
        emit.finding(format!("{} printed figures are not recomputed: the file holds no per-request lists (saved without --save-detailed, or by a writer that keeps only aggregates); its throughputs are checked against its totals", keys.len()))
            .file(&r.file)
            .data(json!({ "keys": keys, "records": false }));
        return Some(());
    }
    let mut keys: Vec<String> = printed_distributions(r)
        .into_iter()
        .filter(|(_, _, exact)| exact.is_none())
        .map(|(k, _, _)| k.clone())
        .collect();
    keys.extend(peak_values(r).err().unwrap_or_default());
    // Goodput's SLOs are not saved (row V12); rtfx is 0 but for audio input.
    for k in ["request_goodput", "request_goodput:", "rtfx"] {
        if r.printed.get(k).is_some_and(|x| *x != 0.0 || k != "rtfx") {
            keys.push(k.to_string());
        }
    }
    let why = "the per-request lists do not give them";
    not_checked(emit, (&r.file, "keys"), ("printed figures", why), &keys)
}

/// `import.impossible-aggregate` (docs/formats/vllm.md rows V8-V13): figures of one run that
/// cannot all hold: a metric's median and percentiles out of order or a negative spread; more
/// completed and failed than sent; a goodput above the throughput; and, from the per-request
/// lists, more requests in flight at once than the client's own cap.
fn impossible_aggregates(r: &Run, emit: &mut Emit) -> Ran {
    let mut by_metric: BTreeMap<&str, Spread> = BTreeMap::new();
    for (k, v) in &r.printed {
        let Some((s, m)) = split_key(k) else { continue };
        // To 0.6.3 `median_e2el_ms` is the mean (row V10): not a percentile.
        if r.writer() == Writer::Early && k == "median_e2el_ms" {
            continue;
        }
        let q = match s {
            "median" => 50.0,
            "std" if *v < 0.0 => {
                emit.finding(format!("{k} is {v}: a spread is never negative"))
                    .at(&r.file, r.at(format!("/{k}")));
                continue;
            }
            p => match p.strip_prefix('p').and_then(|q| q.parse::<f64>().ok()) {
                Some(q) => q,
                None => continue,
            },
        };
        let spread = by_metric.entry(m).or_default();
        spread.percentiles.push((q, k.clone(), *v));
    }
    for (m, spread) in &by_metric {
        if let Some((msg, figure)) = impossible(&format!("{m} (ms)"), spread) {
            emit.finding(msg).at(&r.file, r.at(format!("/{figure}")));
        }
    }
    let get = |k: &str| r.printed.get(k).copied();
    if let (Some(c), Some(f), Some(n)) = (get("completed"), get("failed"), get("num_prompts")) {
        if c + f > n {
            emit.finding(format!("completed ({c}) and failed ({f}) add to more than the {n} requests sent (num_prompts)"))
                .at(&r.file, r.at("/completed"));
        }
    }
    over_cap(r, emit);
    goodput_over_throughput(r, emit);
    Some(())
}

/// A goodput above the request throughput (row V12): vLLM counts the good requests among the
/// successes (`good_completed` <= `completed`), both over the same duration.
fn goodput_over_throughput(r: &Run, emit: &mut Emit) {
    let get = |k: &str| r.printed.get(k).copied();
    let good = get("request_goodput").or(get("request_goodput:"));
    if let (Some(g), Some(t)) = (good, get("request_throughput")) {
        if g > t * (1.0 + 1e-9) + 1e-12 {
            emit.finding(format!("the request goodput ({g}) is above the request throughput ({t}): vLLM counts good requests among the successes, over the same duration"))
                .at(&r.file, r.at("/request_throughput"));
        }
    }
}

/// More successes in flight at once (from their start times and latencies) than the client's
/// `max_concurrency`.
fn over_cap(r: &Run, emit: &mut Emit) {
    let (Some(cap), Some(st), Some(lat)) = (get_cap(r), &r.start_times, &r.latencies) else {
        return;
    };
    let ok = r.ok_idx();
    let Some((peak, _, _)) = peaks(r, &ok, st, lat) else {
        return;
    };
    if peak > cap {
        emit.finding(format!("{peak} requests were in flight at once (from their start times and latencies), above the client's own cap max_concurrency = {cap}"))
            .at(&r.file, r.at("/start_times"))
            .data(json!({"peak": peak, "max_concurrency": cap}));
    }
}

fn get_cap(r: &Run) -> Option<f64> {
    r.printed
        .get("max_concurrency")
        .copied()
        .filter(|c| *c > 0.0)
}

/// `speed.token-source` (warning; docs/formats/vllm.md rows V4, V6): a mean ITL well above the
/// mean TPOT (the gaps were timed per streamed chunk of several tokens, not per token: vLLM's ITL
/// assumes one token a chunk), and successes with text but no output token.
fn token_counts(r: &Run, emit: &mut Emit) -> Ran {
    let ran = uncounted_replies(r, emit);
    let (Some(itl), Some(tpot)) = (r.printed.get("mean_itl_ms"), r.printed.get("mean_tpot_ms"))
    else {
        return ran.then_some(());
    };
    if *tpot > 0.0 && *itl > 2.0 * tpot {
        emit.warning(format!("mean_itl_ms ({itl}) is {:.1} times mean_tpot_ms ({tpot}): the inter-token gaps were timed per streamed chunk of about that many tokens, not per token, so the ITL figures are per chunk", itl / tpot))
            .at(&r.file, r.at("/mean_itl_ms"))
            .data(json!({"ratio": itl / tpot}));
    }
    Some(())
}

/// Successes with text but 0 output tokens (row V6): vLLM 0.7.0 to 0.8.3 takes a reply's count
/// from a usage-only chunk (one without choices) and otherwise keeps its default 0, the tokenizer
/// being used only for a count of None; a server that puts usage on its finish chunk (llama.cpp,
/// the bundled engine) or sends none gets 0 for every reply. Returns whether it could look.
fn uncounted_replies(r: &Run, emit: &mut Emit) -> bool {
    let Some(texts) = r.texts.as_ref().filter(|_| r.detailed) else {
        return false;
    };
    let idx: Vec<usize> = r
        .ok_idx()
        .into_iter()
        .filter(|&i| r.output_lens[i] <= 0.0 && texts.get(i).is_some_and(|t| !t.is_empty()))
        .collect();
    if !idx.is_empty() {
        emit.warning(format!(
            "{} of the {} successes carry text but 0 output tokens: vLLM 0.7.0 to 0.8.3 counts a reply's tokens only from a usage chunk without choices and otherwise keeps 0 (benchmark_serving.py:467 at 0.7.3, `is None`; fixed in 0.8.4), so total_output_tokens, the output throughputs and TPOT leave these replies out",
            idx.len(),
            r.ok_idx().len()
        ))
        .at(&r.file, r.request_at("output_lens", ""))
        .data(json!({"requests": idx}));
    }
    true
}
