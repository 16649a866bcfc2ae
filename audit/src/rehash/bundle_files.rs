//! The bundle's own raw files against the digests its manifest records.

use super::*;

/// `rehash.bundle-file-digest`: every raw file the bundle holds against its manifest's digest.
pub(super) fn bundle_file_digests(_: &Card, m: &Measured, out: &mut Emit) -> Ran {
    let (mut matched, mut compared) = (0usize, false);
    for b in &m.bundle_files {
        let (Some(want), Some(seen)) = (&b.recorded, &b.sha256) else {
            continue;
        };
        compared = true;
        match seen {
            Err(e) => {
                out.finding(format!("{}: cannot be read: {e}", b.path))
                    .file(&b.path);
            }
            Ok(got) => {
                let r = compare_digest(want, got);
                if r.ok() {
                    matched += 1;
                } else {
                    out.finding(format!(
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
        out.info(format!(
            "{matched} raw files of the bundle match the sha256 their manifest records"
        ));
    }
    compared.then_some(())
}

/// Raw files the manifest lists as published that the bundle does not hold (`rehash.not-found`).
pub(super) fn bundle_files_not_found(m: &Measured, out: &mut Emit) {
    for b in &m.bundle_files {
        if b.recorded.is_some() && b.sha256.is_none() && b.published {
            out.warning(format!(
                "{} is listed as published but is not in the bundle, so its sha256 was not checked",
                b.path
            ))
            .file(&b.path);
        }
    }
}
