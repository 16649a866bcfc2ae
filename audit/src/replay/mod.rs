//! `replay.*`: a recorded bundle compared, figure by figure, with its replay (the same contracts
//! measured again on an engine `rigaudit replay` launched).
//!
//! # Definitions
//!
//! Speed rows carry the keys and definitions of [`crate::speed`]: `decode`, `decode.<prompt>`,
//! `prefill.<depth>`, `ttft.<depth>`, `conc_total.<level>`, `conc_per_request.<level>`,
//! `ctx_decode.<depth>`, `ctx_prefill.<depth>` and `l1_decode`. On each side:
//! - the figure (`recorded`, `replayed`) is the one [`crate::speed::recompute`] derives from the
//!   per-request records (the median over runs, the mean over prompts for `decode`, the last run
//!   for `l1_decode`);
//! - the samples are one value per counted (not warm-up) run: the decode rate of each run of a
//!   prompt, for `decode` the mean over the prompts of each run, the prefill rate and TTFT of each
//!   run at a depth, the total and per-request rate of each round of a level, the rates of each
//!   context-step run and of each long-answer run;
//! - a side whose speed result has no per-request record of the step but a figure in its `values`
//!   has that single value;
//! - the contract is the side's own, else the other side's (a replay measures with the recorded
//!   contracts).
//!
//! A row's change is the one the decision rule judged: `change_pct` the percent of the ratio of
//! the two sides' geometric means for speed, `change_points` the difference in points for
//! quality (no `change_pct`); a row no rule judged keeps 100 (replayed - recorded) / recorded.
//! `direction` is `up` or `down` by its sign.
//!
//! Quality rows are keyed `quality.<test>.pct`: right / answered questions in percent, over the
//! questions the server answered (from the answers file's tally; without one, from the summary's
//! total less its `errors`). A refused request is neither right nor wrong.
//!
//! # Decision rule
//!
//! - **Not comparable**: the step is invalid on a side: every counted request refused or failed,
//!   the step marked as not fitting the window or not sent, counted runs served with cached prompt
//!   tokens, decode replies cut before their cap, or nothing measured there. The reason names the
//!   side(s), with status and error text. A quality test with no answered question on a side is not
//!   comparable.
//! - **Speed**: with fewer than [`Tolerance::min_runs`] samples on a side, or only a headline
//!   figure, the row is *inconclusive* (the reason names the side and the size of the move).
//!   Otherwise the decision rule of [`crate::decide`] ([`Tolerance::rule`], the policy's
//!   `[decide]`) judges the log ratio of the two sides' geometric means, each side's variance
//!   moderated toward a prior fitted to every speed row of the report, plus the declared session
//!   spread: *reproduced* only when the 90 % interval lies inside the figure kind's band
//!   (equivalence), *drifted* when significant after multiplicity control over the report's rows
//!   (Holm by default) and beyond the band, else *inconclusive* with the runs a side that would
//!   settle it ([`Inconclusive::WideInterval`]).
//! - **Machine speed**: a drift on the same hardware that the machine's speed reference explains
//!   (the machine ran slower or faster as a whole; see [`machine`]) is *inconclusive*, never
//!   reproduced.
//! - **Quality**: the same rule in points, over answered questions: Newcombe's interval of the
//!   difference of two independent proportions (the answers' tallies hold no per-question ids to
//!   pair them), the pooled z-test for p.
//! - **Hardware**: when the two cards' hardware differs (accelerator, box count, box models,
//!   description), or [`Tolerance::same_hardware`] says so, speed rows are `informational` and a
//!   drifted speed row is reported at info severity.
//! - **Setup**: the servers' window and slots (error) and sampling defaults and engine version
//!   (warning), as their start lines and `/v1/models` say, must agree, and so must the GPU's
//!   name and driver where both results name one (warning).
//! - **GPU**: a speed row whose replayed kept tries ran on a GPU throttled for a reason other
//!   than idle is *inconclusive* ([`Inconclusive::GpuThrottled`]); a kept try beside a foreign
//!   process on either side's GPU is foreign load, as a busy CPU process is.

use crate::bundle::{Bundle, Loaded, QualityTest};
use crate::check::{Check, Stage, StageOut, Staged};
use crate::decide::{DecisionRule, Tolerances};
use crate::records::card::{Card, Hardware};
use crate::records::speed::{SpeedRequest, SpeedResult};
use crate::report::{Finding, Findings, Severity};
use crate::speed::{counted, recompute, samples};
use crate::startline;
use serde::Serialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

pub use crate::verdict::{Comparison, Inconclusive, ReplayVerdict};

mod command;
mod confirm;
mod failed;
mod judge;
mod machine;
mod quality;
mod setup;
mod speed;

pub use command::{
    catalogue, command, replayed_verified, report, Done, DoneRun, Outcome, COMMAND_CHECKS, NOTE,
    NOT_RUN,
};
pub use confirm::{confirm, keys_to_confirm, pool, SessionSpread};
pub use failed::failed_steps;
pub use judge::apply as apply_judgement;
use judge::Pending;
pub use machine::MachineMove;
use machine::*;
use quality::*;
use setup::*;
use speed::*;

/// What the rows of the comparison hold: [`COMPARISON`] decides them.
const BY_COMPARISON: Staged = Staged("replay.comparison");

/// What `replay.step-failed` holds: [`FAILED_STEPS`] decides it.
const BY_FAILED_STEPS: Staged = Staged("replay.failed-steps");

/// `replay.drifted`.
pub const DRIFTED: Check<Staged> = Check {
    id: "replay.drifted",
    severity: Severity::Error,
    doc: "A replayed figure differs from the recorded one: significant after multiplicity control over the report's rows (Holm by default) and its estimate beyond the figure's tolerance band.",
    run: BY_COMPARISON,
};

/// `replay.inconclusive`.
pub const INCONCLUSIVE: Check<Staged> = Check {
    id: "replay.inconclusive",
    severity: Severity::Info,
    doc: "A replayed figure could be called neither reproduced nor drifted: its 90 % interval reaches across the tolerance band's edge (the row says how many runs a side would settle it), too few runs on a side, only a headline figure, foreign load (on the CPU or the GPU), a replayed GPU that throttled its clocks, two sessions that disagree, or a drift the machine's own change of speed explains.",
    run: BY_COMPARISON,
};

/// `replay.not-comparable`.
pub const NOT_COMPARABLE: Check<Staged> = Check {
    id: "replay.not-comparable",
    severity: Severity::Warning,
    doc: "A figure cannot be compared: its step is invalid or missing on a side (refused, not fitting the window, cached tokens, cut replies).",
    run: BY_COMPARISON,
};

/// `replay.hardware-differs`.
pub const HARDWARE_DIFFERS: Check<Staged> = Check {
    id: "replay.hardware-differs",
    severity: Severity::Warning,
    doc: "The replay ran on other hardware than the recorded card names; its speed rows are informational.",
    run: BY_COMPARISON,
};

/// `replay.setup-differs`.
pub const SETUP_DIFFERS: Check<Staged> = Check {
    id: "replay.setup-differs",
    severity: Severity::Error,
    doc: "The replayed server's window or slots (error), sampling defaults, engine version or GPU (its name or driver, as measure --gpu read them) (warning) differ from the recorded one's.",
    run: BY_COMPARISON,
};

/// `replay.machine-speed`.
pub const MACHINE_SPEED: Check<Staged> = Check {
    id: "replay.machine-speed",
    severity: Severity::Info,
    doc: "The machine's speed reference (a fixed kernel probed before every counted step) moved between recording and replay: the machine ran slower or faster as a whole, and drifts that move explains are inconclusive.",
    run: BY_COMPARISON,
};

/// `replay.step-failed`.
pub const STEP_FAILED: Check<Staged> = Check {
    id: "replay.step-failed",
    severity: Severity::Error,
    doc: "A step the recorded run answered got no answer on replay (engine exited, hung, HTTP 5xx, malformed stream), or the replay stopped before its end.",
    run: BY_FAILED_STEPS,
};

/// [`compare`] (and [`confirm`]): the two bundles, figure by figure, with their hardware, server
/// setup and machine speed.
pub const COMPARISON: Stage = Stage {
    name: BY_COMPARISON.0,
    rows: &[
        DRIFTED.about(),
        INCONCLUSIVE.about(),
        NOT_COMPARABLE.about(),
        HARDWARE_DIFFERS.about(),
        SETUP_DIFFERS.about(),
        MACHINE_SPEED.about(),
    ],
};

/// [`failed_steps`]: the steps the replayed run failed.
pub const FAILED_STEPS: Stage = Stage {
    name: BY_FAILED_STEPS.0,
    rows: &[STEP_FAILED.about()],
};

/// The rows [`COMPARISON`] decides.
pub const COMPARED: &[Check<Staged>] = &[
    DRIFTED,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    HARDWARE_DIFFERS,
    SETUP_DIFFERS,
    MACHINE_SPEED,
];

/// The row [`FAILED_STEPS`] decides.
pub const FAILED: &[Check<Staged>] = &[STEP_FAILED];

/// How [`compare`] decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// The decision rule: tolerance bands, session spread, multiplicity (the policy's
    /// `[decide]`).
    pub rule: DecisionRule,
    /// The fewest samples a side needs for a speed interval.
    pub min_runs: usize,
    /// Whether both sides ran on the same hardware; `None` decides from the two cards.
    pub same_hardware: Option<bool>,
    /// One session's spread measured between the replay's two sessions (log scale, 0.09 = 9 %),
    /// which raises the declared one where larger ([`DecisionRule::tolerances_with_measured`]).
    pub measured_session_sd: Option<f64>,
}

impl Tolerance {
    /// The tolerances the rows are judged with.
    pub fn tolerances(&self) -> Tolerances {
        match self.measured_session_sd {
            Some(m) => self.rule.tolerances_with_measured(m),
            None => self.rule.tolerances(),
        }
    }
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            rule: DecisionRule::default(),
            min_runs: 3,
            same_hardware: None,
            measured_session_sd: None,
        }
    }
}

/// The finding a row gives, if any: drift (info when informational), inconclusive, not
/// comparable; the row itself as `data`.
fn row_finding(row: &Comparison, file: Option<&str>) -> Option<Finding> {
    let (check, severity, tail) = match row.verdict {
        ReplayVerdict::Reproduced | ReplayVerdict::Unchanged => return None,
        ReplayVerdict::Drifted | ReplayVerdict::Changed if row.informational => (
            DRIFTED.id,
            Severity::Info,
            " (measured on other hardware, so for information only)",
        ),
        ReplayVerdict::Drifted | ReplayVerdict::Changed => (DRIFTED.id, Severity::Error, ""),
        ReplayVerdict::Inconclusive => (INCONCLUSIVE.id, Severity::Info, ""),
        ReplayVerdict::NotComparable => (NOT_COMPARABLE.id, Severity::Warning, ""),
    };
    let mut f = Finding::new(check, severity, format!("{}: {}{tail}", row.key, row.why))
        .data(serde_json::to_value(row).unwrap_or_default());
    if let Some(file) = file {
        f = f.file(file);
    }
    Some(f)
}

/// Compares a recorded bundle with its replay: one [`Comparison`] per speed figure and quality
/// test, and `replay.*` findings for drift, inconclusive and not comparable rows, other hardware
/// and a different server setup. See the module docs for the definitions and the decision rule.
/// What it found is the stage's [`Findings`]: its comparisons are the rows, speed rows first.
pub fn compare(recorded: &Bundle, replayed: &Bundle, opts: &Tolerance) -> Findings {
    let mut found = Findings::default();
    found.stage(&COMPARISON, |s| compare_into(recorded, replayed, opts, s));
    found
}

fn compare_into(recorded: &Bundle, replayed: &Bundle, opts: &Tolerance, out: &mut StageOut) {
    let mut findings = Vec::new();
    let cards = (recorded.card.as_ref(), replayed.card.as_ref());
    if (cards.0.is_some() && cards.1.is_some()) || opts.same_hardware.is_some() {
        out.decided(&HARDWARE_DIFFERS);
    }
    let differs = hardware(cards, opts, &mut findings);
    if let (Some(a), Some(b)) = (&recorded.speed_result, &replayed.speed_result) {
        out.decided(&SETUP_DIFFERS);
        setup(a, b, &mut findings);
    }
    let results = (
        recorded.speed_result.as_ref().map(|l| &l.value),
        replayed.speed_result.as_ref().map(|l| &l.value),
    );
    let machine = MachineMove::of(results.0, results.1);
    if let Some(m) = &machine {
        out.decided(&MACHINE_SPEED);
        let file = replayed.speed_result.as_ref().map(|l| l.path.as_str());
        findings.extend(machine_finding(m, file));
    }
    // Other hardware (told, or as the cards say) moves the figures by itself: the machine's
    // reference does not explain a move then, even where a diff compares the figures as judged.
    let machine = machine.filter(|_| !differs && !cards_differ(cards));
    let mut rows = speed_rows(recorded, replayed, opts, differs);
    rows.extend(quality_rows(recorded, replayed));
    judge::decide_rows(&mut rows, opts, machine.as_ref());
    if !rows.is_empty() {
        for row in [&DRIFTED, &INCONCLUSIVE, &NOT_COMPARABLE] {
            out.decided(row);
        }
    }
    findings.extend(
        rows.iter()
            .filter_map(|r| row_finding(&r.row, r.file.as_deref())),
    );
    for f in findings {
        out.push(f);
    }
    for r in rows {
        out.comparison(r.row);
    }
}

/// Whether the row `key` is measured by the speed request `q` (a request of its step); `None` for
/// a key of no step.
pub fn row_measures(key: &str, q: &SpeedRequest) -> Option<bool> {
    let step = step_of(key)?;
    Some(q.step == step.name() && step.matches(q))
}

/// Whether the row `key` is of the speed result's `fits` row of `part` at `depth`; `None` for a
/// key of no step.
pub fn row_fits(key: &str, part: &str, depth: u64) -> Option<bool> {
    let step = step_of(key)?;
    Some(
        step.fit()
            .is_some_and(|(p, d)| p == part && d.is_none_or(|d| d == depth)),
    )
}

/// Whether both cards are there and name other hardware.
fn cards_differ(cards: (Option<&Loaded<Card>>, Option<&Loaded<Card>>)) -> bool {
    match cards {
        (Some(a), Some(b)) => {
            !hardware_differences(&hw_key(&a.value.hardware), &hw_key(&b.value.hardware)).is_empty()
        }
        _ => false,
    }
}

/// Whether the two sides ran on other hardware (as the cards say, or as told), with a
/// `replay.hardware-differs` finding when so.
fn hardware(
    cards: (Option<&Loaded<Card>>, Option<&Loaded<Card>>),
    opts: &Tolerance,
    findings: &mut Vec<Finding>,
) -> bool {
    let keys = match cards {
        (Some(a), Some(b)) => Some((hw_key(&a.value.hardware), hw_key(&b.value.hardware))),
        _ => None,
    };
    let what_differs: Vec<String> = keys
        .as_ref()
        .map(|(a, b)| hardware_differences(a, b))
        .unwrap_or_default();
    let differs = match opts.same_hardware {
        Some(same) => !same,
        None => !what_differs.is_empty(),
    };
    if !differs {
        return false;
    }
    let message = match &keys {
        Some((a, b)) => format!(
            "recorded on {} but replayed on {} ({}); speed rows are informational",
            a.text(),
            b.text(),
            if what_differs.is_empty() {
                "as told".to_string()
            } else {
                what_differs.join("; ")
            }
        ),
        None => "the replay ran on other hardware than the record (as told); speed rows are informational".to_string(),
    };
    let mut f = Finding::new(HARDWARE_DIFFERS.id, Severity::Warning, message).data(
        json!({"recorded": keys.as_ref().map(|k| &k.0), "replayed": keys.as_ref().map(|k| &k.1)}),
    );
    if let Some(c) = cards.1 {
        f = f.file(&c.path).pointer("/hardware");
    }
    findings.push(f);
    true
}

/// One row per speed key either side has, in family order, with the replayed (else recorded)
/// speed result's path; informational on other hardware.
fn speed_rows(
    recorded: &Bundle,
    replayed: &Bundle,
    opts: &Tolerance,
    informational: bool,
) -> Vec<judge::Row> {
    let mut rows = Vec::new();
    let rec = SpeedSide::new(recorded, replayed, false);
    let rep = SpeedSide::new(replayed, recorded, true);
    if rec.loaded.is_none() && rep.loaded.is_none() {
        return rows;
    }
    let file = rep.loaded.or(rec.loaded).map(|l| l.path.clone());
    for key in rec.keys().union(&rep.keys()) {
        let Some(step) = step_of(key) else { continue };
        let (a, b) = (rec.measure(key, &step), rep.measure(key, &step));
        let (mut row, pending) = speed_row(key, a, b, opts);
        row.informational = informational;
        rows.push(judge::Row {
            row,
            file: file.clone(),
            pending,
        });
    }
    rows.sort_by_key(|r| order(&r.row.key));
    rows
}

/// One row per quality test either side has (recorded order first), with the answers (else
/// summary) path.
fn quality_rows(recorded: &Bundle, replayed: &Bundle) -> Vec<judge::Row> {
    let mut tests: Vec<&str> = recorded.quality.iter().map(|t| t.test.as_str()).collect();
    for t in &replayed.quality {
        if !tests.contains(&t.test.as_str()) {
            tests.push(&t.test);
        }
    }
    tests
        .into_iter()
        .map(|test| {
            let a = recorded.quality.iter().find(|t| t.test == test);
            let b = replayed.quality.iter().find(|t| t.test == test);
            let file = b.or(a).and_then(|t| {
                t.answers
                    .as_ref()
                    .map(|l| l.path.clone())
                    .or(t.summary.as_ref().map(|l| l.path.clone()))
            });
            let (row, pending) = quality_row(test, a, b);
            judge::Row { row, file, pending }
        })
        .collect()
}

#[cfg(test)]
mod tests;
