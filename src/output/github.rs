//! The report as GitHub Actions workflow commands: one annotation per finding
//! (`::error file=F,line=L,title=ID::message`, `::warning`, `::notice` for a note), its file
//! relative to the repository root and its line resolved from the pointer where it has a place,
//! and the verdict line last, with what a pass covers or why a run is incomplete. Every field
//! (file, title, message) and the verdict line go through [`super::escape`]: hidden characters
//! (terminal controls, bidirectional overrides) written visibly, then `%`, CR and LF escaped as the
//! Actions runner reads them; in a property `:` and `,` too.

use super::escape::{workflow_data as escape_data, workflow_property as escape_property};
use super::place::Places;
use rigaudit_audit::{Finding, Report, Severity};
use std::fmt::Write;

/// The workflow command of a severity.
fn command(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

/// Whether a file's path can be the `file=` property: one line with no control or bidirectional
/// character and no `:` (which a repository's paths do not hold, and a manifest's may not). Another
/// path is said in the message instead, escaped there: no property can hold what reads as a
/// second command, escaped or not.
fn plain_path(p: &str) -> bool {
    !p.is_empty() && !p.chars().any(|c| super::escape::hidden(c) || c == ':')
}

/// One finding's annotation.
fn annotation(f: &Finding, places: &Places) -> String {
    let mut props = Vec::new();
    let mut message = f.message.clone();
    if let Some(file) = &f.file {
        let path = places.path(file);
        let line = places.line(file, f.pointer.as_deref());
        match (plain_path(&path), line) {
            (true, Some(line)) => {
                props.push(format!("file={},line={line}", escape_property(&path)))
            }
            (true, None) => {
                props.push(format!("file={}", escape_property(&path)));
                if let Some(p) = &f.pointer {
                    message = format!("{p}: {message}");
                }
            }
            (false, _) => {
                let at = f
                    .pointer
                    .as_deref()
                    .map_or(String::new(), |p| format!(" {p}"));
                message = format!("{path}{at}: {message}");
            }
        }
    }
    props.push(format!("title={}", escape_property(&f.check)));
    format!(
        "::{} {}::{}",
        command(f.severity),
        props.join(","),
        escape_data(&message)
    )
}

/// Renders a report as workflow commands, the most severe findings first.
pub fn render(r: &Report, places: &Places) -> String {
    let mut o = String::new();
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        for f in r.findings.iter().filter(|f| f.severity == sev) {
            let _ = writeln!(o, "{}", annotation(f, places));
        }
    }
    let _ = writeln!(
        o,
        "rigaudit {} {}: {} ({} errors, {} warnings, {} notes; {} checks ran)",
        escape_data(&r.command),
        escape_data(&r.bundle),
        escape_data(&r.qualified()),
        r.counts.error,
        r.counts.warning,
        r.counts.info,
        r.checks_run.len()
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_and_properties_are_escaped_as_the_runner_reads_them() {
        let f = Finding::new("speed.x", Severity::Info, "line one\nline two: 100%")
            .file("speed/a,b.json")
            .pointer("line 3");
        let line = annotation(&f, &Places::default());
        assert_eq!(
            line,
            "::notice file=speed/a%2Cb.json,line=3,title=speed.x::line one%0Aline two: 100%25"
        );
        assert_eq!(line.lines().count(), 1);
    }

    #[test]
    fn controls_in_every_field_are_visible_and_no_line_is_a_command_of_the_page() {
        let f = Finding::new(
            "x.y\u{1b}[2J",
            Severity::Error,
            "m\u{9b}\n::add-mask::s\u{202e}",
        )
        .file("a\u{7},b:c.json")
        .pointer("/p\u{1b}");
        let line = annotation(&f, &Places::default());
        assert_eq!(
            line,
            "::error title=x.y\\u{1b}[2J::a\\u{7},b:c.json /p\\u{1b}: m\\u{9b}%0A::add-mask::s\\u{202e}"
        );
        let f =
            Finding::new("x.y", Severity::Error, "m").file("<img src=x>\n::error title=pwned::P");
        assert_eq!(
            annotation(&f, &Places::default()),
            "::error title=x.y::<img src=x>%0A::error title=pwned::P: m"
        );
        let f = Finding::new("x.y", Severity::Error, "m").file("my dir/été <b>%.json");
        assert_eq!(
            annotation(&f, &Places::default()),
            "::error file=my dir/été <b>%25.json,title=x.y::m"
        );
    }

    #[test]
    fn a_finding_without_a_line_keeps_its_pointer_in_the_message() {
        let f = Finding::new("quality.y", Severity::Warning, "off")
            .file("q.json")
            .pointer("/total");
        assert_eq!(
            annotation(&f, &Places::default()),
            "::warning file=q.json,title=quality.y::/total: off"
        );
        let f = Finding::new("setup.z", Severity::Error, "no file");
        assert_eq!(
            annotation(&f, &Places::default()),
            "::error title=setup.z::no file"
        );
    }
}
