//! Migration only: the catalogue row in the earlier shape.
//!
//! Checks written before the table (`pub const CHECKS: &[catalogue::Check] = &[Check { id,
//! severity, doc }]` beside a `fn check_x(b: &Bundle, out: &mut Out)`) keep compiling:
//! `catalogue::Check` is [`crate::check::About`], and such a slice is listed with its function in
//! [`crate::table::LEGACY`]. The catalogue itself is [`crate::table::all`]; new checks are
//! [`crate::check::Check`] rows in their family's table.

pub use crate::check::About as Check;
