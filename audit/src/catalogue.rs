//! The catalogue's version, and the row type of checks in the earlier shape (migration only).
//!
//! Checks written before the table (`pub const CHECKS: &[catalogue::Check] = &[Check { id,
//! severity, doc }]` beside a `fn check_x(b: &Bundle, out: &mut Out)`) keep compiling:
//! `catalogue::Check` is [`crate::check::About`], and such a slice is listed with its function in
//! [`crate::table::LEGACY`]. The catalogue itself is [`crate::table::all`]; new checks are
//! [`crate::check::Check`] rows in their family's table.

pub use crate::check::About as Check;

/// The rules' version: the crate version and a digest (FNV-1a, 32 bits) of every check's id,
/// severity and doc, so a report names the exact catalogue it was judged by and a page that passed
/// under one catalogue can be re-checked under it.
pub fn version() -> String {
    let mut h: u32 = 0x811c_9dc5;
    for c in crate::table::all() {
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
