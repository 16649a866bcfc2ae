//! vLLM's `vllm bench serve --save-result --save-detailed` result: one JSON object with the run's
//! setup, its aggregates and, per request in order, `input_lens`, `output_lens`, `ttfts`, `itls`,
//! `latencies`, `start_times`, `queue_times`, `generated_texts` and `errors`.
//!
//! Definitions, as vLLM 0.34 writes them (`vllm/benchmarks/serve.py`, `calculate_metrics`):
//! - units: per-request times in seconds; aggregates `*_ms` in milliseconds; `duration` in s;
//!   throughputs per second; lengths in tokens;
//! - TTFT anchor: the first streamed chunk that carries text, less the request's start;
//!   a failed request keeps the default 0.0;
//! - token counts: `output_lens` is the server's usage `completion_tokens` when the stream ends
//!   with usage, else the client's tokenizer on the generated text (the file does not say which);
//!   0 for a failed request; `input_lens` is the dataset's prompt length (the client's count);
//! - which requests: every aggregate is over the successful requests (no error): `completed`,
//!   `total_input_tokens`, each mean/median/std (numpy, ddof 0)/percentile (numpy's linear rule)
//!   of TTFT, TPOT (`(latency - ttft) / (output_len - 1)`, requests with more than one output
//!   token), ITL (every gap of every success) and E2EL; `total_output_tokens` adds every
//!   `output_lens` (0 for failures); throughputs divide by `duration` (the whole run's wall time);
//!   an empty list counts as `[0]`. `max_concurrent_requests` and `max_output_tokens_per_s` come
//!   from the successes' start times, TTFTs, ITLs and latencies, in whole-second buckets from the
//!   first start (0.34's "peak concurrent requests" counts every request active at any time in a
//!   second, so it can exceed `max_concurrency`; later versions take the exact peak).

use super::{
    compare, impossible, not_checked, percentile_linear, row, std_population, Row, Spread,
};
use super::{
    FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE,
    PERCENTILE_FEW_SAMPLES,
};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;
use std::collections::BTreeMap;

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
}

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

    fn ok_idx(&self) -> Vec<usize> {
        (0..self.ttfts.len()).filter(|i| self.ok(*i)).collect()
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
    row(NOT_RECOMPUTABLE, not_recomputable),
    row(IMPOSSIBLE_AGGREGATE, impossible_aggregates),
    row(speed::TOKEN_SOURCE.about(), itl_per_chunk),
    row(PERCENTILE_FEW_SAMPLES, percentile_few_samples),
];

/// `import.percentile-few-samples`: each printed percentile (`p99_ttft_ms`) against the samples
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

/// `import.failed-hidden`: `failed` against the requests with an error.
fn failed_hidden(r: &Run, emit: &mut Emit) -> Ran {
    if !r.detailed {
        return None;
    }
    let n = r.ttfts.len() as f64;
    let ok = r.ok_idx().len() as f64;
    let shown_failed = r.printed.get("failed").copied();
    if n - ok > shown_failed.unwrap_or(0.0) {
        emit.finding(format!("{} of the {n} requests carry an error but `failed` says {}: they are left out of every figure unsaid", n - ok, shown_failed.map_or("nothing".into(), |x| x.to_string())))
        .at(&r.file, r.at("/failed"))
        .data(json!({"errors": n - ok, "printed": shown_failed}));
    }
    Some(())
}

/// `speed.recompute-mismatch`: `completed`, every distribution (but one printed over every
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

/// `import.failed-requests`: the requests that failed, with their errors' last lines.
fn failed_requests(r: &Run, emit: &mut Emit) -> Ran {
    if !r.detailed {
        return None;
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
    .at(&r.file, r.at(format!("/errors/{}", idx.join(","))))
    .data(json!({"failed": failed.len(), "total": r.ttfts.len(), "requests": failed}));
    Some(())
}

/// `import.failed-as-zero`: a request counted as a success (no error) that looks failed (no
/// first token, no text, no output token), a failed request whose output tokens are added to
/// `total_output_tokens`, and a printed distribution that is the value over every request with
/// the failed ones at 0.
fn failed_as_zero(r: &Run, emit: &mut Emit) -> Ran {
    if !r.detailed {
        return None;
    }
    for i in 0..r.ttfts.len() {
        let empty = r
            .texts
            .as_ref()
            .is_some_and(|t| t.get(i).is_some_and(|x| x.is_empty()));
        let what = if r.ok(i) && (r.ttfts[i] <= 0.0 || empty || r.output_lens[i] <= 0.0) {
            "has no error but no first token, text or output token, and is counted as a success in every figure"
        } else if !r.ok(i) && r.output_lens[i] > 0.0 {
            "failed, yet its output tokens are added to total_output_tokens and the throughputs"
        } else {
            continue;
        };
        emit.finding(format!("request {i} {what}"))
            .at(&r.file, r.at(format!("/ttfts/{i}")))
            .data(json!({"ttft": r.ttfts[i], "output_len": r.output_lens[i], "error": r.errors.get(i)}));
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

/// Each printed `{mean,median,std,pXX}_{metric}_ms` with its value over the successes (`None`
/// when the lists cannot give it).
fn printed_distributions(r: &Run) -> Vec<(&String, &f64, Option<f64>)> {
    let ok = r.ok_idx();
    r.printed
        .iter()
        .filter_map(|(k, shown)| {
            let (s, m) = split_key(k)?;
            Some((k, shown, values(r, m, &ok).and_then(|v| stat(&v, s))))
        })
        .collect()
}

/// How a printed distribution's value is judged.
enum Judged {
    /// Against the successes' value (`speed.recompute-mismatch`).
    OverSuccesses,
    /// It is the value over every request, the failed ones at 0 (`import.failed-as-zero`): the
    /// successes' value is the one given.
    OverAll(f64),
}

/// Whether a printed distribution (`k`, printed `shown`, `exact` over the successes) is the
/// value over every request with the failed ones at 0.
fn judge(r: &Run, k: &str, exact: f64, shown: f64) -> Judged {
    let all: Vec<usize> = (0..r.ttfts.len()).collect();
    if super::close(exact, shown) || r.ok_idx().len() == all.len() {
        return Judged::OverSuccesses;
    }
    let over_all = split_key(k).and_then(|(s, m)| values(r, m, &all).and_then(|v| stat(&v, s)));
    if over_all.is_some_and(|x| super::close(x, shown)) {
        Judged::OverAll(exact)
    } else {
        Judged::OverSuccesses
    }
}

/// Each printed distribution from the successes' per-request values (those printed over every
/// request are `import.failed-as-zero`'s). Returns whether it compared any.
fn distributions(r: &Run, emit: &mut Emit) -> bool {
    let mut compared = false;
    for (k, shown, exact) in printed_distributions(r) {
        let Some(exact) = exact else {
            continue;
        };
        if let Judged::OverSuccesses = judge(r, k, exact, *shown) {
            let at = r.at(format!("/{k}"));
            compare(emit, (&r.file, &at), &format!("vllm.{k}"), exact, *shown);
            compared = true;
        }
    }
    compared
}

/// The token totals and the throughputs over `duration`. Returns whether it compared any.
fn totals(r: &Run, emit: &mut Emit) -> bool {
    let ok = r.ok_idx();
    let input: f64 = ok.iter().map(|i| r.input_lens[*i]).sum();
    let output: f64 = r.output_lens.iter().sum();
    let Some(d) = r.duration else {
        return false;
    };
    let rows = [
        ("total_input_tokens", input),
        ("total_output_tokens", output),
        ("request_throughput", ok.len() as f64 / d),
        ("output_throughput", output / d),
        ("total_token_throughput", (input + output) / d),
    ];
    let mut compared = false;
    for (k, exact) in rows {
        compared |= compare_printed(r, emit, k, exact);
    }
    compared
}

/// The figure the file prints under `k`, when it prints one, against the value recomputed from
/// its requests. Returns whether it prints one.
fn compare_printed(r: &Run, emit: &mut Emit, k: &str, exact: f64) -> bool {
    let Some(shown) = r.printed.get(k) else {
        return false;
    };
    compare(
        emit,
        (&r.file, &r.at(format!("/{k}"))),
        &format!("vllm.{k}"),
        exact,
        *shown,
    );
    true
}

const PEAK_KEYS: [&str; 2] = ["max_concurrent_requests", "max_output_tokens_per_s"];

/// `max_concurrent_requests` (vLLM 0.34: the most successes active in one whole second from the
/// first start, which counts requests that only follow each other in that second; later
/// versions: the most overlapping [start, start + latency) intervals; either is accepted) and
/// `max_output_tokens_per_s` (the most token times, first token then each ITL, in one whole
/// second from the first start), as vLLM computes them: `Err` with the printed keys they cannot
/// be recomputed for, `Ok(None)` when there is no success.
fn peak_values(r: &Run) -> Result<Option<[f64; 2]>, Vec<String>> {
    let (Some(st), Some(lat)) = (&r.start_times, &r.latencies) else {
        return Err(PEAK_KEYS
            .iter()
            .filter(|k| r.printed.contains_key(**k))
            .map(|k| k.to_string())
            .collect());
    };
    let ok = r.ok_idx();
    if ok.is_empty() {
        return Ok(None);
    }
    let Some((peak, per_second, tokens)) = peaks(r, &ok, st, lat) else {
        return Err(PEAK_KEYS.iter().map(|k| k.to_string()).collect());
    };
    let concurrent = match r.printed.get(PEAK_KEYS[0]) {
        Some(x) if (per_second - x).abs() < (peak - x).abs() => per_second,
        _ => peak,
    };
    Ok(Some([concurrent, tokens]))
}

/// The printed peaks against [`peak_values`]. Returns whether it compared any.
fn peaks_compared(r: &Run, emit: &mut Emit) -> bool {
    let Ok(Some(exact)) = peak_values(r) else {
        return false;
    };
    let mut compared = false;
    for (k, exact) in PEAK_KEYS.iter().zip(exact) {
        compared |= compare_printed(r, emit, k, exact);
    }
    compared
}

/// The successes' exact peak concurrency, vLLM 0.34's per-second one, and the most token times
/// in one whole second from the first start.
fn peaks(r: &Run, ok: &[usize], st: &[f64], lat: &[f64]) -> Option<(f64, f64, f64)> {
    let mut events: Vec<(f64, i32)> = ok
        .iter()
        .flat_map(|&i| [(st[i], 1), (st[i] + lat[i], -1)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut peak) = (0, 0);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    let t0 = ok.iter().map(|&i| st[i]).fold(f64::INFINITY, f64::min);
    let end = ok
        .iter()
        .map(|&i| st[i] + lat[i])
        .fold(f64::NEG_INFINITY, f64::max);
    // Whole-second buckets: a span past a day (or not a number) is not a benchmark run's.
    if !(0.0..=86_400.0).contains(&(end - t0)) {
        return None;
    }
    let mut buckets = vec![0.0; (end - t0).ceil() as usize + 1];
    for &i in ok {
        let mut t = st[i] + r.ttfts[i];
        for k in 0..=r.itls[i].len() {
            if k > 0 {
                t += r.itls[i][k - 1];
            }
            let b = (t - t0) as usize;
            if let Some(x) = buckets.get_mut(b) {
                *x += 1.0;
            }
        }
    }
    let tokens = buckets.iter().copied().fold(0.0, f64::max);
    // vLLM 0.34: the most requests active in one whole second (a request counts in every second
    // from its start's to its end's, both included); later vLLM: the exact sweep-line peak.
    // A difference array (+1 at a request's first second, -1 after its last), so the work is one
    // pass over the requests and one over the seconds, whatever the spans a file states.
    let mut change = vec![0i64; buckets.len() + 2];
    for &i in ok {
        let (from, to) = ((st[i] - t0) as usize, (st[i] + lat[i] - t0) as usize);
        if from <= to && from < buckets.len() + 1 {
            change[from] += 1;
            change[(to + 1).min(buckets.len() + 1)] -= 1;
        }
    }
    let mut now = 0i64;
    let per_second = change[..buckets.len() + 1]
        .iter()
        .map(|d| {
            now += d;
            now as f64
        })
        .fold(0.0, f64::max);
    Some((peak as f64, per_second, tokens))
}

/// `import.not-recomputable`: printed figures the file's records cannot give (goodput: its SLOs
/// are not saved; an unknown metric).
fn not_recomputable(r: &Run, emit: &mut Emit) -> Ran {
    if !r.detailed {
        let keys: Vec<&str> = r
            .printed
            .keys()
            .filter(|k| split_key(k).is_some())
            .map(String::as_str)
            .collect();
        emit.finding(format!("{} printed distributions are not recomputed: the file holds no per-request lists (saved without --save-detailed, or by a writer that keeps only aggregates); its aggregates are checked against each other", keys.len()))
            .file(&r.file)
            .data(json!({ "keys": keys }));
        return Some(());
    }
    let mut keys: Vec<String> = printed_distributions(r)
        .into_iter()
        .filter(|(_, _, exact)| exact.is_none())
        .map(|(k, _, _)| k.clone())
        .collect();
    keys.extend(peak_values(r).err().unwrap_or_default());
    for k in ["request_goodput", "rtfx"] {
        if r.printed.get(k).is_some_and(|x| *x != 0.0) {
            keys.push(k.to_string());
        }
    }
    let why = "the per-request lists do not give them";
    not_checked(emit, (&r.file, "keys"), ("printed figures", why), &keys)
}

/// Without per-request lists: each throughput against its total over `duration`, where the file
/// prints both. Returns whether it compared any.
fn aggregates(r: &Run, emit: &mut Emit) -> bool {
    let (Some(d), p) = (r.duration.filter(|d| *d > 0.0), &r.printed) else {
        return false;
    };
    let get = |k: &str| p.get(k).copied();
    let input = get("total_input_tokens");
    let output = get("total_output_tokens");
    let rows = [
        ("request_throughput", get("completed").map(|c| c / d)),
        ("output_throughput", output.map(|o| o / d)),
        (
            "total_token_throughput",
            input.zip(output).map(|(i, o)| (i + o) / d),
        ),
    ];
    let mut compared = false;
    for (k, exact) in rows {
        if let Some(exact) = exact {
            compared |= compare_printed(r, emit, k, exact);
        }
    }
    compared
}

/// `import.impossible-aggregate`: figures of one run that cannot all hold: a metric's median and
/// percentiles out of order or a negative spread; more completed and failed than sent; and,
/// from the per-request lists, more requests in flight at once than the client's own cap.
fn impossible_aggregates(r: &Run, emit: &mut Emit) -> Ran {
    let mut by_metric: BTreeMap<&str, Spread> = BTreeMap::new();
    for (k, v) in &r.printed {
        let Some((s, m)) = split_key(k) else { continue };
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
    Some(())
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

/// `speed.token-source` (warning): a mean ITL well above the mean TPOT: the gaps were timed per
/// streamed chunk of several tokens, not per token (vLLM's ITL assumes one token a chunk).
fn itl_per_chunk(r: &Run, emit: &mut Emit) -> Ran {
    let (Some(itl), Some(tpot)) = (r.printed.get("mean_itl_ms"), r.printed.get("mean_tpot_ms"))
    else {
        return None;
    };
    if *tpot > 0.0 && *itl > 2.0 * tpot {
        emit.warning(format!("mean_itl_ms ({itl}) is {:.1} times mean_tpot_ms ({tpot}): the inter-token gaps were timed per streamed chunk of about that many tokens, not per token, so the ITL figures are per chunk", itl / tpot))
            .at(&r.file, r.at("/mean_itl_ms"))
            .data(json!({"ratio": itl / tpot}));
    }
    Some(())
}
