//! The report as SARIF 2.1.0, for code-scanning tools in CI: one rule per check of the catalogue,
//! one result per finding, located at the bundle file (and the JSON pointer as its fragment).

use rigaudit_audit::{Report, Severity};
use serde_json::{json, Value};

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// One rule per check of the table: id, one-line doc, catalogue severity as the default level.
fn rules() -> Vec<Value> {
    rigaudit_audit::table::all()
        .iter()
        .map(|c| {
            json!({"id": c.id, "shortDescription": {"text": c.doc},
                   "defaultConfiguration": {"level": level(c.severity)}})
        })
        .collect()
}

/// The tool as a SARIF driver.
fn driver() -> Value {
    json!({"name": "rigaudit", "version": env!("CARGO_PKG_VERSION"), "rules": rules()})
}

/// The catalogue as a SARIF log with no results: `rigaudit checks --format sarif`.
pub fn catalogue() -> String {
    let log = json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{"tool": {"driver": driver()}, "results": []}]
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}

/// Renders a report as a SARIF log.
pub fn render(r: &Report) -> String {
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let mut res = json!({"ruleId": f.check, "level": level(f.severity), "message": {"text": f.message}});
            if let Some(file) = &f.file {
                let mut loc = json!({"physicalLocation": {"artifactLocation": {"uri": file, "uriBaseId": "BUNDLE"}}});
                if let Some(p) = &f.pointer {
                    loc["logicalLocations"] = json!([{"fullyQualifiedName": p, "kind": "element"}]);
                }
                res["locations"] = json!([loc]);
            }
            if !f.data.is_null() {
                res["properties"] = json!({"data": f.data});
            }
            res
        })
        .collect();
    let log = json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": driver()},
            "automationDetails": {"id": format!("rigaudit/{}/{}", r.command, r.bundle)},
            "results": results,
        }]
    });
    let mut s = serde_json::to_string_pretty(&log).unwrap_or_default();
    s.push('\n');
    s
}
