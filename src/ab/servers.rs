//! How often each side's server starts in `rigaudit ab`: once a quartet, both kept up through
//! its four blocks (`--launches each-quartet`, the default, where every rank of both sides runs on
//! this machine), once for the whole comparison (`once`), or once a block (`each-block`).
//!
//! A launch, its readiness wait, its warm-up and its stop took 1.7-2 s of a 4.5 s block of a short
//! contract on the 2-core VM (2026-12-08), against about 1.4 s of requests. Keeping both servers up
//! saves most of it, but a server started once carries its own state through every block: in an
//! A/A calibration with `once` (2026-12-08) one side's prefill ran 12-28 % faster in three
//! quartets in a row and its decode 3-10 % faster in six (each server's single thread kept its
//! place on the VM's CPUs, and its prefill times fell in two modes, about 520 and 710 ms), and the
//! comparison called an A/A prefill changed. A state that lasts as long as the server is the side's
//! for as long as the server runs, and no number of quartets averages it out. Started afresh each
//! quartet, the two servers of a quartet draw their states anew, so the quartets' spread holds them
//! and the interval covers them; a launch a quartet costs two launches where a launch a block cost
//! four. The idle side's server is not the measured server's process tree, so the load guard
//! counts it as foreign: a server busy while idle shows in every try of the other. Where both
//! cannot run at once (the second does not start: a GPU both do not fit on, a port taken) each
//! block launches its side's server, and the report says so.

use super::{side_name, Sides};
use crate::fatal::{fatal, Fatal};
use crate::replay::prepared::Started;
use rigaudit_audit::ab::Side;
use rigaudit_audit::records::LoadedRank;
use std::path::Path;

/// `--launches`: how often a side's server starts.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Launches {
    /// Both sides' servers started at each quartet's start and kept up through its four blocks
    /// (each launch warmed up once), where every rank of both runs on this machine; else once a
    /// block.
    #[default]
    EachQuartet,
    /// Both started once for the whole comparison: the fewest launches, for engines slow to
    /// start, but a state a server keeps while it runs (its threads' CPUs, its memory) is then
    /// its side's, and the quartets cannot average it out.
    Once,
    /// Each block starts its side's server, warms it up and stops it.
    EachBlock,
}

impl Launches {
    /// Whether the servers are started anew before quartet `q` (from 0), when they are kept up.
    pub(super) fn renews_at(self, q: usize) -> bool {
        match self {
            Launches::EachQuartet => true,
            Launches::Once => q == 0,
            Launches::EachBlock => false,
        }
    }

    /// Whether the block at `index` (from 0) is the first of its side on a server just started:
    /// it measures with the warm-ups. Blocks 0 and 1 of a quartet are one of each side.
    pub(super) fn fresh_at(self, index: usize) -> bool {
        match self {
            Launches::EachQuartet => index % 4 < 2,
            Launches::Once | Launches::EachBlock => index < 2,
        }
    }
}

/// Both sides' servers, started and kept up.
pub(super) struct Held {
    a: Started,
    b: Started,
}

impl Held {
    /// The started ranks of `side`.
    pub(super) fn of(&self, side: Side) -> &Started {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }
}

/// Starts both sides' servers before quartet `q` when `launches` keeps them up and both can run
/// here at once (logs under `out/servers/<quartet>/<side>`; what they mapped read at the first);
/// `None`, with a note why, when each block launches its own. `Err` when side A's server does not
/// start at all (as a failed first block).
pub(super) fn hold(
    launches: Launches,
    sides: &Sides,
    (out, q): (&Path, usize),
    notes: &mut Vec<String>,
) -> Result<Option<Held>, Fatal> {
    let why_not = if launches == Launches::EachBlock {
        Some("--launches each-block")
    } else if !(sides.a.all_here() && sides.b.all_here()) {
        Some("a rank runs on another machine (ssh or Slurm)")
    } else if sides.a.base_url() == sides.b.base_url() {
        Some("both sides' servers would answer at the same address")
    } else {
        None
    };
    if let Some(why) = why_not {
        notes.push(format!(
            "launches: each block starts its side's server ({why})"
        ));
        return Ok(None);
    }
    let logs = |side| {
        let dir = out.join("servers").join(format!("{:03}", q + 1));
        dir.join(side_name(side))
    };
    let read = q == 0;
    let a = sides.a.start(&logs(Side::A), notes, read);
    let a = a.map_err(|e| fatal(format!("side A's server did not start: {}", e.0)))?;
    let b = match sides.b.start(&logs(Side::B), notes, read) {
        Ok(b) => b,
        Err(e) => {
            sides.a.stop(a, notes, None);
            notes.push(format!(
                "launches: each block starts its side's server (side B's did not start beside A's: {})",
                e.0
            ));
            return Ok(None);
        }
    };
    if q == 0 {
        notes.push(match launches {
            Launches::Once => "launches: both sides' servers started once, each warmed up by its first block, and kept up through the comparison; each is foreign load to the load guard while the other is measured",
            _ => "launches: both sides' servers started at each quartet's start, each warmed up by its first block of the quartet, and kept up through the quartet; each is foreign load to the load guard while the other is measured",
        }.into());
    }
    Ok(Some(Held { a, b }))
}

/// Stops both servers; what each mapped (when read: ready, and after its last block).
pub(super) fn release(
    held: Held,
    sides: &Sides,
    notes: &mut Vec<String>,
) -> (Vec<LoadedRank>, Vec<LoadedRank>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    sides.a.stop(held.a, notes, Some(&mut a));
    sides.b.stop(held.b, notes, Some(&mut b));
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::Launches;

    #[test]
    fn each_quartet_starts_afresh_and_warms_the_first_block_of_each_side_in_every_quartet() {
        let q = Launches::EachQuartet;
        assert!((0..5).all(|n| q.renews_at(n)));
        let fresh: Vec<usize> = (0..12).filter(|&i| q.fresh_at(i)).collect();
        assert_eq!(fresh, [0, 1, 4, 5, 8, 9]);
        let once = Launches::Once;
        assert!(once.renews_at(0) && !once.renews_at(1));
        let fresh: Vec<usize> = (0..12).filter(|&i| once.fresh_at(i)).collect();
        assert_eq!(fresh, [0, 1]);
        assert!(!Launches::EachBlock.renews_at(0));
    }
}
