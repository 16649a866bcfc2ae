//! `setup.*` checks.

use crate::bundle::{Bundle, Out};
use crate::catalogue::Check;

/// `setup.*` checks.
pub const CHECKS: &[Check] = &[];

pub(crate) fn check(_b: &Bundle, _out: &mut Out) {}
