//! `serve --device cuda`: the forward pass on one GPU, alone or as one rank of a tensor-parallel
//! world (see [`super::tp`]): rank 0 serves HTTP, every other rank follows its steps.

use super::model::GpuForward;
use super::nccl;
use super::tp::{self, Ranks};

/// `--nccl`: whether the all-reduces go through NCCL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclUse {
    /// When the library loads (a world of one through NCCL too); required above one rank.
    Auto,
    /// Always; an error when the library does not load.
    On,
    /// Never (a world of one only).
    Off,
}

/// The world this process is a rank of (from the environment), checked against `--nccl`.
pub fn ranks(nccl: NcclUse) -> Result<Ranks, String> {
    let ranks = tp::ranks_from_env()?;
    if ranks.world > 1 && nccl == NcclUse::Off {
        return Err(format!(
            "{}={}: tensor parallelism needs NCCL, and --nccl is off",
            tp::WORLD_VAR,
            ranks.world
        ));
    }
    Ok(ranks)
}

/// Rank `ranks.rank`'s shard of `g` on CUDA device `n` with `slots` KV caches of `window`
/// positions, and what the start line adds for it (the device, and NCCL's version and file, or
/// why NCCL is not in use).
pub fn load(
    g: &crate::gguf::Gguf,
    n: usize,
    slots: usize,
    window: usize,
    ranks: Ranks,
    nccl: NcclUse,
) -> Result<(GpuForward, String), String> {
    let (use_nccl, without) = match nccl {
        NcclUse::On => (true, String::new()),
        NcclUse::Off => (false, " nccl=off".to_string()),
        NcclUse::Auto if ranks.world > 1 => (true, String::new()),
        NcclUse::Auto => match nccl::load() {
            Ok(_) => (true, String::new()),
            Err(e) => (false, format!(" nccl=none ({e})")),
        },
    };
    let gpu = GpuForward::load_ranked(g, n, slots, window, ranks, use_nccl)?;
    let facts = format!(" device=cuda:{n} {}{without}", gpu.facts);
    Ok((gpu, facts))
}

/// A rank above 0: prints its start line, then runs rank 0's steps until rank 0 stops or falls
/// silent.
pub fn follow(mut gpu: GpuForward, start_line: &str) -> Result<(), String> {
    println!("{start_line} following=rank0 (no HTTP)");
    use std::io::Write;
    let _ = std::io::stdout().flush();
    super::guarded("CUDA", || gpu.follow())
}
