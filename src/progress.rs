//! rigaudit's own lines on standard error (progress, warnings, the error that ends a run): one
//! writer, so one escaping. Such a line quotes page text (a recorded command, a path, an
//! engine's output), and a CI runner reads every line of a job's log: a raw newline would start a
//! line of the page's choosing, `::error ...` at a line's start is a workflow command, ESC a
//! terminal control. So a line is written with its control characters (but the line feeds
//! rigaudit puts between its own lines) and the bidirectional marks shown escaped (as
//! [`crate::input::escaped`] does), and each line goes through the text report's
//! [`crate::input::no_command`] (a `\` before a line that would start with `::`).

use std::fmt::Arguments;
use std::io::Write;

/// `text` as it may stand on standard error: see the module's doc.
pub fn text(text: &str) -> String {
    let escaped = crate::input::escaped(text);
    if !escaped.lines().any(|l| l.trim_start().starts_with("::")) {
        return escaped;
    }
    let lines: Vec<_> = escaped.split('\n').map(crate::input::no_command).collect();
    lines.join("\n")
}

/// Writes one line (or several, split by rigaudit's own line feeds) on standard error, escaped;
/// never panics (when stderr's reader is gone, a CI job cancelled or a pipe closed, `eprintln!`
/// would).
pub fn say(line: Arguments) {
    let shown = text(&line.to_string());
    let _ = writeln!(std::io::stderr(), "{shown}");
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn controls_are_shown_and_no_line_starts_a_workflow_command() {
        assert_eq!(text("plain\nlines"), "plain\nlines");
        assert_eq!(
            text("a\u{1b}[2J\u{7}b\u{202e}c\rd"),
            "a\\u{1b}[2J\\u{7}b\\u{202e}c\\rd"
        );
        assert_eq!(
            text("run:\n  ::error title=x::pwned\n::add-mask::y"),
            "run:\n  \\::error title=x::pwned\n\\::add-mask::y"
        );
        assert_eq!(text("a ::b"), "a ::b");
        for line in text("x\n\t ::set-output name=a::b").lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
        }
    }
}
