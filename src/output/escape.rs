//! The one escaping layer of the reports: one escaper per format, applied by that format's
//! renderer to every string it did not write itself. Page text (file names, pointers, values,
//! card fields, test ids, bundle names) reaches the reports through findings' messages, check ids,
//! keys, setup changes and headlines, anywhere inside them, so a renderer escapes all of those,
//! not the sources case by case.
//!
//! Every escaper first makes *hidden* characters visible ([`hidden`]: C0 and C1 controls, DEL,
//! the bidirectional marks, embeddings, overrides and isolates, the Unicode line and paragraph
//! separators and the noncharacters U+FFFE and U+FFFF), each written as `\u{1b}` the way
//! `crate::input` quotes input (tab as `\t`, carriage return as `\r`); what a value's own line
//! feed becomes depends on the format. Then each format escapes what has meaning in it:
//!
//! - [`terminal`] (the text report): nothing more; a value's line feed is written `\n`, so no
//!   value starts a line of its own (a CI log reads `::command` at the start of any line, after
//!   its indent). Wrapping can still start a line with a value's word: [`no_command`] puts a `\`
//!   before a line that would start with `::`, and the text renderers pass every line through it.
//! - [`markdown_text`], [`markdown_cell`], [`markdown_code`] (the Markdown report: GitHub's job
//!   summary and pull-request comments): line breaks become spaces, and the characters with a
//!   meaning in CommonMark or GitHub's Markdown become numeric character references, which
//!   Markdown never parses again: `&` `<` `>` (raw HTML, autolinks, block quotes), `\` (escapes,
//!   hard breaks), `` ` `` (code spans), `*` and `_` (emphasis; `_` between two letters or digits
//!   stays, as it can neither open nor close emphasis there), `[` `]` `!` (links, images,
//!   footnotes), `|` (table cells: GitHub splits a row on a raw `|` before anything else, and
//!   `\|` would leave a following backslash escaping nothing), `~` (strike-through), `$` (math),
//!   and at the start of a value `#` `-` `+` `=` and the `.` or `)` of an ordered list's marker
//!   (headings, lists, setext underlines). Letters, digits, spaces and the rest of punctuation
//!   (`.` `,` `:` `;` `(` `)` `'` `"` `/` `%`) stay as they are: they mean nothing alone, and the
//!   report stays readable as text. Page text is never put in a code span (no entity is decoded
//!   there and a backtick would close it): monospace is `<code>` around escaped text, and the code
//!   spans of rigaudit's own lines that may quote a page (headlines, what to do) become `<code>`
//!   too ([`markdown_prose`]). Left as GitHub reads them: a bare `https://` or `www.` address
//!   (linked, shown in full, nothing loaded) and an `@name` (GitHub finds mentions in the text
//!   after references are decoded).
//! - [`workflow_data`], [`workflow_property`] (GitHub workflow commands): the runner's own
//!   escaping, `%` as `%25`, CR as `%0D`, LF as `%0A`, and in a property also `:` as `%3A` and `,`
//!   as `%2C`, after the hidden characters are made visible.
//! - [`xml_text`] (JUnit) and [`html_text`] (the HTML page, which is also well-formed XML): the
//!   five markup characters as entities, in text and attributes alike; a value's line feed
//!   written `\n` (a JUnit file is printed to CI logs too); every character XML 1.0 forbids is
//!   among the hidden ones and so written visibly. The HTML page's `[` and `]` are references
//!   as well, so its text makes no Markdown link or image where it is pasted into Markdown.
//! - [`sarif_uri`]: a repository-relative path percent-encoded per RFC 3986 (unreserved
//!   characters and `/` kept), never absolute and never climbing: a path with an empty, `.` or
//!   `..` segment keeps only its named segments, so the URI cannot resolve above its base.
//!   [`sarif_message`] writes a SARIF text message: hidden characters visible, and `\`, `[` and
//!   `]` escaped with a backslash (SARIF 3.11.6), so page text cannot make an embedded link.
//! - [`json`] (the JSON report and SARIF, once serialised): every hidden character left raw by
//!   the serialiser written as a `\uXXXX` escape: the same value for a JSON reader, no raw byte
//!   for a terminal or a browser.

use std::fmt::Write;

/// Whether a character is never written raw: C0 controls (tab and line feed included: each
/// format says how it writes them), DEL and C1 controls, the bidirectional marks (U+200E,
/// U+200F), embeddings and overrides (U+202A-U+202E) and isolates (U+2066-U+2069), the line and
/// paragraph separators (U+2028, U+2029) and the noncharacters U+FFFE and U+FFFF, which XML 1.0
/// forbids.
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{fffe}'
                | '\u{ffff}'
        )
}

/// What a value's own line breaks become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Breaks {
    /// Line feed and carriage return left raw, for an escaper that encodes them itself.
    Raw,
    /// Line feed left raw; carriage return written `\r`.
    LineFeed,
    /// Both written as one space each.
    Space,
    /// Written `\n` and `\r`.
    Visible,
}

/// `s` with every [`hidden`] character written visibly (`\u{1b}`, `\t`, `\r`, `\n`) but the line
/// breaks `breaks` keeps.
fn visible(s: &str, breaks: Breaks) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match (c, breaks) {
            ('\n' | '\r', Breaks::Raw) | ('\n', Breaks::LineFeed) => o.push(c),
            ('\n' | '\r', Breaks::Space) => o.push(' '),
            ('\n', _) => o.push_str("\\n"),
            ('\r', _) => o.push_str("\\r"),
            ('\t', _) => o.push_str("\\t"),
            (c, _) if hidden(c) => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            (c, _) => o.push(c),
        }
    }
    o
}

/// At most `max` characters of `s`; a longer one cut there with its full size said.
fn cut(s: &str, max: usize, said: impl FnOnce(usize) -> String) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => format!("{}{}", &s[..at], said(s.chars().count())),
    }
}

/// Text for a terminal or a CI log: hidden characters and line breaks written visibly.
pub fn terminal(s: &str) -> String {
    visible(s, Breaks::Visible)
}

/// [`terminal`] of at most `max` characters of `s`, the cut saying the full size.
pub fn terminal_cut(s: &str, max: usize) -> String {
    let kept = cut(s, max, |_| String::new());
    let mut o = terminal(&kept);
    if kept.len() < s.len() {
        let _ = write!(o, "… [cut: {} bytes in all]", s.len());
    }
    o
}

pub use crate::input::no_command;

/// The numeric character reference of a Markdown character with a meaning, when `c` is one
/// wherever it is.
fn markdown_special(c: char) -> Option<&'static str> {
    Some(match c {
        '&' => "&amp;",
        '<' => "&lt;",
        '>' => "&gt;",
        '\\' => "&#92;",
        '`' => "&#96;",
        '*' => "&#42;",
        '_' => "&#95;",
        '[' => "&#91;",
        ']' => "&#93;",
        '!' => "&#33;",
        '|' => "&#124;",
        '~' => "&#126;",
        '$' => "&#36;",
        _ => return None,
    })
}

/// Where the start of a value could open a block (a heading, a list item, a setext underline):
/// the byte index of the character to write as a reference, when there is one.
fn block_opener(s: &str) -> Option<usize> {
    // Up to three spaces (four after a list marker) still open a block: leading spaces are
    // passed over.
    let lead = s.len() - s.trim_start_matches(' ').len();
    let rest = &s.as_bytes()[lead..];
    if matches!(rest.first()?, b'#' | b'-' | b'+' | b'=') {
        return Some(lead);
    }
    // An ordered list's marker: digits, then `.` or `)`, then a space or the end.
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let marker = matches!(rest.get(digits), Some(b'.' | b')'));
    let ends = matches!(rest.get(digits + 1), None | Some(b' '));
    (digits > 0 && marker && ends).then_some(lead + digits)
}

/// Text for Markdown outside a code span, in a paragraph, a list item or a table cell: one line,
/// hidden characters visible, every character with a Markdown meaning a numeric reference (see
/// the module's doc for the set).
pub fn markdown_text(s: &str) -> String {
    let s = visible(s, Breaks::Space);
    let opener = block_opener(&s);
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let mut o = String::with_capacity(s.len() + 8);
    for (n, &(i, c)) in chars.iter().enumerate() {
        let alnum = |k: Option<&(usize, char)>| k.is_some_and(|(_, c)| c.is_alphanumeric());
        let intraword = c == '_' && n > 0 && alnum(chars.get(n - 1)) && alnum(chars.get(n + 1));
        match markdown_special(c) {
            _ if opener == Some(i) => {
                let _ = write!(o, "&#{};", c as u32);
            }
            Some(_) if intraword => o.push(c),
            Some(reference) => o.push_str(reference),
            None => o.push(c),
        }
    }
    o
}

/// The most characters of one Markdown table cell.
pub const CELL_MAX: usize = 300;

/// A Markdown table cell: [`markdown_text`] of at most [`CELL_MAX`] characters, a longer value
/// cut with its size said.
pub fn markdown_cell(s: &str) -> String {
    let kept = cut(s, CELL_MAX, |n| format!("… ({n} characters in all)"));
    markdown_text(&kept)
}

/// A line rigaudit wrote in Markdown's words (a headline, what to do) that may hold page text:
/// [`markdown_cell`] of each part, the parts between a pair of backticks in `<code>`. A backtick
/// from a page can only move where monospace starts: every part is escaped.
pub fn markdown_prose(s: &str) -> String {
    let kept = cut(s, CELL_MAX, |n| format!("… ({n} characters in all)"));
    let parts: Vec<&str> = kept.split('`').collect();
    let mut o = String::with_capacity(kept.len() + 16);
    for (i, part) in parts.iter().enumerate() {
        let text = markdown_text(part);
        match (i % 2, i + 1 < parts.len()) {
            (1, true) => {
                let _ = write!(o, "<code>{text}</code>");
            }
            (1, false) => {
                let _ = write!(o, "&#96;{text}");
            }
            _ => o.push_str(&text),
        }
    }
    o
}

/// Page text in monospace in Markdown: `<code>` around [`markdown_cell`] (never a code span).
pub fn markdown_code(s: &str) -> String {
    format!("<code>{}</code>", markdown_cell(s))
}

/// A workflow command's message (`::error ...::MESSAGE`): hidden characters visible, then `%`,
/// CR and LF escaped as the Actions runner reads them, so the command stays one line.
pub fn workflow_data(s: &str) -> String {
    visible(s, Breaks::Raw)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`file=`, `title=`): [`workflow_data`] with `:` and `,`
/// escaped too, so a value cannot end the properties or add one.
pub fn workflow_property(s: &str) -> String {
    workflow_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `s` with `&`, `<`, `>`, `"` and `'` as entities (`'` as `apos`, which differs between HTML and
/// XML); characters that are not markup pass.
fn markup(s: &str, apos: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str(apos),
            c => o.push(c),
        }
    }
    o
}

/// XML text or attribute value (JUnit): hidden characters visible (among them every character
/// XML 1.0 forbids), a line break written `\n` (so a value never starts a line of the file, which
/// a CI log could read as a workflow command), the five markup characters as entities.
pub fn xml_text(s: &str) -> String {
    markup(&visible(s, Breaks::Visible), "&apos;")
}

/// HTML text or attribute value: [`xml_text`] with `'` as `&#39;` (HTML 4 has no `&apos;`), and
/// `[` and `]` as references too, so the page's text forms no Markdown link or image should it be
/// pasted where Markdown is read.
pub fn html_text(s: &str) -> String {
    markup(&visible(s, Breaks::Visible), "&#39;")
        .replace('[', "&#91;")
        .replace(']', "&#93;")
}

/// A SARIF text message: hidden characters visible (a line feed stays), and `\`, `[` and `]`
/// escaped with a backslash as SARIF 3.11.6 asks, so no embedded link `[text](target)` forms.
pub fn sarif_message(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in visible(s, Breaks::LineFeed).chars() {
        if matches!(c, '\\' | '[' | ']') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

/// Whether a byte stays as it is in a URI path segment: RFC 3986's unreserved characters.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// A file's path as a SARIF `artifactLocation.uri`, relative to its base (`SRCROOT`, `BUNDLE`):
/// each segment percent-encoded (unreserved characters kept; `:`, `%`, `\`, `?`, `#` and every
/// other byte encoded, so no scheme, query or fragment forms); the segments joined by `/`. A
/// path that is absolute or has an empty, `.` or `..` segment keeps only its named segments (the
/// second value is then true: the caller keeps the path as given elsewhere), so the URI never
/// resolves above its base; one with no named segment at all is `%2E%2E` (a name, not a parent).
pub fn sarif_uri(path: &str) -> (String, bool) {
    let segments: Vec<&str> = path.split('/').collect();
    let named: Vec<&str> = segments
        .iter()
        .copied()
        .filter(|s| !matches!(*s, "" | "." | ".."))
        .collect();
    let changed = named.len() != segments.len();
    if named.is_empty() {
        return ("%2E%2E".into(), true);
    }
    let mut uri = String::with_capacity(path.len());
    for (i, segment) in named.iter().enumerate() {
        if i > 0 {
            uri.push('/');
        }
        for b in segment.bytes() {
            if unreserved(b) {
                uri.push(b as char);
            } else {
                let _ = write!(uri, "%{b:02X}");
            }
        }
    }
    (uri, changed)
}

/// Serialised JSON with every [`hidden`] character the serialiser left raw (DEL, C1, the
/// bidirectional ones, the separators, U+FFFE and U+FFFF: JSON needs only C0 escaped) written as
/// a `\uXXXX` escape. Such a character can only be inside a string, where the escape is the same
/// value.
pub fn json(serialised: &str) -> String {
    if !serialised.chars().any(hidden) {
        return serialised.to_string();
    }
    let mut o = String::with_capacity(serialised.len() + 16);
    for c in serialised.chars() {
        if hidden(c) && !matches!(c, '\n' | '\r' | '\t') {
            let _ = write!(o, "\\u{:04x}", c as u32);
        } else {
            o.push(c);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every payload of the attack suite in one string.
    const ALL: &str = "<img src=\"https://e.invalid/b.png\"><script>alert(1)</script>![x](https://e.invalid/i.png)\n::error title=pwned::PWNED\u{1b}]0;t\u{7}\u{9b}31m\u{202e}evil a\\|b <!-- rest";

    #[test]
    fn hidden_characters_are_written_as_escapes_and_line_breaks_by_the_format() {
        let s =
            "a\u{1b}[2J\u{7}\u{9b}\u{202e}\u{2066}\u{200f}\u{2028}\u{feff}\u{ffff}\u{7f}\t\r\nz";
        let shown = "a\\u{1b}[2J\\u{7}\\u{9b}\\u{202e}\\u{2066}\\u{200f}\\u{2028}\u{feff}\\u{ffff}\\u{7f}\\t";
        assert_eq!(terminal(s), format!("{shown}\\r\\nz"));
        assert_eq!(visible(s, Breaks::Space), format!("{shown}  z"));
        assert_eq!(visible(s, Breaks::LineFeed), format!("{shown}\\r\nz"));
        assert_eq!(visible(s, Breaks::Raw), format!("{shown}\r\nz"));
        assert_eq!(terminal("plain text: 4.8 % (ok)"), "plain text: 4.8 % (ok)");
        assert_eq!(terminal_cut("abcdef", 3), "abc… [cut: 6 bytes in all]");
        assert_eq!(terminal_cut("a\nb", 3), "a\\nb");
    }

    #[test]
    fn no_line_of_text_starts_a_workflow_command() {
        assert_eq!(no_command("    ::add-mask::x"), "    \\::add-mask::x");
        assert_eq!(no_command("::error::x"), "\\::error::x");
        assert_eq!(no_command("  a ::x"), "  a ::x");
        assert_eq!(no_command(": :x"), ": :x");
    }

    #[test]
    fn markdown_text_writes_every_character_with_a_meaning_as_a_reference() {
        assert_eq!(
            markdown_text("<img src=x> & ![x](u) `c` *b* _i_ ~s~ $m$ a\\|b"),
            "&lt;img src=x&gt; &amp; &#33;&#91;x&#93;(u) &#96;c&#96; &#42;b&#42; &#95;i&#95; &#126;s&#126; &#36;m&#36; a&#92;&#124;b"
        );
        assert_eq!(markdown_text("<!-- hide"), "&lt;&#33;-- hide");
        assert_eq!(
            markdown_text("decode_window1 a_b _x"),
            "decode_window1 a_b &#95;x"
        );
        assert_eq!(markdown_text("a\n::error x\r\nb"), "a ::error x  b");
        assert_eq!(
            markdown_text("\u{1b}[2J\u{202e}"),
            "&#92;u{1b}&#91;2J&#92;u{202e}"
        );
        assert_eq!(
            markdown_text("plain: 4.8 % (ok), 'q' \"d\" a/b.json"),
            "plain: 4.8 % (ok), 'q' \"d\" a/b.json"
        );
    }

    #[test]
    fn markdown_text_starting_a_block_is_escaped_at_its_start_only() {
        assert_eq!(markdown_text("# h # x"), "&#35; h # x");
        assert_eq!(markdown_text("- item - x"), "&#45; item - x");
        assert_eq!(markdown_text("+ x"), "&#43; x");
        assert_eq!(markdown_text("==="), "&#61;==");
        assert_eq!(markdown_text("12. x 3. y"), "12&#46; x 3. y");
        assert_eq!(markdown_text("1) x"), "1&#41; x");
        assert_eq!(markdown_text("7."), "7&#46;");
        assert_eq!(markdown_text("59.0"), "59.0");
        assert_eq!(markdown_text("12 x"), "12 x");
        assert_eq!(markdown_text("> quote"), "&gt; quote");
        assert_eq!(markdown_text("   # x"), "   &#35; x");
        assert_eq!(markdown_text(""), "");
    }

    #[test]
    fn a_markdown_cell_is_cut_and_code_is_never_a_code_span() {
        let long = "x".repeat(CELL_MAX + 5);
        assert_eq!(
            markdown_cell(&long),
            format!("{}… (305 characters in all)", "x".repeat(CELL_MAX))
        );
        assert_eq!(markdown_cell("a|b"), "a&#124;b");
        assert_eq!(
            markdown_code("a`b</code>"),
            "<code>a&#96;b&lt;/code&gt;</code>"
        );
        assert!(!markdown_text(ALL).contains(['<', '>', '[', ']', '|', '\\', '\n']));
    }

    #[test]
    fn prose_keeps_its_code_as_code_tags_with_escaped_text() {
        assert_eq!(
            markdown_prose("run `rigaudit checks a_b` now"),
            "run <code>rigaudit checks a_b</code> now"
        );
        assert_eq!(
            markdown_prose("`<img src=x>` and ` odd"),
            "<code>&lt;img src=x&gt;</code> and &#96; odd"
        );
        assert_eq!(markdown_prose("- a|b"), "&#45; a&#124;b");
    }

    #[test]
    fn workflow_data_and_properties_are_escaped_as_the_runner_reads_them() {
        assert_eq!(workflow_data("50% a\r\nb: c,d"), "50%25 a%0D%0Ab: c,d");
        assert_eq!(workflow_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        assert_eq!(
            workflow_data("\u{1b}]0;t\u{7}\u{9b}\u{202e}"),
            "\\u{1b}]0;t\\u{7}\\u{9b}\\u{202e}"
        );
        assert_eq!(
            workflow_property("x\n::error title=pwned::P"),
            "x%0A%3A%3Aerror title=pwned%3A%3AP"
        );
        assert_eq!(workflow_data(ALL).lines().count(), 1);
        assert!(!workflow_data(ALL).chars().any(hidden));
    }

    #[test]
    fn xml_and_html_text_have_entities_and_no_character_xml_forbids() {
        assert_eq!(
            xml_text("a&<>\"'\u{1}\u{ffff}\r\n"),
            "a&amp;&lt;&gt;&quot;&apos;\\u{1}\\u{ffff}\\r\\n"
        );
        assert_eq!(html_text("<a&\"b'>"), "&lt;a&amp;&quot;b&#39;&gt;");
        assert_eq!(html_text("\u{9b}\u{2067}"), "\\u{9b}\\u{2067}");
        assert_eq!(html_text("![x](y)"), "!&#91;x&#93;(y)");
        let x = xml_text(ALL);
        assert!(!x.contains('<') && !x.chars().any(hidden));
    }

    #[test]
    fn sarif_messages_make_no_link_and_show_controls() {
        assert_eq!(
            sarif_message("[x](https://e.invalid) a\\b\u{1b}\n"),
            "\\[x\\](https://e.invalid) a\\\\b\\\\u{1b}\n"
        );
        assert_eq!(sarif_message("plain (1)"), "plain (1)");
    }

    #[test]
    fn sarif_uris_are_percent_encoded_and_never_climb() {
        let uri = |p: &str| sarif_uri(p);
        assert_eq!(uri("speed/r.json"), ("speed/r.json".into(), false));
        assert_eq!(
            uri("my page/a b%20#?.json"),
            ("my%20page/a%20b%2520%23%3F.json".into(), false)
        );
        assert_eq!(uri("javascript:x"), ("javascript%3Ax".into(), false));
        assert_eq!(uri("a\\..\\b"), ("a%5C..%5Cb".into(), false));
        assert_eq!(uri("<img>\u{1b}"), ("%3Cimg%3E%1B".into(), false));
        assert_eq!(uri("é"), ("%C3%A9".into(), false));
        assert_eq!(uri("a/../../etc/passwd"), ("a/etc/passwd".into(), true));
        assert_eq!(uri("/etc/passwd"), ("etc/passwd".into(), true));
        assert_eq!(uri("a//./b"), ("a/b".into(), true));
        assert_eq!(uri(".."), ("%2E%2E".into(), true));
        assert_eq!(uri(""), ("%2E%2E".into(), true));
    }

    #[test]
    fn json_keeps_the_value_and_loses_the_raw_characters() {
        let v = serde_json::json!({"a": "x\u{9b}\u{202e}\u{2028}\u{7f}\u{1b}\n"});
        let s = json(&serde_json::to_string(&v).unwrap());
        assert_eq!(s, r#"{"a":"x\u009b\u202e\u2028\u007f\u001b\n"}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
        assert!(!s.chars().any(hidden));
        let pretty = "{\n  \"a\": 1\n}\n";
        assert_eq!(json(pretty), pretty);
    }
}
