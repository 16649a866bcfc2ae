//! `loaded.*`: what each replayed (or running) server actually mapped, judged against the card.
//!
//! The CLI reads, per rank, the executable and every file-backed mapping of the server process
//! and its children (`/proc/PID/exe`, `/proc/PID/maps`) once the server is ready and again after
//! the last request, hashes each file once and reads the version it reports
//! ([`LoadedRank`]); these rows judge that inventory against the card, with no I/O:
//!
//! - the card's engine binary, NCCL library and checkpoint files must be the very files that were
//!   mapped (a file of the recorded name with another digest is an error that names both files
//!   and the loader variable that put it there);
//! - ranks that mapped different files of one name are an error;
//! - what the card does not record is listed, so a page can record it next time;
//! - what could not be read (a rank that exited first, a file deleted or replaced since it was
//!   mapped) is said, never passed over.

use crate::check::{list, Check, Emit, Ran};
use crate::records::card::Card;
use crate::records::loaded::{LoadedObject, LoadedRank, Role};
use crate::report::{Findings, Severity};
use crate::schema::{compare_digest, recorded_digest};
use std::collections::{BTreeMap, BTreeSet};

/// What the `loaded.*` rows read: the card and what each rank mapped.
pub struct Input<'a> {
    /// The card the page recorded.
    pub card: &'a Card,
    /// The inventory, one entry per rank read (or tried).
    pub ranks: &'a [LoadedRank],
    /// The card's file name, for the findings' place.
    pub card_file: &'a str,
    /// Whether the user ran an executable whose digest differs from the card's knowingly
    /// (`--trust-executable`): then another binary is a warning, not an error.
    pub executable_trusted: bool,
}

/// A `loaded.*` row's function.
pub type Run = fn(&Input, &mut Emit) -> Ran;

/// `loaded.*` checks, in the order they run.
pub const CHECKS: &[Check<Run>] = &[
    Check {
        id: "loaded.engine-binary",
        severity: Severity::Error,
        doc: "A rank's server ran an executable other than the engine binary the card records (by digest); warning when it was run knowingly (--trust-executable).",
        run: engine_binary,
    },
    Check {
        id: "loaded.nccl",
        severity: Severity::Error,
        doc: "A rank mapped an NCCL library other than the one the card records (the finding names both files and the variable that put it there); warning: the card records NCCL and none was mapped.",
        run: nccl,
    },
    Check {
        id: "loaded.checkpoint",
        severity: Severity::Error,
        doc: "A rank mapped a file named as one of the card's checkpoint files with another digest.",
        run: checkpoint,
    },
    Check {
        id: "loaded.ranks-differ",
        severity: Severity::Error,
        doc: "Ranks mapped different executables or libraries of one name (different digests).",
        run: ranks_differ,
    },
    Check {
        id: "loaded.unrecorded",
        severity: Severity::Info,
        doc: "The executables and libraries a rank mapped that the card does not record (listed, so the page can record them).",
        run: unrecorded,
    },
    Check {
        id: "loaded.not-read",
        severity: Severity::Warning,
        doc: "What a rank mapped could not be read or not surely hashed: /proc refused, a box did not answer, a file deleted or replaced since it was mapped (note: the rank had exited before a read).",
        run: not_read,
    },
];

/// Runs every `loaded.*` row over `input`; nothing runs when no rank was read or tried.
pub fn check(input: &Input) -> Findings {
    let mut found = Findings::default();
    if input.ranks.is_empty() {
        return found;
    }
    for c in CHECKS {
        found.check(c, |run, emit| run(input, emit));
    }
    found
}

/// What `ranks` mapped judged against `card` (the card and its file's name, when there is one)
/// by [`check`], with the inventory kept in the findings ([`Findings::loaded`]) for the report.
pub fn judged(
    card: Option<(&Card, &str)>,
    ranks: Vec<LoadedRank>,
    executable_trusted: bool,
) -> Findings {
    let mut found = match card {
        Some((card, card_file)) => check(&Input {
            card,
            ranks: &ranks,
            card_file,
            executable_trusted,
        }),
        None => Findings::default(),
    };
    found.loaded = ranks;
    found
}

/// `rank 0`, or `side A rank 0` in a comparison.
fn who(r: &LoadedRank) -> String {
    match &r.side {
        Some(side) => format!("side {side} rank {}", r.rank),
        None => format!("rank {}", r.rank),
    }
}

/// The first 12 hex digits of a digest, for a finding's words.
fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

/// `path (sha256 0123456789ab…, VERSION)`.
fn described(o: &LoadedObject) -> String {
    let mut s = o.path.clone();
    let mut parts = Vec::new();
    if let Some(d) = &o.sha256 {
        parts.push(format!("sha256 {}…", short(d)));
    }
    if let Some(v) = &o.version {
        parts.push(v.clone());
    }
    if !parts.is_empty() {
        s.push_str(&format!(" ({})", parts.join(", ")));
    }
    s
}

/// Whether `o`'s digest agrees with `recorded` as far as the record goes.
fn agrees(o: &LoadedObject, recorded: &str) -> bool {
    o.sha256
        .as_deref()
        .is_some_and(|d| compare_digest(recorded, d).ok())
}

/// The loader variable of `r` that names `o` or its folder (`LD_LIBRARY_PATH=/opt/nccl/lib`), or
/// what else put it there.
pub fn put_there_by(r: &LoadedRank, o: &LoadedObject) -> String {
    let folder = o.path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    for (name, value) in &r.loader_env {
        let hit = value
            .split([':', ' '])
            .map(|p| p.trim_end_matches('/'))
            .any(|p| !p.is_empty() && (p == o.path || p == folder));
        if hit {
            return format!("put there by {name}={value}");
        }
    }
    "no loader variable names it or its folder (the loader's default search, a RUNPATH, or a dlopen by path)".into()
}

fn engine_binary(i: &Input, e: &mut Emit) -> Ran {
    // A malformed recorded digest is rehash's to report (`rehash.binary-digest`).
    let b = i.card.engine.binary.as_ref()?;
    recorded_digest(&b.sha256)?;
    for r in i.ranks.iter().filter(|r| !r.objects.is_empty()) {
        if r.objects.iter().any(|o| agrees(o, &b.sha256)) {
            continue;
        }
        let ran: Vec<String> = r
            .objects
            .iter()
            .filter(|o| o.role == Role::Executable)
            .map(described)
            .collect();
        let message = format!(
            "{} ran {}, not the card's engine binary {} (sha256 {}): no file the server mapped has that digest",
            who(r),
            list(&ran, 3),
            b.path,
            b.sha256
        );
        let mark = if i.executable_trusted {
            e.warning(format!("{message} (run knowingly: --trust-executable)"))
        } else {
            e.finding(message)
        };
        mark.at(i.card_file, "/engine/binary/sha256");
    }
    Some(())
}

/// The digests the card records for the NCCL library of `r`'s box (every box's when the card names
/// none for it).
fn nccl_digests<'a>(n: &'a crate::records::card::Nccl, r: &LoadedRank) -> Vec<&'a str> {
    let own: Vec<&str> = n
        .per_box
        .iter()
        .filter(|b| b.box_name == r.box_name)
        .map(|b| b.sha256.as_str())
        .collect();
    if own.is_empty() {
        n.per_box.iter().map(|b| b.sha256.as_str()).collect()
    } else {
        own
    }
}

fn nccl(i: &Input, e: &mut Emit) -> Ran {
    let n = i.card.nccl.as_ref()?;
    for r in i.ranks.iter().filter(|r| !r.objects.is_empty()) {
        let digests = nccl_digests(n, r);
        let mapped: Vec<&LoadedObject> = r.objects.iter().filter(|o| o.is_nccl()).collect();
        if mapped.is_empty() {
            e.warning(format!(
                "the card records NCCL {} ({}), and {} mapped no NCCL library (read at {}): the server did not load it while it was read",
                n.version, n.file, who(r), r.read_at.join(" and ")
            ))
            .at(i.card_file, "/nccl");
            continue;
        }
        for o in mapped.iter().filter(|o| o.sha256.is_some()) {
            if digests.iter().any(|d| agrees(o, d)) {
                continue;
            }
            e.finding(format!(
                "{} mapped {}, not the card's NCCL {} {} (sha256 {} on box {}): {}",
                who(r),
                described(o),
                n.version,
                n.file,
                digests.first().copied().unwrap_or("not recorded"),
                r.box_name,
                put_there_by(r, o)
            ))
            .at(i.card_file, "/nccl/per_box");
        }
    }
    Some(())
}

fn checkpoint(i: &Input, e: &mut Emit) -> Ran {
    let files = &i.card.checkpoint.files;
    if files.is_empty() {
        return None;
    }
    for r in i.ranks {
        for (k, f) in files.iter().enumerate() {
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            for o in r.objects.iter().filter(|o| o.name() == name) {
                if o.sha256.is_none() || agrees(o, &f.sha256) {
                    continue;
                }
                e.finding(format!(
                    "{} mapped {}, not the card's checkpoint file {} (sha256 {}…)",
                    who(r),
                    described(o),
                    f.path,
                    short(&f.sha256)
                ))
                .at(i.card_file, format!("/checkpoint/files/{k}/sha256"));
            }
        }
    }
    Some(())
}

/// Per file name of an executable or library, the ranks (named) and the objects they mapped.
fn by_name<'a>(ranks: &[&'a LoadedRank]) -> BTreeMap<&'a str, Vec<(String, &'a LoadedObject)>> {
    let mut names: BTreeMap<&str, Vec<(String, &LoadedObject)>> = BTreeMap::new();
    for r in ranks {
        for o in r.objects.iter().filter(|o| o.role != Role::Data) {
            names.entry(o.name()).or_default().push((who(r), o));
        }
    }
    names
}

fn ranks_differ(i: &Input, e: &mut Emit) -> Ran {
    let read: Vec<&LoadedRank> = i.ranks.iter().filter(|r| !r.objects.is_empty()).collect();
    if read.len() < 2 {
        return None;
    }
    for (name, seen) in by_name(&read) {
        let digests: BTreeSet<&str> = seen
            .iter()
            .filter_map(|(_, o)| o.sha256.as_deref())
            .collect();
        if digests.len() < 2 {
            continue;
        }
        let each: Vec<String> = seen
            .iter()
            .map(|(rank, o)| format!("{rank}: {}", described(o)))
            .collect();
        e.finding(format!(
            "the ranks mapped different files named {name}: {}",
            list(&each, 6)
        ));
    }
    Some(())
}

/// Whether the card records `o` (the engine binary, its NCCL, a checkpoint file), by digest.
fn recorded(card: &Card, o: &LoadedObject) -> bool {
    let binary = card.engine.binary.iter().map(|b| b.sha256.as_str());
    let nccl = card
        .nccl
        .iter()
        .flat_map(|n| n.per_box.iter().map(|b| b.sha256.as_str()));
    let files = card.checkpoint.files.iter().map(|f| f.sha256.as_str());
    binary.chain(nccl).chain(files).any(|d| agrees(o, d))
}

fn unrecorded(i: &Input, e: &mut Emit) -> Ran {
    for r in i.ranks.iter().filter(|r| !r.objects.is_empty()) {
        let code: Vec<&LoadedObject> = r.objects.iter().filter(|o| o.role != Role::Data).collect();
        let missing: Vec<String> = code
            .iter()
            .filter(|o| !recorded(i.card, o))
            .map(|o| match (&o.package, &o.version) {
                (Some(p), _) => format!("{} ({p})", o.path),
                (None, Some(v)) => format!("{} ({v})", o.path),
                _ => o.path.clone(),
            })
            .collect();
        if missing.is_empty() {
            continue;
        }
        e.finding(format!(
            "{}: {} of {} executables and libraries it mapped are not recorded on the card (record them, with their sha256, so a replay can check them; all are in the inventory): {}",
            who(r),
            missing.len(),
            code.len(),
            list(&missing, 8)
        ))
        .file(i.card_file);
    }
    Some(())
}

fn not_read(i: &Input, e: &mut Emit) -> Ran {
    for r in i.ranks {
        for why in &r.not_read {
            e.finding(format!("{} on {}: {why}", who(r), r.host));
        }
        for why in &r.gone {
            e.info(format!("{} on {}: {why}", who(r), r.host));
        }
        let unsure: Vec<String> = r
            .objects
            .iter()
            .filter_map(|o| o.problem.as_ref().map(|p| format!("{}: {p}", o.path)))
            .collect();
        if !unsure.is_empty() {
            e.finding(format!(
                "{}: {} mapped file(s) not surely hashed as mapped: {}",
                who(r),
                unsure.len(),
                list(&unsure, 6)
            ));
        }
    }
    Some(())
}

#[cfg(test)]
mod tests;
