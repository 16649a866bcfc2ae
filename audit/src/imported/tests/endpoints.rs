//! The MLPerf Endpoints rows' cases: a clean run of three samples built by hand (issued at 10,
//! 20, 30 ns, first chunks 30 ns later, completions at 110, 130, 150 ns, one tracking block from
//! 0), its summary as the writer would print it (docs/formats/mlperf-endpoints.md rows S1-S16),
//! and one planted problem per row.

use super::{case, lowered, Case};
use crate::imported::endpoints::accuracy::{Accuracy, Entry, UNSCORED};
use crate::imported::endpoints::{Events, Run, Sample, Series, Summary};
use crate::imported::{
    FAILED_AS_ZERO, IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE, RUN_INCOMPLETE, SETTINGS_BELOW_RULES,
};
use crate::report::Severity;
use crate::speed;

fn latency() -> Series {
    Series {
        name: "latency".into(),
        total: Some(330.0),
        min: Some(100.0),
        max: Some(120.0),
        median: Some(110.0),
        avg: Some(110.0),
        std_dev: Some(10.0),
        percentiles: vec![("99.0".into(), Some(110.0)), ("50.0".into(), Some(110.0))],
        // Three samples are under every estimate's floor: the writer prints nulls.
        early_stopping: Some(vec![("99.0".into(), None), ("50.0".into(), None)]),
    }
}

pub(super) fn clean() -> Run {
    let sample = |issued, first, complete| Sample {
        issued,
        first: Some(first),
        complete: Some(complete),
        errors: 0,
        block: Some(0),
    };
    Run {
        summary: Summary {
            file: "result_summary.json".into(),
            issued: Some(3.0),
            completed: Some(3.0),
            failed: Some(0.0),
            duration_ns: Some(150.0),
            state: Some("complete".into()),
            complete: Some(true),
            series: vec![latency()],
            legacy_window_ns: Some(140.0),
            // (3 - 1) completions over the 140 ns from the first issue to the last one's end.
            qps: Some(2.0 / 140e-9),
            tps: None,
            finish_reasons: Some(vec![("stop".into(), 3.0), ("length".into(), 0.0)]),
            load_pattern: Some("poisson".into()),
            legacy_qps: None,
        },
        events: Some(Events {
            file: "events.jsonl".into(),
            blocks: vec![0],
            samples: vec![
                sample(10, 40, 110),
                sample(20, 50, 130),
                sample(30, 60, 150),
            ],
        }),
        min_duration_ms: Some(600_000.0),
        config_given: true,
        early_stopping_enabled: Some(true),
        accuracy: Some(accuracy()),
    }
}

/// An accuracy file as the writer prints it: one accuracy dataset of 4 samples scored twice
/// (8 issued: 6 scored, 1 empty, 1 missing), the 6 scored outputs 10, 20, 20, 30, 40, 60 tokens
/// long, and the performance run's outputs scored beside it (left out of the average).
fn accuracy() -> Accuracy {
    let osl = Series {
        name: "output_sequence_lengths".into(),
        total: Some(180.0),
        min: Some(10.0),
        max: Some(60.0),
        median: Some(20.0),
        avg: Some(30.0),
        std_dev: None,
        percentiles: vec![("50.0".into(), Some(20.0)), ("99.0".into(), Some(40.0))],
        early_stopping: None,
    };
    Accuracy {
        file: "accuracy_results.json".into(),
        average: Some(75.0),
        entries: vec![
            Entry {
                dataset_name: "math".into(),
                performance: false,
                score: Some(75.0),
                unit_samples: Some(4.0),
                num_repeats: Some(2.0),
                total_samples: Some(8.0),
                complete: Some(true),
                counts: Some([8.0, 6.0, 1.0, 1.0]),
                osl: Some(osl),
            },
            Entry {
                dataset_name: "performance".into(),
                performance: true,
                score: Some(12.0),
                total_samples: Some(3.0),
                complete: Some(true),
                ..Entry::default()
            },
        ],
    }
}

fn math(x: &mut Run) -> &mut Entry {
    &mut x.accuracy.as_mut().unwrap().entries[0]
}

/// The planted problems, at least one per row of [`crate::imported::endpoints::CHECKS`].
pub(super) const CASES: &[Case<Run>] = &[
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.summary.duration_ns = Some(160.0)
    })
    .saying("endpoints.duration_ns"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.summary.series[0].avg = Some(111.0)
    })
    .saying("endpoints.latency.avg"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        x.summary.qps = Some(3.0 / 150e-9)
    })
    .saying("endpoints.qps"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        x.summary.series[0].percentiles[0].1 = Some(90.0)
    }),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        x.summary.finish_reasons = Some(vec![("stop".into(), 2.0)])
    })
    .saying("add up to 2"),
    lowered(IMPOSSIBLE_AGGREGATE.id, Severity::Warning, clean, |x| {
        x.summary.series.push(Series {
            name: "tpot".into(),
            min: Some(-5.0),
            max: Some(7.0),
            ..Series::default()
        })
    })
    .saying("tpot's min is -5 ns"),
    case(RUN_INCOMPLETE.id, clean, |x| {
        x.summary.state = Some("failed".into())
    }),
    lowered(FAILED_AS_ZERO.id, Severity::Warning, clean, |x| {
        x.summary.failed = Some(1.0)
    }),
    case(SETTINGS_BELOW_RULES.id, clean, |x| {
        x.min_duration_ms = Some(1000.0)
    })
    .saying("min_duration_ms is 1000"),
    case(SETTINGS_BELOW_RULES.id, clean, |x| {
        x.early_stopping_enabled = Some(false)
    })
    .saying("no early-stopping estimates"),
    lowered(NOT_RECOMPUTABLE.id, Severity::Info, clean, |x| {
        x.events = None
    })
    .saying("events.jsonl was not given"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        x.accuracy.as_mut().unwrap().average = Some(43.5)
    })
    .saying("the mean of the 1 accuracy scores is 75"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        math(x).total_samples = Some(4.5)
    })
    .saying("unit_samples 4 x num_repeats 2 is 8"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        math(x).counts = Some([9.0, 6.0, 1.0, 1.0])
    })
    .saying("scored 6 + empty 1 + missing 1 is 8"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        math(x).osl.as_mut().unwrap().total = Some(240.0)
    })
    .saying("over the 6 scored responses is 40"),
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        math(x).osl.as_mut().unwrap().avg = Some(70.0)
    })
    .saying("outside its min"),
    case(UNSCORED.id, clean, |x| {
        for e in &mut x.accuracy.as_mut().unwrap().entries {
            e.score = None;
        }
    })
    .saying("no accuracy_scores entry has a numeric score"),
    lowered(UNSCORED.id, Severity::Warning, clean, |x| {
        math(x).complete = Some(false)
    })
    .saying("a partial headline"),
];

#[test]
fn every_row_raises_its_planted_problem_and_nothing_on_the_clean_run() {
    super::check_cases(crate::imported::endpoints::CHECKS, CASES);
}
