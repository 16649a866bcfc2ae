//! rigaudit's checks: pure functions from parsed benchmark records to findings.
//!
//! Nothing here reads a file, opens a socket or starts a process. The CLI parses a bundle, validates
//! it against `schemas/`, builds a [`Bundle`] of typed records (and of what it saw of each file)
//! and hands it to [`verify()`], which returns [`Findings`] for the one [`Report`] model.
//!
//! Layers, each importing only those below it:
//! - ground: [`records`], [`report`] (the report model and the [`Findings`] collector),
//!   [`verdict`] (a replay's comparison rows), [`check`] ([`Check`] rows, the [`check::Emit`]ter),
//!   [`stats`], [`startline`] (what servers print, a command line's flags), [`figures`] (a speed
//!   result's figures recomputed from its records), and [`catalogue`] (its version);
//! - [`bundle`]: the parsed bundle;
//! - the check families, each with its table of rows: [`schema`], [`quality`], [`speed`],
//!   [`setup`], [`fit`], [`claims`], [`rehash`], [`loaded`], [`replay`], [`diff`], [`noise`], [`imported`],
//!   [`coverage`]
//!   (the finding of an incomplete report, which the report model adds); the rows
//!   that read across a bundle's files sit in their families' tables, their functions in
//!   [`consistency`], which imports no family;
//! - on top: [`table`] (every family's rows: the catalogue), [`headline`] (what a report says
//!   first) and [`verify()`].

pub mod ab;
pub mod advice;
pub mod catalogue;
pub mod check;
pub mod claims;
pub mod consistency;
pub mod coverage;
pub mod decide;
pub mod diff;
pub mod figures;
pub mod fit;
pub mod headline;
pub mod imported;
pub mod loaded;
pub mod noise;
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
pub mod table;
pub mod verdict;
pub mod verify;

#[cfg(test)]
mod asserts;
#[cfg(test)]
mod testkit;

pub mod bundle;
pub use bundle::{Bundle, QualityTest};
pub use check::{Check, Ran};
pub use replay::Tolerance;
pub use report::{Finding, Findings, Recomputed, Report, Severity, Verdict};
pub use verdict::{Comparison, Inconclusive, ReplayVerdict};
pub use verify::verify;
