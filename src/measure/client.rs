//! A small OpenAI-compatible client that times one streamed request.
//!
//! Time to first token is the first SSE chunk that carries generated text (`delta.content` or
//! `text`), never a chunk with only the role; reasoning text is not counted as a first token.
//! Token counts come from the server's `usage` (asked for with `stream_options.include_usage`);
//! when a server sends none, the count of text chunks is used and the record says so.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

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
}

/// A client bound to one server.
pub struct Client {
    base: String,
    http: reqwest::blocking::Client,
    /// The instant times are measured from.
    pub t0: Instant,
}

impl Client {
    /// A client for `base` (for example `http://127.0.0.1:8080/v1`).
    pub fn new(base: &str, timeout: Duration) -> Result<Client, String> {
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(64)
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Client {
            base: base.trim_end_matches('/').to_string(),
            http,
            t0: Instant::now(),
        })
    }

    fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// `GET /models`.
    pub fn models(&self) -> Result<Value, String> {
        let url = format!("{}/models", self.base);
        let r = self
            .http
            .get(&url)
            .send()
            .map_err(|e| format!("{url}: {e}"))?;
        let status = r.status();
        let text = r.text().map_err(|e| format!("{url}: {e}"))?;
        if !status.is_success() {
            return Err(format!("{url}: HTTP {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("{url}: not JSON: {e}"))
    }

    /// `GET` of a path beside the API root (for `/metrics`), as text.
    pub fn get_text(&self, path: &str) -> Result<String, String> {
        let root = self.base.strip_suffix("/v1").unwrap_or(&self.base);
        let url = format!("{root}{path}");
        let r = self
            .http
            .get(&url)
            .send()
            .map_err(|e| format!("{url}: {e}"))?;
        if !r.status().is_success() {
            return Err(format!("{url}: HTTP {}", r.status()));
        }
        r.text().map_err(|e| format!("{url}: {e}"))
    }

    /// Sends one streamed request to `endpoint` (`chat/completions` or `completions`) and times it.
    pub fn stream(&self, endpoint: &str, mut body: Value) -> Timed {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let url = format!("{}/{endpoint}", self.base);
        let mut t = Timed {
            sent_s: self.now(),
            completion_source: "none",
            ..Default::default()
        };
        let resp = match self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
        {
            Ok(r) => r,
            Err(e) => {
                t.error = Some(format!("no answer: {e}"));
                return t;
            }
        };
        t.status = resp.status().as_u16();
        if !resp.status().is_success() {
            t.error = Some(error_message(resp));
            t.end_s = Some(self.now());
            return t;
        }
        let chunks = self.read_events(resp, &mut t);
        t.end_s = Some(self.now());
        if t.completion_tokens.is_none() && chunks > 0 {
            t.completion_tokens = Some(chunks);
            t.completion_source = "chunks";
        }
        t
    }

    /// Reads the server-sent events of a reply into `t` until `[DONE]`, the end or an error;
    /// returns the number of chunks that carried text.
    fn read_events(&self, resp: reqwest::blocking::Response, t: &mut Timed) -> u64 {
        let mut chunks = 0u64;
        let mut reader = BufReader::new(resp);
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    t.error = Some(format!("stream broke: {e}"));
                    break;
                }
            }
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
                t.error = Some(
                    err.get("message")
                        .and_then(|m| m.as_str())
                        .unwrap_or("error in stream")
                        .to_string(),
                );
                break;
            }
            if self.take_chunk(&v, t) {
                chunks += 1;
            }
        }
        chunks
    }

    /// One chunk's text, finish reason, server timings and usage into `t`; whether it carried
    /// text.
    fn take_chunk(&self, v: &Value, t: &mut Timed) -> bool {
        let choice = v.pointer("/choices/0");
        let piece = choice
            .and_then(|c| c.pointer("/delta/content").or_else(|| c.get("text")))
            .and_then(|x| x.as_str())
            .unwrap_or("");
        if !piece.is_empty() {
            if t.first_token_s.is_none() {
                t.first_token_s = Some(self.now());
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
}

/// The message of an error reply: its JSON `error.message`, else its text.
fn error_message(resp: reqwest::blocking::Response) -> String {
    let text = resp.text().unwrap_or_default();
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(|m| m.as_str())
                .map(String::from)
        })
        .unwrap_or(text)
}
