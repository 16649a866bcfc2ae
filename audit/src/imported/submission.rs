//! One result of an MLPerf inference submission, as the submission checker reads it
//! (`mlcommons/inference` `tools/submission/`, rounds v4.0 to v6.0): beside its LoadGen logs
//! (checked by [`super::loadgen`]'s table), the files the result must have, the compliance tests
//! its benchmark requires and their verdicts, its measurements description, and its system's
//! description.
//!
//! The rules are the checker's own code, tabled with file and line in `docs/formats/loadgen.md`
//! section "The submission tree" (rows A, T, and the lists below): in short,
//! - `performance/run_1/` holds `mlperf_log_summary.txt` and `mlperf_log_detail.txt`; `accuracy/`
//!   holds `accuracy.txt` (with a `hash=` line), `mlperf_log_accuracy.json` and the accuracy run's
//!   logs (A1-A3);
//! - closed and network results need their benchmark's compliance tests: TEST06 for the LLMs but
//!   gptj and llama3.1-8b-edge, TEST07 and TEST09 for gpt-oss-120b; TEST06 passes when its
//!   `verify_accuracy.txt` says `First token check pass: True` (or `Skipped`), `EOS check pass:
//!   True` and `Sample length check pass: True`; TEST07 and TEST09 when theirs says `TEST PASS`
//!   (T1-T6); TEST06's verify file agrees with its own accuracy log ([`test06`], T7);
//! - the measurements JSON names the input and weight data types, retraining, the starting weights
//!   and their transformations, each non-empty, beside `user.conf` and `README.md` (A5);
//! - the system's JSON has every field the checker requires, the meaningful ones non-empty, and
//!   its `submitter` and `division` are its folders' (A7);
//! - the performance run was configured with one round's official seeds and with the settings the
//!   rules require (minimum duration, sample counts, token latencies, equal issue: [`run`], A9);
//! - a closed or network benchmark folder holds the scenarios its round's table requires for the
//!   system's type, and none it does not list ([`scenarios`], A10).

mod audit_config;
mod run;
mod scenarios;
mod test06;

use super::{row, Row};
use crate::check::{About, Emit, Ran};
use crate::report::Severity;
pub use audit_config::{audit_config_tabled, TestRun};
pub use run::ROUND_SEEDS;
use run::{dataset_size, seeds, settings};
use serde_json::{json, Map, Value};
pub use test06::{AccuracyLog, Sample as Test06Sample};

/// `import.submission-files`.
pub const FILES: About = About {
    id: "import.submission-files",
    severity: Severity::Error,
    doc: "A result of an MLPerf submission lacks a file the submission checker requires (the performance run's summary and detail logs, the accuracy run's accuracy.txt with its hash line and its accuracy log): the checker gives it no result.",
};

/// `import.submission-compliance`.
pub const COMPLIANCE: About = About {
    id: "import.submission-compliance",
    severity: Severity::Error,
    doc: "A closed or network MLPerf result lacks a compliance test its benchmark requires (TEST06 for the LLMs; TEST07 and TEST09 for gpt-oss-120b), or the test's verify file does not pass by the submission checker's rule.",
};

/// `import.submission-compliance-log`.
pub const COMPLIANCE_LOG: About = About {
    id: "import.submission-compliance-log",
    severity: Severity::Error,
    doc: "A TEST06 verify file says a check passed that the test's own accuracy log fails (recomputed by run_verification.py's rules: each sample's token count, its first token outside Offline, no two end-of-sequence tokens at its end for the LLMs whose id is the script's default); the submission checker reads only the verify file.",
};

/// `import.submission-compliance-config`.
pub const COMPLIANCE_CONFIG: About = About {
    id: "import.submission-compliance-config",
    severity: Severity::Error,
    doc: "A gpt-oss-120b compliance test's own run (TEST07, TEST09) was not made with the settings its audit.config sets, as its detail log states them: the samples issued and logged (TEST07 990 and 990, TEST09 6396 and 10000), the accuracy log's seed, no concatenated samples, performance mode, and from v6.1 each sample issued once. The test then checked another run than the one it is for; the submission checker reads only its verify file.",
};

/// `import.submission-compliance-verdict`.
pub const COMPLIANCE_VERDICT: About = About {
    id: "import.submission-compliance-verdict",
    severity: Severity::Error,
    doc: "A gpt-oss-120b compliance test's verify file (TEST07's verify_accuracy.txt, TEST09's verify_output_len.txt) does not hold up against the test's audit.config: it names another threshold than the file sets (TEST07 a score of 60.698, TEST09 a mean output length of 1150.38 to 1406.02), its TEST PASS does not follow from its own score or mean under the test's thresholds, or it counted other than the test's samples (990, 6396). The submission checker reads only its TEST PASS.",
};

/// `import.submission-dataset-size`.
pub const DATASET_SIZE: About = About {
    id: "import.submission-dataset-size",
    severity: Severity::Error,
    doc: "An MLPerf result's accuracy run covered fewer or other samples than its benchmark's whole dataset (the checker's accuracy sample count): from v6.0 the checker fails its accuracy, v5.1's only logs it (a warning), earlier rounds ask nothing.",
};

/// `import.submission-scenarios`.
pub const SCENARIOS: About = About {
    id: "import.submission-scenarios",
    severity: Severity::Error,
    doc: "A closed or network MLPerf result's benchmark folder lacks a scenario its round's checker requires for the system's type (or, where Server and Interactive are both optional, has neither), or holds one the checker's table neither requires nor allows: before v6.0 the checker gives the benchmark folder (or the unknown scenario's result) no result, from v6.0 it fails every result of the folder.",
};

/// `import.submission-system`.
pub const SYSTEM: About = About {
    id: "import.submission-system",
    severity: Severity::Error,
    doc: "An MLPerf result's system description (systems/<system>.json) is missing, lacks a field the submission checker requires or leaves a meaningful one empty, or names another submitter or division than its folders.",
};

/// `import.submission-folder`.
pub const FOLDER: About = About {
    id: "import.submission-folder",
    severity: Severity::Error,
    doc: "An MLPerf submitter's folder holds what the submission checker refuses anywhere in it (an empty folder, a name starting with a dot or holding a space, a __pycache__ folder, a file over 50 MB, a broken symbolic link): it gives every result of the submitter none. From v6.0 the checker (the package) walks no folder: a note.",
};

/// `import.submission-seeds`.
pub const SEEDS: About = About {
    id: "import.submission-seeds",
    severity: Severity::Error,
    doc: "An MLPerf result's performance run used random seeds (effective_qsl_rng_seed, effective_sample_index_rng_seed, effective_schedule_rng_seed) that are not the official ones of any round: the submission checker gives the result none. A match names the round the run was configured for (a note).",
};

/// `import.submission-settings`.
pub const SETTINGS: About = About {
    id: "import.submission-settings",
    severity: Severity::Error,
    doc: "An MLPerf result's performance run was configured below what the submission checker requires of every round: a minimum duration under 600,000 ms (10 minutes), a performance sample count under its benchmark's, an Offline run's samples per query under its benchmark's minimum, an LLM's run without its token latencies (use_token_latencies), or, in rounds v5.0 and v5.1, an LLM's run without equal issue (sample_concatenate_permutation). LoadGen itself can call such a run VALID; the checker gives it no result.",
};

/// `import.submission-measurements`.
pub const MEASUREMENTS: About = About {
    id: "import.submission-measurements",
    severity: Severity::Error,
    doc: "An MLPerf result's measurements description (measurements/<system>/<benchmark>/<scenario>/) lacks its JSON (input and weight data types, retraining, starting weights, weight transformations, each non-empty), user.conf or README.md.",
};

/// The fields the checker requires of a system description (`SYSTEM_DESC_REQUIRED_FIELDS`,
/// the same list from v4.1 to v5.1).
pub const SYSTEM_FIELDS: &[&str] = &[
    "division",
    "submitter",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_storage_capacity",
    "host_storage_type",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "framework",
    "operating_system",
    "system_type",
    "other_software_stack",
    "host_processor_frequency",
    "host_processor_caches",
    "host_memory_configuration",
    "host_processor_interconnect",
    "host_networking",
    "host_networking_topology",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
    "cooling",
    "hw_notes",
    "sw_notes",
    "host_network_card_count",
    "system_type_detail",
];

/// Those that must not be empty (`SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS`).
pub const SYSTEM_MEANINGFUL: &[&str] = &[
    "division",
    "submitter",
    "system_type",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_memory_configuration",
    "host_storage_capacity",
    "host_storage_type",
    "host_networking",
    "host_network_card_count",
    "host_networking_topology",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "accelerator_host_interconnect",
    "accelerator_memory_configuration",
    "accelerator_interconnect",
    "cooling",
    "framework",
    "operating_system",
    "other_software_stack",
];

/// The keys a measurements JSON must hold, non-empty (`SYSTEM_IMP_REQUIRED_FILES`).
pub const MEASUREMENT_KEYS: &[&str] = &[
    "input_data_types",
    "retraining",
    "starting_weights_filename",
    "weight_data_types",
    "weight_transformations",
];

/// A compliance test's folder as found: its name and its verify file's lines, when it has one.
#[derive(Debug, Clone, Default)]
pub struct Compliance {
    pub test: String,
    /// The verify file the checker reads (`verify_accuracy.txt`, `verify_output_len.txt`) and its
    /// lines; `None` when the folder lacks it.
    pub verify: Option<(String, Vec<String>)>,
    /// TEST06's accuracy log (`accuracy/mlperf_log_accuracy.json`), when the folder has one.
    pub log: Option<AccuracyLog>,
    /// The test's own run (`performance/run_1/mlperf_log_detail.txt`), for the tests whose
    /// audit.config is tabled ([`audit_config`]), when the folder has its detail log.
    pub run: Option<TestRun>,
}

/// A described JSON file: its path as shown and its object (`None`: not JSON or not an object).
pub type Described = (String, Option<Map<String, Value>>);

/// A performance run's settings, as its detail log states them (each `None` when it does not).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `effective_scenario`.
    pub scenario: Option<String>,
    /// `effective_performance_sample_count`.
    pub performance_sample_count: Option<u64>,
    /// `effective_samples_per_query`.
    pub samples_per_query: Option<u64>,
    /// `effective_min_duration_ms`.
    pub min_duration_ms: Option<u64>,
    /// `requested_use_token_latencies`.
    pub token_latencies: Option<bool>,
    /// `effective_sample_concatenate_permutation` (equal issue).
    pub equal_issue: Option<bool>,
}

/// One result, as the tree found it.
#[derive(Debug, Clone, Default)]
pub struct Result {
    /// The result's folder as shown (`closed/ORG/results/SYSTEM/BENCHMARK/SCENARIO`).
    pub dir: String,
    pub division: String,
    pub submitter: String,
    pub system: String,
    pub benchmark: String,
    pub scenario: String,
    /// The file names in `performance/run_1/` and `accuracy/`.
    pub performance: Vec<String>,
    pub accuracy: Vec<String>,
    /// Whether `accuracy.txt` has a `hash=` line.
    pub accuracy_hash: bool,
    /// Where the compliance tests were looked for, and those found.
    pub compliance_dir: String,
    pub compliance: Vec<Compliance>,
    /// The measurements folder as shown, its file names, and its JSON.
    pub measurements_dir: String,
    pub measurement_files: Vec<String>,
    pub measurements: Option<Described>,
    /// `systems/<system>.json`.
    pub system_desc: Option<Described>,
    /// The performance run's `effective_qsl_rng_seed`, `effective_sample_index_rng_seed` and
    /// `effective_schedule_rng_seed`, when its detail log gives all three.
    pub seeds: Option<[u64; 3]>,
    /// The accuracy run's sample count (its detail log's `effective_accuracy_sample_count`, else
    /// `qsl_reported_total_count`), when it states one.
    pub accuracy_samples: Option<u64>,
    /// The performance run's settings the checker holds to the rules (row A9), from its detail log.
    pub settings: Settings,
    /// What the checker refuses anywhere in the submitter's folder (row A8), each with its path.
    pub submitter_problems: Vec<String>,
    /// An MLPerf Endpoints result (from v6.1: `performance/result_summary.json`, no LoadGen logs;
    /// docs/formats/mlperf-endpoints.md row C1): `performance` then lists `performance/`, and its
    /// seeds are `config.yaml`'s data loader and scheduler seeds (the checker skips the QSL's).
    pub endpoints: bool,
    pub endpoint_seeds: Option<[u64; 2]>,
    /// The scenario folders of the result's benchmark folder (`results/<system>/<benchmark>/`),
    /// by name, this result's among them.
    pub scenarios_beside: Vec<String>,
}

impl Result {
    /// The round whose official seeds the performance run used ([`ROUND_SEEDS`]), if any.
    pub fn round(&self) -> Option<&'static str> {
        let got = self.seeds?;
        ROUND_SEEDS
            .iter()
            .find(|(_, s)| *s == got)
            .map(|(round, _)| *round)
    }

    /// The round whose checker judges the result: the one its performance run's seeds name, or
    /// for an Endpoints result the one `config.yaml`'s data loader and scheduler seeds name.
    pub fn checker_round(&self) -> Option<&'static str> {
        match self.endpoint_seeds {
            Some(got) => run::endpoint_round(got),
            None => self.round(),
        }
    }
}

/// A result's findings as its division has them, once its logs' rows and the submission's are
/// merged: the checker takes an open result's accuracy whatever it is ("accuracy not valid but
/// taken for open": C41 l. 2023-2029; P60 `accuracy_check.py` l. 160-161), so there an accuracy
/// beyond the benchmark's target (`import.accuracy-below-target`) is a note, not a failure.
pub fn as_division_takes(division: &str, found: &mut crate::report::Findings) {
    if !division.eq_ignore_ascii_case("open") {
        return;
    }
    for f in &mut found.findings {
        if f.check == "import.accuracy-below-target" && f.severity > Severity::Info {
            f.severity = Severity::Info;
            f.message.push_str("; this result is an open one");
        }
    }
}

/// Whether a round's checker is the package (`tools/submission/submission_checker/`, from v6.0)
/// rather than the single script of the rounds before.
pub(super) fn judged_by_package(round: Option<&str>) -> bool {
    matches!(round, Some("v6.0" | "v6.1"))
}

/// The checks of one result.
pub const CHECKS: &[Row<Result>] = &[
    row(FILES, files),
    row(COMPLIANCE, compliance),
    row(COMPLIANCE_LOG, test06::compliance_log),
    row(COMPLIANCE_CONFIG, audit_config::run_config),
    row(COMPLIANCE_VERDICT, audit_config::verdict),
    row(SYSTEM, system),
    row(MEASUREMENTS, measurements),
    row(SEEDS, seeds),
    row(SETTINGS, settings),
    row(DATASET_SIZE, dataset_size),
    row(SCENARIOS, scenarios::scenarios),
    row(FOLDER, folder),
];

/// The compliance tests a benchmark requires in the closed and network divisions (table T).
pub fn required_tests(benchmark: &str) -> Option<&'static [&'static str]> {
    let b = benchmark.to_ascii_lowercase();
    if b.starts_with("gptj") || b == "llama3.1-8b-edge" {
        return Some(&[]);
    }
    if b.starts_with("gpt-oss") {
        return Some(&["TEST07", "TEST09"]);
    }
    let llm = [
        "llama2-70b",
        "mixtral-8x7b",
        "llama3.1-405b",
        "llama3.1-8b",
        "deepseek-r1",
    ];
    llm.iter().any(|m| b.starts_with(m)).then_some(&["TEST06"])
}

/// `import.submission-files` (rows A1-A3).
fn files(r: &Result, emit: &mut Emit) -> Ran {
    let need = if r.endpoints {
        // The Endpoints parser opens these two and nothing else of the run (row C2).
        [
            ("performance", &r.performance, &["result_summary.json"][..]),
            ("accuracy", &r.accuracy, &["accuracy_results.json"][..]),
        ]
    } else {
        [
            (
                "performance/run_1",
                &r.performance,
                &["mlperf_log_summary.txt", "mlperf_log_detail.txt"][..],
            ),
            (
                "accuracy",
                &r.accuracy,
                &["accuracy.txt", "mlperf_log_accuracy.json"][..],
            ),
        ]
    };
    for (folder, has, wanted) in need {
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|w| !has.iter().any(|h| h == w))
            .collect();
        if !missing.is_empty() {
            emit.finding(format!(
                "{folder}/ lacks {}: the submission checker gives the result none",
                missing.join(" and ")
            ))
            .at(&r.dir, format!("/{folder}"))
            .data(json!({"folder": folder, "missing": missing}));
        }
    }
    if !r.endpoints && r.accuracy.iter().any(|a| a == "accuracy.txt") && !r.accuracy_hash {
        emit.finding("accuracy/accuracy.txt has no hash= line (the accuracy log's digest): the submission checker takes its accuracy as not valid")
            .at(&r.dir, "/accuracy/accuracy.txt");
    }
    Some(())
}

/// `import.submission-compliance` (rows T1-T6).
fn compliance(r: &Result, emit: &mut Emit) -> Ran {
    if r.division.eq_ignore_ascii_case("open") {
        return Some(());
    }
    if r.endpoints {
        // The Endpoints audits (audit/audit_<test>.json) are required only of models none of the
        // LLMs is (row C12): not read here.
        emit.info("an Endpoints result: its audits (audit/audit_<test>.json) are not read")
            .at(&r.dir, "/audit");
        return Some(());
    }
    let required = required_tests(&r.benchmark)?;
    for test in required {
        let found = r
            .compliance
            .iter()
            .find(|c| c.test.eq_ignore_ascii_case(test));
        let Some(c) = found else {
            emit.finding(format!("{test} is missing from {}: {} requires it in the {} division, and the submission checker gives the result none without it", r.compliance_dir, r.benchmark, r.division))
                .at(&r.dir, format!("/{test}"))
                .data(json!({"test": test}));
            continue;
        };
        match &c.verify {
            None => {
                emit.finding(format!(
                    "{}/{test} has no verify file ({}): the test's verdict is missing",
                    r.compliance_dir,
                    verify_file(test)
                ))
                .at(&r.dir, format!("/{test}"));
            }
            Some((file, lines)) => {
                if let Some(why) = failed(test, lines) {
                    emit.finding(format!(
                        "{test} does not pass by the submission checker's rule: {why}"
                    ))
                    .at(file.as_str(), "")
                    .data(json!({"test": test}));
                }
            }
        }
    }
    Some(())
}

/// The verify file the checker reads for a test.
pub fn verify_file(test: &str) -> &'static str {
    if test.eq_ignore_ascii_case("TEST09") {
        "verify_output_len.txt"
    } else {
        "verify_accuracy.txt"
    }
}

/// Why a test's verify lines fail the checker's rule, if they do (T1, T3, T4).
pub fn failed(test: &str, lines: &[String]) -> Option<String> {
    let has = |l: &str| lines.iter().any(|x| x.trim() == l);
    if test.eq_ignore_ascii_case("TEST06") {
        let mut missing = Vec::new();
        if !has("First token check pass: True") && !has("First token check pass: Skipped") {
            missing.push("First token check pass: True (or Skipped)");
        }
        for l in ["EOS check pass: True", "Sample length check pass: True"] {
            if !has(l) {
                missing.push(l);
            }
        }
        return (!missing.is_empty())
            .then(|| format!("its verify_accuracy.txt lacks {}", missing.join(", ")));
    }
    let pass = lines.iter().any(|x| x.contains("TEST PASS"));
    (!pass).then(|| format!("its {} does not say TEST PASS", verify_file(test)))
}

/// `import.submission-system` (row A7).
fn system(r: &Result, emit: &mut Emit) -> Ran {
    let Some((file, desc)) = &r.system_desc else {
        emit.finding(format!(
            "systems/{}.json is missing: the submission checker gives the system's results none",
            r.system
        ))
        .at(&r.dir, "");
        return Some(());
    };
    let Some(d) = desc else {
        emit.finding("the system description is not a JSON object")
            .at(file.as_str(), "");
        return Some(());
    };
    let missing: Vec<&str> = SYSTEM_FIELDS
        .iter()
        .copied()
        .filter(|k| !d.contains_key(*k))
        .collect();
    let empty: Vec<&str> = SYSTEM_MEANINGFUL
        .iter()
        .copied()
        .filter(|k| d.get(*k).is_some_and(falsy))
        .collect();
    if !missing.is_empty() || !empty.is_empty() {
        let mut said = Vec::new();
        if !missing.is_empty() {
            said.push(format!("lacks {}", missing.join(", ")));
        }
        if !empty.is_empty() {
            said.push(format!("leaves empty {}", empty.join(", ")));
        }
        emit.finding(format!(
            "the system description {}: the submission checker gives the system's results none",
            said.join("; ")
        ))
        .at(file.as_str(), "")
        .data(json!({"missing": missing, "empty": empty}));
    }
    let text = |k: &str| {
        d.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if !text("submitter").eq_ignore_ascii_case(&r.submitter) || text("division") != r.division {
        emit.finding(format!("the system description names submitter '{}' and division '{}'; its folders are {} and {}", text("submitter"), text("division"), r.submitter, r.division))
            .at(file.as_str(), "/submitter");
    }
    Some(())
}

/// Python's falsiness, as `not systems_json[k]` tests it.
fn falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// `import.submission-measurements` (row A5).
fn measurements(r: &Result, emit: &mut Emit) -> Ran {
    for f in ["user.conf", "README.md"] {
        if !r.measurement_files.iter().any(|x| x == f) {
            emit.finding(format!("{} lacks {f}", r.measurements_dir))
                .at(&r.dir, "");
        }
    }
    match &r.measurements {
        None => {
            emit.finding(format!("{} has no {}.json (the implementation's description): the submission checker gives the result none", r.measurements_dir, r.system))
                .at(&r.dir, "");
        }
        Some((file, None)) => {
            emit.finding("the measurements description is not a JSON object")
                .at(file.as_str(), "");
        }
        Some((file, Some(m))) => {
            let bad: Vec<&str> = MEASUREMENT_KEYS
                .iter()
                .copied()
                .filter(|k| m.get(*k).is_none_or(falsy))
                .collect();
            if !bad.is_empty() {
                emit.finding(format!(
                    "the measurements description lacks or leaves empty {}",
                    bad.join(", ")
                ))
                .at(file.as_str(), "")
                .data(json!({"keys": bad}));
            }
        }
    }
    Some(())
}

/// `import.submission-folder` (row A8).
fn folder(r: &Result, emit: &mut Emit) -> Ran {
    let Some(first) = r.submitter_problems.first() else {
        return Some(());
    };
    let more = match r.submitter_problems.len() - 1 {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let data = json!({"problems": r.submitter_problems});
    let (division, submitter) = (&r.division, &r.submitter);
    // From v6.0 the checker is the package, which walks no folder (its FILE_SIZE_LIMIT_MB is
    // defined and never read); MLCommons' tools/submission/repository_checks.sh lists dot names,
    // spaces, links and files over 50 MB before an upload, and fails nothing.
    if judged_by_package(r.checker_round()) {
        emit.info(format!(
            "{division}/{submitter}: {first}{more}: not asked by the checker of round {} (the package walks no folder); repository_checks.sh lists a dot name, a space, a link or a file over 50 MB before an upload",
            r.checker_round().unwrap_or_default()
        ))
        .at(&r.dir, "")
        .data(data);
        return Some(());
    }
    emit.finding(format!(
        "{division}/{submitter}: {first}{more}: the submission checker gives every result of the submitter none"
    ))
    .at(&r.dir, "")
    .data(data);
    Some(())
}
