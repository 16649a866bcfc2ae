//! Shared helpers of the integration tests: copy a fixture bundle, change it, run the binary.

#![allow(dead_code)]

pub mod fake_server;
pub mod procs;
pub mod ranks;
pub mod venv;

#[path = "../../../audit/src/asserts.rs"]
mod asserts;
#[allow(unused_imports)] // each test binary uses some
pub use asserts::{assert_ends_with, assert_has, assert_starts_with};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The machine to this test alone, as far as the suite goes: the tests whose verdicts depend on
/// how fast the machine is (the `quiet` modules) hold it, so that two of them never load each
/// other; `scripts/test.sh` also runs them after the rest of the suite, one at a time.
pub fn machine_to_myself() -> std::sync::MutexGuard<'static, ()> {
    static QUIET: std::sync::Mutex<()> = std::sync::Mutex::new(());
    QUIET.lock().unwrap_or_else(|p| p.into_inner())
}

/// The value of `$guard`, an `Option`, or else the test returns: how a test that needs what
/// this machine may lack (sshd, a Slurm cluster, a network) skips, the guard having said why.
#[macro_export]
macro_rules! or_skip {
    ($guard:expr) => {
        match $guard {
            Some(value) => value,
            None => return,
        }
    };
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture bundle's folder.
pub fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/pages").join(name)
}

/// Copies the folder `from` to `to`, sub-folders included.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

/// Writes each `(path, bytes)` below `dir`, making the folders on the way.
pub fn write_files(dir: &Path, files: &[(&str, &[u8])]) {
    for (path, bytes) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// A JSON file's value.
pub fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The sha256 of `bytes` as lowercase hex, as manifests record it.
pub fn sha_hex(bytes: impl AsRef<[u8]>) -> String {
    hex(&Sha256::digest(bytes.as_ref()))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file's bytes as lowercase hex, read as a stream.
pub fn sha_file(p: &Path) -> String {
    let mut hasher = Sha256::new();
    let mut f = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    std::io::copy(&mut f, &mut hasher).unwrap();
    hex(&hasher.finalize())
}

/// The python3 the `PATH` names first (what `command -v python3` prints).
pub fn python3() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("python3"))
                .find(|p| p.is_file())
        })
        .expect("python3 on PATH")
}

/// The real python3 executable (not a shim): `sys.executable`.
pub fn python3_executable() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// A copy of the fake engine (tests/fixtures/fake_engine.py) at `dir/name`: a path unique to the
/// test, so its processes can be found by their command line.
pub fn fake_engine(dir: &Path, name: &str) -> PathBuf {
    let script = dir.join(name);
    std::fs::copy(root().join("tests/fixtures/fake_engine.py"), &script).unwrap();
    script
}

/// The card of one local box whose rank 0 runs `python3 SCRIPT --port <port> ARGS` with `env`.
pub fn fake_engine_card(script: &Path, args: &[&str], env: Value) -> Value {
    let mut argv = vec![
        json!("python3"),
        json!(script.to_str().unwrap()),
        json!("--port"),
        json!("<port>"),
    ];
    argv.extend(args.iter().map(|a| json!(a)));
    json!({
        "hardware": {"description": "a test machine", "boxes": [{"name": "local"}], "accelerator": "cpu"},
        "engine": {"name": "fake-engine", "version": "0.0.1"},
        "checkpoint": {"repo": "fake/fake", "revision": "0"},
        "ranks": 1,
        "commands": [{"rank": 0, "argv": argv, "env": env}],
        "sampling": {"defaults": {"temperature": 0.0}, "defaults_source": "fake"},
        "measured": "2026-12-02T00:00:00Z"
    })
}

/// A speed contract of decode only, `runs` runs of `max_tokens` tokens, one slot.
pub fn decode_contract(runs: u64, max_tokens: u64) -> Value {
    json!({"parts": ["decode"], "model": "fake", "prompt_ids": ["code"],
        "runs": runs, "warmups": 0, "max_tokens": max_tokens,
        "sampling": {"temperature": 0.0}, "seed": 1, "cache_prompt": false,
        "server": {"slots": 1, "window": 4096}})
}

/// Writes a bundle of a card and a speed contract into the folder `b` (made if missing): both
/// files and the manifest `id`/`title` that records their digests.
pub fn write_bundle(b: &Path, (id, title): (&str, &str), card: &Value, contract: &Value) {
    std::fs::create_dir_all(b).unwrap();
    let card_t = serde_json::to_string_pretty(card).unwrap();
    let contract_t = serde_json::to_string_pretty(contract).unwrap();
    std::fs::write(b.join("card.json"), &card_t).unwrap();
    std::fs::write(b.join("speed-contract.json"), &contract_t).unwrap();
    let manifest = json!({"format": "rigaudit-bundle/1", "id": id, "title": title,
    "setup": {"engine": "fake-engine", "checkpoint": "fake", "hardware": "test"},
    "files": [
        {"kind": "card", "path": "card.json", "sha256": sha_hex(&card_t), "published": true, "reconstructed": false},
        {"kind": "speed-contract", "path": "speed-contract.json", "sha256": sha_hex(&contract_t), "published": true, "reconstructed": false}
    ]});
    std::fs::write(b.join("bundle.json"), manifest.to_string()).unwrap();
}

/// Writes a gzipped tar of `(name, bytes)` members, each a regular file of mode 0755.
pub fn write_tar_gz(path: &Path, members: &[(&str, &[u8])], level: flate2::Compression) {
    let gz = flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), level);
    let mut t = tar::Builder::new(gz);
    for (name, bytes) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        t.append_data(&mut h, name, *bytes).unwrap();
    }
    t.into_inner().unwrap().finish().unwrap();
}

/// Copies the bundle `from` to `to` with its card changed by `edit`, the card's digest
/// re-recorded in the manifest.
pub fn copy_with_card(from: &Path, to: &Path, edit: impl FnOnce(&mut Value)) {
    copy_dir(from, to);
    let mut card = read_json(&to.join("card.json"));
    edit(&mut card);
    let text = serde_json::to_string_pretty(&card).unwrap() + "\n";
    std::fs::write(to.join("card.json"), &text).unwrap();
    let mut manifest = read_json(&to.join("bundle.json"));
    for f in manifest["files"].as_array_mut().unwrap() {
        if f["path"] == "card.json" {
            f["sha256"] = json!(sha_hex(&text));
        }
    }
    let text = serde_json::to_string_pretty(&manifest).unwrap();
    std::fs::write(to.join("bundle.json"), text).unwrap();
}

/// Decode as rigaudit measured it in the speed result `result`, against the `engine`'s own timing
/// of the same requests (`server_timings`): for each of the 10 counted decode runs, the time from
/// the first token to the last as rigaudit saw it within 0.5 % of the engine's, except that it may
/// be shorter by up to `first_chunk_steps` decode steps more: the time the engine's first token
/// waited to be sent (an engine whose compute threads hold every core sends it when its HTTP thread
/// next gets one; the engine's clock starts when the token is sampled).
pub fn assert_decode_agrees_with_the_engines_timing(
    result: &Path,
    engine: &str,
    first_chunk_steps: f64,
) {
    let res = read_json(result);
    let mut compared = 0;
    for q in res["requests"].as_array().unwrap() {
        if q["step"] != "decode" || q["warmup"] == true {
            continue;
        }
        let n = q["completion_tokens"].as_f64().unwrap();
        let ours_s = q["end_s"].as_f64().unwrap() - q["first_token_s"].as_f64().unwrap();
        let t = &q["server_timings"];
        let steps = t["predicted_n"].as_f64().unwrap() - 1.0;
        let theirs_s = t["predicted_ms"].as_f64().unwrap() / 1000.0;
        let (ours, theirs) = ((n - 1.0) / ours_s, steps / theirs_s);
        let slack = 0.005 * theirs_s;
        let shorter = theirs_s - ours_s;
        assert!(
            -slack <= shorter && shorter <= slack + first_chunk_steps * theirs_s / steps,
            "decode {ours:.2} vs {engine}'s {theirs:.2}: {:.2} % apart ({:.1} ms over {:.1} ms)",
            (ours - theirs).abs() / theirs * 100.0,
            ours_s * 1000.0,
            theirs_s * 1000.0
        );
        compared += 1;
    }
    assert_eq!(compared, 10, "5 runs of 2 prompts");
}

/// A copy of a fixture in a temporary folder.
pub struct Copy {
    pub tmp: tempfile::TempDir,
}

impl Copy {
    pub fn of(name: &str) -> Copy {
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&fixture(name), tmp.path());
        Copy { tmp }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn read_json(&self, file: &str) -> Value {
        read_json(&self.path().join(file))
    }

    pub fn write_json(&self, file: &str, v: &Value) {
        std::fs::write(
            self.path().join(file),
            serde_json::to_string_pretty(v).unwrap(),
        )
        .unwrap();
    }

    /// Sets the value at a JSON pointer of a file and re-records the file's digest.
    pub fn set(&self, file: &str, pointer: &str, value: Value) -> &Self {
        let mut v = self.read_json(file);
        *v.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{file} has no {pointer}")) = value;
        self.write_json(file, &v);
        self.rehash();
        self
    }

    /// Appends `text` to a file; its recorded digest is left as it was.
    pub fn append(&self, file: &str, text: &str) -> &Self {
        let path = self.path().join(file);
        let mut all = std::fs::read_to_string(&path).unwrap();
        all.push_str(text);
        std::fs::write(&path, all).unwrap();
        self
    }

    /// Changes line `n` (1-based) of a JSON Lines file and re-records the digest.
    pub fn set_line(&self, file: &str, n: usize, pointer: &str, value: Value) -> &Self {
        let path = self.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let mut v: Value = serde_json::from_str(&lines[n - 1]).unwrap();
        *v.pointer_mut(pointer).unwrap() = value;
        lines[n - 1] = serde_json::to_string(&v).unwrap();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        self.rehash();
        self
    }

    /// Records every present file's sha256 in the manifest again.
    pub fn rehash(&self) {
        let mut m = self.read_json("bundle.json");
        for f in m["files"].as_array_mut().unwrap() {
            let p = self.path().join(f["path"].as_str().unwrap());
            if f["sha256"].is_string() && p.is_file() {
                f["sha256"] = Value::String(sha_file(&p));
            }
        }
        self.write_json("bundle.json", &m);
    }
}

/// The result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Runs `command` to its end; its exit code (-1 when killed by a signal) and its output.
    pub fn of(command: &mut Command) -> Run {
        let out = command
            .output()
            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }

    /// Findings of one check.
    pub fn findings(&self, check: &str) -> Vec<Value> {
        self.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["check"] == check)
            .cloned()
            .collect()
    }

    /// Asserts stderr says `text` (and shows stderr when it does not).
    pub fn assert_stderr_has(&self, text: &str) {
        assert!(self.stderr.contains(text), "{}", self.stderr);
    }

    /// Asserts stdout says `text` (and shows stdout when it does not).
    pub fn assert_stdout_has(&self, text: &str) {
        assert!(self.stdout.contains(text), "{}", self.stdout);
    }

    /// Asserts the run exited with `code` and stderr says `text`.
    pub fn assert_exit_saying(&self, code: i32, text: &str) {
        assert_eq!(self.code, code, "{}", self.stderr);
        self.assert_stderr_has(text);
    }

    /// Asserts a finding of `check` names the place `pointer`.
    pub fn assert_finding_at(&self, check: &str, pointer: &str) {
        let at = |f: &Value| f["pointer"] == pointer;
        assert!(self.findings(check).iter().any(at), "{}", self.stdout);
    }

    /// Asserts a finding of `check` at `severity` (and shows stdout when there is none).
    pub fn assert_has_at(&self, check: &str, severity: &str) {
        assert!(self.has_at(check, severity), "{}", self.stdout);
    }

    /// Asserts no finding of `check` (and shows those there are).
    pub fn assert_lacks(&self, check: &str) {
        assert!(!self.has(check), "{:?}", self.findings(check));
    }

    pub fn has(&self, check: &str) -> bool {
        !self.findings(check).is_empty()
    }

    pub fn has_at(&self, check: &str, severity: &str) -> bool {
        self.findings(check)
            .iter()
            .any(|f| f["severity"] == severity)
    }
}

/// Asserts some item of `list` passes `pred` (and shows the list when none does).
#[track_caller]
pub fn assert_any<T: std::fmt::Debug>(list: &[T], pred: impl FnMut(&T) -> bool) {
    assert!(list.iter().any(pred), "{list:#?}");
}

/// A command line's arguments written as one template: its words split at spaces, each `{}`
/// replaced by the next of `values` (which may hold spaces).
pub fn argv(template: &str, values: &[&str]) -> Vec<String> {
    let mut values = values.iter();
    let word = |w: &str| match w {
        "{}" => values.next().expect("a value for each {}").to_string(),
        _ => w.to_string(),
    };
    let all: Vec<String> = template.split_whitespace().map(word).collect();
    assert!(
        values.next().is_none(),
        "more values than {{}} in {template}"
    );
    all
}

/// Runs `rigaudit` with the arguments of a template (see [`argv`]).
pub fn rigaudit_line(template: &str, values: &[&str]) -> Run {
    let args = argv(template, values);
    rigaudit(&args)
}

/// The element of the array `report[array]` whose `field` is `value`.
pub fn entry<'a>(report: &'a Value, array: &str, field: &str, value: &str) -> &'a Value {
    let all = report[array].as_array().unwrap();
    let found = all.iter().find(|e| e[field] == value);
    found.unwrap_or_else(|| panic!("no {array} entry with {field} {value}: {:#}", report[array]))
}

/// The findings of `check` in a report.
pub fn findings_in<'a>(report: &'a Value, check: &str) -> Vec<&'a Value> {
    let all = report["findings"].as_array().unwrap().iter();
    all.filter(|f| f["check"] == check).collect()
}

/// The check ids of a report's findings at `severity`, in the report's order.
pub fn checks_at(report: &Value, severity: &str) -> Vec<String> {
    let all = report["findings"].as_array().unwrap().iter();
    all.filter(|f| f["severity"] == severity)
        .map(|f| f["check"].as_str().unwrap().to_string())
        .collect()
}

/// The fake NVML (tests/fake-nvml/nvml.c) built by gcc as `dir/libnvidia-ml.so.1`; `dir` is
/// returned, to put first in `LD_LIBRARY_PATH`.
pub fn fake_nvml(dir: &Path) -> PathBuf {
    output_ok(
        Command::new("gcc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join("libnvidia-ml.so.1"))
            .arg(root().join("tests/fake-nvml/nvml.c")),
    );
    dir.to_path_buf()
}

/// Runs `rigaudit ARGS`.
pub fn rigaudit<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    rigaudit_with_env(args, &[])
}

/// Runs `rigaudit ARGS` with the variables `env` added to this process's environment.
pub fn rigaudit_with_env<S: AsRef<std::ffi::OsStr>>(args: &[S], env: &[(&str, &Path)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rigaudit"));
    Run::of(command.args(args).envs(env.iter().copied()))
}

/// Runs `command` to its end and asserts it succeeded (showing its stderr when it did not).
#[track_caller]
pub fn output_ok(command: &mut Command) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{command:?}: {said}");
    out
}

/// The ids of the catalogue, `rigaudit checks --format json`, in its order.
pub fn catalogue_ids() -> Vec<String> {
    let catalogue = rigaudit(&["checks", "--format", "json"]).json();
    let rows = catalogue.as_array().expect("the catalogue is an array");
    rows.iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `rigaudit verify PATH --format json`.
pub fn verify(path: &Path) -> Run {
    rigaudit(&["verify", path.to_str().unwrap(), "--format", "json"])
}

/// The card of a two-box replay of the tests' fake engine (`tests/fixtures/fake_engine.py` copied
/// to `script`, run by python3): rank 0 on box `head` with `FAKE_BOX=head`, rank 1 on box `second`
/// with `rank1_env`; both ranks share one argv (placeholders for port, mode, start delay and argv
/// file), ending with `odd` (the items a test wants to arrive byte for byte). `boxes` says what
/// the boxes are; `digest`, when given, pins the engine binary `bin/python3`.
pub fn two_box_card(
    boxes: &str,
    script: &Path,
    odd: &[String],
    rank1_env: Value,
    digest: Option<&str>,
) -> Value {
    let mut argv: Vec<Value> = [
        "python3",
        script.to_str().unwrap(),
        "--port",
        "<port>",
        "--mode",
        "<mode>",
        "--start-delay",
        "<delay>",
        "--argv-file",
        "<argv0>",
    ]
    .iter()
    .map(|x| json!(x))
    .collect();
    argv.extend(odd.iter().map(|x| json!(x)));
    let mut card = json!({
        "hardware": {"description": boxes, "boxes": [{"name": "head", "rank": 0},
            {"name": "second", "rank": 1}], "accelerator": "cpu"},
        "engine": {"name": "fake-engine", "version": "0.0.1"},
        "checkpoint": {"repo": "fake/fake", "revision": "0"},
        "ranks": 2,
        "commands": [
            {"rank": 0, "box": "head", "argv": argv, "env": {"FAKE_BOX": "head"}},
            {"rank": 1, "box": "second", "argv": argv, "env": rank1_env}
        ],
        "sampling": {"defaults": {"temperature": 0.0}, "defaults_source": "fake"},
        "measured": "2026-12-02T00:00:00Z"
    });
    if let Some(d) = digest {
        card["engine"]["binary"] = json!({"path": "bin/python3", "sha256": d});
    }
    card
}

/// argv items that a shell would read as syntax; each must reach a rank as written (`marker`: a
/// path whose `-subst`, `-tick` and `-semi` files appear only if a shell ran one).
pub fn odd_items(marker: &Path) -> Vec<String> {
    let m = marker.display();
    vec![
        "two words".into(),
        "it's".into(),
        "\"double\"".into(),
        format!("$(touch {m}-subst)"),
        format!("`touch {m}-tick`"),
        format!("x;touch {m}-semi"),
        "a && b | c > d".into(),
        "line one\nline two".into(),
        String::new(),
        "ünïcødé ✓".into(),
        "$HOME ${PATH} \\ *".into(),
        "--odd=$(id)".into(),
    ]
}

/// The real libnccl.so.2, or `None` (skip) when it is absent outside CI.
pub fn real_nccl() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("RIGAUDIT_NCCL_LIB") {
        candidates.push(PathBuf::from(p));
    }
    let cache = std::env::var_os("RIGAUDIT_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rigaudit")));
    if let Some(c) = cache {
        if let Ok(rd) = std::fs::read_dir(c.join("nccl")) {
            let mut v: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path().join("libnccl.so.2"))
                .collect();
            v.sort();
            candidates.extend(v.into_iter().rev());
        }
    }
    if let Some(p) = candidates.into_iter().find(|p| p.is_file()) {
        return Some(p);
    }
    let why =
        "the real NCCL library is absent: run scripts/fetch-nccl.sh (or set RIGAUDIT_NCCL_LIB)";
    if std::env::var_os("CI").is_some() {
        panic!("{why}");
    }
    eprintln!("note: skipping an NCCL test: {why}");
    None
}
