//! How often each side's server starts in `rigaudit ab`: once, both kept up through the blocks
//! (`--launches once`, where every rank of both sides runs on this machine), or once a block.
//!
//! A launch, its readiness wait, its warm-up and its stop took 1.7-2 s of a 4.5 s block of a short
//! contract on the 2-core VM (2026-12-08), against about 1.4 s of requests: with both servers kept
//! up a quartet costs about half, so the budget affords twice the quartets. The idle side's server
//! is not the measured server's process tree, so the load guard counts it as foreign: a side whose
//! server is busy while idle (polling threads) shows in every try of the other. Where both cannot
//! run at once (the second does not start: a GPU both do not fit on, a port taken) each block
//! launches its side's server, and the report says so.

use super::{side_name, Sides};
use crate::fatal::{fatal, Fatal};
use crate::replay::prepared::{Prepared, Started};
use rigaudit_audit::ab::Side;
use rigaudit_audit::records::LoadedRank;
use std::path::Path;

/// `--launches`: how often a side's server starts.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Launches {
    /// Both sides' servers started once and kept up (each launch warmed up once), where every
    /// rank of both runs on this machine; else once a block.
    #[default]
    Once,
    /// Each block starts its side's server, warms it up and stops it.
    EachBlock,
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

/// Starts both sides' servers when `launches` is `once` and both can run here at once (logs
/// under `out/servers/<side>`); `None`, with a note why, when each block launches its own. `Err`
/// when side A's server does not start at all (as a failed first block).
pub(super) fn hold(
    launches: Launches,
    sides: &Sides,
    out: &Path,
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
    let logs = |side| out.join("servers").join(side_name(side));
    let a = start(&sides.a, &logs(Side::A), notes)
        .map_err(|e| fatal(format!("side A's server did not start: {}", e.0)))?;
    let b = match start(&sides.b, &logs(Side::B), notes) {
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
    notes.push("launches: both sides' servers started once, each warmed up by its first block, and kept up through the blocks; each is foreign load to the load guard while the other is measured".into());
    Ok(Some(Held { a, b }))
}

fn start(side: &Prepared, logs: &Path, notes: &mut Vec<String>) -> Result<Started, Fatal> {
    side.start(logs, notes, true)
}

/// Stops both servers; what each mapped (read when it was ready and after the last block).
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
