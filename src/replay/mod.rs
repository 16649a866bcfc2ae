//! Replay: run the card's recorded commands again and measure them.
//!
//! `command` turns the recorded commands into processes to start (placeholders, the executable
//! and its digest); `launch` starts them, waits until the server answers and stops them.

// The orchestration and the `replay` subcommand that use these come separately; until then the
// public items are used only by the tests.
#[allow(dead_code)] // used by replay orchestration
pub mod command;
#[allow(dead_code)] // used by replay orchestration
pub mod launch;
