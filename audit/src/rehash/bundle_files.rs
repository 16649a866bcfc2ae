//! The bundle's own raw files against the digests its manifest records.

use super::*;

pub(super) fn check_bundle_files(_: &Card, m: &Measured, out: &mut Findings) {
    let mut matched = 0usize;
    for b in &m.bundle_files {
        let Some(want) = &b.recorded else { continue };
        match &b.sha256 {
            None if b.published => out.findings.push(
                Finding::new(NOT_FOUND.id,
                    Severity::Warning,
                    format!("{} is listed as published but is not in the bundle, so its sha256 was not checked", b.path),
                )
                .file(&b.path),
            ),
            None => {}
            Some(Err(e)) => {
                out.mark_ran(&BUNDLE_FILE_DIGEST);
                out.findings.push(
                    Finding::new(BUNDLE_FILE_DIGEST.id, Severity::Error, format!("{}: cannot be read: {e}", b.path)).file(&b.path),
                )
            }
            Some(Ok(got)) => {
                out.mark_ran(&BUNDLE_FILE_DIGEST);
                let r = compare_digest(want, got);
                if r.ok() {
                    matched += 1;
                } else {
                    out.findings.push(
                        Finding::new(BUNDLE_FILE_DIGEST.id,
                            Severity::Error,
                            format!("{}: sha256 is {got}, the manifest records {want} ({})", b.path, r.describe()),
                        )
                        .file(&b.path)
                        .data(json!({"recorded": want, "computed": got})),
                    );
                }
            }
        }
    }
    if matched > 0 {
        out.findings.push(Finding::new(
            BUNDLE_FILE_DIGEST.id,
            Severity::Info,
            format!("{matched} raw files of the bundle match the sha256 their manifest records"),
        ));
    }
}
