//! The contract's scoring rules enforced on the marks: where the contract says a cut-off answer
//! (finish reason `length`) counts as wrong, no cut-off answer may be marked right.
//!
//! Reports under `quality.scoring-disagrees` (quality.rs).

use crate::bundle::QualityTest;
use crate::check::{Emit, Ran};

/// `quality.scoring-disagrees` (quality.rs): cut-off answers marked right against the contract.
pub(crate) fn check_cutoffs_marked_right(t: &QualityTest, e: &mut Emit) -> Ran {
    let (Some(c), Some(a)) = (&t.contract, &t.answers) else {
        return None;
    };
    if !c.value.cutoff_counts_as_wrong {
        return None;
    }
    let (n, line) = a.value.cutoffs_right;
    if n > 0 {
        let line = line.unwrap_or(0);
        e.finding(format!(
            "{}: {n} answers cut off at their limit are marked right (first at line {line}), but the contract counts a cut-off answer as wrong",
            t.test
        ))
        .file(&a.path)
        .pointer(format!("line {line}"));
    }
    Some(())
}
