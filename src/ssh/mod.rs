//! The ssh room: how rigaudit reaches the boxes a card names, for every command that does
//! (`replay` runs ranks there, `rehash` reads roots there, `audit` does both).
//!
//! `--box NAME=[USER@]HOST[:PORT]` maps a box of the card to a machine reached through OpenSSH's
//! `ssh` client. What crosses to the box is built so that no text of the page is ever read as
//! shell syntax:
//!
//! - `ssh` gets one command string, which the box's login shell (a POSIX shell: sh, dash, bash,
//!   ksh, zsh; [`login_shell`] probes it before the first script) parses. It is made of
//!   single-quoted words only, by [`words::quote`], the one function that quotes: `'` + the word
//!   with each `'` written as `'\''` + `'`. Inside single quotes a POSIX shell gives no character
//!   a meaning (`$`, `` ` ``, `\`, `;`, newlines, non-ASCII), so each word arrives as one
//!   argument, byte for byte.
//! - `ssh` runs with `-T` (no terminal), `-a -x` (no agent or X11 forwarding), `BatchMode=yes` (no
//!   password prompt), the user's `--ssh-option`s (checked against [`boxmap::ALLOWED_OPTIONS`]),
//!   and `--` before the host.
//! - A long-running program (a replay's rank) runs under the fixed [`WRAPPER`]
//!   (`remote_rank.sh`), which exports the recorded environment and stops the program's process
//!   group when its stdin reaches end of file: SIGTERM, [`GRACE_SECS`], SIGKILL.
//!
//! The modules import only downward: [`words`] and [`target`] at the ground, [`boxmap`] (the
//! policy file's boxes and options) above them, [`args`] (the flags) above that, [`client`] (the
//! `ssh` client and its bounded outputs), [`login_shell`] (the probe, run through the client) and
//! on top [`script`] (fixed scripts, run once the box's shell passed the probe).

pub mod args;
pub mod boxmap;
pub mod client;
pub mod login_shell;
pub mod script;
pub mod target;
pub mod words;

pub(crate) use args::SshArgs;
pub(crate) use client::{Output, Ssh};
pub(crate) use target::Target;

/// The remote rank wrapper (see the module's header and the script's own).
pub const WRAPPER: &str = include_str!("remote_rank.sh");

/// Seconds a remote rank's group gets between SIGTERM and SIGKILL (as local ranks).
pub const GRACE_SECS: u64 = 5;
