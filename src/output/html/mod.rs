//! The report as one self-contained HTML file (inline CSS and SVG, no script, nothing fetched at
//! view time), its most important part first, as the text report: the verdict with what it
//! covers, why and what to do; then the findings by severity, the errors in a callout
//! (`findings.rs`); the table of figures, every recomputed figure beside the page's, or a diff's
//! and replay's figures side by side with their change and verdict (`tables.rs`); the charts,
//! drawn so that disagreement, missing results and spread show (`plots.rs` picks them,
//! `charts.rs` draws them); last a diff's setup differences, each once. `cells.rs` escapes text
//! and writes numbers for all of them; `style.rs` holds the colours (each pair WCAG AA) and the
//! style sheet. The page is well-formed XML as well as HTML (void
//! elements closed, ids once), so a strict parser reads it (tests/it/reports.rs checks it so). Every
//! string rigaudit did not write itself, in text and in attributes alike, goes through
//! [`super::escape::html_text`]; and the page's Content-Security-Policy ([`CSP`]) lets it load
//! nothing and run nothing, should anything get through.

mod cells;
mod charts;
mod findings;
mod plots;
mod strips;
mod style;
mod tables;

use cells::esc;
use rigaudit_audit::{Report, Verdict};
use std::fmt::Write;

/// The page's Content-Security-Policy: nothing loaded (no script, no image, no font, no frame,
/// no connection), only the inline style; no `<base>`, no form sent anywhere. Its charts are inline
/// SVG, which needs no source.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'";

/// Why, under the verdict, as the text report's first lines say it: why it is incomplete, one
/// headline per failing family with its sum, and what to do (empty when there is nothing to say).
fn why(r: &Report) -> String {
    use rigaudit_audit::headline;
    let mut items: Vec<String> = Vec::new();
    if let Some(why) = &r.incomplete {
        items.push(format!("incomplete: {}", esc(why)));
    }
    items.extend(headline::headlines(r).iter().map(|h| esc(h)));
    if let Some(next) = headline::next_step(r) {
        items.push(format!("what to do: {}", esc(&next)));
    }
    if items.is_empty() {
        return String::new();
    }
    let list: String = items.iter().map(|i| format!("<li>{i}</li>")).collect();
    format!("<ul class=\"why\">{list}</ul>")
}

/// The verdict, the counts and the rules, then why and what to do.
fn lead(r: &Report) -> String {
    let (word, class) = match r.verdict {
        Verdict::Pass => ("PASS", "pass"),
        Verdict::Fail => ("FAIL", "fail"),
        Verdict::Incomplete => ("INCOMPLETE", "incomplete"),
    };
    // What a pass settled, decided with the verdict, as the text report says it.
    let word = match (r.verdict, &r.verdict_qualifier) {
        (Verdict::Pass, Some(q)) => format!("{word}, {}", esc(q)),
        _ => word.to_string(),
    };
    let mut o = format!(
        "<p class=\"verdict {class}\">{word} ({} errors, {} warnings, {} notes; {} checks ran; rules {})</p>",
        r.counts.error,
        r.counts.warning,
        r.counts.info,
        r.checks_run.len(),
        esc(&r.rules_version)
    );
    o.push_str(&why(r));
    if r.comparisons.is_empty() {
        if let Some(s) = &r.replay_summary {
            let _ = write!(o, "<p>{}</p>", esc(&s.line(r.compares_two())));
        }
    }
    o
}

/// Renders a report as one self-contained HTML page: the lead lines, the findings, the table of
/// figures, the charts, the setup differences.
pub fn render(r: &Report) -> String {
    let title = format!("rigaudit {} {}", r.command, r.bundle);
    let mut o = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>");
    let _ = write!(
        o,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"/><meta name=\"referrer\" content=\"no-referrer\"/><title>{}</title><style>{}</style></head><body><main><h1>{}</h1>",
        esc(&title),
        style::css(),
        esc(&title)
    );
    o.push_str(&lead(r));
    o.push_str(&findings::section(r));
    if r.comparisons.is_empty() {
        o.push_str(&tables::recomputed(r));
    } else {
        o.push_str(&tables::comparisons(r));
    }
    o.push_str(&strips::paired_changes(r));
    o.push_str(&plots::charts(r));
    o.push_str(&tables::setup(r));
    o.push_str(&tables::loaded(r));
    o.push_str("</main></body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rigaudit_audit::{Comparison, Finding, Findings, ReplayVerdict, Severity};

    /// A replay's report: one figure that drifted (with its runs' spread), one the replay has
    /// no result for, and a finding whose message quotes hostile input.
    fn replayed() -> Report {
        let mut found = Findings::default();
        found.ran("replay.drifted");
        let hostile = "decode <script>alert(1)</script> & \"quoted\"";
        found
            .findings
            .push(Finding::new("replay.drifted", Severity::Error, hostile).file("speed.json"));
        let mut r = Report::new("replay", "b", Some(Severity::Error), found);
        let mut drifted = Comparison::untested("decode", (Some(30.0), Some(20.0)), (5, 5));
        drifted.verdict = ReplayVerdict::Drifted;
        drifted.sd_recorded = Some(1.0);
        drifted.sd_replayed = Some(2.0);
        drifted.p_value = Some(0.00001);
        drifted.runs_to_tell = Some(rigaudit_audit::verdict::RunsToTell { pct5: 9, pct10: 3 });
        let mut missing = Comparison::untested("decode.code", (Some(30.0), None), (5, 0));
        missing.why = "every request refused on the replay".into();
        r.comparisons = vec![drifted, missing];
        r
    }

    #[test]
    fn a_replay_page_names_its_sides_marks_the_drift_and_says_why_a_result_is_missing() {
        let page = render(&replayed());
        let table = &page[page.find("<table class=\"figures\">").unwrap()..];
        assert!(table.contains("<th scope=\"col\">recorded</th><th scope=\"col\">replayed</th>"));
        assert!(
            !table.contains("better / worse"),
            "only diff has better/worse"
        );
        assert_eq!(page.matches("<tr class=\"differs\">").count(), 1);
        assert!(
            page.contains("<td>-33.3 %</td><td class=\"mark\">drifted</td><td>&lt; 0.0001</td>")
        );
        // The chart: both whiskers, ≠ over the drift with its legend, the placeholder's why.
        assert_eq!(page.matches("class=\"err\"").count(), 2);
        assert_eq!(page.matches("<text class=\"differs\"").count(), 1);
        assert!(page.contains(">drifted beyond the band</text>"));
        assert!(
            page.contains("<li><code>decode.code</code>: every request refused on the replay</li>")
        );
        // The findings come before the table, the table before the chart.
        let (findings, figures, chart) = (
            page.find("<h2>Findings</h2>").unwrap(),
            page.find("<h2>Figures</h2>").unwrap(),
            page.find("<figure>").unwrap(),
        );
        assert!(findings < figures && figures < chart);
        // Under the table, how many runs would tell ±5 % and ±10 %: the text report's line.
        assert!(page.contains(
            "<p class=\"plan\">runs a side to tell ±5 % / ±10 % at the spread measured: decode 9/3"
        ));
    }

    /// A diff's report: B decodes faster (better) and takes longer to the first token (worse).
    fn diffed() -> Report {
        let mut r = Report::new("diff", "a vs b", Some(Severity::Error), Findings::default());
        let mut faster = Comparison::untested("decode", (Some(20.0), Some(30.0)), (5, 5));
        faster.verdict = ReplayVerdict::Changed;
        faster.better = Some(true);
        let mut slower = Comparison::untested("ttft.2048", (Some(1.0), Some(2.0)), (5, 5));
        slower.verdict = ReplayVerdict::Changed;
        slower.better = Some(false);
        r.comparisons = vec![faster, slower];
        r
    }

    #[test]
    fn a_diff_says_better_and_worse_in_words_and_never_draws_an_improvement_red() {
        use style::palette::{BAD, GOOD};
        let page = render(&diffed());
        assert!(page.contains(
            "<tr class=\"better\"><th scope=\"row\"><code>decode</code></th><td>20</td><td>30</td><td>+50.0 %</td><td class=\"mark\">✓ better</td><td>changed</td>"
        ), "{page}");
        assert!(page.contains(
            "<tr class=\"worse\"><th scope=\"row\"><code>ttft.2048</code></th><td>1</td><td>2</td><td>+100.0 %</td><td class=\"mark\">✗ worse</td><td>changed</td>"
        ), "{page}");
        // The charts: ✓ in green over the better figure, ✗ in red over the worse, each named
        // in the legend and after the figure's name.
        let good = format!("fill=\"{GOOD}\">✓</text>");
        let bad = format!("fill=\"{BAD}\">✗</text>");
        assert_eq!(page.matches(&good).count(), 2, "mark and legend");
        assert_eq!(page.matches(&bad).count(), 2, "mark and legend");
        assert!(page.contains(">changed beyond the band, better</text>"));
        assert!(page.contains(">changed beyond the band, worse</text>"));
        assert!(page.contains(">decode ✓</text>") && page.contains(">ttft.2048 ✗</text>"));
        assert!(!page.contains(&format!("fill=\"{BAD}\">✓")));
        // The style sheet colours a better row's mark green, a worse row's red.
        assert!(page.contains(&format!("tr.better .mark{{color:{GOOD}}}")));
        assert!(page.contains(&format!("tr.differs .mark,tr.worse .mark{{color:{BAD}}}")));
    }

    #[test]
    fn every_colour_on_a_page_is_the_palettes() {
        for page in [render(&replayed()), render(&diffed())] {
            for c in style::colours_in(&page) {
                assert!(
                    style::palette::ALL.contains(&c.as_str()),
                    "{c} is not in the palette"
                );
            }
        }
    }

    #[test]
    fn input_quoted_in_a_finding_is_text_not_markup() {
        let page = render(&replayed());
        assert!(!page.contains("<script"));
        assert!(page.contains(&format!(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"/>"
        )));
        assert!(!CSP.contains("script-src") && !CSP.contains("http"));
        assert!(
            page.contains("decode &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;")
        );
    }
}
