//! Shared helpers of the integration tests: copy a fixture bundle, change it, run the binary.

#![allow(dead_code)]

pub mod fake_server;

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture bundle's folder.
pub fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/pages").join(name)
}

fn copy_dir(from: &Path, to: &Path) {
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
        serde_json::from_str(&std::fs::read_to_string(self.path().join(file)).unwrap()).unwrap()
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
                let d = Sha256::digest(std::fs::read(&p).unwrap());
                f["sha256"] = Value::String(d.iter().map(|b| format!("{b:02x}")).collect());
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

    pub fn has(&self, check: &str) -> bool {
        !self.findings(check).is_empty()
    }

    pub fn has_at(&self, check: &str, severity: &str) -> bool {
        self.findings(check)
            .iter()
            .any(|f| f["severity"] == severity)
    }
}

/// Runs `rigaudit ARGS`.
pub fn rigaudit(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_rigaudit"))
        .args(args)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `rigaudit verify PATH --format json`.
pub fn verify(path: &Path) -> Run {
    rigaudit(&["verify", path.to_str().unwrap(), "--format", "json"])
}
