//! Differential tests of lm_eval (see main.rs): the files lm_eval itself wrote at each pinned
//! version (`fixtures/differential/lm-eval/<version>/<case>/`, made by
//! `scripts/differential/lm-eval.sh`) are read whole, every figure they print is recomputed as that
//! version computed it (docs/formats/lm-eval.md rows L7-L11) or named as not recomputable, and
//! nothing is raised that lm_eval's own code contradicts.

use crate::common::{rigaudit, root, Run};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The warnings a genuine file may carry: each names what lm_eval did (rows R2, L12), none says a
/// figure is not what lm_eval computed.
const NAMED_BEHAVIOUR: &[&str] = &[
    "import.subset-of-dataset",
    "import.empty-scored-wrong",
    "import.unscorable-reply",
];

fn base() -> PathBuf {
    root().join("fixtures/differential/lm-eval")
}

/// The pinned versions (`[lm-eval] versions` of pins.toml).
fn pinned() -> Vec<String> {
    let pins = std::fs::read_to_string(root().join("fixtures/differential/pins.toml")).unwrap();
    let section = pins.split("[lm-eval]").nth(1).unwrap();
    let line = section
        .lines()
        .find(|l| l.starts_with("versions"))
        .expect("[lm-eval] versions in pins.toml");
    let list = line.split_once('[').unwrap().1.trim_end_matches(']');
    list.split(',')
        .map(|v| v.trim().trim_matches('"').to_string())
        .collect()
}

/// Every case folder: (version, case, its files).
fn cases() -> Vec<(String, String, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for v in pinned() {
        for case in ["gen", "choice", "chat"] {
            let dir = base().join(&v).join(case);
            // Before 0.4.4 lm_eval's API model cannot score loglikelihood requests.
            if case == "choice" && !dir.exists() && v.starts_with("0.4.") && minor(&v) < 4 {
                continue;
            }
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.unwrap().path())
                .collect();
            files.sort();
            out.push((v.clone(), case.to_string(), files));
        }
    }
    out
}

/// The patch number of a 0.4 version (`0.4.9.2` is 9).
fn minor(v: &str) -> u32 {
    v.split('.')
        .nth(2)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0)
}

fn verify(files: &[PathBuf]) -> Run {
    let mut args = vec!["verify".to_string(), "--from".into(), "lm-eval".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--format".into(), "json".into()]);
    rigaudit(&args)
}

/// The results file of a case (`results.json` or `results_<date>.json`).
fn results_of(files: &[PathBuf]) -> Value {
    let p = files
        .iter()
        .find(|f| name(f).starts_with("results"))
        .expect("a results file");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn every_pinned_version_wrote_every_case() {
    let versions = pinned();
    assert!(versions.len() >= 3, "{versions:?}");
    for (v, case, files) in cases() {
        let samples = files.iter().filter(|f| !name(f).starts_with("results"));
        assert!(samples.count() >= 1, "{v}/{case}: no samples file");
    }
}

#[test]
fn a_genuine_file_raises_nothing_its_tool_contradicts() {
    let mut wrong = Vec::new();
    for (v, case, files) in cases() {
        let run = verify(&files);
        let report: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        if run.code != 0 || report["verdict"] != "pass" {
            wrong.push(format!("{v}/{case}: exit {}: {}", run.code, run.stderr));
            continue;
        }
        for f in report["findings"].as_array().unwrap() {
            let check = f["check"].as_str().unwrap_or_default();
            let raised = f["severity"] == "error" || f["severity"] == "warning";
            if raised && !NAMED_BEHAVIOUR.contains(&check) {
                wrong.push(format!("{v}/{case}: {check}: {}", f["message"]));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What a case's report says of one printed figure: recomputed and matching, or named.
fn accounted(report: &Value, task: &str, key: &str) -> Result<(), String> {
    let full = format!("lm-eval.{task}.{key}");
    let recomputed = report["recomputed"].as_array().unwrap();
    if let Some(r) = recomputed.iter().find(|r| r["key"] == full.as_str()) {
        return match r["matches"] == true {
            true => Ok(()),
            false => Err(format!(
                "{full} recomputed as {} but printed {}",
                r["value"], r["file"]
            )),
        };
    }
    let named = report["findings"].as_array().unwrap().iter().any(|f| {
        let m = f["message"].as_str().unwrap_or_default();
        f["check"] == "import.not-recomputable" && m.starts_with(task) && m.contains(key)
    });
    named
        .then_some(())
        .ok_or(format!("{full}: neither recomputed nor named"))
}

#[test]
fn every_printed_figure_is_recomputed_as_its_version_did_or_named() {
    let mut wrong = Vec::new();
    for (v, case, files) in cases() {
        let report = verify(&files).json();
        let results = results_of(&files);
        let groups = results["group_subtasks"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (task, figures) in results["results"].as_object().unwrap() {
            if groups
                .get(task)
                .and_then(Value::as_array)
                .is_some_and(|s| !s.is_empty())
            {
                if accounted(&report, task, "a group of").is_err() {
                    wrong.push(format!("{v}/{case}: group {task} not named"));
                }
                continue;
            }
            let numbers = figures.as_object().unwrap().iter();
            for (key, _) in numbers.filter(|(k, x)| k.contains(',') && x.is_number()) {
                if let Err(e) = accounted(&report, task, key) {
                    wrong.push(format!("{v}/{case}: {e}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn each_document_is_rescored_in_every_layout() {
    for (v, case, files) in cases() {
        let report = verify(&files).json();
        let ran: Vec<&str> = report["checks_run"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for check in ["quality.scoring-disagrees", "quality.pct-mismatch"] {
            assert!(
                ran.contains(&check),
                "{v}/{case}: {check} did not run: {ran:?}"
            );
        }
    }
}

/// A copy of a case's files in a fresh folder, with `edit` applied to the samples file named.
fn edited(version: &str, case: &str, file_prefix: &str, edit: fn(&mut Value)) -> Vec<PathBuf> {
    let from = base().join(version).join(case);
    let to = std::env::temp_dir().join(format!(
        "rigaudit-lmeval-{version}-{case}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&to).unwrap();
    let mut out = Vec::new();
    for e in std::fs::read_dir(&from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(name(&p));
        let text = std::fs::read_to_string(&p).unwrap();
        let text = if name(&p).starts_with(file_prefix) {
            let mut v: Value = serde_json::from_str(&text).unwrap();
            edit(&mut v);
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            text
        };
        std::fs::write(&dest, text).unwrap();
        out.push(dest);
    }
    out
}

#[test]
fn the_oldest_layout_is_read_record_by_record_not_as_empty() {
    // 0.4.2's samples are one JSON array whose records do not name their filter (rows S1, S3):
    // the second block is flexible-extract's; a score flipped there is found there.
    let files = edited("0.4.2", "gen", "model__smollm2_rd_gen.jsonl", |v| {
        let records = v.as_array_mut().unwrap();
        let n = records.len() / 2;
        let r = &mut records[n];
        let flipped = 1.0 - r["exact_match"].as_f64().unwrap();
        r["exact_match"] = flipped.into();
    });
    let run = verify(&files);
    let found = run.findings("quality.scoring-disagrees");
    assert_eq!(found.len(), 1, "{}", run.stdout);
    assert!(run.has("quality.pct-mismatch"), "{}", run.stdout);
    let at = &run.findings("quality.pct-mismatch")[0];
    assert!(
        at["message"].as_str().unwrap().contains("flexible-extract"),
        "{at}"
    );
}
