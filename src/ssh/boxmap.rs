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

/// What an ssh option's value may look like. None admits a character that a shell or ssh's
/// own `%`/`${}` expansion would give a meaning beyond a file name, a host or a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionValue {
    /// `yes` or `no`.
    YesNo,
    /// One of the words given.
    OneOf(&'static [&'static str]),
    /// A whole number.
    Number,
    /// A host name or address (letters, digits, `. - _ :`, or a bracketed IPv6 address).
    Host,
    /// `[USER@]HOST[:PORT]`, comma-separated, or `none` (`ProxyJump`): ssh turns it into a
    /// command line of its own, so every part is checked.
    Hops,
    /// A user name (letters, digits, `. _ -`, not starting with `-`).
    User,
    /// A file on this machine (printable, no space, `;`, `|`, `&`, `$`, backquote, quote or
    /// `<>`; `%` tokens and `~` as ssh expands them); space-separated files where it says so.
    Files { several: bool },
    /// An algorithm list (`[+-^]name,name`).
    Algorithms,
    /// Words (letters, digits, `- _ , .` and spaces between words).
    Words,
}

use OptionValue::{Algorithms, Files, Hops, Host, Number, OneOf, User, Words, YesNo};

/// The `-o` keywords a box's ssh client may be given (`--ssh-option`, the policy's
/// `ssh.options`), each with the shape of its value: where and as whom to connect, which keys
/// and host keys to trust, time-outs, logging, ciphers, connection sharing and hops through a
/// bastion (`ProxyJump`: ssh builds a command line of its own from it, so the hops are checked
/// part by part). Left out: whatever runs a command or loads code here (`ProxyCommand`,
/// `LocalCommand`, `KnownHostsCommand`, `PKCS11Provider`, `SecurityKeyProvider`, ...), replaces
/// or changes the command or environment on the box (`RemoteCommand`, `SetEnv`, `SendEnv`,
/// `RequestTTY`), forwards anything, or reads more configuration (`Include`).
pub const ALLOWED_OPTIONS: &[(&str, OptionValue)] = &[
    ("AddressFamily", OneOf(&["any", "inet", "inet6"])),
    ("BatchMode", YesNo),
    ("BindAddress", Host),
    ("BindInterface", User),
    ("CertificateFile", Files { several: false }),
    ("CheckHostIP", YesNo),
    ("Ciphers", Algorithms),
    ("Compression", YesNo),
    ("ConnectionAttempts", Number),
    ("ConnectTimeout", Number),
    (
        "ControlMaster",
        OneOf(&["yes", "no", "ask", "auto", "autoask"]),
    ),
    ("ControlPath", Files { several: false }),
    ("ControlPersist", Words),
    ("GlobalKnownHostsFile", Files { several: true }),
    ("HashKnownHosts", YesNo),
    ("HostKeyAlgorithms", Algorithms),
    ("HostKeyAlias", Host),
    ("HostbasedAuthentication", YesNo),
    ("HostName", Host),
    ("IdentitiesOnly", YesNo),
    ("IdentityFile", Files { several: false }),
    ("IPQoS", Words),
    ("KbdInteractiveAuthentication", YesNo),
    ("KexAlgorithms", Algorithms),
    (
        "LogLevel",
        OneOf(&[
            "QUIET", "FATAL", "ERROR", "INFO", "VERBOSE", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3",
        ]),
    ),
    ("MACs", Algorithms),
    ("NumberOfPasswordPrompts", Number),
    ("PasswordAuthentication", YesNo),
    ("Port", Number),
    ("PreferredAuthentications", Algorithms),
    ("ProxyJump", Hops),
    ("PubkeyAcceptedAlgorithms", Algorithms),
    ("PubkeyAuthentication", YesNo),
    ("ServerAliveCountMax", Number),
    ("ServerAliveInterval", Number),
    (
        "StrictHostKeyChecking",
        OneOf(&["yes", "no", "ask", "accept-new", "off"]),
    ),
    ("TCPKeepAlive", YesNo),
    ("UpdateHostKeys", OneOf(&["yes", "no", "ask"])),
    ("User", User),
    ("UserKnownHostsFile", Files { several: true }),
    ("VerifyHostKeyDNS", OneOf(&["yes", "no", "ask"])),
];

/// Whether `v` has the shape `shape`.
pub fn value_fits(shape: OptionValue, v: &str) -> bool {
    let all = |v: &str, ok: &dyn Fn(u8) -> bool| !v.is_empty() && v.bytes().all(ok);
    match shape {
        YesNo => v.eq_ignore_ascii_case("yes") || v.eq_ignore_ascii_case("no"),
        OneOf(words) => words.iter().any(|w| w.eq_ignore_ascii_case(v)),
        Number => v.len() <= 9 && all(v, &|b| b.is_ascii_digit()),
        Host => host_fits(v),
        Hops => v.eq_ignore_ascii_case("none") || v.split(',').all(hop_fits),
        User => user_fits(v),
        Files { several } => {
            let one = |f: &str| {
                !f.starts_with('-')
                    && all(f, &|b| {
                        b.is_ascii_graphic() && !b";|&$`'\"<>\\(){}*?!#".contains(&b)
                    })
            };
            if several {
                v.split(' ').filter(|f| !f.is_empty()).all(one) && !v.trim().is_empty()
            } else {
                one(v)
            }
        }
        Algorithms => all(v, &|b| b.is_ascii_alphanumeric() || b"@.,_+^-".contains(&b)),
        Words => all(v, &|b| b.is_ascii_alphanumeric() || b"-_,. ".contains(&b)),
    }
}

fn host_fits(h: &str) -> bool {
    if let Some(v6) = h.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !v6.is_empty()
            && v6
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b":.%".contains(&b));
    }
    !h.is_empty()
        && h.len() <= 253
        && !h.starts_with(['-', '.'])
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b))
}

fn user_fits(u: &str) -> bool {
    !u.is_empty()
        && u.len() <= 64
        && !u.starts_with('-')
        && u.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// One `ProxyJump` hop: `[ssh://][USER@]HOST[:PORT]`.
fn hop_fits(hop: &str) -> bool {
    let hop = hop.strip_prefix("ssh://").unwrap_or(hop);
    let (user, rest) = match hop.rsplit_once('@') {
        Some((u, r)) => (Some(u), r),
        None => (None, hop),
    };
    let (host, port) = match rest.strip_prefix('[') {
        Some(_) => match rest.rsplit_once("]:") {
            Some((h, p)) => (format!("{h}]"), Some(p)),
            None => (rest.to_string(), None),
        },
        None => match rest.split_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (rest.to_string(), None),
        },
    };
    let host_ok = host_fits(&host) && (host.starts_with('[') || !host.contains(':'));
    user.is_none_or(user_fits) && host_ok && port.is_none_or(|p| value_fits(Number, p))
}

/// Checks one `KEY=VALUE` ssh option: KEY on [`ALLOWED_OPTIONS`] (any case, as ssh reads it),
/// VALUE of that option's shape. `Err` says what was expected.
pub fn check_option(o: &str) -> Result<(), String> {
    let Some((k, v)) = o.split_once('=') else {
        return Err("expected KEY=VALUE (an ssh_config keyword, a value on one line)".into());
    };
    let Some((name, shape)) = ALLOWED_OPTIONS
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(k))
    else {
        let names: Vec<&str> = ALLOWED_OPTIONS.iter().map(|(a, _)| *a).collect();
        return Err(format!(
            "'{}' is not an ssh option rigaudit passes; expected one of: {}",
            shown(k),
            names.join(", ")
        ));
    };
    if !value_fits(*shape, v) {
        return Err(format!(
            "{name}='{}': expected {} (a value that runs nothing and opens nothing)",
            shown(v),
            value_words(*shape)
        ));
    }
    Ok(())
}

/// A value shape in words.
fn value_words(shape: OptionValue) -> String {
    match shape {
        YesNo => "yes or no".into(),
        OneOf(words) => format!("one of {}", words.join(", ")),
        Number => "a whole number".into(),
        Host => "a host name or address".into(),
        Hops => "[USER@]HOST[:PORT] hops, comma-separated, or none".into(),
        User => "a user name (letters, digits, . _ -)".into(),
        Files { several: false } => "a file name (no space or shell character)".into(),
        Files { several: true } => "file names separated by spaces (no shell character)".into(),
        Algorithms => "a comma-separated algorithm list".into(),
        Words => "words of letters, digits, - _ , .".into(),
    }
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
        for good in [
            "stricthostkeychecking=yes",
            "StrictHostKeyChecking=accept-new",
            "ProxyJump=bastion",
            "ProxyJump=me@bastion.example.org:2222,[fe80::1]:22",
            "ProxyJump=ssh://me@jump:22",
            "ProxyJump=none",
            "IdentityFile=~/.ssh/id_ed25519",
            "IdentityFile=%d/.ssh/id_%r@%h",
            "UserKnownHostsFile=/dev/null",
            "UserKnownHostsFile=~/.ssh/known_hosts ~/.ssh/known_hosts2",
            "ControlPath=/tmp/ssh-%C",
            "ControlPersist=60s",
            "Ciphers=+aes128-ctr,chacha20-poly1305@openssh.com",
            "HostName=10.0.0.2",
            "HostName=[::1]",
            "LogLevel=error",
            "IPQoS=lowdelay throughput",
        ] {
            assert_eq!(check_option(good), Ok(()), "{good}");
        }
        for bad in [
            "ProxyCommand=x",
            "LocalCommand=x",
            "PermitLocalCommand=yes",
            "RemoteCommand=id",
            "SetEnv=LD_PRELOAD=/x",
            "Include=/etc/x",
            "LogLevel",
            "LogLevel=a\nb",
            "LogLevel=LOUD",
            "ProxyJump=x;touch /tmp/pwned",
            "ProxyJump=-oProxyCommand=touch${IFS}m",
            "ProxyJump=a$(id)b",
            "ProxyJump=u@h:22,v@`id`",
            "ProxyJump=h:22 -oProxyCommand=x",
            "HostName=-oProxyCommand=x",
            "HostName=a b",
            "User=-x",
            "User=a;b",
            "IdentityFile=~/.ssh/id;touch x",
            "IdentityFile=$(id)",
            "UserKnownHostsFile=a|b",
            "ControlPath=-x",
            "Port=22;id",
            "ConnectTimeout=ten",
            "Ciphers=aes128-ctr id",
            "BindInterface=eth0;id",
            "IPQoS=lowdelay;id",
            "ControlPersist=$(id)",
        ] {
            assert!(check_option(bad).is_err(), "{bad}");
        }
    }
}
