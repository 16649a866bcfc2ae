//! Attacks through a card's recorded environment and argv on `replay` (see attack.rs for what
//! each asserts): the allow-list of src/replay/env_rules.rs and the bundled engine's `serve`-only
//! rule. Real replays where a payload could run (a library with a constructor that writes the
//! marker; a Python `sitecustomize` that does), each with its control run showing that the same
//! payload does run when the user allows it; `replay --plan` for the table of refused variables.

use super::attack::{Attack, Scratch, Surface, WORKFLOW_COMMAND};
use super::common::{decode_contract, fake_engine, fake_engine_card, python3, write_bundle};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A shared library whose constructor creates `marker`, built with `cc` at `path`; `None` when
/// this machine has no C compiler (the test then checks the refusal only).
fn evil_library(path: &Path, marker: &Path) -> Option<PathBuf> {
    let src = path.with_extension("c");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void f(void) {{ FILE *x = fopen(\"{}\", \"w\"); if (x) fclose(x); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(path)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    built.then(|| path.to_path_buf())
}

/// A tiny random model the bundled engine serves (`make-model --preset tiny`).
fn tiny_model(s: &Scratch) -> PathBuf {
    let p = s.path().join("tiny.gguf");
    let ok = Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .args(["__engine", "make-model", "--preset", "tiny", "--out"])
        .arg(&p)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "make-model");
    p
}

/// A bundle in `s/bundle` whose one rank runs the bundled engine with `argv` (after the
/// executable) and `env`.
fn engine_bundle(s: &Scratch, argv: &[&str], env: Value) -> PathBuf {
    let b = s.path().join("bundle");
    let mut items = vec![json!("rigaudit-engine")];
    items.extend(argv.iter().map(|a| json!(a)));
    let card = json!({
        "hardware": {"description": "a test machine", "boxes": [{"name": "local"}], "accelerator": "cpu"},
        "engine": {"name": "rigaudit-engine", "version": "0.1.0"},
        "checkpoint": {"repo": "fake/tiny", "revision": "0"},
        "ranks": 1,
        "commands": [{"rank": 0, "argv": items, "env": env}],
        "sampling": {"defaults": {"temperature": 0.0}, "defaults_source": "test"},
        "measured": "2026-12-02T00:00:00Z"
    });
    write_bundle(&b, ("hostile", "hostile"), &card, &decode_contract(1, 4));
    b
}

/// `replay BUNDLE` of the bundled engine with the tiny model, then `extra`.
fn replay_engine(s: &Scratch, bundle: &Path, extra: &[&str]) -> Vec<String> {
    let model = tiny_model(s);
    let mut a: Vec<String> = [
        "replay",
        bundle.to_str().unwrap(),
        "--out",
        s.out().to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
        "--request-timeout",
        "10",
        "--ready-timeout",
        "20",
        "--confirm",
        "false",
        "--no-load-guard",
        "--set",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    a.push(format!("model file={}", model.display()));
    a.extend(extra.iter().map(|x| x.to_string()));
    a
}

const CUDA_NCCL: &[&str] = &[
    "serve",
    "<model file>",
    "--name",
    "t",
    "--device",
    "cuda",
    "--nccl",
    "on",
    "--port",
    "<port>",
];

#[test]
fn the_bundled_engine_does_not_load_the_pages_rigaudit_nccl() {
    let s = Scratch::new();
    let lib = evil_library(&s.path().join("bundle/lib/evil.so"), &s.marker());
    let env = json!({"RIGAUDIT_NCCL": s.path().join("bundle/lib/evil.so")});
    let b = engine_bundle(&s, CUDA_NCCL, env);
    let o = Attack::new(&s, &replay_engine(&s, &b, &[])).run();
    o.exit(2)
        .saying("recorded environment refused")
        .saying("RIGAUDIT_NCCL")
        .clean(Surface::Json);
    if lib.is_none() {
        return;
    }
    // The control: allowed by name, the engine loads it before it looks for a GPU.
    let _ = std::fs::remove_dir_all(s.out());
    let o = Attack::new(
        &s,
        &replay_engine(&s, &b, &["--allow-env", "RIGAUDIT_NCCL"]),
    )
    .run();
    assert!(s.marker().exists(), "control: {}", o.run.stderr);
}

#[test]
fn a_library_folder_of_the_page_is_refused_and_one_the_user_names_is_used() {
    let s = Scratch::new();
    let lib = evil_library(&s.path().join("bundle/lib/libnccl.so.2"), &s.marker());
    let folder = s.path().join("bundle/lib");
    let b = engine_bundle(&s, CUDA_NCCL, json!({"LD_LIBRARY_PATH": &folder}));
    let o = Attack::new(&s, &replay_engine(&s, &b, &[])).run();
    o.exit(2).saying("LD_LIBRARY_PATH").clean(Surface::Json);
    if lib.is_none() {
        return;
    }
    // The user names the folder through a placeholder: theirs, so it is passed.
    let _ = std::fs::remove_dir_all(s.out());
    let b = engine_bundle(&s, CUDA_NCCL, json!({"LD_LIBRARY_PATH": "<nccl folder>"}));
    let set = format!("nccl folder={}", folder.display());
    let o = Attack::new(&s, &replay_engine(&s, &b, &["--set", &set])).run();
    assert!(s.marker().exists(), "control: {}", o.run.stderr);
}

/// A bundle of the fake engine (python3) with `env`; the replay's arguments with `extra`.
fn fake_replay(s: &Scratch, env: Value, extra: &[&str]) -> Vec<String> {
    let script = fake_engine(s.path(), "fake_engine.py");
    let b = s.path().join("bundle");
    let mut card = fake_engine_card(&script, &["--mode", "ok", "--argv-file", "<argv>"], env);
    card["engine"]["binary"] = json!({"path": "bin/python3", "sha256": "0".repeat(64)});
    write_bundle(&b, ("hostile", "hostile"), &card, &decode_contract(1, 4));
    let mut a: Vec<String> = [
        "replay",
        b.to_str().unwrap(),
        "--engine",
        python3().to_str().unwrap(),
        "--trust-executable",
        "--out",
        s.out().to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
        "--request-timeout",
        "10",
        "--ready-timeout",
        "30",
        "--confirm",
        "false",
        "--no-load-guard",
        "--set",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    a.push(format!("argv={}", s.out().join("argv.json").display()));
    a.extend(extra.iter().map(|x| x.to_string()));
    a
}

/// The names of the variables the fake engine saw.
fn names_seen(s: &Scratch) -> Vec<String> {
    let text = std::fs::read_to_string(s.out().join("argv.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    serde_json::from_value(v["names"].clone()).unwrap()
}

#[test]
fn a_python_path_of_the_page_is_refused_and_runs_with_allow_env() {
    let s = Scratch::new();
    let py = s.path().join("bundle/py");
    std::fs::create_dir_all(&py).unwrap();
    let payload = format!(
        "open({:?}, 'w').close()\n",
        s.marker().display().to_string()
    );
    std::fs::write(py.join("sitecustomize.py"), payload).unwrap();
    let env = json!({"PYTHONPATH": &py});
    let o = Attack::new(&s, &fake_replay(&s, env.clone(), &[])).run();
    o.exit(0).saying("PYTHONPATH").clean(Surface::Json);
    assert!(!names_seen(&s).contains(&"PYTHONPATH".to_string()));
    let _ = std::fs::remove_dir_all(s.out());
    let o = Attack::new(&s, &fake_replay(&s, env, &["--allow-env", "PYTHONPATH"])).run();
    assert!(s.marker().exists(), "control: {}", o.run.stderr);
}

#[test]
fn settings_reach_the_engine_and_places_and_shell_text_do_not() {
    let s = Scratch::new();
    let env = json!({
        "FAKE_PARALLEL": "8", "NCCL_SOCKET_IFNAME": "^docker,lo", "KV": "fp8",
        "WORKER": "me@127.0.0.1", "TF_GLM_RANK": "0",
        "BASH_ENV": s.path().join("x.sh"), "CUDA_INJECTION64_PATH": "inject.so",
        "NCCL_NET_PLUGIN": "evil", "HOME": "/root", "MODEL_CACHE": "cache",
        "SETTING_PATH_VALUE": "/etc/passwd", "SETTING_SHELL": "$(touch MARKER)",
        "SETTING_LINES": format!("a{WORKFLOW_COMMAND}b"),
    });
    let o = Attack::new(&s, &fake_replay(&s, env, &[])).run();
    o.exit(0)
        .saying("recorded environment refused")
        .clean(Surface::Json);
    let seen = names_seen(&s);
    for passed in [
        "FAKE_PARALLEL",
        "NCCL_SOCKET_IFNAME",
        "KV",
        "WORKER",
        "TF_GLM_RANK",
    ] {
        assert!(
            seen.iter().any(|n| n == passed),
            "{passed} not passed: {seen:?}"
        );
    }
    for refused in [
        "BASH_ENV",
        "CUDA_INJECTION64_PATH",
        "NCCL_NET_PLUGIN",
        "MODEL_CACHE",
        "SETTING_PATH_VALUE",
        "SETTING_SHELL",
        "SETTING_LINES",
    ] {
        assert!(!seen.iter().any(|n| n == refused), "{refused} passed");
        o.saying(refused);
    }
    // HOME is rigaudit's own (the replay's environment), not the page's /root.
    let text = std::fs::read_to_string(s.out().join("argv.json")).unwrap();
    assert!(!text.contains("\"/root\""), "{text}");
}

/// `replay --plan` of a fake-engine card with the one variable `name=value`.
fn plan_with<'a>(s: &'a Scratch, name: &str, value: &str) -> super::attack::Outcome<'a> {
    let script = fake_engine(s.path(), "fake_engine.py");
    let b = s.path().join("bundle");
    let mut env = serde_json::Map::new();
    env.insert(name.to_string(), json!(value));
    let card = fake_engine_card(&script, &["--mode", "ok"], Value::Object(env));
    write_bundle(&b, ("hostile", "hostile"), &card, &decode_contract(1, 4));
    let args = ["replay", b.to_str().unwrap(), "--plan"];
    Attack::new(s, &args).run()
}

/// Asserts the plan shows `name` refused.
#[track_caller]
fn assert_refused_in_plan(name: &str, value: &str) {
    let s = Scratch::new();
    let o = plan_with(&s, name, value);
    o.exit(0).clean(Surface::Text);
    let line = o
        .run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("env:") && l.contains(&name.replace('\n', "\\n")))
        .unwrap_or_else(|| panic!("{name:?} not in the plan: {}", o.run.stdout));
    assert!(line.contains("(refused, not set:"), "{name}: {line}");
}

#[test]
fn each_loader_plugin_cache_and_interpreter_variable_is_refused_in_the_plan() {
    let lib = "/tmp/evil/evil.so";
    for (name, value) in [
        ("LD_PRELOAD", lib),
        ("LD_AUDIT", lib),
        ("LD_LIBRARY_PATH", "/tmp/evil"),
        ("LD_LIBRARY_PATH", "lib"),
        ("RIGAUDIT_NCCL", lib),
        ("RIGAUDIT_NVRTC", lib),
        ("RIGAUDIT_CACHE", "/tmp/kernels"),
        ("CUDA_INJECTION64_PATH", lib),
        ("CUDA_CACHE_PATH", "/tmp/kernels"),
        ("CUDA_HOME", "/tmp/cuda"),
        ("NCCL_NET_PLUGIN", "evil"),
        ("NCCL_TUNER_PLUGIN", lib),
        ("NCCL_PROFILER_PLUGIN", lib),
        ("NCCL_CONF_FILE", "/tmp/nccl.conf"),
        ("NCCL_DEBUG_FILE", "/tmp/x"),
        ("OMP_TOOL_LIBRARIES", lib),
        ("PYTHONPATH", "."),
        ("PYTHONSTARTUP", "/tmp/x.py"),
        ("BASH_ENV", "/tmp/x.sh"),
        ("PATH", "/tmp/evil"),
        ("HOME", "/tmp/evil"),
        ("XDG_CONFIG_HOME", "/tmp/evil"),
        ("TRITON_CACHE_DIR", "/tmp/evil"),
        ("VLLM_PLUGINS", "evil"),
        ("JAVA_TOOL_OPTIONS", "-javaagent:/tmp/x.jar"),
        ("ANY_SETTING", "$(touch MARKER)"),
        ("ANY_SETTING", "/tmp/evil"),
        ("ANY_SETTING", "../../etc"),
    ] {
        assert_refused_in_plan(name, value);
    }
}

#[test]
fn a_workflow_command_in_a_recorded_value_or_name_stays_on_its_line() {
    for (name, value) in [
        ("SETTING", WORKFLOW_COMMAND),
        ("SETTING", "\u{1b}]0;pwned\u{7}"),
        ("BAD\nNAME", "x"),
    ] {
        assert_refused_in_plan(name, value);
    }
}

#[test]
fn the_bundled_engine_runs_serve_only() {
    for argv in [
        vec!["tokenizer", "<model file>", "--out", "home/.bashrc"],
        vec![
            "make-model",
            "--from",
            "<model file>",
            "--out",
            "home/.profile",
        ],
        vec!["serve", "<model file>", "--help"],
        vec!["serve", "<model file>", "--name", "t", "--no-such-flag"],
        vec!["--version", "<model file>"],
    ] {
        let s = Scratch::new();
        let b = engine_bundle(&s, &argv, json!({}));
        let o = Attack::new(&s, &replay_engine(&s, &b, &[])).run();
        o.exit(2).saying("is refused").clean(Surface::Json);
        assert!(!s.home().join(".bashrc").exists() && !s.home().join(".profile").exists());
    }
}

#[test]
fn an_unfilled_placeholder_with_a_workflow_command_is_echoed_on_one_line() {
    let s = Scratch::new();
    let item = format!("<x{WORKFLOW_COMMAND}>");
    let b = engine_bundle(&s, &["serve", "<model file>", "--name", &item], json!({}));
    let o = Attack::new(&s, &replay_engine(&s, &b, &[])).run();
    o.exit(2)
        .saying("placeholders with no value")
        .clean(Surface::Json);
}
