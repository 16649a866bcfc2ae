//! What a verdict settled, in words, decided once with the verdict ([`super::Report::new`], and
//! again when a policy re-decides it) and carried by the report as `verdict_qualifier`; every
//! format renders it, none computes it:
//!
//! - a **PASS** says what it rests on when that is less than a measurement checked against its
//!   records: the gate was off (`not gated (fail-on never): 36 errors, 1 warning`), what a replay
//!   reproduced (`3 of 22 values reproduced (20 for information only: other hardware; ...)`) or
//!   that an audit replayed nothing (`not replayed: verified only`), what a diff compared (`3 of 22
//!   figures unchanged (...)`), or
//!   that only printed figures were checked (`summary only: ...`, `results only: ...`,
//!   `nothing recomputed: ...`, `self-consistent only: ...`), joined by `; `;
//! - an **INCOMPLETE** says why (the report's `incomplete`), a replay that settled nothing among
//!   them ([`nothing_settled`]);
//! - a **FAIL** carries none: its headlines say why.

use super::{Finding, ReplaySummary, Report, Verdict};
use crate::verdict::Comparison;

/// The id of the check whose finding says how many files were reconstructed from the page.
const RECONSTRUCTED: &str = "claims.reconstructed";
/// The id of the check whose findings say a task of another tool's results was not re-scored.
const NOT_RESCORED: &str = "import.not-rescored";
/// The id of the check whose findings say what another tool's file prints that its records
/// cannot give (`records: false` in its data: a summary given without its per-request records).
const NOT_RECOMPUTABLE: &str = "import.not-recomputable";

/// The report's qualifier, by its verdict (see the module's docs); `None` for a plain verdict.
pub(super) fn of(r: &Report) -> Option<String> {
    match r.verdict {
        Verdict::Incomplete => r.incomplete.clone(),
        Verdict::Fail => None,
        Verdict::Pass => {
            let parts: Vec<String> = [
                not_gated(r),
                replayed(r),
                compared(r),
                not_replayed(r),
                printed_only(r),
            ]
            .into_iter()
            .flatten()
            .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// `not gated (fail-on never): 36 errors, 1 warning` when no severity fails the run.
fn not_gated(r: &Report) -> Option<String> {
    r.fail_on.is_none().then(|| {
        format!(
            "not gated (fail-on never): {}, {}",
            plural(r.counts.error, "error"),
            plural(r.counts.warning, "warning")
        )
    })
}

/// Whether the report's comparison rows are a replay's (`replay`, `audit`), not a diff's.
pub fn is_replay(r: &Report) -> bool {
    matches!(r.command.as_str(), "replay" | "audit") && !r.comparisons.is_empty()
}

/// The rows of a replay counted for its verdict: values for information only (measured on other
/// hardware) apart, since they settle nothing about the page; the others by verdict.
struct Settled {
    /// Every row.
    n: usize,
    /// Rows for information only.
    info: usize,
    /// The other rows, counted.
    judged: ReplaySummary,
}

impl Settled {
    fn of(rows: &[Comparison]) -> Settled {
        let judged: Vec<Comparison> = rows.iter().filter(|c| !c.informational).cloned().collect();
        Settled {
            n: rows.len(),
            info: rows.len() - judged.len(),
            judged: ReplaySummary::of(&judged),
        }
    }

    /// Rows reproduced or drifted, on the card's hardware.
    fn settled(&self) -> usize {
        self.judged.reproduced + self.judged.drifted
    }

    /// What the rows not reproduced were, each kind once: `2 drifted; 20 for information only:
    /// other hardware; 1 inconclusive: interval across the band; 1 not comparable`.
    fn rest(&self) -> String {
        let j = &self.judged;
        let mut parts = Vec::new();
        if j.drifted > 0 {
            parts.push(format!("{} drifted", j.drifted));
        }
        if self.info > 0 {
            parts.push(format!(
                "{} for information only: other hardware",
                self.info
            ));
        }
        if j.inconclusive > 0 {
            let why = j.reasons();
            let why = if why.is_empty() {
                String::new()
            } else {
                format!(": {}", why.join(", "))
            };
            parts.push(format!("{} inconclusive{why}", j.inconclusive));
        }
        if j.not_comparable > 0 {
            parts.push(format!("{} not comparable", j.not_comparable));
        }
        parts.join("; ")
    }

    /// What would settle the rows that settled nothing.
    fn advice(&self) -> Vec<&'static str> {
        let j = &self.judged;
        let mut out = Vec::new();
        if self.info > 0 {
            out.push("replay on the hardware the card names");
        }
        if j.foreign_load > 0 {
            out.push("on a quiet machine");
        }
        if j.gpu_throttled > 0 {
            out.push("on a GPU that does not throttle");
        }
        if j.machine_speed > 0 {
            out.push("when the machine runs at its recorded speed");
        }
        if j.wide_interval + j.too_few_runs + j.sessions_disagree > 0 {
            out.push("with more runs (each row says how many would settle it)");
        }
        if j.not_comparable > 0 {
            out.push("with the steps the not-comparable rows name made valid");
        }
        out
    }
}

/// What a passing diff compared: `all 12 figures unchanged`, or `3 of 22 figures unchanged (1
/// changed; 16 inconclusive: 16 interval across the band; 2 not comparable; 4 caveated)`, or `no
/// figure compared: setup only` when the two sides shared no figure. A pass of a diff whose rows
/// moved or could not be told apart says so, as a replay's does.
fn compared(r: &Report) -> Option<String> {
    if !r.compares_two() {
        return None;
    }
    let rows = &r.comparisons;
    if rows.is_empty() {
        return Some("no figure compared: setup only".into());
    }
    let s = ReplaySummary::of(rows);
    let caveated = rows.iter().filter(|c| !c.caveats.is_empty()).count();
    let mut rest = Vec::new();
    if s.drifted > 0 {
        rest.push(format!("{} changed", s.drifted));
    }
    if s.inconclusive > 0 {
        let why = s.reasons();
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(": {}", why.join(", "))
        };
        rest.push(format!("{} inconclusive{why}", s.inconclusive));
    }
    if s.not_comparable > 0 {
        rest.push(format!("{} not comparable", s.not_comparable));
    }
    if caveated > 0 {
        rest.push(format!("{caveated} caveated"));
    }
    let head = if s.reproduced == rows.len() {
        format!("all {} unchanged", plural(rows.len(), "figure"))
    } else {
        format!(
            "{} of {} unchanged",
            s.reproduced,
            plural(rows.len(), "figure")
        )
    };
    Some(if rest.is_empty() {
        head
    } else {
        format!("{head} ({})", rest.join("; "))
    })
}

/// `not replayed: verified only` for an audit with no replay's rows (`--no-replay`, or another
/// tool's files, which record no command to launch): the main job did not measure again.
fn not_replayed(r: &Report) -> Option<String> {
    (r.command == "audit" && r.comparisons.is_empty())
        .then(|| "not replayed: verified only".to_string())
}

/// Whether no row has a recorded figure: the recorded bundle held none (a card and contracts
/// only), so its replay is a recording, with nothing to reproduce.
fn nothing_recorded(rows: &[Comparison]) -> bool {
    rows.iter()
        .all(|c| c.recorded.is_none() && c.n_recorded == 0)
}

/// What a passing replay reproduced: `all 22 values reproduced`, `3 of 22 values reproduced (...)`,
/// `nothing reproduced: 0 of 22 values (...)`, or `nothing to reproduce: ...` when the recorded
/// bundle held no figure.
fn replayed(r: &Report) -> Option<String> {
    if !is_replay(r) {
        return None;
    }
    if nothing_recorded(&r.comparisons) {
        return Some(format!(
            "nothing to reproduce: the recorded bundle has no figure for any of the {} measured (a recording, not a reproduction)",
            plural(r.comparisons.len(), "value")
        ));
    }
    let s = Settled::of(&r.comparisons);
    let rep = s.judged.reproduced;
    Some(if rep == s.n {
        format!("all {} reproduced", plural(s.n, "value"))
    } else if rep == 0 {
        format!(
            "nothing reproduced: 0 of {} ({})",
            plural(s.n, "value"),
            s.rest()
        )
    } else {
        format!(
            "{rep} of {} reproduced ({})",
            plural(s.n, "value"),
            s.rest()
        )
    })
}

/// Why a replay whose rows settled nothing is incomplete: no value reproduced or drifted on the
/// card's hardware (values for information only settle nothing), with what would settle them;
/// `None` when a row settled, for no replay's rows, or when the recorded bundle held no figure
/// to reproduce (its replay is a recording: the qualifier says so).
pub(super) fn nothing_settled(command: &str, rows: &[Comparison]) -> Option<String> {
    if command == "ab" {
        return ab_settled_nothing(rows);
    }
    if !matches!(command, "replay" | "audit") || rows.is_empty() || nothing_recorded(rows) {
        return None;
    }
    let s = Settled::of(rows);
    if s.settled() > 0 {
        return None;
    }
    let advice = s.advice();
    let advice = if advice.is_empty() {
        String::new()
    } else {
        format!("; to settle them: {}", advice.join(", "))
    };
    Some(format!(
        "the replay settled nothing: none of its {} reproduced or drifted ({}){advice}",
        plural(s.n, "value"),
        s.rest()
    ))
}

/// Why an interleaved comparison (`ab`) is incomplete: no figure was called unchanged or changed
/// (or none was measured); `None` when one was.
fn ab_settled_nothing(rows: &[Comparison]) -> Option<String> {
    if rows.is_empty() {
        return Some("the interleaved comparison measured no figure on both sides".into());
    }
    let s = ReplaySummary::of(rows);
    if s.reproduced + s.drifted > 0 {
        return None;
    }
    Some(format!(
        "the interleaved comparison settled nothing: none of its {} unchanged or changed ({} inconclusive, {} not comparable); to settle them: a longer --budget (each row names the quartets that would), on a quieter machine",
        plural(rows.len(), "figure"),
        s.inconclusive,
        s.not_comparable
    ))
}

/// What a passing report that checked printed figures only covers (`None` when it rests on
/// recorded files): "results only: N tasks not re-scored (no samples given)" for another tool's
/// results without their records; "summary only: N distributions (or printed figures) not
/// recomputed (no per-request records given)" for a summary read without its records (an
/// `import.not-recomputable` finding with `records: false`: AIPerf's distributions, vLLM's printed
/// figures); "nothing recomputed: N notes (import.not-recomputable) say what could not be" when
/// no figure was recomputed or compared; "self-consistent only: N of M files reconstructed" when
/// files of the bundle were reconstructed from the page.
pub fn printed_only(r: &Report) -> Option<String> {
    let unsampled = r
        .findings
        .iter()
        .filter(|f| f.check == NOT_RESCORED && f.data.get("samples") == Some(&false.into()))
        .count();
    if unsampled > 0 {
        let s = if unsampled == 1 { "" } else { "s" };
        return Some(format!(
            "results only: {unsampled} task{s} not re-scored (no samples given)"
        ));
    }
    if let Some(covers) = summary_only(r).or_else(|| nothing_recomputed(r)) {
        return Some(covers);
    }
    let f = r.findings.iter().find(|f| f.check == RECONSTRUCTED)?;
    let count = |k: &str| f.data.get(k).and_then(serde_json::Value::as_u64);
    let (rec, files) = (count("reconstructed")?, count("files")?);
    Some(format!(
        "self-consistent only: {rec} of {files} files reconstructed"
    ))
}

/// "nothing recomputed: ..." when a report recomputed no figure, compared none, and has notes of
/// what could not be recomputed (another tool's summary without its records, a compliance
/// verdict alone): a pass that checked only the printed figures against each other.
fn nothing_recomputed(r: &Report) -> Option<String> {
    if !r.recomputed.is_empty() || !r.comparisons.is_empty() {
        return None;
    }
    let n = r
        .findings
        .iter()
        .filter(|f| f.check == NOT_RECOMPUTABLE)
        .count();
    let s = if n == 1 { "" } else { "s" };
    (n > 0).then(|| {
        format!("nothing recomputed: {n} note{s} ({NOT_RECOMPUTABLE}) say what could not be")
    })
}

/// "summary only: N distributions not recomputed (no per-request records given)", from the
/// `import.not-recomputable` findings that say no records were given: AIPerf's name the
/// distributions (`metrics`), vLLM's the printed figures (`keys`).
fn summary_only(r: &Report) -> Option<String> {
    let unrecorded: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.check == NOT_RECOMPUTABLE && f.data.get("records") == Some(&false.into()))
        .collect();
    if unrecorded.is_empty() {
        return None;
    }
    let listed = |key: &str| -> usize {
        unrecorded
            .iter()
            .filter_map(|f| f.data.get(key).and_then(serde_json::Value::as_array))
            .map(Vec::len)
            .sum()
    };
    let (metrics, keys) = (listed("metrics"), listed("keys"));
    let what = if keys == 0 {
        plural(metrics, "distribution")
    } else {
        plural(metrics + keys, "printed figure")
    };
    Some(format!(
        "summary only: {what} not recomputed (no per-request records given)"
    ))
}

#[cfg(test)]
mod tests {
    use crate::report::{Finding, Findings, Report, Severity, Verdict, INCOMPLETE};
    use crate::verdict::{Comparison, Inconclusive, ReplayVerdict as V};

    fn row(key: &str, verdict: V, informational: bool, why: Option<Inconclusive>) -> Comparison {
        Comparison {
            verdict,
            informational,
            inconclusive: why,
            ..Comparison::untested(key, (Some(10.0), Some(17.4)), (5, 5))
        }
    }

    /// The smollm2-cpu audit as the issue found it: 20 speed values on other hardware (2 drifted,
    /// 16 inconclusive beside foreign load, 2 not comparable), quality arith inconclusive (24
    /// questions bound it to about ±9 points) and arith-long not comparable (all refused).
    fn other_hardware() -> Vec<Comparison> {
        let mut rows = Vec::new();
        for i in 0..2 {
            rows.push(row(&format!("decode.{i}"), V::Drifted, true, None));
        }
        for i in 0..16 {
            let load = Some(Inconclusive::ForeignLoad);
            rows.push(row(&format!("prefill.{i}"), V::Inconclusive, true, load));
        }
        for i in 0..2 {
            rows.push(row(
                &format!("ctx_decode.{i}"),
                V::NotComparable,
                true,
                None,
            ));
        }
        let wide = Some(Inconclusive::WideInterval);
        rows.push(row("quality.arith.pct", V::Inconclusive, false, wide));
        rows.push(row("quality.arith-long.pct", V::NotComparable, false, None));
        rows
    }

    fn replayed(command: &str, rows: Vec<Comparison>, fail_on: Option<Severity>) -> Report {
        let mut found = Findings::default();
        found.ran("replay.drifted");
        found.comparisons = rows;
        Report::new(command, "b", fail_on, found)
    }

    #[test]
    fn a_replay_that_reproduced_nothing_on_the_cards_hardware_is_incomplete_and_says_why() {
        let r = replayed("audit", other_hardware(), Some(Severity::Error));
        assert_eq!(r.verdict, Verdict::Incomplete);
        assert_eq!(r.exit_code(), 3);
        let why = "the replay settled nothing: none of its 22 values reproduced or drifted \
             (20 for information only: other hardware; 1 inconclusive: 1 interval across the band; \
             1 not comparable); to settle them: replay on the hardware the card names, with more \
             runs (each row says how many would settle it), with the steps the not-comparable rows \
             name made valid";
        assert_eq!(r.verdict_qualifier.as_deref(), Some(why));
        assert_eq!(r.incomplete.as_deref(), Some(why));
        assert_eq!(r.qualified(), format!("INCOMPLETE: {why}"));
        let f = r.findings.iter().find(|f| f.check == INCOMPLETE).unwrap();
        assert!(f.message.ends_with(why), "{}", f.message);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["verdict_qualifier"], why);
        // replay alike; a diff's rows are not a replay's.
        let replay = replayed("replay", other_hardware(), Some(Severity::Error));
        assert_eq!(replay.verdict, Verdict::Incomplete);
        let diff = replayed("diff", other_hardware(), Some(Severity::Error));
        assert_eq!(
            (diff.verdict, diff.qualified().as_str()),
            (
                Verdict::Pass,
                "PASS, 0 of 22 figures unchanged (2 changed; 17 inconclusive: 1 interval across the \
                 band, 16 foreign load; 3 not comparable)"
            )
        );
        // An audit that replayed nothing (--no-replay) says it verified only.
        let verified = replayed("audit", Vec::new(), Some(Severity::Error));
        assert_eq!(verified.qualified(), "PASS, not replayed: verified only");
    }

    #[test]
    fn a_passing_replay_says_how_many_values_it_reproduced() {
        let mut rows = other_hardware();
        rows[20] = row("quality.arith.pct", V::Reproduced, false, None);
        let r = replayed("audit", rows, Some(Severity::Error));
        assert_eq!(r.verdict, Verdict::Pass);
        assert_eq!(
            r.qualified(),
            "PASS, 1 of 22 values reproduced (20 for information only: other hardware; 1 not comparable)"
        );
        let all = vec![
            row("decode", V::Reproduced, false, None),
            row("quality.arith.pct", V::Reproduced, false, None),
        ];
        let r = replayed("replay", all, Some(Severity::Error));
        assert_eq!(r.qualified(), "PASS, all 2 values reproduced");
        // A bundle with no recorded figure (a card and contracts) replayed is a recording.
        let fresh = Comparison::untested("decode", (None, Some(30.0)), (0, 5));
        let r = replayed("replay", vec![fresh], Some(Severity::Error));
        assert_eq!(
            r.qualified(),
            "PASS, nothing to reproduce: the recorded bundle has no figure for any of the 1 value \
             measured (a recording, not a reproduction)"
        );
        // A drift on the card's hardware settles a value; with the gate off the pass says both.
        let drift = vec![
            row("decode", V::Drifted, false, None),
            row(
                "prefill.64",
                V::Inconclusive,
                false,
                Some(Inconclusive::ForeignLoad),
            ),
        ];
        let mut found = Findings::default();
        found.ran("replay.drifted");
        found.comparisons = drift;
        found.findings = vec![Finding::new("replay.drifted", Severity::Error, "decode")];
        let r = Report::new("audit", "b", None, found);
        assert_eq!((r.verdict, r.exit_code()), (Verdict::Pass, 0));
        assert_eq!(
            r.qualified(),
            "PASS, not gated (fail-on never): 1 error, 0 warnings; nothing reproduced: 0 of 2 values \
             (1 drifted; 1 inconclusive: 1 foreign load)"
        );
    }

    /// A passing diff says what it compared: every figure unchanged, or how many and what the
    /// others were (caveated rows counted), or that it compared the setup only.
    #[test]
    fn a_passing_diff_says_how_many_figures_it_found_unchanged() {
        let all = vec![
            row("decode", V::Unchanged, false, None),
            row("prefill", V::Unchanged, false, None),
        ];
        let r = replayed("diff", all.clone(), Some(Severity::Error));
        assert_eq!(r.qualified(), "PASS, all 2 figures unchanged");
        let mut some = all;
        some[1].verdict = V::Inconclusive;
        some[1].inconclusive = Some(Inconclusive::WideInterval);
        some[0].caveats = vec!["B: refused requests counted as wrong".into()];
        let r = replayed("diff", some, Some(Severity::Error));
        assert_eq!(
            r.qualified(),
            "PASS, 1 of 2 figures unchanged (1 inconclusive: 1 interval across the band; 1 caveated)"
        );
        let setup = replayed("diff", Vec::new(), Some(Severity::Error));
        assert_eq!(setup.qualified(), "PASS, no figure compared: setup only");
    }

    #[test]
    fn a_pass_with_the_gate_off_says_so_and_what_it_found() {
        let mut found = Findings::default();
        found.ran("quality.cutoffs");
        found.findings = (0..36)
            .map(|_| Finding::new("speed.x", Severity::Error, "e"))
            .chain([Finding::new("speed.y", Severity::Warning, "w")])
            .collect();
        let r = Report::new("verify", "b", None, found.clone());
        assert_eq!((r.verdict, r.exit_code()), (Verdict::Pass, 0));
        assert_eq!(
            r.qualified(),
            "PASS, not gated (fail-on never): 36 errors, 1 warning"
        );
        let gated = Report::new("verify", "b", Some(Severity::Error), found);
        assert_eq!((gated.qualified(), gated.exit_code()), ("FAIL".into(), 1));
        assert_eq!(gated.verdict_qualifier, None);
    }

    #[test]
    fn a_summary_without_its_records_passes_as_summary_only() {
        let mut found = Findings::default();
        found.ran("import.not-recomputable");
        let keys = serde_json::json!({"keys": ["mean_ttft_ms", "p99_ttft_ms"], "records": false});
        found.findings =
            vec![Finding::new("import.not-recomputable", Severity::Info, "x").data(keys)];
        let r = Report::new("verify", "b", Some(Severity::Error), found.clone());
        assert_eq!(
            r.qualified(),
            "PASS, summary only: 2 printed figures not recomputed (no per-request records given)"
        );
        let metrics = serde_json::json!({"metrics": ["ttft", "itl", "e2e"], "records": false});
        found.findings[0].data = metrics;
        let r = Report::new("verify", "b", Some(Severity::Error), found);
        assert_eq!(
            r.qualified(),
            "PASS, summary only: 3 distributions not recomputed (no per-request records given)"
        );
    }

    /// A replay whose step failed (an error) fails, whatever it settled; a policy that leaves the
    /// failure out leaves a replay that settled nothing: incomplete; one that raises a finding to
    /// the fail level over such an incomplete report makes it fail.
    #[test]
    fn a_failing_replay_fails_and_a_policy_decides_again_what_it_settled() {
        use crate::policy::{Action, CheckRule, Policy};
        let mut found = Findings::default();
        found.ran("replay.drifted");
        found.comparisons = other_hardware();
        found.findings = vec![Finding::new(
            "replay.step-failed",
            Severity::Error,
            "decode",
        )];
        let r = Report::new("replay", "b", Some(Severity::Error), found);
        assert_eq!((r.verdict, r.exit_code()), (Verdict::Fail, 1));
        assert!(r.findings.iter().all(|f| f.check != INCOMPLETE));
        let rule = |severity| CheckRule {
            severity,
            reason: "ours".into(),
        };
        let ignore = Policy {
            checks: [("replay.step-failed".to_string(), rule(Action::Ignore))].into(),
            ..Policy::default()
        };
        let mut quiet = r.clone();
        quiet.apply_policy(&ignore);
        assert_eq!((quiet.verdict, quiet.exit_code()), (Verdict::Incomplete, 3));
        let why = quiet.verdict_qualifier.clone().unwrap();
        assert!(why.starts_with("the replay settled nothing"), "{why}");
        let said: Vec<_> = quiet
            .findings
            .iter()
            .filter(|f| f.check == INCOMPLETE)
            .collect();
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(quiet.counts.warning, 1);
        // Decided again: a warning raised to an error fails it, and the finding saying it was
        // incomplete goes with that.
        let mut loud = replayed("audit", other_hardware(), Some(Severity::Error));
        loud.findings.push(Finding::new(
            "replay.hardware-differs",
            Severity::Warning,
            "other box",
        ));
        assert_eq!(loud.verdict, Verdict::Incomplete);
        let raise = Policy {
            checks: [("replay.hardware-differs".to_string(), rule(Action::Error))].into(),
            ..Policy::default()
        };
        loud.apply_policy(&raise);
        assert_eq!(
            (loud.verdict, loud.verdict_qualifier.as_deref()),
            (Verdict::Fail, None)
        );
        assert!(loud.findings.iter().all(|f| f.check != INCOMPLETE));
        assert_eq!(loud.incomplete, None);
    }
}
