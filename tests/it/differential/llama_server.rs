//! Differential tests of llama.cpp's server (see main.rs): the response bodies and streams the
//! server itself wrote, unedited, at each version pinned in `fixtures/differential/pins.toml`
//! [llama-server] (its 2023 code built from source, xllamacpp 0.1.10 to 2026.10) over a matrix of
//! requests (`scripts/differential/llama.sh`, `llama_server_cases.py`): a prompt asked twice (the
//! second from the slot's cache), one token, an empty reply, a prompt past the window, chat,
//! streams, `cache_prompt: false`, speculative drafts. rigaudit must recompute every rate as the
//! server computed it (docs/formats/llama-server.md rows S1, S5), raise no error, and warn only of
//! what the server's own code does, each warning naming it (rows S2, S3, S6-S8).

use crate::common::{rigaudit, root, Run};
use serde_json::Value;
use std::path::PathBuf;

/// One case: its version, its name, and its files (a responses.jsonl, or the streams).
struct Fixture {
    version: String,
    case: String,
    files: Vec<PathBuf>,
}

impl Fixture {
    fn name(&self) -> String {
        format!("{}/{}", self.version, self.case)
    }

    fn verify(&self) -> Run {
        let mut args = vec!["verify".to_string(), "--from".into(), "llama-server".into()];
        args.extend(self.files.iter().map(|f| f.display().to_string()));
        args.extend(["--format".into(), "json".into()]);
        let run = rigaudit(&args);
        assert!(
            run.code == 0 || run.code == 1,
            "{}: {}",
            self.name(),
            run.stderr
        );
        run
    }

    fn text(&self) -> String {
        self.files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect()
    }
}

fn pinned() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("fixtures/differential/pins.toml")).unwrap();
    let section = text.split("[llama-server]").nth(1).unwrap();
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
            .join("fixtures/differential/llama-server")
            .join(&version);
        let cases = std::fs::read_dir(&dir).unwrap_or_else(|_| panic!("{version}: no fixtures"));
        for c in cases.flatten() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(c.path())
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl" || x == "sse"))
                .collect();
            files.sort();
            let case = c.file_name().to_string_lossy().to_string();
            out.push(Fixture {
                version: version.clone(),
                case,
                files,
            });
        }
    }
    out.sort_by_key(Fixture::name);
    out
}

/// The warnings a genuine llama-server file may draw, each naming the server's own behaviour.
fn named(check: &str, message: &str) -> bool {
    match check {
        "speed.cached-tokens" => message.contains("llama-server counts only the"),
        "speed.token-source" => message.contains("llama.cpp's server before its slots"),
        "import.failed-as-zero" => message.contains("llama-server's predicted_per_second"),
        "import.failed-requests" => {
            message.contains("exceeds the available context size")
                || message.contains("the server truncated the prompt")
        }
        _ => false,
    }
}

#[test]
fn every_pinned_version_answered_its_matrix() {
    let all = fixtures();
    for v in pinned() {
        let cases: Vec<&str> = all
            .iter()
            .filter(|f| f.version == v)
            .map(|f| f.case.as_str())
            .collect();
        let want: &[&str] = if v.starts_with("src-") {
            &["completion", "stream"]
        } else {
            &[
                "chat",
                "completion",
                "nocache",
                "speculative",
                "stream",
                "stream-chat",
            ]
        };
        assert_eq!(
            cases, want,
            "{v} (run scripts/differential/llama.sh server)"
        );
    }
    assert!(all.iter().all(|f| !f.files.is_empty()));
}

#[test]
fn every_rate_is_recomputed_and_every_warning_names_the_server() {
    for f in fixtures() {
        let run = f.verify();
        let report = run.json();
        for x in report["findings"].as_array().unwrap() {
            let (sev, check, msg) = (
                x["severity"].as_str().unwrap(),
                x["check"].as_str().unwrap(),
                x["message"].as_str().unwrap(),
            );
            assert_ne!(sev, "error", "{}: {check}: {msg}", f.name());
            if sev == "warning" {
                assert!(named(check, msg), "{}: {check}: {msg}", f.name());
            }
        }
        let rows = report["recomputed"].as_array().unwrap();
        assert!(
            !rows.is_empty() && rows.iter().all(|r| r["matches"] == true),
            "{}: {rows:?}",
            f.name()
        );
    }
}

/// What each case must draw, by the server's code at its version.
#[test]
fn each_case_draws_what_the_server_did() {
    for f in fixtures() {
        let run = f.verify();
        let text = f.text();
        let pre_slot = f.version.starts_with("src-");
        // A prompt asked again is served from the slot's cache (rows S2, S3).
        if matches!(
            f.case.as_str(),
            "completion" | "stream" | "chat" | "stream-chat"
        ) {
            let id = if pre_slot {
                "speed.token-source"
            } else {
                "speed.cached-tokens"
            };
            assert!(run.has_at(id, "warning"), "{}: {}", f.name(), run.stdout);
        }
        if f.case == "nocache" {
            assert!(!run.has("speed.cached-tokens"), "{}", f.name());
        }
        // One token, or an empty reply: no decode step to time (row S6).
        if f.case != "speculative" {
            assert!(
                run.has_at("import.failed-as-zero", "warning"),
                "{}",
                f.name()
            );
        }
        // The prompt past the window: refused (HTTP 400) by the builds that refuse, cut by those
        // that truncate (row S8) where the body says so, answered as if whole by b4798's /v1.
        if text.contains("exceed") {
            assert!(run.has("import.failed-requests"), "{}", f.name());
        }
        if text.contains("\"truncated\":true") {
            assert!(
                run.findings("import.failed-requests")
                    .iter()
                    .any(|x| x["message"].as_str().unwrap().contains("truncated")),
                "{}",
                f.name()
            );
        }
        // Speculative drafts, where the build prints them, are inside predicted_n (row S9).
        if f.case == "speculative" && text.contains("draft_n") {
            let v: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            assert!(
                v["timings"]["draft_n"].as_f64().unwrap()
                    >= v["timings"]["draft_n_accepted"].as_f64().unwrap()
            );
        }
    }
}
