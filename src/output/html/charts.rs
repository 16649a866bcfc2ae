//! The SVG charts, drawn so that disagreement shows: two sides' bars side by side (never one under
//! the other) with their spread as whiskers, a figure with no result as a hatched placeholder that
//! says so in words, a figure whose sides disagree marked ≠, and a legend for every mark drawn.
//! Lines of throughput draw the two sides with different strokes and markers (filled dots on a
//! solid line, open squares on a dashed one), so equal values show both marks.

use super::cells::{esc, quoted};
use super::style::palette::{BAD, GOOD, GRID, HATCH, SIDE_A, SIDE_B, TEXT, WHISKER};
use std::fmt::Write;

/// One bar: its value (none: no result) and its whisker, as the low and high ends.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bar {
    pub value: Option<f64>,
    pub whisker: Option<(f64, f64)>,
}

/// One group of a bar chart: a figure, a bar per side, whether its sides disagree (and, for a
/// diff's change, whether B is better), and why a side has no result (words printed under the
/// chart).
pub struct Group {
    pub label: String,
    pub bars: [Bar; 2],
    pub differs: bool,
    pub better: Option<bool>,
    pub note: Option<String>,
}

/// What a chart is: its title, the unit of its axis, its two sides' names, and what its whiskers
/// show (for the legend).
pub struct Frame<'a> {
    pub title: &'a str,
    pub unit: &'a str,
    pub sides: [&'a str; 2],
    pub whisker: &'a str,
    /// What ≠ over a group means here (the page and its records disagree, or B changed).
    pub differs: &'a str,
}

/// The two sides' colours (A, then B).
pub const COLORS: [&str; 2] = [SIDE_A, SIDE_B];
/// The mark over a figure (or a level) whose sides differ, and its colour: ≠ where the sides
/// disagree, ✓ where B changed for the better (never red), ✗ where it changed for the worse.
fn differs_mark(better: Option<bool>) -> (&'static str, &'static str) {
    match better {
        Some(true) => ("✓", GOOD),
        Some(false) => ("✗", BAD),
        None => ("≠", BAD),
    }
}

/// What a differs mark means in a legend: the frame's words, and the direction when it has one.
fn differs_words(frame_words: &str, better: Option<bool>) -> String {
    match better {
        Some(true) => format!("{frame_words}, better"),
        Some(false) => format!("{frame_words}, worse"),
        None => frame_words.to_string(),
    }
}

/// The directions of the differs marks drawn, each once, in the legend's order.
fn directions_drawn(drawn: impl Iterator<Item = Option<bool>>) -> Vec<Option<bool>> {
    let drawn: Vec<Option<bool>> = drawn.collect();
    [None, Some(false), Some(true)]
        .into_iter()
        .filter(|d| drawn.contains(d))
        .collect()
}

const W: f64 = 720.0;
const H: f64 = 320.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 80.0;
const PLOT_H: f64 = H - BOTTOM - TOP;
/// The height of a placeholder for no result.
const PLACEHOLDER_H: f64 = PLOT_H * 0.35;

/// A y axis from 0 to a round maximum above `max`: the maximum and its tick step.
fn axis(max: f64) -> (f64, f64) {
    let max = if max > 0.0 && max.is_finite() {
        max
    } else {
        1.0
    };
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// The y of value `v` on an axis topped at `top`.
fn y_of(v: f64, top: f64) -> f64 {
    H - BOTTOM - PLOT_H * v.max(0.0) / top
}

fn y_axis(o: &mut String, top: f64, step: f64, unit: &str) {
    let mut v = 0.0;
    while v <= top + step * 0.01 {
        let y = y_of(v, top);
        let _ = write!(
            o,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{W}" y2="{y:.1}" stroke="{GRID}"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
            LEFT - 4.0,
            y + 3.0,
            short(v)
        );
        v += step;
    }
    let mid = TOP + PLOT_H / 2.0;
    let _ = write!(
        o,
        r##"<text x="12" y="{mid:.1}" font-size="11" transform="rotate(-90 12 {mid:.1})" text-anchor="middle">{}</text>"##,
        esc(unit)
    );
}

fn short(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// What every chart of a page shares, defined once (an id is once per page): the hatching of a
/// placeholder for no result.
pub fn defs() -> String {
    format!(
        r##"<svg width="0" height="0" style="position:absolute" aria-hidden="true" xmlns="http://www.w3.org/2000/svg"><defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="{HATCH}" stroke-width="2"/></pattern></defs></svg>"##
    )
}

/// The opening of a chart: its caption, and an SVG labelled by its title and a description.
fn open(title: &str, described: &str) -> String {
    format!(
        r##"<figure><figcaption>{t}</figcaption><svg class="plot" role="img" aria-label="{t}: {d}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title><desc>{d}</desc>"##,
        t = esc(title),
        d = esc(described)
    )
}

/// A grouped bar chart: both sides' bars side by side with their whiskers, placeholders for no
/// result, ≠ over a group whose sides disagree; then, under it, why each placeholder is empty.
pub fn bar_chart(frame: &Frame, groups: &[Group]) -> String {
    let top_value = groups
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter_map(|b| b.value.map(|v| b.whisker.map_or(v, |w| w.1.max(v))))
        .fold(0.0f64, f64::max);
    let (top, step) = axis(top_value);
    let slot = (W - LEFT) / groups.len().max(1) as f64;
    let bw = (slot * 0.35).min(40.0);
    let differing = groups.iter().filter(|g| g.differs).count();
    let described = format!(
        "{} figures, {} beside {}; {differing} where they disagree",
        groups.len(),
        frame.sides[0],
        frame.sides[1]
    );
    let mut o = open(frame.title, &described);
    y_axis(&mut o, top, step, frame.unit);
    for (i, g) in groups.iter().enumerate() {
        let x0 = LEFT + slot * i as f64 + slot / 2.0 - bw;
        for (j, b) in g.bars.iter().enumerate() {
            draw_bar(&mut o, x0 + bw * j as f64, bw, b, top, COLORS[j]);
            if slot >= 48.0 {
                value_label(&mut o, x0 + bw * j as f64 + bw / 2.0, b, top);
            }
        }
        group_label(&mut o, x0 + bw, g, top);
    }
    let marks = Marks {
        whisker: groups
            .iter()
            .any(|g| g.bars.iter().any(|b| b.whisker.is_some())),
        no_result: groups
            .iter()
            .any(|g| g.bars.iter().any(|b| b.value.is_none())),
        differs: directions_drawn(groups.iter().filter(|g| g.differs).map(|g| g.better)),
    };
    legend(&mut o, frame, marks);
    o.push_str("</svg>");
    o.push_str(&notes(groups));
    o.push_str("</figure>\n");
    o
}

fn draw_bar(o: &mut String, x: f64, bw: f64, b: &Bar, top: f64, color: &str) {
    let base = H - BOTTOM;
    let Some(v) = b.value else {
        let h = PLACEHOLDER_H;
        let (cx, cy) = (x + bw / 2.0 - 1.0, base - h / 2.0);
        let _ = write!(
            o,
            r##"<rect class="invalid" x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="url(#hatch)" stroke="{color}"/><text x="{cx:.1}" y="{cy:.1}" font-size="10" text-anchor="middle" dominant-baseline="middle" transform="rotate(-90 {cx:.1} {cy:.1})">no result</text>"##,
            base - h,
            bw - 2.0,
        );
        return;
    };
    // A zero still shows: a bar of at least 1.5 px.
    let h = (base - y_of(v, top)).max(1.5);
    let _ = write!(
        o,
        r##"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{color}"><title>{}</title></rect>"##,
        base - h,
        bw - 2.0,
        short(v)
    );
    if let Some((lo, hi)) = b.whisker {
        let (y_hi, y_lo) = (y_of(hi, top), y_of(lo, top));
        let cx = x + bw / 2.0 - 1.0;
        let _ = write!(
            o,
            r##"<path class="err" d="M{cx:.1} {y_hi:.1}V{y_lo:.1}M{:.1} {y_hi:.1}H{:.1}M{:.1} {y_lo:.1}H{:.1}" stroke="{WHISKER}" stroke-width="1.5" fill="none"/>"##,
            cx - 4.0,
            cx + 4.0,
            cx - 4.0,
            cx + 4.0
        );
    }
}

/// The value over a bar, so two bars of one height still read as two numbers.
fn value_label(o: &mut String, cx: f64, b: &Bar, top: f64) {
    let Some(v) = b.value else { return };
    let above = b.whisker.map_or(v, |w| w.1.max(v));
    let _ = write!(
        o,
        r##"<text x="{cx:.1}" y="{:.1}" font-size="9" text-anchor="middle">{}</text>"##,
        y_of(above, top) - 3.0,
        short(v)
    );
}

/// A group's name under its bars (in its mark's colour when its sides differ, the mark after it)
/// and the mark over them: ≠, or ✓ / ✗ for a diff's change for the better or the worse.
fn group_label(o: &mut String, x: f64, g: &Group, top: f64) {
    let y = H - BOTTOM + 14.0;
    let (mark, color) = differs_mark(g.better);
    let (label_color, suffix) = if g.differs {
        (color, format!(" {mark}"))
    } else {
        (TEXT, String::new())
    };
    let _ = write!(
        o,
        r##"<text x="{x:.1}" y="{y:.1}" font-size="10" text-anchor="end" fill="{label_color}" transform="rotate(-35 {x:.1} {y:.1})">{}{suffix}</text>"##,
        esc(&g.label)
    );
    if g.differs {
        // Over the highest mark of the group: a bar with its whisker and label, or a placeholder.
        let highest = g
            .bars
            .iter()
            .map(|b| match b.value {
                Some(v) => y_of(b.whisker.map_or(v, |w| w.1.max(v)), top) - 12.0,
                None => H - BOTTOM - PLACEHOLDER_H,
            })
            .fold(H, f64::min);
        let y_mark = (highest - 8.0).max(TOP + 12.0);
        let _ = write!(
            o,
            r##"<text class="differs" x="{x:.1}" y="{y_mark:.1}" font-size="16" font-weight="bold" text-anchor="middle" fill="{color}">{mark}</text>"##
        );
    }
}

/// Which marks a chart drew, so its legend names each of them.
struct Marks {
    whisker: bool,
    no_result: bool,
    /// The directions of the differs marks drawn (none: ≠).
    differs: Vec<Option<bool>>,
}

/// The legend along the top: both sides, and each other mark the chart drew.
fn legend(o: &mut String, frame: &Frame, marks: Marks) {
    let mut x = LEFT;
    let mut y = 8.0;
    let mut item = |o: &mut String, swatch: String, text: &str| {
        let width = 20.0 + 6.0 * text.chars().count() as f64 + 14.0;
        if x + width > W {
            x = LEFT;
            y += 16.0;
        }
        let _ = write!(
            o,
            r##"<g class="legend" transform="translate({x:.1} {y:.1})">{swatch}<text x="16" y="9" font-size="11">{}</text></g>"##,
            esc(text)
        );
        x += width;
    };
    for (j, side) in frame.sides.iter().enumerate() {
        let swatch = format!(r##"<rect width="10" height="10" fill="{}"/>"##, COLORS[j]);
        item(o, swatch, side);
    }
    if marks.whisker {
        let swatch = format!(
            r##"<path d="M5 0V10M1 0H9M1 10H9" stroke="{WHISKER}" stroke-width="1.5" fill="none"/>"##
        );
        item(o, swatch, frame.whisker);
    }
    if marks.no_result {
        let swatch =
            format!(r##"<rect width="10" height="10" fill="url(#hatch)" stroke="{HATCH}"/>"##);
        item(o, swatch, "no result (why: under the chart)");
    }
    for better in marks.differs {
        let (mark, color) = differs_mark(better);
        let swatch = format!(
            r##"<text x="5" y="10" font-size="14" font-weight="bold" text-anchor="middle" fill="{color}">{mark}</text>"##
        );
        item(o, swatch, &differs_words(frame.differs, better));
    }
}

/// Why each placeholder is empty, in words, under the chart.
fn notes(groups: &[Group]) -> String {
    let items: String = groups
        .iter()
        .filter_map(|g| {
            let note = g.note.as_ref()?;
            Some(format!(
                "<li><code>{}</code>: {}</li>",
                esc(&g.label),
                quoted(note)
            ))
        })
        .collect();
    if items.is_empty() {
        return String::new();
    }
    format!("<ul class=\"chart-notes\">{items}</ul>")
}

/// One line of a line chart: what it shows (`total`, `per request`, written at its end), its
/// side (0: a solid line with dots, 1: a dashed line with open squares; each in its side's
/// colour), and its points.
pub struct Series {
    pub name: String,
    pub side: usize,
    pub points: Vec<(u32, f64)>,
}

/// Lines of throughput against requests at once, each side in its colour and stroke; the levels
/// in `differs` marked (≠, or ✓ / ✗ by whether B is better there).
pub fn line_chart(frame: &Frame, series: &[Series], differs: &[(u32, Option<bool>)]) -> String {
    let (title, unit, sides) = (frame.title, frame.unit, frame.sides);
    let max_y = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max);
    let mut levels: Vec<u32> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    levels.sort_unstable();
    levels.dedup();
    let (top, step) = axis(max_y);
    let x_of = |lv: u32| {
        let i = levels.iter().position(|l| *l == lv).unwrap_or(0) as f64;
        LEFT + 30.0 + (W - LEFT - 120.0) * i / (levels.len().max(2) - 1) as f64
    };
    let described = format!(
        "{} lines over {} levels of requests at once, {} beside {}; {} levels where they disagree",
        series.len(),
        levels.len(),
        sides[0],
        sides[1],
        differs.len()
    );
    let mut o = open(title, &described);
    y_axis(&mut o, top, step, unit);
    let xs: Vec<(u32, f64)> = levels.iter().map(|lv| (*lv, x_of(*lv))).collect();
    levels_axis(&mut o, &xs, differs);
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .map(|(lv, v)| (x_of(*lv), y_of(*v, top)))
                .collect()
        })
        .collect();
    // Every line first, then every marker over them: no line hides a marker.
    for (s, pts) in series.iter().zip(&points) {
        draw_line(&mut o, s, pts);
    }
    for (s, pts) in series.iter().zip(&points) {
        draw_markers(&mut o, s, pts);
    }
    let drawn = directions_drawn(differs.iter().map(|d| d.1));
    line_legend(&mut o, sides, frame.differs, &drawn);
    o.push_str("</svg></figure>\n");
    o
}

/// The x axis of a line chart: each level at its x, its mark over a level in `differs`, and its
/// name.
fn levels_axis(o: &mut String, xs: &[(u32, f64)], differs: &[(u32, Option<bool>)]) {
    for (lv, x) in xs {
        let _ = write!(
            o,
            r##"<text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="middle">{lv}</text>"##,
            H - BOTTOM + 14.0
        );
        if let Some((_, better)) = differs.iter().find(|d| d.0 == *lv) {
            let (mark, color) = differs_mark(*better);
            let _ = write!(
                o,
                r##"<text class="differs" x="{x:.1}" y="{:.1}" font-size="16" font-weight="bold" text-anchor="middle" fill="{color}">{mark}</text>"##,
                TOP + 12.0
            );
        }
    }
    let _ = write!(
        o,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">requests at once</text>"##,
        (W + LEFT) / 2.0,
        H - BOTTOM + 32.0
    );
}

/// A series' line through its points.
fn draw_line(o: &mut String, s: &Series, points: &[(f64, f64)]) {
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let _ = write!(
        o,
        r##"<polyline class="series" points="{}" fill="none" stroke="{}" stroke-width="2"{}/>"##,
        path.join(" "),
        COLORS[s.side % 2],
        dash(s.side)
    );
}

/// A series' side's marker at each point, and its name at its end.
fn draw_markers(o: &mut String, s: &Series, points: &[(f64, f64)]) {
    let color = COLORS[s.side % 2];
    for (x, y) in points {
        o.push_str(&marker(s.side, *x, *y, color));
    }
    if let Some((x, y)) = points.last() {
        // Side 0's name above its last point, side 1's below, so equal lines keep both.
        let dy = if s.side == 0 { -4.0 } else { 12.0 };
        let _ = write!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="{color}">{}</text>"##,
            x + 8.0,
            y + dy,
            esc(&s.name)
        );
    }
}

fn dash(side: usize) -> &'static str {
    if side == 1 {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    }
}

/// Side 0's marker, a filled dot; side 1's, an open square around it, so both show when equal.
fn marker(side: usize, x: f64, y: f64, color: &str) -> String {
    if side == 0 {
        format!(r##"<circle class="mark side0" cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}"/>"##)
    } else {
        format!(
            r##"<rect class="mark side1" x="{:.1}" y="{:.1}" width="10" height="10" fill="none" stroke="{color}" stroke-width="1.5"/>"##,
            x - 5.0,
            y - 5.0
        )
    }
}

/// The legend of a line chart: each side's stroke and marker, and each differs mark drawn.
fn line_legend(o: &mut String, sides: [&str; 2], differs: &str, drawn: &[Option<bool>]) {
    let mut x = LEFT;
    for (side, name) in sides.iter().enumerate() {
        let color = COLORS[side];
        let _ = write!(
            o,
            r##"<g class="legend" transform="translate({x:.1} 8)"><line x1="0" y1="5" x2="24" y2="5" stroke="{color}" stroke-width="2"{}/>{}<text x="30" y="9" font-size="11">{}</text></g>"##,
            dash(side),
            marker(side, 12.0, 5.0, color),
            esc(name)
        );
        x += 40.0 + 6.0 * name.chars().count() as f64;
    }
    for better in drawn {
        let (mark, color) = differs_mark(*better);
        let words = differs_words(differs, *better);
        let _ = write!(
            o,
            r##"<text x="{x:.1}" y="17" font-size="11" fill="{color}">{mark} {}</text>"##,
            esc(&words)
        );
        x += 20.0 + 6.0 * words.chars().count() as f64;
    }
}
