//! The report as one self-contained HTML file: inline CSS and SVG plots, no script and nothing
//! fetched at view time. Plots:
//! - throughput (total and per request) against requests at once, one line per side;
//! - every speed figure, the two sides side by side (recorded and replayed, A and B, or the file
//!   and the page for `verify`), with the runs' spread as error bars where the report has it;
//! - quality percentages with their 95 % margins as error bars;
//! - an invalid step (not comparable, no result) is drawn as a hatched placeholder with an ✕.
//!
//! Then the verdict, the setup differences, the findings and the figures as tables.

use rigaudit_audit::{Report, Verdict};
use std::collections::BTreeMap;
use std::fmt::Write;

/// HTML text with the five characters escaped and control characters dropped.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\n' | '\t' => o.push(c),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// One bar of a grouped bar chart: a value (none: invalid step) and its error bar.
#[derive(Debug, Clone, Copy)]
struct Bar {
    value: Option<f64>,
    err: Option<f64>,
}

/// One group: a label and one bar per side.
struct Group {
    label: String,
    bars: [Bar; 2],
}

const COLORS: [&str; 2] = ["#4e79a7", "#f28e2b"];
const W: f64 = 720.0;
const H: f64 = 280.0;
const LEFT: f64 = 60.0;
const BOTTOM: f64 = 80.0;

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

fn y_axis(o: &mut String, top: f64, step: f64, unit: &str) {
    let plot_h = H - BOTTOM - 20.0;
    let mut v = 0.0;
    while v <= top + step * 0.01 {
        let y = H - BOTTOM - plot_h * v / top;
        let _ = write!(
            o,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{W}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
            LEFT - 4.0,
            y + 3.0,
            short(v)
        );
        v += step;
    }
    let _ = write!(
        o,
        r##"<text x="12" y="{:.1}" font-size="11" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"##,
        H / 2.0,
        H / 2.0,
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

/// A grouped bar chart with error bars; `None` values are hatched placeholders with an ✕.
fn bar_chart(title: &str, unit: &str, sides: [&str; 2], groups: &[Group]) -> String {
    let top_value = groups
        .iter()
        .flat_map(|g| g.bars.iter())
        .filter_map(|b| b.value.map(|v| v + b.err.unwrap_or(0.0)))
        .fold(0.0f64, f64::max);
    let (top, step) = axis(top_value);
    let plot_h = H - BOTTOM - 20.0;
    let slot = (W - LEFT) / groups.len().max(1) as f64;
    let bw = (slot * 0.35).min(40.0);
    let mut o = format!(
        r##"<figure><figcaption>{}</figcaption><svg class="plot" role="img" aria-label="{}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" xmlns="http://www.w3.org/2000/svg"><defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="2"/></pattern></defs>"##,
        esc(title),
        esc(title)
    );
    y_axis(&mut o, top, step, unit);
    for (i, g) in groups.iter().enumerate() {
        let x0 = LEFT + slot * i as f64 + slot / 2.0 - bw;
        for (j, b) in g.bars.iter().enumerate() {
            let x = x0 + bw * j as f64;
            draw_bar(&mut o, x, bw, b, top, plot_h, COLORS[j]);
        }
        let _ = write!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" transform="rotate(-35 {:.1} {:.1})">{}</text>"##,
            x0 + bw,
            H - BOTTOM + 14.0,
            x0 + bw,
            H - BOTTOM + 14.0,
            esc(&g.label)
        );
    }
    legend(&mut o, sides);
    o.push_str("</svg></figure>\n");
    o
}

fn draw_bar(o: &mut String, x: f64, bw: f64, b: &Bar, top: f64, plot_h: f64, color: &str) {
    let base = H - BOTTOM;
    let Some(v) = b.value else {
        let _ = write!(
            o,
            r##"<rect class="invalid" x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="url(#hatch)" stroke="#999"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#c00">✕</text>"##,
            base - plot_h * 0.15,
            bw - 2.0,
            plot_h * 0.15,
            x + bw / 2.0,
            base - plot_h * 0.15 - 3.0
        );
        return;
    };
    let h = plot_h * v.max(0.0) / top;
    let _ = write!(
        o,
        r##"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{color}"><title>{}</title></rect>"##,
        base - h,
        bw - 2.0,
        short(v)
    );
    if let Some(e) = b.err.filter(|e| *e > 0.0) {
        let (hi, lo) = (
            base - plot_h * (v + e) / top,
            base - plot_h * (v - e).max(0.0) / top,
        );
        let cx = x + bw / 2.0 - 1.0;
        let _ = write!(
            o,
            r##"<path class="err" d="M{cx:.1} {hi:.1}V{lo:.1}M{:.1} {hi:.1}H{:.1}M{:.1} {lo:.1}H{:.1}" stroke="#222" fill="none"/>"##,
            cx - 4.0,
            cx + 4.0,
            cx - 4.0,
            cx + 4.0
        );
    }
}

fn legend(o: &mut String, sides: [&str; 2]) {
    for (j, name) in sides.iter().enumerate() {
        let x = W - 200.0 + 100.0 * j as f64;
        let _ = write!(
            o,
            r##"<rect x="{x}" y="4" width="10" height="10" fill="{}"/><text x="{}" y="13" font-size="11">{}</text>"##,
            COLORS[j],
            x + 14.0,
            esc(name)
        );
    }
}

/// Lines of throughput against requests at once: one polyline per series.
fn line_chart(title: &str, unit: &str, series: &[(String, Vec<(u32, f64)>)]) -> String {
    let max_y = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(0.0f64, f64::max);
    let levels: Vec<u32> = {
        let mut l: Vec<u32> = series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|x| x.0))
            .collect();
        l.sort_unstable();
        l.dedup();
        l
    };
    let (top, step) = axis(max_y);
    let plot_h = H - BOTTOM - 20.0;
    let x_of = |lv: u32| {
        let i = levels.iter().position(|l| *l == lv).unwrap_or(0) as f64;
        LEFT + 30.0 + (W - LEFT - 60.0) * i / (levels.len().max(2) - 1) as f64
    };
    let mut o = format!(
        r##"<figure><figcaption>{}</figcaption><svg class="plot" role="img" aria-label="{}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" xmlns="http://www.w3.org/2000/svg">"##,
        esc(title),
        esc(title)
    );
    y_axis(&mut o, top, step, unit);
    for lv in &levels {
        let _ = write!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{lv}</text>"##,
            x_of(*lv),
            H - BOTTOM + 14.0
        );
    }
    let _ = write!(
        o,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">requests at once</text>"##,
        (W + LEFT) / 2.0,
        H - BOTTOM + 32.0
    );
    for (k, (name, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|(lv, v)| format!("{:.1},{:.1}", x_of(*lv), H - BOTTOM - plot_h * v / top))
            .collect();
        draw_series(&mut o, k, name, &path);
    }
    o.push_str("</svg></figure>\n");
    o
}

/// The `k`th series of a line chart: its polyline through `path` (`x,y` points), a dot at each
/// point, and its name in the legend.
fn draw_series(o: &mut String, k: usize, name: &str, path: &[String]) {
    let palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"];
    let color = palette[k % palette.len()];
    let _ = write!(
        o,
        r##"<polyline class="series" points="{}" fill="none" stroke="{color}" stroke-width="2"/>"##,
        path.join(" ")
    );
    for p in path {
        let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
        let _ = write!(o, r##"<circle cx="{x}" cy="{y}" r="3" fill="{color}"/>"##);
    }
    let _ = write!(
        o,
        r##"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"##,
        LEFT + 10.0,
        6.0 + 14.0 * k as f64,
        LEFT + 24.0,
        15.0 + 14.0 * k as f64,
        esc(name)
    );
}

/// Every figure of the report as (key, side A value, side B value, A spread, B spread): the
/// comparison rows (replay, audit, diff), else the recomputed values (the file's figure beside
/// the page's).
struct Figures {
    sides: [&'static str; 2],
    rows: Vec<FigureRow>,
}

/// Key, side A value, side B value, A spread, B spread.
type FigureRow = (String, Option<f64>, Option<f64>, Option<f64>, Option<f64>);

/// The 95 % margin of a percentage over n answers (normal approximation), in points.
fn margin(pct: Option<f64>, n: usize) -> Option<f64> {
    let p = pct? / 100.0;
    (n > 0).then(|| 100.0 * 1.96 * (p * (1.0 - p) / n as f64).sqrt())
}

fn figures(r: &Report) -> Figures {
    if !r.comparisons.is_empty() {
        let sides = if r.command == "diff" {
            ["A", "B"]
        } else {
            ["recorded", "replayed"]
        };
        let rows = r
            .comparisons
            .iter()
            .map(|c| {
                let quality = c.key.starts_with("quality.");
                // Quality: the 95 % margins; speed: one standard deviation of the runs.
                let (ea, eb) = if quality {
                    (
                        margin(c.recorded, c.n_recorded),
                        margin(c.replayed, c.n_replayed),
                    )
                } else {
                    (c.sd_recorded, c.sd_replayed)
                };
                // A side with no value is the invalid one: drawn hatched.
                (c.key.clone(), c.recorded, c.replayed, ea, eb)
            })
            .collect();
        return Figures { sides, rows };
    }
    let mut margins: BTreeMap<String, f64> = BTreeMap::new();
    for v in &r.recomputed {
        if let (Some(k), Some(m)) = (v.key.strip_suffix(".margin"), v.value) {
            margins.insert(k.to_string(), m);
        }
    }
    let rows = r
        .recomputed
        .iter()
        .filter(|v| !v.key.ends_with(".margin"))
        .map(|v| {
            let page = v.page.as_deref().and_then(|p| p.trim().parse::<f64>().ok());
            let base = v.key.strip_suffix(".pct").unwrap_or(&v.key);
            let m = margins.get(base).copied();
            (v.key.clone(), v.value, page.or(v.file), m, m)
        })
        .collect();
    Figures {
        sides: ["recomputed", "printed"],
        rows,
    }
}

/// Decode figures (one request's generation speed) and prompt-processing figures, plotted apart:
/// their scales differ by two orders of magnitude.
fn is_decode(key: &str) -> bool {
    key == "decode"
        || key == "l1_decode"
        || key.starts_with("decode.")
        || key.starts_with("ctx_decode.")
}

fn is_prefill(key: &str) -> bool {
    key.starts_with("prefill.") || key.starts_with("ctx_prefill.")
}

/// The throughput at each number of requests at once, total and per request, one line per side.
fn concurrency_series(f: &Figures) -> Vec<(String, Vec<(u32, f64)>)> {
    let mut series = Vec::new();
    for (prefix, what) in [
        ("conc_total.", "total"),
        ("conc_per_request.", "per request"),
    ] {
        for (side, pick) in [(0usize, 1usize), (1, 2)] {
            let pts: Vec<(u32, f64)> = f
                .rows
                .iter()
                .filter_map(|row| {
                    let lv = row.0.strip_prefix(prefix)?.parse().ok()?;
                    let v = if pick == 1 { row.1 } else { row.2 };
                    Some((lv, v?))
                })
                .collect();
            if !pts.is_empty() {
                series.push((format!("{what}, {}", f.sides[side]), pts));
            }
        }
    }
    series
}

fn plots(r: &Report) -> String {
    let f = figures(r);
    let group = |k: &str, a, b, ea, eb| Group {
        label: k.to_string(),
        bars: [Bar { value: a, err: ea }, Bar { value: b, err: eb }],
    };
    let mut o = String::new();
    let series = concurrency_series(&f);
    if !series.is_empty() {
        o.push_str(&line_chart(
            "Throughput against requests at once",
            "tokens/s",
            &series,
        ));
    }
    for (title, pick) in [
        ("Decode", is_decode as fn(&str) -> bool),
        ("Prompt processing", is_prefill),
    ] {
        let bars: Vec<Group> = f
            .rows
            .iter()
            .filter(|row| pick(&row.0))
            .map(|row| group(&row.0, row.1, row.2, row.3, row.4))
            .collect();
        if !bars.is_empty() {
            o.push_str(&bar_chart(title, "tokens/s", f.sides, &bars));
        }
    }
    let quality: Vec<Group> = f
        .rows
        .iter()
        .filter(|row| row.0.starts_with("quality.") && row.0.ends_with(".pct"))
        .map(|row| {
            group(
                row.0
                    .trim_start_matches("quality.")
                    .trim_end_matches(".pct"),
                row.1,
                row.2,
                row.3,
                row.4,
            )
        })
        .collect();
    if !quality.is_empty() {
        o.push_str(&bar_chart(
            "Quality with 95 % margins",
            "% right",
            f.sides,
            &quality,
        ));
    }
    o
}

fn tables(r: &Report) -> String {
    let mut o = String::new();
    if !r.setup_changes.is_empty() {
        o.push_str("<h2>Setup differences</h2><table><tr><th>subject</th><th>what</th><th>A</th><th>B</th><th>where</th></tr>");
        for c in &r.setup_changes {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}; {}</td></tr>",
                c.subject.name(),
                esc(&c.what),
                esc(&c.a),
                esc(&c.b),
                esc(&c.where_a),
                esc(&c.where_b)
            );
        }
        o.push_str("</table>\n");
    }
    o.push_str("<h2>Findings</h2><table><tr><th>severity</th><th>check</th><th>where</th><th>message</th></tr>");
    for f in &r.findings {
        let place = [f.file.as_deref(), f.pointer.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            o,
            "<tr class=\"{}\"><td>{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>",
            f.severity.name(),
            f.severity.name(),
            esc(&f.check),
            esc(&place),
            esc(&f.message)
        );
    }
    o.push_str("</table>\n");
    o
}

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

/// Renders a report as one self-contained HTML page.
pub fn render(r: &Report) -> String {
    let (word, class) = match r.verdict {
        Verdict::Pass => ("PASS", "pass"),
        Verdict::Fail => ("FAIL", "fail"),
        Verdict::Incomplete => ("INCOMPLETE", "incomplete"),
    };
    let title = format!("rigaudit {} {}", r.command, r.bundle);
    let mut o = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        o,
        "<title>{}</title><style>body{{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}}.verdict{{font-size:20px;font-weight:bold}}.pass{{color:#2a7}}.fail{{color:#c22}}.incomplete{{color:#b80}}table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}}tr.error td:first-child{{color:#c22}}tr.warning td:first-child{{color:#b80}}figure{{margin:1em 0}}figcaption{{font-weight:bold}}</style></head><body>",
        esc(&title)
    );
    // A pass that rests on less than a measurement says so, as the text report does.
    let word = match rigaudit_audit::headline::coverage(r) {
        Some(covers) => format!("{word}, {}", esc(&covers)),
        None => word.to_string(),
    };
    let _ = write!(
        o,
        "<h1>{}</h1><p class=\"verdict {class}\">{word} ({} errors, {} warnings, {} notes; {} checks ran; rules {})</p>",
        esc(&title),
        r.counts.error,
        r.counts.warning,
        r.counts.info,
        r.checks_run.len(),
        esc(&r.rules_version)
    );
    o.push_str(&why(r));
    if let Some(s) = &r.replay_summary {
        let _ = write!(o, "<p>{}</p>", esc(&s.line(r.command == "diff")));
    }
    if let Some((head, lines)) = r.decision_rule.split_first() {
        let _ = write!(o, "<p>{}</p><ul>", esc(head));
        for line in lines {
            let _ = write!(o, "<li>{}</li>", esc(line));
        }
        o.push_str("</ul>");
    }
    o.push_str(&plots(r));
    o.push_str(&tables(r));
    o.push_str("</body></html>\n");
    o
}
