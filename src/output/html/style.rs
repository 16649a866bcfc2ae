//! The page's colours and style sheet. Every colour the page draws with is one of [`palette`]'s,
//! and every pair of a colour and the background it is drawn on is in [`PAIRS`] with the contrast
//! WCAG 2.2 level AA asks of it: 4.5:1 for text, 3:1 for the parts of a chart one must see to read
//! it (1.4.3 and 1.4.11). The tests compute each pair's ratio and check that the page uses no other
//! colour. Nothing is said by colour alone (1.4.1): a differing row says `differs`, a diff's change
//! says `✓ better` or `✗ worse` (and an improvement is never drawn red), a chart's sides differ by
//! marker and stroke too, and a disagreement is marked ≠.
//!
//! Tables fit a 1280 px wide screen, so a table is never wider than the page's column: a path
//! may break after each `/` (`cells::path`), a message or a reason anywhere when it must, and a
//! diff's setup table (digests, paths and command lines, which have no spaces) has fixed columns
//! whose cells wrap anywhere; the names a row or column is known by (a check, a figure, a
//! header) wrap only between words.

/// The colours, by what they mean.
pub mod palette {
    /// Text, and the page's background.
    pub const TEXT: &str = "#111111";
    pub const PAGE: &str = "#ffffff";
    /// Links.
    pub const LINK: &str = "#0645ad";
    /// PASS, and a change for the better.
    pub const GOOD: &str = "#176c30";
    /// FAIL, errors, a disagreement and a change for the worse.
    pub const BAD: &str = "#b42318";
    /// INCOMPLETE and warnings.
    pub const AMBER: &str = "#8a5300";
    /// The errors' callout.
    pub const CALLOUT: &str = "#fdf0f0";
    /// A row that differs or changed for the worse.
    pub const BAD_ROW: &str = "#fdeaea";
    /// A row that changed for the better.
    pub const GOOD_ROW: &str = "#eaf5ee";
    /// A row with no result.
    pub const NO_RESULT_ROW: &str = "#f3f3f3";
    /// Table borders and the charts' grid lines (decoration: the values are in the text).
    pub const RULE: &str = "#cccccc";
    pub const GRID: &str = "#dddddd";
    /// The charts' two sides (A, the page, the record; B, recomputed, the replay).
    pub const SIDE_A: &str = "#4e79a7";
    pub const SIDE_B: &str = "#b35900";
    /// A placeholder's hatching (no result), and the whiskers.
    pub const HATCH: &str = "#767676";
    pub const WHISKER: &str = "#222222";
    /// Every colour above.
    #[cfg(test)]
    pub const ALL: [&str; 16] = [
        TEXT,
        PAGE,
        LINK,
        GOOD,
        BAD,
        AMBER,
        CALLOUT,
        BAD_ROW,
        GOOD_ROW,
        NO_RESULT_ROW,
        RULE,
        GRID,
        SIDE_A,
        SIDE_B,
        HATCH,
        WHISKER,
    ];
}

use palette::*;

/// What a pair must reach: text 4.5:1, a chart's marks 3:1 (WCAG 2.2 AA).
#[cfg(test)]
const TEXT_AA: f64 = 4.5;
#[cfg(test)]
const GRAPHIC_AA: f64 = 3.0;

/// Every foreground the page draws on each background it draws it on, with the contrast it needs
/// and where.
#[cfg(test)]
pub const PAIRS: &[(&str, &str, f64, &str)] = &[
    (TEXT, PAGE, TEXT_AA, "body text"),
    (LINK, PAGE, TEXT_AA, "links"),
    (LINK, CALLOUT, TEXT_AA, "a link in the errors' callout"),
    (GOOD, PAGE, TEXT_AA, "PASS"),
    (
        BAD,
        PAGE,
        TEXT_AA,
        "FAIL; ≠ and a differing figure's name in a chart",
    ),
    (AMBER, PAGE, TEXT_AA, "INCOMPLETE; a warning's check"),
    (
        BAD,
        CALLOUT,
        TEXT_AA,
        "the errors' heading and each error's check",
    ),
    (TEXT, CALLOUT, TEXT_AA, "text in the errors' callout"),
    (TEXT, BAD_ROW, TEXT_AA, "a differing or worse row"),
    (BAD, BAD_ROW, TEXT_AA, "`differs` / `✗ worse` in its row"),
    (TEXT, GOOD_ROW, TEXT_AA, "a better row"),
    (GOOD, GOOD_ROW, TEXT_AA, "`✓ better` in its row"),
    (
        GOOD,
        PAGE,
        TEXT_AA,
        "≠ over a figure that changed for the better",
    ),
    (TEXT, NO_RESULT_ROW, TEXT_AA, "a row with no result"),
    (
        SIDE_A,
        PAGE,
        TEXT_AA,
        "side A's bars, line, markers and its line's name",
    ),
    (
        SIDE_B,
        PAGE,
        TEXT_AA,
        "side B's bars, line, markers and its line's name",
    ),
    (HATCH, PAGE, GRAPHIC_AA, "a placeholder's hatching"),
    (WHISKER, PAGE, GRAPHIC_AA, "whiskers"),
];

/// The page's style sheet: the text and its background, tables that wrap long cells, the
/// verdict's colours, the errors' callout, rows that differ, changed for the better or the worse,
/// or have no result.
pub fn css() -> String {
    format!(
        "body{{font:14px system-ui,sans-serif;margin:2em;max-width:1100px;color:{TEXT};background:{PAGE}}}\
a,a:visited{{color:{LINK}}}\
.verdict{{font-size:20px;font-weight:bold}}.pass{{color:{GOOD}}}.fail{{color:{BAD}}}.incomplete{{color:{AMBER}}}\
table{{border-collapse:collapse;margin:1em 0;max-width:100%}}caption{{text-align:left;font-weight:bold;padding:2px 0}}\
td,th{{border:1px solid {RULE};padding:3px 6px;vertical-align:top;text-align:left;overflow-wrap:break-word}}\
th[scope=row]{{font-weight:normal}}\
.findings td:last-child,.figures td:last-child{{overflow-wrap:anywhere}}\
table.setup{{table-layout:fixed;width:100%}}table.setup td{{overflow-wrap:anywhere}}\
table.setup th:nth-child(1){{width:8%}}table.setup th:nth-child(2){{width:22%}}table.setup th:nth-child(n+3){{width:17.5%}}\
.callout{{border:2px solid {BAD};border-left:8px solid {BAD};background:{CALLOUT};padding:0 1em;margin:1em 0}}\
.callout h3{{color:{BAD}}}\
tr.error td:first-child{{color:{BAD}}}tr.warning td:first-child{{color:{AMBER}}}\
.figures td{{white-space:nowrap}}.figures td:last-child{{white-space:normal}}\
tr.differs,tr.worse{{background:{BAD_ROW}}}tr.differs .mark,tr.worse .mark{{color:{BAD}}}\
tr.better{{background:{GOOD_ROW}}}tr.better .mark{{color:{GOOD}}}\
tr.noresult{{background:{NO_RESULT_ROW}}}\
figure{{margin:1em 0}}figcaption{{font-weight:bold}}.chart-notes{{font-size:13px;margin:0 0 1em}}"
    )
}

/// WCAG's relative luminance of `#rrggbb`.
#[cfg(test)]
fn luminance(hex: &str) -> f64 {
    let hex = hex.strip_prefix('#').unwrap();
    assert_eq!(hex.len(), 6, "{hex}");
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4)
}

/// WCAG's contrast ratio of two colours (1 to 21).
#[cfg(test)]
pub(crate) fn contrast(a: &str, b: &str) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// Every `#rgb` or `#rrggbb` in `text`, lower case, six digits.
#[cfg(test)]
pub(crate) fn colours_in(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices('#') {
        let digits: String = text[i + 1..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        let six = match digits.len() {
            3 => digits.chars().flat_map(|c| [c, c]).collect(),
            6 => digits,
            _ => continue,
        };
        found.push(format!("#{}", six.to_ascii_lowercase()));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contrast_ratio_is_wcags() {
        assert!((contrast("#000000", "#ffffff") - 21.0).abs() < 1e-9);
        assert!((contrast("#767676", "#ffffff") - 4.54).abs() < 0.01);
        // The colours the issue measured: PASS green, amber, the orange side.
        assert!((contrast("#22aa77", "#ffffff") - 2.96).abs() < 0.01);
        assert!((contrast("#bb8800", "#ffffff") - 3.17).abs() < 0.01);
        assert!((contrast("#f28e2b", "#ffffff") - 2.42).abs() < 0.01);
    }

    #[test]
    fn every_colour_pair_meets_wcag_aa() {
        let mut low = Vec::new();
        for (fg, bg, need, what) in PAIRS {
            let ratio = contrast(fg, bg);
            if ratio < *need {
                low.push(format!("{what}: {fg} on {bg} {ratio:.2}:1 < {need}:1"));
            }
        }
        assert!(low.is_empty(), "{low:#?}");
    }

    #[test]
    fn the_style_sheet_uses_the_palette_and_every_text_colour_is_paired() {
        let css = css();
        for c in colours_in(&css) {
            assert!(
                palette::ALL.contains(&c.as_str()),
                "{c} is not in the palette"
            );
        }
        // Each colour given to text (`color:`) is a foreground of a pair; each background is one.
        for (prop, foreground) in [("color:", true), ("background:", false)] {
            for (i, _) in css.match_indices(prop) {
                if prop == "color:" && css[..i].ends_with("background-") {
                    continue;
                }
                let value = &css[i + prop.len()..i + prop.len() + 7];
                let paired = PAIRS.iter().any(|(fg, bg, _, _)| {
                    if foreground {
                        *fg == value
                    } else {
                        *bg == value
                    }
                });
                assert!(paired, "{prop}{value} is in no pair");
            }
        }
    }
}
