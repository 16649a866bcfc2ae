//! The rows of [`crate::imported::guidellm`].

use super::{case, check_cases, lowered, quiet, Case};
use crate::imported::guidellm::{Benchmark, Family, Printed, Report, Request, CHECKS};
use crate::imported::{FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, NOT_RECOMPUTABLE};
use crate::imported::{PERCENTILE_FEW_SAMPLES, RECORDS_MISSING};
use crate::report::Severity;
use crate::speed;

/// A successful request of this latency (s), with a first token and 5 reply tokens from usage.
fn request(index: usize, latency: f64) -> Request {
    let values = [
        ("request_latency", latency),
        ("time_to_first_token_ms", 10.0),
        ("output_tokens", 5.0),
    ];
    Request {
        status: "successful".into(),
        index,
        values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        usage_output: Some(5.0),
        usage_recorded: true,
        output_chars: 20,
        ..Default::default()
    }
}

fn printed(fields: &[(&str, f64)]) -> Printed {
    fields.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// One benchmark of two successful requests, its totals and latency distribution agreeing.
fn clean() -> Report {
    let latency = [(
        "successful".to_string(),
        printed(&[("count", 2.0), ("mean", 1.5)]),
    )];
    let totals = [("successful", 2.0), ("incomplete", 0.0), ("errored", 0.0)];
    Report {
        file: "benchmarks.json".into(),
        version: "GuideLLM 0.8.1".into(),
        benchmarks: vec![Benchmark {
            index: 0,
            totals: totals.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            metrics: [("request_latency".to_string(), latency.into_iter().collect())].into(),
            requests: vec![request(0, 1.0), request(1, 2.0)],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// An errored request (with its latency), counted in the totals.
fn errored(index: usize) -> Request {
    Request {
        status: "errored".into(),
        error: Some("502 Bad Gateway".into()),
        usage_output: None,
        usage_recorded: false,
        ..request(index, 0.5)
    }
}

/// [`clean`] with an errored request, counted, and the latency distribution over all requests.
fn with_errored() -> Report {
    let mut x = clean();
    let b = &mut x.benchmarks[0];
    b.requests.push(errored(2));
    b.totals.insert("errored".into(), 1.0);
    let total = printed(&[("count", 3.0), ("mean", 3.5 / 3.0)]);
    b.metrics
        .get_mut("request_latency")
        .unwrap()
        .insert("total".into(), total);
    x
}

fn bench(x: &mut Report) -> &mut Benchmark {
    &mut x.benchmarks[0]
}

/// The planted problems, at least one per row of [`CHECKS`].
pub(super) const CASES: &[Case<Report>] = &[
    // An errored request listed but left out of the totals.
    case(FAILED_HIDDEN.id, clean, |x| {
        bench(x).requests.push(errored(2))
    }),
    // Fewer requests listed than counted, by sampling (config.sample_size).
    case(NOT_RECOMPUTABLE.id, clean, |x| {
        bench(x).sampling = Some("config.sample_size 2".into());
        bench(x).totals.insert("successful".into(), 3.0);
    }),
    // Fewer listed than counted though no sampling was asked.
    case(RECORDS_MISSING.id, clean, |x| {
        bench(x).totals.insert("successful".into(), 3.0);
    }),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        let m = bench(x).metrics.get_mut("request_latency").unwrap();
        m.get_mut("successful").unwrap().insert("mean".into(), 1.6);
    }),
    case(FAILED_REQUESTS.id, clean, |x| {
        bench(x).requests.push(errored(2));
        bench(x).totals.insert("errored".into(), 1.0);
    }),
    // A success that never got a first token.
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        bench(x).requests[0].values.remove("time_to_first_token_ms");
    })
    .saying("no first token"),
    // A success of zero reply tokens.
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        bench(x).requests[0]
            .values
            .insert("output_tokens".into(), 0.0);
    })
    .saying("no reply token"),
    // A failed request without a latency, counted as 0 in the total distribution.
    lowered(FAILED_AS_ZERO.id, Severity::Warning, with_errored, |x| {
        bench(x).requests[2].values.remove("request_latency");
    })
    .saying("counted as 0 in the total request_latency"),
    // A warm-up request listed outside the measured window (0.4 on): named at info, not hidden.
    lowered(FAILED_HIDDEN.id, Severity::Info, clean, |x| {
        let b = bench(x);
        b.window = Some((10.0, 20.0));
        for (i, r) in b.requests.iter_mut().enumerate() {
            (r.start, r.end) = (Some(11.0 + i as f64), Some(12.0 + i as f64));
        }
        let mut warm = errored(2);
        (warm.start, warm.end) = (Some(8.0), Some(9.0));
        b.requests.push(warm);
    })
    .saying("outside its measured window"),
    // A refused request counted with the request's target of output tokens and no text.
    lowered(FAILED_AS_ZERO.id, Severity::Warning, with_errored, |x| {
        let r = &mut bench(x).requests[2];
        (r.has_output, r.output_chars) = (true, 0);
    })
    .saying("more output tokens than their reply text has characters"),
    // 0.2-0.3: a success with no first token at first_token_time -1, a TTFT of minus the epoch.
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        x.family = Family::V02;
        let r = &mut bench(x).requests[0];
        r.values.insert("time_to_first_token_ms".into(), -1.7e15);
    })
    .saying("first_token_time -1"),
    // No usage from the server: reply tokens counted as streamed iterations.
    case(speed::TOKEN_SOURCE.id, clean, |x| {
        bench(x).requests[0].usage_output = None
    }),
    // Cached prompt tokens: named, as a warning (the figures are what GuideLLM computed).
    lowered(speed::CACHED_TOKENS.id, Severity::Warning, clean, |x| {
        bench(x).requests[0].cached = Some(3.0)
    }),
    // A p99 of two requests' latency: the larger one in disguise.
    case(PERCENTILE_FEW_SAMPLES.id, clean, |x| {
        let m = bench(x).metrics.get_mut("request_latency").unwrap();
        let s = m.get_mut("successful").unwrap();
        s.insert("percentiles.p99".into(), 2.0);
    })
    .saying("benchmark 0: p99 of request_latency rest on 2 samples"),
];

#[test]
fn each_row_raises_its_id_on_its_planted_problem_only() {
    check_cases(CHECKS, CASES);
}

#[test]
fn the_clean_report_raises_nothing() {
    quiet(CHECKS, &clean());
}
