//! The start-line parser: any lines a server printed at start.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<String> = text.lines().map(String::from).collect();
    let _ = rigaudit_audit::startline::parse(&lines);
});
