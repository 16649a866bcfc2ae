//! The findings, first after the lead lines: by severity, the errors in a callout box, each
//! severity a table grouped by check in order of first appearance. A diff's setup differences are
//! one row pointing at their own table, so each difference is listed once.

use super::cells::{esc, path, quoted};
use rigaudit_audit::{Finding, Report, Severity};
use std::fmt::Write;

/// The id of the setup-differences table a diff's findings point at.
pub const SETUP_ANCHOR: &str = "setup";

/// The findings section: a heading, then one block per severity that has findings.
pub fn section(r: &Report) -> String {
    let mut o = String::from("<section id=\"findings\"><h2>Findings</h2>");
    if r.findings.is_empty() {
        o.push_str("<p>No findings.</p>");
    }
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        o.push_str(&severity_block(r, sev));
    }
    o.push_str("</section>\n");
    o
}

fn severity_block(r: &Report, sev: Severity) -> String {
    let of: Vec<&Finding> = r.findings.iter().filter(|f| f.severity == sev).collect();
    if of.is_empty() {
        return String::new();
    }
    let (heading, open) = match sev {
        Severity::Error => (
            "Errors",
            "<div class=\"callout\" role=\"alert\" aria-labelledby=\"errors\">",
        ),
        Severity::Warning => ("Warnings", "<div class=\"block\">"),
        Severity::Info => ("Notes", "<div class=\"block\">"),
    };
    let id = heading.to_lowercase();
    let mut o = format!(
        "{open}<h3 id=\"{id}\">{heading} ({})</h3><table class=\"findings {}\"><thead><tr><th scope=\"col\">check</th><th scope=\"col\">where</th><th scope=\"col\">message</th></tr></thead><tbody>",
        of.len(),
        sev.name()
    );
    for check in checks_in_order(&of) {
        let rows: Vec<&&Finding> = of.iter().filter(|f| f.check == check).collect();
        if r.compares_two() && check == rigaudit_audit::diff::SETUP_DIFFERS.id {
            let _ = write!(
                o,
                "<tr class=\"{}\"><td><code>{}</code></td><td></td><td>{} setup difference(s), listed once under <a href=\"#{SETUP_ANCHOR}\">Setup differences</a></td></tr>",
                sev.name(),
                esc(check),
                rows.len()
            );
            continue;
        }
        for f in rows {
            o.push_str(&finding_row(f));
        }
    }
    o.push_str("</tbody></table></div>\n");
    o
}

/// The checks of `findings`, each once, in order of first appearance.
fn checks_in_order<'a>(findings: &[&'a Finding]) -> Vec<&'a str> {
    let mut seen = std::collections::BTreeSet::new();
    findings
        .iter()
        .map(|f| f.check.as_str())
        .filter(|c| seen.insert(*c))
        .collect()
}

fn finding_row(f: &Finding) -> String {
    let place = [f.file.as_deref(), f.pointer.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "<tr class=\"{}\"><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
        f.severity.name(),
        esc(&f.check),
        path(&esc(&place)),
        quoted(&f.message)
    )
}
