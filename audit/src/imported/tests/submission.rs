//! The MLPerf submission rows' cases: a clean closed-division llama2-70b-99.9 Server result built
//! by hand (the files the checker requires, a passing TEST06, full measurements and system
//! descriptions) and one planted problem per rule of `docs/formats/loadgen.md`'s submission rows.

use super::{case, lowered, Case};
use crate::imported::submission::{
    Compliance, Result, Settings, Test06Sample, TestRun, COMPLIANCE, COMPLIANCE_CONFIG,
    COMPLIANCE_LOG, COMPLIANCE_VERDICT, DATASET_SIZE, FILES, FOLDER, MEASUREMENTS,
    MEASUREMENT_KEYS, SCENARIOS, SEEDS, SETTINGS, SYSTEM, SYSTEM_FIELDS,
};
use serde_json::{json, Map, Value};

fn object(keys: &[&str]) -> Map<String, Value> {
    keys.iter().map(|k| (k.to_string(), json!("x"))).collect()
}

pub(super) fn clean() -> Result {
    let mut system = object(SYSTEM_FIELDS);
    system.insert("submitter".into(), json!("RedHat"));
    system.insert("division".into(), json!("closed"));
    let lines = [
        "First token check pass: True",
        "EOS check pass: True",
        "Sample length check pass: True",
    ];
    Result {
        dir: "closed/RedHat/results/SYS/llama2-70b-99.9/Server".into(),
        division: "closed".into(),
        submitter: "RedHat".into(),
        system: "SYS".into(),
        benchmark: "llama2-70b-99.9".into(),
        scenario: "Server".into(),
        performance: vec![
            "mlperf_log_detail.txt".into(),
            "mlperf_log_summary.txt".into(),
        ],
        accuracy: vec!["accuracy.txt".into(), "mlperf_log_accuracy.json".into()],
        accuracy_hash: true,
        compliance_dir: "closed/RedHat/compliance/SYS/llama2-70b-99.9/Server".into(),
        compliance: vec![Compliance {
            test: "TEST06".into(),
            verify: Some((
                "TEST06/verify_accuracy.txt".into(),
                lines.iter().map(|l| l.to_string()).collect(),
            )),
            // Its accuracy log given by the cases that plant a problem in it.
            log: None,
            run: None,
        }],
        measurements_dir: "closed/RedHat/measurements/SYS/llama2-70b-99.9/Server".into(),
        measurement_files: vec!["README.md".into(), "SYS.json".into(), "user.conf".into()],
        measurements: Some(("SYS.json".into(), Some(object(MEASUREMENT_KEYS)))),
        system_desc: Some(("systems/SYS.json".into(), Some(system))),
        // A run without seeds in its log: the seeds row then does not run (its note is tested below).
        seeds: None,
        accuracy_samples: Some(24576),
        settings: Settings {
            scenario: Some("Server".into()),
            performance_sample_count: Some(24576),
            samples_per_query: Some(1),
            min_duration_ms: Some(600_000),
            token_latencies: Some(true),
            equal_issue: Some(true),
        },
        submitter_problems: Vec::new(),
        endpoints: false,
        endpoint_seeds: None,
        scenarios_beside: vec!["Offline".into(), "Server".into()],
    }
}

/// Three samples of a TEST06 log as the v4.1 Red Hat logs hold them (int32, little-endian): each
/// ends with one end-of-sequence token (2), its first token reported as its output's.
fn test06_samples() -> Vec<Test06Sample> {
    let sample = |id: u64, tokens: &[i32]| {
        let hex: String = tokens
            .iter()
            .flat_map(|t| t.to_le_bytes())
            .map(|b| format!("{b:02X}"))
            .collect();
        Test06Sample {
            seq_id: Some(id),
            token_data: Some(hex[..8].to_string()),
            data: hex,
            token_count: Some(tokens.len() as u64),
        }
    };
    vec![
        sample(30, &[26484, 29892, 5127, 29889, 2]),
        sample(31, &[18585, 338, 2]),
        sample(32, &[450, 29889, 13, 2]),
    ]
}

/// The planted problems, at least one per row of [`crate::imported::submission::CHECKS`].
pub(super) const CASES: &[Case<Result>] = &[
    case(FILES.id, clean, |x| {
        x.performance.pop().map(drop).unwrap_or(())
    })
    .saying("performance/run_1/ lacks"),
    case(FILES.id, clean, |x| x.accuracy_hash = false).saying("no hash= line"),
    case(COMPLIANCE.id, clean, |x| x.compliance.clear()).saying("TEST06 is missing"),
    case(COMPLIANCE.id, clean, |x| {
        let (_, lines) = x.compliance[0].verify.as_mut().unwrap();
        lines[1] = "EOS check pass: False".into();
    })
    .saying("EOS check pass: True"),
    case(COMPLIANCE.id, clean, |x| x.compliance[0].verify = None).saying("no verify file"),
    case(COMPLIANCE_LOG.id, clean, |x| {
        log_of(x)[1].data.push_str("0200000002000000")
    })
    .saying("which is 3 tokens of no integer width"),
    case(COMPLIANCE_LOG.id, clean, |x| {
        let s = &mut log_of(x)[0];
        s.data.push_str("02000000");
        s.token_count = Some(6);
    })
    .saying("sample 1 (seq_id 30) ends with two end-of-sequence tokens"),
    case(COMPLIANCE_LOG.id, clean, |x| {
        log_of(x)[2].token_data = Some("03000000".into())
    })
    .saying("first token as reported (3) is not its output's first (450)"),
    // "Skipped" is the script run as for Offline: a Server run's log that fails it is named.
    case(COMPLIANCE_LOG.id, clean, |x| {
        log_of(x)[2].token_data = Some("03000000".into());
        let (_, lines) = x.compliance[0].verify.as_mut().unwrap();
        lines[0] = "First token check pass: Skipped".into();
    })
    .saying("says \"First token check pass: Skipped\", but its Server run's accuracy log fails it"),
    // A count no file could hold is a failed check, not an overflow.
    case(COMPLIANCE_LOG.id, clean, |x| {
        log_of(x)[0].token_count = Some(u64::MAX)
    })
    .saying("tokens of no integer width"),
    case(SYSTEM.id, clean, |x| {
        object_of(&mut x.system_desc).remove("cooling");
    })
    .saying("lacks cooling"),
    case(SYSTEM.id, clean, |x| {
        object_of(&mut x.system_desc).insert("framework".into(), json!(""));
    })
    .saying("leaves empty framework"),
    case(SYSTEM.id, clean, |x| x.submitter = "Other".into()).saying("its folders are Other"),
    case(SYSTEM.id, clean, |x| x.system_desc = None).saying("systems/SYS.json is missing"),
    case(MEASUREMENTS.id, clean, |x| {
        object_of(&mut x.measurements).remove("weight_data_types");
    })
    .saying("weight_data_types"),
    case(MEASUREMENTS.id, clean, |x| {
        x.measurement_files.retain(|f| f != "user.conf")
    })
    .saying("lacks user.conf"),
    case(FOLDER.id, clean, |x| {
        x.submitter_problems
            .push("an empty folder: compliance/SYS".into())
    })
    .saying("every result of the submitter"),
    // Cisco's v6.0 folder as published: a vim swap file among its system descriptions.
    lowered(FOLDER.id, crate::report::Severity::Info, clean, |x| {
        x.seeds = Some(round_seeds("v6.0"));
        x.submitter_problems
            .push("a name starting with a dot: systems/.16xMI350X.json.swp".into())
    })
    .saying("not asked by the checker of round v6.0 (the package walks no folder)"),
    case(SEEDS.id, clean, |x| x.seeds = Some([1, 2, 3])).saying("no round's official ones"),
    case(SETTINGS.id, clean, |x| {
        x.settings.min_duration_ms = Some(60_000)
    })
    .saying("effective_min_duration_ms is 60000"),
    case(SETTINGS.id, clean, |x| {
        x.settings.performance_sample_count = Some(1024)
    })
    .saying("at least 24576"),
    case(SETTINGS.id, clean, offline_of_one_sample_a_query).saying("an Offline query"),
    case(SETTINGS.id, clean, |x| {
        x.settings.token_latencies = Some(false)
    })
    .saying("did not log token latencies"),
    case(DATASET_SIZE.id, clean, |x| x.accuracy_samples = Some(24000))
        .saying("covered 24000 samples, not llama2-70b-99.9's whole dataset of 24576"),
    lowered(
        DATASET_SIZE.id,
        crate::report::Severity::Warning,
        clean,
        |x| {
            x.accuracy_samples = Some(24000);
            x.seeds = Some(round_seeds("v5.1"));
        },
    )
    .saying("round v5.1's checker logs this"),
    // v4.1's datacenter table asks llama2-70b-99.9 for Server and Offline: the folder gets no
    // result, said on its first result.
    case(SCENARIOS.id, clean, |x| in_round(x, "v4.1", &["Server"]))
        .saying("lacks Offline (round v4.1's table for a datacenter system: llama2-70b-99.9 Server, Offline required)"),
    case(SCENARIOS.id, clean, |x| in_round(x, "v6.0", &["Server"]))
        .saying("the submission checker fails every result of the folder"),
    case(SCENARIOS.id, clean, |x| {
        in_round(x, "v4.1", &["Offline", "Server", "SingleStream"]);
        x.scenario = "SingleStream".into();
    })
    .saying("holds SingleStream, which the table neither requires nor allows"),
    // v5.1: Offline required, Interactive and Server optional, one of them needed: the result the
    // checker's loop saw last is voided.
    case(SCENARIOS.id, clean, |x| {
        in_round(x, "v5.1", &["Offline"]);
        x.scenario = "Offline".into();
    })
    .saying("lacks one of Interactive or Server"),
    // NVIDIA's v6.0 GB300-NVL72 Offline result as published: each test run with the other's file.
    case(COMPLIANCE_CONFIG.id, gpt_oss, |x| {
        let mut run = run_as_set(&TEST09_SETTINGS);
        run.detail = "TEST07/performance/run_1/mlperf_log_detail.txt".into();
        x.compliance[0].run = Some(run);
    })
    .saying("TEST07's run was not made as its audit.config sets: requested_min_query_count 6396 where the test's audit.config sets 990, requested_accuracy_log_sampling_target 10000 where the test's audit.config sets 990"),
    case(COMPLIANCE_CONFIG.id, gpt_oss, |x| {
        let mut run = run_as_set(&TEST09_SETTINGS);
        run.accuracy_log_rng_seed = Some(1);
        x.compliance[1].run = Some(run);
    })
    .saying("requested_accuracy_log_rng_seed 1 where"),
    // From v6.1 the files ask each sample to be issued once.
    case(COMPLIANCE_CONFIG.id, gpt_oss, |x| {
        x.seeds = Some(round_seeds("v6.1"));
        x.compliance[1].run = Some(run_as_set(&TEST09_SETTINGS));
    })
    .saying("requested_performance_issue_unique false where the test's audit.config sets true"),
    case(COMPLIANCE_VERDICT.id, gpt_oss, |x| {
        x.compliance[1].verify = Some(verify_lines(TEST09_LINES, "Total samples: 6396", "Total samples: 990"));
    })
    .saying("it counted 990 samples where the test's run issues 6396"),
    case(COMPLIANCE_VERDICT.id, gpt_oss, |x| {
        x.compliance[0].verify = Some(verify_lines(TEST07_LINES, "Accuracy threshold: 60.698", "Accuracy threshold: 55.0"));
    })
    .saying("its Accuracy threshold is 55 where the test's audit.config sets 60.698"),
    case(COMPLIANCE_VERDICT.id, gpt_oss, |x| {
        x.compliance[0].verify = Some(verify_lines(TEST07_LINES, "Accuracy score: 63.737", "Accuracy score: 58.1"));
    })
    .saying("it says TEST PASS, but its score 58.1 is below the test's 60.698"),
    case(COMPLIANCE_VERDICT.id, gpt_oss, |x| {
        x.compliance[1].verify = Some(verify_lines(TEST09_LINES, "Mean output tokens: 1373.90", "Mean output tokens: 1500.5"));
    })
    .saying("its mean output length 1500.5 is outside the test's 1150.38 to 1406.02"),
    case(COMPLIANCE_VERDICT.id, gpt_oss, |x| {
        x.compliance[1].verify = Some(verify_lines(TEST09_LINES, "Max threshold: 1406.02", "Max threshold: 1600"));
    })
    .saying("its Max threshold is 1600 where the test's audit.config sets 1406.02"),
];

/// What the verify lines of AMD's v6.0 8xMI355X gpt-oss-120b Offline result say (TEST07's
/// `verify_accuracy.txt` and TEST09's `verify_output_len.txt`, their lines the rules read).
const TEST07_LINES: &[&str] = &[
    "Total samples evaluated: 990",
    "'exact_match': 63.737",
    "TEST07 Verification Summary",
    "Accuracy score: 63.737",
    "Accuracy threshold: 60.698",
    "Accuracy check pass: True",
    "TEST PASS",
];
const TEST09_LINES: &[&str] = &[
    "Total samples: 6396",
    "Mean output tokens: 1373.90",
    "Min output tokens: 391",
    "Max output tokens: 3789",
    "Mean output tokens: 1373.90",
    "Min threshold: 1150.38",
    "Max threshold: 1406.02",
    "Min check pass: True",
    "Max check pass: True",
    "TEST PASS",
];

/// The requested settings of AMD's v6.0 TEST07 and TEST09 runs (their detail logs): (queries,
/// sampling target).
const TEST07_SETTINGS: (u64, u64) = (990, 990);
const TEST09_SETTINGS: (u64, u64) = (6396, 10000);

fn run_as_set(&(queries, target): &(u64, u64)) -> TestRun {
    TestRun {
        detail: "TEST09/performance/run_1/mlperf_log_detail.txt".into(),
        test_mode: Some("PerformanceOnly".into()),
        min_query_count: Some(queries),
        accuracy_log_sampling_target: Some(target),
        accuracy_log_rng_seed: Some(720381539243781796),
        sample_concatenate_permutation: Some(false),
        performance_issue_unique: Some(false),
    }
}

/// A verify file of `lines`, `from` written as `to`.
fn verify_lines(lines: &[&str], from: &str, to: &str) -> (String, Vec<String>) {
    let lines = lines
        .iter()
        .map(|l| if *l == from { to } else { l }.to_string())
        .collect();
    ("verify.txt".into(), lines)
}

/// The clean result as a gpt-oss-120b Offline one whose TEST07 and TEST09 folders are there but
/// hold neither verify file nor detail log: the rows of the tests' audit.config then have nothing
/// to say, and each case gives them what it plants.
fn gpt_oss() -> Result {
    let mut x = clean();
    x.benchmark = "gpt-oss-120b".into();
    offline_of_one_sample_a_query(&mut x);
    x.compliance = ["TEST07", "TEST09"]
        .map(|test| Compliance {
            test: test.into(),
            ..Compliance::default()
        })
        .into();
    x
}

/// The published runs and verify files of AMD's result hold up: notes only, from both rows, and
/// the v6.1 setting is not asked of a v6.0 run.
#[test]
fn the_tests_run_as_their_audit_config_sets_are_noted_not_found() {
    let mut x = gpt_oss();
    x.seeds = Some(round_seeds("v6.0"));
    x.compliance[0].run = Some(run_as_set(&TEST07_SETTINGS));
    x.compliance[1].run = Some(run_as_set(&TEST09_SETTINGS));
    x.compliance[0].verify = Some(verify_lines(TEST07_LINES, "", ""));
    x.compliance[1].verify = Some(verify_lines(TEST09_LINES, "", ""));
    let found = crate::imported::run(crate::imported::submission::CHECKS, &x);
    let ours: Vec<_> = found
        .findings
        .iter()
        .filter(|f| [COMPLIANCE_CONFIG.id, COMPLIANCE_VERDICT.id].contains(&f.check.as_str()))
        .collect();
    assert_eq!(ours.len(), 4, "{ours:#?}");
    assert!(
        ours.iter()
            .all(|f| f.severity == crate::report::Severity::Info),
        "{ours:#?}"
    );
    let said: Vec<&str> = ours.iter().map(|f| f.message.as_str()).collect();
    assert!(
        said.iter().any(|m| m.contains(
            "TEST09's run was made as its audit.config sets: 6396 queries, 10000 samples logged"
        )),
        "{said:#?}"
    );
    assert!(
        said.iter().any(|m| m.contains(
            "holds up against TEST07's audit.config: score 63.737 against the threshold 60.698, over its 990 samples"
        )),
        "{said:#?}"
    );
    // TEST07's count is its accuracy script's line: without it the count is said unchecked.
    x.compliance[0].verify = Some(verify_lines(
        TEST07_LINES,
        "Total samples evaluated: 990",
        "",
    ));
    let found = crate::imported::run(crate::imported::submission::CHECKS, &x);
    let notes: Vec<_> = found
        .findings
        .iter()
        .filter(|f| f.check == COMPLIANCE_VERDICT.id)
        .collect();
    assert!(
        notes
            .iter()
            .all(|f| f.severity == crate::report::Severity::Info),
        "{notes:#?}"
    );
    assert!(
        notes.iter().any(|f| f
            .message
            .contains("not stated (no \"Total samples evaluated\": not checked)")),
        "{notes:#?}"
    );
    // Another benchmark's TEST07 is not held to gpt-oss-120b's file.
    x.benchmark = "llama2-70b-99.9".into();
    x.compliance[0].run = Some(run_as_set(&TEST09_SETTINGS));
    let found = crate::imported::run(crate::imported::submission::CHECKS, &x);
    assert!(
        !found
            .findings
            .iter()
            .any(|f| f.check == COMPLIANCE_CONFIG.id || f.check == COMPLIANCE_VERDICT.id),
        "{:#?}",
        found.findings
    );
}

/// `x` as a result of a datacenter system judged by `round`'s checker, its benchmark folder
/// holding the scenario folders `beside`.
fn in_round(x: &mut Result, round: &str, beside: &[&str]) {
    x.seeds = Some(round_seeds(round));
    object_of(&mut x.system_desc).insert("system_type".into(), json!("datacenter"));
    x.scenarios_beside = beside.iter().map(|s| s.to_string()).collect();
}

/// The official seeds of a round.
fn round_seeds(round: &str) -> [u64; 3] {
    let rounds = crate::imported::submission::ROUND_SEEDS;
    rounds.iter().find(|(r, _)| *r == round).unwrap().1
}

/// A description's object, to plant a problem in.
fn object_of(
    described: &mut Option<crate::imported::submission::Described>,
) -> &mut Map<String, Value> {
    described.as_mut().unwrap().1.as_mut().unwrap()
}

/// The clean result's TEST06 given its accuracy log, its samples to plant a problem in.
fn log_of(x: &mut Result) -> &mut Vec<Test06Sample> {
    let log = || {
        let path = "TEST06/accuracy/mlperf_log_accuracy.json";
        (path.to_string(), Ok(test06_samples()))
    };
    x.compliance[0]
        .log
        .get_or_insert_with(log)
        .1
        .as_mut()
        .unwrap()
}

/// The clean result made an Offline run whose queries hold one sample each.
fn offline_of_one_sample_a_query(x: &mut Result) {
    x.scenario = "Offline".into();
    x.settings.scenario = Some("Offline".into());
    x.settings.samples_per_query = Some(1);
}

#[test]
fn equal_issue_is_held_to_the_rounds_whose_checker_requires_it() {
    let rounds = crate::imported::submission::ROUND_SEEDS;
    let found = |round: &str, division: &str, benchmark: &str| {
        let mut r = clean();
        r.settings.equal_issue = Some(false);
        r.division = division.into();
        r.benchmark = benchmark.into();
        r.seeds = Some(rounds.iter().find(|(n, _)| *n == round).unwrap().1);
        crate::imported::run(crate::imported::submission::CHECKS, &r)
            .findings
            .iter()
            .any(|f| f.check == SETTINGS.id && f.message.contains("equal issue"))
    };
    assert!(found("v5.1", "closed", "llama3.1-8b"));
    assert!(found("v5.1", "open", "deepseek-r1"));
    assert!(found("v5.0", "closed", "llama2-70b-99.9"));
    assert!(!found("v5.0", "open", "llama2-70b-99.9"));
    assert!(!found("v5.0", "closed", "llama3.1-8b"));
    // v4.1 accepts an mlperf.conf line instead, v6.0 asks it of none: not held.
    assert!(!found("v4.1", "closed", "llama2-70b-99.9"));
    assert!(!found("v6.0", "closed", "llama2-70b-99.9"));
}

#[test]
fn offline_samples_per_query_bind_every_division_before_v6_and_only_closed_from_it() {
    let rounds = crate::imported::submission::ROUND_SEEDS;
    let seeds_of = |name: &str| rounds.iter().find(|(r, _)| *r == name).unwrap().1;
    let spq_found = |division: &str, round: &str| {
        let mut r = clean();
        offline_of_one_sample_a_query(&mut r);
        r.division = division.into();
        r.seeds = Some(seeds_of(round));
        crate::imported::run(crate::imported::submission::CHECKS, &r)
            .findings
            .iter()
            .any(|f| f.check == SETTINGS.id)
    };
    assert!(spq_found("closed", "v4.1"));
    assert!(spq_found("open", "v4.1"));
    assert!(spq_found("closed", "v6.0"));
    assert!(!spq_found("open", "v6.0"));
}

#[test]
fn every_row_raises_its_planted_problem_and_nothing_on_the_clean_result() {
    super::check_cases(crate::imported::submission::CHECKS, CASES);
}

#[test]
fn a_benchmark_folder_with_its_rounds_scenarios_raises_nothing_and_one_without_says_it_once() {
    let errors = |r: &Result| {
        let found = crate::imported::run(crate::imported::submission::CHECKS, r);
        super::raised(&found, SCENARIOS.id).count()
    };
    for round in ["v4.0", "v4.1", "v5.0", "v5.1", "v6.0", "v6.1"] {
        let mut r = clean();
        in_round(&mut r, round, &["Offline", "Server"]);
        assert_eq!(errors(&r), 0, "{round}");
    }
    // Before v6.0 a missing scenario is the folder's, said on its first result only.
    let (mut first, mut second) = (clean(), clean());
    in_round(&mut first, "v4.1", &["Interactive", "Server"]);
    in_round(&mut second, "v4.1", &["Interactive", "Server"]);
    first.scenario = "Interactive".into();
    // Interactive is no v4.1 scenario of llama2-70b-99.9: its own result's finding, and the
    // missing Offline on the same (first) result.
    assert_eq!(errors(&first), 2);
    assert_eq!(errors(&second), 0);
    // The open division is not held to the table; a system type the table lacks asks nothing.
    let mut open = clean();
    in_round(&mut open, "v4.1", &["Server"]);
    open.division = "open".into();
    assert_eq!(errors(&open), 0);
    let mut odd = clean();
    in_round(&mut odd, "v4.1", &["Server"]);
    object_of(&mut odd.system_desc).insert("system_type".into(), json!("x"));
    assert_eq!(errors(&odd), 0);
}

#[test]
fn gptj_and_open_results_need_no_compliance_test() {
    let found = |r: &Result| crate::imported::run(crate::imported::submission::CHECKS, r);
    let mut gptj = clean();
    gptj.benchmark = "gptj-99".into();
    gptj.accuracy_samples = Some(13368);
    gptj.compliance.clear();
    assert!(found(&gptj)
        .findings
        .iter()
        .all(|f| f.severity == crate::report::Severity::Info));
    let mut open = clean();
    open.division = "open".into();
    object_of(&mut open.system_desc).insert("division".into(), json!("open"));
    open.compliance.clear();
    assert!(found(&open)
        .findings
        .iter()
        .all(|f| f.severity == crate::report::Severity::Info));
}

#[test]
fn official_seeds_name_their_round_in_a_note() {
    let mut r = clean();
    r.seeds = Some(crate::imported::submission::ROUND_SEEDS[9].1);
    let found = crate::imported::run(crate::imported::submission::CHECKS, &r);
    let note: Vec<&str> = found
        .findings
        .iter()
        .filter(|f| f.check == SEEDS.id)
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(note.len(), 1);
    assert!(note[0].contains("round v4.1's"), "{note:?}");
    assert!(found
        .findings
        .iter()
        .all(|f| f.severity == crate::report::Severity::Info));
}

#[test]
fn an_endpoints_result_needs_its_summary_and_accuracy_file_and_the_rounds_seeds() {
    let run = |r: &Result| crate::imported::run(crate::imported::submission::CHECKS, r);
    let mut r = clean();
    r.endpoints = true;
    r.performance = vec!["result_summary.json".into()];
    r.accuracy = vec!["accuracy_results.json".into()];
    r.compliance.clear();
    r.endpoint_seeds = Some([2747215439041700203, 16159082839903944936]);
    let found = run(&r);
    assert!(
        found
            .findings
            .iter()
            .all(|f| f.severity == crate::report::Severity::Info),
        "{:?}",
        found.findings
    );
    assert!(found
        .findings
        .iter()
        .any(|f| f.check == SEEDS.id && f.message.contains("round v6.1's")));
    r.performance.clear();
    r.endpoint_seeds = Some([1, 2]);
    let found = run(&r);
    let errors: Vec<&str> = found
        .findings
        .iter()
        .filter(|f| f.severity == crate::report::Severity::Error)
        .map(|f| f.check.as_str())
        .collect();
    assert_eq!(errors, [FILES.id, SEEDS.id]);
}

/// A TEST06 log that agrees with its verify file says so, naming what it recomputed; an Offline
/// one leaves the first token out, as the script does; a benchmark whose end-of-sequence id the
/// script is given as text leaves EOS out (the script passes it whatever the log holds).
#[test]
fn a_test06_log_that_agrees_with_its_verify_file_says_what_it_recomputed() {
    let said = |x: &Result| -> Vec<String> {
        crate::imported::run(crate::imported::submission::CHECKS, x)
            .findings
            .iter()
            .filter(|f| f.check == COMPLIANCE_LOG.id)
            .map(|f| format!("{:?}: {}", f.severity, f.message))
            .collect()
    };
    let mut x = clean();
    log_of(&mut x);
    assert_eq!(
        said(&x),
        ["Info: TEST06 recomputed from its accuracy log (3 samples, int32): its sample length, first token, EOS checks agree with TEST06/verify_accuracy.txt"]
    );
    offline_of_one_sample_a_query(&mut x);
    log_of(&mut x)[2].token_data = Some("03000000".into());
    let offline = said(&x);
    assert!(
        offline[0].contains("its sample length, EOS checks agree"),
        "{offline:?}"
    );
    assert!(
        offline[0].contains("not recomputed: the first token (not asked of Offline)"),
        "{offline:?}"
    );
    x.benchmark = "llama3.1-405b".into();
    log_of(&mut x)[0].data.push_str("02000000");
    log_of(&mut x)[0].token_count = Some(6);
    let other = said(&x);
    assert!(
        other[0].starts_with("Info:") && other[0].contains("not recomputed: the first token"),
        "{other:?}"
    );
    assert!(
        other[0].contains("EOS (the script compares a given id as text"),
        "{other:?}"
    );
}

/// The dataset rule by the round the seeds name: no round before v5.1 asks it.
#[test]
fn the_dataset_size_is_not_asked_before_v5_1() {
    for round in ["v3.1", "v4.0", "v4.1", "v5.0"] {
        let mut x = clean();
        x.accuracy_samples = Some(100);
        x.seeds = Some(round_seeds(round));
        let found = crate::imported::run(crate::imported::submission::CHECKS, &x);
        assert!(
            !found.findings.iter().any(|f| f.check == DATASET_SIZE.id),
            "{round}: {:#?}",
            found.findings
        );
    }
}
