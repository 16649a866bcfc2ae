//! One Slurm allocation: requested with `salloc --no-shell`, its nodes read back, cancelled with
//! `scancel` when dropped, and held from its grant until then in the Ctrl-C handler's registry
//! ([`crate::interrupt::hold_job`]), which cancels it on Ctrl-C, SIGTERM or SIGHUP. The time
//! limit asked for is the last net: an allocation outlives a rigaudit killed with SIGKILL until
//! then.

use super::args::{SlurmArgs, WAIT_SECS};
use super::command::{run, Output};
use crate::fatal::{fatal, Fatal};
use std::time::Duration;

/// How long a quick client (`squeue`, `scontrol`, `scancel`) may take.
pub const QUICK: Duration = Duration::from_secs(30);

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

/// Runs a quick client; an error naming it when it fails.
pub fn quick(argv: &[&str]) -> Result<Output, Fatal> {
    let o = run(&words(argv), None, QUICK).map_err(|e| fatal(format!("slurm: {e}")))?;
    if !o.ok() {
        return Err(fatal(format!(
            "slurm: {} failed ({}): {}",
            argv.join(" "),
            o.code
                .map_or("killed by a signal".into(), |c| format!("exit code {c}")),
            o.said()
        )));
    }
    Ok(o)
}

/// A granted allocation; dropping it cancels the job.
#[derive(Debug)]
pub struct Allocation {
    /// The job id.
    pub job: String,
    /// Its nodes, in the scheduler's order.
    pub nodes: Vec<String>,
}

/// The job id in salloc's "Granted job allocation N".
pub fn granted(stderr: &str) -> Option<String> {
    let rest = stderr.split("Granted job allocation ").nth(1)?;
    let id: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (!id.is_empty()).then_some(id)
}

impl Allocation {
    /// Asks for `nodes` nodes (`nodelist`: those that must be in it) and waits for them.
    pub fn request(a: &SlurmArgs, nodes: usize, nodelist: &[String]) -> Result<Self, Fatal> {
        let argv = a.salloc(nodes, nodelist)?;
        let o = run(&argv, None, Duration::from_secs(WAIT_SECS + 30))
            .map_err(|e| fatal(format!("slurm: {e}")))?;
        let Some(job) = granted(&o.stderr) else {
            return Err(fatal(format!(
                "slurm: {} granted no allocation: {}",
                argv.join(" "),
                o.said()
            )));
        };
        crate::interrupt::hold_job(&job, "Slurm job", cancel);
        let mut alloc = Allocation {
            job,
            nodes: Vec::new(),
        };
        // From here on, dropping `alloc` cancels the job (and Ctrl-C does).
        alloc.nodes = job_nodes(&alloc.job)?;
        Ok(alloc)
    }
}

/// The nodes of job `job`: `squeue -h -j J -o %N`, expanded by `scontrol show hostnames`.
pub fn job_nodes(job: &str) -> Result<Vec<String>, Fatal> {
    let list = quick(&["squeue", "-h", "-j", job, "-o", "%N"])?;
    let list = list.stdout.trim();
    if list.is_empty() {
        return Err(fatal(format!("slurm: job {job} has no nodes")));
    }
    let names = quick(&["scontrol", "show", "hostnames", list])?;
    Ok(names.stdout.split_whitespace().map(String::from).collect())
}

/// The address the scheduler reaches node `node` at (`NodeAddr` of `scontrol show node`).
pub fn node_addr(node: &str) -> Result<String, Fatal> {
    let o = quick(&["scontrol", "show", "node", node])?;
    field(&o.stdout, "NodeAddr").ok_or_else(|| {
        fatal(format!(
            "slurm: scontrol show node {node} names no NodeAddr"
        ))
    })
}

/// `KEY=VALUE` from `scontrol`'s text (space-separated fields).
pub fn field(text: &str, key: &str) -> Option<String> {
    let want = format!("{key}=");
    text.split_whitespace()
        .find_map(|w| w.strip_prefix(&want))
        .map(String::from)
}

/// The scheduler's `ProctrackType` (`scontrol show config`).
pub fn proctrack() -> Result<String, Fatal> {
    let o = quick(&["scontrol", "show", "config"])?;
    o.stdout
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "ProctrackType").then(|| v.trim().to_string())
        })
        .ok_or_else(|| fatal("slurm: scontrol show config names no ProctrackType"))
}

/// Cancels job `job` (`scancel`); what went wrong, if anything.
pub fn cancel(job: &str) -> Option<String> {
    match run(&words(&["scancel", job]), None, QUICK) {
        Ok(o) if o.ok() => None,
        Ok(o) => Some(format!("scancel {job}: {}", o.said())),
        Err(e) => Some(e),
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        crate::interrupt::forget_job(&self.job);
        if let Some(e) = cancel(&self.job) {
            // Not eprintln!: a panic in drop (stderr's reader gone) would abort the cleanup.
            crate::progress::say(format_args!(
                "rigaudit: slurm: could not cancel job {}: {e}",
                self.job
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_texts_are_read() {
        let e = "salloc: Pending job allocation 17\nsalloc: Granted job allocation 17\n";
        assert_eq!(granted(e).as_deref(), Some("17"));
        assert_eq!(granted("salloc: error: no"), None);
        let node = "NodeName=n2 Arch=x86_64\n   NodeAddr=10.0.0.2 NodeHostName=h";
        assert_eq!(field(node, "NodeAddr").as_deref(), Some("10.0.0.2"));
    }
}
