//! The report as JUnit XML, which every CI shows natively: one `<testsuite>` per report, one
//! `<testcase>` per check of the catalogue. A check that ran is a `<failure>` when one of its
//! findings reaches the fail level (`--fail-on`), passes otherwise (lower findings in its
//! `<system-out>`); a check that could not run is `<skipped>`. The shape follows the JUnit XSD CI
//! servers read (Jenkins' `junit-10.xsd`), checked in `tests/reports.rs`.

use rigaudit_audit::{Report, Severity};
use std::fmt::Write;

/// XML text: the five entities escaped, and characters XML 1.0 cannot hold replaced.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(ch),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// One test case.
struct Case {
    class: String,
    name: &'static str,
    outcome: Outcome,
}

enum Outcome {
    Passed(Vec<String>),
    Failed(Severity, Vec<String>),
    Skipped,
}

fn cases(r: &Report) -> Vec<Case> {
    rigaudit_audit::catalogue::all()
        .into_iter()
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
            let outcome = if !r.checks_run.iter().any(|x| x == c.id) && of.is_empty() {
                Outcome::Skipped
            } else if let Some(worst) = failing.iter().map(|f| f.severity).max() {
                Outcome::Failed(worst, lines(&of))
            } else {
                Outcome::Passed(lines(&of))
            };
            Case {
                class: format!("rigaudit.{}", c.id.split('.').next().unwrap_or("check")),
                name: c.id,
                outcome,
            }
        })
        .collect()
}

/// Renders a report as JUnit XML.
pub fn render(r: &Report) -> String {
    let cases = cases(r);
    let failures = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Failed(..)))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Skipped))
        .count();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"rigaudit\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
        cases.len()
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"0\">",
        esc(&format!("rigaudit {} {}", r.command, r.bundle)),
        cases.len()
    );
    let _ = writeln!(
        o,
        "    <properties>\n      <property name=\"verdict\" value=\"{:?}\"/>\n      <property name=\"rules_version\" value=\"{}\"/>\n    </properties>",
        r.verdict,
        esc(&r.rules_version)
    );
    for c in &cases {
        write_case(&mut o, c);
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}

fn write_case(o: &mut String, c: &Case) {
    let head = format!(
        "    <testcase classname=\"{}\" name=\"{}\" time=\"0\"",
        esc(&c.class),
        esc(c.name)
    );
    match &c.outcome {
        Outcome::Skipped => {
            let _ = writeln!(
                o,
                "{head}>\n      <skipped message=\"the check had nothing to run on\"/>\n    </testcase>"
            );
        }
        Outcome::Passed(lines) if lines.is_empty() => {
            let _ = writeln!(o, "{head}/>");
        }
        Outcome::Passed(lines) => {
            let _ = writeln!(
                o,
                "{head}>\n      <system-out>{}</system-out>\n    </testcase>",
                esc(&lines.join("\n"))
            );
        }
        Outcome::Failed(sev, lines) => {
            let first = lines.first().cloned().unwrap_or_default();
            let first: String = first.chars().take(500).collect();
            let _ = writeln!(
                o,
                "{head}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
                esc(&first),
                sev.name(),
                esc(&lines.join("\n"))
            );
        }
    }
}
