//! What replay checks on a box before a rank starts there: the executable's sha256 against the
//! card's (or this rigaudit's own, for the bundled engine), and the NCCL library the card records,
//! looked up in the rank's `LD_LIBRARY_PATH` and read, never loaded.

use super::command::Launch;
use crate::fatal::{fatal, Fatal};
use crate::ssh::client::{digest_of, said};
use crate::ssh::script::NCCL_CHECK;
use crate::ssh::words::quote;
use crate::ssh::{Ssh, Target};
use rigaudit_audit::records::Card;

/// The fixed check of an executable on a box: `$1` is the path.
pub const CHECK: &str = r#"p=$1
if [ ! -e "$p" ]; then echo "no such file" >&2; exit 3; fi
if [ ! -f "$p" ]; then echo "not a regular file" >&2; exit 3; fi
if [ ! -x "$p" ]; then echo "not executable (no x permission bit)" >&2; exit 3; fi
exec sha256sum -- "$p""#;

/// The sha256 of the executable `path` on `t`; an unreachable box or a missing file is an error
/// naming the box.
pub fn remote_sha256(ssh: &Ssh, t: &Target, path: &str) -> Result<String, Fatal> {
    let what = format!("box {} ({t})", t.box_name);
    let o = ssh
        .run_script(t, CHECK, &[path])
        .map_err(|e| fatal(format!("{what}: {e}")))?;
    match o.code {
        Some(0) => digest_of(&o.stdout).ok_or_else(|| {
            fatal(format!(
                "{what}: sha256sum -- {} printed no digest: {}",
                quote(path),
                crate::input::shown(o.stdout.trim())
            ))
        }),
        Some(3) => Err(fatal(format!(
            "{what}: the engine {} cannot run there: {}",
            quote(path),
            said(&o)
        ))),
        Some(255) => Err(fatal(format!(
            "{what}: cannot reach it over ssh: {}",
            said(&o)
        ))),
        c => Err(fatal(format!(
            "{what}: checking {} failed ({}): {}",
            quote(path),
            c.map_or("killed by a signal".into(), |c| format!("exit code {c}")),
            said(&o)
        ))),
    }
}

/// What the executable on a box must hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// The card's `engine.binary.sha256` (full or a prefix of at least 8), if it records one.
    Card(Option<String>),
    /// Exactly this digest: the bundled engine is this rigaudit, so the box must run the same.
    Same(String),
}

/// Compares a digest found on a box with what is expected: `Ok(note)` or `Err(problem)`.
pub fn compare(expected: &Expected, found: &str) -> Result<String, String> {
    match expected {
        Expected::Same(d) if d == found => Ok("the same as this rigaudit's".into()),
        Expected::Same(d) => Err(format!("it differs from this rigaudit's own, {d}")),
        Expected::Card(None) => {
            Err("the card records no digest of the engine binary (engine.binary.sha256)".into())
        }
        Expected::Card(Some(r)) => {
            let r = r.trim().to_ascii_lowercase();
            if r.len() < 8 || r.len() > 64 || !r.bytes().all(|b| b.is_ascii_hexdigit()) {
                Err(format!(
                    "the card's engine binary digest {r:?} is not a sha256 (64 hex digits, or a prefix of at least 8)"
                ))
            } else if found.starts_with(&r) {
                Ok(format!("matches the card's {r}"))
            } else {
                Err(format!("it differs from the digest the card records: {r}"))
            }
        }
    }
}

/// What the engine on a box must hash to: the card's digest, or this rigaudit's own for the
/// bundled engine.
pub(super) fn expected(card: &Card, bundled: bool) -> Result<Expected, Fatal> {
    if !bundled {
        return Ok(Expected::Card(
            card.engine.binary.as_ref().map(|b| b.sha256.clone()),
        ));
    }
    let exe = std::env::current_exe()
        .map_err(|e| fatal(format!("cannot find rigaudit's own executable: {e}")))?;
    let d = crate::digest::sha256_file(&exe)
        .map_err(|e| fatal(format!("{}: cannot hash it: {e}", exe.display())))?;
    Ok(Expected::Same(d))
}

/// Checks the executable on the box; the note says where and with which digest.
pub(super) fn check_on_box(
    ssh: &Ssh,
    t: &Target,
    program: &str,
    expected: &Expected,
    trust: bool,
) -> Result<String, Fatal> {
    if !program.starts_with('/') {
        return Err(fatal(format!(
            "box {}: the engine's path {} is not absolute; name it with --box-engine {}=/PATH",
            t.box_name,
            quote(program),
            t.box_name
        )));
    }
    let found = remote_sha256(ssh, t, program)?;
    let place = format!(
        "box {} ({t}) over ssh: {program} sha256 {found}",
        t.box_name
    );
    match compare(expected, &found) {
        Ok(how) => Ok(format!("{place}, {how}")),
        Err(problem) if trust => Ok(format!(
            "{place}, unverified (--trust-executable): {problem}"
        )),
        Err(problem) => Err(fatal(format!(
            "refusing to run {} on box {} ({t}): its sha256 there is {found}; {problem}. Pass --trust-executable to run it anyway",
            quote(program),
            t.box_name
        ))),
    }
}

/// The NCCL library the card records, found on the box in the rank's `LD_LIBRARY_PATH`: its
/// digest against the card's for that box and the version its text names. `None` when the card
/// records no NCCL.
pub(super) fn nccl_note(ssh: &Ssh, card: &Card, t: &Target, l: &Launch) -> Option<String> {
    let nccl = card.nccl.as_ref()?;
    let Some(path) = l.env.get("LD_LIBRARY_PATH") else {
        return Some(format!(
            "NCCL {} on box {}: not looked for (the rank sets no LD_LIBRARY_PATH; a recorded one is passed only with --allow-env LD_LIBRARY_PATH)",
            nccl.file, t.box_name
        ));
    };
    let dirs: Vec<&str> = path.split(':').collect();
    let mut args = vec![nccl.file.as_str()];
    args.extend(dirs.iter().filter(|d| !d.is_empty()));
    let recorded = nccl
        .per_box
        .iter()
        .find(|b| b.box_name == t.box_name)
        .map(|b| b.sha256.to_ascii_lowercase());
    let o = match ssh.run_script(t, NCCL_CHECK, &args) {
        Ok(o) if o.code == Some(0) => o,
        Ok(o) => {
            return Some(format!(
                "NCCL {} not found in LD_LIBRARY_PATH on box {} ({})",
                nccl.file,
                t.box_name,
                said(&o)
            ))
        }
        Err(e) => return Some(format!("NCCL on box {}: not checked: {e}", t.box_name)),
    };
    let mut lines = o.stdout.lines();
    let path = lines.next().unwrap_or_default();
    let digest = lines.next().and_then(digest_of).unwrap_or_default();
    let version = lines
        .next()
        .and_then(|v| v.strip_prefix("NCCL version "))
        .map(|v| v.trim_end_matches(['+', ' ']).to_string());
    let verdict = match &recorded {
        Some(r) if !r.is_empty() && digest.starts_with(r.as_str()) => "matches the card's",
        Some(_) => "DIFFERS from the card's",
        None => "the card records no digest for this box",
    };
    Some(format!(
        "NCCL on box {}: {} sha256 {digest} ({verdict} {}), version {} (read from its text, not loaded; the card records {})",
        t.box_name,
        crate::input::shown(path),
        recorded.unwrap_or_default(),
        version.as_deref().unwrap_or("not named in its text"),
        nccl.version
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_comparison() {
        let d = "ab".repeat(32);
        assert!(compare(&Expected::Card(Some(d[..8].to_uppercase())), &d).is_ok());
        assert!(compare(&Expected::Card(Some("abcd".into())), &d).is_err());
        assert!(compare(&Expected::Card(Some("12345678".into())), &d)
            .unwrap_err()
            .contains("differs"));
        assert!(compare(&Expected::Card(None), &d)
            .unwrap_err()
            .contains("records no digest"));
        assert!(compare(&Expected::Same(d.clone()), &d).is_ok());
    }
}
