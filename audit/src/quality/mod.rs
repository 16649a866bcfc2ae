//! `quality.*`: a quality test's figures recomputed from its answers and summary, and refused or
//! cut-off requests named.
//!
//! A refused request is neither right nor wrong: a test whose requests were all refused has no
//! result, and one where some were refused has a result only over the answered questions.
//!
//! Every check reads one test; [`run`] runs the table over each test in manifest order, then
//! records the test's recomputed percentage and margin.

mod scoring;

use crate::bundle::{Bundle, QualityTest};
use crate::check::{Check, Emit, Ran};
use crate::records::manifest::PageQuality;
use crate::records::quality::{Margin, QualitySummary};
use crate::records::AnswerTally;
use crate::report::{Findings, Recomputed, Severity};
use crate::stats::{agrees, fmt, margin_pts, printed_decimals, written_decimals, MarginMethod};
use serde_json::json;

/// What a quality check reads: the bundle and one of its tests.
pub type Run = fn(&Bundle, &QualityTest, &mut Emit) -> Ran;

/// `quality.scoring-disagrees`.
pub const SCORING_DISAGREES: Check<Run> = Check {
    id: "quality.scoring-disagrees",
    severity: Severity::Error,
    doc: "An answer's right/wrong mark disagrees with its extracted answer and gold, or a refused request is marked right.",
    run: scoring_disagrees,
};

/// `quality.pct-mismatch`.
pub const PCT_MISMATCH: Check<Run> = Check {
    id: "quality.pct-mismatch",
    severity: Severity::Error,
    doc: "The percentage shown is not right / total at the rounding it is shown with.",
    run: pct_mismatch,
};

/// `quality.*` checks, in the order they run over each test.
pub const CHECKS: &[Check<Run>] = &[
    Check {
        id: "quality.limit-mismatch",
        severity: Severity::Warning,
        doc: "Answers were asked with another answer limit than the contract states.",
        run: limit_mismatch,
    },
    SCORING_DISAGREES,
    Check {
        id: "quality.cutoffs",
        severity: Severity::Info,
        doc: "Answers cut off at their limit and counted as wrong.",
        run: cutoffs,
    },
    Check {
        id: "quality.answers-summary-mismatch",
        severity: Severity::Error,
        doc: "Counts in the answers file differ from the summary.",
        run: answers_summary_mismatch,
    },
    Check {
        id: "quality.refused-counted-as-wrong",
        severity: Severity::Error,
        doc: "A summary counts requests the server refused as wrong answers.",
        run: refused_counted_as_wrong,
    },
    Check {
        id: "quality.no-result",
        severity: Severity::Warning,
        doc:
            "A test has no result: every request it sent was refused, so no question was answered.",
        run: no_result,
    },
    Check {
        id: "quality.no-result-has-value",
        severity: Severity::Error,
        doc: "A test with no answered question shows a percentage or a margin.",
        run: no_result_has_value,
    },
    PCT_MISMATCH,
    Check {
        id: "quality.margin-mismatch",
        severity: Severity::Error,
        doc:
            "The 95 % margin shown is not the contract's method (normal or Wilson) at its rounding.",
        run: margin_mismatch,
    },
    Check {
        id: "quality.count-mismatch",
        severity: Severity::Error,
        doc: "The page's right / total / cut-off counts differ from the raw files.",
        run: count_mismatch,
    },
];

/// Runs every quality check over each test, then records its recomputed values.
pub fn run(b: &Bundle, out: &mut Findings) {
    for t in &b.quality {
        for c in CHECKS {
            out.check(c, |f, e| f(b, t, e));
        }
        out.recomputed.extend(recomputed(b, t));
    }
}

fn pct(right: u64, total: u64) -> Option<f64> {
    (total > 0).then(|| 100.0 * right as f64 / total as f64)
}

fn method_of(m: &Margin) -> MarginMethod {
    MarginMethod::parse(&m.method).unwrap_or(MarginMethod::Normal)
}

/// The contract's margin rule (the default when there is no contract).
fn margin_of(t: &QualityTest) -> Margin {
    t.contract
        .as_ref()
        .map(|c| c.value.margin.clone())
        .unwrap_or_default()
}

fn page_of<'a>(b: &'a Bundle, t: &QualityTest) -> Option<&'a PageQuality> {
    b.manifest.page.quality.iter().find(|q| q.test == t.test)
}

/// Refused requests, from the answers' tally or else the summary's errors.
struct Refused {
    /// Refused requests, all of them.
    all: u64,
    /// Refused requests the summary counts in its total (it may leave some out as excluded).
    counted: u64,
    /// Requests the summary counts that the server answered.
    answered: u64,
}

impl Refused {
    fn of(tally: Option<&AnswerTally>, sv: &QualitySummary) -> Self {
        let all = match tally {
            Some(v) => v.refused(),
            None => sv.errors.unwrap_or(0),
        };
        let counted = all.saturating_sub(sv.excluded.unwrap_or(0));
        Refused {
            all,
            counted,
            answered: sv.total.saturating_sub(counted),
        }
    }
}

fn limit_mismatch(_: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let (a, c) = (t.answers.as_ref()?, t.contract.as_ref()?);
    let other: u64 = a
        .value
        .max_tokens
        .iter()
        .filter(|(k, _)| **k != c.value.max_tokens)
        .map(|(_, v)| *v)
        .sum();
    if other > 0 {
        e.finding(format!(
            "{}: {other} of {} answers were asked with an answer limit other than the contract's {} tokens (limits seen: {:?})",
            t.test, a.value.total, c.value.max_tokens, a.value.max_tokens
        ))
        .file(&a.path);
    }
    Some(())
}

/// `quality.scoring-disagrees`: marks against extracted answer and gold, refusals marked right,
/// repeated ids, and cut-off answers marked right against the contract (consistency/scoring.rs).
fn scoring_disagrees(b: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let marks = marks_disagree(b, t, e);
    let cutoffs = scoring::check_cutoffs_marked_right(t, e);
    marks.or(cutoffs)
}

/// Marks against extracted answer and gold, refusals marked right, repeated ids.
fn marks_disagree(_: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let a = t.answers.as_ref()?;
    let (test, v) = (&t.test, &a.value);
    if v.gold_disagrees > 0 {
        let line = v.gold_disagrees_first_line.unwrap_or(0);
        e.finding(format!(
            "{test}: {} answers are marked right or wrong against what their extracted answer and gold say (first at line {line})",
            v.gold_disagrees
        ))
        .at(&a.path, format!("line {line}"));
    }
    if v.right_but_refused > 0 {
        e.finding(format!(
            "{test}: {} refused requests are marked right",
            v.right_but_refused
        ))
        .file(&a.path);
    }
    if let Some((line, first)) = v.duplicate_ids.first() {
        e.finding(format!(
            "{test}: {} records repeat an earlier question's id (line {line} repeats line {first}), so questions are counted twice",
            v.duplicate_count
        ))
        .at(&a.path, format!("line {line}"));
    }
    Some(())
}

fn cutoffs(_: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let (n, total, file) = match (&t.answers, &t.summary) {
        (Some(a), _) => (a.value.cutoffs_wrong, a.value.total, &a.path),
        (None, Some(s)) => (s.value.cutoffs.unwrap_or(0), s.value.total, &s.path),
        _ => return None,
    };
    if n > 0 {
        let limit = t
            .contract
            .as_ref()
            .map(|c| format!(" of {} tokens", c.value.max_tokens))
            .unwrap_or_default();
        let test = &t.test;
        e.finding(format!(
            "{test}: {n} of {total} answers were cut off at their limit{limit} and count as wrong"
        ))
        .file(file)
        .data(json!({"test": test, "cutoffs": n, "total": total}));
    }
    Some(())
}

fn answers_summary_mismatch(_: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let (s, v) = (t.summary.as_ref()?, &t.answers.as_ref()?.value);
    let sv = &s.value;
    let mut diffs = Vec::new();
    if v.total != sv.total + sv.excluded.unwrap_or(0) {
        diffs.push(match sv.excluded {
            Some(x) => format!("{} records vs total {} + {x} excluded", v.total, sv.total),
            None => format!("{} records vs total {}", v.total, sv.total),
        });
    }
    if v.right != sv.right {
        diffs.push(format!("{} right vs {}", v.right, sv.right));
    }
    if let Some(c) = sv.cutoffs.filter(|c| *c != v.cutoffs) {
        diffs.push(format!("{} cut off vs {}", v.cutoffs, c));
    }
    if !diffs.is_empty() {
        e.finding(format!(
            "{}: the answers file and the summary disagree: {}",
            t.test,
            diffs.join("; ")
        ))
        .file(&s.path)
        .data(
            json!({"answers": {"total": v.total, "right": v.right, "cutoffs": v.cutoffs},
                     "summary": {"total": sv.total, "right": sv.right, "cutoffs": sv.cutoffs}}),
        );
    }
    Some(())
}

fn refused_counted_as_wrong(_: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let s = t.summary.as_ref()?;
    let (sv, tally) = (&s.value, t.answers.as_ref().map(|a| &a.value));
    let r = Refused::of(tally, sv);
    let (refused, answered) = (r.counted, r.answered);
    let whole = tally.is_none_or(|v| sv.total + sv.excluded.unwrap_or(0) == v.total);
    if refused == 0 || sv.total < refused || !whole {
        return Some(());
    }
    let why = tally
        .map(AnswerTally::refusals_listed)
        .unwrap_or_else(|| "status and text not recorded in the summary".into());
    let right_answered = tally.map_or(sv.right, |v| v.right - v.right_but_refused);
    let over_answered = if answered == 0 {
        "no result: no question was answered".to_string()
    } else {
        let margin = margin_of(t);
        let p = 100.0 * right_answered as f64 / answered as f64;
        let m = margin_pts(right_answered, answered, margin.z, method_of(&margin)).unwrap_or(0.0);
        format!(
            "over the {answered} answered questions: {right_answered} right, {} % +- {} pts",
            fmt(p, 1),
            fmt(m, 1)
        )
    };
    let test = &t.test;
    e.finding(format!(
        "{test}: the summary counts {refused} refused requests as wrong answers ({why}); {over_answered}"
    ))
    .at(&s.path, "/total")
    .data(json!({"test": test, "refused": refused, "total": sv.total, "answered": answered,
                 "refusals": tally.map(|v| &v.refusals)}));
    Some(())
}

/// `quality.no-result` (a warning, as `speed.step-exceeds-window` is for a step sent and refused):
/// a test whose every request was refused measured nothing, so it has no result, though nothing it
/// shows is wrong. Said where no other check says it: a summary that counts the refusals as wrong
/// answers is `quality.refused-counted-as-wrong` (an error, which says "no result" too).
fn no_result(_: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let tally = t.answers.as_ref().map(|a| &a.value);
    let (refused, answered, counted, file) = match (&t.summary, &t.answers) {
        (Some(s), _) => {
            let r = Refused::of(tally, &s.value);
            (r.all, r.answered, r.counted, &s.path)
        }
        (None, Some(a)) => (a.value.refused(), a.value.answered, 0, &a.path),
        (None, None) => return None,
    };
    if answered != 0 || refused == 0 || counted != 0 {
        return Some(());
    }
    let why = tally
        .map(AnswerTally::refusals_listed)
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| "status and text not recorded in the summary".into());
    let test = &t.test;
    e.finding(format!(
        "{test}: no result: all {refused} of its requests were refused ({why}), so no question was answered and the test measured nothing"
    ))
    .file(file)
    .data(json!({"test": test, "refused": refused, "answered": 0}));
    Some(())
}

fn no_result_has_value(b: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let s = t.summary.as_ref()?;
    let sv = &s.value;
    let r = Refused::of(t.answers.as_ref().map(|a| &a.value), sv);
    if r.answered != 0 || r.all == 0 {
        return Some(());
    }
    let test = &t.test;
    if sv.pct.is_some() || sv.margin.is_some() {
        e.finding(format!(
            "{test}: no question was answered, yet the summary shows {} % +- {}; the test has no result",
            sv.pct.map_or("-".into(), |p| format!("{p:?}")),
            sv.margin.map_or("-".into(), |p| format!("{p:?}"))
        ))
        .at(&s.path, "/pct");
    }
    if let Some(p) = page_of(b, t).filter(|p| p.pct.is_some() || p.margin.is_some()) {
        e.finding(format!(
            "{test}: no question was answered, yet the page shows {} % +- {}",
            p.pct.as_deref().unwrap_or("-"),
            p.margin.as_deref().unwrap_or("-")
        ))
        .at("bundle.json", format!("/page/quality/{test}"));
    }
    Some(())
}

fn pct_mismatch(b: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let s = t.summary.as_ref()?;
    let (sv, test) = (&s.value, &t.test);
    if let (Some(exact), Some(shown)) = (pct(sv.right, sv.total), sv.pct) {
        let d = written_decimals(shown);
        if !agrees(exact, shown, d) {
            e.finding(format!(
                "{test}: the summary shows {shown} %, but {} of {} is {} %",
                sv.right,
                sv.total,
                fmt(exact, d)
            ))
            .at(&s.path, "/pct");
        }
    }
    let answered = Refused::of(t.answers.as_ref().map(|a| &a.value), sv).answered;
    let Some(p) = page_of(b, t).filter(|_| answered > 0) else {
        return Some(());
    };
    let (r, n) = (p.right.unwrap_or(sv.right), p.total.unwrap_or(sv.total));
    if let (Some(shown), Some(exact)) = (&p.pct, pct(r, n)) {
        if let Ok(x) = shown.parse::<f64>() {
            let d = printed_decimals(shown);
            if !agrees(exact, x, d) {
                e.finding(format!(
                    "{test}: the page shows {shown} %, but {r} of {n} is {} %",
                    fmt(exact, d)
                ))
                .at("bundle.json", format!("/page/quality/{test}/pct"));
            }
        }
    }
    Some(())
}

fn margin_mismatch(b: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let s = t.summary.as_ref()?;
    let (sv, test, margin) = (&s.value, &t.test, margin_of(t));
    let method = method_of(&margin);
    if let (Some(exact), Some(shown)) =
        (margin_pts(sv.right, sv.total, margin.z, method), sv.margin)
    {
        let d = written_decimals(shown);
        if !agrees(exact, shown, d) {
            let msg = margin_message(
                test,
                &format!("{shown}"),
                exact,
                d,
                (sv.right, sv.total),
                &margin,
            );
            e.finding(msg).at(&s.path, "/margin");
        }
    }
    let answered = Refused::of(t.answers.as_ref().map(|a| &a.value), sv).answered;
    let Some(p) = page_of(b, t).filter(|_| answered > 0) else {
        return Some(());
    };
    let (r, n) = (p.right.unwrap_or(sv.right), p.total.unwrap_or(sv.total));
    if let (Some(shown), Some(exact)) = (&p.margin, margin_pts(r, n, margin.z, method)) {
        if let Ok(x) = shown.parse::<f64>() {
            let d = printed_decimals(shown);
            if !agrees(exact, x, d) {
                let msg = margin_message(test, shown, exact, d, (r, n), &margin);
                e.finding(msg)
                    .at("bundle.json", format!("/page/quality/{test}/margin"));
            }
        }
    }
    Some(())
}

fn count_mismatch(b: &Bundle, t: &QualityTest, e: &mut Emit) -> Ran {
    let sv = &t.summary.as_ref()?.value;
    let p = page_of(b, t)?;
    let mut diffs = Vec::new();
    if let Some(r) = p.right.filter(|r| *r != sv.right) {
        diffs.push(format!(
            "right {r} on the page, {} in the summary",
            sv.right
        ));
    }
    // A row with no result may print the questions asked: the contract's count, or the
    // summary's total + excluded.
    let excluded = sv.excluded.unwrap_or(0);
    let asked = |n: u64| {
        p.pct.is_none()
            && (n == sv.total + excluded
                || t.contract.as_ref().is_some_and(|c| c.value.questions == n))
    };
    if let Some(n) = p.total.filter(|n| *n != sv.total && !asked(*n)) {
        diffs.push(format!(
            "total {n} on the page, {} in the summary",
            sv.total
        ));
    }
    let raw_cut = t.answers.as_ref().map(|a| a.value.cutoffs).or(sv.cutoffs);
    if let (Some(c), Some(raw)) = (p.cutoffs, raw_cut) {
        if c != raw {
            diffs.push(format!("{c} cut off on the page, {raw} in the raw files"));
        }
    }
    if !diffs.is_empty() {
        e.finding(format!("{}: {}", t.test, diffs.join("; ")))
            .at("bundle.json", format!("/page/quality/{}", t.test));
    }
    Some(())
}

/// The test's percentage and margin recomputed: over the summary's counts (none when no question
/// was answered), or the percentage over the answered questions of the answers file when there is
/// no summary. A test whose requests were all refused has no result, and its rows do not match
/// (`matches` false): a result was asked for and there is none to agree with.
fn recomputed(b: &Bundle, t: &QualityTest) -> Vec<Recomputed> {
    let (test, page) = (&t.test, page_of(b, t));
    let Some(s) = &t.summary else {
        return t
            .answers
            .iter()
            .map(|a| {
                let refused = a.value.answered == 0 && a.value.total > 0;
                unmatched_if(
                    refused,
                    Recomputed::new(
                        format!("quality.{test}.pct"),
                        pct(a.value.right, a.value.answered),
                        None,
                        page.and_then(|p| p.pct.clone()),
                    ),
                )
            })
            .collect();
    };
    let sv = &s.value;
    let margin = margin_of(t);
    let r = Refused::of(t.answers.as_ref().map(|a| &a.value), sv);
    let answered = r.answered;
    let refused = answered == 0 && r.all > 0;
    let valued = |x: Option<f64>| if answered == 0 { None } else { x };
    [
        Recomputed::new(
            format!("quality.{test}.pct"),
            valued(pct(sv.right, sv.total)),
            sv.pct,
            page.and_then(|p| p.pct.clone()),
        ),
        Recomputed::new(
            format!("quality.{test}.margin"),
            valued(margin_pts(sv.right, sv.total, margin.z, method_of(&margin))),
            sv.margin,
            page.and_then(|p| p.margin.clone()),
        ),
    ]
    .into_iter()
    .map(|row| unmatched_if(refused, row))
    .collect()
}

/// The row, with `matches` false when `refused` (every request of its test refused).
fn unmatched_if(refused: bool, mut row: Recomputed) -> Recomputed {
    if refused {
        row.matches = false;
    }
    row
}

/// The message of a margin that does not match, with a hint when the other method does.
fn margin_message(
    test: &str,
    shown: &str,
    exact: f64,
    d: usize,
    (r, n): (u64, u64),
    m: &Margin,
) -> String {
    let method = method_of(m);
    let other = match method {
        MarginMethod::Normal => MarginMethod::Wilson,
        MarginMethod::Wilson => MarginMethod::Normal,
    };
    let hint = shown
        .parse::<f64>()
        .ok()
        .zip(margin_pts(r, n, m.z, other))
        .filter(|(x, o)| agrees(*o, *x, d))
        .map(|(_, o)| {
            format!(
                " ({} gives {}, which does match: does the contract name the wrong method?)",
                other.name(),
                fmt(o, d + 1)
            )
        })
        .unwrap_or_default();
    format!(
        "{test}: the margin shown is {shown} pts, but the {} margin of {r} of {n} is {} pts{hint}",
        method.name(),
        fmt(exact, d.max(1) + 1)
    )
}

crate::consistency::across_files! { "quality":
    QUESTIONS_MISMATCH: "quality.questions-mismatch", Error, counts::check_questions, "A quality test's answer records, or its summary's total + excluded, differ from the contract's question count.";
    ANSWERED_BEYOND_WINDOW: "quality.answered-beyond-window", Error, window::check_answered_quality, "A quality answer recorded as answered needs more tokens (prompt + answer limit) than the server's window.";
    REFUSAL_FITS_WINDOW: "quality.refusal-fits-window", Error, window::check_refusals_that_fit, "A request recorded as refused for its length fits the window its own refusal text names.";
    EXCLUDED_UNEARNED: "quality.excluded-unearned", Error, excluded::check_excluded, "A summary excludes more requests than its answers file shows as not answered (answered answers moved out of the total).";
    IMPOSSIBLE_RECORD: "quality.impossible-record", Error, impossible::check_quality_records, "A quality record cannot be: right above total, a percentage out of range, more reply tokens than the limit, negative seconds.";
}

#[cfg(test)]
mod tests;
