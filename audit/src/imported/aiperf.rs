//! AIPerf (NVIDIA, `aiperf profile`): `profile_export_aiperf.json` (the summary) beside
//! `profile_export.jsonl` (one record per request, written with `--export-level records` or `raw`).
//!
//! Definitions, as AIPerf 0.13 writes them (`aiperf/metrics/types/*.py`):
//! - units: every record and summary value carries its unit; latencies in ms, durations in s,
//!   throughputs in tokens/sec (or tokens/sec/user, requests/sec), counts in requests or tokens;
//! - TTFT anchor: `time_to_first_token` = first *content* response's time - request start
//!   (`request.start_perf_ns`); reasoning text counts as content, so `time_to_first_output_token`
//!   is also written (first non-reasoning token);
//! - token counts: `input_sequence_length` and `output_sequence_length` are counted by the client
//!   with `--tokenizer` on the prompt text and the reply text (the chat template is not counted);
//!   the server's `usage` is kept beside them as `usage_prompt_tokens`, `usage_completion_tokens`,
//!   `usage_prompt_cache_read_tokens`; `prefill_throughput_per_user` = input_sequence_length / TTFT;
//! - which requests the aggregates include: every distribution (`avg`, `min`, `max`, `std` with
//!   ddof 0, `p1`..`p99` by linear interpolation, `sum`, `count`) is over the profiling-phase
//!   records that carry the metric, and a record with an `error` carries none of the success
//!   metrics: failed requests are left out of latency and throughput figures, counted in
//!   `error_request_count` (and as +inf in the `adj_*` percentiles). `request_count` counts the
//!   valid requests, `completed_request_count` all of them; `benchmark_duration` = last response -
//!   first request; the throughputs divide totals by the phase's observation window.

use super::{percentile_linear, std_population, Checked};
use super::{FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, NOT_RECOMPUTABLE};
use super::{RUN_INCOMPLETE, TTFT_EMPTY_CHUNK};
use crate::check::About;
use crate::speed;
use serde_json::json;
use std::collections::BTreeMap;

/// One printed metric of the summary: its unit and its fields (`avg`, `p50`, `count`, ...).
#[derive(Debug, Clone, Default)]
pub struct Stat {
    /// The unit as printed.
    pub unit: String,
    /// Every numeric field as printed.
    pub fields: BTreeMap<String, f64>,
}

/// The summary file, typed.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// The file's name (findings point into it).
    pub file: String,
    /// `aiperf_version`.
    pub version: Option<String>,
    /// Every metric the file prints, by tag.
    pub metrics: BTreeMap<String, Stat>,
    /// `was_cancelled`.
    pub was_cancelled: Option<bool>,
    /// `is_complete`.
    pub is_complete: Option<bool>,
    /// `incomplete_reason`.
    pub incomplete_reason: Option<String>,
    /// Whether the endpoint was streamed (`input_config.endpoint.streaming`).
    pub streaming: Option<bool>,
}

/// One per-request record of `profile_export.jsonl`.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// Line number in the records file, from 1.
    pub line: usize,
    /// `metadata.benchmark_phase` (`profiling`, `warmup`).
    pub phase: String,
    /// `metadata.was_cancelled`.
    pub cancelled: bool,
    /// `error`: its code (HTTP status) and message.
    pub error: Option<(Option<i64>, String)>,
    /// `metadata.request_start_ns`.
    pub start_ns: Option<i64>,
    /// `metadata.request_end_ns`.
    pub end_ns: Option<i64>,
    /// Every metric of the record: one value, or the list a list metric holds.
    pub metrics: BTreeMap<String, Vec<f64>>,
    /// `metadata.x_request_id`: what ties it to its raw record.
    pub request_id: Option<String>,
}

/// One record of `profile_export_raw.jsonl` (`--export-level raw`): the request's start and
/// every streamed chunk's time and whether it carried generated text.
#[derive(Debug, Clone, Default)]
pub struct RawRecord {
    /// Line number in the raw file, from 1.
    pub line: usize,
    /// `metadata.x_request_id`.
    pub request_id: Option<String>,
    /// `start_perf_ns`.
    pub start_ns: i64,
    /// Each chunk: its `perf_ns` and whether its delta carried text (content or reasoning).
    pub chunks: Vec<(i64, bool)>,
}

impl Record {
    fn one(&self, tag: &str) -> Option<f64> {
        self.metrics.get(tag).and_then(|v| v.first().copied())
    }
}

/// Which record metric each printed total sums.
const TOTALS: &[(&str, &str)] = &[
    ("total_osl", "output_sequence_length"),
    ("total_isl", "input_sequence_length"),
    ("total_output_tokens", "output_token_count"),
    ("total_error_isl", "error_isl"),
    ("total_usage_completion_tokens", "usage_completion_tokens"),
    ("total_usage_prompt_tokens", "usage_prompt_tokens"),
    ("total_usage_total_tokens", "usage_total_tokens"),
    (
        "total_usage_prompt_cache_read_tokens",
        "usage_prompt_cache_read_tokens",
    ),
];

/// The fields of a distribution and how each is computed.
const FIELDS: &[&str] = &[
    "count", "sum", "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90",
    "p95", "p99",
];

/// Runs every AIPerf check.
pub fn check(
    s: &Summary,
    records: &[Record],
    records_file: &str,
    raw: Option<(&str, &[RawRecord])>,
) -> Checked {
    let mut out = Checked::default();
    let counted: Vec<&Record> = records.iter().filter(|r| r.phase == "profiling").collect();
    check_run_complete(s, &mut out);
    check_distributions(s, &counted, &mut out);
    check_totals(s, &counted, &mut out);
    check_counts(s, &counted, records_file, &mut out);
    check_throughputs(s, &counted, &mut out);
    check_failed_requests(&counted, records_file, &mut out);
    check_failed_as_zero(s, &counted, records_file, &mut out);
    check_token_source(&counted, records_file, &mut out);
    check_cached_tokens(s, &counted, records_file, &mut out);
    if let Some((raw_file, raw)) = raw {
        check_ttft_anchor(&counted, raw_file, raw, &mut out);
    }
    out
}

/// `import.ttft-empty-chunk` (and `speed.recompute-mismatch`): each record's TTFT against its
/// raw chunks: it must be the first chunk that carried text, less the request's start; a TTFT
/// at an earlier, empty chunk (the role-only first chunk of a chat stream) is named.
pub fn check_ttft_anchor(
    records: &[&Record],
    raw_file: &str,
    raw: &[RawRecord],
    out: &mut Checked,
) {
    out.ran(&TTFT_EMPTY_CHUNK);
    out.ran(&speed::RECOMPUTE_MISMATCH);
    let by_id: BTreeMap<&str, &Record> = records
        .iter()
        .filter_map(|r| r.request_id.as_deref().map(|id| (id, *r)))
        .collect();
    let ms = |t: i64, start: i64| (t - start) as f64 / 1e6;
    for x in raw {
        let Some(rec) = x.request_id.as_deref().and_then(|id| by_id.get(id)) else {
            continue;
        };
        let Some(ttft) = rec.one("time_to_first_token") else {
            continue;
        };
        let Some(text) = x.chunks.iter().find(|c| c.1).map(|c| ms(c.0, x.start_ns)) else {
            continue;
        };
        if (ttft - text).abs() <= 0.01 {
            continue;
        }
        let empty = x
            .chunks
            .iter()
            .take_while(|c| !c.1)
            .any(|c| (ms(c.0, x.start_ns) - ttft).abs() <= 0.01);
        let (row, msg): (About, _) = if empty {
            (TTFT_EMPTY_CHUNK.about(), format!("the TTFT of {ttft} ms is the time of a chunk with no text; the first text came at {text} ms"))
        } else {
            (speed::RECOMPUTE_MISMATCH.about(), format!("the TTFT of {ttft} ms is not the first text chunk's time in the raw record ({text} ms)"))
        };
        out.finding(row, msg)
            .file(raw_file)
            .pointer(format!("line {}", x.line))
            .data(json!({"record_line": rec.line, "ttft_ms": ttft, "first_text_ms": text}));
    }
}

/// `import.run-incomplete`: AIPerf says the run was cancelled or did not complete.
pub fn check_run_complete(s: &Summary, out: &mut Checked) {
    out.ran(&RUN_INCOMPLETE);
    let cancelled = s.was_cancelled == Some(true);
    if cancelled || s.is_complete == Some(false) {
        let why = s.incomplete_reason.clone().unwrap_or_default();
        out.finding(
            &RUN_INCOMPLETE,
            format!(
                "AIPerf marks the run {}{}: its figures cover only what ran before it stopped",
                if cancelled { "cancelled" } else { "incomplete" },
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                }
            ),
        )
        .file(&s.file)
        .pointer(if cancelled {
            "/was_cancelled"
        } else {
            "/is_complete"
        });
    }
}

/// The values of one metric over the records that carry it (list metrics flattened).
fn values(records: &[&Record], tag: &str) -> Vec<f64> {
    records
        .iter()
        .filter_map(|r| r.metrics.get(tag))
        .flatten()
        .copied()
        .collect()
}

/// One field of a distribution recomputed from its values.
fn field(sorted: &[f64], name: &str) -> Option<f64> {
    let n = sorted.len();
    let sum: f64 = sorted.iter().sum();
    match name {
        "count" => Some(n as f64),
        "sum" => Some(sum),
        "avg" => (n > 0).then(|| sum / n as f64),
        "min" => sorted.first().copied(),
        "max" => sorted.last().copied(),
        "std" => std_population(sorted),
        p => p
            .strip_prefix('p')
            .and_then(|q| q.parse::<f64>().ok())
            .and_then(|q| percentile_linear(sorted, q)),
    }
}

/// `speed.recompute-mismatch`: every distribution the summary prints (avg, min, max, std,
/// percentiles, sum, count) recomputed from the records that carry the metric.
pub fn check_distributions(s: &Summary, records: &[&Record], out: &mut Checked) {
    let mut missing = Vec::new();
    for (tag, stat) in &s.metrics {
        if !stat.fields.contains_key("count") && !stat.fields.contains_key("p50") {
            continue;
        }
        let mut v = values(records, tag);
        if v.is_empty() {
            missing.push(tag.as_str());
            continue;
        }
        v.sort_by(f64::total_cmp);
        for name in FIELDS {
            let (Some(&shown), Some(exact)) = (stat.fields.get(*name), field(&v, name)) else {
                continue;
            };
            let at = format!("/{tag}/{name}");
            let key = format!("aiperf.{tag}.{name}");
            let id = &speed::RECOMPUTE_MISMATCH;
            out.compare(id, (&s.file, &at), &key, exact, shown);
        }
    }
    not_recomputable(s, &missing, out);
}

/// `import.not-recomputable`: the printed distributions no record carries (time-sliced figures,
/// `adj_*` percentiles), in one finding.
fn not_recomputable(s: &Summary, tags: &[&str], out: &mut Checked) {
    out.ran(&NOT_RECOMPUTABLE);
    if tags.is_empty() {
        return;
    }
    out.finding(
        &NOT_RECOMPUTABLE,
        format!(
            "{} printed distributions are not checked, since no request record carries them: {}",
            tags.len(),
            tags.join(", ")
        ),
    )
    .file(&s.file)
    .data(json!({ "metrics": tags }));
}

/// `speed.recompute-mismatch`: the printed totals are the sums of their record metrics.
pub fn check_totals(s: &Summary, records: &[&Record], out: &mut Checked) {
    for (total, tag) in TOTALS {
        let Some(shown) = s.metrics.get(*total).and_then(|m| m.fields.get("avg")) else {
            continue;
        };
        let exact: f64 = values(records, tag).iter().sum();
        let at = format!("/{total}/avg");
        let key = format!("aiperf.{total}");
        out.compare(
            &speed::RECOMPUTE_MISMATCH,
            (&s.file, &at),
            &key,
            exact,
            *shown,
        );
    }
    let cached = s.metrics.get("overall_usage_prompt_cache_read_pct");
    let prompt: f64 = values(records, "usage_prompt_tokens").iter().sum();
    if let (Some(shown), true) = (cached.and_then(|m| m.fields.get("avg")), prompt > 0.0) {
        let exact = 100.0
            * values(records, "usage_prompt_cache_read_tokens")
                .iter()
                .sum::<f64>()
            / prompt;
        let at = "/overall_usage_prompt_cache_read_pct/avg";
        out.compare(
            &speed::RECOMPUTE_MISMATCH,
            (&s.file, at),
            "aiperf.overall_usage_prompt_cache_read_pct",
            exact,
            *shown,
        );
    }
}

/// `import.failed-hidden` (and `speed.recompute-mismatch` for the other counts): the request
/// counts against the records: valid, errored, all, and the error rate.
pub fn check_counts(s: &Summary, records: &[&Record], records_file: &str, out: &mut Checked) {
    out.ran(&FAILED_HIDDEN);
    let errors = records.iter().filter(|r| r.error.is_some()).count() as f64;
    let all = records.len() as f64;
    let printed = |k: &str| s.metrics.get(k).and_then(|m| m.fields.get("avg")).copied();
    let shown_errors = printed("error_request_count");
    if errors > 0.0 && shown_errors.unwrap_or(0.0) < errors {
        out.finding(
            &FAILED_HIDDEN,
            format!(
                "{records_file} holds {errors} failed requests but the summary counts {}: they are dropped from every figure",
                shown_errors.map_or("none".to_string(), |v| v.to_string())
            ),
        )
        .file(&s.file)
        .pointer("/error_request_count")
        .data(json!({"records": errors, "printed": shown_errors}));
    } else if let Some(shown) = shown_errors {
        out.compare(
            &FAILED_HIDDEN,
            (&s.file, "/error_request_count/avg"),
            "aiperf.error_request_count",
            errors,
            shown,
        );
    }
    let id = &speed::RECOMPUTE_MISMATCH;
    if let Some(v) = printed("request_count") {
        out.compare(
            id,
            (&s.file, "/request_count/avg"),
            "aiperf.request_count",
            all - errors,
            v,
        );
    }
    if let Some(v) = printed("completed_request_count") {
        out.compare(
            id,
            (&s.file, "/completed_request_count/avg"),
            "aiperf.completed_request_count",
            all,
            v,
        );
    }
    if let (Some(v), true) = (printed("request_error_rate"), all > 0.0) {
        out.compare(
            id,
            (&s.file, "/request_error_rate/avg"),
            "aiperf.request_error_rate",
            100.0 * errors / all,
            v,
        );
    }
}

/// `speed.recompute-mismatch`: the benchmark duration against the records' span (to 1 ms or
/// 0.1 %), and every throughput against one observation window: request count, output, input
/// and total tokens divided by their throughputs must give one duration, no shorter than the
/// records' span (a shorter window inflates every rate).
pub fn check_throughputs(s: &Summary, records: &[&Record], out: &mut Checked) {
    let start = records.iter().filter_map(|r| r.start_ns).min();
    let end = records.iter().filter_map(|r| r.end_ns).max();
    let (Some(start), Some(end)) = (start, end) else {
        return;
    };
    let span = (end - start) as f64 / 1e9;
    let id = &speed::RECOMPUTE_MISMATCH;
    let printed = |k: &str| s.metrics.get(k).and_then(|m| m.fields.get("avg")).copied();
    out.ran(id);
    if let Some(d) = printed("benchmark_duration") {
        out.recomputed.push(crate::report::Recomputed {
            key: "aiperf.benchmark_duration".into(),
            value: Some(span),
            file: Some(d),
            page: None,
        });
        if (d - span).abs() > 0.001f64.max(0.001 * span) {
            mismatch(
                out,
                &s.file,
                "/benchmark_duration/avg",
                "benchmark_duration",
                d,
                span,
                "the records' span (last end - first start)",
            );
        }
    }
    let total = |k: &str| printed(k);
    let pairs = [
        ("request_throughput", total("request_count")),
        ("output_token_throughput", total("total_osl")),
        ("input_token_throughput", total("total_isl")),
        (
            "total_token_throughput",
            total("total_isl")
                .zip(total("total_osl"))
                .map(|(a, b)| a + b),
        ),
    ];
    for (rate, amount) in pairs {
        let (Some(r), Some(a)) = (printed(rate), amount) else {
            continue;
        };
        if r <= 0.0 {
            continue;
        }
        let window = a / r;
        if window < span * (1.0 - 1e-6) - 0.001 {
            let what =
                format!("a window of {window:.6} s, shorter than the records' span of {span:.6} s");
            mismatch(
                out,
                &s.file,
                &format!("/{rate}/avg"),
                rate,
                r,
                a / span,
                &what,
            );
        }
    }
}

fn mismatch(out: &mut Checked, file: &str, at: &str, key: &str, shown: f64, exact: f64, why: &str) {
    out.finding(
        &speed::RECOMPUTE_MISMATCH,
        format!("{key} is printed as {shown} but its records give {exact} ({why})"),
    )
    .at(file, at)
    .data(json!({"printed": shown, "recomputed": exact}));
}

/// `import.failed-requests`: failed and cancelled requests named with their errors, since every
/// success figure of AIPerf leaves them out.
pub fn check_failed_requests(records: &[&Record], records_file: &str, out: &mut Checked) {
    out.ran(&FAILED_REQUESTS);
    let failed: Vec<&&Record> = records
        .iter()
        .filter(|r| r.error.is_some() || r.cancelled)
        .collect();
    if failed.is_empty() {
        return;
    }
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for r in &failed {
        let k = match &r.error {
            Some((code, msg)) => format!(
                "{} {}",
                code.map_or("-".into(), |c| c.to_string()),
                short(msg)
            ),
            None => "cancelled".into(),
        };
        *why.entry(k).or_default() += 1;
    }
    let lines: Vec<String> = failed.iter().map(|r| r.line.to_string()).collect();
    let list: Vec<String> = why.iter().map(|(k, n)| format!("{n} x {k}")).collect();
    out.finding(
        &FAILED_REQUESTS,
        format!(
            "{} of {} requests failed or were cancelled ({}); AIPerf's latency and throughput figures are over the other {} only",
            failed.len(),
            records.len(),
            list.join("; "),
            records.len() - failed.len()
        ),
    )
    .file(records_file)
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"failed": failed.len(), "total": records.len(), "lines": lines}));
}

/// The gist of an error message: a JSON error body's own message, cut to 160 characters.
fn short(msg: &str) -> String {
    let inner = serde_json::from_str::<serde_json::Value>(msg)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(|m| m.as_str())
                .map(String::from)
        })
        .unwrap_or_else(|| msg.to_string());
    inner.chars().take(160).collect()
}

/// `import.failed-as-zero`: a request counted as valid (no error) that got no reply: zero output
/// tokens, or no first token on a streamed endpoint, yet inside the distributions.
pub fn check_failed_as_zero(
    s: &Summary,
    records: &[&Record],
    records_file: &str,
    out: &mut Checked,
) {
    out.ran(&FAILED_AS_ZERO);
    for r in records.iter().filter(|r| r.error.is_none() && !r.cancelled) {
        let osl = r.one("output_sequence_length");
        let usage = r.one("usage_completion_tokens");
        let no_ttft = s.streaming == Some(true) && r.one("time_to_first_token").is_none();
        let zero = osl == Some(0.0) || usage == Some(0.0) || (osl.is_none() && usage.is_none());
        if zero || no_ttft {
            out.finding(
                &FAILED_AS_ZERO,
                format!(
                    "a request with {} is counted as valid (no error), so it enters the request count and throughput as a success",
                    if zero { "no reply tokens" } else { "no first token" }
                ),
            )
            .file(records_file)
            .pointer(format!("line {}", r.line));
        }
    }
}

/// `speed.token-source`: the reply and prompt token counts AIPerf's figures use are the client's
/// tokenizer counts; where the server's usage disagrees, say by how much.
pub fn check_token_source(records: &[&Record], records_file: &str, out: &mut Checked) {
    out.ran(&speed::TOKEN_SOURCE);
    for (client, usage, what) in [
        ("output_sequence_length", "usage_completion_tokens", "reply"),
        ("input_sequence_length", "usage_prompt_tokens", "prompt"),
    ] {
        let mut differ = Vec::new();
        let mut worst: f64 = 0.0;
        for r in records {
            if let (Some(c), Some(u)) = (r.one(client), r.one(usage)) {
                if c != u {
                    differ.push(r.line.to_string());
                    worst = worst.max(if u > 0.0 {
                        100.0 * (c - u).abs() / u
                    } else {
                        100.0
                    });
                }
            }
        }
        if differ.is_empty() {
            continue;
        }
        out.finding(
            &speed::TOKEN_SOURCE,
            format!(
                "{} of {} requests' {what} token counts ({client}, counted by the client's tokenizer, which AIPerf's figures use) differ from the server's usage ({usage}), by up to {worst:.1} %",
                differ.len(),
                records.len()
            ),
        )
        .file(records_file)
        .pointer(format!("line {}", differ.join(", ")))
        .data(json!({"requests": differ.len(), "worst_pct": worst}));
    }
}

/// `speed.cached-tokens`: the server says prompt tokens were read from its cache, so
/// `prefill_throughput_per_user` (prompt tokens / TTFT) counts tokens that were not computed.
pub fn check_cached_tokens(
    s: &Summary,
    records: &[&Record],
    records_file: &str,
    out: &mut Checked,
) {
    out.ran(&speed::CACHED_TOKENS);
    let cached: Vec<&&Record> = records
        .iter()
        .filter(|r| {
            r.one("usage_prompt_cache_read_tokens")
                .is_some_and(|c| c > 0.0)
        })
        .collect();
    if cached.is_empty() {
        return;
    }
    let tokens: f64 = cached
        .iter()
        .filter_map(|r| r.one("usage_prompt_cache_read_tokens"))
        .sum();
    let lines: Vec<String> = cached.iter().map(|r| r.line.to_string()).collect();
    let prefill = s.metrics.contains_key("prefill_throughput_per_user");
    out.finding(
        &speed::CACHED_TOKENS,
        format!(
            "{} of {} requests were served with cached prompt tokens ({tokens} in all){}",
            cached.len(),
            records.len(),
            if prefill {
                ": prefill_throughput_per_user and the TTFT figures include prompts the server did not compute"
            } else {
                ""
            }
        ),
    )
    .file(records_file)
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"requests": cached.len(), "cached_tokens": tokens}));
}
