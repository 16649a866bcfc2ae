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

/// A family's rows whose functions read across a bundle's files (subject files under
/// `consistency/`), one a line: `NAME: "id", Severity, subject::function, "doc";`. Each becomes
/// `pub const NAME: Check<Run>`, its doc naming its id and subject file, and the family's
/// `ACROSS_FILES` lists them in the order written.
macro_rules! across_files {
    ($family:literal: $($name:ident: $id:literal, $severity:ident, $subject:ident::$function:ident, $doc:literal;)+) => {
        $(
            #[doc = concat!("`", $id, "` (its function reads across files: `consistency/", stringify!($subject), ".rs`).")]
            pub const $name: $crate::check::Check<$crate::bundle::Run> = $crate::check::Check {
                id: $id,
                severity: $crate::report::Severity::$severity,
                doc: $doc,
                run: $crate::consistency::$subject::$function,
            };
        )+

        #[doc = concat!("`", $family, ".*` rows whose functions compare a bundle's files with each other (subject files under `consistency/`); `verify` runs them in `table::ACROSS_FILES`' order.")]
        pub const ACROSS_FILES: &[$crate::check::Check<$crate::bundle::Run>] = &[$($name),+];
    };
}
pub(crate) use across_files;

#[cfg(test)]
mod tests;
