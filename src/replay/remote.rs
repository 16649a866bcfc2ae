//! Ranks on the boxes a card names, reached over SSH.
//!
//! `--box NAME=[USER@]HOST[:PORT]` maps a box of the card to a machine; a rank whose box is mapped
//! runs there through OpenSSH's `ssh` client, every other rank runs here as before. What crosses
//! to the box is built so that no text of the page is ever read as shell syntax:
//!
//! - `ssh` gets one command string, which the box's login shell (a POSIX shell: sh, dash, bash,
//!   ksh, zsh) parses. It is made of single-quoted words only, by [`quote`], the one function that
//!   quotes: `'` + the word with each `'` written as `'\''` + `'`. Inside single quotes a POSIX
//!   shell gives no character a meaning (`$`, `` ` ``, `\`, `;`, newlines, non-ASCII), so each
//!   word arrives as one argument, byte for byte.
//! - The words start `/bin/sh -c WRAPPER rigaudit-rank GRACE`, where WRAPPER is the fixed script
//!   `remote_rank.sh`; the recorded environment follows as `NAME=VALUE` words, then `--`, the
//!   program and its arguments. The wrapper exports the variables (their names checked here to be
//!   plain identifiers) and starts the program with `setsid` in a process group of its own.
//! - `ssh` runs with `-T` (no terminal), `-a -x` (no agent or X11 forwarding), `BatchMode=yes` (no
//!   password prompt), the user's `--ssh-option`s, and `--` before the host.
//! - Stopping: rigaudit holds the `ssh` client's stdin open while the rank runs. Closing it (the
//!   replay ends), or the connection dropping (the `ssh` client killed, rigaudit killed: the
//!   client gets `PDEATHSIG` like every rank), is end of file on the wrapper's stdin, and the
//!   wrapper stops the group on the box: SIGTERM, [`GRACE_SECS`], SIGKILL.
//! - Before any rank starts, the executable's sha256 is computed on the box (the fixed script
//!   [`CHECK`]: a regular, executable file, then `sha256sum -- PATH`) and compared with the card's
//!   digest as the local check does (or, for the bundled engine, with this rigaudit's own);
//!   a mismatch is refused unless `--trust-executable`.

use super::command::Launch;
use crate::fatal::{fatal, Fatal};
use crate::input::shown;
use rigaudit_audit::records::Card;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The remote rank wrapper (see the file's header).
pub const WRAPPER: &str = include_str!("remote_rank.sh");

/// Seconds a remote rank's group gets between SIGTERM and SIGKILL (as local ranks).
pub const GRACE_SECS: u64 = 5;

/// How long a check over ssh (a digest, a library) may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);

/// The fixed check of an executable on a box: `$1` is the path.
pub const CHECK: &str = r#"p=$1
if [ ! -e "$p" ]; then echo "no such file" >&2; exit 3; fi
if [ ! -f "$p" ]; then echo "not a regular file" >&2; exit 3; fi
if [ ! -x "$p" ]; then echo "not executable (no x permission bit)" >&2; exit 3; fi
exec sha256sum -- "$p""#;

/// The fixed look-up of the NCCL library on a box: `$1` is its file name, the rest are folders
/// (from the rank's `LD_LIBRARY_PATH`); prints the path, its sha256 line and the version its text
/// names. The library is never loaded.
pub const NCCL_CHECK: &str = r#"f=$1
shift
for d in "$@"; do
    if [ -f "$d/$f" ]; then
        printf '%s\n' "$d/$f"
        sha256sum -- "$d/$f" || exit 3
        LC_ALL=C grep -a -o -m 1 -E 'NCCL version [0-9]{1,2}\.[0-9]{1,3}\.[0-9]{1,3}[+ ]' -- "$d/$f" | head -n 1
        exit 0
    fi
done
exit 4"#;

/// Where the card's boxes are and how ssh reaches them (`replay`, `audit`, `rehash`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SshArgs {
    /// Maps the card's box NAME to a machine reached over ssh: replay runs the ranks the card
    /// places on that box there, rehash reads a `--root NAME=DIR` there (`--box
    /// pgx=auditor@spark-b`, `--box pgx=spark-b:2222`). Repeatable; a box not mapped is here.
    #[arg(long = "box", value_name = "NAME=[USER@]HOST[:PORT]")]
    pub boxes: Vec<String>,
    /// A file of `NAME=[USER@]HOST[:PORT]` lines (`#` starts a comment), read as `--box`es; a
    /// `--box` on the command line wins over the file's line for the same box.
    #[arg(long = "box-file", value_name = "FILE")]
    pub box_file: Option<PathBuf>,
    /// An option for every ssh connection to a box, passed as `-o KEY=VALUE`. Repeatable.
    #[arg(long = "ssh-option", value_name = "KEY=VALUE")]
    pub ssh_options: Vec<String>,
    /// The ssh client configuration file to use (`ssh -F FILE`).
    #[arg(long = "ssh-config", value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// The policy file's `[boxes]` and `[ssh]` (`--policy`), under the flags above.
    #[arg(skip)]
    pub policy: Option<super::boxmap::PolicyBoxes>,
}

/// Where ranks run: `replay` and `audit` options.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BoxArgs {
    /// The boxes and ssh options.
    #[command(flatten)]
    pub ssh: SshArgs,
    /// The engine's absolute path on box NAME, when it is not the path `--engine` names here.
    /// Repeatable.
    #[arg(long = "box-engine", value_name = "NAME=PATH")]
    pub box_engines: Vec<String>,
    /// Print what would run where (each rank's box, argv, environment and the digests that would
    /// be checked) and exit; connects to nothing and starts nothing.
    #[arg(long)]
    pub plan: bool,
}

/// The most a `--box-file` may hold.
const BOX_FILE_MAX: u64 = 64 * 1024;

/// One box mapping and where it was given.
#[derive(Debug, Clone)]
pub struct Mapped {
    /// Where the box is.
    pub target: Target,
    /// `--box SPEC`, `FILE:LINE` of a `--box-file`, or `FILE: at /boxes/NAME` of the policy.
    pub from: String,
}

impl SshArgs {
    /// Every box mapping in the order they apply: the policy file's, the `--box-file` lines, the
    /// `--box`es (a later one wins).
    pub fn mapped(&self) -> Result<Vec<Mapped>, Fatal> {
        let mut v = Vec::new();
        if let Some(p) = &self.policy {
            v.extend(p.boxes.iter().map(|(t, ptr)| Mapped {
                target: t.clone(),
                from: format!("{}: at {ptr}", p.file),
            }));
        }
        if let Some(f) = &self.box_file {
            let text = crate::input::read_text(f, BOX_FILE_MAX, "box file")?;
            for (i, line) in text.lines().enumerate() {
                let line = line.split('#').next().unwrap_or_default().trim();
                if line.is_empty() {
                    continue;
                }
                let from = format!("{}:{}", f.display(), i + 1);
                let target = parse_box(line).map_err(|e| fatal(format!("{from}: {}", e.0)))?;
                v.push(Mapped { target, from });
            }
        }
        for b in &self.boxes {
            v.push(Mapped {
                target: parse_box(b)?,
                from: format!("--box {}", shown(b)),
            });
        }
        Ok(v)
    }

    /// The mapped boxes by name (a later mapping wins), and a note for each mapping replaced.
    pub fn resolved(&self) -> Result<(BTreeMap<String, Mapped>, Vec<String>), Fatal> {
        let mut by_name: BTreeMap<String, Mapped> = BTreeMap::new();
        let mut notes = Vec::new();
        for m in self.mapped()? {
            let name = m.target.box_name.clone();
            if let Some(old) = by_name.insert(name.clone(), m.clone()) {
                notes.push(format!(
                    "box {}: {} ({}) wins over {} ({})",
                    shown(&name),
                    m.from,
                    m.target,
                    old.from,
                    old.target
                ));
            }
        }
        Ok((by_name, notes))
    }

    /// The mapped boxes by name (a later mapping wins).
    pub fn targets(&self) -> Result<BTreeMap<String, Target>, Fatal> {
        let (by_name, _) = self.resolved()?;
        Ok(by_name.into_iter().map(|(k, m)| (k, m.target)).collect())
    }

    /// Refuses a mapping of a box the card does not name, saying where it was given.
    pub fn check_names(&self, known: &[String]) -> Result<(), Fatal> {
        let (by_name, _) = self.resolved()?;
        match by_name
            .values()
            .find(|m| !known.contains(&m.target.box_name))
        {
            Some(m) => Err(fatal(format!(
                "{}: the card names no box {}; its boxes: {}",
                m.from,
                quote(&m.target.box_name),
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }
}

impl BoxArgs {
    /// Whether any rank may run on a box (or a box option was given).
    fn any(&self) -> bool {
        !self.ssh.boxes.is_empty()
            || !self.box_engines.is_empty()
            || self.ssh.box_file.is_some()
            || self.ssh.policy.as_ref().is_some_and(|p| p.any())
    }
}

/// How one rank is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// Here, as a child process.
    Local,
    /// On a box through `ssh`; the client's stdin stays open while the rank runs.
    Ssh {
        /// The card's box name.
        box_name: String,
        /// `user@host:port`, as shown.
        destination: String,
    },
}

/// A machine a box is mapped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The card's box name.
    pub box_name: String,
    /// The login name, if given.
    pub user: Option<String>,
    /// A host name or address (an IPv6 address without brackets).
    pub host: String,
    /// The port, if given.
    pub port: Option<u16>,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// Quotes one word for a POSIX shell: always single-quoted, each `'` as `'\''`. The result, read
/// by `sh`, is exactly `word` (any byte but NUL, which no argument can hold; see [`command_line`]).
pub fn quote(word: &str) -> String {
    let mut q = String::with_capacity(word.len() + 2);
    q.push('\'');
    for c in word.chars() {
        if c == '\'' {
            q.push_str("'\\''");
        } else {
            q.push(c);
        }
    }
    q.push('\'');
    q
}

/// The command string for the box's login shell: `exec` and every word quoted. An item holding
/// a NUL byte is refused (no argument can carry one).
pub fn command_line<S: AsRef<str>>(words: &[S]) -> Result<String, String> {
    let mut line = String::from("exec");
    for (i, w) in words.iter().enumerate() {
        let w = w.as_ref();
        if w.contains('\0') {
            return Err(format!(
                "item {i} ({}) holds a NUL byte",
                crate::input::shown(w)
            ));
        }
        line.push(' ');
        line.push_str(&quote(w));
    }
    Ok(line)
}

fn plain_name(s: &str, extra: &[char]) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

/// Whether `name` can be exported by a POSIX shell: a letter or `_`, then letters, digits, `_`.
pub fn env_name_ok(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Parses `NAME=[USER@]HOST[:PORT]` (an IPv6 host in brackets: `[::1]:22`).
pub fn parse_box(spec: &str) -> Result<Target, Fatal> {
    let bad = |why: &str| fatal(format!("--box {}: {why}", crate::input::shown(spec)));
    let (name, dest) = spec
        .split_once('=')
        .ok_or_else(|| bad("expected NAME=[USER@]HOST[:PORT]"))?;
    parse_target(name, dest).map_err(|why| bad(&why))
}

/// Box `name` at `[USER@]HOST[:PORT]`; `Err` says what is wrong.
pub fn parse_target(name: &str, dest: &str) -> Result<Target, String> {
    if name.is_empty() {
        return Err("the box name is empty".into());
    }
    let (user, hostport) = match dest.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, dest),
    };
    if user
        .as_deref()
        .is_some_and(|u| !plain_name(u, &['.', '_', '-']))
    {
        return Err("the user name must be letters, digits, '.', '_' or '-'".into());
    }
    let (host, port) = split_port(hostport)?;
    let ok_host = if host.contains(':') {
        host.chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
    } else {
        plain_name(&host, &['.', '_', '-'])
    };
    if !ok_host {
        return Err("the host must be a name or an address".into());
    }
    Ok(Target {
        box_name: name.to_string(),
        user,
        host,
        port,
    })
}

fn split_port(s: &str) -> Result<(String, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("{p:?} is not a port"))
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or("an unclosed '['")?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((h.to_string(), Some(port(p)?))),
            None if after.is_empty() => Ok((h.to_string(), None)),
            None => Err(format!("unexpected {after:?} after the address")),
        };
    }
    match s.split_once(':') {
        Some((h, p)) if !p.contains(':') => Ok((h.to_string(), Some(port(p)?))),
        Some(_) => Err("an IPv6 address must be in brackets: [::1]:22".into()),
        None => Ok((s.to_string(), None)),
    }
}

/// The `ssh` client's options and where it connects, checked.
#[derive(Debug, Clone, Default)]
pub struct Ssh {
    options: Vec<String>,
    config: Option<PathBuf>,
    /// The boxes (as `[USER@]HOST[:PORT]`) whose login shell passed the probe
    /// ([`super::login_shell`]); shared by the clones of one `Ssh`.
    posix: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
}

impl Ssh {
    /// Checks the user's `--ssh-option KEY=VALUE`s; the policy file's options follow them (the
    /// first value of an option wins), and `--ssh-config` wins over the file's `config`.
    pub fn new(a: &SshArgs) -> Result<Ssh, Fatal> {
        for o in &a.ssh_options {
            super::boxmap::check_option(o)
                .map_err(|why| fatal(format!("--ssh-option {}: {why}", crate::input::shown(o))))?;
        }
        let mut options = a.ssh_options.clone();
        let mut config = a.ssh_config.clone();
        if let Some(p) = &a.policy {
            options.extend(p.options.iter().cloned());
            config = config.or_else(|| p.config.clone());
        }
        Ok(Ssh {
            options,
            config,
            ..Ssh::default()
        })
    }

    /// Whether the box `key` passed the login-shell probe.
    pub(crate) fn posix_known(&self, key: &str) -> bool {
        self.posix.lock().is_ok_and(|s| s.contains(key))
    }

    /// Keeps that the box `key` passed the login-shell probe.
    pub(crate) fn posix_learned(&self, key: String) {
        if let Ok(mut s) = self.posix.lock() {
            s.insert(key);
        }
    }

    /// The arguments of `ssh` that run `line` on `t`. `BatchMode` comes first (the first value of
    /// an option wins), the user's options next, then defaults they may override.
    pub fn argv(&self, t: &Target, line: String) -> Vec<String> {
        let mut v: Vec<String> = ["-T", "-a", "-x", "-o", "BatchMode=yes"]
            .map(String::from)
            .to_vec();
        if let Some(c) = &self.config {
            v.extend(["-F".into(), c.display().to_string()]);
        }
        for o in &self.options {
            v.extend(["-o".into(), o.clone()]);
        }
        for o in [
            "ConnectTimeout=15",
            "ServerAliveInterval=5",
            "ServerAliveCountMax=3",
        ] {
            v.extend(["-o".into(), o.into()]);
        }
        if let Some(p) = t.port {
            v.extend(["-p".into(), p.to_string()]);
        }
        if let Some(u) = &t.user {
            v.extend(["-l".into(), u.clone()]);
        }
        v.extend(["--".into(), t.host.clone(), line]);
        v
    }

    /// Runs a fixed script on `t` with `args`, bounded in time; stdout, or what failed.
    pub(crate) fn run_script(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
    ) -> Result<Output, String> {
        let bounds = Bounds {
            input: Vec::new(),
            out_max: OUT_MAX,
            timeout: CHECK_TIMEOUT,
        };
        self.run_script_with(t, script, args, bounds)
    }

    /// Starts a fixed script on `t` with `args` whose stdout the caller reads as a stream (no
    /// stdin; stderr piped). The caller waits for the child.
    pub(crate) fn spawn_script(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
    ) -> Result<std::process::Child, String> {
        self.spawn_with(t, script, args, Stdio::null())
    }

    /// `ssh` running the fixed `script` with `args` (every word quoted), stdout and stderr piped.
    fn spawn_with(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
        stdin: Stdio,
    ) -> Result<std::process::Child, String> {
        super::login_shell::ensure(self, t)?;
        self.spawn_line(t, script_line(script, args)?, stdin)
    }

    /// `ssh` running `line` on `t` as it is, stdout and stderr piped.
    pub(crate) fn spawn_line(
        &self,
        t: &Target,
        line: String,
        stdin: Stdio,
    ) -> Result<std::process::Child, String> {
        Command::new("ssh")
            .args(self.argv(t, line))
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start ssh: {e}"))
    }

    /// [`Ssh::run_script`] with `input` on the script's stdin (written as it reads) and other
    /// bounds: stdout past `out_max` bytes is not read (`Output::cut`), and past `timeout` the
    /// client is killed and waited for.
    pub(crate) fn run_script_with(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
        b: Bounds,
    ) -> Result<Output, String> {
        super::login_shell::ensure(self, t)?;
        self.run_line(t, script_line(script, args)?, b)
    }

    /// `ssh` running `line` on `t` as it is, within the bounds `b` (stdin written as it reads,
    /// stdout up to `out_max`, killed and reaped past `timeout`).
    pub(crate) fn run_line(&self, t: &Target, line: String, b: Bounds) -> Result<Output, String> {
        let mut child = self.spawn_line(t, line, Stdio::piped())?;
        let stdin = child.stdin.take();
        let input = b.input;
        let writer = std::thread::spawn(move || {
            if let Some(mut w) = stdin {
                let _ = std::io::Write::write_all(&mut w, &input);
            }
        });
        let out = read_bounded_bytes(child.stdout.take(), b.out_max);
        let err = read_bounded(child.stderr.take(), OUT_MAX);
        let status = wait_bounded(&mut child, b.timeout);
        let _ = writer.join();
        let (raw, cut) = out.join().unwrap_or_default();
        let (stderr, _) = err.join().unwrap_or_default();
        Ok(Output {
            code: status?.code(),
            stdout: String::from_utf8_lossy(&raw).into_owned(),
            raw,
            stderr,
            cut,
        })
    }
}

/// The line that runs the fixed `script` with `args` under `/bin/sh`, every word quoted.
fn script_line(script: &str, args: &[&str]) -> Result<String, String> {
    let mut words = vec!["/bin/sh", "-c", script, "rigaudit-check"];
    words.extend_from_slice(args);
    command_line(&words)
}

/// What a script on a box is given and how long and much it may answer.
pub(crate) struct Bounds {
    /// Its stdin.
    pub(crate) input: Vec<u8>,
    /// The most stdout read.
    pub(crate) out_max: u64,
    /// The longest it may run.
    pub(crate) timeout: Duration,
}

/// The most of a check's stdout or stderr that is read.
const OUT_MAX: u64 = 64 * 1024;

/// Waits for `child` up to `timeout`; past it the child is killed and reaped.
pub(crate) fn wait_bounded(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Result<std::process::ExitStatus, String> {
    let t0 = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Ok(s),
            Ok(None) if t0.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("cannot wait for ssh: {e}"));
            }
        }
    }
}

/// What a script on a box gave.
pub(crate) struct Output {
    pub(crate) code: Option<i32>,
    /// Standard output as text (a byte sequence that is not UTF-8 shown as U+FFFD).
    pub(crate) stdout: String,
    /// Standard output as the box sent it (file names need not be UTF-8).
    pub(crate) raw: Vec<u8>,
    pub(crate) stderr: String,
    /// Whether stdout went past its bound (the rest was not read).
    pub(crate) cut: bool,
}

/// Reads at most `max` bytes as text; `true` when there was more (the pipe is then closed).
pub(crate) fn read_bounded(
    s: Option<impl Read + Send + 'static>,
    max: u64,
) -> std::thread::JoinHandle<(String, bool)> {
    std::thread::spawn(move || {
        let (buf, cut) = read_at_most(s, max);
        (String::from_utf8_lossy(&buf).into_owned(), cut)
    })
}

/// [`read_bounded`], the bytes as they came.
pub(crate) fn read_bounded_bytes(
    s: Option<impl Read + Send + 'static>,
    max: u64,
) -> std::thread::JoinHandle<(Vec<u8>, bool)> {
    std::thread::spawn(move || read_at_most(s, max))
}

fn read_at_most(s: Option<impl Read>, max: u64) -> (Vec<u8>, bool) {
    let mut buf = Vec::new();
    if let Some(s) = s {
        let _ = s.take(max + 1).read_to_end(&mut buf);
    }
    let cut = buf.len() as u64 > max;
    buf.truncate(max as usize);
    (buf, cut)
}

/// The last few lines of what ssh or the script said, for a message.
pub(crate) fn said(o: &Output) -> String {
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
    crate::input::shown(tail.trim())
}

/// The first 64 hex digits of a `sha256sum` line (which starts with `\` for an odd file name).
pub(crate) fn digest_of(line: &str) -> Option<String> {
    let d: String = line.trim_start_matches('\\').chars().take(64).collect();
    (d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit())).then(|| d.to_ascii_lowercase())
}

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

/// The ranks to start, each with how, and the notes for the report.
#[derive(Debug, Clone)]
pub struct Planned {
    /// One per rank, in the card's order; a remote rank's is the `ssh` client's.
    pub launches: Vec<Launch>,
    /// How each is started, in the same order.
    pub launchers: Vec<Launcher>,
    /// Per rank: where it runs, with which digest (and NCCL library, when the card records one).
    pub notes: Vec<String>,
}

/// The box the card places `rank` on: its command's `box`, else the box that names the rank.
pub fn box_of(card: &Card, rank: u32) -> Option<String> {
    card.commands
        .iter()
        .find(|c| c.rank == rank)
        .and_then(|c| c.box_name.clone())
        .or_else(|| {
            card.hardware
                .boxes
                .iter()
                .find(|b| b.rank == Some(rank))
                .map(|b| b.name.clone())
        })
}

/// Every box name the card uses.
pub fn card_boxes(card: &Card) -> Vec<String> {
    let mut names: Vec<String> = card.hardware.boxes.iter().map(|b| b.name.clone()).collect();
    for c in &card.commands {
        if let Some(b) = &c.box_name {
            if !names.contains(b) {
                names.push(b.clone());
            }
        }
    }
    names
}

/// The `--box` and `--box-engine` mappings, by box name.
struct Mappings {
    targets: BTreeMap<String, Target>,
    engines: BTreeMap<String, String>,
}

/// The `--box` and `--box-engine` mappings, checked against the card's box names.
fn mappings(card: &Card, a: &BoxArgs) -> Result<Mappings, Fatal> {
    let known = card_boxes(card);
    a.ssh.check_names(&known)?;
    let targets = a.ssh.targets()?;
    let mut engines = BTreeMap::new();
    for spec in &a.box_engines {
        let Some((name, path)) = spec.split_once('=') else {
            return Err(fatal(format!("--box-engine {spec}: expected NAME=PATH")));
        };
        if !targets.contains_key(name) {
            return Err(fatal(format!(
                "--box-engine {}: box {} is not mapped with --box",
                crate::input::shown(spec),
                quote(name)
            )));
        }
        engines.insert(name.to_string(), path.to_string());
    }
    Ok(Mappings { targets, engines })
}

/// Decides where each rank runs and, for a rank on a box, checks its executable there and builds
/// the `ssh` command that starts it. With no `--box`, every rank runs here as before and nothing
/// is checked. With `--engine bundled` the program on a box must be this very rigaudit.
pub fn plan(card: &Card, launches: &[Launch], args: &super::Args) -> Result<Planned, Fatal> {
    let (a, bundled, trust) = (&args.boxes, args.engine == "bundled", args.trust_executable);
    let mut p = Planned {
        launchers: vec![Launcher::Local; launches.len()],
        launches: launches.to_vec(),
        notes: Vec::new(),
    };
    if !a.any() {
        return Ok(p);
    }
    let ssh = Ssh::new(&a.ssh)?;
    let Mappings { targets, engines } = mappings(card, a)?;
    p.notes.extend(a.ssh.resolved()?.1);
    p.notes.extend(super::boxmap::ssh_overrides(&a.ssh));
    let expected = expected(card, bundled)?;
    let mut checked: BTreeMap<(String, String), String> = BTreeMap::new();
    for (l, how) in p.launches.iter_mut().zip(p.launchers.iter_mut()) {
        let name = box_of(card, l.rank);
        let Some(t) = name.as_ref().and_then(|n| targets.get(n)) else {
            let digest = crate::digest::sha256_file(&l.program)
                .unwrap_or_else(|e| format!("not computed ({e})"));
            p.notes.push(format!(
                "rank {} runs here (box {} is not mapped with --box): {} sha256 {digest}",
                l.rank,
                name.as_deref().unwrap_or("(none named)"),
                l.program.display()
            ));
            continue;
        };
        let program = match engines.get(&t.box_name) {
            Some(e) => e.clone(),
            None => l.program.to_str().map(String::from).unwrap_or_default(),
        };
        let key = (t.box_name.clone(), program.clone());
        let note = match checked.get(&key) {
            Some(n) => n.clone(),
            None => {
                let n = check_on_box(&ssh, t, &program, &expected, trust)?;
                checked.insert(key, n.clone());
                n
            }
        };
        p.notes.push(format!("rank {} runs on {note}", l.rank));
        if let Some(n) = nccl_note(&ssh, card, t, l) {
            p.notes.push(format!("rank {}: {n}", l.rank));
        }
        *l = wrap(l, t, &ssh, &program)?;
        *how = Launcher::Ssh {
            box_name: t.box_name.clone(),
            destination: t.to_string(),
        };
    }
    Ok(p)
}

/// What the engine on a box must hash to: the card's digest, or this rigaudit's own for the
/// bundled engine.
fn expected(card: &Card, bundled: bool) -> Result<Expected, Fatal> {
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
fn check_on_box(
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

/// The `ssh` launch of `l` on `t`: the wrapper, the recorded environment, the program and its
/// arguments, every word quoted by [`quote`].
pub fn wrap(l: &Launch, t: &Target, ssh: &Ssh, program: &str) -> Result<Launch, Fatal> {
    let grace = GRACE_SECS.to_string();
    let mut words: Vec<&str> = vec!["/bin/sh", "-c", WRAPPER, "rigaudit-rank", &grace];
    let pairs: Vec<String> = l.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if let Some(bad) = l.env.keys().find(|k| !env_name_ok(k)) {
        return Err(fatal(format!(
            "rank {} on box {}: the recorded variable name {} cannot be passed to a shell (letters, digits and '_' only)",
            l.rank,
            t.box_name,
            crate::input::shown(bad)
        )));
    }
    words.extend(pairs.iter().map(String::as_str));
    words.push("--");
    words.push(program);
    words.extend(l.args.iter().map(String::as_str));
    let line = command_line(&words)
        .map_err(|e| fatal(format!("rank {} on box {}: {e}", l.rank, t.box_name)))?;
    Ok(Launch {
        rank: l.rank,
        program: PathBuf::from("ssh"),
        args: ssh.argv(t, line),
        env: BTreeMap::new(),
        shown: l.shown.clone(),
    })
}

/// The NCCL library the card records, found on the box in the rank's `LD_LIBRARY_PATH`: its
/// digest against the card's for that box and the version its text names. `None` when the card
/// records no NCCL.
fn nccl_note(ssh: &Ssh, card: &Card, t: &Target, l: &Launch) -> Option<String> {
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

/// The host to reach rank 0's server at when rank 0 runs on a box and its command names no host
/// to reach (none, or a wildcard): that box's host.
pub fn rank0_host(card: &Card, a: &BoxArgs, rank0: u32) -> Option<String> {
    let name = box_of(card, rank0)?;
    let spec = a.ssh.targets().ok()?.remove(&name)?;
    Some(if spec.host.contains(':') {
        format!("[{}]", spec.host)
    } else {
        spec.host
    })
}

/// Fills `<name>` placeholders that `sets` names, in one pass (for the plan only; the launch
/// fills through `command::resolve`).
fn fill_shown(s: &str, sets: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        match after.find(['<', '>']) {
            Some(close) if after.as_bytes()[close] == b'>' && close > 0 => {
                out.push_str(&rest[..open]);
                match sets.get(&after[..close]) {
                    Some(v) => out.push_str(v),
                    None => out.push_str(&rest[open..open + close + 2]),
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The program a rank would run on its box (or here): `--box-engine`, else `--engine` (the
/// bundled engine: this rigaudit, run as `rigaudit __engine`).
fn planned_program(m: &Mappings, box_name: Option<&String>, engine: &str) -> String {
    match box_name.and_then(|b| m.engines.get(b)) {
        Some(e) => e.clone(),
        None if engine == "bundled" => std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "rigaudit".into()),
        None => engine.to_string(),
    }
}

/// A word of the plan: quoted as it would be sent, control characters (newlines too) escaped,
/// so a page's item cannot draw lines of its own on the terminal.
fn word(w: &str) -> String {
    crate::input::shown_n(&quote(w), 1 << 16)
}

/// `replay --plan`: every rank with its box and where that box is reached, the program and
/// argv (each word quoted as it would be sent), the environment (a variable that would be
/// refused is marked), and the digests that would be checked before anything starts.
pub fn plan_text(
    card: &Card,
    a: &BoxArgs,
    sets: &BTreeMap<String, String>,
    engine: &str,
    allow_env: &[String],
) -> Result<String, Fatal> {
    let m = mappings(card, a)?;
    let mut out = String::new();
    for c in &card.commands {
        let box_name = c.box_name.clone().or_else(|| box_of(card, c.rank));
        let target = box_name.as_ref().and_then(|b| m.targets.get(b));
        let place = match (&box_name, target) {
            (Some(b), Some(t)) => format!("box {}, on {t} over ssh", shown(b)),
            (Some(b), None) => format!("box {}, here (not mapped with --box)", shown(b)),
            (None, _) => "no box named, here".to_string(),
        };
        out.push_str(&format!("rank {} ({place})\n", c.rank));
        let program = planned_program(&m, box_name.as_ref(), engine);
        let mut words: Vec<String> = c
            .argv
            .iter()
            .skip(1)
            .map(|w| word(&fill_shown(w, sets)))
            .collect();
        if engine == "bundled" {
            words.insert(0, super::command::ENGINE_SUBCOMMAND.into());
        }
        out.push_str(&format!("  run:  {} {}\n", word(&program), words.join(" ")));
        out.push_str(&format!(
            "  argv as recorded: {}\n",
            c.argv.iter().map(|w| word(w)).collect::<Vec<_>>().join(" ")
        ));
        for (k, v) in &c.env {
            let refused = super::command::loads_code(k) && !allow_env.iter().any(|x| x == k);
            let mark = if refused {
                "  (refused: it loads code; --allow-env to pass it)"
            } else {
                ""
            };
            out.push_str(&format!(
                "  env:  {}={}{mark}\n",
                crate::input::shown(k),
                word(&fill_shown(v, sets))
            ));
        }
        out.push_str(&plan_checks(card, box_name.as_deref(), target, &program));
    }
    Ok(out)
}

/// The digests `plan` would check for one rank.
fn plan_checks(
    card: &Card,
    box_name: Option<&str>,
    target: Option<&Target>,
    program: &str,
) -> String {
    let mut out = String::new();
    let digest = card.engine.binary.as_ref().map_or(
        "none recorded (refused unless --trust-executable)".to_string(),
        |b| format!("{} (engine.binary {})", shown(&b.sha256), shown(&b.path)),
    );
    let where_ = if target.is_some() {
        "on the box, with sha256sum"
    } else {
        "here"
    };
    out.push_str(&format!(
        "  check: sha256 of {} {where_} = {digest}\n",
        word(program)
    ));
    if let Some(n) = &card.nccl {
        let d = box_name
            .and_then(|b| n.per_box.iter().find(|x| x.box_name == b))
            .map_or("no digest recorded for this box".to_string(), |x| {
                shown(&x.sha256)
            });
        out.push_str(&format!(
            "  check: NCCL {} {} = sha256 {d}, version {} (in the rank's LD_LIBRARY_PATH; read, never loaded)\n",
            shown(&n.file),
            if target.is_some() { "on the box" } else { "(rehash --file nccl=PATH here)" },
            shown(&n.version)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `sh` makes of `line` (after `exec`): the words, each printed NUL-terminated.
    fn through_shell(shell: &str, words: &[String]) -> Vec<String> {
        // A first word of our own: printf with no word still prints the format once.
        let mut all = vec![
            "/usr/bin/printf".to_string(),
            "%s\\0".to_string(),
            "start".to_string(),
        ];
        all.extend(words.iter().cloned());
        let line = command_line(&all).unwrap();
        let out = Command::new(shell).arg("-c").arg(&line).output().unwrap();
        assert!(out.status.success(), "{shell}: {line:?}: {out:?}");
        let s = String::from_utf8(out.stdout).unwrap();
        let mut v: Vec<String> = s.split('\0').map(String::from).collect();
        assert_eq!(v.pop().as_deref(), Some(""));
        assert_eq!(v.remove(0), "start");
        v
    }

    fn shells() -> Vec<&'static str> {
        ["/bin/sh", "/bin/dash", "/bin/bash", "/bin/zsh", "/bin/ksh"]
            .into_iter()
            .filter(|s| std::path::Path::new(s).exists())
            .collect()
    }

    #[test]
    fn remote_quote_examples() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("'"), r"''\'''");
        assert_eq!(quote("$(id)"), "'$(id)'");
        assert_eq!(
            command_line(&["x", "a;b"]).unwrap(),
            "exec 'x' 'a;b'".to_string()
        );
        assert!(command_line(&["a\0b"]).unwrap_err().contains("NUL"));
    }

    #[test]
    fn remote_quote_nasty_words_arrive_verbatim_in_every_shell() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let words: Vec<String> = [
            "plain",
            "",
            "a b  c",
            "it's",
            "''",
            "\"double\"",
            &format!("$(touch {})", marker.display()),
            &format!("`touch {}`", marker.display()),
            &format!("a;touch {}", marker.display()),
            "a && b || c | d & e",
            "line1\nline2\n",
            "tab\there",
            "back\\slash\\",
            "$HOME ${PATH} $0 $@ $*",
            "*",
            "~",
            "~root",
            "=ls",
            "!!",
            "#comment",
            "-c",
            "--",
            "ünïcødé ✓ 日本",
            "\u{1b}[31mred",
            "{a,b}",
            "a=b",
            "\r\n",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for shell in shells() {
            assert_eq!(through_shell(shell, &words), words, "{shell}");
        }
        assert!(!marker.exists(), "a quoted word ran");
    }

    /// A small seeded generator (xorshift), so a failing case can be replayed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn remote_quote_random_words_round_trip() {
        const ALPHABET: &[&str] = &[
            "'", "\"", "\\", "$", "(", ")", "`", ";", "&", "|", "<", ">", " ", "\t", "\n", "*",
            "?", "[", "]", "{", "}", "~", "#", "!", "=", "%", "a", "Z", "0", "-", "é", "✓",
            "\u{7f}", "\u{1}", "'\\''",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for shell in shells() {
            for _ in 0..40 {
                let words: Vec<String> = (0..rng.next() % 6)
                    .map(|_| {
                        (0..rng.next() % 12)
                            .map(|_| ALPHABET[(rng.next() % ALPHABET.len() as u64) as usize])
                            .collect()
                    })
                    .collect();
                assert_eq!(through_shell(shell, &words), words, "{shell}");
            }
        }
    }

    #[test]
    fn remote_box_specs() {
        let t = parse_box("pgx=auditor@spark-b:2222").unwrap();
        assert_eq!(
            (
                t.box_name.as_str(),
                t.user.as_deref(),
                t.host.as_str(),
                t.port
            ),
            ("pgx", Some("auditor"), "spark-b", Some(2222))
        );
        assert_eq!(t.to_string(), "auditor@spark-b:2222");
        let t = parse_box("a=[::1]:22").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", Some(22)));
        assert_eq!(t.to_string(), "[::1]:22");
        let t = parse_box("a=10.0.0.2").unwrap();
        assert_eq!((t.user, t.port), (None, None));
        for bad in [
            "nobox",
            "=h",
            "a=-oProxyCommand=x",
            "a=u@-h",
            "a=-u@h",
            "a=h:0",
            "a=h:x",
            "a=::1",
            "a=h;id",
            "a=h b",
        ] {
            assert!(parse_box(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn remote_ssh_argv_puts_batch_mode_first_and_the_host_after_dashdash() {
        let a = SshArgs {
            ssh_options: vec!["BatchMode=no".into(), "IdentityFile=/k".into()],
            ssh_config: Some("/cfg".into()),
            ..SshArgs::default()
        };
        let ssh = Ssh::new(&a).unwrap();
        let t = parse_box("b=u@h:2").unwrap();
        let v = ssh.argv(&t, "exec 'x'".into());
        let s = v.join(" ");
        assert!(
            s.starts_with("-T -a -x -o BatchMode=yes -F /cfg -o BatchMode=no -o IdentityFile=/k"),
            "{s}"
        );
        assert!(s.ends_with("-p 2 -l u -- h exec 'x'"), "{s}");
        let bad = SshArgs {
            ssh_options: vec!["ProxyCommand".into()],
            ..SshArgs::default()
        };
        assert!(Ssh::new(&bad).is_err());
    }

    #[test]
    fn remote_digest_comparison() {
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
        assert_eq!(digest_of(&format!("\\{d}  /a\\nb")), Some(d.clone()));
        assert_eq!(digest_of("short  x"), None);
        assert!(env_name_ok("NCCL_IB_HCA") && env_name_ok("_x1"));
        assert!(
            !env_name_ok("1A") && !env_name_ok("A-B") && !env_name_ok("") && !env_name_ok("-i")
        );
    }

    fn gone(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true)
    }

    /// A program that ignores SIGTERM, with a child that does too: end of file on the wrapper's
    /// stdin kills the whole group after the grace.
    #[test]
    fn remote_wrapper_kills_a_group_that_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let script = "trap '' TERM; sleep 300 & echo $$ $! > \"$1\"; wait";
        let l = Launch {
            rank: 0,
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                script.into(),
                "x".into(),
                pids.display().to_string(),
            ],
            env: BTreeMap::new(),
            shown: vec![],
        };
        let w = wrap(&l, &parse_box("b=h").unwrap(), &Ssh::default(), "/bin/sh").unwrap();
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(w.args.last().unwrap())
            .stdin(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while std::fs::read_to_string(&pids).map_or(true, |s| !s.ends_with('\n'))
            && t0.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let ids = std::fs::read_to_string(&pids).unwrap();
        let ids: Vec<&str> = ids.split_whitespace().collect();
        assert_eq!(ids.len(), 2, "{ids:?}");
        assert!(!gone(ids[0]) && !gone(ids[1]));
        let t1 = Instant::now();
        drop(child.stdin.take());
        let status = child.wait().unwrap();
        let waited = t1.elapsed();
        assert_eq!(status.code(), Some(137), "SIGKILL ended the program");
        assert!(waited >= Duration::from_secs(GRACE_SECS), "{waited:?}");
        assert!(waited < Duration::from_secs(3 * GRACE_SECS), "{waited:?}");
        let t2 = Instant::now();
        while !(gone(ids[0]) && gone(ids[1])) && t2.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone(ids[0]) && gone(ids[1]), "left: {ids:?}");
    }

    /// A page's argv item with a newline and an escape sequence cannot draw lines of its own in
    /// the plan.
    #[test]
    fn remote_plan_escapes_what_the_page_wrote() {
        let card: Card = serde_json::from_value(serde_json::json!({
            "hardware": {"description": "t", "boxes": [{"name": "a", "rank": 0}]},
            "engine": {"name": "e"},
            "checkpoint": {"repo": "o/m", "revision": "r"},
            "ranks": 1,
            "commands": [{"rank": 0, "box": "a",
                "argv": ["e", "x\nrank 9 (box evil, on evil over ssh)", "\u{1b}[2J"],
                "env": {"K": "v\nenv:  LD_PRELOAD='/evil.so'"}}],
            "sampling": {"defaults": {}, "defaults_source": "t"},
            "measured": "2025-01-01T00:00:00Z"
        }))
        .unwrap();
        let a = BoxArgs {
            ssh: SshArgs {
                boxes: vec!["a=h".into()],
                ..SshArgs::default()
            },
            ..BoxArgs::default()
        };
        let text = plan_text(&card, &a, &BTreeMap::new(), "/bin/e", &[]).unwrap();
        assert!(!text.contains('\u{1b}'), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("rank ")).count(),
            1,
            "{text}"
        );
        assert_eq!(
            text.lines().filter(|l| l.starts_with("  env:")).count(),
            1,
            "{text}"
        );
        assert!(text.contains("'x\\nrank 9 (box evil"), "{text}");
    }

    #[test]
    fn remote_plan_fills_placeholders_once() {
        let sets = BTreeMap::from([
            ("a".to_string(), "<b>".to_string()),
            ("b".to_string(), "B".to_string()),
        ]);
        assert_eq!(fill_shown("x<a>y<b><c><|eot|>", &sets), "x<b>yB<c><|eot|>");
        assert_eq!(fill_shown("<<a>> a<b", &sets), "<<b>> a<b");
    }

    /// The wrapper run here, as the box would: the words come through `sh`, the variables are
    /// set, and closing its stdin stops the program's group.
    #[test]
    fn remote_wrapper_runs_the_words_and_stops_on_end_of_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let l = Launch {
            rank: 1,
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                "printf '%s|%s' \"$V\" \"$1\" > \"$2\"; exec sleep 300".into(),
                "x".into(),
                "$(id); it's".into(),
                out.display().to_string(),
            ],
            env: BTreeMap::from([("V".to_string(), "a 'b' $(c)\n".to_string())]),
            shown: vec![],
        };
        let t = parse_box("b=h").unwrap();
        let w = wrap(&l, &t, &Ssh::default(), "/bin/sh").unwrap();
        let line = w.args.last().unwrap().clone();
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(&line)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !out.exists() && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let got = std::fs::read_to_string(&out).unwrap_or_default();
        drop(child.stdin.take());
        let status = child.wait().unwrap();
        assert_eq!(got, "a 'b' $(c)\n|$(id); it's");
        assert_eq!(status.code(), Some(143), "SIGTERM ended the program");
        assert!(t0.elapsed() < Duration::from_secs(GRACE_SECS));
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(err.contains("as process group"), "{err}");
    }
}
