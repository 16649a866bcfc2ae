//! `serve --reply-shapes`: every shape on `/v1/chat/completions` and `/v1/completions`, streamed
//! and not, against the tiny random-weights model (greedy, so a shaped reply's tokens can be
//! compared with an unshaped request's). Rules of the form `SHAPE@2/2` shape the even requests,
//! so each shaped request follows an unshaped one it is compared with.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{parse_response, sse_events, Server};
use rigaudit_engine::shapes::{Shape, Spec};
use serde_json::{json, Value};

/// Chat or completions, streamed or not.
const CASES: [(bool, bool); 4] = [(true, false), (true, true), (false, false), (false, true)];

/// vLLM's body for a generation that failed, exactly as the engine sends it.
const VLLM_500: &str = r#"{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}"#;

/// The tiny model, made once per test process.
fn tiny() -> &'static PathBuf {
    static MODEL: OnceLock<PathBuf> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("engine-shapes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("tiny.gguf");
        let o = Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
            .args(["make-model", "--preset", "tiny", "--seed", "3", "--out"])
            .arg(&out)
            .output()
            .expect("run make-model");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    })
}

fn serve(spec: &str) -> Server {
    Server::start(tiny(), &["--context", "512", "--reply-shapes", spec])
}

fn path(chat: bool) -> &'static str {
    if chat {
        "/v1/chat/completions"
    } else {
        "/v1/completions"
    }
}

/// A greedy request for 8 tokens of "hello world", with `extra` fields over it.
fn body(chat: bool, stream: bool, extra: Value) -> String {
    let mut v = if chat {
        json!({"model": "test", "messages": [{"role": "user", "content": "hello world"}]})
    } else {
        json!({"model": "test", "prompt": "hello world"})
    };
    let o = v.as_object_mut().unwrap();
    o.extend(
        json!({"max_tokens": 8, "temperature": 0, "stream": stream, "cache_prompt": false})
            .as_object()
            .unwrap()
            .clone(),
    );
    if let Value::Object(e) = extra {
        o.extend(e);
    }
    v.to_string()
}

/// What came back: status and body.
struct Reply {
    status: u16,
    body: String,
}

fn send(s: &Server, chat: bool, stream: bool, extra: Value) -> Reply {
    let (status, body) = s.request("POST", path(chat), Some(&body(chat, stream, extra)));
    Reply { status, body }
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// A stream's events, each in a word: `role`, `text`, `finish:REASON:COMPLETION_TOKENS`,
    /// `error` or `[DONE]`.
    fn kinds(&self) -> Vec<String> {
        sse_events(&self.body).iter().map(|e| kind(e)).collect()
    }

    /// The text of a reply, streamed or not.
    fn text(&self, chat: bool, stream: bool) -> String {
        if !stream {
            let c = &self.json()["choices"][0];
            let t = if chat {
                &c["message"]["content"]
            } else {
                &c["text"]
            };
            return t.as_str().expect("text").to_string();
        }
        let field = |v: &Value| {
            let c = &v["choices"][0];
            let t = if chat {
                &c["delta"]["content"]
            } else {
                &c["text"]
            };
            t.as_str().unwrap_or("").to_string()
        };
        sse_events(&self.body)
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e).ok())
            .map(|v| field(&v))
            .collect()
    }

    /// `finish_reason` and `usage.completion_tokens` (of the final chunk when streamed).
    fn finish(&self, stream: bool) -> (String, u64) {
        let v = if stream {
            let last = sse_events(&self.body)
                .into_iter()
                .rfind(|e| e.contains("\"usage\""))
                .expect("a final chunk with usage");
            serde_json::from_str(&last).unwrap()
        } else {
            self.json()
        };
        let reason = v["choices"][0]["finish_reason"].as_str().unwrap_or("");
        (
            reason.to_string(),
            v["usage"]["completion_tokens"].as_u64().unwrap(),
        )
    }
}

fn kind(e: &str) -> String {
    if e == "[DONE]" {
        return e.to_string();
    }
    let v: Value = serde_json::from_str(e).unwrap_or_else(|err| panic!("{err}: {e}"));
    if v.get("error").is_some() {
        return "error".into();
    }
    let c = &v["choices"][0];
    if let Some(r) = c["finish_reason"].as_str() {
        return format!("finish:{r}:{}", v["usage"]["completion_tokens"]);
    }
    if c["delta"].get("role").is_some() {
        return "role".into();
    }
    "text".into()
}

/// `kinds` without the text chunks (how many depends on how the tokens decode).
fn frame(r: &Reply) -> Vec<String> {
    r.kinds().into_iter().filter(|k| k != "text").collect()
}

/// The events a stream of `chat` starts with.
fn start(chat: bool) -> Vec<String> {
    if chat {
        vec!["role".into()]
    } else {
        vec![]
    }
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

#[test]
fn refuse_is_the_engines_own_context_length_refusal() {
    let s = serve("refuse@2/2");
    for (chat, stream) in CASES {
        let plain = send(&s, chat, false, json!({}));
        let p = plain.json()["usage"]["prompt_tokens"].as_u64().unwrap();
        let r = send(&s, chat, stream, json!({}));
        assert_eq!(r.status, 400, "{}", r.body);
        let message = format!(
            "This model's maximum context length is 512 tokens. However, you requested 513 tokens ({p} in the messages, {} in the completion). Please reduce the length of the messages or completion.",
            513 - p
        );
        let want = json!({"error": {"message": message, "type": "invalid_request_error",
                                    "param": "messages", "code": "context_length_exceeded"}});
        assert_eq!(r.json(), want, "chat={chat} stream={stream}");
    }
    let shaped = r#"rigaudit_engine_shaped_replies_total{shape="refuse"}"#;
    assert_eq!(s.metric(shaped), 4.0);
}

#[test]
fn http500_is_vllms_error_at_once() {
    let s = serve("http500@1/1");
    for (chat, stream) in CASES {
        let r = send(&s, chat, stream, json!({}));
        assert_eq!((r.status, r.body.as_str()), (500, VLLM_500));
    }
    assert_eq!(s.metric("rigaudit_engine_requests_total"), 0.0);
    let shaped = r#"rigaudit_engine_shaped_replies_total{shape="http500"}"#;
    assert_eq!(s.metric(shaped), 4.0);
}

#[test]
fn stop_is_no_token_finished_by_stop() {
    let s = serve("stop@2/2");
    for (chat, stream) in CASES {
        let plain = send(&s, chat, false, json!({}));
        let r = send(&s, chat, stream, json!({}));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.text(chat, stream), "");
        assert_eq!(r.finish(stream), ("stop".into(), 0));
        if stream {
            let mut want = start(chat);
            want.extend(words(&["finish:stop:0", "[DONE]"]));
            assert_eq!(r.kinds(), want);
        } else {
            let usage = &r.json()["usage"];
            assert_eq!(
                usage["prompt_tokens"],
                plain.json()["usage"]["prompt_tokens"]
            );
        }
    }
}

#[test]
fn empty_is_one_token_without_text() {
    let s = serve("empty@1/1");
    for (chat, stream) in CASES {
        let r = send(&s, chat, stream, json!({}));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.text(chat, stream), "");
        assert_eq!(r.finish(stream), ("stop".into(), 1));
        if stream {
            let mut want = start(chat);
            want.extend(words(&["text", "finish:stop:1", "[DONE]"]));
            assert_eq!(r.kinds(), want, "{}", r.body);
        }
    }
}

#[test]
fn one_is_the_first_real_token_then_stop() {
    let s = serve("one@2/2");
    for (chat, stream) in CASES {
        let first = json!({"max_tokens": 1, "ignore_eos": true});
        let plain = send(&s, chat, stream, first);
        let r = send(&s, chat, stream, json!({}));
        assert_eq!(r.text(chat, stream), plain.text(chat, stream));
        assert_eq!(r.finish(stream), ("stop".into(), 1));
        if stream {
            let mut want = start(chat);
            want.extend(words(&["finish:stop:1", "[DONE]"]));
            assert_eq!(frame(&r), want);
        }
    }
}

#[test]
fn length_is_exactly_n_tokens_finished_by_length() {
    let s = serve("length=3@2/2");
    for (chat, stream) in CASES {
        let plain = send(
            &s,
            chat,
            stream,
            json!({"max_tokens": 3, "ignore_eos": true}),
        );
        let r = send(&s, chat, stream, json!({"stop": ["a", "e"]}));
        assert_eq!(r.text(chat, stream), plain.text(chat, stream));
        assert_eq!(r.finish(stream), ("length".into(), 3));
        // Never more than the request allows.
        let few = send(&s, chat, stream, json!({}));
        assert_eq!(few.status, 200);
        let r = send(&s, chat, stream, json!({"max_tokens": 2}));
        assert_eq!(r.finish(stream), ("length".into(), 2));
    }
}

#[test]
fn midstream_error_is_n_tokens_then_vllms_error_event() {
    let s = serve("midstream-error=3@2/2");
    let event = format!("data: {VLLM_500}\n\ndata: [DONE]\n\n");
    for (chat, stream) in CASES {
        let plain = send(
            &s,
            chat,
            stream,
            json!({"max_tokens": 3, "ignore_eos": true}),
        );
        let r = send(&s, chat, stream, json!({}));
        if !stream {
            assert_eq!((r.status, r.body.as_str()), (500, VLLM_500));
            continue;
        }
        assert_eq!(r.status, 200);
        assert_eq!(r.text(chat, stream), plain.text(chat, stream));
        let mut want = start(chat);
        want.extend(words(&["error", "[DONE]"]));
        assert_eq!(frame(&r), want, "{}", r.body);
        assert!(r.body.ends_with(&event), "{}", r.body);
        assert!(!r.body.contains("\"usage\""), "{}", r.body);
    }
    let shaped = r#"rigaudit_engine_shaped_replies_total{shape="midstream-error"}"#;
    assert_eq!(s.metric(shaped), 4.0);
}

/// A streamed request read as it comes: when the head came, when the first event came, and the
/// whole response.
fn timed_stream(s: &Server, chat: bool) -> (Duration, Duration, Reply) {
    let body = body(chat, true, json!({}));
    let mut c = TcpStream::connect(&s.addr).unwrap();
    let req = format!(
        "POST {} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        path(chat),
        body.len()
    );
    let t0 = Instant::now();
    c.write_all(req.as_bytes()).unwrap();
    let (mut raw, mut buf) = (Vec::new(), [0u8; 4096]);
    let (mut head, mut first) = (None, None);
    loop {
        let n = c.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw);
        if let Some(at) = text.find("\r\n\r\n") {
            head.get_or_insert(t0.elapsed());
            if text[at..].contains("data:") {
                first.get_or_insert(t0.elapsed());
            }
        }
    }
    let (status, body) = parse_response(&raw);
    (head.unwrap(), first.unwrap(), Reply { status, body })
}

#[test]
fn slow_first_is_a_normal_reply_that_starts_late() {
    let late = Duration::from_millis(700);
    let s = serve("slow-first=700@2/2");
    for (chat, stream) in CASES {
        let plain = send(&s, chat, stream, json!({}));
        let (r, head, first) = if stream {
            let (head, first, r) = timed_stream(&s, chat);
            (r, head, first)
        } else {
            let t0 = Instant::now();
            let r = send(&s, chat, stream, json!({}));
            (r, Duration::ZERO, t0.elapsed())
        };
        assert!(first >= late, "first event after {first:?}");
        // A stream's head comes at once; its first event (the chat role chunk too) comes late.
        assert!(head < late, "head after {head:?}");
        assert_eq!(r.status, 200);
        assert_eq!(r.text(chat, stream), plain.text(chat, stream));
        assert_eq!(r.finish(stream), plain.finish(stream));
        if stream {
            assert_eq!(frame(&r), frame(&plain));
        }
    }
}

#[test]
fn hang_sends_nothing_and_gives_504_after_its_cap() {
    let s = serve("hang=400@1/1");
    let want = r#"{"error":{"message":"no reply within 400 ms (reply shape hang)","type":"TimeoutError","param":null,"code":504}}"#;
    for (chat, stream) in CASES {
        let t0 = Instant::now();
        let r = send(&s, chat, stream, json!({}));
        assert!(t0.elapsed() >= Duration::from_millis(400));
        assert_eq!((r.status, r.body.as_str()), (504, want));
    }
    assert_eq!(s.metric("rigaudit_engine_reply_shape_hanging"), 0.0);
}

/// Polls `metric` until it is `want` (5 s at most).
fn wait_metric(s: &Server, metric: &str, want: f64) {
    let t0 = Instant::now();
    while s.metric(metric) != want {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{metric} never {want}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hang_ends_when_the_client_goes() {
    let s = serve("hang@1/1");
    let hanging = "rigaudit_engine_reply_shape_hanging";
    for (chat, stream) in CASES {
        let body = body(chat, stream, json!({}));
        let mut c = TcpStream::connect(&s.addr).unwrap();
        let req = format!(
            "POST {} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            path(chat),
            body.len()
        );
        c.write_all(req.as_bytes()).unwrap();
        wait_metric(&s, hanging, 1.0);
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 64];
        assert!(c.read(&mut buf).is_err(), "a hang sent something");
        drop(c);
        wait_metric(&s, hanging, 0.0);
    }
}

/// What a plain (8 greedy tokens, end-of-sequence ignored) or shaped completions reply was.
fn outcome(r: &Reply) -> Option<Shape> {
    match r.status {
        500 => return Some(Shape::Http500),
        400 if r.body.contains("maximum context length") => return Some(Shape::Refuse),
        200 => {}
        _ => panic!("{} {}", r.status, r.body),
    }
    match r.json()["usage"]["completion_tokens"].as_u64() {
        Some(0) => Some(Shape::Stop),
        Some(1) => Some(Shape::Empty),
        Some(8) => None,
        _ => panic!("{}", r.body),
    }
}

#[test]
fn requests_are_numbered_as_they_arrive_and_the_first_rule_wins() {
    let spec = "stop@2-3,http500@5/4,empty@6,refuse@40%:9,empty@1/1";
    let s = serve(spec);
    assert_eq!(s.start_field("reply_shapes").as_deref(), Some(spec));
    let parsed = Spec::parse(spec).unwrap();
    let mut counts = std::collections::HashMap::new();
    for n in 1..=14u64 {
        if n == 3 {
            // A malformed body takes its number and is refused as ever, unshaped.
            let (st, _) = s.request("POST", "/v1/completions", Some("{"));
            assert_eq!(st, 400);
            continue;
        }
        let r = send(&s, false, false, json!({"ignore_eos": true}));
        let want = parsed.shape_of(n);
        assert_eq!(outcome(&r), want, "request {n}");
        *counts.entry(want.unwrap().name()).or_insert(0.0) += 1.0;
    }
    assert_eq!(s.metric("rigaudit_engine_reply_shape_requests_total"), 14.0);
    for name in ["stop", "http500", "empty", "refuse"] {
        let m = format!("rigaudit_engine_shaped_replies_total{{shape=\"{name}\"}}");
        assert_eq!(
            s.metric(&m),
            counts.get(name).copied().unwrap_or(0.0),
            "{name}"
        );
    }
}

#[test]
fn several_prompts_in_one_request_are_shaped_together() {
    let s = serve("midstream-error=2@1,empty@2,refuse@3");
    let two = json!({"prompt": ["hello", "hello world and more"]});
    let r = send(&s, false, false, two.clone());
    assert_eq!((r.status, r.body.as_str()), (500, VLLM_500));
    let r = send(&s, false, false, two.clone());
    let v = r.json();
    assert_eq!(v["choices"][0]["text"], "");
    assert_eq!(v["choices"][1]["finish_reason"], "stop");
    assert_eq!(v["usage"]["completion_tokens"], 2);
    let r = send(&s, false, false, two);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("However, you requested 513 tokens"), "{msg}");
}

#[test]
fn without_the_option_nothing_is_shaped_or_said() {
    let s = Server::start(tiny(), &["--context", "512"]);
    assert_eq!(s.start_field("reply_shapes"), None);
    let (_, metrics) = s.request("GET", "/metrics", None);
    assert!(!metrics.contains("reply_shape"), "{metrics}");
    assert!(!metrics.contains("shaped_replies"), "{metrics}");
    let o = Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
        .args([
            "serve",
            "m.gguf",
            "--name",
            "m",
            "--reply-shapes",
            "stop@2,boom@3",
        ])
        .output()
        .expect("run serve");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rule \"boom@3\": unknown shape `boom`"),
        "{err}"
    );
}
