//! The CI surfaces: `--format github` (annotations at the file and line, the Markdown report added
//! to the job summary), the GitHub Action's script (`action/run.sh`) run as the Actions runner runs
//! it (its variables pointing at temporary files, this build's binary given so nothing is
//! installed), and the pre-commit hook (`.pre-commit-hooks.yaml`) run by the real `pre-commit`
//! from PyPI on a scratch repository of pages.

mod common;

use common::{
    argv, assert_has, assert_starts_with, fixture, read_json, rigaudit, rigaudit_with_env, root,
};
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
    // Without a binary, the version must be pinned (checked before anything is installed).
    let s = step(&[
        ("INPUT_PATHS", "x"),
        ("INPUT_BINARY", ""),
        ("INPUT_VERSION", "latest"),
    ]);
    assert_eq!(s.code, 2);
    assert_has(&s.stdout, "version: 'latest' is not a pinned version");
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

/// A scratch git repository of pages for the hook, with the PATH that finds this build's
/// rigaudit.
struct HookRepo {
    tmp: tempfile::TempDir,
    repo: PathBuf,
    path: String,
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
        let bin = Path::new(env!("CARGO_BIN_EXE_rigaudit")).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        HookRepo {
            tmp,
            repo,
            path,
            pre_commit,
        }
    }

    /// `pre-commit try-repo` of this checkout's hook with `args` (`--files ...`, `--all-files`):
    /// its exit code and output.
    fn try_repo(&self, args: &[&str]) -> (i32, String) {
        let hooks = root();
        let out = Command::new(&self.pre_commit)
            .args([
                "try-repo",
                hooks.to_str().unwrap(),
                "rigaudit-verify",
                "--verbose",
            ])
            .args(args)
            .current_dir(&self.repo)
            .env("PATH", &self.path)
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

#[test]
fn without_a_binary_the_actions_script_installs_the_pinned_version_with_pip() {
    // A python3 standing in for the runner's: `-m venv DIR` makes DIR/bin/python (itself),
    // `-m pip install ...` logs its arguments and puts a rigaudit (this build's) beside it;
    // anything else goes to the real python3 (the script reads the JSON report with it).
    let tmp = tempfile::tempdir().unwrap();
    let fake = tmp.path().join("bin");
    std::fs::create_dir(&fake).unwrap();
    let real = String::from_utf8(
        Command::new("bash")
            .args(["-c", "command -v python3"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let log = tmp.path().join("pip.log");
    let script = format!(
        "#!/bin/bash\ncase \"$1 $2\" in\n\
         '-m venv') mkdir -p \"$3/bin\" && cp \"$0\" \"$3/bin/python\" ;;\n\
         '-m pip') echo \"$@\" >> '{log}' && printf '#!/bin/sh\\nexec %s \"$@\"\\n' '{bin}' > \"$(dirname \"$0\")/rigaudit\" && chmod +x \"$(dirname \"$0\")/rigaudit\" ;;\n\
         *) exec '{real}' \"$@\" ;;\nesac\n",
        log = log.display(),
        bin = env!("CARGO_BIN_EXE_rigaudit"),
        real = real.trim()
    );
    let python = fake.join("python3");
    std::fs::write(&python, script).unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&python)
        .status()
        .unwrap();
    let path = format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let s = step(&[
        ("INPUT_PATHS", "fixtures/runs/smollm2-cpu"),
        ("INPUT_BINARY", ""),
        ("INPUT_VERSION", "0.1.0"),
        ("PATH", &path),
    ]);
    assert_eq!(s.code, 0, "{}", s.stdout);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "-m pip install --quiet rigaudit==0.1.0\n"
    );
    assert!(s.outputs.starts_with("verdict=pass\n"), "{}", s.outputs);
}

fn yaml(path: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_action_passes_every_input_to_its_script_and_the_hook_names_a_script_here() {
    let action = yaml("action.yml");
    let script = std::fs::read_to_string(root().join("action/run.sh")).unwrap();
    let step = &action["runs"]["steps"][0];
    assert_eq!(action["runs"]["using"], "composite");
    assert_eq!(step["id"], "verify");
    for (name, _) in action["inputs"].as_object().unwrap() {
        if name == "upload-sarif" {
            continue; // read by the upload step, not the script
        }
        let var = format!("INPUT_{}", name.to_uppercase().replace('-', "_"));
        let env = step["env"][&var]
            .as_str()
            .unwrap_or_else(|| panic!("{var} not passed"));
        assert_eq!(env, format!("${{{{ inputs.{name} }}}}"));
        assert!(script.contains(&var), "run.sh does not read {var}");
    }
    assert!(
        !step["run"].as_str().unwrap().contains("inputs."),
        "no input pasted into shell code"
    );
    for (name, o) in action["outputs"].as_object().unwrap() {
        assert_eq!(
            o["value"],
            format!("${{{{ steps.verify.outputs.{name} }}}}")
        );
        // One line (`NAME=VALUE`), or several after a delimiter (`NAME<<DELIMITER`).
        assert!(
            script.contains(&format!("echo \"{name}="))
                || script.contains(&format!("echo \"{name}<<")),
            "run.sh does not set {name}"
        );
    }
    let hooks = yaml(".pre-commit-hooks.yaml");
    let hook = &hooks[0];
    assert_eq!(hook["id"], "rigaudit-verify");
    let entry = root().join(hook["entry"].as_str().unwrap());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&entry).unwrap().permissions().mode();
    assert!(mode & 0o111 != 0, "{} is not executable", entry.display());
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
