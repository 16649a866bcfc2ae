//! What a report says first, in every format that leads with a summary: under its qualified
//! verdict (decided with the verdict, in the report model: `report::qualifier`), one headline per
//! family of a replay's values ("replayed speed, 20 values: 0 reproduced, ..."), one per family of
//! checks whose findings fail the run, with its sum ("2 tests count 70 refused requests as wrong
//! answers"), and what to do next. It reads the report and the catalogue's rows (for a check's one-line doc), so
//! it sits on top, beside [`crate::table`].

use crate::report::{qualifier, Finding, ReplaySummary, Report, Severity, Verdict};

/// The ids of diff's setup differences and of its figures that moved.
const SETUP_DIFFERS: &str = "diff.setup-differs";
const MOVED: &str = "diff.moved";
/// The id of the check whose findings carry the refused requests a summary counted as wrong.
const REFUSED_COUNTED: &str = "quality.refused-counted-as-wrong";

/// What a passing verdict covers when agreement proves less than a measurement: only printed
/// figures were checked ([`qualifier::printed_only`]: "results only", "summary only", "nothing
/// recomputed", "self-consistent only"). `None` for a report that fails, is incomplete, or rests
/// on recorded files. The whole qualifier of the verdict is the report's own
/// (`Report::verdict_qualifier`).
pub fn coverage(r: &Report) -> Option<String> {
    if r.verdict != Verdict::Pass {
        return None;
    }
    qualifier::printed_only(r)
}

/// The verdict as a person reads it first, with what it settled: the report's own
/// [`Report::qualified`].
pub fn qualified(r: &Report) -> String {
    r.qualified()
}

/// The severity at which a finding counts against the verdict: the report's `fail_on`, else
/// errors (a report that never fails still leads with its errors).
fn failing(r: &Report) -> Severity {
    r.fail_on.unwrap_or(Severity::Error)
}

/// The headlines under the verdict: one per family of a replay's values ([`replayed`]), then one
/// per family (the id's first part) with findings at or above the failing severity, in the order
/// the families first appear: the family's sum where its lead check has one, else the lead
/// check's doc; the lead check is the family's with the most such findings.
pub fn headlines(r: &Report) -> Vec<String> {
    let mut out = replayed(r);
    out.extend(
        by_family(r)
            .iter()
            .map(|(fam, of)| family_headline(fam, of)),
    );
    out
}

/// The family of a replay's value by its key: `quality.arith.pct` quality, `fit.*` fit, the rest
/// (decode, prefill, time to first token, requests at once, context) speed.
fn value_family(key: &str) -> &'static str {
    match key.split('.').next() {
        Some("quality") => "quality",
        Some("fit") => "fit",
        _ => "speed",
    }
}

/// One headline per family of a replay's values (`replay`, `audit`), families in the order of
/// their first row: `replayed speed, 20 values: 0 reproduced, 2 drifted, 16 inconclusive (16
/// foreign load), 2 not comparable; 20 for information only (other hardware)`.
pub fn replayed(r: &Report) -> Vec<String> {
    if !qualifier::is_replay(r) {
        return Vec::new();
    }
    let mut families: Vec<&str> = Vec::new();
    for c in &r.comparisons {
        let fam = value_family(&c.key);
        if !families.contains(&fam) {
            families.push(fam);
        }
    }
    families
        .into_iter()
        .map(|fam| {
            let rows: Vec<_> = r
                .comparisons
                .iter()
                .filter(|c| value_family(&c.key) == fam)
                .cloned()
                .collect();
            let n = rows.len();
            format!(
                "replayed {fam}, {n} value{}: {}",
                if n == 1 { "" } else { "s" },
                ReplaySummary::of(&rows).line(false)
            )
        })
        .collect()
}

/// The findings at or above the failing severity, by family, families in order of appearance.
fn by_family(r: &Report) -> Vec<(&str, Vec<&Finding>)> {
    let bar = failing(r);
    let mut out: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for f in r.findings.iter().filter(|f| f.severity >= bar) {
        let fam = family(&f.check);
        match out.iter_mut().find(|(x, _)| *x == fam) {
            Some((_, of)) => of.push(f),
            None => out.push((fam, vec![f])),
        }
    }
    out
}

/// The checks of some findings with how many each has, in order of appearance.
fn per_check<'a>(of: &[&'a Finding]) -> Vec<(&'a str, usize)> {
    let mut checks: Vec<(&str, usize)> = Vec::new();
    for f in of {
        match checks.iter_mut().find(|(c, _)| *c == f.check) {
            Some((_, n)) => *n += 1,
            None => checks.push((&f.check, 1)),
        }
    }
    checks
}

/// The check a family's headline leads with: the one with a sum, else the one with the most
/// findings (the first on a tie).
fn lead_check<'a>(checks: &[(&'a str, usize)]) -> &'a str {
    if let Some((c, _)) = checks.iter().find(|(c, _)| *c == REFUSED_COUNTED) {
        return c;
    }
    checks
        .iter()
        .rev()
        .max_by_key(|(_, n)| *n)
        .map_or("", |(c, _)| *c)
}

fn family(id: &str) -> &str {
    id.split('.').next().unwrap_or(id)
}

/// A family's headline: `quality: 2 tests count 70 refused requests as wrong answers (4 errors of
/// 2 checks)`.
fn family_headline(fam: &str, of: &[&Finding]) -> String {
    let checks = per_check(of);
    let lead = lead_check(&checks);
    let lead_of: Vec<&Finding> = of.iter().copied().filter(|f| f.check == lead).collect();
    // A family whose every check counts in words says each count; else its lead check's sum or doc.
    let counts: Option<Vec<String>> = checks.iter().map(|(c, n)| counted(c, *n)).collect();
    let what = match counts {
        Some(phrases) => phrases.join(", "),
        None => sum(lead, &lead_of).unwrap_or_else(|| doc_of(lead)),
    };
    let worst = of
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Error);
    let kind = match worst {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    };
    let plural = if of.len() == 1 { "" } else { "s" };
    let across = if checks.len() > 1 {
        format!(" of {} checks", checks.len())
    } else {
        format!(", {lead}")
    };
    format!("{fam}: {what} ({} {kind}{plural}{across})", of.len())
}

/// A check's findings counted in words, for the checks whose one finding is one thing of a kind
/// (a setup difference, a figure that moved).
fn counted(check: &str, n: usize) -> Option<String> {
    let s = if n == 1 { "" } else { "s" };
    match check {
        SETUP_DIFFERS => Some(format!("{n} setup difference{s}")),
        MOVED => Some(format!("{n} figure{s} moved beyond the tolerance")),
        _ => None,
    }
}

/// A check's sum over its findings, where it has one worth more than its doc.
fn sum(check: &str, of: &[&Finding]) -> Option<String> {
    if check != REFUSED_COUNTED {
        return None;
    }
    let refused: u64 = of
        .iter()
        .filter_map(|f| f.data.get("refused").and_then(serde_json::Value::as_u64))
        .sum();
    let tests = of.len();
    Some(format!(
        "{tests} test{} count{} {refused} refused request{} as wrong answers",
        if tests == 1 { "" } else { "s" },
        if tests == 1 { "s" } else { "" },
        if refused == 1 { "" } else { "s" }
    ))
}

/// A check's one-line doc from the catalogue, without its final period, lower-cased at its start.
fn doc_of(check: &str) -> String {
    let doc = crate::table::all()
        .into_iter()
        .find(|c| c.id == check)
        .map_or(check.to_string(), |c| c.doc.to_string());
    let doc = doc.trim_end_matches('.');
    let mut chars = doc.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// What to do next, by verdict: for a failure, where the findings are and how to read one; for
/// an incomplete run, add what its first finding says is missing; for a pass that rests on
/// reconstructed files, ask for the recorded ones. `None` for a pass on recorded files.
pub fn next_step(r: &Report) -> Option<String> {
    match r.verdict {
        Verdict::Fail => {
            let first = by_family(r).into_iter().next();
            let lead = first.map_or("ID", |(_, of)| lead_check(&per_check(&of)));
            Some(format!("`rigaudit checks {lead}` says how to fix it"))
        }
        Verdict::Incomplete => Some(
            "add what the findings below say is missing and run again; not everything was checked"
                .into(),
        ),
        Verdict::Pass if r.fail_on.is_none() && r.counts.error + r.counts.warning > 0 => Some(
            "the gate is off (fail-on never): the findings below are not judged; run again with --fail-on error to gate on them"
                .into(),
        ),
        Verdict::Pass if coverage(r).is_some() => Some(
            "checked against what was printed, not measured: add the raw records the findings name"
                .into(),
        ),
        Verdict::Pass
            if qualifier::is_replay(r)
                && r.replay_summary.is_some_and(|s| s.reproduced < r.comparisons.len()) =>
        {
            Some(
                "not every value reproduced: each row of the replay says why, and how many runs would settle it"
                    .into(),
            )
        }
        Verdict::Pass => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Findings;

    fn refused(test: &str, n: u64) -> Finding {
        Finding::new(REFUSED_COUNTED, Severity::Error, "x")
            .data(serde_json::json!({"test": test, "refused": n}))
    }

    fn report(findings: Vec<Finding>) -> Report {
        let mut found = Findings::default();
        found.ran("quality.cutoffs");
        found.findings = findings;
        Report::new("verify", "b", Some(Severity::Error), found)
    }

    #[test]
    fn refused_requests_are_summed_into_one_headline_per_family() {
        let nrh = Finding::new("quality.no-result-has-value", Severity::Error, "y");
        let r = report(vec![refused("a", 40), nrh.clone(), refused("b", 30), nrh]);
        assert_eq!(
            headlines(&r),
            ["quality: 2 tests count 70 refused requests as wrong answers (4 errors of 2 checks)"]
        );
        // What to do names the lead check of the first family, to explain.
        let next = next_step(&r).unwrap();
        assert!(
            next.starts_with("`rigaudit checks quality.refused-counted-as-wrong`"),
            "{next}"
        );
    }

    #[test]
    fn a_family_whose_checks_count_in_words_says_each_count() {
        let setup = Finding::new(SETUP_DIFFERS, Severity::Error, "s");
        let moved = Finding::new(MOVED, Severity::Error, "m");
        let r = report(vec![setup.clone(), setup, moved]);
        assert_eq!(
            headlines(&r),
            ["diff: 2 setup differences, 1 figure moved beyond the tolerance (3 errors of 2 checks)"]
        );
    }

    #[test]
    fn a_family_without_a_sum_leads_with_its_checks_doc() {
        let f = Finding::new("claims.unbacked", Severity::Error, "z");
        let r = report(vec![f, Finding::new("claims.x", Severity::Info, "note")]);
        let h = headlines(&r);
        assert_eq!(h.len(), 1, "{h:?}");
        assert!(h[0].starts_with("claims: "), "{h:?}");
        assert!(h[0].ends_with("(1 error, claims.unbacked)"), "{h:?}");
    }

    #[test]
    fn a_pass_on_reconstructed_files_says_so() {
        let f = Finding::new("claims.reconstructed", Severity::Info, "m")
            .data(serde_json::json!({"reconstructed": 43, "files": 43}));
        let r = report(vec![f]);
        assert_eq!(r.verdict, Verdict::Pass);
        assert_eq!(
            coverage(&r).as_deref(),
            Some("self-consistent only: 43 of 43 files reconstructed")
        );
        assert!(next_step(&r).is_some());
        assert_eq!(
            qualified(&r),
            "PASS, self-consistent only: 43 of 43 files reconstructed"
        );
        assert_eq!(qualified(&report(vec![])), "PASS");
        assert_eq!(coverage(&report(vec![])), None);
        assert_eq!(next_step(&report(vec![])), None);
    }

    #[test]
    fn an_incomplete_verdict_carries_its_reason() {
        let found = Findings {
            incomplete: Some("no raw file could be read".into()),
            ..Findings::default()
        };
        let r = Report::new("verify", "b", Some(Severity::Error), found);
        assert_eq!(qualified(&r), "INCOMPLETE: no raw file could be read");
    }

    #[test]
    fn the_ids_it_reads_are_rows_of_the_catalogue() {
        let all = crate::table::all();
        for id in [
            "claims.reconstructed",
            REFUSED_COUNTED,
            "import.not-rescored",
            "import.not-recomputable",
            SETUP_DIFFERS,
            MOVED,
        ] {
            assert!(all.iter().any(|c| c.id == id), "{id} is no row");
        }
    }
}
