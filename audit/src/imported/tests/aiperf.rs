//! The rows of [`crate::imported::aiperf`].

use super::{case, check_cases, lowered, quiet, Case};
use crate::imported::aiperf::{Export, RawRecord, Record, Stat, Summary, CHECKS};
use crate::imported::{FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, IMPOSSIBLE_AGGREGATE};
use crate::imported::{NOT_RECOMPUTABLE, REASONING_ONLY, RECORDS_MISSING, RUN_INCOMPLETE};
use crate::imported::{PERCENTILE_FEW_SAMPLES, TTFT_EMPTY_CHUNK};
use crate::report::Severity;
use crate::speed;

fn stat(fields: &[(&str, f64)]) -> Stat {
    Stat {
        unit: String::new(),
        fields: fields.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}

/// A profiling record of one valid request: its TTFT (ms), reply tokens, and start and end (ns),
/// its request_latency their difference.
fn record(line: usize, id: &str, ttft: f64, osl: f64, span: (i64, i64)) -> Record {
    let metrics = [
        ("request_latency", (span.1 - span.0) as f64 / 1e6),
        ("time_to_first_token", ttft),
        ("output_sequence_length", osl),
        ("usage_completion_tokens", osl),
        ("output_token_count", osl),
        ("reasoning_token_count", 1.0),
        ("input_sequence_length", 3.0),
        ("usage_prompt_tokens", 3.0),
    ];
    Record {
        line,
        phase: "profiling".into(),
        start_ns: Some(span.0),
        end_ns: Some(span.1),
        metrics: metrics
            .iter()
            .map(|(k, v)| (k.to_string(), vec![*v]))
            .collect(),
        request_id: Some(id.into()),
        ..Default::default()
    }
}

/// A raw record whose chunks come at these ms after its start (and whether each carried text).
fn raw(line: usize, id: &str, start_ns: i64, chunks: &[(f64, bool)]) -> RawRecord {
    RawRecord {
        line,
        request_id: Some(id.into()),
        start_ns,
        chunks: chunks
            .iter()
            .map(|(ms, text)| (start_ns + (ms * 1e6) as i64, *text))
            .collect(),
    }
}

/// Two streamed requests over 2 s, their summary and raw records, all agreeing.
fn clean() -> Export {
    let metrics = [
        ("request_count", stat(&[("avg", 2.0)])),
        ("completed_request_count", stat(&[("avg", 2.0)])),
        ("error_request_count", stat(&[("avg", 0.0)])),
        ("benchmark_duration", stat(&[("avg", 2.0)])),
        (
            "time_to_first_token",
            stat(&[
                ("count", 2.0),
                ("avg", 15.0),
                ("min", 10.0),
                ("max", 20.0),
                ("p50", 15.0),
            ]),
        ),
        ("output_token_count", stat(&[("count", 2.0), ("avg", 6.0)])),
        (
            "reasoning_token_count",
            stat(&[("count", 2.0), ("avg", 1.0)]),
        ),
    ];
    Export {
        summary: Summary {
            file: "profile_export_aiperf.json".into(),
            metrics: metrics
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            streaming: Some(true),
            ..Default::default()
        },
        records: vec![
            record(1, "a", 10.0, 5.0, (0, 1_000_000_000)),
            record(2, "b", 20.0, 7.0, (500_000_000, 2_000_000_000)),
        ],
        records_file: "profile_export.jsonl".into(),
        raw: Some((
            "profile_export_raw.jsonl".into(),
            vec![
                raw(1, "a", 0, &[(10.0, true)]),
                raw(2, "b", 500_000_000, &[(20.0, true)]),
            ],
        )),
    }
}

/// No records: the summary alone (its distributions are then `import.not-recomputable`).
fn summary_only() -> Export {
    Export {
        records: Vec::new(),
        raw: None,
        ..clean()
    }
}

/// The summary alone, with its single figures only (no distribution).
fn totals_only() -> Export {
    let mut x = summary_only();
    x.summary
        .metrics
        .retain(|_, m| !m.fields.contains_key("p50"));
    x
}

fn field(x: &mut Export, tag: &str, k: &str, v: f64) {
    let stat = x.summary.metrics.entry(tag.into()).or_default();
    stat.fields.insert(k.into(), v);
}

fn set(r: &mut Record, tag: &str, v: f64) {
    r.metrics.insert(tag.into(), vec![v]);
}

fn failed_record(x: &mut Export) {
    x.records.push(Record {
        line: 3,
        phase: "profiling".into(),
        error: Some((Some(500), "server error".into())),
        ..Default::default()
    });
}

/// The planted problems, at least one per row of [`CHECKS`].
pub(super) const CASES: &[Case<Export>] = &[
    case(RUN_INCOMPLETE.id, clean, |x| {
        x.summary.was_cancelled = Some(true)
    })
    .saying("cancelled"),
    case(RUN_INCOMPLETE.id, clean, |x| {
        x.summary.is_complete = Some(false)
    })
    .saying("incomplete"),
    // A printed percentile the records do not give.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        field(x, "time_to_first_token", "p50", 16.0)
    })
    .saying("aiperf.time_to_first_token.p50"),
    // A throughput that is not its total over the printed duration (row A4).
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        field(x, "request_throughput", "avg", 4.0)
    })
    .saying("aiperf.request_throughput is printed as 4 but its records give 1"),
    // The same without records, from the summary alone.
    case(speed::RECOMPUTE_MISMATCH.id, summary_only, |x| {
        field(x, "request_throughput", "avg", 4.0)
    })
    .saying("aiperf.request_throughput is printed as 4 but its records give 1"),
    // 0.12.0 on: over end_time - start_time (4 s here), not the duration.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.summary.version = Some("0.13.0".into());
        x.summary.window_s = Some(4.0);
        field(x, "request_throughput", "avg", 1.0)
    })
    .saying("printed as 1 but its records give 0.5"),
    // 0.1.x prints no duration: the reply tokens per valid request (6) x request_throughput.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.summary.metrics.remove("benchmark_duration");
        field(x, "output_sequence_length", "avg", 6.0);
        field(x, "output_sequence_length", "count", 2.0);
        field(x, "request_throughput", "avg", 1.0);
        field(x, "output_token_throughput", "avg", 7.0)
    })
    .saying("aiperf.output_token_throughput is printed as 7 but its records give 6"),
    // GenAI-Perf (row G3): every request of the export over the span of those with content.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.summary.genai_perf = true;
        field(x, "request_throughput", "avg", 1.5)
    })
    .saying("aiperf.request_throughput is printed as 1.5 but its records give 1"),
    // A duration that is not the valid requests' window (row A3).
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        field(x, "benchmark_duration", "avg", 2.5)
    })
    .saying("aiperf.benchmark_duration is printed as 2.5 but its records give 2"),
    // A TTFT at no chunk's time in the raw record.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.raw.as_mut().unwrap().1[0] = raw(1, "a", 0, &[(12.0, true)])
    })
    .saying("not the first text chunk's time"),
    case(NOT_RECOMPUTABLE.id, clean, |x| {
        field(x, "adj_time_to_first_token", "p50", 15.0)
    }),
    case(NOT_RECOMPUTABLE.id, totals_only, |x| {
        field(x, "time_to_first_token", "p50", 15.0)
    })
    .saying("summary only: its 1 printed distributions are not recomputed"),
    case(FAILED_HIDDEN.id, clean, failed_record),
    case(FAILED_REQUESTS.id, clean, failed_record).saying("1 x 500 server error"),
    case(FAILED_REQUESTS.id, clean, |x| x.records[1].cancelled = true).saying("1 x cancelled"),
    case(FAILED_REQUESTS.id, summary_only, |x| {
        field(x, "error_request_count", "avg", 1.0)
    })
    .saying("the summary counts 1 failed"),
    // Row A5: a failed request error_summary does not name (a reply with no content, 0.1.1).
    case(FAILED_REQUESTS.id, summary_only, |x| {
        field(x, "error_request_count", "avg", 2.0);
        x.summary.errors = vec![(1.0, "500 Internal Server Error: boom".into())];
    })
    .saying("1 x 500 Internal Server Error: boom; 1 with no error named in error_summary"),
    // GenAI-Perf (row G2): a request without content, out of every figure but the throughput.
    case(FAILED_REQUESTS.id, clean, |x| {
        x.summary.genai_perf = true;
        x.records[1].metrics.remove("request_latency");
    })
    .saying("a reply GenAI-Perf found no content in)); GenAI-Perf's latency and throughput figures are over the other 1 only, but its request_throughput counts them"),
    // A record processed as invalid: no request_latency, no error (0.2.0-0.3.0).
    case(FAILED_REQUESTS.id, clean, |x| {
        x.records[1].metrics.remove("request_latency");
        field(x, "request_count", "avg", 1.0);
        field(x, "error_request_count", "avg", 1.0);
    })
    .saying("1 x no error named"),
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        set(&mut x.records[0], "output_sequence_length", 0.0)
    })
    .saying("AIPerf counts a request with no reply tokens as valid"),
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        x.records[0].metrics.remove("time_to_first_token");
    })
    .saying("no first token"),
    case(speed::TOKEN_SOURCE.id, clean, |x| {
        set(&mut x.records[0], "usage_completion_tokens", 6.0)
    }),
    lowered(speed::CACHED_TOKENS.id, Severity::Warning, clean, |x| {
        set(&mut x.records[0], "usage_prompt_cache_read_tokens", 2.0)
    })
    .saying("AIPerf's TTFT figures include prompt tokens the server did not compute"),
    // The role-only first chunk of a chat stream taken as the first token.
    case(TTFT_EMPTY_CHUNK.id, clean, |x| {
        x.raw.as_mut().unwrap().1[0] = raw(1, "a", 0, &[(10.0, false), (12.0, true)])
    }),
    case(RECORDS_MISSING.id, clean, |x| {
        field(x, "request_count", "avg", 3.0)
    }),
    case(REASONING_ONLY.id, clean, |x| {
        field(x, "output_token_count", "count", 1.0)
    }),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        field(x, "time_to_first_token", "avg", 25.0)
    })
    .saying("outside its min"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        field(x, "time_to_first_token", "p90", 12.0)
    })
    .saying("p50 (15) is above its p90 (12)"),
    // A p99 of two requests: their larger one in disguise.
    case(PERCENTILE_FEW_SAMPLES.id, clean, |x| {
        field(x, "time_to_first_token", "p99", 20.0)
    })
    .saying(
        "p99 of time_to_first_token rest on 2 samples; the first is a p99 printed from 2 samples",
    ),
];

#[test]
fn each_row_raises_its_id_on_its_planted_problem_only() {
    check_cases(CHECKS, CASES);
}

#[test]
fn the_clean_export_raises_nothing() {
    quiet(CHECKS, &clean());
}
