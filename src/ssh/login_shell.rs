//! Whether a box's login shell reads POSIX quoting.
//!
//! `ssh HOST LINE` has the account's login shell run `LINE` (`$SHELL -c LINE`), and every line
//! rigaudit sends is made of words single-quoted by [`super::words::quote`], which only a POSIX
//! shell (sh, dash, bash, ksh, zsh) reads back as sent. csh and tcsh expand `!` inside single
//! quotes and refuse a newline in them; fish reads `\\` and `\'` inside them as escapes. So before
//! the first script runs on a box, a probe sends words that tell them apart and checks that they
//! come back byte for byte; a box whose shell changes them is refused with its shell's answer,
//! and one whose start-up files print on standard output (where rigaudit reads its scripts'
//! answers) is refused naming that text.
//! Checked with each of those shells in the unit test below (through `SHELL -c`, as sshd runs it).

use super::client::{Bounds, Output, Ssh};
use super::target::Target;
use super::words::command_line;
use std::time::Duration;

/// The probe's fixed script: prints its arguments between markers (a login script that prints a
/// banner on stdout does not break it).
const SCRIPT: &str = "printf 'rigaudit-probe:'; printf '%s|' \"$@\"; printf ':end\\n'";

/// Words a POSIX shell passes through single quotes unchanged and the others do not: a quote
/// (sent as `'\''`), two backslashes (fish keeps one), `!` (csh's history), a newline (csh: an
/// unmatched quote), `$`, `~` and `*` (expanded by any shell that does not quote them).
const WORDS: [&str; 7] = ["a'b", "c\\\\d", "e!f", "g\nh", "$HOME", "~", "*"];

/// How long the probe may take (a connection's time-out is ssh's own, 15 s by default).
const TIMEOUT: Duration = Duration::from_secs(60);

/// The line sent: `exec /bin/sh -c SCRIPT rigaudit-probe WORDS...`, every word quoted.
pub(crate) fn line() -> String {
    let mut words = vec!["/bin/sh", "-c", SCRIPT, "rigaudit-probe"];
    words.extend(WORDS);
    command_line(&words).expect("the probe's words hold no NUL")
}

/// What a POSIX shell prints for [`line`].
fn expected() -> String {
    let joined: String = WORDS.iter().map(|w| format!("{w}|")).collect();
    format!("rigaudit-probe:{joined}:end\n")
}

/// What a box's answer to the probe says of its login shell.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The words came back as sent, and nothing else: a POSIX shell.
    Posix,
    /// The words came back, after this text: the account's start-up files print on standard
    /// output, where rigaudit reads its scripts' answers (a digest, a listing).
    Banner(String),
    /// The words did not come back as sent.
    NotPosix,
}

/// Judges the probe's standard output.
pub(crate) fn judge(stdout: &str) -> Answer {
    let want = expected();
    match stdout.find(&want) {
        Some(0) if stdout.len() == want.len() => Answer::Posix,
        Some(at) => {
            let mut extra = stdout[..at].to_string();
            extra.push_str(&stdout[at + want.len()..]);
            Answer::Banner(extra)
        }
        None => Answer::NotPosix,
    }
}

/// Probes `t` once per [`Ssh`] (the answer is kept): `Ok` when its login shell read the words as
/// sent and printed nothing else, or when ssh itself failed (exit 255: the script that follows
/// says why in its own words); an error naming the shell's answer otherwise.
pub(crate) fn ensure(ssh: &Ssh, t: &Target) -> Result<(), String> {
    let key = t.to_string();
    if ssh.posix_known(&key) {
        return Ok(());
    }
    let bounds = Bounds {
        input: Vec::new(),
        out_max: 64 * 1024,
        timeout: TIMEOUT,
    };
    let Output {
        code,
        stdout,
        stderr,
        ..
    } = ssh
        .run_line(t, line(), bounds)
        .map_err(|e| format!("probing its login shell: {e}"))?;
    if code == Some(255) {
        return Ok(());
    }
    match judge(&stdout) {
        Answer::Posix => {
            ssh.posix_learned(key);
            Ok(())
        }
        Answer::Banner(extra) => Err(format!(
            "its login prints \"{}\" on standard output besides a command's own output; rigaudit reads \
             what its commands print there (a digest, a listing), so that text would be taken for \
             theirs: remove it from the account's start-up files for commands run over ssh (~/.bashrc \
             is read by bash for them)",
            crate::input::shown_n(extra.trim(), 200)
        )),
        Answer::NotPosix => {
            let answer = if stdout.trim().is_empty() {
                stderr
            } else {
                stdout
            };
            Err(format!(
                "its login shell does not read POSIX quoting: a probe of single-quoted words should print {}, it printed {} (exit {}); \
                 rigaudit's commands need the account's login shell to be sh, dash, bash, ksh or zsh, not csh, tcsh or fish: \
                 map a user whose shell is one of them, or change the shell (chsh -s /bin/sh)",
                crate::input::shown(expected().trim()),
                crate::input::shown_n(answer.trim(), 200),
                code.map_or("by a signal".into(), |c| c.to_string())
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What `shell -c LINE` prints: sshd runs the command of `ssh HOST LINE` that way.
    fn through(shell: &str) -> Option<String> {
        let o = Command::new(shell).arg("-c").arg(line()).output().ok()?;
        Some(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    #[test]
    fn posix_shells_pass_the_probe_and_csh_tcsh_fish_fail_it() {
        let mut seen = Vec::new();
        // By name, looked up on PATH: where a package installs a shell differs between systems.
        for sh in ["sh", "dash", "bash", "zsh", "ksh"] {
            if let Some(out) = through(sh) {
                assert_eq!(judge(&out), Answer::Posix, "{sh}: {out:?}");
                seen.push(sh);
            }
        }
        assert!(seen.contains(&"sh"), "{seen:?}");
        for sh in ["fish", "tcsh", "csh"] {
            if let Some(out) = through(sh) {
                assert_eq!(judge(&out), Answer::NotPosix, "{sh} passed: {out:?}");
                seen.push(sh);
            }
        }
        // scripts/test.sh installs fish and tcsh, so CI runs the refusals too.
        if std::env::var_os("RIGAUDIT_REQUIRE_SHELLS").is_some() {
            for sh in ["fish", "tcsh"] {
                assert!(seen.contains(&sh), "{sh} is not installed: {seen:?}");
            }
        }
    }

    #[test]
    fn text_around_the_answer_is_named_and_a_changed_word_is_no_posix_shell() {
        let with = |before: &str, after: &str| judge(&format!("{before}{}{after}", expected()));
        assert_eq!(with("", ""), Answer::Posix);
        assert_eq!(
            with("Welcome to the box\n", ""),
            Answer::Banner("Welcome to the box\n".into())
        );
        assert_eq!(with("", "bye\n"), Answer::Banner("bye\n".into()));
        // fish keeps one of the two backslashes.
        assert_eq!(
            judge("rigaudit-probe:a'b|c\\d|e!f|g\nh|$HOME|~|*|:end\n"),
            Answer::NotPosix
        );
        assert_eq!(judge(""), Answer::NotPosix);
    }
}
