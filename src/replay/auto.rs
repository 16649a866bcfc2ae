//! `--runs auto`: after the first session, the replay measures more runs of the steps whose
//! interval still reaches across their band, as many as the spread measured says would settle
//! each (the rows' `runs_needed_replayed`: runs on the replayed side alone, the record's runs as
//! they are, `decide::ratio::runs_needed_on_b`), within a time budget; the runs of every session
//! are pooled (`rigaudit_audit::replay::pool`) and judged once more.
//!
//! The runs of a part go to all of its steps (a contract's `runs` counts for every prompt or
//! depth), so a part takes the most any of its steps needs. The time of one more try is the first
//! session's time over its counted tries (startup included, so it is over- rather than
//! underestimated); a round that does not fit the budget left is cut to what does, and none runs
//! once nothing fits. At most [`ROUNDS`] rounds, and at most [`MAX_RUNS`] runs a step.

use rigaudit_audit::records::SpeedContract;
use rigaudit_audit::replay::{Comparison, Inconclusive, ReplayVerdict};
use rigaudit_audit::Findings;
use std::collections::BTreeMap;
use std::time::Duration;

/// The most top-up rounds after the first session.
pub const ROUNDS: usize = 3;

/// The most runs a side one step gets.
pub const MAX_RUNS: usize = 64;

/// How many runs each step takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunsMode {
    /// The recorded contract's runs.
    Recorded,
    /// The recorded runs first, then as many more as the spread measured needs, within
    /// `--budget`.
    Auto,
}

/// `--budget`: `90s`, `10m`, `1h`, or plain seconds; at least one second, at most a day.
pub fn parse_budget(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => {
            return Err(format!(
                "'{text}': expected a number of seconds, or one with s, m or h (90s, 10m, 1h)"
            ))
        }
    };
    let n: u64 = number
        .parse()
        .map_err(|_| format!("'{text}': expected a whole number before the unit (90s, 10m, 1h)"))?;
    let secs = n.saturating_mul(scale);
    if !(1..=86_400).contains(&secs) {
        return Err(format!("'{text}': a budget between 1 second and 24 hours"));
    }
    Ok(Duration::from_secs(secs))
}

/// The part of a contract whose runs a step's key counts; `None` for the long answer (one run
/// by design) and quality.
pub fn part_of(key: &str) -> Option<&'static str> {
    match key.split('.').next().unwrap_or(key) {
        "decode" => Some("decode"),
        "prefill" | "ttft" => Some("prefill"),
        "conc_total" | "conc_per_request" => Some("conc"),
        "ctx_decode" | "ctx_prefill" => Some("ctx"),
        _ => None,
    }
}

/// What one step still needs, after a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Judged (reproduced or drifted), or nothing more runs could do (its verdict's reason).
    Done(&'static str),
    /// This many runs on the replayed side in all would settle it.
    Runs(usize),
    /// No number of runs settles it at the spread measured (the session term, or the record's
    /// own runs, too wide).
    NotByRuns,
}

/// What a step needs, from its row: only a same-hardware speed row whose interval reaches across
/// the band needs runs, as many on the replayed side as its `runs_needed_replayed` says.
pub fn need_of(row: &Comparison) -> Need {
    if row.informational || part_of(&row.key).is_none() {
        return Need::Done("not judged by runs");
    }
    match row.verdict {
        ReplayVerdict::Reproduced | ReplayVerdict::Drifted => return Need::Done("settled"),
        ReplayVerdict::Inconclusive if row.inconclusive == Some(Inconclusive::WideInterval) => {}
        _ => return Need::Done("not judged by runs"),
    }
    match row.runs_needed_replayed {
        Some(n) if n > 0 && n <= MAX_RUNS => Need::Runs(n.max(row.n_replayed)),
        _ => Need::NotByRuns,
    }
}

/// The runs to add per part for one round: each part the most its steps need beyond what they
/// have, scaled down to what `afford` tries (warm-ups included) can pay for by the contract `c`
/// topped up ([`tries_of`]); empty when nothing needs more or nothing fits.
pub fn round_plan(
    rows: &[Comparison],
    c: &SpeedContract,
    afford: usize,
) -> BTreeMap<&'static str, u32> {
    let mut parts: BTreeMap<&'static str, u32> = BTreeMap::new();
    for r in rows {
        if let (Some(part), Need::Runs(n)) = (part_of(&r.key), need_of(r)) {
            let extra = n.saturating_sub(r.n_replayed) as u32;
            let e = parts.entry(part).or_insert(0);
            *e = (*e).max(extra);
        }
    }
    parts.retain(|_, extra| *extra > 0);
    let cost = |p: &BTreeMap<&'static str, u32>| tries_of(&topped_contract(c, p));
    if !parts.is_empty() && cost(&parts) > afford {
        let scale = afford as f64 / cost(&parts) as f64;
        for extra in parts.values_mut() {
            *extra = (f64::from(*extra) * scale).floor() as u32;
        }
        parts.retain(|_, extra| *extra > 0);
    }
    // The warm-ups do not scale: take runs off the largest part until the round fits.
    while !parts.is_empty() && cost(&parts) > afford {
        if let Some(most) = parts.values_mut().max() {
            *most -= 1;
        }
        parts.retain(|_, extra| *extra > 0);
    }
    parts
}

/// The contract of a top-up round: only the parts of `plan`, each with its added runs, and the
/// recorded warm-ups.
pub fn topped_contract(c: &SpeedContract, plan: &BTreeMap<&'static str, u32>) -> SpeedContract {
    let mut t = c.clone();
    t.parts.retain(|p| plan.contains_key(p.as_str()));
    let runs = |part: &str| plan.get(part).copied().unwrap_or(0).max(1);
    t.runs = runs("decode");
    if let Some(p) = t.prefill.as_mut() {
        p.runs = runs("prefill");
    }
    if let Some(p) = t.conc.as_mut() {
        p.rounds = runs("conc");
    }
    if let Some(p) = t.ctx.as_mut() {
        p.runs = runs("ctx");
    }
    t
}

/// Why the rounds ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// No step needed more runs.
    Settled,
    /// The budget left could pay for no more.
    Budget,
    /// [`ROUNDS`] rounds ran.
    Rounds,
    /// A round could not run (its reason is a note of its own).
    Failed,
}

/// The report's note: the budget, and each speed step's runs and why it got no more.
pub fn note(compared: &Findings, stop: Stop, budget: Duration, used: Duration) -> String {
    let steps: Vec<String> = compared
        .comparisons
        .iter()
        .filter(|r| part_of(&r.key).is_some())
        .map(|r| {
            let why = match need_of(r) {
                Need::Done(why) => why.to_string(),
                Need::NotByRuns => "no number of runs settles it at this spread".to_string(),
                Need::Runs(n) => {
                    let cause = match stop {
                        Stop::Rounds => "rounds",
                        Stop::Failed => "a round failed",
                        _ => "budget",
                    };
                    format!("{cause}: about {n} would settle it")
                }
            };
            format!("{} {} ({why})", r.key, r.n_replayed)
        })
        .collect();
    format!(
        "--runs auto ({}s of a {}s budget; {}): runs each step got: {}",
        used.as_secs(),
        budget.as_secs(),
        match stop {
            Stop::Settled => "every step settled or beyond what runs can do",
            Stop::Budget => "stopped by the budget",
            Stop::Rounds => "stopped after the most rounds",
            Stop::Failed => "stopped: a round could not run",
        },
        steps.join(", ")
    )
}

/// The tries a contract takes: each part's runs (rounds) times its prompts (depths, levels),
/// one long answer, and the warm-ups; quality not counted (a top-up round measures none).
pub fn tries_of(c: &SpeedContract) -> usize {
    let has = |part: &str| c.parts.iter().any(|p| p == part);
    let mut n = c.warmups as usize;
    if has("decode") {
        n += c.runs as usize * c.prompt_ids.len();
    }
    if let Some(p) = c.prefill.as_ref().filter(|_| has("prefill")) {
        n += p.runs as usize * p.depths.len();
    }
    if let Some(p) = c.conc.as_ref().filter(|_| has("conc")) {
        n += p.rounds as usize * p.levels.len();
    }
    if let Some(p) = c.ctx.as_ref().filter(|_| has("ctx")) {
        n += p.runs as usize * p.depths.len();
    }
    n + usize::from(has("l1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        key: &str,
        verdict: ReplayVerdict,
        needed: Option<usize>,
        n: (usize, usize),
    ) -> Comparison {
        let mut r = Comparison::untested(key, (Some(1.0), Some(1.0)), n);
        r.verdict = verdict;
        if verdict == ReplayVerdict::Inconclusive {
            r.inconclusive = Some(Inconclusive::WideInterval);
        }
        r.runs_needed_replayed = needed;
        r
    }

    fn contract() -> SpeedContract {
        serde_json::from_value(serde_json::json!({
            "parts": ["decode", "prefill"], "model": "m", "prompt_ids": ["code"], "runs": 3,
            "warmups": 1, "max_tokens": 16, "prefill": {"depths": [64], "runs": 3, "max_tokens": 1},
            "sampling": {}, "server": {"slots": 1, "window": 4096}}))
        .unwrap()
    }

    #[test]
    fn budgets_parse_with_their_unit_and_bad_ones_say_what_was_expected() {
        assert_eq!(parse_budget("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_budget("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_budget("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_budget("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_budget("10 minutes")
            .unwrap_err()
            .contains("90s, 10m, 1h"));
        assert!(parse_budget("0s").unwrap_err().contains("between 1 second"));
        assert!(parse_budget("m").is_err());
    }

    #[test]
    fn a_part_takes_the_most_its_steps_need_on_the_replayed_side() {
        let rows = [
            row("decode.code", ReplayVerdict::Reproduced, None, (3, 3)),
            // 20 replayed in all: 15 more.
            row("prefill.64", ReplayVerdict::Inconclusive, Some(20), (5, 5)),
            row("ttft.64", ReplayVerdict::Inconclusive, Some(9), (5, 5)),
            // No number of runs: not planned.
            row("conc_total.1", ReplayVerdict::Inconclusive, Some(0), (3, 3)),
            row("l1_decode", ReplayVerdict::Inconclusive, Some(9), (1, 1)),
        ];
        assert_eq!(need_of(&rows[1]), Need::Runs(20));
        assert_eq!(need_of(&rows[3]), Need::NotByRuns);
        assert_eq!(need_of(&rows[4]), Need::Done("not judged by runs"));
        let c = contract();
        let plan = round_plan(&rows, &c, 1000);
        assert_eq!(plan.into_iter().collect::<Vec<_>>(), vec![("prefill", 15)]);
        // 15 runs of the one depth and a warm-up cost 16 tries; 9 pay for the warm-up and 8.
        let cut = round_plan(&rows, &c, 9);
        assert_eq!(cut.get("prefill"), Some(&8), "{cut:?}");
        assert!(tries_of(&topped_contract(&c, &cut)) <= 9);
        assert!(round_plan(&rows, &c, 1).is_empty());
    }

    #[test]
    fn the_top_up_contract_measures_only_the_parts_planned() {
        let c = contract();
        let plan = BTreeMap::from([("prefill", 7)]);
        let t = topped_contract(&c, &plan);
        assert_eq!(t.parts, vec!["prefill".to_string()]);
        assert_eq!(t.prefill.as_ref().unwrap().runs, 7);
        assert_eq!(t.warmups, 1);
        assert_eq!(tries_of(&c), 1 + 3 + 3);
        assert_eq!(tries_of(&t), 1 + 7);
    }

    #[test]
    fn the_note_says_each_steps_runs_and_why_it_got_no_more() {
        let found = Findings {
            comparisons: vec![
                row("decode.code", ReplayVerdict::Reproduced, None, (3, 3)),
                row("prefill.64", ReplayVerdict::Inconclusive, Some(20), (5, 9)),
            ],
            ..Findings::default()
        };
        let n = note(
            &found,
            Stop::Budget,
            Duration::from_secs(60),
            Duration::from_secs(58),
        );
        assert_eq!(
            n,
            "--runs auto (58s of a 60s budget; stopped by the budget): runs each step got: decode.code 3 (settled), prefill.64 9 (budget: about 20 would settle it)"
        );
    }
}
