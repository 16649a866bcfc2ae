//! The error that stops a command: the tool could not do its job (exit 2).

use std::fmt;

/// Stops a command with exit code 2 and a message naming the file and the place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal(pub String);

impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fatal {}

/// Builds a [`Fatal`] from anything printable.
pub fn fatal(msg: impl Into<String>) -> Fatal {
    Fatal(msg.into())
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
