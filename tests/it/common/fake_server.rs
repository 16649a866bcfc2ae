//! A small OpenAI-compatible server on loopback for the client's tests: it streams a reply of
//! `max_tokens` one-word chunks at a fixed pace, counts prompt tokens as whitespace words, refuses a
//! request whose prompt plus reply exceeds its window, and can be told to misbehave.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the fake behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Answers well.
    Good,
    /// Answers every completion with HTTP 500.
    Error500,
    /// Sends a chunk that is not JSON.
    MalformedSse,
    /// Reports cached tokens.
    Cached,
}

/// A running fake.
pub struct Fake {
    pub port: u16,
    pub window: u64,
    stop: Arc<AtomicBool>,
    pub requests: Arc<AtomicU64>,
}

impl Fake {
    /// Starts a fake with a window, a first-token delay and a delay per token.
    pub fn start(window: u64, first_ms: u64, per_token_ms: u64, mode: Mode) -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let (s2, r2) = (stop.clone(), requests.clone());
        l.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !s2.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((c, _)) => {
                        let r3 = r2.clone();
                        c.set_nonblocking(false).unwrap();
                        // Without this, Nagle holds a chunk back until the client acknowledges the last one.
                        c.set_nodelay(true).unwrap();
                        std::thread::spawn(move || {
                            serve(c, window, first_ms, per_token_ms, mode, r3)
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Fake {
            port,
            window,
            stop,
            requests,
        }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How a connection's replies are paced and shaped.
#[derive(Clone, Copy)]
struct Pace {
    window: u64,
    first_ms: u64,
    per_token_ms: u64,
    mode: Mode,
}

fn serve(
    c: TcpStream,
    window: u64,
    first_ms: u64,
    per_token_ms: u64,
    mode: Mode,
    count: Arc<AtomicU64>,
) {
    let pace = Pace {
        window,
        first_ms,
        per_token_ms,
        mode,
    };
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut w = c;
    while let Some((method, path, body)) = read_request(&mut r) {
        match (method.as_str(), path.as_str()) {
            ("GET", "/v1/models") => send(&mut w, "200 OK", "application/json",
                &json!({"object": "list", "data": [{"id": "fake", "object": "model", "max_model_len": window}]}).to_string()),
            ("GET", "/metrics") => send(&mut w, "200 OK", "text/plain", "# fake\nfake_drafted_tokens_total 10\nfake_draft_accepted_tokens_total 5\n"),
            ("POST", p) if p.ends_with("completions") => {
                count.fetch_add(1, Ordering::Relaxed);
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if complete(&mut w, &v, p.ends_with("chat/completions"), pace).is_none() {
                    return;
                }
            }
            _ => send(&mut w, "404 Not Found", "text/plain", "no"),
        }
    }
}

/// The next request on the connection: method, path and body; `None` when it ends.
fn read_request(r: &mut BufReader<TcpStream>) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or("").to_string(),
        parts.next().unwrap_or("").to_string(),
    );
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        if h == "\r\n" {
            break;
        }
        if let Some(v) = h.to_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).ok()?;
    Some((method, path, body))
}

fn send(w: &mut TcpStream, status: &str, ctype: &str, b: &str) {
    let _ = write!(
        w,
        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\n\r\n{b}",
        b.len()
    );
}

/// One chunk of a chunked event stream.
fn chunk(w: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let s = format!("data: {data}\n\n");
    write!(w, "{:x}\r\n{s}\r\n", s.len()).and_then(|_| w.flush())
}

/// Answers a completion request `v` (refused, failed or streamed, as `pace` says); `None` when
/// the connection is gone.
fn complete(w: &mut TcpStream, v: &Value, chat: bool, pace: Pace) -> Option<()> {
    let prompt = v
        .get("prompt")
        .and_then(|p| p.as_str())
        .map(String::from)
        .unwrap_or_else(|| {
            v["messages"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .filter_map(|x| x["content"].as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default()
        });
    let pt = prompt.split_whitespace().count() as u64;
    let max = v["max_tokens"].as_u64().unwrap_or(16);
    let window = pace.window;
    if pt + max > window {
        send(w, "400 Bad Request", "application/json",
            &json!({"error": {"message": format!("maximum context length is {window} tokens"), "type": "invalid_request_error"}}).to_string());
        return Some(());
    }
    if pace.mode == Mode::Error500 {
        send(
            w,
            "500 Internal Server Error",
            "application/json",
            &json!({"error": {"message": "boom"}}).to_string(),
        );
        return Some(());
    }
    let _ = write!(
        w,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    );
    if chat {
        chunk(
            w,
            &json!({"choices": [{"delta": {"role": "assistant"}}]}).to_string(),
        )
        .ok()?;
    }
    std::thread::sleep(Duration::from_millis(pace.first_ms));
    stream_words(w, chat, max, pace)?;
    let cached = if pace.mode == Mode::Cached { pt / 2 } else { 0 };
    let _ = chunk(
        w,
        &json!({"choices": [], "usage": {"prompt_tokens": pt, "completion_tokens": max,
        "prompt_tokens_details": {"cached_tokens": cached}}})
        .to_string(),
    );
    let _ = chunk(w, "[DONE]");
    let _ = write!(w, "0\r\n\r\n");
    let _ = w.flush();
    Some(())
}

/// The reply's `max` one-word chunks at `pace` (a malformed one second, when told to);
/// `None` when the connection is gone.
fn stream_words(w: &mut TcpStream, chat: bool, max: u64, pace: Pace) -> Option<()> {
    for i in 0..max {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(pace.per_token_ms));
        }
        let fin = if i + 1 == max {
            json!("length")
        } else {
            Value::Null
        };
        let c = if chat {
            json!({"choices": [{"delta": {"content": "word "}, "finish_reason": fin}]})
        } else {
            json!({"choices": [{"text": "word ", "finish_reason": fin}]})
        };
        if pace.mode == Mode::MalformedSse && i == 1 {
            let _ = chunk(w, "{not json");
            break;
        }
        chunk(w, &c.to_string()).ok()?;
    }
    Some(())
}
