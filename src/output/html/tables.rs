//! The page's tables of figures: every recomputed figure beside what the page and the file show
//! (verify, audit), the figures of two sides with their change and verdict (diff, replay), the
//! decision rule they were judged by, and a diff's setup differences, each listed once.

use super::cells::{at_precision, esc, num, numeric_order, path, quoted, Agreement};
use super::findings::SETUP_ANCHOR;
use rigaudit_audit::decide::p_cell;
use rigaudit_audit::verdict::{better_word, runs_to_tell_line, Comparison, ReplayVerdict};
use rigaudit_audit::{Recomputed, Report};
use std::fmt::Write;

/// The header row of a table: each name a column header.
fn head(names: &[&str]) -> String {
    let cells: String = names
        .iter()
        .map(|n| format!("<th scope=\"col\">{n}</th>"))
        .collect();
    format!("<thead><tr>{cells}</tr></thead>")
}

/// Every recomputed figure in numeric key order: the page's value, the recomputed one, the
/// file's, and whether they agree (the checks' rule); rows that differ or have no result marked.
pub fn recomputed(r: &Report) -> String {
    if r.recomputed.is_empty() {
        return String::new();
    }
    let rows = numeric_order(&r.recomputed);
    let count = |a| rows.iter().filter(|v| Agreement::of(v) == a).count();
    let mut summary = format!(
        "{} figures recomputed from the raw records: {} match",
        rows.len(),
        count(Agreement::Match)
    );
    for (a, what) in [
        (Agreement::Differs, "differ"),
        (Agreement::NoResult, "have no result"),
    ] {
        if count(a) > 0 {
            let _ = write!(summary, ", {} {what}", count(a));
        }
    }
    let mut o = format!(
        "<section id=\"figures\"><h2>Figures</h2><table class=\"figures\"><caption>{summary}</caption>{}<tbody>",
        head(&["figure", "page", "recomputed", "file", "agreement"])
    );
    for v in rows {
        o.push_str(&recomputed_row(v));
    }
    o.push_str("</tbody></table></section>\n");
    o
}

fn recomputed_row(v: &Recomputed) -> String {
    let agreement = Agreement::of(v);
    let class = match agreement {
        Agreement::Match => "match",
        Agreement::Differs => "differs",
        Agreement::NoResult => "noresult",
    };
    let page = v.page.as_deref();
    let mark = match agreement {
        Agreement::Differs => "<td class=\"mark\"><strong>differs</strong></td>".to_string(),
        a => format!("<td>{}</td>", a.word()),
    };
    let (value, file) = (
        at_precision(v.value, page),
        v.file.map_or("–".into(), |x| num(Some(x))),
    );
    let (value, file) =
        crate::output::text::shown_apart(v, (&value, &file)).unwrap_or((value, file));
    format!(
        "<tr class=\"{class}\"><th scope=\"row\"><code>{}</code></th><td>{}</td><td>{value}</td><td>{file}</td>{mark}</tr>",
        esc(&v.key),
        page.map_or("–".into(), quoted),
    )
}

/// The figures of the two sides, one row each: A, B, the change, better or worse (diff), the
/// verdict, the p-value, and why; then how many runs would tell ±5 % and ±10 % (the planning
/// line of the text report) and the decision rule.
pub fn comparisons(r: &Report) -> String {
    if r.comparisons.is_empty() {
        return String::new();
    }
    let diff = r.compares_two();
    let mut names = vec!["figure"];
    names.extend(if diff {
        ["A", "B"]
    } else {
        ["recorded", "replayed"]
    });
    names.push("change");
    if diff {
        names.push("better / worse");
    }
    names.extend(["verdict", "p", "why"]);
    let caption = r
        .replay_summary
        .as_ref()
        .map_or(String::new(), |s| esc(&s.line(diff)));
    let mut o = format!(
        "<section id=\"figures\"><h2>Figures</h2><table class=\"figures\"><caption>{caption}</caption>{}<tbody>",
        head(&names)
    );
    for c in &r.comparisons {
        o.push_str(&comparison_row(c, diff));
    }
    o.push_str("</tbody></table>");
    if let Some(line) = runs_to_tell_line(&r.comparisons) {
        let _ = write!(o, "<p class=\"plan\">{}</p>", esc(&line));
    }
    o.push_str(&rule(r));
    o.push_str("</section>\n");
    o
}

/// A figure's row: a diff's change marked better (✓, green) or worse (✗, red), never by colour
/// alone and never an improvement in red; a replay's drift marked in its verdict cell.
fn comparison_row(c: &Comparison, diff: bool) -> String {
    let moved = matches!(c.verdict, ReplayVerdict::Drifted | ReplayVerdict::Changed);
    let class = match (c.verdict, c.better) {
        (ReplayVerdict::NotComparable, _) => "noresult",
        (_, Some(true)) if moved && diff => "better",
        (_, Some(false)) if moved && diff => "worse",
        _ if moved => "differs",
        _ => "match",
    };
    let change = c.change_shown().unwrap_or_else(|| "–".into());
    let better = if diff {
        let symbol = match c.better {
            Some(true) => "✓ ",
            Some(false) => "✗ ",
            None => "",
        };
        let mark = if c.better.is_some() {
            " class=\"mark\""
        } else {
            ""
        };
        format!("<td{mark}>{symbol}{}</td>", better_word(c.better))
    } else {
        String::new()
    };
    // A replay's row says how it moved in its verdict cell.
    let verdict_mark = if !diff && moved {
        " class=\"mark\""
    } else {
        ""
    };
    let info = if c.informational { " (info)" } else { "" };
    format!(
        "<tr class=\"{class}\"><th scope=\"row\"><code>{}</code></th><td>{}</td><td>{}</td><td>{change}</td>{better}<td{verdict_mark}>{}{info}</td><td>{}</td><td>{}</td></tr>",
        esc(&c.key),
        num(c.recorded),
        num(c.replayed),
        c.verdict.name(),
        c.p_value.map_or("–".into(), |p| esc(&p_cell(p))),
        quoted(&c.why)
    )
}

/// The decision rule the rows were judged by: its first line, then a bullet per band.
fn rule(r: &Report) -> String {
    let Some((first, bands)) = r.decision_rule.split_first() else {
        return String::new();
    };
    let items: String = bands
        .iter()
        .map(|b| format!("<li>{}</li>", esc(b)))
        .collect();
    format!("<p>{}</p><ul>{items}</ul>", esc(first))
}

/// A diff's setup differences, each once: what it is about, what differs, A's and B's values and
/// where each records it.
pub fn setup(r: &Report) -> String {
    if r.setup_changes.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<section id=\"{SETUP_ANCHOR}\"><h2>Setup differences</h2><table class=\"setup\"><caption>{} setup differences, each listed once</caption>{}<tbody>",
        r.setup_changes.len(),
        head(&["subject", "what", "A", "B", "where A records it", "where B records it"])
    );
    for c in &r.setup_changes {
        let _ = write!(
            o,
            "<tr><td>{}</td><th scope=\"row\">{}</th><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            c.subject.name(),
            quoted(&c.what),
            quoted(&c.a),
            quoted(&c.b),
            path(&quoted(&c.where_a)),
            path(&quoted(&c.where_b))
        );
    }
    o.push_str("</tbody></table></section>\n");
    o
}

/// What each rank's server mapped: per rank its line, loader variables and what could not be
/// read, then every file with its role, sha256 and what it says of itself.
pub fn loaded(r: &Report) -> String {
    use crate::output::loaded::{loader_line, object_note, rank_line, role};
    if r.loaded.is_empty() {
        return String::new();
    }
    let mut o = String::from("<section id=\"loaded\"><h2>What ran</h2>");
    for rank in &r.loaded {
        let _ = write!(o, "<h3>{}</h3>", esc(&rank_line(rank)));
        if let Some(line) = loader_line(rank) {
            let _ = write!(o, "<p>{}</p>", esc(&line));
        }
        for why in rank.not_read.iter().chain(&rank.gone) {
            let _ = write!(o, "<p class=\"noresult\">not read: {}</p>", esc(why));
        }
        if rank.objects.is_empty() {
            continue;
        }
        let _ = write!(
            o,
            "<table class=\"loaded\">{}<tbody>",
            head(&["role", "sha256", "path", "what the file says"])
        );
        for x in &rank.objects {
            let _ = write!(
                o,
                "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
                role(x),
                esc(x.sha256.as_deref().unwrap_or("–")),
                esc(&x.path),
                esc(&object_note(x, rank.read_at.len()))
            );
        }
        o.push_str("</tbody></table>");
    }
    o.push_str("</section>\n");
    o
}
