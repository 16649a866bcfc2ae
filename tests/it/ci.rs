//! The CI surfaces: `--format github` (annotations at the file and line, the Markdown report added
//! to the job summary), the GitHub Action's script (`action/run.sh`) run as the Actions runner runs
//! it (its variables pointing at temporary files, this build's binary given so nothing is
//! installed), the whole Action (`action.yml`: its install, cache, build and verify steps) run
//! from a clean copy of the checkout as a composite action's steps are run, with no package
//! index reachable, and the pre-commit hook (`.pre-commit-hooks.yaml`, `language: rust`) run by
//! the real `pre-commit` from PyPI on a scratch repository of pages. Where rigaudit would be
//! compiled (the Action's `cargo build --release --locked`, pre-commit's `cargo install`), a
//! `cargo` standing in for the real one logs its arguments and puts this build's binary where
//! the real one would; the tests marked `#[ignore]` run the real compiler (minutes).

use crate::common;

use common::{
    argv, assert_has, assert_starts_with, fixture, read_json, rigaudit, rigaudit_with_env, root,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tensorfold() -> PathBuf {
    fixture("tensorfold-127-stock-2x")
}

fn smollm2() -> PathBuf {
    root().join("fixtures/runs/smollm2-cpu")
}

/// The annotation lines of a `--format github` output: (command, properties, message).
fn annotations(out: &str) -> Vec<(String, String, String)> {
    out.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("::")?;
            let (head, message) = rest.split_once("::")?;
            let (command, props) = head.split_once(' ').unwrap_or((head, ""));
            Some((command.into(), props.into(), message.into()))
        })
        .collect()
}

fn property<'a>(props: &'a str, name: &str) -> Option<&'a str> {
    props
        .split(',')
        .find_map(|p| p.strip_prefix(&format!("{name}=")))
}

#[test]
fn github_format_annotates_each_finding_at_its_file_and_line() {
    let page = tensorfold();
    let json = rigaudit(&["verify", page.to_str().unwrap(), "--format", "json"]).json();
    let tmp = tempfile::tempdir().unwrap();
    let summary = tmp.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    // The root named, as a checkout without .git would need.
    let repo = root();
    let args = argv(
        "verify {} --format github --repo-root {}",
        &[page.to_str().unwrap(), repo.to_str().unwrap()],
    );
    let run = rigaudit_with_env(&args, &[("GITHUB_STEP_SUMMARY", &summary)]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let notes = annotations(&run.stdout);
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(notes.len(), findings.len());
    let level = |s: &str| match s {
        "error" => "error",
        "warning" => "warning",
        _ => "notice",
    };
    for f in findings {
        let check = f["check"].as_str().unwrap();
        let (command, props, _) = notes
            .iter()
            .find(|(_, p, m)| {
                property(p, "title") == Some(check)
                    && m.ends_with(&escaped(f["message"].as_str().unwrap()))
            })
            .unwrap_or_else(|| panic!("no annotation of {f}"));
        assert_eq!(command, level(f["severity"].as_str().unwrap()));
        let Some(file) = f["file"].as_str() else {
            continue;
        };
        let shown = property(props, "file").unwrap();
        assert_eq!(
            shown,
            format!("fixtures/pages/tensorfold-127-stock-2x/{file}")
        );
        if let (Some(pointer), Some(line)) = (f["pointer"].as_str(), property(props, "line")) {
            // The line holds the key (or element) the pointer names last.
            let text = std::fs::read_to_string(root().join(shown)).unwrap();
            let at = text
                .lines()
                .nth(line.parse::<usize>().unwrap() - 1)
                .unwrap();
            let last = pointer.rsplit('/').next().unwrap();
            let is_index = last.parse::<usize>().is_ok();
            assert!(
                is_index || at.contains(&format!("\"{last}\"")),
                "{pointer} at {line}: {at}"
            );
        }
    }
    assert!(notes.iter().any(|(_, p, _)| property(p, "line").is_some()));
    // The Markdown report is added after what the job summary held.
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with(
            "earlier step\n❌ **rigaudit verify <code>tensorfold-127-stock-2x</code>: FAIL**"
        ),
        "{text}"
    );
    assert!(text.contains("<details>"));
}

/// A message as an annotation holds it (`%`, CR and LF escaped).
fn escaped(message: &str) -> String {
    message
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// What one run of the Action's script left: its exit code, output, and the files it wrote.
struct Step {
    code: i32,
    stdout: String,
    outputs: String,
    summary: String,
    sarif: PathBuf,
    _tmp: tempfile::TempDir,
}

/// Runs `action/run.sh` as the Actions runner would, from the repository root, with `inputs`
/// (INPUT_* variables) and this build's binary.
fn step(inputs: &[(&str, &str)]) -> Step {
    let tmp = tempfile::tempdir().unwrap();
    let (outputs, summary, sarif) = (
        tmp.path().join("output"),
        tmp.path().join("summary.md"),
        tmp.path().join("sarif"),
    );
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("action/run.sh"))
        .current_dir(root())
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("RUNNER_TEMP", tmp.path())
        .env("INPUT_BINARY", env!("CARGO_BIN_EXE_rigaudit"))
        .env("INPUT_SARIF", &sarif);
    for (k, v) in inputs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Step {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        outputs: read(&outputs),
        summary: read(&summary),
        sarif,
        _tmp: tmp,
    }
}

/// The single-line outputs (verdict, errors, warnings) and the lines of the multi-line
/// `qualified-verdict`, whose delimiter is random (`NAME<<DELIMITER`, the lines, `DELIMITER`).
fn outputs_of(s: &Step) -> (String, Vec<String>) {
    let (plain, rest) = s
        .outputs
        .split_once("qualified-verdict<<")
        .unwrap_or_else(|| panic!("no qualified-verdict output: {}", s.outputs));
    let (delimiter, body) = rest.split_once('\n').unwrap();
    assert!(delimiter.len() > 30, "{delimiter}");
    let lines = body.strip_suffix(&format!("{delimiter}\n")).unwrap();
    (plain.to_string(), lines.lines().map(String::from).collect())
}

fn counts(page: &Path) -> (u64, u64) {
    let r = rigaudit(&["verify", page.to_str().unwrap(), "--format", "json"]).json();
    (
        r["counts"]["error"].as_u64().unwrap(),
        r["counts"]["warning"].as_u64().unwrap(),
    )
}

#[test]
fn the_actions_script_annotates_summarises_writes_sarif_and_sets_outputs() {
    let paths = "fixtures/pages/tensorfold-127-stock-2x\n  fixtures/runs/smollm2-cpu  \n";
    let s = step(&[("INPUT_PATHS", paths), ("INPUT_FAIL_ON", "error")]);
    assert_eq!(s.code, 1, "{}", s.stdout);
    let ((e1, w1), (e2, w2)) = (counts(&tensorfold()), counts(&smollm2()));
    assert!(e1 > 0);
    let (plain, qualified) = outputs_of(&s);
    assert_eq!(
        plain,
        format!("verdict=fail\nerrors={}\nwarnings={}\n", e1 + e2, w1 + w2)
    );
    assert_eq!(
        qualified,
        [
            "fixtures/pages/tensorfold-127-stock-2x: FAIL",
            "fixtures/runs/smollm2-cpu: PASS"
        ]
    );
    let errors = annotations(&s.stdout)
        .into_iter()
        .filter(|(c, _, _)| c == "error")
        .count();
    assert_eq!(errors as u64, e1 + e2);
    assert!(s
        .summary
        .contains("❌ **rigaudit verify <code>tensorfold-127-stock-2x</code>: FAIL**"));
    assert!(s
        .summary
        .contains("✅ **rigaudit verify <code>smollm2-cpu</code>: PASS**"));
    for n in 1..=2 {
        let log: serde_json::Value = read_json(&s.sarif.join(format!("rigaudit-{n}.sarif")));
        assert_eq!(log["version"], "2.1.0");
        assert!(log["runs"][0]["originalUriBaseIds"]["SRCROOT"].is_object());
    }
    // The fail level decides: at `never` the same pages pass, saying the gate was off.
    let s = step(&[("INPUT_PATHS", paths), ("INPUT_FAIL_ON", "never")]);
    assert_eq!(s.code, 0, "{}", s.stdout);
    assert!(s.outputs.starts_with("verdict=pass\n"), "{}", s.outputs);
    let (_, qualified) = outputs_of(&s);
    assert_eq!(
        qualified[0],
        format!("fixtures/pages/tensorfold-127-stock-2x: PASS, not gated (fail-on never): {e1} errors, {w1} warnings; self-consistent only: 25 of 28 files reconstructed")
    );
    // The recording passes at the error level and fails at the warning level: its test whose
    // every request was refused has no result (a warning).
    let s = step(&[
        ("INPUT_PATHS", "fixtures/runs/smollm2-cpu"),
        ("INPUT_FAIL_ON", "warning"),
    ]);
    assert_eq!(s.code, 1, "{}", s.stdout);
    assert_starts_with(&s.outputs, "verdict=fail\nerrors=0\nwarnings=1\n");
    assert_has(&s.stdout, "title=quality.no-result::arith-long: no result");
}

/// A bundle in which nothing could be checked: its report says so, and the Action takes the
/// verdict from the report (incomplete, exit 3), not from what a typo gives (error, exit 2).
#[test]
fn an_incomplete_bundle_is_incomplete_in_the_actions_outputs_and_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::copy_dir(&smollm2(), &dir);
    let m = read_json(&dir.join("bundle.json"));
    for f in m["files"].as_array().unwrap() {
        let _ = std::fs::remove_file(dir.join(f["path"].as_str().unwrap()));
    }
    let s = step(&[("INPUT_PATHS", dir.to_str().unwrap())]);
    assert_eq!(s.code, 3, "{}", s.stdout);
    assert_starts_with(&s.outputs, "verdict=incomplete\n");
    let (_, qualified) = outputs_of(&s);
    assert_eq!(qualified.len(), 1, "{qualified:?}");
    assert_starts_with(&qualified[0], &format!("{}: INCOMPLETE: ", dir.display()));
}

#[test]
fn the_actions_script_says_what_is_wrong_with_its_inputs() {
    let s = step(&[(
        "INPUT_PATHS",
        "fixtures/pages/no-such-page\nfixtures/runs/smollm2-cpu",
    )]);
    // A path typed wrong is no incomplete bundle: rigaudit could not run on it (exit 2, error).
    assert_eq!(s.code, 2, "{}", s.stdout);
    assert_has(
        &s.stdout,
        "::error title=rigaudit::fixtures/pages/no-such-page: could not be verified",
    );
    assert_starts_with(&s.outputs, "verdict=error\n");
    let (_, qualified) = outputs_of(&s);
    assert_eq!(
        qualified,
        [
            "fixtures/pages/no-such-page: ERROR: rigaudit could not run on this path (exit 2)",
            "fixtures/runs/smollm2-cpu: PASS"
        ]
    );
    let s = step(&[
        ("INPUT_PATHS", "fixtures/runs/smollm2-cpu"),
        ("INPUT_FAIL_ON", "sometimes"),
    ]);
    assert_eq!(s.code, 2);
    assert_has(&s.stdout, "fail-on: 'sometimes' is none of");
    let s = step(&[("INPUT_PATHS", "  \n")]);
    assert_eq!(s.code, 2);
    assert!(s.stdout.contains("paths: no path given"), "{}", s.stdout);
    // The script runs the rigaudit the install steps give it, and says so when there is none.
    let s = step(&[("INPUT_PATHS", "x"), ("INPUT_BINARY", "")]);
    assert_eq!(s.code, 2);
    assert_has(&s.stdout, "binary: no rigaudit given");
    assert!(s.outputs.is_empty());
}

/// `pre-commit` from PyPI in a virtual environment kept between runs; `None` (with the reason
/// printed) when it cannot be installed here.
fn pre_commit() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pre-commit-venv");
    let exe = venv.join("bin/pre-commit");
    if exe.exists() {
        return Some(exe);
    }
    let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
    let made = ok(Command::new("python3").args(["-m", "venv"]).arg(&venv))
        && ok(Command::new(venv.join("bin/python")).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "pre-commit==4.*",
        ]));
    if !made {
        eprintln!("SKIPPED: pre-commit could not be installed from PyPI into {} (no network or no python3 venv); the hook is untested here", venv.display());
        return None;
    }
    Some(exe)
}

fn git(repo: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?}");
}

/// A scratch git repository of pages for the hook, with a PATH whose `cargo` stands in for the
/// real one (pre-commit "builds" the hook with it; no rigaudit is on it otherwise), and one that
/// finds this build's rigaudit (for the hook that runs an installed rigaudit).
struct HookRepo {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    path: String,
    installed: String,
    cargo_log: PathBuf,
    pre_commit: PathBuf,
}

impl HookRepo {
    /// The repository with the recorded run committed at `pages/good`.
    fn new(pre_commit: PathBuf) -> HookRepo {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("pages-repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q"]);
        common::copy_dir(&smollm2(), &repo.join("pages/good"));
        git(&repo, &["add", "pages/good"]);
        let cargo_log = tmp.path().join("cargo.log");
        let cargo = stand_in_cargo(tmp.path(), &cargo_log);
        let system = std::env::var("PATH").unwrap_or_default();
        let path = format!("{}:{system}", cargo.display());
        let bin = Path::new(env!("CARGO_BIN_EXE_rigaudit")).parent().unwrap();
        let installed = format!("{}:{system}", bin.display());
        HookRepo {
            tmp,
            repo,
            path,
            installed,
            cargo_log,
            pre_commit,
        }
    }

    /// `pre-commit try-repo` of this checkout's hook `rigaudit-verify` with `args` (`--files
    /// ...`, `--all-files`): its exit code and output.
    fn try_repo(&self, args: &[&str]) -> (i32, String) {
        self.try_hook("rigaudit-verify", &self.path, args)
    }

    /// `pre-commit try-repo` of this checkout's hook `id` with PATH `path`.
    fn try_hook(&self, id: &str, path: &str, args: &[&str]) -> (i32, String) {
        let hooks = root();
        let out = Command::new(&self.pre_commit)
            .args(["try-repo", hooks.to_str().unwrap(), id, "--verbose"])
            .args(args)
            .current_dir(&self.repo)
            .env("PATH", path)
            .env("PRE_COMMIT_HOME", self.tmp.path().join("cache"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), text)
    }
}

#[test]
fn the_pre_commit_hook_verifies_the_bundles_a_commit_touches() {
    let r = HookRepo::new(or_skip!(pre_commit()));
    let (code, text) = r.try_repo(&["--files", "pages/good/bundle.json", "pages/good/card.json"]);
    assert_eq!(code, 0, "{text}");
    assert_has(&text, "rigaudit verify smollm2-cpu: PASS");
    assert_eq!(
        text.matches("rigaudit verify smollm2-cpu").count(),
        1,
        "one run per bundle: {text}"
    );
    common::copy_dir(&tensorfold(), &r.repo.join("pages/bad"));
    git(&r.repo, &["add", "pages/bad"]);
    let (code, text) = r.try_repo(&[
        "--files",
        "pages/good/card.json",
        "pages/bad/quality/livecodebench/summary.json",
    ]);
    assert_eq!(code, 1, "{text}");
    assert_has(&text, "rigaudit verify tensorfold-127-stock-2x: FAIL");
    // pre-commit built the hook's rigaudit from the repository (`language: rust`: `cargo install
    // --bins --root ENV --path .` in its clone of it; try-repo clones anew each time), and ran it.
    let log = std::fs::read_to_string(&r.cargo_log).unwrap();
    let installs: Vec<&str> = log.lines().filter(|l| l.contains("|install ")).collect();
    assert_eq!(installs.len(), 2, "{log}");
    for install in installs {
        let fields: Vec<&str> = install.split('|').collect();
        assert!(
            fields[1].starts_with("install --bins --root ") && fields[1].ends_with(" --path ."),
            "{install}"
        );
        assert_eq!(fields[3], "Cargo.toml", "{install}");
    }
    // The hook for a rigaudit already installed runs the one on PATH, and builds nothing.
    let (code, text) = r.try_hook(
        "rigaudit-verify-installed",
        &r.installed,
        &["--files", "pages/good/card.json"],
    );
    assert_eq!(code, 0, "{text}");
    assert_has(&text, "rigaudit verify smollm2-cpu: PASS");
    let (code, text) = r.try_hook("rigaudit-verify-installed", &r.path, &["--all-files"]);
    assert_eq!(code, 1, "{text}");
    assert_has(&text, "- exit code: 2");
    assert_has(&text, "rigaudit-verify: no 'rigaudit' on PATH");
}

#[test]
fn the_pre_commit_hook_takes_committed_files_named_like_options_as_files() {
    let r = HookRepo::new(or_skip!(pre_commit()));
    common::copy_dir(&tensorfold(), &r.repo.join("pages/bad"));
    git(&r.repo, &["add", "pages/bad"]);
    // pre-commit passes the hook's `--`, then every file: these sort before pages/ and were
    // taken as options (`--fail-on=never` turned the failing page's verdict into a pass).
    for name in ["--fail-on=never", "--output=PWN.json", "-x"] {
        std::fs::write(r.repo.join(name), "").unwrap();
        git(&r.repo, &["add", "--", name]);
    }
    let (code, text) = r.try_repo(&["--all-files"]);
    assert_eq!(code, 1, "{text}");
    assert_has(&text, "rigaudit verify tensorfold-127-stock-2x: FAIL");
    assert!(!r.repo.join("PWN.json").exists(), "{text}");
}

/// A clean copy of this checkout (the files git tracks, and new ones it does not ignore; no
/// build), made once per run of these tests under the target's test folder: the Action as a
/// workflow gets it.
fn clean_checkout() -> PathBuf {
    static COPY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    COPY.get_or_init(|| {
        let to = Path::new(env!("CARGO_TARGET_TMPDIR")).join("action-checkout");
        let _ = std::fs::remove_dir_all(&to);
        let listed = common::output_ok(
            Command::new("git")
                .args([
                    "ls-files",
                    "-z",
                    "--cached",
                    "--others",
                    "--exclude-standard",
                ])
                .current_dir(root()),
        );
        for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
            let rel = Path::new(std::str::from_utf8(name).unwrap());
            let from = root().join(rel);
            if !from.is_file() {
                continue; // deleted in the work tree
            }
            let to = to.join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&from, &to).unwrap();
        }
        to
    })
    .clone()
}

/// Writes an executable script.
fn script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A folder with a `cargo` standing in for the real one: it logs `cwd|arguments|CARGO_TARGET_DIR|`
/// and `Cargo.toml` when the folder holds one, to `log` a line per call, answers `--version`, and for `build` and `install --root DIR` puts a
/// rigaudit (this build's) where the real one would.
fn stand_in_cargo(dir: &Path, log: &Path) -> PathBuf {
    let bin = dir.join("stand-in-bin");
    script(
        &bin.join("cargo"),
        &format!(
            r#"#!/bin/bash
echo "$PWD|$*|${{CARGO_TARGET_DIR:-}}|$([ -f Cargo.toml ] && echo Cargo.toml)" >> '{log}'
put() {{ mkdir -p "$1" && printf '#!/bin/sh\nexec %s "$@"\n' '{exe}' > "$1/rigaudit" && chmod +x "$1/rigaudit"; }}
case "$1" in
--version) echo 'cargo 1.89.0 (stand-in)' ;;
build) put "$CARGO_TARGET_DIR/release" ;;
install) while [ $# -gt 0 ] && [ "$1" != --root ]; do shift; done; put "$2/bin" ;;
*) echo "cargo stand-in: $*" >&2; exit 101 ;;
esac
"#,
            log = log.display(),
            exe = env!("CARGO_BIN_EXE_rigaudit")
        ),
    );
    bin
}

/// What one run of the Action left: the exit code of the step that failed (0 when none), every
/// step's output, the Action's outputs, the `uses` steps that would have run (with their inputs),
/// and the ids of the `run` steps that ran.
struct Job {
    code: i32,
    log: String,
    outputs: BTreeMap<String, String>,
    used: Vec<(String, BTreeMap<String, String>)>,
    ran: Vec<String>,
}

/// The expression context of a composite action: its inputs, its steps' outputs, whether a step
/// failed.
#[derive(Default)]
struct Context {
    inputs: BTreeMap<String, String>,
    steps: BTreeMap<String, BTreeMap<String, String>>,
    failed: bool,
}

impl Context {
    /// An operand: a quoted string, `inputs.NAME`, `steps.ID.outputs.NAME`, a status function.
    fn value(&self, e: &str) -> String {
        let e = e.trim();
        if let Some(text) = e.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
            return text.into();
        }
        if let Some(name) = e.strip_prefix("inputs.") {
            return self.inputs.get(name).cloned().unwrap_or_default();
        }
        if let Some((id, name)) = e
            .strip_prefix("steps.")
            .and_then(|r| r.split_once(".outputs."))
        {
            let outputs = self.steps.get(id);
            return outputs
                .and_then(|o| o.get(name))
                .cloned()
                .unwrap_or_default();
        }
        let truth = |b: bool| if b { "true" } else { "" }.to_string();
        match e {
            "always()" => truth(true),
            "success()" => truth(!self.failed),
            "failure()" => truth(self.failed),
            _ => panic!("an expression this runner does not know: {e}"),
        }
    }

    /// An expression of operands with `&&`, `||`, `==` and `!=` (no parentheses): what
    /// action.yml uses.
    fn eval(&self, e: &str) -> String {
        let truth = |b: bool| if b { "true" } else { "" }.to_string();
        if e.contains("&&") {
            return truth(e.split("&&").all(|p| !self.eval(p).is_empty()));
        }
        if e.contains("||") {
            let first = e.split("||").map(|p| self.eval(p)).find(|v| !v.is_empty());
            return first.unwrap_or_default();
        }
        if let Some((l, r)) = e.split_once("!=") {
            return truth(self.value(l) != self.value(r));
        }
        if let Some((l, r)) = e.split_once("==") {
            return truth(self.value(l) == self.value(r));
        }
        self.value(e)
    }

    /// Whether a step with this `if` runs: without a status function, only while no step failed.
    fn runs(&self, condition: Option<&str>) -> bool {
        let Some(c) = condition else {
            return !self.failed;
        };
        let c = c.trim();
        let c = c
            .strip_prefix("${{")
            .and_then(|c| c.strip_suffix("}}"))
            .unwrap_or(c);
        let status = ["always()", "success()", "failure()"]
            .iter()
            .any(|f| c.contains(f));
        !self.eval(c).is_empty() && (status || !self.failed)
    }

    /// `text` with each `${{ expression }}` replaced by its value.
    fn substitute(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            let end = rest[start..].find("}}").expect("an unclosed ${{") + start;
            out.push_str(&rest[..start]);
            out.push_str(&self.eval(&rest[start + 3..end]));
            rest = &rest[end + 2..];
        }
        out + rest
    }
}

/// The Actions runner of a job of pages (this repository's root is the workspace: its fixtures are
/// the pages), running the Action from `action` with a home and a temporary folder of its own.
struct Runner {
    action: PathBuf,
    home: PathBuf,
    temp: PathBuf,
    path: String,
    env: Vec<(String, String)>,
}

impl Runner {
    /// The Action from a clean copy of the checkout, a fresh home under `tmp`, no package index
    /// reachable (pip's index an address nothing answers on, no pip configuration read), and
    /// `first` first on PATH.
    fn new(tmp: &Path, first: &Path) -> Runner {
        let (home, temp) = (tmp.join("home"), tmp.join("runner-temp"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&temp).unwrap();
        let path = format!(
            "{}:{}",
            first.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let env = [
            ("PIP_CONFIG_FILE", "/dev/null"),
            ("PIP_INDEX_URL", "http://127.0.0.1:9/simple/"),
            ("PIP_RETRIES", "0"),
            ("PIP_TIMEOUT", "2"),
            ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
        ];
        Runner {
            action: clean_checkout(),
            home,
            temp,
            path,
            env: env.map(|(k, v)| (k.into(), v.into())).into(),
        }
    }

    /// Runs the Action's steps as the runner runs a composite action: in order, each `if` and
    /// `${{ }}` evaluated; a `run` step in bash (`--noprofile --norc -eo pipefail`, from the
    /// workspace) with the runner's variables and its own `GITHUB_OUTPUT`; a `uses` step recorded.
    fn run(&self, inputs: &[(&str, &str)]) -> Job {
        let action: serde_json::Value = serde_yaml_ng::from_str(
            &std::fs::read_to_string(self.action.join("action.yml")).unwrap(),
        )
        .unwrap();
        let mut cx = Context::default();
        for (name, def) in action["inputs"].as_object().unwrap() {
            let default = def["default"].as_str().unwrap_or("").to_string();
            cx.inputs.insert(name.clone(), default);
        }
        for (k, v) in inputs {
            assert!(cx.inputs.contains_key(*k), "no input {k}");
            cx.inputs.insert(k.to_string(), v.to_string());
        }
        let mut job = Job {
            code: 0,
            log: String::new(),
            outputs: BTreeMap::new(),
            used: Vec::new(),
            ran: Vec::new(),
        };
        let summary = self.temp.join("summary.md");
        let steps = action["runs"]["steps"].as_array().unwrap();
        for (n, step) in steps.iter().enumerate() {
            if !cx.runs(step["if"].as_str()) {
                continue;
            }
            let strings = |v: &serde_json::Value| -> BTreeMap<String, String> {
                let map = v.as_object().cloned().unwrap_or_default();
                map.iter()
                    .map(|(k, v)| (k.clone(), cx.substitute(v.as_str().unwrap())))
                    .collect()
            };
            if let Some(uses) = step["uses"].as_str() {
                job.used.push((uses.into(), strings(&step["with"])));
                continue;
            }
            assert_eq!(step["shell"], "bash");
            let output = self.temp.join(format!("output-{n}"));
            let file = self.temp.join(format!("step-{n}.sh"));
            std::fs::write(&output, "").unwrap();
            std::fs::write(&file, cx.substitute(step["run"].as_str().unwrap())).unwrap();
            let mut cmd = Command::new("bash");
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
                .arg(&file)
                .current_dir(root())
                .env("PATH", &self.path)
                .env("HOME", &self.home)
                .env("RUNNER_TEMP", &self.temp)
                .env("RUNNER_OS", "Linux")
                .env("RUNNER_ARCH", "X64")
                .env("GITHUB_ACTION_PATH", &self.action)
                .env("GITHUB_WORKSPACE", root())
                .env("GITHUB_OUTPUT", &output)
                .env("GITHUB_STEP_SUMMARY", &summary)
                .envs(strings(&step["env"]))
                .envs(self.env.iter().map(|(k, v)| (k, v)));
            let out = cmd.output().unwrap();
            job.log += &String::from_utf8_lossy(&out.stdout);
            job.log += &String::from_utf8_lossy(&out.stderr);
            let id = step["id"].as_str().unwrap_or("").to_string();
            let written = std::fs::read_to_string(&output).unwrap();
            cx.steps
                .entry(id.clone())
                .or_default()
                .extend(github_outputs(&written));
            if !out.status.success() {
                cx.failed = true;
                job.code = out.status.code().unwrap_or(-1);
            }
            job.ran.push(id);
        }
        for (name, o) in action["outputs"].as_object().unwrap() {
            let value = cx.substitute(o["value"].as_str().unwrap());
            job.outputs.insert(name.clone(), value);
        }
        job
    }

    /// The folder the Action builds rigaudit in.
    fn target(&self) -> PathBuf {
        self.home.join(".cache/rigaudit-action/target")
    }
}

/// The sha256 of a file, in hex.
fn sha256_hex(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_action_builds_rigaudit_from_its_own_checkout_with_no_package_index() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("cargo.log");
    let r = Runner::new(tmp.path(), &stand_in_cargo(tmp.path(), &log));
    let page = [("paths", "fixtures/runs/smollm2-cpu")];
    let job = r.run(&page);
    assert_eq!(job.code, 0, "{}", job.log);
    assert_eq!(job.ran, ["install", "build", "verify"]);
    assert_eq!(job.outputs["verdict"], "pass", "{}", job.log);
    // One build, in the Action's checkout, of the locked dependencies, into the cached folder.
    let target = r.target();
    let built = format!(
        "{}|build --release --locked --bin rigaudit|{}|Cargo.toml\n",
        r.action.display(),
        target.display()
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), built);
    // actions/cache keeps that folder and cargo's downloads by Cargo.lock's hash; the exact key
    // adds the source's.
    let lock = sha256_hex(&r.action.join("Cargo.lock"));
    let [(uses, with)] = &job.used[..] else {
        panic!("{:?}", job.used)
    };
    assert_eq!(uses, "actions/cache@v4");
    let paths: Vec<&str> = with["path"].lines().map(str::trim).collect();
    assert!(paths.contains(&target.to_str().unwrap()), "{paths:?}");
    assert!(paths.contains(&"~/.cargo/registry/cache/"), "{paths:?}");
    let restore = format!("rigaudit-build-Linux-X64-lock-{lock}-");
    assert_eq!(with["restore-keys"], restore);
    let src = with["key"].strip_prefix(&format!("{restore}src-")).unwrap();
    assert!(
        src.len() == 64 && src.bytes().all(|b| b.is_ascii_hexdigit()),
        "{src}"
    );
    // The next job, its folder restored, runs that build as it is.
    let job = r.run(&page);
    assert_eq!(job.code, 0, "{}", job.log);
    assert_has(&job.log, "rigaudit: the cached build of this source");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        built,
        "no second build"
    );
    // A version the index does not have (none answers here): a notice, then the same build.
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("cargo.log");
    let r = Runner::new(tmp.path(), &stand_in_cargo(tmp.path(), &log));
    let job = r.run(&[page[0], ("version", "0.1.0")]);
    assert_eq!(job.code, 0, "{}", job.log);
    assert_has(
        &job.log,
        "::notice title=rigaudit action::rigaudit==0.1.0 could not be installed from the package index (",
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
    assert_eq!(job.outputs["verdict"], "pass");
    // `binary` given: nothing installed, nothing built, nothing cached.
    let job = r.run(&[page[0], ("binary", env!("CARGO_BIN_EXE_rigaudit"))]);
    assert_eq!(
        (job.code, job.ran.clone()),
        (0, vec!["install".into(), "verify".into()])
    );
    assert!(job.used.is_empty());
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
    // What is wrong with the inputs is said before anything is installed.
    let job = r.run(&[page[0], ("version", "latest")]);
    assert_eq!(job.code, 2);
    assert_has(&job.log, "version: 'latest' is not a pinned version");
    assert_eq!(job.ran, ["install"]);
    let job = r.run(&[page[0], ("binary", "/no/such/rigaudit")]);
    assert_eq!(job.code, 2);
    assert_has(
        &job.log,
        "binary: /no/such/rigaudit is not an executable file",
    );
    // No cargo on the runner: the build says what it needs.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let mut bare = Runner::new(tmp.path(), &empty);
    bare.home = tmp.path().join("other-home");
    bare.path = format!("{}:/usr/bin:/bin", empty.display());
    let job = bare.run(&page);
    assert_eq!((job.code, job.outputs["verdict"].as_str()), (2, ""));
    assert_has(
        &job.log,
        "no cargo on PATH: building rigaudit needs Rust 1.89 or newer",
    );
}

#[test]
fn with_a_version_the_index_has_the_action_installs_it_with_pip_and_builds_nothing() {
    // A python3 standing in for the runner's: `-m venv DIR` makes DIR/bin/python (itself),
    // `-m pip install ...` logs its arguments and puts a rigaudit (this build's) beside it;
    // anything else goes to the real python3 (the script reads the JSON report with it).
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("cargo.log");
    let fake = stand_in_cargo(tmp.path(), &log);
    let real = String::from_utf8(
        Command::new("bash")
            .args(["-c", "command -v python3"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let pip_log = tmp.path().join("pip.log");
    script(
        &fake.join("python3"),
        &format!(
            "#!/bin/bash\ncase \"$1 $2\" in\n\
             '-m venv') mkdir -p \"$3/bin\" && cp \"$0\" \"$3/bin/python\" ;;\n\
             '-m pip') echo \"$@\" >> '{log}' && printf '#!/bin/sh\\nexec %s \"$@\"\\n' '{bin}' > \"$(dirname \"$0\")/rigaudit\" && chmod +x \"$(dirname \"$0\")/rigaudit\" ;;\n\
             *) exec '{real}' \"$@\" ;;\nesac\n",
            log = pip_log.display(),
            bin = env!("CARGO_BIN_EXE_rigaudit"),
            real = real.trim()
        ),
    );
    let r = Runner::new(tmp.path(), &fake);
    let job = r.run(&[("paths", "fixtures/runs/smollm2-cpu"), ("version", "0.1.0")]);
    assert_eq!(job.code, 0, "{}", job.log);
    assert_eq!(
        std::fs::read_to_string(&pip_log).unwrap(),
        "-m pip install --quiet rigaudit==0.1.0\n"
    );
    assert_eq!(job.ran, ["install", "verify"]);
    assert!(job.used.is_empty() && !log.exists());
    assert_eq!(job.outputs["verdict"], "pass");
}

/// The Action with the real cargo, offline (the dependencies from cargo's own cache): a release
/// build of a clean copy of the checkout (minutes), then a job that reuses it. The build folder
/// is kept under the target's test folder between runs.
#[test]
#[ignore = "a release build of rigaudit (minutes): cargo test --test it ci:: -- --ignored"]
fn the_action_builds_rigaudit_with_the_real_cargo() {
    let tmp = tempfile::tempdir().unwrap();
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("action-home");
    let real_home = std::env::var("HOME").unwrap();
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or(format!("{real_home}/.cargo"));
    let rustup_home = std::env::var("RUSTUP_HOME").unwrap_or(format!("{real_home}/.rustup"));
    let mut r = Runner::new(tmp.path(), tmp.path());
    r.home = keep;
    r.env.extend([
        ("CARGO_HOME".into(), cargo_home),
        ("RUSTUP_HOME".into(), rustup_home),
        ("CARGO_NET_OFFLINE".into(), "true".into()),
    ]);
    let page = [("paths", "fixtures/runs/smollm2-cpu")];
    let job = r.run(&page);
    assert_eq!(job.code, 0, "{}", job.log);
    assert_eq!(job.outputs["verdict"], "pass", "{}", job.log);
    let job = r.run(&page);
    assert_has(&job.log, "rigaudit: the cached build of this source");
    assert_eq!(job.outputs["verdict"], "pass", "{}", job.log);
}

fn yaml(path: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_action_passes_every_input_to_the_step_that_reads_it() {
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], "composite");
    let steps = action["runs"]["steps"].as_array().unwrap();
    let step = |id: &str| steps.iter().find(|s| s["id"] == id).unwrap();
    let script = |s: &serde_json::Value| {
        let run = s["run"].as_str().unwrap();
        assert!(
            !run.contains("inputs."),
            "no input pasted into shell code: {run}"
        );
        let name = run
            .split('"')
            .find_map(|w| w.strip_prefix("$GITHUB_ACTION_PATH/"))
            .unwrap();
        std::fs::read_to_string(root().join(name)).unwrap()
    };
    // Each input reaches, as INPUT_NAME, a step whose script reads it.
    for (name, _) in action["inputs"].as_object().unwrap() {
        if name == "upload-sarif" {
            continue; // read by the upload step, not a script
        }
        let var = format!("INPUT_{}", name.to_uppercase().replace('-', "_"));
        let given = format!("${{{{ inputs.{name} }}}}");
        let reading: Vec<&serde_json::Value> = steps
            .iter()
            .filter(|s| s["env"][&var].as_str() == Some(given.as_str()))
            .collect();
        assert!(!reading.is_empty(), "{var} not passed");
        for s in reading {
            assert!(script(s).contains(&var), "{} does not read {var}", s["run"]);
        }
    }
    // The verify step runs what the install steps chose.
    let verify = step("verify");
    assert_eq!(
        verify["env"]["INPUT_BINARY"],
        "${{ steps.build.outputs.binary || steps.install.outputs.binary }}"
    );
    let run_sh = script(verify);
    for (name, o) in action["outputs"].as_object().unwrap() {
        assert_eq!(
            o["value"],
            format!("${{{{ steps.verify.outputs.{name} }}}}")
        );
        // One line (`NAME=VALUE`), or several after a delimiter (`NAME<<DELIMITER`).
        assert!(
            run_sh.contains(&format!("echo \"{name}="))
                || run_sh.contains(&format!("echo \"{name}<<")),
            "run.sh does not set {name}"
        );
    }
    // The scripts parse.
    for name in ["action/run.sh", "action/install.sh", "action/pre-commit.sh"] {
        let st = Command::new("bash")
            .arg("-n")
            .arg(root().join(name))
            .status()
            .unwrap();
        assert!(st.success(), "{name}");
    }
}

/// The hooks' manifest as pre-commit reads it (its own validator): `rigaudit-verify` is
/// `language: rust`, so pre-commit builds rigaudit from the repository (`cargo install --bins
/// --path .`: a binary named as the entry's command) and runs `rigaudit __pre-commit`, which runs
/// the hook's script with that rigaudit; `rigaudit-verify-installed` runs the script here with the
/// rigaudit on PATH.
#[test]
fn the_hooks_manifest_is_valid_and_the_default_hook_is_built_from_the_repository() {
    let hooks = yaml(".pre-commit-hooks.yaml");
    let hook = |id: &str| {
        let all = hooks.as_array().unwrap();
        all.iter().find(|h| h["id"] == id).unwrap().clone()
    };
    let built = hook("rigaudit-verify");
    assert_eq!(built["language"], "rust");
    assert_eq!(built["entry"], "rigaudit __pre-commit");
    assert_eq!(built["args"], serde_json::json!(["--"]));
    let cargo: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("Cargo.toml")).unwrap()).unwrap();
    assert!(cargo["bin"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["name"].as_str() == Some("rigaudit")));
    let installed = hook("rigaudit-verify-installed");
    assert_eq!(installed["language"], "script");
    let entry = root().join(installed["entry"].as_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&entry).unwrap().permissions().mode();
    assert!(mode & 0o111 != 0, "{} is not executable", entry.display());
    // Everything else the two hooks say alike.
    for key in ["args", "pass_filenames", "require_serial", "types"] {
        assert_eq!(built[key], installed[key], "{key}");
    }
    // `rigaudit __pre-commit` is the script, run with this rigaudit.
    let run = rigaudit(&["__pre-commit", "--", "fixtures/runs/smollm2-cpu/card.json"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_has(&run.stdout, "rigaudit verify smollm2-cpu: PASS");
    let pre_commit = or_skip!(pre_commit());
    let out = Command::new(pre_commit)
        .args(["validate-manifest", ".pre-commit-hooks.yaml"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The fenced block of `lang` in `docs/ci.md` that starts with `start`.
fn doc_block(lang: &str, start: &str) -> String {
    let doc = std::fs::read_to_string(root().join("docs/ci.md")).unwrap();
    let fence = format!("```{lang}\n{start}");
    let at = doc
        .find(&fence)
        .unwrap_or_else(|| panic!("no {fence} in docs/ci.md"))
        + 4
        + lang.len();
    let end = doc[at..].find("\n```").unwrap();
    doc[at..at + end + 1].to_string()
}

/// docs/ci.md's workflow uses the Action from a checkout (a submodule pinned to a commit, no tag
/// that does not exist), with inputs the Action has; run with those inputs (its pages replaced
/// by fixtures, its SARIF folder by a temporary one) it verifies, builds rigaudit without an
/// index, and uploads the SARIF logs.
#[test]
fn the_workflow_in_docs_ci_uses_the_action_from_a_pinned_checkout_and_runs() {
    let text = doc_block("yaml", "name: audit the pages");
    assert!(!text.contains("OWNER") && !text.contains("@v0."), "{text}");
    let workflow: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
    let steps = workflow["jobs"]["audit"]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["uses"], "actions/checkout@v4");
    assert_eq!(steps[0]["with"]["submodules"], true);
    let step = steps.iter().find(|s| s["id"] == "rigaudit").unwrap();
    let uses = step["uses"].as_str().unwrap();
    assert!(uses.starts_with("./") && !uses.contains('@'), "{uses}");
    let action = yaml("action.yml");
    let with = step["with"].as_object().unwrap();
    for name in with.keys() {
        assert!(
            action["inputs"].get(name).is_some(),
            "the Action has no input {name}"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("cargo.log");
    let r = Runner::new(tmp.path(), &stand_in_cargo(tmp.path(), &log));
    let sarif = tmp.path().join("sarif");
    let value = |k: &str, v: &serde_json::Value| match k {
        "paths" => "fixtures/pages/tensorfold-127-stock-2x\nfixtures/runs/smollm2-cpu\n".into(),
        "sarif" => sarif.to_str().unwrap().to_string(),
        _ => v.as_str().map_or(v.to_string(), String::from),
    };
    let inputs: Vec<(String, String)> =
        with.iter().map(|(k, v)| (k.clone(), value(k, v))).collect();
    let inputs: Vec<(&str, &str)> = inputs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let job = r.run(&inputs);
    assert_eq!(job.code, 1, "{}", job.log); // the stock page fails at `error`
    assert_eq!(job.outputs["verdict"], "fail");
    assert!(sarif.join("rigaudit-2.sarif").is_file());
    let upload = job
        .used
        .iter()
        .find(|(u, _)| u.contains("upload-sarif"))
        .unwrap();
    assert_eq!(upload.1["sarif_file"], sarif.to_str().unwrap());
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
}

/// docs/ci.md's pre-commit set-up, run as written in a repository of pages (with rigaudit cloned
/// at ~/src/rigaudit): the configuration it writes names a hook of the manifest at a commit, and
/// the commit hook pre-commit installs builds rigaudit from the clone and verifies the pages.
#[test]
fn the_pre_commit_setup_in_docs_ci_runs_as_written() {
    let pre_commit = or_skip!(pre_commit());
    let r = HookRepo::new(pre_commit.clone());
    let home = r.tmp.path().join("home");
    std::fs::create_dir_all(home.join("src")).unwrap();
    let clone = home.join("src/rigaudit");
    let st = Command::new("git")
        .args(["clone", "-q", "--no-hardlinks"])
        .arg(root())
        .arg(&clone)
        .status()
        .unwrap();
    assert!(st.success());
    let snippet = doc_block("sh", "cat > .pre-commit-config.yaml");
    let bin = pre_commit.parent().unwrap();
    let path = format!("{}:{}", bin.display(), r.path);
    let out = Command::new("bash")
        .args(["-euc", &snippet])
        .current_dir(&r.repo)
        .env("HOME", &home)
        .env("PATH", &path)
        .env("PRE_COMMIT_HOME", r.tmp.path().join("cache"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: serde_json::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(r.repo.join(".pre-commit-config.yaml")).unwrap(),
    )
    .unwrap();
    let entry = &config["repos"][0];
    assert_eq!(entry["repo"], clone.to_str().unwrap());
    assert_eq!(
        entry["rev"].as_str().unwrap().len(),
        40,
        "a commit: {entry}"
    );
    assert_eq!(entry["hooks"][0]["id"], "rigaudit-verify");
    // The commit runs the hook: pre-commit builds rigaudit from the clone and verifies the page.
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(["commit", "-q", "-m", "pages"])
        .current_dir(&r.repo)
        .env("HOME", &home)
        .env("PATH", &path)
        .env("PRE_COMMIT_HOME", r.tmp.path().join("cache"))
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("rigaudit verify....") && said.contains("Passed"),
        "{said}"
    );
    let log = std::fs::read_to_string(&r.cargo_log).unwrap();
    assert!(log.contains("|install --bins --root "), "{log}");
}

/// The recorder's last step (`fixtures/runs/record.sh`, from its step 5): verify at the default
/// gate, its first line shown and its exit code the script's, so a recording that fails verify
/// fails the recorder (it used to verify with `--fail-on never` and exit 0 whatever it found).
#[test]
fn the_recorders_last_step_fails_when_its_recording_fails_verify() {
    let script = std::fs::read_to_string(root().join("fixtures/runs/record.sh")).unwrap();
    let at = script.find("# 5. verifies").expect("record.sh's step 5");
    let tail = &script[at..];
    assert!(!tail.contains("--fail-on never"), "{tail}");
    for (bundle, code, says) in [(tensorfold(), 1, ": FAIL ("), (smollm2(), 0, ": PASS (")] {
        let tmp = tempfile::tempdir().unwrap();
        let out = Command::new("bash")
            .args(["-c", &format!("set -euo pipefail\n{tail}")])
            .env("BIN", env!("CARGO_BIN_EXE_rigaudit"))
            .env("OUT", &bundle)
            .env("TMP", tmp.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(code), "{stdout}");
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert_has(&stdout, says);
    }
}

/// The outputs a step wrote to `GITHUB_OUTPUT`, as GitHub reads them: `NAME=VALUE` lines and
/// multi-line values written `NAME<<DELIMITER`, the lines of the value, then `DELIMITER` alone.
fn github_outputs(written: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = written.lines();
    while let Some(l) = lines.next() {
        if let Some((k, delim)) = l.split_once("<<").filter(|(k, _)| !k.contains('=')) {
            let value: Vec<&str> = lines.by_ref().take_while(|x| *x != delim).collect();
            out.push((k.to_string(), value.join("\n")));
        } else {
            let (k, v) = l
                .split_once('=')
                .expect("a NAME=VALUE or NAME<<DELIMITER line");
            out.push((k.to_string(), v.to_string()));
        }
    }
    out
}
