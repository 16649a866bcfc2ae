//! The report as JSON (`schemas/report.schema.json`).

/// Pretty JSON with a trailing newline; no raw control or bidirectional character in it (each is
/// a `\uXXXX` escape, the same value for a reader: [`super::escape::json`]).
pub fn render(r: &rigaudit_audit::Report) -> String {
    let mut s = serde_json::to_string_pretty(r)
        .map(|s| super::escape::json(&s))
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
