//! MLPerf Endpoints results (`mlcommons/endpoints`, the `inference_endpoint` package): a report
//! folder's `performance/result_summary.json`, with the run's `events.jsonl` when given, and its
//! `config.yaml`.
//!
//! The definitions are the writer's own code at `ea332753` (2026-08-21), tabled with file and
//! line in `docs/formats/mlperf-endpoints.md` (rows W, E, S, C; each check cites its rows). In
//! short:
//! - a sample counts when its `sample.issued` falls while performance tracking is on; its later
//!   events count even after tracking stops (S);
//! - `n_samples_completed` counts every tracked `sample.complete`, **failures included** (a
//!   failed request completes with empty output); `n_samples_failed` the `error.*` events of
//!   samples still in flight (S1-S3);
//! - `duration_ns` sums over tracking blocks the time from the block's start to its last tracked
//!   completion (S4); `latency` = complete - issued, `ttft` = first chunk - issued, in ns (S5,
//!   S7); `tpot` and the token lengths need the writer's tokenizer (not recomputed here);
//! - every series prints its exact `total`, `avg` = total / n, the sample sd, percentiles by
//!   numpy's "lower" rule (`sorted[floor(p (n - 1))]`) and, for latency, TTFT and TPOT, the
//!   early-stopping estimates (S10, S11: [`early_stopping`]), which the submission checker takes
//!   in place of the percentiles (C5);
//! - `qps` = (completed - 1) / the legacy window for a Poisson load with LoadGen's metrics (the
//!   default), else completed / duration; `tps` the output tokens over the same window (S12-S14).

pub mod accuracy;
pub mod early_stopping;

use super::{compare, impossible, row, Row, Spread};
use super::{
    FAILED_AS_ZERO, IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE, RUN_INCOMPLETE, SETTINGS_BELOW_RULES,
};
use crate::check::{Emit, Ran};
use crate::speed;
use serde_json::json;

/// One series block of the summary (`latency`, `ttft`, `tpot`, `output_sequence_lengths`, ...).
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Its key.
    pub name: String,
    /// `total`, `min`, `max`, `median`, `avg`, `std_dev` (null or absent as `None`).
    pub total: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub median: Option<f64>,
    pub avg: Option<f64>,
    pub std_dev: Option<f64>,
    /// `percentiles`: (key as written, value).
    pub percentiles: Vec<(String, Option<f64>)>,
    /// `early_stopping_percentiles`, when the block has them.
    pub early_stopping: Option<Vec<(String, Option<f64>)>>,
}

impl Series {
    /// Its min, mean (`avg`), max and percentiles, as [`impossible`] reads a spread.
    pub fn spread(&self) -> Spread {
        Spread {
            min: self.min,
            mean: self.avg,
            max: self.max,
            percentiles: self
                .percentiles
                .iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()? / 100.0, k.clone(), (*v)?)))
                .collect(),
        }
    }
}

/// `performance/result_summary.json`, typed.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Its name.
    pub file: String,
    pub issued: Option<f64>,
    pub completed: Option<f64>,
    pub failed: Option<f64>,
    pub duration_ns: Option<f64>,
    /// `state` and `complete`.
    pub state: Option<String>,
    pub complete: Option<bool>,
    /// The series blocks, in the file's order.
    pub series: Vec<Series>,
    pub legacy_window_ns: Option<f64>,
    pub qps: Option<f64>,
    pub tps: Option<f64>,
    /// `finish_reason_counts`, when written (W4 on).
    pub finish_reasons: Option<Vec<(String, f64)>>,
    /// `run_config.load_pattern.type` and `.use_legacy_loadgen_qps_metrics`.
    pub load_pattern: Option<String>,
    pub legacy_qps: Option<bool>,
}

/// One sample's events (row E), timestamps in ns of the writer's monotonic clock.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// `sample.issued` (the first, when repeated).
    pub issued: i64,
    /// `sample.recv_first`.
    pub first: Option<i64>,
    /// `sample.complete`.
    pub complete: Option<i64>,
    /// `error.*` events before its completion.
    pub errors: usize,
    /// The tracking block its issue fell in, when one did.
    pub block: Option<usize>,
}

/// `events.jsonl`, typed.
#[derive(Debug, Clone, Default)]
pub struct Events {
    /// Its name.
    pub file: String,
    /// Each tracking block's start (`session.start_performance_tracking`).
    pub blocks: Vec<i64>,
    /// Every sample issued, in order of issue.
    pub samples: Vec<Sample>,
}

/// The run: its summary, its events when given, and `config.yaml`'s minimum duration.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub summary: Summary,
    pub events: Option<Events>,
    /// `settings.runtime.min_duration_ms`, and whether the config file was given.
    pub min_duration_ms: Option<f64>,
    pub config_given: bool,
    /// `settings.early_stopping.enabled` (`None`: not given, the writer's default is on).
    pub early_stopping_enabled: Option<bool>,
    /// `accuracy/accuracy_results.json`, when given.
    pub accuracy: Option<accuracy::Accuracy>,
}

/// The checks of an Endpoints run.
pub const CHECKS: &[Row<Run>] = &[
    row(speed::RECOMPUTE_MISMATCH.about(), recompute),
    row(IMPOSSIBLE_AGGREGATE, impossible_aggregates),
    row(RUN_INCOMPLETE, incomplete),
    row(FAILED_AS_ZERO, failures_completed),
    row(SETTINGS_BELOW_RULES, settings_below_rules),
    row(NOT_RECOMPUTABLE, not_recomputable),
    row(accuracy::UNSCORED, accuracy::unscored),
];

impl Events {
    /// The tracked samples (row S).
    pub fn tracked(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(|s| s.block.is_some())
    }
}

/// The figures the events give, by the writer's rules (S1-S7, S12, S13): counts, duration,
/// legacy window and qps, and the latency and TTFT values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FromEvents {
    pub issued: usize,
    pub completed: usize,
    pub failed: usize,
    pub duration_ns: i64,
    pub legacy_window_ns: Option<i64>,
    pub latency: Vec<i64>,
    pub ttft: Vec<i64>,
}

/// Rows S1-S7, S12 from the events.
pub fn from_events(e: &Events) -> FromEvents {
    let tracked: Vec<&Sample> = e.tracked().collect();
    let mut out = FromEvents {
        issued: tracked.len(),
        completed: tracked.iter().filter(|s| s.complete.is_some()).count(),
        failed: tracked.iter().map(|s| s.errors).sum(),
        ..Default::default()
    };
    for (b, start) in e.blocks.iter().enumerate() {
        let last = tracked
            .iter()
            .filter(|s| s.block == Some(b))
            .filter_map(|s| s.complete)
            .max();
        out.duration_ns += last.map_or(0, |l| l - start);
    }
    out.latency = tracked
        .iter()
        .filter_map(|s| Some(s.complete? - s.issued))
        .collect();
    out.ttft = tracked
        .iter()
        .filter_map(|s| Some(s.first? - s.issued))
        .collect();
    let first_issue = tracked.iter().map(|s| s.issued).min();
    let last_issued_done = tracked
        .iter()
        .filter(|s| s.complete.is_some())
        .max_by_key(|s| s.issued);
    out.legacy_window_ns = first_issue
        .zip(last_issued_done.and_then(|s| s.complete))
        .map(|(a, b)| b - a);
    out
}

/// `qps` by row S13, from counts and windows.
pub fn qps(s: &Summary, completed: f64, duration_ns: f64, window_ns: Option<f64>) -> Option<f64> {
    let legacy = s.load_pattern.as_deref() == Some("poisson") && s.legacy_qps.unwrap_or(true);
    match window_ns {
        Some(w) if legacy && w > 0.0 && completed >= 2.0 => Some((completed - 1.0) / (w / 1e9)),
        _ if duration_ns > 0.0 => Some(completed / (duration_ns / 1e9)),
        _ => None,
    }
}

/// Row S10 over exact integer values: total, min, max, avg, sample sd, the grid's percentiles
/// (numpy "lower") and the early-stopping estimates.
fn series_figures(values: &[i64]) -> Vec<(String, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let total: i128 = sorted.iter().map(|v| *v as i128).sum();
    let squares: i128 = sorted.iter().map(|v| (*v as i128) * (*v as i128)).sum();
    let mut out = vec![
        ("total".into(), total as f64),
        ("min".into(), sorted[0] as f64),
        ("max".into(), sorted[n - 1] as f64),
        ("avg".into(), total as f64 / n as f64),
    ];
    if n > 1 {
        let var = (n as i128 * squares - total * total) as f64;
        out.push((
            "std_dev".into(),
            var.max(0.0).sqrt() / ((n * (n - 1)) as f64).sqrt(),
        ));
    }
    let as_f: Vec<f64> = sorted.iter().map(|v| *v as f64).collect();
    for p in GRID {
        let i = (p / 100.0 * (n - 1) as f64).floor() as usize;
        out.push((format!("percentiles/{p:?}"), as_f[i.min(n - 1)]));
        if *p >= 50.0 {
            if let Some(e) = early_stopping::estimate(&as_f, *p) {
                out.push((format!("early_stopping_percentiles/{p:?}"), e));
            }
        }
    }
    out
}

/// The writer's percentile grid (`DEFAULT_PERCENTILES`).
pub const GRID: &[f64] = &[
    99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0,
];

/// A series figure as printed: `total`, `percentiles/99.0`, `early_stopping_percentiles/99.0`.
fn printed(s: &Series, key: &str) -> Option<f64> {
    let find = |list: &[(String, Option<f64>)], k: &str| {
        list.iter()
            .find(|(name, _)| name == k)
            .and_then(|(_, v)| *v)
    };
    match key.split_once('/') {
        Some(("percentiles", k)) => find(&s.percentiles, k),
        Some(("early_stopping_percentiles", k)) => find(s.early_stopping.as_deref()?, k),
        _ => match key {
            "total" => s.total,
            "min" => s.min,
            "max" => s.max,
            "avg" => s.avg,
            "std_dev" => s.std_dev,
            _ => None,
        },
    }
}

/// `speed.recompute-mismatch` (rows S1-S13): with the events, every count, the duration, the
/// window, `qps`, and each figure of the latency and TTFT series; without, `qps` and `tps` from
/// the summary's own counts and windows, and each series' `avg` from its total.
fn recompute(r: &Run, emit: &mut Emit) -> Ran {
    let s = &r.summary;
    let f = s.file.as_str();
    let ran = summary_relations(s, emit);
    let Some(e) = &r.events else {
        return ran.then_some(());
    };
    let got = from_events(e);
    let counts = [
        ("n_samples_issued", s.issued, got.issued as f64),
        ("n_samples_completed", s.completed, got.completed as f64),
        ("n_samples_failed", s.failed, got.failed as f64),
        ("duration_ns", s.duration_ns, got.duration_ns as f64),
        (
            "legacy_loadgen_window_duration_ns",
            s.legacy_window_ns,
            got.legacy_window_ns.unwrap_or(0) as f64,
        ),
    ];
    for (key, shown, exact) in counts {
        if let Some(shown) = shown {
            compare(
                emit,
                (f, &format!("/{key}")),
                &format!("endpoints.{key}"),
                exact,
                shown,
            );
        }
    }
    if let (Some(shown), Some(exact)) = (
        s.qps,
        qps(
            s,
            got.completed as f64,
            got.duration_ns as f64,
            got.legacy_window_ns.map(|w| w as f64),
        ),
    ) {
        compare(emit, (f, "/qps"), "endpoints.qps", exact, shown);
    }
    for (name, values) in [("latency", &got.latency), ("ttft", &got.ttft)] {
        let Some(block) = s.series.iter().find(|x| x.name == name) else {
            continue;
        };
        for (key, exact) in series_figures(values) {
            if let Some(shown) = printed(block, &key) {
                compare(
                    emit,
                    (f, &format!("/{name}/{key}")),
                    &format!("endpoints.{name}.{key}"),
                    exact,
                    shown,
                );
            }
        }
    }
    Some(())
}

/// `qps` and `tps` against the summary's own counts and windows, each series' average against
/// its total over its count where the count is known (latency: every completion).
fn summary_relations(s: &Summary, emit: &mut Emit) -> bool {
    let f = s.file.as_str();
    let (Some(completed), Some(duration)) = (s.completed, s.duration_ns) else {
        return false;
    };
    if let (Some(shown), Some(exact)) = (s.qps, qps(s, completed, duration, s.legacy_window_ns)) {
        compare(emit, (f, "/qps"), "endpoints.qps(summary)", exact, shown);
    }
    let osl = s
        .series
        .iter()
        .find(|x| x.name == "output_sequence_lengths")
        .and_then(|x| x.total);
    let window = match (
        s.legacy_window_ns,
        qps(s, completed, duration, s.legacy_window_ns),
    ) {
        (Some(w), Some(q)) if w > 0.0 && (q - (completed - 1.0) / (w / 1e9)).abs() < 1e-9 * q => w,
        _ => duration,
    };
    if let (Some(shown), Some(tokens)) = (s.tps, osl) {
        if window > 0.0 {
            compare(
                emit,
                (f, "/tps"),
                "endpoints.tps(summary)",
                tokens / (window / 1e9),
                shown,
            );
        }
    }
    if let Some(lat) = s.series.iter().find(|x| x.name == "latency") {
        if let (Some(total), Some(avg)) = (lat.total, lat.avg) {
            if completed > 0.0 {
                compare(
                    emit,
                    (f, "/latency/avg"),
                    "endpoints.latency.avg(summary)",
                    total / completed,
                    avg,
                );
            }
        }
    }
    true
}

/// `import.impossible-aggregate` (rows S10, S11, E6): each series' figures in order (min, the
/// percentiles, max; the mean inside), each early-stopping estimate at or above its empirical
/// percentile, the finish reasons adding up to the completions; a negative TPOT named as the
/// writer's stamping (a warning).
fn impossible_aggregates(r: &Run, emit: &mut Emit) -> Ran {
    accuracy::impossible_aggregates(r, emit);
    let s = &r.summary;
    for x in &s.series {
        if let Some((msg, key)) = impossible(&x.name, &x.spread()) {
            emit.finding(msg).at(&s.file, format!("/{}/{key}", x.name));
        }
        es_below_empirical(s, x, emit);
        if x.name == "tpot" && x.min.is_some_and(|m| m < 0.0) {
            emit.warning(format!("tpot's min is {} ns, negative: the writer stamps a sample's completion when its result is decoded, which can come before its first chunk is handled (row E6); such TPOTs enter every tpot figure", x.min.unwrap_or_default()))
                .at(&s.file, "/tpot/min");
        }
    }
    let reasons = s.finish_reasons.as_ref().filter(|r| !r.is_empty());
    if let (Some(reasons), Some(completed)) = (reasons, s.completed) {
        let sum: f64 = reasons.iter().fold(0.0, |a, (_, n)| a + n);
        if sum != completed {
            emit.finding(format!("finish_reason_counts add up to {sum}, n_samples_completed is {completed}: the writer counts one reason a completion"))
                .at(&s.file, "/finish_reason_counts")
                .data(json!({"sum": sum, "completed": completed}));
        }
    }
    Some(())
}

/// An early-stopping estimate below the empirical percentile of the same key (row S11).
fn es_below_empirical(s: &Summary, x: &Series, emit: &mut Emit) {
    let Some(es) = &x.early_stopping else { return };
    for (k, v) in es {
        let empirical = x
            .percentiles
            .iter()
            .find(|(name, _)| name == k)
            .and_then(|(_, e)| *e);
        if let (Some(v), Some(e)) = (*v, empirical) {
            if v < e {
                emit.finding(format!("{}'s early-stopping estimate at {k} ({v}) is below its empirical percentile ({e}): the estimate is the t-th highest value, never below it", x.name))
                    .at(&s.file, format!("/{}/early_stopping_percentiles/{k}", x.name));
            }
        }
    }
}

/// `import.run-incomplete` (row S16): a run whose state is not complete, or that left samples
/// uncompleted.
fn incomplete(r: &Run, emit: &mut Emit) -> Ran {
    let s = &r.summary;
    if s.state.as_deref().is_some_and(|st| st != "complete") || s.complete == Some(false) {
        emit.finding(format!(
            "the writer says the run is not complete (state {}, complete {})",
            s.state.as_deref().unwrap_or("?"),
            s.complete.map_or("?".into(), |c| c.to_string())
        ))
        .at(&s.file, "/state");
    }
    if let (Some(issued), Some(done)) = (s.issued, s.completed) {
        if done < issued {
            emit.finding(format!("{done} of {issued} tracked samples completed"))
                .at(&s.file, "/n_samples_completed");
        }
    }
    Some(())
}

/// `import.failed-as-zero`, a warning (rows S2, S7, S13): failed requests are completions to
/// the writer, so their latency enters every latency figure and `qps`.
fn failures_completed(r: &Run, emit: &mut Emit) -> Ran {
    let s = &r.summary;
    let failed = s.failed?;
    if failed > 0.0 {
        emit.warning(format!("{failed} samples failed; the writer counts them in n_samples_completed, so their time to the error enters latency and its early-stopping estimates, and qps counts them as served"))
            .at(&s.file, "/n_samples_failed")
            .data(json!({"failed": failed}));
    }
    Some(())
}

/// `import.settings-below-rules` (row C9): `min_duration_ms` under the rules' 600,000 ms, and no
/// early-stopping estimates (the checker then has no latency to judge: C5).
fn settings_below_rules(r: &Run, emit: &mut Emit) -> Ran {
    let mut ran = false;
    if let Some(ms) = r.min_duration_ms {
        ran = true;
        if ms < 600_000.0 {
            emit.finding(format!("settings.runtime.min_duration_ms is {ms}; the MLPerf rules ask for 600000 (10 minutes): the submission checker refuses it"))
                .at("config.yaml", "/settings/runtime/min_duration_ms");
        }
    }
    let es_off = r.early_stopping_enabled == Some(false)
        || r.summary
            .series
            .iter()
            .filter(|x| ["latency", "ttft", "tpot"].contains(&x.name.as_str()))
            .all(|x| x.early_stopping.is_none());
    if es_off && !r.summary.series.is_empty() {
        ran = true;
        emit.finding("no early-stopping estimates (settings.early_stopping.enabled false, or a writer before 2026-07-17): the submission checker reads latency, TTFT and TPOT from them alone and gets none")
            .at(&r.summary.file, "/latency");
    }
    ran.then_some(())
}

/// `import.not-recomputable`: what the files leave unchecked.
fn not_recomputable(r: &Run, emit: &mut Emit) -> Ran {
    let f = &r.summary.file;
    if r.events.is_none() {
        emit.info("events.jsonl was not given (no published submission carries it): no figure is recomputed from the samples, only against the summary's other figures")
            .at(f, "");
    }
    let tokenized = ["tpot", "output_sequence_lengths", "input_sequence_lengths"];
    if r.summary.tps.is_some()
        || r.summary
            .series
            .iter()
            .any(|x| tokenized.contains(&x.name.as_str()))
    {
        emit.info("tpot, output_sequence_lengths, input_sequence_lengths and tps rest on the writer's tokenizer: not recomputed")
            .at(f, "/tpot");
    }
    if !r.config_given {
        emit.info(
            "config.yaml was not given: the run's minimum duration and seeds are not checked",
        )
        .at(f, "");
    }
    Some(())
}
