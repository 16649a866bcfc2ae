//! A packed bundle: any bytes as a `.tar` file, opened (unpacked with its bounds, the manifest
//! read and validated) and every file it lists read, then every check run over it, as `verify`
//! does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rigaudit_fuzz::bundle;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("b.tar");
    std::fs::write(&path, data).expect("write");
    if let Ok(opened) = bundle::open(&path) {
        let b = bundle::load(&opened);
        let _ = rigaudit_audit::verify(&b);
    }
});
