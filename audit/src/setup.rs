//! `setup.*`: the recorded command, the start line, `/v1/models`, the contracts and the card
//! checked against each other, and the dates put in order.

use crate::bundle::{Bundle, Out};
use crate::catalogue::Check;
use crate::records::card::{Card, RankCommand};
use crate::report::{Finding, Severity};
use crate::startline;
use chrono::{DateTime, FixedOffset};
use serde_json::json;

/// `setup.*` checks.
pub const CHECKS: &[Check] = &[
    Check {
        id: "setup.slots-mismatch",
        severity: Severity::Error,
        doc: "Streams at once differ between command, start line, contract and page.",
    },
    Check {
        id: "setup.window-mismatch",
        severity: Severity::Error,
        doc: "The window differs between command, start line, /v1/models, contracts and fit result.",
    },
    Check {
        id: "setup.sampling-mismatch",
        severity: Severity::Error,
        doc: "Sampling differs between the card, the start line and what the contracts say was sent.",
    },
    Check {
        id: "setup.version-mismatch",
        severity: Severity::Error,
        doc: "Engine or NCCL version differs between the card and the start line.",
    },
    Check {
        id: "setup.model-mismatch",
        severity: Severity::Error,
        doc: "The served model name differs between command, /v1/models and the contract.",
    },
    Check {
        id: "setup.ranks-mismatch",
        severity: Severity::Error,
        doc: "Ranks, boxes and per-rank commands disagree, or ranks got different arguments.",
    },
    Check {
        id: "setup.date-order",
        severity: Severity::Error,
        doc: "A package published after the measurement, a run that ends before it starts, or tests dated out of order.",
    },
    Check {
        id: "setup.revision-marker",
        severity: Severity::Warning,
        doc: "The checkpoint's revision file was written by hand or names another revision than the folder holds.",
    },
    Check {
        id: "setup.citation-commit",
        severity: Severity::Warning,
        doc: "A cited line range is from another commit than the one that ran.",
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

/// The value of a flag in argv (`--flag V` or `--flag=V`).
pub fn flag<'a>(argv: &'a [String], names: &[&str]) -> Option<&'a str> {
    for (i, a) in argv.iter().enumerate() {
        for n in names {
            if a == n {
                return argv.get(i + 1).map(String::as_str);
            }
            if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
        }
    }
    None
}

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

/// Reports when the sources that state one number disagree.
fn agree(out: &mut Out, id: &str, what: &str, sources: &[(String, String, u64)]) {
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
    out.push(
        Finding::new(id, Severity::Error, format!("{what} disagree: {list}"))
            .file(file)
            .pointer(pointer)
            .data(json!(sources
                .iter()
                .map(|(w, _, v)| json!({"source": w, "value": v}))
                .collect::<Vec<_>>())),
    );
}

pub(crate) fn check(b: &Bundle, out: &mut Out) {
    let card = b.card.as_ref();
    let sc = b.speed_contract.as_ref();
    let sr = b.speed_result.as_ref();
    let start = sr
        .map(|r| startline::parse(&r.value.server.start_lines))
        .unwrap_or_default();
    let cmd = card.and_then(|c| rank0(&c.value));
    let card_path = card.map_or("card.json".to_string(), |c| c.path.clone());

    // Slots.
    let mut slots: Vec<(String, String, u64)> = Vec::new();
    if let Some(v) = cmd
        .and_then(|c| command_value(c, SLOT_FLAGS, SLOT_ENV))
        .and_then(|v| v.parse().ok())
    {
        slots.push((
            "rank 0 command".into(),
            format!("{card_path}#/commands/0"),
            v,
        ));
    }
    if let (Some(v), Some(r)) = (start.slots, sr) {
        slots.push((
            "start line".into(),
            format!("{}#/server/start_lines", r.path),
            v,
        ));
    }
    if let Some(c) = sc {
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
    if slots.len() >= 2 {
        out.ran("setup.slots-mismatch");
        agree(out, "setup.slots-mismatch", "Streams at once", &slots);
    }

    // Window.
    let mut win: Vec<(String, String, u64)> = Vec::new();
    if let Some(v) = cmd
        .and_then(|c| command_value(c, WINDOW_FLAGS, WINDOW_ENV))
        .and_then(|v| v.parse().ok())
    {
        win.push((
            "rank 0 command".into(),
            format!("{card_path}#/commands/0"),
            v,
        ));
    }
    if let Some(r) = sr {
        if let Some(v) = start.window {
            win.push((
                "start line".into(),
                format!("{}#/server/start_lines", r.path),
                v,
            ));
        }
        if let Some(v) = startline::models_window(&r.value.server.models) {
            win.push(("/v1/models".into(), format!("{}#/server/models", r.path), v));
        }
    }
    if let Some(c) = sc {
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
    if win.len() >= 2 {
        out.ran("setup.window-mismatch");
        agree(out, "setup.window-mismatch", "Window sizes", &win);
    }

    // Model name.
    if let Some(r) = sr {
        let ids = startline::models_ids(&r.value.server.models);
        let mut names: Vec<(String, String)> = Vec::new();
        if let Some(n) = cmd.and_then(|c| flag(&c.argv, NAME_FLAGS)) {
            names.push(("rank 0 command".into(), n.to_string()));
        }
        if let Some(c) = sc {
            names.push(("speed contract".into(), c.value.model.clone()));
        }
        if !ids.is_empty() && !names.is_empty() {
            out.ran("setup.model-mismatch");
            for (who, n) in names {
                if !ids.contains(&n) {
                    out.push(
                        Finding::new(
                            "setup.model-mismatch",
                            Severity::Error,
                            format!(
                                "the {who} names the model '{n}', but /v1/models lists {ids:?}"
                            ),
                        )
                        .file(&r.path)
                        .pointer("/server/models"),
                    );
                }
            }
        }
    }

    let Some(card) = card else { return };
    let cv = &card.value;

    // Sampling.
    out.ran("setup.sampling-mismatch");
    for (k, v) in &start.sampling {
        match cv.sampling.defaults.get(k) {
            Some(d) if (d - v).abs() > 1e-9 => out.push(
                Finding::new(
                    "setup.sampling-mismatch",
                    Severity::Error,
                    format!("the card gives the server's default {k} as {d}, but the start line says {v}"),
                )
                .file(&card.path)
                .pointer(format!("/sampling/defaults/{k}")),
            ),
            None => out.push(
                Finding::new(
                    "setup.sampling-mismatch",
                    Severity::Warning,
                    format!("the start line sets a default {k} of {v} that the card does not record"),
                )
                .file(&card.path)
                .pointer("/sampling/defaults"),
            ),
            _ => {}
        }
    }
    let mut sent: Vec<(String, &std::collections::BTreeMap<String, f64>)> = Vec::new();
    if let Some(c) = sc {
        sent.push((c.path.clone(), &c.value.sampling));
    }
    for t in &b.quality {
        if let Some(c) = &t.contract {
            if !c.value.sampling.is_empty() && c.value.tool.is_none() {
                sent.push((c.path.clone(), &c.value.sampling));
            }
        }
    }
    if !cv.sampling.sent.is_empty() {
        for (path, s) in sent {
            if *s != cv.sampling.sent {
                out.push(
                    Finding::new(
                        "setup.sampling-mismatch",
                        Severity::Error,
                        format!(
                            "{path} sends sampling {s:?}, but the card says the tool sends {:?}",
                            cv.sampling.sent
                        ),
                    )
                    .file(path)
                    .pointer("/sampling"),
                );
            }
        }
    }

    // Versions.
    if let (Some(v), Some(s)) = (&cv.engine.version, &start.engine_version) {
        out.ran("setup.version-mismatch");
        if v.trim_start_matches('v') != s {
            out.push(
                Finding::new(
                    "setup.version-mismatch",
                    Severity::Error,
                    format!(
                        "the card says {} {v}, but the start line reports version {s}",
                        cv.engine.name
                    ),
                )
                .file(&card.path)
                .pointer("/engine/version"),
            );
        }
    }
    if let Some(n) = &cv.nccl {
        out.ran("setup.version-mismatch");
        if let Some(s) = &start.nccl {
            if &n.version != s {
                out.push(
                    Finding::new(
                        "setup.version-mismatch",
                        Severity::Error,
                        format!(
                            "the card says NCCL {}, but the start line reports NCCL {s}",
                            n.version
                        ),
                    )
                    .file(&card.path)
                    .pointer("/nccl/version"),
                );
            }
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
            out.push(
                Finding::new(
                    "setup.version-mismatch",
                    Severity::Error,
                    format!(
                        "the card's NCCL file {} is not the version {} it records",
                        n.file, n.version
                    ),
                )
                .file(&card.path)
                .pointer("/nccl/file"),
            );
        }
    }

    // Ranks.
    out.ran("setup.ranks-mismatch");
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
        for c in &cv.commands[1..] {
            if c.argv != first.argv {
                problems.push(format!(
                    "rank {} has other arguments than rank {}",
                    c.rank, first.rank
                ));
            }
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
    if !problems.is_empty() {
        out.push(
            Finding::new(
                "setup.ranks-mismatch",
                Severity::Error,
                format!("the card's ranks disagree: {}", problems.join("; ")),
            )
            .file(&card.path)
            .pointer("/commands"),
        );
    }

    // Dates.
    check_dates(b, cv, &card.path, out);

    // Revision marker.
    if let Some(rf) = &cv.checkpoint.revision_file {
        out.ran("setup.revision-marker");
        let held = cv
            .checkpoint
            .snapshot
            .as_deref()
            .unwrap_or(&cv.checkpoint.revision);
        let short = |a: &str, b: &str| a.starts_with(b) || b.starts_with(a);
        if !short(rf.content.trim(), held) {
            out.push(
                Finding::new(
                    "setup.revision-marker",
                    Severity::Warning,
                    format!(
                        "the revision file {} names {}, but the folder holds snapshot {held}{}; that its weights equal the pin is a claim to rehash",
                        rf.path,
                        rf.content.trim(),
                        if rf.written_by == "hand" { " (the file was written by hand)" } else { "" }
                    ),
                )
                .file(&card.path)
                .pointer("/checkpoint/revision_file"),
            );
        } else if rf.written_by == "hand" {
            out.push(
                Finding::new(
                    "setup.revision-marker",
                    Severity::Warning,
                    format!(
                        "the revision file {} was written by hand, not by the download",
                        rf.path
                    ),
                )
                .file(&card.path)
                .pointer("/checkpoint/revision_file/written_by"),
            );
        }
    }

    // Citations.
    if !cv.citations.is_empty() {
        out.ran("setup.citation-commit");
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
                out.push(
                    Finding::new(
                        "setup.citation-commit",
                        Severity::Warning,
                        format!(
                            "{}:{} (cited for {}) are line numbers of commit {}, but the setup ran {}",
                            c.path, c.lines, c.supports, c.commit, commits.join(" = ")
                        ),
                    )
                    .file(&card.path)
                    .pointer(format!("/citations/{i}")),
                );
            }
        }
    }
}

fn check_dates(b: &Bundle, cv: &Card, card_path: &str, out: &mut Out) {
    out.ran("setup.date-order");
    let mut bad = |msg: String, file: &str, ptr: &str| {
        out.push(
            Finding::new("setup.date-order", Severity::Error, msg)
                .file(file)
                .pointer(ptr),
        );
    };
    let measured = parse_time(&cv.measured);
    if measured.is_none() {
        bad(
            format!("the card's measured time '{}' is not RFC 3339", cv.measured),
            card_path,
            "/measured",
        );
    }
    if let (Some(p), Some(m)) = (
        cv.engine.published.as_deref().and_then(parse_time),
        measured,
    ) {
        if p > m {
            bad(
                format!("the engine package was published {p}, after the measurement began {m}"),
                card_path,
                "/engine/published",
            );
        }
    }
    let mut spans: Vec<(String, String, String, Option<String>)> = Vec::new();
    if let Some(r) = &b.speed_result {
        spans.push((
            r.path.clone(),
            "speed".into(),
            r.value.started.clone(),
            Some(r.value.ended.clone()),
        ));
    }
    for t in &b.quality {
        if let Some(s) = &t.summary {
            if let Some(st) = &s.value.started {
                spans.push((
                    s.path.clone(),
                    t.test.clone(),
                    st.clone(),
                    s.value.ended.clone(),
                ));
            }
        }
    }
    for (file, what, st, en) in &spans {
        let (Some(s), e) = (parse_time(st), en.as_deref().map(parse_time)) else {
            bad(
                format!("{what}: start '{st}' is not RFC 3339"),
                file,
                "/started",
            );
            continue;
        };
        match e {
            Some(None) => bad(
                format!(
                    "{what}: end '{}' is not RFC 3339",
                    en.clone().unwrap_or_default()
                ),
                file,
                "/ended",
            ),
            Some(Some(e)) if e < s => bad(
                format!("{what} ends ({e}) before it starts ({s})"),
                file,
                "/ended",
            ),
            _ => {}
        }
        if let Some(p) = cv.engine.published.as_deref().and_then(parse_time) {
            if s < p {
                bad(
                    format!("{what} started {s}, before the engine package was published {p}"),
                    file,
                    "/started",
                );
            }
        }
        if let Some(m) = measured {
            if s < m {
                bad(
                    format!("{what} started {s}, before the card's measurement began {m}"),
                    file,
                    "/started",
                );
            }
        }
    }
    // Sessions in the order the page gives.
    let mut prev: Option<(String, DateTime<FixedOffset>)> = None;
    for (i, s) in b.manifest.sessions.iter().enumerate() {
        let Some(t) = parse_time(&s.started) else {
            bad(
                format!("session {}: start '{}' is not RFC 3339", s.name, s.started),
                "bundle.json",
                &format!("/sessions/{i}/started"),
            );
            continue;
        };
        if let Some(e) = s.ended.as_deref().and_then(parse_time) {
            if e < t {
                bad(
                    format!("session {} ends before it starts", s.name),
                    "bundle.json",
                    &format!("/sessions/{i}/ended"),
                );
            }
        }
        if let Some((pn, pt)) = &prev {
            if t < *pt {
                bad(
                    format!(
                        "session {} is listed after {pn} but dated earlier ({t} < {pt})",
                        s.name
                    ),
                    "bundle.json",
                    &format!("/sessions/{i}/started"),
                );
            }
        }
        prev = Some((s.name.clone(), t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        let argv: Vec<String> = ["x", "serve", "--parallel", "8", "--ctx-size=4096"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(flag(&argv, SLOT_FLAGS), Some("8"));
        assert_eq!(flag(&argv, WINDOW_FLAGS), Some("4096"));
        assert_eq!(flag(&argv, NAME_FLAGS), None);
    }
}
