//! `ab.*`: two setups measured in one session, interleaved in ABBA quartets, judged by paired
//! ratios ([`crate::decide::paired`]). The runner (`rigaudit ab`) launches the blocks; this
//! module turns the figures each block measured into the report's rows, one look at a time.
//!
//! # Definitions
//!
//! - **Block**: one launch of one side's command, a warm-up, the contract's steps once; its
//!   figures are [`crate::figures::recompute`]'s.
//! - **Rows**: every speed figure (decode, prefill, time to first token, throughput) some block
//!   has; a row's change is B over A, as diff's (rates up and times down are better).
//! - **Verdicts**: as diff's words, *unchanged*, *changed* (better or worse) or *inconclusive*,
//!   by the paired rule, each row's first decision standing ([`judge_look`]); a row with fewer
//!   than two complete quartets, or one missing on a side, is not comparable.
//! - Exit: a changed figure is `ab.changed` (error), as diff's `diff.moved`.

use crate::check::{Check, Stage, StageOut, Staged};
use crate::decide::paired::{self, Spending};
use crate::decide::{self, FigureKind, Moderated, Multiplicity};
use crate::replay::{apply_judgement as apply, Comparison, ReplayVerdict};
use crate::report::{Findings, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What every `ab.*` row holds: [`AB`] decides them.
const BY_AB: Staged = Staged("ab");

/// `ab.changed`.
pub const CHANGED: Check<Staged> = Check {
    id: "ab.changed",
    severity: Severity::Error,
    doc: "A figure changed between the two setups measured in one session, interleaved: its paired change is significant after Holm over the rows and the error rates spent over the looks, and its estimate lies beyond the band.",
    run: BY_AB,
};

/// `ab.inconclusive`.
pub const INCONCLUSIVE: Check<Staged> = Check {
    id: "ab.inconclusive",
    severity: Severity::Info,
    doc: "A figure the interleaved comparison could call neither unchanged nor changed within its budget: its interval reaches across the band's edge; the row names the quartets (four blocks each) that would settle it.",
    run: BY_AB,
};

/// `ab.not-comparable`.
pub const NOT_COMPARABLE: Check<Staged> = Check {
    id: "ab.not-comparable",
    severity: Severity::Warning,
    doc: "A figure the interleaved comparison could not judge: fewer than two complete quartets measured it on both sides (a step that failed, was refused or kept under foreign load in a block).",
    run: BY_AB,
};

/// `ab.session`.
pub const SESSION: Check<Staged> = Check {
    id: "ab.session",
    severity: Severity::Info,
    doc: "What the interleaved session ran: the blocks in their order and seed, the looks, why it stopped (every row decided, or the budget spent), the bands and the pair spread measured, and the blocks that failed.",
    run: BY_AB,
};

/// The interleaved comparison.
pub const AB: Stage = Stage {
    name: BY_AB.0,
    rows: &[
        CHANGED.about(),
        INCONCLUSIVE.about(),
        NOT_COMPARABLE.about(),
        SESSION.about(),
    ],
};

/// `ab.*` checks.
pub const CHECKS: &[Check<Staged>] = &[CHANGED, INCONCLUSIVE, NOT_COMPARABLE, SESSION];

/// A side of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Side {
    /// The first setup.
    A,
    /// The second.
    B,
}

/// The block order of `quartets` quartets, each `A B B A` or `B A A B` as the seeded generator
/// draws it.
pub fn quartet_order(seed: u64, quartets: usize) -> Vec<Side> {
    let mut rng = decide::rng::SplitMix64::new(seed);
    let mut order = Vec::with_capacity(4 * quartets);
    for _ in 0..quartets {
        let (x, y) = match rng.next_u64() & 1 {
            0 => (Side::A, Side::B),
            _ => (Side::B, Side::A),
        };
        order.extend([x, y, y, x]);
    }
    order
}

/// One block's figures, as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Its side.
    pub side: Side,
    /// Its figures ([`crate::figures::recompute`]); an empty map for a block that failed.
    pub figures: BTreeMap<String, Option<f64>>,
}

/// The speed rows some block measured, in key order.
pub fn row_keys(blocks: &[Block]) -> Vec<String> {
    let mut keys: Vec<String> = blocks
        .iter()
        .flat_map(|b| b.figures.keys())
        .filter(|k| FigureKind::of_key(k).is_some_and(|f| f != FigureKind::Quality))
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The changes of `key` over the complete quartets of `blocks` (a quartet whose four blocks all
/// measured it), in time order.
pub fn units_of(blocks: &[Block], key: &str) -> Vec<f64> {
    blocks
        .chunks_exact(4)
        .filter_map(|q| {
            let value = |b: &Block| b.figures.get(key).copied().flatten();
            let side = |s: Side| -> Option<Vec<f64>> {
                q.iter().filter(|b| b.side == s).map(value).collect()
            };
            let (a, b) = (side(Side::A)?, side(Side::B)?);
            paired::unit_change([a[0], a[1]], [b[0], b[1]])
        })
        .collect()
}

/// What one look decided.
#[derive(Debug, Clone, Default)]
pub struct Looked {
    /// Every row, in key order: decided ones as first decided, the rest as this look left them.
    pub rows: Vec<Comparison>,
    /// The band of each kind, in percent, and whether it came from the run's spread.
    pub bands: BTreeMap<&'static str, (f64, bool)>,
    /// Whether every comparable row is decided (unchanged or changed).
    pub settled: bool,
}

/// The state carried from look to look.
#[derive(Debug, Clone)]
pub struct Looks {
    /// The error rates' spending.
    pub spending: Spending,
    /// Each kind's band (log) at the latest look.
    pub bands: BTreeMap<&'static str, (f64, bool)>,
    /// Rows decided at an earlier look.
    pub decided: BTreeMap<String, Comparison>,
    /// The user's band for every kind (log), if given.
    pub fixed_band: Option<f64>,
    /// Quartets planned (for the bands a run resolves).
    pub planned: usize,
}

impl Looks {
    /// The state before the first look, for `planned` quartets at most.
    pub fn new(planned: usize, fixed_band_pct: Option<f64>) -> Looks {
        Looks {
            spending: Spending::for_units(planned),
            bands: BTreeMap::new(),
            decided: BTreeMap::new(),
            fixed_band: fixed_band_pct.map(|p| (p / 100.0).ln_1p()),
            planned,
        }
    }

    /// `planned` quartets rather than fewer, where the budget turned out to afford more than the
    /// first quartet's pace promised (a slow stretch of the machine at the start): the looks to
    /// come spend the error rates left over the longer schedule, the looks made keep what they
    /// spent, so the shares still add up to at most one. Called before the look that would have
    /// been the last.
    pub fn extend(&mut self, planned: usize) {
        if planned <= self.planned {
            return;
        }
        self.planned = planned;
        let looks = paired::look_schedule(planned).len();
        self.spending.planned = looks.max(self.spending.made + 1);
    }
}

/// One look at `blocks`: every row's evidence at this look's share of the error rates (`last`:
/// all that is left), one family under `rule`; a row decided before keeps its first decision.
pub fn judge_look(blocks: &[Block], looks: &mut Looks, last: bool, rule: Multiplicity) -> Looked {
    let keys = row_keys(blocks);
    let units: Vec<Vec<f64>> = keys.iter().map(|k| units_of(blocks, k)).collect();
    let refs: Vec<&[f64]> = units.iter().map(Vec::as_slice).collect();
    let prior = paired::prior_of(&refs);
    set_bands(&keys, &units, &prior, looks);
    let share = looks.spending.next_share(last);
    // A row whose quartet changes are another's, number for number (`decode` is `decode.prose`
    // when one prompt was asked), is one test under two names: it is judged once, so that Holm
    // counts it once, and both names get the judgement.
    let twin_of: Vec<Option<usize>> = (0..keys.len())
        .map(|i| (0..i).find(|&o| units[o].len() >= 2 && units[o] == units[i]))
        .collect();
    let (tested, evidence): (Vec<usize>, Vec<decide::Evidence>) = keys
        .iter()
        .enumerate()
        .filter(|(i, _)| units[*i].len() >= 2 && twin_of[*i].is_none())
        .map(|(i, k)| {
            let kind = FigureKind::of_key(k).unwrap_or(FigureKind::Decode);
            let band = looks.bands.get(kind.name()).map_or(f64::INFINITY, |b| b.0);
            (i, paired::evidence(kind, &units[i], band, share, &prior))
        })
        .unzip();
    let judged = decide::decide_family(evidence, rule);
    let mut rows: Vec<Comparison> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| untested_row(blocks, k, &units[i]))
        .collect();
    let judged: BTreeMap<usize, decide::Judgement> = tested.into_iter().zip(judged).collect();
    for (i, row) in rows.iter_mut().enumerate() {
        let Some(j) = judged.get(&twin_of[i].unwrap_or(i)) else {
            continue;
        };
        apply(row, j, None);
        *row = crate::diff::as_change(row.clone());
        row.why = why(row, j, share);
    }
    for row in &mut rows {
        let first = looks.decided.get(&row.key).cloned();
        match first {
            Some(d) => *row = d,
            None if decided(row) => {
                looks.decided.insert(row.key.clone(), row.clone());
            }
            None => {}
        }
    }
    // Settled: a row decided and every row that could be judged decided (a row no quartet could
    // pair stays not comparable however long the comparison runs).
    let settled = rows.iter().any(decided)
        && rows
            .iter()
            .filter(|r| r.verdict != ReplayVerdict::NotComparable)
            .all(decided);
    let bands = looks
        .bands
        .iter()
        .map(|(k, (b, auto))| (*k, (100.0 * b.exp_m1(), *auto)))
        .collect();
    Looked {
        rows,
        bands,
        settled,
    }
}

fn decided(r: &Comparison) -> bool {
    matches!(r.verdict, ReplayVerdict::Unchanged | ReplayVerdict::Changed)
}

/// Each kind's band at this look: the user's, else what the run resolves at its planned quartets
/// and the spread measured so far, each row's variance moderated toward the family's `prior`
/// ([`paired::resolved_band`]). The spread, not the change, sets it, so it may move from look to
/// look as the spread is known better; a row decided keeps the band it was decided with.
fn set_bands(keys: &[String], units: &[Vec<f64>], prior: &Moderated, looks: &mut Looks) {
    let mut vars: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    for (k, u) in keys.iter().zip(units) {
        let kind = FigureKind::of_key(k).unwrap_or(FigureKind::Decode).name();
        if let Some(s) = paired::unit_stats(u) {
            vars.entry(kind)
                .or_default()
                .push(prior.posterior(s.var, s.df).0);
        }
    }
    for (kind, v) in vars {
        let band = match looks.fixed_band {
            Some(b) => Some((b, false)),
            None => paired::resolved_band(&v, looks.planned).map(|b| (b, true)),
        };
        if let Some(b) = band {
            looks.bands.insert(kind, b);
        }
    }
}

/// A row before judging: the geometric means of each side's blocks, the blocks counted, each
/// quartet's change in percent; not comparable (with why) until judged.
fn untested_row(blocks: &[Block], key: &str, units: &[f64]) -> Comparison {
    let side = |s: Side| -> Vec<f64> {
        blocks
            .iter()
            .filter(|b| b.side == s)
            .filter_map(|b| b.figures.get(key).copied().flatten())
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect()
    };
    let gmean = |xs: &[f64]| -> Option<f64> {
        (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
    };
    let (a, b) = (side(Side::A), side(Side::B));
    let mut row = Comparison::untested(key, (gmean(&a), gmean(&b)), (a.len(), b.len()));
    row.unit_changes = units.iter().map(|u| 100.0 * u.exp_m1()).collect();
    row.why = format!(
        "not comparable: {} complete quartet{} measured it on both sides; two are needed",
        units.len(),
        if units.len() == 1 { "" } else { "s" }
    );
    row
}

/// A judged row's reason in the comparison's words: its change, the interval at this look's
/// level, the quartets, the band, and what settles it.
fn why(r: &Comparison, j: &decide::Judgement, share: f64) -> String {
    let e = &j.evidence;
    let pct = |x: f64| format!("{:+.1} %", 100.0 * x.exp_m1());
    let band = format!("±{:.1} %", 100.0 * e.band.exp_m1());
    let level = 100.0 * (1.0 - 2.0 * paired::ALPHA * share);
    let quartets = e.sizes.0 / 2;
    let interval = format!(
        "{level:.1} % interval {} to {} over {quartets} quartets (error rates spent over the looks)",
        pct(e.lo90),
        pct(e.hi90)
    );
    let p = j.p_adjusted.map_or(String::new(), |p| {
        format!("; p {} after the looks and Holm", decide::show_p(p))
    });
    match r.verdict {
        ReplayVerdict::Unchanged => format!("{interval}: inside the {band} band"),
        ReplayVerdict::Changed => format!("{interval}: beyond the {band} band{p}"),
        _ => {
            let settle = match e.runs_needed {
                Some(decide::RunsNeeded::Runs(n)) => format!(
                    "about {n} quartets ({} blocks) would settle it at this spread",
                    4 * n
                ),
                _ => "no number of quartets settles it at this spread: a wider band".into(),
            };
            format!("{interval}: neither inside the {band} band nor beyond it{p}; {settle}")
        }
    }
}

/// The report's findings of the last look: its rows ([`findings`]), kept as its comparisons, and
/// what the session ran, an `ab.session` finding per line of `session`.
pub fn report(rows: Vec<Comparison>, session: &[String]) -> Findings {
    let mut found = Findings::default();
    found.stage(&AB, |s| {
        findings(&rows, s);
        for line in session {
            s.row(&SESSION).finding(line.clone());
        }
    });
    found.comparisons = rows;
    found
}

/// The report's rows of the last look: a finding per changed, inconclusive or not comparable row.
pub fn findings(rows: &[Comparison], out: &mut StageOut) {
    for c in CHECKS {
        out.decided(c);
    }
    for r in rows {
        let check = match r.verdict {
            ReplayVerdict::Changed | ReplayVerdict::Drifted => &CHANGED,
            ReplayVerdict::Inconclusive => &INCONCLUSIVE,
            ReplayVerdict::NotComparable => &NOT_COMPARABLE,
            _ => continue,
        };
        let change = r.change_shown().map_or(String::new(), |c| format!(" {c}"));
        out.row(check)
            .finding(format!("{}{change}: {}", r.key, r.why))
            .data(serde_json::to_value(r).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(side: Side, decode: f64, prefill: f64) -> Block {
        let mut figures = BTreeMap::new();
        figures.insert("decode".to_string(), Some(decode));
        figures.insert("prefill.128".to_string(), Some(prefill));
        figures.insert("cv".to_string(), Some(3.0));
        Block { side, figures }
    }

    /// A plan extended before its last look: the look at the old last quartet is an interim one,
    /// the shares of every look made, before and after, add up to at most one, and the new last
    /// look spends the rest; a shorter plan changes nothing.
    #[test]
    fn an_extended_plan_keeps_what_was_spent_and_spends_the_rest_at_its_new_end() {
        for (first, longer) in [(3usize, 9usize), (4, 17), (5, 6), (8, 40)] {
            let mut looks = Looks::new(first, None);
            let mut total = 0.0;
            let schedule = paired::look_schedule(first);
            // Every look of the first plan but its last.
            for _ in 1..schedule.len() {
                total += looks.spending.next_share(false);
            }
            looks.extend(first - 1);
            assert_eq!(looks.planned, first, "a shorter plan is not taken");
            looks.extend(longer);
            assert_eq!(looks.planned, longer);
            let mut made = schedule.len() - 1;
            let left = paired::look_schedule(longer).len().max(made + 1) - made;
            for i in 0..left {
                let share = looks.spending.next_share(false);
                assert!(share > 0.0, "{first} -> {longer}: look {i}");
                total += share;
                made += 1;
            }
            assert_eq!(looks.spending.made, made);
            assert!((total - 1.0).abs() < 1e-12, "{first} -> {longer}: {total}");
        }
    }

    /// `quartets` quartets of the seeded order, B's decode `slower` (0.05: 5 % slower), each block
    /// with a small deterministic wobble and the machine drifting 1 % a block.
    fn session(quartets: usize, slower: f64) -> Vec<Block> {
        quartet_order(3, quartets)
            .into_iter()
            .enumerate()
            .map(|(t, side)| {
                let machine = 1.0 - 0.01 * t as f64;
                let wobble = 1.0 + 0.004 * ((t * 7 % 5) as f64 - 2.0);
                let d = if side == Side::B { 1.0 - slower } else { 1.0 };
                block(side, 100.0 * machine * wobble * d, 500.0 * machine * wobble)
            })
            .collect()
    }

    #[test]
    fn the_order_is_abba_or_baab_and_follows_the_seed() {
        let o = quartet_order(11, 8);
        assert_eq!(o.len(), 32);
        for q in o.chunks(4) {
            assert!(q[0] == q[3] && q[1] == q[2] && q[0] != q[1], "{q:?}");
        }
        assert_eq!(o, quartet_order(11, 8));
        assert_ne!(o, quartet_order(12, 8), "another seed, another order");
    }

    #[test]
    fn a_slower_decode_is_changed_worse_and_prefill_unchanged_despite_the_drift() {
        let blocks = session(6, 0.05);
        let mut looks = Looks::new(6, Some(2.0));
        let l = judge_look(&blocks, &mut looks, true, Multiplicity::Holm);
        let row = |k: &str| l.rows.iter().find(|r| r.key == k).unwrap().clone();
        let d = row("decode");
        assert_eq!(d.verdict, ReplayVerdict::Changed, "{}", d.why);
        assert_eq!(d.better, Some(false));
        assert!(
            (d.change_pct.unwrap() + 5.0).abs() < 0.5,
            "{:?}",
            d.change_pct
        );
        assert_eq!(d.unit_changes.len(), 6);
        let p = row("prefill.128");
        assert_eq!(p.verdict, ReplayVerdict::Unchanged, "{}", p.why);
        assert!(l.settled);
        assert!(l.rows.iter().all(|r| r.key != "cv"), "only speed figures");
    }

    #[test]
    fn a_first_decision_stands_and_a_row_short_of_quartets_is_not_comparable() {
        let mut blocks = session(8, 0.05);
        let mut looks = Looks::new(8, Some(2.0));
        let first = judge_look(&blocks[..24], &mut looks, false, Multiplicity::Holm);
        let d = first.rows.iter().find(|r| r.key == "decode").unwrap();
        assert_eq!(d.verdict, ReplayVerdict::Changed, "{}", d.why);
        // Later blocks where B is suddenly faster do not undo it.
        for b in blocks.iter_mut().skip(24) {
            if b.side == Side::B {
                b.figures.insert("decode".into(), Some(200.0));
            }
        }
        let later = judge_look(&blocks, &mut looks, true, Multiplicity::Holm);
        let d2 = later.rows.iter().find(|r| r.key == "decode").unwrap();
        assert_eq!(d2, d);
        let mut short = session(1, 0.0);
        short[1].figures.insert("ttft.128".into(), Some(0.2));
        let l = judge_look(&short, &mut Looks::new(1, None), true, Multiplicity::Holm);
        assert!(!l.settled, "nothing decided is not settled");
        let t = l.rows.iter().find(|r| r.key == "ttft.128").unwrap();
        assert_eq!(t.verdict, ReplayVerdict::NotComparable);
        assert!(t.why.contains("0 complete quartets"), "{}", t.why);
    }

    #[test]
    fn one_figure_under_two_names_is_one_test_in_holm() {
        let blocks = session(6, 0.03);
        let mut twinned = blocks.clone();
        for b in &mut twinned {
            let decode = b.figures["decode"];
            b.figures.insert("decode.prose".into(), decode);
        }
        let look =
            |bs: &[Block]| judge_look(bs, &mut Looks::new(6, Some(2.0)), true, Multiplicity::Holm);
        let (alone, both) = (look(&blocks), look(&twinned));
        let row = |l: &Looked, k: &str| l.rows.iter().find(|r| r.key == k).unwrap().clone();
        assert!(row(&alone, "decode")
            .why
            .contains("after the looks and Holm"));
        assert_eq!(row(&both, "decode").why, row(&alone, "decode").why);
        assert_eq!(row(&both, "decode.prose").why, row(&alone, "decode").why);
        assert_eq!(
            row(&both, "prefill.128").why,
            row(&alone, "prefill.128").why
        );
    }

    #[test]
    fn without_a_band_given_the_band_is_what_the_run_resolves() {
        let blocks = session(6, 0.0);
        let mut looks = Looks::new(16, None);
        let l = judge_look(&blocks, &mut looks, false, Multiplicity::Holm);
        let (pct, auto) = l.bands["decode"];
        assert!(auto && (1.0..=5.0).contains(&pct), "{pct}");
    }
}
