//! `excluded` is earned: a summary may leave out of its total only the requests that got no
//! answer (refused or failed), and with an answers file present those are the records it shows as
//! not answered. More excluded than that means answered (wrong) answers were moved out of the
//! total, which raises the percentage. (Fewer is `quality.refused-counted-as-wrong`.)

use crate::bundle::Bundle;
use crate::check::{Emit, Ran};
use serde_json::json;

/// `quality.excluded-unearned`: a summary's `excluded` against the unanswered records.
pub(crate) fn check_excluded(b: &Bundle, e: &mut Emit) -> Ran {
    let mut ran = None;
    for t in &b.quality {
        let (Some(s), Some(a)) = (&t.summary, &t.answers) else {
            continue;
        };
        let Some(x) = s.value.excluded else { continue };
        ran = Some(());
        let refused = a.value.refused();
        if x > refused {
            e.finding(
                    format!(
                        "{}: the summary excludes {x} requests, but the answers file shows only {refused} not answered: {} answered answers were left out of the total",
                        t.test,
                        x - refused
                    ),
                )
                .file(&s.path)
                .pointer("/excluded")
                .data(json!({"excluded": x, "not_answered": refused}));
        }
    }
    ran
}
