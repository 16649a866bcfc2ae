//! The JSON Schemas of every file kind, embedded at build time from `schemas/`, compiled once.

use rigaudit_audit::records::FileKind;
use serde_json::Value;
use std::sync::OnceLock;

/// The schema text of a kind (`None` for plain-text logs).
pub fn text(kind: FileKind) -> Option<&'static str> {
    Some(match kind {
        FileKind::Card => include_str!("../schemas/card.schema.json"),
        FileKind::SpeedContract => include_str!("../schemas/speed-contract.schema.json"),
        FileKind::SpeedResult => include_str!("../schemas/speed-result.schema.json"),
        FileKind::QualityContract => include_str!("../schemas/quality-contract.schema.json"),
        FileKind::QualitySummary => include_str!("../schemas/quality-summary.schema.json"),
        FileKind::QualityAnswers => include_str!("../schemas/quality-answers.schema.json"),
        FileKind::FitResult => include_str!("../schemas/fit-result.schema.json"),
        FileKind::Log => return None,
    })
}

/// The manifest's schema text.
pub const BUNDLE: &str = include_str!("../schemas/bundle.schema.json");
/// The report's schema text.
pub const REPORT: &str = include_str!("../schemas/report.schema.json");
/// The policy file's schema text (its TOML read as JSON).
pub const POLICY: &str = include_str!("../schemas/policy.schema.json");

fn compile(text: &str) -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(text).expect("embedded schema is JSON");
    jsonschema::draft202012::new(&schema).expect("embedded schema compiles")
}

/// The compiled validator of a kind.
pub fn validator(kind: FileKind) -> Option<&'static jsonschema::Validator> {
    static CELLS: [OnceLock<Option<jsonschema::Validator>>; 8] = [const { OnceLock::new() }; 8];
    let i = kind as usize;
    CELLS[i].get_or_init(|| text(kind).map(compile)).as_ref()
}

/// The manifest's compiled validator.
pub fn bundle() -> &'static jsonschema::Validator {
    static CELL: OnceLock<jsonschema::Validator> = OnceLock::new();
    CELL.get_or_init(|| compile(BUNDLE))
}

/// The policy file's compiled validator.
pub fn policy() -> &'static jsonschema::Validator {
    static CELL: OnceLock<jsonschema::Validator> = OnceLock::new();
    CELL.get_or_init(|| compile(POLICY))
}

/// `Err` with the first ten schema errors of `value`, each `at POINTER: MESSAGE`, joined by `; `.
pub fn follows(v: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    let errs = errors(v, value, 10);
    if errs.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = errs.iter().map(|(p, m)| format!("at {p}: {m}")).collect();
    Err(list.join("; "))
}

/// Every schema error of `value`: (JSON pointer, message), at most `limit`.
pub fn errors(v: &jsonschema::Validator, value: &Value, limit: usize) -> Vec<(String, String)> {
    v.iter_errors(value)
        .take(limit)
        .map(|e| {
            let p = e.instance_path().to_string();
            (
                if p.is_empty() {
                    "/".to_string()
                } else {
                    crate::input::shown(&p)
                },
                // The message quotes the value, which may be huge or hold escape sequences.
                crate::input::shown_n(&e.to_string(), 2 * crate::input::QUOTE_MAX),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_compiles() {
        for k in [
            FileKind::Card,
            FileKind::SpeedContract,
            FileKind::SpeedResult,
            FileKind::QualityContract,
            FileKind::QualitySummary,
            FileKind::QualityAnswers,
            FileKind::FitResult,
        ] {
            assert!(validator(k).is_some(), "{k:?}");
        }
        let _ = bundle();
        let _ = policy();
    }
}
