//! `setup.window-mismatch`, its part from the raw records: every window a refusal text names (a
//! speed request's, an answers file's, a fit step's error) against the window the setup claims
//! (`/v1/models`, the start line, the speed contract, the fit result; else the card's command).
//! Refusal texts are read in the wordings of the common engines (`startline::named_window`).

use crate::bundle::Bundle;
use crate::check::{Emit, Ran};
use crate::startline;
use serde_json::json;

/// Windows named by refusal texts: (window, file, pointer) of each distinct one.
fn refusal_windows(b: &Bundle) -> Vec<(u64, String, String)> {
    let mut v: Vec<(u64, String, String)> = Vec::new();
    if let Some(r) = &b.speed_result {
        for (i, q) in r.value.requests.iter().enumerate() {
            if let Some(w) = q.error.as_deref().and_then(startline::named_window) {
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
            if let Some(w) = s.error.as_deref().and_then(startline::named_window) {
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
    if let Some((w, p)) = crate::consistency::window::claimed_window(b).filter(|_| v.is_empty()) {
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
