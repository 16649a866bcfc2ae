//! `rigaudit diff A B` of two runs of another tool (each a folder or file of its results, or a
//! bundle `rigaudit import` wrote): the tool's settings side by side, then every figure both give
//! with the statistics of `rigaudit_audit::imported::compare`.

use super::{Format, Imported};
use crate::fatal::{fatal, Fatal};
use crate::input;
use rigaudit_audit::imported::compare::{compare, Side};
use rigaudit_audit::replay::Tolerance;
use rigaudit_audit::{Report, Severity};
use std::path::{Path, PathBuf};

/// Whether a path is a bundle `rigaudit import` wrote.
fn imported_bundle(p: &Path) -> bool {
    p.is_dir() && p.join("bundle.json").is_file() && p.join("import.json").is_file()
}

/// Whether `diff` is about other tools' files: `--from` given, or a side that is not a plain
/// bundle.
pub fn applies(a: &crate::diff::Args) -> bool {
    let other = |p: &Path| imported_bundle(p) || (p.exists() && !super::is_bundle(p));
    a.from.is_some() || other(&a.a) || other(&a.b)
}

/// Reads one side: an imported bundle's sources, or the files themselves.
fn side(path: &Path, from: Option<Format>) -> Result<(Format, Imported), Fatal> {
    if !imported_bundle(path) {
        let (f, _, imp) = super::load(from, &[path.to_path_buf()])?;
        return Ok((f, imp));
    }
    let rec_path = path.join("import.json");
    let rec = super::read_import_record(path)?;
    let mut files: Vec<PathBuf> = Vec::new();
    for (i, s) in rec
        .get("sources")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = s.get("path").and_then(|v| v.as_str()).unwrap_or("");
        files.push(input::inside(path, p).map_err(|m| {
            fatal(format!(
                "{}: at /sources/{i}/path: {m}",
                input::shown_path(&rec_path)
            ))
        })?);
    }
    let named = rec
        .get("from")
        .and_then(|v| v.as_str())
        .and_then(Format::parse);
    let (f, _, imp) = super::load(from.or(named), &files)?;
    Ok((f, imp))
}

/// Diffs two runs of one tool. `Err` when a side cannot be read or the two are of other tools.
pub fn run(a: &crate::diff::Args, fail_on: Option<Severity>) -> Result<Report, Fatal> {
    let (fa, ia) = side(&a.a, a.from)?;
    let (fb, ib) = side(&a.b, a.from)?;
    if fa != fb {
        return Err(fatal(format!(
            "{} is {} and {} is {}: runs of two tools are not compared",
            input::shown_path(&a.a),
            fa.name(),
            input::shown_path(&a.b),
            fb.name()
        )));
    }
    let tol = Tolerance {
        rel_floor: a.rel_floor,
        alpha: a.alpha,
        max_floor: a.max_floor,
        ..Tolerance::default()
    };
    let policy = crate::diff::policy(a)?;
    let sa = Side {
        series: &ia.series,
        settings: &ia.settings,
    };
    let sb = Side {
        series: &ib.series,
        settings: &ib.settings,
    };
    let d = compare(sa, sb, &tol, &policy);
    let name = format!("{} vs {}", input::shown_path(&a.a), input::shown_path(&a.b));
    let mut report = Report::new("diff", &name, fail_on, d.found);
    report.setup_changes = d.setup;
    Ok(report)
}
