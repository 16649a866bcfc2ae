//! The report as Markdown that fits a pull-request comment: the verdict, the setup differences
//! (diff), then the findings and the figures, with only what fails or differs open (errors and
//! warnings, figures that do not match, rows that drifted or cannot be compared) and the rest
//! folded in `<details>`. Rows stop at a hard bound well below GitHub's 65,536 characters of a
//! comment; past it the report says how many rows are in the full report instead. Every string
//! rigaudit did not write itself (findings' messages, check ids, files, pointers, keys, values,
//! headlines) goes through [`super::escape`]'s Markdown escapers: page text is never raw HTML,
//! never a link or an image, never a code span, and never splits a table cell.

use super::escape::{markdown_cell as cell, markdown_code as code, markdown_prose, markdown_text};
use rigaudit_audit::decide::p_cell;
use rigaudit_audit::verdict::{better_word, runs_to_tell_line, Comparison, ReplayVerdict};
use rigaudit_audit::{headline, Finding, Report, Severity, Verdict};
use std::fmt::Write;

/// The most characters of table rows one report holds; with its headings, folds and last line it
/// stays below GitHub's 65,536 characters of a comment (each row is at most a few cells of
/// [`super::escape::CELL_MAX`] characters of text, and a report has a handful of tables).
const ROWS_MAX: usize = 60_000;

fn num(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| {
        if v.abs() >= 100.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.3}")
        }
    })
}

/// The report being written: its text, the characters of rows so far, and the rows left out past
/// [`ROWS_MAX`].
#[derive(Default)]
struct Page {
    text: String,
    rows_chars: usize,
    left_out: usize,
}

impl Page {
    /// A heading, fold or table head: always written.
    fn line(&mut self, s: &str) {
        self.text.push_str(s);
        self.text.push('\n');
    }

    /// A table row: written while the rows fit, else counted.
    fn row(&mut self, s: String) {
        let n = s.chars().count() + 1;
        if self.rows_chars + n > ROWS_MAX {
            self.left_out += 1;
            return;
        }
        self.rows_chars += n;
        self.line(&s);
    }

    /// A table of `rows` under `head`, open, or folded under `summary` when given.
    fn table(&mut self, summary: Option<String>, head: &str, rows: Vec<String>) {
        if rows.is_empty() {
            return;
        }
        match &summary {
            Some(s) => self.line(&format!("\n<details><summary>{s}</summary>\n")),
            None => self.line(""),
        }
        self.line(head);
        for r in rows {
            self.row(r);
        }
        if summary.is_some() {
            self.line("\n</details>");
        }
    }
}

fn verdict_line(r: &Report) -> String {
    let (icon, word) = match r.verdict {
        Verdict::Pass => ("✅", "PASS"),
        Verdict::Fail => ("❌", "FAIL"),
        Verdict::Incomplete => ("⚠️", "INCOMPLETE"),
    };
    // What a pass settled, decided with the verdict, as the text report says it.
    let word = match (r.verdict, &r.verdict_qualifier) {
        (Verdict::Pass, Some(q)) => format!("{word}, {}", cell(q)),
        _ => word.to_string(),
    };
    format!(
        "{icon} **rigaudit {} {}: {word}** ({} errors, {} warnings, {} notes; {} checks ran)",
        markdown_text(&r.command),
        code(&r.bundle),
        r.counts.error,
        r.counts.warning,
        r.counts.info,
        r.checks_run.len()
    )
}

/// Why, under the verdict line, as the text report's first lines say it: why it is incomplete,
/// one headline per failing family with its sum, and what to do.
fn why(p: &mut Page, r: &Report) {
    let mut lines: Vec<String> = Vec::new();
    if let Some(why) = &r.incomplete {
        lines.push(format!("- incomplete: {}", markdown_prose(why)));
    }
    lines.extend(
        headline::headlines(r)
            .iter()
            .map(|h| format!("- {}", markdown_prose(h))),
    );
    if let Some(next) = headline::next_step(r) {
        lines.push(format!("- what to do: {}", markdown_prose(&next)));
    }
    if !lines.is_empty() {
        p.line("");
        for l in &lines {
            p.line(l);
        }
    }
}

const FINDINGS_HEAD: &str = "| severity | check | where | message |\n|---|---|---|---|";

fn finding_row(f: &Finding) -> String {
    let place = match (&f.file, &f.pointer) {
        (Some(file), Some(p)) => format!("{} {}", code(file), code(p)),
        (Some(file), None) => code(file),
        _ => String::new(),
    };
    format!(
        "| {} | {} | {place} | {} |",
        f.severity.name(),
        code(&f.check),
        cell(&f.message)
    )
}

/// Errors and warnings open, notes folded.
fn findings(p: &mut Page, r: &Report) {
    if r.findings.is_empty() {
        p.line("\nNo findings.");
        return;
    }
    p.line("\n### Findings");
    let of = |sev: Severity| -> Vec<String> {
        let rows = r.findings.iter().filter(|f| f.severity == sev);
        rows.map(finding_row).collect()
    };
    let open: Vec<String> = [Severity::Error, Severity::Warning]
        .into_iter()
        .flat_map(of)
        .collect();
    p.table(None, FINDINGS_HEAD, open);
    let notes = of(Severity::Info);
    let summary = format!("notes ({})", notes.len());
    p.table(Some(summary), FINDINGS_HEAD, notes);
}

fn setup(p: &mut Page, r: &Report) {
    if r.setup_changes.is_empty() {
        return;
    }
    p.line("\n### Setup differences");
    let rows = r.setup_changes.iter().map(|c| {
        format!(
            "| {} | {} | {} | {} | {} |",
            c.subject.name(),
            cell(&c.what),
            cell(&c.a),
            cell(&c.b),
            cell(&c.places())
        )
    });
    let head = "| subject | what | A | B | where (A; B) |\n|---|---|---|---|---|";
    p.table(None, head, rows.collect());
}

/// A comparison row; diff's rows have a better/worse cell from the figure's direction.
fn comparison_row(c: &Comparison, diff: bool) -> String {
    let better = if diff {
        format!(" {} |", better_word(c.better))
    } else {
        String::new()
    };
    format!(
        "| {} | {} | {} | {} | {} | {}{} |{better} {} |",
        code(&c.key),
        num(c.recorded),
        num(c.replayed),
        c.change_shown().unwrap_or_else(|| "–".into()),
        c.p_value.map_or("–".into(), p_cell),
        c.verdict.name(),
        if c.informational { " (info)" } else { "" },
        cell(&c.why)
    )
}

/// The decision rule the figures were judged by: its first line, then a bullet per band.
fn rule_list(p: &mut Page, r: &Report) {
    if let Some((head, lines)) = r.decision_rule.split_first() {
        p.line(&format!("\n{}\n", cell(head)));
        for line in lines {
            p.line(&format!("- {}", cell(line)));
        }
    }
}

/// The comparison rows: those that moved or cannot be compared open, the others folded; then
/// the decision rule.
fn comparisons(p: &mut Page, r: &Report) {
    let diff = r.compares_two();
    let (a, b) = if diff {
        ("A", "B")
    } else {
        ("recorded", "replayed")
    };
    p.line("\n### Figures");
    if let Some(s) = &r.replay_summary {
        p.line(&format!("\n{}", markdown_text(&s.line(diff))));
    }
    let (better_head, better_rule) = if diff {
        (" better |", "---|")
    } else {
        ("", "")
    };
    let head = format!(
        "| key | {a} | {b} | change | p | verdict |{better_head} why |\n|---|---|---|---|---|---|{better_rule}---|"
    );
    let differs = |c: &&Comparison| {
        matches!(
            c.verdict,
            ReplayVerdict::Drifted | ReplayVerdict::Changed | ReplayVerdict::NotComparable
        )
    };
    let row = |c: &Comparison| comparison_row(c, diff);
    let open: Vec<String> = r.comparisons.iter().filter(differs).map(row).collect();
    let rest: Vec<String> = r
        .comparisons
        .iter()
        .filter(|c| !differs(c))
        .map(row)
        .collect();
    p.table(None, &head, open);
    let folded = if diff {
        "unchanged or inconclusive"
    } else {
        "reproduced or inconclusive"
    };
    p.table(Some(format!("{folded} ({})", rest.len())), &head, rest);
    if let Some(line) = runs_to_tell_line(&r.comparisons) {
        p.line(&format!("\n{}", cell(&line)));
    }
    rule_list(p, r);
}

/// What each rank's server mapped: the rank's line and loader variables, then its executables,
/// NCCL and files not surely hashed open, every other file folded.
fn loaded(p: &mut Page, r: &Report) {
    use super::loaded::{loader_line, object_note, rank_line, role, short_digest, shown_short};
    if r.loaded.is_empty() {
        return;
    }
    p.line("\n### What ran");
    let head = "| role | sha256 | path | what the file says |\n|---|---|---|---|";
    for rank in &r.loaded {
        p.line(&format!("\n{}", markdown_text(&rank_line(rank))));
        if let Some(line) = loader_line(rank) {
            p.line(&format!("\n{}", markdown_text(&line)));
        }
        for why in rank.not_read.iter().chain(&rank.gone) {
            p.line(&format!("\n- not read: {}", markdown_text(why)));
        }
        let row = |o: &&rigaudit_audit::records::LoadedObject| {
            format!(
                "| {} | {} | {} | {} |",
                role(o),
                code(&short_digest(o)),
                code(&o.path),
                cell(&object_note(o, rank.read_at.len()))
            )
        };
        let (open, rest): (Vec<_>, Vec<_>) = rank.objects.iter().partition(|o| shown_short(o));
        p.table(None, head, open.iter().map(row).collect());
        let folded = format!("every other file mapped ({})", rest.len());
        p.table(Some(folded), head, rest.iter().map(row).collect());
    }
}

/// The recomputed figures: those that do not match open, the others folded.
fn recomputed(p: &mut Page, r: &Report) {
    p.line("\n### Recomputed figures");
    let head = "| key | recomputed | file | page |\n|---|---|---|---|";
    let row = |v: &rigaudit_audit::Recomputed| {
        let page = v.page.as_deref().map_or("–".into(), cell);
        let (value, file) = (num(v.value), num(v.file));
        let (value, file) =
            crate::output::text::shown_apart(v, (&value, &file)).unwrap_or((value, file));
        format!("| {} | {value} | {file} | {page} |", code(&v.key))
    };
    let (agree, differ): (Vec<_>, Vec<_>) = r.recomputed.iter().partition(|v| v.matches);
    if differ.is_empty() {
        p.line("\nEvery figure the file and the page show matches its recomputed value.");
    }
    p.table(None, head, differ.into_iter().map(row).collect());
    let summary = format!("figures that match ({})", agree.len());
    p.table(Some(summary), head, agree.into_iter().map(row).collect());
}

/// Renders a report as Markdown.
pub fn render(r: &Report) -> String {
    let mut p = Page::default();
    p.line(&verdict_line(r));
    why(&mut p, r);
    setup(&mut p, r);
    findings(&mut p, r);
    if !r.comparisons.is_empty() {
        comparisons(&mut p, r);
    } else if !r.recomputed.is_empty() {
        recomputed(&mut p, r);
    }
    loaded(&mut p, r);
    if p.left_out > 0 {
        let n = p.left_out;
        p.line(&format!(
            "\n**{n} more in the full report** (rows left out to fit a comment; write every row with `--output report.html` or `report.json`)"
        ));
    }
    let mut o = p.text;
    let _ = writeln!(
        o,
        "\n<sub>rigaudit {} · rules {} · {} checks in the catalogue</sub>",
        env!("CARGO_PKG_VERSION"),
        r.rules_version,
        rigaudit_audit::table::all().len()
    );
    o
}

/// The catalogue as Markdown, kept as `docs/checks.md` (`rigaudit checks --format markdown`): a
/// heading per family, and one per check, whose anchor SARIF's rules link to.
pub fn catalogue() -> String {
    let mut o = String::from(
        "# The checks\n\nEvery check rigaudit runs, by family: its id, the highest severity it reports, what\nit finds, how to fix it and an example. `rigaudit checks` prints the same list and `rigaudit\nchecks ID` one check; this page is written by `rigaudit checks --format markdown` (a test keeps\nit current).\n",
    );
    let all = rigaudit_audit::table::all();
    let family = |id: &'static str| id.split('.').next().unwrap_or(id);
    let mut families: Vec<&str> = Vec::new();
    for c in &all {
        if !families.contains(&family(c.id)) {
            families.push(family(c.id));
        }
    }
    for f in families {
        let _ = writeln!(o, "\n## {f}");
        for c in all.iter().filter(|c| family(c.id) == f) {
            // The catalogue's own words, written for Markdown.
            let (id, doc, severity) = (c.id, own_words(c.doc), c.severity.name());
            let _ = writeln!(o, "\n### `{id}`\n\n{doc} ({severity})");
            if let Some(a) = rigaudit_audit::advice::of(c.id) {
                let _ = writeln!(
                    o,
                    "\n**Fix:** {}.\n\n**Example:** {}.",
                    own_words(a.fix),
                    own_words(a.example)
                );
            }
        }
    }
    o
}

/// rigaudit's own words (the catalogue's, never a page's) for Markdown: a `<` or `>` outside a
/// code span written as an entity, so `results_<time>.json` is not read as an HTML tag.
fn own_words(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut code = false;
    for ch in s.chars() {
        match ch {
            '`' => {
                code = !code;
                out.push(ch);
            }
            '<' if !code => out.push_str("&lt;"),
            '>' if !code => out.push_str("&gt;"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rigaudit_audit::{Findings, Recomputed};

    /// A failing report with `n` findings of each severity, long messages, and `figures` rows.
    fn big(n: usize, figures: usize) -> Report {
        let mut found = Findings::default();
        found.ran("speed.x");
        for i in 0..n {
            for sev in [Severity::Error, Severity::Warning, Severity::Info] {
                let msg = format!("finding {i} {} {}", sev.name(), "x".repeat(400));
                found
                    .findings
                    .push(Finding::new("speed.x", sev, msg).file("a.json"));
            }
        }
        for i in 0..figures {
            let page = Some(if i % 2 == 0 { "1.0" } else { "2.0" }.to_string());
            let row = Recomputed::new(format!("k{i}"), Some(1.0), Some(1.0), page);
            found.recomputed.push(row);
        }
        Report::new("verify", "big", Some(Severity::Error), found)
    }

    #[test]
    fn a_report_of_many_findings_fits_a_comment_and_counts_what_it_left_out() {
        let r = big(2_000, 3_000);
        let md = render(&r);
        assert!(md.chars().count() < 65_536, "{}", md.chars().count());
        let written = md
            .lines()
            .filter(|l| {
                l.starts_with("| error")
                    || l.starts_with("| warning")
                    || l.starts_with("| info")
                    || l.starts_with("| <code>k")
            })
            .count();
        let all = r.findings.len() + r.recomputed.len();
        let n = all - written;
        assert!(n > 0);
        assert!(
            md.contains(&format!("**{n} more in the full report**")),
            "{n}"
        );
        // The first rows written are the failing ones.
        let first = md
            .lines()
            .find(|l| l.starts_with("| ") && !l.starts_with("| severity"))
            .unwrap();
        assert!(first.starts_with("| error"), "{first}");
        assert_eq!(
            md.matches("<details>").count(),
            md.matches("</details>").count()
        );
    }

    #[test]
    fn only_what_fails_or_differs_is_open() {
        let md = render(&big(1, 4));
        let fold = md.find("<details><summary>notes (1)</summary>").unwrap();
        assert!(md.find("| error").unwrap() < fold && md.find("| warning").unwrap() < fold);
        assert!(md.find("| info").unwrap() > fold);
        let figures = md
            .find("<details><summary>figures that match (2)</summary>")
            .unwrap();
        assert!(md.find("| <code>k1</code> ").unwrap() < figures, "{md}");
        assert!(md.find("| <code>k0</code> ").unwrap() > figures, "{md}");
        assert!(!md.contains("more in the full report"));
    }

    /// A heading's anchor as GitHub makes it: lower case, characters other than letters, digits,
    /// spaces, `-` and `_` dropped, spaces made `-`.
    fn github_slug(heading: &str) -> String {
        heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect()
    }

    #[test]
    fn every_check_has_a_heading_whose_anchor_the_sarif_rule_links_to() {
        let page = catalogue();
        let headings: Vec<&str> = page
            .lines()
            .filter_map(|l| l.strip_prefix("### "))
            .collect();
        let all = rigaudit_audit::table::all();
        assert_eq!(headings.len(), all.len());
        for c in &all {
            let h = format!("`{}`", c.id);
            assert!(headings.contains(&h.as_str()), "{h}");
            assert_eq!(github_slug(&h), crate::output::sarif::anchor(c.id));
        }
        let families = page.lines().filter(|l| l.starts_with("## ")).count();
        let mut distinct: Vec<&str> = all
            .iter()
            .map(|c| c.id.split('.').next().unwrap())
            .collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(families, distinct.len(), "each family once");
    }
}
