//! MLPerf LoadGen: `mlperf_log_summary.txt` (the printed summary, `Key : value` lines) beside
//! `mlperf_log_detail.txt` (one `:::MLLOG {json}` entry per line: the settings requested and in
//! effect, the result's every figure, errors and warnings flagged `is_error`/`is_warning`).
//!
//! The specification is LoadGen's own code at each version (4.0 to 6.0.17), tabled in
//! docs/formats/loadgen.md: rows V1-V5 (what each version writes), L1-L20 (how each figure and
//! verdict is computed, `loadgen/results.cc`, `logging.cc`, `loadgen.cc`), A1-A6 (the accuracy
//! scripts' `accuracy.txt`), C1-C3 (the compliance tests' verdicts). Each check's doc cites the
//! rows it enforces. In short:
//! - units: latencies in ns, rates per second, durations in ms (settings) or ns (measured);
//! - TTFT anchor: the SUT's own `FirstTokenComplete` call (LoadGen sees no stream: the SUT says
//!   when its first token came); TPOT = (latency - TTFT) / (tokens - 1) (row L7);
//! - token counts: what the SUT reports in `QuerySampleResponse` (any source it likes); a reply
//!   of 0 or 1 token is counted as 0 tokens, with an error logged (row L7);
//! - which requests: every sample issued in the timed run (row L1); LoadGen has no notion of a
//!   failed request (a SUT completes a failed one like any other), and writes no per-query
//!   records outside its trace and accuracy logs, so its percentiles are not recomputable here,
//!   only the figures and verdicts that follow from others (rows L2-L14);
//! - validity: VALID only when the latency constraints (Server), the minimum duration, the
//!   minimum query count and early stopping are all met (row L14); the MLPerf rules also ask for
//!   a 600 s minimum duration, which a run may override.

mod accuracy;
pub mod early_stopping;
mod figures;
mod keys;

pub use accuracy::{benchmark_in, target_of, Accuracy, Target, TARGETS};

use super::{impossible, record_judged, row, Row, Spread, IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE};
use super::{ACCURACY_BELOW_TARGET, ACCURACY_COUNT_MISMATCH, ACCURACY_MISSING, EMPTY_SCORED_WRONG};
use super::{
    COMPLIANCE_FAILED, RUN_INCOMPLETE, SETTINGS_BELOW_RULES, TOOL_ERRORS, VALIDITY_MISMATCH,
};
use crate::check::{Emit, Ran};
use crate::report::Severity;
use crate::speed;
pub use keys::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The minimum run duration the MLPerf inference rules ask for, in ms.
pub const RULES_MIN_DURATION_MS: f64 = 600_000.0;

/// The minimum duration of the v0.5 and v0.7 rounds (row L20).
pub const PRE_1_0_MIN_DURATION_MS: f64 = 60_000.0;

/// The summary: `(line, key, value)` of every `Key : value` line.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Its file name.
    pub file: String,
    /// Every entry, in order.
    pub entries: Vec<(usize, String, String)>,
    /// The early-stopping results it prints (`early_stopping_result`, `..._ttft_result`,
    /// `..._tpot_result`, as the detail log keys them): `(line, key, the ` * ` lines joined)`.
    pub early: Vec<(usize, String, String)>,
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

/// The detail key of a test parameter line (`min_duration (ms)` -> `effective_min_duration_ms`),
/// and of the header's `Scenario` and `Mode`.
fn setting_key(k: &str) -> Option<String> {
    match k {
        "Scenario" => return Some("effective_scenario".into()),
        "Mode" => return Some("effective_test_mode".into()),
        _ => {}
    }
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
    /// For a detail log made of a summary ([`Detail::of_summary`]): each figure's text as the
    /// summary prints it (its decimals are its precision).
    pub printed: BTreeMap<String, String>,
    /// For a detail log made of a summary: the factor from the detail log's unit to the
    /// summary's, where they differ (SingleStream's `TPS w/o loadgen overhead`, row L6).
    pub scales: BTreeMap<String, f64>,
    /// Whether this is the detail log itself (false: made of a summary given alone).
    pub given: bool,
    /// Entries that could not be read, skipped: (line, why).
    pub unreadable: Vec<(usize, String)>,
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
        let scenario = s.scenario();
        for (line, k, v) in &s.entries {
            if let Some((key, scale)) = detail_key(k, scenario.as_deref()) {
                let value = match summary_value(v) {
                    Value::Number(n) if scale != 1.0 => json!(n.as_f64().unwrap_or(0.0) / scale),
                    other => other,
                };
                d.values.insert(key.clone(), (*line, value));
                d.printed.insert(key.clone(), v.trim().to_string());
                d.scales.insert(key, scale);
            } else if let Some(key) = setting_key(k) {
                d.values.insert(key, (*line, summary_value(v)));
            }
        }
        for (line, key, text) in &s.early {
            d.values
                .insert(key.clone(), (*line, Value::from(text.clone())));
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

impl Summary {
    /// The scenario it prints (`Scenario : Server`).
    pub fn scenario(&self) -> Option<String> {
        self.entries
            .iter()
            .find(|(_, k, _)| k == "Scenario")
            .map(|(_, _, v)| v.trim().to_string())
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
    /// Whether that log holds no entry (`[` `]`: what LoadGen writes in performance mode).
    pub accuracy_log_empty: bool,
    /// The entries of that log the file holds, and the `qsl_idx` of those whose reply is empty
    /// (`"data" : ""`), when it was read.
    pub accuracy_replies: Option<(usize, Vec<u64>)>,
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
    row(speed::RECOMPUTE_MISMATCH.about(), recompute),
    row(IMPOSSIBLE_AGGREGATE, impossible_aggregates),
    row(COMPLIANCE_FAILED, compliance),
    row(ACCURACY_BELOW_TARGET, accuracy::accuracy_targets),
    row(ACCURACY_COUNT_MISMATCH, accuracy::accuracy_count),
    row(ACCURACY_MISSING, accuracy::accuracy_missing),
    row(EMPTY_SCORED_WRONG, accuracy::empty_replies),
    row(NOT_RECOMPUTABLE, coverage),
];

/// `import.run-incomplete` (rows L14, L21): LoadGen's own verdict INVALID, with every unmet rule
/// named; or a detail log that ends before LoadGen's end-of-test entries (`power_end`, logged
/// once every issued sample completed, in every mode; then, in performance mode, the result).
fn validity(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    if d.given && !d.values.contains_key("power_end") && !d.values.contains_key("result_validity") {
        let last = d.values.values().map(|(l, _)| *l).max().unwrap_or(0);
        emit.finding(format!("{} ends at line {last} before LoadGen's end-of-test entries (power_end, result_validity): the run did not finish, and states no result", d.file))
            .file(&d.file)
            .pointer(format!("line {last}"));
        return Some(());
    }
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

/// `import.validity-mismatch` (rows L10-L14): LoadGen's verdict and each rule's flag against
/// what its own figures give, as `results.cc` decides them: VALID exactly when every rule is met
/// (L14); the minimum duration (L10), the minimum query count (L11), the latency constraints
/// (L12) and early stopping (L13) recomputed, each at the rounding its figures were written with.
fn constraints(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    verdict_parts(d, emit);
    figures::min_duration(d, emit);
    figures::min_queries(d, emit);
    figures::perf_constraints(d, emit);
    figures::early_stopping(d, emit);
    Some(())
}

/// The flags whose conjunction is LoadGen's verdict (row L14).
const PARTS: [&str; 4] = [
    "result_perf_constraints_met",
    "result_min_duration_met",
    "result_min_queries_met",
    "early_stopping_met",
];

/// Row L14: VALID if and only if every rule LoadGen states is met.
fn verdict_parts(d: &Detail, emit: &mut Emit) {
    let Some(verdict) = d.text("result_validity") else {
        return;
    };
    let stated: Vec<bool> = PARTS.iter().filter_map(|k| d.flag(k)).collect();
    let all = stated.iter().all(|m| *m);
    let msg = match (verdict, all) {
        ("VALID", false) => "the run is VALID though one of its rules is not met",
        ("INVALID", true) if stated.len() >= 3 => {
            "the run is INVALID though every rule it states is met"
        }
        _ => return,
    };
    let line = d.values.get("result_validity").map_or(0, |(l, _)| *l);
    emit.finding(msg)
        .file(&d.file)
        .pointer(format!("line {line}"));
}

/// The error LoadGen logs about its own build, which the MLPerf submission checker ignores
/// (`submission_checker.py` v4.1 l. 942-953; `checks/performance_check.py` l. 145-165 at HEAD).
const BUILD_ERROR: &str = "Loadgen built with uncommitted changes!";

/// `import.tool-errors` (rows L7, L9, L16): errors (and warnings) LoadGen logged during the run,
/// each named, with what LoadGen does with the sample where its code says (a reply of 0 or 1
/// token counted as 0 tokens with a negative TPOT; a sample without a first token entering the
/// TTFT figures as INT64_MIN). Its error about its own build is a note (the submission checker
/// ignores it).
fn errors(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    let (build, run): (Vec<_>, Vec<_>) = d
        .errors
        .iter()
        .partition(|(_, _, v)| v.contains(BUILD_ERROR));
    for (line, key, _) in &build {
        emit.info(format!("LoadGen logged {key}: '{BUILD_ERROR}', an error about its build, not the run; the MLPerf submission checker ignores it"))
            .file(&d.file)
            .pointer(format!("line {line}"));
    }
    let stated = |k: &str| d.num(k).unwrap_or(0.0) as usize;
    let errors = stated("num_errors").saturating_sub(build.len());
    logged(d, &run, Severity::Error, ("errors", errors), emit);
    let warnings: Vec<&(usize, String, String)> = d.warnings.iter().collect();
    logged(
        d,
        &warnings,
        Severity::Warning,
        ("warnings", stated("num_warnings")),
        emit,
    );
    Some(())
}

/// One finding for the errors or the warnings LoadGen logged (`list`), or the count alone that
/// the summary states.
fn logged(
    d: &Detail,
    list: &[&(usize, String, String)],
    sev: Severity,
    (what, stated): (&str, usize),
    emit: &mut Emit,
) {
    let count = list.len().max(stated);
    if count == 0 {
        return;
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
    let texts: Vec<&str> = list.iter().map(|(_, _, v)| v.as_str()).collect();
    let effect = consequences(&texts);
    // A count alone may be LoadGen's error about its build, which is no error of the run.
    let sev = match list.is_empty() {
        true => Severity::Warning,
        false => sev,
    };
    emit.at_severity(
        sev,
        format!(
            "LoadGen logged {count} {what} during the run ({}){effect}",
            first.join("; ")
        ),
    )
    .file(&d.file)
    .pointer(format!("line {}", lines.join(", ")))
    .data(json!({ what: count }));
}

/// What LoadGen's code does with the samples its logged errors name (rows L7, L9).
fn consequences(texts: &[&str]) -> String {
    let mut out = String::new();
    if texts
        .iter()
        .any(|t| t.contains("number of tokens") || t.contains("Number of tokens"))
    {
        out.push_str(": LoadGen 4.0-6.0 counts a reply of 0 or 1 token (or a negative count) as 0 tokens, and its time per output token as negative, in every token figure (row L7)");
    }
    if texts
        .iter()
        .any(|t| t.contains("before it's first token latency"))
    {
        out.push_str(": a sample without a first token enters LoadGen's first-token figures as INT64_MIN ns, and its TPOT with it (row L9)");
    }
    out
}

/// `import.compliance-failed` (rows C1-C3): every verdict line of a compliance test's
/// verification that says fail. Ran when one was given.
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

/// `import.settings-below-rules` (row L20): a performance run whose minimum duration is below
/// the 600 s the MLPerf inference rules ask for: valid or not, it is not a result under those
/// rules. An accuracy run issues every sample once whatever its duration (row L1: LoadGen sets
/// no duration in accuracy mode), so its setting is moot.
fn rules(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    if d.text("effective_test_mode") == Some("AccuracyOnly") {
        return None;
    }
    let Some(min) = d.num("effective_min_duration_ms") else {
        return Some(());
    };
    // The v0.5 and v0.7 rounds asked for 60 s (the submission checker's
    // TEST_DURATION_MS_PRE_1_0, tools/submission/submission_checker.py l. 1166-1167 and
    // 1720-1722 at v3.0); v0.7's LoadGen says `0.7 @ ...` (v0.5's detail log is not in MLLOG
    // form, and the v1.0 round's LoadGen still says `.5a1`: held to 600 s).
    let pre_1_0 = d
        .text("loadgen_version")
        .is_some_and(|v| v.starts_with("0."));
    let (rule, round) = if pre_1_0 {
        (PRE_1_0_MIN_DURATION_MS, "the v0.5 and v0.7 rounds' 60 s")
    } else {
        (
            RULES_MIN_DURATION_MS,
            "the 600 s of the MLPerf inference rules",
        )
    };
    if min >= rule {
        return Some(());
    }
    let line = d
        .values
        .get("effective_min_duration_ms")
        .map_or(0, |(l, _)| *l);
    emit.finding(format!(
        "the run's minimum duration is {} s, below {round} (set by the run's own settings)",
        min / 1000.0
    ))
    .file(&d.file)
    .pointer(format!("line {line}"));
    Some(())
}

/// `speed.recompute-mismatch`: every printed figure recomputed: the summary's lines from the
/// detail log's values (rows L15-L19), Offline's samples per second from its max latency and
/// sample count (L2), the token count two ways (L5, L6). Ran when it compared one.
fn recompute(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    let mut ran = summary_against_detail(x, emit).is_some();
    let cross = [
        ("result_samples_per_second", figures::offline_samples(d)),
        ("result_token_throughput", figures::token_count(d)),
    ];
    for (key, found) in cross {
        ran |= d.values.contains_key(key);
        let Some(msg) = found else { continue };
        let line = d.values.get(key).map_or(0, |(l, _)| *l);
        emit.finding(msg)
            .file(&d.file)
            .pointer(format!("line {line}"));
    }
    ran.then_some(())
}

/// The summary's lines against the detail log (rows L15-L19): every figure and verdict the
/// summary prints against the detail log's value, at the coarser of the two precisions (the summary's decimals; the detail log's
/// six significant digits for a double). Ran when it compared one.
fn summary_against_detail(x: &Logs, emit: &mut Emit) -> Ran {
    let (s, d) = (x.summary.as_ref()?, &x.detail);
    if !d.given {
        return None;
    }
    let scenario = s.scenario();
    let mut compared = false;
    for (line, k, v) in &s.entries {
        let Some((dk, scale)) = detail_key(k, scenario.as_deref()) else {
            continue;
        };
        let Some((_, dv)) = d.values.get(&dk) else {
            continue;
        };
        let scaled;
        let dv = match dv.as_f64() {
            Some(x) if scale != 1.0 => {
                scaled = json!(x * scale);
                &scaled
            }
            _ => dv,
        };
        let at = format!("line {line}");
        let key = format!("loadgen.{dk}");
        let (agrees, detail) = match (v.trim().parse::<f64>(), dv) {
            (Ok(shown), Value::Number(n)) => {
                let Some(exact) = n.as_f64() else { continue };
                let same = same_figure(n, v);
                record_judged(emit, &key, (exact, shown), same);
                (same, None)
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

/// `import.impossible-aggregate` (rows L8, L4, L9): per latency, the mean and every percentile
/// within the min and the max, and the percentiles in order: figures of one set of queries that cannot all hold
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
        // A figure no result is made of is a warning: the mean is no scenario's metric (the
        // checker reads percentiles and rates), and an Offline result's is its samples per second.
        // LoadGen's int64 sum overflows on long Offline runs (rgat, dlrm-v2 of v5.1 as published).
        let offline = d.scenario() == Some("Offline");
        let found = if figure == "mean" || offline {
            let why = if figure == "mean" {
                "no scenario's metric is a mean"
            } else {
                "an Offline result's metric is its samples per second"
            };
            emit.warning(format!(
                "{msg} ({why}: the result's figure does not rest on it)"
            ))
        } else {
            emit.finding(msg)
        };
        found.file(&d.file).pointer(format!("line {line}"));
    }
    ran |= completed_after_scheduled(d, emit);
    ran.then_some(())
}

/// Row L4 (Server): the completed rate cannot pass the scheduled one: both are (n - 1) over a
/// span, and the final query completes after it was scheduled. Whether it compared them.
fn completed_after_scheduled(d: &Detail, emit: &mut Emit) -> bool {
    let (Some(done), Some(sched)) = (
        d.fig("result_completed_samples_per_sec"),
        d.fig("result_scheduled_samples_per_sec"),
    ) else {
        return false;
    };
    if done.v - done.err > (sched.v + sched.err) * 1.000_001 {
        let line = d
            .values
            .get("result_completed_samples_per_sec")
            .map_or(0, |(l, _)| *l);
        emit.finding(format!("completed samples per second ({}) above scheduled samples per second ({}): LoadGen divides the same n - 1 queries by the final query's completion and by its (earlier) scheduled time", done.v, sched.v))
            .file(&d.file)
            .pointer(format!("line {line}"));
    }
    true
}

/// `import.not-recomputable` (info; rows L8, A5, V1-V5): what the files given cannot show, said
/// so that a pass is never read as more than it is: a summary without its detail log, companions
/// without either log, the percentiles (from per-query latencies LoadGen does not write), the
/// accuracy scores (the script's, from mlperf_log_accuracy.json and the dataset), a benchmark
/// whose targets are not known here.
fn coverage(x: &Logs, emit: &mut Emit) -> Ran {
    let d = &x.detail;
    match (&x.summary, d.given, d.values.is_empty()) {
        (Some(s), false, _) => {
            emit.info(format!("mlperf_log_detail.txt was not given beside {}: the settings in effect, the measured query count, LoadGen's version and the text of its errors and warnings are unknown, so the minimum-duration, query-count, early-stopping and token-count recomputations (rows L4-L13) did not run; only the summary's own lines were checked", s.file))
                .file(&s.file);
        }
        (None, false, true) => {
            emit.info("no LoadGen log was given (mlperf_log_summary.txt, mlperf_log_detail.txt): only the accuracy script's output and the compliance verdicts given were checked, not the run's performance");
        }
        _ => {}
    }
    for (line, why) in d.unreadable.iter().take(3) {
        emit.info(format!("{} line {line}: an entry that could not be read ({why}), skipped: what it held is not checked", d.file))
            .file(&d.file)
            .pointer(format!("line {line}"));
    }
    if FAMILIES.iter().any(|f| d.values.contains_key(f.mean)) {
        emit.info("per-query latencies are not in LoadGen's summary and detail logs: every latency, first-token and TPOT percentile, min, max and mean is LoadGen's own, checked for range and order and against the verdicts it decides, not recomputed (row L8)")
            .file(&d.file);
    }
    accuracy::coverage(x, emit);
    Some(())
}

#[cfg(test)]
mod tests;
