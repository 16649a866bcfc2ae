//! Log-probabilities in the API, end to end on the real model: chat
//! (`logprobs`, `top_logprobs`), legacy completions (`logprobs: N`), streaming
//! against non-streaming, and `echo` with `max_tokens: 0` (prompt scoring as
//! lm-evaluation-harness's `local-completions` model asks for it).

use crate::common;

use std::sync::Mutex;

use common::{chat, model_path, refusal, sse_events, Server};
use rigaudit_engine::engine::token_logprob;
use rigaudit_engine::gguf::Gguf;
use rigaudit_engine::model::{Chunk, KvCache, Model};
use rigaudit_engine::pool::Pool;
use serde_json::{json, Value};

static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Streamed chat: every chunk's `logprobs.content` entries, in order, and the text.
fn streamed_chat(s: &Server, body: &Value) -> (Vec<Value>, String) {
    let (st, b) = s.request("POST", "/v1/chat/completions", Some(&body.to_string()));
    assert_eq!(st, 200, "{b}");
    let (mut lps, mut text) = (vec![], String::new());
    for e in sse_events(&b).iter().filter(|e| *e != "[DONE]") {
        let v: Value = serde_json::from_str(e).expect("chunk json");
        let c = &v["choices"][0];
        text.push_str(c["delta"]["content"].as_str().unwrap_or(""));
        if let Some(a) = c["logprobs"]["content"].as_array() {
            lps.extend(a.iter().cloned());
        }
    }
    (lps, text)
}

/// Each token's entry of a greedy reply: a log-probability of at most 0, `top` alternatives in
/// falling order led by the token itself. The reply's bytes, token by token.
fn greedy_token_bytes(content: &[Value], top_n: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for e in content {
        let lp = f(&e["logprob"]);
        assert!(lp <= 0.0, "{e}");
        let top = e["top_logprobs"].as_array().expect("top_logprobs");
        assert_eq!(top.len(), top_n, "{e}");
        // Greedy: the sampled token is the most likely one.
        assert_eq!(top[0]["token"], e["token"], "{e}");
        assert_eq!(f(&top[0]["logprob"]), lp);
        assert!(top
            .windows(2)
            .all(|w| f(&w[0]["logprob"]) >= f(&w[1]["logprob"])));
        bytes.extend(
            e["bytes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u8),
        );
    }
    bytes
}

/// Without `logprobs` a reply has none, `top_logprobs` needs `logprobs` and is 0 to 20, and
/// `max_tokens: 0` is refused.
fn assert_logprob_options_are_checked(s: &Server) {
    // Without `logprobs`: null; `top_logprobs: 0`: no alternatives.
    let (_, v) = s.post_json(
        "/v1/chat/completions",
        &chat("Hi", json!({"max_tokens": 2})),
    );
    assert!(v["choices"][0]["logprobs"].is_null(), "{v}");
    let (_, v) = s.post_json(
        "/v1/chat/completions",
        &chat("Hi", json!({"max_tokens": 2, "logprobs": true})),
    );
    assert_eq!(
        v["choices"][0]["logprobs"]["content"][0]["top_logprobs"],
        json!([])
    );
    for (extra, want) in [
        (
            json!({"logprobs": true, "top_logprobs": 21}),
            "between 0 and 20",
        ),
        (json!({"top_logprobs": 3}), "requires `logprobs`"),
        (json!({"logprobs": 2}), "`logprobs` must be a boolean"),
        (json!({"max_tokens": 0}), "at least 1"),
    ] {
        let body = chat("Hi", extra).to_string();
        let (st, msg) = refusal(s, "/v1/chat/completions", &body);
        assert_eq!(st, 400, "{msg}");
        assert!(msg.contains(want), "{msg}");
    }
}

#[test]
fn chat_logprobs_greedy_top1_and_streaming_agree() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "512"]);
    let extra = json!({"max_tokens": 16, "temperature": 0, "logprobs": true, "top_logprobs": 5});
    let body = chat("Name three colours of the rainbow.", extra);
    let (st, v) = s.post_json("/v1/chat/completions", &body);
    assert_eq!(st, 200, "{v}");
    let content = v["choices"][0]["logprobs"]["content"]
        .as_array()
        .expect("logprobs.content");
    assert_eq!(
        content.len() as u64,
        v["usage"]["completion_tokens"].as_u64().unwrap()
    );
    let bytes = greedy_token_bytes(content, 5);
    let text = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        text,
        "token bytes spell the reply"
    );

    // Streaming carries the same tokens and log-probabilities, chunk by chunk.
    let mut sb = body.clone();
    sb["stream"] = json!(true);
    let (slps, stext) = streamed_chat(&s, &sb);
    assert_eq!(stext, text);
    assert_eq!(slps.len(), content.len());
    for (a, b) in slps.iter().zip(content) {
        assert_eq!(a["token"], b["token"]);
        assert!(
            (f(&a["logprob"]) - f(&b["logprob"])).abs() < 1e-5,
            "{a} vs {b}"
        );
    }

    assert_logprob_options_are_checked(&s);
}

#[test]
fn completions_logprobs_and_streaming_agree() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "512"]);
    let body = json!({"prompt": "The capital of France is", "max_tokens": 8, "temperature": 0,
                      "logprobs": 3, "ignore_eos": true});
    let (st, v) = s.post_json("/v1/completions", &body);
    assert_eq!(st, 200, "{v}");
    let lp = &v["choices"][0]["logprobs"];
    let toks = lp["tokens"].as_array().unwrap();
    assert_eq!(toks.len(), 8);
    for key in ["token_logprobs", "top_logprobs", "text_offset"] {
        assert_eq!(lp[key].as_array().unwrap().len(), 8, "{key}: {lp}");
    }
    let text = v["choices"][0]["text"].as_str().unwrap();
    let joined: String = toks.iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(joined, text);
    let mut at = 0;
    for i in 0..8 {
        let l = f(&lp["token_logprobs"][i]);
        let top = lp["top_logprobs"][i].as_object().unwrap();
        assert!(l <= 0.0 && top.len() >= 3 && top.len() <= 4, "{lp}");
        let best = top.values().map(f).fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(l, best, "greedy token is the top-1 at {i}: {lp}");
        assert_eq!(lp["text_offset"][i], at);
        at += toks[i].as_str().unwrap().chars().count();
    }
    // Streamed: the chunks' logprobs concatenate to the same lists.
    let mut sb = body.clone();
    sb["stream"] = json!(true);
    let (st, b) = s.request("POST", "/v1/completions", Some(&sb.to_string()));
    assert_eq!(st, 200);
    let mut got: Vec<(Value, Value, Value)> = vec![];
    for e in sse_events(&b).iter().filter(|e| *e != "[DONE]") {
        let c: Value = serde_json::from_str(e).unwrap();
        let l = &c["choices"][0]["logprobs"];
        for (i, t) in l["tokens"].as_array().into_iter().flatten().enumerate() {
            got.push((
                t.clone(),
                l["token_logprobs"][i].clone(),
                l["text_offset"][i].clone(),
            ));
        }
    }
    assert_eq!(got.len(), 8);
    for (i, (t, l, o)) in got.iter().enumerate() {
        assert_eq!(t, &toks[i]);
        assert!((f(l) - f(&lp["token_logprobs"][i])).abs() < 1e-5);
        assert_eq!(o, &lp["text_offset"][i]);
    }
    let (st, v) = s.post_json("/v1/completions", &json!({"prompt": "x", "logprobs": 21}));
    assert_eq!(st, 400, "{v}");
    let (st, v) = s.post_json("/v1/completions", &json!({"prompt": "x", "max_tokens": 0}));
    assert_eq!(st, 400, "{v}");
}

/// Log-probability of each token given those before it, computed directly
/// with the library (one forward pass returning every position's logits).
fn direct_prompt_logprobs(ids: &[u32]) -> Vec<f64> {
    let path = model_path().expect("model");
    let m = Model::load(Gguf::open(&path).expect("gguf")).expect("model");
    let pool = Pool::new(2);
    let mut kv = vec![KvCache::new(&m.cfg, ids.len())];
    let ch = Chunk {
        slot: 0,
        tokens: ids,
        pos: 0,
        all_logits: true,
        no_logits: false,
    };
    let rows = m.forward(&pool, &[ch], &mut kv).remove(0);
    let nv = m.cfg.n_vocab;
    (1..ids.len())
        .map(|i| {
            token_logprob(&rows[(i - 1) * nv..i * nv], ids[i], 0)
                .logprob
                .unwrap() as f64
        })
        .collect()
}

#[test]
fn echo_scores_the_prompt() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "512"]);
    let prompt = "The capital of France is Paris. The capital of Germany is Berlin.";
    let (_, t) = s.post_json("/tokenize", &json!({"content": prompt}));
    let ids: Vec<u32> = t["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect();
    let body =
        json!({"prompt": prompt, "max_tokens": 0, "echo": true, "logprobs": 1, "temperature": 0});
    let (st, v) = s.post_json("/v1/completions", &body);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["usage"]["completion_tokens"], 0);
    assert_eq!(v["choices"][0]["text"], prompt);
    let lp = &v["choices"][0]["logprobs"];
    let tl = lp["token_logprobs"].as_array().unwrap();
    assert_eq!(tl.len(), ids.len());
    assert!(tl[0].is_null() && lp["top_logprobs"][0].is_null(), "{lp}");
    let echoed: Vec<f64> = tl[1..].iter().map(f).collect();
    assert!(echoed.iter().all(|&l| l <= 0.0));
    let direct = direct_prompt_logprobs(&ids);
    let (se, sd): (f64, f64) = (echoed.iter().sum(), direct.iter().sum());
    assert!((se - sd).abs() < 1e-3, "echo sum {se} vs direct {sd}");

    // Each echoed value is the one a generation from that prefix reports
    // (where the text's token is among the generation's top 20).
    let mut matched = 0;
    for i in [1, ids.len() / 2, ids.len() - 1] {
        let g = json!({"prompt": ids[..i], "max_tokens": 1, "logprobs": 20, "temperature": 0});
        let (_, gv) = s.post_json("/v1/completions", &g);
        let tok = lp["tokens"][i].as_str().unwrap();
        if let Some(x) = gv["choices"][0]["logprobs"]["top_logprobs"][0].get(tok) {
            assert!(
                (f(x) - echoed[i - 1]).abs() < 1e-4,
                "position {i}: {x} vs {}",
                echoed[i - 1]
            );
            matched += 1;
        }
    }
    assert!(matched >= 2, "only {matched} positions comparable");

    // lm-evaluation-harness's loglikelihood request: `prompt: [[ids]]`, one token.
    let lm = json!({"prompt": [ids], "max_tokens": 1, "echo": true, "logprobs": 1, "temperature": 0, "seed": 1234});
    let (st, v) = s.post_json("/v1/completions", &lm);
    assert_eq!(st, 200, "{v}");
    let tl = v["choices"][0]["logprobs"]["token_logprobs"]
        .as_array()
        .unwrap();
    assert_eq!(tl.len(), ids.len() + 1);
    let sum: f64 = tl[1..ids.len()].iter().map(f).sum();
    assert!((sum - sd).abs() < 1e-3, "{sum} vs {sd}");

    // Streamed echo: the first chunk carries the prompt and its log-probabilities.
    let mut sb = body.clone();
    sb["stream"] = json!(true);
    let (st, b) = s.request("POST", "/v1/completions", Some(&sb.to_string()));
    assert_eq!(st, 200);
    let first: Value = serde_json::from_str(&sse_events(&b)[0]).unwrap();
    assert_eq!(first["choices"][0]["text"], prompt);
    let stl = first["choices"][0]["logprobs"]["token_logprobs"]
        .as_array()
        .unwrap();
    assert_eq!(stl.len(), ids.len());
    let ssum: f64 = stl[1..].iter().map(f).sum();
    assert!((ssum - se).abs() < 1e-4);
}

/// Several prompts in one completions request (lm-evaluation-harness batches them this way): one
/// choice per prompt in prompt order, each what the prompt alone gives, usage added up; echo
/// scoring of several token-id prompts; streaming several refused with a clear error.
#[test]
fn several_prompts_in_one_completions_request() {
    let _g = lock();
    let Some(m) = model_path() else { return };
    let s = Server::start(&m, &["--context", "512", "--parallel", "2"]);
    let prompts = ["The capital of France is", "Two plus two is", "The sky is"];
    let one = |p: &str| {
        let body = json!({"prompt": p, "max_tokens": 6, "temperature": 0, "ignore_eos": true});
        let (st, v) = s.post_json("/v1/completions", &body);
        assert_eq!(st, 200, "{v}");
        v
    };
    let alone: Vec<Value> = prompts.iter().map(|p| one(p)).collect();
    let body = json!({"prompt": prompts, "max_tokens": 6, "temperature": 0, "ignore_eos": true});
    let (st, v) = s.post_json("/v1/completions", &body);
    assert_eq!(st, 200, "{v}");
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3, "{v}");
    let mut prompt_tokens = 0;
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i, "{v}");
        assert_eq!(c["text"], alone[i]["choices"][0]["text"], "{v}");
        prompt_tokens += alone[i]["usage"]["prompt_tokens"].as_u64().unwrap();
    }
    assert_eq!(v["usage"]["prompt_tokens"], prompt_tokens, "{v}");
    assert_eq!(v["usage"]["completion_tokens"], 18, "{v}");
    // Echo scoring of two token-id prompts: each choice scores its own prompt.
    let ids = [vec![504u32, 3575, 282, 4649, 314], vec![9235, 1463, 827]];
    let body = json!({"prompt": ids, "max_tokens": 0, "echo": true, "logprobs": 1});
    let (st, v) = s.post_json("/v1/completions", &body);
    assert_eq!(st, 200, "{v}");
    for (i, c) in v["choices"].as_array().unwrap().iter().enumerate() {
        let lps = c["logprobs"]["token_logprobs"].as_array().unwrap();
        assert_eq!(lps.len(), ids[i].len(), "{c}");
        assert!(lps[0].is_null(), "{c}");
        assert!(lps[1..].iter().all(|l| f(l) <= 0.0), "{c}");
    }
    // A prompt that does not fit refuses the whole request; several prompts do not stream.
    let long = "word ".repeat(600);
    let body = json!({"prompt": ["short", long], "max_tokens": 4});
    let (st, v) = s.post_json("/v1/completions", &body);
    assert_eq!(st, 400, "{v}");
    let body = json!({"prompt": ["a", "b"], "max_tokens": 4, "stream": true});
    let (st, v) = s.post_json("/v1/completions", &body);
    assert_eq!(st, 400, "{v}");
    assert!(v.to_string().contains("stream"), "{v}");
}
