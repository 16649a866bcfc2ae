//! Judges again the blocks `rigaudit ab` recorded, with the rule as it is now: for a calibration
//! folder of benches/ab/calibrate.sh (`aa-N/`, `ab-N/`, each with `ab.json` and its blocks'
//! bundles), each comparison's blocks in their order, the looks and the stopping rule replayed
//! from the blocks' recorded seconds and the budget; where the rule would have gone on past the
//! recorded blocks, the last recorded quartet's look is taken as the last. Writes
//! `<kind>-<N>.rejudged.json` beside each (`{"comparisons": [...]}`, what benches/ab/summarise.py
//! reads with `--rejudged`).
//!
//!     cargo run -p rigaudit-audit --example ab_rejudge --release -- FOLDER [BUDGET_SECONDS]

use rigaudit_audit::ab::{judge_look, Block, Looked, Looks, Side};
use rigaudit_audit::decide::paired::{look_schedule, FIRST_LOOK};
use rigaudit_audit::decide::Multiplicity;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn read(p: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// The recorded blocks (their figures, the measuring tool's values) and seconds.
fn blocks_of(run: &Path) -> Option<(Vec<Block>, Vec<f64>)> {
    let record = read(&run.join("ab.json"))?;
    let mut blocks = Vec::new();
    let mut seconds = Vec::new();
    for b in record["blocks"].as_array()? {
        let side = if b["side"] == "A" { Side::A } else { Side::B };
        let dir = Path::new(b["dir"].as_str()?).join("bundle/speed/speed-result.json");
        let figures: BTreeMap<String, Option<f64>> = read(&dir)
            .and_then(|r| serde_json::from_value(r["values"].clone()).ok())
            .unwrap_or_default();
        blocks.push(Block { side, figures });
        seconds.push(b["seconds"].as_f64()?);
    }
    Some((blocks, seconds))
}

/// The last look of the blocks under the stopping rule of `rigaudit ab` at `budget` seconds.
fn rejudge(blocks: &[Block], seconds: &[f64], budget: f64) -> Looked {
    let per_block = (seconds[2] + seconds[3]) / 2.0;
    let first: f64 = seconds[..4].iter().sum();
    let planned = 1 + ((budget - first).max(0.0) / (4.0 * per_block)) as usize;
    let mut looks = Looks::new(planned, None);
    let have = blocks.len() / 4;
    let mut last = Looked::default();
    for units in 1..=have {
        let elapsed: f64 = seconds[..4 * units].iter().sum();
        let per_quartet = elapsed / units as f64;
        let stop = budget - elapsed < per_quartet || units >= planned.max(FIRST_LOOK);
        let stop = stop || units == have;
        if look_schedule(planned).contains(&units) || stop {
            last = judge_look(&blocks[..4 * units], &mut looks, stop, Multiplicity::Holm);
            if last.settled || stop {
                break;
            }
        }
    }
    last
}

fn main() {
    let folder = std::env::args().nth(1).expect("FOLDER");
    let budget: f64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(180.0);
    let mut runs: Vec<_> = std::fs::read_dir(&folder)
        .expect("a folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("ab.json").is_file())
        .collect();
    runs.sort();
    for run in runs {
        let Some((blocks, seconds)) = blocks_of(&run).filter(|(b, _)| b.len() >= 4) else {
            eprintln!("{}: no blocks", run.display());
            continue;
        };
        let looked = rejudge(&blocks, &seconds, budget);
        let out = run.with_extension("rejudged.json");
        let text = serde_json::json!({ "comparisons": looked.rows });
        std::fs::write(&out, text.to_string()).expect("written");
        println!("{}: {} quartets", out.display(), blocks.len() / 4);
    }
}
