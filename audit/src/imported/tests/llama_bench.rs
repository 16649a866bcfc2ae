//! The rows of [`crate::imported::llama_bench`].

use super::Case;
use crate::imported::llama_bench::Bench;

pub(super) fn cases() -> Vec<Case<Bench>> {
    vec![]
}
