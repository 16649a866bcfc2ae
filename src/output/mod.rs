//! Renderers of the one report model: one module per format.

pub mod json;
pub mod sarif;
pub mod text;

use crate::fatal::{fatal, Fatal};
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

/// Writes `content` to `path` atomically: a temporary file in the same folder, then a rename, so a
/// reader never sees half a report and an existing report is never lost to a crash.
pub fn write_atomic(path: &Path, content: &[u8]) -> Result<(), Fatal> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| fatal(format!("{}: cannot write: {e}", path.display())))?;
    tmp.write_all(content)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| fatal(format!("{}: cannot write: {e}", path.display())))?;
    tmp.persist(path)
        .map_err(|e| fatal(format!("{}: cannot write: {}", path.display(), e.error)))?;
    Ok(())
}
