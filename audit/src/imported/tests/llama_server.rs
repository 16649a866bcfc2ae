//! The rows of [`crate::imported::llama_server`].

use super::{case, check_cases, lowered, quiet, Case};
use crate::imported::llama_server::{Response, Responses, Timings, CHECKS};
use crate::imported::{FAILED_AS_ZERO, FAILED_REQUESTS, RUN_INCOMPLETE};
use crate::report::Severity;
use crate::speed;

/// One streamed response: 10 prompt tokens in 100 ms, 5 reply tokens in 50 ms, 4 chunks of text
/// and the end-of-generation token; its usage agrees with its timings.
fn clean() -> Responses {
    let timings = [
        ("prompt_n", 10.0),
        ("prompt_ms", 100.0),
        ("prompt_per_token_ms", 10.0),
        ("prompt_per_second", 100.0),
        ("predicted_n", 5.0),
        ("predicted_ms", 50.0),
        ("predicted_per_token_ms", 10.0),
        ("predicted_per_second", 100.0),
        ("cache_n", 0.0),
    ];
    Responses {
        file: "responses.jsonl".into(),
        responses: vec![Response {
            line: 1,
            chunks: Some(4),
            ended_on_eos: true,
            timings: Some(Timings {
                fields: timings.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            }),
            text: Some("hello there".into()),
            prompt_tokens: Some((10.0, "usage.prompt_tokens")),
            reply_tokens: Some((5.0, "usage.completion_tokens")),
            ..Default::default()
        }],
    }
}

fn response(x: &mut Responses) -> &mut Response {
    &mut x.responses[0]
}

fn timing(x: &mut Responses, k: &str, v: f64) {
    let t = response(x).timings.as_mut().unwrap();
    t.fields.insert(k.into(), v);
}

/// The planted problems, at least one per row of [`CHECKS`].
pub(super) const CASES: &[Case<Responses>] = &[
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        timing(x, "prompt_per_second", 120.0)
    })
    .saying("prompt_per_second"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        timing(x, "predicted_per_second", 150.0)
    })
    .saying("predicted_per_second of"),
    // The usage's reply tokens are not the timings' predicted_n.
    case(speed::TOKEN_SOURCE.id, clean, |x| {
        response(x).reply_tokens = Some((6.0, "usage"))
    })
    .saying("usage is 6"),
    // Fewer chunks of text than generated tokens: chunks counted as tokens undercount.
    case(speed::TOKEN_SOURCE.id, clean, |x| {
        response(x).chunks = Some(2)
    })
    .saying("sent 2 chunks"),
    // Cached prompt tokens are what the server counts them as (row S3): a warning naming it,
    // from cache_n or, where the server prints none, from the stated count past prompt_n.
    lowered(speed::CACHED_TOKENS.id, Severity::Warning, clean, |x| {
        timing(x, "cache_n", 4.0)
    })
    .saying("llama-server counts only the 10"),
    lowered(speed::CACHED_TOKENS.id, Severity::Warning, clean, |x| {
        response(x)
            .timings
            .as_mut()
            .unwrap()
            .fields
            .remove("cache_n");
        response(x).prompt_tokens = Some((14.0, "usage.prompt_tokens"));
    })
    .saying("4 of the prompt's 14 tokens"),
    // The pre-slot server's counters differ from its stated counts by design (row S2).
    lowered(speed::TOKEN_SOURCE.id, Severity::Warning, clean, |x| {
        response(x).pre_slot = true;
        response(x).reply_tokens = Some((6.0, "tokens_predicted"));
        response(x).chunks = Some(5);
    })
    .saying("before its slots"),
    // A prompt the server cut to its window (row S8).
    case(FAILED_REQUESTS.id, clean, |x| response(x).truncated = true)
        .saying("truncated the prompt"),
    case(FAILED_REQUESTS.id, clean, |x| {
        response(x).error = Some((Some(500), "context too long".into()))
    }),
    // An empty reply, or one token (no decode step): its rate is no generation speed.
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        response(x).text = Some(String::new())
    })
    .saying("an empty reply"),
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        timing(x, "predicted_n", 1.0)
    })
    .saying("no decode step"),
    // A stream cut before its end.
    case(RUN_INCOMPLETE.id, clean, |x| {
        response(x).incomplete = Some("no final chunk".into())
    }),
];

#[test]
fn each_row_raises_its_id_on_its_planted_problem_only() {
    check_cases(CHECKS, CASES);
}

#[test]
fn the_clean_responses_raise_nothing() {
    quiet(CHECKS, &clean());
}
