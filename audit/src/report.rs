//! The one report model every command produces and every renderer reads. The verdict and what it
//! settled ([`qualifier`]) are decided here, once; the renderers only show them.

pub mod qualifier;

use crate::verdict::Comparison;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Context worth knowing; never fails a run by default.
    Info,
    /// Something a reader should question.
    Warning,
    /// A figure that is wrong or a step that is invalid.
    Error,
}

impl Severity {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding of one check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The check's stable id (`quality.refused-counted-as-wrong`).
    pub check: String,
    /// Severity of this finding (a check may report below its catalogue severity).
    pub severity: Severity,
    /// The bundle file the finding is about, relative to the bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// JSON pointer (or `line N` for JSON Lines) inside that file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// One sentence a person can act on.
    pub message: String,
    /// Machine-readable details (counts, expected and found values).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}

impl Finding {
    /// A finding with no file, pointer or data.
    pub fn new(check: &str, severity: Severity, message: impl Into<String>) -> Self {
        Finding {
            check: check.to_string(),
            severity,
            file: None,
            pointer: None,
            message: message.into(),
            data: serde_json::Value::Null,
        }
    }

    /// Sets the file.
    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Sets the pointer.
    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    /// Sets the details.
    pub fn data(mut self, data: serde_json::Value) -> Self {
        self.data = data;
        self
    }
}

/// What checks found: the ids that ran, the values recomputed, the findings in the order found
/// and the rows comparing a replay with its recording. Every command's stages fill one and
/// [`Findings::merge`] them; [`Report::new`] turns the result into the report.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// Ids of the checks that had what they needed and ran: sorted within a stage, stages in the
    /// order merged.
    pub ran: Vec<String>,
    /// Values recomputed from raw records.
    pub recomputed: Vec<Recomputed>,
    /// Findings, in the order found.
    pub findings: Vec<Finding>,
    /// A recorded bundle's figures beside its replay's.
    pub comparisons: Vec<Comparison>,
    /// What each replayed or running server mapped, per rank (`loaded.*` judges it).
    pub loaded: Vec<crate::records::LoadedRank>,
    /// Why the job could not be done (nothing could be checked, a stage could not run), when so:
    /// the report is then incomplete whatever it found.
    pub incomplete: Option<String>,
    /// The bound on the findings one check lists, when this collector has one.
    pub cap: Option<Cap>,
    /// Findings left out past the cap, per check: how many, and the highest severity among them.
    pub dropped: BTreeMap<String, (usize, Severity)>,
}

/// The most findings one check lists in a capped collector (an import, a bundle's schema); past
/// it they are counted, not listed.
pub const FINDINGS_PER_CHECK: usize = 200;

/// A bound on the findings one check lists: past `per_check` they are counted, and
/// [`Findings::list_dropped`] adds one finding per such check, worded by `note(id, more,
/// per_check)`, at the highest severity it left out.
#[derive(Debug, Clone, Copy)]
pub struct Cap {
    /// The most findings one check lists.
    pub per_check: usize,
    /// The words of the finding that counts the rest.
    pub note: fn(&str, usize, usize) -> String,
}

impl Cap {
    /// [`FINDINGS_PER_CHECK`], counted as "N more findings of this check are not listed".
    pub const PER_CHECK: Cap = Cap {
        per_check: FINDINGS_PER_CHECK,
        note: |_, more, per_check| {
            format!("{more} more findings of this check are not listed (the first {per_check} are)")
        },
    };
}

impl Findings {
    /// Records that a check ran (kept sorted within this stage).
    pub fn ran(&mut self, id: &str) {
        if let Err(i) = self.ran.binary_search_by(|x| x.as_str().cmp(id)) {
            self.ran.insert(i, id.to_string());
        }
    }

    /// Sorts the ids of the checks that ran, each once (a command whose stages or tables each ran
    /// some lists them all sorted).
    pub fn sort_ran(&mut self) {
        self.ran.sort();
        self.ran.dedup();
    }

    /// A collector that lists at most `cap.per_check` findings of one check.
    pub fn capped(cap: Cap) -> Self {
        Findings {
            cap: Some(cap),
            ..Findings::default()
        }
    }

    /// Adds a finding; past the cap of its check it is counted in `dropped` instead.
    pub fn push(&mut self, f: Finding) -> Mark<'_> {
        if let Some(cap) = self.cap {
            let listed = self.findings.iter().filter(|x| x.check == f.check).count();
            if listed >= cap.per_check {
                let e = self.dropped.entry(f.check).or_insert((0, f.severity));
                e.0 += 1;
                e.1 = e.1.max(f.severity);
                return Mark(None);
            }
        }
        self.findings.push(f);
        Mark(self.findings.last_mut())
    }

    /// Adds one finding per check that dropped some past the cap, saying how many.
    pub fn list_dropped(&mut self) {
        let Some(cap) = self.cap else { return };
        for (id, (n, severity)) in std::mem::take(&mut self.dropped) {
            let message = (cap.note)(&id, n, cap.per_check);
            self.findings.push(Finding::new(&id, severity, message));
        }
    }

    /// Adds what another stage found after what this one holds (the other's dropped counts
    /// listed at its end).
    pub fn merge(&mut self, mut other: Findings) {
        other.list_dropped();
        for id in other.ran {
            if !self.ran.contains(&id) {
                self.ran.push(id);
            }
        }
        self.recomputed.extend(other.recomputed);
        self.findings.extend(other.findings);
        self.comparisons.extend(other.comparisons);
        self.loaded.extend(other.loaded);
        if self.incomplete.is_none() {
            self.incomplete = other.incomplete;
        }
    }
}

/// The overall result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// No finding reaches the failure threshold.
    Pass,
    /// At least one finding reaches the failure threshold.
    Fail,
    /// Nothing could be checked, or the tool could not finish.
    Incomplete,
}

impl Verdict {
    /// As JSON spells it: `pass`, `fail`, `incomplete`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Incomplete => "incomplete",
        }
    }
}

/// A value recomputed from raw records, beside what the file and the page show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recomputed {
    /// Key (`decode`, `quality.mmlu-pro.pct`).
    pub key: String,
    /// The recomputed value, or `None` when there is no result.
    pub value: Option<f64>,
    /// What the raw file shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<f64>,
    /// What the page shows, as printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// Whether what the file and the page show agrees with the recomputed value
    /// ([`Recomputed::agrees`]), so a reader need not redo the rounding rule.
    #[serde(default)]
    pub matches: bool,
}

impl Recomputed {
    /// A row, with whether its shown figures agree with the value.
    pub fn new(key: String, value: Option<f64>, file: Option<f64>, page: Option<String>) -> Self {
        let matches = Recomputed::agrees(value, file, page.as_deref());
        Recomputed {
            key,
            value,
            file,
            page,
            matches,
        }
    }

    /// The rounding rule of the checks: every figure shown agrees with the recomputed value at
    /// its own precision (the file's number at the decimals it is written with, or equal; the
    /// page's text at the decimals it prints); a figure shown where there is no result, or a page
    /// text that is no number, does not. A row that shows nothing agrees.
    pub fn agrees(value: Option<f64>, file: Option<f64>, page: Option<&str>) -> bool {
        use crate::stats::{agrees, written_decimals};
        let Some(exact) = value else {
            return file.is_none() && page.is_none();
        };
        // A file that prints full floats agrees within a relative 1e-6: its number was summed
        // in another order or from rounded timestamps (AIPerf's benchmark_duration is 8e-8 s off
        // a recomputation from its records' nanoseconds); the checks hold each figure to its own
        // tolerance and report what is beyond it.
        let file_ok = file.is_none_or(|x| {
            let scale = exact.abs().max(x.abs());
            (exact - x).abs() <= 1e-6 * scale || agrees(exact, x, written_decimals(x))
        });
        let page_ok = page.is_none_or(|text| crate::stats::agrees_printed(exact, text));
        file_ok && page_ok
    }
}

/// The report of one run of rigaudit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// `rigaudit/report/1`.
    pub format: String,
    /// The command that produced it (`verify`, `rehash`, ...).
    pub command: String,
    /// The bundle's id, or its path when the manifest could not be read.
    pub bundle: String,
    /// Overall verdict.
    pub verdict: Verdict,
    /// What the verdict settled, in words (absent for a plain verdict): for a pass, what it rests
    /// on when that is less than a measurement checked against its records (`not gated (fail-on
    /// never): 36 errors, 0 warnings`, `3 of 22 values reproduced (...)`, `summary only: ...`);
    /// for an incomplete report, why (as `incomplete`). Decided with the verdict
    /// ([`qualifier`]); [`Report::qualified`] is the verdict with it, as every format leads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_qualifier: Option<String>,
    /// Why the verdict is incomplete (present only then): what could not be checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// Threshold that decides the verdict.
    pub fail_on: Option<Severity>,
    /// Count of findings by severity.
    pub counts: Counts,
    /// The checks that ran (ids).
    pub checks_run: Vec<String>,
    /// The values recomputed from raw records.
    pub recomputed: Vec<Recomputed>,
    /// Every finding, in the order found.
    pub findings: Vec<Finding>,
    /// A recorded bundle's figures beside its replay's (`replay` only; absent when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
    /// The raw files whose sha256 matched the manifest in full (verify, audit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// What each replayed or running server mapped, per rank: the executable and every
    /// file-backed mapping of it and its children, hashed (`replay`, `audit`, `rehash
    /// --running`; absent when nothing was read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded: Vec<crate::records::LoadedRank>,
    /// The policy applied, if any: its file and the findings it ignored, with its reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Applied>,
    /// The version of the rules (the catalogue) the report was judged by: `catalogue::version()`,
    /// set where a report leaves the tool (the report model sits below the catalogue).
    #[serde(default)]
    pub rules_version: String,
    /// The setup differences of two bundles (`diff` only; absent when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup_changes: Vec<crate::verdict::SetupChange>,
    /// The comparison rows counted by verdict (`replay` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_summary: Option<ReplaySummary>,
    /// The decision rule the comparison rows were judged by: its tolerance band per kind of
    /// figure and its multiplicity control (`replay`, `audit`, `diff`; absent elsewhere).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_rule: Vec<String>,
    /// The smallest difference each figure of the page could show, from its own repeated runs
    /// (`noise` only; absent when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<crate::verdict::NoiseRow>,
}

/// A raw file whose digest was verified: the subject of an attestation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// Path inside the bundle.
    pub path: String,
    /// Its sha256, hex.
    pub sha256: String,
}

/// What a verify found, before it is a report: the id of what was verified, the findings, and the
/// files whose digests were verified (the subjects of an attestation). A command that adds
/// stages to a verify (`audit`) merges their findings in and makes one report of it.
#[derive(Debug, Clone, Default)]
pub struct Verified {
    /// The bundle's id, or the files' names.
    pub id: String,
    /// What the checks found.
    pub found: Findings,
    /// The files whose digest was verified.
    pub artifacts: Vec<Artifact>,
}

impl Verified {
    /// The report of `command` over what was verified.
    pub fn report(self, command: &str, fail_on: Option<Severity>) -> Report {
        let mut report = Report::new(command, &self.id, fail_on, self.found);
        report.artifacts = self.artifacts;
        report
    }
}

/// The comparison rows of a replay counted by verdict, inconclusive ones also by reason, so a
/// replay too noisy to judge shows as such and not among the reproduced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// Rows reproduced.
    pub reproduced: usize,
    /// Rows drifted (informational ones included).
    pub drifted: usize,
    /// Rows inconclusive, for any reason.
    pub inconclusive: usize,
    /// Rows not comparable.
    pub not_comparable: usize,
    /// Rows for information only (other hardware).
    pub informational: usize,
    /// Inconclusive: the 90 % interval reaches across the edge of the tolerance band.
    #[serde(default)]
    pub wide_interval: usize,
    /// Inconclusive: the load guard saw foreign load.
    pub foreign_load: usize,
    /// Inconclusive: too few runs on a side.
    pub too_few_runs: usize,
    /// Inconclusive: a drift the confirming session did not repeat.
    pub sessions_disagree: usize,
    /// Inconclusive: only a headline figure on a side.
    pub headline_only: usize,
    /// Inconclusive: a drift the machine's speed reference explains.
    #[serde(default)]
    pub machine_speed: usize,
    /// Inconclusive: the replayed side's GPU throttled during a kept try.
    #[serde(default)]
    pub gpu_throttled: usize,
}

impl ReplaySummary {
    /// Counts the rows.
    pub fn of(rows: &[Comparison]) -> Self {
        use crate::verdict::{Inconclusive as I, ReplayVerdict as V};
        let mut s = ReplaySummary::default();
        for r in rows {
            match r.verdict {
                V::Reproduced | V::Unchanged => s.reproduced += 1,
                V::Drifted | V::Changed => s.drifted += 1,
                V::Inconclusive => s.inconclusive += 1,
                V::NotComparable => s.not_comparable += 1,
            }
            s.informational += usize::from(r.informational);
            match r.inconclusive {
                Some(I::WideInterval) => s.wide_interval += 1,
                Some(I::ForeignLoad) => s.foreign_load += 1,
                Some(I::TooFewRuns) => s.too_few_runs += 1,
                Some(I::SessionsDisagree) => s.sessions_disagree += 1,
                Some(I::HeadlineOnly) => s.headline_only += 1,
                Some(I::MachineSpeed) => s.machine_speed += 1,
                Some(I::GpuThrottled) => s.gpu_throttled += 1,
                None => {}
            }
        }
        s
    }

    /// The inconclusive rows counted by reason, in words: `2 interval across the band`, ...
    pub fn reasons(&self) -> Vec<String> {
        [
            (self.wide_interval, "interval across the band"),
            (self.foreign_load, "foreign load"),
            (self.too_few_runs, "too few runs"),
            (self.sessions_disagree, "sessions disagree"),
            (self.headline_only, "headline only"),
            (self.machine_speed, "machine speed"),
            (self.gpu_throttled, "GPU throttled"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect()
    }

    /// One line for people: `12 reproduced, 1 drifted, 3 inconclusive (2 interval across the
    /// band, 1 too few runs), 2 not comparable`; a diff's (`diff`) says unchanged and changed.
    pub fn line(&self, diff: bool) -> String {
        let why = self.reasons();
        let (same, moved) = if diff {
            ("unchanged", "changed")
        } else {
            ("reproduced", "drifted")
        };
        let mut line = format!(
            "{} {same}, {} {moved}, {} inconclusive",
            self.reproduced, self.drifted, self.inconclusive
        );
        if !why.is_empty() {
            line.push_str(&format!(" ({})", why.join(", ")));
        }
        line.push_str(&format!(", {} not comparable", self.not_comparable));
        if self.informational > 0 {
            line.push_str(&format!(
                "; {} for information only (other hardware)",
                self.informational
            ));
        }
        line
    }
}

/// Counts of findings by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Errors.
    pub error: usize,
    /// Warnings.
    pub warning: usize,
    /// Infos.
    pub info: usize,
}

impl Counts {
    /// The findings counted by severity.
    pub fn of(findings: &[Finding]) -> Self {
        let count = |severity| findings.iter().filter(|f| f.severity == severity).count();
        Counts {
            error: count(Severity::Error),
            warning: count(Severity::Warning),
            info: count(Severity::Info),
        }
    }
}

/// The id of the finding every incomplete report carries (its row is `coverage::INCOMPLETE`).
pub const INCOMPLETE: &str = "coverage.incomplete";

/// Why a run in which no check ran is incomplete, and what to add.
const NOTHING_RAN: &str = "no check had what it needs to run: give the files its checks read \
     (`rigaudit checks` lists each family and what it reads)";

impl Report {
    /// Whether the report compares two runs or setups (`diff`, `ab`): its rows speak of change
    /// (unchanged, changed, better or worse), its sides are A and B.
    pub fn compares_two(&self) -> bool {
        matches!(self.command.as_str(), "diff" | "ab")
    }

    /// Builds a report from what a command's stages found and decides its verdict, in this one
    /// place: incomplete when no check ran, a stage could not do its job
    /// ([`Findings::incomplete`]) or a replay settled nothing (no value reproduced or drifted on
    /// the card's hardware: [`qualifier::nothing_settled`]), with a [`INCOMPLETE`] finding saying
    /// why and what to add, else fail when a finding reaches `fail_on` (`None` never fails), else
    /// pass; and what the verdict settled ([`Report::verdict_qualifier`]).
    pub fn new(
        command: &str,
        bundle: &str,
        fail_on: Option<Severity>,
        mut found: Findings,
    ) -> Self {
        found.list_dropped();
        let Findings {
            ran,
            recomputed,
            findings,
            comparisons,
            incomplete,
            loaded,
            ..
        } = found;
        let failed = fail_on.is_some_and(|t| findings.iter().any(|f| f.severity >= t));
        let incomplete = match incomplete {
            Some(why) => Some(why),
            None if ran.is_empty() => Some(NOTHING_RAN.into()),
            // A failing replay fails (a drift, a failed step); one that would pass and settled
            // nothing is incomplete.
            None if failed => None,
            None => qualifier::nothing_settled(command, &comparisons),
        };
        let mut findings = findings;
        let said = findings.iter().any(|f| f.check == INCOMPLETE);
        if let (Some(why), false) = (&incomplete, said) {
            findings.push(Finding::new(
                INCOMPLETE,
                Severity::Warning,
                format!("not everything was checked: {why}"),
            ));
        }
        let counts = Counts::of(&findings);
        let verdict = if incomplete.is_some() {
            Verdict::Incomplete
        } else if failed {
            Verdict::Fail
        } else {
            Verdict::Pass
        };
        let mut report = Report {
            format: "rigaudit/report/1".into(),
            command: command.into(),
            bundle: bundle.into(),
            verdict,
            verdict_qualifier: None,
            incomplete,
            fail_on,
            counts,
            checks_run: ran,
            recomputed,
            findings,
            replay_summary: (!comparisons.is_empty()).then(|| ReplaySummary::of(&comparisons)),
            comparisons,
            rules_version: String::new(),
            policy: None,
            artifacts: Vec::new(),
            loaded,
            setup_changes: Vec::new(),
            decision_rule: Vec::new(),
            noise: Vec::new(),
        };
        report.qualify();
        report
    }

    /// Decides what the verdict settled ([`qualifier`]), after the verdict is (again) decided.
    pub(crate) fn qualify(&mut self) {
        self.verdict_qualifier = qualifier::of(self);
    }

    /// The verdict decided again over the findings as they are now (a policy re-graded or left
    /// some out): an incomplete report stays incomplete, but for one that was only because its
    /// replay settled nothing, which is decided again like the rest (fail when a finding reaches
    /// `fail_on`, else incomplete when the replay settled nothing, else pass); then what it
    /// settled.
    pub(crate) fn redecide(&mut self) {
        let settled_nothing = qualifier::nothing_settled(&self.command, &self.comparisons);
        let said = |why: &str| format!("not everything was checked: {why}");
        if let (Some(why), Verdict::Incomplete) = (&settled_nothing, self.verdict) {
            if self.incomplete.as_ref() == Some(why) {
                let finding = said(why);
                self.findings
                    .retain(|f| !(f.check == INCOMPLETE && f.message == finding));
                self.incomplete = None;
                self.verdict = Verdict::Pass;
            }
        }
        if self.verdict != Verdict::Incomplete {
            let failed = self
                .fail_on
                .is_some_and(|t| self.findings.iter().any(|f| f.severity >= t));
            self.verdict = if failed { Verdict::Fail } else { Verdict::Pass };
            if let (Verdict::Pass, Some(why)) = (self.verdict, settled_nothing) {
                self.findings
                    .push(Finding::new(INCOMPLETE, Severity::Warning, said(&why)));
                self.incomplete = Some(why);
                self.verdict = Verdict::Incomplete;
            }
        }
        self.counts = Counts::of(&self.findings);
        self.qualify();
    }

    /// The verdict as a person reads it first, with what it settled: `PASS, self-consistent
    /// only: 43 of 43 files reconstructed`, `PASS, not gated (fail-on never): 36 errors, 1
    /// warning`, `FAIL`, `INCOMPLETE: none of the artifacts ... was found` (the reason an
    /// incomplete report carries). Formats without a summary of their own (SARIF, JUnit,
    /// annotations, the Action's outputs) carry this line.
    pub fn qualified(&self) -> String {
        let word = self.verdict.name().to_ascii_uppercase();
        format!("{word}{}", self.qualifier_tail())
    }

    /// What follows the verdict's word on its line: `, QUALIFIER` for a pass, `: WHY` for an
    /// incomplete report, nothing for a plain verdict.
    pub fn qualifier_tail(&self) -> String {
        match (&self.verdict_qualifier, self.verdict) {
            (None, _) => String::new(),
            (Some(q), Verdict::Incomplete) => format!(": {q}"),
            (Some(q), _) => format!(", {q}"),
        }
    }

    /// The process exit code the verdict maps to: 0 pass, 1 fail, 3 incomplete (2 is the tool's
    /// own: a usage error, or an input given on the command line it could not read).
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Incomplete => 3,
        }
    }
}

/// What a policy did, for the report.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Applied {
    /// The policy file.
    pub file: String,
    /// Per ignored check: how many findings it left out, and why.
    pub ignored: Vec<Ignored>,
}

/// Findings a policy left out.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Ignored {
    /// The check.
    pub check: String,
    /// How many findings.
    pub findings: usize,
    /// The policy's reason.
    pub reason: String,
}

/// A finding just emitted, to place and detail; nothing when the collector only counted it (past
/// its per-check cap).
pub struct Mark<'a>(pub(crate) Option<&'a mut Finding>);

impl Mark<'_> {
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

    /// Sets the file when there is one.
    pub fn maybe_file(self, file: Option<&str>) -> Self {
        match file {
            Some(f) => self.file(f),
            None => self,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_matches_when_every_shown_figure_rounds_to_the_value() {
        let agrees = Recomputed::agrees;
        assert!(agrees(Some(28.46), Some(28.5), Some("28.5")));
        assert!(agrees(Some(28.46), None, Some("28")));
        assert!(!agrees(Some(28.46), Some(28.5), Some("28.6")));
        assert!(!agrees(Some(28.46), Some(28.4), None));
        assert!(agrees(Some(1.0 / 3.0), Some(1.0 / 3.0), None));
        assert!(!agrees(Some(28.46), None, Some("fast")));
        assert!(agrees(Some(5.0), None, None));
        assert!(agrees(None, None, None));
        assert!(!agrees(None, Some(0.0), None));
        assert!(!agrees(None, None, Some("0.0")));
        // A full float in the file: AIPerf's duration against its records' sum (8e-8 s apart),
        // but not a figure 0.01 % off.
        assert!(agrees(Some(14.708179026), Some(14.708178944), None));
        assert!(!agrees(Some(14.708179026), Some(14.709649), None));
        let row = Recomputed::new("decode".into(), Some(28.46), Some(28.5), None);
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["matches"], true);
    }

    #[test]
    fn a_verdict_is_named_as_json_spells_it() {
        for v in [Verdict::Pass, Verdict::Fail, Verdict::Incomplete] {
            assert_eq!(serde_json::to_value(v).unwrap(), v.name());
        }
    }

    #[test]
    fn an_incomplete_report_carries_a_finding_saying_why_and_what_to_add() {
        let nothing = Report::new("verify", "b", Some(Severity::Error), Findings::default());
        assert_eq!(nothing.verdict, Verdict::Incomplete);
        let f = &nothing.findings[0];
        assert_eq!(
            (f.check.as_str(), f.severity),
            (INCOMPLETE, Severity::Warning)
        );
        assert!(f
            .message
            .contains("no check had what it needs to run: give the files"));
        assert_eq!(nothing.counts.warning, 1);
        let mut found = Findings {
            incomplete: Some("no samples given: add samples_x.jsonl".into()),
            ..Findings::default()
        };
        found.ran("quality.cutoffs");
        let r = Report::new("verify", "b", Some(Severity::Error), found);
        assert_eq!(
            r.findings[0].message,
            "not everything was checked: no samples given: add samples_x.jsonl"
        );
        // A report made again from a report's findings says it once.
        let again = Findings {
            incomplete: nothing.incomplete.clone(),
            findings: nothing.findings.clone(),
            ..Findings::default()
        };
        let again = Report::new("audit", "b", Some(Severity::Error), again);
        assert_eq!(again.findings, nothing.findings);
        // A complete report has no such finding.
        let mut found = Findings::default();
        found.ran("quality.cutoffs");
        let r = Report::new("verify", "b", Some(Severity::Error), found);
        assert!(r.findings.is_empty());
    }
}
