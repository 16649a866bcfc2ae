//! gpt-oss-120b's compliance tests, TEST07 (accuracy in performance mode, over the 990 GPQA samples
//! of the compliance set) and TEST09 (the mean output length in performance mode, over all 6396
//! samples), held to what each test's own `audit.config` sets (`compliance/TEST07/gpt-oss-120b/` and
//! `compliance/TEST09/gpt-oss-120b/` of `mlcommons/inference`, the same from `053dba70` and
//! `986d8b6d`, v6.0, to `b66003e1`, v6.1, but for `performance_issue_unique`, set from `d8230cdd`,
//! v6.1). The same file is read twice: by LoadGen, which takes its settings for the test's run, and
//! by the test's `run_verification.py`, which takes its thresholds. The submission checker reads
//! only the verify file's `TEST PASS` (row T1), so:
//! - **the run** (`import.submission-compliance-config`): the test's own run, as its detail log
//!   states its requested settings, is the one its `audit.config` makes: the queries and samples
//!   logged (990 and 990 for TEST07, 6396 and 10000 for TEST09), the accuracy log's seed, no
//!   concatenated samples, performance mode, and from v6.1 each sample issued once;
//! - **the verdict** (`import.submission-compliance-verdict`): the verify file's own figures give
//!   its verdict under the test's thresholds (TEST07: the score at least 60.698; TEST09: the mean
//!   within 1150.38 and 1406.02), with the threshold the file names the test's, over as many
//!   samples as the test's run logs.
//!
//! The accuracy logs the results repositories carry are truncated (`truncate_accuracy_log.py`), so
//! a score or a mean is not recomputed from them here.

use super::Result;
use crate::check::{Emit, Ran};
use serde_json::json;

/// The round from which the audit configs set `performance_issue_unique` (`d8230cdd`).
const ISSUE_UNIQUE_FROM: &str = "v6.1";

/// What one test's `audit.config` sets.
struct AuditConfig {
    test: &'static str,
    /// `min_query_count`: the samples the run issues.
    queries: u64,
    /// `accuracy_log_sampling_target`.
    sampling_target: u64,
    /// The samples its verify file should have counted: every sample of the run.
    samples: u64,
    /// The verify script's thresholds, as the file sets them.
    thresholds: Thresholds,
}

/// TEST07's minimum score, or TEST09's bounds on the mean output length.
#[derive(Clone, Copy)]
enum Thresholds {
    Score(f64),
    Mean(f64, f64),
}

/// `accuracy_log_rng_seed`, the same in both files.
const LOG_SEED: u64 = 720381539243781796;

const CONFIGS: [AuditConfig; 2] = [
    AuditConfig {
        test: "TEST07",
        queries: 990,
        sampling_target: 990,
        samples: 990,
        thresholds: Thresholds::Score(60.698),
    },
    AuditConfig {
        test: "TEST09",
        queries: 6396,
        sampling_target: 10000,
        samples: 6396,
        thresholds: Thresholds::Mean(1150.38, 1406.02),
    },
];

/// The requested settings of a compliance test's own run, from its detail log
/// (`TESTnn/performance/run_1/mlperf_log_detail.txt`); each `None` where the log does not state it.
#[derive(Debug, Clone, Default)]
pub struct TestRun {
    /// The detail log as shown.
    pub detail: String,
    pub test_mode: Option<String>,
    pub min_query_count: Option<u64>,
    pub accuracy_log_sampling_target: Option<u64>,
    pub accuracy_log_rng_seed: Option<u64>,
    pub sample_concatenate_permutation: Option<bool>,
    pub performance_issue_unique: Option<bool>,
}

/// A round's name as numbers (`v6.1` is (6, 1)), so that rounds compare in order.
fn version(round: &str) -> (u32, u32) {
    let mut parts = round.trim_start_matches('v').split('.');
    let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (next(), next())
}

/// The audit config of a benchmark's test, if the table has it.
fn config_for(benchmark: &str, test: &str) -> Option<&'static AuditConfig> {
    if !benchmark.to_ascii_lowercase().starts_with("gpt-oss-120b") {
        return None;
    }
    CONFIGS.iter().find(|c| c.test.eq_ignore_ascii_case(test))
}

/// Whether the rules table the audit.config of a benchmark's test (the reader reads that test's own
/// run for them).
pub fn audit_config_tabled(benchmark: &str, test: &str) -> bool {
    config_for(benchmark, test).is_some()
}

/// `import.submission-compliance-config`.
pub(super) fn run_config(r: &Result, emit: &mut Emit) -> Ran {
    let mut ran = None;
    let unique_asked = r
        .checker_round()
        .is_some_and(|round| version(round) >= version(ISSUE_UNIQUE_FROM));
    for c in &r.compliance {
        let (Some(config), Some(run)) = (config_for(&r.benchmark, &c.test), c.run.as_ref()) else {
            continue;
        };
        ran = Some(());
        let off = settings_off(config, run, unique_asked);
        let at = run.detail.as_str();
        if off.is_empty() {
            emit.info(format!(
                "{}'s run was made as its audit.config sets: {} queries, {} samples logged with the test's seed, no concatenated samples{}",
                config.test,
                config.queries,
                config.sampling_target,
                if unique_asked { ", each sample once" } else { "" }
            ))
            .at(at, "");
        } else {
            emit.finding(format!(
                "{}'s run was not made as its audit.config sets: {}; the test checked another run than the one it is for (the submission checker reads only its verify file)",
                config.test,
                off.join(", ")
            ))
            .at(at, "")
            .data(json!({"test": config.test, "differs": off}));
        }
    }
    ran
}

/// Each requested setting of `run` that is not its audit config's, said as "KEY GOT where the
/// test's audit.config sets WANT"; a setting the log does not state is not held against it.
fn settings_off(config: &AuditConfig, run: &TestRun, unique_asked: bool) -> Vec<String> {
    let mut off = Vec::new();
    let mut differ = |key: &str, got: Option<String>, want: String| {
        if let Some(got) = got.filter(|g| *g != want) {
            off.push(format!(
                "{key} {got} where the test's audit.config sets {want}"
            ));
        }
    };
    let text = |v: Option<u64>| v.map(|n| n.to_string());
    differ(
        "requested_min_query_count",
        text(run.min_query_count),
        config.queries.to_string(),
    );
    differ(
        "requested_accuracy_log_sampling_target",
        text(run.accuracy_log_sampling_target),
        config.sampling_target.to_string(),
    );
    differ(
        "requested_accuracy_log_rng_seed",
        text(run.accuracy_log_rng_seed),
        LOG_SEED.to_string(),
    );
    differ(
        "requested_sample_concatenate_permutation",
        run.sample_concatenate_permutation.map(|b| b.to_string()),
        "false".into(),
    );
    differ(
        "requested_test_mode",
        run.test_mode.clone(),
        "PerformanceOnly".into(),
    );
    if unique_asked {
        differ(
            "requested_performance_issue_unique",
            run.performance_issue_unique.map(|b| b.to_string()),
            "true".into(),
        );
    }
    off
}

/// `import.submission-compliance-verdict`.
pub(super) fn verdict(r: &Result, emit: &mut Emit) -> Ran {
    let mut ran = None;
    for c in &r.compliance {
        let (Some(config), Some((file, lines))) =
            (config_for(&r.benchmark, &c.test), c.verify.as_ref())
        else {
            continue;
        };
        ran = Some(());
        let passed = lines.iter().any(|l| l.contains("TEST PASS"));
        let (problems, said) = match config.thresholds {
            Thresholds::Score(min) => score_verdict(lines, min, passed),
            Thresholds::Mean(lo, hi) => mean_verdict(lines, (lo, hi), passed),
        };
        let mut problems = problems;
        // TEST09's count is run_verification.py's own line; TEST07's is printed by the accuracy
        // script the submitter gives it, which may print none: then the count is not settled.
        let (counted_key, own_line) = match config.thresholds {
            Thresholds::Score(_) => ("Total samples evaluated", false),
            Thresholds::Mean(..) => ("Total samples", true),
        };
        let mut over = format!("over its {} samples", config.samples);
        match figure(lines, counted_key) {
            Some(n) if n != config.samples as f64 => problems.push(format!(
                "it counted {n} samples where the test's run issues {} ({counted_key}: {n})",
                config.samples
            )),
            Some(_) => {}
            None if own_line => problems.push(format!("it states no \"{counted_key}\"")),
            None => {
                over =
                    format!("the samples it scored not stated (no \"{counted_key}\": not checked)")
            }
        }
        if problems.is_empty() {
            emit.info(format!(
                "{file} holds up against {}'s audit.config: {said}, {over}",
                config.test
            ))
            .at(file.as_str(), "");
        } else {
            emit.finding(format!(
                "{file} does not hold up against {}'s audit.config: {}",
                config.test,
                problems.join("; ")
            ))
            .at(file.as_str(), "")
            .data(json!({"test": config.test, "problems": problems}));
        }
    }
    ran
}

/// TEST07's verify file against its minimum score: the problems, and what holds when none.
fn score_verdict(lines: &[String], min: f64, passed: bool) -> (Vec<String>, String) {
    let mut problems = Vec::new();
    held_to(lines, "Accuracy threshold", min, &mut problems);
    let score = figure(lines, "Accuracy score");
    match score {
        Some(s) if passed && s < min => problems.push(format!(
            "it says TEST PASS, but its score {s} is below the test's {min}"
        )),
        Some(_) => {}
        None => problems.push("it states no \"Accuracy score\"".into()),
    }
    let said = format!(
        "score {} against the threshold {min}",
        score.map_or("?".into(), |s| s.to_string())
    );
    (problems, said)
}

/// TEST09's verify file against its bounds on the mean output length.
fn mean_verdict(lines: &[String], (lo, hi): (f64, f64), passed: bool) -> (Vec<String>, String) {
    let mut problems = Vec::new();
    held_to(lines, "Min threshold", lo, &mut problems);
    held_to(lines, "Max threshold", hi, &mut problems);
    let mean = figure(lines, "Mean output tokens");
    match mean {
        Some(m) if passed && !(lo..=hi).contains(&m) => problems.push(format!(
            "it says TEST PASS, but its mean output length {m} is outside the test's {lo} to {hi}"
        )),
        Some(_) => {}
        None => problems.push("it states no \"Mean output tokens\"".into()),
    }
    let said = format!(
        "mean output length {} against the bounds {lo} to {hi}",
        mean.map_or("?".into(), |m| m.to_string())
    );
    (problems, said)
}

/// A threshold the verify file names held to the test's audit.config: a problem when it names
/// another, or none.
fn held_to(lines: &[String], key: &str, want: f64, problems: &mut Vec<String>) {
    match figure(lines, key) {
        Some(t) if t != want => problems.push(format!(
            "its {key} is {t} where the test's audit.config sets {want}"
        )),
        Some(_) => {}
        None => problems.push(format!("it states no \"{key}\"")),
    }
}

/// The number on the verify file's first line `KEY: NUMBER`, if it has one.
fn figure(lines: &[String], key: &str) -> Option<f64> {
    lines.iter().find_map(|l| {
        l.trim()
            .strip_prefix(key)?
            .trim_start()
            .strip_prefix(':')?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
    })
}
