//! `claims.*` checks.

use crate::bundle::{Bundle, Out};
use crate::catalogue::Check;

/// `claims.*` checks.
pub const CHECKS: &[Check] = &[];

pub(crate) fn check(_b: &Bundle, _out: &mut Out) {}
