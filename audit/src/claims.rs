//! `claims.*`: which figures of the page rest on files that were not published, or on records
//! this bundle reconstructed rather than copied.

use crate::bundle::{Bundle, Out};
use crate::catalogue::Check;
use crate::records::FileKind;
use crate::report::{Finding, Severity};

/// `claims.*` checks.
pub const CHECKS: &[Check] = &[
    Check {
        id: "claims.unpublished",
        severity: Severity::Warning,
        doc: "A figure of the page rests on a raw file the page did not publish.",
    },
    Check {
        id: "claims.reconstructed",
        severity: Severity::Info,
        doc: "Figures were checked against records reconstructed from the page, which proves consistency, not the measurement.",
    },
];

pub(crate) fn check(b: &Bundle, out: &mut Out) {
    out.ran("claims.unpublished");
    out.ran("claims.reconstructed");
    let m = &b.manifest;
    let entry = |kind: FileKind, test: Option<&str>| {
        m.files
            .iter()
            .find(|f| f.kind == kind && (test.is_none() || f.test.as_deref() == test))
    };
    let mut unpublished = |what: String, path: &str, severity: Severity, tail: &str| {
        out.push(
            Finding::new(
                "claims.unpublished",
                severity,
                format!("{what} rests on {path}, which the page did not publish{tail}"),
            )
            .file(path),
        );
    };
    if !m.page.speed.is_empty() {
        if let Some(f) = entry(FileKind::SpeedResult, None).filter(|f| !f.published) {
            unpublished(
                format!("{} speed figures", m.page.speed.len()),
                &f.path,
                Severity::Warning,
                "",
            );
        }
    }
    for q in &m.page.quality {
        if q.pct.is_none() && q.right.is_none() && q.cutoffs.is_none() {
            continue;
        }
        let answers = entry(FileKind::QualityAnswers, Some(&q.test));
        let summary = entry(FileKind::QualitySummary, Some(&q.test));
        match (answers, summary) {
            (Some(a), Some(s)) if !a.published && s.published => unpublished(
                format!("{}: right answers and cut-offs per question", q.test),
                &a.path,
                Severity::Info,
                "; only its published summary can be checked",
            ),
            (Some(a), Some(s)) if !a.published && !s.published => unpublished(
                format!("{}: the result", q.test),
                &a.path,
                Severity::Warning,
                " (nor its summary)",
            ),
            (None, Some(s)) if !s.published => unpublished(
                format!("{}: the result", q.test),
                &s.path,
                Severity::Warning,
                "",
            ),
            _ => {}
        }
    }
    if m.page.fit.is_some() {
        if let Some(f) = entry(FileKind::FitResult, None).filter(|f| !f.published) {
            unpublished(
                "the memory-fit figures".into(),
                &f.path,
                Severity::Warning,
                "",
            );
        }
    }
    let rec: Vec<&str> = m
        .files
        .iter()
        .filter(|f| f.reconstructed)
        .map(|f| f.path.as_str())
        .collect();
    if !rec.is_empty() {
        out.push(
            Finding::new(
                "claims.reconstructed",
                Severity::Info,
                format!(
                    "{} of {} files were reconstructed from the page ({}...); agreement with them shows the page is self-consistent, not that it was measured",
                    rec.len(),
                    m.files.len(),
                    rec.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
                ),
            )
            .file("bundle.json")
            .pointer("/files"),
        );
    }
}
