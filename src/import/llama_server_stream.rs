//! llama.cpp server responses streamed (`"stream": true`) and saved as the server sent them, read
//! into the same records as the whole bodies of [`super::llama_server`], and checked alike.
//!
//! The input: one stream a file, its bytes as `curl -N` writes them (`curl -sN URL -d
//! '{..., "stream": true}' > NAME.sse`): `data: {...}` events (a blank line after each; `data:
//! [DONE]` closes the OpenAI endpoint's stream), optionally after the HTTP head when saved with
//! `curl -i`; a refused request's file holds the server's HTTP error body (`{"error": {...}}`)
//! instead of events. A folder stands for its files: every file that starts with `data:` (or
//! its HTTP head) or is named `*.sse` is a stream; the others are not read. A file is taken as
//! llama-server's stream (by content) when it starts with `data:` and its chunks carry a field
//! only llama.cpp writes (`timings`, `tokens_predicted`, `generation_settings`, `id_slot`).
//!
//! Definitions (the llama-server ones of `audit/src/imported/llama_server.rs`):
//! - each stream is one request: its final chunk (the one with `timings`: `stop: true` on
//!   `/completion`, a `finish_reason` on `/v1/chat/completions`) gives the timings and the
//!   counts stated beside them (`tokens_evaluated`/`tokens_predicted`, or `usage`);
//! - the reply is the chunks' text joined (`content`, or `choices[0].delta.content`), and the
//!   chunk count is the chunks that carried text (a chunk with only the role carries none);
//! - TTFT: none; `curl -N` saves the bytes, not when each came;
//! - errors: an `error` event in the stream, or an HTTP error body instead of a stream;
//! - a stream cut before its final chunk (mid-event, or with no chunk with `timings`) is named
//!   (`import.run-incomplete`) with its file, line and byte; a line that is not a JSON event
//!   inside the stream, or not UTF-8 (SSE and JSON are), is an error naming the same.
//!
//! Each file is read through the bounded readers (the file by [`super::read_sources`], each event
//! line by [`crate::measure::sse::read_sse`]'s bound), and its events by that one SSE parser.

use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use crate::input::{self, shown};
use crate::measure::sse::{read_sse, Timed};
use rigaudit_audit::imported::llama_server::{Response, Responses, CHECKS};
use serde_json::Value;

/// Fields only llama.cpp's server puts in a streamed chunk.
const LLAMA_FIELDS: [&str; 4] = [
    "\"timings\"",
    "\"tokens_predicted\"",
    "\"generation_settings\"",
    "\"id_slot\"",
];

/// Whether a source is a saved llama-server stream (by content).
pub fn looks_like(s: &Source) -> bool {
    let Ok((_, start)) = head(&s.bytes) else {
        return false;
    };
    let body = &s.bytes[start..];
    body.starts_with(b"data:") && LLAMA_FIELDS.iter().any(|k| super::holds(body, k))
}

/// Whether a source is read as a stream: llama-server's by content, or a `*.sse` file (a refused
/// request's holds an error body).
pub fn is_stream(s: &Source) -> bool {
    looks_like(s) || s.name.to_ascii_lowercase().ends_with(".sse")
}

/// Reads every stream among the sources and runs the llama-server checks over them.
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    let mut responses = Vec::new();
    let mut chunks = Vec::new();
    for src in sources.iter_mut().filter(|s| is_stream(s)) {
        src.role = "stream".into();
        let (r, chunk) = read(src)?;
        responses.push(r);
        chunks.extend(chunk);
    }
    let text = |p: &str| {
        chunks
            .iter()
            .find_map(|v| v.pointer(p).and_then(|x| x.as_str()).map(String::from))
    };
    let mut imp = Imported {
        tool_version: text("/system_fingerprint").map(|b| format!("llama-server {b}")),
        model: text("/model").map(|m| m.rsplit(['/', '\\']).next().unwrap_or(&m).to_string()),
        ..Default::default()
    };
    notes(&mut imp, &responses, sources);
    let responses = Responses {
        file: String::new(),
        responses,
    };
    imp.found = rigaudit_audit::imported::run(CHECKS, &responses);
    imp.series = super::llama_server_body::series(&responses.responses);
    Ok(imp)
}

fn notes(imp: &mut Imported, responses: &[Response], sources: &[Source]) {
    let count = |f: fn(&Response) -> bool| responses.iter().filter(|r| f(r)).count();
    imp.taken.push(format!(
        "{} streams ({} with timings, {} errors, {} cut): each one's final chunk's timings and the token counts stated beside them, its text joined from its chunks and the number of chunks that carried text",
        responses.len(),
        count(|r| r.timings.is_some()),
        count(|r| r.error.is_some()),
        count(|r| r.incomplete.is_some()),
    ));
    imp.not_taken.push("a client's TTFT, the time between chunks and the end-to-end time: a saved stream holds the bytes, not when each came; the server times its own slot".into());
    imp.not_taken.push("which llama-server wrote them: a /completion stream names no build (a chat stream's system_fingerprint does), so both definitions of the generation rate are accepted".into());
    imp.not_taken.push(
        "the request each stream answers, and the server's settings: the streams do not record them"
            .into(),
    );
    imp.note_unread(
        sources,
        "not a saved stream (neither `data:` events nor a *.sse file); not read",
    );
}

/// The HTTP status and the offset of the body, past the head `curl -i` saves (`None`, 0 without).
fn head(bytes: &[u8]) -> Result<(Option<u16>, usize), String> {
    let mut start = 0;
    let mut status = None;
    while bytes[start..].starts_with(b"HTTP/") {
        let rest = &bytes[start..];
        let end = [&b"\r\n\r\n"[..], b"\n\n"]
            .iter()
            .filter_map(|sep| {
                rest.windows(sep.len())
                    .position(|w| w == *sep)
                    .map(|i| i + sep.len())
            })
            .min()
            .ok_or("the HTTP head has no end (no blank line after it)")?;
        let line = String::from_utf8_lossy(&rest[..end]);
        status = line.split_whitespace().nth(1).and_then(|c| c.parse().ok());
        start += end;
    }
    Ok((status, start))
}

/// The 1-based line of a byte offset.
fn line_at(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset].iter().filter(|b| **b == b'\n').count() + 1
}

/// One stream file: its response, and its final chunk (for the model and build it names).
fn read(src: &Source) -> Result<(Response, Option<Value>), Fatal> {
    let (status, start) =
        head(&src.bytes).map_err(|e| fatal(format!("{}: line 1: {e}", src.shown)))?;
    let body = &src.bytes[start..];
    let lead = body.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let line = line_at(&src.bytes, start + lead);
    match body.get(lead) {
        Some(b'd') if body[lead..].starts_with(b"data:") => stream(src, start + lead),
        Some(b'{') => whole(src, status, &body[lead..], line).map(|r| (r, None)),
        Some(_) if status.is_some_and(|s| s >= 400) => Ok((refused(src, status, body, line), None)),
        _ => Err(fatal(format!(
            "{}: line {line} (byte {}): expected a llama-server stream (`data: {{...}}` events, as `curl -N` saves them) or its HTTP error body, found {}",
            src.shown,
            start + lead,
            if body.is_empty() { "nothing".to_string() } else { shown(&String::from_utf8_lossy(&body[lead..body.len().min(lead + 60)])) }
        ))),
    }
}

/// A whole JSON body instead of a stream: an error body (a refused request), or a whole response.
fn whole(src: &Source, status: Option<u16>, body: &[u8], line: usize) -> Result<Response, Fatal> {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) if status.is_some_and(|s| s >= 400) => return Ok(refused(src, status, body, line)),
        Err(e) => {
            return Err(fatal(format!(
                "{}: line {}, column {}: not valid JSON: {e}; expected a stream or an error body",
                src.shown,
                line + e.line() - 1,
                e.column()
            )))
        }
    };
    let (mut r, _) = super::llama_server_body::response(&v, line)
        .map_err(|w| fatal(format!("{}: line {line}: {w}", src.shown)))?;
    r.file = Some(src.name.clone());
    Ok(r)
}

/// An HTTP error status with a body that is no error object: the status and the body, shown.
fn refused(src: &Source, status: Option<u16>, body: &[u8], line: usize) -> Response {
    let text = String::from_utf8_lossy(body);
    Response {
        line,
        file: Some(src.name.clone()),
        error: Some((status.map(i64::from), input::shown_n(text.trim(), 200))),
        ..Default::default()
    }
}

/// The events of a stream, from `start` (its first `data:`), through the one SSE parser.
fn stream(src: &Source, start: usize) -> Result<(Response, Option<Value>), Fatal> {
    let mut t = Timed::default();
    let mut rest: &[u8] = &src.bytes[start..];
    let chunks = read_sse(&mut rest, &mut t, &|| 0.0);
    let end = src.bytes.len() - rest.len();
    let mut r = Response {
        file: Some(src.name.clone()),
        chunks: Some(chunks),
        line: line_at(&src.bytes, end.saturating_sub(1)),
        ..Default::default()
    };
    if let Some(e) = t.error.clone() {
        stopped(src, end, &e, t.timed_chunk.is_some(), &mut r)?;
    }
    if let Some(v) = &t.timed_chunk {
        finished(src, v, &t, &mut r)?;
    } else if r.error.is_none() && r.incomplete.is_none() && t.finish_reason.is_none() {
        r.incomplete = Some(format!(
            "it ends at line {} (byte {end}) after {chunks} chunks of text, before its final chunk (the one with timings and stop, or a finish_reason)",
            r.line
        ));
    }
    r.text = Some(t.text);
    Ok((r, t.timed_chunk))
}

/// The final chunk's timings and stated counts into `r` (the text stays the chunks' joined text).
fn finished(src: &Source, v: &Value, t: &Timed, r: &mut Response) -> Result<(), Fatal> {
    let line = last_line_holding(&src.bytes, "\"timings\"").unwrap_or(r.line);
    let (whole, _) = super::llama_server_body::response(v, line)
        .map_err(|w| fatal(format!("{}: line {line}: {w}", src.shown)))?;
    r.line = line;
    r.timings = whole.timings;
    r.pre_slot = whole.pre_slot;
    r.truncated = whole.truncated;
    r.ended_on_eos = v.get("stop_type").and_then(Value::as_str) == Some("eos")
        || t.finish_reason.as_deref() == Some("stop");
    r.prompt_tokens = whole
        .prompt_tokens
        .or(t.prompt_tokens.map(|x| (x as f64, "usage.prompt_tokens")));
    r.reply_tokens = whole.reply_tokens.or(t
        .completion_tokens
        .map(|x| (x as f64, "usage.completion_tokens")));
    Ok(())
}

/// The 1-based number of the last line that starts with `data:` and holds `needle`.
fn last_line_holding(bytes: &[u8], needle: &str) -> Option<usize> {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("data:") && l.contains(needle))
        .map(|(i, _)| i + 1)
        .last()
}

/// The parser stopped at the line that ends at `end`: an `error` event (a failed request), a
/// last event cut before its end (an incomplete stream; after the final chunk, only the closing
/// `[DONE]` was cut, and nothing is missing), or a line that is no event (refused).
fn stopped(
    src: &Source,
    end: usize,
    why: &str,
    timed: bool,
    r: &mut Response,
) -> Result<(), Fatal> {
    let from = src.bytes[..end.saturating_sub(1)]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let raw = String::from_utf8_lossy(&src.bytes[from..end]);
    let line = line_at(&src.bytes, from);
    r.line = line;
    let data = raw.trim().strip_prefix("data:").unwrap_or("").trim();
    if let Some(e) = serde_json::from_str::<Value>(data)
        .ok()
        .and_then(|v| super::error_of(&v))
    {
        r.error = Some(e);
        return Ok(());
    }
    let cut = end == src.bytes.len() && !src.bytes.ends_with(b"\n");
    if cut && why.starts_with("malformed SSE chunk") {
        if timed {
            return Ok(());
        }
        r.incomplete = Some(format!(
            "its last event, at line {line} (byte {from}), ends after {} bytes without closing its JSON ({})",
            end - from,
            shown(&raw.chars().take(40).collect::<String>())
        ));
        return Ok(());
    }
    Err(fatal(format!(
        "{}: line {line} (byte {from}): {why}; expected `data: ` and one JSON object a line",
        src.shown
    )))
}
