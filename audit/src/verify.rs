//! [`verify`]: every bundle check of the table over a parsed bundle.

use crate::bundle::Bundle;
use crate::report::Findings;
use crate::table::BUNDLE;
use crate::{quality, schema};

/// Runs every bundle check: `schema` over each file, `quality` over each test, then the other
/// families of [`BUNDLE`]. A bundle with no record a content check reads
/// ([`Bundle::has_records`]) checked nothing: no check counts as run and the result is incomplete.
pub fn verify(b: &Bundle) -> Findings {
    let mut files = Findings::default();
    schema::run(b, &mut files);
    let mut content = Findings::default();
    quality::run(b, &mut content);
    for table in BUNDLE {
        for c in *table {
            content.check(c, |run, e| run(b, e));
        }
    }
    files.merge(content);
    if !b.has_records() {
        schema::nothing_checked(&mut files);
    }
    files
}
