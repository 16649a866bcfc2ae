//! MLPerf LoadGen: `mlperf_log_summary.txt` (the printed summary, `Key : value` lines) beside
//! `mlperf_log_detail.txt` (one `:::MLLOG {json}` entry per line: the settings requested and in
//! effect, the result's every figure, errors and warnings flagged `is_error`/`is_warning`).
//!
//! Definitions, as LoadGen 6.0 writes them (`loadgen/results.cc`):
//! - units: latencies in ns, rates per second, durations in ms (settings) or ns (measured);
//! - TTFT anchor: the SUT's own `FirstTokenComplete` call (LoadGen sees no stream: the SUT says
//!   when its first token came); TPOT = (latency - TTFT) / (tokens - 1);
//! - token counts: what the SUT reports in `QuerySampleResponse` (any source it likes);
//! - which requests: every query issued in the timed run; LoadGen has no notion of a failed
//!   request (a SUT completes a failed one like any other), and writes no per-query records
//!   outside its trace and accuracy logs, so its latency figures are not recomputable here;
//! - validity (Server): VALID only when the performance constraints (latency percentiles
//!   within target), the minimum duration, the minimum query count and early stopping are all
//!   met; the MLPerf rules also ask for a 600 s minimum duration, which a run may override.

use super::{impossible, record, row, Row, Spread, IMPOSSIBLE_AGGREGATE};
use super::{ACCURACY_BELOW_TARGET, ACCURACY_COUNT_MISMATCH, ACCURACY_MISSING};
use super::{
    COMPLIANCE_FAILED, RUN_INCOMPLETE, SETTINGS_BELOW_RULES, TOOL_ERRORS, VALIDITY_MISMATCH,
};
use crate::check::{Emit, Ran};
use crate::report::Severity;
use crate::speed;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The minimum run duration the MLPerf inference rules ask for, in ms.
pub const RULES_MIN_DURATION_MS: f64 = 600_000.0;

/// The summary: `(line, key, value)` of every `Key : value` line.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Its file name.
    pub file: String,
    /// Every entry, in order.
    pub entries: Vec<(usize, String, String)>,
    /// The errors and warnings it says LoadGen logged: `(line, "errors" or "warnings", count)`
    /// (`N warnings encountered. See detailed log.`; `No errors encountered` is 0).
    pub counted: Vec<(usize, &'static str, u64)>,
}

/// A summary value as the detail log types it: `Yes`/`No` as a flag, a number, else text.
fn summary_value(v: &str) -> Value {
    let v = v.trim();
    match v {
        "Yes" | "YES" | "yes" => Value::Bool(true),
        "No" | "NO" | "no" => Value::Bool(false),
        _ => v
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| v.parse::<f64>().map(Value::from))
            .unwrap_or_else(|_| Value::String(v.to_string())),
    }
}

/// The detail key of a test parameter line (`min_duration (ms)` -> `effective_min_duration_ms`).
fn setting_key(k: &str) -> Option<String> {
    let (name, unit) = match k.split_once(" (") {
        Some((n, u)) => (n, format!("_{}", u.trim_end_matches(')'))),
        None => (k, String::new()),
    };
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    plain.then(|| format!("effective_{name}{unit}"))
}

/// The detail log: the last value of each key with its line, and the flagged entries.
#[derive(Debug, Clone, Default)]
pub struct Detail {
    /// Its file name.
    pub file: String,
    /// Key -> (line, value).
    pub values: BTreeMap<String, (usize, Value)>,
    /// Entries flagged as errors: (line, key, value).
    pub errors: Vec<(usize, String, String)>,
    /// Entries flagged as warnings.
    pub warnings: Vec<(usize, String, String)>,
}

impl Detail {
    /// The detail log's view of a summary given alone: each printed figure and verdict under its
    /// detail key (at the summary's line), the test parameters as `effective_*`, and the counts
    /// of errors and warnings the summary states (`num_errors`, `num_warnings`).
    pub fn of_summary(s: &Summary) -> Detail {
        let mut d = Detail {
            file: s.file.clone(),
            ..Detail::default()
        };
        for (line, k, v) in &s.entries {
            let Some(key) = detail_key(k).or_else(|| setting_key(k)) else {
                continue;
            };
            d.values.insert(key, (*line, summary_value(v)));
        }
        for (line, what, n) in &s.counted {
            let key = format!("num_{what}");
            d.values.insert(key, (*line, Value::from(*n)));
        }
        d
    }

    fn num(&self, k: &str) -> Option<f64> {
        self.values.get(k).and_then(|(_, v)| v.as_f64())
    }
    fn flag(&self, k: &str) -> Option<bool> {
        self.values.get(k).and_then(|(_, v)| v.as_bool())
    }
    fn text(&self, k: &str) -> Option<&str> {
        self.values.get(k).and_then(|(_, v)| v.as_str())
    }
}

/// LoadGen's logs as the checks read them: the detail log and the summary when given.
#[derive(Debug, Clone, Default)]
pub struct Logs {
    /// `mlperf_log_summary.txt`, when given beside the detail log (compared with it).
    pub summary: Option<Summary>,
    /// `mlperf_log_detail.txt`, or, when only the summary is given, the summary's figures,
    /// verdict, settings and counts of errors and warnings under the detail log's keys
    /// ([`Detail::of_summary`]).
    pub detail: Detail,
    /// The verdict lines of the compliance tests' verification outputs given beside the logs
    /// (`verify_accuracy.txt`, `verify_performance.txt`), in file order.
    pub compliance: Vec<Verdict>,
    /// The accuracy script's printed result (`accuracy.txt`), when given.
    pub accuracy: Option<Accuracy>,
    /// The name of the accuracy run's log (`mlperf_log_accuracy.json`), when given.
    pub accuracy_log: Option<String>,
}

/// One verdict line of a compliance test's verification output, as the MLPerf scripts write
/// it: TEST01/04/05 `TEST PASS` / `TEST FAIL`; TEST06 (`compliance/nvidia/TEST06/
/// run_verification.py`) `First token check pass: True|False|Skipped`, `EOS check pass: ...`,
/// `Sample length check pass: ...`, then `TEST06 verification complete` or `... failed`.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The file's name.
    pub file: String,
    /// Its line, from 1.
    pub line: usize,
    /// The line as written, trimmed.
    pub text: String,
    /// Whether it says pass (`Skipped`, which the submission checker accepts for the first
    /// token check of Offline runs, counts as a pass).
    pub pass: bool,
}

impl Verdict {
    /// The verdict lines of one verification output; none when it holds no verdict line.
    pub fn read(file: &str, text: &str) -> Vec<Verdict> {
        let mut out = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let t = raw.trim();
            let pass = if let Some((_, v)) = t.split_once("check pass:") {
                matches!(v.trim(), "True" | "Skipped")
            } else if t.contains("TEST PASS") || t.ends_with("verification complete") {
                true
            } else if t.contains("TEST FAIL") || t.ends_with("verification failed") {
                false
            } else {
                continue;
            };
            let (file, line, text) = (file.to_string(), i + 1, t.to_string());
            out.push(Verdict {
                file,
                line,
                text,
                pass,
            });
        }
        out
    }
}

/// Every LoadGen check, in the order they run.
pub const CHECKS: &[Row<Logs>] = &[
    row(RUN_INCOMPLETE, validity),
    row(VALIDITY_MISMATCH, constraints),
    row(TOOL_ERRORS, errors),
    row(SETTINGS_BELOW_RULES, rules),
    row(speed::RECOMPUTE_MISMATCH.about(), summary_against_detail),
    row(IMPOSSIBLE_AGGREGATE, impossible_aggregates),
    row(COMPLIANCE_FAILED, compliance),
    row(ACCURACY_BELOW_TARGET, accuracy_targets),
    row(ACCURACY_COUNT_MISMATCH, accuracy_count),
    row(ACCURACY_MISSING, accuracy_missing),
];

/// `import.run-incomplete`: LoadGen's own verdict INVALID, with every unmet rule named.
fn validity(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    let Some(v) = d.text("result_validity") else {
        return Some(());
    };
    if v == "VALID" {
        return Some(());
    }
    let mut why = Vec::new();
    for (k, what) in [
        ("result_perf_constraints_met", "latency constraints"),
        ("result_min_duration_met", "minimum duration"),
        ("result_min_queries_met", "minimum query count"),
        ("early_stopping_met", "early stopping"),
    ] {
        if d.flag(k) == Some(false) {
            why.push(what);
        }
    }
    let reason = d.text("result_invalid_reason").filter(|r| !r.is_empty());
    let line = d.values.get("result_validity").map_or(0, |(l, _)| *l);
    emit.finding(format!(
        "LoadGen declares the run {v}: not met: {}{}",
        if why.is_empty() {
            "(none named)".to_string()
        } else {
            why.join(", ")
        },
        reason.map_or(String::new(), |r| format!(" ({r})"))
    ))
    .file(&d.file)
    .pointer(format!("line {line}"))
    .data(json!({"unmet": why}));
    Some(())
}

/// `import.validity-mismatch`: the verdict against its parts, and the duration and query-count
/// flags against the measured duration and count.
fn constraints(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    let parts = [
        "result_perf_constraints_met",
        "result_min_duration_met",
        "result_min_queries_met",
        "early_stopping_met",
    ];
    let all = parts.iter().all(|k| d.flag(k) != Some(false));
    if d.text("result_validity") == Some("VALID") && !all {
        mismatch(
            d,
            "result_validity",
            "the run is VALID though one of its rules is not met".into(),
            emit,
        );
    }
    // The run's length as LoadGen measures it: samples / completed samples per second.
    let samples = d
        .num("result_query_count")
        .map(|q| q * d.num("effective_samples_per_query").unwrap_or(1.0));
    let rate = d
        .num("result_completed_samples_per_sec")
        .filter(|r| *r > 0.0);
    let dur = samples.zip(rate).map(|(n, r)| 1000.0 * n / r);
    if let (Some(ms), Some(min), Some(true)) = (
        dur,
        d.num("effective_min_duration_ms"),
        d.flag("result_min_duration_met"),
    ) {
        if ms < min {
            mismatch(d, "result_min_duration_met", format!("the minimum duration is said met, but the run lasted {ms:.0} ms (samples / completed samples per second) of the {min:.0} ms asked"), emit);
        }
    }
    let n = d.num("result_query_count");
    if let (Some(n), Some(min), Some(true)) = (
        n,
        d.num("effective_min_query_count"),
        d.flag("result_min_queries_met"),
    ) {
        if n < min {
            mismatch(
                d,
                "result_min_queries_met",
                format!(
                    "the minimum query count is said met, but {n} queries ran of the {min} asked"
                ),
                emit,
            );
        }
    }
    Some(())
}

fn mismatch(d: &Detail, key: &str, msg: String, emit: &mut Emit) {
    let line = d.values.get(key).map_or(0, |(l, _)| *l);
    emit.finding(msg)
        .file(&d.file)
        .pointer(format!("line {line}"));
}

/// `import.tool-errors`: errors (and warnings) LoadGen logged during the run.
fn errors(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    let n = d.num("num_errors").unwrap_or(0.0) as usize;
    let n_warnings = d.num("num_warnings").unwrap_or(0.0) as usize;
    for (list, sev, what, stated) in [
        (&d.errors, Severity::Error, "errors", n),
        (&d.warnings, Severity::Warning, "warnings", n_warnings),
    ] {
        let count = list.len().max(stated);
        if count == 0 {
            continue;
        }
        let mut first: Vec<String> = list
            .iter()
            .take(3)
            .map(|(_, k, v)| format!("{k}: {}", v.chars().take(120).collect::<String>()))
            .collect();
        let mut lines: Vec<String> = list.iter().map(|(l, _, _)| l.to_string()).collect();
        if list.is_empty() {
            // Only the summary's count: which they were is in the detail log.
            first.push("the summary does not say which; the detail log names them".into());
            let key = format!("num_{what}");
            lines.extend(d.values.get(&key).map(|(l, _)| l.to_string()));
        }
        emit.at_severity(
            sev,
            format!(
                "LoadGen logged {count} {what} during the run ({})",
                first.join("; ")
            ),
        )
        .file(&d.file)
        .pointer(format!("line {}", lines.join(", ")))
        .data(json!({ what: count }));
    }
    Some(())
}

/// `import.compliance-failed`: every verdict line of a compliance test's verification that
/// says fail. Ran when one was given.
fn compliance(x: &Logs, emit: &mut Emit) -> Ran {
    if x.compliance.is_empty() {
        return None;
    }
    let mut files: Vec<&str> = x.compliance.iter().map(|v| v.file.as_str()).collect();
    files.dedup();
    for file in files {
        let failed: Vec<&Verdict> = x
            .compliance
            .iter()
            .filter(|v| v.file == file && !v.pass)
            .collect();
        if failed.is_empty() {
            continue;
        }
        let said: Vec<String> = failed.iter().map(|v| format!("'{}'", v.text)).collect();
        let lines: Vec<String> = failed.iter().map(|v| v.line.to_string()).collect();
        emit.finding(format!(
            "the compliance test's verification says {}: the run failed it",
            said.join(", ")
        ))
        .file(file)
        .pointer(format!("line {}", lines.join(", ")));
    }
    Some(())
}

/// `import.settings-below-rules`: a run whose minimum duration is below the 600 s the MLPerf
/// inference rules ask for: valid or not, it is not a result under those rules.
fn rules(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    let Some(min) = d.num("effective_min_duration_ms") else {
        return Some(());
    };
    if min >= RULES_MIN_DURATION_MS {
        return Some(());
    }
    let line = d
        .values
        .get("effective_min_duration_ms")
        .map_or(0, |(l, _)| *l);
    emit.finding(
        format!("the run's minimum duration is {} s, below the 600 s of the MLPerf inference rules (set by the run's own settings)", min / 1000.0),
    )
    .file(&d.file)
    .pointer(format!("line {line}"));
    Some(())
}

/// The detail key of a summary line's key.
fn detail_key(k: &str) -> Option<String> {
    let fixed = [
        (
            "Completed samples per second",
            "result_completed_samples_per_sec",
        ),
        (
            "Completed tokens per second",
            "result_completed_tokens_per_second",
        ),
        (
            "Scheduled samples per second",
            "result_scheduled_samples_per_sec",
        ),
        ("Min latency (ns)", "result_min_latency_ns"),
        ("Max latency (ns)", "result_max_latency_ns"),
        ("Mean latency (ns)", "result_mean_latency_ns"),
        (
            "Min First Token latency (ns)",
            "result_first_token_min_latency_ns",
        ),
        (
            "Max First Token latency (ns)",
            "result_first_token_max_latency_ns",
        ),
        (
            "Mean First Token latency (ns)",
            "result_first_token_mean_latency_ns",
        ),
        (
            "Min Time per Output Token (ns)",
            "result_time_to_output_token_min",
        ),
        (
            "Max Time per Output Token (ns)",
            "result_time_to_output_token_max",
        ),
        (
            "Mean Time per Output Token (ns)",
            "result_time_to_output_token_mean",
        ),
        // LoadGen before 6.0 prints "Time to Output Token".
        (
            "Min Time to Output Token (ns)",
            "result_time_to_output_token_min",
        ),
        (
            "Max Time to Output Token (ns)",
            "result_time_to_output_token_max",
        ),
        (
            "Mean Time to Output Token (ns)",
            "result_time_to_output_token_mean",
        ),
        ("Result is", "result_validity"),
        (
            "Performance constraints satisfied",
            "result_perf_constraints_met",
        ),
        ("Min duration satisfied", "result_min_duration_met"),
        ("Min queries satisfied", "result_min_queries_met"),
        ("Early stopping satisfied", "early_stopping_met"),
    ];
    if let Some((_, d)) = fixed.iter().find(|(s, _)| *s == k) {
        return Some(d.to_string());
    }
    let (p, rest) = k.split_once(" percentile ")?;
    let name = match rest {
        "latency (ns)" => format!("result_{p}_percentile_latency_ns"),
        "first token latency (ns)" => format!("result_first_token_{p}_percentile_latency_ns"),
        "time to output token (ns)" => format!("result_time_per_output_token_{p}_percentile_ns"),
        _ => return None,
    };
    Some(name)
}

/// `speed.recompute-mismatch`: every figure and verdict the summary prints against the detail
/// log's value, at the coarser of the two precisions (the summary's decimals; the detail log's
/// six significant digits for a double). Ran when it compared one.
fn summary_against_detail(x: &Logs, emit: &mut Emit) -> Ran {
    let (s, d) = (x.summary.as_ref()?, &x.detail);
    let mut compared = false;
    for (line, k, v) in &s.entries {
        let Some(dk) = detail_key(k) else { continue };
        let Some((_, dv)) = d.values.get(&dk) else {
            continue;
        };
        let at = format!("line {line}");
        let key = format!("loadgen.{dk}");
        let (agrees, detail) = match (v.trim().parse::<f64>(), dv) {
            (Ok(shown), Value::Number(n)) => {
                let Some(exact) = n.as_f64() else { continue };
                record(emit, &key, exact, shown);
                (same_figure(n, v), None)
            }
            (_, Value::Bool(b)) => (
                v.trim().eq_ignore_ascii_case("yes") == *b,
                Some(dv.to_string()),
            ),
            (_, Value::String(t)) => (v.trim() == t, Some(t.clone())),
            _ => continue,
        };
        compared = true;
        if agrees {
            continue;
        }
        let msg = match detail {
            Some(detail) => format!(
                "the summary prints '{k}: {}' but the detail log says {detail}",
                v.trim()
            ),
            None => format!(
                "{key} is printed as {} but the detail log gives {dv}",
                v.trim()
            ),
        };
        let data = serde_json::json!({"printed": v.trim(), "detail": dv});
        emit.finding(msg).file(&s.file).pointer(at).data(data);
    }
    compared.then_some(())
}

/// Whether the summary's text and the detail log's number are one figure: each is the exact
/// value rounded (the text at its decimals, a double of the detail log at six significant
/// digits, an integer exactly), so they may differ by half a unit of each.
///
/// A double is known by its point in either file: LoadGen writes the detail log's doubles with
/// the stream's default format (six significant digits, trailing zeros and the point dropped:
/// 23144.0 is written `23144`), so a detail value without a point is still a double where the
/// summary prints the same figure with decimals (it prints integers without: counts, ns).
/// Published: HPE's v4.1 llama2-70b Server run, completed tokens/s `23144.02` against `23144`.
pub fn same_figure(detail: &serde_json::Number, text: &str) -> bool {
    let (Some(x), Ok(shown)) = (detail.as_f64(), text.trim().parse::<f64>()) else {
        return false;
    };
    let decimals = crate::stats::printed_decimals(text.trim());
    let text_unit = 10f64.powi(-(decimals as i32));
    let double = detail.is_f64() || decimals > 0;
    let detail_unit = if double && x != 0.0 {
        10f64.powi(x.abs().log10().floor() as i32 - 5)
    } else {
        0.0
    };
    (x - shown).abs() <= 0.5 * (text_unit + detail_unit) * (1.0 + 1e-9) + 1e-12 * x.abs()
}

/// The figures of one latency a log prints: min, mean, max and percentiles, by their keys.
struct Family {
    what: &'static str,
    min: &'static str,
    mean: &'static str,
    max: &'static str,
    /// The percentile keys are `{prefix}{p}{suffix}` (`result_90.00_percentile_latency_ns`).
    prefix: &'static str,
    suffix: &'static str,
}

const FAMILIES: [Family; 3] = [
    Family {
        what: "latency",
        min: "result_min_latency_ns",
        mean: "result_mean_latency_ns",
        max: "result_max_latency_ns",
        prefix: "result_",
        suffix: "_percentile_latency_ns",
    },
    Family {
        what: "first token latency",
        min: "result_first_token_min_latency_ns",
        mean: "result_first_token_mean_latency_ns",
        max: "result_first_token_max_latency_ns",
        prefix: "result_first_token_",
        suffix: "_percentile_latency_ns",
    },
    Family {
        what: "time per output token",
        min: "result_time_to_output_token_min",
        mean: "result_time_to_output_token_mean",
        max: "result_time_to_output_token_max",
        prefix: "result_time_per_output_token_",
        suffix: "_percentile_ns",
    },
];

/// `import.impossible-aggregate`: per latency, the mean and every percentile within the min and
/// the max, and the percentiles in order: figures of one set of queries that cannot all hold
/// (an overflowed sum gives a mean below the min).
fn impossible_aggregates(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    let mut ran = false;
    for f in &FAMILIES {
        let percentiles = d
            .values
            .iter()
            .filter_map(|(k, (_, v))| {
                let p = k.strip_prefix(f.prefix)?.strip_suffix(f.suffix)?;
                Some((p.parse::<f64>().ok()?, format!("p{p}"), v.as_f64()?))
            })
            .collect();
        let spread = Spread {
            min: d.num(f.min),
            mean: d.num(f.mean),
            max: d.num(f.max),
            percentiles,
        };
        if spread.min.is_none() || spread.max.is_none() {
            continue;
        }
        ran = true;
        let Some((msg, figure)) = impossible(f.what, &spread) else {
            continue;
        };
        let key = match figure.as_str() {
            "mean" => f.mean.to_string(),
            "min" => f.min.to_string(),
            "max" => f.max.to_string(),
            p => format!("{}{}{}", f.prefix, p.trim_start_matches('p'), f.suffix),
        };
        let line = d.values.get(&key).map_or(0, |(l, _)| *l);
        emit.finding(msg)
            .file(&d.file)
            .pointer(format!("line {line}"));
    }
    ran.then_some(())
}

/// What an MLPerf LLM benchmark's accuracy script printed in `accuracy.txt`: the dict after
/// its `Results` line (`{'rouge1': 44.5435, ..., 'gen_num': 24576, 'tokens_per_sample': 290.3}`),
/// and the benchmark it is of.
#[derive(Debug, Clone, Default)]
pub struct Accuracy {
    /// Its file name.
    pub file: String,
    /// The line of the dict, from 1.
    pub line: usize,
    /// Every `'key': number` of the dict, in order (a value Python printed as `nan` is NaN).
    pub scores: Vec<(String, f64)>,
    /// The benchmark, as the file's path names it ([`benchmark_in`]), else `None`.
    pub named: Option<String>,
}

impl Accuracy {
    fn score(&self, k: &str) -> Option<f64> {
        self.scores.iter().find(|(n, _)| n == k).map(|(_, v)| *v)
    }
}

/// One MLPerf LLM benchmark's accuracy rule: each score's reference, the fraction of it a
/// result must reach, upper limits, and the dataset's sample count.
pub struct Target {
    /// The benchmark's name without its accuracy class (`llama2-70b`).
    pub base: &'static str,
    /// The accuracy classes it has: fractions of the reference (`99` = 0.99).
    pub classes: &'static [(&'static str, f64)],
    /// `(key, reference)`, each to reach at the class's fraction.
    pub scaled: &'static [(&'static str, f64)],
    /// `(key, lower bound, upper bound)`, fixed whatever the class (`gen_len`, `tokens_per_sample`).
    pub bounds: &'static [(&'static str, f64, f64)],
    /// The dataset's sample count (the submission checker's `accuracy-sample-count`).
    pub samples: u64,
}

/// The accuracy rules of the LLM benchmarks whose `accuracy.txt` is judged, as MLPerf's
/// submission checker states them (`accuracy-target`, `accuracy-upper-limit`, the dataset sizes;
/// it reads each key with `ACC_PATTERN`, `'rouge1': x`, and asks `x >= target`):
/// - v4.1: mlcommons/inference `tools/submission/submission_checker.py` at commit
///   2ed9555be0c8beea97167bca46938d56aff19c1c (LoadGen '4.1 @ 2ed9555be0', which the v4.1 logs
///   name), lines 251-287;
/// - v5.0 on: the same file at 7bf59976b5f4eb7c5b8f30a88af832e028028446 (lines 360-465), unchanged
///   at b66003e1 (`submission_checker/constants.py`): llama2-70b and gptj as in v4.1, the
///   interactive llama2-70b as llama2-70b, llama3.1-405b added, and mixtral's references moved
///   (rouge1 45.5989, rouge2 23.3526, rougeL 30.4608, gsm8k 73.66, mbxp 60.16, tokens per sample
///   at least 90 % of 144.84).
///
/// A file does not reliably say its round (LoadGen's build label is not one), so each key is
/// held to the lower of the rounds' targets: a score below it misses the target of every round.
pub const TARGETS: &[Target] = &[
    Target {
        base: "gptj",
        classes: &[("99", 0.99), ("99.9", 0.999)],
        scaled: &[
            ("rouge1", 42.9865),
            ("rouge2", 20.1235),
            ("rougeL", 29.9881),
        ],
        bounds: &[("gen_len", 4016878.0 * 0.9, f64::INFINITY)],
        samples: 13368,
    },
    Target {
        base: "llama2-70b",
        classes: &[("99", 0.99), ("99.9", 0.999)],
        scaled: LLAMA2_70B_SCALED,
        bounds: LLAMA2_70B_BOUNDS,
        samples: 24576,
    },
    Target {
        base: "llama2-70b-interactive",
        classes: &[("99", 0.99), ("99.9", 0.999)],
        scaled: LLAMA2_70B_SCALED,
        bounds: LLAMA2_70B_BOUNDS,
        samples: 24576,
    },
    Target {
        base: "mixtral-8x7b",
        classes: &[("", 0.99)],
        // v4.1's rouge1, rouge2, rougeL and mbxp; v5.0's gsm8k and tokens-per-sample floor.
        scaled: &[
            ("rouge1", 45.4911),
            ("rouge2", 23.2829),
            ("rougeL", 30.3615),
            ("gsm8k", 73.66),
            ("mbxp", 60.12),
        ],
        bounds: &[("tokens_per_sample", 144.84 * 0.9, 145.9 * 1.1)],
        samples: 15000,
    },
    Target {
        base: "llama3.1-405b",
        classes: &[("", 0.99)],
        scaled: &[("rougeL", 21.6666), ("exact_match", 90.1335)],
        bounds: &[("tokens_per_sample", 684.68 * 0.9, 684.68 * 1.1)],
        samples: 8313,
    },
];

const LLAMA2_70B_SCALED: &[(&str, f64)] = &[
    ("rouge1", 44.4312),
    ("rouge2", 22.0352),
    ("rougeL", 28.6162),
];
const LLAMA2_70B_BOUNDS: &[(&str, f64, f64)] = &[("tokens_per_sample", 294.45 * 0.9, 294.45 * 1.1)];

/// The MLPerf LLM benchmark a path names, nearest folder first: a folder named as one
/// (`llama2-70b-99.9`, as MLPerf's results tree lays runs out) or holding the name between dashes
/// (`v4.1-nvidia-h100x8-llama2-70b-99.9-server`).
pub fn benchmark_in(path: &str) -> Option<String> {
    let names = || {
        TARGETS.iter().flat_map(|t| {
            t.classes.iter().map(|(class, _)| match *class {
                "" => t.base.to_string(),
                c => format!("{}-{c}", t.base),
            })
        })
    };
    path.rsplit(['/', '\\']).find_map(|part| {
        let dashed = format!("-{part}-");
        names().find(|n| dashed.contains(&format!("-{n}-")))
    })
}

/// The benchmark of an accuracy.txt and its class's fraction: by the folder its path names,
/// else by its keys (gsm8k: mixtral; exact_match and rougeL without rouge1: llama3.1-405b;
/// tokens_per_sample: llama2-70b; gen_len alone: gptj) at the
/// benchmark's lowest class (99 %: a 99.9 % run is then held to the 99 % target only).
pub fn target_of(a: &Accuracy) -> Option<(&'static Target, String, f64)> {
    if let Some(named) = &a.named {
        for t in TARGETS {
            for (class, f) in t.classes {
                let name = match *class {
                    "" => t.base.to_string(),
                    c => format!("{}-{c}", t.base),
                };
                if *named == name {
                    return Some((t, name, *f));
                }
            }
        }
    }
    let has = |k: &str| a.score(k).is_some();
    let base = if has("gsm8k") && has("mbxp") {
        "mixtral-8x7b"
    } else if has("exact_match") && has("rougeL") && !has("rouge1") {
        "llama3.1-405b"
    } else if has("rouge1") && has("tokens_per_sample") {
        "llama2-70b"
    } else if has("rouge1") && has("gen_len") {
        "gptj"
    } else {
        return None;
    };
    let t = TARGETS.iter().find(|t| t.base == base)?;
    let (class, f) = t.classes.first()?;
    let name = match *class {
        "" => t.base.to_string(),
        c => format!("{}-{c}", t.base),
    };
    Some((t, format!("{name} (told by its keys)"), *f))
}

/// `import.accuracy-below-target`: each score of accuracy.txt against its benchmark's target
/// and upper limit. Ran when the benchmark is known.
fn accuracy_targets(x: &Logs, emit: &mut Emit) -> Ran {
    let a = x.accuracy.as_ref()?;
    let (t, name, fraction) = target_of(a)?;
    let wanted = t
        .scaled
        .iter()
        .map(|(k, r)| (*k, r * fraction, f64::INFINITY))
        .chain(t.bounds.iter().copied());
    for (k, low, high) in wanted {
        let Some(v) = a.score(k) else {
            emit.finding(format!(
                "accuracy.txt has no '{k}', which {name} is judged on"
            ))
            .file(&a.file)
            .pointer(format!("line {}", a.line));
            continue;
        };
        if v >= low && v <= high {
            continue;
        }
        let (bound, what) = if v > high {
            (high, "above the upper limit")
        } else {
            (low, "below the target")
        };
        emit.finding(format!(
            "'{k}' {v} is {what} {bound:.4} of {name}: the MLPerf submission checker refuses it in the closed division (the open division takes it as is: not comparable with closed results)"
        ))
        .file(&a.file)
        .pointer(format!("line {}", a.line))
        .data(json!({"key": k, "value": v, "bound": bound, "benchmark": name}));
    }
    Some(())
}

/// `import.accuracy-count-mismatch`: accuracy.txt's `gen_num` against the run's sample count
/// (the detail log's `qsl_reported_total_count`, every sample of which an accuracy run issues;
/// else the benchmark's dataset size). Ran when both are known.
fn accuracy_count(x: &Logs, emit: &mut Emit) -> Ran {
    let a = x.accuracy.as_ref()?;
    let scored = a.score("gen_num")?;
    let (count, whose) = match x.detail.num("qsl_reported_total_count") {
        Some(n) => (n, format!("{}'s qsl_reported_total_count", x.detail.file)),
        None => {
            let (t, name, _) = target_of(a)?;
            (t.samples as f64, format!("the size of {name}'s dataset"))
        }
    };
    if scored != count {
        emit.finding(format!(
            "accuracy.txt scored gen_num {scored} samples, but {whose} is {count}"
        ))
        .file(&a.file)
        .pointer(format!("line {}", a.line))
        .data(json!({"gen_num": scored, "samples": count}));
    }
    Some(())
}

/// `import.accuracy-missing`: mlperf_log_accuracy.json given without accuracy.txt. Ran when
/// the accuracy log is given.
fn accuracy_missing(x: &Logs, emit: &mut Emit) -> Ran {
    let log = x.accuracy_log.as_ref()?;
    if x.accuracy.is_none() {
        emit.finding(format!(
            "{log} is given without accuracy.txt, the accuracy script's output: the run's accuracy is not stated"
        ))
        .file(log);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::{same_figure, Detail, Logs, Verdict, CHECKS};

    fn n(text: &str) -> serde_json::Number {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn test06_verdicts_are_read_with_skipped_as_a_pass() {
        let text = "First token check pass: Skipped\nEOS check pass: True\nSample length check pass: False\nTEST06 verification failed\n";
        let v = Verdict::read("verify_accuracy.txt", text);
        let pass: Vec<bool> = v.iter().map(|v| v.pass).collect();
        assert_eq!(pass, [true, true, false, false]);
        assert_eq!(v[2].line, 3);
        let r = Verdict::read("verify_performance.txt", "TEST PASS\n");
        assert!(r[0].pass);
        assert!(Verdict::read("x", "Results\n{'rouge1': 44.5}\n").is_empty());
    }

    #[test]
    fn a_failed_compliance_verdict_is_an_error_and_a_pass_is_not() {
        let run = |text: &str| {
            let logs = Logs {
                summary: None,
                detail: Detail::default(),
                compliance: Verdict::read("verify_accuracy.txt", text),
                ..Logs::default()
            };
            super::super::run(CHECKS, &logs)
        };
        let id = "import.compliance-failed";
        let failed = run("EOS check pass: True\nTEST FAIL\n");
        let of_id: Vec<_> = failed.findings.iter().filter(|f| f.check == id).collect();
        assert_eq!(of_id.len(), 1, "{:?}", failed.findings);
        assert!(failed.ran.iter().any(|r| r == id));
        let passed = run("First token check pass: True\nTEST06 verification complete\n");
        assert!(passed.findings.iter().all(|f| f.check != id));
        assert!(passed.ran.iter().any(|r| r == id));
        assert!(run("").ran.iter().all(|r| r != id));
    }

    #[test]
    fn a_benchmark_is_named_by_a_folder_or_between_dashes_never_by_a_prefix() {
        let of = |p: &str| super::benchmark_in(p);
        let tree = "closed/NVIDIA/results/H100/llama2-70b-99.9/Offline/accuracy/accuracy.txt";
        assert_eq!(of(tree).as_deref(), Some("llama2-70b-99.9"));
        let case = "published/loadgen/v4.1-supermicro-h100x8-llama2-70b-99-server/accuracy.txt";
        assert_eq!(of(case).as_deref(), Some("llama2-70b-99"));
        assert_eq!(
            of("x/mixtral-8x7b/Server/accuracy.txt").as_deref(),
            Some("mixtral-8x7b")
        );
        assert_eq!(of("x/llama2-70b-99.95/accuracy.txt"), None);
        let interactive = "closed/X/results/Y/llama2-70b-interactive-99.9/Server/accuracy";
        assert_eq!(
            of(interactive).as_deref(),
            Some("llama2-70b-interactive-99.9")
        );
        assert_eq!(of("accuracy.txt"), None);
    }

    #[test]
    fn a_double_written_without_its_point_is_compared_at_six_digits() {
        assert!(same_figure(&n("23144"), "23144.02"));
        assert!(same_figure(&n("21028.2"), "21028.23"));
        assert!(!same_figure(&n("23144"), "23144.60"));
    }

    #[test]
    fn an_integer_printed_as_one_is_compared_exactly() {
        assert!(same_figure(&n("825000"), "825000"));
        assert!(!same_figure(&n("825000"), "825001"));
    }
}
