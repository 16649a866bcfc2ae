//! What every part of the page writes text and numbers with: HTML escaping and the numbers of a
//! table cell, at the precision a page prints them with.

/// HTML text or attribute value: [`crate::output::escape::html_text`] (the five markup
/// characters as entities, controls and bidirectional characters written visibly).
pub use crate::output::escape::html_text as esc;

/// Text from a report that may quote input, escaped and bounded as the text report bounds it
/// (a line break written `\n`).
pub fn quoted(s: &str) -> String {
    esc(&crate::output::escape::terminal_cut(
        s,
        crate::input::MESSAGE_MAX,
    ))
}

/// Escaped text of a path or a JSON pointer, with a break opportunity after each `/`, so that a
/// narrow cell wraps it between its parts rather than past the table's edge.
pub fn path(escaped: &str) -> String {
    escaped.replace('/', "/<wbr/>")
}

/// A figure in a table cell as the text report writes it: "no result" when there is none, three
/// significant decimals at most.
pub(crate) use crate::output::text::num;

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
/// ([`rigaudit_audit::Recomputed::matches`], what the JSON report and the text report carry), not a second one.
pub(crate) use crate::output::text::Agreement;

/// The figures in the text report's order (numbered keys as numbers), so both list them alike.
pub(crate) use crate::output::text::numeric_order;

#[cfg(test)]
mod tests {
    use super::*;
    use rigaudit_audit::Recomputed;

    fn row(key: &str, value: Option<f64>, page: Option<&str>) -> Recomputed {
        Recomputed::new(key.into(), value, None, page.map(String::from))
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
