//! A small OpenAI-compatible client that times one streamed request.
//!
//! Time to first token is the first SSE chunk that carries generated text (`delta.content` or
//! `text`), never a chunk with only the role; reasoning text is not counted as a first token.
//! Token counts come from the server's `usage` (asked for with `stream_options.include_usage`);
//! when a server sends none, the count of text chunks is used and the record says so.

use crate::input;
use serde_json::{json, Value};
use std::io::{self, BufReader, Read};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A response body read on a helper thread, so that reading it has one total deadline (reqwest's
/// blocking timeout bounds each read, so a server sending a byte a second would never time out)
/// and a bound on its size. Dropping it lets the helper end at its next read.
struct Body {
    rx: Receiver<io::Result<Vec<u8>>>,
    deadline: Instant,
    timeout: Duration,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Body {
    fn new(
        mut resp: reqwest::blocking::Response,
        limit: u64,
        what: &'static str,
        deadline: Instant,
        timeout: Duration,
    ) -> Body {
        let (tx, rx) = sync_channel::<io::Result<Vec<u8>>>(8);
        std::thread::spawn(move || {
            let mut total: u64 = 0;
            loop {
                let mut chunk = vec![0u8; 64 * 1024];
                let r = match resp.read(&mut chunk) {
                    Ok(n) => {
                        total += n as u64;
                        chunk.truncate(n);
                        if total > limit {
                            Err(io::Error::other(format!(
                                "the {what} is larger than {}, the bound for a {what} (see docs/security.md)",
                                input::size(limit)
                            )))
                        } else {
                            Ok(chunk)
                        }
                    }
                    Err(e) => Err(e),
                };
                let end = !matches!(&r, Ok(c) if !c.is_empty());
                if tx.send(r).is_err() || end {
                    break;
                }
            }
        });
        Body {
            rx,
            deadline,
            timeout,
            buf: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl Read for Body {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.buf.len() {
            if self.done {
                return Ok(0);
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(Ok(c)) if c.is_empty() => {
                    self.done = true;
                    return Ok(0);
                }
                Ok(Ok(c)) => {
                    self.buf = c;
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.done = true;
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "the reply did not end within {} s, the request's total deadline",
                            self.timeout.as_secs_f64()
                        ),
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

use super::sse::read_sse;

/// A URL for a message: without the credentials a base URL may carry.
fn shown(url: &str) -> String {
    input::without_credentials(url)
}
pub use super::sse::Timed;

/// A client bound to one server.
pub struct Client {
    base: String,
    http: reqwest::blocking::Client,
    timeout: Duration,
    /// The instant times are measured from.
    pub t0: Instant,
}

impl Client {
    /// A client for `base` (for example `http://127.0.0.1:8080/v1`).
    pub fn new(base: &str, timeout: Duration) -> Result<Client, String> {
        let http = crate::http::builder()
            .timeout(timeout)
            .pool_max_idle_per_host(64)
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Client {
            base: base.trim_end_matches('/').to_string(),
            http,
            timeout,
            t0: Instant::now(),
        })
    }

    fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// A whole body as text: at most `limit` bytes, ended before the deadline.
    fn body_text(
        &self,
        r: reqwest::blocking::Response,
        limit: u64,
        what: &'static str,
        deadline: Instant,
    ) -> io::Result<String> {
        let mut b = Vec::new();
        Body::new(r, limit, what, deadline, self.timeout).read_to_end(&mut b)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    /// Sends a `GET` of `url`; the reply and the deadline for reading its body.
    fn get(&self, url: &str) -> Result<(reqwest::blocking::Response, Instant), String> {
        let deadline = Instant::now() + self.timeout;
        let r = self
            .http
            .get(url)
            .send()
            .map_err(|e| format!("{}: {e}", shown(url)))?;
        Ok((r, deadline))
    }

    /// `GET /models`.
    pub fn models(&self) -> Result<Value, String> {
        let url = format!("{}/models", self.base);
        let (r, deadline) = self.get(&url)?;
        let status = r.status();
        let text = self
            .body_text(r, input::HTTP_BODY_MAX, "/v1/models reply", deadline)
            .map_err(|e| format!("{}: {e}", shown(&url)))?;
        if !status.is_success() {
            let url = shown(&url);
            return Err(format!("{url}: HTTP {status}: {}", input::shown(&text)));
        }
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", shown(&url)))
    }

    /// `GET` of a path beside the API root (for `/metrics`), as text.
    pub fn get_text(&self, path: &str) -> Result<String, String> {
        let root = self.base.strip_suffix("/v1").unwrap_or(&self.base);
        let url = format!("{root}{path}");
        let (r, deadline) = self.get(&url)?;
        if !r.status().is_success() {
            return Err(format!("{}: HTTP {}", shown(&url), r.status()));
        }
        self.body_text(r, input::HTTP_BODY_MAX, "reply", deadline)
            .map_err(|e| format!("{}: {e}", shown(&url)))
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
        let deadline = Instant::now() + self.timeout;
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
            let text = match self.body_text(resp, input::HTTP_BODY_MAX, "error body", deadline) {
                Ok(t) => t,
                Err(e) => format!("(the error body could not be read: {e})"),
            };
            let msg = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(|m| m.as_str())
                        .map(String::from)
                })
                .unwrap_or(text);
            t.error = Some(input::shown_n(&msg, input::MESSAGE_MAX));
            t.end_s = Some(self.now());
            return t;
        }
        let mut reader = BufReader::new(Body::new(
            resp,
            input::STREAM_MAX,
            "streamed reply",
            deadline,
            self.timeout,
        ));
        let chunks = read_sse(&mut reader, &mut t, &|| self.now());
        t.end_s = Some(self.now());
        if t.completion_tokens.is_none() && chunks > 0 {
            t.completion_tokens = Some(chunks);
            t.completion_source = "chunks";
        }
        t
    }
}
