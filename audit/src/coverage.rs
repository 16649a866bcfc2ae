//! What a run could not check. Its one row, `coverage.incomplete`, is the finding every
//! incomplete report carries: [`crate::Report::new`], which alone decides the verdict, adds it
//! with the reason the run is incomplete (what is missing and what to add), so a reader of any
//! format (the findings of JSON, a SARIF result, an annotation) sees why nothing or not everything
//! was checked. The id is written once, in [`crate::report::INCOMPLETE`], which the report model
//! (below the families) uses.

use crate::check::{Check, Stage, Staged};
use crate::report::Severity;

/// What decides the row: the report model, when it decides the verdict.
const BY_REPORT: Staged = Staged("report");

/// `coverage.incomplete`.
pub const INCOMPLETE: Check<Staged> = Check {
    id: crate::report::INCOMPLETE,
    severity: Severity::Warning,
    doc: "The run could not check everything it was asked to: the finding says what is missing and what to add.",
    run: BY_REPORT,
};

/// Every row of the family.
pub const CHECKS: &[Check<Staged>] = &[INCOMPLETE];

/// The report model's decision of the verdict, as the stage that declares the row.
pub const REPORT: Stage = Stage {
    name: BY_REPORT.0,
    rows: &[INCOMPLETE.about()],
};
