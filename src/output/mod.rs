//! Renderers of the one report model: one module per format.

pub mod escape;
pub mod github;
pub mod html;
pub mod intoto;
pub mod json;
pub mod junit;
pub mod lines;
pub mod loaded;
pub mod markdown;
pub mod place;
pub mod sarif;
pub mod text;

pub use place::Places;

use crate::fatal::{fatal, At, Fatal};
use std::io::Write;
use std::path::Path;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Grouped text for people.
    Text,
    /// JSON following `schemas/report.schema.json`.
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
    /// Markdown for a pull-request comment.
    Markdown,
    /// JUnit XML: one test case per check, for CI test views.
    Junit,
    /// An in-toto Statement with the test-result predicate (the bundle's files as subject).
    Intoto,
    /// One self-contained HTML page with SVG plots.
    Html,
    /// GitHub Actions annotations: one workflow command per finding, at its file and line.
    Github,
}

impl Format {
    /// The format a file name asks for by its extension: `.md`, `.xml` (JUnit), `.sarif`,
    /// `.intoto.json` (attestation), `.json`, `.txt`.
    pub fn of_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let by_end = [
            (".intoto.json", Format::Intoto),
            (".intoto.jsonl", Format::Intoto),
            (".sarif.json", Format::Sarif),
            (".sarif", Format::Sarif),
            (".json", Format::Json),
            (".md", Format::Markdown),
            (".markdown", Format::Markdown),
            (".xml", Format::Junit),
            (".txt", Format::Text),
            (".html", Format::Html),
            (".htm", Format::Html),
        ];
        by_end
            .iter()
            .find(|(end, _)| name.ends_with(end))
            .map(|(_, f)| *f)
    }
}

/// The files to write a report to, beginning with `--report PATH` (JSON), when given; the
/// `--output` files follow.
pub fn report_files(report: Option<&std::path::Path>) -> Vec<(Format, std::path::PathBuf)> {
    let json = |p: &std::path::Path| (Format::Json, p.to_path_buf());
    report.map(json).into_iter().collect()
}

/// One `--output [FORMAT:]FILE`: the file and its format (the prefix, else the extension).
pub fn parse_output(spec: &str) -> Result<(Format, std::path::PathBuf), Fatal> {
    use clap::ValueEnum;
    if let Some((f, file)) = spec.split_once(':') {
        if let Ok(format) = Format::from_str(f, true) {
            return Ok((format, file.into()));
        }
    }
    let path = std::path::PathBuf::from(spec);
    let format = Format::of_path(&path).ok_or_else(|| {
        fatal(format!(
            "--output {spec}: cannot tell the format from the name; end it in .json, .sarif, .md, .xml (JUnit), .intoto.json, .html or .txt, or write FORMAT:FILE"
        ))
    })?;
    Ok((format, path))
}

/// How text is shown: in colour or not, every row or the ones that matter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours on.
    pub color: bool,
    /// Every row of every table (`--verbose`), not only those that differ.
    pub verbose: bool,
}

/// When to colour text (`--color`); it lives here, below the CLI that parses it and the
/// renderers that read it, so neither imports the other back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set (or `CLICOLOR_FORCE` forces it on).
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorWhen {
    /// Whether text on standard output is coloured: `always`, `never`, or for `auto` a terminal
    /// without `NO_COLOR`, or `CLICOLOR_FORCE` set to anything but `0`
    /// (<https://no-color.org>, <https://bixense.com/clicolors/>).
    pub fn on_stdout(self) -> bool {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let forced = std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0");
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto if no_color => false,
            ColorWhen::Auto => forced || std::io::stdout().is_terminal(),
        }
    }
}

/// Renders a report in a format; annotations and SARIF show the findings' files at `places`.
pub fn render(r: &rigaudit_audit::Report, f: Format, style: Style, places: &Places) -> String {
    match f {
        Format::Github => github::render(r, places),
        Format::Text => text::render(r, style),
        Format::Json => json::render(r),
        Format::Sarif => sarif::render(r, places),
        Format::Markdown => markdown::render(r),
        Format::Junit => junit::render(r),
        Format::Intoto => intoto::render(r),
        Format::Html => html::render(r),
    }
}

/// The catalogue of checks (`rigaudit checks`): one line per check as text, a JSON array of
/// `{id, severity, doc}`, a SARIF log whose driver lists every check as a rule, or the Markdown
/// page `docs/checks.md`.
pub fn catalogue(f: Format) -> String {
    let all = rigaudit_audit::table::all();
    match f {
        Format::Json => {
            let v: Vec<_> = all
                .iter()
                .map(|c| serde_json::json!({"id": c.id, "severity": c.severity, "doc": c.doc}))
                .collect();
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        Format::Sarif => sarif::catalogue(),
        Format::Markdown => markdown::catalogue(),
        _ => {
            let lines: String = all
                .iter()
                .map(|c| format!("{:<38} {:<8} {}\n", c.id, c.severity.name(), c.doc))
                .collect();
            // A long doc continues under the docs' column.
            text::fit_hanging(&lines, text::WIDTH, 48)
        }
    }
}

/// One check explained (`rigaudit checks ID`), like `ruff rule`: what it finds (its row's doc),
/// why it matters (its severity, what its family reads), how to fix what it finds and an example
/// (the check's own words, [`rigaudit_audit::advice`]), and, for a check a gate may re-grade, the
/// policy that does; as text, or a JSON object with the same parts. An unknown id is an error
/// naming the nearest ids.
pub fn explain(id: &str, f: Format) -> Result<String, Fatal> {
    use rigaudit_audit::{advice, table};
    let all = table::all();
    let Some(c) = all.iter().find(|c| c.id == id) else {
        let near = nearest(id, all.iter().map(|c| c.id));
        let near = if near.is_empty() {
            String::new()
        } else {
            format!("; nearest: {}", near.join(", "))
        };
        return Err(fatal(format!(
            "no check '{}'{near} (`rigaudit checks` lists every id)",
            crate::input::shown(id)
        )));
    };
    let reads = table::family_of(c.id).map_or("", |fam| fam.reads);
    let (fix, example) = advice::of(c.id).map_or(("", ""), |a| (a.fix, a.example));
    let why = if c.id.starts_with("coverage.") {
        "a warning that comes with the verdict INCOMPLETE (exit code 3) whatever --fail-on says: part of what the run was asked to check was not checked, so it cannot pass (the errors it did find are still listed)"
    } else {
        match c.severity {
        rigaudit_audit::Severity::Error => "an error: a figure that is wrong or a step that is invalid; it fails the run (exit 1) unless a policy re-grades it",
        rigaudit_audit::Severity::Warning => "a warning: something a reader should question; it fails the run only with --fail-on warning",
        rigaudit_audit::Severity::Info => "a note: context worth knowing; it fails the run only with --fail-on info",
        }
    };
    let policy = policy_example(c);
    if f == Format::Json {
        let v = serde_json::json!({"id": c.id, "severity": c.severity, "doc": c.doc, "reads": reads, "why": why, "fix": fix, "example": example, "policy": policy});
        return Ok(serde_json::to_string_pretty(&v).unwrap_or_default() + "\n");
    }
    let mut doc = format!(
        "{} ({})\n\nWhat it finds\n{}\n\nWhy it matters\n{}\n\nHow to fix it\n{}\n\nExample\n{}\n",
        c.id,
        c.severity.name(),
        indent(c.doc),
        indent(&format!("It is {why}. Its family reads {reads}.")),
        indent(&capital(fix)),
        indent(&ended(example))
    );
    if let Some(p) = policy {
        doc.push_str(&format!("\nIn a policy\n{}\n", indent(&p)));
    }
    Ok(text::fit_text(&doc))
}

/// The policy that re-grades a check, for a gate that accepts what it finds (or fails on a note):
/// none for `diff.*`, whose setup differences are accepted with `--setup-fails-on`, and for
/// `coverage.*`, whose run stays incomplete whatever its severity.
fn policy_example(c: &rigaudit_audit::check::About) -> Option<String> {
    if c.id.starts_with("diff.") || c.id.starts_with("coverage.") {
        return None;
    }
    let (to, reason) = match c.severity {
        rigaudit_audit::Severity::Info => {
            ("warning", "this gate fails on it (with --fail-on warning)")
        }
        _ => ("info", "why this gate accepts it"),
    };
    Some(format!(
        "A gate re-grades it with --policy FILE, with a reason the report repeats:\n\n[checks.\"{}\"]\nseverity = \"{to}\"\nreason = \"{reason}\"",
        c.id
    ))
}

/// Text indented by two spaces, line by line (an empty line stays empty).
fn indent(s: &str) -> String {
    s.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("  {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A sentence with its first letter a capital and a final period.
fn capital(s: &str) -> String {
    let mut c = s.chars();
    let mut out: String = match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    };
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// A sentence with a final period, its first letter as written (an example may start with a file
/// or command name).
fn ended(s: &str) -> String {
    if s.ends_with('.') {
        s.to_string()
    } else {
        format!("{s}.")
    }
}

/// The ids nearest to `id`: those that contain it or that it contains, then the fewest edits
/// away; at most five.
fn nearest<'a>(id: &str, ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(usize, &str)> = ids
        .map(|c| {
            let contains = c.contains(id) || (!c.is_empty() && id.contains(c));
            (if contains { 0 } else { 1 + edits(id, c) }, c)
        })
        .collect();
    scored.sort();
    let close = 1 + (id.chars().count() / 3).max(3);
    scored
        .into_iter()
        .filter(|(d, _)| *d <= close)
        .take(5)
        .map(|(_, c)| c)
        .collect()
}

/// The Levenshtein distance between two strings, in characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Writes `content` to `path` atomically: a temporary file in the same folder, then a rename, so a
/// reader never sees half a report and an existing report is never lost to a crash. The file gets
/// the mode a plain create would give it (an existing file's mode, else 0666 less the umask), not
/// the temporary file's 0600.
pub fn write_atomic(path: &Path, content: &[u8]) -> Result<(), Fatal> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(fatal(format!(
            "{}: cannot write: the folder {} does not exist (create it first, or name another)",
            path.display(),
            dir.display()
        )));
    }
    let mode = mode_for(path);
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .at(format_args!("{}: cannot write", path.display()))?;
    tmp.write_all(content)
        .and_then(|_| set_mode(tmp.as_file(), mode))
        .and_then(|_| tmp.as_file().sync_all())
        .at(format_args!("{}: cannot write", path.display()))?;
    tmp.persist(path)
        .map_err(|e| fatal(format!("{}: cannot write: {}", path.display(), e.error)))?;
    Ok(())
}

/// Appends `content` to `path` (the job summary GitHub gives a step, which its other steps also
/// write to: appended, not replaced), creating it when missing.
pub fn append(path: &Path, content: &[u8]) -> Result<(), Fatal> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(content))
        .at(format_args!(
            "{}: cannot add the report to the job summary",
            path.display()
        ))
}

/// The mode a new file at `path` gets: the existing file's permission bits, else 0666 less the
/// process's umask (read from /proc without changing it; 022 where /proc does not say).
fn mode_for(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path) {
        return meta.permissions().mode() & 0o7777;
    }
    0o666 & !umask()
}

/// The process's umask, from `/proc/self/status` (Linux 4.7 and later); 022 when it is not there.
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

fn set_mode(file: &std::fs::File, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_check_is_explained_from_its_row_and_an_unknown_id_names_the_nearest() {
        let text = explain("quality.refused-counted-as-wrong", Format::Text).unwrap();
        for part in [
            "What it finds",
            "Why it matters",
            "How to fix it",
            "Example",
        ] {
            assert!(text.contains(part), "{text}");
        }
        let row = rigaudit_audit::table::find("quality.refused-counted-as-wrong").unwrap();
        assert!(text.replace("\n  ", " ").contains(row.doc), "{text}");
        assert!(
            text.lines().all(|l| l.chars().count() <= text::WIDTH),
            "{text}"
        );
        let err = explain("quality.refused-as-wrong", Format::Text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("nearest: quality.refused-counted-as-wrong"),
            "{err}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&explain("speed.cached-tokens", Format::Json).unwrap()).unwrap();
        assert_eq!(json["id"], "speed.cached-tokens");
        assert!(!json["fix"].as_str().unwrap().is_empty());
    }

    #[test]
    fn edits_count_insertions_deletions_and_changes() {
        assert_eq!(edits("kitten", "sitting"), 3);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("same", "same"), 0);
    }

    #[test]
    fn a_new_report_gets_the_umask_mode_not_the_temp_files_0600() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.json");
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(mode(&p), 0o666 & !umask());
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
    }

    #[test]
    fn a_rewritten_report_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.json");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&p, b"new").unwrap();
        assert_eq!(mode(&p), 0o640);
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn a_missing_folder_is_named_without_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("no-such-folder").join("report.json");
        let err = write_atomic(&p, b"{}").unwrap_err().to_string();
        assert!(err.contains("no-such-folder does not exist"), "{err}");
        assert!(!err.contains("no-such-folder/.tmp"), "{err}");
    }
}
