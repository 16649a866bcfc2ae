//! Which charts a report gets and what they show: throughput against requests at once, decode
//! and prompt-processing speed and the time to the first token with the runs' spread, quality
//! with its 95 % margins. The two
//! sides are the page and the figure recomputed from its records (verify, audit), the record and
//! its replay (replay), or A and B (diff); a figure whose sides disagree is marked, and one with
//! no result says why (the comparison's reason, or the findings on that test's files).

use super::cells::{numeric_order, Agreement};
use super::charts::{bar_chart, defs, line_chart, Bar, Frame, Group, Series};
use rigaudit_audit::verdict::ReplayVerdict;
use rigaudit_audit::{Recomputed, Report};
use std::collections::BTreeMap;

/// One figure of the charts: its key, a bar per side, whether they disagree, and why a side has
/// no result.
struct Figure {
    key: String,
    bars: [Bar; 2],
    differs: bool,
    /// For a diff's figure that changed: whether B is better.
    better: Option<bool>,
    note: Option<String>,
}

/// The figures of a report and the names of its two sides.
struct Figures {
    sides: [&'static str; 2],
    /// What a figure marked ≠ means.
    differs: &'static str,
    rows: Vec<Figure>,
}

/// A whisker of one standard deviation around `v`.
fn sd_whisker(v: Option<f64>, sd: Option<f64>) -> Option<(f64, f64)> {
    let (v, sd) = (v?, sd.filter(|s| *s > 0.0)?);
    Some(((v - sd).max(0.0), v + sd))
}

/// The 95 % margin of a percentage over n answers (normal approximation), as a whisker.
fn margin_whisker(pct: Option<f64>, n: usize) -> Option<(f64, f64)> {
    let p = pct? / 100.0;
    let m = (n > 0).then(|| 100.0 * 1.96 * (p * (1.0 - p) / n as f64).sqrt())?;
    Some(((100.0 * p - m).max(0.0), (100.0 * p + m).min(100.0)))
}

/// The comparison rows (replay, audit, diff): speed whiskers are one standard deviation of the
/// runs, quality whiskers the 95 % margin; a row that moved is marked, one not comparable says why.
fn from_comparisons(r: &Report) -> Figures {
    let (sides, differs) = if r.compares_two() {
        (["A", "B"], "changed beyond the band")
    } else {
        (["recorded", "replayed"], "drifted beyond the band")
    };
    let rows = r
        .comparisons
        .iter()
        .map(|c| {
            let whiskers = if c.key.starts_with("quality.") {
                [
                    margin_whisker(c.recorded, c.n_recorded),
                    margin_whisker(c.replayed, c.n_replayed),
                ]
            } else {
                [
                    sd_whisker(c.recorded, c.sd_recorded),
                    sd_whisker(c.replayed, c.sd_replayed),
                ]
            };
            let moved = matches!(c.verdict, ReplayVerdict::Drifted | ReplayVerdict::Changed);
            let missing = c.recorded.is_none() || c.replayed.is_none();
            Figure {
                key: c.key.clone(),
                bars: [
                    Bar {
                        value: c.recorded,
                        whisker: whiskers[0],
                    },
                    Bar {
                        value: c.replayed,
                        whisker: whiskers[1],
                    },
                ],
                differs: moved,
                better: c.better.filter(|_| moved),
                note: missing.then(|| c.why.clone()),
            }
        })
        .collect();
    Figures {
        sides,
        differs,
        rows,
    }
}

/// A number the page prints, when it prints one.
fn printed(v: &Recomputed) -> Option<f64> {
    v.page.as_deref().and_then(|p| p.trim().parse::<f64>().ok())
}

/// The spread that goes with a figure: a quality percentage's margin row, a decode figure's
/// coefficient of variation of its runs (as a share of the figure), by side (page, recomputed).
fn spread_of(
    key: &str,
    by_key: &BTreeMap<&str, &Recomputed>,
    bars: [Option<f64>; 2],
) -> [Option<(f64, f64)>; 2] {
    let around = |v: Option<f64>, half: Option<f64>| {
        let (v, h) = (v?, half.filter(|h| *h > 0.0)?);
        Some(((v - h).max(0.0), v + h))
    };
    if let Some(test) = key.strip_suffix(".pct") {
        let m = by_key.get(format!("{test}.margin").as_str());
        return [
            around(bars[0], m.and_then(|m| printed(m).or(m.file))),
            around(bars[1], m.and_then(|m| m.value)),
        ];
    }
    let cv_key = match key {
        "decode" => "cv".to_string(),
        k => match k.strip_prefix("decode.") {
            Some(prompt) => format!("cv.{prompt}"),
            None => return [None, None],
        },
    };
    let cv = by_key.get(cv_key.as_str());
    let pct = |v: Option<f64>, cv: Option<f64>| Some(v? * cv? / 100.0);
    [
        around(
            bars[0],
            pct(bars[0], cv.and_then(|c| printed(c).or(c.file))),
        ),
        around(bars[1], pct(bars[1], cv.and_then(|c| c.value))),
    ]
}

/// Why a recomputed figure has no result, in words: for a quality test, the gravest finding on
/// its files; else where to look.
fn no_result_note(r: &Report, key: &str) -> String {
    let test = key
        .strip_prefix("quality.")
        .and_then(|k| k.rsplit_once('.'))
        .map(|(test, _)| format!("quality/{test}/"));
    let finding = test.and_then(|folder| {
        r.findings
            .iter()
            .filter(|f| f.file.as_deref().is_some_and(|p| p.starts_with(&folder)))
            .min_by_key(|f| std::cmp::Reverse(f.severity))
    });
    match finding {
        Some(f) => format!("no result recomputed: {}", f.message),
        None => {
            "no result recomputed: not measured, or every request refused (the findings say which)"
                .into()
        }
    }
}

/// The recomputed figures (verify): the page's printed value (else the file's) beside the
/// recomputed one, with the spread each side shows; a row the checks say disagrees is marked.
fn from_recomputed(r: &Report) -> Figures {
    let by_key: BTreeMap<&str, &Recomputed> =
        r.recomputed.iter().map(|v| (v.key.as_str(), v)).collect();
    let rows = numeric_order(&r.recomputed)
        .into_iter()
        .filter(|v| !v.key.ends_with(".margin") && !v.key.starts_with("cv"))
        .map(|v| {
            let shown = printed(v).or(v.file);
            let whiskers = spread_of(&v.key, &by_key, [shown, v.value]);
            let agreement = Agreement::of(v);
            Figure {
                key: v.key.clone(),
                bars: [
                    Bar {
                        value: shown,
                        whisker: whiskers[0],
                    },
                    Bar {
                        value: v.value,
                        whisker: whiskers[1],
                    },
                ],
                // A test with no result that shows none (every request refused) does not match,
                // yet no side disagrees: no ≠ over it.
                differs: !v.matches && (v.value.is_some() || shown.is_some()),
                better: None,
                note: (agreement == Agreement::NoResult).then(|| no_result_note(r, &v.key)),
            }
        })
        .collect();
    Figures {
        sides: ["page (or its file)", "recomputed from records"],
        differs: "the page or file and the records disagree",
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

fn is_ttft(key: &str) -> bool {
    key.starts_with("ttft.")
}

fn is_quality(key: &str) -> bool {
    key.starts_with("quality.") && key.ends_with(".pct")
}

/// The throughput at each number of requests at once, total and per request, a line per side;
/// and the levels where the sides disagree, each with whether B is better there (when every
/// figure that moved at that level says the same).
fn concurrency(f: &Figures) -> (Vec<Series>, Vec<(u32, Option<bool>)>) {
    let mut series = Vec::new();
    let mut differs: Vec<(u32, Option<bool>)> = Vec::new();
    for (prefix, name) in [
        ("conc_total.", "total"),
        ("conc_per_request.", "per request"),
    ] {
        let level = |row: &Figure| row.key.strip_prefix(prefix)?.parse::<u32>().ok();
        for side in 0..2 {
            let points: Vec<(u32, f64)> = f
                .rows
                .iter()
                .filter_map(|row| Some((level(row)?, row.bars[side].value?)))
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: name.into(),
                    side,
                    points,
                });
            }
        }
        for row in f.rows.iter().filter(|row| row.differs) {
            let Some(lv) = level(row) else { continue };
            match differs.iter_mut().find(|d| d.0 == lv) {
                Some(d) if d.1 != row.better => d.1 = None,
                Some(_) => {}
                None => differs.push((lv, row.better)),
            }
        }
    }
    differs.sort_unstable_by_key(|d| d.0);
    (series, differs)
}

/// A bar chart of the figures `pick` chooses: its title, unit and what its whiskers show.
struct BarKind {
    title: &'static str,
    unit: &'static str,
    pick: fn(&str) -> bool,
    whisker: &'static str,
}

const RUNS_SD: &str = "whisker: ±1 standard deviation of the runs";

const BAR_KINDS: [BarKind; 4] = [
    BarKind {
        title: "Decode",
        unit: "tokens/s",
        pick: is_decode,
        whisker: RUNS_SD,
    },
    BarKind {
        title: "Prompt processing",
        unit: "tokens/s",
        pick: is_prefill,
        whisker: RUNS_SD,
    },
    BarKind {
        title: "Time to first token (lower is faster)",
        unit: "seconds",
        pick: is_ttft,
        whisker: RUNS_SD,
    },
    BarKind {
        title: "Quality with 95 % margins",
        unit: "% right",
        pick: is_quality,
        whisker: "whisker: 95 % margin",
    },
];

/// The bar chart of one kind of figure, or nothing when the report has none of them.
fn bars_of(f: &Figures, kind: &BarKind) -> String {
    let groups: Vec<Group> = f
        .rows
        .iter()
        .filter(|row| (kind.pick)(&row.key))
        .map(|row| Group {
            label: label(&row.key),
            bars: row.bars,
            differs: row.differs,
            better: row.better,
            note: row.note.clone(),
        })
        .collect();
    if groups.is_empty() {
        return String::new();
    }
    let frame = Frame {
        title: kind.title,
        unit: kind.unit,
        sides: f.sides,
        whisker: kind.whisker,
        differs: f.differs,
    };
    bar_chart(&frame, &groups)
}

/// The charts of a report, after its findings and tables.
pub fn charts(r: &Report) -> String {
    let f = if r.comparisons.is_empty() {
        from_recomputed(r)
    } else {
        from_comparisons(r)
    };
    let mut o = String::new();
    let (series, differs) = concurrency(&f);
    if !series.is_empty() {
        let frame = Frame {
            title: "Throughput against requests at once",
            unit: "tokens/s",
            sides: f.sides,
            whisker: "",
            differs: f.differs,
        };
        o.push_str(&line_chart(&frame, &series, &differs));
    }
    for kind in &BAR_KINDS {
        o.push_str(&bars_of(&f, kind));
    }
    if o.is_empty() {
        return o;
    }
    format!(
        "<section id=\"charts\"><h2>Charts</h2>{}{o}</section>\n",
        defs()
    )
}

/// A figure's name under its bars: a quality test by its name alone.
fn label(key: &str) -> String {
    key.strip_prefix("quality.")
        .and_then(|k| k.strip_suffix(".pct"))
        .unwrap_or(key)
        .to_string()
}
