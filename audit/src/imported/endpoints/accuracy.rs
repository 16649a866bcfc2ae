//! An MLPerf Endpoints run's `accuracy/accuracy_results.json`, by its writer's code
//! (`commands/benchmark/accuracy.py` at `ea332753`: `_score_datasets` l. 284-375,
//! `write_accuracy_results` l. 386-434, `_phase_response_counts` l. 121-147, `_phase_osl_stats`
//! l. 86-118; `evaluation/accuracy_results.py` `average_accuracy` l. 89-117), tabled in
//! `docs/formats/mlperf-endpoints.md` rows A. In short:
//! - `average_accuracy` is the plain mean of the entries' numeric `score`s, the performance-scored
//!   entry (`dataset_type` "performance") left out; absent when no score is numeric (A2);
//! - an accuracy entry's `total_samples` is `unit_samples` x `num_repeats`, or both are the
//!   scorer's external sample count (A3);
//! - `response_counts`: `issued` = `scored` + `empty` + `missing`, always (A4);
//! - `output_sequence_lengths` is over the scored responses alone: its `avg` is `total` /
//!   `scored` (A5), its min, percentiles and max in order;
//! - `complete` false marks a partial headline (a scorer that could not score every subset), and
//!   the submission checker takes the first numeric `score` as the run's accuracy: with none, the
//!   result has no accuracy (checker row C11).

use super::super::impossible;
use super::{Run, Series};
use crate::check::{About, Emit, Ran};
use crate::report::Severity;
use serde_json::json;

/// `import.accuracy-unscored`.
pub const UNSCORED: About = About {
    id: "import.accuracy-unscored",
    severity: Severity::Error,
    doc: "An MLPerf Endpoints accuracy file gives no numeric score (the submission checker takes the first numeric score as the run's accuracy: with none, the result has none), or an entry its scorer marked incomplete (a partial headline, a warning).",
};

/// The accuracy file, as read.
#[derive(Debug, Clone, Default)]
pub struct Accuracy {
    /// The file as shown.
    pub file: String,
    /// `average_accuracy`, when given.
    pub average: Option<f64>,
    /// `accuracy_scores`, in order.
    pub entries: Vec<Entry>,
}

/// One `accuracy_scores` entry.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub dataset_name: String,
    /// `dataset_type` is "performance" (the performance run's own outputs scored).
    pub performance: bool,
    /// `score` when it is a number (not a dict, a string, a bool or null).
    pub score: Option<f64>,
    pub unit_samples: Option<f64>,
    pub num_repeats: Option<f64>,
    pub total_samples: Option<f64>,
    /// `complete`, when given.
    pub complete: Option<bool>,
    /// `response_counts`: issued, scored, empty, missing.
    pub counts: Option<[f64; 4]>,
    /// `output_sequence_lengths`, the summary's series shape.
    pub osl: Option<Series>,
}

/// `import.impossible-aggregate` over the accuracy file (rows A2-A5).
pub fn impossible_aggregates(r: &Run, emit: &mut Emit) {
    let Some(a) = &r.accuracy else { return };
    let numeric: Vec<f64> = a
        .entries
        .iter()
        .filter(|e| !e.performance)
        .filter_map(|e| e.score)
        .collect();
    if let (Some(avg), false) = (a.average, numeric.is_empty()) {
        let mean = numeric.iter().sum::<f64>() / numeric.len() as f64;
        if (avg - mean).abs() > 1e-9 * mean.abs().max(1.0) {
            emit.finding(format!("average_accuracy is {avg}; the mean of the {} accuracy scores is {mean}: the writer prints that mean (row A2)", numeric.len()))
                .at(&a.file, "/average_accuracy")
                .data(json!({"printed": avg, "recomputed": mean}));
        }
    }
    for (i, e) in a.entries.iter().enumerate() {
        entry_aggregates(&a.file, i, e, emit);
    }
}

/// One entry's counts and output lengths (rows A3-A5).
fn entry_aggregates(file: &str, i: usize, e: &Entry, emit: &mut Emit) {
    let at = |k: &str| format!("/accuracy_scores/{i}/{k}");
    let name = &e.dataset_name;
    if let (false, Some(u), Some(n), Some(t)) = (
        e.performance,
        e.unit_samples,
        e.num_repeats,
        e.total_samples,
    ) {
        if t != u * n && t != u {
            emit.finding(format!("{name}: total_samples is {t}, unit_samples {u} x num_repeats {n} is {}: the writer prints that product (row A3)", u * n))
                .at(file, at("total_samples"));
        }
    }
    if let Some([issued, scored, empty, missing]) = e.counts {
        if issued != scored + empty + missing {
            emit.finding(format!("{name}: response_counts issued {issued}, but scored {scored} + empty {empty} + missing {missing} is {}: the writer classes every issued sample as one of the three (row A4)", scored + empty + missing))
                .at(file, at("response_counts"));
        }
    }
    let Some(osl) = &e.osl else { return };
    if let Some((msg, key)) = impossible(&format!("{name} output length"), &osl.spread()) {
        emit.finding(msg)
            .at(file, at(&format!("output_sequence_lengths/{key}")));
    }
    let scored = e.counts.map(|c| c[1]);
    if let (Some(total), Some(avg), Some(n)) = (osl.total, osl.avg, scored.filter(|n| *n > 0.0)) {
        let mean = total / n;
        if (avg - mean).abs() > 1e-6 * mean.abs().max(1.0) {
            emit.finding(format!("{name}: output_sequence_lengths avg is {avg}; its total {total} over the {n} scored responses is {mean}: the writer counts the scored responses alone (row A5)"))
                .at(file, at("output_sequence_lengths/avg"));
        }
    }
}

/// `import.accuracy-unscored` (row A6, checker row C11).
pub fn unscored(r: &Run, emit: &mut Emit) -> Ran {
    let a = r.accuracy.as_ref()?;
    if a.entries.iter().all(|e| e.score.is_none()) {
        emit.finding("no accuracy_scores entry has a numeric score: the submission checker takes the first numeric score as the run's accuracy, so the result has none (checker row C11)")
            .at(&a.file, "/accuracy_scores");
    }
    for (i, e) in a.entries.iter().enumerate() {
        if e.complete == Some(false) {
            emit.warning(format!("{}: its scorer marked the score incomplete (complete false): a partial headline, not the whole dataset's (row A6)", e.dataset_name))
                .at(&a.file, format!("/accuracy_scores/{i}/complete"));
        }
    }
    Some(())
}
