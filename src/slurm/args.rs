//! `--slurm` and its allow-listed options. Each value goes to `salloc` as one `--option=VALUE`
//! word, so no value can become an option of its own.

use crate::fatal::{fatal, Fatal};
use crate::input::shown;

/// Run the ranks as steps of one Slurm allocation (`replay --slurm`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SlurmArgs {
    /// Use one Slurm allocation: replay runs every rank as a step on its node, rehash reads each
    /// `--root BOX=DIR` in a step on its box's node (`--box NAME=NODE` places a box on a node;
    /// without it the card's boxes take the allocation's nodes in order).
    #[arg(long)]
    pub slurm: bool,
    /// The partition to allocate in (`salloc --partition`).
    #[arg(long = "slurm-partition", value_name = "NAME", requires = "slurm")]
    pub partition: Option<String>,
    /// The account to charge (`salloc --account`).
    #[arg(long = "slurm-account", value_name = "NAME", requires = "slurm")]
    pub account: Option<String>,
    /// The hard time limit of the whole replay's allocation, in Slurm's time format (`60`,
    /// `1:30:00`, `1-0`); the job ends then whatever happens to rigaudit.
    #[arg(long = "slurm-time", value_name = "TIME", default_value = "60")]
    pub time: String,
    /// Generic resources per node (`salloc --gres`, say `gpu:4`).
    #[arg(long = "slurm-gres", value_name = "LIST", requires = "slurm")]
    pub gres: Option<String>,
    /// Node features the nodes must have (`salloc --constraint`).
    #[arg(long = "slurm-constraint", value_name = "LIST", requires = "slurm")]
    pub constraint: Option<String>,
    /// The reservation to allocate from (`salloc --reservation`).
    #[arg(long = "slurm-reservation", value_name = "NAME", requires = "slurm")]
    pub reservation: Option<String>,
    /// Ask for whole nodes (`salloc --exclusive`).
    #[arg(long = "slurm-exclusive", requires = "slurm")]
    pub exclusive: bool,
    /// Replay: run every rank as a task of one step (`srun --mpi=pmix`), for an engine that takes its
    /// rank from Slurm or PMIx (`SLURM_PROCID`, `PMIX_RANK`): every rank's recorded command must
    /// be the same.
    #[arg(long = "slurm-pmix", requires = "slurm")]
    pub pmix: bool,
    /// Refuse to run unless the cluster's process tracking is `proctrack/cgroup` (other trackers
    /// can leave a rank's detached children running after the job).
    #[arg(long = "slurm-require-cgroup", requires = "slurm")]
    pub require_cgroup: bool,
}

/// The job name of every allocation a replay makes.
pub const JOB_NAME: &str = "rigaudit-replay";

/// Seconds `salloc` may wait for the nodes (`--immediate`) before it gives up.
pub const WAIT_SECS: u64 = 300;

fn checked(flag: &str, v: &str) -> Result<(), Fatal> {
    if v.is_empty() || v.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(fatal(format!(
            "--{flag} {}: expected a non-empty value without spaces or control characters",
            shown(v)
        )));
    }
    Ok(())
}

impl SlurmArgs {
    /// The `salloc` argv for `nodes` nodes, `nodelist` the nodes named with `--box` (the rest
    /// are the scheduler's choice).
    pub fn salloc(&self, nodes: usize, nodelist: &[String]) -> Result<Vec<String>, Fatal> {
        if !self
            .time
            .chars()
            .all(|c| c.is_ascii_digit() || c == ':' || c == '-')
            || self.time.is_empty()
        {
            return Err(fatal(format!(
                "--slurm-time {}: expected minutes or Slurm's [D-]HH:MM:SS",
                shown(&self.time)
            )));
        }
        let mut v: Vec<String> = ["salloc", "--no-shell", "-N", &nodes.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.push(format!("--time={}", self.time));
        v.push(format!("--job-name={JOB_NAME}"));
        v.push(format!("--immediate={WAIT_SECS}"));
        for (flag, opt, value) in [
            ("slurm-partition", "partition", &self.partition),
            ("slurm-account", "account", &self.account),
            ("slurm-gres", "gres", &self.gres),
            ("slurm-constraint", "constraint", &self.constraint),
            ("slurm-reservation", "reservation", &self.reservation),
        ] {
            if let Some(value) = value {
                checked(flag, value)?;
                v.push(format!("--{opt}={value}"));
            }
        }
        if self.exclusive {
            v.push("--exclusive".into());
        }
        if !nodelist.is_empty() {
            for n in nodelist {
                checked("box", n)?;
            }
            v.push(format!("--nodelist={}", nodelist.join(",")));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_salloc_words_are_one_option_each() {
        let a = SlurmArgs {
            slurm: true,
            partition: Some("--wrap=id".into()),
            time: "1:00:00".into(),
            exclusive: true,
            ..SlurmArgs::default()
        };
        let v = a.salloc(2, &["n2".into()]).unwrap();
        assert_eq!(
            v,
            [
                "salloc",
                "--no-shell",
                "-N",
                "2",
                "--time=1:00:00",
                "--job-name=rigaudit-replay",
                "--immediate=300",
                "--partition=--wrap=id",
                "--exclusive",
                "--nodelist=n2"
            ]
        );
        let bad = SlurmArgs {
            time: "1 --x".into(),
            ..a.clone()
        };
        assert!(bad.salloc(1, &[]).is_err());
        let bad = SlurmArgs {
            account: Some("a b".into()),
            ..a
        };
        assert!(bad.salloc(1, &[]).is_err());
    }
}
