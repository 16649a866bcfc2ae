//! Replay's rank plan: which ranks run on the boxes a card names, reached over ssh
//! ([`crate::ssh`]), and the `ssh` launch of each.
//!
//! A rank whose box is mapped (`--box`, `--box-file`, the policy's `[boxes]`) runs there through
//! OpenSSH's `ssh` client; every other rank runs here as before. The words start `/bin/sh -c
//! WRAPPER rigaudit-rank GRACE`, where WRAPPER is the fixed script [`crate::ssh::WRAPPER`]; the
//! recorded environment follows as `NAME=VALUE` words, then `--`, the program and its arguments.
//! The wrapper exports the variables (their names checked here to be plain identifiers) and
//! starts the program with `setsid` in a process group of its own.
//!
//! - Stopping: rigaudit holds the `ssh` client's stdin open while the rank runs. Closing it (the
//!   replay ends), or the connection dropping (the `ssh` client killed, rigaudit killed: the
//!   client gets `PDEATHSIG` like every rank), is end of file on the wrapper's stdin, and the
//!   wrapper stops the group on the box: SIGTERM, [`crate::ssh::GRACE_SECS`], SIGKILL.
//! - Before any rank starts, the executable's sha256 is computed on the box and compared with the
//!   card's digest as the local check does (or, for the bundled engine, with this rigaudit's own);
//!   a mismatch is refused unless `--trust-executable` ([`super::probe`]).

use super::command::Launch;
use super::probe::{check_on_box, expected, nccl_note};
use crate::fatal::{fatal, Fatal};
use crate::ssh::target::card_boxes;
use crate::ssh::words::{command_line, env_name_ok, quote};
use crate::ssh::{Ssh, SshArgs, Target, GRACE_SECS, WRAPPER};
use rigaudit_audit::records::Card;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
    /// Ranks as steps of one Slurm allocation (`--slurm` and its options): see
    /// [`super::slurm`].
    #[command(flatten)]
    pub slurm: crate::slurm::SlurmArgs,
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
    /// As a step of a Slurm job on one of its nodes; `srun` is the rank's process here.
    Slurm {
        /// The card's box name (or `rank N` when its command names none).
        box_name: String,
        /// The node.
        node: String,
        /// The job id.
        job: String,
        /// With `--slurm-pmix`: the step's task count. Its output is then labelled by srun
        /// (`--label`, `R: ` before each line) and each line goes to task R's own log.
        tasks: Option<u32>,
    },
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
    /// The Slurm allocation the ranks run in (`--slurm`), cancelled when the last clone drops.
    /// (Held here without naming its type: the Slurm plan builds on this module.)
    pub job: Option<std::sync::Arc<dyn std::fmt::Debug + Send + Sync>>,
    /// The host rank 0's server is reached at, when the plan knows it (a Slurm node's address).
    pub rank0_host: Option<String>,
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

/// [`box_of`], or `rank N` when the card places the rank on no box (a box of its own).
pub fn box_or_rank(card: &Card, rank: u32) -> String {
    box_of(card, rank).unwrap_or_else(|| format!("rank {rank}"))
}

/// The `--box` and `--box-engine` mappings, by box name.
pub(super) struct Mappings {
    pub(super) targets: BTreeMap<String, Target>,
    pub(super) engines: BTreeMap<String, String>,
}

/// The `--box` and `--box-engine` mappings, checked against the card's box names.
pub(super) fn mappings(card: &Card, a: &BoxArgs) -> Result<Mappings, Fatal> {
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
        job: None,
        rank0_host: None,
    };
    if !a.any() {
        return Ok(p);
    }
    let ssh = Ssh::new(&a.ssh)?;
    let Mappings { targets, engines } = mappings(card, a)?;
    p.notes.extend(a.ssh.resolved()?.1);
    p.notes.extend(a.ssh.overrides());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ssh::target::parse_box;
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

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
