//! One llama-server response body as the checks read it, and the responses' rates for `diff`:
//! shared by the readers of whole bodies ([`super::llama_server`]) and of saved streams
//! ([`super::llama_server_stream`]), which both stand on this module.

use crate::input::shown;
use rigaudit_audit::imported::compare::{Sample, Series};
use rigaudit_audit::imported::llama_server::{Response, Timings};
use serde_json::Value;

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
        pre_slot: obj.contains_key("generation_settings")
            && !obj.contains_key("slot_id")
            && !obj.contains_key("id_slot"),
        truncated: obj.get("truncated") == Some(&Value::Bool(true)),
        ..Default::default()
    };
    Ok((r, v.clone()))
}
