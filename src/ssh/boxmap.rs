//! Box mappings and ssh options from the policy file (`--policy FILE`): a CI gate that replays
//! the same page every night keeps `[boxes]` and `[ssh]` there instead of `--box` flags.
//!
//! Every entry is checked as the flags are ([`parse_target`], [`check_option`]); a bad
//! one is an error naming the file, the JSON pointer of the entry and what was expected. The
//! command line wins: a `--box` or `--box-file` line for a box the file maps replaces the file's
//! entry, `--ssh-config` replaces the file's `config`, and `--ssh-option`s come before the file's
//! options (ssh takes the first value of an option). A replay note says each time it happened.

use super::target::{parse_target, Target};
use crate::fatal::{fatal, Fatal};
use crate::input::shown;
use rigaudit_audit::policy::Policy;
use std::path::{Path, PathBuf};

/// The `-o` keywords a box's ssh client may be given (`--ssh-option`, the policy's
/// `ssh.options`): where and as whom to connect, which keys and host keys to trust, time-outs,
/// logging, ciphers, connection sharing and hops through a bastion (`ProxyJump`: ssh itself
/// connects through it; no command of the option's runs). Left out: whatever runs a command or loads code here
/// (`ProxyCommand`, `LocalCommand`, `KnownHostsCommand`, `PKCS11Provider`, ...), replaces or
/// changes the command or environment on the box (`RemoteCommand`, `SetEnv`, `SendEnv`,
/// `RequestTTY`), forwards anything, or reads more configuration (`Include`).
pub const ALLOWED_OPTIONS: &[&str] = &[
    "AddressFamily",
    "BatchMode",
    "BindAddress",
    "BindInterface",
    "CertificateFile",
    "CheckHostIP",
    "Ciphers",
    "Compression",
    "ConnectionAttempts",
    "ConnectTimeout",
    "ControlMaster",
    "ControlPath",
    "ControlPersist",
    "GlobalKnownHostsFile",
    "HashKnownHosts",
    "HostKeyAlgorithms",
    "HostKeyAlias",
    "HostbasedAuthentication",
    "HostName",
    "IdentitiesOnly",
    "IdentityFile",
    "IPQoS",
    "KbdInteractiveAuthentication",
    "KexAlgorithms",
    "LogLevel",
    "MACs",
    "NumberOfPasswordPrompts",
    "PasswordAuthentication",
    "Port",
    "PreferredAuthentications",
    "ProxyJump",
    "PubkeyAcceptedAlgorithms",
    "PubkeyAuthentication",
    "ServerAliveCountMax",
    "ServerAliveInterval",
    "StrictHostKeyChecking",
    "TCPKeepAlive",
    "UpdateHostKeys",
    "User",
    "UserKnownHostsFile",
    "VerifyHostKeyDNS",
];

/// Checks one `KEY=VALUE` ssh option: KEY on [`ALLOWED_OPTIONS`] (any case, as ssh reads it),
/// VALUE on one line. `Err` says what was expected.
pub fn check_option(o: &str) -> Result<(), String> {
    let Some((k, v)) = o.split_once('=') else {
        return Err("expected KEY=VALUE (an ssh_config keyword, a value on one line)".into());
    };
    if v.contains(['\n', '\r', '\0']) {
        return Err("expected KEY=VALUE with the value on one line".into());
    }
    if !ALLOWED_OPTIONS.iter().any(|a| a.eq_ignore_ascii_case(k)) {
        return Err(format!(
            "'{}' is not an ssh option rigaudit passes; expected one of: {}",
            shown(k),
            ALLOWED_OPTIONS.join(", ")
        ));
    }
    Ok(())
}

/// A JSON pointer (RFC 6901) of the keys `parts`: `~` as `~0`, `/` as `~1`.
pub fn pointer(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// The policy file's boxes and ssh options, checked.
#[derive(Debug, Clone, Default)]
pub struct PolicyBoxes {
    /// The policy file, as shown.
    pub file: String,
    /// Each mapped box with the pointer of its entry.
    pub boxes: Vec<(Target, String)>,
    /// `ssh.config`, made absolute against the policy file's folder.
    pub config: Option<PathBuf>,
    /// `ssh.options`.
    pub options: Vec<String>,
}

impl PolicyBoxes {
    /// Reads and checks the `[boxes]` and `[ssh]` of a policy read from `p.file`.
    pub fn from_policy(p: &Policy) -> Result<PolicyBoxes, Fatal> {
        let at = |ptr: &str, why: String| fatal(format!("{}: at {ptr}: {why}", p.file));
        let mut boxes = Vec::new();
        for (name, dest) in &p.boxes {
            let ptr = pointer(&["boxes", name]);
            let t = parse_target(name, dest).map_err(|why| {
                at(
                    &ptr,
                    format!("'{}': {why}; expected [USER@]HOST[:PORT]", shown(dest)),
                )
            })?;
            boxes.push((t, ptr));
        }
        for (i, o) in p.ssh.options.iter().enumerate() {
            check_option(o)
                .map_err(|why| at(&pointer(&["ssh", "options", &i.to_string()]), why))?;
        }
        let config = p.ssh.config.as_ref().map(|c| {
            let dir = Path::new(&p.file).parent().unwrap_or(Path::new(""));
            dir.join(c)
        });
        Ok(PolicyBoxes {
            file: p.file.clone(),
            boxes,
            config,
            options: p.ssh.options.clone(),
        })
    }

    /// Whether the file maps a box.
    pub fn any(&self) -> bool {
        !self.boxes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(toml_text: &str) -> Policy {
        let mut p: Policy = toml::from_str(toml_text).unwrap();
        p.file = "ci/policy.toml".into();
        p
    }

    #[test]
    fn boxes_and_options_are_read_with_the_config_beside_the_file() {
        let p = policy(
            "[boxes]\natom = \"auditor@spark-a\"\n\"a/b\" = \"[::1]:2222\"\n\
             [ssh]\nconfig = \"ssh_config\"\noptions = [\"StrictHostKeyChecking=yes\"]\n",
        );
        let b = PolicyBoxes::from_policy(&p).unwrap();
        let shown: Vec<(String, String)> = b
            .boxes
            .iter()
            .map(|(t, ptr)| (t.to_string(), ptr.clone()))
            .collect();
        assert_eq!(
            shown,
            [
                ("[::1]:2222".to_string(), "/boxes/a~1b".to_string()),
                ("auditor@spark-a".to_string(), "/boxes/atom".to_string())
            ]
        );
        assert_eq!(b.config, Some(PathBuf::from("ci/ssh_config")));
    }

    #[test]
    fn a_bad_entry_names_the_file_and_pointer() {
        let e = PolicyBoxes::from_policy(&policy("[boxes]\npgx = \"spark b\"\n")).unwrap_err();
        assert!(
            e.0.starts_with("ci/policy.toml: at /boxes/pgx: 'spark b': the host must be"),
            "{}",
            e.0
        );
        assert!(e.0.ends_with("expected [USER@]HOST[:PORT]"), "{}", e.0);
        let e = PolicyBoxes::from_policy(&policy(
            "[ssh]\noptions = [\"LogLevel=ERROR\", \"ProxyCommand=nc %h %p\"]\n",
        ))
        .unwrap_err();
        assert!(
            e.0.starts_with(
                "ci/policy.toml: at /ssh/options/1: 'ProxyCommand' is not an ssh option"
            ),
            "{}",
            e.0
        );
    }

    #[test]
    fn options_are_checked_against_the_list_in_any_case() {
        assert!(check_option("stricthostkeychecking=yes").is_ok());
        for bad in [
            "ProxyCommand=x",
            "LocalCommand=x",
            "PermitLocalCommand=yes",
            "RemoteCommand=id",
            "SetEnv=LD_PRELOAD=/x",
            "Include=/etc/x",
            "LogLevel",
            "LogLevel=a\nb",
        ] {
            assert!(check_option(bad).is_err(), "{bad}");
        }
    }
}
