//! Reply shapes on demand (`serve --reply-shapes SPEC`): chosen requests get, deterministically,
//! one of the replies a benchmark client must handle (refused, empty, one token, an immediate
//! stop, cut at a length, a slow first token, an error mid-stream, a hang, HTTP 500), so that
//! another tool run against the engine can be checked against what the engine did.
//!
//! The generation requests (`/v1/completions`, `/v1/chat/completions` and their aliases) are
//! numbered from 1 in the order their handlers start, whatever becomes of them (a malformed body
//! takes its number too). A SPEC is a comma list of `SHAPE@WHEN` rules; the first rule whose
//! WHEN holds for a request's number gives its shape. WHEN is `N` (the N-th request), `N-K` (the
//! N-th to the K-th), `N/M` (the N-th and every M-th after it), `N-K/M`, or `P%` / `P%:SEED`
//! (about P in a hundred, picked by [`mix`] of the number and the seed, 0 by default). The
//! shapes, and what each puts on the wire, are in docs/reply-shapes.md. A shape is data only:
//! parsing or giving one runs, opens or reads nothing.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use crate::engine::{Event, Usage};

/// The longest first-token delay or hang cap a spec may ask for, in ms (one hour): every shaped
/// reply ends.
pub const MAX_MS: u64 = 3_600_000;

/// A hang's cap when its rule names none, in ms.
pub const HANG_DEFAULT_MS: u64 = 60_000;

/// The message of vLLM's `GenerationError`, which its OpenAI server sends for a request that
/// failed while generating (mid-stream as an SSE event, else with HTTP 500).
pub const GENERATION_ERROR: &str = "Internal server error";

/// A reply shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// HTTP 400 with the engine's own context-length refusal, as for a prompt too long.
    Refuse,
    /// One completion token whose text is empty (as an end-of-sequence token first): `stop`.
    Empty,
    /// One real token, then `stop`.
    One,
    /// No token at all, `stop`.
    Stop,
    /// Exactly this many tokens (end-of-sequence and stop strings ignored), then `length`.
    Length(usize),
    /// A normal reply that starts this many ms late (its stream's first event included).
    SlowFirst(u64),
    /// This many tokens, then the error vLLM sends when generation fails.
    MidstreamError(usize),
    /// Nothing at all until the client goes, or HTTP 504 after this many ms.
    Hang(u64),
    /// HTTP 500 with vLLM's error body, at once.
    Http500,
}

/// The shapes' names, in [`Shape::index`] order.
pub const NAMES: [&str; 9] = [
    "refuse",
    "empty",
    "one",
    "stop",
    "length",
    "slow-first",
    "midstream-error",
    "hang",
    "http500",
];

impl Shape {
    /// Its name in a SPEC.
    pub fn name(self) -> &'static str {
        NAMES[self.index()]
    }

    fn index(self) -> usize {
        match self {
            Shape::Refuse => 0,
            Shape::Empty => 1,
            Shape::One => 2,
            Shape::Stop => 3,
            Shape::Length(_) => 4,
            Shape::SlowFirst(_) => 5,
            Shape::MidstreamError(_) => 6,
            Shape::Hang(_) => 7,
            Shape::Http500 => 8,
        }
    }

    /// The generation cap of a request whose own cap is `max`: shapes never give more tokens
    /// than the request allows.
    pub fn limit(self, max: usize) -> usize {
        match self {
            Shape::Empty | Shape::Stop => 0,
            Shape::One => max.min(1),
            Shape::Length(n) | Shape::MidstreamError(n) => max.min(n),
            _ => max,
        }
    }

    /// Whether generation runs to its cap: the end-of-sequence token and stop strings ignored.
    pub fn to_cap(self) -> bool {
        matches!(
            self,
            Shape::One | Shape::Length(_) | Shape::MidstreamError(_)
        )
    }

    /// The delay before its first token, if it has one.
    pub fn first_delay(self) -> Option<Duration> {
        match self {
            Shape::SlowFirst(ms) => Some(Duration::from_millis(ms)),
            _ => None,
        }
    }

    /// Whether it ends in vLLM's generation error instead of a finish.
    pub fn fails(self) -> bool {
        matches!(self, Shape::MidstreamError(_))
    }

    /// The usage a reply of this shape reports, from the engine's `u` for the generation it ran
    /// (capped at [`Shape::limit`] of the request's cap `max`).
    pub fn usage(self, mut u: Usage, max: usize) -> Usage {
        match self {
            Shape::Stop => {
                u.finish_reason = "stop";
                u.completion_tokens = 0;
            }
            Shape::Empty => {
                u.finish_reason = "stop";
                u.completion_tokens = max.min(1);
            }
            Shape::One => u.finish_reason = "stop",
            _ => {}
        }
        u
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Shape::Length(n) | Shape::MidstreamError(n) => write!(f, "{}={n}", self.name()),
            Shape::SlowFirst(ms) | Shape::Hang(ms) => write!(f, "{}={ms}", self.name()),
            s => f.write_str(s.name()),
        }
    }
}

/// Which requests a rule picks, by their number (from 1, in arrival order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// From `from` to `to` (inclusive), every `step`-th.
    Seq { from: u64, to: u64, step: u64 },
    /// Those whose [`mix`] with `seed` falls below `per_million` in a million.
    Share { per_million: u64, seed: u64 },
}

impl When {
    /// Whether request `n` is picked.
    pub fn holds(self, n: u64) -> bool {
        match self {
            When::Seq { from, to, step } => {
                (from..=to).contains(&n) && (n - from).is_multiple_of(step)
            }
            When::Share { per_million, seed } => mix(seed, n) % 1_000_000 < per_million,
        }
    }
}

/// SplitMix64's finaliser over `seed ^ n * 0x9E3779B97F4A7C15` (wrapping): how `P%` picks
/// request `n`, the same on every machine (docs/reply-shapes.md gives it to compute by hand).
pub fn mix(seed: u64, n: u64) -> u64 {
    let mut z = seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A parsed `--reply-shapes` SPEC: its rules in order, and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    rules: Vec<(Shape, When)>,
    text: String,
}

impl Spec {
    /// Parses a SPEC (the grammar is in the module's doc); `Err` names the rule at fault.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty: expected SHAPE@WHEN rules separated by commas".into());
        }
        let rules = text
            .split(',')
            .map(|r| parse_rule(r.trim()).map_err(|why| format!("rule {:?}: {why}", r.trim())))
            .collect::<Result<Vec<_>, _>>()?;
        let text = text.split(',').map(str::trim).collect::<Vec<_>>().join(",");
        Ok(Spec { rules, text })
    }

    /// The shape request `n` gets: the first rule's that picks it.
    pub fn shape_of(&self, n: u64) -> Option<Shape> {
        self.rules.iter().find(|(_, w)| w.holds(n)).map(|&(s, _)| s)
    }

    /// The SPEC as given, without the blanks around its rules (one word).
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// One `SHAPE@WHEN` rule.
fn parse_rule(rule: &str) -> Result<(Shape, When), String> {
    let (shape, when) = rule
        .split_once('@')
        .ok_or("expected SHAPE@WHEN (e.g. refuse@3, stop@2/4, hang=5000@10%)")?;
    Ok((parse_shape(shape)?, parse_when(when)?))
}

/// A SHAPE: a name, and `=ARG` where the shape takes one.
fn parse_shape(s: &str) -> Result<Shape, String> {
    let (name, arg) = match s.split_once('=') {
        Some((n, a)) => (n, Some(a)),
        None => (s, None),
    };
    let ms = |a: &str| number(a, "ms", 1, MAX_MS);
    let tokens = |a: &str, lo| number(a, "tokens", lo, u32::MAX as u64).map(|n| n as usize);
    let shape = match (name, arg) {
        ("refuse", None) => Shape::Refuse,
        ("empty", None) => Shape::Empty,
        ("one", None) => Shape::One,
        ("stop", None) => Shape::Stop,
        ("http500", None) => Shape::Http500,
        ("hang", None) => Shape::Hang(HANG_DEFAULT_MS),
        ("hang", Some(a)) => Shape::Hang(ms(a)?),
        ("slow-first", Some(a)) => Shape::SlowFirst(ms(a)?),
        ("length", Some(a)) => Shape::Length(tokens(a, 1)?),
        ("midstream-error", Some(a)) => Shape::MidstreamError(tokens(a, 0)?),
        ("refuse" | "empty" | "one" | "stop" | "http500", Some(_)) => {
            return Err(format!("`{name}` takes no `=` value"))
        }
        ("slow-first" | "length" | "midstream-error", None) => {
            return Err(format!("`{name}` needs a value: `{name}=N`"))
        }
        _ => {
            return Err(format!(
                "unknown shape `{name}` (expected one of {})",
                NAMES.join(", ")
            ))
        }
    };
    Ok(shape)
}

/// A whole number `a` of `what` in `lo..=hi`.
fn number(a: &str, what: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match a.parse::<u64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("`{a}`: expected {what} from {lo} to {hi}")),
    }
}

/// A WHEN: `N`, `N-K`, `N/M`, `N-K/M`, `P%` or `P%:SEED`.
fn parse_when(w: &str) -> Result<When, String> {
    if let Some((p, seed)) = w.split_once('%') {
        let pct: f64 = p
            .parse()
            .map_err(|_| format!("`{p}`: expected a percentage"))?;
        if !(0.0..=100.0).contains(&pct) {
            return Err(format!("`{p}`: a percentage is from 0 to 100"));
        }
        let seed = match seed.strip_prefix(':') {
            Some(s) => number(s, "a seed", 0, u64::MAX)?,
            None if seed.is_empty() => 0,
            None => return Err(format!("`{w}`: expected P% or P%:SEED")),
        };
        let per_million = (pct * 10_000.0).round() as u64;
        return Ok(When::Share { per_million, seed });
    }
    let (range, step) = match w.split_once('/') {
        Some((r, m)) => (r, number(m, "a step", 1, u64::MAX)?),
        None => (w, 1),
    };
    let request = |s: &str| number(s, "a request number", 1, u64::MAX);
    let (from, to) = match range.split_once('-') {
        Some((a, b)) => (request(a)?, request(b)?),
        None if w.contains('/') => (request(range)?, u64::MAX),
        None => (request(range)?, request(range)?),
    };
    if to < from {
        return Err(format!("`{range}`: the range ends before it starts"));
    }
    Ok(When::Seq { from, to, step })
}

/// The live side of `--reply-shapes`: numbers the generation requests, gives their shapes, and
/// counts what it gave (on `/metrics`; one line on stderr per shaped reply).
pub struct Shapes {
    spec: Option<Spec>,
    numbered: AtomicU64,
    given: [AtomicU64; NAMES.len()],
    hanging: AtomicU64,
}

impl Shapes {
    /// Shapes from `spec`; `None`: no request is shaped and `/metrics` says nothing of them.
    pub fn new(spec: Option<Spec>) -> Shapes {
        Shapes {
            spec,
            numbered: AtomicU64::new(0),
            given: Default::default(),
            hanging: AtomicU64::new(0),
        }
    }

    /// Numbers a generation request as its handler starts (from 1).
    pub fn arrive(&self) -> u64 {
        self.numbered.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The shape request `n` (`chat` or completions, streamed or not) gets, counted and logged.
    pub fn give(&self, n: u64, chat: bool, stream: bool) -> Option<Shape> {
        let shape = self.spec.as_ref()?.shape_of(n)?;
        self.given[shape.index()].fetch_add(1, Ordering::Relaxed);
        let endpoint = if chat { "chat" } else { "completions" };
        eprintln!(
            "rigaudit-engine reply-shape request={n} shape={shape} endpoint={endpoint} stream={stream}"
        );
        Some(shape)
    }

    /// The `/metrics` lines of the shapes (none without a spec).
    pub fn metrics_text(&self) -> String {
        if self.spec.is_none() {
            return String::new();
        }
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = format!(
            "# HELP rigaudit_engine_reply_shape_requests_total Generation requests numbered for --reply-shapes.\n# TYPE rigaudit_engine_reply_shape_requests_total counter\nrigaudit_engine_reply_shape_requests_total {}\n",
            load(&self.numbered)
        );
        out.push_str("# HELP rigaudit_engine_shaped_replies_total Replies given a shape by --reply-shapes, by shape.\n# TYPE rigaudit_engine_shaped_replies_total counter\n");
        for (name, n) in NAMES.iter().zip(&self.given) {
            out.push_str(&format!(
                "rigaudit_engine_shaped_replies_total{{shape=\"{name}\"}} {}\n",
                load(n)
            ));
        }
        out.push_str(&format!(
            "# HELP rigaudit_engine_reply_shape_hanging Requests the hang shape holds now.\n# TYPE rigaudit_engine_reply_shape_hanging gauge\nrigaudit_engine_reply_shape_hanging {}\n",
            load(&self.hanging)
        ));
        out
    }

    /// The hang shape: nothing until `ms` have passed, then HTTP 504; the client going first drops
    /// this future (the server drops a request's handler when its connection closes).
    pub async fn hang(&self, ms: u64) -> Response {
        self.hanging.fetch_add(1, Ordering::Relaxed);
        let _held = Held(&self.hanging);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        let msg = format!("no reply within {ms} ms (reply shape hang)");
        vllm_error(StatusCode::GATEWAY_TIMEOUT, &msg, "TimeoutError")
    }
}

/// Takes one off a gauge when dropped.
struct Held<'a>(&'a AtomicU64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// vLLM's error object, in its field order: `{"error":{"message":..,"type":..,"param":null,
/// "code":STATUS}}` (vllm/entrypoints/openai/protocol.py, `ErrorResponse`/`ErrorInfo`).
pub fn vllm_error_json(message: &str, kind: &str, code: u16) -> String {
    let s = |v: &str| serde_json::Value::from(v).to_string();
    format!(
        r#"{{"error":{{"message":{},"type":{},"param":null,"code":{code}}}}}"#,
        s(message),
        s(kind)
    )
}

/// A JSON response with vLLM's error body.
pub fn vllm_error(status: StatusCode, message: &str, kind: &str) -> Response {
    let body = vllm_error_json(message, kind, status.as_u16());
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// HTTP 500 as vLLM answers a request whose generation failed.
pub fn internal_error() -> Response {
    vllm_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        GENERATION_ERROR,
        "InternalServerError",
    )
}

/// The event vLLM sends when generation fails mid-stream (`data: [DONE]` follows it).
pub fn sse_error() -> Bytes {
    let e = vllm_error_json(GENERATION_ERROR, "InternalServerError", 500);
    Bytes::from(format!("data: {e}\n\n"))
}

/// The events of a shaped generation: after `delay` (unless the receiver is dropped first)
/// `start` gives the engine's events, which are forwarded with the final usage as `shape`
/// reports it (`max`: the request's cap), until either side ends.
pub fn forward<F>(shape: Shape, max: usize, delay: Duration, start: F) -> UnboundedReceiver<Event>
where
    F: FnOnce() -> Option<UnboundedReceiver<Event>> + Send + 'static,
{
    let (tx, rx) = unbounded_channel();
    tokio::spawn(async move {
        if !delay.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = tx.closed() => return,
            }
        }
        let Some(mut from) = start() else { return };
        loop {
            let ev = tokio::select! {
                ev = from.recv() => ev,
                _ = tx.closed() => return, // dropping `from` cancels the request
            };
            let ev = match ev {
                Some(Event::Done(u)) => Event::Done(shape.usage(u, max)),
                Some(ev) => ev,
                None => return,
            };
            if tx.send(ev).is_err() {
                return;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(from: u64, to: u64, step: u64) -> When {
        When::Seq { from, to, step }
    }

    #[test]
    fn every_form_of_when_parses_and_picks_what_it_says() {
        assert_eq!(parse_when("3"), Ok(seq(3, 3, 1)));
        assert_eq!(parse_when("2-5"), Ok(seq(2, 5, 1)));
        assert_eq!(parse_when("2/4"), Ok(seq(2, u64::MAX, 4)));
        assert_eq!(parse_when("2-10/4"), Ok(seq(2, 10, 4)));
        let picked = |w: &str| -> Vec<u64> {
            let w = parse_when(w).unwrap();
            (1..=12).filter(|&n| w.holds(n)).collect()
        };
        assert_eq!(picked("3"), [3]);
        assert_eq!(picked("2-5"), [2, 3, 4, 5]);
        assert_eq!(picked("2/4"), [2, 6, 10]);
        assert_eq!(picked("2-9/4"), [2, 6]);
        assert_eq!(picked("1/1"), (1..=12).collect::<Vec<_>>());
        assert_eq!(picked("0%"), Vec::<u64>::new());
        assert_eq!(picked("100%"), (1..=12).collect::<Vec<_>>());
        assert_eq!(
            parse_when("12.5%:7"),
            Ok(When::Share {
                per_million: 125_000,
                seed: 7
            })
        );
    }

    #[test]
    fn a_share_is_about_its_percentage_and_the_same_every_time() {
        let w = parse_when("25%:3").unwrap();
        let hits = (1..=100_000).filter(|&n| w.holds(n)).count();
        assert!((24_000..26_000).contains(&hits), "{hits}");
        let again = parse_when("25%:3").unwrap();
        assert!((1..=1000).all(|n| w.holds(n) == again.holds(n)));
        let other = parse_when("25%:4").unwrap();
        assert!((1..=1000).any(|n| w.holds(n) != other.holds(n)));
        // The formula docs/reply-shapes.md gives, by hand for seed 0 and request 1.
        assert_eq!(mix(0, 1), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn shapes_parse_with_their_values_and_print_back() {
        let spec = "refuse@3,empty@5/7,one@1,stop@2-4,length=3@6,slow-first=1500@2,midstream-error=4@9,hang@11,hang=250@12,http500@13";
        let s = Spec::parse(spec).unwrap();
        let shapes: Vec<String> = s.rules.iter().map(|(s, _)| s.to_string()).collect();
        assert_eq!(
            shapes,
            [
                "refuse",
                "empty",
                "one",
                "stop",
                "length=3",
                "slow-first=1500",
                "midstream-error=4",
                "hang=60000",
                "hang=250",
                "http500"
            ]
        );
        assert_eq!(s.text(), spec);
        // The first rule that picks a request gives its shape.
        assert_eq!(s.shape_of(3), Some(Shape::Refuse));
        assert_eq!(s.shape_of(2), Some(Shape::Stop));
        assert_eq!(s.shape_of(12), Some(Shape::Empty));
        assert_eq!(s.shape_of(14), None);
        assert_eq!(
            Spec::parse(" stop@1 , http500@2 ").unwrap().text(),
            "stop@1,http500@2"
        );
    }

    #[test]
    fn bad_specs_are_refused_naming_the_rule_and_why() {
        for (spec, why) in [
            ("", "empty"),
            ("stop", "rule \"stop\": expected SHAPE@WHEN"),
            ("stop@0", "expected a request number from 1"),
            ("stop@5-2", "ends before it starts"),
            ("stop@2/0", "expected a step from 1"),
            ("stop@x", "`x`: expected a request number"),
            ("stop@101%", "from 0 to 100"),
            ("stop@5%x", "expected P% or P%:SEED"),
            ("stop@nan%", "from 0 to 100"),
            ("stop=2@1", "`stop` takes no `=` value"),
            ("length@1", "`length` needs a value"),
            ("length=0@1", "expected tokens from 1"),
            ("slow-first=0@1", "expected ms from 1 to 3600000"),
            ("hang=3600001@1", "expected ms from 1 to 3600000"),
            (
                "explode@1",
                "unknown shape `explode` (expected one of refuse, empty,",
            ),
            ("stop@1,,http500@2", "rule \"\""),
        ] {
            let err = Spec::parse(spec).unwrap_err();
            assert!(err.contains(why), "{spec}: {err}");
        }
    }

    #[test]
    fn caps_and_usage_follow_the_shape_never_above_the_request() {
        let u = Usage {
            finish_reason: "length",
            prompt_tokens: 5,
            completion_tokens: 0,
            ..Usage::default()
        };
        assert_eq!(Shape::Stop.limit(8), 0);
        assert_eq!(Shape::Empty.limit(8), 0);
        assert_eq!(Shape::One.limit(8), 1);
        assert_eq!(Shape::Length(3).limit(8), 3);
        assert_eq!(Shape::Length(30).limit(8), 8);
        assert_eq!(Shape::MidstreamError(0).limit(8), 0);
        assert_eq!(Shape::SlowFirst(5).limit(8), 8);
        let empty = Shape::Empty.usage(u.clone(), 8);
        assert_eq!((empty.finish_reason, empty.completion_tokens), ("stop", 1));
        let scoring = Shape::Empty.usage(u.clone(), 0);
        assert_eq!(scoring.completion_tokens, 0);
        let stop = Shape::Stop.usage(u.clone(), 8);
        assert_eq!((stop.finish_reason, stop.prompt_tokens), ("stop", 5));
        let cut = Shape::Length(3).usage(u, 8);
        assert_eq!(cut.finish_reason, "length");
        assert!(Shape::One.to_cap() && Shape::MidstreamError(2).to_cap());
        assert!(!Shape::Empty.to_cap() && !Shape::SlowFirst(1).to_cap());
    }

    #[test]
    fn the_error_bodies_are_vllms() {
        assert_eq!(
            vllm_error_json(GENERATION_ERROR, "InternalServerError", 500),
            r#"{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}"#
        );
        assert_eq!(
            &sse_error()[..],
            br#"data: {"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}

"#
        );
        assert!(vllm_error_json("a \"q\"", "T", 504).contains(r#""message":"a \"q\"""#));
    }

    #[test]
    fn metrics_say_nothing_without_a_spec_and_count_what_was_given() {
        assert_eq!(Shapes::new(None).metrics_text(), "");
        let s = Shapes::new(Some(Spec::parse("stop@2,http500@3/1").unwrap()));
        let got: Vec<_> = (0..4).map(|_| s.give(s.arrive(), false, false)).collect();
        assert_eq!(
            got,
            [
                None,
                Some(Shape::Stop),
                Some(Shape::Http500),
                Some(Shape::Http500)
            ]
        );
        let m = s.metrics_text();
        assert!(
            m.contains("rigaudit_engine_reply_shape_requests_total 4\n"),
            "{m}"
        );
        assert!(m.contains("rigaudit_engine_shaped_replies_total{shape=\"stop\"} 1\n"));
        assert!(m.contains("rigaudit_engine_shaped_replies_total{shape=\"http500\"} 2\n"));
        assert!(m.contains("rigaudit_engine_shaped_replies_total{shape=\"refuse\"} 0\n"));
        assert!(m.contains("rigaudit_engine_reply_shape_hanging 0\n"));
    }
}
