//! Checks that a bundle's records are consistent with what its contracts, start line and
//! manifest state, so that a lie kept internally consistent (every dependent figure recomputed,
//! the digests rewritten) is still caught: records counted against the contract, windows against
//! what was answered and refused, `excluded` against the answers, scoring rules against the marks,
//! the load guard against the steps, impossible records, figures with no measurement behind them,
//! and the engine build and the sessions' times.
//!
//! Each file holds one subject; each check is one row of that file's `CHECKS` and one function
//! `check_*(b, emit)`. What reports under an existing id of another family lives with that family:
//! the guard's summary and coverage in `speed/guard.rs` (`speed.load-guard`), cut-off answers
//! marked right in `quality/scoring.rs` (`quality.scoring-disagrees`), refusal windows and the
//! engine build in `setup/refusals.rs` and `setup/build.rs` (`setup.window-mismatch`,
//! `setup.version-mismatch`).

use crate::bundle::Run;
use crate::check::Check;

pub mod backing;
pub mod counts;
pub mod excluded;
pub mod impossible;
pub mod provenance;
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

#[cfg(test)]
mod tests;
