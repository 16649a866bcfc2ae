//! `rigaudit noise BUNDLE`: the smallest difference each figure of a page could show, from the
//! page's own repeated runs; nothing is launched or fetched. The numbers are
//! [`rigaudit_audit::noise`]'s; this module opens the bundle (a folder or packed) and builds the
//! report.

use crate::bundle;
use crate::diff::unread_files;
use crate::fatal::{fatal, Fatal};
use crate::input;
use crate::subject::looks_like_bundle;
use rigaudit_audit::{Report, Severity};
use std::path::{Path, PathBuf};

/// Options of `rigaudit noise`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// A bundle folder (with bundle.json) or a packed bundle (.tar.gz, .tar).
    pub bundle: PathBuf,
    /// The decision rule whose session spreads and quality band the figures are told with (the
    /// policy's `[decide]`; its defaults without one).
    #[arg(skip)]
    pub rule: rigaudit_audit::decide::DecisionRule,
}

/// Opens `path` as a bundle: `Err` (exit 2) naming the path when it is none (another tool's file,
/// a file inside a bundle or its manifest given for its folder, an archive rigaudit does not
/// unpack, a missing path).
fn opened(path: &Path) -> Result<bundle::Opened, Fatal> {
    if let Some(e) = bundle::manifest_given(path) {
        return Err(e);
    }
    if let Some(e) = crate::advice::archive(path) {
        return Err(e);
    }
    if path.exists() && !looks_like_bundle(path) {
        if let Some(e) = crate::advice::undetected(&[path.to_path_buf()]) {
            return Err(e);
        }
        return Err(fatal(format!(
            "{}: not a rigaudit bundle (a folder with bundle.json, or a .tar.gz / .tar of one); noise reads a bundle's own runs",
            input::shown_path(path)
        )));
    }
    bundle::open(path)
}

/// `Err` (exit 2) when a file noise reads cannot be read whole: a figure would be told from what
/// is left, or said to have no records when they are there but broken.
fn whole(path: &Path, b: &rigaudit_audit::Bundle) -> Result<(), Fatal> {
    let bad = unread_files(b);
    if bad.is_empty() {
        return Ok(());
    }
    let mut msg = format!(
        "{} cannot be read whole: {} file problem(s); no noise is told (run `rigaudit verify` on it):",
        input::shown_path(path),
        bad.len()
    );
    for line in bad.iter().take(10) {
        msg.push_str(&format!("\n  {line}"));
    }
    if bad.len() > 10 {
        msg.push_str(&format!("\n  and {} more", bad.len() - 10));
    }
    Err(fatal(msg))
}

/// The report of one bundle's noise: a finding per figure, the rows in `noise`.
pub fn run(a: &Args, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let o = opened(&a.bundle)?;
    let b = bundle::load(&o);
    whole(&a.bundle, &b)?;
    let n = rigaudit_audit::noise::noise(&b, &a.rule);
    let mut report = Report::new("noise", &o.manifest.id, fail_on, n.found);
    report.noise = n.rows;
    Ok(report)
}
