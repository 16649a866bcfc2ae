//! rigaudit's checks: pure functions from parsed benchmark records to findings.
//!
//! Nothing here reads a file, opens a socket or starts a process. The CLI parses a bundle, validates
//! it against `schemas/`, builds a [`Bundle`] of typed records and hands it to [`verify`], which
//! returns findings and recomputed values for the one [`report::Report`] model.

pub mod catalogue;
pub mod claims;
pub mod consistency;
pub mod diff;
pub mod fit;
pub mod imported;
pub mod policy;
pub mod quality;
pub mod records;
pub mod rehash;
pub mod replay;
pub mod report;
pub mod schema;
pub mod setup;
pub mod speed;
pub mod startline;
pub mod stats;

pub mod bundle;
pub use bundle::{verify, Bundle, QualityTest, Verified};
pub use replay::{Compared, Comparison, ReplayVerdict, Tolerance};
pub use report::{Finding, Recomputed, Report, Severity, Verdict};
