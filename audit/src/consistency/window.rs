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
//! The refusal windows against the claimed window report under `setup.window-mismatch`
//! (`setup/refusals.rs`).

use crate::bundle::Bundle;
use crate::check::{Emit, Ran};
use serde_json::json;

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

/// The server's window as the bundle claims it, with the file that says so: `/v1/models` or the
/// start line (the speed result), else the speed contract, else the card's first command's flag.
pub(crate) fn claimed_window(b: &Bundle) -> Option<(u64, String)> {
    if let Some(r) = &b.speed_result {
        let c = b.speed_contract.as_ref().map(|c| &c.value);
        if let Some(w) = crate::figures::window(c, &r.value) {
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
    let w = crate::startline::flag(&cmd.argv, &flags)?.parse().ok()?;
    Some((w, card.path.clone()))
}
