//! The rows of [`crate::imported::loadgen`].

use super::{case, check_cases, lowered, quiet, Case};
use crate::imported::loadgen::{Accuracy, Detail, Logs, Summary, Verdict, CHECKS};
use crate::imported::SETTINGS_BELOW_RULES;
use crate::imported::{ACCURACY_BELOW_TARGET, ACCURACY_COUNT_MISMATCH, ACCURACY_MISSING};
use crate::imported::{COMPLIANCE_FAILED, EMPTY_SCORED_WRONG, TOOL_ERRORS, VALIDITY_MISMATCH};
use crate::imported::{IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE, RUN_INCOMPLETE};
use crate::report::Severity;
use crate::speed;
use serde_json::{json, Value};

/// Sets a detail log value (at a line of its own).
fn set(d: &mut Detail, k: &str, v: Value) {
    let line = d.values.get(k).map_or(d.values.len() + 1, |(l, _)| *l);
    d.values.insert(k.into(), (line, v));
}

/// A VALID Server run of 100 queries scheduled over 990 s (min duration 600 s, min 100 queries,
/// p90 latency 180 ns within its 1000 ns target, none over it: early stopping needs 44), its
/// latencies in order, and its summary agreeing with its detail log.
fn clean() -> Logs {
    let mut d = Detail {
        file: "mlperf_log_detail.txt".into(),
        given: true,
        ..Default::default()
    };
    for (k, v) in [
        ("effective_scenario", json!("Server")),
        ("power_end", json!("12-03-2026 12:31:49.135")),
        ("effective_target_latency_percentile", json!(0.9)),
        ("effective_target_latency_ns", json!(1000)),
        ("result_overlatency_query_count", json!(0)),
        ("result_scheduled_samples_per_sec", json!(0.1)),
        ("result_90.00_percentile_latency_ns", json!(180)),
        ("result_validity", json!("VALID")),
        ("result_perf_constraints_met", json!(true)),
        ("result_min_duration_met", json!(true)),
        ("result_min_queries_met", json!(true)),
        ("early_stopping_met", json!(true)),
        ("result_query_count", json!(100)),
        ("result_completed_samples_per_sec", json!(0.1)),
        ("effective_min_duration_ms", json!(600_000)),
        ("effective_min_query_count", json!(100)),
        ("result_min_latency_ns", json!(100)),
        ("result_mean_latency_ns", json!(150)),
        ("result_max_latency_ns", json!(200)),
        ("result_50.00_percentile_latency_ns", json!(150)),
        ("result_99.00_percentile_latency_ns", json!(199)),
        ("qsl_reported_total_count", json!(24576)),
    ] {
        set(&mut d, k, v);
    }
    let entries = [
        ("Result is", "VALID"),
        ("Min latency (ns)", "100"),
        ("Mean latency (ns)", "150"),
        ("Max latency (ns)", "200"),
        ("50.00 percentile latency (ns)", "150"),
    ];
    let summary = Summary {
        file: "mlperf_log_summary.txt".into(),
        entries: entries
            .iter()
            .enumerate()
            .map(|(i, (k, v))| (i + 1, k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    Logs {
        summary: Some(summary),
        detail: d,
        compliance: Verdict::read("verify_accuracy.txt", "TEST PASS\n"),
        accuracy: Some(accuracy()),
        accuracy_log: Some("mlperf_log_accuracy.json".into()),
        accuracy_log_empty: false,
        accuracy_replies: Some((24576, Vec::new())),
    }
}

/// NVIDIA's published v4.1 llama2-70b-99.9 Offline accuracy.txt (DGX-H100), in its folder:
/// every score at or above the 99.9 % target.
fn accuracy() -> Accuracy {
    let scores = [
        ("rouge1", 44.5437),
        ("rouge2", 22.1222),
        ("rougeL", 28.7396),
        ("rougeLsum", 42.1154),
        ("gen_len", 28211344.0),
        ("gen_num", 24576.0),
        ("gen_tok_len", 7134577.0),
        ("tokens_per_sample", 290.3),
    ];
    Accuracy {
        file: "accuracy.txt".into(),
        line: 5,
        scores: scores.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        named: Some("llama2-70b-99.9".into()),
        unread: None,
    }
}

fn score(x: &mut Logs, k: &str, v: f64) {
    let a = x.accuracy.as_mut().unwrap();
    a.scores.iter_mut().find(|e| e.0 == k).unwrap().1 = v;
}

fn entry(x: &mut Logs, k: &str, v: &str) {
    let s = x.summary.as_mut().unwrap();
    let e = s.entries.iter_mut().find(|e| e.1 == k).unwrap();
    e.2 = v.into();
}

/// The planted problems, at least one per row of [`CHECKS`].
pub(super) const CASES: &[Case<Logs>] = &[
    case(RUN_INCOMPLETE.id, clean, |x| {
        set(&mut x.detail, "result_validity", json!("INVALID"));
        set(&mut x.detail, "result_min_duration_met", json!(false));
    }),
    // A detail log that ends before LoadGen's end-of-test entries (row L21).
    case(RUN_INCOMPLETE.id, clean, |x| {
        x.detail.values.retain(|k, _| !k.starts_with("result_") && k != "power_end");
    })
    .saying("before LoadGen's end-of-test entries"),
    // VALID though a rule is not met; a minimum duration or query count said met but not.
    case(VALIDITY_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "early_stopping_met", json!(false))
    })
    .saying("VALID though"),
    // Server's minimum duration is measured on the final query's scheduled time (row L10):
    // 99 / 1.0 = 99 s, short of 600 s.
    case(VALIDITY_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "result_scheduled_samples_per_sec", json!(1.0));
        set(&mut x.detail, "result_completed_samples_per_sec", json!(1.0));
    })
    .saying("minimum duration is said met, but LoadGen measures it as (queries - 1) / scheduled"),
    case(VALIDITY_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "effective_min_query_count", json!(200))
    })
    .saying("minimum query count is said met"),
    case(VALIDITY_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "result_min_duration_met", json!(false));
        set(&mut x.detail, "result_validity", json!("INVALID"));
    })
    .saying("minimum duration is said not met"),
    case(VALIDITY_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "result_validity", json!("INVALID"))
    })
    .saying("INVALID though every rule"),
    // 4 of 100 queries over the bound at p90 need h(4) + 4 = 113 (row L13; 3 would need 97).
    case(VALIDITY_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "result_overlatency_query_count", json!(4))
    })
    .saying("early stopping is said met, but 100 queries with 4 over the latency bound need 13 more at p90"),
    case(VALIDITY_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "result_90.00_percentile_latency_ns", json!(1001));
        set(&mut x.detail, "result_99.00_percentile_latency_ns", json!(1001));
        set(&mut x.detail, "result_max_latency_ns", json!(1001));
    })
    .saying("latency constraint is said met, but the p90 latency is 1001 ns"),
    case(TOOL_ERRORS.id, clean, |x| {
        x.detail
            .errors
            .push((20, "error_runtime".into(), "sample dropped".into()))
    })
    .saying("sample dropped"),
    // Only the summary's count of errors: a warning (it may be LoadGen's build error).
    lowered(TOOL_ERRORS.id, Severity::Warning, clean, |x| {
        set(&mut x.detail, "num_errors", json!(2))
    })
    .saying("the summary does not say which"),
    // LoadGen's error about its own build is a note, not an error of the run.
    lowered(TOOL_ERRORS.id, Severity::Info, clean, |x| {
        let text = "Loadgen built with uncommitted changes!";
        x.detail
            .errors
            .push((5, "error_uncommitted_loadgen_changes".into(), text.into()))
    })
    .saying("the MLPerf submission checker ignores it"),
    lowered(TOOL_ERRORS.id, Severity::Warning, clean, |x| {
        x.detail
            .warnings
            .push((21, "warning_generic".into(), "slow".into()))
    })
    .saying("1 warnings"),
    case(SETTINGS_BELOW_RULES.id, clean, |x| {
        set(&mut x.detail, "effective_min_duration_ms", json!(60_000))
    }),
    // The summary's figure, flag or verdict not the detail log's.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        entry(x, "Mean latency (ns)", "160")
    })
    .saying("loadgen.result_mean_latency_ns"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        entry(x, "Result is", "INVALID")
    })
    .saying("'Result is: INVALID'"),
    // A mean is no scenario's metric (v5.1's rgat and dlrm-v2 Offline results as published print
    // an overflowed one): a warning.
    lowered(IMPOSSIBLE_AGGREGATE.id, Severity::Warning, clean, |x| {
        set(&mut x.detail, "result_mean_latency_ns", json!(250))
    })
    .saying("outside its min (100) and max (200): one set of values cannot give these; a sum that overflowed gives such a mean (no scenario's metric is a mean"),
    // Nor is an Offline run's latency: its metric is its samples per second.
    lowered(IMPOSSIBLE_AGGREGATE.id, Severity::Warning, offline, |x| {
        set(&mut x.detail, "result_min_latency_ns", json!(100));
        set(&mut x.detail, "result_max_latency_ns", json!(200));
        set(&mut x.detail, "result_99.00_percentile_latency_ns", json!(300));
    })
    .saying("an Offline result's metric is its samples per second"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        set(&mut x.detail, "result_completed_samples_per_sec", json!(0.2))
    })
    .saying("above scheduled samples per second"),
    // Offline: 8 samples over 700 s; 5 per second would be 3500, no count LoadGen issued (L2).
    case(speed::RECOMPUTE_MISMATCH.id, offline, |x| {
        set(&mut x.detail, "result_samples_per_second", json!(5.0))
    })
    .saying("gives 3500.0 samples"),
    // The token count two ways (rows L5, L6): 99 / 0.1 s x 2 tokens/s = 1980, not 2000 x 100 x 150.
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        set(&mut x.detail, "result_completed_tokens_per_second", json!(2.0));
        set(&mut x.detail, "result_token_throughput", json!(0.2));
    })
    .saying("the completed tokens per second give 1980 tokens"),
    case(NOT_RECOMPUTABLE.id, offline, |x| {
        x.summary = Some(Summary {
            file: "mlperf_log_summary.txt".into(),
            ..Default::default()
        });
        x.detail.given = false;
    })
    .saying("mlperf_log_detail.txt was not given"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        set(
            &mut x.detail,
            "result_99.00_percentile_latency_ns",
            json!(120),
        )
    })
    .saying("is above its"),
    case(COMPLIANCE_FAILED.id, clean, |x| {
        x.compliance = Verdict::read("verify_accuracy.txt", "TEST FAIL\n");
    }),
    // 44.38 passes llama2-70b-99 (43.987) but not -99.9 (44.387), which the folder names.
    case(ACCURACY_BELOW_TARGET.id, clean, |x| {
        score(x, "rouge1", 44.38)
    })
    .saying("'rouge1' 44.38 is below the target 44.3868 of llama2-70b-99.9"),
    case(ACCURACY_BELOW_TARGET.id, clean, |x| {
        score(x, "tokens_per_sample", 330.0)
    })
    .saying("above the upper limit 323.8950"),
    case(ACCURACY_BELOW_TARGET.id, clean, |x| {
        score(x, "rouge2", f64::NAN)
    })
    .saying("'rouge2' NaN is below"),
    // Not named by its path: told llama2-70b by its keys, held to the 99 % target.
    case(ACCURACY_BELOW_TARGET.id, clean, |x| {
        x.accuracy.as_mut().unwrap().named = None;
        score(x, "rouge1", 43.0);
    })
    .saying("43.9869 of llama2-70b-99 (told by its keys)"),
    // llama3.1-405b's keys (v5.0 on), told by them: exact_match below 99 % of 90.1335.
    case(ACCURACY_BELOW_TARGET.id, clean, |x| {
        let a = x.accuracy.as_mut().unwrap();
        a.named = None;
        a.scores = [
            ("rougeL", 21.9),
            ("exact_match", 89.0),
            ("tokens_per_sample", 680.0),
            ("gen_num", 24576.0),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    })
    .saying("'exact_match' 89 is below the target 89.2322 of llama3.1-405b (told by its keys)"),
    case(ACCURACY_COUNT_MISMATCH.id, clean, |x| {
        score(x, "gen_num", 24575.0)
    })
    .saying("gen_num 24575 samples, but mlperf_log_detail.txt's qsl_reported_total_count is 24576"),
    case(ACCURACY_MISSING.id, clean, |x| x.accuracy = None),
    // Two empty replies in the accuracy log (row A7): counted, named, a warning.
    lowered(EMPTY_SCORED_WRONG.id, Severity::Warning, clean, |x| {
        x.accuracy_replies = Some((24576, vec![17, 902]))
    })
    .saying("2 of the 24576 replies in mlperf_log_accuracy.json are empty (qsl_idx 17, 902)"),
];

#[test]
fn each_row_raises_its_id_on_its_planted_problem_only() {
    check_cases(CHECKS, CASES);
}

#[test]
fn the_clean_logs_raise_nothing_but_what_they_cannot_show() {
    loud_free(&clean());
    let found = super::super::run(CHECKS, &clean());
    let info: Vec<&str> = found.findings.iter().map(|f| f.message.as_str()).collect();
    assert!(
        info.iter()
            .any(|m| m.contains("per-query latencies are not in")),
        "{info:?}"
    );
    quiet(CHECKS, &offline());
}

/// An Offline run measures one query whatever LoadGen generated: v4.1's 3d-unet Offline results
/// as published (Lenovo's SR675 V3) log 43 generated queries and one measured, of 28,380
/// samples, and samples per second x max latency gives those 28,380.
#[test]
fn an_offline_rate_is_held_to_the_one_query_it_measured() {
    let mut x = offline();
    for (k, v) in [
        ("generated_samples_per_query", json!(28380)),
        ("generated_query_count", json!(43)),
        ("result_query_count", json!(1)),
        ("effective_performance_sample_count", json!(43)),
        ("qsl_reported_total_count", json!(43)),
        ("result_samples_per_second", json!(43.6883)),
    ] {
        set(&mut x.detail, k, v);
    }
    x.detail
        .values
        .insert("result_max_latency_ns".into(), (99, json!(649602539681u64)));
    let found = crate::imported::run(CHECKS, &x);
    let mismatch: Vec<_> = found
        .findings
        .iter()
        .filter(|f| f.check == speed::RECOMPUTE_MISMATCH.id)
        .collect();
    assert!(mismatch.is_empty(), "{mismatch:#?}");
    // Twice the rate is no count it issued.
    set(&mut x.detail, "result_samples_per_second", json!(87.3766));
    let found = crate::imported::run(CHECKS, &x);
    assert!(found
        .findings
        .iter()
        .any(|f| f.check == speed::RECOMPUTE_MISMATCH.id));
}

/// A VALID Offline run without latencies, accuracy or compliance: 8 samples (6 asked, padded to
/// whole sets of 4) over a 700 s max latency.
fn offline() -> Logs {
    let mut d = Detail {
        file: "mlperf_log_detail.txt".into(),
        given: true,
        ..Default::default()
    };
    for (k, v) in [
        ("effective_scenario", json!("Offline")),
        ("power_end", json!("12-03-2026 12:31:49.135")),
        ("generated_samples_per_query", json!(6)),
        ("generated_query_count", json!(1)),
        ("effective_performance_sample_count", json!(4)),
        ("result_samples_per_second", json!(8.0 / 700.0)),
        ("result_validity", json!("VALID")),
        ("result_min_duration_met", json!(true)),
        ("result_min_queries_met", json!(true)),
        ("early_stopping_met", json!(true)),
        ("effective_min_duration_ms", json!(600_000)),
    ] {
        set(&mut d, k, v);
    }
    // The max latency by itself: no latency family, so no note on percentiles.
    d.values.insert(
        "result_max_latency_ns".into(),
        (99, json!(700_000_000_000u64)),
    );
    Logs {
        detail: d,
        ..Logs::default()
    }
}

#[test]
fn a_99_percent_run_passes_where_its_99_9_twin_would_not() {
    let mut x = clean();
    x.accuracy.as_mut().unwrap().named = Some("llama2-70b-99".into());
    score(&mut x, "rouge1", 44.38);
    loud_free(&x);
}

/// Asserts the rows raise no error and no warning (notes of what cannot be shown may be).
fn loud_free(x: &Logs) {
    let found = super::super::run(CHECKS, x);
    let loud: Vec<_> = found
        .findings
        .iter()
        .filter(|f| f.severity != Severity::Info)
        .map(|f| format!("{}: {}", f.check, f.message))
        .collect();
    assert!(loud.is_empty(), "{loud:#?}");
}
