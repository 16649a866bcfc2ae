//! Checks that a bundle's records are consistent with what its contracts, start line and
//! manifest state, so that a lie kept internally consistent (every dependent figure recomputed,
//! the digests rewritten) is still caught: records counted against the contract, windows against
//! what was answered and refused, `excluded` against the answers, scoring rules against the marks,
//! the load guard against the steps, impossible records, figures with no measurement behind them,
//! and the engine build and the sessions' times.
//!
//! Each file holds one subject; each check is one row of that file's `CHECKS` and one function
//! `check_*(b, emit)`. A function that reports under an existing id of another family says so in
//! its doc, has no row here, and is called by that id's row (`speed.load-guard` in speed.rs,
//! `quality.scoring-disagrees` in quality.rs, `setup.window-mismatch` and
//! `setup.version-mismatch` in setup.rs).

use crate::bundle::Run;
use crate::check::Check;

pub mod backing;
pub mod counts;
pub mod excluded;
pub mod guard;
pub mod impossible;
pub mod provenance;
pub mod scoring;
pub mod window;

/// The `CHECKS` of every file, in catalogue order.
pub const LISTS: &[&[Check<Run>]] = &[
    counts::CHECKS,
    window::CHECKS,
    excluded::CHECKS,
    impossible::CHECKS,
    backing::CHECKS,
    provenance::CHECKS,
];

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
