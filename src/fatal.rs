//! The error that stops a command: the tool could not do its job (exit 2).

use std::fmt;

/// Stops a command with exit code 2 and a message naming the file and the place; when it stopped
/// because one file of several could not be read whole, that file ([`Unreadable`]), so that a
/// caller reading a folder of another tool's files can check the others without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal(pub String, pub Option<Unreadable>);

/// A file that could not be read whole (not a regular file, over its bound, a line over its
/// bound, not UTF-8, not valid JSON where the format is JSON): its name, the place in it when
/// there is one (`line 3`), and what was wrong with what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file's name (as an import names its sources).
    pub file: String,
    /// Where in it (`line 3, column 7`), when the file was opened.
    pub place: Option<String>,
    /// What was wrong, and what was expected.
    pub why: String,
}

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fatal {}

/// Builds a [`Fatal`] from anything printable.
pub fn fatal(msg: impl Into<String>) -> Fatal {
    Fatal(msg.into(), None)
}

/// A [`Fatal`] because the file `shown` (its name `u.file`) could not be read whole: the message
/// is `SHOWN: PLACE: WHY`.
pub fn unreadable(shown: &str, u: Unreadable) -> Fatal {
    let at = u
        .place
        .as_deref()
        .map_or(String::new(), |p| format!("{p}: "));
    Fatal(format!("{shown}: {at}{}", u.why), Some(u))
}

/// Error context in one word: `result.at(place)` turns any error into a [`Fatal`] that says where
/// it happened first (`PLACE: error`), in place of `map_err(|e| fatal(format!("{place}: {e}")))`.
pub trait At<T> {
    /// The error, prefixed with `place`.
    fn at(self, place: impl fmt::Display) -> Result<T, Fatal>;
}

impl<T, E: fmt::Display> At<T> for Result<T, E> {
    fn at(self, place: impl fmt::Display) -> Result<T, Fatal> {
        self.map_err(|e| fatal(format!("{place}: {e}")))
    }
}
