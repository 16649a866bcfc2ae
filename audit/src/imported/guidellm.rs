//! GuideLLM (`guidellm benchmark` / `guidellm run`, `--output kind=json`): `benchmarks.json`, one
//! entry per benchmark (per rate, concurrency level or sweep step), each with its distributions
//! (`metrics`) and its requests by status (`requests.successful`, `.incomplete`, `.errored`).
//!
//! GuideLLM's own code is the specification; `docs/formats/guidellm.md` is its table (rows G1 to
//! G12, with the tool's file and line at each version), and each check below cites its rows.
//! Three families compute the printed figures differently ([`Family`], row G1):
//! - 0.2.0 to 0.3.x: the aggregator drops warm-up and cool-down requests before anything is
//!   listed or counted; each distribution takes its own subset (a prompt, at least one or two
//!   output tokens), and its `count`, `total_sum` and `mode` are over the unmerged values;
//! - 0.4.0 to 0.7.3: every request is listed (warm-up and cool-down included), but the totals
//!   and every distribution take only those that overlap the measured window
//!   (`scheduler_metrics.measure_start_time` to `measure_end_time`), each missing value as 0.0;
//!   duplicates merged, `count` the weights' sum and `total_sum` = mean x count;
//! - 0.7.4 on: as 0.4, but the first-token latencies are windowed by the first token's time and
//!   a request without one is left out of them, the inter-token latency by the decode span.
//!
//! Units: `*_ms` milliseconds, `request_latency` seconds, token counts in tokens. Percentiles are
//! the first value whose cumulative probability reaches the quantile; mean and variance are
//! weighted (ddof 0). The rate distributions over time (`requests_per_second`,
//! `*_tokens_per_second`, `request_concurrency`) are not recomputed (row G11).

use super::{compare, row, Row, FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS};
use super::{NOT_RECOMPUTABLE, PERCENTILE_FEW_SAMPLES, RECORDS_MISSING};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;
use std::collections::BTreeMap;

mod distributions;
pub use distributions::*;

/// One request as the file records it.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Its status list: `successful`, `incomplete` or `errored`.
    pub status: String,
    /// Its index in that list.
    pub index: usize,
    /// Every numeric field of the request (the computed ones included), by name; a null is absent.
    pub values: BTreeMap<String, f64>,
    /// When it started (`request_start_time`, 0.4 on; `start_time` before), if recorded.
    pub start: Option<f64>,
    /// When it ended (`request_end_time`, 0.4 on; `end_time` before), if recorded.
    pub end: Option<f64>,
    /// `info.timings.first_token_iteration` (0.4 on).
    pub first_token: Option<f64>,
    /// `info.timings.first_output_token_iteration` (0.7 on).
    pub first_output_token: Option<f64>,
    /// Whether it has a prompt (0.2-0.3 leave a request with an empty one out of the prompt counts).
    pub no_prompt: bool,
    /// `output_metrics.total_tokens` (the server's usage), when present.
    pub usage_output: Option<f64>,
    /// Whether the request records the server's usage at all (`output_metrics`, 0.4 on; earlier
    /// versions do not say where a count came from).
    pub usage_recorded: bool,
    /// `input_metrics.cached_tokens`.
    pub cached: Option<f64>,
    /// `info.timings.request_iterations`.
    pub iterations: Option<f64>,
    /// `info.error` (0.4 on) or `error` (before).
    pub error: Option<String>,
    /// Characters of the reply text.
    pub output_chars: usize,
    /// Whether the reply text is recorded (a string; null where sampling cleared it).
    pub has_output: bool,
}

/// One printed distribution: its fields (`mean`, `median`, `percentiles.p50`, ...).
pub type Printed = BTreeMap<String, f64>;

/// One benchmark of the file.
#[derive(Debug, Clone, Default)]
pub struct Benchmark {
    /// Its index in `benchmarks`.
    pub index: usize,
    /// Where its lists may be a sample, what says so (`request_samples`, `sample_requests` from
    /// 0.5.4, `sample_size`); `None` where GuideLLM lists every request (row G9).
    pub sampling: Option<String>,
    /// The measured window (`scheduler_metrics.measure_start_time`, `measure_end_time`), 0.4 on.
    pub window: Option<(f64, f64)>,
    /// `metrics.request_totals` (0.4 on) or `request_totals`: status -> count.
    pub totals: BTreeMap<String, f64>,
    /// `metrics.NAME.STATUS`: the printed distributions.
    pub metrics: BTreeMap<String, BTreeMap<String, Printed>>,
    /// The requests, every status.
    pub requests: Vec<Request>,
}

/// Which of GuideLLM's ways of computing its figures wrote the file (docs row G1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    /// 0.2.0 to 0.3.x: `GenerativeBenchmark.from_stats` (`benchmark/benchmark.py`).
    V02,
    /// 0.4.0 to 0.7.3: `GenerativeMetrics.compile` over the measured window.
    V04,
    /// 0.7.4 on: as [`Family::V04`], first-token latencies windowed by the first token.
    #[default]
    V074,
}

impl Family {
    /// The family of a `metadata.guidellm_version` (`0.5.0.dev0`, `0.8.1`); `None` if unreadable.
    pub fn of_version(v: &str) -> Option<Family> {
        let mut parts = v.split(['.', '-', '+']).map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u32>().ok()
        });
        let (major, minor) = (parts.next()??, parts.next()??);
        let patch = parts.next().flatten().unwrap_or(0);
        Some(match (major, minor, patch) {
            (0, 0..=3, _) => Family::V02,
            (0, 4..=6, _) | (0, 7, 0..=3) => Family::V04,
            _ => Family::V074,
        })
    }

    /// The versions of the family, as messages name them.
    pub fn versions(self) -> &'static str {
        match self {
            Family::V02 => "0.2-0.3",
            Family::V04 => "0.4-0.7.3",
            Family::V074 => "0.7.4 on",
        }
    }
}

/// The report as the checks read it: its file's name, its version and every benchmark.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The file's name (findings point into it).
    pub file: String,
    /// The family that wrote it.
    pub family: Family,
    /// The version as messages name it: `GuideLLM 0.8.1`, or the family and how it was inferred.
    pub version: String,
    /// Its benchmarks.
    pub benchmarks: Vec<Benchmark>,
}

impl Report {
    /// `GuideLLM 0.8.1` (or the family inferred) for messages.
    fn tool(&self) -> String {
        match self.version.is_empty() {
            true => format!("GuideLLM {}", self.family.versions()),
            false => self.version.clone(),
        }
    }
}

impl Family {
    fn dists(self) -> &'static [Dist] {
        match self {
            Family::V02 => V02_DISTS,
            Family::V04 => V04_DISTS,
            Family::V074 => V074_DISTS,
        }
    }

    /// The requests counted in `request_totals` (row G2).
    fn counted(self) -> Keep {
        match self {
            Family::V02 => Keep::All,
            _ => REQUEST,
        }
    }

    /// The printed summary of weighted values (row G6).
    fn summary(self, values: &[(f64, f64)]) -> Printed {
        match self {
            Family::V02 => summarize_v02(values),
            _ => summarize(values),
        }
    }
}

impl Request {
    fn value(&self, field: &str) -> f64 {
        self.values.get(field).copied().unwrap_or(0.0)
    }

    fn event(&self, e: Event) -> Option<f64> {
        match e {
            Event::Start => self.start,
            Event::End => self.end,
            Event::FirstToken => self.first_token,
            Event::FirstOutputToken => self.first_output_token,
        }
    }

    /// Whether the family's rule `keep` takes this request in benchmark `b`.
    fn kept(&self, b: &Benchmark, keep: Keep) -> bool {
        match keep {
            Keep::All => true,
            Keep::Prompt => !self.no_prompt,
            Keep::Tokens(n) => self.value("output_tokens") >= n,
            Keep::Window(from, to) => {
                let Some((lo, hi)) = b.window else {
                    return true;
                };
                let Some(end) = self.event(to) else {
                    return false;
                };
                end >= lo && self.event(from).unwrap_or(end) <= hi
            }
        }
    }
}

impl Benchmark {
    /// Its requests that `keep` keeps, in the file's order.
    fn requests_where(&self, keep: impl Fn(&Request) -> bool) -> Vec<&Request> {
        self.requests.iter().filter(|r| keep(r)).collect()
    }

    /// Its requests that enter its totals and figures (row G2).
    fn measured(&self, family: Family) -> Vec<&Request> {
        self.requests_where(|r| r.kept(self, family.counted()))
    }
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

const STATUSES: &[&str] = &["successful", "incomplete", "errored"];

/// Per status: the requests the benchmark's figures take from its lists, the total printed, and
/// the total's pointer.
fn listed_and_printed(x: &Report, b: &Benchmark) -> Vec<(&'static str, f64, f64, String)> {
    let measured = b.measured(x.family);
    STATUSES
        .iter()
        .map(|status| {
            let listed = measured.iter().filter(|r| r.status == *status).count() as f64;
            let printed = b.totals.get(*status).copied().unwrap_or(0.0);
            let at = format!("/benchmarks/{}/metrics/request_totals/{status}", b.index);
            (*status, listed, printed, at)
        })
        .collect()
}

/// Whether every request the benchmark's figures count is listed.
fn complete(x: &Report, b: &Benchmark) -> bool {
    listed_and_printed(x, b).iter().all(|(_, l, p, _)| l >= p)
}

/// Ran when the report holds a benchmark.
fn any(x: &Report) -> Ran {
    (!x.benchmarks.is_empty()).then_some(())
}

/// Runs a check that looks at one benchmark at a time over every benchmark of the report.
fn per_benchmark(x: &Report, emit: &mut Emit, check: fn(&Report, &Benchmark, &mut Emit)) -> Ran {
    for b in &x.benchmarks {
        check(x, b, emit);
    }
    any(x)
}

/// `import.failed-hidden` (docs rows G2, G3): the printed request totals against the requests
/// the file lists inside the measured window. Listed requests outside it (warm-up, cool-down,
/// 0.4 on) are named at info: GuideLLM lists them and leaves them out of every figure.
fn failed_hidden(x: &Report, emit: &mut Emit) -> Ran {
    for b in &x.benchmarks {
        for (status, listed, printed, at) in listed_and_printed(x, b) {
            if listed > printed {
                emit.finding(format!(
                    "benchmark {} lists {listed} {status} requests inside its measured window but its totals count {printed}",
                    b.index
                ))
                .file(&x.file)
                .pointer(at)
                .data(json!({"listed": listed, "printed": printed}));
            }
        }
        outside_window(x, b, emit);
    }
    any(x)
}

/// Info: the listed requests outside the measured window, by status.
fn outside_window(x: &Report, b: &Benchmark, emit: &mut Emit) {
    let Some((lo, hi)) = b.window else { return };
    let out = b.requests_where(|r| !r.kept(b, x.family.counted()));
    if out.is_empty() {
        return;
    }
    let failed = out.iter().filter(|r| r.status != "successful").count();
    emit.info(format!(
        "benchmark {}: {} listed requests ({failed} of them failed or incomplete) lie outside its measured window ({:.3} s from {lo} to {hi}: warm-up or cool-down); {} lists them and leaves them out of request_totals and every distribution (docs/formats/guidellm.md rows G2, G3), and so does this check",
        b.index,
        out.len(),
        hi - lo,
        x.tool()
    ))
    .file(&x.file)
    .pointer(format!("/benchmarks/{}/requests", b.index))
    .data(json!({"outside": out.len(), "failed": failed}));
}

/// `import.not-recomputable` (docs row G9): a list shorter than its total where the file says
/// GuideLLM sampled it leaves the benchmark's distributions unrecomputed. Ran only when it names one.
fn sampled_lists(x: &Report, emit: &mut Emit) -> Ran {
    let mut named = false;
    for b in &x.benchmarks {
        let Some(why) = &b.sampling else { continue };
        for (status, listed, printed, at) in listed_and_printed(x, b) {
            if listed < printed {
                named = true;
                emit.finding(format!("benchmark {} lists {listed} of its {printed} {status} requests, a sample ({why}), so its distributions are not recomputed", b.index))
                    .file(&x.file)
                    .pointer(at);
            }
        }
    }
    named.then_some(())
}

/// `import.records-missing` (docs row G9): lists shorter than their totals where the version
/// lists every request (no sampling asked, or asked of a version that did not apply it): the
/// requests were stripped from the file.
fn stripped_lists(x: &Report, emit: &mut Emit) -> Ran {
    for b in x.benchmarks.iter().filter(|b| b.sampling.is_none()) {
        let short: Vec<String> = listed_and_printed(x, b)
            .into_iter()
            .filter(|(_, l, p, _)| l < p)
            .map(|(status, l, p, _)| format!("{l} of {p} {status}"))
            .collect();
        if !short.is_empty() {
            emit.finding(format!("benchmark {} lists {} requests, though {} lists every request when no sampling is asked (docs row G9): the rest were stripped from the file, so its distributions are not recomputed", b.index, short.join(", "), x.tool()))
                .file(&x.file)
                .pointer(format!("/benchmarks/{}/requests", b.index));
        }
    }
    any(x)
}

/// `speed.recompute-mismatch` (docs rows G3 to G6): every per-request distribution of every
/// benchmark whose lists are complete, as the file's version computed it.
fn recompute(x: &Report, emit: &mut Emit) -> Ran {
    let mut compared = false;
    for b in x.benchmarks.iter().filter(|b| complete(x, b)) {
        let measured = b.measured(x.family).len() as f64;
        if let Some(&total) = b.totals.get("total") {
            let at = format!("/benchmarks/{}/metrics/request_totals/total", b.index);
            let key = format!("guidellm.{}.request_totals.total", b.index);
            compare(emit, (&x.file, &at), &key, measured, total);
        }
        compared |= distributions(x, b, emit);
    }
    compared.then_some(())
}

/// `import.failed-requests` (docs rows G7, G8): errored and incomplete requests inside the
/// measured window, with their errors and what the version does with them.
fn failed_requests(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, failed_requests_of)
}

fn failed_requests_of(x: &Report, b: &Benchmark, emit: &mut Emit) {
    let measured = b.measured(x.family);
    let failed: Vec<&&Request> = measured
        .iter()
        .filter(|r| r.status != "successful")
        .collect();
    if failed.is_empty() {
        return;
    }
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for r in &failed {
        let e = r.error.as_deref().unwrap_or("no error recorded");
        let e: String = e.chars().take(160).collect();
        *why.entry(format!("{}: {e}", r.status)).or_default() += 1;
    }
    let list: Vec<String> = why.iter().map(|(k, n)| format!("{n} x {k}")).collect();
    emit.finding(format!(
        "benchmark {}: {} of {} requests errored or did not complete ({}); the successful figures are over the other {}; {} counts them in request_totals and in the errored, incomplete and total distributions (an incomplete one is a request cancelled after it started, such as those still running when --max-seconds or --max-requests ends the benchmark; docs rows G7, G8)",
        b.index,
        failed.len(),
        measured.len(),
        list.join("; "),
        measured.len() - failed.len(),
        x.tool()
    ))
    .file(&x.file)
    .pointer(format!("/benchmarks/{}/requests", b.index))
    .data(json!({"failed": failed.len(), "total": measured.len()}));
}

/// `import.failed-as-zero` (docs row G5), as warnings naming the version's rule: per benchmark,
/// successes without a reply token or first token, then failed requests whose missing values
/// the version counts as 0 in its distributions.
fn failed_as_zero(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, |x, b, emit| {
        empty_successes(x, b, emit);
        failed_in_totals(x, b, emit);
        unseen_tokens(x, b, emit);
    })
}

/// Measured requests counted with more output tokens than their reply text has characters: the
/// count is not the reply's (0.2-0.3 give a reply without usage the request's target, an errored
/// one included; 0.4-0.5.3 start from the request's target and override it with the server's
/// usage, so a stream cut by an error keeps the target; an empty reply's usage counts its
/// end-of-sequence token). They enter output_token_count and the token rates at that count.
fn unseen_tokens(x: &Report, b: &Benchmark, emit: &mut Emit) {
    let unseen: Vec<&Request> = b
        .measured(x.family)
        .into_iter()
        .filter(|r| r.has_output && r.value("output_tokens") > r.output_chars as f64)
        .collect();
    let Some(first) = unseen.first() else { return };
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &unseen {
        *by_status.entry(r.status.as_str()).or_default() += 1;
    }
    let list: Vec<String> = by_status.iter().map(|(s, n)| format!("{n} {s}")).collect();
    emit.warning(format!(
        "benchmark {}: {} requests ({}) are counted with more output tokens than their reply text has characters ({} request {}: {} tokens for {} characters); {} counts the server's usage, else the request's target (docs row G10), not the reply, and puts them into output_token_count at that count",
        b.index,
        unseen.len(),
        list.join(", "),
        first.status,
        first.index,
        first.value("output_tokens"),
        first.output_chars,
        x.tool()
    ))
    .file(&x.file)
    .pointer(format!("/benchmarks/{}/requests/{}/{}", b.index, first.status, first.index))
    .data(json!({"requests": unseen.len()}));
}

/// What the version does with a success without a first token, or without a reply token.
fn empty_success_rule(family: Family, first_token: bool) -> &'static str {
    match (family, first_token) {
        (Family::V02, _) => "GuideLLM 0.2-0.3 leave a request of no output token out of output_token_count and the token latencies, and keep it in request_latency and the request counts",
        (Family::V04, true) => "GuideLLM 0.4-0.7.3 count its missing time_to_first_token_ms as 0 ms in the TTFT distributions (which it pulls down)",
        (Family::V074, true) => "GuideLLM 0.7.4 on leave a request with no first token out of the TTFT distributions, and keep it in request_latency and the request counts",
        (_, false) => "GuideLLM 0.4 on count it as 0 tokens in output_token_count (and 0 in the token latencies)",
    }
}

/// 0.2-0.3: a success that streamed no token keeps `first_token_time` -1.0 (`aggregator.py`
/// `first_iter_time or -1.0`), so its TTFT is minus the epoch in ms.
const NEGATIVE_TTFT: &str = "GuideLLM 0.2-0.3 record a success with no first token at first_token_time -1 (aggregator.py `first_iter_time or -1.0`), and count it with its output tokens (the server's, else the request's target), so this value enters the TTFT distributions, whose mean is then not a time, and a 0 ms TPOT and ITL";

/// A measured successful request with no first token, or no reply token.
fn empty_successes(x: &Report, b: &Benchmark, emit: &mut Emit) {
    for r in b.measured(x.family) {
        if r.status != "successful" {
            continue;
        }
        let ttft = r.values.get("time_to_first_token_ms").copied();
        let tokens = r.values.get("output_tokens").copied();
        let (what, rule) = match (ttft, tokens) {
            (Some(t), _) if t < 0.0 => {
                (format!("a time_to_first_token_ms of {t} ms"), NEGATIVE_TTFT)
            }
            (None, _) => (
                "no first token: it is counted as a success though nothing was streamed"
                    .to_string(),
                empty_success_rule(x.family, true),
            ),
            (_, None | Some(0.0)) => (
                "no reply token".to_string(),
                empty_success_rule(x.family, false),
            ),
            _ => continue,
        };
        emit.warning(format!(
            "benchmark {}: successful request {} has {what}; {rule} (docs row G5)",
            b.index, r.index
        ))
        .file(&x.file)
        .pointer(format!(
            "/benchmarks/{}/requests/successful/{}",
            b.index, r.index
        ));
    }
}

/// Failed requests the version takes into a printed `total` distribution without the value:
/// `or 0.0` counts each as 0 (a failed request shows as a 0 s latency and a 0-token reply).
fn failed_in_totals(x: &Report, b: &Benchmark, emit: &mut Emit) {
    for dist in x.family.dists() {
        let printed = b.metrics.get(dist.name);
        // A metric no request records (the round trips of a plain HTTP run) is zeros throughout.
        let recorded = b.requests.iter().any(|r| r.values.contains_key(dist.field));
        if !recorded || !printed.is_some_and(|m| m.contains_key("total")) {
            continue;
        }
        let zeros = b
            .requests
            .iter()
            .filter(|r| r.status != "successful" && r.kept(b, dist.keep))
            .filter(|r| !r.values.contains_key(dist.field))
            .count();
        if zeros == 0 {
            continue;
        }
        emit.warning(format!(
            "benchmark {}: {zeros} failed requests without a {} are counted as 0 in the total {} distribution, as {} does (`or 0.0`, docs row G5)",
            b.index, dist.field, dist.name, x.tool()
        ))
        .file(&x.file)
        .pointer(format!("/benchmarks/{}/metrics/{}/total", b.index, dist.name))
        .data(json!({"requests": zeros}));
    }
}

/// `speed.token-source` (docs row G10): reply tokens counted from streamed iterations, not the
/// server's usage.
fn token_source(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, token_source_of)
}

fn token_source_of(x: &Report, b: &Benchmark, emit: &mut Emit) {
    let measured = b.measured(x.family).len();
    let from_chunks = b.requests_where(|r| {
        r.kept(b, x.family.counted())
            && r.usage_recorded
            && r.usage_output.is_none()
            && r.values.get("output_tokens").is_some_and(|t| *t > 0.0)
    });
    if from_chunks.is_empty() {
        return;
    }
    emit.finding(format!(
        "benchmark {}: {} of {} requests have no usage from the server; {} counted their reply tokens as streamed iterations (one token each assumed, docs row G10)",
        b.index,
        from_chunks.len(),
        measured,
        x.tool()
    ))
    .file(&x.file)
    .pointer(format!("/benchmarks/{}/requests", b.index));
}

/// `speed.cached-tokens`, as a warning: prompt tokens the server served from its cache, which
/// GuideLLM times like any other (docs row G10); the figures are what it computed.
fn cached_tokens(x: &Report, emit: &mut Emit) -> Ran {
    per_benchmark(x, emit, cached_tokens_of)
}

fn cached_tokens_of(x: &Report, b: &Benchmark, emit: &mut Emit) {
    let measured = b.measured(x.family);
    let cached: Vec<&&Request> = measured
        .iter()
        .filter(|r| r.cached.is_some_and(|c| c > 0.0))
        .collect();
    if cached.is_empty() {
        return;
    }
    let n: f64 = cached.iter().filter_map(|r| r.cached).sum();
    emit.warning(format!(
        "benchmark {}: {} of its {} measured requests were served with cached prompt tokens ({n} in all, input_metrics.cached_tokens); {} times them like the others, so its TTFT and prompt-rate figures include prompts the server did not compute",
        b.index,
        cached.len(),
        measured.len(),
        x.tool()
    ))
    .file(&x.file)
    .pointer(format!("/benchmarks/{}/requests", b.index));
}

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
            .filter(|(name, _)| x.family.dists().iter().any(|d| d.name == *name));
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

#[cfg(test)]
mod tests;
