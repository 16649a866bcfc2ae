//! GuideLLM (`guidellm run --output kind=json`): `benchmarks.json`, one entry per benchmark
//! (per concurrency level or rate), each with its distributions (`metrics`) and its requests
//! by status (`requests.successful`, `requests.incomplete`, `requests.errored`).
//!
//! Definitions, as GuideLLM 0.8 writes them (`guidellm/schemas/base/request_stats.py`,
//! `guidellm/schemas/base/statistics.py`, `guidellm/benchmark/schemas/metrics.py`):
//! - units: as each name says: `*_ms` in milliseconds, `request_latency` in seconds, token
//!   counts in tokens, `*_per_second` per second;
//! - TTFT anchor: `time_to_first_token_ms` = first token iteration (the first streamed chunk
//!   that carried a token) - request start;
//! - token counts: `output_tokens` is the server's usage (`output_metrics.text_tokens`) and falls
//!   back to the number of streamed iterations (one token each assumed) when usage is missing;
//!   `prompt_tokens` likewise from usage, else the client's count;
//! - TPOT: `time_per_output_token_ms` = (last token - request start) / output tokens (it
//!   includes the TTFT), weighted by output tokens; `inter_token_latency_ms` = (last - first
//!   token) / (output tokens - 1), weighted by output tokens - 1;
//! - which requests the aggregates include: every distribution is computed per status
//!   (successful, incomplete, errored, and all together as total) from the requests' values,
//!   each missing value taken as **0.0** (`req.request_latency or 0.0`), except the TTFT ones,
//!   which leave out a request that never got a first token. Percentiles are the first
//!   value whose cumulative weight reaches the quantile; mean and variance are weighted (ddof 0);
//!   `mode` is the value of largest weight; `count` and `total_sum` are the weights' sum and the
//!   weighted sum. The rate distributions (`requests_per_second`, `*_tokens_per_second`,
//!   `request_concurrency`) are over time and are not recomputed.

use super::{compare, row, Row, FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, NOT_RECOMPUTABLE};
use super::{PERCENTILE_FEW_SAMPLES, RECORDS_MISSING};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;
use std::collections::BTreeMap;

/// One request as the file records it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Its status list: `successful`, `incomplete` or `errored`.
    pub status: String,
    /// Its index in that list.
    pub index: usize,
    /// Every numeric field of the request (the computed ones included), by name.
    pub values: BTreeMap<String, f64>,
    /// `output_metrics.text_tokens` (the server's usage), when present.
    pub usage_output: Option<f64>,
    /// Whether the request records the server's usage at all (`output_metrics`, GuideLLM 0.8;
    /// earlier versions do not say where a count came from).
    pub usage_recorded: bool,
    /// `input_metrics.cached_tokens`.
    pub cached: Option<f64>,
    /// `info.timings.request_iterations`.
    pub iterations: Option<f64>,
    /// `info.error`.
    pub error: Option<String>,
    /// Characters of the reply text.
    pub output_chars: usize,
}

/// One printed distribution: its fields (`mean`, `median`, `p50`, ...).
pub type Printed = BTreeMap<String, f64>;

/// One benchmark of the file.
#[derive(Debug, Clone, Default)]
pub struct Benchmark {
    /// Its index in `benchmarks`.
    pub index: usize,
    /// Whether the file says no sampling was asked (`request_samples` null, before 0.8), so
    /// every request should be listed.
    pub stripped: bool,
    /// `metrics.request_totals`: status -> count.
    pub totals: BTreeMap<String, f64>,
    /// `metrics.NAME.STATUS`: the printed distributions.
    pub metrics: BTreeMap<String, BTreeMap<String, Printed>>,
    /// The requests, every status.
    pub requests: Vec<Request>,
}

impl Benchmark {
    /// Its requests that `keep` keeps, in the file's order.
    fn requests_where(&self, keep: impl Fn(&Request) -> bool) -> Vec<&Request> {
        self.requests.iter().filter(|r| keep(r)).collect()
    }
}

/// The distributions recomputed, with the request field each takes and its weight.
const DISTS: &[(&str, &str, Weight)] = &[
    ("request_latency", "request_latency", Weight::One),
    ("prompt_token_count", "prompt_tokens", Weight::One),
    ("output_token_count", "output_tokens", Weight::One),
    ("total_token_count", "total_tokens", Weight::One),
    (
        "time_to_first_token_ms",
        "time_to_first_token_ms",
        Weight::OneIfPresent,
    ),
    (
        "time_to_first_output_token_ms",
        "time_to_first_output_token_ms",
        Weight::OneIfPresent,
    ),
    (
        "time_per_output_token_ms",
        "time_per_output_token_ms",
        Weight::Tokens,
    ),
    (
        "inter_token_latency_ms",
        "inter_token_latency_ms",
        Weight::TokensAfterFirst,
    ),
];

#[derive(Debug, Clone, Copy)]
enum Weight {
    One,
    /// One for a request that has the value; a request without it (no first token) is left out.
    OneIfPresent,
    Tokens,
    TokensAfterFirst,
}

const STATUSES: &[&str] = &["successful", "incomplete", "errored"];

/// The report as the checks read it: its file's name and every benchmark.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The file's name (findings point into it).
    pub file: String,
    /// Its benchmarks.
    pub benchmarks: Vec<Benchmark>,
}

/// Every GuideLLM check, in the order they run; each goes over every benchmark of the file.
pub const CHECKS: &[Row<Report>] = &[
    row(FAILED_HIDDEN, failed_hidden),
    row(NOT_RECOMPUTABLE, sampled_lists),
    row(RECORDS_MISSING, stripped_lists),
    row(speed::RECOMPUTE_MISMATCH.about(), recompute),
    row(FAILED_REQUESTS, failed_requests),
    row(FAILED_AS_ZERO, failed_as_zero),
    row(speed::TOKEN_SOURCE.about(), token_source),
    row(speed::CACHED_TOKENS.about(), cached_tokens),
    row(PERCENTILE_FEW_SAMPLES, percentile_few_samples),
];

/// `import.percentile-few-samples`: per benchmark, each printed percentile of its successful
/// requests' per-request distributions (`p001` .. `p999`) against the `count` it was taken from
/// ([`super::FewSamples`]).
fn percentile_few_samples(x: &Report, emit: &mut Emit) -> Ran {
    let mut ran = false;
    for b in &x.benchmarks {
        let mut few = super::FewSamples::default();
        // The per-request distributions (the rates and concurrency over time are not samples of
        // requests).
        let per_request = b
            .metrics
            .iter()
            .filter(|(name, _)| DISTS.iter().any(|d| d.0 == *name));
        for (name, by_status) in per_request {
            let Some(printed) = by_status.get("successful") else {
                continue;
            };
            let Some(n) = printed.get("count").map(|c| c.round() as usize) else {
                continue;
            };
            let exact = printed.get("min").is_some() && printed.get("min") == printed.get("max");
            let percentiles: Vec<(f64, &str)> = PERCENTILES
                .iter()
                .filter(|(p, _)| printed.contains_key(&format!("percentiles.{p}")))
                .map(|(p, q)| (*q, *p))
                .collect();
            few.add(name, n, exact, &percentiles);
        }
        let what = format!("benchmark {}: ", b.index);
        let at = |tag: &str, p: &str| {
            format!(
                "/benchmarks/{}/metrics/{tag}/successful/percentiles/{p}",
                b.index
            )
        };
        ran |= few.emit(emit, &x.file, &what, at);
    }
    ran.then_some(())
}

fn count(b: &Benchmark, status: &str) -> usize {
    b.requests.iter().filter(|r| r.status == status).count()
}

/// Per status: the requests listed, the total printed, and the total's pointer.
fn listed_and_printed(b: &Benchmark) -> Vec<(&'static str, f64, f64, String)> {
    STATUSES
        .iter()
        .map(|status| {
            let listed = count(b, status) as f64;
            let printed = b.totals.get(*status).copied().unwrap_or(0.0);
            let at = format!("/benchmarks/{}/metrics/request_totals/{status}", b.index);
            (*status, listed, printed, at)
        })
        .collect()
}

/// Ran when the report holds a benchmark.
fn any(x: &Report) -> Ran {
    (!x.benchmarks.is_empty()).then_some(())
}

/// Runs a check that looks at one benchmark at a time over every benchmark of the report.
fn per_benchmark(x: &Report, emit: &mut Emit, check: fn(&str, &Benchmark, &mut Emit)) -> Ran {
    for b in &x.benchmarks {
        check(&x.file, b, emit);
    }
    any(x)
}

/// `import.failed-hidden`: the printed request totals against the requests the file lists.
fn failed_hidden(x: &Report, emit: &mut Emit) -> Ran {
    for b in &x.benchmarks {
        for (status, listed, printed, at) in listed_and_printed(b) {
            if listed > printed {
                emit.finding(format!(
                    "benchmark {} lists {listed} {status} requests but its totals count {printed}",
                    b.index
                ))
                .file(&x.file)
                .pointer(at)
                .data(json!({"listed": listed, "printed": printed}));
            }
        }
    }
    any(x)
}

/// `import.not-recomputable`: a list shorter than its total (GuideLLM samples requests when told
/// to) leaves the benchmark's distributions unrecomputable. Ran only when it names one.
fn sampled_lists(x: &Report, emit: &mut Emit) -> Ran {
    let mut named = false;
    for b in &x.benchmarks {
        for (status, listed, printed, at) in listed_and_printed(b) {
            if listed < printed && !b.stripped {
                named = true;
                emit.finding(format!("benchmark {} lists {listed} of its {printed} {status} requests (a sample), so its distributions are not recomputed", b.index))
                    .file(&x.file)
                    .pointer(at);
            }
        }
    }
    named.then_some(())
}

/// `import.records-missing`: lists shorter than their totals where no sampling was asked
/// (`request_samples` null): the requests were stripped from the file.
fn stripped_lists(x: &Report, emit: &mut Emit) -> Ran {
    for b in x.benchmarks.iter().filter(|b| b.stripped) {
        let short: Vec<String> = listed_and_printed(b)
            .into_iter()
            .filter(|(_, l, p, _)| l < p)
            .map(|(status, l, p, _)| format!("{l} of {p} {status}"))
            .collect();
        if !short.is_empty() {
            emit.finding(format!("benchmark {} lists {} requests, though no sampling was asked (request_samples null): the rest were stripped from the file, so its distributions are not recomputed", b.index, short.join(", ")))
                .file(&x.file)
                .pointer(format!("/benchmarks/{}/requests", b.index));
        }
    }
    any(x)
}

/// `speed.recompute-mismatch`: the distributions of every benchmark whose lists are complete.
fn recompute(x: &Report, emit: &mut Emit) -> Ran {
    let mut compared = false;
    for b in &x.benchmarks {
        let complete = listed_and_printed(b).iter().all(|(_, l, p, _)| l >= p);
        if complete {
            compared |= distributions(&x.file, b, emit);
        }
    }
    compared.then_some(())
}

/// The weighted values of one distribution over the requests of one status (or all).
fn weighted(b: &Benchmark, status: Option<&str>, field: &str, w: Weight) -> Vec<(f64, f64)> {
    b.requests
        .iter()
        .filter(|r| status.is_none_or(|s| r.status == s))
        .filter(|r| !matches!(w, Weight::OneIfPresent) || r.values.contains_key(field))
        .map(|r| {
            let v = r.values.get(field).copied().unwrap_or(0.0);
            let tokens = r.values.get("output_tokens").copied();
            let weight = match w {
                Weight::One | Weight::OneIfPresent => 1.0,
                Weight::Tokens => tokens.unwrap_or(0.0),
                Weight::TokensAfterFirst => tokens.unwrap_or(1.0) - 1.0,
            };
            (v, weight)
        })
        .collect()
}

/// GuideLLM's summary of weighted values: duplicates merged, zero weights dropped, percentiles
/// by the first value whose cumulative probability reaches the quantile.
pub fn summarize(values: &[(f64, f64)]) -> Printed {
    let mut out = Printed::new();
    let count: f64 = values.iter().map(|(_, w)| w).sum();
    out.insert("count".into(), count.round());
    let mut merged: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for &(v, w) in values {
        let e = merged.entry(order_key(v)).or_insert((v, 0.0));
        e.1 += w;
    }
    let pdf: Vec<(f64, f64)> = merged.into_values().filter(|(_, w)| *w > 0.0).collect();
    let total: f64 = pdf.iter().map(|(_, w)| w).sum();
    if pdf.is_empty() || total <= 1e-6 {
        return out;
    }
    let mean = pdf.iter().map(|(v, w)| v * w / total).sum::<f64>();
    let var = pdf
        .iter()
        .map(|(v, w)| (v - mean).powi(2) * w / total)
        .sum::<f64>();
    out.insert("mean".into(), mean);
    out.insert("variance".into(), var);
    out.insert("std_dev".into(), var.sqrt());
    out.insert("min".into(), pdf[0].0);
    out.insert("max".into(), pdf[pdf.len() - 1].0);
    out.insert("total_sum".into(), mean * count);
    let mode = pdf
        .iter()
        .fold(pdf[0], |best, &x| if x.1 > best.1 { x } else { best });
    out.insert("mode".into(), mode.0);
    for (name, q) in PERCENTILES {
        let mut cdf = 0.0;
        let at = pdf.iter().position(|(_, w)| {
            cdf += w / total;
            cdf >= *q
        });
        let v = pdf[at.unwrap_or(pdf.len() - 1)].0;
        out.insert(format!("percentiles.{name}"), v);
        if *name == "p50" {
            out.insert("median".into(), v);
        }
    }
    out
}

/// A key that orders f64 values like numbers (for the merge of duplicates).
fn order_key(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

const PERCENTILES: &[(&str, f64)] = &[
    ("p001", 0.001),
    ("p01", 0.01),
    ("p05", 0.05),
    ("p10", 0.1),
    ("p25", 0.25),
    ("p50", 0.5),
    ("p75", 0.75),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p999", 0.999),
];

/// Every field of every per-request distribution, per status and in total, recomputed from the
/// listed requests. Returns whether it compared any.
fn distributions(file: &str, b: &Benchmark, emit: &mut Emit) -> bool {
    let mut compared = false;
    for (name, field, w) in DISTS {
        let Some(by_status) = b.metrics.get(*name) else {
            continue;
        };
        for (status, printed) in by_status {
            let filter = (status != "total").then_some(status.as_str());
            let exact = summarize(&weighted(b, filter, field, *w));
            for (k, shown) in printed {
                let Some(&x) = exact.get(k) else {
                    continue;
                };
                let at = format!(
                    "/benchmarks/{}/metrics/{name}/{status}/{}",
                    b.index,
                    k.replace('.', "/")
                );
                let key = format!("guidellm.{}.{name}.{status}.{k}", b.index);
                compare(emit, (file, &at), &key, x, *shown);
                compared = true;
            }
        }
    }
    compared
}

/// `import.failed-requests`: errored and incomplete requests with their errors.
fn failed_requests(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, failed_requests_of)
}

fn failed_requests_of(file: &str, b: &Benchmark, emit: &mut Emit) {
    let failed = b.requests_where(|r| r.status != "successful");
    if failed.is_empty() {
        return;
    }
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for r in &failed {
        let e = r.error.as_deref().unwrap_or("no error recorded");
        *why.entry(format!(
            "{}: {}",
            r.status,
            e.chars().take(160).collect::<String>()
        ))
        .or_default() += 1;
    }
    let list: Vec<String> = why.iter().map(|(k, n)| format!("{n} x {k}")).collect();
    emit.finding(format!(
        "benchmark {}: {} of {} requests errored or did not complete ({}); the successful figures are over the other {}",
        b.index,
        failed.len(),
        b.requests.len(),
        list.join("; "),
        b.requests.len() - failed.len()
    ))
    .file(file)
    .pointer(format!("/benchmarks/{}/requests", b.index))
    .data(json!({"failed": failed.len(), "total": b.requests.len()}));
}

/// `import.failed-as-zero`: per benchmark, successes without a reply or a first token, then
/// failed requests counted as zeros in the `total` distributions.
fn failed_as_zero(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, |file, b, emit| {
        empty_successes(file, b, emit);
        failed_in_totals(file, b, emit);
    })
}

/// A successful request with no reply token (GuideLLM's `or 0.0` puts it into the token
/// distributions at zero) or no first token (a success with nothing streamed).
fn empty_successes(file: &str, b: &Benchmark, emit: &mut Emit) {
    for r in b.requests.iter().filter(|r| r.status == "successful") {
        let ttft = r.values.get("time_to_first_token_ms").copied();
        let tokens = r.values.get("output_tokens").copied();
        let what = match (ttft, tokens) {
            (None, _) => "no first token: it is counted as a success (in the request counts and rates) though nothing was streamed",
            (_, None | Some(0.0)) => "no reply token, so it enters the token distributions as 0",
            _ => continue,
        };
        emit.finding(format!(
            "benchmark {}: successful request {} has {what}",
            b.index, r.index
        ))
        .file(file)
        .pointer(format!(
            "/benchmarks/{}/requests/successful/{}",
            b.index, r.index
        ));
    }
}

/// As a warning: errored and incomplete requests lack most values, and GuideLLM's `or 0.0`
/// counts each missing one as zero in the `total` (and `errored`, `incomplete`) distributions: a
/// failed request shows as a 0 s latency and a 0-token reply.
fn failed_in_totals(file: &str, b: &Benchmark, emit: &mut Emit) {
    for (name, field, w) in DISTS {
        if !matches!(w, Weight::One)
            || !b
                .metrics
                .get(*name)
                .is_some_and(|m| m.contains_key("total"))
        {
            continue;
        }
        let zeros = b
            .requests
            .iter()
            .filter(|r| r.status != "successful" && !r.values.contains_key(*field))
            .count();
        if zeros == 0 {
            continue;
        }
        emit.warning(
            format!("benchmark {}: {zeros} failed requests without a {field} are counted as 0 in the total {name} distribution", b.index),
        )
        .file(file)
        .pointer(format!("/benchmarks/{}/metrics/{name}/total", b.index))
        .data(json!({"requests": zeros}));
    }
}

/// `speed.token-source`: reply tokens counted from streamed iterations, not the server's usage.
fn token_source(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, token_source_of)
}

fn token_source_of(file: &str, b: &Benchmark, emit: &mut Emit) {
    let from_chunks = b.requests_where(|r| {
        r.usage_recorded
            && r.usage_output.is_none()
            && r.values.get("output_tokens").is_some_and(|t| *t > 0.0)
    });
    if from_chunks.is_empty() {
        return;
    }
    emit.finding(format!(
        "benchmark {}: {} of {} requests have no usage from the server; GuideLLM counted their reply tokens as streamed iterations (one token each assumed)",
        b.index,
        from_chunks.len(),
        b.requests.len()
    ))
    .file(file)
    .pointer(format!("/benchmarks/{}/requests", b.index));
}

/// `speed.cached-tokens`: prompt tokens the server served from its cache.
fn cached_tokens(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, cached_tokens_of)
}

fn cached_tokens_of(file: &str, b: &Benchmark, emit: &mut Emit) {
    let cached = b.requests_where(|r| r.cached.is_some_and(|c| c > 0.0));
    if cached.is_empty() {
        return;
    }
    let n: f64 = cached.iter().filter_map(|r| r.cached).sum();
    emit.finding(
        format!("benchmark {}: {} requests were served with cached prompt tokens ({n} in all), inside its TTFT and prompt-rate figures", b.index, cached.len()),
    )
    .file(file)
    .pointer(format!("/benchmarks/{}/requests", b.index));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_the_first_value_reaching_the_quantile() {
        let s = summarize(&[(3.0, 1.0), (1.0, 1.0), (2.0, 1.0), (2.0, 1.0)]);
        assert_eq!(s["count"], 4.0);
        assert_eq!(s["percentiles.p25"], 1.0);
        assert_eq!(s["percentiles.p50"], 2.0);
        assert_eq!(s["median"], 2.0);
        assert_eq!(s["mode"], 2.0);
        assert_eq!(s["max"], 3.0);
        assert_eq!(s["mean"], 2.0);
        assert!((s["variance"] - 0.5).abs() < 1e-12);
        // Zero weights are dropped; weights count.
        let s = summarize(&[(5.0, 0.0), (1.0, 3.0), (9.0, 1.0)]);
        assert_eq!(s["count"], 4.0);
        assert_eq!(s["min"], 1.0);
        assert_eq!(s["percentiles.p90"], 9.0);
    }
}
