//! What each side's own validity findings do to a diff (issue 38): a run that lost requests is
//! never "better".
//!
//! `diff` runs verify's own checks on each side (a bundle's [`crate::verify()`], another tool's
//! format checks) and keeps the findings of the checks in [`RULES`] at warning or error (a note is
//! context, not a fault of the run): each is carried into the diff report under its own check
//! id, its message led by its side (`B: 3 of 12 requests failed ...`) and `side` in its data, at
//! warning (an error of the side's own verify included: the diff judges what changed between the
//! two runs, `verify` of a side judges that side; `--fail-on warning`, or a policy's severity for
//! the check, gates on them). Each rule then names the rows of that side it touches and what it
//! does to them:
//!
//! - **not comparable**: the side's figure does not describe the run the other side's describes
//!   (requests lost and left out of it, replies cut before their cap, records missing). The row
//!   is `not-comparable`, its reason naming the side and the finding; it has no change, no test
//!   and no better or worse.
//! - **caveat**: the figure still describes the run but something in it is worth saying beside
//!   the change (foreign load, refused requests a score counted as wrong and the diff left out,
//!   empty or unscorable replies, a subset of the documents). The row keeps its verdict; its
//!   `caveats` and reason name the side and the finding.
//! - **one-sided**: not comparable when only one side has it, a caveat when both do (servers
//!   that served cached prompt tokens on both runs, or a tool that calls both runs incomplete or
//!   invalid, as LoadGen's INVALID, are compared like for like).
//!
//! The rows a rule touches: every speed row (rates, times and their percentiles), the TTFT rows,
//! the TTFT and prefill rows, every quality row, or every row. A bundle's finding narrows them
//! where it points: a speed request or `fits` row to the rows of its step, a file under
//! `quality/TEST/` to that test's row ([`Narrow`]). Not-comparable wins over caveats on one row.
//! A diff whose every figure is not comparable compared nothing ([`nothing_comparable`]): it is
//! incomplete.

use crate::report::{Finding, Findings, Severity};
use crate::verdict::{Comparison, ReplayVerdict};
use serde_json::{json, Value};

/// One side of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The first run.
    A,
    /// The second run.
    B,
}

impl Side {
    /// `A` or `B`.
    pub fn name(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
        }
    }
}

/// The rows of a side a validity finding touches (before a bundle's pointer narrows them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Every speed row: rates, times and their percentiles.
    Speed,
    /// The time-to-first-token rows.
    Ttft,
    /// The time-to-first-token and prefill rows (what cached prompt tokens speed up).
    Prefill,
    /// Every quality row.
    Quality,
    /// Every row.
    All,
}

/// What a validity finding does to the rows it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The row is not comparable: the side's figure is not of the run the other's is.
    NotComparable,
    /// The row keeps its verdict, with the finding said beside it.
    Caveat,
    /// Not comparable when only one side has a finding of the check, a caveat when both do.
    OneSided,
}

impl Effect {
    /// `not-comparable` or `caveat`.
    pub fn name(self) -> &'static str {
        match self {
            Effect::NotComparable => "not-comparable",
            Effect::Caveat => "caveat",
            Effect::OneSided => "not-comparable-unless-both",
        }
    }
}

/// One row of the rule: a check of verify, what its finding means for a run (`lost requests`),
/// the rows it touches, and what it does to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The check's id.
    pub check: &'static str,
    /// What a finding of it says of the side, after the side's letter (`B lost requests`).
    pub what: &'static str,
    /// The rows it touches.
    pub rows: Rows,
    /// What it does to them.
    pub effect: Effect,
}

const fn rule(check: &'static str, what: &'static str, rows: Rows, effect: Effect) -> Rule {
    Rule {
        check,
        what,
        rows,
        effect,
    }
}

use Effect::{Caveat, NotComparable, OneSided};
use Rows::{All, Prefill, Quality, Speed, Ttft};

/// The rule: every validity check of verify whose findings a diff carries, and what each does to
/// the rows of its side (docs/statistics.md, "A side's own validity findings").
pub const RULES: &[Rule] = &[
    // Requests lost: the figures describe only the requests that succeeded.
    rule(
        "speed.failed-request",
        "lost requests",
        Speed,
        NotComparable,
    ),
    rule(
        "import.failed-requests",
        "lost requests",
        Speed,
        NotComparable,
    ),
    rule(
        "import.failed-hidden",
        "hid lost requests",
        Speed,
        NotComparable,
    ),
    rule(
        "import.failed-as-zero",
        "counted lost requests as values",
        All,
        NotComparable,
    ),
    rule(
        "import.run-incomplete",
        "is an incomplete run",
        All,
        OneSided,
    ),
    rule(
        "import.records-missing",
        "lacks records",
        All,
        NotComparable,
    ),
    // Steps that could not be served as the contract asks.
    rule(
        "speed.step-exceeds-window",
        "has a step beyond the window",
        Speed,
        NotComparable,
    ),
    rule(
        "speed.cached-tokens",
        "served cached prompt tokens",
        Prefill,
        OneSided,
    ),
    rule(
        "speed.reply-not-at-limit",
        "has replies cut before their cap",
        Speed,
        NotComparable,
    ),
    rule(
        "import.cached-responses",
        "answered from a response cache",
        Quality,
        OneSided,
    ),
    rule(
        "import.zero-unparseable",
        "has no parseable reply",
        Quality,
        NotComparable,
    ),
    rule(
        "import.non-finite-score",
        "has a score that is not a number",
        Quality,
        NotComparable,
    ),
    // Worth saying beside the change.
    rule(
        "quality.refused-counted-as-wrong",
        "had refused requests (left out here)",
        Quality,
        Caveat,
    ),
    rule(
        "import.empty-scored-wrong",
        "scored empty replies as wrong",
        Quality,
        Caveat,
    ),
    rule(
        "import.unscorable-reply",
        "scored unscorable replies as wrong",
        Quality,
        Caveat,
    ),
    rule(
        "import.subset-of-dataset",
        "scored a subset of the documents",
        Quality,
        Caveat,
    ),
    rule(
        "import.ttft-empty-chunk",
        "timed first tokens at empty chunks",
        Ttft,
        Caveat,
    ),
    rule(
        "import.reasoning-only-replies",
        "counted reasoning-only replies",
        Speed,
        Caveat,
    ),
    rule("speed.load-guard", "ran beside foreign load", Speed, Caveat),
    rule(
        "speed.gpu-foreign",
        "ran beside a foreign GPU process",
        Speed,
        Caveat,
    ),
    rule(
        "speed.gpu-throttled",
        "ran on a throttled GPU",
        Speed,
        Caveat,
    ),
];

/// The rule of a check, when the diff carries its findings.
pub fn rule_of(check: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.check == check)
}

/// The kind of a diff row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// A rate, a time, or a percentile of times.
    Speed,
    /// A score.
    Quality,
}

/// Whether a row is of a time to first token (`ttft.512`, `aiperf.time_to_first_token.p50`,
/// `vllm.ttft_ms`).
fn is_ttft(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("ttft") || k.contains("time_to_first_token")
}

/// Whether rows of `rows` include the row `key` of kind `figure`.
pub fn covers(rows: Rows, key: &str, figure: Figure) -> bool {
    match rows {
        Rows::Speed => figure == Figure::Speed,
        Rows::Ttft => figure == Figure::Speed && is_ttft(key),
        Rows::Prefill => {
            figure == Figure::Speed
                && (is_ttft(key) || key.to_ascii_lowercase().contains("prefill"))
        }
        Rows::Quality => figure == Figure::Quality,
        Rows::All => true,
    }
}

/// One side's carried finding: its side, its rule, and the finding as the side's verify gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Carried {
    /// The side.
    pub side: Side,
    /// Its rule.
    pub rule: &'static Rule,
    /// The finding of the side's own check.
    pub finding: Finding,
}

impl Carried {
    /// The finding as the diff report lists it: its check, file and pointer kept, at warning,
    /// its message led by the side, `side`, the effect and the side's own severity in its data.
    pub fn labelled(&self) -> Finding {
        let f = &self.finding;
        let mut data = match &f.data {
            Value::Object(m) => Value::Object(m.clone()),
            Value::Null => json!({}),
            other => json!({ "data": other }),
        };
        data["side"] = json!(self.side.name());
        data["diff_effect"] = json!(self.rule.effect.name());
        data["side_severity"] = json!(f.severity.name());
        Finding {
            severity: Severity::Warning,
            message: format!("{}: {}", self.side.name(), f.message),
            data,
            ..f.clone()
        }
    }

    /// The finding in a row's words: `B lost requests: 3 of 12 requests failed (3 x Bad Request)
    /// (import.failed-requests)`; the message up to its first `; `, at most [`SAID_MAX`] chars.
    pub fn said(&self) -> String {
        let m = &self.finding.message;
        let first = m.split("; ").next().unwrap_or(m);
        let first = match first.char_indices().nth(SAID_MAX) {
            Some((i, _)) => format!("{}…", &first[..i]),
            None => first.to_string(),
        };
        format!(
            "{} {}: {first} ({})",
            self.side.name(),
            self.rule.what,
            self.rule.check
        )
    }
}

/// The most characters of a finding's message a row repeats.
pub const SAID_MAX: usize = 120;

/// The findings of one side's own checks that the diff carries: those of [`RULES`]' checks at
/// warning or error, in the order found.
pub fn carried(side: Side, found: &Findings) -> Vec<Carried> {
    found
        .findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .filter_map(|f| {
            Some(Carried {
                side,
                rule: rule_of(&f.check)?,
                finding: f.clone(),
            })
        })
        .collect()
}

/// Whether a side's finding touches a row, where the side's records can tell (a bundle's pointer
/// at a request of a step, a file under a quality test's folder): `Some(touches)`, or `None` to
/// go by the rule's rows.
pub type Narrow<'a> = dyn Fn(&Carried, &str) -> Option<bool> + 'a;

/// Adds the carried findings to a diff's findings (their checks counted as run).
pub fn report(carried: &[Carried], found: &mut Findings) {
    for c in carried {
        found.ran(c.rule.check);
        found.findings.push(c.labelled());
    }
}

/// Marks one row by the carried findings that touch it: not comparable when one of them makes it
/// so (its reason names each such finding; the change, test, interval and better or worse
/// dropped), else each caveat said in `caveats` and after its reason. A row already not
/// comparable (its own step invalid on a side) keeps its own reason. `figure` is the row's kind,
/// `narrow` what a side's records tell of which rows a finding touches.
pub fn mark(row: &mut Comparison, figure: Figure, carried: &[Carried], narrow: &Narrow) {
    if row.verdict == ReplayVerdict::NotComparable {
        // Its own step is invalid on a side, and its reason says so (with status and error).
        return;
    }
    let touching: Vec<&Carried> = carried
        .iter()
        .filter(|c| narrow(c, &row.key).unwrap_or_else(|| covers(c.rule.rows, &row.key, figure)))
        .collect();
    let effect = |c: &Carried| match c.rule.effect {
        Effect::OneSided if both_sides(carried, c.rule.check) => Effect::Caveat,
        Effect::OneSided => Effect::NotComparable,
        e => e,
    };
    let not_comparable: Vec<String> = touching
        .iter()
        .filter(|c| effect(c) == Effect::NotComparable)
        .map(|c| c.said())
        .collect();
    if !not_comparable.is_empty() {
        not_comparable_row(row, &not_comparable);
        return;
    }
    for c in touching {
        row.caveats.push(c.said());
    }
    if !row.caveats.is_empty() {
        row.why = format!("{}; caveat: {}", row.why, row.caveats.join("; "));
    }
}

/// Whether both sides carry a finding of `check`.
fn both_sides(carried: &[Carried], check: &str) -> bool {
    [Side::A, Side::B].iter().all(|s| {
        carried
            .iter()
            .any(|c| c.side == *s && c.rule.check == check)
    })
}

/// How the reason of a row [`mark`] made not comparable begins.
pub const LEAD: &str = "not comparable: ";

/// Whether [`mark`] made the row not comparable (its sides' findings, not its own step).
pub fn marked(row: &Comparison) -> bool {
    row.verdict == ReplayVerdict::NotComparable && row.why.starts_with(LEAD)
}

/// Why a diff whose every figure row is not comparable compared nothing (the report is then
/// incomplete): the count and the first row's reason; `None` when a row was compared or there is
/// none.
pub fn nothing_comparable(rows: &[Comparison]) -> Option<String> {
    let first = rows.first()?;
    if rows
        .iter()
        .any(|r| r.verdict != ReplayVerdict::NotComparable)
    {
        return None;
    }
    // The first reason of the first row, the others counted.
    let reasons: Vec<&str> = first
        .why
        .strip_prefix(LEAD)
        .unwrap_or(&first.why)
        .split("; ")
        .collect();
    let why = match reasons.len() {
        1 => reasons[0].to_string(),
        n => format!("{} and {} more", reasons[0], n - 1),
    };
    let n = rows.len();
    let all = match n {
        1 => "the one figure is".to_string(),
        _ => format!("all {n} figures are"),
    };
    Some(format!(
        "no figure could be compared: {all} not comparable (first, {}: {why}); compare runs that `rigaudit verify` finds valid",
        first.key
    ))
}

/// A row made not comparable by its sides' findings: it keeps its two figures, loses every
/// judged number.
fn not_comparable_row(row: &mut Comparison, said: &[String]) {
    row.verdict = ReplayVerdict::NotComparable;
    row.why = format!("{LEAD}{}", dedup(said).join("; "));
    row.change_pct = None;
    row.change_points = None;
    row.direction = None;
    row.p_value = None;
    row.p_adjusted = None;
    row.test = "none".into();
    row.interval90 = None;
    row.inconclusive = None;
    row.runs_needed = None;
    row.runs_needed_replayed = None;
    row.runs_to_tell = None;
    row.better = None;
    row.caveats.clear();
}

/// The lines once each, in order.
fn dedup(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in lines {
        if !out.contains(l) {
            out.push(l.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(check: &str, severity: Severity, message: &str) -> Finding {
        Finding::new(check, severity, message).data(json!({"failed": 3}))
    }

    fn side_b(findings: Vec<Finding>) -> Vec<Carried> {
        carried(
            Side::B,
            &Findings {
                findings,
                ..Findings::default()
            },
        )
    }

    fn judged(key: &str) -> Comparison {
        let mut r = Comparison::untested(key, (Some(131.5), Some(51.0)), (12, 9));
        r.verdict = ReplayVerdict::Changed;
        r.change_pct = Some(-54.9);
        r.better = Some(true);
        r.p_value = Some(0.002);
        r.why = "90 % interval -69.3 % to -33.7 %".into();
        r
    }

    const LOST: &str =
        "3 of 12 requests failed (3 x Bad Request); vLLM's figures are over the other 9";

    #[test]
    fn only_validity_findings_at_warning_or_error_are_carried_each_led_by_its_side() {
        let c = side_b(vec![
            finding("import.failed-requests", Severity::Warning, LOST),
            finding(
                "import.percentile-few-samples",
                Severity::Warning,
                "p99 of 9",
            ),
            finding("quality.cutoffs", Severity::Info, "cut off"),
            finding(
                "speed.step-exceeds-window",
                Severity::Info,
                "not sent, as it should",
            ),
        ]);
        assert_eq!(c.len(), 1, "{c:?}");
        let f = c[0].labelled();
        assert_eq!(f.check, "import.failed-requests");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            f.message.starts_with("B: 3 of 12 requests failed"),
            "{}",
            f.message
        );
        assert_eq!(f.data["side"], "B");
        assert_eq!(f.data["failed"], 3);
        assert_eq!(f.data["diff_effect"], "not-comparable");
    }

    #[test]
    fn a_side_that_lost_requests_makes_its_speed_rows_not_comparable_never_better() {
        let c = side_b(vec![finding(
            "import.failed-requests",
            Severity::Warning,
            LOST,
        )]);
        let mut row = judged("vllm.tpot_ms");
        mark(&mut row, Figure::Speed, &c, &|_, _| None);
        assert_eq!(row.verdict, ReplayVerdict::NotComparable);
        assert_eq!(row.better, None);
        assert_eq!((row.change_pct, row.p_value), (None, None));
        assert_eq!(
            row.why,
            "not comparable: B lost requests: 3 of 12 requests failed (3 x Bad Request) (import.failed-requests)"
        );
        assert_eq!(row.change_shown(), None);
        // The figures stay, so the reader sees what each side printed.
        assert_eq!((row.recorded, row.replayed), (Some(131.5), Some(51.0)));
        // A quality row of the same side is not touched by lost speed requests.
        let mut q = judged("lm-eval.arith.acc");
        mark(&mut q, Figure::Quality, &c, &|_, _| None);
        assert_eq!(q.verdict, ReplayVerdict::Changed);
    }

    #[test]
    fn a_caveat_keeps_the_verdict_and_is_said_beside_it() {
        let c = side_b(vec![finding(
            "import.ttft-empty-chunk",
            Severity::Warning,
            "2 TTFTs taken at empty chunks",
        )]);
        let mut ttft = judged("aiperf.time_to_first_token");
        mark(&mut ttft, Figure::Speed, &c, &|_, _| None);
        assert_eq!(ttft.verdict, ReplayVerdict::Changed);
        assert_eq!(ttft.caveats.len(), 1);
        assert!(ttft.why.ends_with("; caveat: B timed first tokens at empty chunks: 2 TTFTs taken at empty chunks (import.ttft-empty-chunk)"), "{}", ttft.why);
        let mut latency = judged("aiperf.request_latency");
        mark(&mut latency, Figure::Speed, &c, &|_, _| None);
        assert!(latency.caveats.is_empty());
    }

    #[test]
    fn a_narrowing_side_decides_which_rows_its_finding_touches() {
        let c = side_b(vec![finding(
            "speed.failed-request",
            Severity::Error,
            "l1: refused",
        )]);
        // An error of the side's own verify is a warning of the diff, its severity kept in data.
        let f = c[0].labelled();
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.data["side_severity"], "error");
        let only_l1 = |_: &Carried, key: &str| Some(key == "l1_decode");
        let mut decode = judged("decode");
        mark(&mut decode, Figure::Speed, &c, &only_l1);
        assert_eq!(decode.verdict, ReplayVerdict::Changed);
        let mut l1 = judged("l1_decode");
        mark(&mut l1, Figure::Speed, &c, &only_l1);
        assert_eq!(l1.verdict, ReplayVerdict::NotComparable);
    }

    #[test]
    fn cached_prompt_tokens_on_one_side_make_its_first_token_rows_not_comparable_on_both_a_caveat()
    {
        let cached = |side| Carried {
            side,
            rule: rule_of("speed.cached-tokens").unwrap(),
            finding: finding(
                "speed.cached-tokens",
                Severity::Error,
                "10 of 12 requests cached",
            ),
        };
        let one = vec![cached(Side::B)];
        let both = vec![cached(Side::A), cached(Side::B)];
        let marked = |key: &str, carried: &[Carried]| {
            let mut r = judged(key);
            mark(&mut r, Figure::Speed, carried, &|_, _| None);
            r
        };
        let ttft = marked("aiperf.time_to_first_token", &one);
        assert_eq!(ttft.verdict, ReplayVerdict::NotComparable, "{}", ttft.why);
        let prefill = marked("aiperf.prefill_throughput_per_user", &one);
        assert_eq!(prefill.verdict, ReplayVerdict::NotComparable);
        assert!(marked("aiperf.inter_token_latency", &one)
            .caveats
            .is_empty());
        let ttft = marked("aiperf.time_to_first_token", &both);
        assert_eq!(ttft.verdict, ReplayVerdict::Changed);
        assert_eq!(ttft.caveats.len(), 2, "{:?}", ttft.caveats);
    }

    #[test]
    fn docs_statistics_md_tables_every_rule_as_it_is() {
        let doc = include_str!("../../../docs/statistics.md");
        for r in RULES {
            let rows = match r.rows {
                Rows::Speed => "speed",
                Rows::Ttft => "TTFT",
                Rows::Prefill => "TTFT and prefill",
                Rows::Quality => "quality",
                Rows::All => "all",
            };
            let effect = match r.effect {
                Effect::NotComparable => "not comparable",
                Effect::Caveat => "caveat",
                Effect::OneSided => "one-sided",
            };
            let line = format!("| `{}` | {} | {rows} | {effect} |", r.check, r.what);
            assert!(doc.contains(&line), "docs/statistics.md lacks: {line}");
        }
    }

    #[test]
    fn every_rule_names_a_check_of_the_catalogue_once() {
        let known: Vec<&str> = crate::table::all().iter().map(|a| a.id).collect();
        for (i, r) in RULES.iter().enumerate() {
            assert!(known.contains(&r.check), "{} is no check", r.check);
            assert!(
                RULES[..i].iter().all(|x| x.check != r.check),
                "{} twice",
                r.check
            );
        }
    }
}
