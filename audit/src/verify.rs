//! [`verify`]: every bundle check of the table over a parsed bundle.

use crate::bundle::{Bundle, Out};
use crate::report::Findings;
use crate::table::{Legacy, BUNDLE, LEGACY};
use crate::{quality, schema};

/// Runs every bundle check: `schema` over each file, `quality` over each test, then the other
/// families of [`BUNDLE`] and those of [`LEGACY`]. A bundle with no record a content check reads
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
    for l in LEGACY {
        run_legacy(l, b, &mut content);
    }
    files.merge(content);
    if !b.has_records() {
        schema::nothing_checked(&mut files);
    }
    files
}

/// Migration only: runs a family in the earlier shape through the [`Out`] adapter.
fn run_legacy(l: &Legacy, b: &Bundle, into: &mut Findings) {
    let mut out = Out::default();
    (l.run)(b, &mut out);
    into.merge(out.0);
}

#[cfg(test)]
mod tests {
    //! A check written in the earlier shape, as parallel branches add them, still compiles and
    //! still works through the migration path.
    use super::*;
    use crate::bundle::{Bundle, Out};
    use crate::catalogue::Check;
    use crate::records::Manifest;
    use crate::report::{Finding, Recomputed, Severity};

    const CHECKS: &[Check] = &[Check {
        id: "consistency.example",
        severity: Severity::Warning,
        doc: "An example in the earlier shape.",
    }];

    fn check_example(b: &Bundle, out: &mut Out) {
        out.ran("consistency.example");
        out.push(
            Finding::new("consistency.example", Severity::Warning, "found")
                .file("bundle.json")
                .pointer(format!("/id/{}", b.manifest.id.len())),
        );
        out.recomputed.push(Recomputed {
            key: "example".into(),
            value: Some(1.0),
            file: None,
            page: None,
        });
    }

    #[test]
    fn a_legacy_check_runs_through_the_adapter() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "format": "rigaudit-bundle/1", "id": "x", "title": "x", "files": [],
            "setup": {"engine": "e", "checkpoint": "c", "hardware": "h"}
        }))
        .unwrap();
        let b = Bundle::new(manifest);
        let legacy = Legacy {
            checks: CHECKS,
            run: check_example,
        };
        let mut found = Findings::default();
        run_legacy(&legacy, &b, &mut found);
        assert_eq!(found.ran, vec!["consistency.example".to_string()]);
        assert_eq!(found.findings.len(), 1);
        assert_eq!(found.findings[0].check, "consistency.example");
        assert_eq!(found.recomputed.len(), 1);
        assert_eq!(legacy.checks[0].id, "consistency.example");
    }
}
