//! The corpus of result files other people published (`fixtures/published/<tool>/<case>/`), each
//! judged by hand in its `expected.json`: `verify --from <tool> <inputs...>` must raise every
//! finding expected, no other error or warning (a false alarm), and refuse no readable file; a
//! file a careful auditor cannot read either is refused with an error that names it. Info
//! findings are not judged. Where each file comes from: `fixtures/published/<tool>/SOURCES.md`.

use crate::common;

use common::{rigaudit, root, Run};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One case: its folder and its `expected.json`.
struct Case {
    dir: PathBuf,
    expected: Value,
}

impl Case {
    fn name(&self) -> String {
        let base = root().join("fixtures/published");
        self.dir
            .strip_prefix(&base)
            .unwrap_or(&self.dir)
            .display()
            .to_string()
    }

    fn tool(&self) -> &str {
        self.expected["tool"].as_str().unwrap_or_default()
    }

    fn inputs(&self) -> Vec<String> {
        let list = self.expected["inputs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let files = list.iter().filter_map(Value::as_str);
        files
            .map(|f| self.dir.join(f).display().to_string())
            .collect()
    }

    fn readable(&self) -> bool {
        self.expected["readable"].as_bool().unwrap_or(true)
    }

    fn verify(&self) -> Run {
        let inputs = self.inputs();
        let mut args = vec!["verify", "--from", self.tool()];
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["--format", "json"]);
        rigaudit(&args)
    }
}

/// Every case of the corpus, in order.
fn cases() -> Vec<Case> {
    let base = root().join("fixtures/published");
    let mut out = Vec::new();
    for tool in sorted_dirs(&base) {
        for dir in sorted_dirs(&tool) {
            let path = dir.join("expected.json");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let expected = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not valid JSON: {e}", path.display()));
            out.push(Case { dir, expected });
        }
    }
    out
}

fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The ids `rigaudit checks` lists: a proposed id not among them is not judged yet.
fn catalogue() -> BTreeSet<String> {
    let run = rigaudit(&["checks", "--format", "json"]);
    let ids = run.json().as_array().cloned().unwrap_or_default();
    ids.iter()
        .filter_map(|c| c["id"].as_str().map(String::from))
        .collect()
}

/// What is wrong with one case's verify, one line each.
fn judge(case: &Case, known: &BTreeSet<String>) -> Vec<String> {
    let run = case.verify();
    let name = case.name();
    if !case.readable() {
        let first = case.inputs().first().cloned().unwrap_or_default();
        let file = Path::new(&first)
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        return match run.code == 2 && run.stderr.contains(file.as_ref()) {
            true => Vec::new(),
            false => vec![format!(
                "{name}: unreadable, yet not refused naming {file}: exit {}",
                run.code
            )],
        };
    }
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    if run.code == 2 || report["verdict"] == "incomplete" {
        return vec![format!("{name}: refused: {}", run.stderr.trim())];
    }
    let expected: Vec<&Value> = case.expected["findings"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let expected_ids: BTreeSet<&str> = expected.iter().filter_map(|f| f["id"].as_str()).collect();
    // Errors and warnings only: info findings are not judged.
    let raised: Vec<&Value> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "error" || f["severity"] == "warning")
        .collect();
    let mut wrong: Vec<String> = raised
        .iter()
        .filter(|f| !expected_ids.contains(f["check"].as_str().unwrap_or_default()))
        .map(|f| {
            format!(
                "{name}: false alarm {} ({}): {}",
                f["check"], f["severity"], f["message"]
            )
        })
        .collect();
    for e in expected {
        let id = e["id"].as_str().unwrap_or_default();
        if known.contains(id) && !raised.iter().any(|f| f["check"] == id) {
            wrong.push(format!("{name}: missed {id}: {}", e["why"]));
        }
    }
    wrong
}

#[test]
fn every_published_case_is_judged_as_the_corpus_expects() {
    let cases = cases();
    assert!(
        cases.len() >= 50,
        "only {} cases in fixtures/published",
        cases.len()
    );
    let known = catalogue();
    let wrong: Vec<String> = cases.iter().flat_map(|c| judge(c, &known)).collect();
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
}
