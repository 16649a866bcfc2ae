//! llama.cpp server responses (`/completion`, `/v1/chat/completions`) saved one a line, read
//! into `rigaudit_audit::imported::llama_server`'s records for their `timings`.
//!
//! Definitions (in full in `audit/src/imported/llama_server.rs`):
//! - units: ms, tokens, tokens per second;
//! - TTFT: none; `prompt_ms` is the server's prompt processing time;
//! - token counts: the server's (`prompt_n` computed, `cache_n` from the cache, `predicted_n`);
//! - aggregates: none across responses; each response's rates are over its own counts.
//!
//! Streamed responses (saved server-sent events, one stream a file) are read by
//! [`super::llama_server_stream`], whose top defines that input.

use super::llama_server_body::{response, series};
use super::{Imported, Source};
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::imported::llama_server::{Response, Responses, CHECKS};

/// Whether a source is saved llama-server responses or a saved stream (by content).
pub fn looks_like(s: &Source) -> bool {
    (super::holds(&s.bytes, "\"timings\"") && super::holds(&s.bytes, "\"predicted_per_second\""))
        || super::llama_server_stream::looks_like(s)
}

/// Reads the responses file (one; more are refused) and runs the checks; saved streams, when
/// the sources hold any, are read instead ([`super::llama_server_stream`]).
pub fn import(sources: &mut [Source]) -> Result<Imported, Fatal> {
    if sources.iter().any(super::llama_server_stream::is_stream) {
        return super::llama_server_stream::import(sources);
    }
    let i = super::take(sources, looks_like, "responses", "no saved llama-server responses among them (expected JSON Lines, one response body a line, with 'timings')")?;
    let src = &sources[i];
    let responses = super::json_lines(src, response)?;
    if responses.is_empty() {
        return Err(fatal(format!("{}: no response in it", src.shown)));
    }
    let text = |p: &str| responses.iter().find_map(|r| super::string_at(&r.1, p));
    let mut imp = Imported {
        tool_version: text("/system_fingerprint").map(|b| format!("llama-server {b}")),
        model: text("/model").map(|m| m.rsplit(['/', '\\']).next().unwrap_or(&m).to_string()),
        ..Default::default()
    };
    let responses: Vec<Response> = responses.into_iter().map(|r| r.0).collect();
    let timed = responses.iter().filter(|r| r.timings.is_some()).count();
    imp.taken.push(format!(
        "{} responses of {} ({timed} with timings, {} errors): each one's prompt and generation counts, times and rates, its cached prompt tokens and the token counts it states beside them",
        responses.len(),
        src.name,
        responses.iter().filter(|r| r.error.is_some()).count()
    ));
    imp.not_taken.push("a client's TTFT and end-to-end time: the server times its own slot, not the network or the queue before it".into());
    imp.not_taken.push("which llama-server wrote them: a /completion response names no build (a chat response's system_fingerprint does), so both definitions of the generation rate (over the tokens, over the decode steps) are accepted".into());
    imp.not_taken.push(
        "the server's settings (window, slots, threads): the responses do not record them".into(),
    );
    imp.note_unread(
        sources,
        "one file of llama-server responses is read at a time; not read",
    );
    let responses = Responses {
        file: sources[i].name.clone(),
        responses,
    };
    imp.found = rigaudit_audit::imported::run(CHECKS, &responses);
    imp.series = series(&responses.responses);
    Ok(imp)
}

/// The importer of this tool's files ([`super::importer::Importer`]).
pub struct Reader;

impl super::importer::Importer for Reader {
    fn format(&self) -> super::Format {
        super::Format::LlamaServer
    }

    fn looks_like(&self, src: &Source) -> bool {
        looks_like(src)
    }

    fn writes_name(&self, n: &str) -> bool {
        n.ends_with(".sse")
    }

    fn import(
        &self,
        sources: &mut [Source],
        _unread: &[crate::fatal::Unreadable],
    ) -> Result<super::Imported, crate::fatal::Fatal> {
        import(sources)
    }
}
