//! `claims.*`: which figures of the page rest on files that were not published, or on records
//! this bundle reconstructed rather than copied.

use crate::bundle::{Bundle, Run};
use crate::check::{Check, Emit, Ran};
use crate::records::{FileEntry, FileKind, Manifest};
use crate::report::Severity;

/// `claims.*` checks, in the order they run.
pub const CHECKS: &[Check<Run>] = &[
    Check {
        id: "claims.unpublished",
        severity: Severity::Warning,
        doc: "A figure of the page rests on a raw file the page did not publish.",
        run: unpublished,
    },
    Check {
        id: "claims.reconstructed",
        severity: Severity::Info,
        doc: "Figures were checked against records reconstructed from the page, which proves consistency, not the measurement.",
        run: reconstructed,
    },
];

/// The manifest's entry of a kind (and test).
fn entry<'a>(m: &'a Manifest, kind: FileKind, test: Option<&str>) -> Option<&'a FileEntry> {
    m.files
        .iter()
        .find(|f| f.kind == kind && (test.is_none() || f.test.as_deref() == test))
}

/// A figure resting on a file the page did not publish: what, the file, how much it matters and
/// the end of the sentence.
type Unpublished<'a> = (String, &'a str, Severity, &'static str);

/// The quality figures of the page that rest on unpublished files.
fn unpublished_quality(m: &Manifest) -> Vec<Unpublished<'_>> {
    let mut v = Vec::new();
    for q in &m.page.quality {
        if q.pct.is_none() && q.right.is_none() && q.cutoffs.is_none() {
            continue;
        }
        let answers = entry(m, FileKind::QualityAnswers, Some(&q.test));
        let summary = entry(m, FileKind::QualitySummary, Some(&q.test));
        match (answers, summary) {
            (Some(a), Some(s)) if !a.published && s.published => v.push((
                format!("{}: right answers and cut-offs per question", q.test),
                a.path.as_str(),
                Severity::Info,
                "; only its published summary can be checked",
            )),
            (Some(a), Some(s)) if !a.published && !s.published => v.push((
                format!("{}: the result", q.test),
                a.path.as_str(),
                Severity::Warning,
                " (nor its summary)",
            )),
            (None, Some(s)) if !s.published => v.push((
                format!("{}: the result", q.test),
                s.path.as_str(),
                Severity::Warning,
                "",
            )),
            _ => {}
        }
    }
    v
}

fn unpublished(b: &Bundle, e: &mut Emit) -> Ran {
    let m = &b.manifest;
    let mut all: Vec<Unpublished> = Vec::new();
    if !m.page.speed.is_empty() {
        if let Some(f) = entry(m, FileKind::SpeedResult, None).filter(|f| !f.published) {
            let what = format!("{} speed figures", m.page.speed.len());
            all.push((what, &f.path, Severity::Warning, ""));
        }
    }
    all.extend(unpublished_quality(m));
    if m.page.fit.is_some() {
        if let Some(f) = entry(m, FileKind::FitResult, None).filter(|f| !f.published) {
            let what = "the memory-fit figures".to_string();
            all.push((what, &f.path, Severity::Warning, ""));
        }
    }
    for (what, path, severity, tail) in all {
        e.at_severity(
            severity,
            format!("{what} rests on {path}, which the page did not publish{tail}"),
        )
        .file(path);
    }
    Some(())
}

fn reconstructed(b: &Bundle, e: &mut Emit) -> Ran {
    let m = &b.manifest;
    let rec: Vec<&str> = m
        .files
        .iter()
        .filter(|f| f.reconstructed)
        .map(|f| f.path.as_str())
        .collect();
    if !rec.is_empty() {
        e.finding(format!(
            "{} of {} files were reconstructed from the page ({}...); agreement with them shows the page is self-consistent, not that it was measured",
            rec.len(),
            m.files.len(),
            rec.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ))
        .at("bundle.json", "/files")
        .data(serde_json::json!({"reconstructed": rec.len(), "files": m.files.len()}));
    }
    Some(())
}

crate::consistency::across_files! { "claims":
    NO_MEASUREMENT: "claims.no-measurement", Error, backing::check_no_measurement, "A figure of a known kind (prefill.N, ctx_decode.N, conc_total.N, decode.<prompt>, a quality row, ...) names a step the contracts do not; no step measured it.";
    UNBACKED: "claims.unbacked", Warning, backing::check_unbacked, "A figure has no definition and nothing in the bundle measures it: the claim is unbacked.";
}

#[cfg(test)]
mod tests;
