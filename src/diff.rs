//! `rigaudit diff A B`: two bundles of one setup (folders or packed), the setup differences first,
//! then every figure with the statistics replay uses. The decisions are
//! [`rigaudit_audit::diff`]'s; this module reads the two bundles and builds the report. Two runs
//! of another tool (what [`crate::subject`] opens them as) are diffed by [`crate::import::diff`].

use crate::bundle;
use crate::fatal::{fatal, Fatal};
use crate::import::diff as import_diff;
use crate::input;
use crate::subject;
use rigaudit_audit::bundle::Seen;
use rigaudit_audit::diff::{SetupPolicy, Subject};
use rigaudit_audit::records::FileKind;
use rigaudit_audit::replay::Tolerance;
use rigaudit_audit::{Report, Severity};
use std::path::{Path, PathBuf};

/// Options of `rigaudit diff`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The first bundle (a folder with bundle.json, or .tar.gz / .tar).
    pub a: PathBuf,
    /// The second bundle.
    pub b: PathBuf,
    /// The decision rule (the policy's `[decide]`; its defaults without one).
    #[arg(skip)]
    pub rule: rigaudit_audit::decide::DecisionRule,
    /// Setup subjects whose differences fail the diff (comma-separated; `none` for none): engine,
    /// nccl, checkpoint, command, server, sampling, hardware, contract, text. Default: all but
    /// text.
    #[arg(long, value_name = "SUBJECTS")]
    pub setup_fails_on: Option<String>,
    /// A and B are result files of another tool in this format (detected when not given, and
    /// for bundles `rigaudit import` wrote); see `rigaudit import`.
    #[arg(long, value_enum)]
    pub from: Option<crate::import::Format>,
}

pub(crate) fn policy(a: &Args) -> Result<SetupPolicy, Fatal> {
    let Some(list) = &a.setup_fails_on else {
        return Ok(SetupPolicy::default());
    };
    let mut fail = std::collections::BTreeSet::new();
    for name in list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "none")
    {
        let s: Subject = serde_json::from_value(serde_json::Value::String(name.into()))
            .map_err(|_| {
                fatal(format!(
                    "--setup-fails-on: '{name}' is not a subject (engine, nccl, checkpoint, command, server, sampling, hardware, contract, text)"
                ))
            })?;
        fail.insert(s);
    }
    Ok(SetupPolicy { fail })
}

/// What diff reads of a side: every file but the logs (card, contracts, results, answers).
fn compared(kind: FileKind) -> bool {
    kind != FileKind::Log
}

/// Lines naming a problem shown per side at most; the rest are counted.
const PROBLEMS_SHOWN: usize = 10;

/// Why each file diff compares could not be read whole, one line each (`path: what`): missing,
/// outside the bundle, refused (not a regular file, over its bound), not valid JSON, or not of its
/// schema.
pub(crate) fn unread_files(b: &rigaudit_audit::Bundle) -> Vec<String> {
    let mut out = Vec::new();
    for f in &b.files {
        let Some(e) = b.manifest.files.get(f.index).filter(|e| compared(e.kind)) else {
            continue;
        };
        let path = input::shown(&e.path);
        let kind = e.kind.name();
        match &f.seen {
            Seen::Missing => out.push(format!(
                "{path}: the {kind} the manifest lists is missing{}",
                if e.published {
                    ""
                } else {
                    " (listed as not published)"
                }
            )),
            Seen::Escapes(why) => out.push(format!("{path}: the {kind} is refused: {why}")),
            Seen::Link(to) => out.push(format!(
                "{path}: the {kind} is a link out of the bundle (to {}); refused",
                input::shown(to)
            )),
            Seen::Present { problems, .. } => out.extend(problems.iter().map(|p| {
                let what = if p.unreadable {
                    "cannot be read"
                } else {
                    "breaks its schema"
                };
                format!("{path}: the {kind} {what}: {}", p.detail)
            })),
            Seen::Duplicate | Seen::Alias => {}
        }
    }
    out
}

/// `Err` (exit 2) when A or B cannot be read whole: each side that cannot, and each file of it and
/// what was wrong. A diff of a side with a file missing or broken would compare only what is left,
/// and could pass however the side changed.
fn whole(sides: [(&str, &Path, &rigaudit_audit::Bundle); 2]) -> Result<(), Fatal> {
    let mut msg = String::new();
    for (side, path, b) in sides {
        let bad = unread_files(b);
        if bad.is_empty() {
            continue;
        }
        msg.push_str(&format!(
            "side {side} ({}) cannot be read whole: {} file problem(s); nothing is compared (run `rigaudit verify` on it):",
            input::shown_path(path),
            bad.len()
        ));
        for line in bad.iter().take(PROBLEMS_SHOWN) {
            msg.push_str(&format!("\n  {side}: {line}"));
        }
        if bad.len() > PROBLEMS_SHOWN {
            msg.push_str(&format!(
                "\n  {side}: and {} more",
                bad.len() - PROBLEMS_SHOWN
            ));
        }
        msg.push('\n');
    }
    match msg.is_empty() {
        true => Ok(()),
        false => Err(fatal(msg.trim_end().to_string())),
    }
}

/// An error opening a side, said to be of that side.
fn of_side(side: &str, e: Fatal) -> Fatal {
    fatal(format!("side {side}: {}", e.0))
}

/// Diffs what A and B are: two bundles, or two runs of one tool (its files, or bundles `rigaudit
/// import` wrote). `Err` when a side cannot be read at all, or the two are not of one kind (exit 2).
pub fn run(a: &Args, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let sa =
        subject::Subject::open(std::slice::from_ref(&a.a), a.from).map_err(|e| of_side("A", e))?;
    let sb =
        subject::Subject::open(std::slice::from_ref(&a.b), a.from).map_err(|e| of_side("B", e))?;
    let tol = Tolerance {
        rule: a.rule,
        ..Tolerance::default()
    };
    match (sa, sb) {
        (subject::Subject::Bundle(oa), subject::Subject::Bundle(ob)) => bundles(a, [&oa, &ob], &tol, fail_on),
        (subject::Subject::Other(oa), subject::Subject::Other(ob)) => import_diff::run(
            import_diff::Side {
                shown: input::shown_path(&a.a),
                format: oa.format,
                files: &oa.files,
            },
            import_diff::Side {
                shown: input::shown_path(&a.b),
                format: ob.format,
                files: &ob.files,
            },
            &tol,
            &policy(a)?,
            fail_on,
        ),
        (sa, sb) => Err(fatal(format!(
            "{} is {} and {} is {}: a bundle is compared with a bundle, a tool's run with a run of the same tool",
            input::shown_path(&a.a),
            sa.kind(),
            input::shown_path(&a.b),
            sb.kind()
        ))),
    }
}

/// Diffs two bundles.
fn bundles(
    a: &Args,
    [oa, ob]: [&bundle::Opened; 2],
    tol: &Tolerance,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    let (ba, bb) = (bundle::load(oa), bundle::load(ob));
    whole([("A", &a.a, &ba), ("B", &a.b, &bb)])?;
    let verified = [&rigaudit_audit::verify(&ba), &rigaudit_audit::verify(&bb)];
    let d = rigaudit_audit::diff::diff((&ba, &bb), verified, tol, &policy(a)?);
    let name = format!("{} vs {}", oa.manifest.id, ob.manifest.id);
    let mut report = Report::new("diff", &name, fail_on, d.found);
    report.setup_changes = d.setup;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        diff: Args,
    }

    fn fixture(rel: &str) -> String {
        format!("{}/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn a_bundle_and_a_tools_run_are_not_compared_and_say_what_each_is() {
        let (bundle, tool) = (
            fixture("runs/smollm2-cpu"),
            fixture("imports/lm-eval/clean"),
        );
        let flags = Flags::parse_from(["diff", bundle.as_str(), tool.as_str()]);
        let e = run(&flags.diff, None).err().unwrap().0;
        assert!(e.contains("smollm2-cpu is a rigaudit bundle and"), "{e}");
        assert!(e.contains("clean is lm-eval result files"), "{e}");
        let flags = Flags::parse_from(["diff", tool.as_str(), tool.as_str()]);
        let r = run(&flags.diff, None).unwrap();
        assert_eq!(r.command, "diff");
        assert_eq!(
            r.comparisons.len(),
            1,
            "one figure of the same run, compared"
        );
    }
}
