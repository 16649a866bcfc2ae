//! The rows of [`crate::imported::llama_server`].

use super::Case;
use crate::imported::llama_server::Responses;

pub(super) fn cases() -> Vec<Case<Responses>> {
    vec![]
}
