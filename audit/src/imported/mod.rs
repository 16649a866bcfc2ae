//! Checks of result files written by the field's own benchmark tools (AIPerf, GuideLLM,
//! lm-evaluation-harness, MLPerf LoadGen, llama.cpp's llama-bench and server, vLLM's bench serve), as `rigaudit import` and `verify --from` read them.
//!
//! One file per tool, each with the tool's definitions at its top and one function per check.
//! Where a finding means the same as a bundle check (a printed aggregate that its records do not
//! give: `speed.recompute-mismatch`; cached prompt tokens: `speed.cached-tokens`; token counts not
//! from usage: `speed.token-source`; a percentage or count that the samples do not give:
//! `quality.pct-mismatch`), it uses that id; the ids below are for what only an imported file
//! shows. Nothing here reads a file: the CLI's readers (`src/import/`) parse the files into the
//! typed records of each module.
//!
//! Each id is written once, in its row below (or in its own family's row, such as
//! [`crate::speed::RECOMPUTE_MISMATCH`]); a check reports through [`Checked`] with its row
//! (`out.ran(&FAILED_HIDDEN)`, `out.finding(&FAILED_HIDDEN, msg).at(file, pointer)`, a lowered
//! `out.warning(..)`), so a finding carries the row's id and at most its severity.

use crate::check::{About, Check};
use crate::report::{Finding, Recomputed, Severity};
use crate::stats::{agrees, written_decimals};
use std::collections::{BTreeMap, BTreeSet};

pub mod aiperf;
pub mod compare;
pub mod guidellm;
pub mod llama_bench;
pub mod llama_server;
pub mod lm_eval;
pub mod loadgen;
pub mod vllm;

/// Which part of an imported run a row's check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The request counts the file prints, against its records.
    Counts,
    /// The per-request records (failed, errored, empty requests).
    Requests,
    /// The tool's own status of the run (cancelled, incomplete, invalid).
    Status,
    /// The raw streamed chunks of each request.
    Stream,
    /// The scored samples of an evaluation task.
    Samples,
    /// The aggregates the file prints.
    Aggregates,
    /// The tool's verdict and the parts it rests on.
    Verdict,
    /// The tool's log of errors and warnings.
    Log,
    /// The run's own settings.
    Settings,
}

/// `import.failed-hidden`.
pub const FAILED_HIDDEN: Check<Part> = Check {
    id: "import.failed-hidden",
    severity: Severity::Error,
    doc: "An imported file's request counts leave out failed or errored requests its own records show (dropped from every figure).",
    run: Part::Counts,
};

/// `import.failed-as-zero`.
pub const FAILED_AS_ZERO: Check<Part> = Check {
    id: "import.failed-as-zero",
    severity: Severity::Error,
    doc: "A failed, empty or zero-token request is counted inside an imported success figure (as zero latency, zero tokens or an answer).",
    run: Part::Requests,
};

/// `import.failed-requests`.
pub const FAILED_REQUESTS: Check<Part> = Check {
    id: "import.failed-requests",
    severity: Severity::Warning,
    doc: "Requests of an imported run failed, errored or were cancelled; its figures describe only the others.",
    run: Part::Requests,
};

/// `import.run-incomplete`.
pub const RUN_INCOMPLETE: Check<Part> = Check {
    id: "import.run-incomplete",
    severity: Severity::Error,
    doc: "The tool itself says the run was cancelled, incomplete or invalid.",
    run: Part::Status,
};

/// `import.ttft-empty-chunk`.
pub const TTFT_EMPTY_CHUNK: Check<Part> = Check {
    id: "import.ttft-empty-chunk",
    severity: Severity::Warning,
    doc: "A time to first token was taken at a streamed chunk that carried no generated text.",
    run: Part::Stream,
};

/// `import.empty-scored-wrong`.
pub const EMPTY_SCORED_WRONG: Check<Part> = Check {
    id: "import.empty-scored-wrong",
    severity: Severity::Error,
    doc: "An empty reply (a null or unparsable answer) is scored as a wrong answer; it is no answer and belongs out of the total.",
    run: Part::Samples,
};

/// `import.unscorable-reply`.
pub const UNSCORABLE_REPLY: Check<Part> = Check {
    id: "import.unscorable-reply",
    severity: Severity::Warning,
    doc: "Replies from which the task's filter extracted no answer are scored as wrong, and the file cannot tell which were cut off at the answer limit.",
    run: Part::Samples,
};

/// `import.stderr-mismatch`.
pub const STDERR_MISMATCH: Check<Part> = Check {
    id: "import.stderr-mismatch",
    severity: Severity::Error,
    doc: "A printed standard error is not the scores' sample standard deviation / sqrt(n).",
    run: Part::Aggregates,
};

/// `import.validity-mismatch`.
pub const VALIDITY_MISMATCH: Check<Part> = Check {
    id: "import.validity-mismatch",
    severity: Severity::Error,
    doc: "A tool's verdict (VALID, a rule said met) disagrees with the parts or the measured duration and count it rests on.",
    run: Part::Verdict,
};

/// `import.tool-errors`.
pub const TOOL_ERRORS: Check<Part> = Check {
    id: "import.tool-errors",
    severity: Severity::Error,
    doc: "The tool logged errors (error) or warnings (warning) during the run.",
    run: Part::Log,
};

/// `import.settings-below-rules`.
pub const SETTINGS_BELOW_RULES: Check<Part> = Check {
    id: "import.settings-below-rules",
    severity: Severity::Warning,
    doc: "A run's own settings are below the rules its tool's benchmark asks for (MLPerf: 600 s minimum duration).",
    run: Part::Settings,
};

/// `import.not-recomputable`.
pub const NOT_RECOMPUTABLE: Check<Part> = Check {
    id: "import.not-recomputable",
    severity: Severity::Info,
    doc: "An aggregate of an imported file that its records cannot give (they lack what it is made of); shown, not checked.",
    run: Part::Aggregates,
};

/// `import.*` checks.
pub const CHECKS: &[Check<Part>] = &[
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
];

/// What the checks of one imported run found.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// Ids of the checks that ran.
    pub checks_run: BTreeSet<String>,
    /// Values recomputed from the records, beside what the file prints.
    pub recomputed: Vec<Recomputed>,
    /// Findings.
    pub findings: Vec<Finding>,
    /// Findings left out past [`FINDINGS_PER_CHECK`] of one check: id -> (count, severity).
    pub dropped: BTreeMap<String, (usize, Severity)>,
}

/// The most findings one check lists for one import; past it they are counted, not listed.
pub const FINDINGS_PER_CHECK: usize = 200;

impl Checked {
    /// Marks a check as run.
    pub fn ran(&mut self, row: impl Into<About>) {
        self.checks_run.insert(row.into().id.to_string());
    }

    /// A finding of `row` at its catalogue severity (and marks the check as run); past
    /// [`FINDINGS_PER_CHECK`] of its check it is counted in `dropped` instead.
    pub fn finding(&mut self, row: impl Into<About>, message: impl Into<String>) -> Listed<'_> {
        let row = row.into();
        self.at_severity(row, row.severity, message)
    }

    /// A finding of `row` lowered to a warning.
    pub fn warning(&mut self, row: impl Into<About>, message: impl Into<String>) -> Listed<'_> {
        self.at_severity(row, Severity::Warning, message)
    }

    /// A finding of `row` lowered to info.
    pub fn info(&mut self, row: impl Into<About>, message: impl Into<String>) -> Listed<'_> {
        self.at_severity(row, Severity::Info, message)
    }

    /// A finding of `row` at a severity the check decides (never above its catalogue severity).
    pub fn at_severity(
        &mut self,
        row: impl Into<About>,
        severity: Severity,
        message: impl Into<String>,
    ) -> Listed<'_> {
        let row = row.into();
        debug_assert!(severity <= row.severity, "{} above its row", row.id);
        self.push(Finding::new(row.id, severity, message))
    }

    /// Adds a finding (and marks its check as run); past [`FINDINGS_PER_CHECK`] of its check it
    /// is counted in `dropped` instead.
    fn push(&mut self, f: Finding) -> Listed<'_> {
        self.checks_run.insert(f.check.clone());
        let listed = self.findings.iter().filter(|x| x.check == f.check).count();
        if listed >= FINDINGS_PER_CHECK {
            let e = self
                .dropped
                .entry(f.check.clone())
                .or_insert((0, f.severity));
            e.0 += 1;
            e.1 = e.1.max(f.severity);
            return Listed(None);
        }
        self.findings.push(f);
        Listed(self.findings.last_mut())
    }

    /// The findings with one more per check that dropped some, saying how many.
    pub fn listed(&self) -> Vec<Finding> {
        let mut out = self.findings.clone();
        for (id, (n, sev)) in &self.dropped {
            out.push(Finding::new(id, *sev, format!("{n} more findings of this check are not listed (the first {FINDINGS_PER_CHECK} are)")));
        }
        out
    }

    /// Compares a printed aggregate with the value recomputed from the records; a finding of
    /// `row` when they differ beyond the printed precision. Returns whether they agree.
    pub fn compare(
        &mut self,
        row: impl Into<About>,
        at: (&str, &str),
        key: &str,
        exact: f64,
        shown: f64,
    ) -> bool {
        let row = row.into();
        self.ran(row);
        self.recomputed.push(Recomputed {
            key: key.to_string(),
            value: Some(exact),
            file: Some(shown),
            page: None,
        });
        if close(exact, shown) {
            return true;
        }
        self.mismatch(row, at, key, exact, shown);
        false
    }

    /// [`Checked::compare`] for a figure printed as text: compared at the decimals the text
    /// shows (`0.50` at two), not those of its shortest float form.
    pub fn compare_text(
        &mut self,
        row: impl Into<About>,
        at: (&str, &str),
        key: &str,
        exact: f64,
        text: &str,
    ) {
        let Ok(shown) = text.trim().parse::<f64>() else {
            return;
        };
        let row = row.into();
        self.ran(row);
        self.recomputed.push(Recomputed {
            key: key.to_string(),
            value: Some(exact),
            file: Some(shown),
            page: None,
        });
        if !agrees(exact, shown, crate::stats::printed_decimals(text.trim())) {
            self.mismatch(row, at, key, exact, shown);
        }
    }

    fn mismatch(&mut self, row: About, at: (&str, &str), key: &str, exact: f64, shown: f64) {
        self.finding(
            row,
            format!("{key} is printed as {shown} but its records give {exact}"),
        )
        .at(at.0, at.1)
        .data(serde_json::json!({"printed": shown, "recomputed": exact}));
    }
}

/// A finding just added to a [`Checked`], to place and detail; nothing when it was only counted
/// (past [`FINDINGS_PER_CHECK`]).
pub struct Listed<'a>(Option<&'a mut Finding>);

impl Listed<'_> {
    /// Sets the file and the pointer inside it.
    pub fn at(self, file: impl Into<String>, pointer: impl Into<String>) -> Self {
        self.file(file).pointer(pointer)
    }

    /// Sets the file.
    pub fn file(self, file: impl Into<String>) -> Self {
        self.with(|f| f.file = Some(file.into()))
    }

    /// Sets the pointer.
    pub fn pointer(self, pointer: impl Into<String>) -> Self {
        self.with(|f| f.pointer = Some(pointer.into()))
    }

    /// Sets the machine-readable details.
    pub fn data(self, data: serde_json::Value) -> Self {
        self.with(|f| f.data = data)
    }

    fn with(mut self, set: impl FnOnce(&mut Finding)) -> Self {
        if let Some(f) = self.0.as_deref_mut() {
            set(f);
        }
        self
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_numpy_linear() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_linear(&v, 50.0), Some(2.5));
        assert_eq!(percentile_linear(&v, 0.0), Some(1.0));
        assert_eq!(percentile_linear(&v, 100.0), Some(4.0));
        assert!((percentile_linear(&v, 90.0).unwrap() - 3.7).abs() < 1e-12);
        assert_eq!(percentile_linear(&[], 50.0), None);
    }

    #[test]
    fn findings_of_one_check_are_counted_past_the_bound() {
        let mut c = Checked::default();
        for i in 0..FINDINGS_PER_CHECK + 5 {
            c.finding(&FAILED_AS_ZERO, format!("{i}"));
        }
        c.warning(&TOOL_ERRORS, "x");
        assert_eq!(c.findings.len(), FINDINGS_PER_CHECK + 1);
        let listed = c.listed();
        assert_eq!(listed.len(), FINDINGS_PER_CHECK + 2);
        assert!(listed
            .last()
            .unwrap()
            .message
            .starts_with("5 more findings"));
    }

    #[test]
    fn closeness_is_at_the_printed_precision() {
        assert!(close(1446.5398575454544, 1446.5398575454546));
        assert!(close(28.04, 28.0));
        assert!(!close(28.06, 28.0));
        assert!(!close(1446.53, 1446.6));
        assert_eq!(std_population(&[1.0, 3.0]), Some(1.0));
        assert!((std_sample(&[1.0, 3.0]).unwrap() - 2f64.sqrt()).abs() < 1e-12);
    }
}
