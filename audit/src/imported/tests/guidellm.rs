//! The rows of [`crate::imported::guidellm`].

use super::Case;
use crate::imported::guidellm::Report;

pub(super) fn cases() -> Vec<Case<Report>> {
    vec![]
}
