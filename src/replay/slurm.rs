//! Replay's rank plan under Slurm (`--slurm`): one allocation for the whole replay
//! ([`crate::slurm`]), the card's boxes placed on its nodes, the engine's digest checked on each
//! node in a step of its own before any rank starts, and each rank run as a step.
//!
//! - Placing: `--box NAME=NODE` puts a box on a node (the allocation then names those nodes);
//!   the other boxes take the allocation's remaining nodes in the card's order. A rank whose
//!   command names no box counts as a box of its own.
//! - Digests: `srun --jobid J --nodelist NODE -N1 -n1 -- /usr/bin/xargs -0 -r /usr/bin/sha256sum
//!   --`, the path written on the step's stdin, never on a command line; compared with the card's
//!   digest exactly as over ssh ([`super::probe::compare`]), a mismatch refused unless
//!   `--trust-executable`.
//! - Ranks: a step per rank, or with `--slurm-pmix` one step of a task per rank (the argv of
//!   both in [`super::slurm_step`]), started by [`super::launch`] like a local rank (srun's output
//!   is the rank's log; stopping srun's group cancels the step).
//! - Tracking: the scheduler's `ProctrackType` is read before anything is allocated: a warning
//!   when it is not `proctrack/cgroup`, a refusal then with `--slurm-require-cgroup`.
//! - Ending: the allocation is cancelled when the replay ends (its [`Job`] dropped) and by the
//!   Ctrl-C handler, which holds its id ([`crate::interrupt::hold_job`]); its time limit is the
//!   last net. A terminal's Ctrl-C (SIGINT to the whole foreground process group) reaches
//!   rigaudit and the Slurm clients it runs in its own group (salloc, the digest and probe steps),
//!   not the ranks' srun, each in a group of its own: the handler stops the ranks' groups
//!   (srun, signalled, ends its step), cancels the job and exits with code 130.

use super::command::Launch;
use super::probe::{compare, expected, Expected};
use super::remote::{box_or_rank, mappings, Launcher, Planned};
use super::slurm_step::{digest_step, pmix_argv, pmix_step, rank_step, same_command, Placed};
use crate::fatal::{fatal, Fatal};
use crate::slurm::alloc::{cancel, node_addr, proctrack, quick};
use crate::slurm::command::run;
use crate::slurm::place::NodeMap;
use crate::slurm::Allocation;
use crate::ssh::client::digest_of;
use crate::ssh::words::quote;
use rigaudit_audit::records::Card;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a digest step may take (hashing a large engine on a busy node).
const DIGEST_LIMIT: Duration = Duration::from_secs(300);

/// A replay's allocation; dropping it forgets the job in the Ctrl-C handler's registry, then
/// cancels it (see [`Allocation`]).
#[derive(Debug)]
pub struct Job {
    /// The allocation.
    pub alloc: Allocation,
}

/// The ranks' boxes and the `--box` nodes (which with `--slurm` name nodes, not ssh hosts).
pub fn node_map(card: &Card, ranks: &[u32], a: &super::remote::BoxArgs) -> Result<NodeMap, Fatal> {
    let m = mappings(card, a)?;
    let mut mapped = BTreeMap::new();
    for (name, t) in &m.targets {
        if t.user.is_some() || t.port.is_some() {
            return Err(fatal(format!(
                "--box {name}={t}: with --slurm, --box NAME=NODE names a node of the cluster (no user, no port)"
            )));
        }
        mapped.insert(name.clone(), t.host.clone());
    }
    let ranks = ranks.iter().map(|&r| (r, box_or_rank(card, r))).collect();
    Ok(NodeMap { ranks, mapped })
}

/// The sha256 of `path` on `node`, computed in a step (the path on its stdin).
pub fn node_sha256(job: &str, node: &str, path: &str) -> Result<String, Fatal> {
    let mut input = path.as_bytes().to_vec();
    input.push(0);
    let o = run(&digest_step(job, node), Some(&input), DIGEST_LIMIT)
        .map_err(|e| fatal(format!("node {node}: {e}")))?;
    if !o.ok() {
        return Err(fatal(format!(
            "node {node}: the engine {} cannot be read there: {}",
            quote(path),
            o.said()
        )));
    }
    o.stdout.lines().next().and_then(digest_of).ok_or_else(|| {
        fatal(format!(
            "node {node}: sha256sum printed no digest: {}",
            o.said()
        ))
    })
}

/// Checks the engine on `node`; the note says where and with which digest.
fn check_on_node(
    job: &str,
    node: &str,
    program: &str,
    expected: &Expected,
    trust: bool,
) -> Result<String, Fatal> {
    let found = node_sha256(job, node, program)?;
    let place = format!("node {node} of Slurm job {job}: {program} sha256 {found}");
    match compare(expected, &found) {
        Ok(how) => Ok(format!("{place}, {how}")),
        Err(problem) if trust => Ok(format!("{place}, unverified (--trust-executable): {problem}")),
        Err(problem) => Err(fatal(format!(
            "refusing to run {} on node {node} (Slurm job {job}): its sha256 there is {found}; {problem}. Pass --trust-executable to run it anyway",
            quote(program)
        ))),
    }
}

/// The note on the scheduler's process tracking: a warning unless it is cgroup-based, an error
/// then with `--slurm-require-cgroup` (before anything is allocated).
pub fn tracking_note(require_cgroup: bool) -> Result<String, Fatal> {
    let tracking = proctrack();
    if let Ok(p) = &tracking {
        if p == "proctrack/cgroup" {
            return Ok(format!("slurm: process tracking is {p}"));
        }
    }
    let what = match tracking {
        Ok(p) => format!("process tracking is {p}, not proctrack/cgroup"),
        Err(e) => format!("process tracking not known ({e})"),
    };
    if require_cgroup {
        return Err(fatal(format!(
            "refusing to run under Slurm with --slurm-require-cgroup: the cluster's {what} (scontrol show config, ProctrackType); a process a rank detaches could outlive the job"
        )));
    }
    Ok(format!(
        "warning: slurm: {what}: a process a rank detaches (a daemon, a setsid child) may outlive its step and the job"
    ))
}

/// Asks for the allocation the node map needs, holds its id for the Ctrl-C handler, and notes
/// it.
fn allocate(
    map: &NodeMap,
    a: &crate::slurm::SlurmArgs,
    notes: &mut Vec<String>,
) -> Result<Arc<Job>, Fatal> {
    if let Some(e) = crate::interrupt::install() {
        notes.push(e);
    }
    let alloc = Allocation::request(a, map.count(), &map.nodelist())?;
    notes.push(format!(
        "slurm: job {} ({}), nodes {}, time limit {}; cancelled when the replay ends",
        alloc.job,
        crate::slurm::args::JOB_NAME,
        alloc.nodes.join(","),
        a.time
    ));
    Ok(Arc::new(Job { alloc }))
}

/// `--slurm`: allocates, checks the engine's digest on every node, and turns each rank into a
/// step (or, with `--slurm-pmix`, every rank into a task of one step). The allocation lives as
/// long as the returned plan's `job`.
pub fn plan(card: &Card, launches: &[Launch], args: &super::Args) -> Result<Planned, Fatal> {
    let a = &args.boxes;
    let ranks: Vec<u32> = launches.iter().map(|l| l.rank).collect();
    let map = node_map(card, &ranks, a)?;
    if a.slurm.pmix {
        same_command(launches)?;
    }
    let mut notes = vec![tracking_note(a.slurm.require_cgroup)?];
    let job = allocate(&map, &a.slurm, &mut notes)?;
    let id = job.alloc.job.clone();
    let nodes = map.assign(&job.alloc.nodes)?;
    let placed = check_engines(card, launches, args, &map, &nodes, &id, &mut notes)?;
    let mut p = Planned {
        launches: Vec::new(),
        launchers: Vec::new(),
        notes: Vec::new(),
        job: None,
        rank0_host: None,
    };
    if a.slurm.pmix {
        pmix_step(&mut p, &placed, &id, &mut notes)?;
    } else {
        for r in &placed {
            p.launches.push(Launch {
                rank: r.launch.rank,
                program: PathBuf::from("srun"),
                args: rank_step(r.launch, &id, &r.node, &r.program)?[1..].to_vec(),
                env: BTreeMap::new(),
                shown: r.launch.shown.clone(),
            });
            p.launchers.push(r.launcher(&id, None));
        }
    }
    p.rank0_host = rank0_address(&map, &nodes, &mut notes);
    p.notes = notes;
    p.job = Some(job as Arc<dyn std::fmt::Debug + Send + Sync>);
    Ok(p)
}

/// Places each rank on its node and checks the engine's digest there (once per node and path),
/// noting where each rank runs.
fn check_engines<'a>(
    card: &Card,
    launches: &'a [Launch],
    args: &super::Args,
    map: &NodeMap,
    nodes: &BTreeMap<String, String>,
    job: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<Placed<'a>>, Fatal> {
    let engines = mappings(card, &args.boxes)?.engines;
    let expected = expected(card, args.engine == "bundled")?;
    let mut checked: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut placed = Vec::new();
    for (l, (_, b)) in launches.iter().zip(&map.ranks) {
        let node = nodes[b].clone();
        let program = match engines.get(b) {
            Some(e) => e.clone(),
            None => l.program.to_str().map(String::from).unwrap_or_default(),
        };
        let key = (node.clone(), program.clone());
        if !checked.contains_key(&key) {
            let n = check_on_node(job, &node, &program, &expected, args.trust_executable)?;
            checked.insert(key.clone(), n);
        }
        notes.push(format!(
            "rank {} (box {b}) runs on {}",
            l.rank, checked[&key]
        ));
        placed.push(Placed {
            launch: l,
            box_name: b.clone(),
            node,
            program,
        });
    }
    Ok(placed)
}

/// How long [`term_steps`] waits for the steps to end after SIGTERM (the local grace).
const TERM_WAIT: Duration = Duration::from_secs(5);

/// The replay's job id, when its ranks run under Slurm.
fn job_of(launchers: &[Launcher]) -> Option<String> {
    launchers.iter().find_map(|l| match l {
        Launcher::Slurm { job, .. } => Some(job.clone()),
        _ => None,
    })
}

/// Before the ranks are stopped: SIGTERM to every task of the job's steps (`scancel
/// --signal=TERM J`), and up to [`TERM_WAIT`] for the steps to end. srun itself, signalled,
/// would kill its step's tasks at once (SIGKILL: "forcing job termination"); this way each rank
/// gets SIGTERM and can shut down as it would anywhere. A rank that ignores it is stopped
/// afterwards with its srun. `None` when no rank ran under Slurm.
pub fn term_steps(launchers: &[Launcher]) -> Option<String> {
    let job = job_of(launchers)?;
    if let Err(e) = quick(&["scancel", "--signal=TERM", &job]) {
        return Some(format!(
            "warning: slurm: could not send SIGTERM to the steps of job {job}: {e}"
        ));
    }
    let t0 = Instant::now();
    while t0.elapsed() < TERM_WAIT {
        match quick(&["squeue", "-h", "-s", "-j", &job, "-o", "%i"]) {
            Ok(o) if o.stdout.trim().is_empty() => {
                return Some(format!(
                    "slurm: SIGTERM sent to the ranks' steps (scancel --signal=TERM {job}); every step ended within {:.1} s",
                    t0.elapsed().as_secs_f64()
                ))
            }
            Err(_) => break,
            Ok(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    Some(format!(
        "slurm: SIGTERM sent to the ranks' steps (scancel --signal=TERM {job}); a step still ran after {} s and was stopped with its srun",
        TERM_WAIT.as_secs()
    ))
}

/// How long [`job_ended`] waits for a cancelled job to leave the queue.
const GONE_WAIT: Duration = Duration::from_secs(15);

/// After the ranks stopped: cancels the replay's job and waits up to [`GONE_WAIT`] for it to
/// leave the queue. A job still there (COMPLETING) holds a process a rank left behind, a
/// detached child that the cluster's tracking did not take: a warning names its nodes. `None`
/// when no rank ran under Slurm.
pub fn job_ended(launchers: &[Launcher]) -> Option<String> {
    let job = job_of(launchers)?;
    if let Some(e) = cancel(&job) {
        return Some(format!("warning: slurm: could not cancel job {job}: {e}"));
    }
    let t0 = Instant::now();
    loop {
        let seen = quick(&["squeue", "-h", "-j", &job, "-o", "%T %N"]);
        let left = match &seen {
            Ok(o) => o.stdout.trim().to_string(),
            Err(e) if e.to_string().contains("Invalid job id") => String::new(),
            Err(e) => {
                return Some(format!(
                    "warning: slurm: job {job} cancelled; its end not seen: {e}"
                ))
            }
        };
        if left.is_empty() {
            return Some(format!(
                "slurm: job {job} cancelled and gone from the queue"
            ));
        }
        if t0.elapsed() > GONE_WAIT {
            return Some(format!(
                "warning: slurm: job {job} is still in the queue ({left}) {} s after it was cancelled: a process a rank left behind (a detached child the cluster's process tracking did not take) may still run there; the job ends when it does",
                GONE_WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Rank 0's address: the node's `NodeAddr` (noted; `--base-url` names another).
fn rank0_address(
    map: &NodeMap,
    nodes: &BTreeMap<String, String>,
    notes: &mut Vec<String>,
) -> Option<String> {
    let (rank, b) = map.ranks.iter().min_by_key(|(r, _)| *r)?;
    let node = nodes.get(b)?;
    match node_addr(node) {
        Ok(addr) => {
            notes.push(format!(
                "rank {rank}'s address: {addr}, node {node}'s NodeAddr (pass --base-url to reach it at another address)"
            ));
            Some(if addr.contains(':') {
                format!("[{addr}]")
            } else {
                addr
            })
        }
        Err(e) => {
            notes.push(format!("rank {rank}'s address: not known ({e})"));
            None
        }
    }
}

/// `replay --slurm --plan`: the allocation it would ask for, each rank's node and step, and the
/// digests it would check; allocates nothing.
pub fn plan_text(
    card: &Card,
    a: &super::remote::BoxArgs,
    sets: &BTreeMap<String, String>,
    (engine, allow_env): (&str, &[String]),
) -> Result<String, Fatal> {
    use super::plan_text::{planned_program, word};
    let ranks: Vec<u32> = card.commands.iter().map(|c| c.rank).collect();
    let map = node_map(card, &ranks, a)?;
    let m = mappings(card, a)?;
    let salloc = a.slurm.salloc(map.count(), &map.nodelist())?;
    let show = |v: &[String]| v.iter().map(|w| word(w)).collect::<Vec<_>>().join(" ");
    let mut out = format!("allocation: {}\n", show(&salloc));
    let mut pmix: Vec<(Launch, String, String)> = Vec::new();
    for (c, (_, b)) in card.commands.iter().zip(&map.ranks) {
        let (node, node_word) = planned_node(&map, b);
        out.push_str(&format!(
            "rank {} (box {}, {node})\n",
            c.rank,
            crate::input::shown(b)
        ));
        let program = planned_program(&m, Some(b), engine);
        let (l, refused) = planned_launch(c, &program, sets, (engine, allow_env));
        for r in refused {
            out.push_str(&format!("  env refused, not set: {r}\n"));
        }
        if a.slurm.pmix {
            out.push_str(&format!("  task {} of the PMIx step\n", c.rank));
        } else {
            let step = rank_step(&l, "<job>", &node_word, &program)?;
            out.push_str(&format!("  step: {}\n", show(&step)));
        }
        out.push_str(&plan_digest(card, &program, &node_word));
        pmix.push((l, node_word, program));
    }
    if a.slurm.pmix {
        let launches: Vec<Launch> = pmix.iter().map(|(l, _, _)| l.clone()).collect();
        same_command(&launches)?;
        let nodes: Vec<String> = pmix.iter().map(|(_, n, _)| n.clone()).collect();
        if let Some((l, _, program)) = pmix.first() {
            let step = pmix_argv(l, "<job>", &nodes, program)?;
            out.push_str(&format!(
                "one step, every rank a task (after a probe of its environment):\n  step: {}\n",
                show(&step)
            ));
        }
    }
    Ok(out)
}

/// Where the plan places box `b`, in words, and the node's word in a step (`<node>` when the
/// scheduler picks it).
fn planned_node(map: &NodeMap, b: &str) -> (String, String) {
    if let Some(n) = map.mapped.get(b) {
        return (
            format!("node {} (--box)", crate::input::shown(n)),
            n.clone(),
        );
    }
    let unmapped = map.unmapped();
    let k = unmapped.iter().position(|u| u == b).unwrap_or(0) + 1;
    let words = if map.nodelist().is_empty() {
        format!("node {k} of the allocation")
    } else {
        format!("the allocation's node {k} not named with --box")
    };
    (words, "<node>".into())
}

/// Rank `c`'s command as the plan shows it: placeholders filled where `--set` gives them, the
/// variables the allow-list refuses left out (and returned, each with its reason).
fn planned_launch(
    c: &rigaudit_audit::records::card::RankCommand,
    program: &str,
    sets: &BTreeMap<String, String>,
    (engine, allow_env): (&str, &[String]),
) -> (Launch, Vec<String>) {
    use super::plan_text::{fill_shown, word};
    let mut args: Vec<String> = c.argv.iter().skip(1).map(|w| fill_shown(w, sets)).collect();
    if engine == "bundled" {
        args.insert(0, super::command::ENGINE_SUBCOMMAND.into());
    }
    let mut env = BTreeMap::new();
    let mut refused = Vec::new();
    for (k, v) in &c.env {
        let filled = fill_shown(v, sets);
        match super::command::env_refusal(k, v, &filled, allow_env) {
            Some(why) => refused.push(format!("{}={} ({why})", crate::input::shown(k), word(v))),
            None => {
                env.insert(k.clone(), filled);
            }
        }
    }
    let l = Launch {
        rank: c.rank,
        program: PathBuf::from(program),
        args,
        env,
        shown: Vec::new(),
    };
    (l, refused)
}

/// The digest the plan would check for one rank, and the step that would compute it.
fn plan_digest(card: &Card, program: &str, node: &str) -> String {
    use super::plan_text::word;
    let digest = card.engine.binary.as_ref().map_or(
        "none recorded (refused unless --trust-executable)".to_string(),
        |b| {
            format!(
                "{} (engine.binary {})",
                crate::input::shown(&b.sha256),
                crate::input::shown(&b.path)
            )
        },
    );
    let step: Vec<String> = digest_step("<job>", node).iter().map(|w| word(w)).collect();
    format!(
        "  check: sha256 of {} on the node = {digest}, by the step {} (the path on its stdin)\n",
        word(program),
        step.join(" ")
    )
}
