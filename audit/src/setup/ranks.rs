//! What the recorded commands say of each rank's identity, for `setup.ranks-mismatch`: two
//! commands recorded as the same rank; the rank a command states (an environment variable such as
//! `RANK` or `TF_GLM_RANK`, a flag such as `--node-rank`) against the rank it is recorded as; the
//! world size the ranks state, against each other and against the ranks they must hold; the head
//! address (`MASTER_ADDR`, `NCCL_COMM_ID`, `--master-addr`, `--dist-init-addr`) the ranks name.
//!
//! Only numbers are compared: a placeholder (`<rank>`) states nothing. `LOCAL_RANK` is a process's
//! rank on its node and `WORLD_SIZE` may count every GPU of a node-per-rank card, so a world is
//! judged only as too small for the ranks recorded (a rank at or past the world size cannot exist),
//! never as larger.

use crate::records::card::RankCommand;
use std::collections::{BTreeMap, BTreeSet};

/// Flags that state a command's rank.
const RANK_FLAGS: &[&str] = &["--rank", "--node-rank", "--node_rank", "--machine-rank"];
/// Flags that state the world's size.
const WORLD_FLAGS: &[&str] = &["--world-size", "--nnodes", "--num-nodes", "--num-machines"];
/// Flags that name the head (rank 0) address.
const HEAD_FLAGS: &[&str] = &[
    "--master-addr",
    "--master_addr",
    "--dist-init-addr",
    "--head-address",
];
/// Variables that name the head address.
const HEAD_VARS: &[&str] = &["MASTER_ADDR", "NCCL_COMM_ID"];

/// Whether an environment variable states the command's rank (`RANK`, `X_RANK`, not a local one).
fn is_rank_var(key: &str) -> bool {
    (key == "RANK" || key.ends_with("_RANK")) && !key.ends_with("LOCAL_RANK")
}

/// Whether an environment variable states the world's size.
fn is_world_var(key: &str) -> bool {
    key == "WORLD_SIZE"
        || key == "NNODES"
        || key.ends_with("_WORLD_SIZE")
        || key.ends_with("_WORLD")
        || key.ends_with("_NNODES")
}

/// The values `argv` gives `flags` (`--flag V` or `--flag=V`), with the flag's name.
fn flag_values<'a>(argv: &'a [String], flags: &[&str]) -> Vec<(String, &'a str)> {
    let mut found = Vec::new();
    for (i, word) in argv.iter().enumerate() {
        for f in flags {
            if word == f {
                if let Some(v) = argv.get(i + 1) {
                    found.push((f.to_string(), v.as_str()));
                }
            } else if let Some(v) = word.strip_prefix(f).and_then(|r| r.strip_prefix('=')) {
                found.push((f.to_string(), v));
            }
        }
    }
    found
}

/// The numbers a command states through the variables `is_var` picks and the flags `flags` names:
/// (where, value).
fn stated_numbers(c: &RankCommand, is_var: fn(&str) -> bool, flags: &[&str]) -> Vec<(String, u64)> {
    let vars = c.env.iter().filter(|(k, _)| is_var(k));
    let vars = vars.map(|(k, v)| (format!("{k}={v}"), v.as_str()));
    let flags = flag_values(&c.argv, flags)
        .into_iter()
        .map(|(f, v)| (format!("{f} {v}"), v));
    vars.chain(flags)
        .filter_map(|(at, v)| v.trim().parse::<u64>().ok().map(|n| (at, n)))
        .collect()
}

/// Every disagreement of the commands' rank identities, one line each.
pub(super) fn identity_problems(commands: &[RankCommand], ranks: u32) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for c in commands {
        if !seen.insert(c.rank) {
            problems.push(format!("two commands are recorded as rank {}", c.rank));
        }
        for (at, n) in stated_numbers(c, is_rank_var, RANK_FLAGS) {
            if n != u64::from(c.rank) {
                problems.push(format!("rank {}'s command states {at}", c.rank));
            }
        }
    }
    problems.extend(world_problems(commands, ranks));
    problems.extend(head_problems(commands));
    problems
}

/// Ranks that state different world sizes, or a world too small for the ranks recorded.
fn world_problems(commands: &[RankCommand], ranks: u32) -> Vec<String> {
    let mut by_size: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for c in commands {
        for (at, n) in stated_numbers(c, is_world_var, WORLD_FLAGS) {
            by_size
                .entry(n)
                .or_default()
                .push(format!("rank {} {at}", c.rank));
        }
    }
    let mut problems = Vec::new();
    if by_size.len() > 1 {
        let said: Vec<String> = by_size.values().map(|w| w.join(", ")).collect();
        problems.push(format!(
            "the ranks state different world sizes: {}",
            said.join("; ")
        ));
    }
    let highest = commands.iter().map(|c| c.rank).max().unwrap_or(0);
    let needed = u64::from(ranks.max(highest + 1));
    for (n, where_) in &by_size {
        if *n < needed {
            problems.push(format!(
                "a world of {n} cannot hold the {needed} ranks recorded ({})",
                where_.join(", ")
            ));
        }
    }
    problems
}

/// Ranks that name different head addresses.
fn head_problems(commands: &[RankCommand]) -> Vec<String> {
    let mut by_address: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in commands {
        let vars = c
            .env
            .iter()
            .filter(|(k, _)| HEAD_VARS.contains(&k.as_str()));
        for (k, v) in vars {
            by_address
                .entry(v)
                .or_default()
                .push(format!("rank {} {k}", c.rank));
        }
        for (f, v) in flag_values(&c.argv, HEAD_FLAGS) {
            by_address
                .entry(v)
                .or_default()
                .push(format!("rank {} {f}", c.rank));
        }
    }
    if by_address.len() < 2 {
        return Vec::new();
    }
    let said: Vec<String> = by_address
        .iter()
        .map(|(a, w)| format!("{a} ({})", w.join(", ")))
        .collect();
    vec![format!(
        "the ranks name different head addresses: {}",
        said.join("; ")
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(rank: u32, argv: &[&str], env: &[(&str, &str)]) -> RankCommand {
        let mut c: RankCommand = serde_json::from_value(serde_json::json!({
            "rank": rank, "box": "b", "argv": argv, "env": {}
        }))
        .unwrap();
        c.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        c
    }

    /// The tensorfold seed's shape: TF_GLM_RANK, TF_GLM_WORLD, NCCL_COMM_ID.
    fn seed_like(rank: u32, rank_var: &str, world: &str, head: &str) -> RankCommand {
        let env = [
            ("TF_GLM_RANK", rank_var),
            ("TF_GLM_WORLD", world),
            ("NCCL_COMM_ID", head),
            ("LOCAL_RANK", "0"),
        ];
        command(rank, &["serve", "--parallel", "8"], &env)
    }

    #[test]
    fn commands_that_agree_raise_nothing() {
        let cs = [
            seed_like(0, "0", "2", "<address of rank 0>:29583"),
            seed_like(1, "1", "2", "<address of rank 0>:29583"),
        ];
        assert_eq!(identity_problems(&cs, 2), Vec::<String>::new());
        // A placeholder states no number; a per-GPU WORLD_SIZE larger than the ranks is allowed.
        let cs = [
            command(
                0,
                &["serve", "--node-rank", "<rank>"],
                &[("WORLD_SIZE", "16")],
            ),
            command(1, &["serve", "--node-rank=1"], &[("WORLD_SIZE", "16")]),
        ];
        assert_eq!(identity_problems(&cs, 2), Vec::<String>::new());
    }

    #[test]
    fn two_rank_zeros_and_a_stated_rank_that_differs_are_named() {
        let cs = [seed_like(0, "0", "2", "h:1"), seed_like(0, "0", "2", "h:1")];
        assert_eq!(
            identity_problems(&cs, 2),
            vec!["two commands are recorded as rank 0"]
        );
        let cs = [
            seed_like(0, "0", "2", "h:1"),
            command(1, &["serve", "--node-rank", "0"], &[]),
        ];
        assert_eq!(
            identity_problems(&cs, 2),
            vec!["rank 1's command states --node-rank 0"]
        );
    }

    #[test]
    fn worlds_that_disagree_or_are_too_small_and_two_heads_are_named() {
        let cs = [seed_like(0, "0", "2", "h:1"), seed_like(1, "1", "1", "h:1")];
        assert_eq!(
            identity_problems(&cs, 2),
            vec![
                "the ranks state different world sizes: rank 1 TF_GLM_WORLD=1; rank 0 TF_GLM_WORLD=2",
                "a world of 1 cannot hold the 2 ranks recorded (rank 1 TF_GLM_WORLD=1)",
            ]
        );
        let cs = [
            seed_like(0, "0", "2", "10.0.0.1:29583"),
            seed_like(1, "1", "2", "10.0.0.2:29583"),
        ];
        assert_eq!(
            identity_problems(&cs, 2),
            vec!["the ranks name different head addresses: 10.0.0.1:29583 (rank 0 NCCL_COMM_ID); 10.0.0.2:29583 (rank 1 NCCL_COMM_ID)"]
        );
    }
}
