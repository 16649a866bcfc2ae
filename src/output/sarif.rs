//! The report as SARIF 2.1.0, for code-scanning tools in CI: one rule per check of the catalogue
//! (its one-line doc as short and full description and help, its catalogue severity as default
//! level, a link to its entry in `docs/checks.md` where the package names its repository), one
//! result per finding. A finding's file is given relative to the repository root (`SRCROOT`, named
//! in `originalUriBaseIds`) with the line its pointer names as the region, so code scanning links
//! it to the file in the repository; outside a repository, or in a packed bundle, it stays
//! relative to the bundle (`BUNDLE`). The run's properties carry the verdict as the text report
//! leads with it (what a pass covers, why a run is incomplete, the headlines, what to do), and its
//! invocation says whether the run could check everything (an incomplete one is not successful and
//! has a notification saying why). A file's `uri` is percent-encoded and never climbs above its
//! base ([`super::escape::sarif_uri`]; a path it had to change is kept as the location's property
//! `path`), a message's text cannot form a link ([`super::escape::sarif_message`]), and the log
//! holds no raw control or bidirectional character ([`super::escape::json`]).

use super::escape;
use super::place::Places;
use rigaudit_audit::{headline, Finding, Report, Severity};
use serde_json::{json, Value};

/// The schema the log follows: OASIS's SARIF 2.1.0 (with errata 01), kept in
/// `schemas/external/`.
const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The anchor of a check's heading in `docs/checks.md`, as GitHub spells heading anchors: lower
/// case, punctuation other than `-` and `_` dropped.
pub fn anchor(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Where a check is documented: its entry in `docs/checks.md` of the repository the package names,
/// at this version's tag; none when the package names no repository.
pub fn help_uri(repository: &str, version: &str, id: &str) -> Option<String> {
    let repository = repository.trim_end_matches('/');
    (!repository.is_empty())
        .then(|| format!("{repository}/blob/v{version}/docs/checks.md#{}", anchor(id)))
}

/// One rule per check of the table.
fn rules() -> Vec<Value> {
    rigaudit_audit::table::all()
        .iter()
        .map(|c| {
            let mut rule = json!({"id": c.id, "name": c.id,
                   "shortDescription": {"text": c.doc},
                   "fullDescription": {"text": c.doc},
                   "help": {"text": format!("{} ({}: `rigaudit checks` lists every check)", c.doc, c.id),
                            "markdown": format!("**{}** ({}): {}", c.id, c.severity.name(), c.doc)},
                   "defaultConfiguration": {"level": level(c.severity)}});
            let uri = help_uri(
                env!("CARGO_PKG_REPOSITORY"),
                env!("CARGO_PKG_VERSION"),
                c.id,
            );
            if let Some(uri) = uri {
                rule["helpUri"] = Value::from(uri);
            }
            rule
        })
        .collect()
}

/// The tool as a SARIF driver.
fn driver() -> Value {
    json!({"name": "rigaudit", "version": env!("CARGO_PKG_VERSION"), "rules": rules()})
}

fn pretty(log: &Value) -> String {
    let mut s = escape::json(&serde_json::to_string_pretty(log).unwrap_or_default());
    s.push('\n');
    s
}

/// The catalogue as a SARIF log with no results: `rigaudit checks --format sarif`.
pub fn catalogue() -> String {
    pretty(&json!({
        "version": "2.1.0",
        "$schema": SCHEMA,
        "runs": [{"tool": {"driver": driver()}, "results": []}]
    }))
}

/// A finding's location: its file from the repository root (or the bundle), the line its
/// pointer names, and the pointer itself as a logical location.
fn location(f: &Finding, file: &str, places: &Places) -> Value {
    let base = if places.in_repository() {
        "SRCROOT"
    } else {
        "BUNDLE"
    };
    let path = places.path(file);
    let (uri, changed) = escape::sarif_uri(&path);
    let mut physical = json!({"artifactLocation": {"uri": uri, "uriBaseId": base}});
    if changed {
        physical["artifactLocation"]["properties"] = json!({"path": path});
    }
    if let Some(line) = places.line(file, f.pointer.as_deref()) {
        physical["region"] = json!({"startLine": line});
    }
    let mut loc = json!({"physicalLocation": physical});
    if let Some(p) = &f.pointer {
        loc["logicalLocations"] = json!([{"fullyQualifiedName": p, "kind": "element"}]);
    }
    loc
}

/// What the `uriBaseId`s stand for.
fn base_ids(places: &Places) -> Value {
    match places.root_uri().filter(|_| places.in_repository()) {
        Some(uri) => json!({"SRCROOT": {"uri": uri,
            "description": {"text": "The root of the repository the bundle is in."}}}),
        None => json!({"BUNDLE": {
            "description": {"text": "The bundle's folder (the one holding bundle.json)."}}}),
    }
}

/// The run's verdict as its property bag: the verdict, spelled as in JSON, with what it settled
/// (`qualified_verdict`: `PASS, self-consistent only: ...`; `verdict_qualifier` as in JSON), what a
/// pass that checked printed figures only covers (`coverage`), why it is incomplete, the headlines
/// and what to do, as the text report leads with them.
fn verdict_properties(r: &Report) -> Value {
    let mut p = json!({"verdict": r.verdict.name(), "qualified_verdict": r.qualified(),
                       "headlines": headline::headlines(r)});
    if let Some(q) = &r.verdict_qualifier {
        p["verdict_qualifier"] = Value::from(q.as_str());
    }
    if let Some(covers) = headline::coverage(r) {
        p["coverage"] = Value::from(covers);
    }
    if let Some(why) = &r.incomplete {
        p["incomplete"] = Value::from(why.as_str());
    }
    if let Some(next) = headline::next_step(r) {
        p["next_step"] = Value::from(next);
    }
    p
}

/// The invocation: its exit code, and, for an incomplete run, not successful with a notification
/// saying what could not be checked (code scanning shows a tool's notifications apart from
/// results).
fn invocation(r: &Report) -> Value {
    let mut inv = json!({"executionSuccessful": r.incomplete.is_none(),
                         "exitCode": r.exit_code()});
    if let Some(why) = &r.incomplete {
        inv["toolExecutionNotifications"] = json!([{"level": "error",
            "message": {"text": escape::sarif_message(&format!("incomplete: {why}"))}}]);
    }
    inv
}

/// Renders a report as a SARIF log.
pub fn render(r: &Report, places: &Places) -> String {
    let results: Vec<Value> = r
        .findings
        .iter()
        .map(|f| {
            let text = escape::sarif_message(&f.message);
            let mut res =
                json!({"ruleId": f.check, "level": level(f.severity), "message": {"text": text}});
            if let Some(file) = &f.file {
                res["locations"] = json!([location(f, file, places)]);
            }
            if !f.data.is_null() {
                res["properties"] = json!({"data": f.data});
            }
            res
        })
        .collect();
    pretty(&json!({
        "version": "2.1.0",
        "$schema": SCHEMA,
        "runs": [{
            "tool": {"driver": driver()},
            "automationDetails": {"id": format!("rigaudit/{}/{}", r.command, r.bundle)},
            "invocations": [invocation(r)],
            "originalUriBaseIds": base_ids(places),
            "results": results,
            "properties": verdict_properties(r),
        }]
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_links_to_its_heading_in_the_checks_page() {
        assert_eq!(anchor("speed.cached-tokens"), "speedcached-tokens");
        assert_eq!(anchor("import.subset_of.X"), "importsubset_ofx");
        assert_eq!(
            help_uri("https://example.org/r/", "1.2.0", "fit.memory").as_deref(),
            Some("https://example.org/r/blob/v1.2.0/docs/checks.md#fitmemory")
        );
        assert_eq!(help_uri("", "1.2.0", "fit.memory"), None);
    }
}
