//! Tensor parallelism's ranks: who this process is, from the environment as the seed pages place
//! their ranks (`RIGAUDIT_ENGINE_RANK`, `RIGAUDIT_ENGINE_WORLD`, and NCCL's own `NCCL_COMM_ID`,
//! the address and port of rank 0 that every rank names), and the step protocol between rank 0,
//! which serves requests and decides every step, and the other ranks, which follow.
//!
//! Each step rank 0 broadcasts a header (what kind of step, how many tokens, whether it is a
//! decode step), then the step's token ids, positions and slots; every rank then runs the same
//! launches on its own shard, with an all-reduce after each column-split product. While idle,
//! rank 0 broadcasts a heartbeat header every 200 ms (the engine's idle tick), so a follower that
//! hears nothing for [`FOLLOW_SILENCE`] knows rank 0 is gone and exits instead of waiting forever.

use std::time::Duration;

/// The rank variable.
pub const RANK_VAR: &str = "RIGAUDIT_ENGINE_RANK";
/// The world-size variable.
pub const WORLD_VAR: &str = "RIGAUDIT_ENGINE_WORLD";

/// How long a follower waits for rank 0's next header before it takes rank 0 to be gone: 50
/// heartbeats.
pub const FOLLOW_SILENCE: Duration = Duration::from_secs(10);
/// How long any rank waits for one step's collectives before it takes a peer to be gone: a step
/// of the largest prefill the engine batches takes well under a second on a GPU.
pub const STEP_LIMIT: Duration = Duration::from_secs(300);

/// Header kinds.
pub const STEP: i32 = 0;
pub const IDLE: i32 = 1;
pub const STOP: i32 = 2;
/// Header length in i32: kind, tokens, decode-only.
pub const HEADER: usize = 3;

/// This process's place in the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranks {
    pub rank: usize,
    pub world: usize,
}

/// The ranks `get` (the environment) states: neither variable, a world of one; both, as stated.
/// A world above one needs `NCCL_COMM_ID`, or each rank would make a communicator of its own.
pub fn ranks_from(get: impl Fn(&str) -> Option<String>) -> Result<Ranks, String> {
    let num = |var: &str| -> Result<Option<usize>, String> {
        match get(var) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{var}={v:?}: expected a whole number (0, 1, ...)")),
        }
    };
    let ranks = match (num(RANK_VAR)?, num(WORLD_VAR)?) {
        (None, None) => Ranks { rank: 0, world: 1 },
        (Some(rank), Some(world)) => Ranks { rank, world },
        (Some(_), None) => return Err(format!("{RANK_VAR} is set but {WORLD_VAR} is not")),
        (None, Some(_)) => return Err(format!("{WORLD_VAR} is set but {RANK_VAR} is not")),
    };
    if ranks.world == 0 || ranks.rank >= ranks.world {
        return Err(format!(
            "{RANK_VAR}={} {WORLD_VAR}={}: a rank is 0 to world - 1",
            ranks.rank, ranks.world
        ));
    }
    if ranks.world > 1 && get("NCCL_COMM_ID").is_none_or(|v| v.is_empty()) {
        return Err(format!(
            "{WORLD_VAR}={} needs NCCL_COMM_ID=<address of rank 0>:<port>, the same on every rank",
            ranks.world
        ));
    }
    Ok(ranks)
}

/// The ranks this process's environment states.
pub fn ranks_from_env() -> Result<Ranks, String> {
    ranks_from(|k| std::env::var(k).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn ranks_come_from_the_environment_and_bad_ones_say_why() {
        assert_eq!(ranks_from(env(&[])), Ok(Ranks { rank: 0, world: 1 }));
        let two = [
            (RANK_VAR, "1"),
            (WORLD_VAR, "2"),
            ("NCCL_COMM_ID", "10.0.0.1:29500"),
        ];
        assert_eq!(ranks_from(env(&two)), Ok(Ranks { rank: 1, world: 2 }));
        let e = ranks_from(env(&two[..2])).unwrap_err();
        assert!(e.contains("needs NCCL_COMM_ID"), "{e}");
        let e = ranks_from(env(&[(RANK_VAR, "2"), (WORLD_VAR, "2")])).unwrap_err();
        assert!(e.contains("a rank is 0 to world - 1"), "{e}");
        let e = ranks_from(env(&[(RANK_VAR, "0")])).unwrap_err();
        assert!(e.contains("RIGAUDIT_ENGINE_WORLD is not"), "{e}");
        let e = ranks_from(env(&[(RANK_VAR, "one"), (WORLD_VAR, "2")])).unwrap_err();
        assert!(e.contains("expected a whole number"), "{e}");
        // A world of one needs no address: NCCL makes its own id.
        let one = [(RANK_VAR, "0"), (WORLD_VAR, "1")];
        assert_eq!(ranks_from(env(&one)), Ok(Ranks { rank: 0, world: 1 }));
    }
}
