//! The report as JUnit XML, which every CI shows natively: one `<testsuite>` per report, one
//! `<testcase>` per check that ran. A check is a `<failure>` when one of its findings reaches the
//! fail level (`--fail-on`), passes otherwise; the checks of the catalogue that had nothing to run
//! on are no test case (nothing was skipped: the page has nothing for them) but are named in the
//! suite's property `not_applicable`, and the verdict is the property `verdict`, spelled as in
//! JSON, and `qualified_verdict` as the text report leads with it (what a pass covers, why a run
//! is incomplete). Findings below the fail level are listed in the suite's `<system-out>`. The shape
//! is the strict one of Apache Ant's JUnit task, which CI servers read (no `<system-out>` inside
//! a test case, `timestamp`, `hostname`, `package` and `id` on the suite); `tests/it/reports.rs`
//! validates it against `tests/schemas/junit.xsd`.

use rigaudit_audit::{Report, Severity};
use std::fmt::Write;

/// XML text or attribute value: the five entities escaped, and every character XML 1.0 cannot
/// hold (with the other controls and the bidirectional ones) written visibly.
use crate::output::escape::xml_text as esc;

/// One test case.
struct Case {
    class: String,
    name: &'static str,
    outcome: Outcome,
}

enum Outcome {
    Passed,
    Failed(Severity, Vec<String>),
}

/// Whether a check of the catalogue has a test case: it ran, or reported something.
fn applies(r: &Report, id: &str) -> bool {
    r.checks_run.iter().any(|x| x == id) || r.findings.iter().any(|f| f.check == id)
}

/// The checks of the catalogue that had nothing to run on, space-separated.
fn not_applicable(r: &Report) -> String {
    rigaudit_audit::table::all()
        .into_iter()
        .filter(|c| !applies(r, c.id))
        .map(|c| c.id)
        .collect::<Vec<_>>()
        .join(" ")
}

fn cases(r: &Report) -> Vec<Case> {
    rigaudit_audit::table::all()
        .into_iter()
        .filter(|c| applies(r, c.id))
        .map(|c| {
            let of: Vec<&rigaudit_audit::Finding> =
                r.findings.iter().filter(|f| f.check == c.id).collect();
            let lines = |fs: &[&rigaudit_audit::Finding]| -> Vec<String> {
                fs.iter()
                    .map(|f| match &f.file {
                        Some(file) => format!("{}: {file}: {}", f.severity.name(), f.message),
                        None => format!("{}: {}", f.severity.name(), f.message),
                    })
                    .collect()
            };
            let failing: Vec<&rigaudit_audit::Finding> = of
                .iter()
                .copied()
                .filter(|f| r.fail_on.is_some_and(|t| f.severity >= t))
                .collect();
            let outcome = if let Some(worst) = failing.iter().map(|f| f.severity).max() {
                Outcome::Failed(worst, lines(&of))
            } else {
                Outcome::Passed
            };
            Case {
                class: format!("rigaudit.{}", c.id.split('.').next().unwrap_or("check")),
                name: c.id,
                outcome,
            }
        })
        .collect()
}

/// Lines of text, each escaped (a value's own line break written `\n`), one a line.
fn esc_lines(lines: &[String]) -> String {
    lines.iter().map(|l| esc(l)).collect::<Vec<_>>().join("\n")
}

/// Findings below the fail level, one line each, for the suite's `<system-out>`.
fn below_fail_level(r: &Report) -> Vec<String> {
    r.findings
        .iter()
        .filter(|f| r.fail_on.is_none_or(|t| f.severity < t))
        .map(|f| match &f.file {
            Some(file) => format!("{} {}: {file}: {}", f.severity.name(), f.check, f.message),
            None => format!("{} {}: {}", f.severity.name(), f.check, f.message),
        })
        .collect()
}

/// Renders a report as JUnit XML.
pub fn render(r: &Report) -> String {
    let cases = cases(r);
    let count = |f: fn(&Outcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
    let failures = count(|o| matches!(o, Outcome::Failed(..)));
    let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    let _ = writeln!(
        o,
        "  <testsuite package=\"rigaudit\" id=\"0\" name=\"{}\" timestamp=\"{stamp}\" hostname=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\" time=\"0\">",
        esc(&format!("rigaudit {} {}", r.command, r.bundle)),
        esc(&host),
        cases.len()
    );
    let _ = writeln!(
        o,
        "    <properties>\n      <property name=\"verdict\" value=\"{}\"/>\n      <property name=\"qualified_verdict\" value=\"{}\"/>\n      <property name=\"rules_version\" value=\"{}\"/>\n      <property name=\"not_applicable\" value=\"{}\"/>\n    </properties>",
        r.verdict.name(),
        esc(&r.qualified()),
        esc(&r.rules_version),
        esc(&not_applicable(r))
    );
    for c in &cases {
        write_case(&mut o, c);
    }
    let _ = writeln!(
        o,
        "    <system-out>{}</system-out>\n    <system-err></system-err>\n  </testsuite>\n</testsuites>",
        esc_lines(&below_fail_level(r))
    );
    o
}

fn write_case(o: &mut String, c: &Case) {
    let head = format!(
        "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
        esc(&c.class),
        esc(c.name)
    );
    match &c.outcome {
        Outcome::Passed => {
            let _ = writeln!(o, "{head}/>");
        }
        Outcome::Failed(sev, lines) => {
            let first: String = lines
                .first()
                .cloned()
                .unwrap_or_default()
                .chars()
                .take(500)
                .collect();
            let _ = writeln!(
                o,
                "{head}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                esc(&first),
                sev.name(),
                esc_lines(lines)
            );
        }
    }
}
