//! The catalogue of checks: every id, its severity and its one-line doc.
//!
//! A check's id names its module: `quality.cutoffs` lives in `quality.rs`, `schema.invalid` in
//! `schema.rs`, and so on. Each module exports its own `CHECKS`; this module only gathers them.

use crate::report::Severity;

/// One check of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// Stable id, `area.name`.
    pub id: &'static str,
    /// The highest severity it reports.
    pub severity: Severity,
    /// One line on what it finds.
    pub doc: &'static str,
}

/// Every check rigaudit knows, in catalogue order.
pub fn all() -> Vec<&'static Check> {
    let mut v: Vec<&'static Check> = Vec::new();
    for list in [
        crate::schema::CHECKS,
        crate::quality::CHECKS,
        crate::speed::CHECKS,
        crate::setup::CHECKS,
        crate::fit::CHECKS,
        crate::claims::CHECKS,
        crate::rehash::CHECKS,
        crate::replay::CHECKS,
        crate::diff::CHECKS,
        crate::imported::CHECKS,
    ] {
        v.extend(list.iter());
    }
    for list in crate::consistency::LISTS {
        v.extend(list.iter());
    }
    v
}

/// Looks a check up by id.
pub fn find(id: &str) -> Option<&'static Check> {
    all().into_iter().find(|c| c.id == id)
}

/// The rules' version: the crate version and a digest (FNV-1a, 32 bits) of every check's id,
/// severity and doc, so a report names the exact catalogue it was judged by and a page that passed
/// under one catalogue can be re-checked under it.
pub fn version() -> String {
    let mut h: u32 = 0x811c_9dc5;
    for c in all() {
        for b in
            c.id.bytes()
                .chain(c.severity.name().bytes())
                .chain(c.doc.bytes())
                .chain([0u8])
        {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    format!("{}+{h:08x}", env!("CARGO_PKG_VERSION"))
}
