//! Common mistakes and what rigaudit says to each: one table, each row a mistake's command and the
//! words its message must hold (what happened, and what to type instead). One unreadable or
//! oversize raw file being one finding while the rest is checked is tested in tests/verify.rs.

mod common;

use common::{fixture, rigaudit, root, sha_hex};
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
