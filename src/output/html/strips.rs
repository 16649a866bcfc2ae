//! The paired changes of an interleaved comparison (`ab`) drawn per figure: each ABBA quartet's
//! change of B over A as a dot, the interval the verdict rests on as a bar, the band shaded, zero
//! marked; one row per figure, its verdict in words beside it (the chart is never the only place
//! a verdict is said).

use super::cells::esc;
use super::style::palette::{BAD, GOOD, GRID, TEXT, WHISKER};
use rigaudit_audit::verdict::{Comparison, ReplayVerdict};
use rigaudit_audit::Report;
use std::fmt::Write;

const ROW_H: f64 = 26.0;
const LEFT: f64 = 170.0;
const PLOT_W: f64 = 420.0;
const RIGHT: f64 = 150.0;

/// The strip chart of an `ab` report's speed rows with quartet changes; empty for other reports.
pub fn paired_changes(r: &Report) -> String {
    if r.command != "ab" {
        return String::new();
    }
    let rows: Vec<&Comparison> = r
        .comparisons
        .iter()
        .filter(|c| !c.unit_changes.is_empty())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let reach = reach_of(&rows);
    let x = |pct: f64| LEFT + PLOT_W * (pct.clamp(-reach, reach) + reach) / (2.0 * reach);
    let height = ROW_H * rows.len() as f64 + 30.0;
    let width = LEFT + PLOT_W + RIGHT;
    let mut o = String::new();
    let _ = write!(
        o,
        "<section><h2>Paired changes, B over A, per quartet</h2><figure><svg role=\"img\" aria-labelledby=\"pc-t\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\"><title id=\"pc-t\">Each quartet's change of B over A per figure (dots), the interval of the verdict (bar) and the band (shaded)</title>"
    );
    let _ = write!(
        o,
        "<line x1=\"{z:.1}\" y1=\"4\" x2=\"{z:.1}\" y2=\"{:.1}\" stroke=\"{GRID}\"/>",
        height - 22.0,
        z = x(0.0)
    );
    for (i, c) in rows.iter().enumerate() {
        o.push_str(&strip_row(c, ROW_H * i as f64 + 14.0, &x));
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{TEXT}\" font-size=\"11\">-{reach:.0} %</text><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{TEXT}\" font-size=\"11\" text-anchor=\"end\">+{reach:.0} %</text></svg>",
        LEFT,
        height - 6.0,
        LEFT + PLOT_W,
        height - 6.0
    );
    o.push_str("<figcaption>Dots: each ABBA quartet's change of B over A. Bar: the interval the verdict rests on. Shaded: the band. The verdict is written beside each figure.</figcaption></figure></section>");
    o
}

/// The half-width of the axis in percent: every dot, interval and band inside, at least 5 %.
fn reach_of(rows: &[&Comparison]) -> f64 {
    let mut reach: f64 = 5.0;
    for c in rows {
        for u in &c.unit_changes {
            reach = reach.max(u.abs());
        }
        for v in c.interval90.iter().flatten().chain(c.band.iter()) {
            reach = reach.max(v.abs());
        }
    }
    (reach * 1.1).min(200.0).ceil()
}

/// One figure's row at height `y`.
fn strip_row(c: &Comparison, y: f64, x: &dyn Fn(f64) -> f64) -> String {
    let mut o = String::new();
    if let Some(b) = c.band {
        let _ = write!(
            o,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"16\" fill=\"{GRID}\" fill-opacity=\"0.35\"/>",
            x(-b),
            y - 8.0,
            x(b) - x(-b)
        );
    }
    let colour = match (c.verdict, c.better) {
        (ReplayVerdict::Changed, Some(true)) => GOOD,
        (ReplayVerdict::Changed, _) => BAD,
        _ => WHISKER,
    };
    if let Some([lo, hi]) = c.interval90 {
        let _ = write!(
            o,
            "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"3\"/>",
            x(lo),
            x(hi)
        );
    }
    for u in &c.unit_changes {
        let _ = write!(
            o,
            "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{TEXT}\" fill-opacity=\"0.7\"/>",
            x(*u)
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{TEXT}\" font-size=\"12\" text-anchor=\"end\">{}</text><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{TEXT}\" font-size=\"12\">{} {}</text>",
        LEFT - 6.0,
        y + 4.0,
        esc(&c.key),
        LEFT + PLOT_W + 6.0,
        y + 4.0,
        esc(c.verdict.name()),
        esc(&c.change_shown().unwrap_or_default())
    );
    o
}
