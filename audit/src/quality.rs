//! `quality.*`: a quality test's figures recomputed from its answers and summary, and refused or
//! cut-off requests named.
//!
//! A refused request is neither right nor wrong: a test whose requests were all refused has no
//! result, and one where some were refused has a result only over the answered questions.

use crate::bundle::{Bundle, Out, QualityTest};
use crate::catalogue::Check;
use crate::records::quality::Margin;
use crate::report::{Finding, Recomputed, Severity};
use crate::stats::{agrees, fmt, margin_pts, printed_decimals, written_decimals, MarginMethod};
use serde_json::json;

/// `quality.*` checks.
pub const CHECKS: &[Check] = &[
    Check {
        id: "quality.refused-counted-as-wrong",
        severity: Severity::Error,
        doc: "A summary counts requests the server refused as wrong answers.",
    },
    Check {
        id: "quality.no-result-has-value",
        severity: Severity::Error,
        doc: "A test with no answered question shows a percentage or a margin.",
    },
    Check {
        id: "quality.pct-mismatch",
        severity: Severity::Error,
        doc: "The percentage shown is not right / total at the rounding it is shown with.",
    },
    Check {
        id: "quality.margin-mismatch",
        severity: Severity::Error,
        doc: "The 95 % margin shown is not the contract's method (normal or Wilson) at its rounding.",
    },
    Check {
        id: "quality.count-mismatch",
        severity: Severity::Error,
        doc: "The page's right / total / cut-off counts differ from the raw files.",
    },
    Check {
        id: "quality.answers-summary-mismatch",
        severity: Severity::Error,
        doc: "Counts in the answers file differ from the summary.",
    },
    Check {
        id: "quality.cutoffs",
        severity: Severity::Info,
        doc: "Answers cut off at their limit and counted as wrong.",
    },
    Check {
        id: "quality.scoring-disagrees",
        severity: Severity::Error,
        doc: "An answer's right/wrong mark disagrees with its extracted answer and gold, or a refused request is marked right.",
    },
    Check {
        id: "quality.limit-mismatch",
        severity: Severity::Warning,
        doc: "Answers were asked with another answer limit than the contract states.",
    },
];

fn pct(right: u64, total: u64) -> Option<f64> {
    (total > 0).then(|| 100.0 * right as f64 / total as f64)
}

fn method_of(m: &Margin) -> MarginMethod {
    MarginMethod::parse(&m.method).unwrap_or(MarginMethod::Normal)
}

pub(crate) fn check(b: &Bundle, out: &mut Out) {
    for t in &b.quality {
        check_test(b, t, out);
    }
}

fn check_test(b: &Bundle, t: &QualityTest, out: &mut Out) {
    let test = t.test.as_str();
    let page = b.manifest.page.quality.iter().find(|q| q.test == test);
    let margin = t
        .contract
        .as_ref()
        .map(|c| c.value.margin.clone())
        .unwrap_or_default();
    let method = method_of(&margin);
    let tally = t.answers.as_ref().map(|a| &a.value);

    // Answers against the contract.
    if let (Some(a), Some(c)) = (&t.answers, &t.contract) {
        out.ran("quality.limit-mismatch");
        let other: u64 = a
            .value
            .max_tokens
            .iter()
            .filter(|(k, _)| **k != c.value.max_tokens)
            .map(|(_, v)| *v)
            .sum();
        if other > 0 {
            out.push(
                Finding::new(
                    "quality.limit-mismatch",
                    Severity::Warning,
                    format!(
                        "{test}: {other} of {} answers were asked with an answer limit other than the contract's {} tokens (limits seen: {:?})",
                        a.value.total, c.value.max_tokens, a.value.max_tokens
                    ),
                )
                .file(&a.path),
            );
        }
    }

    // Scoring inside the answers file.
    if let Some(a) = &t.answers {
        out.ran("quality.scoring-disagrees");
        let v = &a.value;
        if v.gold_disagrees > 0 {
            out.push(
                Finding::new(
                    "quality.scoring-disagrees",
                    Severity::Error,
                    format!(
                        "{test}: {} answers are marked right or wrong against what their extracted answer and gold say (first at line {})",
                        v.gold_disagrees,
                        v.gold_disagrees_first_line.unwrap_or(0)
                    ),
                )
                .file(&a.path)
                .pointer(format!("line {}", v.gold_disagrees_first_line.unwrap_or(0))),
            );
        }
        if v.right_but_refused > 0 {
            out.push(
                Finding::new(
                    "quality.scoring-disagrees",
                    Severity::Error,
                    format!(
                        "{test}: {} refused requests are marked right",
                        v.right_but_refused
                    ),
                )
                .file(&a.path),
            );
        }
        if let Some((line, first)) = v.duplicate_ids.first() {
            out.push(
                Finding::new(
                    "quality.scoring-disagrees",
                    Severity::Error,
                    format!(
                        "{test}: {} records repeat an earlier question's id (line {line} repeats line {first}), so questions are counted twice",
                        v.duplicate_count
                    ),
                )
                .file(&a.path)
                .pointer(format!("line {line}")),
            );
        }
    }

    // Cut-offs.
    if tally.is_some() || t.summary.is_some() {
        out.ran("quality.cutoffs");
        let (n, total, file) = match (&t.answers, &t.summary) {
            (Some(a), _) => (a.value.cutoffs_wrong, a.value.total, a.path.clone()),
            (None, Some(s)) => (s.value.cutoffs.unwrap_or(0), s.value.total, s.path.clone()),
            _ => (0, 0, String::new()),
        };
        if n > 0 {
            let limit = t
                .contract
                .as_ref()
                .map(|c| format!(" of {} tokens", c.value.max_tokens))
                .unwrap_or_default();
            out.push(
                Finding::new(
                    "quality.cutoffs",
                    Severity::Info,
                    format!("{test}: {n} of {total} answers were cut off at their limit{limit} and count as wrong"),
                )
                .file(file)
                .data(json!({"test": test, "cutoffs": n, "total": total})),
            );
        }
    }

    let Some(s) = &t.summary else {
        if let Some(a) = &t.answers {
            let v = &a.value;
            out.recomputed.push(Recomputed {
                key: format!("quality.{test}.pct"),
                value: pct(v.right, v.answered),
                file: None,
                page: page.and_then(|p| p.pct.clone()),
            });
        }
        return;
    };
    let sv = &s.value;

    // Answers against the summary.
    if let Some(v) = tally {
        out.ran("quality.answers-summary-mismatch");
        let mut diffs = Vec::new();
        let counted = sv.total + sv.excluded.unwrap_or(0);
        if v.total != counted {
            diffs.push(match sv.excluded {
                Some(x) => format!("{} records vs total {} + {x} excluded", v.total, sv.total),
                None => format!("{} records vs total {}", v.total, sv.total),
            });
        }
        if v.right != sv.right {
            diffs.push(format!("{} right vs {}", v.right, sv.right));
        }
        if let Some(c) = sv.cutoffs {
            if c != v.cutoffs {
                diffs.push(format!("{} cut off vs {}", v.cutoffs, c));
            }
        }
        if !diffs.is_empty() {
            out.push(
                Finding::new(
                    "quality.answers-summary-mismatch",
                    Severity::Error,
                    format!("{test}: the answers file and the summary disagree: {}", diffs.join("; ")),
                )
                .file(&s.path)
                .data(json!({"answers": {"total": v.total, "right": v.right, "cutoffs": v.cutoffs},
                             "summary": {"total": sv.total, "right": sv.right, "cutoffs": sv.cutoffs}})),
            );
        }
    }

    // Refused requests.
    let refused = match tally {
        Some(v) => v.refused(),
        None => sv.errors.unwrap_or(0),
    };
    // Refused requests the summary leaves out of its total are not counted as wrong.
    let excluded = sv.excluded.unwrap_or(0);
    let refused_all = refused;
    let refused = refused.saturating_sub(excluded);
    let answered = sv.total.saturating_sub(refused);
    out.ran("quality.refused-counted-as-wrong");
    out.ran("quality.no-result-has-value");
    if refused > 0 && sv.total >= refused && (tally.is_none_or(|v| sv.total + excluded == v.total))
    {
        let why = tally
            .map(|v| {
                v.refusals
                    .iter()
                    .map(|(k, n)| format!("{n} x {k}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_else(|| "status and text not recorded in the summary".into());
        let right_answered = tally.map_or(sv.right, |v| v.right - v.right_but_refused);
        let over_answered = if answered == 0 {
            "no result: no question was answered".to_string()
        } else {
            let p = 100.0 * right_answered as f64 / answered as f64;
            let m = margin_pts(right_answered, answered, margin.z, method).unwrap_or(0.0);
            format!(
                "over the {answered} answered questions: {right_answered} right, {} % +- {} pts",
                fmt(p, 1),
                fmt(m, 1)
            )
        };
        out.push(
            Finding::new(
                "quality.refused-counted-as-wrong",
                Severity::Error,
                format!(
                    "{test}: the summary counts {refused} refused requests as wrong answers ({why}); {over_answered}"
                ),
            )
            .file(&s.path)
            .pointer("/total")
            .data(json!({"test": test, "refused": refused, "total": sv.total, "answered": answered,
                         "refusals": tally.map(|v| &v.refusals)})),
        );
    }
    if answered == 0 && refused_all > 0 {
        if sv.pct.is_some() || sv.margin.is_some() {
            out.push(
                Finding::new(
                    "quality.no-result-has-value",
                    Severity::Error,
                    format!(
                        "{test}: no question was answered, yet the summary shows {} % +- {}; the test has no result",
                        sv.pct.map_or("-".into(), |p| format!("{p:?}")),
                        sv.margin.map_or("-".into(), |p| format!("{p:?}"))
                    ),
                )
                .file(&s.path)
                .pointer("/pct"),
            );
        }
        if let Some(p) = page.filter(|p| p.pct.is_some() || p.margin.is_some()) {
            out.push(
                Finding::new(
                    "quality.no-result-has-value",
                    Severity::Error,
                    format!(
                        "{test}: no question was answered, yet the page shows {} % +- {}",
                        p.pct.as_deref().unwrap_or("-"),
                        p.margin.as_deref().unwrap_or("-")
                    ),
                )
                .file("bundle.json")
                .pointer(format!("/page/quality/{test}")),
            );
        }
    }

    // Percentage and margin from the summary's counts.
    let exact_pct = pct(sv.right, sv.total);
    out.ran("quality.pct-mismatch");
    out.ran("quality.margin-mismatch");
    if let (Some(e), Some(shown)) = (exact_pct, sv.pct) {
        let d = written_decimals(shown);
        if !agrees(e, shown, d) {
            out.push(
                Finding::new(
                    "quality.pct-mismatch",
                    Severity::Error,
                    format!(
                        "{test}: the summary shows {shown} %, but {} of {} is {} %",
                        sv.right,
                        sv.total,
                        fmt(e, d)
                    ),
                )
                .file(&s.path)
                .pointer("/pct"),
            );
        }
    }
    let exact_margin = margin_pts(sv.right, sv.total, margin.z, method);
    if let (Some(e), Some(shown)) = (exact_margin, sv.margin) {
        let d = written_decimals(shown);
        if !agrees(e, shown, d) {
            out.push(
                margin_finding(test, &format!("{shown}"), e, d, sv.right, sv.total, &margin)
                    .file(&s.path)
                    .pointer("/margin"),
            );
        }
    }
    let page_total_ok = answered > 0;
    if let Some(p) = page {
        if page_total_ok {
            let (r, n) = (p.right.unwrap_or(sv.right), p.total.unwrap_or(sv.total));
            if let (Some(shown), Some(e)) = (&p.pct, pct(r, n)) {
                if let Ok(x) = shown.parse::<f64>() {
                    let d = printed_decimals(shown);
                    if !agrees(e, x, d) {
                        out.push(
                            Finding::new(
                                "quality.pct-mismatch",
                                Severity::Error,
                                format!(
                                    "{test}: the page shows {shown} %, but {r} of {n} is {} %",
                                    fmt(e, d)
                                ),
                            )
                            .file("bundle.json")
                            .pointer(format!("/page/quality/{test}/pct")),
                        );
                    }
                }
            }
            if let (Some(shown), Some(e)) = (&p.margin, margin_pts(r, n, margin.z, method)) {
                if let Ok(x) = shown.parse::<f64>() {
                    let d = printed_decimals(shown);
                    if !agrees(e, x, d) {
                        out.push(
                            margin_finding(test, shown, e, d, r, n, &margin)
                                .file("bundle.json")
                                .pointer(format!("/page/quality/{test}/margin")),
                        );
                    }
                }
            }
        }
        out.ran("quality.count-mismatch");
        let mut diffs = Vec::new();
        if let Some(r) = p.right.filter(|r| *r != sv.right) {
            diffs.push(format!(
                "right {r} on the page, {} in the summary",
                sv.right
            ));
        }
        // A row with no result may print the questions asked: the contract's count, or the
        // summary's total + excluded.
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
        let raw_cut = tally.map(|v| v.cutoffs).or(sv.cutoffs);
        if let (Some(c), Some(raw)) = (p.cutoffs, raw_cut) {
            if c != raw {
                diffs.push(format!("{c} cut off on the page, {raw} in the raw files"));
            }
        }
        if !diffs.is_empty() {
            out.push(
                Finding::new(
                    "quality.count-mismatch",
                    Severity::Error,
                    format!("{test}: {}", diffs.join("; ")),
                )
                .file("bundle.json")
                .pointer(format!("/page/quality/{test}")),
            );
        }
    }
    out.recomputed.push(Recomputed {
        key: format!("quality.{test}.pct"),
        value: if answered == 0 { None } else { exact_pct },
        file: sv.pct,
        page: page.and_then(|p| p.pct.clone()),
    });
    out.recomputed.push(Recomputed {
        key: format!("quality.{test}.margin"),
        value: if answered == 0 { None } else { exact_margin },
        file: sv.margin,
        page: page.and_then(|p| p.margin.clone()),
    });
}

fn margin_finding(
    test: &str,
    shown: &str,
    exact: f64,
    d: usize,
    r: u64,
    n: u64,
    m: &Margin,
) -> Finding {
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
    Finding::new(
        "quality.margin-mismatch",
        Severity::Error,
        format!(
            "{test}: the margin shown is {shown} pts, but the {} margin of {r} of {n} is {} pts{hint}",
            method.name(),
            fmt(exact, d.max(1) + 1)
        ),
    )
}
