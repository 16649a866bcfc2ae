//! The rows of [`crate::imported::llama_bench`].

use super::{case, check_cases, quiet, Case};
use crate::imported::llama_bench::{Bench, Test, CHECKS, KEYS_AT_BUILD};
use crate::imported::{EDITED_OUTPUT, IMPOSSIBLE_AGGREGATE, NOT_RECOMPUTABLE, RUN_INCOMPLETE};
use crate::speed;

/// One tg16 test of two 1 s repetitions (16 t/s each), with every key its build prints.
fn clean() -> Bench {
    let (build, keys) = KEYS_AT_BUILD[1];
    Bench {
        file: "bench.json".into(),
        tests: vec![Test {
            at: "/0".into(),
            n_gen: 16,
            samples_ns: vec![1_000_000_000, 1_000_000_000],
            samples_ts: vec![16.0, 16.0],
            avg_ns: Some(1_000_000_000),
            stddev_ns: Some(0),
            avg_ts: Some(16.0),
            stddev_ts: Some(0.0),
            build_number: Some(build),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            ..Default::default()
        }],
        truncated: false,
        layout: "-o json".into(),
    }
}

/// The clean test as CSV prints it: the aggregates without the samples (row B8).
fn csv(x: &mut Bench) {
    x.layout = "-o csv".into();
    test(x).samples_ns.clear();
    test(x).samples_ts.clear();
}

fn test(x: &mut Bench) -> &mut Test {
    &mut x.tests[0]
}

/// The planted problems, at least one per row of [`CHECKS`].
pub(super) const CASES: &[Case<Bench>] = &[
    // The JSON array ends unclosed: llama-bench stopped at a failed test.
    case(RUN_INCOMPLETE.id, clean, |x| x.truncated = true),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        test(x).avg_ts = Some(17.0)
    })
    .saying("avg_ts"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        test(x).samples_ts[1] = 15.0
    })
    .saying("samples_ts.1"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        test(x).samples_ts.pop();
    })
    .saying("1 samples_ts for 2 samples_ns"),
    case(speed::RECOMPUTE_MISMATCH.id, clean, |x| {
        test(x).stddev_ns = Some(5_000)
    })
    .saying("stddev_ns"),
    // CSV: a mean rate below the rate of the mean time (row B6); every CSV test is named as
    // not recomputable, which this case's own row expects too.
    case(IMPOSSIBLE_AGGREGATE.id, clean, |x| {
        csv(x);
        test(x).avg_ts = Some(15.0);
    })
    .saying("below"),
    case(NOT_RECOMPUTABLE.id, clean, csv).saying("-o csv does not print"),
    // A key the stated build does not print.
    case(EDITED_OUTPUT.id, clean, |x| {
        test(x).keys.push("n_cpu_moe".into())
    })
    .saying("carries keys"),
    // A key the stated build always prints, missing.
    case(EDITED_OUTPUT.id, clean, |x| {
        test(x).keys.retain(|k| k != "test_time");
    })
    .saying("lacks keys"),
];

#[test]
fn each_row_raises_its_id_on_its_planted_problem_only() {
    check_cases(CHECKS, CASES);
}

#[test]
fn the_clean_bench_raises_nothing() {
    quiet(CHECKS, &clean());
}
