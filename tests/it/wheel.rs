//! `pip install rigaudit`: the wheel maturin builds from pyproject.toml (the one `rigaudit`
//! binary, the engine in-process as `rigaudit __engine`), installed into a fresh virtual
//! environment, and `rigaudit verify` run from there on both seed pages, found on `PATH` as a user
//! would find it.
//!
//! The wheel is built with Cargo.toml's release profile, what `pip install` users get, in this
//! target folder, so that a second run rebuilds only what changed (about 10 s when nothing did).
//! In a fresh target folder that is a whole release build (31 minutes on 2 busy cores);
//! `RIGAUDIT_WHEEL_PROFILE=dev` builds the wheel from the debug build the tests already made
//! instead (no compile, and no relink: the test checks that `target/debug/rigaudit`, which the
//! tests running beside it start, stays the same file; the binary unstripped, so its size bound
//! is not checked). maturin comes
//! pinned from PyPI into a venv under the target folder (scripts/test.sh makes it beforehand); the
//! test skips, saying so, only when PyPI cannot be reached.

use crate::common;

use common::{fixture, venv};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const MATURIN: &str = "maturin==1.16.0";

/// The binary in the wheel must stay well under this (the bound: 141 MB with debug info).
const BINARY_MAX: u64 = 30 << 20;

/// The target folder this test was built in (the parent of `CARGO_TARGET_TMPDIR`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The cargo profile the wheel is built with: `release`, or `RIGAUDIT_WHEEL_PROFILE`.
fn profile() -> String {
    std::env::var("RIGAUDIT_WHEEL_PROFILE").unwrap_or_else(|_| "release".into())
}

/// Builds the wheel into `out` with maturin; returns the wheel's path.
fn build_wheel(maturin_python: &Path, out: &Path) -> PathBuf {
    let started = Instant::now();
    let tests_binary = binary_identity();
    let mut maturin = Command::new(maturin_python);
    // What cargo set for this test process (the package's name, version, manifest folder) is not
    // the nested build's: build scripts that watch those variables (ring's) would run again and
    // rebuild everything above them, here and in the next plain `cargo build`.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|p| name.starts_with(p))
            || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&&*name);
        if set_by_cargo {
            maturin.env_remove(&*name);
        }
    }
    let built = maturin
        .args([
            "-m",
            "maturin",
            "build",
            "--quiet",
            "--profile",
            &profile(),
            "--out",
        ])
        .arg(out)
        .current_dir(common::root())
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "maturin build:\n{said}");
    if profile() == "dev" {
        assert_eq!(
            binary_identity(),
            tests_binary,
            "maturin's dev build relinked target/debug/rigaudit, the binary the other tests run: \
             `cargo build` resolves other features than `cargo test` (a dev-dependency's; see \
             the simd-adler32 line of Cargo.toml), so the build is no longer the tests' own"
        );
    }
    eprintln!(
        "maturin build (profile {}) took {:.0} s",
        profile(),
        started.elapsed().as_secs_f64()
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    wheels[0].clone()
}

/// The file `target/debug/rigaudit` is (inode and modification time): cargo replaces it when a
/// build of another dependency graph is uplifted there.
fn binary_identity() -> Option<(u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(target_dir().join("debug").join("rigaudit")).ok()?;
    Some((m.ino(), m.mtime(), m.mtime_nsec()))
}

/// Runs `rigaudit ARGS` as found on `PATH` = the venv's bin folder and the system's.
fn installed(bin: &Path, args: &[&str]) -> common::Run {
    let path = format!("{}:/usr/bin:/bin", bin.display());
    common::Run::of(
        Command::new("rigaudit")
            .args(args)
            .env("PATH", path)
            .current_dir(bin),
    )
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_verifies_the_seed_pages() {
    let maturin = or_skip!(venv::or_skip("maturin-venv", &[MATURIN]));
    let tmp = tempfile::tempdir().unwrap();
    let wheel = build_wheel(&maturin, &tmp.path().join("wheels"));
    let name = wheel.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        name.starts_with(&format!("rigaudit-{}-", env!("CARGO_PKG_VERSION"))),
        "{name}"
    );
    let size = std::fs::metadata(&wheel).unwrap().len();
    eprintln!("{name}: {size} bytes");
    // A fresh environment, the wheel installed from the file alone (no index).
    let env = tmp.path().join("venv");
    let python = venv::fresh(&env);
    venv::pip_install(&python, &["--no-index", wheel.to_str().unwrap()]).unwrap();
    let bin = env.join("bin");
    let binary = std::fs::metadata(bin.join("rigaudit")).unwrap().len();
    eprintln!("installed binary: {binary} bytes");
    if profile() == "release" {
        assert!(binary < BINARY_MAX, "{binary} bytes: not stripped?");
    }
    let verified = |page: &str, code: i32, verdict: &str| {
        let page = fixture(page);
        let r = installed(
            &bin,
            &["verify", page.to_str().unwrap(), "--format", "json"],
        );
        let said = (r.code, r.json()["verdict"].as_str().map(String::from));
        assert_eq!(said, (code, Some(verdict.to_string())), "{}", r.stderr);
        r
    };
    let r = verified("tensorfold-127-stock-2x", 1, "fail");
    assert_eq!(r.findings("quality.refused-counted-as-wrong").len(), 2);
    verified("mia-recipe-1104-2x", 0, "pass");
    // The engine audit and replay launch is in the same binary.
    let r = installed(&bin, &["__engine", "--version"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("rigaudit-engine "), "{}", r.stdout);
}
