//! `setup.*`: the recorded command, the start line, `/v1/models`, the contracts and the card
//! checked against each other, and the dates put in order.

mod build;
mod ranks;
pub(crate) mod refusals;

use crate::bundle::{Bundle, Loaded, Run};
use crate::check::{Check, Emit, Ran};
use crate::records::card::{Card, Nccl, RankCommand};
use crate::report::Severity;
use crate::startline;
pub use crate::startline::flag;
use chrono::{DateTime, FixedOffset};
use serde_json::json;
use std::collections::BTreeMap;

/// `setup.*` checks, in the order they run.
pub const CHECKS: &[Check<Run>] = &[
    Check {
        id: "setup.slots-mismatch",
        severity: Severity::Error,
        doc: "Streams at once differ between command, start line, contract and page.",
        run: slots_mismatch,
    },
    Check {
        id: "setup.window-mismatch",
        severity: Severity::Error,
        doc: "The window differs between command, start line, /v1/models, contracts and fit result.",
        run: window_mismatch,
    },
    Check {
        id: "setup.model-mismatch",
        severity: Severity::Error,
        doc: "The served model name differs between command, /v1/models and the contract.",
        run: model_mismatch,
    },
    Check {
        id: "setup.sampling-mismatch",
        severity: Severity::Error,
        doc: "Sampling differs between the card, the start line and what the contracts say was sent.",
        run: sampling_mismatch,
    },
    Check {
        id: "setup.version-mismatch",
        severity: Severity::Error,
        doc: "Engine or NCCL version differs between the card and the start line.",
        run: version_mismatch,
    },
    Check {
        id: "setup.ranks-mismatch",
        severity: Severity::Error,
        doc: "Ranks, boxes and per-rank commands disagree, or ranks got different arguments.",
        run: ranks_mismatch,
    },
    Check {
        id: "setup.date-order",
        severity: Severity::Error,
        doc: "A package published after the measurement, a run that ends before it starts, or tests dated out of order.",
        run: date_order,
    },
    Check {
        id: "setup.revision-marker",
        severity: Severity::Warning,
        doc: "The checkpoint's revision file was written by hand or names another revision than the folder holds.",
        run: revision_marker,
    },
    Check {
        id: "setup.citation-commit",
        severity: Severity::Warning,
        doc: "A cited line range is from another commit than the one that ran.",
        run: citation_commit,
    },
];

const SLOT_FLAGS: &[&str] = &[
    "--parallel",
    "-np",
    "--n-parallel",
    "--max-num-seqs",
    "--slots",
];
const SLOT_ENV: &[&str] = &["PARALLEL", "SLOTS"];
const WINDOW_FLAGS: &[&str] = &[
    "--context",
    "--ctx-size",
    "-c",
    "--max-model-len",
    "--context-length",
];
const WINDOW_ENV: &[&str] = &["CONTEXT", "CTX"];
const NAME_FLAGS: &[&str] = &["--name", "--alias", "-a", "--served-model-name"];

fn command_value(cmd: &RankCommand, flags: &[&str], env: &[&str]) -> Option<String> {
    flag(&cmd.argv, flags)
        .map(String::from)
        .or_else(|| env.iter().find_map(|e| cmd.env.get(*e).cloned()))
}

fn parse_time(s: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(s).ok()
}

fn rank0(card: &Card) -> Option<&RankCommand> {
    card.commands
        .iter()
        .find(|c| c.rank == 0)
        .or(card.commands.first())
}

/// One source of a number: who states it, where (`file#pointer`) and the value.
type Source = (String, String, u64);

/// Reports when the sources that state one number disagree.
fn agree(e: &mut Emit, what: &str, sources: &[Source]) {
    let Some((_, _, first)) = sources.first() else {
        return;
    };
    if sources.iter().all(|(_, _, v)| v == first) {
        return;
    }
    let list = sources
        .iter()
        .map(|(who, _, v)| format!("{who}: {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (file, pointer) = sources
        .iter()
        .find(|(_, _, v)| v != first)
        .map(|(_, place, _)| {
            place
                .split_once('#')
                .map_or((place.clone(), String::new()), |(f, p)| {
                    (f.to_string(), p.to_string())
                })
        })
        .unwrap_or_default();
    e.finding(format!("{what} disagree: {list}"))
        .at(file, pointer)
        .data(json!(sources
            .iter()
            .map(|(w, _, v)| json!({"source": w, "value": v}))
            .collect::<Vec<_>>()));
}

/// Rank 0's command and the card's path, when there is a card.
fn command(b: &Bundle) -> (Option<&RankCommand>, String) {
    let card = b.card.as_ref();
    (
        card.and_then(|c| rank0(&c.value)),
        card.map_or("card.json".to_string(), |c| c.path.clone()),
    )
}

/// A number the rank 0 command states through one of these flags or environment variables.
fn command_source(b: &Bundle, flags: &[&str], env: &[&str]) -> Option<Source> {
    let (cmd, card_path) = command(b);
    let v = command_value(cmd?, flags, env)?.parse().ok()?;
    Some((
        "rank 0 command".into(),
        format!("{card_path}#/commands/0"),
        v,
    ))
}

/// What the recorded start lines state (nothing without a speed result).
fn start_info(b: &Bundle) -> startline::StartInfo {
    b.speed_result
        .as_ref()
        .map(|r| startline::parse(&r.value.server.start_lines))
        .unwrap_or_default()
}

/// What the recorded start lines state (`pick` chooses the number), as a source.
fn start_line_source(b: &Bundle, pick: fn(&startline::StartInfo) -> Option<u64>) -> Option<Source> {
    let r = b.speed_result.as_ref()?;
    let v = pick(&startline::parse(&r.value.server.start_lines))?;
    let at = format!("{}#/server/start_lines", r.path);
    Some(("start line".into(), at, v))
}

/// Runs `agree` when at least two sources state the number.
fn agree_if_two(e: &mut Emit, what: &str, sources: &[Source]) -> Ran {
    (sources.len() >= 2).then(|| agree(e, what, sources))
}

fn slots_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let mut slots: Vec<Source> = Vec::new();
    slots.extend(command_source(b, SLOT_FLAGS, SLOT_ENV));
    slots.extend(start_line_source(b, |s| s.slots));
    if let Some(c) = &b.speed_contract {
        slots.push((
            "speed contract".into(),
            format!("{}#/server/slots", c.path),
            c.value.server.slots as u64,
        ));
    }
    if let Some(v) = b
        .manifest
        .page
        .speed
        .get("slots")
        .and_then(|s| s.parse().ok())
    {
        slots.push(("page".into(), "bundle.json#/page/speed/slots".into(), v));
    }
    agree_if_two(e, "Streams at once", &slots)
}

/// `setup.window-mismatch`: the window of every source, and the windows refusals name
/// (consistency/window.rs).
fn window_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let sources = window_sources_disagree(b, e);
    let refusals = refusals::check_refusal_windows(b, e);
    sources.or(refusals)
}

/// The window as the command, start line, /v1/models, contracts and fit result state it.
fn window_sources_disagree(b: &Bundle, e: &mut Emit) -> Ran {
    let mut win: Vec<Source> = Vec::new();
    win.extend(command_source(b, WINDOW_FLAGS, WINDOW_ENV));
    win.extend(start_line_source(b, |s| s.window));
    if let Some(r) = &b.speed_result {
        if let Some(v) = startline::models_window(&r.value.server.models) {
            win.push(("/v1/models".into(), format!("{}#/server/models", r.path), v));
        }
    }
    if let Some(c) = &b.speed_contract {
        win.push((
            "speed contract".into(),
            format!("{}#/server/window", c.path),
            c.value.server.window,
        ));
    }
    if let Some(f) = &b.fit {
        win.push((
            "fit result".into(),
            format!("{}#/window", f.path),
            f.value.window,
        ));
    }
    agree_if_two(e, "Window sizes", &win)
}

fn model_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let r = b.speed_result.as_ref()?;
    let ids = startline::models_ids(&r.value.server.models);
    let mut names: Vec<(String, String)> = Vec::new();
    if let Some(n) = command(b).0.and_then(|c| flag(&c.argv, NAME_FLAGS)) {
        names.push(("rank 0 command".into(), n.to_string()));
    }
    if let Some(c) = &b.speed_contract {
        names.push(("speed contract".into(), c.value.model.clone()));
    }
    if ids.is_empty() || names.is_empty() {
        return None;
    }
    for (who, n) in names.into_iter().filter(|(_, n)| !ids.contains(n)) {
        e.finding(format!(
            "the {who} names the model '{n}', but /v1/models lists {ids:?}"
        ))
        .at(&r.path, "/server/models");
    }
    Some(())
}

fn sampling_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let card = b.card.as_ref()?;
    let cv = &card.value;
    let start = start_info(b);
    for (k, v) in &start.sampling {
        match cv.sampling.defaults.get(k) {
            Some(d) if (d - v).abs() > 1e-9 => {
                e.finding(format!(
                    "the card gives the server's default {k} as {d}, but the start line says {v}"
                ))
                .at(&card.path, format!("/sampling/defaults/{k}"));
            }
            None => {
                e.warning(format!(
                    "the start line sets a default {k} of {v} that the card does not record"
                ))
                .at(&card.path, "/sampling/defaults");
            }
            _ => {}
        }
    }
    if cv.sampling.sent.is_empty() {
        return Some(());
    }
    let mut sent: Vec<(&str, &BTreeMap<String, f64>)> = Vec::new();
    if let Some(c) = &b.speed_contract {
        sent.push((&c.path, &c.value.sampling));
    }
    for c in b.quality.iter().filter_map(|t| t.contract.as_ref()) {
        if !c.value.sampling.is_empty() && c.value.tool.is_none() {
            sent.push((&c.path, &c.value.sampling));
        }
    }
    for (path, s) in sent.into_iter().filter(|(_, s)| **s != cv.sampling.sent) {
        e.finding(format!(
            "{path} sends sampling {s:?}, but the card says the tool sends {:?}",
            cv.sampling.sent
        ))
        .at(path, "/sampling");
    }
    Some(())
}

/// `setup.version-mismatch`: versions between card and start line, and the engine build against
/// the card's commit (consistency/provenance.rs).
fn version_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let versions = versions_disagree(b, e);
    let build = build::check_engine_build(b, e);
    versions.or(build)
}

/// Engine and NCCL versions between the card and the start line.
fn versions_disagree(b: &Bundle, e: &mut Emit) -> Ran {
    let card = b.card.as_ref()?;
    let cv = &card.value;
    let start = start_info(b);
    let engine = cv
        .engine
        .version
        .as_ref()
        .zip(start.engine_version.as_ref());
    if engine.is_none() && cv.nccl.is_none() {
        return None;
    }
    if let Some((v, s)) = engine.filter(|(v, s)| v.trim_start_matches('v') != *s) {
        e.finding(format!(
            "the card says {} {v}, but the start line reports version {s}",
            cv.engine.name
        ))
        .at(&card.path, "/engine/version");
    }
    if let Some(n) = &cv.nccl {
        nccl_version(card, n, start.nccl.as_deref(), e);
    }
    Some(())
}

/// The card's NCCL version against the start line's and the file name it records.
fn nccl_version(card: &Loaded<Card>, n: &Nccl, start: Option<&str>, e: &mut Emit) {
    if let Some(s) = start.filter(|s| *s != n.version) {
        e.finding(format!(
            "the card says NCCL {}, but the start line reports NCCL {s}",
            n.version
        ))
        .at(&card.path, "/nccl/version");
    }
    let digits: String = n
        .file
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    if n.file.contains("so.")
        && digits.trim_matches('.').matches('.').count() >= 2
        && !n.file.ends_with(&n.version)
    {
        e.finding(format!(
            "the card's NCCL file {} is not the version {} it records",
            n.file, n.version
        ))
        .at(&card.path, "/nccl/file");
    }
}

fn ranks_mismatch(b: &Bundle, e: &mut Emit) -> Ran {
    let card = b.card.as_ref()?;
    let cv = &card.value;
    let mut problems = Vec::new();
    if cv.commands.len() as u32 != cv.ranks {
        problems.push(format!(
            "{} ranks but {} commands",
            cv.ranks,
            cv.commands.len()
        ));
    }
    if cv.hardware.boxes.len() as u32 != cv.ranks && cv.hardware.boxes.len() > 1 {
        problems.push(format!(
            "{} ranks on {} boxes",
            cv.ranks,
            cv.hardware.boxes.len()
        ));
    }
    if let Some(first) = cv.commands.first() {
        for c in cv.commands[1..].iter().filter(|c| c.argv != first.argv) {
            problems.push(format!(
                "rank {} has other arguments than rank {}",
                c.rank, first.rank
            ));
        }
    }
    if let Some(n) = &cv.nccl {
        if cv.ranks > 1 && !n.per_box.is_empty() && n.per_box.len() as u32 != cv.ranks {
            problems.push(format!(
                "NCCL digests for {} boxes, {} ranks",
                n.per_box.len(),
                cv.ranks
            ));
        }
    }
    problems.extend(ranks::identity_problems(&cv.commands, cv.ranks));
    if !problems.is_empty() {
        e.finding(format!(
            "the card's ranks disagree: {}",
            problems.join("; ")
        ))
        .at(&card.path, "/commands");
    }
    Some(())
}

fn revision_marker(b: &Bundle, e: &mut Emit) -> Ran {
    let card = b.card.as_ref()?;
    let cv = &card.value;
    let rf = cv.checkpoint.revision_file.as_ref()?;
    let held = cv
        .checkpoint
        .snapshot
        .as_deref()
        .unwrap_or(&cv.checkpoint.revision);
    let short = |a: &str, b: &str| a.starts_with(b) || b.starts_with(a);
    if !short(rf.content.trim(), held) {
        e.finding(format!(
            "the revision file {} names {}, but the folder holds snapshot {held}{}; that its weights equal the pin is a claim to rehash",
            rf.path,
            rf.content.trim(),
            if rf.written_by == "hand" { " (the file was written by hand)" } else { "" }
        ))
        .at(&card.path, "/checkpoint/revision_file");
    } else if rf.written_by == "hand" {
        e.finding(format!(
            "the revision file {} was written by hand, not by the download",
            rf.path
        ))
        .at(&card.path, "/checkpoint/revision_file/written_by");
    }
    Some(())
}

fn citation_commit(b: &Bundle, e: &mut Emit) -> Ran {
    let card = b.card.as_ref()?;
    let cv = &card.value;
    if cv.citations.is_empty() {
        return None;
    }
    let mut ran: Vec<(&str, Vec<&str>)> = Vec::new();
    if let (Some(repo), Some(commit)) = (&cv.engine.repo, &cv.engine.commit) {
        ran.push((repo.as_str(), vec![commit.as_str()]));
    }
    if let Some(r) = &cv.recipe {
        let mut v = vec![r.commit.as_str()];
        v.extend(r.same_tree.iter().map(String::as_str));
        ran.push((r.repo.as_str(), v));
    }
    for (i, c) in cv.citations.iter().enumerate() {
        let Some((_, commits)) = ran
            .iter()
            .find(|(repo, _)| repo.eq_ignore_ascii_case(&c.repo))
        else {
            continue;
        };
        let same = commits
            .iter()
            .any(|k| k.starts_with(&c.commit) || c.commit.starts_with(k));
        if !same {
            e.finding(format!(
                "{}:{} (cited for {}) are line numbers of commit {}, but the setup ran {}",
                c.path,
                c.lines,
                c.supports,
                c.commit,
                commits.join(" = ")
            ))
            .at(&card.path, format!("/citations/{i}"));
        }
    }
    Some(())
}

fn date_order(b: &Bundle, e: &mut Emit) -> Ran {
    let card = b.card.as_ref()?;
    let cv = &card.value;
    let measured = parse_time(&cv.measured);
    if measured.is_none() {
        e.finding(format!(
            "the card's measured time '{}' is not RFC 3339",
            cv.measured
        ))
        .at(&card.path, "/measured");
    }
    let published = cv.engine.published.as_deref().and_then(parse_time);
    if let (Some(p), Some(m)) = (published, measured) {
        if p > m {
            e.finding(format!(
                "the engine package was published {p}, after the measurement began {m}"
            ))
            .at(&card.path, "/engine/published");
        }
    }
    for span in spans(b) {
        span_order(&span, published, measured, e);
    }
    session_order(b, e);
    Some(())
}

/// A measured span: its file, what it is, its start and end as written.
struct Span {
    file: String,
    what: String,
    started: String,
    ended: Option<String>,
}

/// The speed run and the quality tests that record when they ran.
fn spans(b: &Bundle) -> Vec<Span> {
    let mut spans = Vec::new();
    if let Some(r) = &b.speed_result {
        spans.push(Span {
            file: r.path.clone(),
            what: "speed".into(),
            started: r.value.started.clone(),
            ended: Some(r.value.ended.clone()),
        });
    }
    for t in &b.quality {
        if let Some(s) = &t.summary {
            if let Some(st) = &s.value.started {
                spans.push(Span {
                    file: s.path.clone(),
                    what: t.test.clone(),
                    started: st.clone(),
                    ended: s.value.ended.clone(),
                });
            }
        }
    }
    spans
}

type Time = DateTime<FixedOffset>;

/// A span's dates: readable, in order, and not before the package or the measurement.
fn span_order(sp: &Span, published: Option<Time>, measured: Option<Time>, e: &mut Emit) {
    let (file, what) = (&sp.file, &sp.what);
    let Some(s) = parse_time(&sp.started) else {
        e.finding(format!("{what}: start '{}' is not RFC 3339", sp.started))
            .at(file, "/started");
        return;
    };
    match sp.ended.as_deref().map(parse_time) {
        Some(None) => {
            e.finding(format!(
                "{what}: end '{}' is not RFC 3339",
                sp.ended.clone().unwrap_or_default()
            ))
            .at(file, "/ended");
        }
        Some(Some(end)) if end < s => {
            e.finding(format!("{what} ends ({end}) before it starts ({s})"))
                .at(file, "/ended");
        }
        _ => {}
    }
    if let Some(p) = published.filter(|p| s < *p) {
        e.finding(format!(
            "{what} started {s}, before the engine package was published {p}"
        ))
        .at(file, "/started");
    }
    if let Some(m) = measured.filter(|m| s < *m) {
        e.finding(format!(
            "{what} started {s}, before the card's measurement began {m}"
        ))
        .at(file, "/started");
    }
}

/// Sessions in the order the page gives.
fn session_order(b: &Bundle, e: &mut Emit) {
    let mut prev: Option<(String, Time)> = None;
    for (i, s) in b.manifest.sessions.iter().enumerate() {
        let Some(t) = parse_time(&s.started) else {
            e.finding(format!(
                "session {}: start '{}' is not RFC 3339",
                s.name, s.started
            ))
            .at("bundle.json", format!("/sessions/{i}/started"));
            continue;
        };
        if s.ended
            .as_deref()
            .and_then(parse_time)
            .is_some_and(|end| end < t)
        {
            e.finding(format!("session {} ends before it starts", s.name))
                .at("bundle.json", format!("/sessions/{i}/ended"));
        }
        if let Some((pn, pt)) = prev.as_ref().filter(|(_, pt)| t < *pt) {
            e.finding(format!(
                "session {} is listed after {pn} but dated earlier ({t} < {pt})",
                s.name
            ))
            .at("bundle.json", format!("/sessions/{i}/started"));
        }
        prev = Some((s.name.clone(), t));
    }
}

crate::consistency::across_files! { "setup":
    SESSIONS_OVERLAP: "setup.sessions-overlap", Error, provenance::check_sessions_overlap, "Two measurements on one server overlap in time (a speed run inside a quality run's span).";
    OUTSIDE_SESSION: "setup.outside-session", Error, provenance::check_inside_session, "A result's timestamps lie outside the span of its session in the manifest.";
}

#[cfg(test)]
mod tests;
