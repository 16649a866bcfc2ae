//! The Slurm room: how `replay --slurm` asks a cluster's scheduler for nodes and runs there.
//!
//! - [`args`]: the flags, an allow-list (partition, account, time, GRES, constraint, reservation,
//!   exclusive). Nothing that runs code or rewrites the environment (task prologs, `--export`,
//!   container hooks) can be passed.
//! - [`command`]: every Slurm client (`salloc`, `squeue`, `scontrol`, `scancel`, `srun`) is run
//!   with an argv, never through a shell, bounded in time and in output.
//! - [`alloc`]: one allocation for the whole replay (`salloc --no-shell`, a hard time limit), its
//!   nodes and their addresses, cancelled with `scancel` when dropped; the scheduler's process
//!   tracking read from its configuration.
//! - [`place`]: the card's boxes on the allocation's nodes (`--box NAME=NODE`, else in order).
//!
//! The room imports nothing of `replay`; replay's rank plan (`replay::slurm`) builds on it.

pub mod alloc;
pub mod args;
pub mod command;
pub mod place;

pub(crate) use alloc::Allocation;
pub(crate) use args::SlurmArgs;
