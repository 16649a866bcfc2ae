//! The verdict types of a replay: one [`Comparison`] row per figure, what it concluded
//! ([`ReplayVerdict`]) and why an inconclusive row is inconclusive ([`Inconclusive`]); and the
//! rows of `rigaudit noise` ([`NoiseRow`]): the smallest difference each figure of a page could
//! show, from its own repeated runs.
//!
//! They live at the ground with the report model, which carries the rows; `replay/` and `noise.rs`
//! make them.

use serde::{Deserialize, Serialize};

/// Why a row is inconclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Inconclusive {
    /// Fewer runs on a side than the test needs.
    TooFewRuns,
    /// Only a headline figure on a side, no per-run records.
    HeadlineOnly,
    /// The 90 % interval of the change reaches across the edge of the tolerance band: neither
    /// inside it (reproduced) nor a significant move beyond it (drifted).
    WideInterval,
    /// The load guard saw foreign load during a kept try of the step (a busy program on the CPU,
    /// or a process on the GPU that was not the server's).
    ForeignLoad,
    /// The replayed side's GPU throttled its clocks during a kept try of the step (a reason other
    /// than idle: a power cap, a thermal or hardware slowdown): a replay on a throttling GPU is
    /// not a drift of the engine.
    GpuThrottled,
    /// A drift the confirming session did not repeat.
    SessionsDisagree,
    /// A drift the machine's speed reference explains: the machine ran slower or faster as a whole.
    MachineSpeed,
}

/// What the comparison of one figure concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayVerdict {
    /// The replay agrees with the record: the 90 % interval of the change lies inside the
    /// tolerance band (equivalence).
    Reproduced,
    /// The replay differs: significant after multiplicity control over the report's rows, and
    /// the estimate beyond the band.
    Drifted,
    /// Neither: too little to test, or an interval across the band's edge.
    Inconclusive,
    /// The step is invalid or missing on a side.
    NotComparable,
    /// diff's word for reproduced: the figure did not change between the two runs (its 90 %
    /// interval inside the band).
    Unchanged,
    /// diff's word for drifted: the figure changed between the two runs.
    Changed,
}

impl Comparison {
    /// A row of `key` with its two figures and sample counts, their change and direction, not
    /// judged yet (not comparable, by no test, with no why).
    pub fn untested(
        key: impl Into<String>,
        (recorded, replayed): (Option<f64>, Option<f64>),
        (n_recorded, n_replayed): (usize, usize),
    ) -> Comparison {
        let change = change_pct(recorded, replayed);
        Comparison {
            key: key.into(),
            recorded,
            replayed,
            n_recorded,
            n_replayed,
            change_pct: change,
            p_value: None,
            test: "none".into(),
            verdict: ReplayVerdict::NotComparable,
            direction: direction(change),
            why: String::new(),
            informational: false,
            inconclusive: None,
            sd_recorded: None,
            sd_replayed: None,
            p_adjusted: None,
            interval90: None,
            band: None,
            runs_needed: None,
            runs_needed_replayed: None,
            runs_to_tell: None,
            warm_up_dropped: None,
            better: None,
            change_points: None,
            caveats: Vec::new(),
            unit_changes: Vec::new(),
        }
    }
}

/// 100 (b - a) / a, when both exist and `a` is not 0.
pub fn change_pct(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    let (a, b) = (a?, b?);
    (a != 0.0).then(|| 100.0 * (b - a) / a)
}

/// Whether a higher value of the figure `key` is better: rates, throughputs and quality scores;
/// times (first token, latencies, time per token, durations) are better lower.
pub fn higher_is_better(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ![
        "ttft",
        "time_to_first_token",
        "latency",
        "itl",
        "tpot",
        "e2el",
        "_ms",
        "duration",
    ]
    .iter()
    .any(|w| k.contains(w))
}

impl Comparison {
    /// The row's one change as a report shows it: points for a quality row the rule judged
    /// (`+2.0 pp`), else percent (`-54.9 %`); `None` when it has none (a row not comparable).
    pub fn change_shown(&self) -> Option<String> {
        let tenths = |v: f64| if v.abs() < 0.05 { 0.0 } else { v };
        match (self.change_points, self.change_pct) {
            (Some(p), _) => Some(format!("{:+.1} pp", tenths(p))),
            (None, Some(c)) => Some(format!("{:+.1} %", tenths(c))),
            (None, None) => None,
        }
    }
}

/// A diff's better/worse cell: `better`, `worse`, or `-` for a row that did not change.
pub fn better_word(better: Option<bool>) -> &'static str {
    match better {
        Some(true) => "better",
        Some(false) => "worse",
        None => "-",
    }
}

/// `up` or `down` by the sign of a change, when it moved.
pub fn direction(change: Option<f64>) -> Option<String> {
    change
        .filter(|c| *c != 0.0)
        .map(|c| if c > 0.0 { "up" } else { "down" }.to_string())
}

impl ReplayVerdict {
    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            ReplayVerdict::Reproduced => "reproduced",
            ReplayVerdict::Drifted => "drifted",
            ReplayVerdict::Inconclusive => "inconclusive",
            ReplayVerdict::NotComparable => "not-comparable",
            ReplayVerdict::Unchanged => "unchanged",
            ReplayVerdict::Changed => "changed",
        }
    }

    /// The same verdict in diff's words, about change between two runs: reproduced as
    /// unchanged, drifted as changed.
    pub fn as_change(self) -> ReplayVerdict {
        match self {
            ReplayVerdict::Reproduced => ReplayVerdict::Unchanged,
            ReplayVerdict::Drifted => ReplayVerdict::Changed,
            v => v,
        }
    }
}

/// Runs a side a step needs for a 90 % interval of the change within ±5 % and within ±10 %
/// (`0`: no number of runs can, the session spread alone is wider).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunsToTell {
    /// For ±5 %.
    pub pct5: usize,
    /// For ±10 %.
    pub pct10: usize,
}

impl RunsToTell {
    /// `6/3`, a dash for no number.
    fn cell(&self) -> String {
        let one = |n: usize| {
            if n == 0 {
                "–".to_string()
            } else {
                n.to_string()
            }
        };
        format!("{}/{}", one(self.pct5), one(self.pct10))
    }
}

/// The report's planning line over its speed rows: how many runs a side each step needs to tell
/// ±5 % / ±10 % at the spread measured (`decode 6/3, prefill.128 14/5`), the steps no number of
/// runs can settle named once at the end; `None` without a row that carries the figures.
pub fn runs_to_tell_line(rows: &[Comparison]) -> Option<String> {
    let planned: Vec<(&str, RunsToTell)> = rows
        .iter()
        .filter_map(|r| Some((r.key.as_str(), r.runs_to_tell?)))
        .collect();
    if planned.is_empty() {
        return None;
    }
    let head = "runs a side to tell ±5 % / ±10 % at the spread measured";
    let why = "(the session spread alone is wider: more sessions, or a wider band)";
    let (hopeless, counted): (Vec<_>, Vec<_>) = planned
        .iter()
        .partition(|(_, t)| t.pct5 == 0 && t.pct10 == 0);
    let steps = |n: usize| format!("{n} step{}", if n == 1 { "" } else { "s" });
    if counted.is_empty() {
        let n = hopeless.len();
        return Some(format!(
            "{head}: no number of runs, for any of the {} {why}",
            steps(n)
        ));
    }
    let listed: Vec<String> = counted
        .iter()
        .map(|(k, t)| format!("{k} {}", t.cell()))
        .collect();
    let mut line = format!("{head}: {}", listed.join(", "));
    if counted.iter().any(|(_, t)| t.pct5 == 0 || t.pct10 == 0) {
        line += " (–: no number of runs)";
    }
    if !hopeless.is_empty() {
        line += &format!(
            "; no number of runs for {} more {why}",
            steps(hopeless.len())
        );
    }
    Some(line)
}

/// One figure of the recorded bundle beside its replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The figure's key (`decode`, `decode.code`, `prefill.512`, `quality.mmlu-pro.pct`).
    pub key: String,
    /// The recorded figure, when the recorded side has one.
    pub recorded: Option<f64>,
    /// The replayed figure, when the replayed side has one.
    pub replayed: Option<f64>,
    /// Samples on the recorded side (runs, rounds, or answered questions).
    pub n_recorded: usize,
    /// Samples on the replayed side.
    pub n_replayed: usize,
    /// 100 (replayed - recorded) / recorded, when both exist and recorded is not 0.
    pub change_pct: Option<f64>,
    /// The test's two-sided p-value, when a test ran.
    pub p_value: Option<f64>,
    /// The test: `welch`, `two-proportion-z` or `none`.
    pub test: String,
    /// What the comparison concluded.
    pub verdict: ReplayVerdict,
    /// `up` or `down`: which way the figure moved, when it moved.
    pub direction: Option<String>,
    /// One sentence a person reads on why.
    pub why: String,
    /// Whether the row is for information only (speed measured on different hardware).
    pub informational: bool,
    /// Why an inconclusive row is inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<Inconclusive>,
    /// The sample standard deviation of the recorded side's runs (speed rows with two runs or
    /// more), in the figure's unit: what a plot draws as the recorded side's error bar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd_recorded: Option<f64>,
    /// The same of the replayed side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd_replayed: Option<f64>,
    /// The p-value after multiplicity control over the report's rows (the decision rule's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
    /// The 90 % interval of the change: percent for speed (of the ratio), points for quality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval90: Option<[f64; 2]>,
    /// The tolerance band's half-width: percent for speed, points for quality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<f64>,
    /// About this many runs a side would settle an inconclusive row at the spread measured
    /// (`0`: no number of runs, the session spread alone is too wide).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_needed: Option<usize>,
    /// About this many runs on the replayed side alone, the recorded side's as they are, would
    /// settle an inconclusive row (`0`: no number of runs): what `replay --runs auto` adds
    /// toward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_needed_replayed: Option<usize>,
    /// How many runs a side this step needs to tell a move of ±5 % and of ±10 % at the spread
    /// measured (speed rows with an interval; the decision rule's planning figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_to_tell: Option<RunsToTell>,
    /// Runs dropped from the start of each side's series as a warm-up transient before the
    /// comparison, `[recorded, replayed]` (MSER-5, `decide::steady::steady_part`; speed rows of 20
    /// runs or more on a side where one was found); `n_recorded` and `n_replayed` count the runs
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up_dropped: Option<[usize; 2]>,
    /// Whether B is better than A by the figure's direction (rates up, times down, quality up),
    /// for a row that moved; set by diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub better: Option<bool>,
    /// The change in points of a quality row the decision rule judged (replayed - recorded, B -
    /// A); such a row has no `change_pct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_points: Option<f64>,
    /// diff: what a side's own validity findings say of this row without stopping its comparison
    /// (`B: 2 empty replies scored as wrong`), each led by its side.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// ab: each ABBA quartet's change of B over A in percent, in time order (what the HTML
    /// report draws beside the interval).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unit_changes: Vec<f64>,
}

/// The subjects a setup difference belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Subject {
    /// Engine name, version, commit, patches, digests.
    Engine,
    /// NCCL version and digests.
    Nccl,
    /// Checkpoint repo, revision, digests.
    Checkpoint,
    /// A rank's command: executable, flags, positional arguments, environment.
    Command,
    /// What the server said at start: window, slots, KV cache, drafts, build.
    Server,
    /// Sampling defaults and what was sent.
    Sampling,
    /// Hardware, driver, kernel.
    Hardware,
    /// Speed and quality contracts.
    Contract,
    /// Free text: descriptions, deviations, notes, recipe.
    Text,
}

impl Subject {
    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Subject::Engine => "engine",
            Subject::Nccl => "nccl",
            Subject::Checkpoint => "checkpoint",
            Subject::Command => "command",
            Subject::Server => "server",
            Subject::Sampling => "sampling",
            Subject::Hardware => "hardware",
            Subject::Contract => "contract",
            Subject::Text => "text",
        }
    }
}

/// One difference of setup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupChange {
    /// What it is about.
    pub subject: Subject,
    /// What differs, for a person (`engine commit`, `rank 0 flag --parallel`).
    pub what: String,
    /// A's value (`absent` when A has none).
    pub a: String,
    /// B's value.
    pub b: String,
    /// Where A records it: file and JSON pointer.
    pub where_a: String,
    /// Where B records it.
    pub where_b: String,
}

impl SetupChange {
    /// Where A and B record it, for people: the place once when both record it there, the
    /// file once when both record it in one (`card.json /commands/1/env; /commands/0/env`),
    /// else `A's; B's`.
    pub fn places(&self) -> String {
        let (a, b) = (&self.where_a, &self.where_b);
        if a == b {
            return a.clone();
        }
        match (a.split_once(' '), b.split_once(' ')) {
            (Some((fa, _)), Some((fb, pointers))) if fa == fb => format!("{a}; {pointers}"),
            _ => format!("{a}; {b}"),
        }
    }
}

/// What `rigaudit noise` could measure a figure's noise from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseBasis {
    /// Two runs or more of a speed step (rounds, for throughput): their spread measured.
    Runs,
    /// The answered questions of a quality test.
    Questions,
    /// One run: no spread measured.
    OneRun,
    /// A headline figure only, no per-run records.
    HeadlineOnly,
    /// No value: no counted run or answered question gave one.
    NoValue,
}

impl NoiseBasis {
    /// Whether the figure's smallest difference could be told from it.
    pub fn told(self) -> bool {
        matches!(self, NoiseBasis::Runs | NoiseBasis::Questions)
    }
}

/// The smallest difference a speed figure could show, from its step's runs: the 90 % interval of
/// the log ratio of two sessions of as many runs at no change, as a percent of the ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpeedNoise {
    /// The runs' spread: the standard deviation of their logs, in percent (about their CV).
    pub log_sd_pct: f64,
    /// The decision rule's declared session spread σs of this kind of figure, in percent.
    pub session_sd_pct: f64,
    /// Half-width of the 90 % interval between two sessions of this many runs each, the
    /// declared session spread included: a smaller difference cannot be told.
    pub half_width_pct: f64,
    /// The same within one session: the runs' spread only.
    pub half_width_within_pct: f64,
    /// Runs a side that would tell ±5 % / ±10 % between two sessions (0: no number of runs, the
    /// session spread alone is wider).
    pub runs_to_tell: RunsToTell,
    /// Runs a side that would tell ±5 % / ±10 % within one session.
    pub runs_to_tell_within: RunsToTell,
}

/// The smallest difference a quality figure could show, in points, from its answered questions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualityNoise {
    /// Distinct questions answered.
    pub questions: usize,
    /// Half-width of the 90 % interval of the difference of two unpaired runs over this many
    /// questions at this score, in points.
    pub half_width_unpaired_points: f64,
    /// Questions answered more than once (repeated trials).
    pub repeated_questions: usize,
    /// The share of repeated questions whose correctness differs between their trials, in
    /// percent; absent when no question was answered twice (it cannot be measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flip_rate_pct: Option<f64>,
    /// Half-width of the 90 % interval of a paired comparison over these questions at the
    /// measured flip rate, in points (never under one question); absent without a flip rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width_paired_points: Option<f64>,
    /// The decision rule's quality band, in points.
    pub band_points: f64,
    /// The largest flip rate (percent) at which a paired comparison over these questions tells
    /// the band.
    pub flip_rate_for_band_pct: f64,
    /// Questions a paired comparison needs to tell the band at the measured flip rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub questions_for_band: Option<u64>,
}

/// One figure of a page with the smallest difference its own repeated runs say it could show
/// (`rigaudit noise`), or what cannot be told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseRow {
    /// The figure's key (`decode.code`, `prefill.512`, `quality.arith.pct`).
    pub key: String,
    /// The figure: recomputed from the records, else the page's headline.
    pub value: Option<f64>,
    /// Runs (rounds) of a speed step, answered records of a quality test.
    pub n: usize,
    /// What its noise was measured from, or why it could not be.
    pub basis: NoiseBasis,
    /// A speed figure's numbers, when its runs' spread was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<SpeedNoise>,
    /// A quality figure's numbers, when questions were answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<QualityNoise>,
    /// One sentence a person reads.
    pub why: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(key: &str, pct5: usize, pct10: usize) -> Comparison {
        Comparison {
            runs_to_tell: Some(RunsToTell { pct5, pct10 }),
            ..Comparison::untested(key, (Some(1.0), Some(1.0)), (4, 4))
        }
    }

    #[test]
    fn the_planning_line_lists_steps_with_a_number_and_counts_the_rest() {
        let rows = [
            planned("decode", 6, 3),
            planned("prefill.128", 0, 5),
            planned("ttft.128", 0, 0),
            Comparison::untested("quality.mmlu.pct", (Some(50.0), Some(51.0)), (24, 24)),
        ];
        let line = runs_to_tell_line(&rows).unwrap();
        assert_eq!(
            line,
            "runs a side to tell ±5 % / ±10 % at the spread measured: decode 6/3, prefill.128 –/5 (–: no number of runs); no number of runs for 1 step more (the session spread alone is wider: more sessions, or a wider band)"
        );
        let hopeless = runs_to_tell_line(&rows[2..]).unwrap();
        assert!(
            hopeless.contains("no number of runs, for any of the 1 step ("),
            "{hopeless}"
        );
        assert_eq!(runs_to_tell_line(&rows[3..]), None);
    }

    #[test]
    fn a_setup_change_names_a_shared_place_or_file_once() {
        let change = |a: &str, b: &str| SetupChange {
            subject: Subject::Engine,
            what: "card engine.commit".into(),
            a: "1".into(),
            b: "2".into(),
            where_a: a.into(),
            where_b: b.into(),
        };
        let at = "card.json /engine/commit";
        assert_eq!(change(at, at).places(), at);
        let ranks = change("card.json /commands/1/env", "card.json /commands/0/env");
        assert_eq!(ranks.places(), "card.json /commands/1/env; /commands/0/env");
        let files = change("a.json /x", "b.json /x");
        assert_eq!(files.places(), "a.json /x; b.json /x");
    }
}
