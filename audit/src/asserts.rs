//! Test-only: assertions on text that show the whole text when they fail. Shared by the unit
//! tests (through [`crate::testkit`]) and the integration tests (`tests/it/common` includes this
//! file), so that one `assert!(text.contains(..), "{}", text)` shape is written once.

/// Asserts `text` contains `needle` (and shows `text` when it does not).
#[track_caller]
pub fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} not in:\n{text}");
}

/// Asserts `text` starts with `prefix` (and shows `text` when it does not).
#[track_caller]
pub fn assert_starts_with(text: &str, prefix: &str) {
    assert!(
        text.starts_with(prefix),
        "{prefix:?} does not start:\n{text}"
    );
}

/// Asserts `text` ends with `suffix` (and shows `text` when it does not).
#[track_caller]
pub fn assert_ends_with(text: &str, suffix: &str) {
    assert!(text.ends_with(suffix), "{suffix:?} does not end:\n{text}");
}
