//! Python virtual environments under the target folder (`CARGO_TARGET_TMPDIR`), with pinned
//! packages from PyPI installed by pip, made once and kept across runs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Words in pip's output that say PyPI could not be reached (not that the install is wrong).
const UNREACHABLE: [&str; 5] = [
    "NewConnectionError",
    "Temporary failure in name resolution",
    "Network is unreachable",
    "No matching distribution found",
    "ConnectTimeoutError",
];

/// The folder `name` of the target's test folder.
pub fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// A fresh virtual environment at `at` (anything there before is removed).
pub fn fresh(at: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(at);
    super::output_ok(Command::new("python3").args(["-m", "venv"]).arg(at));
    at.join("bin").join("python")
}

/// pip installs `what` (requirements or wheel files) into the environment of `python`. `Err`
/// with pip's words when PyPI could not be reached; a failing install for any other reason
/// fails the test.
pub fn pip_install(python: &Path, what: &[&str]) -> Result<(), String> {
    let out = Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(what)
        .output()
        .expect("pip");
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    if UNREACHABLE.iter().any(|w| said.contains(w)) {
        return Err(said);
    }
    panic!("pip install {what:?} failed:\n{said}");
}

/// The environment `name` with the pinned `requirements`, made when missing or made for other
/// requirements (a marker file records them). `Err` when PyPI could not be reached.
pub fn with(name: &str, requirements: &[&str]) -> Result<PathBuf, String> {
    let at = dir(name);
    let marker = at.join("rigaudit-requirements.txt");
    let want = requirements.join("\n");
    let python = at.join("bin").join("python");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(want.as_str()) {
        return Ok(python);
    }
    fresh(&at);
    pip_install(&python, requirements)?;
    std::fs::write(&marker, want).unwrap();
    Ok(python)
}

/// [`with`], or `None` after saying on stderr that the test is skipped: PyPI could not be
/// reached.
pub fn or_skip(name: &str, requirements: &[&str]) -> Option<PathBuf> {
    let unreachable = |e| {
        let what = requirements.join(" ");
        eprintln!("SKIPPED: PyPI is unreachable, {what} cannot be installed: {e}");
    };
    with(name, requirements).map_err(unreachable).ok()
}
