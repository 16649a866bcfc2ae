//! The steps `replay --slurm` runs, as argv (no shell): a rank's step, the digest step, and with
//! `--slurm-pmix` one step of every rank with the probe of its environment.
//!
//! - A rank's step: `srun --jobid J --nodelist NODE -N1 -n1 --kill-on-bad-exit=1 --export=NONE --
//!   /bin/sh -c PID_LINE rigaudit-rank /usr/bin/env -i NAME=VALUE... PROGRAM ARGS...`: the fixed
//!   [`PID_LINE`] prints the pid the program runs as and execs the rest; `env -i` gives the
//!   program exactly its recorded environment, nothing inherited.
//! - The PMIx step, for an engine that takes its rank from Slurm: `srun --jobid J --nodelist
//!   NODE0,NODE1,... -N NODES -n RANKS --distribution=arbitrary --mpi=pmix --label
//!   --kill-on-bad-exit=1 --export=NONE -- /usr/bin/env NAME=VALUE... PROGRAM ARGS...`: task `r`
//!   on the `r`-th node of the list (arbitrary distribution), one recorded command for all; each
//!   line of task `r`'s output labelled `r: `, by which it goes to `engine-logs/rank<r>.log`. `env -i` would clear the
//!   variables PMIx and Slurm give each task (`PMIX_RANK`, `PMIX_NAMESPACE`, the server's URI,
//!   `SLURM_PROCID`), so the step keeps them: `--export=NONE` passes nothing of this process's
//!   environment, `env` adds the recorded variables to what the step holds, and before the ranks
//!   start a probe step of the same shape (`/usr/bin/env`, labelled) shows what that is: a name outside
//!   [`slurm_added`] (`SLURM_*`, `SLURMD_NODENAME`, `PMIX_*`, `PMI_*`, `TMPDIR`,
//!   `CUDA_VISIBLE_DEVICES`) that the card does not record refuses the replay.

use super::command::Launch;
use super::remote::{Launcher, Planned};
use crate::fatal::{fatal, Fatal};
use crate::slurm::command::run;
use crate::ssh::words::{env_name_ok, quote};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

/// The fixed program of a digest step: it reads NUL-terminated paths on its stdin.
pub const DIGEST_STEP: [&str; 5] = ["/usr/bin/xargs", "-0", "-r", "/usr/bin/sha256sum", "--"];

/// The fixed start of a rank's step: one line with the node and the pid the program will run as
/// (`exec` keeps the shell's pid, and `env` execs the program in turn), so that what it maps can
/// be read on the node ([`crate::loaded`]), then the rest of the argv run as it is.
pub const PID_LINE: &str =
    r#"printf 'rigaudit-slurm: rank started on %s as pid %s\n' "$(uname -n)" "$$" >&2; exec "$@""#;

/// The argv of rank `l`'s step on `node` of job `job`, running `program`.
pub fn rank_step(l: &Launch, job: &str, node: &str, program: &str) -> Result<Vec<String>, Fatal> {
    runnable(l, program)?;
    let mut v = step_head(job, node);
    v.extend(["--kill-on-bad-exit=1".into(), "--export=NONE".into()]);
    v.extend(["--", "/bin/sh", "-c", PID_LINE, "rigaudit-rank"].map(String::from));
    v.extend(["/usr/bin/env".into(), "-i".into()]);
    v.extend(l.env.iter().map(|(k, val)| format!("{k}={val}")));
    v.push(program.to_string());
    v.extend(l.args.iter().cloned());
    Ok(v)
}

/// Whether `env` can run `program` with `l`'s recorded variables: names of letters, digits and
/// `_`, an absolute path without `=`.
pub fn runnable(l: &Launch, program: &str) -> Result<(), Fatal> {
    if let Some(bad) = l.env.keys().find(|k| !env_name_ok(k)) {
        return Err(fatal(format!(
            "rank {}: the recorded variable name {} cannot be passed to `env` (letters, digits and '_' only)",
            l.rank,
            crate::input::shown(bad)
        )));
    }
    if program.contains('=') || !program.starts_with('/') {
        return Err(fatal(format!(
            "rank {}: the engine's path {} must be absolute and hold no '=' to run in a Slurm step",
            l.rank,
            quote(program)
        )));
    }
    Ok(())
}

/// `srun --jobid J --nodelist NODE -N1 -n1`.
fn step_head(job: &str, node: &str) -> Vec<String> {
    ["srun", "--jobid", job, "--nodelist", node, "-N1", "-n1"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The argv of the digest step on `node`.
pub fn digest_step(job: &str, node: &str) -> Vec<String> {
    let mut v = step_head(job, node);
    v.push("--export=NONE".into());
    v.push("--".into());
    v.extend(DIGEST_STEP.iter().map(|s| s.to_string()));
    v
}

/// One rank placed: its recorded launch, its box, its node and the engine's path there.
pub struct Placed<'a> {
    /// The rank's resolved command.
    pub launch: &'a Launch,
    /// The card's box (or `rank N`).
    pub box_name: String,
    /// The node it runs on.
    pub node: String,
    /// The engine's path on that node.
    pub program: String,
}

impl Placed<'_> {
    /// How the rank is started: a step of job `job` on its node (`tasks`: the PMIx step's task
    /// count, its output labelled by task).
    pub fn launcher(&self, job: &str, tasks: Option<u32>) -> Launcher {
        Launcher::Slurm {
            box_name: self.box_name.clone(),
            node: self.node.clone(),
            job: job.to_string(),
            tasks,
        }
    }
}

/// Whether Slurm or PMIx put the variable `name` into a step's environment: the only names a
/// rank's environment may hold beyond its recorded ones.
pub fn slurm_added(name: &str) -> bool {
    ["SLURM_", "PMIX_", "PMI_"]
        .iter()
        .any(|p| name.starts_with(p))
        || ["SLURMD_NODENAME", "TMPDIR", "CUDA_VISIBLE_DEVICES"].contains(&name)
}

/// `--slurm-pmix` runs one command for every rank: each rank's recorded argv and environment
/// must be rank 0's (an engine that takes its rank from Slurm records no rank of its own).
pub fn same_command(launches: &[Launch]) -> Result<(), Fatal> {
    let Some(first) = launches.first() else {
        return Ok(());
    };
    for l in &launches[1..] {
        let what = if l.args != first.args {
            "argv"
        } else if l.env != first.env {
            "environment"
        } else {
            continue;
        };
        return Err(fatal(format!(
            "--slurm-pmix runs one command for every rank, but rank {}'s recorded {what} differs from rank {}'s; replay it with a step per rank (without --slurm-pmix)",
            l.rank, first.rank
        )));
    }
    Ok(())
}

/// `srun --jobid J --nodelist N0,N1,... -N NODES -n RANKS --distribution=arbitrary --mpi=pmix`:
/// task `r` on `nodes[r]`.
fn pmix_head(job: &str, nodes: &[String]) -> Vec<String> {
    let distinct: BTreeSet<&String> = nodes.iter().collect();
    let mut v: Vec<String> = ["srun", "--jobid", job, "--nodelist"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.push(nodes.join(","));
    v.extend(["-N".into(), distinct.len().to_string()]);
    v.extend(["-n".into(), nodes.len().to_string()]);
    v.extend(["--distribution=arbitrary".into(), "--mpi=pmix".into()]);
    v
}

/// The argv of the one step of every rank: `l`'s recorded command, `program` the engine.
/// `--label` puts `R: ` before each line of task R's output, by which [`super::launch`] writes
/// it to `engine-logs/rankR.log`.
pub fn pmix_argv(
    l: &Launch,
    job: &str,
    nodes: &[String],
    program: &str,
) -> Result<Vec<String>, Fatal> {
    runnable(l, program)?;
    let mut v = pmix_head(job, nodes);
    v.extend([
        "--label".into(),
        "--kill-on-bad-exit=1".into(),
        "--export=NONE".into(),
    ]);
    v.extend(["--".into(), "/usr/bin/env".into()]);
    v.extend(l.env.iter().map(|(k, val)| format!("{k}={val}")));
    v.push(program.to_string());
    v.extend(l.args.iter().cloned());
    Ok(v)
}

/// The variable names the tasks of a step of the PMIx step's shape hold, found by a probe step
/// (`/usr/bin/env` on every task, `--label`ed so that the tasks' lines do not mix). A line of a
/// value that spans lines can read as a name of its own: a name too many, never one missed.
fn probe_environment(job: &str, nodes: &[String]) -> Result<BTreeSet<String>, Fatal> {
    let mut argv = pmix_head(job, nodes);
    argv.extend(["--label", "--export=NONE", "--", "/usr/bin/env"].map(String::from));
    let o = run(&argv, None, Duration::from_secs(120))
        .map_err(|e| fatal(format!("slurm: the PMIx probe step: {e}")))?;
    if !o.ok() {
        return Err(fatal(format!(
            "slurm: the PMIx probe step ({}) failed: {}",
            argv.join(" "),
            o.said()
        )));
    }
    Ok(o.stdout
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(_, kv)| kv))
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
        .filter(|k| !k.is_empty())
        .collect())
}

/// `--slurm-pmix`: every rank as a task of one step, after the probe showed that the step adds
/// only Slurm's and PMIx's own variables to the recorded ones. The step is rank 0's launch; its
/// output is labelled by task (`--label`) and task r's lines, the label taken off, go to
/// `engine-logs/rank<r>.log` (srun's own, unlabelled, to `rank0.log`).
pub fn pmix_step(
    p: &mut Planned,
    placed: &[Placed],
    job: &str,
    notes: &mut Vec<String>,
) -> Result<(), Fatal> {
    let mut by_rank: Vec<&Placed> = placed.iter().collect();
    by_rank.sort_by_key(|r| r.launch.rank);
    if let Some((i, r)) = by_rank
        .iter()
        .enumerate()
        .find(|(i, r)| r.launch.rank != *i as u32)
    {
        return Err(fatal(format!(
            "--slurm-pmix numbers the tasks 0, 1, ...: the card's ranks are not (rank {} where {i} was expected)",
            r.launch.rank
        )));
    }
    let (Some(first), Some(_)) = (by_rank.first(), by_rank.get(1)) else {
        return Err(fatal("--slurm-pmix needs a card of two ranks or more"));
    };
    if let Some(r) = by_rank.iter().find(|r| r.program != first.program) {
        return Err(fatal(format!(
            "--slurm-pmix runs one program for every rank, but rank {} runs {} and rank {} {}",
            first.launch.rank,
            quote(&first.program),
            r.launch.rank,
            quote(&r.program)
        )));
    }
    let nodes: Vec<String> = by_rank.iter().map(|r| r.node.clone()).collect();
    let held = probe_environment(job, &nodes)?;
    let foreign: Vec<&String> = held
        .iter()
        .filter(|k| !slurm_added(k) && !first.launch.env.contains_key(*k))
        .collect();
    if !foreign.is_empty() {
        return Err(fatal(format!(
            "refusing the PMIx step of Slurm job {job}: its tasks would hold {} beyond the recorded environment, which neither Slurm nor PMIx adds (a TaskProlog or a plugin of the cluster?)",
            foreign.iter().map(|k| quote(k)).collect::<Vec<_>>().join(", ")
        )));
    }
    notes.push(format!(
        "ranks 0-{} run as one PMIx step of Slurm job {job} (srun --mpi=pmix), task r on node r of {}; the step adds {} variables of Slurm's and PMIx's own to the recorded environment; each rank's output is in its own engine-logs/rank<r>.log (srun's own lines in rank0.log)",
        nodes.len() - 1,
        nodes.join(","),
        held.iter().filter(|k| !first.launch.env.contains_key(*k)).count()
    ));
    let argv = pmix_argv(first.launch, job, &nodes, &first.program)?;
    p.launches.push(Launch {
        rank: first.launch.rank,
        program: PathBuf::from("srun"),
        args: argv[1..].to_vec(),
        env: BTreeMap::new(),
        shown: first.launch.shown.clone(),
    });
    p.launchers
        .push(first.launcher(job, Some(nodes.len() as u32)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_rank_step_passes_words_as_they_are() {
        let l = Launch {
            rank: 1,
            program: "/e".into(),
            args: vec!["a b".into(), "$(id)\n'".into()],
            env: BTreeMap::from([("K".to_string(), "v w=$x".to_string())]),
            shown: vec![],
        };
        let v = rank_step(&l, "7", "n2", "/e").unwrap();
        let tail = [
            "--",
            "/bin/sh",
            "-c",
            PID_LINE,
            "rigaudit-rank",
            "/usr/bin/env",
            "-i",
            "K=v w=$x",
            "/e",
            "a b",
            "$(id)\n'",
        ];
        assert_eq!(&v[v.len() - tail.len()..], tail);
        assert_eq!(
            &v[..7],
            ["srun", "--jobid", "7", "--nodelist", "n2", "-N1", "-n1"]
        );
        let mut bad = l.clone();
        bad.env.insert("A=B".into(), "x".into());
        assert!(rank_step(&bad, "7", "n2", "/e").is_err());
        assert!(rank_step(&l, "7", "n2", "/x=y").is_err());
    }

    #[test]
    fn slurm_pmix_step_keeps_what_slurm_adds_and_runs_one_command() {
        for ok in [
            "SLURM_PROCID",
            "SLURMD_NODENAME",
            "PMIX_RANK",
            "PMI_FD",
            "TMPDIR",
        ] {
            assert!(slurm_added(ok), "{ok}");
        }
        for no in [
            "LD_PRELOAD",
            "PATH",
            "SLURMX",
            "PMIXRANK",
            "CUDA_VISIBLE_DEVICES_X",
        ] {
            assert!(!slurm_added(no), "{no}");
        }
        let l = Launch {
            rank: 0,
            program: "/e".into(),
            args: vec!["a b".into()],
            env: BTreeMap::from([("K".to_string(), "v".to_string())]),
            shown: vec![],
        };
        let nodes = ["n2".to_string(), "n1".to_string()];
        let v = pmix_argv(&l, "7", &nodes, "/e").unwrap();
        assert_eq!(
            v,
            [
                "srun",
                "--jobid",
                "7",
                "--nodelist",
                "n2,n1",
                "-N",
                "2",
                "-n",
                "2",
                "--distribution=arbitrary",
                "--mpi=pmix",
                "--label",
                "--kill-on-bad-exit=1",
                "--export=NONE",
                "--",
                "/usr/bin/env",
                "K=v",
                "/e",
                "a b"
            ]
        );
        let mut other = l.clone();
        other.rank = 1;
        assert!(same_command(&[l.clone(), other.clone()]).is_ok());
        other.env.insert("RANK".into(), "1".into());
        let e = same_command(&[l, other]).unwrap_err().to_string();
        assert!(e.contains("rank 1's recorded environment differs"), "{e}");
    }
}
