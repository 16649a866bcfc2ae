//! `rigaudit audit BUNDLE`: the main job as a pipeline of stages, verify, then rehash when roots
//! or files are given, then replay unless told not to, merged into one report. A replay that
//! cannot run at all makes the report incomplete (exit 3), with the verify (and rehash) findings
//! kept. Another tool's files (a bundle `rigaudit import` wrote) are verified, and the report says
//! that replay does not apply to them.

use crate::fatal::Fatal;
use crate::subject::{Other, Subject};
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
    /// `--slurm`: a root on one of the card's boxes is read on its node, as `rehash --slurm`.
    pub slurm: crate::slurm::SlurmArgs,
}

/// Runs the stages and builds the one report. `bundle` is the path `subject` was opened from; the
/// bundle is read once, and verify, rehash and replay take what was read.
pub fn run(
    subject: Subject,
    bundle: &Path,
    artifacts: Artifacts,
    replay_args: Option<&replay::Args>,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    let opened = match subject {
        Subject::Bundle(opened) => opened,
        Subject::Other(other) => return other_files(&other, &artifacts, replay_args, fail_on),
    };
    let (read, kept) = match replay_args {
        Some(_) => crate::bundle::load_keeping(&opened),
        None => (crate::bundle::load(&opened), Default::default()),
    };
    let v = verify::check_loaded(&opened, &read);
    let mut found = v.found;
    if !artifacts.roots.is_empty() || !artifacts.files.is_empty() {
        found.merge(rehash_stage(bundle, (&opened, &read), artifacts)?);
    }
    if let Some(a) = replay_args {
        let recorded = replay::Recorded {
            path: bundle.to_path_buf(),
            opened,
            bundle: read,
            kept,
        };
        found.merge(replay_stage(&recorded, a));
    }
    // The audit lists the checks of all its stages sorted.
    found.sort_ran();
    Ok(Report::new("audit", &v.id, fail_on, found))
}

/// The audit of another tool's files (most often a bundle `rigaudit import` wrote): verify, and
/// a note that says plainly what does not apply to them. They record no command to launch and no
/// card whose artifacts could be hashed, so replay and rehash have nothing to work on.
fn other_files(
    other: &Other,
    artifacts: &Artifacts,
    replay_args: Option<&replay::Args>,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    let mut verified = verify::other_files(other)?;
    let tool = other.format.name();
    if replay_args.is_some() {
        let note = format!(
            "replay does not apply to another tool's files ({tool}): they record no command to launch; the audit verified them"
        );
        verified.found.merge(rigaudit_audit::replay::command(
            &rigaudit_audit::replay::Done {
                not_run: None,
                notes: &[note],
            },
        ));
    }
    if !artifacts.roots.is_empty() || !artifacts.files.is_empty() {
        crate::progress::say(format_args!(
            "rigaudit: rehash does not apply to another tool's files ({tool}): they record no card whose artifacts --root or --file could be hashed against; not rehashed"
        ));
    }
    Ok(verified.report("audit", fail_on))
}

/// The rehash stage, quiet, over the bundle already opened and read.
fn rehash_stage(
    bundle: &Path,
    (opened, read): (&crate::bundle::Opened, &rigaudit_audit::Bundle),
    artifacts: Artifacts,
) -> Result<Findings, Fatal> {
    let args = rehash::Args {
        bundle: bundle.to_path_buf(),
        roots: artifacts.roots,
        files: artifacts.files,
        quiet: true,
        ssh: artifacts.ssh,
        slurm: artifacts.slurm,
        ..Default::default()
    };
    rehash::stage_read(&args, opened, read)
}

/// The replay stage; a replay that cannot run is a finding and makes the result incomplete.
fn replay_stage(recorded: &replay::Recorded, a: &replay::Args) -> Findings {
    let mut notes = Vec::new();
    match replay::run_noted(recorded, a, &mut notes) {
        Ok(r) => {
            if !a.quiet {
                crate::progress::say(format_args!(
                    "rigaudit: replayed bundle written to {}",
                    r.bundle.display()
                ));
            }
            r.found
        }
        Err(e) => replay::not_run_noted(&e, &notes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct ReplayFlags {
        #[command(flatten)]
        replay: replay::Args,
    }

    /// An imported bundle is verified, and the report says that replay does not apply to it.
    #[test]
    fn an_imported_bundle_is_verified_and_replay_said_not_to_apply() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("b");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/imports/lm-eval/clean");
        crate::import::run(None, &[src], &out).unwrap();
        let subject = Subject::open(std::slice::from_ref(&out), None).unwrap();
        let flags = ReplayFlags::parse_from(["audit"]);
        let none = Artifacts {
            roots: vec![],
            files: vec![],
            ssh: crate::ssh::SshArgs::default(),
            slurm: crate::slurm::SlurmArgs::default(),
        };
        let r = run(subject, &out, none, Some(&flags.replay), None).unwrap();
        assert_eq!(r.command, "audit");
        assert_eq!(r.verdict, rigaudit_audit::report::Verdict::Pass);
        assert!(
            r.checks_run.iter().any(|c| c.starts_with("import.")),
            "{:?}",
            r.checks_run
        );
        let note = r
            .findings
            .iter()
            .find(|f| f.check == rigaudit_audit::replay::NOTE.id)
            .expect("a replay note");
        assert!(
            note.message.contains("replay does not apply"),
            "{}",
            note.message
        );
        assert_eq!(r.artifacts.len(), 3, "import.json and the two sources");
    }
}
