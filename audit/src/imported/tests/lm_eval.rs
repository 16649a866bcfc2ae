//! The rows of [`crate::imported::lm_eval`].

use super::Case;
use crate::imported::lm_eval::Results;

pub(super) fn cases() -> Vec<Case<Results>> {
    vec![]
}
