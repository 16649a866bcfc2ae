//! The bundle's own raw files against the digests its manifest records.

use super::*;

pub(super) fn check_bundle_files(_: &Card, m: &Measured, out: &mut StageOut) {
    let mut matched = 0usize;
    for b in &m.bundle_files {
        let Some(want) = &b.recorded else { continue };
        match &b.sha256 {
            None if b.published => {
                out.row(&NOT_FOUND)
                    .warning(format!("{} is listed as published but is not in the bundle, so its sha256 was not checked", b.path))
                    .file(&b.path);
            }
            None => {}
            Some(Err(e)) => {
                out.decided(&BUNDLE_FILE_DIGEST);
                out.row(&BUNDLE_FILE_DIGEST)
                    .finding(format!("{}: cannot be read: {e}", b.path))
                    .file(&b.path);
            }
            Some(Ok(got)) => {
                out.decided(&BUNDLE_FILE_DIGEST);
                let r = compare_digest(want, got);
                if r.ok() {
                    matched += 1;
                } else {
                    out.row(&BUNDLE_FILE_DIGEST)
                        .finding(format!(
                            "{}: sha256 is {got}, the manifest records {want} ({})",
                            b.path,
                            r.describe()
                        ))
                        .file(&b.path)
                        .data(json!({"recorded": want, "computed": got}));
                }
            }
        }
    }
    if matched > 0 {
        out.row(&BUNDLE_FILE_DIGEST).info(format!(
            "{matched} raw files of the bundle match the sha256 their manifest records"
        ));
    }
}
