//! llama.cpp server responses (`/completion`, `/v1/chat/completions`) saved one a line, read
//! into `rigaudit_audit::imported::llama_server`'s records for their `timings`.
//!
//! Definitions (in full in `audit/src/imported/llama_server.rs`):
//! - units: ms, tokens, tokens per second;
//! - TTFT: none; `prompt_ms` is the server's prompt processing time;
//! - token counts: the server's (`prompt_n` computed, `cache_n` from the cache, `predicted_n`);
//! - aggregates: none across responses; each response's rates are over its own counts.
//!
//! Streamed responses (saved server-sent events, one stream a file) are read by
//! [`super::llama_server_stream`], whose top defines that input.

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use crate::input::shown;
use rigaudit_audit::imported::compare::{Sample, Series};
use rigaudit_audit::imported::llama_server::{Response, Responses, Timings, CHECKS};
use serde_json::Value;

/// Whether a source is saved llama-server responses or a saved stream (by content).
pub fn looks_like(s: &Source) -> bool {
    (super::holds(&s.bytes, "\"timings\"") && super::holds(&s.bytes, "\"predicted_per_second\""))
        || super::llama_server_stream::looks_like(s)
}

/// Reads the responses file (one; more are refused) and runs the checks; saved streams, when
/// the sources hold any, are read instead ([`super::llama_server_stream`]).
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    if sources.iter().any(super::llama_server_stream::is_stream) {
        return super::llama_server_stream::import(sources);
    }
    let i = super::take(sources, looks_like, "responses", "no saved llama-server responses among them (expected JSON Lines, one response body a line, with 'timings')")?;
    let src = &sources[i];
    let responses = super::json_lines(src, response)?;
    if responses.is_empty() {
        return Err(fatal(format!("{}: no response in it", src.shown)));
    }
    let text = |p: &str| {
        responses
            .iter()
            .find_map(|r| r.1.pointer(p).and_then(|x| x.as_str()).map(String::from))
    };
    let mut imp = Imported {
        tool_version: text("/system_fingerprint").map(|b| format!("llama-server {b}")),
        model: text("/model").map(|m| m.rsplit(['/', '\\']).next().unwrap_or(&m).to_string()),
        ..Default::default()
    };
    let responses: Vec<Response> = responses.into_iter().map(|r| r.0).collect();
    let timed = responses.iter().filter(|r| r.timings.is_some()).count();
    imp.taken.push(format!(
        "{} responses of {} ({timed} with timings, {} errors): each one's prompt and generation counts, times and rates, its cached prompt tokens and the token counts it states beside them",
        responses.len(),
        src.name,
        responses.iter().filter(|r| r.error.is_some()).count()
    ));
    imp.not_taken.push("a client's TTFT and end-to-end time: the server times its own slot, not the network or the queue before it".into());
    imp.not_taken.push("which llama-server wrote them: a /completion response names no build (a chat response's system_fingerprint does), so both definitions of the generation rate (over the tokens, over the decode steps) are accepted".into());
    imp.not_taken.push(
        "the server's settings (window, slots, threads): the responses do not record them".into(),
    );
    for s in sources.iter().filter(|s| s.role.is_empty()) {
        imp.not_taken.push(format!(
            "{}: one file of llama-server responses is read at a time; not read",
            s.name
        ));
    }
    let responses = Responses {
        file: sources[i].name.clone(),
        responses,
    };
    imp.found = rigaudit_audit::imported::run(CHECKS, &responses);
    imp.series = series(&responses.responses);
    Ok(imp)
}

/// The responses' rates, for `diff`: every response with a prompt or generation to time.
pub(super) fn series(responses: &[Response]) -> Vec<Series> {
    let mut out = Vec::new();
    for (k, min) in [("prompt_per_second", 0.0), ("predicted_per_second", 1.0)] {
        let n_key = if k.starts_with("prompt") {
            "prompt_n"
        } else {
            "predicted_n"
        };
        let v: Vec<f64> = responses
            .iter()
            .filter_map(|r| r.timings.as_ref())
            .filter(|t| t.fields.get(n_key).is_some_and(|n| *n > min))
            .filter_map(|t| t.fields.get(k).copied())
            .collect();
        if !v.is_empty() {
            out.push(Series {
                key: format!("llama-server.{k}"),
                sample: Sample::Values(v),
            });
        }
    }
    out
}

/// One response line: the typed record and its JSON (for the model and build it names).
pub(super) fn response(v: &Value, line: usize) -> Result<(Response, Value), String> {
    let obj = v
        .as_object()
        .ok_or("expected a JSON object (a response body)")?;
    let error = super::error_of(v);
    let timings = match obj.get("timings") {
        Some(Value::Object(t)) => Some(Timings {
            fields: t
                .iter()
                .filter_map(|(k, x)| x.as_f64().map(|x| (k.clone(), x)))
                .collect(),
        }),
        Some(x) if !x.is_null() => {
            return Err(format!(
                "at /timings: expected an object, found {}",
                shown(&x.to_string())
            ))
        }
        _ => None,
    };
    if error.is_none() && timings.is_none() {
        return Err("expected a llama-server response with 'timings' (or an 'error')".into());
    }
    let num = |p: &str| v.pointer(p).and_then(|x| x.as_f64());
    let prompt_tokens = num("/tokens_evaluated")
        .map(|x| (x, "tokens_evaluated"))
        .or(num("/usage/prompt_tokens").map(|x| (x, "usage.prompt_tokens")));
    let reply_tokens = num("/tokens_predicted")
        .map(|x| (x, "tokens_predicted"))
        .or(num("/usage/completion_tokens").map(|x| (x, "usage.completion_tokens")));
    let text = v
        .get("content")
        .or_else(|| v.pointer("/choices/0/message/content"))
        .or_else(|| v.pointer("/choices/0/text"))
        .and_then(|x| x.as_str())
        .map(String::from);
    let r = Response {
        line,
        error,
        timings,
        text,
        prompt_tokens,
        reply_tokens,
        ..Default::default()
    };
    Ok((r, v.clone()))
}
