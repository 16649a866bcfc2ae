//! `rigaudit audit BUNDLE`: the main job as a pipeline of stages, verify, then rehash when roots
//! or files are given, then replay unless told not to, merged into one report. A replay that
//! cannot run at all makes the report incomplete (exit 2), with the verify (and rehash) findings
//! kept.

use crate::fatal::Fatal;
use crate::{rehash, replay, verify};
use rigaudit_audit::{Findings, Report, Severity};
use std::path::Path;

/// What to rehash: `--root` and `--file` values.
pub struct Artifacts {
    /// `--root [BOX=]DIR` values.
    pub roots: Vec<String>,
    /// `--file NAME[@BOX]=PATH` values.
    pub files: Vec<String>,
    /// The boxes mapped with `--box` and the ssh options: a root on such a box is read there.
    pub ssh: crate::ssh::SshArgs,
}

/// Runs the stages and builds the one report.
pub fn run(
    bundle: &Path,
    artifacts: Artifacts,
    replay_args: Option<&replay::Args>,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    let v = verify::check(bundle)?;
    let mut found = v.found;
    if !artifacts.roots.is_empty() || !artifacts.files.is_empty() {
        found.merge(rehash_stage(bundle, artifacts)?);
    }
    if let Some(a) = replay_args {
        found.merge(replay_stage(bundle, a));
    }
    // The audit lists the checks of all its stages sorted.
    found.ran.sort();
    Ok(Report::new("audit", &v.id, fail_on, found))
}

/// The rehash stage, quiet.
fn rehash_stage(bundle: &Path, artifacts: Artifacts) -> Result<Findings, Fatal> {
    rehash::stage(&rehash::Args {
        bundle: bundle.to_path_buf(),
        roots: artifacts.roots,
        files: artifacts.files,
        quiet: true,
        ssh: artifacts.ssh,
        ..Default::default()
    })
    .map(|(_, found)| found)
}

/// The replay stage; a replay that cannot run is a finding and makes the result incomplete.
fn replay_stage(bundle: &Path, a: &replay::Args) -> Findings {
    match replay::run(bundle, a) {
        Ok(r) => {
            eprintln!(
                "rigaudit: replayed bundle written to {}",
                r.bundle.display()
            );
            r.found
        }
        Err(e) => replay::not_run(&e),
    }
}
