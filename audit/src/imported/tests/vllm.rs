//! The rows of [`crate::imported::vllm`].

use super::{case, check_cases, lowered, quiet, Case};
use crate::imported::vllm::{Run, CHECKS};
use crate::imported::{FAILED_AS_ZERO, FAILED_HIDDEN, FAILED_REQUESTS, IMPOSSIBLE_AGGREGATE};
use crate::imported::{NOT_RECOMPUTABLE, PERCENTILE_FEW_SAMPLES, TTFT_EMPTY_CHUNK};
use crate::report::Severity;
use crate::speed;

/// Two requests over 2 s (--save-detailed), overlapping, at most 2 at once: 10 prompt and 3
/// reply tokens each; every printed figure what the lists give.
fn clean() -> Run {
    let printed = [
        ("completed", 2.0),
        ("failed", 0.0),
        ("num_prompts", 2.0),
        ("max_concurrency", 2.0),
        ("total_input_tokens", 20.0),
        ("total_output_tokens", 6.0),
        ("request_throughput", 1.0),
        ("output_throughput", 3.0),
        ("total_token_throughput", 13.0),
        ("mean_ttft_ms", 150.0),
        ("median_ttft_ms", 150.0),
        ("p50_ttft_ms", 150.0),
        ("mean_tpot_ms", 200.0),
        ("mean_itl_ms", 15.0),
    ];
    Run {
        file: "vllm.json".into(),
        line: None,
        detailed: true,
        duration: Some(2.0),
        ttfts: vec![0.1, 0.2],
        itls: vec![vec![0.01, 0.01], vec![0.02, 0.02]],
        input_lens: vec![10.0, 10.0],
        output_lens: vec![3.0, 3.0],
        latencies: Some(vec![0.5, 0.6]),
        start_times: Some(vec![0.0, 0.1]),
        queue_times: None,
        texts: Some(vec!["a b c".into(), "d e f".into()]),
        errors: vec![String::new(), String::new()],
        keys: printed
            .iter()
            .map(|(k, _)| k.to_string())
            .chain(["burstiness".to_string()])
            .collect(),
        backend: Some("vllm".into()),
        printed: printed.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        per_request_objects: false,
    }
}

fn print(x: &mut Run, k: &str, v: f64) {
    x.printed.insert(k.into(), v);
    x.keys.insert(k.into());
}

/// As vLLM to 0.6.3 writes it (no `burstiness`, no `max_concurrency`, no `failed`, no latencies
/// nor start times).
fn early(x: &mut Run) {
    x.latencies = None;
    x.start_times = None;
    for k in ["burstiness", "max_concurrency", "failed"] {
        x.keys.remove(k);
        x.printed.remove(k);
    }
}

/// The second request failed (and, as vLLM records a failed one, has no output tokens).
fn fail(x: &mut Run) {
    x.errors[1] = "Traceback ...\naiohttp.ClientResponseError: 500".into();
    x.output_lens[1] = 0.0;
}

/// The planted problems, at least one per row of [`CHECKS`].
pub(super) const CASES: &[Case<Run>] = &[
    // A request with an error that `failed` does not count.
    case(FAILED_HIDDEN.id, clean, fail),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        print(x, "mean_ttft_ms", 160.0)
    })
    .saying("vllm.mean_ttft_ms"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        print(x, "total_output_tokens", 7.0)
    })
    .saying("vllm.total_output_tokens"),
    // Without per-request lists: the throughputs against the printed totals.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.detailed = false;
        print(x, "request_throughput", 2.0);
    })
    .saying("vllm.request_throughput"),
    case(FAILED_REQUESTS.id, clean, |x| {
        fail(x);
        print(x, "failed", 1.0);
    }),
    // A success without a first token where vLLM (0.6.4 on, streaming) cannot record one; to
    // 0.6.3 vLLM itself records a reply without text so (named at warning); a failure whose
    // tokens are counted.
    case(FAILED_AS_ZERO.id, clean, |x| x.ttfts[0] = 0.0).saying("no first token (TTFT 0)"),
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        early(x);
        x.ttfts[0] = 0.0;
        x.texts.as_mut().unwrap()[0] = String::new();
    })
    .saying("vLLM to 0.6.3 records a 200 reply whose stream carried no text"),
    case(FAILED_AS_ZERO.id, clean, |x| {
        fail(x);
        x.output_lens[1] = 3.0;
    })
    .saying("yet its output tokens"),
    // vLLM from 0.7: a success whose first chunk (and only text) was empty.
    case(TTFT_EMPTY_CHUNK.id, clean, |x| {
        x.texts.as_mut().unwrap()[0] = String::new()
    })
    .saying("1 of the 2 successes carry no text"),
    // A figure printed over all requests, the failed one's included: mean_itl_ms stays the
    // mean of both requests' gaps (15 ms) though only the first (10 ms) succeeded.
    case(FAILED_AS_ZERO.id, clean, |x| {
        fail(x);
        print(x, "failed", 1.0);
    })
    .saying("mean_itl_ms is printed as 15, its value over all 2 requests"),
    // No per-request lists; a figure the lists do not give.
    case(NOT_RECOMPUTABLE.id, clean, |x| x.detailed = false).saying("no per-request lists"),
    case(NOT_RECOMPUTABLE.id, clean, |x| print(x, "rtfx", 3.5)).saying(": rtfx"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        print(x, "median_ttft_ms", 250.0)
    })
    .saying("median_ttft_ms (250) is above its p50_ttft_ms"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        print(x, "std_ttft_ms", -1.0)
    })
    .saying("never negative"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        print(x, "completed", 3.0)
    })
    .saying("more than the 2 requests sent"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        print(x, "max_concurrency", 1.0)
    })
    .saying("above the client's own cap"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        print(x, "request_goodput", 1.5)
    })
    .saying("goodput (1.5) is above the request throughput"),
    // To 0.6.3 the E2EL mean and median are each the other: named, never out of order.
    case(NOT_RECOMPUTABLE.id, clean, |x| {
        early(x);
        print(x, "median_e2el_ms", 900.0);
        print(x, "p90_e2el_ms", 600.0);
    })
    .saying("median_e2el_ms the mean"),
    // A p99 of two requests: their larger one in disguise; without the lists, counted by
    // `completed`.
    case(PERCENTILE_FEW_SAMPLES.id, clean, |x| {
        print(x, "p99_ttft_ms", 199.0)
    })
    .saying("p99_ttft_ms is a p99 printed from 2 samples"),
    // ITL timed per chunk of several tokens.
    case(speed::TOKEN_SOURCE.id, clean, |x| {
        print(x, "mean_itl_ms", 500.0)
    })
    .saying("times mean_tpot_ms"),
    // vLLM 0.7.0-0.8.3 without a usage-only chunk: text, 0 tokens.
    case(speed::TOKEN_SOURCE.id, clean, |x| {
        x.output_lens = vec![0.0, 0.0];
        for k in ["total_output_tokens", "output_throughput", "mean_tpot_ms"] {
            print(x, k, 0.0);
        }
        print(x, "total_token_throughput", 10.0);
    })
    .saying("2 of the 2 successes carry text but 0 output tokens"),
];

#[test]
fn each_row_raises_its_id_on_its_planted_problem_only() {
    check_cases(CHECKS, CASES);
}

#[test]
fn the_clean_run_raises_nothing() {
    quiet(CHECKS, &clean());
}

#[test]
fn before_0_6_4_a_failure_uncounted_and_the_e2el_names_swapped_are_vllms_own() {
    // vLLM to 0.6.3 writes no `failed`, and its median_e2el_ms is the mean (above p90 here).
    // The second request failed; every figure as vLLM computes it over the first one.
    let mut x = clean();
    early(&mut x);
    fail(&mut x);
    for (k, v) in [
        ("completed", 1.0),
        ("total_input_tokens", 10.0),
        ("total_output_tokens", 3.0),
        ("request_throughput", 0.5),
        ("output_throughput", 1.5),
        ("total_token_throughput", 6.5),
        ("mean_ttft_ms", 100.0),
        ("median_ttft_ms", 100.0),
        ("p50_ttft_ms", 100.0),
        ("mean_itl_ms", 10.0),
    ] {
        print(&mut x, k, v);
    }
    print(&mut x, "median_e2el_ms", 900.0);
    print(&mut x, "p90_e2el_ms", 600.0);
    let found = crate::imported::run(CHECKS, &x);
    let errors: Vec<_> = found
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| format!("{}: {}", f.check, f.message))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}
