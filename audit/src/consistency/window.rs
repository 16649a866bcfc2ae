//! The window, everywhere it shows: an answered request must fit it, and a refusal that names a
//! window must name the one the command, start line, `/v1/models` and contracts claim, and must be
//! one the request's size explains.
//!
//! Definitions: a request needs its prompt tokens plus its reply cap; a server with a window of W
//! tokens refuses a request that needs more than W, so an answered request that needs more than W
//! cannot have been answered. The window is `/v1/models`', else the start line's, else the
//! contract's, else the card's command's. Refusal texts are read in the wordings of vLLM ("This
//! model's maximum context length is N tokens"), llama.cpp ("the request exceeds the available
//! context size (N tokens)", "n_ctx = N", "exceeds the context size"), SGLang ("... is longer than
//! the model's context length (N tokens)"), TGI ("inputs tokens + max_new_tokens must be <= N") and
//! the bundled engine (vLLM's).
//!
//! `check_refusal_windows` reports under `setup.window-mismatch` (setup.rs).

use crate::bundle::Bundle;
use crate::bundle::Run;
use crate::check::{Check, Emit, Ran};
use crate::report::Severity;
use crate::startline;
use regex::Regex;
use serde_json::json;
use std::sync::OnceLock;

const SPEED: &str = "speed.answered-beyond-window";
const QUALITY: &str = "quality.answered-beyond-window";
const FITS: &str = "quality.refusal-fits-window";

/// Checks of this file.
pub const CHECKS: &[Check<Run>] = &[
    Check {
        id: SPEED,
        severity: Severity::Error,
        doc: "A speed request recorded as answered needs more tokens (prompt + reply cap) than the server's window.",
        run: check_answered_speed,
    },
    Check {
        id: QUALITY,
        severity: Severity::Error,
        doc: "A quality answer recorded as answered needs more tokens (prompt + answer limit) than the server's window.",
        run: check_answered_quality,
    },
    Check {
        id: FITS,
        severity: Severity::Error,
        doc: "A request recorded as refused for its length fits the window its own refusal text names.",
        run: check_refusals_that_fit,
    },
];

/// The window a refusal text names, in the wordings of the common engines.
pub fn named_window(text: &str) -> Option<u64> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)(?:maximum context length is (\d+)",
            r"|context length \((\d+) tokens?\)",
            r"|context size \((\d+) tokens?\)",
            r"|max_new_tokens`?\s+must be <= (\d+)",
            r"|\bn_ctx(?:_slot)?\s*[=:]?\s*(\d+)",
            r"|context (?:length|size|window) (?:is|of) (\d+))",
        ))
        .expect("static pattern")
    });
    let c = re.captures(text)?;
    c.iter().skip(1).flatten().next()?.as_str().parse().ok()
}

/// The server's window as the bundle claims it (see the module doc), with where it came from.
pub fn claimed_window(b: &Bundle) -> Option<(u64, String)> {
    if let Some(r) = &b.speed_result {
        let c = b.speed_contract.as_ref().map(|c| &c.value);
        if let Some(w) = crate::speed::window(c, &r.value) {
            return Some((w, r.path.clone()));
        }
    }
    if let Some(c) = &b.speed_contract {
        return Some((c.value.server.window, c.path.clone()));
    }
    let card = b.card.as_ref()?;
    let cmd = card.value.commands.first()?;
    let flags = [
        "--context",
        "--ctx-size",
        "-c",
        "--max-model-len",
        "--context-length",
    ];
    let w = crate::setup::flag(&cmd.argv, &flags)?.parse().ok()?;
    Some((w, card.path.clone()))
}

/// `speed.answered-beyond-window`: answered speed requests that cannot fit the window.
pub(crate) fn check_answered_speed(b: &Bundle, e: &mut Emit) -> Ran {
    let (Some(rl), Some((window, _))) = (&b.speed_result, claimed_window(b)) else {
        return None;
    };
    for (i, q) in rl.value.requests.iter().enumerate() {
        let need = q
            .prompt_tokens
            .or(q.depth)
            .unwrap_or(0)
            .saturating_add(q.max_tokens);
        if q.answered() && need > window {
            e.finding(
                    format!(
                        "{} request {i} is recorded as answered, but it needs {need} tokens ({} prompt + {} reply cap) and the window is {window}: a server refuses it",
                        q.step,
                        q.prompt_tokens.or(q.depth).unwrap_or(0),
                        q.max_tokens
                    ),
                )
                .file(&rl.path)
                .pointer(format!("/requests/{i}"))
                .data(json!({"need": need, "window": window}));
        }
    }
    Some(())
}

/// `quality.answered-beyond-window`: answered quality records that cannot fit the window.
pub(crate) fn check_answered_quality(b: &Bundle, e: &mut Emit) -> Ran {
    let mut ran = None;
    let Some((window, _)) = claimed_window(b) else {
        return ran;
    };
    for t in &b.quality {
        let Some(a) = &t.answers else { continue };
        ran = Some(());
        if let Some((need, line)) = a.value.answered_need_max.filter(|(n, _)| *n > window) {
            e.finding(
                    format!(
                        "{}: line {line} is recorded as answered, but its prompt plus answer limit is {need} tokens and the window is {window}: a server refuses it (a refusal rewritten as an answer?)",
                        t.test
                    ),
                )
                .file(&a.path)
                .pointer(format!("line {line}"))
                .data(json!({"need": need, "window": window}));
        }
    }
    ran
}

/// Windows named by refusal texts: (window, file, pointer) of each distinct one.
fn refusal_windows(b: &Bundle) -> Vec<(u64, String, String)> {
    let mut v: Vec<(u64, String, String)> = Vec::new();
    if let Some(r) = &b.speed_result {
        for (i, q) in r.value.requests.iter().enumerate() {
            if let Some(w) = q.error.as_deref().and_then(named_window) {
                if !v.iter().any(|(x, f, _)| *x == w && *f == r.path) {
                    v.push((w, r.path.clone(), format!("/requests/{i}/error")));
                }
            }
        }
    }
    for t in &b.quality {
        if let Some(a) = &t.answers {
            for w in a.value.refusal_windows.keys() {
                v.push((*w, a.path.clone(), String::new()));
            }
        }
    }
    if let Some(f) = &b.fit {
        for (i, s) in f.value.steps.iter().enumerate() {
            if let Some(w) = s.error.as_deref().and_then(named_window) {
                v.push((w, f.path.clone(), format!("/steps/{i}/error")));
            }
        }
    }
    v
}

/// Every window the setup claims: (who, value).
fn claims(b: &Bundle) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    if let Some(r) = &b.speed_result {
        if let Some(w) = startline::models_window(&r.value.server.models) {
            v.push(("/v1/models".to_string(), w));
        }
        if let Some(w) = startline::parse(&r.value.server.start_lines).window {
            v.push(("the start line".to_string(), w));
        }
    }
    if let Some(c) = &b.speed_contract {
        v.push(("the speed contract".to_string(), c.value.server.window));
    }
    if let Some(f) = &b.fit {
        v.push(("the fit result".to_string(), f.value.window));
    }
    if let Some((w, p)) = claimed_window(b).filter(|_| v.is_empty()) {
        v.push((p, w));
    }
    v
}

/// `setup.window-mismatch` (setup.rs): the window a refusal text names against the claimed one.
pub(crate) fn check_refusal_windows(b: &Bundle, e: &mut Emit) -> Ran {
    let named = refusal_windows(b);
    let claimed = claims(b);
    if named.is_empty() || claimed.is_empty() {
        return None;
    }
    for (w, file, ptr) in named {
        let other: Vec<String> = claimed
            .iter()
            .filter(|(_, c)| *c != w)
            .map(|(who, c)| format!("{who}: {c}"))
            .collect();
        if other.is_empty() {
            continue;
        }
        e.finding(format!(
            "a refusal in {file} names a window of {w} tokens, but {}",
            other.join(", ")
        ))
        .file(&file)
        .pointer(ptr)
        .data(json!({"refusal_window": w}));
    }
    Some(())
}

/// `quality.refusal-fits-window`: refusals for length that the named window does not explain.
pub(crate) fn check_refusals_that_fit(b: &Bundle, e: &mut Emit) -> Ran {
    let mut ran = None;
    for t in &b.quality {
        let Some(a) = &t.answers else { continue };
        ran = Some(());
        let (n, line) = a.value.refusals_that_fit;
        if n > 0 {
            let line = line.unwrap_or(0);
            e.finding(
                    format!(
                        "{}: {n} requests are recorded as refused for a window their prompt plus answer limit fits (first at line {line}); such a refusal did not happen as recorded",
                        t.test
                    ),
                )
                .file(&a.path)
                .pointer(format!("line {line}"));
        }
    }
    ran
}
