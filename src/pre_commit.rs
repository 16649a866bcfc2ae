//! `rigaudit __pre-commit ARGS... FILES...`: the pre-commit hook of `.pre-commit-hooks.yaml`.
//! The hook is `language: rust`, so pre-commit builds rigaudit from the repository itself (`cargo
//! install --bins --path .`, no package index needed) and runs this. Its logic is
//! `action/pre-commit.sh` (the bundles the files belong to, each verified once; the hook's options
//! before `--`, never a file's name taken as an option), embedded here and run with `bash` with
//! `RIGAUDIT` naming this executable, so that the rigaudit pre-commit built is the one it runs.
//! Dispatched before clap, as `__engine` is: the arguments are the hook's, not rigaudit's.

use std::ffi::OsString;
use std::process::{Command, ExitCode};

/// The hidden subcommand the hook's `entry` names.
pub const SUBCOMMAND: &str = "__pre-commit";

/// The hook's script.
const SCRIPT: &str = include_str!("../action/pre-commit.sh");

/// Runs the hook's script on `args` (what pre-commit passes: the hook's `args`, then the files)
/// and exits as it does; 2 when bash cannot be run.
pub fn main(args: impl Iterator<Item = OsString>) -> ExitCode {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(SCRIPT).arg("rigaudit-verify").args(args);
    match std::env::current_exe() {
        Ok(exe) => cmd.env("RIGAUDIT", exe),
        Err(e) => {
            eprintln!("rigaudit-verify: cannot tell where this rigaudit is: {e}");
            return ExitCode::from(2);
        }
    };
    match cmd.status() {
        Ok(status) => ExitCode::from(
            status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(2),
        ),
        Err(e) => {
            eprintln!("rigaudit-verify: cannot run bash: {e}");
            ExitCode::from(2)
        }
    }
}
