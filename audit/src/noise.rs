//! `noise.*`: the smallest difference each figure of a page could show, told from the page's own
//! repeated runs, with no rerun (`rigaudit noise`).
//!
//! # Definitions
//!
//! - **Speed figure** (a key of a kind the decision rule judges: decode, prefill, TTFT,
//!   throughput): its step's counted runs (a concurrency level's rounds), as replay reads them
//!   ([`crate::figures`]). With n ≥ 2 runs of log variance s², two sessions of n runs each tell
//!   apart only a difference beyond the half-width of the 90 % interval of their log ratio at no
//!   change, t(0.95, 2 (n - 1)) √(2 s² / n + 2 σs²), σs the rule's declared session spread
//!   ([`crate::decide::ratio::no_change_half_width`]); within one session (σs = 0) it is
//!   narrower. The runs a side that would tell ±5 % and ±10 % are the rule's planning figures
//!   ([`crate::decide::ratio::runs_plan`]), across sessions and within one. The spread is the
//!   step's own, not shrunk toward the page's other steps as a diff's rule shrinks it.
//! - **Quality figure** (`quality.<test>.pct`): over its answered questions, the 90 % half-width
//!   of two unpaired runs at this score (Newcombe's hybrid score interval). When the answers
//!   file answers a question more than once (repeated trials), the flip rate (the share of those
//!   questions scored right on one trial and wrong on another) and the half-width of a paired
//!   comparison at that rate, 100 z √(f / n) points; with one answer per question the flip rate
//!   cannot be measured, and the report says the largest flip rate at which a paired comparison
//!   over these questions would tell the rule's band.
//! - **Cannot tell**: a figure of one run, or a headline with no per-run records, has no spread:
//!   `noise.cannot-tell` at warning; a figure with no value at all, as a note. A page of which no
//!   figure can be told is incomplete.

use crate::bundle::{Bundle, QualityTest};
use crate::check::{Check, Emit, Ran};
use crate::decide::quality::{
    flip_rate_within, paired_half_width, questions_within, unpaired_half_width,
};
use crate::decide::ratio::{log_moments, no_change_half_width, runs_plan};
use crate::decide::{DecisionRule, FigureKind, RunsNeeded, RunsPlan, Tolerances};
use crate::figures::{recompute, samples};
use crate::records::quality::Trials;
use crate::report::{Findings, Severity};
use crate::verdict::{NoiseBasis, NoiseRow, QualityNoise, RunsToTell, SpeedNoise};
use std::collections::BTreeSet;

/// What a `noise.*` row runs: it reads the figures placed in the page, each with its noise row;
/// `Some(())` when there was a figure.
pub type Run = fn(&[Placed], &mut Emit) -> Ran;

/// `noise.smallest-difference`.
pub const SMALLEST_DIFFERENCE: Check<Run> = Check {
    id: "noise.smallest-difference",
    severity: Severity::Info,
    doc: "The smallest difference a figure could show, from the page's own repeated runs: the 90 % half-width between two sessions of as many runs (with the declared session spread, and within one session) and the runs a side to tell ±5 % / ±10 %; for quality, in points, unpaired and (with repeated answers) paired at the measured flip rate.",
    run: smallest_difference,
};

/// `noise.cannot-tell`.
pub const CANNOT_TELL: Check<Run> = Check {
    id: "noise.cannot-tell",
    severity: Severity::Warning,
    doc: "A figure whose smallest difference cannot be told from the page: one run, or a headline with no per-run records, has no spread measured (a figure with no value at all is a note).",
    run: cannot_tell,
};

/// `noise.*` checks.
pub const CHECKS: &[Check<Run>] = &[SMALLEST_DIFFERENCE, CANNOT_TELL];

/// What [`noise`] found.
#[derive(Debug, Default)]
pub struct Noised {
    /// One row per figure, speed in the page's order, then quality.
    pub rows: Vec<NoiseRow>,
    /// One finding per row; incomplete when no figure could be told.
    pub found: Findings,
}

/// A row with the file (and JSON pointer) its figure comes from.
pub struct Placed {
    row: NoiseRow,
    file: Option<String>,
    pointer: Option<String>,
}

/// The smallest difference each figure of `b` could show, judged with `rule`'s session spreads
/// and quality band. See the module docs.
pub fn noise(b: &Bundle, rule: &DecisionRule) -> Noised {
    let tol = rule.tolerances();
    let mut placed = speed_rows(b, &tol);
    placed.extend(b.quality.iter().map(|t| quality_row(t, &tol)));
    let mut found = Findings::default();
    for row in CHECKS {
        found.check(row, |run, emit| run(&placed, emit));
    }
    let rows: Vec<NoiseRow> = placed.into_iter().map(|p| p.row).collect();
    found.incomplete = nothing_told(&rows);
    Noised { rows, found }
}

/// Why a report of these rows settled nothing, when none could be told.
fn nothing_told(rows: &[NoiseRow]) -> Option<String> {
    if rows.is_empty() {
        return Some(
            "the bundle holds no speed result and no quality test: no figure to tell the noise of"
                .into(),
        );
    }
    (!rows.iter().any(|r| r.basis.told())).then(|| {
        "no figure has repeated runs or answered questions: the smallest difference of none can be told from this page".into()
    })
}

/// `noise.smallest-difference`: every figure whose noise the page tells.
fn smallest_difference(placed: &[Placed], out: &mut Emit) -> Ran {
    for p in placed.iter().filter(|p| p.row.basis.told()) {
        at_place(p, out.info(p.row.why.clone()));
    }
    (!placed.is_empty()).then_some(())
}

/// `noise.cannot-tell`: every figure whose noise the page cannot tell (a figure with no value at
/// all, as a note).
fn cannot_tell(placed: &[Placed], out: &mut Emit) -> Ran {
    for p in placed.iter().filter(|p| !p.row.basis.told()) {
        let severity = match p.row.basis {
            NoiseBasis::NoValue => Severity::Info,
            _ => Severity::Warning,
        };
        at_place(p, out.at_severity(severity, p.row.why.clone()));
    }
    (!placed.is_empty()).then_some(())
}

/// Points a finding at the figure's file and place.
fn at_place(p: &Placed, mark: crate::check::Mark<'_>) {
    let mark = mark.maybe_file(p.file.as_deref());
    if let Some(pointer) = &p.pointer {
        mark.pointer(pointer.clone());
    }
}

/// The speed keys a noise row is told of: those of a kind the decision rule judges.
fn speed_key(key: &str) -> Option<FigureKind> {
    FigureKind::of_key(key).filter(|k| *k != FigureKind::Quality)
}

/// The order of speed rows: as a page prints them, then by the number after the dot.
fn order(key: &str) -> (usize, u64, String) {
    const FAMILIES: &[&str] = &[
        "decode",
        "prefill",
        "ttft",
        "conc_total",
        "conc_per_request",
        "ctx_decode",
        "ctx_prefill",
        "l1_decode",
    ];
    let (head, rest) = key.split_once('.').unwrap_or((key, ""));
    let family = FAMILIES.iter().position(|f| *f == head);
    let n = rest.parse().unwrap_or(0);
    (family.unwrap_or(FAMILIES.len()), n, key.to_string())
}

/// One row per speed figure of the result: its runs by the contract, its value recomputed from
/// them, else the headline the result writes.
fn speed_rows(b: &Bundle, tol: &Tolerances) -> Vec<Placed> {
    let Some(result) = &b.speed_result else {
        return Vec::new();
    };
    let r = &result.value;
    let contract = b.speed_contract.as_ref().map(|c| &c.value);
    let (values, runs) = match contract {
        Some(c) => (recompute(c, r), samples(c, r)),
        None => Default::default(),
    };
    let keys: BTreeSet<&String> = runs.keys().chain(r.values.keys()).collect();
    let mut keys: Vec<&String> = keys
        .into_iter()
        .filter(|k| speed_key(k).is_some())
        .collect();
    keys.sort_by_key(|k| order(k));
    keys.into_iter()
        .map(|key| {
            let headline = r.values.get(key).copied().flatten();
            let value = values.get(key).copied().flatten().or(headline);
            let xs = runs.get(key).map_or(&[][..], Vec::as_slice);
            Placed {
                row: speed_row(key, xs, value, tol),
                file: Some(result.path.clone()),
                pointer: r.values.contains_key(key).then(|| values_pointer(key)),
            }
        })
        .collect()
}

/// The JSON pointer of a key of the speed result's `values`.
fn values_pointer(key: &str) -> String {
    format!("/values/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Words of a step's runs: a concurrency level's are rounds.
fn runs_word(key: &str, n: usize) -> String {
    let word = if key.starts_with("conc_") {
        "round"
    } else {
        "run"
    };
    match n {
        1 => format!("one {word}"),
        n => format!("{n} {word}s"),
    }
}

/// One speed figure's row from its runs `xs`.
fn speed_row(key: &str, xs: &[f64], value: Option<f64>, tol: &Tolerances) -> NoiseRow {
    let session_sd = speed_key(key).map_or(0.0, |k| tol.of(k).session_sd);
    let mut row = NoiseRow {
        key: key.to_string(),
        value,
        n: xs.len(),
        basis: NoiseBasis::NoValue,
        speed: None,
        quality: None,
        why: String::new(),
    };
    let cannot = "no spread measured; the smallest difference cannot be told from this page";
    (row.basis, row.why) = match (xs.len(), value) {
        (0, Some(_)) => (
            NoiseBasis::HeadlineOnly,
            format!("{key}: a headline figure only, no per-run records: {cannot}; publish each run's record"),
        ),
        (0, None) => (
            NoiseBasis::NoValue,
            format!("{key}: no value: no counted run gave one (`rigaudit verify` says why); nothing to tell"),
        ),
        (1, _) => (
            NoiseBasis::OneRun,
            format!("{key}: {}: {cannot}; record 3 runs or more for the decision rule's interval", runs_word(key, 1)),
        ),
        _ => match speed_noise(xs, session_sd) {
            Some(s) => {
                row.speed = Some(s);
                (NoiseBasis::Runs, speed_words(key, xs.len(), &s))
            }
            None => (
                NoiseBasis::NoValue,
                format!("{key}: a run with no positive value: no spread can be measured; nothing to tell"),
            ),
        },
    };
    row
}

/// The numbers of a speed figure of two runs or more (`None` when a run is not positive).
fn speed_noise(xs: &[f64], session_sd: f64) -> Option<SpeedNoise> {
    let var = log_moments(xs)?.1?;
    let n = xs.len();
    let session_var = 2.0 * session_sd.powi(2);
    let pct = |h: f64| 100.0 * h.exp_m1();
    let across = pct(no_change_half_width(var, n, session_var)?);
    let within = pct(no_change_half_width(var, n, 0.0)?);
    Some(SpeedNoise {
        log_sd_pct: 100.0 * var.sqrt(),
        session_sd_pct: 100.0 * session_sd,
        half_width_pct: across,
        half_width_within_pct: within,
        runs_to_tell: beyond_page(as_counts(runs_plan(var, session_var)), across, n),
        runs_to_tell_within: beyond_page(as_counts(runs_plan(var, 0.0)), within, n),
    })
}

/// The plan's counts, each one run more than the page's `n` at least where the page's own
/// half-width `half_pct` is still wider than the move: the plan takes the normal quantile for t
/// (as the rule's `runs_needed` does, which it floors the same way), so at few runs it can name
/// fewer than already fail to tell the move.
fn beyond_page(t: RunsToTell, half_pct: f64, n: usize) -> RunsToTell {
    let floor = |count: usize, effect_pct: f64| match count {
        c if c != 0 && c <= n && half_pct > effect_pct => n + 1,
        c => c,
    };
    RunsToTell {
        pct5: floor(t.pct5, 5.0),
        pct10: floor(t.pct10, 10.0),
    }
}

/// A plan as the report's counts (0: no number of runs).
fn as_counts(p: RunsPlan) -> RunsToTell {
    let count = |n: RunsNeeded| match n {
        RunsNeeded::Runs(n) => n,
        RunsNeeded::NotByRuns => 0,
    };
    RunsToTell {
        pct5: count(p.pct5),
        pct10: count(p.pct10),
    }
}

/// `7 / 2` (`no number` for none) and where: `no number of runs across sessions (...)` when
/// neither can be told.
fn plan_words(t: RunsToTell, place: &str) -> String {
    if t.pct5 == 0 && t.pct10 == 0 {
        return format!("no number of runs {place} (the session spread alone is wider)");
    }
    let one = |n: usize| match n {
        0 => "no number".to_string(),
        n => n.to_string(),
    };
    format!("{} / {} {place}", one(t.pct5), one(t.pct10))
}

/// The sentence of a speed figure whose spread was measured.
fn speed_words(key: &str, n: usize, s: &SpeedNoise) -> String {
    let runs = runs_word(key, n);
    format!(
        "{key}: {runs}, spread {:.1} %: two sessions of {runs} each tell apart only a difference beyond ±{:.1} % (90 % interval of their log ratio, the declared session spread of {:.1} % a session included); within one session, the runs' spread only, ±{:.1} %; runs a side to tell ±5 % / ±10 %: {}, {}",
        s.log_sd_pct,
        s.half_width_pct,
        s.session_sd_pct,
        s.half_width_within_pct,
        plan_words(s.runs_to_tell, "across sessions"),
        plan_words(s.runs_to_tell_within, "within one session"),
    )
}

/// What a quality test's files say of its answered questions.
struct Answered {
    /// Records answered and of them right.
    answered: u64,
    right: u64,
    /// The answers file's questions by id; `None` from a summary alone.
    trials: Option<Trials>,
    file: String,
}

fn answered_of(t: &QualityTest) -> Option<Answered> {
    if let Some(a) = &t.answers {
        let v = &a.value;
        return Some(Answered {
            answered: v.answered,
            right: v.right.saturating_sub(v.right_but_refused).min(v.answered),
            trials: Some(v.trials()),
            file: a.path.clone(),
        });
    }
    let s = t.summary.as_ref()?;
    let answered = s.value.total - s.value.errors.unwrap_or(0).min(s.value.total);
    Some(Answered {
        answered,
        right: s.value.right.min(answered),
        trials: None,
        file: s.path.clone(),
    })
}

/// One quality test's row.
fn quality_row(t: &QualityTest, tol: &Tolerances) -> Placed {
    let key = format!("quality.{}.pct", t.test);
    let found = answered_of(t);
    let mut row = NoiseRow {
        key: key.clone(),
        value: None,
        n: found.as_ref().map_or(0, |a| a.answered as usize),
        basis: NoiseBasis::NoValue,
        speed: None,
        quality: None,
        why: format!("{key}: no summary or answers file: nothing to tell"),
    };
    let file = found.as_ref().map(|a| a.file.clone());
    if let Some(a) = found.filter(|a| a.answered > 0) {
        let pct = 100.0 * a.right as f64 / a.answered as f64;
        let q = quality_noise(&a, pct, tol.quality.band);
        row.value = Some(pct);
        row.basis = NoiseBasis::Questions;
        row.why = quality_words(&key, pct, &q, a.trials.is_some());
        row.quality = Some(q);
    } else if file.is_some() {
        row.why =
            format!("{key}: no question answered (`rigaudit verify` says why): nothing to tell");
    }
    Placed {
        row,
        file,
        pointer: None,
    }
}

/// The numbers of a quality figure with questions answered.
fn quality_noise(a: &Answered, pct: f64, band: f64) -> QualityNoise {
    let questions = a.trials.map_or(a.answered, |t| t.questions);
    let right = (pct / 100.0 * questions as f64).round() as u64;
    let repeated = a.trials.map_or(0, |t| t.repeated);
    let flip = a
        .trials
        .filter(|t| t.repeated > 0)
        .map(|t| t.flipped as f64 / t.repeated as f64);
    QualityNoise {
        questions: questions as usize,
        half_width_unpaired_points: unpaired_half_width(right, questions).unwrap_or(100.0),
        repeated_questions: repeated as usize,
        flip_rate_pct: flip.map(|f| 100.0 * f),
        half_width_paired_points: flip.and_then(|f| paired_half_width(f, questions)),
        band_points: band,
        flip_rate_for_band_pct: 100.0 * flip_rate_within(band, questions),
        questions_for_band: flip.map(|f| questions_within(band, f)),
    }
}

/// The sentence of a quality figure: unpaired, then paired at the measured flip rate, or why the
/// flip rate cannot be measured and what a paired comparison would need.
fn quality_words(key: &str, pct: f64, q: &QualityNoise, has_answers: bool) -> String {
    let n = q.questions;
    let unpaired = format!(
        "{key}: {pct:.1} % of {n} questions: two unpaired runs of this size tell apart only a difference beyond ±{:.1} points (90 % interval)",
        q.half_width_unpaired_points
    );
    let band = q.band_points;
    match (q.flip_rate_pct, q.half_width_paired_points) {
        (Some(f), Some(paired)) => format!(
            "{unpaired}; {} questions answered more than once, {f:.1} % of them flipped between trials: a paired comparison over the {n} questions tells ±{paired:.1} points at that flip rate ({} questions for ±{band:.1} points)",
            q.repeated_questions,
            q.questions_for_band.unwrap_or(0),
        ),
        _ if has_answers => format!(
            "{unpaired}; one answer per question, so the flip rate cannot be measured from this page: a paired comparison over the same {n} questions tells ±{band:.1} points only if at most {:.1} % of them ({:.1} questions) flip between runs; answer each question twice to measure it",
            q.flip_rate_for_band_pct,
            q.flip_rate_for_band_pct / 100.0 * n as f64,
        ),
        _ => format!(
            "{unpaired}; no answers file, so neither the flip rate nor a paired comparison can be had from this page: publish each question's answer by id, answered twice"
        ),
    }
}

#[cfg(test)]
mod tests;
