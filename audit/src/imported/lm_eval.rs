//! lm-evaluation-harness (`lm_eval ... --log_samples --output_path DIR`): `results_<date>.json`
//! (per task, each metric as `METRIC,FILTER` with its `METRIC_stderr,FILTER`, and `n-samples`)
//! beside `samples_<task>_<date>.jsonl` (one record per document: the reply `resps`, what the
//! filter kept `filtered_resps`, the `target` and each metric's score).
//!
//! Definitions, as lm-eval 0.4 writes them (`lm_eval/api/metrics.py`, `lm_eval/filters/`):
//! - units: a metric is a fraction (0-1), its stderr in the same unit;
//! - TTFT, speed: none; this is a quality file;
//! - token counts: none are recorded; `max_gen_toks` is in the task's config, and no reply's
//!   `finish_reason` is kept, so an answer cut off at its limit cannot be told from a finished one;
//! - which requests the aggregates include: every document of the task (`n-samples.effective`),
//!   each scored: an empty reply (a null `content` is replaced by `""`, an unparsable answer
//!   body too) and a reply from which the filter extracted nothing (`[invalid]`) are scored 0,
//!   like a wrong answer; an HTTP error is retried, then the run aborts (no file is written);
//! - the aggregate of `exact_match` (and any metric aggregated with `mean`) is the mean of the
//!   per-document scores; its stderr is the sample standard deviation (ddof 1) / sqrt(n).

use super::{compare, row, std_sample, Row};
use super::{EMPTY_SCORED_WRONG, FAILED_HIDDEN, STDERR_MISMATCH, UNSCORABLE_REPLY};
use crate::check::{Emit, Ran};
use crate::quality;
use crate::stats::{margin_pts, MarginMethod};
use serde_json::json;
use std::collections::BTreeMap;

/// The string the regex filters write when they extract nothing.
pub const INVALID: &str = "[invalid]";

/// One document's record.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Line in the samples file, from 1.
    pub line: usize,
    /// The raw replies (first of each response).
    pub replies: Vec<String>,
    /// What the filter kept.
    pub filtered: Option<String>,
    /// The target.
    pub target: Option<String>,
    /// Each metric's score.
    pub scores: BTreeMap<String, f64>,
}

/// One metric of a task as the results file prints it.
#[derive(Debug, Clone, Default)]
pub struct Metric {
    /// `exact_match`.
    pub name: String,
    /// The filter (`letter`, `none`, ...).
    pub filter: String,
    /// The value printed.
    pub value: f64,
    /// The stderr printed (`"N/A"` or absent: none).
    pub stderr: Option<f64>,
    /// The aggregation named by the task's config (`mean`), if stated.
    pub aggregation: Option<String>,
    /// `ignore_case` of the metric's config.
    pub ignore_case: bool,
    /// `ignore_punctuation` of the metric's config.
    pub ignore_punctuation: bool,
}

/// One task: its metrics, counts and samples.
#[derive(Debug, Clone, Default)]
pub struct Task {
    /// The task name.
    pub name: String,
    /// The results file.
    pub file: String,
    /// The samples file, when given.
    pub samples_file: Option<String>,
    /// Its metrics.
    pub metrics: Vec<Metric>,
    /// `n-samples.effective`.
    pub effective: Option<f64>,
    /// `generation_kwargs.max_gen_toks` of the task's config.
    pub max_gen_toks: Option<f64>,
    /// The samples of the filter the metrics use.
    pub samples: Vec<Sample>,
}

/// The tasks of one results file as the checks read them.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// One entry per task and filter.
    pub tasks: Vec<Task>,
}

impl Results {
    /// The tasks whose samples were given: those the checks can re-score.
    fn sampled(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().filter(|t| t.samples_file.is_some())
    }

    /// Ran when some task has its samples.
    fn any(&self) -> Ran {
        self.sampled().next().map(|_| ())
    }
}

/// Every lm-eval check, in the order they run; each goes over every task with samples.
pub const CHECKS: &[Row<Results>] = &[
    row(FAILED_HIDDEN, failed_hidden),
    row(quality::PCT_MISMATCH.about(), rescore),
    row(quality::SCORING_DISAGREES.about(), scoring_disagrees),
    row(STDERR_MISMATCH, stderr_mismatch),
    row(EMPTY_SCORED_WRONG, empty_scored_wrong),
    row(UNSCORABLE_REPLY, unscorable),
];

/// `import.failed-hidden`: the documents the results count against the samples file.
fn failed_hidden(x: &Results, emit: &mut Emit) -> Ran {
    for t in x.sampled() {
        let n = t.samples.len() as f64;
        if let Some(e) = t.effective.filter(|e| *e != n) {
            emit.finding(format!(
                "{}: the results count {e} documents but the samples file holds {n}",
                t.name
            ))
            .file(&t.file)
            .pointer(format!("/n-samples/{}/effective", t.name))
            .data(json!({"printed": e, "samples": n}));
        }
    }
    x.any()
}

/// The per-document scores of one metric.
fn scores(t: &Task, m: &Metric) -> Vec<f64> {
    t.samples
        .iter()
        .filter_map(|s| s.scores.get(&m.name).copied())
        .collect()
}

/// `quality.pct-mismatch`: each mean-aggregated metric recomputed as the mean of its scores.
fn rescore(x: &Results, emit: &mut Emit) -> Ran {
    let mut compared = false;
    for t in x.sampled() {
        for m in &t.metrics {
            if m.aggregation.as_deref().is_some_and(|a| a != "mean") {
                continue;
            }
            let scores = scores(t, m);
            if scores.is_empty() {
                continue;
            }
            let mean = scores.iter().sum::<f64>() / scores.len() as f64;
            let key = format!("lm-eval.{}.{},{}", t.name, m.name, m.filter);
            let at = format!("/results/{}/{},{}", t.name, m.name, m.filter);
            compare(emit, (&t.file, &at), &key, mean, m.value);
            compared = true;
        }
    }
    compared.then_some(())
}

/// The reply as `exact_match` compares it: case and punctuation dropped when the config says so.
fn normal(s: &str, m: &Metric) -> String {
    let mut s = s.to_string();
    if m.ignore_case {
        s = s.to_lowercase();
    }
    if m.ignore_punctuation {
        s.retain(|c| !c.is_ascii_punctuation());
    }
    s
}

/// `quality.scoring-disagrees`: every `exact_match` score re-scored from the filtered reply and
/// the target. Ran when some task has an `exact_match`.
fn scoring_disagrees(x: &Results, emit: &mut Emit) -> Ran {
    let mut ran = false;
    for t in x.sampled() {
        for m in t.metrics.iter().filter(|m| m.name == "exact_match") {
            ran = true;
            rescore_exact_match(t, m, emit);
        }
    }
    ran.then_some(())
}

fn rescore_exact_match(t: &Task, m: &Metric, emit: &mut Emit) {
    let samples_file = t.samples_file.as_deref().unwrap_or_default();
    for s in &t.samples {
        let (Some(f), Some(target), Some(&score)) = (&s.filtered, &s.target, s.scores.get(&m.name))
        else {
            continue;
        };
        let right = normal(f, m) == normal(target, m);
        if right != (score >= 1.0) {
            emit.finding(format!(
                "{}: the reply '{}' against the target '{}' is {}, but it is scored {score}",
                t.name,
                short(f),
                short(target),
                if right { "right" } else { "wrong" }
            ))
            .file(samples_file)
            .pointer(format!("line {}", s.line));
        }
    }
}

fn short(s: &str) -> String {
    s.chars().take(80).collect()
}

/// `import.stderr-mismatch`: each printed stderr against the sample standard deviation of the
/// scores / sqrt(n); beside it, the 95 % margins by the normal approximation and by Wilson.
fn stderr_mismatch(x: &Results, emit: &mut Emit) -> Ran {
    let mut compared = false;
    for t in x.sampled() {
        for m in &t.metrics {
            compared |= stderr_of(t, m, emit);
        }
    }
    compared.then_some(())
}

/// One metric's stderr and margins. Returns whether it compared one.
fn stderr_of(t: &Task, m: &Metric, emit: &mut Emit) -> bool {
    let scores = scores(t, m);
    let (Some(shown), Some(sd)) = (m.stderr, std_sample(&scores)) else {
        return false;
    };
    let n = scores.len() as f64;
    let exact = sd / n.sqrt();
    let key = format!("lm-eval.{}.{}_stderr,{}", t.name, m.name, m.filter);
    let at = format!("/results/{}/{}_stderr,{}", t.name, m.name, m.filter);
    if !compare(emit, (&t.file, &at), &key, exact, shown) {
        return true;
    }
    let binary = scores.iter().all(|s| *s == 0.0 || *s == 1.0);
    if !binary {
        return true;
    }
    let right = scores.iter().filter(|s| **s == 1.0).count() as u64;
    let normal = margin_pts(right, n as u64, 1.96, MarginMethod::Normal);
    let wilson = margin_pts(right, n as u64, 1.96, MarginMethod::Wilson);
    emit.recomputed(crate::report::Recomputed {
        key: format!("lm-eval.{}.{}.margin95.normal", t.name, m.name),
        value: normal,
        file: Some(196.0 * shown),
        page: None,
    });
    emit.recomputed(crate::report::Recomputed {
        key: format!("lm-eval.{}.{}.margin95.wilson", t.name, m.name),
        value: wilson,
        file: None,
        page: None,
    });
    true
}

/// Whether a reply is empty (nothing, or whitespace only).
fn empty(s: &Sample) -> bool {
    s.replies.iter().all(|r| r.trim().is_empty())
}

/// `import.empty-scored-wrong`: empty replies (a null or unparsable answer becomes `""`) scored
/// as wrong answers: they are no answer, and belong out of the total; the result over the
/// answered documents is given.
fn empty_scored_wrong(x: &Results, emit: &mut Emit) -> Ran {
    for t in x.sampled() {
        empty_scored_of(t, emit);
    }
    x.any()
}

fn empty_scored_of(t: &Task, emit: &mut Emit) {
    let empties: Vec<&Sample> = t.samples.iter().filter(|s| empty(s)).collect();
    if empties.is_empty() {
        return;
    }
    let lines: Vec<String> = empties.iter().map(|s| s.line.to_string()).collect();
    let mut over = Vec::new();
    for m in &t.metrics {
        let answered: Vec<f64> = t
            .samples
            .iter()
            .filter(|s| !empty(s))
            .filter_map(|s| s.scores.get(&m.name).copied())
            .collect();
        if !answered.is_empty() {
            let v = answered.iter().sum::<f64>() / answered.len() as f64;
            over.push(format!(
                "{} {:.4} over the {} answered",
                m.name,
                v,
                answered.len()
            ));
        }
    }
    emit.finding(format!(
        "{}: {} of {} replies are empty and scored as wrong answers; an empty reply is no answer ({})",
        t.name,
        empties.len(),
        t.samples.len(),
        if over.is_empty() { "nothing was answered".to_string() } else { over.join(", ") }
    ))
    .file(t.samples_file.as_deref().unwrap_or_default())
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"empty": empties.len(), "total": t.samples.len()}));
}

/// `import.unscorable-reply`: non-empty replies from which the filter extracted no answer
/// (`[invalid]`), scored as wrong; lm-eval keeps no `finish_reason`, so those cut off at
/// `max_gen_toks` cannot be told apart.
fn unscorable(x: &Results, emit: &mut Emit) -> Ran {
    for t in x.sampled() {
        unscorable_of(t, emit);
    }
    x.any()
}

fn unscorable_of(t: &Task, emit: &mut Emit) {
    let bad: Vec<&Sample> = t
        .samples
        .iter()
        .filter(|s| {
            !empty(s)
                && s.filtered
                    .as_deref()
                    .is_some_and(|f| f == INVALID || f.trim().is_empty())
        })
        .collect();
    if bad.is_empty() {
        return;
    }
    let lines: Vec<String> = bad.iter().map(|s| s.line.to_string()).collect();
    let examples: Vec<String> = bad
        .iter()
        .take(3)
        .map(|s| format!("'{}'", short(s.replies.first().map_or("", |r| r.as_str()))))
        .collect();
    let limit = t.max_gen_toks.map_or("its answer limit".to_string(), |n| {
        format!("max_gen_toks = {n}")
    });
    emit.finding(format!(
        "{}: {} of {} replies gave the filter no answer ({}) and are scored as wrong; lm-eval keeps no finish_reason, so how many were cut off at {limit} is unknown",
        t.name,
        bad.len(),
        t.samples.len(),
        examples.join(", ")
    ))
    .file(t.samples_file.as_deref().unwrap_or_default())
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"unscorable": bad.len(), "total": t.samples.len()}));
}
