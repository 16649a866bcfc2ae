//! An MLPerf submission inside a tree, read as the submission checker reads it: one row per
//! result (`<division>/<submitter>/results/<system>/<benchmark>/<scenario>/`) rather than one per
//! folder. A result's row holds its performance run's LoadGen checks (with its accuracy run's
//! `accuracy.txt`) and the submission's own rules over the result
//! (`rigaudit_audit::imported::submission`): the files it must have, the compliance tests its
//! benchmark requires (`compliance/<system>/<benchmark>/<scenario>/TEST0x/`, or inside the result
//! from v6.0), its measurements description and its system's description.
//!
//! A submitter's folder is told by its `results/` and `systems/` folders side by side; the folders
//! of its results, compliance tests, measurements and systems are then read through their
//! results, not as runs of their own.

use super::{relative, Place, Row, Tree};
use crate::import::{self, Format};
use crate::input;
use rigaudit_audit::imported::submission::{self as rules, Compliance, Described, Result};
use rigaudit_audit::{Report, Severity};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The system descriptions a tree's results have read, by path ([`Tree::descriptions`]).
pub type Descriptions = std::sync::Mutex<std::collections::BTreeMap<PathBuf, Option<Described>>>;

/// One result of a submission: its submitter's folder and its names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResultDir {
    /// `<division>/<submitter>`.
    pub submitter_dir: PathBuf,
    /// What the checker refuses anywhere in the submitter's folder ([`submitter_problems`]).
    pub submitter_problems: Vec<String>,
    pub system: String,
    pub benchmark: String,
    pub scenario: String,
}

impl ResultDir {
    /// The result's folder.
    pub fn dir(&self) -> PathBuf {
        self.submitter_dir
            .join("results")
            .join(&self.system)
            .join(&self.benchmark)
            .join(&self.scenario)
    }

    /// A folder of the submitter's, per result: `compliance/...`, `measurements/...`.
    fn per_result(&self, kind: &str) -> PathBuf {
        self.submitter_dir
            .join(kind)
            .join(&self.system)
            .join(&self.benchmark)
            .join(&self.scenario)
    }
}

/// The places of the walk with every submission's results as one place each, in place of the
/// folders they are read through.
pub fn results_as_places(places: Vec<Place>) -> Vec<Place> {
    let mut results = BTreeSet::new();
    for p in &places {
        if let Place::Files(dir, _) = p {
            if let Some(r) = result_of(dir) {
                results.insert(r);
            }
        }
    }
    if results.is_empty() {
        return places;
    }
    let submitters: BTreeSet<PathBuf> = results.iter().map(|r| r.submitter_dir.clone()).collect();
    let problems: std::collections::BTreeMap<PathBuf, Vec<String>> = submitters
        .iter()
        .map(|s| (s.clone(), submitter_problems(s)))
        .collect();
    let results: BTreeSet<ResultDir> = results
        .into_iter()
        .map(|mut r| {
            r.submitter_problems = problems[&r.submitter_dir].clone();
            r
        })
        .collect();
    let read_through = |dir: &Path| {
        submitters.iter().any(|s| {
            ["results", "compliance", "measurements", "systems"]
                .iter()
                .any(|k| dir.starts_with(s.join(k)))
        })
    };
    let mut out: Vec<Place> = places
        .into_iter()
        .filter(|p| !matches!(p, Place::Files(dir, _) if read_through(dir)))
        .collect();
    out.extend(results.into_iter().map(Place::Result));
    out
}

/// The result a folder lies in: `.../<submitter>/results/<system>/<benchmark>/<scenario>/...`
/// where the submitter's folder also has `systems/`.
fn result_of(dir: &Path) -> Option<ResultDir> {
    let parts: Vec<&std::ffi::OsStr> = dir.iter().collect();
    let i = parts.iter().rposition(|c| *c == "results")?;
    let (system, benchmark, scenario) = (parts.get(i + 1)?, parts.get(i + 2)?, parts.get(i + 3)?);
    let submitter_dir: PathBuf = parts[..i].iter().collect();
    if !submitter_dir.join("systems").is_dir() {
        return None;
    }
    let s = |c: &std::ffi::OsStr| c.to_string_lossy().into_owned();
    Some(ResultDir {
        submitter_dir,
        submitter_problems: Vec::new(),
        system: s(system),
        benchmark: s(benchmark),
        scenario: s(scenario),
    })
}

/// Verifies one result: its logs read by its tool's reader (LoadGen's, or MLPerf Endpoints'), with
/// the submission's rules over it. Each file is read once: the rules take the detail log's
/// settings, the accuracy log's hash line and the Endpoints config's seeds from the files the
/// reader is given.
pub fn verify(tree: &Tree, r: &ResultDir, fail_on: Option<Severity>) -> Row {
    let dir = r.dir();
    let (run, id) = (relative(&tree.root, &dir), input::shown_path(&dir));
    let (format, files) = logs(&dir);
    let read = (!files.is_empty()).then(|| import::read_sources(&files));
    let sources = match &read {
        Some(Ok(read)) => &read.sources[..],
        _ => &[],
    };
    let result = record(tree, r, sources);
    let extra = rigaudit_audit::imported::run(rules::CHECKS, &result);
    let measured = files.iter().any(|f| f.starts_with(dir.join("performance")));
    let settle = |found: &mut _| rules::as_division_takes(&result.division, found);
    let report = match read {
        Some(read) if measured => read
            .and_then(|read| {
                import::verify_read_with(format, read.sources, &id, fail_on, extra, settle)
            })
            .map_err(|e| e.0),
        _ => Ok(Report::new("verify", &id, fail_on, extra)),
    };
    Row {
        run,
        tool: "mlperf-result".into(),
        report,
    }
}

const ENDPOINTS_LOGS: [&str; 4] = [
    "performance/result_summary.json",
    "config.yaml",
    "events.jsonl",
    "accuracy/accuracy_results.json",
];

const LOADGEN_LOGS: [&str; 3] = [
    "performance/run_1/mlperf_log_summary.txt",
    "performance/run_1/mlperf_log_detail.txt",
    "accuracy/accuracy.txt",
];

/// A result's files that its tool's reader takes, those present: an Endpoints result's summary,
/// config, events and accuracy file, or a LoadGen result's performance logs and `accuracy.txt`.
/// Without a performance file no reader runs.
fn logs(dir: &Path) -> (Format, Vec<PathBuf>) {
    let (format, names): (Format, &[&str]) = if is_endpoints(dir) {
        (Format::MlperfEndpoints, &ENDPOINTS_LOGS)
    } else {
        (Format::Loadgen, &LOADGEN_LOGS)
    };
    let files = names
        .iter()
        .map(|n| dir.join(n))
        .filter(|p| p.is_file())
        .collect();
    (format, files)
}

/// The names of a folder's regular files, sorted (none when it cannot be listed).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A small text file's lines (bounded), none when it cannot be read.
fn lines(p: &Path) -> Option<Vec<String>> {
    let bytes = input::read_bounded(p, 1 << 20, "verify file").ok()?;
    Some(lines_of(&bytes))
}

fn lines_of(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(String::from)
        .collect()
}

/// A JSON description: its path as shown and its object.
fn described(tree: &Tree, p: &Path) -> Option<Described> {
    if !p.is_file() {
        return None;
    }
    let object = input::read_bounded(p, input::CARD_MAX, "description")
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.as_object().cloned());
    Some((relative(&tree.root, p), object))
}

/// A system's description, read once for all the results of that system.
fn system_described(tree: &Tree, p: &Path) -> Option<Described> {
    let mut read = tree
        .descriptions
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    read.entry(p.to_path_buf())
        .or_insert_with(|| described(tree, p))
        .clone()
}

/// The typed result the rules read; `sources` are the result's logs its reader reads (the detail
/// log, `accuracy.txt` and an Endpoints config are taken from them, not read again).
fn record(tree: &Tree, r: &ResultDir, sources: &[import::Source]) -> Result {
    let source = |name: &str| {
        sources
            .iter()
            .find(|s| s.name == name)
            .map(|s| &s.bytes[..])
    };
    let dir = r.dir();
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let division = r.submitter_dir.parent().map(name).unwrap_or_default();
    let accuracy_hash =
        source("accuracy.txt").is_some_and(|b| lines_of(b).iter().any(|x| x.starts_with("hash=")));
    // From v6.0 the compliance tests and the measurements sit inside the result. A result of an
    // earlier round may hold copies of its TEST folders too (AMD's v5.1 stable-diffusion-xl
    // results): its measurements folder, which the checker of its round reads, says which it is.
    let v6 = dir.join("measurements.json").is_file()
        || (!r.per_result("measurements").is_dir()
            && names_of_dirs(&dir).iter().any(|d| d.starts_with("TEST")));
    let compliance_dir = if v6 {
        dir.clone()
    } else {
        r.per_result("compliance")
    };
    let measurements_dir = if v6 {
        dir.clone()
    } else {
        r.per_result("measurements")
    };
    let measurement_files = names(&measurements_dir);
    let measurement_json = if v6 {
        dir.join("measurements.json")
    } else {
        measurements_dir.join(measurement_json(&measurement_files, &r.system, &r.scenario))
    };
    let (seeds, settings) = detail_settings(source("mlperf_log_detail.txt"));
    let mut out = Result {
        dir: relative(&tree.root, &dir),
        division,
        submitter: name(&r.submitter_dir),
        system: r.system.clone(),
        benchmark: r.benchmark.clone(),
        scenario: r.scenario.clone(),
        performance: names(&dir.join("performance/run_1")),
        accuracy: names(&dir.join("accuracy")),
        accuracy_hash,
        compliance: compliance(tree, &compliance_dir, &r.benchmark),
        compliance_dir: relative(&tree.root, &compliance_dir),
        measurement_files,
        measurements_dir: relative(&tree.root, &measurements_dir),
        measurements: described(tree, &measurement_json),
        system_desc: system_described(
            tree,
            &r.submitter_dir
                .join("systems")
                .join(format!("{}.json", r.system)),
        ),
        seeds,
        accuracy_samples: accuracy_samples(&dir.join("accuracy/mlperf_log_detail.txt")),
        settings,
        submitter_problems: r.submitter_problems.clone(),
        endpoints: false,
        endpoint_seeds: None,
        scenarios_beside: names_of_dirs(dir.parent().unwrap_or(&dir)),
    };
    if is_endpoints(&dir) {
        out.endpoints = true;
        out.performance = names(&dir.join("performance"));
        out.endpoint_seeds = source("config.yaml").and_then(endpoint_seeds);
    }
    out
}

/// The implementation's description in a measurements folder before v6.0, as the checker finds
/// it (`check_measurement_dir`, v5.1 l. 3039-3047): a file whose name starts with the system's and
/// ends `_<scenario>.json`, or else `.json` (Krai's v5.1 `<system>_<implementation>_Interactive.json`).
/// The checker takes the first such file the folder lists; here `<system>_<scenario>.json`, then
/// `<system>.json`, then the first of the others by name, among the folder's `names`. Absent:
/// `<system>.json`, to be named.
fn measurement_json(names: &[String], system: &str, scenario: &str) -> String {
    let exact = [
        format!("{system}_{scenario}.json"),
        format!("{system}.json"),
    ];
    let scenario_end = format!("_{scenario}.json");
    let found = exact
        .iter()
        .find(|n| names.contains(n))
        .or_else(|| {
            let of_system = |n: &&String| n.starts_with(system);
            let by_scenario = names
                .iter()
                .filter(of_system)
                .find(|n| n.ends_with(&scenario_end));
            by_scenario.or_else(|| {
                names
                    .iter()
                    .filter(of_system)
                    .find(|n| n.ends_with(".json"))
            })
        })
        .cloned();
    found.unwrap_or_else(|| format!("{system}.json"))
}

/// The folders in `dir`, by name.
fn names_of_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The compliance tests in a folder, each with its verify file's lines (and TEST06's accuracy log,
/// and the own run of a test whose audit.config the rules table).
fn compliance(tree: &Tree, dir: &Path, benchmark: &str) -> Vec<Compliance> {
    let mut tests: Vec<String> = names_of_dirs(dir)
        .into_iter()
        .filter(|d| d.starts_with("TEST"))
        .collect();
    tests.sort();
    tests
        .into_iter()
        .map(|test| {
            let file = dir.join(&test).join(rules::verify_file(&test));
            let verify = lines(&file).map(|l| (relative(&tree.root, &file), l));
            let log = test
                .eq_ignore_ascii_case("TEST06")
                .then(|| dir.join(&test).join("accuracy/mlperf_log_accuracy.json"))
                .filter(|p| p.is_file())
                .map(|p| (relative(&tree.root, &p), test06_samples(&p)));
            let run = rules::audit_config_tabled(benchmark, &test)
                .then(|| {
                    dir.join(&test)
                        .join("performance/run_1/mlperf_log_detail.txt")
                })
                .and_then(|detail| test_run(tree, &detail));
            Compliance {
                test,
                verify,
                log,
                run,
            }
        })
        .collect()
}

/// A compliance test's own run, as its detail log states the settings its audit.config sets
/// (`import.submission-compliance-config`); `None` when the test has no detail log or it cannot be
/// read.
fn test_run(tree: &Tree, detail: &Path) -> Option<rules::TestRun> {
    if !detail.is_file() {
        return None;
    }
    let bytes = input::read_bounded(detail, input::RECORD_MAX, "compliance detail log").ok()?;
    let value = |key: &str| entry_value(&bytes, key);
    let number = |key: &str| value(key).and_then(|v| v.as_u64());
    let flag = |key: &str| value(key).and_then(|v| v.as_bool());
    Some(rules::TestRun {
        detail: relative(&tree.root, detail),
        test_mode: value("requested_test_mode").and_then(|v| v.as_str().map(String::from)),
        min_query_count: number("requested_min_query_count"),
        accuracy_log_sampling_target: number("requested_accuracy_log_sampling_target"),
        accuracy_log_rng_seed: number("requested_accuracy_log_rng_seed"),
        sample_concatenate_permutation: flag("requested_sample_concatenate_permutation"),
        performance_issue_unique: flag("requested_performance_issue_unique"),
    })
}

/// The most samples of a TEST06 accuracy log read: the test logs 100 (its `audit.config`).
const TEST06_SAMPLES_MAX: usize = 100_000;

/// A TEST06 accuracy log's samples (a JSON array of LoadGen's accuracy entries), or why it could
/// not be read: bounded in size, and in samples.
fn test06_samples(p: &Path) -> std::result::Result<Vec<rules::Test06Sample>, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        seq_id: Option<u64>,
        data: String,
        token_data: Option<String>,
        token_count: Option<serde_json::Value>,
    }
    // The rule's note names the file already.
    let bytes = input::read_bounded(p, input::TEST06_LOG_MAX, "TEST06 accuracy log")
        .map_err(|e| input::without_path(&e.0, p).to_string())?;
    let entries: Vec<Entry> = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "not LoadGen's accuracy log (line {}, column {}: {e})",
            e.line(),
            e.column()
        )
    })?;
    if entries.len() > TEST06_SAMPLES_MAX {
        return Err(format!(
            "{} samples, more than the {TEST06_SAMPLES_MAX} read",
            entries.len()
        ));
    }
    // The script takes `int(sample["token_count"])`: a number or its text.
    let count = |v: serde_json::Value| match v {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    Ok(entries
        .into_iter()
        .map(|e| rules::Test06Sample {
            seq_id: e.seq_id,
            data: e.data,
            token_data: e.token_data,
            token_count: e.token_count.and_then(count),
        })
        .collect())
}

/// What the rules read of a performance run's detail log, read once: its three
/// `effective_*_rng_seed` values (when it gives all three) and its settings (row A9).
fn detail_settings(detail: Option<&[u8]>) -> (Option<[u64; 3]>, rules::Settings) {
    let Some(bytes) = detail else {
        return (None, rules::Settings::default());
    };
    let value = |key: &str| entry_value(bytes, key);
    let number = |key: &str| value(key).and_then(|v| v.as_u64());
    let seeds = [
        "effective_qsl_rng_seed",
        "effective_sample_index_rng_seed",
        "effective_schedule_rng_seed",
    ]
    .map(number);
    let settings = rules::Settings {
        scenario: value("effective_scenario").and_then(|v| v.as_str().map(String::from)),
        performance_sample_count: number("effective_performance_sample_count"),
        samples_per_query: number("effective_samples_per_query"),
        min_duration_ms: number("effective_min_duration_ms"),
        token_latencies: value("requested_use_token_latencies").and_then(|v| v.as_bool()),
        equal_issue: value("effective_sample_concatenate_permutation").and_then(|v| v.as_bool()),
    };
    let seeds = match seeds {
        [Some(a), Some(b), Some(c)] => Some([a, b, c]),
        _ => None,
    };
    (seeds, settings)
}

/// The accuracy run's sample count from its detail log, read for this alone (the LoadGen reader
/// takes the performance run's): `effective_accuracy_sample_count` where LoadGen logs it, else
/// `qsl_reported_total_count`, as the checker takes it.
fn accuracy_samples(detail: &Path) -> Option<u64> {
    if !detail.is_file() {
        return None;
    }
    let bytes = input::read_bounded(detail, input::RECORD_MAX, "accuracy detail log").ok()?;
    [
        "effective_accuracy_sample_count",
        "qsl_reported_total_count",
    ]
    .iter()
    .find_map(|key| entry_value(&bytes, key))
    .and_then(|v| v.as_u64())
}

/// The value of a detail log's first entry of `key` (a detail log has hundreds of entries: the
/// entry's line is found by its key, then parsed alone).
fn entry_value(bytes: &[u8], key: &str) -> Option<serde_json::Value> {
    let needle = format!("\"key\": \"{key}\"");
    let at = memchr::memmem::find(bytes, needle.as_bytes())?;
    let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |p| p + 1);
    let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |p| at + p);
    let line = std::str::from_utf8(&bytes[start..end]).ok()?;
    let mut v: serde_json::Value = serde_json::from_str(line.strip_prefix(":::MLLOG ")?).ok()?;
    Some(v.get_mut("value")?.take())
}

/// What the submission checker refuses anywhere in a submitter's folder (row A8), in its order:
/// broken symbolic links, files over 50 MB, names starting with a dot, names holding a space,
/// `__pycache__` folders, empty folders; each with its path below the submitter's folder. The
/// walk keeps to the tree's bounds and never follows a link.
pub fn submitter_problems(submitter: &Path) -> Vec<String> {
    let mut kinds: [Vec<String>; 6] = Default::default();
    let mut stack = vec![(submitter.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut empty = true;
        for e in entries.flatten() {
            empty = false;
            seen += 1;
            if seen > super::LIMITS.entries {
                return kinds.concat();
            }
            let path = e.path();
            let shown = path
                .strip_prefix(submitter)
                .unwrap_or(&path)
                .display()
                .to_string();
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).map(|t| dir.join(t));
                if !target.is_ok_and(|t| t.exists()) {
                    kinds[0].push(format!("a broken symbolic link: {shown}"));
                }
                continue;
            }
            if kind.is_file() && e.metadata().is_ok_and(|m| m.len() > 50 * 1024 * 1024) {
                kinds[1].push(format!("a file over 50 MB: {shown}"));
            }
            if name.starts_with('.') {
                kinds[2].push(format!("a name starting with a dot: {shown}"));
            }
            if name.contains(' ') {
                kinds[3].push(format!("a name with a space: {shown}"));
            }
            if kind.is_dir() {
                if name == "__pycache__" {
                    kinds[4].push(format!("a __pycache__ folder: {shown}"));
                }
                if depth < super::LIMITS.depth {
                    stack.push((path, depth + 1));
                }
            }
        }
        if empty && dir != submitter {
            let shown = dir
                .strip_prefix(submitter)
                .unwrap_or(&dir)
                .display()
                .to_string();
            kinds[5].push(format!("an empty folder: {shown}"));
        }
    }
    kinds.iter_mut().for_each(|k| k.sort());
    kinds.concat()
}

/// Whether a result is an MLPerf Endpoints one: a `performance/result_summary.json` and no
/// LoadGen run (docs/formats/mlperf-endpoints.md row C1).
fn is_endpoints(dir: &Path) -> bool {
    dir.join("performance/result_summary.json").is_file() && !dir.join("performance/run_1").exists()
}

/// `config.yaml`'s data loader and scheduler seeds.
fn endpoint_seeds(config: &[u8]) -> Option<[u64; 2]> {
    let v = crate::import::yaml::parse(config).ok()?;
    let seed = |k: &str| v.pointer(&format!("/settings/runtime/{k}"))?.as_u64();
    Some([
        seed("dataloader_random_seed")?,
        seed("scheduler_random_seed")?,
    ])
}
