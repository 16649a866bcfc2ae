//! The member reader of `rehash`: any bytes as an engine package (the first byte picks zip, tar or
//! tar.gz), its own digest and the digest of the member the card names, with the package's
//! inflation bounds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rigaudit_fuzz::archive::{hash_members, Kind};
use rigaudit_fuzz::hash::Progress;

fuzz_target!(|data: &[u8]| {
    let Some((&k, bytes)) = data.split_first() else {
        return;
    };
    let (kind, name) = match k % 3 {
        0 => (Kind::Zip, "p.whl"),
        1 => (Kind::Tar, "p.tar"),
        _ => (Kind::TarGz, "p.tar.gz"),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write");
    let _ = hash_members(&path, kind, "bin/engine", &Progress::new(0, true));
});
