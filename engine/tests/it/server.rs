//! End-to-end tests: the real `rigaudit-engine` binary with the real model on
//! 127.0.0.1. Tests take a global lock so that only one engine computes at a
//! time (the machine has few cores and the engine's workers spin).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{chat, model_path, refusal, sse_events, Server};
use serde_json::{json, Value};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn content(v: &Value) -> String {
    v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no content in {v}"))
        .to_string()
}

#[test]
fn start_line_models_and_refusal() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "1024", "--parallel", "2"]);
    for key in [
        "version", "commit", "model", "sha256", "streams", "window", "kv_cache", "kv_type",
        "mem_left", "sampling", "draft",
    ] {
        assert!(
            s.start_field(key).is_some(),
            "start line lacks {key}: {}",
            s.start_line
        );
    }
    assert_eq!(s.start_field("window").as_deref(), Some("1024"));
    assert_eq!(s.start_field("streams").as_deref(), Some("2"));
    assert_eq!(
        s.start_field("sha256").as_deref(),
        Some("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")
    );

    let (st, b) = s.request("GET", "/health", None);
    assert_eq!(st, 200, "{b}");
    let (st, b) = s.request("GET", "/v1/models", None);
    assert_eq!(st, 200);
    let v: Value = serde_json::from_str(&b).expect("models json");
    assert_eq!(v["data"][0]["id"], "test");
    assert_eq!(v["data"][0]["context_window"], 1024);

    // Prompt + max_tokens over the window: 400 with the OpenAI error shape.
    let (st, v) = s.post_json(
        "/v1/chat/completions",
        &chat("Hello", json!({"max_tokens": 2000})),
    );
    assert_eq!(st, 400, "{v}");
    let msg = v["error"]["message"].as_str().expect("error.message");
    assert!(
        msg.contains("maximum context length is 1024 tokens"),
        "{msg}"
    );
    assert_eq!(v["error"]["type"], "invalid_request_error");
    // A prompt alone longer than the window.
    let long = "word ".repeat(1500);
    let (st, v) = s.post_json("/v1/completions", &json!({"prompt": long, "max_tokens": 1}));
    assert_eq!(st, 400, "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap_or("")
        .contains("maximum context length is 1024 tokens"));
    // Still serving, and the refused requests took no slot.
    let (st, v) = s.post_json(
        "/v1/completions",
        &json!({"prompt": "The sky is", "max_tokens": 3, "temperature": 0}),
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["usage"]["completion_tokens"], 3);
    // The slot is freed by the scheduler just after the reply is sent: allow it a moment.
    let t0 = std::time::Instant::now();
    while s.metric("rigaudit_engine_busy_slots") != 0.0 && t0.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(s.metric("rigaudit_engine_busy_slots"), 0.0);
}

/// Bodies a server must refuse with a 4xx naming what is wrong: `(path, body, in the message)`.
#[rustfmt::skip]
const BAD_BODIES: &[(&str, &str, &str)] = &[
    ("/v1/chat/completions", r#"{"messages": ["#, "not valid JSON"),
    ("/v1/chat/completions", "[1,2,3]", "JSON object"),
    ("/v1/chat/completions", r#"{"messages": []}"#, "must not be empty"),
    ("/v1/chat/completions", r#"{"messages": "hi"}"#, "must be an array"),
    ("/v1/chat/completions", "{}", "`messages` is required"),
    ("/v1/chat/completions", r#"{"messages": [{"role": 5, "content": "x"}]}"#, "role"),
    ("/v1/chat/completions", r#"{"messages": [{"role": "user", "content": 7}]}"#, "content"),
    ("/v1/completions", r#"{"prompt": 12}"#, "prompt"),
    ("/v1/completions", r#"{"prompt": [1, 999999]}"#, "outside the vocabulary"),
    ("/v1/completions", r#"{"prompt": ""}"#, "empty"),
];

/// Fields of a chat request ("hi") a server must refuse: `(fields, in the message)`.
#[rustfmt::skip]
const BAD_CHAT_FIELDS: &[(&str, &str)] = &[
    (r#"{"max_tokens": "ten"}"#, "`max_tokens` must be an integer"),
    (r#"{"max_tokens": -5}"#, "non-negative"),
    (r#"{"max_tokens": 1e30}"#, "max_tokens"),
    (r#"{"max_tokens": 18446744073709551615}"#, "maximum context length is 512 tokens"),
    (r#"{"temperature": "hot"}"#, "`temperature` must be a number"),
    (r#"{"top_p": 3}"#, "top_p"),
    (r#"{"stream": "yes"}"#, "`stream` must be a boolean"),
    (r#"{"stop": [1, 2]}"#, "stop"),
    (r#"{"seed": "x"}"#, "seed"),
    (r#"{"chat_template_kwargs": {"enable_thinking": "no"}}"#, "enable_thinking"),
];

/// Asserts the server answers `body` at `path` with a 4xx whose JSON error message has `want`.
fn assert_refused(s: &Server, path: &str, body: &str, want: &str) {
    let (st, msg) = refusal(s, path, body);
    assert!((400..500).contains(&st), "{body} -> {st} {msg}");
    assert!(
        msg.contains(want),
        "{body} -> message {msg:?} lacks {want:?}"
    );
}

/// Waits up to 20 s for the busy-slot gauge to read `busy`; fails with `why` past that.
fn wait_busy_slots(s: &Server, busy: f64, every: Duration, why: &str) {
    let t = Instant::now();
    while s.metric("rigaudit_engine_busy_slots") != busy {
        assert!(t.elapsed() < Duration::from_secs(20), "{why}");
        std::thread::sleep(every);
    }
}

/// A client that disconnects mid-stream: its slot is freed and generation stops.
fn assert_a_disconnect_frees_the_slot(s: &Server) {
    let mut c = TcpStream::connect(&s.addr).expect("connect");
    let body = chat(
        "Write a long story about a dragon.",
        json!({"stream": true, "max_tokens": 400, "ignore_eos": true}),
    )
    .to_string();
    write!(
        c,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut buf = [0u8; 2048];
    let n = c.read(&mut buf).expect("read first bytes");
    assert!(n > 0 && String::from_utf8_lossy(&buf[..n]).contains("200"));
    let taken = "streaming request never took a slot";
    wait_busy_slots(s, 1.0, Duration::from_millis(10), taken);
    drop(c);
    let freed = "slot not freed after client disconnect";
    wait_busy_slots(s, 0.0, Duration::from_millis(50), freed);
    assert!(s.metric("rigaudit_engine_requests_cancelled_total") >= 1.0);
    assert!(
        s.metric("rigaudit_engine_generation_tokens_total") < 400.0,
        "generation was not stopped"
    );
}

#[test]
fn bad_requests_get_4xx_and_server_survives() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "512"]);
    for (path, body, want) in BAD_BODIES {
        assert_refused(&s, path, body, want);
    }
    for (fields, want) in BAD_CHAT_FIELDS {
        let body = chat("hi", serde_json::from_str(fields).unwrap()).to_string();
        assert_refused(&s, "/v1/chat/completions", &body, want);
    }
    // enable_thinking as a boolean is accepted.
    let (st, v) = s.post_json(
        "/v1/chat/completions",
        &chat(
            "hi",
            json!({"max_tokens": 2, "chat_template_kwargs": {"enable_thinking": false}}),
        ),
    );
    assert_eq!(st, 200, "{v}");
    // Client disconnects mid-stream: the slot is freed.
    assert_a_disconnect_frees_the_slot(&s);
    // Still healthy and serving.
    let (st, _) = s.request("GET", "/health", None);
    assert_eq!(st, 200);
    let (st, v) = s.post_json(
        "/v1/chat/completions",
        &chat("hi", json!({"max_tokens": 4, "temperature": 0})),
    );
    assert_eq!(st, 200, "{v}");
    assert!(v["usage"]["completion_tokens"].as_u64().unwrap_or(0) >= 1);
}

/// Streams `body` (temperature 0, 12 tokens): the events end in `[DONE]`, the role comes first,
/// usage and the finish reason only in the last chunk. The text streamed and the prompt tokens.
fn streamed(s: &Server, body: &Value) -> (String, u64) {
    let (st, raw) = s.request("POST", "/v1/chat/completions", Some(&body.to_string()));
    assert_eq!(st, 200, "{raw}");
    let ev = sse_events(&raw);
    assert_eq!(
        ev.last().map(String::as_str),
        Some("[DONE]"),
        "stream must end with [DONE]"
    );
    let chunks: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("chunk json"))
        .collect();
    assert!(chunks.len() >= 3);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let last = chunks.last().expect("last chunk");
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    for c in &chunks[..chunks.len() - 1] {
        assert!(c["choices"][0]["finish_reason"].is_null());
        assert!(c.get("usage").is_none(), "usage only in the last chunk");
    }
    let u = &last["usage"];
    assert_eq!(u["completion_tokens"], 12);
    let p = u["prompt_tokens"].as_u64().expect("prompt_tokens");
    assert!(p > 5);
    assert!(u["prompt_tokens_details"]["cached_tokens"].is_u64());
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    (streamed, p)
}

/// Sampling with a fixed seed gives the same text twice; other seeds change it.
fn assert_seeds_decide_sampling(s: &Server) {
    let seeded = json!({"prompt": "Once upon a time", "max_tokens": 16, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 1234, "ignore_eos": true});
    let (_, a) = s.post_json("/v1/completions", &seeded);
    let (_, b) = s.post_json("/v1/completions", &seeded);
    let ta = a["choices"][0]["text"].as_str().expect("text").to_string();
    assert_eq!(ta, b["choices"][0]["text"].as_str().expect("text"));
    assert_eq!(a["usage"]["completion_tokens"], 16);
    // Several other seeds: at least one differs (sampling is really on).
    let mut differs = false;
    for seed in [1, 2, 3, 4] {
        let mut r = seeded.clone();
        r["seed"] = json!(seed);
        let (_, c) = s.post_json("/v1/completions", &r);
        differs |= c["choices"][0]["text"].as_str() != Some(ta.as_str());
    }
    assert!(differs, "different seeds never changed the output");
}

/// Stop strings end generation with finish_reason stop and are not emitted.
fn assert_stop_strings_end_generation(s: &Server) {
    let (_, v) = s.post_json(
        "/v1/completions",
        &json!({"prompt": "1, 2, 3, 4, 5,", "max_tokens": 30, "temperature": 0, "stop": [" 8"]}),
    );
    let t = v["choices"][0]["text"].as_str().expect("text");
    assert_eq!(v["choices"][0]["finish_reason"], "stop", "{v}");
    assert!(!t.contains(" 8"), "{t:?}");
}

#[test]
fn streaming_usage_cache_and_determinism() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "2048", "--parallel", "2"]);
    let body = chat(
        "List three colors.",
        json!({"stream": true, "max_tokens": 12, "temperature": 0, "ignore_eos": true}),
    );
    let (streamed, p) = streamed(&s, &body);

    // The same request without streaming gives the same text at temperature 0.
    let mut b2 = body.clone();
    b2["stream"] = json!(false);
    let (st, v) = s.post_json("/v1/chat/completions", &b2);
    assert_eq!(st, 200);
    assert_eq!(content(&v), streamed);
    assert_eq!(v["usage"]["prompt_tokens"].as_u64(), Some(p));
    // Repeated prompt with the cache on: cached tokens reported.
    let cached = v["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .expect("cached");
    assert!(cached >= p / 2 && cached < p, "cached {cached} of {p}");
    // Deterministic at temperature 0 again, and with a fresh salt: 0 cached.
    let mut b3 = b2.clone();
    b3["cache_salt"] = json!("fresh-salt-1");
    let (_, v3) = s.post_json("/v1/chat/completions", &b3);
    assert_eq!(v3["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(content(&v3), streamed);
    // Same salt again: cached.
    let (_, v4) = s.post_json("/v1/chat/completions", &b3);
    assert!(
        v4["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0)
            > 0
    );
    // cache_prompt=false: nothing reused.
    let mut b5 = b3.clone();
    b5["cache_prompt"] = json!(false);
    let (_, v5) = s.post_json("/v1/chat/completions", &b5);
    assert_eq!(v5["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(
        content(&v5),
        streamed,
        "cache on/off must not change greedy output"
    );

    // Fixed seed with sampling: same text twice; completions endpoint too.
    assert_seeds_decide_sampling(&s);
    // Stop strings end generation with finish_reason stop and are not emitted.
    assert_stop_strings_end_generation(&s);

    // Metrics moved.
    assert!(s.metric("rigaudit_engine_prompt_tokens_total") > 0.0);
    assert!(s.metric("rigaudit_engine_prompt_tokens_cached_total") > 0.0);
    assert!(s.metric("rigaudit_engine_generation_tokens_total") >= 12.0 * 5.0);
}

#[test]
fn slots_serve_n_at_once_and_queue_the_rest() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "512", "--parallel", "2"]);
    let addr = s.addr.clone();
    let t0 = Instant::now();
    let handles: Vec<_> = (0..3)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let body = chat(
                    &format!("Tell me a story number {i}."),
                    json!({"max_tokens": 48, "ignore_eos": true, "temperature": 0, "stream": true}),
                );
                let mut c = TcpStream::connect(&addr).expect("connect");
                let b = body.to_string();
                write!(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len()).expect("write");
                let mut first = None;
                let mut raw = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    let n = c.read(&mut buf).expect("read");
                    if n == 0 {
                        break;
                    }
                    raw.extend_from_slice(&buf[..n]);
                    if first.is_none() && String::from_utf8_lossy(&raw).contains("\"content\":\"") && String::from_utf8_lossy(&raw).matches("data: ").count() >= 2 {
                        first = Some(t0.elapsed());
                    }
                }
                (first.expect("no token streamed"), t0.elapsed(), String::from_utf8_lossy(&raw).into_owned())
            })
        })
        .collect();
    let mut max_busy = 0.0f64;
    let mut max_queued = 0.0f64;
    while !handles.iter().all(|h| h.is_finished()) {
        max_busy = max_busy.max(s.metric("rigaudit_engine_busy_slots"));
        max_queued = max_queued.max(s.metric("rigaudit_engine_queued_requests"));
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut res: Vec<(Duration, Duration, String)> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    assert_eq!(max_busy, 2.0, "two slots must be busy at once, never more");
    assert!(
        max_queued >= 1.0,
        "the third request must wait in the queue"
    );
    for (_, _, raw) in &res {
        assert!(raw.contains("\"completion_tokens\":48"), "{raw}");
    }
    res.sort_by_key(|r| r.0);
    // The two first requests ran together: each started before the other finished.
    assert!(res[1].0 < res[0].1);
    // The third only started once one of the first two had finished.
    let first_done = res[0].1.min(res[1].1);
    assert!(
        res[2].0 + Duration::from_millis(30) >= first_done,
        "third started at {:?} before a slot freed at {:?}",
        res[2].0,
        first_done
    );
}

#[test]
fn copies_drafting_moves_counters_and_keeps_greedy_output() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let prompt = "Repeat this text exactly: The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog.";
    let body = chat(
        prompt,
        json!({"max_tokens": 40, "temperature": 0, "ignore_eos": true}),
    );
    let plain = {
        let s = Server::start(&m, &["--context", "512"]);
        assert_eq!(s.start_field("draft").as_deref(), Some("off"));
        let (st, v) = s.post_json("/v1/chat/completions", &body);
        assert_eq!(st, 200);
        assert_eq!(s.metric("rigaudit_engine_draft_tokens_total"), 0.0);
        content(&v)
    };
    let s = Server::start(&m, &["--context", "512", "--draft", "copies"]);
    assert!(s
        .start_field("draft")
        .unwrap_or_default()
        .starts_with("copies"));
    let (st, v) = s.post_json("/v1/chat/completions", &body);
    assert_eq!(st, 200);
    let drafted = s.metric("rigaudit_engine_draft_tokens_total");
    let accepted = s.metric("rigaudit_engine_draft_accepted_tokens_total");
    assert!(drafted > 0.0, "no draft tokens proposed");
    assert!(
        accepted > 0.0 && accepted <= drafted,
        "accepted {accepted} of {drafted}"
    );
    assert_eq!(v["usage"]["completion_tokens"], 40);
    assert_eq!(content(&v), plain, "drafting must not change greedy output");
    // Fewer forward passes than tokens thanks to accepted drafts.
    assert!(s.metric("rigaudit_engine_decode_steps_total") < 40.0);
}

/// The tokenizer.json `rigaudit-engine tokenizer` writes for the model `m`, loaded.
fn written_tokenizer(m: &std::path::Path) -> tokenizers::Tokenizer {
    let dir = std::env::temp_dir().join(format!("rigaudit-engine-tok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let out = dir.join("tokenizer.json");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_rigaudit-engine"))
        .arg("tokenizer")
        .arg(m)
        .arg("--out")
        .arg(&out)
        .status()
        .expect("run tokenizer");
    assert!(st.success());
    let tk = tokenizers::Tokenizer::from_file(&out).expect("load tokenizer.json");
    let _ = std::fs::remove_dir_all(&dir);
    tk
}

/// Token ids of a JSON array.
fn ids(v: &Value) -> Vec<u64> {
    let ids = v.as_array().expect("ids").iter();
    ids.map(|x| x.as_u64().expect("id")).collect()
}

/// The texts to tokenize: llama.cpp's cases with its ids, then edge cases without.
fn tokenizer_texts() -> Vec<(String, Option<Vec<u64>>)> {
    let fx: Value =
        serde_json::from_str(include_str!("../fixtures/llamacpp_tokens.json")).expect("fixture");
    let case = |c: &Value| {
        let text = c["text"].as_str().expect("text").to_string();
        (text, Some(ids(&c["ids"])))
    };
    let mut texts: Vec<_> = fx["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(case)
        .collect();
    for extra in [
        "",
        " ",
        "  leading",
        "a\u{00a0}b",
        "x=1;y=22;z=333",
        "\u{1F600}\u{1F600}",
        "<|im_end|><|im_end|>",
    ] {
        texts.push((extra.to_string(), None));
    }
    texts
}

#[test]
fn tokenizer_json_matches_engine_and_llamacpp() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let tk = written_tokenizer(&m);
    let s = Server::start(&m, &["--context", "256"]);
    for (text, want) in &tokenizer_texts() {
        let (st, v) = s.post_json("/tokenize", &json!({"content": text}));
        assert_eq!(st, 200);
        let engine = ids(&v["tokens"]);
        let file: Vec<u64> = tk
            .encode(text.as_str(), false)
            .expect("encode")
            .get_ids()
            .iter()
            .map(|&x| x as u64)
            .collect();
        assert_eq!(
            engine, file,
            "tokenizer.json differs from the engine on {text:?}"
        );
        if let Some(w) = want {
            assert_eq!(&engine, w, "engine differs from llama.cpp on {text:?}");
        }
        let (_, d) = s.post_json("/detokenize", &json!({"tokens": engine}));
        if !text.contains("<|") {
            assert_eq!(
                d["content"].as_str(),
                Some(text.as_str()),
                "round trip of {text:?}"
            );
        }
    }
}
