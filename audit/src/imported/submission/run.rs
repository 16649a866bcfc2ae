//! The rules over a result's runs as they were configured: the performance run's seeds (one round's
//! official ones) and the settings its detail log states (minimum duration, sample counts, samples
//! per query, token latencies, equal issue), and the accuracy run's sample count (the whole
//! dataset), each against the checker's tables by the round the seeds name.

use super::Result;
use crate::check::{Emit, Ran};
use serde_json::json;

/// The least performance sample count and Offline samples per query of each LLM benchmark, the
/// same in every round that names it (`performance-sample-count` and `OFFLINE_MIN_SPQ_SINCE_V4`:
/// v4.0 at `e39003a9`, v4.1 at `379ee534`, v5.0 at `7bf59976`, v5.1 at `47b91b97`, v6.0 in the
/// package's `constants.py` at `6d0cf9dc`). The checker raises "model not known" for any other.
pub const LLM_SAMPLE_MINIMUMS: &[(&str, u64)] = &[
    ("gptj-99", 13368),
    ("gptj-99.9", 13368),
    ("llama2-70b-99", 24576),
    ("llama2-70b-99.9", 24576),
    ("llama2-70b-interactive-99", 24576),
    ("llama2-70b-interactive-99.9", 24576),
    ("mixtral-8x7b", 15000),
    ("llama3.1-405b", 8313),
    ("llama3.1-8b", 13368),
    ("llama3.1-8b-edge", 5000),
    ("deepseek-r1", 4388),
    ("gpt-oss-120b", 6396),
];

/// The samples an accuracy run must cover where the checker's table differs from the dataset
/// ([`LLM_SAMPLE_MINIMUMS`], the same counts as its `dataset-size`): `accuracy-sample-count`, v6.0
/// at `6d0cf9dc`.
const ACCURACY_SAMPLE_COUNTS: &[(&str, u64)] = &[("gpt-oss-120b", 4395)];

/// The LLM benchmarks whose runs must log token latencies (`requested_use_token_latencies`: the
/// models `extra_check_llm` is applied to, C41 l. 1043-1057 and 1111-1112, C51 l. 1581-1586, P60
/// `Config.get_llm_models`; gptj and gpt-oss-120b are not among them).
pub const TOKEN_LATENCY_BENCHMARKS: &[&str] = &[
    "llama2-70b-99",
    "llama2-70b-99.9",
    "llama2-70b-interactive-99",
    "llama2-70b-interactive-99.9",
    "mixtral-8x7b",
    "llama3.1-405b",
    "llama3.1-8b",
    "llama3.1-8b-edge",
    "deepseek-r1",
];

/// The LLM benchmarks whose runs must use equal issue (`sample_concatenate_permutation`), by the
/// round the run's seeds name, and whether the closed and network divisions alone: v5.0
/// (`requires_equal_issue`, C50 l. 1003-1021, 1420-1429) and v5.1 (C51 l. 1159-1177, 1598-1607). v4.0
/// and v4.1 accept a line of the measurements' `mlperf.conf` instead and, through two missing commas
/// in v4.1's list, ask it of other benchmarks than they name; the v6.0 package asks it of no round it
/// reads (D7): not held here.
pub const EQUAL_ISSUE: &[(&str, bool, &[&str])] = &[
    (
        "v5.0",
        true,
        &[
            "gptj-99",
            "gptj-99.9",
            "llama2-70b-99",
            "llama2-70b-99.9",
            "llama2-70b-interactive-99",
            "llama2-70b-interactive-99.9",
            "mixtral-8x7b",
            "llama3.1-405b",
        ],
    ),
    (
        "v5.1",
        false,
        &[
            "gptj-99",
            "gptj-99.9",
            "llama2-70b-99",
            "llama2-70b-99.9",
            "mixtral-8x7b",
            "llama3.1-405b",
            "llama3.1-8b",
            "llama3.1-8b-edge",
            "deepseek-r1",
        ],
    ),
];

/// The least `effective_min_duration_ms` of a performance run (`TEST_DURATION_MS`, every round
/// from v1.0).
pub const MIN_DURATION_MS: u64 = 600_000;

/// The official seeds of each round (qsl, sample index, schedule), as the submission checkers
/// hold them (`MODEL_CONFIG[round]["seeds"]`: v0.5-v4.0 at `e39003a9`, v4.1 at `379ee534`, v5.0 and
/// v5.1 at `47b91b97`, v6.0 and v6.1 in the package at `b66003e1`).
pub const ROUND_SEEDS: &[(&str, [u64; 3])] = &[
    (
        "v0.5",
        [3133965575612453542, 665484352860916858, 3622009729038561421],
    ),
    (
        "v0.7",
        [
            12786827339337101903,
            12640797754436136668,
            3135815929913719677,
        ],
    ),
    (
        "v1.0",
        [
            7322528924094909334,
            1570999273408051088,
            3507442325620259414,
        ],
    ),
    (
        "v1.1",
        [
            1624344308455410291,
            517984244576520566,
            10051496985653635065,
        ],
    ),
    (
        "v2.0",
        [
            6655344265603136530,
            15863379492028895792,
            12662793979680847247,
        ],
    ),
    (
        "v2.1",
        [
            14284205019438841327,
            4163916728725999944,
            299063814864929621,
        ],
    ),
    (
        "v3.0",
        [
            10003631887983097364,
            17183018601990103738,
            12134888396634371638,
        ],
    ),
    (
        "v3.1",
        [148687905518835231, 520418551913322573, 811580660758947900],
    ),
    (
        "v4.0",
        [
            13281865557512327830,
            198141574272810017,
            7575108116881280410,
        ],
    ),
    (
        "v4.1",
        [
            3066443479025735752,
            10688027786191513374,
            14962580496156340209,
        ],
    ),
    (
        "v5.0",
        [
            6023615788873153749,
            15036839855038426416,
            9933818062894767841,
        ],
    ),
    (
        "v5.1",
        [
            1780908523862526354,
            14771362308971278857,
            18209322760996052031,
        ],
    ),
    (
        "v6.0",
        [
            2465351861681999779,
            14276810075590677512,
            3936089224930324775,
        ],
    ),
    (
        "v6.1",
        [
            2085463073848966840,
            2747215439041700203,
            16159082839903944936,
        ],
    ),
];

/// `import.submission-seeds` (row A9): the run's seeds against every round's.
pub(super) fn seeds(r: &Result, emit: &mut Emit) -> Ran {
    if let Some(got) = r.endpoint_seeds {
        return endpoint_seeds(r, got, emit);
    }
    let got = r.seeds?;
    let at = format!("{}/performance/run_1/mlperf_log_detail.txt", r.dir);
    match r.round() {
        Some(round) => {
            emit.info(format!("the performance run's seeds are round {round}'s: the run was configured for that round"))
                .at(at.as_str(), "")
                .data(json!({"round": round}));
        }
        None => {
            emit.finding(format!("the performance run's seeds (qsl {}, sample index {}, schedule {}) are no round's official ones (v0.5 to v6.1): the submission checker gives the result none", got[0], got[1], got[2]))
                .at(at.as_str(), "")
                .data(json!({"seeds": got}));
        }
    }
    Some(())
}

/// `import.submission-settings` (row A9, D6): the run's minimum duration, performance sample
/// count, Offline samples per query and, for the LLMs that need them, token latencies against the
/// rules (`check_performance_dir`, C41 l. 1134-1141, 1240-1258; P60 `performance_check.py` l.
/// 166-187, 292-347, 395-425). From v6.0 the samples per query
/// bind the closed division only; before, every division.
pub(super) fn settings(r: &Result, emit: &mut Emit) -> Ran {
    if r.endpoints {
        return None;
    }
    let at = format!("{}/performance/run_1/mlperf_log_detail.txt", r.dir);
    let benchmark = r.benchmark.to_ascii_lowercase();
    flags_off(r, &benchmark, &at, emit);
    let limits = settings_limits(r, &benchmark);
    for (key, found, least, what) in &limits {
        if found < least {
            emit.finding(format!("the performance run's {key} is {found}; the submission checker requires at least {least} ({what}): it gives the result none"))
                .at(at.as_str(), "")
                .data(json!({"key": key, "found": found, "least": least}));
        }
    }
    (r.settings.token_latencies.is_some() || !limits.is_empty()).then_some(())
}

/// Equal issue and token latencies off where the result's checker requires them on.
fn flags_off(r: &Result, benchmark: &str, at: &str, emit: &mut Emit) {
    let s = &r.settings;
    if s.equal_issue == Some(false) {
        if let Some(round) = equal_issue_required(r, benchmark) {
            emit.finding(format!("the performance run did not use equal issue (sample_concatenate_permutation false); the {round} submission checker requires it of {}: it gives the result none", r.benchmark))
                .at(at, "")
                .data(json!({"key": "effective_sample_concatenate_permutation", "found": false, "round": round}));
        }
    }
    if TOKEN_LATENCY_BENCHMARKS.contains(&benchmark) && s.token_latencies == Some(false) {
        emit.finding(format!("the performance run did not log token latencies (requested_use_token_latencies false); the submission checker requires them of {}: it gives the result none", r.benchmark))
            .at(at, "")
            .data(json!({"key": "requested_use_token_latencies", "found": false}));
    }
}

/// The run's settings the rules bound from below that bind this result, as (key, found, least,
/// what the least stands for): the minimum duration always, the sample counts for the LLMs whose
/// minimums are known, the samples per query for an Offline run where they bind its division.
fn settings_limits(r: &Result, benchmark: &str) -> Vec<(&'static str, u64, u64, String)> {
    let s = &r.settings;
    let mut out = Vec::new();
    if let Some(ms) = s.min_duration_ms {
        let what = "a run of 10 minutes".to_string();
        out.push(("effective_min_duration_ms", ms, MIN_DURATION_MS, what));
    }
    let least = LLM_SAMPLE_MINIMUMS.iter().find(|(b, _)| *b == benchmark);
    let Some(&(_, least)) = least else {
        return out;
    };
    if let Some(n) = s.performance_sample_count {
        let what = format!("{} samples", r.benchmark);
        out.push(("effective_performance_sample_count", n, least, what));
    }
    let offline = s.scenario.as_deref().unwrap_or(&r.scenario) == "Offline";
    if let (true, Some(n), true) = (offline, s.samples_per_query, spq_binds(r)) {
        let what = format!("an Offline query of {} samples", r.benchmark);
        out.push(("effective_samples_per_query", n, least, what));
    }
    out
}

/// The round (named by the run's seeds) whose checker requires equal issue of this result
/// ([`EQUAL_ISSUE`]), if one does.
fn equal_issue_required(r: &Result, benchmark: &str) -> Option<&'static str> {
    let round = r.round()?;
    let (name, closed_only, benchmarks) = EQUAL_ISSUE.iter().find(|(n, _, _)| *n == round)?;
    let division_binds = !closed_only
        || ["closed", "network"]
            .iter()
            .any(|d| r.division.eq_ignore_ascii_case(d));
    (division_binds && benchmarks.contains(&benchmark)).then_some(*name)
}

/// Whether the Offline samples per query bind the result's division: always before v6.0, the
/// closed division only from it (by the round its seeds name; a run of no round's seeds is held to
/// it).
fn spq_binds(r: &Result) -> bool {
    !super::judged_by_package(r.round()) || r.division.eq_ignore_ascii_case("closed")
}

/// The round whose sample-index and schedule seeds are an Endpoints run's data loader and
/// scheduler seeds (`config.yaml`).
pub(super) fn endpoint_round(got: [u64; 2]) -> Option<&'static str> {
    ROUND_SEEDS
        .iter()
        .find(|(_, s)| s[1] == got[0] && s[2] == got[1])
        .map(|(round, _)| *round)
}

/// [`seeds`] for an Endpoints result: `config.yaml`'s `dataloader_random_seed` and
/// `scheduler_random_seed` against each round's sample-index and schedule seeds (row C9).
fn endpoint_seeds(r: &Result, got: [u64; 2], emit: &mut Emit) -> Ran {
    let at = format!("{}/config.yaml", r.dir);
    match endpoint_round(got) {
        Some(round) => {
            emit.info(format!(
                "config.yaml's seeds are round {round}'s: the run was configured for that round"
            ))
            .at(at.as_str(), "/settings/runtime")
            .data(json!({"round": round}));
        }
        None => {
            emit.finding(format!("config.yaml's seeds (data loader {}, scheduler {}) are no round's official ones: the submission checker gives the result none", got[0], got[1]))
                .at(at.as_str(), "/settings/runtime")
                .data(json!({"seeds": got}));
        }
    }
    Some(())
}

/// `import.submission-dataset-size` (row A4): the accuracy run covered the benchmark's whole
/// dataset (its detail log's `effective_accuracy_sample_count`, else `qsl_reported_total_count`,
/// against the checker's `accuracy-sample-count`, else `dataset-size`): the v6.0 package fails the
/// accuracy run otherwise (`AccuracyCheck.dataset_check`, `accuracy_check.py` l. 207-235 at
/// `6d0cf9dc`); the v5.1 checker only logs it (C51 l. 1475-1482, a warning here); the rounds before
/// ask nothing. By the round the performance run's seeds name; a run of no round's seeds is held
/// to the newest rule.
pub(super) fn dataset_size(r: &Result, emit: &mut Emit) -> Ran {
    let got = r.accuracy_samples?;
    let benchmark = r.benchmark.as_str();
    let want = ACCURACY_SAMPLE_COUNTS
        .iter()
        .chain(LLM_SAMPLE_MINIMUMS)
        .find(|(b, _)| *b == benchmark)?
        .1;
    if got == want {
        return Some(());
    }
    let round = r.round();
    let at = format!("{}/accuracy/mlperf_log_detail.txt", r.dir);
    let said = format!(
        "the accuracy run covered {got} samples, not {benchmark}'s whole dataset of {want}: its accuracy is of a part"
    );
    let mark = match round {
        Some("v5.1") => emit.warning(format!(
            "{said} (round v5.1's checker logs this and still gives the result)"
        )),
        Some("v6.0" | "v6.1") | None => emit.finding(format!(
            "{said}: the submission checker fails the accuracy run (from v6.0)"
        )),
        Some(_) => return Some(()),
    };
    mark.at(at.as_str(), "")
        .data(json!({"samples": got, "dataset": want, "round": round}));
    Some(())
}
