//! `rigaudit diff A B` of two runs of another tool (each a folder or file of its results, or a
//! bundle `rigaudit import` wrote, opened as such by `crate::subject`): the tool's settings side
//! by side, then every figure both give with the statistics of
//! `rigaudit_audit::imported::compare`, each side's validity findings (what `verify` of it says)
//! carried and marking the rows they touch (`rigaudit_audit::diff::validity`).

use super::Format;
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::diff::SetupPolicy;
use rigaudit_audit::imported::compare::{compare, Side as Compared};
use rigaudit_audit::replay::Tolerance;
use rigaudit_audit::{Report, Severity};
use std::path::PathBuf;

/// One side of the diff: a run of a tool, its format known.
pub struct Side<'a> {
    /// The path given, as shown.
    pub shown: String,
    /// The tool.
    pub format: Format,
    /// Its result files (an imported bundle's copied sources, or the files given).
    pub files: &'a [PathBuf],
}

/// Diffs two runs of one tool. `Err` when a side cannot be read or the two are of other tools.
pub fn run(
    a: Side,
    b: Side,
    tol: &Tolerance,
    policy: &SetupPolicy,
    fail_on: Option<Severity>,
) -> Result<Report, Fatal> {
    if a.format != b.format {
        return Err(fatal(format!(
            "{} is {} and {} is {}: runs of two tools are not compared",
            a.shown,
            a.format.name(),
            b.shown,
            b.format.name()
        )));
    }
    let side = |name: &str, e: Fatal| fatal(format!("side {name}: {}", e.0));
    let (_, _, ia) = super::load(Some(a.format), a.files).map_err(|e| side("A", e))?;
    let (_, _, ib) = super::load(Some(b.format), b.files).map_err(|e| side("B", e))?;
    let sa = Compared {
        series: &ia.series,
        settings: &ia.settings,
        found: &ia.found,
    };
    let sb = Compared {
        series: &ib.series,
        settings: &ib.settings,
        found: &ib.found,
    };
    let d = compare(sa, sb, tol, policy);
    let name = format!("{} vs {}", a.shown, b.shown);
    let mut report = Report::new("diff", &name, fail_on, d.found);
    report.setup_changes = d.setup;
    Ok(report)
}
