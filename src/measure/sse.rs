//! The server-sent events of one streamed reply, read into a [`Timed`]: the text, the time of
//! the first chunk that carries generated text (`delta.content` or `text`, or llama.cpp's
//! `/completion` stream's top-level `content`; a chunk with only the role is no first token), the finish reason, the engine's own `timings`, and the token counts
//! from `usage`. Every line is bounded ([`crate::input::SSE_LINE_MAX`]), every quoted error too.
//! Pure over its bytes (the clock is passed in), so the fuzz targets read it as the client does.

use crate::input;
use serde_json::Value;
use std::io::{self, BufRead, BufReader, Read};

/// One timed request.
#[derive(Debug, Clone, Default)]
pub struct Timed {
    /// HTTP status (0 when no answer came).
    pub status: u16,
    /// Error text of a refused or failed request.
    pub error: Option<String>,
    /// Seconds from the run's start.
    pub sent_s: f64,
    /// First chunk with generated text.
    pub first_token_s: Option<f64>,
    /// End of the stream.
    pub end_s: Option<f64>,
    /// Prompt tokens from usage.
    pub prompt_tokens: Option<u64>,
    /// Reply tokens (usage, or counted chunks).
    pub completion_tokens: Option<u64>,
    /// Where the reply count came from.
    pub completion_source: &'static str,
    /// Cached prompt tokens reported.
    pub cached_tokens: Option<u64>,
    /// Finish reason.
    pub finish_reason: Option<String>,
    /// The reply.
    pub text: String,
    /// The engine's own `timings`, when a chunk carries them.
    pub server_timings: Option<rigaudit_audit::records::speed::ServerTimings>,
    /// The last chunk that carried `timings`, whole (llama.cpp's server puts its counts, model
    /// and stop reason beside them; the importer of saved streams reads them there).
    pub timed_chunk: Option<Value>,
}

/// One line of at most `max` bytes (its end included); a longer one is an error.
fn bounded_line(r: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    line.clear();
    let n = r.take(max as u64 + 1).read_until(b'\n', line)?;
    if line.len() > max {
        return Err(io::Error::other(format!(
            "an SSE line is longer than {}, the bound for one line (see docs/security.md)",
            input::size(max as u64)
        )));
    }
    Ok(n)
}

/// A line of the stream as text: SSE and JSON are UTF-8, so a line that is not is an error naming
/// the byte, not text read with replacement characters; a sequence cut by the stream's end stays
/// (lossy) for the parser to call the line cut.
fn utf8_line(raw: &[u8]) -> Result<std::borrow::Cow<'_, str>, String> {
    match std::str::from_utf8(raw) {
        Ok(s) => Ok(std::borrow::Cow::Borrowed(s)),
        Err(e) if e.error_len().is_none() => Ok(String::from_utf8_lossy(raw)),
        Err(e) => Err(format!(
            "malformed SSE line: not UTF-8 at byte {} of the line (SSE and JSON are UTF-8)",
            e.valid_up_to()
        )),
    }
}

/// Reads an SSE stream into `t` (text, first-token time, usage, finish reason, errors); returns
/// the number of chunks that carried text.
pub fn read_sse(reader: &mut impl BufRead, t: &mut Timed, now: &dyn Fn() -> f64) -> u64 {
    let mut chunks = 0u64;
    let mut raw = Vec::new();
    loop {
        match bounded_line(&mut *reader, &mut raw, input::SSE_LINE_MAX) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                t.error = Some(format!("stream broke: {e}"));
                break;
            }
        }
        let line = match utf8_line(&raw) {
            Ok(line) => line,
            Err(why) => {
                t.error = Some(why);
                break;
            }
        };
        let Some(data) = line.trim_end().strip_prefix("data:") else {
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" {
            break;
        }
        let v: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(e) => {
                t.error = Some(format!("malformed SSE chunk: {e}"));
                break;
            }
        };
        if let Some(err) = v.get("error") {
            t.error = Some(input::shown_n(
                err.get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("error in stream"),
                input::MESSAGE_MAX,
            ));
            break;
        }
        if event(&v, t, now) {
            chunks += 1;
        }
    }
    chunks
}

/// The SSE reader on a byte string, the clock at 0 (the fuzz targets in `fuzz/` and the mutation
/// tests of `src/fuzz.rs`; the client reads its streams with [`read_sse`]).
#[allow(dead_code)]
pub fn parse(input: &[u8]) -> Timed {
    let mut t = Timed::default();
    let mut r = BufReader::new(input);
    read_sse(&mut r, &mut t, &|| 0.0);
    t
}

/// One event's data into `t`: text (the first text is the first token), finish reason, the
/// engine's timings, usage. Returns whether it carried text.
fn event(v: &Value, t: &mut Timed, now: &dyn Fn() -> f64) -> bool {
    let choice = v.pointer("/choices/0");
    let piece = choice
        .and_then(|c| c.pointer("/delta/content").or_else(|| c.get("text")))
        .or_else(|| v.get("content").filter(|_| choice.is_none()))
        .and_then(|x| x.as_str())
        .unwrap_or("");
    if !piece.is_empty() {
        if t.first_token_s.is_none() {
            t.first_token_s = Some(now());
        }
        t.text.push_str(piece);
    }
    if let Some(f) = choice
        .and_then(|c| c.get("finish_reason"))
        .and_then(|f| f.as_str())
    {
        t.finish_reason = Some(f.to_string());
    }
    if let Some(tm) = v.get("timings").filter(|u| u.is_object()) {
        t.server_timings = Some(rigaudit_audit::records::speed::ServerTimings {
            predicted_n: tm.get("predicted_n").and_then(Value::as_u64),
            predicted_ms: tm.get("predicted_ms").and_then(Value::as_f64),
            prompt_n: tm.get("prompt_n").and_then(Value::as_u64),
            prompt_ms: tm.get("prompt_ms").and_then(Value::as_f64),
        });
        t.timed_chunk = Some(v.clone());
    }
    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
        t.prompt_tokens = u.get("prompt_tokens").and_then(|x| x.as_u64());
        t.completion_tokens = u.get("completion_tokens").and_then(|x| x.as_u64());
        t.cached_tokens = u
            .pointer("/prompt_tokens_details/cached_tokens")
            .and_then(|x| x.as_u64())
            .or(Some(0));
        t.completion_source = "usage";
    }
    !piece.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_utf8_stops_the_stream_naming_its_byte() {
        let mut t = Timed::default();
        let mut stream: &[u8] = b"data: {\"content\":\"a\xff\"}\n\ndata: {\"content\":\"b\"}\n\n";
        read_sse(&mut stream, &mut t, &|| 0.0);
        let why = t.error.expect("an error");
        assert!(why.contains("not UTF-8 at byte 19 of the line"), "{why}");
        assert!(t.text.is_empty(), "{}", t.text);
        // A character cut by the stream's end is the cut line's to name, not an encoding error.
        assert!(utf8_line(b"data: {\"content\":\"\xc3").is_ok());
    }
}
