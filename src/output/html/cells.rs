//! What every part of the page writes text and numbers with: HTML escaping and the numbers of a
//! table cell, at the precision a page prints them with.

use rigaudit_audit::Recomputed;

/// HTML text with the five characters escaped and control characters dropped.
pub fn esc(s: &str) -> String {
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

/// Text from a report that may quote input, escaped and bounded as the text report bounds it.
pub fn quoted(s: &str) -> String {
    esc(&crate::input::shown_n(s, crate::input::MESSAGE_MAX))
}

/// A figure in a table cell: "no result" when there is none, three significant decimals at most.
pub fn num(x: Option<f64>) -> String {
    match x {
        None => "no result".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string(),
    }
}

/// A number at the decimals the page's text `page` prints (at most six), else at [`num`]'s.
pub fn at_precision(x: Option<f64>, page: Option<&str>) -> String {
    let page = page.map(str::trim).filter(|p| p.parse::<f64>().is_ok());
    match (x, page) {
        (Some(v), Some(p)) => {
            let decimals = p.split_once('.').map_or(0, |(_, d)| d.len());
            format!("{v:.*}", decimals.min(6))
        }
        (x, _) => num(x),
    }
}

/// How a recomputed figure compares with what its file and page show: the checks' own rule
/// ([`Recomputed::matches`], what the JSON report and the text report carry), not a second one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    /// The recomputed value rounds to what the file and the page show.
    Match,
    /// It does not round to one of them.
    Differs,
    /// Nothing could be recomputed.
    NoResult,
}

impl Agreement {
    pub fn of(v: &Recomputed) -> Agreement {
        if v.value.is_none() {
            Agreement::NoResult
        } else if v.matches {
            Agreement::Match
        } else {
            Agreement::Differs
        }
    }

    /// The word a table cell shows, which is also the row's CSS class.
    pub fn word(self) -> &'static str {
        match self {
            Agreement::Match => "match",
            Agreement::Differs => "differs",
            Agreement::NoResult => "no result",
        }
    }
}

/// The rows with runs of keys that differ only in a final number (`ctx_decode.256`,
/// `ctx_decode.2048`) put in numeric order; every other row keeps its place (the text report's
/// order, so both list the figures alike).
pub fn numeric_order(rows: &[Recomputed]) -> Vec<&Recomputed> {
    let mut out: Vec<&Recomputed> = rows.iter().collect();
    let stem_num = |k: &str| -> Option<(String, u64)> {
        let (stem, n) = k.rsplit_once('.')?;
        Some((stem.to_string(), n.parse().ok()?))
    };
    let mut i = 0;
    while i < out.len() {
        let Some((stem, _)) = stem_num(&out[i].key) else {
            i += 1;
            continue;
        };
        let run = out[i..]
            .iter()
            .take_while(|v| stem_num(&v.key).is_some_and(|(s, _)| s == stem))
            .count();
        out[i..i + run].sort_by_key(|v| stem_num(&v.key).map_or(0, |(_, n)| n));
        i += run;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, value: Option<f64>, page: Option<&str>) -> Recomputed {
        Recomputed::new(key.into(), value, None, page.map(String::from))
    }

    #[test]
    fn numbered_keys_sort_as_numbers_and_the_rest_keep_their_place() {
        let rows = [
            row("decode", Some(1.0), None),
            row("ctx_decode.2048", Some(1.0), None),
            row("ctx_decode.256", Some(1.0), None),
            row("slots", Some(1.0), None),
        ];
        let keys: Vec<&str> = numeric_order(&rows)
            .iter()
            .map(|v| v.key.as_str())
            .collect();
        assert_eq!(
            keys,
            ["decode", "ctx_decode.256", "ctx_decode.2048", "slots"]
        );
    }

    #[test]
    fn agreement_is_the_rows_own_matches_field() {
        let same = row("decode", Some(28.04), Some("28.0"));
        let off = row("decode", Some(29.0), Some("28.0"));
        let none = row("decode", None, None);
        assert_eq!(Agreement::of(&same), Agreement::Match);
        assert_eq!(Agreement::of(&off), Agreement::Differs);
        assert_eq!(Agreement::of(&none), Agreement::NoResult);
        assert_eq!(at_precision(Some(28.04), Some("28.0")), "28.0");
        assert_eq!(esc("<a&\"b'>"), "&lt;a&amp;&quot;b&#39;&gt;");
    }
}
