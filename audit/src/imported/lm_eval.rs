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

use super::DECLARED_METRIC_MISSING;
use super::NOT_RECOMPUTABLE;
use super::{compare, row, std_sample, Row};
use super::{
    CACHED_RESPONSES, NON_FINITE_SCORE, NOT_RESCORED, SUBSET_OF_DATASET, ZERO_UNPARSEABLE,
};
use super::{EMPTY_SCORED_WRONG, FAILED_HIDDEN, STDERR_MISMATCH, UNSCORABLE_REPLY};
use crate::check::{Emit, Ran};
use crate::quality;
use crate::stats::{margin_pts, MarginMethod};
use serde_json::json;
use std::collections::BTreeMap;

mod rescore;
use rescore::*;

/// The string the regex filters write when they extract nothing.
pub const INVALID: &str = "[invalid]";

/// One document's record.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Line in the samples file, from 1.
    pub line: usize,
    /// The raw replies (first of each response) of a generation task.
    pub replies: Vec<String>,
    /// A loglikelihood or multiple-choice task's responses: per choice, its log-likelihood and
    /// whether it is the greedy continuation (empty for a generation task).
    pub loglikelihoods: Vec<(f64, bool)>,
    /// What the filter kept.
    pub filtered: Option<String>,
    /// The target.
    pub target: Option<String>,
    /// Each metric's score.
    pub scores: BTreeMap<String, f64>,
    /// The document's id (`doc_id`), when the record names it: two runs are compared paired by
    /// it.
    pub doc_id: Option<String>,
    /// The continuation of each loglikelihood request (`arguments`: its second argument), in the
    /// order of `loglikelihoods`; empty when the record does not give them.
    pub continuations: Vec<String>,
    /// Whether the target is a list (several right answers): not re-scored here.
    pub target_is_list: bool,
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
    /// `regexes_to_ignore` of the metric's config (removed from reply and target first).
    pub regexes_to_ignore: Vec<String>,
    /// `ignore_numbers` of the metric's config (ASCII digits dropped).
    pub ignore_numbers: bool,
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
    /// Why the task's scores cannot be re-scored here, when so (its own `process_results`).
    pub own_scoring: Option<String>,
    /// The config's `output_type` (`generate_until`, `multiple_choice`, `loglikelihood`, ...).
    pub output_type: Option<String>,
    /// The config's `target_delimiter` (put before each choice in its continuation; `" "` when
    /// the config does not say).
    pub target_delimiter: Option<String>,
}

/// One task as the results file prints it (with or without its samples).
#[derive(Debug, Clone, Default)]
pub struct Printed {
    /// The task name.
    pub name: String,
    /// Its metrics as printed (a value may be NaN or infinite: Python's json writes them).
    pub metrics: Vec<Metric>,
    /// `n-samples.original`: the task's documents.
    pub original: Option<f64>,
    /// `n-samples.effective`: the documents scored.
    pub effective: Option<f64>,
    /// The metrics its config's `metric_list` declares.
    pub declared: Vec<String>,
    /// The config key (`process_docs`, `custom_dataset`) whose code keeps part of the dataset
    /// (`.select(...)`), with that line: the documents lm-eval counts as `original` are then
    /// already a cut.
    pub cut_in_code: Option<(String, String)>,
    /// A group's tasks (`group_subtasks`; empty for a task): lm-eval writes no samples of a
    /// group, its figures aggregate its tasks'.
    pub subtasks: Vec<String>,
}

/// Runs the table over `results`: results that list no task are incomplete (nothing was scored
/// or checked), saying what to give.
pub fn check(results: &Results) -> crate::report::Findings {
    let mut found = super::run(CHECKS, results);
    found.incomplete = results.printed.is_empty().then(|| {
        format!(
            "{}: its results list no task, so nothing was scored or checked: give the results file of a run that evaluated tasks (lm_eval --tasks NAME --output_path DIR --log_samples)",
            results.file
        )
    });
    found
}

/// One results file (and the samples given with it) as the checks read it.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// The results file's name.
    pub file: String,
    /// One entry per task and filter whose samples were given.
    pub tasks: Vec<Task>,
    /// Every task the results print.
    pub printed: Vec<Printed>,
    /// `config.limit`: the documents per task the run was told to take.
    pub limit: Option<f64>,
    /// `config.use_cache`: the response cache the run answered from.
    pub use_cache: Option<String>,
    /// Samples given whose records the reader could not use, with why (named, never read as
    /// empty): `(task, file, why)`.
    pub unusable: Vec<(String, String, String)>,
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

    /// The tasks with samples that lm-eval scores by a rule rigaudit can apply.
    fn rescorable(&self) -> impl Iterator<Item = &Task> {
        self.sampled().filter(|t| t.own_scoring.is_none())
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
    row(NOT_RESCORED, not_rescored),
    row(NOT_RECOMPUTABLE, not_recomputable),
    row(SUBSET_OF_DATASET, subset_of_dataset),
    row(ZERO_UNPARSEABLE, zero_unparseable),
    row(NON_FINITE_SCORE, non_finite_score),
    row(CACHED_RESPONSES, cached_responses),
    row(DECLARED_METRIC_MISSING, declared_metric_missing),
];

/// `import.failed-hidden`: the documents the results count against the samples file's records of
/// each filter (docs/formats/lm-eval.md rows R2, S3).
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

/// The metrics lm-eval's registry aggregates by `mean` when a task's `metric_list` names no
/// aggregation (`lm_eval/api/metrics.py`, `@register_metric(..., aggregation="mean")`; rows
/// L7-L8 of docs/formats/lm-eval.md).
const MEAN_BY_DEFAULT: &[&str] = &[
    "acc",
    "acc_norm",
    "acc_mutual_info",
    "acc_bytes",
    "exact_match",
];

/// How lm-eval aggregates a metric's per-document scores: its config's `aggregation`, else the
/// registry's default for the metric's name; `None` when neither is known here.
pub fn aggregation(m: &Metric) -> Option<&str> {
    match m.aggregation.as_deref() {
        Some(a) => Some(a),
        None if MEAN_BY_DEFAULT.contains(&m.name.as_str()) => Some("mean"),
        None if m.name == "perplexity" => Some("perplexity"),
        None => None,
    }
}

/// A metric's aggregate as lm-eval computes it from its per-document scores (docs/formats/lm-eval.md
/// row L7): `mean` the mean, `nanmean` the mean of the finite ones, `perplexity` exp(-mean of the
/// log-likelihoods); `None` for any other aggregation (shown, not recomputed).
pub fn aggregate(m: &Metric, scores: &[f64]) -> Option<f64> {
    let mean = |xs: &[f64]| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
    match aggregation(m)? {
        "mean" => mean(scores),
        "nanmean" => {
            let kept: Vec<f64> = scores.iter().copied().filter(|x| !x.is_nan()).collect();
            mean(&kept)
        }
        "perplexity" => mean(scores).map(|x| (-x).exp()),
        _ => None,
    }
}

/// `import.stderr-mismatch`: each printed stderr against the sample standard deviation of the
/// scores / sqrt(n) (docs/formats/lm-eval.md row L8); beside it, the 95 % margins by the normal
/// approximation and by Wilson.
fn stderr_mismatch(x: &Results, emit: &mut Emit) -> Ran {
    let mut compared = false;
    for t in x.sampled() {
        for m in &t.metrics {
            compared |= stderr_of(t, m, emit);
        }
    }
    compared.then_some(())
}

/// One metric's stderr and margins. Returns whether it compared one. lm-eval gives a
/// mean-aggregated metric `mean_stderr` (sample sd / sqrt(n)) and any other a bootstrap, which is
/// not recomputed (docs/formats/lm-eval.md row L8).
fn stderr_of(t: &Task, m: &Metric, emit: &mut Emit) -> bool {
    if aggregation(m) != Some("mean") {
        return false;
    }
    let scores = scores(t, m);
    let (Some(shown), Some(sd)) = (m.stderr.filter(|e| e.is_finite()), std_sample(&scores)) else {
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
    // The file's figure is 1.96 x its stderr, which agreed above at its own precision (a
    // product that carries its rounding, so the row agrees by that comparison).
    emit.recomputed(crate::report::Recomputed {
        key: format!("lm-eval.{}.{}.margin95.normal", t.name, m.name),
        value: normal,
        file: Some(196.0 * shown),
        page: None,
        matches: true,
    });
    emit.recomputed(crate::report::Recomputed::new(
        format!("lm-eval.{}.{}.margin95.wilson", t.name, m.name),
        wilson,
        None,
        None,
    ));
    true
}

/// Whether a generation task's reply is empty (nothing, or whitespace only); a choice task's
/// responses are log-likelihoods, never empty.
fn empty(s: &Sample) -> bool {
    s.loglikelihoods.is_empty() && s.replies.iter().all(|r| r.trim().is_empty())
}

/// `import.empty-scored-wrong` (warning): empty replies scored as wrong answers, as lm-eval
/// scores them (its API models turn a null or unparsable answer into `""`; docs/formats/lm-eval.md
/// row L12): they are no answer; the result over the answered documents is given.
fn empty_scored_wrong(x: &Results, emit: &mut Emit) -> Ran {
    // The replies are the same under each filter: one finding per task.
    let mut seen: Vec<&str> = Vec::new();
    for t in x.sampled() {
        if !seen.contains(&t.name.as_str()) {
            seen.push(&t.name);
            empty_scored_of(t, emit);
        }
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
        "{}: {} of {} replies are empty, and lm-eval scores an empty reply as a wrong answer; it is no answer ({})",
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
/// `max_gen_toks` cannot be told apart (docs/formats/lm-eval.md row L12).
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
    let filter = t.metrics.first().map_or("none", |m| m.filter.as_str());
    emit.finding(format!(
        "{} ({filter}): {} of {} replies gave the filter no answer ({}), and lm-eval scores the filter's '[invalid]' as a wrong answer; it keeps no finish_reason, so how many were cut off at {limit} is unknown",
        t.name,
        bad.len(),
        t.samples.len(),
        examples.join(", ")
    ))
    .file(t.samples_file.as_deref().unwrap_or_default())
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({"unscorable": bad.len(), "total": t.samples.len()}));
}

/// Whether a metric config's regexes can be applied here (Rust's regex syntax reads Python's for
/// those lm-eval's tasks use; one it cannot read leaves the task not re-scored).
pub fn regexes_apply(m: &Metric) -> bool {
    m.regexes_to_ignore
        .iter()
        .all(|r| regex::Regex::new(r).is_ok())
}

/// `import.not-rescored` (info): tasks that score by their own code, whose per-document scores
/// are taken as they are.
fn not_rescored(x: &Results, emit: &mut Emit) -> Ran {
    for t in x.sampled() {
        if let Some(why) = &t.own_scoring {
            emit.finding(format!("{}: not re-scored: {why}; its per-document scores are taken as the task gives them", t.name))
                .file(&t.file)
                .pointer(format!("/configs/{}", t.name));
        }
    }
    without_samples(x, emit);
    x.any().or_else(|| (!x.printed.is_empty()).then_some(()))
}

/// `import.not-recomputable` (info): what the samples given could not recompute, named (never a
/// silent pass): a metric whose aggregation is not one lm-eval computes from per-document numbers
/// (f1, bleu, a task's own function) or whose records hold no number for it; a stderr lm-eval
/// draws by bootstrap; a samples file whose records this reader cannot use (docs/formats/lm-eval.md
/// rows L7, L8, S1-S4).
fn not_recomputable(x: &Results, emit: &mut Emit) -> Ran {
    for t in x.sampled() {
        let mut what = Vec::new();
        for m in &t.metrics {
            let scores = scores(t, m);
            if aggregate(m, &scores).is_none() {
                let agg = aggregation(m).unwrap_or("unknown");
                what.push(format!("{},{} (aggregation {agg})", m.name, m.filter));
            } else if m.stderr.is_some_and(f64::is_finite) && aggregation(m) != Some("mean") {
                what.push(format!("{}_stderr,{} (a bootstrap)", m.name, m.filter));
            }
        }
        if !what.is_empty() {
            emit.finding(format!(
                "{}: not recomputed from its samples: {}; shown as printed",
                t.name,
                what.join(", ")
            ))
            .file(&t.file)
            .pointer(format!("/results/{}", t.name));
        }
    }
    for g in x.printed.iter().filter(|p| !p.subtasks.is_empty()) {
        emit.finding(format!(
            "{}: a group of {}: lm-eval writes no samples of a group, and its figures (an aggregate of its tasks') are shown as printed, not recomputed",
            g.name,
            g.subtasks.join(", ")
        ))
        .file(&x.file)
        .pointer(format!("/results/{}", g.name));
    }
    for (task, file, why) in &x.unusable {
        emit.finding(format!("{task}: its samples file's records cannot be used: {why}; nothing of the task was recomputed from them"))
            .file(file)
            .data(json!({"task": task, "samples": "unusable"}));
    }
    let groups = x.printed.iter().any(|p| !p.subtasks.is_empty());
    (x.any().is_some() || !x.unusable.is_empty() || groups).then_some(())
}

/// The tasks the results print whose samples were not given: one finding each, saying what to
/// add (its details mark it, so the verdict says it covers the results only).
fn without_samples(x: &Results, emit: &mut Emit) {
    let sampled: Vec<&str> = x.sampled().map(|t| t.name.as_str()).collect();
    let unusable = |name: &str| x.unusable.iter().any(|(t, _, _)| t == name);
    for p in x.printed.iter().filter(|p| {
        !sampled.contains(&p.name.as_str()) && !unusable(&p.name) && p.subtasks.is_empty()
    }) {
        emit.finding(format!(
            "{0}: not re-scored: its samples file was not given; add samples_{0}_<date>.jsonl from the same output folder (lm_eval --log_samples writes it)",
            p.name
        ))
        .file(&x.file)
        .pointer(format!("/results/{}", p.name))
        .data(json!({"task": p.name, "samples": false}));
    }
}

/// `import.subset-of-dataset`: tasks scored on part of their documents (`--limit`, fewer
/// effective than original documents, or the task's own code selecting rows of its dataset;
/// docs/formats/lm-eval.md row R2).
fn subset_of_dataset(x: &Results, emit: &mut Emit) -> Ran {
    let part: Vec<String> = x
        .printed
        .iter()
        .filter_map(|t| match (t.effective, t.original) {
            (Some(e), Some(o)) if e < o => Some(format!("{} {e} of {o}", t.name)),
            _ => None,
        })
        .collect();
    // A --limit at or above a task's documents takes them all: it cuts only where the file
    // shows fewer effective than original documents, or does not say.
    let tasks = || x.printed.iter().filter(|t| t.subtasks.is_empty());
    let counted =
        tasks().next().is_some() && tasks().all(|t| t.effective.is_some() && t.original.is_some());
    let limit = x
        .limit
        .filter(|l| *l > 0.0 && !(counted && part.is_empty()));
    if !part.is_empty() || limit.is_some() {
        let told = limit.map_or(String::new(), |l| format!("the run was told --limit {l}; "));
        let which = if part.is_empty() {
            "the file does not say how many documents each task has".to_string()
        } else {
            format!("documents scored of each task's: {}", part.join(", "))
        };
        emit.finding(format!("{told}{which}: a score over part of a task's documents is not the benchmark's score (lm-eval says --limit is for testing only)"))
            .file(&x.file)
            .pointer(if limit.is_some() { "/config/limit" } else { "/n-samples" })
            .data(json!({"limit": limit, "tasks": part}));
    }
    for t in &x.printed {
        let Some((key, line)) = &t.cut_in_code else {
            continue;
        };
        let of = t
            .original
            .map_or(String::new(), |o| format!(" ({o} documents)"));
        emit.finding(format!("{}: the task's own {key} keeps part of its dataset (`{line}`), so lm-eval's n-samples{of} count the cut, not the benchmark: its scores are over a subset", t.name))
            .file(&x.file)
            .pointer(format!("/configs/{}/{key}", t.name));
    }
    Some(())
}

/// `import.zero-unparseable`: a task whose printed score is 0 with `percent_parseable` 0: no
/// reply could be parsed, so the 0 measures the format, not the model.
fn zero_unparseable(x: &Results, emit: &mut Emit) -> Ran {
    for t in &x.printed {
        let parseable = t.metrics.iter().find(|m| m.name == "percent_parseable");
        let Some(p) = parseable.filter(|p| p.value == 0.0) else {
            continue;
        };
        let zeros: Vec<&str> = t
            .metrics
            .iter()
            .filter(|m| m.name != "percent_parseable" && m.value == 0.0)
            .map(|m| m.name.as_str())
            .collect();
        if zeros.is_empty() {
            continue;
        }
        emit.finding(format!("{}: {} printed as 0 with percent_parseable 0: no reply could be parsed, so the 0 is a format failure, not a measured score", t.name, zeros.join(", ")))
            .file(&x.file)
            .pointer(format!("/results/{}/percent_parseable,{}", t.name, p.filter));
    }
    Some(())
}

/// `import.non-finite-score`: a printed metric that is NaN or infinite.
fn non_finite_score(x: &Results, emit: &mut Emit) -> Ran {
    for t in &x.printed {
        for m in t.metrics.iter().filter(|m| !m.value.is_finite()) {
            emit.finding(format!("{}: {},{} is printed as {}: replies its metric could not score, not a measured score", t.name, m.name, m.filter, m.value))
                .file(&x.file)
                .pointer(format!("/results/{}/{},{}", t.name, m.name, m.filter));
        }
    }
    Some(())
}

/// `import.cached-responses`: the run answered from a response cache (`use_cache`).
fn cached_responses(x: &Results, emit: &mut Emit) -> Ran {
    if let Some(cache) = &x.use_cache {
        emit.finding(format!("the run answered from the response cache {cache} (use_cache): every request found there was answered without calling the model, and the file does not say how many were"))
            .file(&x.file)
            .pointer("/config/use_cache");
    }
    Some(())
}

/// `import.declared-metric-missing`: a metric the task's `metric_list` declares with no value in
/// its results.
fn declared_metric_missing(x: &Results, emit: &mut Emit) -> Ran {
    for t in &x.printed {
        let missing: Vec<&str> = t
            .declared
            .iter()
            .filter(|d| !t.metrics.iter().any(|m| &m.name == *d))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            continue;
        }
        emit.finding(format!("{}: its config declares {} but the results hold no value of it: the task's scoring never produced it", t.name, missing.join(", ")))
            .file(&x.file)
            .pointer(format!("/configs/{}/metric_list", t.name));
    }
    Some(())
}
