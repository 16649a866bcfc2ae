//! How a remote root's fixed scripts reach it: over ssh to a box (`--box NAME=[USER@]HOST`), or,
//! with `rehash --slurm`, as a step of one Slurm allocation on the box's node (`--box NAME=NODE`,
//! else the allocation's nodes in the card's order). Either way the script is one of
//! [`super::remote`]'s fixed ones, its arguments are the root's folder and paths inside it, and
//! the paths to hash go on its stdin, never on a command line.
//!
//! A step: `srun --jobid J --nodelist NODE -N1 -n1 --export=NONE -- /usr/bin/env -i
//! PATH=/usr/bin:/bin /bin/sh -c SCRIPT rigaudit-check ARGS...`: an argv (no shell reads it here),
//! nothing of this process's environment, the same bounds of time and output as over ssh.
//!
//! Ctrl-C: the allocation is held by the interrupt handler ([`crate::interrupt::install`]) from
//! its grant; on SIGINT (a terminal sends it to srun too, which on one SIGINT only reports its
//! tasks), SIGTERM or SIGHUP the handler cancels it, which ends the running step, and rigaudit
//! exits with code 130.

use crate::fatal::{fatal, Fatal};
use crate::slurm::place::NodeMap;
use crate::slurm::{Allocation, SlurmArgs};
use crate::ssh::client::{collect_bounded, Bounds, OUT_MAX};
use crate::ssh::{Output, Ssh, Target};
use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a small script (a revision file, a library's version) may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);

/// The channel to the remote roots.
pub enum Reach {
    /// The `ssh` client.
    Ssh(Ssh),
    /// Steps of this allocation (cancelled when dropped).
    Slurm(Allocation),
    /// Steps of a job another part holds (a replay's, whose ranks run as steps of it), run with
    /// `--overlap` so that they run beside the ranks' steps on the nodes' busy CPUs.
    Job(String),
}

impl Reach {
    /// Where `t` is and how it is reached, for messages: `spark-b over ssh`, `node n2 in a step
    /// of Slurm job 17`.
    pub fn how(&self, t: &Target) -> String {
        match self {
            Reach::Ssh(_) => format!("{t} over ssh"),
            Reach::Slurm(a) => format!("node {} in a step of Slurm job {}", t.host, a.job),
            Reach::Job(job) => format!("node {} in a step of Slurm job {job}", t.host),
        }
    }

    /// Whether `o` says the box could not be reached at all (ssh's own exit code 255).
    pub fn unreachable(&self, o: &Output) -> bool {
        matches!(self, Reach::Ssh(_)) && o.code == Some(255)
    }

    /// Runs the fixed `script` with `args` on `t` within the bounds `b`.
    pub fn run_with(
        &self,
        t: &Target,
        script: &str,
        args: &[&str],
        b: Bounds,
    ) -> Result<Output, String> {
        match self {
            Reach::Ssh(ssh) => ssh.run_script_with(t, script, args, b),
            Reach::Slurm(a) => run_step(step_argv(&a.job, &t.host, script, args), b),
            Reach::Job(job) => run_step(overlapping(step_argv(job, &t.host, script, args)), b),
        }
    }

    /// [`Reach::run_with`] with no stdin, [`OUT_MAX`] of output and two minutes.
    pub fn run(&self, t: &Target, script: &str, args: &[&str]) -> Result<Output, String> {
        let b = Bounds {
            input: Vec::new(),
            out_max: OUT_MAX,
            timeout: CHECK_TIMEOUT,
        };
        self.run_with(t, script, args, b)
    }

    /// Starts the fixed `script` with `args` on `t`, its stdout and stderr piped for the caller
    /// to read as a stream (no stdin); the caller waits for it.
    pub fn spawn(&self, t: &Target, script: &str, args: &[&str]) -> Result<Child, String> {
        match self {
            Reach::Ssh(ssh) => ssh.spawn_script(t, script, args),
            Reach::Slurm(a) => spawn_step(&step_argv(&a.job, &t.host, script, args), Stdio::null()),
            Reach::Job(job) => spawn_step(
                &overlapping(step_argv(job, &t.host, script, args)),
                Stdio::null(),
            ),
        }
    }
}

/// The argv of a step running the fixed `script` with `args` on `node` of job `job`.
pub fn step_argv(job: &str, node: &str, script: &str, args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "srun",
        "--jobid",
        job,
        "--nodelist",
        node,
        "-N1",
        "-n1",
        "--export=NONE",
        "--",
        "/usr/bin/env",
        "-i",
        "PATH=/usr/bin:/bin",
        "/bin/sh",
        "-c",
        script,
        "rigaudit-check",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

/// A step's argv with `--overlap` after its `-n1`: it shares the CPUs other steps hold.
fn overlapping(mut argv: Vec<String>) -> Vec<String> {
    let at = argv.iter().position(|w| w == "-n1").map_or(1, |i| i + 1);
    argv.insert(at, "--overlap".into());
    argv
}

fn spawn_step(argv: &[String], stdin: Stdio) -> Result<Child, String> {
    Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start srun: {e}"))
}

/// Runs a step within the bounds `b` (stdin written as it reads, stdout up to `out_max`, killed
/// and reaped past `timeout`), as the ssh client runs a line.
fn run_step(argv: Vec<String>, b: Bounds) -> Result<Output, String> {
    collect_bounded(spawn_step(&argv, Stdio::piped())?, b)
}

/// `rehash --slurm`: one allocation for the roots' boxes, each box on the node `--box NAME=NODE`
/// names or the allocation's next node in the card's order; `boxes` is each root's box, `mapped`
/// the `--box` nodes. The reach and each box's node.
pub fn allocate(
    boxes: &[String],
    mapped: BTreeMap<String, String>,
    a: &SlurmArgs,
) -> Result<(Reach, BTreeMap<String, String>), Fatal> {
    let map = NodeMap {
        ranks: boxes
            .iter()
            .enumerate()
            .map(|(i, b)| (i as u32, b.clone()))
            .collect(),
        mapped,
    };
    // Ctrl-C (SIGINT to the whole foreground group, these steps' srun included), SIGTERM or
    // SIGHUP: the handler cancels the allocation, which ends every step, and exits with 130.
    if let Some(e) = crate::interrupt::install() {
        crate::progress::say(format_args!("rigaudit: warning: {e}"));
    }
    let alloc = Allocation::request(a, map.count(), &map.nodelist())?;
    let nodes = map
        .assign(&alloc.nodes)
        .map_err(|e| fatal(format!("rehash --slurm: {e}")))?;
    Ok((Reach::Slurm(alloc), nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slurm_step_runs_a_fixed_script_with_its_arguments_as_words() {
        let v = step_argv("7", "n2", "exec cat -- \"$1\"", &["/a b/$x"]);
        assert_eq!(
            v[..9],
            [
                "srun",
                "--jobid",
                "7",
                "--nodelist",
                "n2",
                "-N1",
                "-n1",
                "--export=NONE",
                "--"
            ]
        );
        assert_eq!(
            v[9..],
            [
                "/usr/bin/env",
                "-i",
                "PATH=/usr/bin:/bin",
                "/bin/sh",
                "-c",
                "exec cat -- \"$1\"",
                "rigaudit-check",
                "/a b/$x"
            ]
        );
    }
}
