//! Checks of result files written by the field's own benchmark tools (AIPerf, GuideLLM,
//! lm-evaluation-harness, MLPerf LoadGen, llama.cpp's llama-bench and server, vLLM's bench serve),
//! as `rigaudit import` and `verify --from` read them.
//!
//! One file per tool, each with the tool's definitions at its top, its parsed input (the
//! format's run, such as [`aiperf::Export`]) and its table of rows: `CHECKS`, each row a
//! [`Row`] (one id, one function of that input), run by [`run`] through the one runner
//! ([`Findings::check`]), which alone records that a check ran. Where a finding means the same as
//! a bundle check (a printed aggregate that its records do not give: `speed.recompute-mismatch`;
//! cached prompt tokens: `speed.cached-tokens`; token counts not from usage: `speed.token-source`;
//! a percentage or count that the samples do not give: `quality.pct-mismatch`), the format's row
//! takes that check's id, severity and doc ([`row`] of its [`Check::about`]); the `import.*` ids
//! below are for what only an imported file shows, each written once here and paired in each
//! format's table with that format's function. Nothing here reads a file: the CLI's readers
//! (`src/import/`) parse the files into the typed records of each module.

use crate::check::{About, Check, Emit, Ran};
use crate::report::{Cap, Findings, Recomputed, Severity};
use crate::stats::{agrees, written_decimals};
use serde_json::json;
use std::collections::BTreeMap;

pub mod aiperf;
pub mod compare;
pub mod endpoints;
pub mod guidellm;
pub mod llama_bench;
pub mod llama_server;
pub mod lm_eval;
pub mod loadgen;
pub mod ml_energy;
pub mod read;
pub mod submission;
pub mod vllm;

#[cfg(test)]
mod tests;

/// A check of one imported format: one id, one function of that format's parsed input `F`.
pub type Row<F> = Check<fn(&F, &mut Emit) -> Ran>;

/// A format's row of a check written once elsewhere (an `import.*` id below, or a bundle
/// family's such as `speed.recompute-mismatch`): its id, severity and doc, the format's function.
pub const fn row<F>(of: About, run: fn(&F, &mut Emit) -> Ran) -> Row<F> {
    Check {
        id: of.id,
        severity: of.severity,
        doc: of.doc,
        run,
    }
}

/// Runs a format's table over its parsed input, in the table's order, into one collector.
pub fn run<F>(table: &[Row<F>], input: &F) -> Findings {
    let mut found = Findings::capped(Cap::PER_CHECK);
    for c in table {
        found.check(c, |check, emit| check(input, emit));
    }
    found.list_dropped();
    found
}

/// `import.failed-hidden`.
pub const FAILED_HIDDEN: About = About {
    id: "import.failed-hidden",
    severity: Severity::Error,
    doc: "An imported file's request counts leave out failed or errored requests its own records show (dropped from every figure).",
};

/// `import.failed-as-zero`.
pub const FAILED_AS_ZERO: About = About {
    id: "import.failed-as-zero",
    severity: Severity::Error,
    doc: "A failed, empty or zero-token request is counted inside an imported success figure (as zero latency, zero tokens or an answer).",
};

/// `import.failed-requests`.
pub const FAILED_REQUESTS: About = About {
    id: "import.failed-requests",
    severity: Severity::Warning,
    doc: "Requests of an imported run failed, errored or were cancelled; its figures describe only the others.",
};

/// `import.run-incomplete`.
pub const RUN_INCOMPLETE: About = About {
    id: "import.run-incomplete",
    severity: Severity::Error,
    doc: "The tool itself says the run was cancelled, incomplete or invalid.",
};

/// `import.ttft-empty-chunk`.
pub const TTFT_EMPTY_CHUNK: About = About {
    id: "import.ttft-empty-chunk",
    severity: Severity::Warning,
    doc: "A time to first token was taken at a streamed chunk that carried no generated text.",
};

/// `import.empty-scored-wrong`.
pub const EMPTY_SCORED_WRONG: About = About {
    id: "import.empty-scored-wrong",
    severity: Severity::Warning,
    doc: "Empty replies (a null or unparsable answer) are scored as wrong answers, as the tool's own code scores them; they are no answer, and the result over the answered documents is given beside.",
};

/// `import.unscorable-reply`.
pub const UNSCORABLE_REPLY: About = About {
    id: "import.unscorable-reply",
    severity: Severity::Warning,
    doc: "Replies from which the task's filter extracted no answer are scored as wrong, and the file cannot tell which were cut off at the answer limit.",
};

/// `import.stderr-mismatch`.
pub const STDERR_MISMATCH: About = About {
    id: "import.stderr-mismatch",
    severity: Severity::Error,
    doc: "A printed standard error is not the scores' sample standard deviation / sqrt(n).",
};

/// `import.validity-mismatch`.
pub const VALIDITY_MISMATCH: About = About {
    id: "import.validity-mismatch",
    severity: Severity::Error,
    doc: "A tool's verdict (VALID, a rule said met) disagrees with the parts or the measured duration and count it rests on.",
};

/// `import.tool-errors`.
pub const TOOL_ERRORS: About = About {
    id: "import.tool-errors",
    severity: Severity::Error,
    doc: "The tool logged errors (error) or warnings (warning) during the run.",
};

/// `import.settings-below-rules`.
pub const SETTINGS_BELOW_RULES: About = About {
    id: "import.settings-below-rules",
    severity: Severity::Warning,
    doc: "A run's own settings are below the rules its tool's benchmark asks for (MLPerf: 600 s minimum duration).",
};

/// `import.accuracy-below-target`.
pub const ACCURACY_BELOW_TARGET: About = About {
    id: "import.accuracy-below-target",
    severity: Severity::Error,
    doc: "An accuracy score the benchmark's accuracy script printed is below the benchmark's target (or above its upper limit): the run's accuracy does not qualify the result (MLPerf: accuracy.txt against the submission checker's targets).",
};

/// `import.accuracy-count-mismatch`.
pub const ACCURACY_COUNT_MISMATCH: About = About {
    id: "import.accuracy-count-mismatch",
    severity: Severity::Error,
    doc: "The accuracy script scored a number of samples other than the accuracy run's (MLPerf: accuracy.txt's gen_num against the run's sample count): the score is not over the whole dataset.",
};

/// `import.accuracy-missing`.
pub const ACCURACY_MISSING: About = About {
    id: "import.accuracy-missing",
    severity: Severity::Warning,
    doc: "The accuracy run's log is given but not the accuracy script's output (MLPerf: mlperf_log_accuracy.json without accuracy.txt): the run's accuracy is not stated, and is not recomputed here.",
};

/// `import.not-recomputable`.
pub const NOT_RECOMPUTABLE: About = About {
    id: "import.not-recomputable",
    severity: Severity::Info,
    doc: "An aggregate of an imported file that its records cannot give (they lack what it is made of); shown, not checked.",
};

/// `import.impossible-aggregate`.
pub const IMPOSSIBLE_AGGREGATE: About = About {
    id: "import.impossible-aggregate",
    severity: Severity::Error,
    doc: "Aggregates a file prints of one set of requests cannot all hold (a mean outside its min and max, percentiles out of order, more completed than sent, a peak concurrency above the client's cap). In MLPerf LoadGen's logs a figure no result rests on is a warning: a mean (no scenario's metric), or an Offline run's latencies (its metric is its samples per second).",
};

/// `import.records-missing`.
pub const RECORDS_MISSING: About = About {
    id: "import.records-missing",
    severity: Severity::Error,
    doc: "The per-request or per-document records given are fewer than the figures count: the evidence for the rest is absent, so those figures cannot be recomputed.",
};

/// `import.subset-of-dataset`.
pub const SUBSET_OF_DATASET: About = About {
    id: "import.subset-of-dataset",
    severity: Severity::Warning,
    doc: "A score is over part of its task's documents (a --limit, fewer effective than original documents, or the task's own process_docs or custom_dataset selecting rows): it is not the benchmark's score.",
};

/// `import.zero-unparseable`.
pub const ZERO_UNPARSEABLE: About = About {
    id: "import.zero-unparseable",
    severity: Severity::Error,
    doc: "A score of 0 where no reply could be parsed (percent_parseable 0): a format failure, not a measured score.",
};

/// `import.non-finite-score`.
pub const NON_FINITE_SCORE: About = About {
    id: "import.non-finite-score",
    severity: Severity::Error,
    doc: "A printed score is not a finite number (NaN, Infinity): replies its metric could not score, not a measured score.",
};

/// `import.cached-responses`.
pub const CACHED_RESPONSES: About = About {
    id: "import.cached-responses",
    severity: Severity::Warning,
    doc: "The run answered requests from a response cache (lm-eval's use_cache): the file cannot say which replies the model gave in this run.",
};

/// `import.not-rescored`.
pub const NOT_RESCORED: About = About {
    id: "import.not-rescored",
    severity: Severity::Info,
    doc: "A task is not re-scored: it scores by its own code (process_results, a custom filter or metric), so its per-document scores are taken as the task gives them, or its samples file was not given.",
};

/// `import.edited-output`.
pub const EDITED_OUTPUT: About = About {
    id: "import.edited-output",
    severity: Severity::Warning,
    doc: "A file is not the tool's output as written: its keys are not those the version it states prints (keys added later, or one it always printed missing).",
};

/// `import.reasoning-only-replies`.
pub const REASONING_ONLY: About = About {
    id: "import.reasoning-only-replies",
    severity: Severity::Warning,
    doc: "Replies that carried reasoning tokens only (cut before any answer) are counted in the output token figures.",
};

/// `import.declared-metric-missing`.
pub const DECLARED_METRIC_MISSING: About = About {
    id: "import.declared-metric-missing",
    severity: Severity::Warning,
    doc: "A metric the task's configuration declares has no value in the results: the task's own scoring never produced it.",
};

/// `import.compliance-failed`.
pub const COMPLIANCE_FAILED: About = About {
    id: "import.compliance-failed",
    severity: Severity::Error,
    doc: "An MLPerf compliance test's own verification says the run failed it (TEST01/04/05 'TEST FAIL'; TEST06 a check 'False' or 'verification failed').",
};

/// `import.percentile-few-samples`.
pub const PERCENTILE_FEW_SAMPLES: About = About {
    id: "import.percentile-few-samples",
    severity: Severity::Warning,
    doc: "A percentile printed from fewer samples than it takes to estimate it (a q-percentile needs 1 / (1 - q): a p99 from fewer than 100 requests is the largest one in disguise, and has no upper bound).",
};

/// `import.unreadable`.
pub const UNREADABLE: About = About {
    id: "import.unreadable",
    severity: Severity::Error,
    doc: "A file of the imported run cannot be read whole (not a regular file, over its size bound, a line over 1 MiB, not UTF-8, not valid JSON where the format is JSON): nothing in it is checked; the run's other files are, and a run that cannot be checked without it is incomplete.",
};

/// The `import.*` checks, in catalogue order (each format's table pairs them with its functions).
pub const CHECKS: &[About] = &[
    UNREADABLE,
    FAILED_HIDDEN,
    FAILED_AS_ZERO,
    FAILED_REQUESTS,
    RUN_INCOMPLETE,
    TTFT_EMPTY_CHUNK,
    EMPTY_SCORED_WRONG,
    UNSCORABLE_REPLY,
    STDERR_MISMATCH,
    VALIDITY_MISMATCH,
    TOOL_ERRORS,
    SETTINGS_BELOW_RULES,
    NOT_RECOMPUTABLE,
    IMPOSSIBLE_AGGREGATE,
    RECORDS_MISSING,
    SUBSET_OF_DATASET,
    ZERO_UNPARSEABLE,
    NON_FINITE_SCORE,
    CACHED_RESPONSES,
    NOT_RESCORED,
    EDITED_OUTPUT,
    REASONING_ONLY,
    DECLARED_METRIC_MISSING,
    COMPLIANCE_FAILED,
    PERCENTILE_FEW_SAMPLES,
    ACCURACY_BELOW_TARGET,
    ACCURACY_COUNT_MISMATCH,
    ACCURACY_MISSING,
    ml_energy::ENERGY_WINDOW,
    ml_energy::ENERGY_READINGS,
    endpoints::accuracy::UNSCORED,
    submission::FILES,
    submission::COMPLIANCE,
    submission::COMPLIANCE_LOG,
    submission::COMPLIANCE_CONFIG,
    submission::COMPLIANCE_VERDICT,
    submission::SYSTEM,
    submission::MEASUREMENTS,
    submission::SEEDS,
    submission::SETTINGS,
    submission::DATASET_SIZE,
    submission::SCENARIOS,
    submission::FOLDER,
];

/// The figures of one distribution a file prints: its min, mean and max when printed, and its
/// percentiles (percentile, name as printed, value).
#[derive(Debug, Clone, Default)]
pub struct Spread {
    /// The smallest value.
    pub min: Option<f64>,
    /// The mean.
    pub mean: Option<f64>,
    /// The largest value.
    pub max: Option<f64>,
    /// The percentiles: (percentile, name, value), in any order.
    pub percentiles: Vec<(f64, String, f64)>,
}

/// What in a [`Spread`] one set of values cannot give, when anything: the mean outside the min
/// and the max, or two figures out of order (min, the percentiles in order, max). `what` names
/// the distribution in the sentence. Returns the sentence and the name of the figure it is about
/// (`mean`, or the first of the two out of order).
pub fn impossible(what: &str, s: &Spread) -> Option<(String, String)> {
    if let (Some(m), Some(lo), Some(hi)) = (s.mean, s.min, s.max) {
        if m < lo || m > hi {
            let msg = format!("the mean {what} ({m}) is outside its min ({lo}) and max ({hi}): one set of values cannot give these; a sum that overflowed gives such a mean");
            return Some((msg, "mean".into()));
        }
    }
    let mut ordered: Vec<(f64, &str, f64)> = s
        .percentiles
        .iter()
        .map(|(q, n, v)| (*q, n.as_str(), *v))
        .collect();
    ordered.sort_by(|a, b| a.0.total_cmp(&b.0));
    ordered.extend(s.max.map(|v| (101.0, "max", v)));
    ordered.splice(0..0, s.min.map(|v| (-1.0, "min", v)));
    let w = ordered
        .windows(2)
        // Out of order beyond a relative 1e-9 (of either's magnitude: a negative figure, such as
        // AIPerf's osl_mismatch_diff_pct, equal to its neighbour is in order).
        .find(|w| w[0].2 - w[1].2 > 1e-9 * w[0].2.abs().max(w[1].2.abs()) + 1e-12)?;
    let msg = format!(
        "the {what} {} ({}) is above its {} ({}): one set of values cannot give these",
        w[0].1, w[0].2, w[1].1, w[1].2
    );
    Some((msg, w[0].1.to_string()))
}

/// `import.not-recomputable`'s one finding for `names`, the printed figures of `file` not
/// checked (`what`: what they are, `why`: since what), listed in its data under `key`; nothing
/// when `names` is empty.
pub fn not_checked<S: AsRef<str> + serde::Serialize>(
    emit: &mut Emit,
    (file, key): (&str, &str),
    (what, why): (&str, &str),
    names: &[S],
) -> Ran {
    if names.is_empty() {
        return Some(());
    }
    let listed: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    let said = format!(
        "{} {what} are not checked, since {why}: {}",
        names.len(),
        listed.join(", ")
    );
    emit.finding(said)
        .file(file)
        .data(serde_json::json!({ key: names }));
    Some(())
}

/// The percentiles short of one sample count, as (q, name as printed), and the distributions
/// that print them.
type Short<'a> = (Vec<(f64, &'a str)>, Vec<&'a str>);

/// `import.percentile-few-samples` over a file's printed distributions: each percentile against
/// the samples its distribution says it was taken from, grouped by that count, so a tool that
/// prints the same percentiles of every metric gets one finding per count, naming the
/// percentiles and distributions it covers and the reason for the most extreme of them. A
/// distribution of one value (its min is its max) has exact percentiles and is left out.
#[derive(Debug, Default)]
pub struct FewSamples<'a> {
    /// samples -> the percentiles short of them and their distributions
    by_count: BTreeMap<usize, Short<'a>>,
    /// Whether any printed percentile had a count to be judged by.
    ran: bool,
}

impl<'a> FewSamples<'a> {
    /// One distribution `tag` of `n` samples printing `percentiles` (q in 0..1, its name).
    pub fn add(&mut self, tag: &'a str, n: usize, exact: bool, percentiles: &[(f64, &'a str)]) {
        if exact {
            return;
        }
        for &(q, name) in percentiles {
            self.ran = true;
            if crate::decide::percentile::too_few_samples(q, n).is_some() {
                let (qs, tags) = self.by_count.entry(n).or_default();
                if !qs.iter().any(|(_, nm)| *nm == name) {
                    qs.push((q, name));
                }
                if tags.last() != Some(&tag) {
                    tags.push(tag);
                }
            }
        }
    }

    /// The findings, each placed by `at(tag, percentile name)`, its message led by `what` (a
    /// benchmark's name, or nothing).
    pub fn emit(
        self,
        emit: &mut Emit,
        file: &str,
        what: &str,
        at: impl Fn(&str, &str) -> String,
    ) -> bool {
        for (n, (mut qs, tags)) in self.by_count {
            // The most extreme first (the upper one of a pair), by distance from the median in
            // millionths so that p5 and p95 tie.
            let far = |q: f64| ((q - 0.5).abs() * 1e6).round() as u64;
            qs.sort_by(|a, b| far(b.0).cmp(&far(a.0)).then(b.0.total_cmp(&a.0)));
            let Some(why) = crate::decide::percentile::too_few_samples(qs[0].0, n) else {
                continue;
            };
            let names: Vec<&str> = qs.iter().map(|(_, nm)| *nm).collect();
            let shown = &tags[..tags.len().min(4)];
            let more = match tags.len() - shown.len() {
                0 => String::new(),
                k => format!(" and {k} more"),
            };
            emit.finding(format!(
                "{what}{} of {}{more} rest on {n} samples; the first is a {why}",
                names.join(", "),
                shown.join(", ")
            ))
            .at(file, at(tags[0], names[0]))
            .data(json!({"percentiles": names, "samples": n, "distributions": tags}));
        }
        self.ran
    }
}

/// Compares a printed aggregate with the value recomputed from the records: records the pair,
/// and reports a mismatch through `emit` when they differ beyond the printed precision
/// ([`close`]). Returns whether they agree.
pub fn compare(emit: &mut Emit, at: (&str, &str), key: &str, exact: f64, shown: f64) -> bool {
    record(emit, key, exact, shown);
    agrees_or_report(emit, at, key, exact, shown)
}

/// [`compare`] without recording the pair (a value another check records).
pub fn agrees_or_report(
    emit: &mut Emit,
    at: (&str, &str),
    key: &str,
    exact: f64,
    shown: f64,
) -> bool {
    if close(exact, shown) {
        return true;
    }
    mismatch(emit, at, key, exact, shown);
    false
}

/// [`compare`] for a figure printed as text: compared at the decimals the text shows (`0.50` at
/// two), not those of its shortest float form; `None` when the text is not a number.
pub fn compare_text(
    emit: &mut Emit,
    at: (&str, &str),
    key: &str,
    exact: f64,
    text: &str,
) -> Option<bool> {
    let shown = text.trim().parse::<f64>().ok()?;
    record(emit, key, exact, shown);
    let ok = crate::stats::agrees_printed(exact, text);
    if !ok {
        mismatch(emit, at, key, exact, shown);
    }
    Some(ok)
}

/// Records a value recomputed from the records beside the one the file prints.
pub fn record(emit: &mut Emit, key: &str, exact: f64, shown: f64) {
    emit.recomputed(Recomputed::new(
        key.to_string(),
        Some(exact),
        Some(shown),
        None,
    ));
}

/// [`record`] of a row whose agreement the check judged itself, at a precision of its own (a
/// figure LoadGen writes to six significant digits in one file and to two decimals in the
/// other): the table says what the check found.
pub fn record_judged(emit: &mut Emit, key: &str, (exact, shown): (f64, f64), agrees: bool) {
    let mut row = Recomputed::new(key.to_string(), Some(exact), Some(shown), None);
    row.matches = agrees;
    emit.recomputed(row);
}

fn mismatch(emit: &mut Emit, at: (&str, &str), key: &str, exact: f64, shown: f64) {
    emit.finding(format!(
        "{key} is printed as {shown} but its records give {exact}"
    ))
    .at(at.0, at.1)
    .data(serde_json::json!({"printed": shown, "recomputed": exact}));
}

/// Whether a recomputed value agrees with a printed one: at the decimals it is written with, or
/// within a relative 1e-9 (a file that prints full floats, summed in another order).
pub fn close(exact: f64, shown: f64) -> bool {
    let scale = exact.abs().max(shown.abs()).max(1.0);
    (exact - shown).abs() <= 1e-9 * scale || agrees(exact, shown, written_decimals(shown))
}

/// The `q`-th percentile (0-100) by linear interpolation between the closest ranks (numpy's
/// default); `None` for no values. `sorted` must be sorted.
pub fn percentile_linear(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let idx = q / 100.0 * (n - 1) as f64;
    let lo = idx.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = idx - lo as f64;
    Some(sorted[lo] + frac * (sorted[hi] - sorted[lo]))
}

/// The population standard deviation (ddof 0); `None` for no values.
pub fn std_population(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let m = values.iter().sum::<f64>() / n;
    Some((values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt())
}

/// The sample standard deviation (ddof 1); `None` under two values.
pub fn std_sample(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let m = values.iter().sum::<f64>() / n;
    Some((values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0)).sqrt())
}
