//! The report as an in-toto attestation: a Statement (v1) whose predicate is the test-result
//! predicate (`https://in-toto.io/attestation/test-result/v0.1`): the result (`PASSED`, `WARNED`,
//! `FAILED`), the checks that passed, warned and failed, and as subject the bundle's raw files with
//! their sha256 as verified, so a page can ship its audit as a statement a signer can wrap
//! (DSSE) and a verifier can check against the files.

use rigaudit_audit::{Report, Severity, Verdict};
use serde_json::{json, Value};

/// The checks that ran, split by the worst severity they found.
fn split(r: &Report) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut passed, mut warned, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for id in &r.checks_run {
        let worst = r
            .findings
            .iter()
            .filter(|f| &f.check == id)
            .map(|f| f.severity)
            .max();
        let fails = |s: Severity| r.fail_on.is_some_and(|t| s >= t);
        match worst {
            Some(s) if fails(s) => failed.push(id.clone()),
            Some(Severity::Error | Severity::Warning) => warned.push(id.clone()),
            _ => passed.push(id.clone()),
        }
    }
    (passed, warned, failed)
}

/// Renders a report as an in-toto Statement with the test-result predicate.
pub fn render(r: &Report) -> String {
    let (passed, warned, failed) = split(r);
    let result = match r.verdict {
        Verdict::Fail | Verdict::Incomplete => "FAILED",
        Verdict::Pass if !warned.is_empty() => "WARNED",
        Verdict::Pass => "PASSED",
    };
    let subject: Vec<Value> = r
        .artifacts
        .iter()
        .map(|a| json!({"name": a.path, "digest": {"sha256": a.sha256}}))
        .collect();
    let statement = json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": subject,
        "predicateType": "https://in-toto.io/attestation/test-result/v0.1",
        "predicate": {
            "result": result,
            "configuration": [{
                "name": format!("rigaudit {} rules {}", r.command, r.rules_version),
                "uri": format!("pkg:cargo/rigaudit@{}", env!("CARGO_PKG_VERSION")),
            }],
            "passedTests": passed,
            "warnedTests": warned,
            "failedTests": failed,
        }
    });
    let mut s = serde_json::to_string_pretty(&statement).unwrap_or_default();
    s.push('\n');
    s
}
