//! The rows of [`crate::imported::vllm`].

use super::Case;
use crate::imported::vllm::Run;

pub(super) fn cases() -> Vec<Case<Run>> {
    vec![]
}
