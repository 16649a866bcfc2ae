//! Checks that a bundle's records are consistent with what its contracts, start line and
//! manifest state, so that a lie kept internally consistent (every dependent figure recomputed,
//! the digests rewritten) is still caught: records counted against the contract, windows against
//! what was answered and refused, `excluded` against the answers, scoring rules against the marks,
//! the load guard against the steps, impossible records, figures with no measurement behind them,
//! and the engine build and the sessions' times.
//!
//! Each file holds one subject; each check is one function `check_*(b, out)` whose id, severity
//! and doc are in that file's `CHECKS` (a function that reports under an existing id of another
//! module says so in its doc, and has no row here).

use crate::bundle::{Bundle, Out};
use crate::catalogue::Check;

pub mod backing;
pub mod counts;
pub mod excluded;
pub mod guard;
pub mod impossible;
pub mod provenance;
pub mod scoring;
pub mod window;

/// The `CHECKS` of every file, in catalogue order.
pub const LISTS: &[&[Check]] = &[
    counts::CHECKS,
    window::CHECKS,
    excluded::CHECKS,
    impossible::CHECKS,
    backing::CHECKS,
    provenance::CHECKS,
];

/// Runs every consistency check.
pub(crate) fn check(b: &Bundle, out: &mut Out) {
    counts::check_speed_runs(b, out);
    counts::check_prompt_sizes(b, out);
    counts::check_questions(b, out);
    counts::check_fit_fill(b, out);
    window::check_answered_speed(b, out);
    window::check_answered_quality(b, out);
    window::check_refusal_windows(b, out);
    window::check_refusals_that_fit(b, out);
    excluded::check_excluded(b, out);
    scoring::check_cutoffs_marked_right(b, out);
    guard::check_guard_present(b, out);
    guard::check_guard_coverage(b, out);
    impossible::check_speed_records(b, out);
    impossible::check_quality_records(b, out);
    backing::check_no_measurement(b, out);
    backing::check_unbacked(b, out);
    provenance::check_engine_build(b, out);
    provenance::check_sessions_overlap(b, out);
    provenance::check_inside_session(b, out);
}

/// Up to `n` items joined with ", ", with "and N more" when there are more.
pub(crate) fn list<T: std::fmt::Display>(items: &[T], n: usize) -> String {
    let mut s = items
        .iter()
        .take(n)
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > n {
        s.push_str(&format!(" and {} more", items.len() - n));
    }
    s
}

#[cfg(test)]
mod tests;
