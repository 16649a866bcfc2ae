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

use super::PERCENTILE_FEW_SAMPLES;
use super::{compare, percentile_linear, record, row, std_population, Row};
use super::{impossible, Spread, IMPOSSIBLE_AGGREGATE, REASONING_ONLY};
use super::{not_checked, RUN_INCOMPLETE, TTFT_EMPTY_CHUNK};
use super::{FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, NOT_RECOMPUTABLE, RECORDS_MISSING};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;
use std::collections::BTreeMap;

mod recompute;
use recompute::*;

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
    /// `error_summary`: each kind of error, its count and `code type: message`.
    pub errors: Vec<(f64, String)>,
    /// `end_time` - `start_time` in seconds (both printed to the microsecond): from 0.12.0 on the
    /// window every throughput is over (docs/formats/aiperf.md row A4).
    pub window_s: Option<f64>,
    /// Whether the file is GenAI-Perf's (`profile_export_genai_perf.json`, rows G1-G4).
    pub genai_perf: bool,
}

impl Summary {
    /// Whether this version computes its figures from the column store (0.12.0 on: timestamps as
    /// 64-bit floats, throughputs over the phase's window; rows A3, A4). Unknown before 0.3.0,
    /// which prints no version: those are older.
    /// The tool that wrote it, as findings name it.
    fn tool(&self) -> &'static str {
        if self.genai_perf {
            "GenAI-Perf"
        } else {
            "AIPerf"
        }
    }

    fn column_store(&self) -> bool {
        let Some(v) = self.version.as_deref() else {
            return false;
        };
        let mut parts = v
            .split(['.', '+', '-'])
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        major > 0 || minor >= 12
    }
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

    /// Whether AIPerf counted the request as failed (docs/formats/aiperf.md row A5): it carries
    /// an `error`, or it was processed as invalid, and then it carries no `request_latency` (only
    /// error metrics such as `error_isl`): 0.2.0-0.3.0 write a reply with no content so, with no
    /// error named.
    pub fn failed(&self) -> bool {
        self.error.is_some() || !self.metrics.contains_key("request_latency")
    }

    /// Its last response's time as AIPerf's `max_response_timestamp` takes it (row A3): the
    /// request's start plus its `request_latency`, in ns.
    fn response_end_ns(&self) -> Option<i64> {
        let latency_ns = (self.one("request_latency")? * 1e6).round() as i64;
        Some(self.start_ns? + latency_ns)
    }
}

/// Which record metric each printed total sums.
const TOTALS: &[(&str, &str)] = &[
    ("total_osl", "output_sequence_length"),
    ("total_isl", "input_sequence_length"),
    ("total_output_tokens", "output_token_count"),
    ("total_error_isl", "error_isl"),
    ("total_reasoning_tokens", "reasoning_token_count"),
    ("total_usage_completion_tokens", "usage_completion_tokens"),
    ("total_usage_prompt_tokens", "usage_prompt_tokens"),
    ("total_usage_total_tokens", "usage_total_tokens"),
    (
        "total_usage_prompt_cache_read_tokens",
        "usage_prompt_cache_read_tokens",
    ),
];

/// The single figures (not distributions) the checks recompute: the totals of [`TOTALS`] and these
/// (rows A3, A4, A5); every other one printed is named by `import.not-recomputable`.
const RECOMPUTED_SINGLE: &[&str] = &[
    "request_count",
    "completed_request_count",
    "error_request_count",
    "request_error_rate",
    "benchmark_duration",
    "min_request_timestamp",
    "max_response_timestamp",
    "request_throughput",
    "output_token_throughput",
    "input_token_throughput",
    "total_token_throughput",
    "overall_usage_prompt_cache_read_pct",
];

/// The fields of a distribution and how each is computed.
const FIELDS: &[&str] = &[
    "count", "sum", "avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90",
    "p95", "p99",
];

/// One AIPerf export as the checks read it: the summary, every request record, and the raw
/// records when given.
#[derive(Debug, Clone, Default)]
pub struct Export {
    /// The summary.
    pub summary: Summary,
    /// Every record of the records file, every phase.
    pub records: Vec<Record>,
    /// The records file's name.
    pub records_file: String,
    /// The raw records file's name and its records, when given.
    pub raw: Option<(String, Vec<RawRecord>)>,
}

impl Export {
    /// The profiling-phase records: those AIPerf's figures are over.
    pub fn counted(&self) -> Vec<&Record> {
        self.records
            .iter()
            .filter(|r| r.phase == "profiling")
            .collect()
    }

    /// The valid requests the records hold against those the summary counts, when they are
    /// fewer (records missing).
    fn short(&self) -> Option<(f64, f64)> {
        let valid = self.counted().iter().filter(|r| !r.failed()).count() as f64;
        let counted = printed(&self.summary, "request_count")?;
        (!self.records.is_empty() && valid < counted).then_some((valid, counted))
    }

    /// Whether the records hold every request the summary counts (so its aggregates can be
    /// recomputed from them).
    fn complete(&self) -> bool {
        !self.records.is_empty() && self.short().is_none()
    }
}

/// Every AIPerf check, in the order they run.
pub const CHECKS: &[Row<Export>] = &[
    row(RUN_INCOMPLETE, run_complete),
    row(speed::RECOMPUTE_MISMATCH.about(), recompute),
    row(NOT_RECOMPUTABLE, not_recomputable),
    row(FAILED_HIDDEN, failed_hidden),
    row(FAILED_REQUESTS, failed_requests),
    row(FAILED_AS_ZERO, failed_as_zero),
    row(speed::TOKEN_SOURCE.about(), token_source),
    row(speed::CACHED_TOKENS.about(), cached_tokens),
    row(TTFT_EMPTY_CHUNK, ttft_empty_chunk),
    row(RECORDS_MISSING, records_missing),
    row(REASONING_ONLY, reasoning_only),
    row(IMPOSSIBLE_AGGREGATE, impossible_aggregates),
    row(PERCENTILE_FEW_SAMPLES, percentile_few_samples),
];

/// `import.percentile-few-samples` (row A7): each printed percentile (`p1` .. `p99`) against the `count`
/// its distribution says it was taken from ([`super::FewSamples`]).
fn percentile_few_samples(x: &Export, emit: &mut Emit) -> Ran {
    let s = &x.summary;
    let mut few = super::FewSamples::default();
    for (tag, stat) in printed_distributions(s) {
        let Some(n) = stat.fields.get("count").map(|c| *c as usize) else {
            continue;
        };
        let f = |k: &str| stat.fields.get(k).copied();
        let exact = f("min").is_some() && f("min") == f("max");
        let percentiles: Vec<(f64, &str)> = stat
            .fields
            .keys()
            .filter_map(|k| {
                Some((
                    k.strip_prefix('p')?.parse::<f64>().ok()? / 100.0,
                    k.as_str(),
                ))
            })
            .collect();
        few.add(tag, n, exact, &percentiles);
    }
    few.emit(emit, &s.file, "", |tag, name| format!("/{tag}/{name}"))
        .then_some(())
}

/// `import.impossible-aggregate` (row A7): per printed distribution, its avg within its min and max, and
/// its percentiles in order between them.
fn impossible_aggregates(x: &Export, emit: &mut Emit) -> Ran {
    let s = &x.summary;
    for (tag, stat) in printed_distributions(s) {
        let f = |k: &str| stat.fields.get(k).copied();
        let percentiles = stat
            .fields
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix('p')?.parse::<f64>().ok()?, k.clone(), *v)))
            .collect();
        let spread = Spread {
            min: f("min"),
            mean: f("avg"),
            max: f("max"),
            percentiles,
        };
        if let Some((msg, figure)) = impossible(tag, &spread) {
            let field = if figure == "mean" {
                "avg"
            } else {
                figure.as_str()
            };
            emit.finding(msg).at(&s.file, format!("/{tag}/{field}"));
        }
    }
    Some(())
}

/// `import.records-missing` (rows A2, A5): fewer valid records than the summary's request count.
fn records_missing(x: &Export, emit: &mut Emit) -> Ran {
    if x.records.is_empty() {
        return None;
    }
    if let Some((valid, counted)) = x.short() {
        emit.finding(format!("the summary counts {counted} valid requests but {} holds {valid}: the records of the rest are absent, so no aggregate is recomputed", x.records_file))
            .file(&x.records_file)
            .data(json!({"records": valid, "request_count": counted}));
    }
    Some(())
}

/// `import.reasoning-only-replies` (row A8): fewer requests with answer tokens (`output_token_count`'s
/// count) than valid requests, where reasoning tokens are counted: the other replies are
/// reasoning only, cut before any answer, yet their tokens are in the output figures.
fn reasoning_only(x: &Export, emit: &mut Emit) -> Ran {
    let s = &x.summary;
    let reasoning = s.metrics.get("reasoning_token_count")?;
    let answered = s
        .metrics
        .get("output_token_count")?
        .fields
        .get("count")
        .copied()?;
    let requests = printed(s, "request_count")?;
    if answered < requests {
        emit.finding(format!(
            "{} of the {requests} valid requests carried reasoning tokens only (output_token_count counts {answered} with answer tokens; reasoning_token_count {}): replies cut inside their reasoning, yet counted in the output token figures",
            requests - answered,
            reasoning.fields.get("count").map_or("-".into(), |c| c.to_string())
        ))
        .file(&s.file)
        .pointer("/output_token_count/count")
        .data(json!({"answered": answered, "requests": requests}));
    }
    Some(())
}

/// `speed.recompute-mismatch` (rows A3, A4, A7, G3, G4): every throughput against the totals and duration the summary
/// prints (row A4), and with every record: every distribution, total, count, the duration and
/// (with the raw records) each TTFT against its chunks.
fn recompute(x: &Export, emit: &mut Emit) -> Ran {
    let s = &x.summary;
    let mut compared = !s.genai_perf && rates(s, emit);
    if x.complete() {
        let counted = x.counted();
        if s.genai_perf {
            compared |= genai_rates(s, &counted, emit);
        }
        compared |= distributions(s, &counted, emit);
        compared |= totals(s, &counted, emit);
        compared |= counts(s, &counted, emit);
        compared |= duration(s, &counted, emit);
        if let Some((raw_file, raw)) = &x.raw {
            ttft_anchor(&counted, raw_file, raw, Anchor::NotAtAChunk, emit);
            compared = true;
        }
    }
    compared.then_some(())
}

/// `import.ttft-empty-chunk` (row A7): with the raw records, a TTFT taken at an empty chunk.
fn ttft_empty_chunk(x: &Export, emit: &mut Emit) -> Ran {
    let (raw_file, raw) = x.raw.as_ref()?;
    ttft_anchor(&x.counted(), raw_file, raw, Anchor::AtAnEmptyChunk, emit);
    Some(())
}

/// Which TTFTs that are not the first text chunk's time [`ttft_anchor`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    /// Those at the time of an earlier chunk that carried no text (`import.ttft-empty-chunk`).
    AtAnEmptyChunk,
    /// Those at no chunk's time (`speed.recompute-mismatch`).
    NotAtAChunk,
}

/// Each record's TTFT against its raw chunks: it must be the first chunk that carried text, less
/// the request's start; a TTFT at an earlier, empty chunk (the role-only first chunk of a chat
/// stream) is `import.ttft-empty-chunk`, one at no chunk's time `speed.recompute-mismatch`;
/// `which` says which of the two this call names.
fn ttft_anchor(
    records: &[&Record],
    raw_file: &str,
    raw: &[RawRecord],
    which: Anchor,
    emit: &mut Emit,
) {
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
        let msg = match (empty, which) {
            (true, Anchor::AtAnEmptyChunk) => format!("the TTFT of {ttft} ms is the time of a chunk with no text; the first text came at {text} ms"),
            (false, Anchor::NotAtAChunk) => format!("the TTFT of {ttft} ms is not the first text chunk's time in the raw record ({text} ms)"),
            _ => continue,
        };
        emit.finding(msg)
            .file(raw_file)
            .pointer(format!("line {}", x.line))
            .data(json!({"record_line": rec.line, "ttft_ms": ttft, "first_text_ms": text}));
    }
}

/// `import.run-incomplete` (docs/formats/aiperf.md row A2): AIPerf says the run was cancelled or did not complete.
fn run_complete(x: &Export, emit: &mut Emit) -> Ran {
    let s = &x.summary;
    let cancelled = s.was_cancelled == Some(true);
    if cancelled || s.is_complete == Some(false) {
        let why = s.incomplete_reason.clone().unwrap_or_default();
        emit.finding(format!(
            "AIPerf marks the run {}{}: its figures cover only what ran before it stopped",
            if cancelled { "cancelled" } else { "incomplete" },
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({why})")
            }
        ))
        .file(&s.file)
        .pointer(if cancelled {
            "/was_cancelled"
        } else {
            "/is_complete"
        });
    }
    Some(())
}

/// `import.not-recomputable` (rows A1, A11): the printed distributions no record carries (time-sliced figures,
/// `adj_*` percentiles), in one finding; without records, every printed distribution, said so
/// (`records: false` in its data: the verdict's coverage says "summary only").
fn not_recomputable(x: &Export, emit: &mut Emit) -> Ran {
    let s = &x.summary;
    if x.records.is_empty() {
        let tags: Vec<&str> = printed_distributions(s).map(|(t, _)| t.as_str()).collect();
        if !tags.is_empty() {
            emit.finding(format!(
                "summary only: its {} printed distributions are not recomputed, since no per-request records (profile_export.jsonl, written from 0.2.0 on) were given: {}",
                tags.len(),
                tags.join(", ")
            ))
            .file(&s.file)
            .data(json!({"metrics": tags, "records": false}));
        }
        return Some(());
    }
    let counted = x.counted();
    let mut tags: Vec<&str> = printed_distributions(s)
        .filter(|(tag, _)| values(&counted, tag).is_empty())
        .map(|(tag, _)| tag.as_str())
        .collect();
    // Counts against thresholds or goals the file does not hold (AIPERF_* environment settings,
    // --goodput): usage_discrepancy_count, osl_mismatch_count, good_request_count, ...
    let recomputed =
        |t: &str| RECOMPUTED_SINGLE.contains(&t) || TOTALS.iter().any(|(k, _)| *k == t);
    tags.extend(
        s.metrics
            .iter()
            .filter(|(t, m)| m.fields.contains_key("avg") && !recomputed(t))
            .filter(|(_, m)| m.fields.get("count").is_none_or(|c| *c == 1.0))
            .filter(|(t, _)| !printed_distributions(s).any(|(d, _)| d == *t))
            .map(|(t, _)| t.as_str()),
    );
    let why = "no request record carries them, or (single counts) they count against thresholds the file does not hold";
    not_checked(
        emit,
        (&s.file, "metrics"),
        ("printed distributions", why),
        &tags,
    )
}

/// `import.failed-hidden` (row A5): failed records the summary's error count leaves out (or a count the
/// records do not give).
fn failed_hidden(x: &Export, emit: &mut Emit) -> Ran {
    // GenAI-Perf prints no error count (row G2): its dropped requests are import.failed-requests.
    if !x.complete() || x.summary.genai_perf {
        return None;
    }
    let s = &x.summary;
    let (errors, shown) = errors(s, &x.counted());
    if errors > 0.0 && shown.unwrap_or(0.0) < errors {
        emit.finding(format!(
            "{} holds {errors} failed requests but the summary counts {}: they are dropped from every figure",
            x.records_file,
            shown.map_or("none".to_string(), |v| v.to_string())
        ))
        .file(&s.file)
        .pointer("/error_request_count")
        .data(json!({"records": errors, "printed": shown}));
    } else if let Some(shown) = shown {
        let at = (s.file.as_str(), "/error_request_count/avg");
        super::agrees_or_report(emit, at, "aiperf.error_request_count", errors, shown);
    }
    Some(())
}

/// `import.failed-requests` (rows A5, A6, G2): failed and cancelled requests named with their errors, since every
/// success figure of AIPerf leaves them out.
fn failed_requests(x: &Export, emit: &mut Emit) -> Ran {
    if x.records.is_empty() {
        return failed_in_summary(&x.summary, emit);
    }
    let records = x.counted();
    let failed: Vec<&&Record> = records
        .iter()
        .filter(|r| r.failed() || r.cancelled)
        .collect();
    if failed.is_empty() {
        return Some(());
    }
    let mut why: BTreeMap<String, usize> = BTreeMap::new();
    for r in &failed {
        let k = match &r.error {
            Some((code, msg)) => format!(
                "{} {}",
                code.map_or("-".into(), |c| c.to_string()),
                short(msg)
            ),
            None if r.cancelled => "cancelled".into(),
            None => format!(
                "no error named (a reply {} found no content in)",
                x.summary.tool()
            ),
        };
        *why.entry(k).or_default() += 1;
    }
    let lines: Vec<String> = failed.iter().map(|r| r.line.to_string()).collect();
    let list: Vec<String> = why.iter().map(|(k, n)| format!("{n} x {k}")).collect();
    // Row G2: GenAI-Perf counts them in request_throughput all the same.
    let genai = if x.summary.genai_perf {
        ", but its request_throughput counts them"
    } else {
        ""
    };
    emit.finding(format!(
        "{} of {} requests failed or were cancelled ({}); {}'s latency and throughput figures are over the other {} only{genai}",
        failed.len(),
        records.len(),
        list.join("; "),
        x.summary.tool(),
        records.len() - failed.len()
    ))
    .file(&x.records_file)
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"failed": failed.len(), "total": records.len(), "lines": lines}));
    Some(())
}

/// Without records: the failed requests the summary counts, with its `error_summary`.
fn failed_in_summary(s: &Summary, emit: &mut Emit) -> Ran {
    let errors = printed(s, "error_request_count")?;
    if errors > 0.0 {
        let valid = printed(s, "request_count").map_or(String::new(), |n| {
            format!("; its figures are over the other {n}")
        });
        let named: f64 = s.errors.iter().map(|(n, _)| n).sum();
        let kinds: Vec<String> = s.errors.iter().map(|(n, k)| format!("{n} x {k}")).collect();
        let mut why = kinds.join("; ");
        if named < errors {
            // Row A5: a reply with no content is failed with no error named (0.1.1-0.3.0).
            why.push_str(&format!(
                "{}{} with no error named in error_summary (AIPerf counts a reply it found no content in as failed without naming an error)",
                if why.is_empty() { "" } else { "; " },
                errors - named
            ));
        }
        emit.finding(format!(
            "the summary counts {errors} failed or cancelled requests ({why}){valid}"
        ))
        .file(&s.file)
        .pointer("/error_request_count")
        .data(json!({"failed": errors, "named": named}));
    }
    Some(())
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

/// `import.failed-as-zero` (row A5): a request counted as valid (no error) that got no reply: zero output
/// tokens, or no first token on a streamed endpoint, yet inside the distributions.
fn failed_as_zero(x: &Export, emit: &mut Emit) -> Ran {
    let s = &x.summary;
    for r in x.counted().iter().filter(|r| !r.failed() && !r.cancelled) {
        let osl = r.one("output_sequence_length");
        let usage = r.one("usage_completion_tokens");
        let no_ttft = s.streaming == Some(true) && r.one("time_to_first_token").is_none();
        // GenAI-Perf's records hold no token counts (row G1): no count is not zero there.
        let uncounted = osl.is_none() && usage.is_none() && !s.genai_perf;
        let zero = osl == Some(0.0) || usage == Some(0.0) || uncounted;
        if zero || no_ttft {
            emit.warning(format!(
                "{} counts a request with {} as valid (no error): it enters the request count and throughput as a success",
                s.tool(),
                if zero { "no reply tokens" } else { "no first token" }
            ))
            .file(&x.records_file)
            .pointer(format!("line {}", r.line));
        }
    }
    Some(())
}

/// `speed.token-source` (row A8): the reply and prompt token counts AIPerf's figures use are the client's
/// tokenizer counts; where the server's usage disagrees, say by how much.
fn token_source(x: &Export, emit: &mut Emit) -> Ran {
    let records = x.counted();
    for (client, usage, what) in [
        ("output_sequence_length", "usage_completion_tokens", "reply"),
        ("input_sequence_length", "usage_prompt_tokens", "prompt"),
    ] {
        let mut differ = Vec::new();
        let mut worst: f64 = 0.0;
        for r in &records {
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
        emit.finding(format!(
            "{} of {} requests' {what} token counts ({client}, counted by the client's tokenizer, which AIPerf's figures use) differ from the server's usage ({usage}), by up to {worst:.1} %",
            differ.len(),
            records.len()
        ))
        .file(&x.records_file)
        .pointer(format!("line {}", differ.join(", ")))
        .data(json!({"requests": differ.len(), "worst_pct": worst}));
    }
    Some(())
}

/// `speed.cached-tokens` (row A9): the server says prompt tokens were read from its cache, so
/// `prefill_throughput_per_user` (prompt tokens / TTFT) counts tokens that were not computed.
fn cached_tokens(x: &Export, emit: &mut Emit) -> Ran {
    let (s, records) = (&x.summary, x.counted());
    let cached: Vec<&&Record> = records
        .iter()
        .filter(|r| {
            r.one("usage_prompt_cache_read_tokens")
                .is_some_and(|c| c > 0.0)
        })
        .collect();
    if cached.is_empty() {
        return Some(());
    }
    let tokens: f64 = cached
        .iter()
        .filter_map(|r| r.one("usage_prompt_cache_read_tokens"))
        .sum();
    let lines: Vec<String> = cached.iter().map(|r| r.line.to_string()).collect();
    let prefill = ["prefill_throughput_per_user", "prefill_throughput"]
        .into_iter()
        .find(|k| s.metrics.contains_key(*k))
        .map_or(String::new(), |k| {
            format!(" and its {k} (input_sequence_length / TTFT)")
        });
    emit.warning(format!(
        "{} of {} requests were served with cached prompt tokens ({tokens} in all): {}'s TTFT figures{prefill} include prompt tokens the server did not compute",
        cached.len(),
        records.len(),
        s.tool(),
    ))
    .file(&x.records_file)
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"requests": cached.len(), "cached_tokens": tokens}));
    Some(())
}
