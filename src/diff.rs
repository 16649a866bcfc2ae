//! `rigaudit diff A B`: two bundles of one setup (folders or packed), the setup differences first,
//! then every figure with the statistics replay uses. The decisions are
//! [`rigaudit_audit::diff`]'s; this module reads the two bundles and builds the report.

use crate::bundle;
use crate::fatal::{fatal, Fatal};
use rigaudit_audit::diff::{SetupPolicy, Subject};
use rigaudit_audit::replay::Tolerance;
use rigaudit_audit::{Finding, Report, Severity};
use std::path::{Path, PathBuf};

/// Options of `rigaudit diff`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The first bundle (a folder with bundle.json, or .tar.gz / .tar).
    pub a: PathBuf,
    /// The second bundle.
    pub b: PathBuf,
    /// A speed move smaller than this fraction is never called moved.
    #[arg(long, default_value_t = 0.10)]
    pub rel_floor: f64,
    /// The highest tolerance floor a speed value may be judged with (a fraction).
    #[arg(long, default_value_t = 0.25)]
    pub max_floor: f64,
    /// Significance level of the tests.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
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

/// A note when a side's files could not all be read: its figures may then be missing.
fn unreadable(side: &str, path: &Path, r: &bundle::ReadBundle) -> Option<Finding> {
    let bad = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    (bad > 0).then(|| {
        Finding::new(
            "diff.not-comparable",
            Severity::Warning,
            format!(
                "{side} ({}): {bad} file problem(s) (run `rigaudit verify` on it); what they hold is not compared",
                path.display()
            ),
        )
    })
}

/// Diffs two bundles. `Err` when either cannot be read at all (exit 2).
pub fn run(a: &Args, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let (oa, ob) = (bundle::open(&a.a)?, bundle::open(&a.b)?);
    let (ra, rb) = (bundle::load(&oa), bundle::load(&ob));
    let tol = Tolerance {
        rel_floor: a.rel_floor,
        alpha: a.alpha,
        max_floor: a.max_floor,
        ..Tolerance::default()
    };
    let d = rigaudit_audit::diff::diff(&ra.bundle, &rb.bundle, &tol, &policy(a)?);
    let mut findings: Vec<Finding> = [unreadable("A", &a.a, &ra), unreadable("B", &a.b, &rb)]
        .into_iter()
        .flatten()
        .collect();
    findings.extend(d.findings);
    let compared = !d.rows.is_empty() || ra.bundle.card.is_some() && rb.bundle.card.is_some();
    let ran = if compared { d.checks_run } else { Vec::new() };
    let name = format!("{} vs {}", oa.manifest.id, ob.manifest.id);
    let mut report =
        Report::new("diff", &name, fail_on, ran, Vec::new(), findings).with_comparisons(d.rows);
    report.setup_changes = d.setup;
    Ok(report)
}
