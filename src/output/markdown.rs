//! The report as Markdown for a pull-request comment: the verdict, the setup differences (diff),
//! the findings table, the figures table (recomputed values, or the comparison rows).

use rigaudit_audit::decide::p_cell;
use rigaudit_audit::verdict::better_word;
use rigaudit_audit::{Report, Severity, Verdict};
use std::fmt::Write;

/// A table cell: pipes and line breaks escaped, long text cut with its size said.
fn cell(s: &str) -> String {
    const MAX: usize = 300;
    let one_line = s.replace('|', "\\|").replace(['\n', '\r'], " ");
    if one_line.chars().count() <= MAX {
        return one_line;
    }
    let cut: String = one_line.chars().take(MAX).collect();
    format!("{cut}… ({} characters in all)", one_line.chars().count())
}

fn num(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| {
        if v.abs() >= 100.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.3}")
        }
    })
}

fn verdict_line(r: &Report) -> String {
    let (icon, word) = match r.verdict {
        Verdict::Pass => ("✅", "PASS"),
        Verdict::Fail => ("❌", "FAIL"),
        Verdict::Incomplete => ("⚠️", "INCOMPLETE"),
    };
    format!(
        "{icon} **rigaudit {} `{}`: {word}** ({} errors, {} warnings, {} notes; {} checks ran)",
        r.command,
        cell(&r.bundle),
        r.counts.error,
        r.counts.warning,
        r.counts.info,
        r.checks_run.len()
    )
}

fn findings_table(o: &mut String, r: &Report) {
    if r.findings.is_empty() {
        let _ = writeln!(o, "\nNo findings.");
        return;
    }
    let _ = writeln!(
        o,
        "\n### Findings\n\n| severity | check | where | message |\n|---|---|---|---|"
    );
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        for f in r.findings.iter().filter(|f| f.severity == sev) {
            let place = match (&f.file, &f.pointer) {
                (Some(file), Some(p)) => format!("`{}` `{}`", cell(file), cell(p)),
                (Some(file), None) => format!("`{}`", cell(file)),
                _ => String::new(),
            };
            let _ = writeln!(
                o,
                "| {} | `{}` | {place} | {} |",
                sev.name(),
                f.check,
                cell(&f.message)
            );
        }
    }
}

fn setup_table(o: &mut String, r: &Report) {
    if r.setup_changes.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n### Setup differences\n\n| subject | what | A | B | where (A; B) |\n|---|---|---|---|---|");
    for c in &r.setup_changes {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {}; {} |",
            c.subject.name(),
            cell(&c.what),
            cell(&c.a),
            cell(&c.b),
            cell(&c.where_a),
            cell(&c.where_b)
        );
    }
}

/// The decision rule the figures were judged by: its first line, then a bullet per band.
fn rule_list(o: &mut String, r: &Report) {
    if let Some((head, lines)) = r.decision_rule.split_first() {
        let _ = writeln!(o, "\n{}\n", cell(head));
        for line in lines {
            let _ = writeln!(o, "- {}", cell(line));
        }
    }
}

fn figures_table(o: &mut String, r: &Report) {
    if !r.comparisons.is_empty() {
        let diff = r.command == "diff";
        let (a, b) = if diff {
            ("A", "B")
        } else {
            ("recorded", "replayed")
        };
        let _ = writeln!(o, "\n### Figures\n");
        if let Some(s) = &r.replay_summary {
            let _ = writeln!(o, "{}\n", s.line(diff));
        }
        let (better_head, better_rule) = if diff {
            (" better |", "---|")
        } else {
            ("", "")
        };
        let _ = writeln!(
            o,
            "| key | {a} | {b} | change % | p | verdict |{better_head} why |\n|---|---|---|---|---|---|{better_rule}---|"
        );
        for c in &r.comparisons {
            let better = if diff {
                format!(" {} |", better_word(c.better))
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} | {} | {}{} |{better} {} |",
                c.key,
                num(c.recorded),
                num(c.replayed),
                c.change_pct.map_or("–".into(), |x| format!("{x:+.1}")),
                c.p_value.map_or("–".into(), p_cell),
                c.verdict.name(),
                if c.informational { " (info)" } else { "" },
                cell(&c.why)
            );
        }
        rule_list(o, r);
    } else if !r.recomputed.is_empty() {
        let _ = writeln!(
            o,
            "\n### Recomputed figures\n\n| key | recomputed | file | page |\n|---|---|---|---|"
        );
        for v in &r.recomputed {
            let _ = writeln!(
                o,
                "| `{}` | {} | {} | {} |",
                v.key,
                num(v.value),
                num(v.file),
                v.page.as_deref().map_or("–".into(), cell)
            );
        }
    }
}

/// Renders a report as Markdown.
pub fn render(r: &Report) -> String {
    let mut o = verdict_line(r);
    o.push('\n');
    setup_table(&mut o, r);
    findings_table(&mut o, r);
    figures_table(&mut o, r);
    let _ = writeln!(
        o,
        "\n<sub>rigaudit {} · rules {} · {} checks in the catalogue</sub>",
        env!("CARGO_PKG_VERSION"),
        r.rules_version,
        rigaudit_audit::table::all().len()
    );
    o
}
