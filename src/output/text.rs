//! The report as grouped text for people: a verdict line, findings grouped by severity and check,
//! then the recomputed values and, for a replay, the recorded figures beside the replayed ones.

use rigaudit_audit::decide::p_cell;
use rigaudit_audit::verdict::better_word;
use rigaudit_audit::{Report, Severity, Verdict};
use std::fmt::Write;

fn paint(s: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

fn num(x: Option<f64>) -> String {
    match x {
        None => "no result".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
    }
}

/// Text from a report that may quote input: control characters escaped, length bounded.
fn safe(s: &str) -> String {
    crate::input::shown_n(s, crate::input::MESSAGE_MAX)
}

/// Renders a report: the findings by severity and check, what a policy left out, the recomputed
/// values, the setup differences (diff) and the figures beside each other, then the verdict line
/// last, where a terminal leaves it in view.
pub fn render(r: &Report, color: bool) -> String {
    let mut o = String::new();
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        findings_of(&mut o, r, sev, color);
    }
    policy_section(&mut o, r);
    recomputed_section(&mut o, r);
    setup_section(&mut o, r);
    comparisons_section(&mut o, r);
    // Each section starts with a blank line; the first needs none.
    let mut out = o.trim_start_matches('\n').to_string();
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&verdict_line(r, color));
    out
}

fn verdict_line(r: &Report, color: bool) -> String {
    let verdict = match r.verdict {
        Verdict::Pass => paint("PASS", "32;1", color),
        Verdict::Fail => paint("FAIL", "31;1", color),
        Verdict::Incomplete => paint("INCOMPLETE", "33;1", color),
    };
    format!(
        "rigaudit {} {}: {verdict} ({} errors, {} warnings, {} notes; {} checks ran)\n",
        r.command,
        safe(&r.bundle),
        r.counts.error,
        r.counts.warning,
        r.counts.info,
        r.checks_run.len()
    )
}

/// The findings of one severity, grouped by check in order of first appearance.
fn findings_of(o: &mut String, r: &Report, sev: Severity, color: bool) {
    let mut seen = std::collections::BTreeSet::new();
    let checks: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.severity == sev)
        .map(|f| f.check.as_str())
        .filter(|c| seen.insert(*c))
        .collect();
    if checks.is_empty() {
        return;
    }
    let (label, code) = match sev {
        Severity::Error => ("errors", "31"),
        Severity::Warning => ("warnings", "33"),
        Severity::Info => ("notes", "36"),
    };
    let _ = writeln!(o, "\n{}", paint(label, code, color));
    for c in checks {
        let _ = writeln!(o, "  {}", paint(&safe(c), "1", color));
        let of = r
            .findings
            .iter()
            .filter(|f| f.severity == sev && f.check == c);
        if r.command == "diff" && c == rigaudit_audit::diff::SETUP_DIFFERS.id {
            let _ = writeln!(
                o,
                "    - {} setup difference(s), listed under \"setup differences\"",
                of.count()
            );
            continue;
        }
        for f in of {
            let place = match (&f.file, &f.pointer) {
                (Some(file), Some(p)) => format!("{} {}: ", safe(file), safe(p)),
                (Some(file), None) => format!("{}: ", safe(file)),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "    - {place}{}",
                crate::input::shown_n(&f.message, crate::input::MESSAGE_MAX)
            );
        }
    }
}

fn policy_section(o: &mut String, r: &Report) {
    let Some(p) = &r.policy else { return };
    if p.ignored.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nleft out by the policy {}", safe(&p.file));
    for i in &p.ignored {
        let _ = writeln!(
            o,
            "  {} ({} finding(s)): {}",
            safe(&i.check),
            i.findings,
            safe(&i.reason)
        );
    }
}

fn recomputed_section(o: &mut String, r: &Report) {
    if r.recomputed.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nrecomputed from the raw records (value / file / page)");
    for v in &r.recomputed {
        let _ = writeln!(
            o,
            "  {:<28} {:>12}   {:>10}   {:>10}",
            safe(&v.key),
            num(v.value),
            v.file.map_or("-".into(), |x| x.to_string()),
            v.page.as_deref().map_or("-".into(), safe)
        );
    }
}

fn setup_section(o: &mut String, r: &Report) {
    if r.setup_changes.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nsetup differences (what: A / B; where A and B record it)"
    );
    for c in &r.setup_changes {
        let _ = writeln!(
            o,
            "  [{}] {}: {} / {}   ({}; {})",
            c.subject.name(),
            safe(&c.what),
            safe(&c.a),
            safe(&c.b),
            safe(&c.where_a),
            safe(&c.where_b)
        );
    }
}

fn comparisons_section(o: &mut String, r: &Report) {
    if r.comparisons.is_empty() {
        return;
    }
    let diff = r.command == "diff";
    let header = if diff {
        "A beside B (key / A / B / change % / p / verdict / better / why)"
    } else {
        "recorded beside the replay (key / recorded / replayed / change % / p / verdict / why)"
    };
    let _ = writeln!(o, "\n{header}");
    if let Some(s) = &r.replay_summary {
        let _ = writeln!(o, "  {}", s.line(diff));
    }
    for c in &r.comparisons {
        let change = c.change_pct.map_or("-".into(), |x| format!("{x:+.1}"));
        let p = c.p_value.map_or("-".into(), p_cell);
        let verdict = format!(
            "{}{}",
            c.verdict.name(),
            if c.informational { " (info)" } else { "" }
        );
        let better = if diff {
            format!(" {:<6}", better_word(c.better))
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {:<28} {:>12} {:>12} {:>8} {:>8}   {:<22}{better} {}",
            safe(&c.key),
            num(c.recorded),
            num(c.replayed),
            change,
            p,
            verdict,
            safe(&c.why)
        );
    }
    rule_section(o, r);
}

/// The decision rule the rows were judged by: its bands and multiplicity control.
fn rule_section(o: &mut String, r: &Report) {
    if r.decision_rule.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n{}", safe(&r.decision_rule[0]));
    for line in &r.decision_rule[1..] {
        let _ = writeln!(o, "  {}", safe(line));
    }
}
