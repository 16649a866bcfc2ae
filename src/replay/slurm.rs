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
//! - Ranks: `srun --jobid J --nodelist NODE -N1 -n1 --kill-on-bad-exit=1 --export=NONE --
//!   /usr/bin/env -i NAME=VALUE... PROGRAM ARGS...`, started by [`super::launch`] like a local
//!   rank (srun's output is the rank's log; stopping srun's group cancels the step). `env -i`
//!   gives the program exactly its recorded environment, nothing inherited.
//! - Ending: the allocation is cancelled when the replay ends (its [`Job`] dropped) and by the
//!   Ctrl-C handler, which holds its id ([`super::launch::hold_job`]); its time limit is the
//!   last net.

use super::command::Launch;
use super::probe::{compare, expected, Expected};
use super::remote::{box_of, mappings, Launcher, Planned};
use crate::fatal::{fatal, Fatal};
use crate::slurm::alloc::{node_addr, proctrack};
use crate::slurm::command::run;
use crate::slurm::Allocation;
use crate::ssh::client::digest_of;
use crate::ssh::words::{env_name_ok, quote};
use rigaudit_audit::records::Card;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The fixed program of a digest step: it reads NUL-terminated paths on its stdin.
pub const DIGEST_STEP: [&str; 5] = ["/usr/bin/xargs", "-0", "-r", "/usr/bin/sha256sum", "--"];

/// How long a digest step may take (hashing a large engine on a busy node).
const DIGEST_LIMIT: Duration = Duration::from_secs(300);

/// A replay's allocation; dropping it forgets the job in the Ctrl-C handler's registry, then
/// cancels it.
#[derive(Debug)]
pub struct Job {
    /// The allocation.
    pub alloc: Allocation,
}

impl Drop for Job {
    fn drop(&mut self) {
        super::launch::forget_job(&self.alloc.job);
    }
}

/// Where the ranks go: per rank its box (or `rank N` when none is named) and the boxes `--box`
/// puts on a node.
pub struct NodeMap {
    /// `(rank, box)` in the card's order.
    pub ranks: Vec<(u32, String)>,
    /// Box -> node, from `--box`.
    pub mapped: BTreeMap<String, String>,
}

impl NodeMap {
    /// The ranks' boxes and the `--box` nodes (which with `--slurm` name nodes, not ssh hosts).
    pub fn new(card: &Card, ranks: &[u32], a: &super::remote::BoxArgs) -> Result<Self, Fatal> {
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
        let ranks = ranks
            .iter()
            .map(|&r| (r, box_of(card, r).unwrap_or_else(|| format!("rank {r}"))))
            .collect();
        Ok(NodeMap { ranks, mapped })
    }

    /// The boxes no `--box` places, in the card's order.
    pub fn unmapped(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for (_, b) in &self.ranks {
            if !self.mapped.contains_key(b) && !v.contains(b) {
                v.push(b.clone());
            }
        }
        v
    }

    /// The nodes `--box` names, each once.
    pub fn nodelist(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for (_, b) in &self.ranks {
            if let Some(n) = self.mapped.get(b).filter(|n| !v.contains(n)) {
                v.push(n.clone());
            }
        }
        v
    }

    /// How many nodes to ask for.
    pub fn count(&self) -> usize {
        self.nodelist().len() + self.unmapped().len()
    }

    /// Box -> node, the unplaced boxes taking the allocation's other nodes in order.
    pub fn assign(&self, nodes: &[String]) -> Result<BTreeMap<String, String>, Fatal> {
        let named = self.nodelist();
        let mut free = nodes.iter().filter(|n| !named.contains(n));
        let mut out = self.mapped.clone();
        for b in self.unmapped() {
            let n = free.next().ok_or_else(|| {
                fatal(format!(
                    "slurm: the allocation's nodes ({}) leave none for box {}",
                    nodes.join(","),
                    quote(&b)
                ))
            })?;
            out.insert(b, n.clone());
        }
        Ok(out)
    }
}

/// The argv of rank `l`'s step on `node` of job `job`, running `program`.
pub fn rank_step(l: &Launch, job: &str, node: &str, program: &str) -> Result<Vec<String>, Fatal> {
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
    let mut v = step_head(job, node);
    v.extend(["--kill-on-bad-exit=1".into(), "--export=NONE".into()]);
    v.extend(["--".into(), "/usr/bin/env".into(), "-i".into()]);
    v.extend(l.env.iter().map(|(k, val)| format!("{k}={val}")));
    v.push(program.to_string());
    v.extend(l.args.iter().cloned());
    Ok(v)
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

/// The note on the scheduler's process tracking: a warning unless it is cgroup-based.
pub fn tracking_note() -> String {
    match proctrack() {
        Ok(p) if p == "proctrack/cgroup" => format!("slurm: process tracking is {p}"),
        Ok(p) => format!(
            "warning: slurm: process tracking is {p}, not proctrack/cgroup: a process a rank detaches (a daemon, a setsid child) may outlive its step and the job"
        ),
        Err(e) => format!("warning: slurm: process tracking not known ({e})"),
    }
}

/// Asks for the allocation the node map needs, holds its id for the Ctrl-C handler, and notes
/// it.
fn allocate(
    map: &NodeMap,
    a: &crate::slurm::SlurmArgs,
    notes: &mut Vec<String>,
) -> Result<Arc<Job>, Fatal> {
    if let Some(e) = super::launch::install() {
        notes.push(e);
    }
    let alloc = Allocation::request(a, map.count(), &map.nodelist())?;
    super::launch::hold_job(&alloc.job);
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
/// step. The allocation lives as long as the returned plan's `job`.
pub fn plan(card: &Card, launches: &[Launch], args: &super::Args) -> Result<Planned, Fatal> {
    let a = &args.boxes;
    let ranks: Vec<u32> = launches.iter().map(|l| l.rank).collect();
    let map = NodeMap::new(card, &ranks, a)?;
    let engines = mappings(card, a)?.engines;
    let expected = expected(card, args.engine == "bundled")?;
    let mut notes = vec![tracking_note()];
    let job = allocate(&map, &a.slurm, &mut notes)?;
    let id = job.alloc.job.clone();
    let nodes = map.assign(&job.alloc.nodes)?;
    let mut checked: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut p = Planned {
        launches: Vec::new(),
        launchers: Vec::new(),
        notes: Vec::new(),
        job: None,
        rank0_host: None,
    };
    for (l, (_, b)) in launches.iter().zip(&map.ranks) {
        let node = &nodes[b];
        let program = match engines.get(b) {
            Some(e) => e.clone(),
            None => l.program.to_str().map(String::from).unwrap_or_default(),
        };
        let key = (node.clone(), program.clone());
        if !checked.contains_key(&key) {
            let n = check_on_node(&id, node, &program, &expected, args.trust_executable)?;
            checked.insert(key.clone(), n);
        }
        notes.push(format!(
            "rank {} (box {b}) runs on {}",
            l.rank, checked[&key]
        ));
        p.launches.push(Launch {
            rank: l.rank,
            program: PathBuf::from("srun"),
            args: rank_step(l, &id, node, &program)?[1..].to_vec(),
            env: BTreeMap::new(),
            shown: l.shown.clone(),
        });
        p.launchers.push(Launcher::Slurm {
            box_name: b.clone(),
            node: node.clone(),
            job: id.clone(),
        });
    }
    p.rank0_host = rank0_address(&map, &nodes, &mut notes);
    p.notes = notes;
    p.job = Some(job as Arc<dyn std::fmt::Debug + Send + Sync>);
    Ok(p)
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
    engine: &str,
) -> Result<String, Fatal> {
    use super::plan_text::{fill_shown, planned_program, word};
    let ranks: Vec<u32> = card.commands.iter().map(|c| c.rank).collect();
    let map = NodeMap::new(card, &ranks, a)?;
    let m = mappings(card, a)?;
    let salloc = a.slurm.salloc(map.count(), &map.nodelist())?;
    let show = |v: &[String]| v.iter().map(|w| word(w)).collect::<Vec<_>>().join(" ");
    let mut out = format!("allocation: {}\n", show(&salloc));
    let unmapped = map.unmapped();
    let named = map.nodelist().len();
    for (c, (_, b)) in card.commands.iter().zip(&map.ranks) {
        let node = match map.mapped.get(b) {
            Some(n) => format!("node {} (--box)", crate::input::shown(n)),
            None => {
                let k = unmapped.iter().position(|u| u == b).unwrap_or(0) + 1;
                if named == 0 {
                    format!("node {k} of the allocation")
                } else {
                    format!("the allocation's node {k} not named with --box")
                }
            }
        };
        let node_word = map
            .mapped
            .get(b)
            .cloned()
            .unwrap_or_else(|| "<node>".into());
        out.push_str(&format!(
            "rank {} (box {}, {node})\n",
            c.rank,
            crate::input::shown(b)
        ));
        let program = planned_program(&m, Some(b), engine);
        let mut args: Vec<String> = c.argv.iter().skip(1).map(|w| fill_shown(w, sets)).collect();
        if engine == "bundled" {
            args.insert(0, super::command::ENGINE_SUBCOMMAND.into());
        }
        let l = Launch {
            rank: c.rank,
            program: PathBuf::from(&program),
            args,
            env: c
                .env
                .iter()
                .map(|(k, v)| (k.clone(), fill_shown(v, sets)))
                .collect(),
            shown: Vec::new(),
        };
        let step = rank_step(&l, "<job>", &node_word, &program)?;
        out.push_str(&format!("  step: {}\n", show(&step)));
        out.push_str(&plan_digest(card, &program, &node_word));
    }
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_node_map_places_named_boxes_then_the_rest_in_order() {
        let map = NodeMap {
            ranks: vec![
                (0, "a".into()),
                (1, "b".into()),
                (2, "c".into()),
                (3, "b".into()),
            ],
            mapped: BTreeMap::from([("b".to_string(), "n2".to_string())]),
        };
        assert_eq!(map.count(), 3);
        assert_eq!(map.nodelist(), ["n2"]);
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        let got = map.assign(&nodes).unwrap();
        assert_eq!(
            (got["a"].as_str(), got["b"].as_str(), got["c"].as_str()),
            ("n1", "n2", "n3")
        );
        assert!(map.assign(&nodes[..2]).is_err());
    }

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
}
