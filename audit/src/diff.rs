//! `diff.*`: two bundles of one setup side by side (a page and its re-run, two dates, a stock and
//! a patched engine, a recorded bundle and its replay): **the setup first**, then the figures.
//!
//! # Definitions
//!
//! - **Setup**: every difference between the two cards (engine name, version, commit, patches,
//!   package and binary digests, NCCL version and per-box digests, checkpoint repo, revision,
//!   snapshot and file digests, recipe, ranks, hardware, driver, kernel, deviations, the sampling
//!   the server applies by default and what the requests sent), each rank's command (the
//!   executable, flags added, removed or changed, positional arguments, environment added,
//!   removed or changed), what the servers said at start (window, slots, KV cache type, drafts,
//!   engine build and patches, sampling defaults, NCCL version; the window also from
//!   `/v1/models`), and every parameter of the speed and quality contracts. A difference names
//!   both values and where each side records it (file and JSON pointer).
//! - **Figures**: the one decision rule of replay ([`crate::replay::compare`], [`crate::decide`]),
//!   A in the place of the recorded side and B of the replayed one, in the words of change
//!   between two runs ([`as_change`]): *unchanged* when the 90 % interval of the change lies
//!   inside the figure's band, *changed* when significant after multiplicity control over the
//!   diff's rows and beyond the band (with whether B is better by the figure's direction),
//!   else *inconclusive* (with the runs a side that would settle it); "not comparable" when a
//!   step is invalid on a side; a figure only one side has is listed as such. Each row shows one
//!   change, the one the rule judged ([`as_change`]).
//! - **Each side's validity**: what `verify` of a side finds invalid is carried as that side's
//!   findings and marks the rows it touches not comparable or caveated ([`validity`]); a diff
//!   whose every figure is not comparable is incomplete.
//! - Exit: a setup difference is a `diff.setup-differs` error when its subject is one the policy
//!   says matters ([`SetupPolicy`]; by default every subject but free text), a warning otherwise;
//!   a changed figure is `diff.moved` (error).

use crate::bundle::{Bundle, Loaded};
use crate::check::{Check, Emit, Stage, StageOut, Staged};
use crate::records::card::{Card, RankCommand};
use crate::replay::{compare, Comparison, ReplayVerdict, Tolerance};
use crate::report::{Findings, Severity};
use crate::startline;
use regex::Regex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use validity::{Figure, Side};

/// What every `diff.*` row holds: [`DIFF`] decides them.
const BY_DIFF: Staged = Staged("diff");

/// `diff.setup-differs`.
pub const SETUP_DIFFERS: Check<Staged> = Check {
    id: "diff.setup-differs",
    severity: Severity::Error,
    doc: "The two bundles differ in their setup (engine, checkpoint, command, server, hardware, sampling, contracts): named with both values and where each side records them.",
    run: BY_DIFF,
};

/// `diff.moved`.
pub const MOVED: Check<Staged> = Check {
    id: "diff.moved",
    severity: Severity::Error,
    doc: "A figure changed between the two runs: significant after multiplicity control over the diff's rows (Holm by default) and its estimate beyond the figure's tolerance band.",
    run: BY_DIFF,
};

/// `diff.inconclusive`.
pub const INCONCLUSIVE: Check<Staged> = Check {
    id: "diff.inconclusive",
    severity: Severity::Info,
    doc: "A figure could be called neither unchanged nor changed between the two runs: its 90 % interval reaches across the tolerance band's edge, too few runs or samples (a percentile), a headline only, foreign load, or a move the machine's own change of speed explains.",
    run: BY_DIFF,
};

/// `diff.not-comparable`.
pub const NOT_COMPARABLE: Check<Staged> = Check {
    id: "diff.not-comparable",
    severity: Severity::Warning,
    doc: "A figure cannot be compared: its step is invalid on a side (refused, not fitting, cached, cut), a side's own verify finds it invalid (requests lost, records missing, cached prompt tokens on one side only), or only one side has it.",
    run: BY_DIFF,
};

/// `diff.machine-speed`.
pub const MACHINE_SPEED: Check<Staged> = Check {
    id: "diff.machine-speed",
    severity: Severity::Info,
    doc: "The two bundles' machine-speed references (a fixed kernel probed before every counted step) differ: the machine ran slower or faster as a whole on one side, and speed moves that explains are inconclusive.",
    run: BY_DIFF,
};

/// The diff of two bundles (or of two imported runs): the setup, then the figures with replay's
/// statistics ([`crate::replay::compare`]).
pub const DIFF: Stage = Stage {
    name: BY_DIFF.0,
    rows: &[
        SETUP_DIFFERS.about(),
        MOVED.about(),
        INCONCLUSIVE.about(),
        NOT_COMPARABLE.about(),
        MACHINE_SPEED.about(),
    ],
};

/// `diff.*` checks.
pub const CHECKS: &[Check<Staged>] = &[
    SETUP_DIFFERS,
    MOVED,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    MACHINE_SPEED,
];

pub use crate::verdict::{SetupChange, Subject};

/// Which setup subjects fail a diff.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupPolicy {
    /// Subjects whose differences are errors; the others are warnings.
    pub fail: BTreeSet<Subject>,
}

impl Default for SetupPolicy {
    fn default() -> Self {
        use Subject::*;
        SetupPolicy {
            fail: [
                Engine, Nccl, Checkpoint, Command, Server, Sampling, Hardware, Contract,
            ]
            .into_iter()
            .collect(),
        }
    }
}

/// What [`diff`] found.
#[derive(Debug, Default)]
pub struct Diffed {
    /// Setup differences, in subject order.
    pub setup: Vec<SetupChange>,
    /// What the `diff.*` rows found; the figure rows (A as `recorded`, B as `replayed`) are its
    /// comparisons.
    pub found: Findings,
}

/// Compares two bundles: the setup, then every figure, each side's own validity findings
/// (`verified`: what `verify` of A and of B found, given by the caller so that this module does
/// not import `verify`, which sits above the families) carried and marking the rows they touch
/// ([`validity`]). See the module docs.
pub fn diff(
    (a, b): (&Bundle, &Bundle),
    verified: [&Findings; 2],
    tol: &Tolerance,
    policy: &SetupPolicy,
) -> Diffed {
    let setup = setup_changes(a, b);
    let mut carried = validity::carried(Side::A, verified[0]);
    carried.extend(validity::carried(Side::B, verified[1]));
    let narrow = |c: &validity::Carried, key: &str| {
        let side = match c.side {
            Side::A => a,
            Side::B => b,
        };
        narrow_in_bundle(side, &c.finding, key)
    };
    let mut found = Findings::default();
    validity::report(&carried, &mut found);
    found.stage(&DIFF, |s| {
        s.decided(&SETUP_DIFFERS);
        for c in &setup {
            setup_finding(c, policy, &mut s.row(&SETUP_DIFFERS));
        }
        let tol = Tolerance {
            same_hardware: Some(true),
            ..*tol
        };
        let compared = compare(a, b, &tol);
        machine_speed(a, b, &compared, s);
        let mut rows: Vec<Comparison> = compared.comparisons.into_iter().map(as_change).collect();
        for row in &mut rows {
            let figure = match row.key.starts_with("quality.") {
                true => Figure::Quality,
                false => Figure::Speed,
            };
            validity::mark(row, figure, &carried, &narrow);
        }
        figure_findings(&rows, s);
        if !rows.is_empty() {
            for c in [&MOVED, &INCONCLUSIVE, &NOT_COMPARABLE] {
                s.decided(c);
            }
        }
        s.comparisons().extend(rows);
    });
    found.incomplete = validity::nothing_comparable(&found.comparisons);
    Diffed { setup, found }
}

/// Which rows a bundle's finding touches where it points: a speed request at the rows of its
/// step, a `fits` row at the rows of its part and depth, a file under `quality/TEST/` at that
/// test's row; `None` (the rule's rows) for anything else.
fn narrow_in_bundle(b: &Bundle, f: &crate::report::Finding, key: &str) -> Option<bool> {
    let file = f.file.as_deref()?;
    if let Some(test) = file
        .strip_prefix("quality/")
        .and_then(|rest| rest.split_once('/'))
        .map(|(test, _)| test)
    {
        return Some(key == format!("quality.{test}.pct"));
    }
    let result = b.speed_result.as_ref().filter(|r| r.path == file)?;
    let pointer = f.pointer.as_deref()?;
    let index = |what: &str| -> Option<usize> {
        let rest = pointer.strip_prefix(what)?;
        rest.split(['/', ',', ' ']).next()?.parse().ok()
    };
    if key.starts_with("quality.") {
        return Some(false);
    }
    if let Some(q) = index("/requests/").and_then(|i| result.value.requests.get(i)) {
        return crate::replay::row_measures(key, q);
    }
    if let Some(fit) = index("/fits/").and_then(|i| result.value.fits.get(i)) {
        return crate::replay::row_fits(key, &fit.part, fit.depth);
    }
    None
}

/// Every setup difference of the two bundles, in subject order.
pub fn setup_changes(a: &Bundle, b: &Bundle) -> Vec<SetupChange> {
    let mut setup = Vec::new();
    if let (Some(x), Some(y)) = (&a.card, &b.card) {
        setup.extend(card_changes(x, y));
    }
    setup.extend(server_changes(a, b));
    setup.extend(contract_changes(a, b));
    setup.sort_by_key(|c| c.subject);
    group_ranks(setup)
}

/// Identical changes of several ranks (one subject, the same change after `rank N `, the same A
/// and B values) as one row, `ranks 0, 1 env KV (added)`, its places joined: a change made on
/// every box of a two-box page is one difference, not one per box.
fn group_ranks(changes: Vec<SetupChange>) -> Vec<SetupChange> {
    let mut out: Vec<(Vec<u32>, SetupChange)> = Vec::new();
    for c in changes {
        let Some((rank, rest)) = rank_of(&c.what) else {
            out.push((Vec::new(), c));
            continue;
        };
        let same = |(ranks, g): &&mut (Vec<u32>, SetupChange)| {
            !ranks.is_empty()
                && rank_of(&g.what).is_some_and(|(_, r)| r == rest)
                && (g.subject, &g.a, &g.b) == (c.subject, &c.a, &c.b)
        };
        match out.iter_mut().find(|x| same(x)) {
            Some((ranks, g)) => {
                ranks.push(rank);
                g.where_a = join_places(&g.where_a, &c.where_a);
                g.where_b = join_places(&g.where_b, &c.where_b);
            }
            None => out.push((vec![rank], c)),
        }
    }
    out.into_iter()
        .map(|(ranks, mut c)| {
            if ranks.len() > 1 {
                let rest = rank_of(&c.what).map_or(String::new(), |(_, r)| r.to_string());
                let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
                c.what = format!("ranks {} {rest}", list.join(", "));
            }
            c
        })
        .collect()
}

/// The rank a change of one rank's command names, and the rest of its words: `rank 1 env KV
/// (added)` is (1, `env KV (added)`).
fn rank_of(what: &str) -> Option<(u32, &str)> {
    let (n, rest) = what.strip_prefix("rank ")?.split_once(' ')?;
    Some((n.parse().ok()?, rest))
}

/// Places (`file pointer`) joined, the file named once when they share it: `card.json
/// /commands/0/env, /commands/1/env`.
fn join_places(all: &str, next: &str) -> String {
    let file = |p: &str| p.split_once(' ').map(|(f, _)| f.to_string());
    match (file(all), next.split_once(' ')) {
        (Some(f), Some((g, pointer))) if f == g => format!("{all}, {pointer}"),
        _ => format!("{all}, {next}"),
    }
}

/// A setup difference: an error when the policy says its subject matters, else a warning.
fn setup_finding(c: &SetupChange, policy: &SetupPolicy, e: &mut Emit) {
    let msg = format!(
        "{}: {} in A ({}), {} in B ({})",
        c.what, c.a, c.where_a, c.b, c.where_b
    );
    let m = if policy.fail.contains(&c.subject) {
        e.finding(msg)
    } else {
        e.warning(msg)
    };
    m.data(serde_json::to_value(c).unwrap_or_default());
}

/// `diff.machine-speed`: the two sides' machine-speed references, when both have one of the same
/// kernel, and a finding when they differ by more than replay's smallest move.
fn machine_speed(a: &Bundle, b: &Bundle, compared: &Findings, found: &mut StageOut) {
    if !compared
        .ran
        .iter()
        .any(|id| id == crate::replay::MACHINE_SPEED.id)
    {
        return;
    }
    found.decided(&MACHINE_SPEED);
    let results = (
        a.speed_result.as_ref().map(|l| &l.value),
        b.speed_result.as_ref().map(|l| &l.value),
    );
    let Some(m) = crate::replay::MachineMove::of(results.0, results.1) else {
        return;
    };
    let Some(f) = compared
        .findings
        .iter()
        .find(|f| f.check == crate::replay::MACHINE_SPEED.id)
    else {
        return;
    };
    found
        .row(&MACHINE_SPEED)
        .info(format!(
            "the machine's speed reference {}: speed moves it explains are inconclusive",
            relabel_text(&m.text())
        ))
        .data(f.data.clone());
}

/// A replay row in diff's words: its verdict about change between two runs (unchanged,
/// changed), whether B is better for a changed row (by the figure's direction, see
/// [`crate::verdict::higher_is_better`]), and A and B in the place of recorded and replayed.
///
/// The row shows one change, the one the rule judged (`change_pct` for speed, `change_points` for
/// quality; a row not comparable has none), and its reason does not repeat it.
pub fn as_change(mut r: Comparison) -> Comparison {
    r.verdict = r.verdict.as_change();
    if r.verdict == ReplayVerdict::NotComparable {
        r.change_pct = None;
        r.change_points = None;
        r.direction = None;
    }
    r.better = (r.verdict == ReplayVerdict::Changed)
        .then_some(r.change_points.or(r.change_pct))
        .flatten()
        .filter(|c| *c != 0.0)
        .map(|c| (c > 0.0) == crate::verdict::higher_is_better(&r.key));
    r.why = relabel_text(&without_change(&r));
    r
}

/// A row's reason without the change it leads with (`-54.9 % (90 % interval -69.3 % to -33.7 %;
/// 12 and 9 samples): beyond ...` is `90 % interval -69.3 % to -33.7 %; 12 and 9 samples:
/// beyond ...`), for a report that shows the change in its own column; else the reason as it is.
fn without_change(r: &Comparison) -> String {
    // As `decide::show_change` writes it (a change that rounds to zero is `+0.0`).
    let tenths = |v: f64| if v.abs() < 0.05 { 0.0 } else { v };
    let lead = match (r.change_points, r.change_pct) {
        (Some(p), _) => format!("{:+.1} points", tenths(p)),
        (None, Some(c)) => format!("{:+.1} %", tenths(c)),
        (None, None) => return r.why.clone(),
    };
    // A row no rule could test says how far its figure moved at its end (replay's words).
    if let Some(c) = r.change_pct {
        if let Some(rest) = r.why.strip_suffix(&format!("; the figure moved {c:+.1} %")) {
            return rest.to_string();
        }
    }
    let Some(rest) = r.why.strip_prefix(&format!("{lead} (")) else {
        return r.why.clone();
    };
    match rest.split_once(')') {
        Some((inner, after)) => format!("{inner}{after}"),
        None => r.why.clone(),
    }
}

/// Replay's words with A and B in the place of recorded and replayed.
fn relabel_text(text: &str) -> String {
    text.replace("the recorded side", "A")
        .replace("the replayed side", "B")
        .replace("the replay", "B")
        .replace(" recorded, ", " A, ")
        .replace(" recorded;", " A;")
        .replace(" replayed)", " B)")
        .replace(" replayed;", " B;")
        .replace("nor a drift beyond it", "nor a change beyond it")
        .replace("recorded ", "A ")
        .replace("replayed ", "B ")
}

/// The findings the figure rows give, through their rows' emitter ([`figure_findings`]).
pub(crate) fn row_findings(rows: &[Comparison], found: &mut Findings) {
    found.stage(&DIFF, |s| figure_findings(rows, s));
}

/// The most rows a finding that stands for several names; the rest are counted.
const ROWS_NAMED: usize = 6;

/// One finding a row (none for a row unchanged), but the rows its sides' validity findings made
/// not comparable for one same reason are one finding that names them (`vllm.ttft_ms,
/// vllm.tpot_ms and 20 more (22 rows): not comparable: B lost requests: ...`), the rows in its
/// data; the findings behind them are listed under their own checks.
fn figure_findings(rows: &[Comparison], found: &mut StageOut) {
    let mut grouped: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in rows {
        if !validity::marked(r) {
            figure_finding(r, found);
            continue;
        }
        match grouped.iter_mut().find(|(why, _)| *why == r.why) {
            Some((_, keys)) => keys.push(&r.key),
            None => grouped.push((&r.why, vec![&r.key])),
        }
    }
    for (why, keys) in grouped {
        if let [key] = keys[..] {
            let row = rows.iter().find(|r| r.key == key);
            if let Some(r) = row {
                figure_finding(r, found);
            }
            continue;
        }
        let named = keys[..keys.len().min(ROWS_NAMED)].join(", ");
        let rest = match keys.len().saturating_sub(ROWS_NAMED) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        found
            .row(&NOT_COMPARABLE)
            .finding(format!("{named}{rest} ({} rows): {why}", keys.len()))
            .data(json!({ "rows": keys, "why": why }));
    }
}

fn figure_finding(r: &Comparison, found: &mut StageOut) {
    let check = match r.verdict {
        ReplayVerdict::Reproduced | ReplayVerdict::Unchanged => return,
        ReplayVerdict::Drifted | ReplayVerdict::Changed => &MOVED,
        ReplayVerdict::Inconclusive => &INCONCLUSIVE,
        ReplayVerdict::NotComparable => &NOT_COMPARABLE,
    };
    let change = r.change_shown().map_or(String::new(), |c| format!(" {c}"));
    found
        .row(check)
        .finding(format!("{}{change}: {}", r.key, r.why))
        .data(serde_json::to_value(r).unwrap_or_default());
}

/// A value as a short string (`absent` for none).
fn show(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "absent".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// Every leaf of a JSON value by pointer (arrays of scalars are one leaf).
fn leaves(v: &Value, at: String, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                leaves(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(xs) if xs.iter().any(|x| x.is_object() || x.is_array()) => {
            for (i, x) in xs.iter().enumerate() {
                leaves(x, format!("{at}/{i}"), out);
            }
        }
        Value::Array(xs) if xs.is_empty() => {
            // An empty list records nothing, like an absent one.
            out.insert(at, Value::Null);
        }
        _ => {
            out.insert(at, v.clone());
        }
    }
}

/// The leaves that differ between two JSON values, skipping pointers under `skip`.
fn json_changes(
    subject_of: &dyn Fn(&str) -> Subject,
    label: &str,
    (a, fa): (&Value, &str),
    (b, fb): (&Value, &str),
    skip: &[&str],
) -> Vec<SetupChange> {
    let (mut la, mut lb) = (BTreeMap::new(), BTreeMap::new());
    leaves(a, String::new(), &mut la);
    leaves(b, String::new(), &mut lb);
    let keys: BTreeSet<&String> = la.keys().chain(lb.keys()).collect();
    keys.into_iter()
        .filter(|k| !skip.iter().any(|s| k.starts_with(s)))
        .filter(|k| la.get(*k) != lb.get(*k))
        .filter(|k| {
            // Absent and null are the same record.
            !matches!(
                (la.get(*k), lb.get(*k)),
                (None | Some(Value::Null), None | Some(Value::Null))
            )
        })
        .map(|k| SetupChange {
            subject: subject_of(k),
            what: format!("{label} {}", k.trim_start_matches('/').replace('/', ".")),
            a: show(la.get(k)),
            b: show(lb.get(k)),
            where_a: format!("{fa} {k}"),
            where_b: format!("{fb} {k}"),
        })
        .collect()
}

/// The subject of a card field by its pointer.
fn card_subject(pointer: &str) -> Subject {
    let top = pointer
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    match top {
        "engine" => Subject::Engine,
        "nccl" => Subject::Nccl,
        "checkpoint" => Subject::Checkpoint,
        "sampling" if !pointer.ends_with("_source") => Subject::Sampling,
        "hardware" if !pointer.ends_with("/description") => Subject::Hardware,
        "ranks" => Subject::Command,
        _ => Subject::Text,
    }
}

/// The two cards' differences: every field, then each rank's command.
fn card_changes(a: &Loaded<Card>, b: &Loaded<Card>) -> Vec<SetupChange> {
    let (va, vb) = (
        serde_json::to_value(&a.value).unwrap_or_default(),
        serde_json::to_value(&b.value).unwrap_or_default(),
    );
    let mut out = json_changes(
        &card_subject,
        "card",
        (&va, &a.path),
        (&vb, &b.path),
        &["/commands", "/measured", "/citations"],
    );
    let ranks: BTreeSet<u32> = a
        .value
        .commands
        .iter()
        .chain(&b.value.commands)
        .map(|c| c.rank)
        .collect();
    for rank in ranks {
        let find = |c: &Card| c.commands.iter().position(|x| x.rank == rank);
        let (ia, ib) = (find(&a.value), find(&b.value));
        let (ca, cb) = (
            ia.map(|i| &a.value.commands[i]),
            ib.map(|i| &b.value.commands[i]),
        );
        let wa = ia.map_or(format!("{} /commands", a.path), |i| {
            format!("{} /commands/{i}", a.path)
        });
        let wb = ib.map_or(format!("{} /commands", b.path), |i| {
            format!("{} /commands/{i}", b.path)
        });
        out.extend(command_changes(rank, ca, cb, &wa, &wb));
    }
    out
}

/// A command's argv as flags (`--flag value`, `--flag=value`, `-f value`; a flag followed by
/// another flag or nothing has no value) and positional arguments (after the executable).
fn flags(argv: &[String]) -> (BTreeMap<String, String>, Vec<String>) {
    let (mut f, mut pos) = (BTreeMap::new(), Vec::new());
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a.starts_with('-') && a.len() > 1 {
            if let Some((k, v)) = a.split_once('=') {
                f.insert(k.to_string(), v.to_string());
            } else if argv.get(i + 1).is_some_and(|n| !n.starts_with('-')) {
                f.insert(a.clone(), argv[i + 1].clone());
                i += 1;
            } else {
                f.insert(a.clone(), "(set)".into());
            }
        } else {
            pos.push(a.clone());
        }
        i += 1;
    }
    (f, pos)
}

/// Differences of two maps, named `label KEY`.
fn map_changes(
    label: &str,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
    (wa, wb): (&str, &str),
) -> Vec<SetupChange> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let kind = match (a.get(k), b.get(k)) {
                (None, _) => "added",
                (_, None) => "removed",
                _ => "changed",
            };
            SetupChange {
                subject: Subject::Command,
                what: format!("{label} {k} ({kind})"),
                a: a.get(k).cloned().unwrap_or_else(|| "absent".into()),
                b: b.get(k).cloned().unwrap_or_else(|| "absent".into()),
                where_a: wa.to_string(),
                where_b: wb.to_string(),
            }
        })
        .collect()
}

/// One changed part of a rank's command, with where each side records it (`wa`/`wb` + `at`).
fn command_change(what: String, x: String, y: String, wa: &str, wb: &str, at: &str) -> SetupChange {
    SetupChange {
        subject: Subject::Command,
        what,
        a: x,
        b: y,
        where_a: format!("{wa}{at}"),
        where_b: format!("{wb}{at}"),
    }
}

fn command_changes(
    rank: u32,
    a: Option<&RankCommand>,
    b: Option<&RankCommand>,
    wa: &str,
    wb: &str,
) -> Vec<SetupChange> {
    let (Some(a), Some(b)) = (a, b) else {
        let has = |c: Option<&RankCommand>| c.map_or("absent".into(), |c| c.argv.join(" "));
        let what = format!("rank {rank} command");
        return vec![command_change(what, has(a), has(b), wa, wb, "")];
    };
    let mut out = where_it_runs(rank, a, b, wa, wb);
    let ((fa, pa), (fb, pb)) = (flags(&a.argv), flags(&b.argv));
    let argv = (format!("{wa}/argv"), format!("{wb}/argv"));
    out.extend(map_changes(
        &format!("rank {rank} flag"),
        &fa,
        &fb,
        (&argv.0, &argv.1),
    ));
    if pa != pb {
        let what = format!("rank {rank} positional arguments");
        out.push(command_change(
            what,
            pa.join(" "),
            pb.join(" "),
            wa,
            wb,
            "/argv",
        ));
    }
    let env = (format!("{wa}/env"), format!("{wb}/env"));
    out.extend(map_changes(
        &format!("rank {rank} env"),
        &a.env,
        &b.env,
        (&env.0, &env.1),
    ));
    out
}

/// A rank's executable and box, when they differ.
fn where_it_runs(
    rank: u32,
    a: &RankCommand,
    b: &RankCommand,
    wa: &str,
    wb: &str,
) -> Vec<SetupChange> {
    let absent = |x: Option<&String>| x.cloned().unwrap_or_else(|| "absent".into());
    let mut out = Vec::new();
    let (ea, eb) = (a.argv.first(), b.argv.first());
    if ea != eb {
        let what = format!("rank {rank} executable");
        out.push(command_change(
            what,
            absent(ea),
            absent(eb),
            wa,
            wb,
            "/argv/0",
        ));
    }
    if a.box_name != b.box_name {
        let (x, y) = (absent(a.box_name.as_ref()), absent(b.box_name.as_ref()));
        out.push(command_change(
            format!("rank {rank} box"),
            x,
            y,
            wa,
            wb,
            "/box",
        ));
    }
    out
}

/// What a server's start lines and `/v1/models` say, as named values.
fn server_said(b: &Bundle) -> Option<(String, BTreeMap<String, String>)> {
    let r = b.speed_result.as_ref()?;
    let lines = &r.value.server.start_lines;
    let info = startline::parse(lines);
    let mut m = BTreeMap::new();
    if let Some(w) = startline::models_window(&r.value.server.models).or(info.window) {
        m.insert("window".to_string(), w.to_string());
    }
    if let Some(s) = info.slots {
        m.insert("slots".into(), s.to_string());
    }
    if let Some(v) = info.engine_version {
        m.insert("engine version".into(), v);
    }
    if let Some(v) = info.nccl {
        m.insert("NCCL version".into(), v);
    }
    for (k, v) in info.sampling {
        m.insert(format!("default {k}"), v.to_string());
    }
    let text = lines.join("\n");
    for (name, pat) in START_PATTERNS {
        if let Some(c) = Regex::new(pat).ok().and_then(|r| r.captures(&text)) {
            let v = c.iter().skip(1).flatten().next().map(|m| m.as_str());
            m.insert(name.to_string(), v.unwrap_or("yes").to_string());
        }
    }
    Some((r.path.clone(), m))
}

/// Further things start lines say, as (name, pattern with one capture).
const START_PATTERNS: &[(&str, &str)] = &[
    (
        "KV cache type",
        r"(?i)\b(?:kv(?:[ _-]cache)?(?:[ _-]type)?|cache)[ =:]+(bf16|fp16|f16|f32|fp32|fp8(?:_e4m3|_e5m2)?|q8_0|q4_0|q4_1|q5_0|q5_1|int8|int4)\b",
    ),
    (
        "drafts",
        r"(?i)\b([A-Za-z0-9_-]+) drafts\b|\b(speculative[^,;\n]*)",
    ),
    ("patches", r"(?i)\+\s*(\d+) patches\b"),
    (
        "engine build",
        r"(?i)\(([0-9a-f]{7,40})\)|\bnative ([0-9a-f]{7,40})\b",
    ),
    ("tensor parallel", r"(?i)\btensor parallel (\d+)"),
];

fn server_changes(a: &Bundle, b: &Bundle) -> Vec<SetupChange> {
    let (Some((fa, ma)), Some((fb, mb))) = (server_said(a), server_said(b)) else {
        return Vec::new();
    };
    let keys: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    keys.into_iter()
        .filter(|k| ma.get(*k) != mb.get(*k))
        .map(|k| SetupChange {
            subject: if k.starts_with("default ") {
                Subject::Sampling
            } else {
                Subject::Server
            },
            what: format!("server {k}"),
            a: ma.get(k).cloned().unwrap_or_else(|| "not said".into()),
            b: mb.get(k).cloned().unwrap_or_else(|| "not said".into()),
            where_a: format!("{fa} /server"),
            where_b: format!("{fb} /server"),
        })
        .collect()
}

fn contract_changes(a: &Bundle, b: &Bundle) -> Vec<SetupChange> {
    let subject = |_: &str| Subject::Contract;
    let mut out = Vec::new();
    if let (Some(x), Some(y)) = (&a.speed_contract, &b.speed_contract) {
        let (vx, vy) = (
            serde_json::to_value(&x.value).unwrap_or_default(),
            serde_json::to_value(&y.value).unwrap_or_default(),
        );
        let skip = [
            "/sampling_source",
            "/server/slots_source",
            "/server/window_source",
        ];
        out.extend(json_changes(
            &subject,
            "speed contract",
            (&vx, &x.path),
            (&vy, &y.path),
            &skip,
        ));
    }
    for t in &a.quality {
        let Some(u) = b.quality.iter().find(|u| u.test == t.test) else {
            continue;
        };
        if let (Some(x), Some(y)) = (&t.contract, &u.contract) {
            let (vx, vy) = (
                serde_json::to_value(&x.value).unwrap_or_default(),
                serde_json::to_value(&y.value).unwrap_or_default(),
            );
            let label = format!("quality contract {}", t.test);
            out.extend(json_changes(
                &subject,
                &label,
                (&vx, &x.path),
                (&vy, &y.path),
                &[],
            ));
        }
    }
    out
}

/// The setup section as JSON, for reports.
pub fn setup_json(changes: &[SetupChange]) -> Value {
    json!(changes)
}

pub mod validity;

#[cfg(test)]
mod tests;
