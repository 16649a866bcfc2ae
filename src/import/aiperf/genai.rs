//! GenAI-Perf (AIPerf's predecessor, `genai-perf profile`): its summary
//! `profile_export_genai_perf.json` (the flat `{unit, avg, pXX, min, max, std}` layout AIPerf
//! later copied) and perf_analyzer's `profile_export.json` (every request's timestamp and its
//! response chunks with theirs), read into the AIPerf checks' records as GenAI-Perf's parser
//! computes them (docs/formats/aiperf.md rows G1-G4):
//! - a chunk without content (the chat role chunk, `[DONE]`, an empty text) is dropped first
//!   (`llm_profile_data_parser.py` `_preprocess_response`); a request left with none enters no
//!   figure (`if not res_timestamps: continue`), so it is read as a record with no
//!   `request_latency`, which the checks count as failed;
//! - `request_latency` = last content chunk - request timestamp, `time_to_first_token` = first
//!   content chunk - request timestamp, `time_to_second_token` = second - first content chunk,
//!   all in ms (the parser's ns scaled by 1e-6).

use crate::fatal::{fatal, Fatal};
use crate::import::Source;
use rigaudit_audit::imported::aiperf::Record;
use serde_json::Value;
use std::collections::BTreeMap;

/// Whether a source is GenAI-Perf's summary: a JSON object with `input_config` and
/// `request_throughput`, and none of AIPerf's run fields (`was_cancelled`).
pub fn is_summary(s: &Source) -> bool {
    let has = |k: &str| crate::import::holds(&s.bytes, k);
    s.name.ends_with(".json")
        && has("\"input_config\"")
        && has("\"request_throughput\"")
        && !has("\"was_cancelled\"")
        && !has("\"experiments\"")
}

/// Whether a source is perf_analyzer's profile export (`experiments` of timed requests).
pub fn is_export(s: &Source) -> bool {
    let has = |k: &str| crate::import::holds(&s.bytes, k);
    s.name.ends_with(".json") && has("\"experiments\"") && has("\"response_timestamps\"")
}

/// Every request of every experiment of perf_analyzer's export, as a record.
pub fn records(src: &Source) -> Result<Vec<Record>, Fatal> {
    let v = crate::import::json_of(src)?;
    let experiments = v
        .get("experiments")
        .and_then(Value::as_array)
        .ok_or_else(|| fatal(format!("{}: expected 'experiments', a list", src.shown)))?;
    let requests = experiments
        .iter()
        .filter_map(|e| e.get("requests").and_then(Value::as_array))
        .flatten();
    let mut out = Vec::new();
    for (i, r) in requests.enumerate() {
        out.push(
            record(r, i + 1)
                .map_err(|e| fatal(format!("{}: request {}: {e}", src.shown, i + 1)))?,
        );
    }
    if out.is_empty() {
        return Err(fatal(format!(
            "{}: no request in its experiments",
            src.shown
        )));
    }
    Ok(out)
}

/// One request: its content chunks' times, and the latencies GenAI-Perf takes from them.
fn record(r: &Value, line: usize) -> Result<Record, String> {
    let start = r
        .get("timestamp")
        .and_then(Value::as_i64)
        .ok_or("expected 'timestamp', a number of ns")?;
    let times = r.get("response_timestamps").and_then(Value::as_array);
    let outputs = r.get("response_outputs").and_then(Value::as_array);
    let chunks: Vec<i64> = times
        .into_iter()
        .flatten()
        .zip(outputs.into_iter().flatten())
        .filter(|(_, o)| {
            o.get("response")
                .and_then(Value::as_str)
                .is_some_and(has_content)
        })
        .filter_map(|(t, _)| t.as_i64())
        .collect();
    let ms = |a: i64, b: i64| (b - a) as f64 / 1e6;
    let mut metrics = BTreeMap::new();
    if let (Some(first), Some(last)) = (chunks.first(), chunks.last()) {
        metrics.insert("request_latency".to_string(), vec![ms(start, *last)]);
        metrics.insert("time_to_first_token".to_string(), vec![ms(start, *first)]);
        if let Some(second) = chunks.get(1) {
            metrics.insert(
                "time_to_second_token".to_string(),
                vec![ms(*first, *second)],
            );
        }
    }
    Ok(Record {
        line,
        phase: "profiling".into(),
        start_ns: Some(start),
        end_ns: chunks.last().copied(),
        metrics,
        ..Default::default()
    })
}

/// Whether one response of perf_analyzer carries generated text: each SSE event (`data: {...}`,
/// several may come in one response) or the whole body of a reply not streamed.
fn has_content(response: &str) -> bool {
    let events: Vec<&str> = response
        .split("\n\n")
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    events.iter().any(|e| {
        let body = e.strip_prefix("data:").map_or(*e, str::trim);
        serde_json::from_str::<Value>(body)
            .is_ok_and(|v| text_of(&v).is_some_and(|t| !t.is_empty()))
    })
}

/// The text of an OpenAI chat or completions reply or chunk.
fn text_of(v: &Value) -> Option<String> {
    let c = v.get("choices")?.get(0)?;
    ["/delta/content", "/message/content", "/text"]
        .iter()
        .find_map(|p| c.pointer(p).and_then(Value::as_str))
        .map(String::from)
}
