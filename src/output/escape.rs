//! Markup text (the HTML page, JUnit's XML): one escaping of the five special characters, each
//! format saying how it writes an apostrophe and which other characters it cannot hold.

/// `s` with `&`, `<`, `>`, `"` and `'` as entities (`'` as `apos`, which differs between HTML and
/// XML) and every character `unfit` names replaced by U+FFFD.
pub fn markup(s: &str, apos: &str, unfit: fn(char) -> bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str(apos),
            c if unfit(c) => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_five_become_entities_and_unfit_characters_the_replacement() {
        let s = super::markup("a&<>\"'\u{1}\n", "&apos;", |c| c == '\u{1}');
        assert_eq!(s, "a&amp;&lt;&gt;&quot;&apos;\u{fffd}\n");
    }
}
