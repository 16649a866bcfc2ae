//! Shared helpers for the integration tests: find the model, start the real
//! `rigaudit-engine` binary on loopback (killed on drop), and a tiny HTTP/1.1
//! client over `std::net` (no extra dependencies).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Path of the test model, or `None` (test skipped) outside CI. In CI
/// (`CI=true`) a missing model is a hard failure.
pub fn model_path() -> Option<PathBuf> {
    let p = match std::env::var("RIGAUDIT_MODEL") {
        Ok(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            let cache = std::env::var("RIGAUDIT_CACHE")
                .map(PathBuf::from)
                .unwrap_or_else(|_| {
                    PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
                        .join(".cache/rigaudit")
                });
            cache.join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
        }
    };
    if p.is_file() {
        return Some(p);
    }
    let msg = format!(
        "test model not found at {} — run scripts/fetch-model.sh (or set RIGAUDIT_MODEL)",
        p.display()
    );
    if std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false)
    {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// A running engine; the process is killed when this is dropped.
/// The model of the cache with its tokenizer, loaded; `None` when the cache has no model.
pub fn load_model() -> Option<(
    rigaudit_engine::tokenizer::EngineTokenizer,
    rigaudit_engine::model::Model,
)> {
    let path = model_path()?;
    let g = rigaudit_engine::gguf::Gguf::open(&path).expect("open gguf");
    let tk = rigaudit_engine::tokenizer::EngineTokenizer::from_gguf(&g).expect("tokenizer");
    Some((
        tk,
        rigaudit_engine::model::Model::load(g).expect("load model"),
    ))
}

/// A request the server refuses: its status and its JSON error message.
pub fn refusal(s: &Server, path: &str, body: &str) -> (u16, String) {
    let (st, b) = s.request("POST", path, Some(body));
    let v: Value =
        serde_json::from_str(&b).unwrap_or_else(|e| panic!("{body} -> non-JSON error {e}: {b}"));
    let msg = v["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{body} -> no error.message: {b}"));
    (st, msg.to_string())
}

pub struct Server {
    child: Child,
    /// Held open: the engine (started with `--exit-with-stdin`) exits when
    /// this closes, even if the test process is killed.
    _stdin: Option<std::process::ChildStdin>,
    /// `host:port` it listens on.
    pub addr: String,
    /// The start line it printed.
    pub start_line: String,
}

impl Server {
    /// Start `rigaudit-engine serve MODEL --name test --port 0 ARGS...` and
    /// wait for its start line.
    pub fn start(model: &PathBuf, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
            .arg("serve")
            .arg(model)
            .args([
                "--name",
                "test",
                "--port",
                "0",
                "--threads",
                "2",
                "--exit-with-stdin",
            ])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn rigaudit-engine");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut start_line = String::new();
        for line in lines.by_ref() {
            let line = line.expect("read stdout");
            if line.starts_with("rigaudit-engine start") {
                start_line = line;
                break;
            }
        }
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let addr = start_line
            .split_whitespace()
            .find_map(|f| f.strip_prefix("listen=http://"))
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!("engine did not print a start line with listen=: {start_line:?}")
            })
            .to_string();
        Server {
            child,
            _stdin: stdin,
            addr,
            start_line,
        }
    }

    /// A field `key=value` of the start line.
    pub fn start_field(&self, key: &str) -> Option<String> {
        let pre = format!("{key}=");
        self.start_line
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&pre))
            .map(str::to_string)
    }

    /// Send a request; returns (status, body).
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        http(&self.addr, method, path, body)
    }

    /// POST JSON and parse the JSON answer.
    pub fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        let (st, b) = self.request("POST", path, Some(&body.to_string()));
        let v = serde_json::from_str(&b)
            .unwrap_or_else(|e| panic!("bad JSON from {path} ({st}): {e}: {b}"));
        (st, v)
    }

    /// Value of a metric on `/metrics`.
    pub fn metric(&self, name: &str) -> f64 {
        let (st, b) = self.request("GET", "/metrics", None);
        assert_eq!(st, 200);
        b.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next()? == name).then(|| it.next()?.parse().ok())?
            })
            .unwrap_or_else(|| panic!("metric {name} missing in:\n{b}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Minimal HTTP/1.1 request with `Connection: close`; handles chunked bodies.
pub fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(300))).ok();
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("write");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    parse_response(&raw)
}

/// Parse a full HTTP response into (status, body).
pub fn parse_response(raw: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    if !chunked {
        return (status, rest.to_string());
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let Some(eol) = bytes[i..].windows(2).position(|w| w == b"\r\n") else {
            break;
        };
        let n = usize::from_str_radix(
            std::str::from_utf8(&bytes[i..i + eol])
                .unwrap_or("0")
                .trim(),
            16,
        )
        .unwrap_or(0);
        if n == 0 {
            break;
        }
        let start = i + eol + 2;
        out.extend_from_slice(&bytes[start..(start + n).min(bytes.len())]);
        i = start + n + 2;
    }
    (status, String::from_utf8_lossy(&out).into_owned())
}

/// SSE `data:` payloads of a streamed body, in order.
pub fn sse_events(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: ").map(str::to_string))
        .collect()
}

/// A chat request body.
pub fn chat(content: &str, extra: Value) -> Value {
    let mut v = serde_json::json!({
        "model": "test",
        "messages": [{"role": "user", "content": content}],
    });
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    v
}

/// Chunk of `tokens` at `pos` in slot 0 whose last token's logits are wanted.
pub fn chunk(tokens: &[u32], pos: usize) -> rigaudit_engine::model::Chunk<'_> {
    rigaudit_engine::model::Chunk {
        slot: 0,
        tokens,
        pos,
        all_logits: false,
        no_logits: false,
    }
}
