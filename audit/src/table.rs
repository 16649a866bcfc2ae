//! The table of every check, read by the runner ([`crate::verify()`]), `rigaudit checks` and the
//! SARIF rules alike.
//!
//! Each family keeps its rows in its own module (`speed::CHECKS` in `speed.rs`, ...); a check id
//! names its family, so the id leads to its row and the row to its function. Adding a check is
//! one row and one function in the family's file.

use crate::bundle::{Bundle, Out};
use crate::check::{about, About, Check};
use crate::{claims, consistency, diff, fit, quality, rehash, replay, schema, setup, speed};

/// The bundle families `verify` runs over the whole bundle, in the order it runs them (after
/// `schema` over each file and `quality` over each test).
pub const BUNDLE: &[&[Check<crate::bundle::Run>]] = &[
    speed::CHECKS,
    setup::CHECKS,
    fit::CHECKS,
    claims::CHECKS,
    consistency::counts::CHECKS,
    consistency::window::CHECKS,
    consistency::excluded::CHECKS,
    consistency::impossible::CHECKS,
    consistency::backing::CHECKS,
    consistency::provenance::CHECKS,
];

/// Migration only: a family written in the earlier shape, its catalogue rows beside the one
/// function that reports them through [`Out`]. `verify` runs it after the bundle families.
pub struct Legacy {
    /// Its catalogue rows.
    pub checks: &'static [About],
    /// The function that runs them all.
    pub run: fn(&Bundle, &mut Out),
}

/// Migration only: families in the earlier shape, until they are rewritten as rows.
pub const LEGACY: &[Legacy] = &[];

/// Every check rigaudit knows, in catalogue order: schema, quality, speed, setup, fit, claims,
/// families in the earlier shape, rehash, replay.
pub fn all() -> Vec<About> {
    let mut v: Vec<About> = about(schema::CHECKS).collect();
    v.extend(about(quality::CHECKS));
    for t in BUNDLE {
        v.extend(about(t));
    }
    for l in LEGACY {
        v.extend(l.checks.iter().copied());
    }
    v.extend(about(rehash::CHECKS));
    v.extend(about(replay::CHECKS));
    v.extend(about(diff::CHECKS));
    v.extend(crate::imported::CHECKS.iter().copied());
    v
}

/// Looks a check up by id.
pub fn find(id: &str) -> Option<About> {
    all().into_iter().find(|c| c.id == id)
}
