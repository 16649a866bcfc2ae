//! Renderers of the one report model: one module per format.

pub mod json;
pub mod sarif;
pub mod text;

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
}

/// Renders a report in a format.
pub fn render(r: &rigaudit_audit::Report, f: Format, color: bool) -> String {
    match f {
        Format::Text => text::render(r, color),
        Format::Json => json::render(r),
        Format::Sarif => sarif::render(r),
    }
}

/// Whether text on stdout may be coloured: a terminal, and `NO_COLOR` unset.
pub fn color_stdout() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The catalogue of checks (`rigaudit checks`): one line per check as text, a JSON array of
/// `{id, severity, doc}`, or a SARIF log whose driver lists every check as a rule.
pub fn catalogue(f: Format) -> String {
    let all = rigaudit_audit::table::all();
    match f {
        Format::Text => all
            .iter()
            .map(|c| format!("{:<38} {:<8} {}\n", c.id, c.severity.name(), c.doc))
            .collect(),
        Format::Json => {
            let v: Vec<_> = all
                .iter()
                .map(|c| serde_json::json!({"id": c.id, "severity": c.severity, "doc": c.doc}))
                .collect();
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
        Format::Sarif => sarif::catalogue(),
    }
}

/// Writes `content` to `path` atomically: a temporary file in the same folder, then a rename, so a
/// reader never sees half a report and an existing report is never lost to a crash.
pub fn write_atomic(path: &Path, content: &[u8]) -> Result<(), Fatal> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .at(format_args!("{}: cannot write", path.display()))?;
    tmp.write_all(content)
        .and_then(|_| tmp.as_file().sync_all())
        .at(format_args!("{}: cannot write", path.display()))?;
    tmp.persist(path)
        .map_err(|e| fatal(format!("{}: cannot write: {}", path.display(), e.error)))?;
    Ok(())
}
