//! The report as JSON (`schemas/report.schema.json`).

/// Pretty JSON with a trailing newline.
pub fn render(r: &rigaudit_audit::Report) -> String {
    let mut s =
        serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
