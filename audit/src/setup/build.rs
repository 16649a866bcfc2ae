//! `setup.version-mismatch`, its part from the start line: the engine build the server printed
//! (`startline::start_build`) against the commit the card records.

use crate::bundle::Bundle;
use crate::check::{Emit, Ran};

/// `setup.version-mismatch` (setup.rs): the start line's build hash against the card's commit.
pub(crate) fn check_engine_build(b: &Bundle, e: &mut Emit) -> Ran {
    let (Some(card), Some(r)) = (&b.card, &b.speed_result) else {
        return None;
    };
    let commit = card.value.engine.commit.as_deref().map(str::to_lowercase)?;
    let build = crate::startline::start_build(&r.value.server.start_lines)?;
    if !(commit.starts_with(&build) || build.starts_with(&commit)) {
        e.finding(
                format!(
                    "the card says {} was built from commit {commit}, but the start line names build {build}",
                    card.value.engine.name
                ),
            )
            .file(&card.path)
            .pointer("/engine/commit");
    }
    Some(())
}
