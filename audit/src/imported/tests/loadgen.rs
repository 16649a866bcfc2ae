//! The rows of [`crate::imported::loadgen`].

use super::Case;
use crate::imported::loadgen::Logs;

pub(super) fn cases() -> Vec<Case<Logs>> {
    vec![]
}
