//! OpenAI-compatible HTTP API: `/v1/models`, `/v1/chat/completions`,
//! `/v1/completions` (streaming and not), `/health`, `/metrics`,
//! `/tokenize`, `/detokenize` and `/tokenizer.json`.
//!
//! Request bodies are parsed by hand from JSON values so that every malformed
//! or mistyped request gets a 4xx with an OpenAI-shaped error message.
//!
//! Log-probabilities follow the OpenAI API and vLLM: on chat completions
//! `logprobs: true` and `top_logprobs: 0..=20` give `choices[i].logprobs.content[]`
//! (`token`, `logprob`, `bytes`, `top_logprobs[]`); on legacy completions
//! `logprobs: 0..=20` gives `tokens`, `token_logprobs`, `top_logprobs` (one
//! dict per token, holding the top alternatives and the token itself) and
//! `text_offset` (characters into the returned `text`), and `echo: true`
//! returns the prompt with its own tokens' log-probabilities first (the first
//! prompt token's is `null`), with `max_tokens: 0` allowed to score a prompt
//! without generating — what lm-evaluation-harness's `local-completions`
//! model uses for loglikelihood tasks. Streamed chunks carry the
//! log-probabilities of the tokens whose text they carry. The values are the
//! raw model distribution's (log-softmax of the logits at temperature 1,
//! before any sampling transform); see [`crate::engine`].
//!
//! With `--reply-shapes`, chosen generation requests get a deterministic reply shape instead
//! (refused, empty, one token, a stop, a slow first token, an error mid-stream, a hang, HTTP 500):
//! [`crate::shapes`] and docs/reply-shapes.md.
//!
//! A legacy completions request may carry several prompts (an array of strings
//! or of token-id arrays, as lm-evaluation-harness batches them): one choice
//! per prompt, in prompt order, usage added up; every prompt is checked against
//! the window before any starts, and several prompts are not streamed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value};

use crate::engine::{
    EngineHandle, Event, GenParams, Metrics, Request, SamplingDefaults, TokenLogprob, Usage,
};
use crate::shapes::{self, Shape, Shapes};
use crate::tokenizer::EngineTokenizer;

/// Everything the HTTP handlers share.
pub struct AppState {
    /// Served model name.
    pub name: String,
    /// Context window.
    pub window: usize,
    /// Trained context of the model.
    pub n_ctx_train: usize,
    /// Slots.
    pub parallel: usize,
    /// Tokenizer.
    pub tok: Arc<EngineTokenizer>,
    /// Engine handle.
    pub engine: EngineHandle,
    /// Sampling defaults.
    pub defaults: SamplingDefaults,
    /// Chat template (Jinja).
    pub chat_template: Option<String>,
    /// BOS token text.
    pub bos_text: String,
    /// EOS token text.
    pub eos_text: String,
    /// Request id counter.
    pub ids: AtomicU64,
    /// Reply shapes (`--reply-shapes`): numbers the generation requests as they arrive.
    pub shapes: Shapes,
}

/// An API error turned into an OpenAI-shaped JSON response.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    code: Option<&'static str>,
    param: Option<String>,
}

impl ApiError {
    fn bad(msg: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: msg.into(),
            code: None,
            param: None,
        }
    }
    fn param(p: &str, msg: impl Into<String>) -> Self {
        ApiError {
            param: Some(p.to_string()),
            ..ApiError::bad(msg)
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let ty = if self.status.is_server_error() {
            "server_error"
        } else {
            "invalid_request_error"
        };
        let body = json!({"error": {
            "message": self.message,
            "type": ty,
            "param": self.param,
            "code": self.code,
        }});
        (self.status, axum::Json(body)).into_response()
    }
}

/// Build the router.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .route("/metrics", get(metrics))
        .route("/tokenizer.json", get(tokenizer_json))
        .route("/tokenize", post(tokenize))
        .route("/detokenize", post(detokenize))
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/completions", post(completions))
        .fallback(|| async {
            ApiError {
                status: StatusCode::NOT_FOUND,
                message: "not found".into(),
                code: None,
                param: None,
            }
        })
        .with_state(state)
}

async fn health() -> impl IntoResponse {
    axum::Json(json!({"status": "ok"}))
}

async fn models(State(s): State<Arc<AppState>>) -> impl IntoResponse {
    axum::Json(json!({
        "object": "list",
        "data": [{
            "id": s.name,
            "object": "model",
            "created": now(),
            "owned_by": "rigaudit-engine",
            "context_window": s.window,
            "max_model_len": s.window,
            "meta": {"n_ctx": s.window, "n_ctx_train": s.n_ctx_train,
                     "n_vocab": s.tok.vocab_size(), "n_parallel": s.parallel},
        }]
    }))
}

async fn tokenizer_json(State(s): State<Arc<AppState>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        s.tok.to_json(),
    )
}

/// One engine counter on `/metrics`: name (after `rigaudit_engine_`), Prometheus type, help
/// text, and where its value is.
type MetricRow = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Metrics) -> &AtomicU64,
);

/// The engine's counters on `/metrics`, in their order there (the `slots` gauge follows).
#[rustfmt::skip]
const METRIC_ROWS: [MetricRow; 10] = [
    ("prompt_tokens_total", "counter", "Prompt tokens evaluated (cache hits excluded).", |m| &m.prompt_tokens),
    ("prompt_tokens_cached_total", "counter", "Prompt tokens reused from the prompt cache.", |m| &m.cached_tokens),
    ("generation_tokens_total", "counter", "Tokens generated.", |m| &m.generated_tokens),
    ("draft_tokens_total", "counter", "Draft tokens proposed.", |m| &m.drafted),
    ("draft_accepted_tokens_total", "counter", "Draft tokens accepted.", |m| &m.accepted),
    ("requests_total", "counter", "Requests finished.", |m| &m.requests),
    ("requests_cancelled_total", "counter", "Requests abandoned by the client.", |m| &m.cancelled),
    ("decode_steps_total", "counter", "Batched forward passes run.", |m| &m.steps),
    ("busy_slots", "gauge", "Slots serving a request now.", |m| &m.busy_slots),
    ("queued_requests", "gauge", "Requests waiting for a slot.", |m| &m.queued),
];

/// `/metrics`: the engine's counters and the slot count in Prometheus text format.
async fn metrics(State(s): State<Arc<AppState>>) -> impl IntoResponse {
    let m = &s.engine.metrics;
    let slots = (
        "slots",
        "gauge",
        "Slots (streams served at once).",
        s.parallel as u64,
    );
    let rows = METRIC_ROWS
        .iter()
        .map(|&(name, ty, help, at)| (name, ty, help, at(m).load(Ordering::Relaxed)))
        .chain([slots]);
    let mut out = String::new();
    for (name, ty, help, v) in rows {
        out.push_str(&format!(
            "# HELP rigaudit_engine_{name} {help}\n# TYPE rigaudit_engine_{name} {ty}\nrigaudit_engine_{name} {v}\n"
        ));
    }
    out.push_str(&s.shapes.metrics_text());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out)
}

fn parse_body(body: &Bytes) -> Result<Map<String, Value>, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad(format!("request body is not valid JSON: {e}")))?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(ApiError::bad("request body must be a JSON object")),
    }
}

async fn tokenize(State(s): State<Arc<AppState>>, body: Bytes) -> Result<Response, ApiError> {
    let m = parse_body(&body)?;
    let content = m
        .get("content")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::param("content", "`content` must be a string"))?;
    let ids = s.tok.encode(content);
    Ok(axum::Json(json!({"tokens": ids})).into_response())
}

async fn detokenize(State(s): State<Arc<AppState>>, body: Bytes) -> Result<Response, ApiError> {
    let m = parse_body(&body)?;
    let ids = token_array(m.get("tokens"), "tokens", s.tok.vocab_size())?
        .ok_or_else(|| ApiError::param("tokens", "`tokens` must be an array of token ids"))?;
    Ok(axum::Json(json!({"content": s.tok.decode(&ids)})).into_response())
}

fn token_array(v: Option<&Value>, name: &str, vocab: usize) -> Result<Option<Vec<u32>>, ApiError> {
    let Some(Value::Array(a)) = v else {
        return Ok(None);
    };
    if !a.iter().all(Value::is_u64) {
        return Ok(None);
    }
    let ids: Vec<u32> = a
        .iter()
        .filter_map(Value::as_u64)
        .map(|x| x.min(u32::MAX as u64) as u32)
        .collect();
    if let Some(bad) = ids.iter().find(|&&t| t as usize >= vocab) {
        return Err(ApiError::param(
            name,
            format!("token id {bad} is outside the vocabulary (size {vocab})"),
        ));
    }
    Ok(Some(ids))
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn opt_f32(m: &Map<String, Value>, k: &str, lo: f64, hi: f64) -> Result<Option<f32>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            if !(lo..=hi).contains(&v) {
                return Err(ApiError::param(
                    k,
                    format!("`{k}` must be between {lo} and {hi}, got {v}"),
                ));
            }
            Ok(Some(v as f32))
        }
        Some(_) => Err(ApiError::param(k, format!("`{k}` must be a number"))),
    }
}

fn opt_u64(m: &Map<String, Value>, k: &str) -> Result<Option<u64>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_i64().filter(|&v| v >= 0).map(|v| v as u64))
            .map(Some)
            .ok_or_else(|| ApiError::param(k, format!("`{k}` must be a non-negative integer"))),
        Some(_) => Err(ApiError::param(k, format!("`{k}` must be an integer"))),
    }
}

fn opt_bool(m: &Map<String, Value>, k: &str) -> Result<Option<bool>, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::param(k, format!("`{k}` must be a boolean"))),
    }
}

/// Parsed common generation fields.
struct Common {
    params: GenParams,
    max_tokens: Option<usize>,
    stream: bool,
    /// Legacy completions: return the prompt (and its log-probabilities).
    echo: bool,
    /// Its number among the generation requests, in arrival order (`--reply-shapes`).
    request: u64,
}

/// Most alternatives per position (`top_logprobs`, legacy `logprobs`), as vLLM.
const MAX_TOP_LOGPROBS: u64 = 20;

fn top_count(m: &Map<String, Value>, k: &str) -> Result<Option<usize>, ApiError> {
    match opt_u64(m, k)? {
        Some(v) if v > MAX_TOP_LOGPROBS => Err(ApiError::param(
            k,
            format!("`{k}` must be between 0 and {MAX_TOP_LOGPROBS}, got {v}"),
        )),
        v => Ok(v.map(|v| v as usize)),
    }
}

/// `logprobs` (bool) and `top_logprobs` of a chat request.
fn chat_logprobs_param(m: &Map<String, Value>) -> Result<Option<usize>, ApiError> {
    let on = opt_bool(m, "logprobs")?.unwrap_or(false);
    let top = top_count(m, "top_logprobs")?;
    if !on && top.unwrap_or(0) > 0 {
        return Err(ApiError::param(
            "top_logprobs",
            "`top_logprobs` requires `logprobs` to be true",
        ));
    }
    Ok(on.then(|| top.unwrap_or(0)))
}

/// The generation fields chat and legacy completions share, checked in a fixed order (the
/// first bad field is the one reported); `zero_ok`: `max_tokens` may be 0.
fn common(s: &AppState, m: &Map<String, Value>, zero_ok: bool) -> Result<Common, ApiError> {
    if let Some(n) = opt_u64(m, "n")? {
        if n != 1 {
            return Err(ApiError::param("n", "only `n` = 1 is supported"));
        }
    }
    let temperature = opt_f32(m, "temperature", 0.0, 100.0)?.unwrap_or(s.defaults.temperature);
    let top_p = opt_f32(m, "top_p", 0.0, 1.0)?.unwrap_or(s.defaults.top_p);
    let top_k = opt_u64(m, "top_k")?
        .map(|v| v as usize)
        .unwrap_or(s.defaults.top_k);
    let seed = seed_param(m)?;
    let max_tokens = max_tokens_param(m, zero_ok)?;
    let stop = stop_param(m)?;
    let cache_salt = cache_salt_param(m)?;
    let stream = stream_param(m)?;
    Ok(Common {
        params: GenParams {
            temperature,
            top_p: if top_p <= 0.0 { 1.0 } else { top_p },
            top_k,
            seed,
            max_tokens: 0,
            stop,
            ignore_eos: opt_bool(m, "ignore_eos")?.unwrap_or(false),
            cache_prompt: opt_bool(m, "cache_prompt")?.unwrap_or(true),
            cache_salt,
            logprobs: None,
            prompt_logprobs: false,
        },
        max_tokens,
        stream,
        echo: false,
        request: 0,
    })
}

/// `seed`: an integer; absent, null and -1 mean random.
fn seed_param(m: &Map<String, Value>) -> Result<Option<u64>, ApiError> {
    Ok(match m.get("seed") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match (n.as_u64(), n.as_i64()) {
            (Some(v), _) => Some(v),
            (None, Some(-1)) => None,
            (None, Some(v)) => Some(v as u64),
            _ => return Err(ApiError::param("seed", "`seed` must be an integer")),
        },
        Some(_) => return Err(ApiError::param("seed", "`seed` must be an integer")),
    })
}

/// The first of `max_tokens`, `max_completion_tokens`, `n_predict` given (-1: not given);
/// 0 only when `zero_ok`.
fn max_tokens_param(m: &Map<String, Value>, zero_ok: bool) -> Result<Option<usize>, ApiError> {
    for k in ["max_tokens", "max_completion_tokens", "n_predict"] {
        if let Some(Value::Number(n)) = m.get(k) {
            if n.as_i64() == Some(-1) {
                continue;
            }
        }
        if let Some(v) = opt_u64(m, k)? {
            if v == 0 && !zero_ok {
                return Err(ApiError::param(
                    k,
                    format!("`{k}` must be at least 1 (0 only with `echo` on completions)"),
                ));
            }
            return Ok(Some(v.min(usize::MAX as u64 / 2) as usize));
        }
    }
    Ok(None)
}

/// `stop`: a string or an array of strings, empty ones dropped, at most 16.
fn stop_param(m: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
    let stop = match m.get("stop") {
        None | Some(Value::Null) => vec![],
        Some(Value::String(x)) => vec![x.clone()],
        Some(Value::Array(a)) => {
            let v: Option<Vec<String>> = a.iter().map(|x| x.as_str().map(str::to_string)).collect();
            v.ok_or_else(|| {
                ApiError::param("stop", "`stop` must be a string or an array of strings")
            })?
        }
        Some(_) => {
            return Err(ApiError::param(
                "stop",
                "`stop` must be a string or an array of strings",
            ))
        }
    };
    let stop: Vec<String> = stop.into_iter().filter(|x| !x.is_empty()).collect();
    if stop.len() > 16 {
        return Err(ApiError::param(
            "stop",
            "at most 16 stop strings are allowed",
        ));
    }
    Ok(stop)
}

/// `cache_salt`: a string (absent: the empty salt).
fn cache_salt_param(m: &Map<String, Value>) -> Result<String, ApiError> {
    match m.get("cache_salt") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(x)) => Ok(x.clone()),
        Some(_) => Err(ApiError::param(
            "cache_salt",
            "`cache_salt` must be a string",
        )),
    }
}

/// `stream` (a boolean, default false); `stream_options`, when given, must be an object.
fn stream_param(m: &Map<String, Value>) -> Result<bool, ApiError> {
    let stream = opt_bool(m, "stream")?.unwrap_or(false);
    if let Some(so) = m.get("stream_options") {
        if !so.is_object() && !so.is_null() {
            return Err(ApiError::param(
                "stream_options",
                "`stream_options` must be an object",
            ));
        }
    }
    Ok(stream)
}

fn message_text(v: &Value, i: usize) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => match p.get("text").and_then(Value::as_str) {
                        Some(t) => out.push_str(t),
                        None => {
                            return Err(ApiError::param(
                                "messages",
                                format!("messages[{i}].content: text part without a string `text`"),
                            ))
                        }
                    },
                    _ => {
                        return Err(ApiError::param(
                            "messages",
                            format!("messages[{i}].content: only text parts are supported"),
                        ))
                    }
                }
            }
            Ok(out)
        }
        _ => Err(ApiError::param(
            "messages",
            format!("messages[{i}].content must be a string or an array of text parts"),
        )),
    }
}

/// A chat request's prompt: its `messages` and `chat_template_kwargs` through the model's
/// chat template (ChatML when the model has none).
fn render_chat(s: &AppState, m: &Map<String, Value>) -> Result<String, ApiError> {
    let list = chat_messages(m)?;
    let enable_thinking = enable_thinking_param(m)?;
    apply_chat_template(s, list, enable_thinking)
}

/// `messages`: a non-empty array of `{role, content}` objects with known roles and text
/// content, as the template reads them.
fn chat_messages(m: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
    let msgs = match m.get("messages") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        Some(Value::Array(_)) => {
            return Err(ApiError::param("messages", "`messages` must not be empty"))
        }
        None => return Err(ApiError::param("messages", "`messages` is required")),
        Some(_) => return Err(ApiError::param("messages", "`messages` must be an array")),
    };
    let mut list = Vec::with_capacity(msgs.len());
    for (i, msg) in msgs.iter().enumerate() {
        let Some(o) = msg.as_object() else {
            return Err(ApiError::param(
                "messages",
                format!("messages[{i}] must be an object"),
            ));
        };
        let role = o.get("role").and_then(Value::as_str).ok_or_else(|| {
            ApiError::param("messages", format!("messages[{i}].role must be a string"))
        })?;
        if !matches!(role, "system" | "user" | "assistant" | "tool" | "developer") {
            return Err(ApiError::param(
                "messages",
                format!("messages[{i}].role {role:?} is not a known role"),
            ));
        }
        let content = message_text(o.get("content").unwrap_or(&Value::Null), i)?;
        list.push(json!({"role": role, "content": content}));
    }
    Ok(list)
}

/// `chat_template_kwargs.enable_thinking` (default true).
fn enable_thinking_param(m: &Map<String, Value>) -> Result<bool, ApiError> {
    let mut enable_thinking = true;
    match m.get("chat_template_kwargs") {
        None | Some(Value::Null) => {}
        Some(Value::Object(kw)) => match kw.get("enable_thinking") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => enable_thinking = *b,
            Some(_) => {
                return Err(ApiError::param(
                    "chat_template_kwargs",
                    "`chat_template_kwargs.enable_thinking` must be a boolean",
                ))
            }
        },
        Some(_) => {
            return Err(ApiError::param(
                "chat_template_kwargs",
                "`chat_template_kwargs` must be an object",
            ))
        }
    }
    Ok(enable_thinking)
}

/// Renders `messages` with the model's chat template (ChatML when it has none), adding the
/// generation prompt.
fn apply_chat_template(
    s: &AppState,
    list: Vec<Value>,
    enable_thinking: bool,
) -> Result<String, ApiError> {
    let tpl = s.chat_template.clone().unwrap_or_else(|| {
        "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}".to_string()
    });
    let mut env = minijinja::Environment::new();
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                msg,
            ))
        },
    );
    env.add_template_owned("chat", tpl)
        .map_err(|e| ApiError::bad(format!("chat template error: {e}")))?;
    let t = env
        .get_template("chat")
        .map_err(|e| ApiError::bad(format!("chat template error: {e}")))?;
    t.render(minijinja::context! {
        messages => list,
        add_generation_prompt => true,
        enable_thinking => enable_thinking,
        bos_token => s.bos_text.clone(),
        eos_token => s.eos_text.clone(),
    })
    .map_err(|e| ApiError::bad(format!("cannot apply the chat template: {e}")))
}

fn check_window(s: &AppState, prompt: usize, max: Option<usize>) -> Result<usize, ApiError> {
    let w = s.window;
    let max_tokens = max.unwrap_or_else(|| w.saturating_sub(prompt));
    if prompt == 0 {
        return Err(ApiError::param("prompt", "the prompt is empty"));
    }
    if prompt.saturating_add(max_tokens) > w || prompt >= w {
        return Err(context_error(w, prompt, max_tokens));
    }
    Ok(max_tokens)
}

/// The refusal of `prompt` tokens with `max_tokens` to generate in a window of `w`.
fn context_error(w: usize, prompt: usize, max_tokens: usize) -> ApiError {
    ApiError {
        status: StatusCode::BAD_REQUEST,
        message: format!(
            "This model's maximum context length is {w} tokens. However, you requested {} tokens ({prompt} in the messages, {max_tokens} in the completion). Please reduce the length of the messages or completion.",
            prompt.saturating_add(max_tokens)
        ),
        code: Some("context_length_exceeded"),
        param: Some("messages".into()),
    }
}

/// The reply of a shape that answers without generating (refuse, hang, HTTP 500), for a request
/// whose longest prompt has `prompt` tokens and `max_tokens` to generate; `None` for the others.
async fn whole_reply(
    s: &AppState,
    shape: Option<Shape>,
    prompt: usize,
    max_tokens: usize,
) -> Option<Result<Response, ApiError>> {
    match shape? {
        // As for a request past the window (`prompt` is below it): the same words and numbers
        // that add up, the completion grown to just past the window when it fits.
        Shape::Refuse => {
            let grown = max_tokens.max((s.window + 1).saturating_sub(prompt));
            Some(Err(context_error(s.window, prompt, grown)))
        }
        Shape::Http500 => Some(Ok(shapes::internal_error())),
        Shape::Hang(ms) => Some(Ok(s.shapes.hang(ms).await)),
        _ => None,
    }
}

async fn chat(State(s): State<Arc<AppState>>, body: Bytes) -> Result<Response, ApiError> {
    let request = s.shapes.arrive();
    let m = parse_body(&body)?;
    let mut c = common(&s, &m, false)?;
    c.request = request;
    c.params.logprobs = chat_logprobs_param(&m)?;
    let text = render_chat(&s, &m)?;
    let prompt = s.tok.encode_prompt(&text);
    run(s, prompt, String::new(), c, true).await
}

async fn completions(State(s): State<Arc<AppState>>, body: Bytes) -> Result<Response, ApiError> {
    let request = s.shapes.arrive();
    let m = parse_body(&body)?;
    let echo = opt_bool(&m, "echo")?.unwrap_or(false);
    let mut c = common(&s, &m, echo)?;
    c.echo = echo;
    c.request = request;
    c.params.logprobs = top_count(&m, "logprobs")?;
    c.params.prompt_logprobs = echo && c.params.logprobs.is_some();
    let mut prompts = completion_prompts(&s, &m)?;
    if prompts.len() == 1 {
        let (prompt, text) = prompts.remove(0);
        return run(s, prompt, text, c, false).await;
    }
    if c.stream {
        return Err(ApiError::param(
            "stream",
            "several prompts in one request are answered whole, not streamed: send them one by one to stream",
        ));
    }
    run_many(s, prompts, c).await
}

/// The prompts of a legacy completion request: one (a string, a one-string array, token ids, one
/// array of token ids in a list) or several (an array of strings, an array of token-id arrays),
/// each with its token ids and its text.
fn completion_prompts(
    s: &AppState,
    m: &Map<String, Value>,
) -> Result<Vec<(Vec<u32>, String)>, ApiError> {
    match m.get("prompt") {
        Some(Value::Array(a)) if a.len() > 1 && a.iter().all(Value::is_string) => Ok(a
            .iter()
            .map(|p| {
                let p = p.as_str().unwrap_or_default();
                (s.tok.encode_prompt(p), p.to_string())
            })
            .collect()),
        Some(Value::Array(a)) if a.len() > 1 && a.iter().all(Value::is_array) => a
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let ids = token_array(Some(v), "prompt", s.tok.vocab_size())?.ok_or_else(|| {
                    ApiError::param(
                        "prompt",
                        format!("`prompt[{i}]` must be an array of token ids"),
                    )
                })?;
                let t = s.tok.decode(&ids);
                Ok((ids, t))
            })
            .collect(),
        _ => Ok(vec![completion_prompt(s, m)?]),
    }
}

/// Several prompts of one non-streamed completions request: each checked against the window
/// before any is started (the whole request is refused if one does not fit), all submitted at
/// once (the scheduler batches them), one choice per prompt in prompt order, usage added up.
async fn run_many(
    s: Arc<AppState>,
    prompts: Vec<(Vec<u32>, String)>,
    c: Common,
) -> Result<Response, ApiError> {
    let mut limits = Vec::with_capacity(prompts.len());
    for (p, _) in &prompts {
        limits.push(check_window(&s, p.len(), c.max_tokens)?);
    }
    let shape = s.shapes.give(c.request, false, false);
    let longest = prompts.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    let longest_max = check_window(&s, longest, c.max_tokens)?;
    if let Some(reply) = whole_reply(&s, shape, longest, longest_max).await {
        return reply;
    }
    let mut pending = Vec::with_capacity(prompts.len());
    for ((prompt, text), max_tokens) in prompts.into_iter().zip(limits) {
        let rx = start(&s, prompt, &c.params, max_tokens, shape)?;
        pending.push((text, rx));
    }
    let (mut choices, mut total) = (Vec::new(), Usage::default());
    for (i, (text, mut rx)) in pending.into_iter().enumerate() {
        let (got, u) = collect(&mut rx).await?;
        let mut choice = choice_json(&s, &c, &text, got, &u, false);
        choice["index"] = json!(i);
        choices.push(choice);
        total.prompt_tokens += u.prompt_tokens;
        total.completion_tokens += u.completion_tokens;
        total.cached_tokens += u.cached_tokens;
        total.drafted += u.drafted;
        total.accepted += u.accepted;
    }
    if shape.is_some_and(Shape::fails) {
        return Ok(shapes::internal_error());
    }
    let n = s.ids.fetch_add(1, Ordering::Relaxed);
    Ok(axum::Json(json!({
        "id": format!("cmpl-{n}"), "object": "text_completion", "created": now(),
        "model": s.name.clone(), "choices": choices, "usage": usage_json(&total),
    }))
    .into_response())
}

/// The prompt of a legacy completion request: its token ids and its text.
fn completion_prompt(s: &AppState, m: &Map<String, Value>) -> Result<(Vec<u32>, String), ApiError> {
    let from_ids = |ids: Vec<u32>| {
        let t = s.tok.decode(&ids);
        (ids, t)
    };
    Ok(match m.get("prompt") {
        Some(Value::String(p)) => (s.tok.encode_prompt(p), p.clone()),
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
            let p = a[0].as_str().unwrap_or_default();
            (s.tok.encode_prompt(p), p.to_string())
        }
        // One prompt of token ids wrapped in a list (lm-evaluation-harness).
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_array() => from_ids(
            token_array(Some(&a[0]), "prompt", s.tok.vocab_size())?.ok_or_else(|| {
                ApiError::param("prompt", "`prompt[0]` must be an array of token ids")
            })?,
        ),
        Some(v @ Value::Array(_)) => from_ids(
            token_array(Some(v), "prompt", s.tok.vocab_size())?.ok_or_else(|| {
                ApiError::param(
                    "prompt",
                    "`prompt` must be a string, a one-string array or an array of token ids",
                )
            })?,
        ),
        None => return Err(ApiError::param("prompt", "`prompt` is required")),
        Some(_) => {
            return Err(ApiError::param(
                "prompt",
                "`prompt` must be a string or an array of token ids",
            ))
        }
    })
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cached_tokens},
        "completion_tokens_details": {"draft_tokens": u.drafted, "accepted_draft_tokens": u.accepted},
    })
}

fn timings_json(u: &Usage) -> Value {
    json!({
        "prompt_n": u.prompt_tokens - u.cached_tokens,
        "prompt_ms": u.prompt_ms,
        "predicted_n": u.completion_tokens,
        "predicted_ms": u.gen_ms,
        "draft_n": u.drafted,
        "draft_n_accepted": u.accepted,
    })
}

/// One token's entry in a chat `logprobs.content` list.
fn chat_token(tok: &EngineTokenizer, id: u32, lp: f32) -> Value {
    let bytes = tok.token_bytes(id);
    json!({"token": String::from_utf8_lossy(&bytes), "logprob": lp, "bytes": bytes})
}

/// Chat `logprobs` object for some generated tokens.
fn chat_logprobs(tok: &EngineTokenizer, lps: &[TokenLogprob]) -> Value {
    let content: Vec<Value> = lps
        .iter()
        .map(|t| {
            let mut e = chat_token(tok, t.id, t.logprob.unwrap_or(0.0));
            e["top_logprobs"] = t.top.iter().map(|&(i, l)| chat_token(tok, i, l)).collect();
            e
        })
        .collect();
    json!({"content": content})
}

/// Legacy completions `logprobs` object; offsets count characters from
/// `offset` (where these tokens' text starts in the returned text). Returns
/// it and the offset after the last token.
fn legacy_logprobs(tok: &EngineTokenizer, lps: &[TokenLogprob], offset: usize) -> (Value, usize) {
    let (mut tokens, mut lp, mut top, mut offs) = (vec![], vec![], vec![], vec![]);
    let mut at = offset;
    for t in lps {
        let text = String::from_utf8_lossy(&tok.token_bytes(t.id)).into_owned();
        offs.push(at);
        at += text.chars().count();
        lp.push(json!(t.logprob));
        if t.logprob.is_none() {
            top.push(Value::Null);
        } else {
            let mut d = Map::new();
            for &(i, l) in &t.top {
                d.insert(
                    String::from_utf8_lossy(&tok.token_bytes(i)).into_owned(),
                    json!(l),
                );
            }
            d.entry(text.clone()).or_insert(json!(t.logprob));
            top.push(Value::Object(d));
        }
        tokens.push(text);
    }
    let v =
        json!({"tokens": tokens, "token_logprobs": lp, "top_logprobs": top, "text_offset": offs});
    (v, at)
}

/// What a finished non-streamed request produced.
#[derive(Default)]
struct Collected {
    text: String,
    prompt: Vec<TokenLogprob>,
    generated: Vec<TokenLogprob>,
}

async fn collect(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>,
) -> Result<(Collected, Usage), ApiError> {
    let mut out = Collected::default();
    while let Some(ev) = rx.recv().await {
        match ev {
            Event::Text(t) => out.text.push_str(&t),
            Event::Token(t) => out.generated.push(t),
            Event::Prompt(p) => out.prompt.extend(p),
            Event::Done(u) => return Ok((out, u)),
        }
    }
    Err(ApiError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        message: "generation ended unexpectedly".into(),
        code: None,
        param: None,
    })
}

/// A non-streamed request's `choices[0]`.
fn choice_json(
    s: &AppState,
    c: &Common,
    prompt_text: &str,
    got: Collected,
    u: &Usage,
    chat: bool,
) -> Value {
    let want = c.params.logprobs.is_some();
    if chat {
        let lp = if want {
            chat_logprobs(&s.tok, &got.generated)
        } else {
            Value::Null
        };
        return json!({"index": 0, "message": {"role": "assistant", "content": got.text},
                      "logprobs": lp, "finish_reason": u.finish_reason});
    }
    let mut text = got.text;
    let mut lps = got.generated;
    if c.echo {
        text.insert_str(0, prompt_text);
        let mut p = got.prompt;
        p.extend(lps);
        lps = p;
    }
    let lp = if want {
        legacy_logprobs(&s.tok, &lps, 0).0
    } else {
        Value::Null
    };
    json!({"index": 0, "text": text, "logprobs": lp, "finish_reason": u.finish_reason})
}

/// Hands `prompt` to the engine with `params` capped at `max_tokens`: the receiver of its events,
/// or 503 when the engine has stopped.
fn submit(
    s: &AppState,
    prompt: Vec<u32>,
    params: &GenParams,
    max_tokens: usize,
) -> Result<tokio::sync::mpsc::UnboundedReceiver<Event>, ApiError> {
    let mut params = params.clone();
    params.max_tokens = max_tokens;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    s.engine
        .submit(Request { prompt, params, tx })
        .map_err(|e| ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: e,
            code: None,
            param: None,
        })?;
    Ok(rx)
}

/// Starts generating `prompt` as [`submit`] does, shaped by `shape` when there is one: capped
/// at its limit, run to the cap by the shapes that need every token, after its first-token delay,
/// its final usage the one the shape reports.
fn start(
    s: &Arc<AppState>,
    prompt: Vec<u32>,
    params: &GenParams,
    max_tokens: usize,
    shape: Option<Shape>,
) -> Result<tokio::sync::mpsc::UnboundedReceiver<Event>, ApiError> {
    let Some(shape) = shape else {
        return submit(s, prompt, params, max_tokens);
    };
    let mut p = params.clone();
    if shape.to_cap() {
        p.ignore_eos = true;
        p.stop.clear();
    }
    let limit = shape.limit(max_tokens);
    let Some(delay) = shape.first_delay() else {
        let rx = submit(s, prompt, &p, limit)?;
        let now = std::time::Duration::ZERO;
        return Ok(shapes::forward(shape, max_tokens, now, move || Some(rx)));
    };
    let s = Arc::clone(s);
    let later = move || submit(&s, prompt, &p, limit).ok();
    Ok(shapes::forward(shape, max_tokens, delay, later))
}

async fn run(
    s: Arc<AppState>,
    prompt: Vec<u32>,
    prompt_text: String,
    c: Common,
    chat: bool,
) -> Result<Response, ApiError> {
    let max_tokens = check_window(&s, prompt.len(), c.max_tokens)?;
    let shape = s.shapes.give(c.request, chat, c.stream);
    if let Some(reply) = whole_reply(&s, shape, prompt.len(), max_tokens).await {
        return reply;
    }
    let mut rx = start(&s, prompt, &c.params, max_tokens, shape)?;
    let n = s.ids.fetch_add(1, Ordering::Relaxed);
    let id = if chat {
        format!("chatcmpl-{n}")
    } else {
        format!("cmpl-{n}")
    };
    let head = Head {
        id,
        created: now(),
        model: s.name.clone(),
        chat,
    };
    if !c.stream {
        let (got, u) = collect(&mut rx).await?;
        if shape.is_some_and(Shape::fails) {
            return Ok(shapes::internal_error());
        }
        let body = json!({
            "id": head.id, "object": if chat { "chat.completion" } else { "text_completion" },
            "created": head.created, "model": head.model,
            "choices": [choice_json(&s, &c, &prompt_text, got, &u, chat)],
            "usage": usage_json(&u), "timings": timings_json(&u),
        });
        return Ok(axum::Json(body).into_response());
    }
    let (btx, brx) = tokio::sync::mpsc::channel::<Result<Bytes, std::convert::Infallible>>(64);
    let echo = c.echo.then_some(prompt_text);
    let want_lp = c.params.logprobs.is_some();
    tokio::spawn(stream_task(s, head, want_lp, echo, shape, rx, btx));
    let stream = tokio_stream::wrappers::ReceiverStream::new(brx);
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()))
}

/// Fields every response chunk repeats.
struct Head {
    id: String,
    created: u64,
    model: String,
    chat: bool,
}

impl Head {
    /// A chat stream's first chunk: the assistant role, no text yet.
    fn role_chunk(&self) -> Bytes {
        self.chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
            Value::Null,
            None,
        )
    }

    /// One SSE chunk: text, the log-probabilities of its tokens, and the
    /// finish reason, usage and timings on the last one.
    fn chunk(&self, delta: Value, logprobs: Value, finish: Value, done: Option<&Usage>) -> Bytes {
        let choice = if self.chat {
            json!({"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish})
        } else {
            let text = delta.get("content").cloned().unwrap_or(json!(""));
            json!({"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish})
        };
        let object = if self.chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        };
        let mut v = json!({"id": self.id, "object": object, "created": self.created,
                           "model": self.model, "choices": [choice]});
        if let Some(u) = done {
            v["usage"] = usage_json(u);
            v["timings"] = timings_json(u);
        }
        Bytes::from(format!("data: {v}\n\n"))
    }
}

type Sse = tokio::sync::mpsc::Sender<Result<Bytes, std::convert::Infallible>>;

/// Turns the log-probabilities a streamed chunk carries into its `logprobs` value; legacy
/// completions count `text_offset` on from chunk to chunk.
struct StreamLogprobs {
    /// The request asked for log-probabilities (else every chunk has null).
    want: bool,
    chat: bool,
    /// Characters of text sent so far (legacy completions).
    offset: usize,
}

impl StreamLogprobs {
    /// The `logprobs` value for `lps`, which it empties.
    fn take(&mut self, tok: &EngineTokenizer, lps: &mut Vec<TokenLogprob>) -> Value {
        let v = if !self.want {
            Value::Null
        } else if self.chat {
            chat_logprobs(tok, lps)
        } else {
            let (v, at) = legacy_logprobs(tok, lps, self.offset);
            self.offset = at;
            v
        };
        lps.clear();
        v
    }
}

/// Forward engine events as SSE chunks until the request ends or the client
/// goes (dropping `rx` then cancels the request). Log-probabilities of
/// tokens whose text is held back ride on the chunk that carries it. A chat
/// stream starts with the role chunk, held back to the first event when `shape`
/// delays the first token (as vLLM sends it with the first output).
async fn stream_task(
    s: Arc<AppState>,
    h: Head,
    want_lp: bool,
    mut echo: Option<String>,
    shape: Option<Shape>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Event>,
    btx: Sse,
) {
    let (mut prompt, mut pend) = (Vec::new(), Vec::new());
    let mut lp = StreamLogprobs {
        want: want_lp,
        chat: h.chat,
        offset: 0,
    };
    let mut role = h.chat.then(|| h.role_chunk());
    if shape.and_then(Shape::first_delay).is_none() && !send_once(&btx, &mut role).await {
        return;
    }
    while let Some(ev) = rx.recv().await {
        if !send_once(&btx, &mut role).await {
            return;
        }
        if let Event::Prompt(p) = ev {
            prompt.extend(p);
            continue;
        }
        if let Some(text) = echo.take() {
            let lps = lp.take(&s.tok, &mut prompt);
            let echoed = h.chunk(json!({"content": text}), lps, Value::Null, None);
            if !put(&btx, echoed).await {
                return;
            }
        }
        match ev {
            Event::Token(t) => pend.push(t),
            Event::Text(t) if t.is_empty() => {}
            Event::Text(t) => {
                let lps = lp.take(&s.tok, &mut pend);
                if !put(&btx, h.chunk(json!({"content": t}), lps, Value::Null, None)).await {
                    return; // client gone: dropping rx cancels the request
                }
            }
            Event::Done(u) => {
                let tail = (want_lp && !pend.is_empty()).then(|| lp.take(&s.tok, &mut pend));
                end_stream(&btx, &h, tail, &u, shape).await;
                return;
            }
            Event::Prompt(_) => {}
        }
    }
}

/// Sends `b`; false when the client has gone.
async fn put(btx: &Sse, b: Bytes) -> bool {
    btx.send(Ok(b)).await.is_ok()
}

/// Sends `b` if it is still there (taking it); false when the client has gone.
async fn send_once(btx: &Sse, b: &mut Option<Bytes>) -> bool {
    match b.take() {
        Some(b) => put(btx, b).await,
        None => true,
    }
}

/// Ends a stream as `shape` wants: for an error mid-stream, vLLM's error event and `[DONE]`
/// (no finish chunk, no usage); for `empty`, its one token's chunk (no text) before the finish;
/// else as [`send_end`].
async fn end_stream(btx: &Sse, h: &Head, tail: Option<Value>, u: &Usage, shape: Option<Shape>) {
    match shape {
        Some(sh) if sh.fails() => {
            if let Some(lps) = tail {
                let _ = btx
                    .send(Ok(h.chunk(json!({"content": ""}), lps, Value::Null, None)))
                    .await;
            }
            let _ = btx.send(Ok(shapes::sse_error())).await;
            let _ = btx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
        }
        Some(Shape::Empty) if u.completion_tokens > 0 => {
            let token = h.chunk(json!({"content": ""}), Value::Null, Value::Null, None);
            let _ = btx.send(Ok(token)).await;
            send_end(btx, h, tail, u).await;
        }
        _ => send_end(btx, h, tail, u).await,
    }
}

/// Ends a stream: a last chunk with the log-probabilities `tail` of tokens whose text never
/// came (when there are any), the finish chunk with usage and timings, and `[DONE]`.
async fn send_end(btx: &Sse, h: &Head, tail: Option<Value>, u: &Usage) {
    if let Some(lps) = tail {
        let _ = btx
            .send(Ok(h.chunk(json!({"content": ""}), lps, Value::Null, None)))
            .await;
    }
    let finish = h.chunk(json!({}), Value::Null, json!(u.finish_reason), Some(u));
    let _ = btx.send(Ok(finish)).await;
    let _ = btx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
}
