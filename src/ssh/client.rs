//! The `ssh` client: its arguments (checked options first), a line run on a box within bounds of
//! time and output, and what came back.

use super::args::SshArgs;
use super::boxmap::check_option;
use super::target::Target;
use crate::fatal::{fatal, Fatal};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
            check_option(o)
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

    /// `ssh` running `line` on `t` as it is, within the bounds `b` (stdin written as it reads,
    /// stdout up to `out_max`, killed and reaped past `timeout`).
    pub(crate) fn run_line(&self, t: &Target, line: String, b: Bounds) -> Result<Output, String> {
        let child = self.spawn_line(t, line, Stdio::piped())?;
        collect_bounded(child, b)
    }
}

/// What a started client (`ssh`, or `srun` for a Slurm step) gives within the bounds `b`: stdin
/// written as it reads, stdout up to `out_max`, stderr up to [`OUT_MAX`], killed and reaped past
/// `timeout`.
pub(crate) fn collect_bounded(mut child: std::process::Child, b: Bounds) -> Result<Output, String> {
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
pub(crate) const OUT_MAX: u64 = 64 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssh::target::parse_box;

    #[test]
    fn ssh_argv_puts_batch_mode_first_and_the_host_after_dashdash() {
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
    fn sha256sum_lines() {
        let d = "ab".repeat(32);
        assert_eq!(digest_of(&format!("\\{d}  /a\\nb")), Some(d.clone()));
        assert_eq!(digest_of("short  x"), None);
    }
}
