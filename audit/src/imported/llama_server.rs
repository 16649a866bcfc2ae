//! llama.cpp's server (`llama-server`): the `timings` object it puts in each `/completion` and
//! `/v1/chat/completions` response, read from a JSON Lines file of saved response bodies (one
//! response a line; an error body `{"error": {...}}` for a refused request).
//!
//! Definitions, as llama-server writes them (`tools/server/`):
//! - units: `*_ms` in milliseconds, `*_per_second` in tokens per second, `*_n` in tokens;
//! - TTFT: none is written; `prompt_ms` is the prompt's processing time on the slot (from the
//!   task's start to its last prompt batch), not a client's time to first token;
//! - token counts: the server's own: `prompt_n` prompt tokens computed, `cache_n` prompt tokens
//!   taken from the slot's cache (not computed), `predicted_n` tokens generated; the response's
//!   `tokens_evaluated` (`/completion`) or `usage.prompt_tokens` (chat) is `prompt_n + cache_n`;
//! - the rates: `prompt_per_token_ms = prompt_ms / prompt_n`, `prompt_per_second = 1e3 *
//!   prompt_n / prompt_ms`; for generation, older servers divide by `predicted_n`, newer ones
//!   (`server_slot_stats`) by the decode steps `predicted_n - 1` (the first token comes from the
//!   prompt's last batch) and print 0 when there is none; the file does not say which server it
//!   is, so a value that either gives is accepted and the recomputed key names the one;
//! - which requests: each response is one request; there is no aggregate over them in the file.
//!
//! A streamed response (`"stream": true`, saved as its server-sent events, one stream a file) is
//! read into the same record: the timings and counts of its final chunk, its text joined from its
//! chunks, and the number of chunks that carried text; the chunk count is checked against
//! `predicted_n` (a tool that counts chunks as tokens counts that many), and a stream cut before
//! its final chunk is named (`import.run-incomplete`).

use super::{compare, record, row, Row, FAILED_AS_ZERO, FAILED_REQUESTS, RUN_INCOMPLETE};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;
use std::collections::BTreeMap;

/// The `timings` of one response (each field as printed, absent when not).
#[derive(Debug, Clone, Default)]
pub struct Timings {
    /// Every numeric field of the object, by name.
    pub fields: BTreeMap<String, f64>,
}

impl Timings {
    fn get(&self, k: &str) -> Option<f64> {
        self.fields.get(k).copied()
    }
}

/// One saved response.
#[derive(Debug, Clone, Default)]
pub struct Response {
    /// Its line in the file, from 1 (a stream's: the line of its final chunk, or of its error).
    pub line: usize,
    /// The file of a streamed response (each stream is its own file); `None` for a line of the
    /// checked JSON Lines file.
    pub file: Option<String>,
    /// A stream's chunks that carried text (`None` for a whole body).
    pub chunks: Option<u64>,
    /// Where and how a stream was cut before its final chunk.
    pub incomplete: Option<String>,
    /// Whether a stream ended on the model's end-of-generation token (`stop_type` `eos`, or a chat
    /// `finish_reason` `stop`): that token is counted in `predicted_n` but sends no text.
    pub ended_on_eos: bool,
    /// `error`: its code and message (a refused request).
    pub error: Option<(Option<i64>, String)>,
    /// `timings`.
    pub timings: Option<Timings>,
    /// The reply's text (`content`, or the chat message's content).
    pub text: Option<String>,
    /// The prompt tokens the response states beside its timings (`tokens_evaluated`, or
    /// `usage.prompt_tokens`), and which field.
    pub prompt_tokens: Option<(f64, &'static str)>,
    /// The reply tokens it states (`tokens_predicted`, or `usage.completion_tokens`).
    pub reply_tokens: Option<(f64, &'static str)>,
    /// Whether it is from llama.cpp's server before its slots (2023, up to about b1400: a
    /// `/completion` body with `generation_settings` and no `slot_id`/`id_slot`), whose timings
    /// are `llama_get_timings`' counters (docs/formats/llama-server.md row S2).
    pub pre_slot: bool,
    /// `truncated`: the server cut the prompt to fit its window (row S8).
    pub truncated: bool,
}

/// The saved responses as the checks read them.
#[derive(Debug, Clone, Default)]
pub struct Responses {
    /// The JSON Lines file of whole bodies (a stream names its own file in its response).
    pub file: String,
    /// Every response, in order.
    pub responses: Vec<Response>,
}

impl Responses {
    /// The responses with timings, each with them.
    fn timed(&self) -> impl Iterator<Item = (&Response, &Timings)> {
        self.responses
            .iter()
            .filter_map(|r| r.timings.as_ref().map(|t| (r, t)))
    }
}

/// Every llama-server check, in the order they run.
pub const CHECKS: &[Row<Responses>] = &[
    row(speed::RECOMPUTE_MISMATCH.about(), recompute),
    row(speed::TOKEN_SOURCE.about(), token_source),
    row(speed::CACHED_TOKENS.about(), cached),
    row(FAILED_REQUESTS, failed),
    row(FAILED_AS_ZERO, empty),
    row(RUN_INCOMPLETE, incomplete),
];

/// `speed.recompute-mismatch`: each timed response's prompt and generation rates from its
/// counts and times (docs/formats/llama-server.md rows S1, S5, S5b).
fn recompute(x: &Responses, emit: &mut Emit) -> Ran {
    let mut compared = false;
    for (r, t) in x.timed() {
        compared |= prompt_rates(&x.file, r, t, emit);
        compared |= predicted_rates(&x.file, r, t, emit);
    }
    compared.then_some(())
}

/// `speed.token-source`: each timed response's stated counts against its timings, and a
/// stream's chunks of text against the tokens it generated (rows S3, S4, S7); the pre-slot
/// server's counters once for the file (row S2).
fn token_source(x: &Responses, emit: &mut Emit) -> Ran {
    let mut ran = false;
    let (mut counters, mut files) = (Vec::new(), Vec::new());
    for (r, t) in x.timed() {
        ran = true;
        if r.pre_slot {
            let said = pre_slot_counts(r, t);
            if said.is_some() && !files.contains(&file_of(&x.file, r)) {
                files.push(file_of(&x.file, r));
            }
            counters.extend(said);
        } else {
            token_counts(&x.file, r, t, emit);
        }
        chunks(&x.file, r, t, emit);
    }
    if let Some(first) = counters.first() {
        emit.finding(format!(
            "llama.cpp's server before its slots (2023: no id_slot in its responses) prints llama_get_timings' counters, not the request's tokens: prompt_n is the prompt tokens decoded in batches and predicted_n the tokens decoded one at a time (the sampled tokens fed back, not the first, and a prompt token decoded alone), each at least 1; in {} of {} responses they differ from the tokens it states ({first}), so a rate over the stated counts is not the server's",
            counters.len(),
            x.timed().count()
        ))
        .file(files.join(", "))
        .data(json!({"responses": counters}));
    }
    ran.then_some(())
}

/// A pre-slot response's stated counts against its counters, when they differ (row S2).
fn pre_slot_counts(r: &Response, t: &Timings) -> Option<String> {
    let pairs = [
        (r.prompt_tokens, t.get("prompt_n"), "prompt_n"),
        (r.reply_tokens, t.get("predicted_n"), "predicted_n"),
    ];
    let diff: Vec<String> = pairs
        .iter()
        .filter_map(|(stated, timed, k)| {
            let ((n, field), c) = ((*stated)?, (*timed)?);
            (n != c).then(|| format!("{field} {n}, {k} {c}"))
        })
        .collect();
    (!diff.is_empty()).then(|| format!("{}: {}", named(r), diff.join(", ")))
}

fn at(line: usize, field: &str) -> String {
    format!("line {line} /timings/{field}")
}

/// The file a response is in: its own (a stream) or the checked one.
fn file_of<'a>(file: &'a str, r: &'a Response) -> &'a str {
    r.file.as_deref().unwrap_or(file)
}

/// A response as messages name it: `line N`, or `FILE line N` for a stream.
fn named(r: &Response) -> String {
    match &r.file {
        Some(f) => format!("{f} line {}", r.line),
        None => format!("line {}", r.line),
    }
}

/// The prefix of a response's recomputed keys: `llama-server.lineN` or `llama-server.FILE.lineN`.
fn key(r: &Response, k: &str) -> String {
    match &r.file {
        Some(f) => format!("llama-server.{f}.line{}.{k}", r.line),
        None => format!("llama-server.line{}.{k}", r.line),
    }
}

/// `prompt_per_token_ms` and `prompt_per_second` from `prompt_n` and `prompt_ms`. Returns
/// whether it compared any.
fn prompt_rates(file: &str, r: &Response, t: &Timings, emit: &mut Emit) -> bool {
    let (Some(n), Some(ms)) = (t.get("prompt_n"), t.get("prompt_ms")) else {
        return false;
    };
    let mut compared = false;
    let per_token = if n > 0.0 { ms / n } else { 0.0 };
    let per_second = if ms > 0.0 { 1e3 * n / ms } else { 0.0 };
    for (k, exact) in [
        ("prompt_per_token_ms", per_token),
        ("prompt_per_second", per_second),
    ] {
        if let Some(shown) = t.get(k) {
            let at = at(r.line, k);
            compare(emit, (file_of(file, r), &at), &key(r, k), exact, shown);
            compared = true;
        }
    }
    compared
}

/// `predicted_per_token_ms` and `predicted_per_second` from `predicted_n` and `predicted_ms`,
/// over the tokens or over the decode steps (n - 1). Returns whether the response has them.
fn predicted_rates(file: &str, r: &Response, t: &Timings, emit: &mut Emit) -> bool {
    let (Some(n), Some(ms)) = (t.get("predicted_n"), t.get("predicted_ms")) else {
        return false;
    };
    for k in ["predicted_per_token_ms", "predicted_per_second"] {
        let Some(shown) = t.get(k) else {
            continue;
        };
        let rate = |count: f64| match (k, count > 0.0, ms > 0.0) {
            ("predicted_per_token_ms", true, _) => ms / count,
            ("predicted_per_second", _, true) => 1e3 * count / ms,
            _ => 0.0,
        };
        let (over_tokens, over_steps) = (rate(n), rate((n - 1.0).max(0.0)));
        let (exact, what) = if (over_steps - shown).abs() < (over_tokens - shown).abs() {
            (over_steps, "steps")
        } else {
            (over_tokens, "tokens")
        };
        record(emit, &format!("{} (over {what})", key(r, k)), exact, shown);
        if super::close(exact, shown) {
            continue;
        }
        emit.finding(format!("{k} of {} is printed as {shown} but predicted_n {n} and predicted_ms {ms} give {over_tokens} (over the tokens) or {over_steps} (over the decode steps, n - 1)", named(r)))
            .at(file_of(file, r), at(r.line, k))
            .data(json!({"printed": shown, "over_tokens": over_tokens, "over_steps": over_steps}));
    }
    true
}

/// The prompt and reply tokens a response states beside its timings (`tokens_evaluated`/
/// `usage.prompt_tokens` = prompt_n + cache_n, `tokens_predicted`/`usage.completion_tokens` =
/// predicted_n); a figure over one count is not over the other. A server without `cache_n`
/// (before about b6000) counts in prompt_n only the tokens it computed, the cached rest being in
/// the stated count alone (row S3): only a stated count below prompt_n is wrong there.
fn token_counts(file: &str, r: &Response, t: &Timings, emit: &mut Emit) {
    let has_cache_n = t.get("cache_n").is_some();
    let prompt = t
        .get("prompt_n")
        .map(|p| p + t.get("cache_n").unwrap_or(0.0));
    let pairs = [
        (r.prompt_tokens, prompt, "prompt_n + cache_n"),
        (r.reply_tokens, t.get("predicted_n"), "predicted_n"),
    ];
    for (i, (stated, timed, what)) in pairs.into_iter().enumerate() {
        let (Some((stated, field)), Some(timed)) = (stated, timed) else {
            continue;
        };
        let cached_rest = i == 0 && !has_cache_n && stated > timed;
        if stated != timed && !cached_rest {
            emit.finding(
                format!("{}: {field} is {stated} but the timings count {timed} ({what}): a rate over one is not over the other", named(r)),
            )
            .at(file_of(file, r), format!("line {}", r.line))
            .data(json!({"stated": stated, "timings": timed}));
        }
    }
}

/// `speed.cached-tokens`, as a warning (row S3): responses whose prompt was partly taken from
/// the slot's cache: llama-server counts in `prompt_n`, `prompt_ms` and `prompt_per_second` only
/// the tokens it computed, so its figures are right for those, and are no prefill of the whole
/// prompt. The cached tokens are `cache_n` (b6000 on), or, before it, the stated prompt tokens
/// beyond `prompt_n`.
fn cached(x: &Responses, emit: &mut Emit) -> Ran {
    let file = x.file.as_str();
    for (r, t) in x.timed().filter(|(r, _)| !r.pre_slot) {
        let computed = t.get("prompt_n").unwrap_or(0.0);
        let (cached, field) = match (t.get("cache_n"), r.prompt_tokens) {
            (Some(c), _) => (c, "cache_n"),
            (None, Some((stated, k))) if stated > computed => (stated - computed, k),
            _ => continue,
        };
        if cached <= 0.0 {
            continue;
        }
        let how = if field == "cache_n" {
            "cache_n".to_string()
        } else {
            format!("{field} less prompt_n: this server prints no cache_n")
        };
        emit.warning(format!(
            "{}: {cached} of the prompt's {} tokens came from the slot's cache ({how}); llama-server counts only the {computed} it computed in prompt_n, prompt_ms and prompt_per_second, so they are no prefill of the whole prompt, and a prefill figure over all {} tokens counts {cached} that were not computed",
            named(r),
            cached + computed,
            cached + computed
        ))
        .at(file_of(file, r), at(r.line, if field == "cache_n" { "cache_n" } else { "prompt_n" }))
        .data(json!({"cached": cached, "prompt_n": computed, "from": field}));
    }
    Some(())
}

/// `import.failed-requests` (row S8): responses that are errors (a refused request, or a stream that ended
/// on an `error` event, perhaps after some text): no timings, no finished reply.
fn failed(x: &Responses, emit: &mut Emit) -> Ran {
    truncated(x, emit);
    let (file, responses) = (x.file.as_str(), &x.responses);
    let failed: Vec<&Response> = responses.iter().filter(|r| r.error.is_some()).collect();
    if failed.is_empty() {
        return Some(());
    }
    let why: Vec<String> = failed
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| (r, e)))
        .map(|(r, (c, m))| {
            let mut w = format!("{} {}", c.map_or("-".into(), |c| c.to_string()), m);
            // A stream that failed after sending text: a client that kept those chunks counted
            // tokens of a reply that never finished.
            if let Some(n) = r.chunks.filter(|n| *n > 0) {
                w.push_str(&format!(", after {n} chunks of text"));
            }
            r.file.as_ref().map_or(w.clone(), |f| format!("{f}: {w}"))
        })
        .collect();
    let lines: Vec<String> = failed.iter().map(|r| r.line.to_string()).collect();
    let mut files: Vec<&str> = failed.iter().map(|r| file_of(file, r)).collect();
    files.dedup();
    emit.finding(format!(
        "{} of {} responses are errors ({}); a figure over the responses' timings describes only the other {}",
        failed.len(),
        responses.len(),
        why.join("; "),
        responses.len() - failed.len()
    ))
    .file(files.join(", "))
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"failed": failed.len(), "total": responses.len()}));
    Some(())
}

/// Responses whose prompt the server cut to fit its window (`truncated`, row S8): the pre-slot
/// server and slot servers before about b4000 kept the first `n_keep` tokens and the end of the
/// prompt instead of refusing it, and `tokens_evaluated` still counts the whole prompt.
fn truncated(x: &Responses, emit: &mut Emit) {
    for r in x.responses.iter().filter(|r| r.truncated) {
        let stated = r.prompt_tokens.map_or("?".into(), |(n, _)| n.to_string());
        emit.finding(format!(
            "{}: the server truncated the prompt (truncated: true) to fit its window instead of refusing it: the reply answers a prompt cut from {stated} tokens, not the one sent",
            named(r)
        ))
        .at(file_of(&x.file, r), format!("line {}", r.line));
    }
}

/// `import.failed-as-zero` (as a warning, row S6): a response with timings but no reply text or no
/// decode step (one token or none): llama-server's generation rate is then no speed (b7000 on:
/// over `predicted_n - 1` steps, printed 0; before: `predicted_n` over the time from the first
/// token to the end, which holds no decode; the pre-slot server: at least one counted eval), and
/// an average over responses that keeps it is pulled by a request that generated nothing.
fn empty(x: &Responses, emit: &mut Emit) -> Ran {
    let file = x.file.as_str();
    for (r, t) in x.timed().filter(|(r, _)| r.error.is_none()) {
        let n = t.get("predicted_n").unwrap_or(0.0);
        // The pre-slot server's predicted_n is no token count (row S2): its stated one is.
        let tokens = match (r.pre_slot, r.reply_tokens) {
            (true, Some((k, _))) => k,
            _ => n,
        };
        let empty = r.text.as_deref().is_some_and(|x| x.trim().is_empty());
        if !empty && tokens > 1.0 {
            continue;
        }
        let rate = t
            .get("predicted_per_second")
            .map_or("null".to_string(), |v| v.to_string());
        emit.warning(format!(
            "{}: {} ({tokens} token{}): llama-server's predicted_per_second ({rate}) is then no generation speed (there is no decode step to time), and an average over the responses must leave it out",
            named(r),
            if empty { "an empty reply" } else { "no decode step" },
            if tokens == 1.0 { "" } else { "s" },
        ))
        .at(file_of(file, r), at(r.line, "predicted_n"));
    }
    Some(())
}

/// Streams only (row S7): the chunks that carried text against the tokens the server generated
/// (`predicted_n`; the stated reply tokens for the pre-slot server). llama-server sends a token whose text ends inside
/// a UTF-8 character with the next one and its end-of-generation token with none, so a stream may
/// carry fewer chunks than tokens by up to those; more chunks, or fewer beyond them, are named (a
/// tool that counts chunks as tokens counts another number).
fn chunks(file: &str, r: &Response, t: &Timings, emit: &mut Emit) {
    // predicted_n is every generated token for the slot servers (row S4), not for the pre-slot one.
    let stated = r.reply_tokens.map(|(n, _)| n);
    let tokens = if r.pre_slot {
        stated.or(t.get("predicted_n"))
    } else {
        t.get("predicted_n").or(stated)
    };
    let (Some(chunks), Some(n)) = (r.chunks, tokens) else {
        return;
    };
    let eos = u64::from(r.ended_on_eos) as f64;
    let held = r.text.as_deref().map_or(0, held_back) as f64;
    let short = n - chunks as f64;
    if short >= 0.0 && short <= eos + held {
        return;
    }
    emit.finding(format!(
        "{}: the stream sent {chunks} chunks of text but the server generated {n} token(s): llama-server sends one chunk a token, except a token ending inside a UTF-8 character (sent with the next: {held:.0} possible here) and the end-of-generation token (none), so the chunks are not the stream's tokens as sent; a tool that counts chunks as tokens counts {chunks}",
        named(r)
    ))
    .at(file_of(file, r), at(r.line, "predicted_n"))
    .data(json!({"chunks": chunks, "tokens": n, "held_back_at_most": held}));
}

/// The most tokens a text's multi-byte characters can have held back (one per byte past the first).
fn held_back(text: &str) -> usize {
    text.chars().map(|c| c.len_utf8() - 1).sum()
}

/// `import.run-incomplete`, streams only (row S7: a stream ends on its chunk with timings): a stream cut before its final chunk (no timings, no
/// stop): whatever it generated is not timed, and a count over it is short.
fn incomplete(x: &Responses, emit: &mut Emit) -> Ran {
    let (file, responses) = (x.file.as_str(), &x.responses);
    if responses.iter().all(|r| r.chunks.is_none()) {
        return None;
    }
    for r in responses {
        let Some(how) = &r.incomplete else {
            continue;
        };
        emit.finding(format!(
            "{}: the stream is cut: {how}; what it sent has no timings, and where the request ended is not known",
            file_of(file, r)
        ))
        .at(file_of(file, r), format!("line {}", r.line));
    }
    Some(())
}
