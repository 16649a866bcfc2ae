//! Quality rows: answered questions on each side, left for the decision rule: paired question by
//! question when both sides' answers files name the same questions, else as two tallies.

use super::*;
use crate::decide::quality::Paired;

/// The answered questions of one side of a quality test.
pub(super) struct QualitySide {
    pub(super) total: u64,
    pub(super) answered: u64,
    pub(super) right: u64,
    pub(super) refused: String,
}

pub(super) fn quality_side(t: &QualityTest) -> Option<QualitySide> {
    if let Some(a) = &t.answers {
        let v = &a.value;
        let refused = v.refused();
        let text = match v.refusals.len() {
            0 => format!("{refused} of {} requests got no answer", v.total),
            1 => format!(
                "{refused} of {} requests {}",
                v.total,
                v.refusals.keys().next().map_or("", |k| k.as_str())
            ),
            _ => format!(
                "{refused} of {} requests refused or failed ({})",
                v.total,
                v.refusals
                    .iter()
                    .map(|(k, n)| format!("{k}: {n}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        return Some(QualitySide {
            total: v.total,
            answered: v.answered,
            right: v.right.saturating_sub(v.right_but_refused).min(v.answered),
            refused: text,
        });
    }
    let s = &t.summary.as_ref()?.value;
    let errors = s.errors.unwrap_or(0).min(s.total);
    let answered = s.total - errors;
    Some(QualitySide {
        total: s.total,
        answered,
        right: s.right.min(answered),
        refused: format!(
            "{errors} of {} requests got no answer (summary; no answers file)",
            s.total
        ),
    })
}

pub(super) fn quality_row(
    test: &str,
    rec: Option<&QualityTest>,
    rep: Option<&QualityTest>,
) -> (Comparison, Option<Pending>) {
    let sides = (rec.and_then(quality_side), rep.and_then(quality_side));
    let pct =
        |s: &QualitySide| (s.answered > 0).then(|| 100.0 * s.right as f64 / s.answered as f64);
    let answered = |s: &Option<QualitySide>| s.as_ref().map_or(0, |s| s.answered as usize);
    let mut row = Comparison::untested(
        format!("quality.{test}.pct"),
        (
            sides.0.as_ref().and_then(pct),
            sides.1.as_ref().and_then(pct),
        ),
        (answered(&sides.0), answered(&sides.1)),
    );
    if let Some(why) = not_comparable(&sides, (rec, rep)) {
        row.why = why;
        return (row, None);
    }
    let pending = match &sides {
        (Some(a), Some(b)) => Some(Pending::Quality {
            a: (a.right, a.answered),
            b: (b.right, b.answered),
            paired: paired(rec, rep),
            detail: detail(a, b),
        }),
        _ => None,
    };
    (row, pending)
}

/// The two runs' answered questions tallied by answer pair, when both have answers files whose
/// ids match ([`crate::records::quality::AnswerTally::paired_with`]), with the questions only
/// one side answered.
fn paired(rec: Option<&QualityTest>, rep: Option<&QualityTest>) -> Option<(Paired, usize)> {
    let (a, b) = (rec?.answers.as_ref()?, rep?.answers.as_ref()?);
    let (pairs, unmatched) = a.value.paired_with(&b.value)?;
    let (xs, ys): (Vec<bool>, Vec<bool>) = pairs.into_iter().unzip();
    Some((Paired::tally(&xs, &ys), unmatched))
}

/// Why a quality row is not comparable: a side not measured, without records, or with every
/// request refused.
fn not_comparable(
    sides: &(Option<QualitySide>, Option<QualitySide>),
    (rec, rep): (Option<&QualityTest>, Option<&QualityTest>),
) -> Option<String> {
    let missing = |s: Side, t: Option<&QualityTest>| match t {
        None => format!("not measured on the {} side", s.name()),
        Some(_) => format!("no summary or answers on the {} side", s.name()),
    };
    let (a, b) = match sides {
        (Some(a), Some(b)) => (a, b),
        (None, None) => {
            return Some(format!(
                "{}; {}",
                missing(Side::Recorded, rec),
                missing(Side::Replayed, rep)
            ))
        }
        (None, _) => return Some(missing(Side::Recorded, rec)),
        (_, None) => return Some(missing(Side::Replayed, rep)),
    };
    match (a.answered == 0, b.answered == 0) {
        (true, true) if a.refused == b.refused => {
            Some(format!("refused on both sides: {}", a.refused))
        }
        (true, true) => Some(format!(
            "refused on both sides: recorded {}; replayed {}",
            a.refused, b.refused
        )),
        (true, false) => Some(format!("refused on the recorded side: {}", a.refused)),
        (false, true) => Some(format!("refused on the replayed side: {}", b.refused)),
        (false, false) => None,
    }
}

/// The tallies a quality row's reason names: right of answered on each side, and the questions
/// left out when some were refused.
fn detail(a: &QualitySide, b: &QualitySide) -> String {
    let only = if a.answered < a.total || b.answered < b.total {
        format!(
            "; over answered questions only ({} of {} recorded, {} of {} replayed)",
            a.answered, a.total, b.answered, b.total
        )
    } else {
        String::new()
    };
    format!(
        "{}/{} recorded, {}/{} replayed{only}",
        a.right, a.answered, b.right, b.answered
    )
}
