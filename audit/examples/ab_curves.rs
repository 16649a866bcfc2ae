//! The operating curve of `rigaudit ab` (issue 36): seeded simulations of interleaved sessions
//! judged by the very code `ab` runs ([`rigaudit_audit::ab::judge_look`] over the look schedule,
//! stopping once settled), against a decode slowdown of 0-10 %. Each block's figures are lognormal
//! around their true value with a block spread, times a machine factor that walks from block to
//! block (the shared VM's drift); B's decode rows are slowed, prefill and TTFT never.
//!
//!     cargo run -p rigaudit-audit --example ab_curves --release -- BLOCK_SD WALK_SD QUARTETS
//!
//! BLOCK_SD and WALK_SD are log spreads (0.02 = 2 %); QUARTETS the most a session takes (the
//! budget). docs/statistics.md gives the values measured on the CI machine and the table printed.

use rigaudit_audit::ab::{judge_look, quartet_order, Block, Looks, Side};
use rigaudit_audit::decide::paired::look_schedule;
use rigaudit_audit::decide::rng::SplitMix64;
use rigaudit_audit::decide::Multiplicity;
use rigaudit_audit::verdict::ReplayVerdict;
use std::collections::BTreeMap;

const SESSIONS: usize = 1000;
const SLOWDOWNS: [f64; 8] = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.07, 0.10];
const ROWS: [(&str, f64, bool); 3] = [
    ("decode.prose", 200.0, true),
    ("prefill.128", 1000.0, false),
    ("ttft.128", 0.13, false),
];

/// One session's blocks, all `quartets` of them.
fn blocks(
    rng: &mut SplitMix64,
    slow: f64,
    (block_sd, walk_sd): (f64, f64),
    quartets: usize,
) -> Vec<Block> {
    let mut machine = 0.0;
    quartet_order(rng.next_u64(), quartets)
        .into_iter()
        .map(|side| {
            machine += walk_sd * rng.normal();
            let figures: BTreeMap<String, Option<f64>> = ROWS
                .iter()
                .map(|(key, value, slowed)| {
                    let is_time = key.starts_with("ttft");
                    let m = if is_time { -machine } else { machine };
                    let s = if *slowed && side == Side::B {
                        (1.0 - slow).ln()
                    } else {
                        0.0
                    };
                    let v = value * (m + s + block_sd * rng.normal()).exp();
                    (key.to_string(), Some(v))
                })
                .collect();
            Block { side, figures }
        })
        .collect()
}

/// The verdicts of one session under the stopping rule, by key.
fn session(
    rng: &mut SplitMix64,
    slow: f64,
    spread: (f64, f64),
    quartets: usize,
) -> BTreeMap<String, (ReplayVerdict, Option<bool>)> {
    let all = blocks(rng, slow, spread, quartets);
    let mut looks = Looks::new(quartets, None);
    let schedule = look_schedule(quartets);
    for (i, &n) in schedule.iter().enumerate() {
        let last = i + 1 == schedule.len();
        let l = judge_look(&all[..4 * n], &mut looks, last, Multiplicity::Holm);
        if l.settled || last {
            return l
                .rows
                .into_iter()
                .map(|r| (r.key, (r.verdict, r.better)))
                .collect();
        }
    }
    BTreeMap::new()
}

fn main() {
    let arg = |i: usize, d: f64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let spread = (arg(1, 0.02), arg(2, 0.01));
    let quartets = arg(3, 12.0) as usize;
    println!(
        "| decode slowdown | decode changed worse | prefill changed | any row changed | prefill, TTFT unchanged |\n|---|---|---|---|---|"
    );
    for slow in SLOWDOWNS {
        let mut rng = SplitMix64::new(36 ^ (slow * 1e4) as u64);
        let (mut worse, mut prefill, mut any, mut flat) = (0, 0, 0, 0);
        for _ in 0..SESSIONS {
            let v = session(&mut rng, slow, spread, quartets);
            worse += usize::from(v["decode.prose"] == (ReplayVerdict::Changed, Some(false)));
            prefill += usize::from(v["prefill.128"].0 == ReplayVerdict::Changed);
            any += usize::from(v.values().any(|x| x.0 == ReplayVerdict::Changed));
            flat += ["prefill.128", "ttft.128"]
                .iter()
                .filter(|k| v[**k].0 == ReplayVerdict::Unchanged)
                .count();
        }
        let pct = |n: usize, of: usize| 100.0 * n as f64 / of as f64;
        println!(
            "| {:.0} % | {:.1} % | {:.1} % | {:.1} % | {:.1} % |",
            100.0 * slow,
            pct(worse, SESSIONS),
            pct(prefill, SESSIONS),
            pct(any, SESSIONS),
            pct(flat, 2 * SESSIONS)
        );
    }
}
