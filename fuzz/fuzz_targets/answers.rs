//! The answers stream: any bytes as a quality answers file (JSON Lines), read, hashed, validated
//! and tallied as `verify` does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rigaudit_audit::records::FileKind;
use rigaudit_fuzz::{answers, schemas};

fuzz_target!(|data: &[u8]| {
    let v = schemas::validator(FileKind::QualityAnswers).expect("answers schema");
    let t = answers::tally(data, v);
    // The listed problems name at most the bad lines counted (a line may list several).
    assert!(t.lines_listed() <= t.problem_count);
});
