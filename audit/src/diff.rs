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
    if found.comparisons.is_empty() && (a.card.is_none() || b.card.is_none()) {
        // Nothing could be compared (no figure, no two cards): no check counts as run, so the
        // report is incomplete.
        found.ran.clear();
    }
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

mod setup;
pub mod validity;

pub use setup::*;

#[cfg(test)]
mod tests;
