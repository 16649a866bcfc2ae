//! Checks that a bundle's records are consistent with what its contracts, start line and
//! manifest state, so that a lie kept internally consistent (every dependent figure recomputed,
//! the digests rewritten) is still caught: records counted against the contract, windows against
//! what was answered and refused, `excluded` against the answers, scoring rules against the marks,
//! the load guard against the steps, impossible records, figures with no measurement behind them,
//! and the engine build and the sessions' times.
//!
//! Each file holds one subject and the functions `check_*(b, emit)` of its checks; each check's
//! row sits in the table of the family its id names (`speed.runs-mismatch` is
//! `speed::RUNS_MISMATCH`, in `speed::ACROSS_FILES`), and `table::ACROSS_FILES` gives the order
//! `verify` runs them in. What reports under an existing id of another family lives with that family:
//! the guard's summary and coverage in `speed/guard.rs` (`speed.load-guard`), cut-off answers
//! marked right in `quality/scoring.rs` (`quality.scoring-disagrees`), refusal windows and the
//! engine build in `setup/refusals.rs` and `setup/build.rs` (`setup.window-mismatch`,
//! `setup.version-mismatch`).

pub mod backing;
pub mod counts;
pub mod excluded;
pub mod impossible;
pub mod provenance;
pub mod window;

#[cfg(test)]
mod tests;
