//! Verdicts that carry their coverage: a pass on reconstructed files says so, an incomplete
//! verdict always says what is missing and what to add, a rehash that found nothing it was asked
//! to hash is incomplete, a listed raw file that leaves the bundle is an error, and every input
//! named on the command line is checked or refused.

use crate::common;

use common::assert_has;
use common::{copy_dir, fixture, rigaudit, rigaudit_line, root, Run};
use serde_json::Value;

fn findings_of<'a>(r: &'a Value, check: &str) -> Vec<&'a Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == check)
        .collect()
}

/// The results file of the clean lm-eval run (its name carries the run's date).
fn lm_eval_clean_results() -> std::path::PathBuf {
    std::fs::read_dir(root().join("fixtures/imports/lm-eval/clean"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("results_")
        })
        .unwrap()
}

#[test]
fn a_pass_on_a_page_rebuilt_from_itself_is_qualified() {
    let page = fixture("mia-recipe-1104-2x");
    let run = rigaudit(&["verify", page.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first = run.stdout.lines().next().unwrap();
    assert_has(
        first,
        ": PASS, self-consistent only: 43 of 43 files reconstructed",
    );
    let json = rigaudit(&["verify", page.to_str().unwrap(), "--format", "json"]).json();
    let rec = findings_of(&json, "claims.reconstructed");
    assert_eq!(rec[0]["data"]["reconstructed"], 43);
    assert_eq!(rec[0]["data"]["files"], 43);
}

#[test]
fn lm_eval_results_without_samples_pass_as_results_only_and_say_what_to_add() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = root().join("fixtures/imports/lm-eval/clean");
    let results = lm_eval_clean_results();
    let only = tmp.path().join(results.file_name().unwrap());
    std::fs::copy(&results, &only).unwrap();
    let text = rigaudit(&["verify", only.to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}", text.stdout);
    // The verdict line of a long path wraps: its words, joined.
    let head: Vec<&str> = text.stdout.lines().take(3).collect();
    let head = head
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert_has(
        &head,
        ": PASS, results only: 1 task not re-scored (no samples given)",
    );
    let r = rigaudit(&["verify", only.to_str().unwrap(), "--format", "json"]).json();
    let f = findings_of(&r, "import.not-rescored");
    let says = f[0]["message"].as_str().unwrap();
    assert_has(says, "add samples_rigaudit_arith_<date>.jsonl");
    // With its samples the same results are re-scored: no such finding.
    let both = rigaudit(&["verify", clean.to_str().unwrap(), "--format", "json"]).json();
    assert!(findings_of(&both, "import.not-rescored")
        .iter()
        .all(|f| f["data"]["samples"] != false));
}

/// `rehash` of a seed page with an empty `--root`: none of its artifacts is found.
fn rehash_finding_nothing(format: &str) -> Run {
    let empty = tempfile::tempdir().unwrap();
    let page = fixture("tensorfold-127-stock-2x");
    let (page, root) = (page.to_str().unwrap(), empty.path().to_str().unwrap());
    rigaudit_line("rehash {} --root {} --format {}", &[page, root, format])
}

#[test]
fn an_incomplete_report_always_says_why() {
    let run = rehash_finding_nothing("text");
    assert_eq!(run.code, 3);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].contains(": INCOMPLETE"), "{}", run.stdout);
    assert!(
        lines[1].starts_with("  - incomplete: none of the artifacts"),
        "{}",
        run.stdout
    );
}

#[test]
fn files_of_two_tools_are_refused_naming_the_one_not_read() {
    let aiperf = root().join("fixtures/imports/aiperf/clean/profile_export_aiperf.json");
    let lm = lm_eval_clean_results();
    for pair in [[&aiperf, &lm], [&lm, &aiperf]] {
        let run = rigaudit_line(
            "verify {} {}",
            &[pair[0].to_str().unwrap(), pair[1].to_str().unwrap()],
        );
        assert_eq!(run.code, 2, "{}", run.stdout);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        let name = lm.file_name().unwrap().to_string_lossy().to_string();
        run.assert_stderr_has(&name);
        run.assert_stderr_has("a result file of lm-eval, given with aiperf files");
    }
}

#[test]
fn a_rehash_that_found_nothing_it_was_asked_for_is_incomplete() {
    let run = rehash_finding_nothing("json");
    assert_eq!(run.code, 3, "{}", run.stdout);
    let r = run.json();
    assert_eq!(r["verdict"], "incomplete");
    let why = r["incomplete"].as_str().unwrap();
    assert_has(why, "--root DIR or --file NAME=PATH");
    assert_eq!(findings_of(&r, "rehash.not-found").len(), 4);
    // The finding every incomplete report carries: the reason, with what to give.
    let said = findings_of(&r, "coverage.incomplete");
    assert_eq!(said.len(), 1, "{r:#}");
    assert_eq!(said[0]["severity"], "warning");
    assert_eq!(
        said[0]["message"].as_str().unwrap(),
        format!("not everything was checked: {why}")
    );
    // The reason is part of the report's schema.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/report.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errs: Vec<String> = v.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn a_listed_raw_file_that_links_out_of_the_bundle_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("page");
    copy_dir(&fixture("tensorfold-127-stock-2x"), &page);
    let inside = page.join("speed/speed-contract.json");
    let outside = tmp.path().join("speed-contract.json");
    std::fs::rename(&inside, &outside).unwrap();
    std::os::unix::fs::symlink(&outside, &inside).unwrap();
    let run = rigaudit(&["rehash", page.to_str().unwrap(), "--format", "json"]);
    let r = run.json();
    let errors: Vec<&Value> = findings_of(&r, "rehash.bundle-file-digest")
        .into_iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{r:#}");
    assert_eq!(errors[0]["file"], "speed/speed-contract.json");
    let says = errors[0]["message"].as_str().unwrap();
    assert_has(says, "outside the bundle");
    assert_ne!(run.code, 0);
}

#[test]
fn a_bundle_given_with_other_paths_is_refused_and_an_unread_file_is_named() {
    let page = fixture("tensorfold-127-stock-2x");
    let aiperf = root().join("fixtures/imports/aiperf/clean");
    let run = rigaudit(&["verify", aiperf.to_str().unwrap(), page.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    run.assert_stderr_has("tensorfold-127-stock-2x: a rigaudit bundle, given with other paths");
    // A file of no tool, named beside a tool's files: checked as far as it goes, and said so.
    let tmp = tempfile::tempdir().unwrap();
    let notes = tmp.path().join("notes.txt");
    std::fs::write(&notes, "measured on a quiet machine\n").unwrap();
    let r = rigaudit_line(
        "verify {} {} --format json",
        &[aiperf.to_str().unwrap(), notes.to_str().unwrap()],
    )
    .json();
    let unread: Vec<&Value> = findings_of(&r, "import.not-recomputable")
        .into_iter()
        .filter(|f| f["file"] == "notes.txt")
        .collect();
    assert_eq!(unread.len(), 1, "{r:#}");
    assert!(unread[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("not read: "));
}

#[test]
fn lm_eval_results_that_list_no_task_are_incomplete_saying_what_to_give() {
    let tmp = tempfile::tempdir().unwrap();
    let mut results: Value =
        serde_json::from_str(&std::fs::read_to_string(lm_eval_clean_results()).unwrap()).unwrap();
    for key in ["results", "configs", "versions", "n-samples", "n-shot"] {
        results[key] = serde_json::json!({});
    }
    let file = tmp.path().join("results_2024-01-01T00-00-00.json");
    std::fs::write(&file, results.to_string()).unwrap();
    let run = rigaudit(&["verify", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let r = run.json();
    assert_eq!(r["verdict"], "incomplete");
    let said = findings_of(&r, "coverage.incomplete");
    assert_eq!(said.len(), 1, "{r:#}");
    let says = said[0]["message"].as_str().unwrap();
    assert_has(says, "its results list no task");
    assert_has(says, "lm_eval --tasks NAME");
}
